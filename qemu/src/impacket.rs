//! impacket's `smbserver.py` as a second, non-Samba SMB server for tests:
//! it negotiates only SMB 2.0.2, refuses the EA query class
//! (STATUS_NOT_SUPPORTED) and reports FileId 0 for every entry, the cases a
//! client must survive beyond Samba's defaults.
//!
//! impacket comes from PyPI into a virtual environment under
//! `build/impacket-venv` (`make setup` installs it, scripts/setup.sh);
//! [`Server::available`] says what is missing otherwise. [`Server::start`]
//! makes a temp dir with the share, runs
//! `smbserver.py -smb2support -ip 127.0.0.1 -port PORT -username U
//! -password P SHARE DIR` on a free loopback port and waits until it
//! accepts; dropping the [`Server`] sends SIGTERM, reaps it and removes the
//! temp dir (the process guard is [`crate::process::ServerProcess`], shared
//! with the Samba fixture).
//!
//! Touches only: its temp dir, one free TCP port on 127.0.0.1, and the
//! Python process it starts (whose stdin is a pipe it holds, so it goes
//! away with this process too).

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::process::{log_tail, start_on_a_free_port, PortRetry, ServerProcess, Startup};
use crate::samba::make_temp_dir;

/// Where `make setup` puts the virtual environment (relative to the
/// workspace root).
pub const VENV: &str = "build/impacket-venv";
/// The impacket release the fixture is known to work with.
pub const VERSION: &str = "0.13.1";

/// smbserver.py is up when its port accepts.
const STARTUP: Startup = Startup {
    name: "smbserver.py",
    poll: Duration::from_millis(20),
    settle: None,
    tail_sep: ": ",
};

/// Three ports at most, whatever made a start fail.
const PORT_RETRY: PortRetry = PortRetry {
    name: "smbserver.py",
    tries: 3,
    only_on: None,
};

/// A running smbserver.py.
pub struct Server {
    pub port: u16,
    pub user: String,
    pub password: String,
    pub share: String,
    /// The shared directory on this machine.
    pub share_dir: PathBuf,
    pub dir: PathBuf,
    log: PathBuf,
    server: ServerProcess,
}

/// The venv's directory: `$IMPACKET_VENV`, else `build/impacket-venv` of
/// the workspace.
pub fn venv_dir() -> PathBuf {
    if let Some(v) = std::env::var_os("IMPACKET_VENV") {
        return PathBuf::from(v);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(VENV)
}

impl Server {
    /// Is impacket installed? `Err` says what is missing and how to get it.
    pub fn available() -> Result<(), String> {
        let v = venv_dir();
        for f in ["bin/python", "bin/smbserver.py"] {
            if !v.join(f).exists() {
                return Err(format!(
                    "{} missing: run `make setup` (installs impacket=={VERSION} from PyPI into {VENV})",
                    v.join(f).display()
                ));
            }
        }
        Ok(())
    }

    /// Start a server sharing a fresh directory that holds `files`
    /// (`(name, contents)`) and `dirs` empty subdirectories `d000`….
    pub fn start(files: &[(&str, &[u8])], dirs: usize) -> io::Result<Server> {
        Self::available().map_err(io::Error::other)?;
        let dir = make_temp_dir("qemu-impacket")?;
        let share_dir = dir.join("share");
        let mut s = Server {
            port: 0,
            user: "tester".into(),
            password: "impacket-pw".into(),
            share: "SHARE".into(),
            share_dir,
            log: dir.join("smbserver.log"),
            dir,
            server: ServerProcess::default(),
        };
        std::fs::create_dir(&s.share_dir)?;
        for (name, data) in files {
            std::fs::write(s.share_dir.join(name), data)?;
        }
        for i in 0..dirs {
            std::fs::create_dir(s.share_dir.join(format!("d{i:03}")))?;
        }
        start_on_a_free_port(
            &mut s,
            &PORT_RETRY,
            |s, port, _| {
                s.port = port;
                s.spawn_and_wait(Duration::from_secs(20))
            },
            Server::stop,
        )?;
        Ok(s)
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// The last `max` bytes of the server's output.
    pub fn log_tail(&self, max: usize) -> String {
        log_tail(&self.log, max)
    }

    fn spawn_and_wait(&mut self, timeout: Duration) -> io::Result<()> {
        let v = venv_dir();
        let log = std::fs::File::create(&self.log)?;
        self.server = ServerProcess::spawn(
            Command::new(v.join("bin/python"))
                .arg(v.join("bin/smbserver.py"))
                .args(["-smb2support", "-ip", "127.0.0.1", "-port"])
                .arg(self.port.to_string())
                .args(["-username", &self.user, "-password", &self.password])
                .arg(&self.share)
                .arg(&self.share_dir),
            log,
        )?;
        self.server
            .wait_for_port_logged(self.addr(), timeout, &STARTUP, &self.log)
    }

    /// SIGTERM, up to 5 s, then SIGKILL; always reaped. Idempotent.
    pub fn stop(&mut self) {
        self.server.stop();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

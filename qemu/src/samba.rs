//! A loopback-only Samba server started by the project itself for tests and
//! benchmarks.
//!
//! [`Fixture::start`] makes a private temp dir (config, passdb, lock/state/
//! cache/pid/ncalrpc/binddns dirs, log, share), fills the share with
//! subdirectories (optionally carrying WSL EAs set with `setfattr`), gives
//! `root` an SMB password with `smbpasswd`, and runs `smbd --foreground` on a
//! free high port bound to 127.0.0.1 only. Dropping the [`Fixture`] sends
//! SIGTERM to smbd, reaps it and removes the temp dir (the process guard is
//! [`crate::process::ServerProcess`], shared with the impacket fixture).
//!
//! It touches only: its own temp dir, a free TCP port on 127.0.0.1, and the
//! processes it starts (`smbd`, `smbpasswd`, `setfattr`, `kill`). smbd runs in
//! its own process group (we never pass `--no-process-group`: smbd's shutdown
//! would then signal the caller's group). Its stdin is a pipe held by the
//! fixture: should the test process die without dropping it, smbd sees EOF
//! and exits (the temp dir then stays behind).

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::process::{log_tail, start_on_a_free_port, PortRetry, ServerProcess, Startup};

/// Where `smbd` is looked for first (Debian's package puts it there).
pub const SMBD: &str = "/usr/sbin/smbd";

/// smbd is up when its port accepts and it still runs 30 ms later (one
/// that lost the port to another process exits at once: the settle check
/// tells it from the other process accepting).
const STARTUP: Startup = Startup {
    name: "smbd",
    poll: Duration::from_millis(10),
    settle: Some(Duration::from_millis(30)),
    tail_sep: "; log tail:\n",
};

/// Five ports at most: another process may take the port between the probe
/// and smbd's bind; then smbd fails and a fresh port is tried.
const PORT_RETRY: PortRetry = PortRetry {
    name: "smbd",
    tries: 5,
    only_on: None,
};

/// The WSL EA values put on one share entry (`user.$LXUID` …).
///
/// Each present field becomes one extended attribute on the entry, encoded
/// as WSL does: `$LXUID`, `$LXGID`, `$LXMOD` as one little-endian u32,
/// `$LXDEV` as two little-endian u32 (major, minor).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WslEa {
    /// Entry name inside the share (created as a directory if it does not
    /// exist yet).
    pub name: String,
    /// `$LXUID`.
    pub uid: Option<u32>,
    /// `$LXGID`.
    pub gid: Option<u32>,
    /// `$LXMOD` (full st_mode, file type bits included).
    pub mode: Option<u32>,
    /// `$LXDEV` (major, minor).
    pub dev: Option<(u32, u32)>,
}

impl WslEa {
    /// The `(xattr name, value bytes)` pairs this entry gets.
    pub fn xattrs(&self) -> Vec<(&'static str, Vec<u8>)> {
        let mut out = Vec::new();
        if let Some(v) = self.uid {
            out.push(("user.$LXUID", v.to_le_bytes().to_vec()));
        }
        if let Some(v) = self.gid {
            out.push(("user.$LXGID", v.to_le_bytes().to_vec()));
        }
        if let Some(v) = self.mode {
            out.push(("user.$LXMOD", v.to_le_bytes().to_vec()));
        }
        if let Some((major, minor)) = self.dev {
            let mut b = major.to_le_bytes().to_vec();
            b.extend_from_slice(&minor.to_le_bytes());
            out.push(("user.$LXDEV", b));
        }
        out
    }
}

/// How the fixture is built. `FixtureOpts::default()` is the seed's share:
/// 511 subdirectories, no EAs, Samba's own signing and protocol defaults.
#[derive(Clone, Debug)]
pub struct FixtureOpts {
    /// Number of subdirectories in the share, named by [`entry_name`].
    pub entries: usize,
    /// Entries that get WSL EAs (see [`FixtureOpts::with_wsl_eas`]).
    pub wsl_ea: Vec<WslEa>,
    /// Other extended attributes: `(entry name, xattr name, value)`, e.g.
    /// `("d000", "user.foo", b"bar")` for a non-WSL EA.
    pub other_xattrs: Vec<(String, String, Vec<u8>)>,
    /// Extra regular files at the share root: `(name, contents)`.
    pub files: Vec<(String, Vec<u8>)>,
    /// Share name (default `share`).
    pub share: String,
    /// Password given to `root` (default `fixture-pw`).
    pub password: String,
    /// `server signing =` (`auto`, `mandatory`, `disabled`); `None` keeps
    /// Samba's default.
    pub server_signing: Option<String>,
    /// `server max protocol =` (`SMB3_11`, `SMB3_02`, `SMB2_10`, …).
    pub max_protocol: Option<String>,
    /// `server min protocol =`.
    pub min_protocol: Option<String>,
    /// `ea support =` on the share (default true).
    pub ea_support: bool,
    /// Extra `key = value` lines for `[global]`.
    pub extra_global: Vec<String>,
    /// Extra `key = value` lines for the share section.
    pub extra_share: Vec<String>,
    /// Further shares, empty, with the main share's settings, each in
    /// `DIR/shares/NAME` of the fixture (fstests' SCRATCH share beside its
    /// TEST share).
    pub extra_shares: Vec<String>,
    /// How long to wait for smbd to accept connections.
    pub start_timeout: Duration,
    /// Where the fixture's temp dir goes. `None`: `$SAMBA_FIXTURE_DIR`,
    /// else /dev/shm (tmpfs: setup and teardown of 511 directories take
    /// milliseconds instead of seconds on a busy disk; user xattrs need
    /// Linux ≥ 6.6 there, checked, else /tmp is used), else `$TMPDIR`/tmp.
    pub base_dir: Option<PathBuf>,
}

impl Default for FixtureOpts {
    fn default() -> Self {
        FixtureOpts {
            entries: 511,
            wsl_ea: Vec::new(),
            other_xattrs: Vec::new(),
            files: Vec::new(),
            share: "share".into(),
            password: "fixture-pw".into(),
            server_signing: None,
            max_protocol: None,
            min_protocol: None,
            ea_support: true,
            extra_global: Vec::new(),
            extra_share: Vec::new(),
            extra_shares: Vec::new(),
            start_timeout: Duration::from_secs(15),
            base_dir: None,
        }
    }
}

impl FixtureOpts {
    /// Give the first `count` entries all four WSL EAs: uid `1000 + i`,
    /// gid `2000 + i`, mode `S_IFDIR | 0o750`, dev `(0, 0)` (see
    /// [`wsl_ea_for`]).
    pub fn with_wsl_eas(mut self, count: usize) -> Self {
        self.wsl_ea = (0..count.min(self.entries)).map(wsl_ea_for).collect();
        self
    }
}

/// The share of the SMB client's tests against Samba
/// (`fs/tests/smb_samba.rs`), from which `fs/smb/tests/capture.rs`
/// captures the smb crate's committed reply vectors: both must see the
/// same share. [`ENTRIES`](client_share::ENTRIES) directories, the first
/// [`WSL_ENTRIES`](client_share::WSL_ENTRIES) with WSL EAs, `d010` with a
/// non-WSL EA (`user.foo`), and `big.bin`
/// ([`file_bytes`](client_share::file_bytes)).
pub mod client_share {
    use super::{Fixture, FixtureOpts};

    /// Directories in the share.
    pub const ENTRIES: usize = 20;
    /// Directories, from the first, with WSL EAs.
    pub const WSL_ENTRIES: usize = 3;
    /// `big.bin`'s length.
    pub const FILE_LEN: usize = 1_500_000;

    /// `big.bin`'s bytes.
    pub fn file_bytes() -> Vec<u8> {
        (0..FILE_LEN).map(|i| (i * 31 % 251) as u8).collect()
    }

    /// The fixture's options for this share.
    pub fn opts() -> FixtureOpts {
        let mut opts = FixtureOpts {
            entries: ENTRIES,
            ..Default::default()
        }
        .with_wsl_eas(WSL_ENTRIES);
        opts.other_xattrs
            .push(("d010".into(), "user.foo".into(), b"bar".to_vec()));
        opts.files.push(("big.bin".into(), file_bytes()));
        opts
    }

    /// Samba serving this share, or `None` where the fixture cannot run
    /// here (said by [`crate::fixtures::skip`] under `test_file`'s name).
    pub fn start(test_file: &str) -> Option<Fixture> {
        if let Err(why) = Fixture::available() {
            crate::fixtures::skip(test_file, "Samba", why);
            return None;
        }
        Some(Fixture::start(&opts()).expect("Samba fixture must start when smbd is installed"))
    }
}

/// Name of the `i`th share entry: `d000`, `d001`, … (at least three digits).
pub fn entry_name(i: usize) -> String {
    format!("d{i:03}")
}

/// The WSL EAs [`FixtureOpts::with_wsl_eas`] gives entry `i`.
pub fn wsl_ea_for(i: usize) -> WslEa {
    WslEa {
        name: entry_name(i),
        uid: Some(1000 + i as u32),
        gid: Some(2000 + i as u32),
        mode: Some(0o040_750),
        dev: Some((0, 0)),
    }
}

/// A running loopback Samba server. Stopped (SIGTERM, reaped) and its temp
/// dir removed on drop; set `SAMBA_FIXTURE_KEEP=1` to keep the dir.
#[derive(Debug)]
pub struct Fixture {
    /// TCP port smbd listens on (127.0.0.1 only).
    pub port: u16,
    /// SMB user name (`root`).
    pub user: String,
    /// SMB password of [`Fixture::user`].
    pub password: String,
    /// Share name, as in `//127.0.0.1/SHARE`.
    pub share: String,
    /// The share's directory on the host.
    pub share_dir: PathBuf,
    /// The fixture's temp dir (everything lives under it).
    pub dir: PathBuf,
    /// The generated smb.conf.
    pub conf: PathBuf,
    /// smbd's log file (and stdout/stderr capture).
    pub log: PathBuf,
    server: ServerProcess,
}

impl Fixture {
    /// Why a fixture cannot run here (`Err` with a sentence), or `Ok(())`.
    /// Tests call this and skip with the reason.
    pub fn available() -> Result<(), String> {
        if !Path::new(SMBD).exists() && which("smbd").is_none() {
            return Err(format!(
                "smbd not installed ({SMBD} missing; apt-get install samba smbclient attr)"
            ));
        }
        if which("smbpasswd").is_none() {
            return Err("smbpasswd not installed (apt-get install samba)".into());
        }
        match effective_uid() {
            Some(0) => {}
            Some(uid) => return Err(format!("not root (euid {uid}); smbd needs root")),
            None => return Err("cannot read the effective uid from /proc/self/status".into()),
        }
        Ok(())
    }

    /// Like [`Fixture::available`], plus `smbclient` (what the tests use).
    pub fn smbclient_available() -> Result<(), String> {
        Self::available()?;
        if which("smbclient").is_none() {
            return Err("smbclient not installed (apt-get install smbclient)".into());
        }
        Ok(())
    }

    /// Build the share and start smbd; returns once the port accepts TCP
    /// connections.
    pub fn start(opts: &FixtureOpts) -> io::Result<Fixture> {
        Self::available().map_err(io::Error::other)?;
        let needs_xattrs = !opts.wsl_ea.is_empty() || !opts.other_xattrs.is_empty();
        let dir = match &opts.base_dir {
            Some(b) => make_temp_dir_in(b, "qemu-samba")?,
            None => default_fixture_dir(needs_xattrs)?,
        };
        let mut fx = Fixture {
            port: 0,
            user: "root".into(),
            password: opts.password.clone(),
            share: opts.share.clone(),
            share_dir: dir.join("share"),
            conf: dir.join("smb.conf"),
            log: dir.join("smbd.log"),
            dir,
            server: ServerProcess::default(),
        };
        // From here on, an error drops `fx`, which removes the temp dir.
        fx.populate_share(opts)?;
        start_on_a_free_port(
            &mut fx,
            &PORT_RETRY,
            |fx, port, attempt| {
                fx.port = port;
                fx.write_conf(opts)?;
                if attempt == 0 {
                    fx.set_password()?;
                }
                fx.spawn_and_wait(opts.start_timeout)
            },
            Fixture::stop,
        )?;
        Ok(fx)
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// `//127.0.0.1/SHARE` (smbclient's service argument).
    pub fn unc(&self) -> String {
        format!("//127.0.0.1/{}", self.share)
    }

    /// `USER%PASSWORD` (smbclient's `-U` argument).
    pub fn credentials(&self) -> String {
        format!("{}%{}", self.user, self.password)
    }

    /// smbd's pid while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.server.pid()
    }

    /// The tail of smbd's log (for error messages).
    pub fn log_tail(&self, max: usize) -> String {
        log_tail(&self.log, max)
    }

    fn populate_share(&self, opts: &FixtureOpts) -> io::Result<()> {
        std::fs::create_dir(&self.share_dir)?;
        for name in &opts.extra_shares {
            check_entry_name(name)?;
            if *name == self.share {
                return Err(io::Error::other(format!(
                    "extra share `{name}` has the main share's name"
                )));
            }
            std::fs::create_dir_all(self.dir.join("shares").join(name))?;
        }
        for i in 0..opts.entries {
            std::fs::create_dir(self.share_dir.join(entry_name(i)))?;
        }
        for (name, data) in &opts.files {
            check_entry_name(name)?;
            std::fs::write(self.share_dir.join(name), data)?;
        }
        let mut xattrs: Vec<(String, String, Vec<u8>)> = opts.other_xattrs.clone();
        for ea in &opts.wsl_ea {
            for (n, v) in ea.xattrs() {
                xattrs.push((ea.name.clone(), n.to_string(), v));
            }
        }
        for (entry, name, value) in &xattrs {
            check_entry_name(entry)?;
            let path = self.share_dir.join(entry);
            if !path.exists() {
                std::fs::create_dir(&path)?;
            }
            set_xattr(&path, name, value)?;
        }
        Ok(())
    }

    fn write_conf(&self, opts: &FixtureOpts) -> io::Result<()> {
        let d = &self.dir;
        for sub in [
            "private", "lock", "state", "cache", "pid", "ncalrpc", "binddns",
        ] {
            std::fs::create_dir_all(d.join(sub))?;
        }
        let mut c = String::new();
        let p = |s: &str| d.join(s).display().to_string();
        let _ = writeln!(c, "[global]");
        let globals = [
            ("server role", "standalone server".to_string()),
            ("smb ports", self.port.to_string()),
            ("interfaces", "127.0.0.1".into()),
            ("bind interfaces only", "yes".into()),
            ("disable netbios", "yes".into()),
            ("private dir", p("private")),
            ("lock directory", p("lock")),
            ("state directory", p("state")),
            ("cache directory", p("cache")),
            ("pid directory", p("pid")),
            ("ncalrpc dir", p("ncalrpc")),
            ("binddns dir", p("binddns")),
            ("log file", self.log.display().to_string()),
            (
                "passdb backend",
                format!("tdbsam:{}", p("private/passdb.tdb")),
            ),
            ("load printers", "no".into()),
            ("printcap name", "/dev/null".into()),
            ("disable spoolss", "yes".into()),
            ("map to guest", "Bad User".into()),
        ];
        for (k, v) in globals {
            let _ = writeln!(c, "    {k} = {v}");
        }
        if let Some(s) = &opts.server_signing {
            let _ = writeln!(c, "    server signing = {}", conf_value(s)?);
        }
        if let Some(s) = &opts.max_protocol {
            let _ = writeln!(c, "    server max protocol = {}", conf_value(s)?);
        }
        if let Some(s) = &opts.min_protocol {
            let _ = writeln!(c, "    server min protocol = {}", conf_value(s)?);
        }
        for line in &opts.extra_global {
            let _ = writeln!(c, "    {}", conf_value(line)?);
        }
        let shares = std::iter::once((self.share.as_str(), self.share_dir.clone())).chain(
            opts.extra_shares
                .iter()
                .map(|n| (n.as_str(), self.dir.join("shares").join(n))),
        );
        for (name, path) in shares {
            let _ = writeln!(c, "\n[{}]", conf_value(name)?);
            let _ = writeln!(c, "    path = {}", path.display());
            let _ = writeln!(c, "    read only = no");
            let ea = if opts.ea_support { "yes" } else { "no" };
            let _ = writeln!(c, "    ea support = {ea}");
            for line in &opts.extra_share {
                let _ = writeln!(c, "    {}", conf_value(line)?);
            }
        }
        std::fs::write(&self.conf, c)
    }

    fn set_password(&self) -> io::Result<()> {
        let mut child = Command::new(which("smbpasswd").unwrap_or_else(|| "smbpasswd".into()))
            .arg("-c")
            .arg(&self.conf)
            .args(["-s", "-a", &self.user])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            write!(stdin, "{0}\n{0}\n", self.password)?;
        }
        let out = child.wait_with_output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "smbpasswd failed ({}): {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(())
    }

    fn spawn_and_wait(&mut self, timeout: Duration) -> io::Result<()> {
        let smbd = if Path::new(SMBD).exists() {
            PathBuf::from(SMBD)
        } else {
            which("smbd").unwrap_or_else(|| "smbd".into())
        };
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        // smbd in the foreground exits when its stdin (a pipe the guard
        // holds) reaches EOF: if this process dies without dropping the
        // fixture, smbd goes too.
        self.server = ServerProcess::spawn(
            Command::new(smbd)
                .args(["--foreground", "--debug-stdout", "-d", "1"])
                .arg(format!("--configfile={}", self.conf.display())),
            log,
        )?;
        self.server
            .wait_for_port_logged(self.addr(), timeout, &STARTUP, &self.log)
    }

    /// Stop smbd: SIGTERM, wait up to 5 s, then SIGKILL; always reaped.
    /// Idempotent; also done by `Drop`.
    pub fn stop(&mut self) {
        self.server.stop();
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.stop();
        if std::env::var_os("SAMBA_FIXTURE_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Fixture {
    /// Run `smbclient -p PORT //127.0.0.1/SHARE -U USER%PW [extra] -c CMD`
    /// with this fixture's share and credentials; `port` may be a relay's.
    /// Returns (exit success, stdout + stderr).
    pub fn smbclient(&self, port: u16, extra: &[&str], cmd: &str) -> io::Result<(bool, String)> {
        smbclient(port, &self.unc(), &self.credentials(), extra, cmd)
    }
}

/// Run `smbclient -p PORT UNC -U CREDS [extra] -c CMD`. Returns (exit
/// success, stdout + stderr).
pub fn smbclient(
    port: u16,
    unc: &str,
    creds: &str,
    extra: &[&str],
    cmd: &str,
) -> io::Result<(bool, String)> {
    let out = Command::new(which("smbclient").unwrap_or_else(|| "smbclient".into()))
        .arg("-p")
        .arg(port.to_string())
        .arg(unc)
        .arg("-U")
        .arg(creds)
        .args(extra)
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .output()?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

/// Entry names in `smbclient -c ls` output (without `.` and `..`).
pub fn parse_ls_names(output: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in output.lines() {
        // Lines look like `  d000                                D        0  Mon …`.
        let Some(rest) = line.strip_prefix("  ") else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let (Some(name), Some(attr)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !attr.chars().all(|c| "DAHSRN".contains(c)) || name == "." || name == ".." {
            continue;
        }
        names.push(name.to_string());
    }
    names
}

fn check_entry_name(name: &str) -> io::Result<()> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad share entry name {name:?}"),
        ));
    }
    Ok(())
}

fn conf_value(s: &str) -> io::Result<&str> {
    if s.contains('\n') || s.contains('\r') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("smb.conf value with a newline: {s:?}"),
        ));
    }
    Ok(s)
}

/// Set one extended attribute with `setfattr` (on a share's file: an EA
/// the server shows as `NAME` without `user.`).
pub fn set_xattr(path: &Path, name: &str, value: &[u8]) -> io::Result<()> {
    let mut hex = String::from("0x");
    for b in value {
        let _ = write!(hex, "{b:02x}");
    }
    let out = Command::new("setfattr")
        .args(["-n", name, "-v", &hex])
        .arg(path)
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("setfattr (package attr): {e}")))?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "setfattr -n {name} {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

/// Read one extended attribute's raw value with `getfattr`.
pub fn get_xattr(path: &Path, name: &str) -> io::Result<Vec<u8>> {
    // `--only-values` writes the raw bytes, whatever `-e` says.
    let out = Command::new("getfattr")
        .args(["--absolute-names", "--only-values", "-n", name])
        .arg(path)
        .output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "getfattr -n {name} {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(out.stdout)
}

/// The fixture's temp dir in the default place (see
/// [`FixtureOpts::base_dir`]).
fn default_fixture_dir(needs_xattrs: bool) -> io::Result<PathBuf> {
    if let Some(b) = std::env::var_os("SAMBA_FIXTURE_DIR") {
        return make_temp_dir_in(Path::new(&b), "qemu-samba");
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = make_temp_dir_in(shm, "qemu-samba") {
            if !needs_xattrs || set_xattr(&dir, "user.fixture_probe", b"1").is_ok() {
                return Ok(dir);
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    make_temp_dir("qemu-samba")
}

/// A fresh, empty directory under `$TMPDIR` (or /tmp).
pub fn make_temp_dir(prefix: &str) -> io::Result<PathBuf> {
    let base = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    make_temp_dir_in(&base, prefix)
}

/// A fresh, empty directory `base/<prefix>-<pid>-<seq>-<nanos>`.
pub fn make_temp_dir_in(base: &Path, prefix: &str) -> io::Result<PathBuf> {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    for _ in 0..100 {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{prefix}-{}-{seq}-{nanos:08x}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("could not create a temp dir"))
}

/// The effective uid, from /proc/self/status.
fn effective_uid() -> Option<u32> {
    let mut s = String::new();
    std::fs::File::open("/proc/self/status")
        .ok()?
        .read_to_string(&mut s)
        .ok()?;
    let line = s.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// Find a program on `$PATH` (plus /usr/sbin and /sbin, where Debian puts
/// smbd and friends but a non-login PATH may not reach).
pub fn which(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into(), "/usr/bin".into()])
        .map(|d: PathBuf| d.join(prog))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wsl_ea_encoding() {
        let ea = WslEa {
            name: "x".into(),
            uid: Some(1000),
            gid: None,
            mode: Some(0o100644),
            dev: Some((8, 1)),
        };
        let x = ea.xattrs();
        assert_eq!(x[0], ("user.$LXUID", vec![0xe8, 0x03, 0, 0]));
        assert_eq!(x[1], ("user.$LXMOD", 0o100644u32.to_le_bytes().to_vec()));
        assert_eq!(x[2], ("user.$LXDEV", vec![8, 0, 0, 0, 1, 0, 0, 0]));
        assert_eq!(x.len(), 3);
    }

    #[test]
    fn ls_parsing() {
        let out = "  .                                   D        0  Mon Nov 30 05:00:00 2026\n\
                   \x20 ..                                  D        0  Mon Nov 30 05:00:00 2026\n\
                   \x20 d000                                D        0  Mon Nov 30 05:00:00 2026\n\
                   \x20 f.txt                               N        5  Mon Nov 30 05:00:00 2026\n\
                   \n\t\t263705984 blocks of size 1024. 81000000 blocks available\n";
        assert_eq!(parse_ls_names(out), vec!["d000", "f.txt"]);
    }
}

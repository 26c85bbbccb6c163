//! The QEMU runner: builds the `qemu-system-x86_64` command line for our
//! kernel (or any PVH/bzImage guest), runs it with a wall-clock timeout,
//! captures the serial console and maps the `isa-debug-exit` status back to
//! the guest's own exit value.
//!
//! It touches only what it is given: it spawns QEMU (and, through
//! `guestfwd`, whatever program the caller names), reads `/dev/kvm` for the
//! accelerator probe, and writes the probe's cached verdict and a serial log
//! when asked to.
//!
//! # Exit status convention
//! The guest writes a value `V` to I/O port `0xf4` (`isa-debug-exit`); QEMU
//! then exits with `(V << 1) | 1`, of which the host sees the low 8 bits, so
//! `V` is recovered for `0 <= V < 128`. `V = 0` is success. Everything the
//! runner itself decides is mapped outside the usual guest range:
//!
//! | outcome | [`GuestStatus`] | [`GuestStatus::exit_code`] |
//! |---|---|---|
//! | guest wrote `V` | `Exited(V)` | `V` |
//! | wall-clock timeout, QEMU killed | `TimedOut` | 124 |
//! | QEMU exited 0 without `isa-debug-exit` (reset, power-off, triple fault with `-no-reboot`) | `NoDebugExit` | 125 |
//! | QEMU failed on its own (bad option, missing file) | `QemuError(code)` | 126 |
//! | QEMU killed by a signal | `Signaled(sig)` | 128 + sig |
//!
//! Exit code 1 is both "guest wrote 0" and QEMU's own failure code; our
//! kernel prints `exit: status=V` just before writing the port, and when
//! that line agrees with the exit code the guest's status is believed
//! whatever QEMU printed on stderr (see [`GuestStatus::from_qemu_exit_and_serial`]).
//!
//! # Files
//! - `config.rs`: the command line ([`QemuConfig`], [`Accel`], [`MemSize`],
//!   [`GuestFwd`]).
//! - `status.rs`: [`GuestStatus`], QEMU's exit mapped back to the guest's value.
//! - `accel.rs`: [`AccelChoice`] and the `auto` probe that resolves it.
//! - `selftest.rs`: [`SelftestReport`], our kernel's `selftest` output read
//!   back (passed, failed, skipped with the reason).
//! - here: [`Runner`] (spawn, stream, timeout) and the paths tests boot from.

mod accel;
mod config;
mod selftest;
mod status;

pub use accel::{default_cache_dir, probe_elf, resolve_accel, AccelChoice};
pub use config::{
    cmdline_too_long, Accel, GuestFwd, MemSize, QemuConfig, KVM_DEFAULT_CPU, MAX_CMDLINE,
};
pub use selftest::{SelftestReport, Verdict};
pub use status::{announced_status, GuestStatus};

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// The QEMU binary used unless the caller names another.
pub const DEFAULT_QEMU: &str = "qemu-system-x86_64";
/// I/O port of the `isa-debug-exit` device (the kernel writes its status here).
pub const DEBUG_EXIT_IOBASE: u16 = 0xf4;
/// Exit code reported for a wall-clock timeout (as `timeout(1)` does).
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit code reported when QEMU ended cleanly but the guest never wrote its status.
pub const EXIT_NO_DEBUG_EXIT: i32 = 125;
/// Exit code reported when QEMU itself failed (bad option, missing kernel file ...).
pub const EXIT_QEMU_ERROR: i32 = 126;

/// The result of one run.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// How it ended.
    pub status: GuestStatus,
    /// Everything the guest wrote to COM1 (lossily decoded as UTF-8).
    pub serial_output: String,
    /// What QEMU wrote to its stderr.
    pub qemu_stderr: String,
    /// Wall-clock time from spawning QEMU to its exit.
    pub wall: Duration,
}

/// Errors that keep a run from starting.
#[derive(Debug)]
pub enum RunError {
    /// The configuration is unusable.
    Config(String),
    /// QEMU could not be spawned.
    Spawn(PathBuf, io::Error),
    /// The serial log could not be created.
    SerialLog(PathBuf, io::Error),
    /// Waiting on QEMU failed.
    Wait(io::Error),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Config(m) => write!(f, "bad QEMU configuration: {m}"),
            RunError::Spawn(p, e) => write!(
                f,
                "cannot start {}: {e} (install qemu-system-x86: `make setup` as root)",
                p.display()
            ),
            RunError::SerialLog(p, e) => {
                write!(f, "cannot create serial log {}: {e}", p.display())
            }
            RunError::Wait(e) => write!(f, "waiting for QEMU failed: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

/// Runs a [`QemuConfig`]: streams the serial console, enforces the timeout.
#[derive(Clone, Debug)]
pub struct Runner {
    config: QemuConfig,
    timeout: Duration,
    echo: bool,
    serial_log: Option<PathBuf>,
}

impl Runner {
    /// A runner with a 300 s timeout that does not echo the console.
    pub fn new(config: QemuConfig) -> Self {
        Runner {
            config,
            timeout: Duration::from_secs(300),
            echo: false,
            serial_log: None,
        }
    }
    /// Sets the wall-clock timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
    /// Streams the serial console (and QEMU's stderr) to this process's stdout (stderr) as it arrives.
    pub fn echo(mut self, echo: bool) -> Self {
        self.echo = echo;
        self
    }
    /// Also writes the serial console to this file.
    pub fn serial_log(mut self, path: impl Into<PathBuf>) -> Self {
        self.serial_log = Some(path.into());
        self
    }
    /// The configuration being run.
    pub fn config(&self) -> &QemuConfig {
        &self.config
    }

    /// Boots the guest and waits for it (at most the timeout).
    pub fn run(&self) -> Result<Outcome, RunError> {
        self.config.validate()?;
        let log = match &self.serial_log {
            Some(p) => Some(File::create(p).map_err(|e| RunError::SerialLog(p.clone(), e))?),
            None => None,
        };
        let start = Instant::now();
        let mut child = Command::new(&self.config.qemu)
            .args(self.config.args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RunError::Spawn(self.config.qemu.clone(), e))?;

        let (tx, rx) = mpsc::channel::<(bool, Vec<u8>)>();
        let out = child
            .stdout
            .take()
            .map(|s| pump(s, true, self.echo, log, tx.clone()));
        let err = child
            .stderr
            .take()
            .map(|s| pump(s, false, self.echo, None, tx));

        let deadline = start + self.timeout;
        let mut timed_out = false;
        let exit: ExitStatus = loop {
            match child.try_wait().map_err(RunError::Wait)? {
                Some(st) => break st,
                None if Instant::now() >= deadline => {
                    timed_out = true;
                    // The child may have exited in between: errors here are harmless.
                    let _ = child.kill();
                    break child.wait().map_err(RunError::Wait)?;
                }
                None => thread::sleep(Duration::from_millis(10)),
            }
        };
        let wall = start.elapsed();

        // Collect output. A guestfwd program inherits QEMU's stderr and may
        // outlive it briefly, so the readers get a bounded grace period.
        let mut serial = Vec::new();
        let mut stderr = Vec::new();
        let mut open = usize::from(out.is_some()) + usize::from(err.is_some());
        let grace = Instant::now() + Duration::from_secs(2);
        while open > 0 {
            let left = grace.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok((true, chunk)) if chunk.is_empty() => open -= 1,
                Ok((false, chunk)) if chunk.is_empty() => open -= 1,
                Ok((true, chunk)) => serial.extend_from_slice(&chunk),
                Ok((false, chunk)) => stderr.extend_from_slice(&chunk),
                Err(_) => break,
            }
        }
        let stderr = String::from_utf8_lossy(&stderr).into_owned();
        let serial = String::from_utf8_lossy(&serial).into_owned();
        let status = if timed_out {
            GuestStatus::TimedOut
        } else {
            GuestStatus::from_qemu_exit_and_serial(exit.code(), exit.signal(), &stderr, &serial)
        };
        Ok(Outcome {
            status,
            serial_output: serial,
            qemu_stderr: stderr,
            wall,
        })
    }
}

/// The host cores QEMU may run on: this process's CPU affinity (and any
/// cgroup CPU quota), which QEMU's vCPU threads inherit. At least 1.
pub fn host_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `overcommit: V vCPUs on C host cores` when `vcpus` outnumber `cores`:
/// the host then deschedules vCPUs, and a spinning guest's timings depend
/// on the host's scheduler.
pub fn overcommit_line(vcpus: u32, cores: usize) -> Option<String> {
    (vcpus as usize > cores).then(|| format!("overcommit: {vcpus} vCPUs on {cores} host cores"))
}

/// `cmdline` with ` host_cores=C` appended, unless it names `host_cores=`
/// already (our kernel's key: the demo table and notes name overcommit),
/// or the word would push a line that fits past [`config::MAX_CMDLINE`]
/// (the guest then just does not know the host's cores; a line too long
/// by itself is left for the length check to refuse with its own size).
pub fn with_host_cores(cmdline: &str, cores: usize) -> String {
    if cmdline
        .split_ascii_whitespace()
        .any(|w| w.starts_with("host_cores="))
    {
        return cmdline.to_string();
    }
    let sep = if cmdline.trim().is_empty() { "" } else { " " };
    let with = format!("{}{sep}host_cores={cores}", cmdline.trim_end());
    if with.len() > config::MAX_CMDLINE {
        return cmdline.to_string();
    }
    with
}

/// Reads `src` to its end on a thread, forwarding chunks to `tx` (an empty
/// chunk marks the end), echoing them and teeing them to `log`.
fn pump(
    mut src: impl Read + Send + 'static,
    is_stdout: bool,
    echo: bool,
    mut log: Option<File>,
    tx: mpsc::Sender<(bool, Vec<u8>)>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            let n = match src.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let chunk = &buf[..n];
            if echo {
                // Echo failures (closed pipe) must not stop the capture.
                if is_stdout {
                    let mut o = io::stdout().lock();
                    let _ = o.write_all(chunk).and_then(|_| o.flush());
                } else {
                    let _ = io::stderr().write_all(chunk);
                }
            }
            if let Some(f) = log.as_mut() {
                if f.write_all(chunk).is_err() {
                    log = None;
                }
            }
            if tx.send((is_stdout, chunk.to_vec())).is_err() {
                break;
            }
        }
        let _ = tx.send((is_stdout, Vec::new()));
    })
}
/// The workspace root (the parent of this crate's directory, fixed at build time).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The release kernel image that tests boot: `$GUEST_KERNEL`, else the
/// image under `$CARGO_TARGET_DIR` (as the Makefile builds it), else under
/// the workspace's `target/`.
pub fn guest_kernel_image() -> PathBuf {
    if let Some(p) = std::env::var_os("GUEST_KERNEL") {
        return PathBuf::from(p);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    target.join("x86_64-unknown-none/release/kernel")
}

/// Why a test cannot start QEMU here, or `None` when it can. Tests print
/// the reason and skip.
pub fn qemu_unavailable() -> Option<String> {
    let qemu_ok = Command::new(DEFAULT_QEMU)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    (!qemu_ok).then(|| format!("{DEFAULT_QEMU} not installed (make setup)"))
}

/// Why a test cannot boot our kernel here (QEMU or the image missing), or
/// `None` when it can. Tests print the reason and skip.
pub fn guest_boot_unavailable() -> Option<String> {
    if let Some(why) = qemu_unavailable() {
        return Some(why);
    }
    let k = guest_kernel_image();
    if !k.exists() {
        return Some(format!(
            "no kernel image at {} (make build-kernel)",
            k.display()
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overcommit_is_named_only_past_the_cores() {
        assert_eq!(overcommit_line(2, 2), None);
        assert_eq!(overcommit_line(1, 2), None);
        assert_eq!(
            overcommit_line(4, 2).as_deref(),
            Some("overcommit: 4 vCPUs on 2 host cores")
        );
        assert!(host_cores() >= 1);
    }

    #[test]
    fn host_cores_never_pushes_a_line_past_the_limit() {
        let full = "x".repeat(config::MAX_CMDLINE - 3);
        assert_eq!(with_host_cores(&full, 2), full);
        let over = "x".repeat(config::MAX_CMDLINE + 1);
        assert_eq!(with_host_cores(&over, 2), over);
        let room = "x".repeat(config::MAX_CMDLINE - 20);
        assert_eq!(with_host_cores(&room, 2), format!("{room} host_cores=2"));
    }

    #[test]
    fn host_cores_is_appended_once() {
        assert_eq!(with_host_cores("selftest", 2), "selftest host_cores=2");
        assert_eq!(with_host_cores("", 8), "host_cores=8");
        assert_eq!(
            with_host_cores("demo=table host_cores=3", 2),
            "demo=table host_cores=3"
        );
    }
}

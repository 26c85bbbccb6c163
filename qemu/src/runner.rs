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

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::str::FromStr;
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

/// An accelerator QEMU actually runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// Multi-threaded TCG (`-accel tcg,thread=multi`): one host thread per vCPU.
    Tcg,
    /// Hardware virtualization through `/dev/kvm` (`-accel kvm`).
    Kvm,
}

impl Accel {
    /// The lower-case name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Accel::Tcg => "tcg",
            Accel::Kvm => "kvm",
        }
    }

    /// The value given to QEMU's `-accel` option.
    pub fn qemu_arg(self) -> &'static str {
        match self {
            Accel::Tcg => "tcg,thread=multi",
            Accel::Kvm => "kvm",
        }
    }
}

impl fmt::Display for Accel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the user asked for: a fixed accelerator or `auto` (see [`resolve_accel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccelChoice {
    /// KVM only if `/dev/kvm` opens and a short probe shows it at least as fast as TCG.
    Auto,
    /// Always TCG.
    Tcg,
    /// Always KVM.
    Kvm,
}

impl FromStr for AccelChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(AccelChoice::Auto),
            "tcg" => Ok(AccelChoice::Tcg),
            "kvm" => Ok(AccelChoice::Kvm),
            other => Err(format!(
                "unknown accelerator `{other}` (expected auto, tcg or kvm)"
            )),
        }
    }
}

/// A memory size in QEMU's `-m` syntax, validated: a number of MiB, or a
/// number with an `M` or `G` suffix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemSize(String);

impl MemSize {
    /// The size in MiB.
    pub fn mib(&self) -> u64 {
        let s = &self.0;
        match s.as_bytes()[s.len() - 1] {
            b'G' | b'g' => s[..s.len() - 1].parse::<u64>().unwrap_or(0) * 1024,
            b'M' | b'm' => s[..s.len() - 1].parse::<u64>().unwrap_or(0),
            _ => s.parse::<u64>().unwrap_or(0),
        }
    }
}

impl FromStr for MemSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let digits = s.trim_end_matches(['M', 'm', 'G', 'g']);
        let suffix_len = s.len() - digits.len();
        if digits.is_empty()
            || suffix_len > 1
            || !digits.bytes().all(|b| b.is_ascii_digit())
            || digits.len() > 9
        {
            return Err(format!(
                "bad memory size `{s}` (expected MiB as a number, or a number with M or G: 512M, 2G)"
            ));
        }
        let m = MemSize(s.to_string());
        if m.mib() < 16 {
            return Err(format!("memory size `{s}` is below 16 MiB"));
        }
        Ok(m)
    }
}

impl fmt::Display for MemSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A user-mode network whose guest connections to `addr:port` each start
/// `command` with the connection on its stdin/stdout
/// (`-netdev user,restrict=on,guestfwd=tcp:ADDR:PORT-cmd:COMMAND`). With
/// `restrict=on` the guest reaches nothing else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestFwd {
    /// Guest-side IPv4 address inside QEMU's 10.0.2.0/24 user network.
    pub addr: String,
    /// Guest-side TCP port.
    pub port: u16,
    /// Program and arguments started per connection.
    pub command: Vec<String>,
}

impl GuestFwd {
    /// A forward of `10.0.2.100:445` (SMB) to `command`.
    pub fn smb(command: Vec<String>) -> Self {
        GuestFwd {
            addr: "10.0.2.100".into(),
            port: 445,
            command,
        }
    }

    /// The `-netdev` value. The command is shell-quoted (libslirp splits it
    /// with shell rules) and commas are doubled (QEMU's option escaping).
    pub fn netdev_arg(&self) -> String {
        let cmd: Vec<String> = self.command.iter().map(|a| shell_quote(a)).collect();
        let cmd = cmd.join(" ").replace(',', ",,");
        format!(
            "user,id=n0,restrict=on,guestfwd=tcp:{}:{}-cmd:{}",
            self.addr, self.port, cmd
        )
    }
}

/// Quote `s` for a POSIX shell word when it holds anything but plain characters.
fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@+%,".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Everything that determines the QEMU command line. Build it with
/// [`QemuConfig::new`] and the chained setters; [`QemuConfig::args`] gives the
/// exact argument list (no side effects), [`Runner`] runs it.
#[derive(Clone, Debug)]
pub struct QemuConfig {
    /// QEMU binary (`qemu-system-x86_64`).
    pub qemu: PathBuf,
    /// Kernel image given to `-kernel` (our PVH ELF, or a Linux bzImage).
    pub kernel: PathBuf,
    /// Kernel command line (`-append`); omitted when empty.
    pub cmdline: String,
    /// Optional initial ramdisk (`-initrd`).
    pub initrd: Option<PathBuf>,
    /// Number of vCPUs (`-smp`).
    pub smp: u32,
    /// Guest memory (`-m`).
    pub memory: MemSize,
    /// Accelerator (`-accel`).
    pub accel: Accel,
    /// CPU model (`-cpu`); QEMU's default when `None`.
    pub cpu: Option<String>,
    /// Optional user network with a command forward.
    pub guestfwd: Option<GuestFwd>,
    /// Raw-image disks attached as virtio-blk, in order (`/dev/vda`, ...),
    /// with `snapshot=on` so the image file is never written.
    pub disks: Vec<PathBuf>,
    /// Further arguments appended verbatim.
    pub extra_args: Vec<OsString>,
}

impl QemuConfig {
    /// One vCPU, 512 MiB, TCG, empty command line.
    pub fn new(kernel: impl Into<PathBuf>) -> Self {
        QemuConfig {
            qemu: PathBuf::from(DEFAULT_QEMU),
            kernel: kernel.into(),
            cmdline: String::new(),
            initrd: None,
            smp: 1,
            memory: MemSize("512M".into()),
            accel: Accel::Tcg,
            cpu: None,
            guestfwd: None,
            disks: Vec::new(),
            extra_args: Vec::new(),
        }
    }

    /// Sets the QEMU binary.
    pub fn qemu(mut self, qemu: impl Into<PathBuf>) -> Self {
        self.qemu = qemu.into();
        self
    }
    /// Sets the kernel command line.
    pub fn cmdline(mut self, cmdline: impl Into<String>) -> Self {
        self.cmdline = cmdline.into();
        self
    }
    /// Sets the initial ramdisk.
    pub fn initrd(mut self, initrd: impl Into<PathBuf>) -> Self {
        self.initrd = Some(initrd.into());
        self
    }
    /// Sets the vCPU count.
    pub fn smp(mut self, smp: u32) -> Self {
        self.smp = smp;
        self
    }
    /// Sets the guest memory.
    pub fn memory(mut self, memory: MemSize) -> Self {
        self.memory = memory;
        self
    }
    /// Sets the accelerator.
    pub fn accel(mut self, accel: Accel) -> Self {
        self.accel = accel;
        self
    }
    /// Sets the CPU model.
    pub fn cpu(mut self, cpu: impl Into<String>) -> Self {
        self.cpu = Some(cpu.into());
        self
    }
    /// Adds the user network with a command forward.
    pub fn guestfwd(mut self, fwd: GuestFwd) -> Self {
        self.guestfwd = Some(fwd);
        self
    }
    /// Attaches a raw disk image as the next virtio-blk device (read-only to the host file).
    pub fn disk(mut self, image: impl Into<PathBuf>) -> Self {
        self.disks.push(image.into());
        self
    }
    /// Appends a raw QEMU argument.
    pub fn extra_arg(mut self, arg: impl Into<OsString>) -> Self {
        self.extra_args.push(arg.into());
        self
    }

    /// Checks what QEMU would otherwise reject late or oddly.
    pub fn validate(&self) -> Result<(), RunError> {
        if self.smp == 0 || self.smp > 255 {
            return Err(RunError::Config(format!(
                "-smp {} is out of range (1..=255)",
                self.smp
            )));
        }
        if self.cmdline.contains('\n') {
            return Err(RunError::Config(
                "the kernel command line holds a newline".into(),
            ));
        }
        if let Some(fwd) = &self.guestfwd {
            if fwd.command.is_empty() {
                return Err(RunError::Config("guestfwd needs a program".into()));
            }
            if fwd.command.iter().any(|a| a.contains('\n')) {
                return Err(RunError::Config("guestfwd command holds a newline".into()));
            }
        }
        for d in &self.disks {
            if d.to_string_lossy().contains(',') {
                return Err(RunError::Config(format!(
                    "disk path {} holds a comma",
                    d.display()
                )));
            }
        }
        Ok(())
    }

    /// The full argument list after the QEMU binary.
    pub fn args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut push = |s: &str| a.push(s.into());
        push("-machine");
        push("q35");
        push("-nodefaults");
        push("-smp");
        push(&self.smp.to_string());
        push("-m");
        push(&self.memory.0);
        push("-accel");
        push(self.accel.qemu_arg());
        if let Some(cpu) = &self.cpu {
            push("-cpu");
            push(cpu);
        }
        push("-display");
        push("none");
        push("-no-reboot");
        push("-serial");
        push("stdio");
        push("-device");
        push(&format!(
            "isa-debug-exit,iobase={:#x},iosize=0x04",
            DEBUG_EXIT_IOBASE
        ));
        if let Some(fwd) = &self.guestfwd {
            push("-netdev");
            push(&fwd.netdev_arg());
            push("-device");
            push("virtio-net-pci,netdev=n0");
        }
        for (i, d) in self.disks.iter().enumerate() {
            push("-drive");
            push(&format!(
                "file={},format=raw,if=none,id=d{i},snapshot=on",
                d.to_string_lossy()
            ));
            push("-device");
            push(&format!("virtio-blk-pci,drive=d{i}"));
        }
        a.push("-kernel".into());
        a.push(self.kernel.clone().into_os_string());
        if let Some(initrd) = &self.initrd {
            a.push("-initrd".into());
            a.push(initrd.clone().into_os_string());
        }
        if !self.cmdline.is_empty() {
            a.push("-append".into());
            a.push(self.cmdline.clone().into());
        }
        a.extend(self.extra_args.iter().cloned());
        a
    }

    /// The command line as one shell-pasteable string (for logs and `--dry-run`).
    pub fn command_string(&self) -> String {
        std::iter::once(self.qemu.as_os_str())
            .chain(self.args().iter().map(OsString::as_os_str))
            .map(|s| shell_quote(&s.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// How a run ended, from the guest's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestStatus {
    /// The guest wrote `V` to `isa-debug-exit` (0 = success).
    Exited(u8),
    /// QEMU exited 0: the guest reset or powered off without writing a status.
    NoDebugExit,
    /// QEMU failed by itself with this exit code.
    QemuError(i32),
    /// QEMU was killed by this signal (not by us).
    Signaled(i32),
    /// The wall-clock timeout expired and QEMU was killed.
    TimedOut,
}

impl GuestStatus {
    /// Maps QEMU's exit to the guest's status. `stderr` is what QEMU printed:
    /// exit code 1 is both "guest wrote 0" and QEMU's own failure code, and an
    /// error line from QEMU (one that is not a warning) tells them apart.
    pub fn from_qemu_exit(code: Option<i32>, signal: Option<i32>, stderr: &str) -> GuestStatus {
        match (code, signal) {
            (Some(0), _) => GuestStatus::NoDebugExit,
            (Some(1), _) if qemu_reported_error(stderr) => GuestStatus::QemuError(1),
            (Some(c), _) if c & 1 == 1 => GuestStatus::Exited(((c >> 1) & 0x7f) as u8),
            (Some(c), _) => GuestStatus::QemuError(c),
            (None, Some(sig)) => GuestStatus::Signaled(sig),
            (None, None) => GuestStatus::QemuError(-1),
        }
    }

    /// True only when the guest wrote 0.
    pub fn success(self) -> bool {
        self == GuestStatus::Exited(0)
    }

    /// The process exit code `qemu-run` ends with (see the module table).
    pub fn exit_code(self) -> i32 {
        match self {
            GuestStatus::Exited(v) => i32::from(v),
            GuestStatus::TimedOut => EXIT_TIMEOUT,
            GuestStatus::NoDebugExit => EXIT_NO_DEBUG_EXIT,
            GuestStatus::QemuError(_) => EXIT_QEMU_ERROR,
            GuestStatus::Signaled(sig) => 128 + sig,
        }
    }
}

impl fmt::Display for GuestStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuestStatus::Exited(0) => write!(f, "guest exited with status 0 (success)"),
            GuestStatus::Exited(v) => write!(f, "guest exited with status {v} (failure)"),
            GuestStatus::NoDebugExit => write!(
                f,
                "QEMU ended without the guest writing its status to isa-debug-exit \
                 (reset, power-off or triple fault): treated as failure"
            ),
            GuestStatus::QemuError(c) => write!(f, "QEMU itself failed (exit code {c})"),
            GuestStatus::Signaled(s) => write!(f, "QEMU was killed by signal {s}"),
            GuestStatus::TimedOut => write!(f, "wall-clock timeout: QEMU was killed"),
        }
    }
}

/// True when QEMU's stderr holds an error line (`qemu-system-x86_64: ...` or
/// `qemu: ...`, as its loaders print) that is not a warning.
fn qemu_reported_error(stderr: &str) -> bool {
    stderr.lines().any(|l| {
        let Some((prog, rest)) = l.split_once(": ") else {
            return false;
        };
        prog.rsplit('/').next().unwrap_or(prog).starts_with("qemu")
            && !rest.trim_start().starts_with("warning:")
    })
}

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
        let status = if timed_out {
            GuestStatus::TimedOut
        } else {
            GuestStatus::from_qemu_exit(exit.code(), exit.signal(), &stderr)
        };
        Ok(Outcome {
            status,
            serial_output: String::from_utf8_lossy(&serial).into_owned(),
            qemu_stderr: stderr,
            wall,
        })
    }
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

// ---------------------------------------------------------------------------
// Accelerator choice
// ---------------------------------------------------------------------------

/// Loop iterations the probe guest runs (about 0.1 s under TCG here).
const PROBE_LOOPS: u32 = 100_000_000;
/// Name of the cached verdict file inside the cache directory.
const PROBE_CACHE_FILE: &str = "accel-probe";

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

/// Why a test cannot boot our kernel here (QEMU or the image missing), or
/// `None` when it can. Tests print the reason and skip.
pub fn guest_boot_unavailable() -> Option<String> {
    let qemu_ok = Command::new(DEFAULT_QEMU)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !qemu_ok {
        return Some(format!("{DEFAULT_QEMU} not installed (make setup)"));
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

/// The default directory for the accelerator verdict: the workspace's `build/`.
pub fn default_cache_dir() -> PathBuf {
    workspace_root().join("build")
}

/// Resolves `choice` to an accelerator and says why. `auto` picks KVM only
/// when `/dev/kvm` opens read-write and a probe guest (a counted loop) runs
/// at least as fast under KVM as under TCG; the verdict is cached in
/// `cache_dir` per host kernel release and QEMU binary.
pub fn resolve_accel(choice: AccelChoice, qemu: &Path, cache_dir: &Path) -> (Accel, String) {
    match choice {
        AccelChoice::Tcg => (Accel::Tcg, "tcg requested".into()),
        AccelChoice::Kvm => (Accel::Kvm, "kvm requested".into()),
        AccelChoice::Auto => {
            if let Err(e) = OpenOptions::new().read(true).write(true).open("/dev/kvm") {
                return (Accel::Tcg, format!("auto: /dev/kvm does not open ({e})"));
            }
            let key = probe_cache_key(qemu);
            let cache = cache_dir.join(PROBE_CACHE_FILE);
            if let Some(accel) = read_cached_verdict(&cache, &key) {
                return (
                    accel,
                    format!("auto: cached probe verdict in {}", cache.display()),
                );
            }
            let (accel, why) = probe_accel(qemu);
            // A cache that cannot be written only costs a probe next time.
            let _ = fs::create_dir_all(cache_dir)
                .and_then(|_| fs::write(&cache, format!("{key}\n{}\n# {why}\n", accel.name())));
            (accel, format!("auto: {why}"))
        }
    }
}

fn probe_cache_key(qemu: &Path) -> String {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("key host-kernel={} qemu={}", release.trim(), qemu.display())
}

fn read_cached_verdict(cache: &Path, key: &str) -> Option<Accel> {
    let text = fs::read_to_string(cache).ok()?;
    let mut lines = text.lines();
    if lines.next()? != key {
        return None;
    }
    match lines.next()? {
        "tcg" => Some(Accel::Tcg),
        "kvm" => Some(Accel::Kvm),
        _ => None,
    }
}

/// Times the probe guest under TCG, then under KVM with a deadline of twice
/// the TCG time (plus a second for start-up noise).
fn probe_accel(qemu: &Path) -> (Accel, String) {
    let dir = std::env::temp_dir().join(format!("qemu-run-probe-{}", std::process::id()));
    let elf = dir.join("probe.elf");
    if let Err(e) = fs::create_dir_all(&dir)
        .and_then(|_| fs::write(&elf, probe_elf(PROBE_LOOPS, b"probe\n", 0)))
    {
        return (
            Accel::Tcg,
            format!("cannot write the probe guest ({e}): TCG"),
        );
    }
    let run = |accel: Accel, timeout: Duration| {
        Runner::new(
            QemuConfig::new(&elf)
                .qemu(qemu)
                .accel(accel)
                .memory(MemSize("64M".into())),
        )
        .timeout(timeout)
        .run()
    };
    let verdict = match run(Accel::Tcg, Duration::from_secs(30)) {
        Ok(t) if t.status.success() => {
            let limit = t.wall * 2 + Duration::from_secs(1);
            match run(Accel::Kvm, limit) {
                Ok(k) if k.status.success() && k.wall <= t.wall => (
                    Accel::Kvm,
                    format!("probe: KVM {:.2} s <= TCG {:.2} s", k.wall.as_secs_f64(), t.wall.as_secs_f64()),
                ),
                Ok(k) if k.status.success() => (
                    Accel::Tcg,
                    format!("probe: KVM {:.2} s slower than TCG {:.2} s", k.wall.as_secs_f64(), t.wall.as_secs_f64()),
                ),
                Ok(k) if k.status == GuestStatus::TimedOut => (
                    Accel::Tcg,
                    format!(
                        "probe: KVM still running after {:.2} s, TCG took {:.2} s (slow KVM emulation)",
                        limit.as_secs_f64(),
                        t.wall.as_secs_f64()
                    ),
                ),
                Ok(k) => (Accel::Tcg, format!("probe: KVM run failed ({})", k.status)),
                Err(e) => (Accel::Tcg, format!("probe: KVM run failed ({e})")),
            }
        }
        Ok(t) => (
            Accel::Tcg,
            format!("probe: TCG run failed ({}), KVM not trusted", t.status),
        ),
        Err(e) => (Accel::Tcg, format!("probe: TCG run failed ({e})")),
    };
    let _ = fs::remove_dir_all(&dir);
    verdict
}

/// Builds a tiny PVH-bootable ELF64 guest: it prints `message` on COM1, counts
/// down `loops` iterations, writes `status` to `isa-debug-exit` and halts.
/// Used by the accelerator probe and by tests that need a guest without the
/// real kernel.
pub fn probe_elf(loops: u32, message: &[u8], status: u32) -> Vec<u8> {
    const LOAD: u32 = 0x10_0000; // 1 MiB, where PVH guests are loaded
    const CODE_OFF: usize = 0x100; // file offset of the loaded segment
    const CODE_LEN: usize = 45; // machine code below, message follows

    // 32-bit protected mode, paging off (the PVH entry state).
    let mut code = Vec::with_capacity(CODE_LEN + message.len());
    code.push(0xfc); // cld
    code.push(0xbe); // mov esi, msg
    code.extend_from_slice(&(LOAD + CODE_LEN as u32).to_le_bytes());
    code.push(0xb9); // mov ecx, len
    code.extend_from_slice(&(message.len() as u32).to_le_bytes());
    code.extend_from_slice(&[0x66, 0xba, 0xf8, 0x03]); // mov dx, 0x3f8
    code.extend_from_slice(&[0x85, 0xc9]); // next: test ecx, ecx
    code.extend_from_slice(&[0x74, 0x05]); // jz done
    code.push(0xac); // lodsb
    code.push(0xee); // out dx, al
    code.push(0x49); // dec ecx
    code.extend_from_slice(&[0xeb, 0xf7]); // jmp next
    code.push(0xb9); // done: mov ecx, loops + 1
    code.extend_from_slice(&loops.saturating_add(1).to_le_bytes());
    code.push(0x49); // spin: dec ecx
    code.extend_from_slice(&[0x75, 0xfd]); // jnz spin
    code.extend_from_slice(&[0x66, 0xba]); // mov dx, DEBUG_EXIT_IOBASE
    code.extend_from_slice(&DEBUG_EXIT_IOBASE.to_le_bytes());
    code.push(0xb8); // mov eax, status
    code.extend_from_slice(&status.to_le_bytes());
    code.push(0xef); // out dx, eax
    code.push(0xf4); // h: hlt
    code.extend_from_slice(&[0xeb, 0xfd]); // jmp h
    debug_assert_eq!(code.len(), CODE_LEN);
    code.extend_from_slice(message);

    // The Xen PVH note: name "Xen", type 18 (XEN_ELFNOTE_PHYS32_ENTRY), desc = entry.
    let mut note = Vec::new();
    note.extend_from_slice(&4u32.to_le_bytes());
    note.extend_from_slice(&4u32.to_le_bytes());
    note.extend_from_slice(&18u32.to_le_bytes());
    note.extend_from_slice(b"Xen\0");
    note.extend_from_slice(&LOAD.to_le_bytes());
    note.extend_from_slice(&[0; 4]); // QEMU reads the entry as 8 bytes
    let note_off = 64 + 2 * 56;

    let mut elf = Vec::new();
    // ELF header.
    elf.extend_from_slice(b"\x7fELF");
    elf.extend_from_slice(&[2, 1, 1, 0]); // 64-bit, little endian, version 1, SysV
    elf.extend_from_slice(&[0; 8]);
    elf.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    elf.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    elf.extend_from_slice(&1u32.to_le_bytes());
    elf.extend_from_slice(&u64::from(LOAD).to_le_bytes()); // e_entry
    elf.extend_from_slice(&64u64.to_le_bytes()); // e_phoff
    elf.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    elf.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    elf.extend_from_slice(&64u16.to_le_bytes()); // e_ehsize
    elf.extend_from_slice(&56u16.to_le_bytes()); // e_phentsize
    elf.extend_from_slice(&2u16.to_le_bytes()); // e_phnum
    elf.extend_from_slice(&64u16.to_le_bytes()); // e_shentsize
    elf.extend_from_slice(&0u16.to_le_bytes()); // e_shnum
    elf.extend_from_slice(&0u16.to_le_bytes()); // e_shstrndx
    let phdr =
        |elf: &mut Vec<u8>, ty: u32, flags: u32, off: u64, addr: u64, len: u64, align: u64| {
            elf.extend_from_slice(&ty.to_le_bytes());
            elf.extend_from_slice(&flags.to_le_bytes());
            elf.extend_from_slice(&off.to_le_bytes());
            elf.extend_from_slice(&addr.to_le_bytes()); // p_vaddr
            elf.extend_from_slice(&addr.to_le_bytes()); // p_paddr
            elf.extend_from_slice(&len.to_le_bytes()); // p_filesz
            elf.extend_from_slice(&len.to_le_bytes()); // p_memsz
            elf.extend_from_slice(&align.to_le_bytes());
        };
    let code_len = code.len() as u64;
    phdr(
        &mut elf,
        1,
        5,
        CODE_OFF as u64,
        u64::from(LOAD),
        code_len,
        0x10,
    ); // PT_LOAD, R+X
    phdr(&mut elf, 4, 4, note_off as u64, 0, note.len() as u64, 4); // PT_NOTE
    elf.extend_from_slice(&note);
    elf.resize(CODE_OFF, 0);
    elf.extend_from_slice(&code);
    elf
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// Position of `flag` followed by `value` in `args`.
    fn pair(args: &[String], flag: &str, value: &str) -> bool {
        args.windows(2).any(|w| w[0] == flag && w[1] == value)
    }

    #[test]
    fn command_line_has_every_required_piece() {
        let cfg = QemuConfig::new("/k/kernel")
            .smp(8)
            .memory("1G".parse().unwrap())
            .cmdline("selftest")
            .accel(Accel::Tcg);
        let a = strs(&cfg.args());
        assert!(pair(&a, "-machine", "q35"));
        assert!(pair(&a, "-smp", "8"));
        assert!(pair(&a, "-m", "1G"));
        assert!(pair(&a, "-accel", "tcg,thread=multi"));
        assert!(pair(&a, "-kernel", "/k/kernel"));
        assert!(pair(&a, "-append", "selftest"));
        assert!(pair(&a, "-display", "none"));
        assert!(pair(&a, "-serial", "stdio"));
        assert!(pair(
            &a,
            "-device",
            "isa-debug-exit,iobase=0xf4,iosize=0x04"
        ));
        assert!(a.contains(&"-no-reboot".to_string()));
        assert!(!a
            .iter()
            .any(|s| s == "-netdev" || s == "-initrd" || s == "-cpu"));
    }

    #[test]
    fn kvm_and_cpu_and_empty_cmdline() {
        let a = strs(&QemuConfig::new("k").accel(Accel::Kvm).cpu("max").args());
        assert!(pair(&a, "-accel", "kvm"));
        assert!(pair(&a, "-cpu", "max"));
        assert!(!a.contains(&"-append".to_string()));
    }

    #[test]
    fn guestfwd_builds_restricted_user_net() {
        let cfg = QemuConfig::new("k").guestfwd(GuestFwd::smb(vec![
            "/bin/relay".into(),
            "--delay-ms".into(),
            "38".into(),
            "a b".into(),
            "x,y".into(),
        ]));
        let a = strs(&cfg.args());
        assert!(pair(
            &a,
            "-netdev",
            "user,id=n0,restrict=on,guestfwd=tcp:10.0.2.100:445-cmd:/bin/relay --delay-ms 38 'a b' x,,y"
        ));
        assert!(pair(&a, "-device", "virtio-net-pci,netdev=n0"));
    }

    #[test]
    fn disks_are_snapshot_virtio() {
        let a = strs(&QemuConfig::new("k").disk("/b/ext4.img").args());
        assert!(pair(
            &a,
            "-drive",
            "file=/b/ext4.img,format=raw,if=none,id=d0,snapshot=on"
        ));
        assert!(pair(&a, "-device", "virtio-blk-pci,drive=d0"));
    }

    #[test]
    fn validation_rejects_bad_configs() {
        assert!(QemuConfig::new("k").smp(0).validate().is_err());
        assert!(QemuConfig::new("k").smp(256).validate().is_err());
        assert!(QemuConfig::new("k").smp(64).validate().is_ok());
        assert!(QemuConfig::new("k").cmdline("a\nb").validate().is_err());
        assert!(QemuConfig::new("k")
            .guestfwd(GuestFwd::smb(vec![]))
            .validate()
            .is_err());
        assert!(QemuConfig::new("k").disk("/a,b").validate().is_err());
    }

    #[test]
    fn mem_sizes_parse_strictly() {
        assert_eq!("512".parse::<MemSize>().unwrap().mib(), 512);
        assert_eq!("512M".parse::<MemSize>().unwrap().mib(), 512);
        assert_eq!("2G".parse::<MemSize>().unwrap().mib(), 2048);
        for bad in ["", "M", "1.5G", "12MB", "-1", "8", "1T", "abc"] {
            assert!(bad.parse::<MemSize>().is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn accel_choice_parses() {
        assert_eq!("auto".parse(), Ok(AccelChoice::Auto));
        assert_eq!("tcg".parse(), Ok(AccelChoice::Tcg));
        assert_eq!("kvm".parse(), Ok(AccelChoice::Kvm));
        assert!("hvf".parse::<AccelChoice>().is_err());
    }

    #[test]
    fn debug_exit_status_maps_back_to_guest_value() {
        // (V << 1) | 1 for V = 0, 1, 3, 127.
        assert_eq!(
            GuestStatus::from_qemu_exit(Some(1), None, ""),
            GuestStatus::Exited(0)
        );
        assert_eq!(
            GuestStatus::from_qemu_exit(Some(3), None, ""),
            GuestStatus::Exited(1)
        );
        assert_eq!(
            GuestStatus::from_qemu_exit(Some(7), None, ""),
            GuestStatus::Exited(3)
        );
        assert_eq!(
            GuestStatus::from_qemu_exit(Some(255), None, ""),
            GuestStatus::Exited(127)
        );
        assert!(GuestStatus::Exited(0).success());
        assert!(!GuestStatus::Exited(3).success());
        assert_eq!(GuestStatus::Exited(3).exit_code(), 3);
    }

    #[test]
    fn non_debug_exits_are_failures() {
        let s = GuestStatus::from_qemu_exit(Some(0), None, "");
        assert_eq!(s, GuestStatus::NoDebugExit);
        assert!(!s.success());
        assert_eq!(s.exit_code(), EXIT_NO_DEBUG_EXIT);
        let s = GuestStatus::from_qemu_exit(
            Some(1),
            None,
            "qemu-system-x86_64: -kernel /nope: could not load kernel\n",
        );
        assert_eq!(s, GuestStatus::QemuError(1));
        assert_eq!(s.exit_code(), EXIT_QEMU_ERROR);
        let s = GuestStatus::from_qemu_exit(
            Some(1),
            None,
            "qemu: could not open kernel file '/nope': No such file or directory\n",
        );
        assert_eq!(s, GuestStatus::QemuError(1));
        // A warning alone does not turn a clean guest exit into an error.
        let s = GuestStatus::from_qemu_exit(
            Some(1),
            None,
            "/usr/bin/qemu-system-x86_64: warning: host doesn't support requested feature\n",
        );
        assert_eq!(s, GuestStatus::Exited(0));
        assert_eq!(
            GuestStatus::from_qemu_exit(Some(2), None, ""),
            GuestStatus::QemuError(2)
        );
        assert_eq!(
            GuestStatus::from_qemu_exit(None, Some(9), ""),
            GuestStatus::Signaled(9)
        );
        assert_eq!(GuestStatus::Signaled(9).exit_code(), 137);
        assert_eq!(GuestStatus::TimedOut.exit_code(), 124);
    }

    #[test]
    fn probe_elf_is_a_pvh_elf() {
        let e = probe_elf(5, b"hi", 3);
        assert_eq!(&e[..4], b"\x7fELF");
        assert_eq!(e[4], 2);
        let note = 64 + 2 * 56;
        assert_eq!(&e[note + 12..note + 16], b"Xen\0");
        assert_eq!(
            u32::from_le_bytes(e[note + 8..note + 12].try_into().unwrap()),
            18
        );
        assert!(e.ends_with(b"hi"));
    }

    #[test]
    fn cached_verdict_needs_matching_key() {
        let dir = std::env::temp_dir().join(format!("qemu-run-cache-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let f = dir.join("v");
        fs::write(&f, "key A\nkvm\n").unwrap();
        assert_eq!(read_cached_verdict(&f, "key A"), Some(Accel::Kvm));
        assert_eq!(read_cached_verdict(&f, "key B"), None);
        fs::write(&f, "key A\nbogus\n").unwrap();
        assert_eq!(read_cached_verdict(&f, "key A"), None);
        fs::remove_dir_all(&dir).unwrap();
    }
}

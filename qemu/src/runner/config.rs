//! The QEMU command line: [`QemuConfig`] and the values it holds ([`Accel`],
//! and the validated [`MemSize`] and [`GuestFwd`]). Building the argument
//! list has no side effects; [`super::Runner`] runs it. It imports nothing
//! from `accel`, which resolves a user's choice to an [`Accel`].

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use super::{RunError, DEBUG_EXIT_IOBASE, DEFAULT_QEMU};

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

/// Longest kernel command line (bytes) a boot carries. Our kernel keeps
/// 4096 bytes of `hvm_start_info`'s command line and refuses a longer one;
/// past 4127 bytes QEMU's PVH loader itself overwrites the start info
/// (the guest sees a bad magic number), and past ~30 KiB it boots nothing
/// at all. Linux on x86 keeps 2048 (`COMMAND_LINE_SIZE`), checked by QEMU.
pub const MAX_CMDLINE: usize = 4096;

/// The error for a command line longer than [`MAX_CMDLINE`], or `None`.
pub fn cmdline_too_long(cmdline: &str) -> Option<String> {
    (cmdline.len() > MAX_CMDLINE).then(|| {
        format!(
            "the kernel command line is {} bytes; a PVH boot carries at most {MAX_CMDLINE} (E2BIG)",
            cmdline.len()
        )
    })
}

/// A memory size in QEMU's `-m` syntax, validated: a number of MiB, or a
/// number with an `M` or `G` suffix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemSize(pub(super) String);

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

/// The `-cpu` value under KVM when none is given (see [`QemuConfig::cpu_arg`]).
pub const KVM_DEFAULT_CPU: &str = "host,-arch-capabilities";

/// The `-cpu` value under TCG when none is given: `max`, every feature TCG
/// emulates, among them RDRAND and RDSEED (QEMU 7.2 and later), which the
/// guest's SMB client draws its keys and nonces from. QEMU's own default,
/// `qemu64`, has neither, and the guest would fall back to the TSC.
pub const TCG_DEFAULT_CPU: &str = "max";

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
        if let Some(e) = cmdline_too_long(&self.cmdline) {
            return Err(RunError::Config(e));
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

    /// The `-cpu` value: the one asked for; else the host's own CPU under
    /// KVM (`host`, what kernel developers run), without the
    /// IA32_ARCH_CAPABILITIES MSR: the emulated `/dev/kvm` of our test
    /// machines refuses to set it, and QEMU then aborts ("failed to set MSR
    /// 0x10a"); our guests never read it. Under TCG [`TCG_DEFAULT_CPU`]
    /// (`max`: RDRAND and RDSEED for the guest's random source).
    pub fn cpu_arg(&self) -> Option<&str> {
        match (&self.cpu, self.accel) {
            (Some(c), _) => Some(c),
            (None, Accel::Kvm) => Some(KVM_DEFAULT_CPU),
            (None, Accel::Tcg) => Some(TCG_DEFAULT_CPU),
        }
    }

    /// The CPU model the guest sees, for reports: the `-cpu` value, or
    /// `qemu64` (QEMU's x86_64 default) when there is none.
    pub fn cpu_model(&self) -> &str {
        self.cpu_arg().unwrap_or("qemu64")
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
        if let Some(cpu) = self.cpu_arg() {
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
        assert!(pair(&a, "-cpu", TCG_DEFAULT_CPU));
        assert!(!a.iter().any(|s| s == "-netdev" || s == "-initrd"));
    }

    #[test]
    fn kvm_and_cpu_and_empty_cmdline() {
        let a = strs(&QemuConfig::new("k").accel(Accel::Kvm).cpu("max").args());
        assert!(pair(&a, "-accel", "kvm"));
        assert!(pair(&a, "-cpu", "max"));
        assert!(!a.contains(&"-append".to_string()));
    }

    #[test]
    fn kvm_defaults_to_cpu_host() {
        let cfg = QemuConfig::new("k").accel(Accel::Kvm);
        assert!(pair(&strs(&cfg.args()), "-cpu", "host,-arch-capabilities"));
        assert_eq!(cfg.cpu_model(), "host,-arch-capabilities");
        let cfg = QemuConfig::new("k").accel(Accel::Tcg);
        assert!(pair(&strs(&cfg.args()), "-cpu", "max"));
        assert_eq!(cfg.cpu_model(), "max");
        assert_eq!(cfg.clone().cpu("qemu64").cpu_model(), "qemu64");
        assert_eq!(cfg.cpu("max").cpu_model(), "max");
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
        let longest = " ".repeat(MAX_CMDLINE);
        assert!(QemuConfig::new("k")
            .cmdline(longest.clone())
            .validate()
            .is_ok());
        let e = QemuConfig::new("k")
            .cmdline(longest + "x")
            .validate()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("4097 bytes") && e.contains("at most 4096"),
            "{e}"
        );
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
}

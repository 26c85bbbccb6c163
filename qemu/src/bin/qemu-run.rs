//! `qemu-run`: boots a kernel once under QEMU and exits with the guest's
//! status (see `qemu::runner` for the mapping). Used by the Makefile
//! (`make boot`, `make run`, the boot tests) and by hand.
//!
//! It only spawns QEMU (and a `--net-guestfwd` program through QEMU), writes
//! the optional serial log, and reads/writes the accelerator probe cache.
#![deny(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use qemu::runner::{
    self, AccelChoice, GuestFwd, GuestStatus, MemSize, QemuConfig, Runner, EXIT_QEMU_ERROR,
};

/// Accelerator selection on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum AccelArg {
    /// KVM only when /dev/kvm opens and a short probe shows it at least as fast as TCG (cached).
    Auto,
    /// Multi-threaded TCG (`-accel tcg,thread=multi`).
    Tcg,
    /// KVM (`-accel kvm`).
    Kvm,
}

/// Boot a kernel under QEMU (q35, PVH `-kernel`, COM1 on stdout, isa-debug-exit)
/// and exit with the guest's status: V written to port 0xf4 -> exit code V;
/// timeout -> 124; QEMU ended without the guest writing a status -> 125;
/// QEMU error -> 126.
#[derive(Parser, Debug)]
#[command(name = "qemu-run", version)]
struct Args {
    /// Kernel image to boot (`-kernel`): our PVH ELF or a Linux bzImage.
    #[arg(long, short = 'k', value_name = "ELF")]
    kernel: PathBuf,

    /// Kernel command line (`-append`), e.g. "selftest" or "bench=statneg tasks=2".
    #[arg(long, short = 'c', default_value = "", value_name = "CMDLINE")]
    cmdline: String,

    /// Number of vCPUs (`-smp`), 1..=255.
    #[arg(long, default_value_t = 1, value_name = "N")]
    smp: u32,

    /// Guest memory (`-m`): MiB, or a number with M or G (512M, 2G).
    #[arg(long, default_value = "512M", value_name = "SIZE")]
    mem: MemSize,

    /// Accelerator: auto (probe, cached; picks TCG where KVM is slow), tcg or kvm.
    #[arg(long, value_enum, default_value_t = AccelArg::Auto)]
    accel: AccelArg,

    /// CPU model (`-cpu`), QEMU's default when absent.
    #[arg(long, value_name = "MODEL")]
    cpu: Option<String>,

    /// Initial ramdisk (`-initrd`).
    #[arg(long, value_name = "FILE")]
    initrd: Option<PathBuf>,

    /// Raw disk image attached as virtio-blk with snapshot=on (repeatable).
    #[arg(long, value_name = "IMAGE")]
    disk: Vec<PathBuf>,

    /// Wall-clock timeout in seconds; QEMU is killed and the exit code is 124.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    timeout: u64,

    /// Also write the serial console to this file.
    #[arg(long, value_name = "FILE")]
    serial_log: Option<PathBuf>,

    /// Do not stream the serial console to stdout (it is still logged with --serial-log).
    #[arg(long, short = 'q')]
    quiet: bool,

    /// QEMU binary.
    #[arg(long, default_value = runner::DEFAULT_QEMU, value_name = "PATH")]
    qemu: PathBuf,

    /// Directory for the cached `--accel auto` verdict (default: the workspace's build/).
    #[arg(long, value_name = "DIR")]
    accel_cache: Option<PathBuf>,

    /// Extra raw QEMU argument (repeatable; use --qemu-arg=-foo for values starting with '-').
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    qemu_arg: Vec<String>,

    /// Print the QEMU command line to stderr before running it.
    #[arg(long, short = 'v')]
    verbose: bool,

    /// Print the QEMU command line and exit without running it.
    #[arg(long)]
    dry_run: bool,

    /// User network: every guest TCP connection to 10.0.2.100:445 starts PROGRAM [ARGS...]
    /// with the connection on its stdin/stdout (restrict=on: nothing else is reachable).
    /// Takes all remaining arguments, so it must come last.
    #[arg(long, num_args = 1.., allow_hyphen_values = true, value_name = "PROGRAM")]
    net_guestfwd: Option<Vec<String>>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    // A usage error, like clap's: refuse what the boot cannot carry before
    // starting anything (QEMU would otherwise corrupt or hang the boot).
    // Our kernel is told the host cores, to name overcommit in its results.
    let host_cores = runner::host_cores();
    let cmdline = runner::with_host_cores(&args.cmdline, host_cores);
    if let Some(e) = runner::cmdline_too_long(&cmdline) {
        eprintln!("qemu-run: --cmdline: {e}");
        return ExitCode::from(2);
    }
    let choice = match args.accel {
        AccelArg::Auto => AccelChoice::Auto,
        AccelArg::Tcg => AccelChoice::Tcg,
        AccelArg::Kvm => AccelChoice::Kvm,
    };
    let cache = args
        .accel_cache
        .clone()
        .unwrap_or_else(runner::default_cache_dir);
    let (accel, why) = if args.dry_run && matches!(choice, AccelChoice::Auto) {
        (
            runner::Accel::Tcg,
            "dry run: auto shown as tcg without probing".to_string(),
        )
    } else {
        runner::resolve_accel(choice, &args.qemu, &cache)
    };

    let mut cfg = QemuConfig::new(&args.kernel)
        .qemu(&args.qemu)
        .cmdline(cmdline)
        .smp(args.smp)
        .memory(args.mem.clone())
        .accel(accel);
    if let Some(cpu) = &args.cpu {
        cfg = cfg.cpu(cpu.clone());
    }
    if let Some(initrd) = &args.initrd {
        cfg = cfg.initrd(initrd);
    }
    for d in &args.disk {
        cfg = cfg.disk(d);
    }
    if let Some(cmd) = &args.net_guestfwd {
        cfg = cfg.guestfwd(GuestFwd::smb(cmd.clone()));
    }
    for a in &args.qemu_arg {
        cfg = cfg.extra_arg(a);
    }

    if args.dry_run {
        println!("{}", cfg.command_string());
        return ExitCode::SUCCESS;
    }
    if !args.kernel.is_file() {
        eprintln!(
            "qemu-run: kernel image {} not found (build it with `make build`)",
            args.kernel.display()
        );
        return ExitCode::from(EXIT_QEMU_ERROR as u8);
    }
    eprintln!(
        "qemu-run: smp={} mem={} accel={} ({why}) cpu={} timeout={}s cmdline={:?}",
        args.smp,
        args.mem,
        accel,
        cfg.cpu_model(),
        args.timeout,
        args.cmdline
    );
    if let Some(l) = runner::overcommit_line(args.smp, host_cores) {
        eprintln!("{l}");
    }
    if args.verbose {
        eprintln!("qemu-run: {}", cfg.command_string());
    }

    let mut runner = Runner::new(cfg)
        .timeout(Duration::from_secs(args.timeout))
        .echo(!args.quiet);
    if let Some(log) = &args.serial_log {
        runner = runner.serial_log(log);
    }
    match runner.run() {
        Ok(out) => {
            let wall = out.wall.as_secs_f64();
            match out.status {
                GuestStatus::Exited(0) => eprintln!("qemu-run: {} after {wall:.2} s", out.status),
                GuestStatus::TimedOut => eprintln!(
                    "qemu-run: TIMEOUT: the guest did not finish within {} s; QEMU was killed (exit 124)",
                    args.timeout
                ),
                // --quiet hid QEMU's stderr as it came: a failed QEMU's own
                // words are the reason, so they go into the message.
                s @ GuestStatus::QemuError(_) if args.quiet => eprintln!(
                    "qemu-run: FAILED: {s} after {wall:.2} s (exit {}): {}",
                    s.exit_code(),
                    quoted_stderr(&out.qemu_stderr)
                ),
                s => eprintln!("qemu-run: FAILED: {s} after {wall:.2} s (exit {})", s.exit_code()),
            }
            ExitCode::from(out.status.exit_code().clamp(0, 255) as u8)
        }
        Err(e) => {
            eprintln!("qemu-run: {e}");
            ExitCode::from(EXIT_QEMU_ERROR as u8)
        }
    }
}

/// QEMU's stderr for a one-message report: its non-empty lines, joined by
/// ` | `, the last 20 at most; `(nothing on stderr)` when there are none.
fn quoted_stderr(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return "(nothing on stderr)".into();
    }
    lines[lines.len().saturating_sub(20)..].join(" | ")
}

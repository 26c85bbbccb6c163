//! `linuxref`: builds the Linux reference guest (`--linux-release 6.12`, the
//! default, `7.3` or `6.1`; cached in build/linuxref/RELEASE/) and runs the C
//! statneg in it at the requested vCPU counts, on tmpfs and ext4, each timed
//! run followed by a kprobe counting run (`--count`); optionally also on the
//! host (`statneg-host` on /dev/shm and /tmp). Prints one table of ops/s
//! and Linux's own per-op counters, naming the exact kernel. For manual
//! use; the bench sweep calls the library (`qemu::linuxref`).
//!
//! It touches build/linuxref/ (or `--build-dir`), apt-get download, QEMU.
#![deny(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use formats::markdown::{Align::Left, Table};
use qemu::linuxref::{self, Fs, GuestRun, Release};
use qemu::runner::Accel;

/// Build the Linux reference guest and run statneg in it (and on the host).
#[derive(Parser, Debug)]
#[command(name = "linuxref", version)]
struct Args {
    /// Which Linux: 6.12 (Debian 13's cloud kernel, the seed's kernel line),
    /// 7.3 (Debian 13's trixie-backports, mainline's line), both through a
    /// private apt configuration under the build dir, or 6.1 (the machine's
    /// Debian 12).
    #[arg(
        long,
        visible_alias = "linux",
        default_value = "6.12",
        value_name = "RELEASE"
    )]
    linux_release: Release,

    /// Stats per thread of the counting run after each timed run (kprobe
    /// hits per op: allocs, locks, rwsem, fallbacks); 0 skips it.
    #[arg(long, default_value_t = linuxref::DEFAULT_COUNT_ITERS, value_name = "N")]
    count: u32,

    /// After each counting run, one more with the lock probes keyed by
    /// caller, printed with --echo (`linuxref-callers`): who takes each lock.
    #[arg(long)]
    stacks: bool,

    /// Build directory; the guest is cached in DIR/linuxref/ (default: the workspace's build/).
    #[arg(long, value_name = "DIR")]
    build_dir: Option<PathBuf>,

    /// vCPU counts to boot with, comma-separated (statneg uses as many threads).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2",
        value_name = "N,..."
    )]
    cpus: Vec<u32>,

    /// Filesystems to run on, comma-separated: tmpfs, ext4 (ramfs is the
    /// oracle's, `linux-patched --oracle`).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "tmpfs,ext4",
        value_name = "FS,..."
    )]
    fs: Vec<Fs>,

    /// Warm-up seconds per run.
    #[arg(long, default_value_t = 1, value_name = "SECS")]
    warmup: u32,

    /// Measured seconds per run.
    #[arg(long, default_value_t = 3, value_name = "SECS")]
    secs: u32,

    /// Use KVM instead of multi-threaded TCG for the guest.
    #[arg(long)]
    kvm: bool,

    /// Also run statneg-host on the host (/dev/shm for tmpfs, /tmp for ext4) at the same thread counts.
    #[arg(long)]
    host: bool,

    /// Stream the guest console to stdout.
    #[arg(long)]
    echo: bool,

    /// Only build (or check the cache) and print the paths.
    #[arg(long)]
    build_only: bool,

    /// Only fetch and unpack Debian 13's source of the release
    /// (linux-source-6.12 or -7.3, once, under DIR/linux-src/) and print the
    /// tree's path.
    #[arg(long)]
    fetch_source: bool,

    /// Only build (or find cached, under DIR/cifs-mod/SERIES/) cifs.ko with
    /// the patch series `linux/patches/6.12/SERIES` and print its path
    /// (e.g. `cifs-eacache`, for linux/fstests.sh).
    #[arg(long, value_name = "SERIES")]
    cifs_module: Option<String>,

    /// Only read a guest's console FILE (linux/fstests.sh's, for one) and
    /// print the kernel's report in it, as every Linux-guest runner reads
    /// one: status 0 when the kernel died (a crash, to boot once more), 3
    /// when it only said it was stuck (a hang), 1 when there is no report,
    /// 2 when FILE cannot be read.
    #[arg(long, value_name = "FILE")]
    crash_report: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let build_dir = args
        .build_dir
        .clone()
        .unwrap_or_else(linuxref::default_build_dir);
    if let Some(file) = &args.crash_report {
        let console = match std::fs::read(file) {
            Ok(b) => String::from_utf8_lossy(&b).replace('\r', ""),
            Err(e) => {
                eprintln!("linuxref: {}: {e}", file.display());
                return ExitCode::from(2);
            }
        };
        return match linuxref::crash_report(&console) {
            Some(r) => {
                for l in &r.lines {
                    println!("{l}");
                }
                ExitCode::from(if r.fatal { 0 } else { 3 })
            }
            None => ExitCode::from(1),
        };
    }
    if args.fetch_source {
        return match linuxref::ensure_linux_source(&build_dir, args.linux_release) {
            Ok(tree) => {
                println!("{}", tree.display());
                ExitCode::SUCCESS
            }
            Err(skip) => {
                eprintln!("linuxref: {skip}");
                ExitCode::from(2)
            }
        };
    }
    if let Some(series) = &args.cifs_module {
        return match linuxref::ensure_cifs_module(&build_dir, args.linux_release, series) {
            Ok(m) => {
                println!("{}", m.ko.display());
                ExitCode::SUCCESS
            }
            Err(skip) => {
                eprintln!("linuxref: {skip}");
                ExitCode::from(2)
            }
        };
    }
    let paths = match linuxref::ensure_release(&build_dir, args.linux_release) {
        Ok(p) => p,
        Err(skip) => {
            eprintln!("linuxref: {skip}");
            return ExitCode::from(2);
        }
    };
    eprintln!(
        "linuxref: {} cached in {}",
        paths.describe(),
        paths.dir.display()
    );
    if args.build_only {
        println!("kernel        {}", paths.kernel.display());
        println!("initramfs     {}", paths.initramfs.display());
        println!("ext4 image    {}", paths.ext4_image.display());
        println!("statneg-host  {}", paths.statneg_host.display());
        return ExitCode::SUCCESS;
    }

    let accel = if args.kvm { Accel::Kvm } else { Accel::Tcg };
    let mut rows = Vec::new();
    let mut failed = false;
    for &cpus in &args.cpus {
        let run = GuestRun {
            count: args.count,
            stacks: args.stacks,
            accel,
            echo: args.echo,
            ..GuestRun::statneg(cpus, args.fs.clone(), args.warmup, args.secs)
        };
        eprintln!("linuxref: booting with {cpus} vCPUs ({accel}) ...");
        let boot = linuxref::retry_on_panic(|| linuxref::run_guest(&paths, &run));
        boot.report_first_crash(&format!("linuxref: {cpus} vCPUs"));
        match boot.result {
            Ok(rep) => {
                eprintln!(
                    "linuxref: {cpus} vCPUs: boot+runs {:.1} s{}",
                    rep.wall.as_secs_f64(),
                    if boot.first_crash.is_some() {
                        " (retried=1)"
                    } else {
                        ""
                    }
                );
                for (fs, r) in rep.results {
                    rows.push((format!("linux-guest {} ({accel})", rep.uname), fs, cpus, r));
                }
            }
            Err(e) => {
                eprintln!("linuxref: {cpus} vCPUs: {e}");
                failed = true;
            }
        }
        if args.host {
            for &fs in &args.fs {
                let dir = match fs {
                    Fs::Tmpfs => PathBuf::from("/dev/shm"),
                    Fs::Ext4 => PathBuf::from("/tmp"),
                    Fs::Ramfs | Fs::Devtmpfs => {
                        eprintln!("linuxref: host mode has no {fs} to run on");
                        failed = true;
                        continue;
                    }
                };
                match linuxref::run_host_statneg(&paths, &dir, cpus, args.warmup, args.secs) {
                    Ok(r) => rows.push((format!("linux-host {}", dir.display()), fs, cpus, r)),
                    Err(e) => {
                        eprintln!("linuxref: host {fs} {cpus} threads: {e}");
                        failed = true;
                    }
                }
            }
        }
    }

    println!("{}", paths.describe());
    let mut t = Table::new([
        ("source", Left),
        ("fs", Left),
        ("cpus", Left),
        ("ops/s (average)", Left),
        ("per-cpu ops/s", Left),
        ("min/thread/s", Left),
        ("max/thread/s", Left),
        ("allocs/op", Left),
        ("locks/op", Left),
        ("rwsem/op", Left),
        ("fallbacks/op", Left),
    ]);
    let f3 = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    for (src, fs, cpus, r) in &rows {
        let p = r.per_op;
        t.row([
            src.to_string(),
            fs.to_string(),
            cpus.to_string(),
            r.average.to_string(),
            (r.average / u64::from(*cpus)).to_string(),
            r.task_min().to_string(),
            r.task_max().to_string(),
            f3(p.map(|p| p.allocs)),
            f3(p.map(|p| p.locks)),
            f3(p.and_then(|p| p.rwsem)),
            f3(p.map(|p| p.fallbacks)),
        ]);
    }
    print!("{t}");
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

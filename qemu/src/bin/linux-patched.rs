//! `linux-patched`: the ENOENT designs as Linux patches, built, booted and
//! counted in the reference guest, for one release (`--linux-release 6.12`,
//! the default, or `7.3`). Builds what is missing of our kernels of that
//! release (`linux/kbuild.sh`: vanilla and each patch series of
//! `linux/patches/REL/`), boots each kernel (and Debian's) with the same
//! reference initramfs at each vCPU count, runs statneg timed and counted on
//! tmpfs and ext4, and prints per kernel × filesystem × vCPUs exactly one line
//!
//! `linuxpatch kernel=K fs=F vcpus=N ops_per_s=X allocs=A locks=L rwsem=R fallbacks=F`
//!
//! where K is the full release (`6.12.117-noalloc`, `7.3.4-vanilla`).
//! With `--oracle SECS` it runs the stress oracle (`qemu/linuxref/dcache-oracle.c`)
//! instead, once per kernel on the largest vCPU count, on each filesystem,
//! printing
//! `linuxoracle kernel=K vcpus=N secs=S stats=N exact=E wrong=W fs=F`; it fails
//! when a kernel answers wrongly, or when a deliberately broken one (the
//! negative control) does not on the filesystem it is broken on.
//!
//! A guest whose kernel crashes is booted once more (`retried=1` ends that
//! kernel's lines, and the crash's lines go to stderr); one that crashes
//! twice is reported, the lines of the filesystems its last boot finished
//! before the crash are printed ending in `crashed_later=1`, and the run
//! goes on with the other kernels and exits non-zero at the end. `--boots N` measures instead how often each kernel's
//! counting guest crashes: N boots per kernel and vCPU count, one
//! `linuxboot kernel=K vcpus=N boots=B finished=F crashed=C other=O` line
//! each, every crashed console kept in `consoles/` beside the kernel image.
//!
//! Touches build/ (kbuild/, kbuild-REL/, ccache/, linuxref/), apt-get
//! download, QEMU.
#![deny(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use qemu::linuxref::{self, Fs, GuestRun, Kernel, Release};

/// Build, boot and count Linux 6.12.117 or 7.3.4 with our patches.
#[derive(Parser, Debug)]
#[command(name = "linux-patched", version)]
struct Args {
    /// Which release's kernels: 6.12 (the seed's line) or 7.3 (mainline's).
    #[arg(long, default_value = "6.12", value_name = "RELEASE")]
    linux_release: Release,

    /// Kernels, comma-separated: debian (Debian's 6.12.117 or 7.3.4),
    /// vanilla, negative, noalloc (REL-VARIANT, our builds), the broken
    /// noalloc-broken and noalloc-flag-collision, or full labels
    /// (7.3.4-noalloc). Default: debian,vanilla,negative,noalloc; with
    /// --oracle: vanilla, negative, noalloc and the broken variants that
    /// exist for the release.
    #[arg(long, value_name = "K,...")]
    kernels: Option<String>,

    /// vCPU counts, comma-separated (statneg uses as many threads).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    cpus: Vec<u32>,

    /// Filesystems, comma-separated: tmpfs, ext4; with --oracle also ramfs.
    #[arg(long, value_delimiter = ',', default_value = "tmpfs,ext4")]
    fs: Vec<Fs>,

    /// Warm-up seconds per timed run.
    #[arg(long, default_value_t = 1)]
    warmup: u32,

    /// Measured seconds per timed run.
    #[arg(long, default_value_t = 3)]
    secs: u32,

    /// Stats per thread of each counting run.
    #[arg(long, default_value_t = linuxref::DEFAULT_COUNT_ITERS)]
    count: u32,

    /// Run the stress oracle for SECS seconds per kernel and filesystem (on
    /// the largest --cpus count, one reader per vCPU less the writer's)
    /// instead of statneg.
    #[arg(long, value_name = "SECS")]
    oracle: Option<u32>,

    /// Only build the kernels (and print their images).
    #[arg(long)]
    build_only: bool,

    /// Build directory (default: the workspace's build/).
    #[arg(long)]
    build_dir: Option<PathBuf>,

    /// Stream the guest console to stdout.
    #[arg(long)]
    echo: bool,

    /// Count crashes instead: boot each kernel's counting guest (timed run,
    /// then the counting run) N times per vCPU count, without retries, and
    /// print one `linuxboot` line each.
    #[arg(long, value_name = "N")]
    boots: Option<u32>,

    /// Rename loads, comma-separated `RATE@FS` (RATE renames a second, 0:
    /// flat out; FS tmpfs or ext4): after each counting run, one more per
    /// load while another task renames a file in /mnt/FS, and one line
    /// `linuxrename kernel=K fs=F vcpus=N on=FS rate=R renames_per_s=X
    /// stats_per_s=S ops=N renames=M fallbacks=F per_rename=P allocs=A
    /// rwsem=R` each (fallbacks: __lookup_slow per stat, per_rename: per
    /// rename; any rename bumps rename_lock, which noalloc's lockless miss
    /// checks; the rates are the counting run's, under the kprobes).
    #[arg(long, value_delimiter = ',', value_name = "RATE@FS,...")]
    renames: Vec<String>,
}

/// The kernels asked for (see `Args::kernels`).
fn kernels(args: &Args) -> Result<Vec<Kernel>, String> {
    match &args.kernels {
        Some(list) => Kernel::parse_list(list, args.linux_release),
        None if args.oracle.is_some() => Ok(Kernel::oracle_set(args.linux_release)),
        None => Ok(Kernel::defaults(args.linux_release)),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let build_dir = args
        .build_dir
        .clone()
        .unwrap_or_else(linuxref::default_build_dir);
    let wanted = match kernels(&args) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("linux-patched: --kernels: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(kernels) = built_kernels(&build_dir, &wanted) else {
        return ExitCode::from(2);
    };
    if args.build_only {
        return ExitCode::SUCCESS;
    }
    if let Some(n) = args.boots {
        return boot_loop(&args, &kernels, n);
    }
    let ok = match args.oracle {
        Some(secs) => oracle_runs(&args, &kernels, &build_dir, secs),
        None => statneg_runs(&args, &kernels),
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The reference guest of each release `wanted` names, and each kernel's
/// image, built where missing (everything first: a build is long, a boot
/// is short). `None` after saying why on stderr.
fn built_kernels(
    build_dir: &std::path::Path,
    wanted: &[Kernel],
) -> Option<Vec<(Kernel, linuxref::Paths)>> {
    // The reference guest of each release named (one, unless full labels
    // name another).
    let mut references = std::collections::BTreeMap::new();
    for r in wanted.iter().map(Kernel::release) {
        if references.contains_key(&r) {
            continue;
        }
        match linuxref::ensure_release(build_dir, r) {
            Ok(p) => {
                references.insert(r, p);
            }
            Err(skip) => {
                eprintln!("linux-patched: {skip}");
                return None;
            }
        }
    }
    let mut kernels = Vec::new();
    for k in wanted {
        match linuxref::select_kernel(&references[&k.release()], build_dir, k) {
            Ok(p) => {
                eprintln!("linux-patched: {k}: {}", p.kernel.display());
                kernels.push((k.clone(), p));
            }
            Err(skip) => {
                eprintln!("linux-patched: {k}: {skip}");
                return None;
            }
        }
    }
    Some(kernels)
}

/// `--oracle SECS`: the stress oracle once per kernel on the largest vCPU
/// count, with the RESOLVE_CACHED and case-folding checks; false when a
/// kernel answered wrongly (or a broken one did not).
fn oracle_runs(
    args: &Args,
    kernels: &[(Kernel, linuxref::Paths)],
    build_dir: &std::path::Path,
    secs: u32,
) -> bool {
    let mut failed = false;
    let cpus = args.cpus.iter().copied().max().unwrap_or(2);
    for (k, paths) in kernels {
        let readers = cpus.saturating_sub(1).max(1);
        let run = linuxref::retry_on_panic(|| {
            linuxref::run_oracle(paths, build_dir, &args.fs, cpus, readers, secs, args.echo)
        });
        run.report_first_crash(&format!("linux-patched: oracle on {k}"));
        let retried = run.suffix();
        match run.result {
            Ok(linuxref::OracleRun {
                reports,
                casefold,
                cached,
            }) => {
                // A missing name under RESOLVE_CACHED: ENOENT where the
                // kernel's dcache miss is final (noalloc on tmpfs and
                // ramfs), EAGAIN elsewhere; O_CREAT creates it on all.
                for c in &cached {
                    println!("{}{retried}", linuxref::cached_line(&k.label(), c));
                    if !linuxref::cached_verdict(c, k.miss_is_final(c.fs)) {
                        eprintln!(
                            "linux-patched: RESOLVE_CACHED check on {k} ({}): expected miss={} create=ok hit=ok",
                            c.fs,
                            if k.miss_is_final(c.fs) { "ENOENT" } else { "EAGAIN" }
                        );
                        failed = true;
                    }
                }
                // Case folding left alone: every kernel answers as a
                // case-folding tmpfs must (7.3; 6.12's tmpfs has none).
                println!("{}{retried}", linuxref::casefold_line(&k.label(), casefold));
                if casefold.is_some_and(|c| c.wrong > 0) {
                    eprintln!("linux-patched: casefold check on {k}: wrong answers");
                    failed = true;
                }
                for r in &reports {
                    for e in &r.examples {
                        println!("{e}");
                    }
                    println!(
                        "{}{retried}",
                        linuxref::oracle_line(&k.label(), cpus, secs, r)
                    );
                    // A deliberately broken kernel is the oracle's
                    // negative control: where it is broken, finding
                    // nothing is the failure.
                    if !linuxref::oracle_verdict(r, k.broken_on()) {
                        eprintln!(
                            "linux-patched: oracle on {k} ({}): {} wrong answers, expected {}",
                            r.fs,
                            r.wrong,
                            if k.broken_on().contains(&r.fs) {
                                "some"
                            } else {
                                "none"
                            }
                        );
                        failed = true;
                    }
                }
            }
            Err(e) => {
                eprintln!("linux-patched: oracle on {k}: {e}");
                failed = true;
            }
        }
    }
    !failed
}

/// statneg timed and counted on each kernel at each vCPU count: one
/// `linuxpatch` line per filesystem (and `linuxrename` per rename load);
/// false when a boot failed or a guest ran another kernel.
fn statneg_runs(args: &Args, kernels: &[(Kernel, linuxref::Paths)]) -> bool {
    let mut failed = false;
    for (k, paths) in kernels {
        for &cpus in &args.cpus {
            let run = GuestRun {
                count: args.count,
                echo: args.echo,
                renames: args.renames.clone(),
                ..GuestRun::statneg(cpus, args.fs.clone(), args.warmup, args.secs)
            };
            let boot = linuxref::retry_on_panic(|| linuxref::run_guest(paths, &run));
            boot.report_first_crash(&format!("linux-patched: {k} at {cpus} vCPUs"));
            let retried = boot.suffix();
            let line = |fs: &Fs, r: &linuxref::WisResult, suffix: &str| {
                let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
                let p = r.per_op;
                println!(
                    "linuxpatch kernel={} fs={fs} vcpus={cpus} ops_per_s={} allocs={} locks={} rwsem={} fallbacks={}{suffix}",
                    k.label(),
                    r.average,
                    f(p.map(|p| p.allocs)),
                    f(p.map(|p| p.locks)),
                    f(p.and_then(|p| p.rwsem)),
                    f(p.map(|p| p.fallbacks)),
                );
            };
            match boot.result {
                Ok(rep) => {
                    if rep.uname != paths.kernel_release && k.variant().is_some() {
                        eprintln!("linux-patched: {k}: the guest says it runs {}", rep.uname);
                        failed = true;
                    }
                    for (fs, r) in &rep.results {
                        line(fs, r, retried);
                    }
                    for (fs, section) in &rep.sections {
                        let lines: Vec<&str> = section
                            .lines()
                            .filter_map(|l| l.strip_prefix("linuxref-renames fs="))
                            .filter_map(|l| l.split_once(' ').map(|(_, rest)| rest))
                            .collect();
                        if lines.len() != args.renames.len() {
                            eprintln!(
                                "linux-patched: {k} at {cpus} vCPUs on {fs}: {} of {} rename runs printed a line",
                                lines.len(),
                                args.renames.len()
                            );
                            failed = true;
                        }
                        for l in lines {
                            println!(
                                "linuxrename kernel={} fs={fs} vcpus={cpus} {l}{retried}",
                                k.label()
                            );
                        }
                    }
                }
                Err(e) => {
                    eprintln!("linux-patched: {k} at {cpus} vCPUs: {e}");
                    failed = true;
                    // A boot whose kernel crashed (twice) still finished
                    // the filesystems before the crash: their lines, from
                    // the last boot, say so.
                    if let linuxref::LinuxRefError::Panic { console, .. } = &e {
                        for (fs, r) in linuxref::finished_runs(console, &run) {
                            line(&fs, &r, &format!("{retried} crashed_later=1"));
                        }
                    }
                }
            }
        }
    }
    !failed
}

/// `--boots N`: each kernel's counting guest booted N times per vCPU count,
/// no retries; one `linuxboot` line per kernel and vCPU count. Fails when a
/// boot did not finish.
fn boot_loop(args: &Args, kernels: &[(Kernel, linuxref::Paths)], n: u32) -> ExitCode {
    let mut failed = false;
    for (k, paths) in kernels {
        for &cpus in &args.cpus {
            let run = GuestRun {
                count: args.count,
                echo: args.echo,
                ..GuestRun::statneg(cpus, args.fs.clone(), args.warmup, args.secs)
            };
            let (mut finished, mut crashed, mut other) = (0, 0, 0);
            for i in 1..=n {
                match linuxref::run_guest(paths, &run) {
                    Ok(rep) => {
                        finished += 1;
                        // Each boot's counters, to set their spread beside
                        // the crash count.
                        for (fs, r) in &rep.results {
                            let p = r.per_op;
                            eprintln!(
                                "linux-patched: {k} at {cpus} vCPUs, boot {i} of {n}: {fs} ops_per_s={} allocs={} locks={} wall={:.1}s",
                                r.average,
                                p.map_or("-".into(), |p| format!("{:.3}", p.allocs)),
                                p.map_or("-".into(), |p| format!("{:.3}", p.locks)),
                                rep.wall.as_secs_f64()
                            );
                        }
                    }
                    Err(e) => {
                        if matches!(e, linuxref::LinuxRefError::Panic { .. }) {
                            crashed += 1;
                        } else {
                            other += 1;
                        }
                        eprintln!("linux-patched: {k} at {cpus} vCPUs, boot {i} of {n}: {e}");
                    }
                }
            }
            println!(
                "linuxboot kernel={} vcpus={cpus} boots={n} finished={finished} crashed={crashed} other={other}",
                k.label()
            );
            failed |= finished != n;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

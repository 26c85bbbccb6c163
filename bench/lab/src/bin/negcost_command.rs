//! `negcost` (`make negcost`): what N distinct missing names stat()ed in
//! one tmpfs directory cost its later readdir and rmdir, the dentries they
//! leave and the longest stretch with the directory's lock held, in Linux
//! 7.3.4 (our builds, in the reference guest on 1 vCPU under TCG) and in
//! the prototype's designs (host mode). One line each, the format of
//! [`benchlab::negcost::Line`]; the prototype first (seconds), then one
//! guest boot per kernel running every N of `--linux-names`.
//!
//! It builds nothing: a kernel whose bzImage is missing under
//! `build/kbuild-7.3/` is skipped with the reason (build it with `make
//! linux-patched-build LINUX_RELEASE=7.3`), as is the guest when the
//! cached 7.3 reference (`build/linuxref/7.3/initramfs.gz`) is missing.
//! Exit status 1 if any run failed or was skipped.
//!
//! Touches build/negcost/ (the guest's archive and console), QEMU, host
//! memory (10^6 prototype dentries: a few hundred MB).
#![deny(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use benchlab::negcost::{linux_line, run_proto};
use clap::Parser;
use qemu::linuxref::{self, NegcostKernel};

/// Negative dentries' cost per kernel and design.
#[derive(Parser, Debug)]
#[command(name = "negcost", version)]
struct Args {
    /// N for the prototype, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
    names: Vec<u64>,

    /// N for the Linux guests, comma-separated (each boot runs them all).
    #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
    linux_names: Vec<u64>,

    /// The prototype's designs, comma-separated (empty: none).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "negative,negbound,noalloc,transient"
    )]
    designs: Vec<String>,

    /// Our 7.3.4 builds, comma-separated (empty: none).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "vanilla,negative,noalloc"
    )]
    kernels: Vec<String>,

    /// Guest time budget per stat()ed name, microseconds (the boot's
    /// timeout is 180 s plus twice this per name).
    #[arg(long, default_value_t = 200)]
    per_name_us: u64,

    /// Build directory (default: the workspace's build/).
    #[arg(long)]
    build_dir: Option<PathBuf>,

    /// Stream the guest console to stdout.
    #[arg(long)]
    echo: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let build_dir = args
        .build_dir
        .clone()
        .unwrap_or_else(linuxref::default_build_dir);
    let mut failed = false;
    for d in args.designs.iter().filter(|d| !d.is_empty()) {
        // Unreported: the first pass through the code pays for its page
        // faults and cold caches.
        let _ = run_proto(d, 100);
        for &n in &args.names {
            match run_proto(d, n) {
                Ok(l) => println!("{l}"),
                Err(e) => {
                    eprintln!("negcost: proto {d} names={n}: {e}");
                    failed = true;
                }
            }
        }
    }
    let base = build_dir.join("linuxref/7.3/initramfs.gz");
    for k in args.kernels.iter().filter(|k| !k.is_empty()) {
        let image = build_dir.join("kbuild-7.3").join(k).join("bzImage");
        if !base.is_file() || !image.is_file() {
            let missing = if base.is_file() { &image } else { &base };
            eprintln!(
                "negcost: skipped 7.3.4-{k}: {} is missing (make linux-patched-build \
                 LINUX_RELEASE=7.3 builds it)",
                missing.display()
            );
            failed = true;
            continue;
        }
        let kernel = NegcostKernel {
            name: k.clone(),
            image,
            base_initramfs: base.clone(),
        };
        eprintln!("negcost: 7.3.4-{k} ({}) ...", kernel.image.display());
        let boot = linuxref::retry_on_panic(|| {
            linuxref::run_negcost(
                &kernel,
                &build_dir,
                &args.linux_names,
                args.per_name_us,
                args.echo,
            )
        });
        boot.report_first_crash(&format!("negcost: 7.3.4-{k}"));
        let rep = match boot.result {
            Ok(r) => r,
            Err(e) => {
                eprintln!("negcost: 7.3.4-{k}: {e}");
                failed = true;
                continue;
            }
        };
        for e in &rep.errors {
            eprintln!("negcost: 7.3.4-{k}: guest: {e}");
            failed = true;
        }
        // `7.3.4` of the guest's `uname -r`.
        let version = rep
            .uname
            .split(['+', '-'])
            .next()
            .unwrap_or(&rep.uname)
            .to_string();
        for g in &rep.runs {
            if g.rc != 0 {
                eprintln!("negcost: 7.3.4-{k} names={}: exit {}", g.names, g.rc);
                failed = true;
            }
            println!("{}", linux_line(&format!("{version}-{k}"), k, g));
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

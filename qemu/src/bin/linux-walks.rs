//! `linux-walks`: Linux's own walk of the step-through page's stats. Boots
//! the reference guest under each kernel asked for (Debian's, and those of
//! our builds whose bzImage exists: it never builds one) on 1 vCPU, traces
//! one warm `stat()` per case with ftrace's function graph
//! (`qemu/linuxref/walks.sh`, `qemu/linuxref/walkstat.c`), keeps the lookup
//! path's functions (`qemu/linuxref/walk-functions.txt`) and writes one JSON
//! per kernel and case into `--out` (default docs/explore/linux/):
//! `KERNEL.CASE.json`, e.g. `debian-6.12.117.tmpfs-missing.json`.
//!
//! Cases: `tmpfs-missing` (`/a/b/missing` in a tmpfs), `tmpfs-hit`
//! (`/a/b/f`), `ext4-missing` (`/a/b/missing` on ext4), each in a chroot at
//! the filesystem's root so the walk has the page's three components.
//!
//! Prints one line per written file: `linuxwalk kernel=K case=C result=R
//! calls=N file=F`; a kernel that cannot be had is skipped with its reason.
//! A guest whose kernel crashes is booted once more (its lines end in
//! `retried=1`, the crash goes to stderr); the other kernels go on either way
//! and a failure makes the exit status non-zero at the end.
//!
//! Touches build/ (linuxref/, linux-walks/), the output directory, QEMU.
#![deny(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use qemu::linuxref::{self, Kernel, Paths, Release, Walk, WalkKernel};

/// Trace Linux's walk of one stat per case, per kernel.
#[derive(Parser, Debug)]
#[command(name = "linux-walks", version)]
struct Args {
    /// Releases, comma-separated: 6.12 (Debian 13's kernel and our builds
    /// under build/kbuild/) and 7.3 (Debian's backport, its reference
    /// cached in build/linuxref/7.3/, our builds under build/kbuild-7.3/).
    #[arg(long, value_delimiter = ',', default_value = "6.12")]
    linux: Vec<String>,

    /// Kernels, comma-separated: debian, vanilla, negative, noalloc.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "debian,vanilla,negative,noalloc"
    )]
    kernels: Vec<String>,

    /// Where the JSON files go.
    #[arg(long, default_value = "docs/explore/linux")]
    out: PathBuf,

    /// Build directory (default: the workspace's build/).
    #[arg(long)]
    build_dir: Option<PathBuf>,

    /// Stream the guest console to stdout.
    #[arg(long)]
    echo: bool,
}

/// The reference guest of a release other than those `linuxref` builds
/// itself: its cached directory (`vmlinuz`, `initramfs.gz`, `ext4.img`,
/// and the stamp that names the package).
fn cached_reference(dir: &Path) -> Result<Paths, String> {
    let stamp = std::fs::read_to_string(dir.join("stamp"))
        .map_err(|e| format!("{}: {e} (build that reference first)", dir.display()))?;
    let l: Vec<&str> = stamp.lines().collect();
    let files = ["vmlinuz", "initramfs.gz", "ext4.img"];
    if l.len() < 5 || files.iter().any(|f| !dir.join(f).is_file()) {
        return Err(format!(
            "{}: the reference is not complete (stamp, {})",
            dir.display(),
            files.join(", ")
        ));
    }
    Ok(Paths {
        dir: dir.to_path_buf(),
        kernel: dir.join("vmlinuz"),
        initramfs: dir.join("initramfs.gz"),
        ext4_image: dir.join("ext4.img"),
        statneg_host: dir.join("statneg-host"),
        kernel_package: l[2].to_string(),
        package_version: l[3].to_string(),
        kernel_release: l[4].to_string(),
        release: Release::V6_12,
    })
}

/// `6.12.117+deb13-cloud-amd64` → `6.12.117`.
fn version(release: &str) -> &str {
    release.split(['+', '-']).next().unwrap_or(release)
}

/// The kernels of `release` that can be booted now, and the skipped ones
/// with the reason.
fn kernels(
    build_dir: &Path,
    release: &str,
    names: &[String],
) -> (Vec<WalkKernel>, Vec<(String, String)>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let reference = match release {
        "6.12" => linuxref::ensure_release(build_dir, Release::V6_12).map_err(|e| e.to_string()),
        "7.3" => cached_reference(&build_dir.join("linuxref/7.3")),
        other => Err(format!("unknown release {other} (expected 6.12 or 7.3)")),
    };
    let reference = match reference {
        Ok(p) => p,
        Err(e) => {
            skipped.push((format!("{release}: every kernel"), e));
            return (out, skipped);
        }
    };
    let v = version(&reference.kernel_release).to_string();
    let kbuild = if release == "6.12" {
        build_dir.join("kbuild")
    } else {
        build_dir.join(format!("kbuild-{release}"))
    };
    for n in names {
        if n == "debian" {
            out.push(WalkKernel {
                name: format!("debian-{v}"),
                label: format!("Debian {v}"),
                source: format!(
                    "{} {} (Debian's cloud kernel)",
                    reference.kernel_package, reference.package_version
                ),
                paths: reference.clone(),
            });
            continue;
        }
        if n.parse::<Kernel>().is_err() {
            skipped.push((n.clone(), "unknown kernel".into()));
            continue;
        }
        let image = kbuild.join(n).join("bzImage");
        if !image.is_file() {
            skipped.push((
                format!("{release}-{n}"),
                format!(
                    "{} is not built (make linux-patched-build)",
                    image.display()
                ),
            ));
            continue;
        }
        let series = match n.as_str() {
            "vanilla" => "unpatched".to_string(),
            "negative" => "tmpfs-negative".into(),
            "noalloc" => "tmpfs-noalloc".into(),
            other => other.into(),
        };
        out.push(WalkKernel {
            name: format!("{v}-{n}"),
            label: format!("{v}-{n}"),
            source: format!(
                "our build of linux-source-{release} ({v}), {series} (linux/kbuild.sh)"
            ),
            paths: Paths {
                kernel: image,
                ..reference.clone()
            },
        });
    }
    (out, skipped)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let build_dir = args
        .build_dir
        .clone()
        .unwrap_or_else(linuxref::default_build_dir);
    let keep_text = match std::fs::read_to_string(linuxref::function_list()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("linux-walks: {}: {e}", linuxref::function_list().display());
            return ExitCode::FAILURE;
        }
    };
    let keep = linuxref::parse_function_list(&keep_text);
    let command = format!(
        "make linux-walks (linux-walks --linux {} --kernels {})",
        args.linux.join(","),
        args.kernels.join(",")
    );
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        eprintln!("linux-walks: {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    let mut failed = false;
    for release in &args.linux {
        let (ks, skipped) = kernels(&build_dir, release, &args.kernels);
        for (k, why) in skipped {
            eprintln!("linux-walks: skipped {k}: {why}");
        }
        for k in ks {
            eprintln!(
                "linux-walks: {} ({}) ...",
                k.label,
                k.paths.kernel.display()
            );
            let boot = linuxref::retry_on_panic(|| linuxref::run_walks(&k, &build_dir, args.echo));
            boot.report_first_crash(&format!("linux-walks: {}", k.label));
            let retried = boot.suffix();
            let rep = match boot.result {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("linux-walks: {}: {e}", k.label);
                    failed = true;
                    continue;
                }
            };
            for e in &rep.errors {
                eprintln!("linux-walks: {}: guest: {e}", k.label);
                failed = true;
            }
            let mut names: Vec<&str> = rep.cases.iter().map(|c| c.case.as_str()).collect();
            names.dedup();
            for name in names {
                // The first try no interrupt or preemption got into.
                let tries: Vec<_> = rep.cases.iter().filter(|c| c.case == name).collect();
                let graph = |c: &linuxref::CaseTrace| {
                    linuxref::entry_subtree(&linuxref::parse_graph(&c.raw), &c.entry)
                };
                let clean = tries
                    .iter()
                    .position(|c| linuxref::interrupted(&graph(c)).is_none());
                let c = tries[clean.unwrap_or(0)];
                let all = graph(c);
                if clean.is_none() {
                    eprintln!(
                        "linux-walks: {} {}: every try was interrupted ({}): keeping the first",
                        k.label,
                        name,
                        linuxref::interrupted(&all).unwrap_or("?")
                    );
                }
                let raw_file = build_dir
                    .join("linux-walks")
                    .join(&k.name)
                    .join(format!("{}.trace", c.case));
                let _ = std::fs::write(&raw_file, &c.raw);
                if all.is_empty() || c.result.is_empty() {
                    eprintln!(
                        "linux-walks: {} {}: no graph traced (raw: {})",
                        k.label,
                        c.case,
                        raw_file.display()
                    );
                    failed = true;
                    continue;
                }
                let (calls, dropped) = linuxref::keep_lookup_path(&all, &keep);
                let walk = Walk {
                    kernel: k.label.clone(),
                    uname: rep.uname.clone(),
                    source: k.source.clone(),
                    case: c.case.clone(),
                    fs: c.fs.clone(),
                    root: c.root.clone(),
                    path: c.path.clone(),
                    result: c.result.clone(),
                    tracer: format!(
                        "function_graph, set_graph_function={}, set_ftrace_pid=walkstat, \
                         funcgraph-irqs=0, 1 vCPU (QEMU TCG), warm (two untraced stats first)",
                        c.entry
                    ),
                    command: command.clone(),
                    guest: vec![
                        "qemu/linuxref/walks.sh".into(),
                        "qemu/linuxref/walkstat.c".into(),
                    ],
                    filter: "qemu/linuxref/walk-functions.txt".into(),
                    filtered_out: dropped,
                    note: "durations in microseconds as function_graph measured them under \
                           QEMU's TCG with tracing on: their order, not their size, is the point"
                        .into(),
                    calls,
                };
                let file = args.out.join(format!("{}.{}.json", k.name, c.case));
                let text = match serde_json::to_string_pretty(&walk) {
                    Ok(t) => t + "\n",
                    Err(e) => {
                        eprintln!("linux-walks: {e}");
                        return ExitCode::FAILURE;
                    }
                };
                if let Err(e) = std::fs::write(&file, text) {
                    eprintln!("linux-walks: {}: {e}", file.display());
                    return ExitCode::FAILURE;
                }
                println!(
                    "linuxwalk kernel={} case={} result={} calls={} file={}{retried}",
                    k.name,
                    c.case,
                    c.result,
                    walk.calls.len(),
                    file.display()
                );
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

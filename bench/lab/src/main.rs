//! `bench`: host mode, the host Linux reference, the sweep and the report.
//!
//! ```text
//! bench host bench=statneg tasks=2 design=noalloc warmup=2 secs=5
//! bench linux-stat --dir /dev/shm --tasks 2 --warmup 2 --secs 5
//! bench sweep --testcases statneg --designs transient,noalloc --cpus 1,2 --sources host,linux-host
//! bench report results/A results/B --out results/merged
//! bench smb-sweep always easize --rtts 0,76
//! bench pingpong --batches 200
//! bench rcu-reader --rounds 5 --secs 2
//! bench predict --validate --repeat 5 --out results/predict
//! ```
//!
//! The binary's global allocator is mimalloc ([`ALLOCATOR`]), for host
//! mode's sake: there the dcache's memory comes from the host allocator,
//! and a dentry is often freed on another thread than the one that
//! allocated it (the RCU reclaimer, or the other task's `dput`). glibc's
//! `free()` takes the owning arena's lock for such a free, so the
//! benchmark's threads waited on each other's `malloc` in
//! `__lll_lock_wait_private` and measured glibc; mimalloc puts a remote
//! free on the owning page's lock-free list, which the owner collects, as a
//! kernel's per-CPU slab does. Only this host binary: the guest kernel
//! keeps its own slab (kernel/src/mm), and the fs crate's tests keep the
//! system allocator.
//!
//! Touches: stdout/stderr, the result directories, child processes.
#![deny(unsafe_code)]

/// The global allocator's name, printed by `bench host`.
pub const ALLOCATOR: &str = "mimalloc";

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::process::ExitCode;

use bench::params::Params;
use benchlab::exec::HostExecutor;
use benchlab::{linux, now_stamp, sweep, StdoutWriter};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "bench",
    version,
    about = "Lookup benchmarks: host mode, Linux reference, sweep, report"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run one workload on native host threads: the guest's words
    /// (bench=NAME tasks=N design=D warmup=S secs=S; the designs are
    /// fs::dcache::design::DESIGNS, listed by `bench host` with no words).
    Host {
        /// Do not pin tasks to CPUs.
        #[arg(long)]
        no_pin: bool,
        /// bench=… tasks=… design=… warmup=… secs=…
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "WORDS"
        )]
        words: Vec<String>,
    },
    /// Host Linux's own stat() of DIR/nonexistent on N threads (same output format).
    LinuxStat {
        /// Directory on the filesystem to measure (e.g. /dev/shm for tmpfs, /tmp).
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=255))]
        tasks: u32,
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=3600))]
        warmup: u32,
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=3600))]
        secs: u32,
        /// Do not pin threads to CPUs.
        #[arg(long)]
        no_pin: bool,
        /// Stat the one component `nonexistent` with DIR as the working
        /// directory (the prototype's path shape), not DIR/nonexistent.
        #[arg(long)]
        in_dir: bool,
    },
    /// Run every design × CPU count on the chosen sources; write results/<timestamp>/.
    Sweep(sweep::SweepArgs),
    /// The prototype's design ratios beside Linux 7.3.4's (guest, TCG), in
    /// interleaved rounds, with and without the guest's system call
    /// constant (`make fidelity`, docs/bench/fidelity.md).
    Fidelity(benchlab::fidelity::FidelityArgs),
    /// The cifs seed's experiment: coreutils 9.7's `ls -la` of a Samba
    /// share per EA-cache design (`eacache=`) and RTT, cold then warm,
    /// counted by the latency relay.
    SmbSweep(SmbSweepArgs),
    /// Read and write MB/s of one file through the cifs mount (host mode,
    /// loopback Samba, 0 ms).
    SmbRw {
        /// File size in bytes.
        #[arg(long, default_value_t = 3_000_000)]
        size: usize,
        /// Repetitions of each direction (the median is reported).
        #[arg(long, default_value_t = 5)]
        reps: usize,
        /// Extra cifs mount options (comma-separated, e.g. rsize=65536).
        #[arg(long, default_value = "")]
        opts: String,
    },
    /// Cache-line transfer latency between two CPUs (ns, median of batches
    /// of round trips).
    Pingpong {
        /// Batches of 1000 round trips.
        #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100000))]
        batches: u32,
        /// Do not pin the two threads to CPUs.
        #[arg(long)]
        no_pin: bool,
    },
    /// The host RCU reader's fence as an A/B: noalloc statneg on 1 task,
    /// alternately with FS_RCU_READER=fence and fence-free (membarrier);
    /// ns/op per round and the medians.
    RcuReader {
        /// Rounds (each runs both modes once, the first mode alternating).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
        rounds: u32,
        /// Measured seconds of each run.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=3600))]
        secs: u32,
        /// Warm-up seconds of each run.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=3600))]
        warmup: u32,
        /// Do not pin the task to a CPU.
        #[arg(long)]
        no_pin: bool,
        /// Also run each mode once under `perf record` and print
        /// rcu_read_lock's share of the samples.
        #[arg(long)]
        perf: bool,
    },
    /// Predict ops/s at 1..64 CPUs per design and lock kind from 1-CPU runs
    /// and the transfer latency (docs/scaling-model.md).
    Predict(benchlab::predict::PredictArgs),
    /// Merge the raw.csv of several result directories into one report.
    Report {
        /// Result directories (or raw.csv files).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where the merged raw.csv, report.md and scaling.svg go [default: results/<timestamp>-merged].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print a plain-text summary instead (72 columns, for a mailing
        /// list): ops/s per CPU count and scaling, per-op counters, and the
        /// SMB table of any smb-sweep directory among DIRS. Writes nothing.
        #[arg(long)]
        text: bool,
        /// Keep overcommitted runs (more vCPUs or tasks than the host cores
        /// they ran on, marked ⚠) in the scaling efficiency, ratios and goals.
        #[arg(long)]
        with_overcommit: bool,
    },
}

// `bench smb-sweep`'s options; the variant's doc comment is its help.
#[derive(Args, Debug)]
struct SmbSweepArgs {
    /// EA-cache designs to run [default: every design of
    /// fs::fstype::cifs::eacache, in its order].
    #[arg(value_name = "DESIGN")]
    designs_pos: Vec<String>,
    /// The same, comma-separated (added to DESIGN…).
    #[arg(long, value_delimiter = ',')]
    designs: Vec<String>,
    /// Round-trip times to inject, milliseconds.
    #[arg(long, value_delimiter = ',', default_value = "0,76")]
    rtts: Vec<u64>,
    /// Entries (subdirectories) in the share.
    #[arg(long, default_value_t = 511)]
    entries: usize,
    /// How many of them (the first ones) carry WSL EAs.
    #[arg(long, default_value_t = 0)]
    wsl: usize,
    /// How many of them (the last ones) carry the EA `user.x` (every
    /// listing is checked to show it).
    #[arg(long, default_value_t = 0)]
    eas: usize,
    /// Extra cifs mount options (comma-separated).
    #[arg(long, default_value = "")]
    opts: String,
    /// The latency-relay binary [default: next to this binary].
    #[arg(long)]
    relay: Option<PathBuf>,
    /// Results go to OUT/<timestamp>-smb/.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// The real Linux client's rows first (`design=linux-6.12`): the
    /// reference guest's cifs.ko of this release (6.12, the seed's line;
    /// 7.3, mainline's; 6.1), or `none`.
    #[arg(
        long = "linux-release",
        visible_alias = "linux",
        default_value = "6.12",
        value_name = "RELEASE|none"
    )]
    linux: String,
    /// Also run the seed's variants (noserverino, symlink=none,
    /// reparse=wsl, vers=3.0), nouser_xattr and the host's `ls` with
    /// the real client at this RTT.
    #[arg(long, value_name = "MS")]
    linux_variants: Option<u64>,
    /// Also list with cifs.ko built out of tree with this patch series
    /// of linux/patches/REL/ (`design=linux-REL+eacache`), or `none`.
    #[arg(long, default_value = "cifs-eacache", value_name = "SERIES|none")]
    linux_patch: String,
    /// Where the reference guest is built and cached [default: build/].
    #[arg(long)]
    build_dir: Option<PathBuf>,
}

/// `bench smb-sweep --help`'s list of designs, from the registry.
fn eacache_designs_help() -> String {
    let designs = fs::fstype::cifs::eacache::EACACHE_DESIGNS;
    // The name column as wide as the longest name (at least 10, as always).
    let w = fs::dcache::design::width_of(designs.iter().map(|d| d.name()), 10);
    let mut s = String::from("EA-cache designs (fs::fstype::cifs::eacache::EACACHE_DESIGNS):\n");
    for d in designs {
        s.push_str(&format!("  {:<w$} {}\n", d.name(), d.help()));
    }
    s
}

fn main() -> ExitCode {
    let cmd = Cli::command().mut_subcommand("smb-sweep", |c| c.after_help(eacache_designs_help()));
    let cli = Cli::from_arg_matches(&cmd.get_matches()).unwrap_or_else(|e| e.exit());
    match cli.cmd {
        Cmd::Host { no_pin, words } => host(no_pin, &words),
        Cmd::SmbRw { size, reps, opts } => smb_rw(size, reps, &opts),
        Cmd::LinuxStat {
            dir,
            tasks,
            warmup,
            secs,
            no_pin,
            in_dir,
        } => {
            let shape = if in_dir {
                linux::PathShape::InDir
            } else {
                linux::PathShape::Absolute
            };
            linux_stat(&dir, shape, tasks, warmup, secs, no_pin)
        }
        Cmd::Sweep(a) => match sweep::sweep(&a) {
            Ok(dir) => {
                println!("results in {}", dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => failed("sweep", e),
        },
        Cmd::SmbSweep(a) => smb_sweep(a),
        Cmd::Fidelity(a) => match benchlab::fidelity::run(&a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => failed("fidelity", e),
        },
        Cmd::Pingpong { batches, no_pin } => pingpong(batches, no_pin),
        Cmd::RcuReader {
            rounds,
            secs,
            warmup,
            no_pin,
            perf,
        } => rcu_reader(
            &benchlab::rcureader::Config {
                rounds,
                warmup,
                secs,
                no_pin,
            },
            perf,
        ),
        Cmd::Report {
            dirs, text: true, ..
        } => report_text(&dirs),
        Cmd::Predict(a) => {
            let exec = HostExecutor::new(!a.no_pin);
            match benchlab::predict::run(&a, &exec) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => failed("predict", e),
            }
        }
        Cmd::Report {
            dirs,
            out,
            with_overcommit,
            ..
        } => report(&dirs, out, with_overcommit),
    }
}

/// `bench WHAT: ERROR` on stderr, and exit status 1.
fn failed(what: &str, e: impl std::fmt::Display) -> ExitCode {
    eprintln!("bench {what}: {e}");
    ExitCode::FAILURE
}

/// Say so when the tasks were to be pinned and the kernel refused.
fn note_unpinned(no_pin: bool, exec: &HostExecutor) {
    if !no_pin && !exec.pinned() {
        eprintln!("bench: note: tasks not pinned (sched_setaffinity refused)");
    }
}

/// `bench host`: one workload on native host threads.
fn host(no_pin: bool, words: &[String]) -> ExitCode {
    let params = match Params::parse_words(words.iter().map(String::as_str)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("bench host: {e}\n{}", bench::params::HELP);
            return ExitCode::from(2);
        }
    };
    let exec = HostExecutor::new(!no_pin);
    eprintln!(
        "bench: host RCU readers: {}",
        fs::sync::host::HostPlatform::global().rcu_reader_mode()
    );
    eprintln!("bench: allocator: {ALLOCATOR}");
    let policy =
        benchlab::exec::wait_policy(params.lock, params.tasks, exec.cpus().len(), exec.pinned());
    let result = bench::run_params(&params, &exec, &mut StdoutWriter::new());
    // Host RCU grace periods that interrupted the tasks' CPUs: in the
    // measured window only where a task stalled for a whole grace period
    // (fs::sync::host, "Grace periods without membarrier").
    let window = result
        .as_ref()
        .ok()
        .and_then(|s| s.counters)
        .map_or_else(|| "-".to_string(), |c| c.membarriers.to_string());
    eprintln!(
        "bench: membarrier: {window} calls in the measured window, {} in the run",
        fs::sync::host::membarrier_calls()
    );
    eprintln!("{policy}");
    if let Some(ms) = benchlab::proc::self_cpu_ms() {
        // For `bench rcu-reader`: CPU time per op shrugs off the
        // preemption of a loaded machine that wall time counts.
        eprintln!("bench: cpu time: {ms} ms (user+sys, all threads)");
    }
    note_unpinned(no_pin, &exec);
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => failed("host", e),
    }
}

/// `bench smb-rw`: read and write MB/s through the cifs mount.
fn smb_rw(size: usize, reps: usize, opts: &str) -> ExitCode {
    match benchlab::smbrw::run(size, reps, opts) {
        Ok(rows) => {
            for r in rows {
                println!("{}", r.line());
            }
            ExitCode::SUCCESS
        }
        Err(e) => failed("smb-rw", e),
    }
}

/// `bench linux-stat`: host Linux's own stat of a missing name.
fn linux_stat(
    dir: &std::path::Path,
    shape: linux::PathShape,
    tasks: u32,
    warmup: u32,
    secs: u32,
    no_pin: bool,
) -> ExitCode {
    let exec = HostExecutor::new(!no_pin);
    let r = linux::run(
        &exec,
        dir,
        shape,
        tasks as usize,
        warmup,
        secs,
        &mut StdoutWriter::new(),
    );
    note_unpinned(no_pin, &exec);
    match r {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => failed("linux-stat", e),
    }
}

/// `bench smb-sweep`: the options checked, the output directory made, the
/// real Linux client's rows, then ours, and one report of both.
fn smb_sweep(a: SmbSweepArgs) -> ExitCode {
    let cfg = match lsla_config(&a) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    // The output directory first: a whole experiment must not run only to
    // find it cannot write its report.
    let Some(dir) = smb_sweep_dir(&a.out) else {
        return ExitCode::FAILURE;
    };
    let linux_rows = match linux_lsla_rows(&cfg, &a) {
        Ok(rows) => rows,
        Err(code) => return code,
    };
    for l in &linux_rows {
        println!("{}", l.line());
        for m in &l.module_log {
            eprintln!("{} cifs.ko: {m}", l.row.design);
        }
    }
    match benchlab::lsla::run(&cfg, |what| eprintln!("{what}")) {
        Ok(rows) => smb_sweep_report(&dir, &linux_rows, &rows),
        Err(e) => failed("smb-sweep", e),
    }
}

/// `bench smb-sweep`'s configuration of our client's runs: the designs
/// given (every design when none), each checked against the registry
/// (exit status 2 for an unknown one).
fn lsla_config(a: &SmbSweepArgs) -> Result<benchlab::lsla::LslaConfig, ExitCode> {
    let relay = a.relay.clone().unwrap_or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(|d| d.join("latency-relay")))
            .unwrap_or_else(|| PathBuf::from("latency-relay"))
    });
    let mut designs = a.designs_pos.clone();
    designs.extend(a.designs.iter().cloned());
    let known = fs::fstype::cifs::eacache::EACACHE_DESIGNS;
    if designs.is_empty() {
        designs = known.iter().map(|d| d.name().to_string()).collect();
    }
    if let Some(bad) = designs
        .iter()
        .find(|d| fs::fstype::cifs::eacache::by_name(d).is_none())
    {
        eprintln!(
            "bench smb-sweep: no EA-cache design {bad:?} ({})",
            fs::fstype::cifs::eacache::names()
        );
        return Err(ExitCode::from(2));
    }
    Ok(benchlab::lsla::LslaConfig {
        designs,
        rtts_ms: a.rtts.clone(),
        entries: a.entries,
        wsl_entries: a.wsl,
        ea_entries: a.eas,
        relay_bin: relay,
        extra_opts: a.opts.clone(),
    })
}

/// `OUT/<timestamp>-smb/`, made and holding a placeholder `smb.md`; `None`
/// (said on stderr) when it cannot be written.
fn smb_sweep_dir(out: &std::path::Path) -> Option<PathBuf> {
    let dir = out.join(format!("{}-smb", now_stamp()));
    if let Err(e) = std::fs::create_dir_all(&dir)
        .and_then(|_| std::fs::write(dir.join("smb.md"), "(running)\n"))
    {
        eprintln!(
            "bench smb-sweep: --out {}: {e}; nothing was run",
            dir.display()
        );
        return None;
    }
    Some(dir)
}

/// The real Linux client's rows (none for `--linux-release none`, or when
/// the reference guest cannot run: said, and skipped); exit status 2 for
/// a release that does not parse.
fn linux_lsla_rows(
    cfg: &benchlab::lsla::LslaConfig,
    a: &SmbSweepArgs,
) -> Result<Vec<benchlab::lsla::LinuxLsla>, ExitCode> {
    let linux = &a.linux;
    if linux == "none" {
        return Ok(Vec::new());
    }
    let release = match linux.parse() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bench smb-sweep: --linux-release: {e}");
            return Err(ExitCode::from(2));
        }
    };
    let lcfg = benchlab::lsla::LinuxLslaConfig {
        release,
        build_dir: a
            .build_dir
            .clone()
            .unwrap_or_else(qemu::linuxref::default_build_dir),
        variants_rtt: a.linux_variants,
        patch: (a.linux_patch != "none").then(|| a.linux_patch.clone()),
    };
    match benchlab::lsla::run_linux(cfg, &lcfg, |what| eprintln!("{what}")) {
        Ok(rows) => Ok(rows),
        Err(e) => {
            eprintln!("lsla design=linux-{linux} skipped: {e}");
            Ok(Vec::new())
        }
    }
}

/// Write `DIR/smb.md` from both clients' rows and print ours; success
/// only when the relay and our client counted the same frames.
fn smb_sweep_report(
    dir: &std::path::Path,
    linux_rows: &[benchlab::lsla::LinuxLsla],
    rows: &[benchlab::lsla::LslaRow],
) -> ExitCode {
    let report = benchlab::lsla::report_all(linux_rows, rows);
    if let Err(e) = std::fs::write(dir.join("smb.md"), &report) {
        return failed("smb-sweep", format_args!("{}: {e}", dir.display()));
    }
    for r in rows {
        println!("{}", r.line());
    }
    println!("report in {}", dir.join("smb.md").display());
    if rows.iter().all(|r| r.relay_round_trips == r.client_frames) {
        ExitCode::SUCCESS
    } else {
        failed(
            "smb-sweep",
            "the relay's and the client's frame counts disagree",
        )
    }
}

/// `bench pingpong`: the cache-line transfer latency between two CPUs.
fn pingpong(batches: u32, no_pin: bool) -> ExitCode {
    let exec = HostExecutor::new(!no_pin);
    if exec.cpus().len() < 2 {
        eprintln!("bench pingpong: this process may run on one CPU only (EINVAL)");
        return ExitCode::from(2);
    }
    match bench::pingpong::run(&exec, batches as usize) {
        Ok(r) => {
            println!("{r}");
            note_unpinned(no_pin, &exec);
            ExitCode::SUCCESS
        }
        Err(e) => failed("pingpong", e),
    }
}

/// `bench rcu-reader`: the host RCU reader's fence as an A/B, and with
/// `perf` each mode's share of samples in `rcu_read_lock`.
fn rcu_reader(cfg: &benchlab::rcureader::Config, perf: bool) -> ExitCode {
    use benchlab::rcureader;
    match rcureader::run(cfg, &mut |l| println!("{l}")) {
        Ok(s) => println!("{s}"),
        Err(e) => return failed("rcu-reader", e),
    }
    if perf {
        match rcureader::perf_shares(cfg) {
            Ok(shares) => shares.iter().for_each(|p| println!("{p}")),
            Err(e) => return failed("rcu-reader: --perf", e),
        }
    }
    ExitCode::SUCCESS
}

/// `bench report --text`: the plain-text summary of result directories.
fn report_text(dirs: &[PathBuf]) -> ExitCode {
    let dirs: Vec<&std::path::Path> = dirs.iter().map(PathBuf::as_path).collect();
    match benchlab::text::render_dirs(&dirs) {
        Ok(t) => {
            print!("{t}");
            ExitCode::SUCCESS
        }
        Err(e) => failed("report --text", e),
    }
}

/// `bench report`: merge result directories into one report.
fn report(dirs: &[PathBuf], out: Option<PathBuf>, with_overcommit: bool) -> ExitCode {
    let out =
        out.unwrap_or_else(|| PathBuf::from("results").join(format!("{}-merged", now_stamp())));
    match sweep::merge_opts(dirs, &out, with_overcommit) {
        Ok(n) => {
            println!("{n} rows merged into {}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => failed("report", e),
    }
}

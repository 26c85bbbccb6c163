//! Benchmarks of the lookup path: the workloads and their driver, shared by
//! the guest kernel and host mode. The host-side tools (host mode, the
//! Linux `stat()` reference, the sweep, the report, the scaling model) are
//! the `benchlab` crate in `bench/lab/`, which also builds the `bench`
//! binary.
//!
//! - [`cmdline`]: the one parser of command-line words (splitter, key-table
//!   type, Linux-worded errors, help), for the kernel's command line and
//!   host mode's words.
//! - [`params`]: the `bench=… tasks=… design=… warmup=… secs=…` words, a key
//!   table of [`cmdline`].
//! - [`workloads`]: statneg and its relatives (one file each).
//! - [`coreutils`]: the system calls of coreutils 9.7's `ls -la`, the cifs
//!   seed's workload (the kernel's `smb=` run, `bench lsla`, the cifs tests).
//! - [`driver`]: one task per CPU, per-second sampling, the [`driver::Executor`]
//!   trait a platform implements.
//! - [`pingpong`]: cache-line transfer latency between two CPUs.
//! - [`rounds`]: paired rounds of designs (ABBA order) and their statistics
//!   (median, min–max, per-round ratios, a sign test per pair): the demo table.
//!
//! The guest kernel calls [`run_params`] with its own executor; host mode
//! calls it with benchlab's `HostExecutor`. Without `std` the crate is
//! `no_std + alloc`; it is safe code only.
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod cmdline;
pub mod coreutils;
pub mod driver;
pub mod params;
pub mod pingpong;
pub mod rounds;
pub mod workloads;

use core::fmt;

use fs::vfs::Vfs;

use driver::{Executor, RunConfig, RunError, Summary};
use params::{Bench, Frontend, Params};
use workloads::{Sys, VfsBody, Workload};

/// Run the benchmark `p` describes, from scratch: mount a fresh tmpfs with
/// `p.design`'s options, set the workload up, run it on `p.tasks` tasks of
/// `exec` and print will-it-scale's format to `out`.
///
/// The fs platform must be installed first (the kernel does it at boot;
/// on the host it installs itself).
///
/// What a kernel does with a command line such as
/// `bench=statneg tasks=4 design=noalloc warmup=2 secs=5` (its own keys in
/// a table beside [`params::keys`]; `kernel/src/cmdline.rs`):
///
/// ```ignore
/// let params = bench::params::Params::parse_line(cmdline)?; // Linux-worded error
/// // KernelExecutor implements bench::driver::Executor (tasks on APs, pinned).
/// match bench::run_params(&params, &KernelExecutor, &mut serial) {
///     Ok(_) => exit(0),
///     Err(e) => { writeln!(serial, "bench: {e}"); exit(1) }
/// }
/// ```
pub fn run_params<E, W>(p: &Params, exec: &E, out: &mut W) -> Result<Summary, RunError>
where
    E: Executor + ?Sized,
    W: fmt::Write + Send,
{
    let vfs = fresh_tmpfs(p)?;
    match p.bench {
        Bench::Statneg => run_workload(workloads::statneg::Statneg, &vfs, p, exec, out),
        Bench::StatnegDistinct => run_workload(
            workloads::statneg_distinct::StatnegDistinct::default(),
            &vfs,
            p,
            exec,
            out,
        ),
        Bench::StatnegDeep => {
            run_workload(workloads::statneg_deep::StatnegDeep, &vfs, p, exec, out)
        }
        Bench::Statpos => run_workload(workloads::statpos::Statpos::default(), &vfs, p, exec, out),
        Bench::Churn => run_workload(workloads::churn::Churn::default(), &vfs, p, exec, out),
        Bench::StatnegOwndir => run_workload(
            workloads::statneg_owndir::StatnegOwndir::default(),
            &vfs,
            p,
            exec,
            out,
        ),
        Bench::StatnegMany => run_workload(
            workloads::statneg_many::StatnegMany::new(p.names),
            &vfs,
            p,
            exec,
            out,
        ),
        Bench::Statmix => run_workload(
            workloads::statmix::Statmix::new(p.names),
            &vfs,
            p,
            exec,
            out,
        ),
    }
}

/// A fresh tmpfs mounted with `p`'s design, every lock created from here
/// on of `p`'s kind. The dcache's global locks exist from its first use,
/// so a process that already used another kind gets [`RunError::LockKind`].
pub fn fresh_tmpfs(p: &Params) -> Result<Vfs, RunError> {
    fs::sync::rawlock::set_default_kind(p.lock);
    let built = fs::dcache::dcache().lock_kind();
    if built != p.lock {
        return Err(RunError::LockKind {
            asked: p.lock,
            built,
        });
    }
    Vfs::new_tmpfs(&p.design.mount_opts()).map_err(RunError::Setup)
}

/// Set `w` up on `vfs` and run it (the generic half of [`run_params`]).
pub fn run_workload<Wk, E, W>(
    mut w: Wk,
    vfs: &Vfs,
    p: &Params,
    exec: &E,
    out: &mut W,
) -> Result<Summary, RunError>
where
    Wk: Workload,
    E: Executor + ?Sized,
    W: fmt::Write + Send,
{
    let max = exec.max_tasks();
    if p.tasks == 0 || p.tasks > max {
        return Err(RunError::Tasks {
            asked: p.tasks,
            max,
        });
    }
    w.setup(vfs, p.tasks).map_err(RunError::Setup)?;
    let description = testcase_description(w.description(), p, exec.syscall_name());
    let cfg = RunConfig {
        description: &description,
        tasks: p.tasks,
        warmup: p.warmup,
        secs: p.secs,
        counters: Some(fs::stats::snapshot),
        pause: p.pause,
    };
    let syscall = || exec.enter_syscall();
    let body = VfsBody {
        workload: &w,
        sys: Sys::new(vfs, p.frontend, &syscall),
    };
    driver::run(exec, &cfg, &body, out)
}

/// `"<workload description> (tmpfs enoent=<design> frontend=<frontend>)"`,
/// and ` syscall=<what is paid>` under `frontend=stat` (the system call
/// cost the executor pays per stat: `getppid` in host mode, `none` where
/// nothing is paid yet).
pub fn testcase_description(desc: &str, p: &Params, syscall: &str) -> alloc::string::String {
    match p.frontend {
        Frontend::Walk => alloc::format!("{desc} (tmpfs enoent={} frontend=walk)", p.design),
        Frontend::Stat => alloc::format!(
            "{desc} (tmpfs enoent={} frontend=stat syscall={syscall})",
            p.design
        ),
    }
}

//! What the kernel command line sets: [`Config`] with its defaults, and
//! the modes it picks (`crash=`, `demo=`, `stress=`). Plain data; the
//! parser that fills it is the parent module. Touches nothing.

/// A fault to trigger on purpose (`crash=`), to see the exception path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crash {
    /// Read an unmapped address (page fault).
    PageFault,
    /// Recurse until the stack guard page is hit (double fault on IST).
    StackOverflow,
    /// The same on the last CPU (an AP's guarded stack) when there is one.
    StackOverflowAp,
    /// Execute `ud2` (invalid opcode).
    InvalidOpcode,
    /// `panic!`.
    Panic,
}

/// Everything the command line can set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Run the in-guest self-test suite and exit with its verdict.
    pub selftest: bool,
    /// Log level of the `log` macros.
    pub log: log::LevelFilter,
    /// LAPIC tick frequency in Hz.
    pub hz: u32,
    /// Milliseconds to wait for the APs to come online.
    pub smp_timeout_ms: u32,
    /// Crash on purpose after boot.
    pub crash: Option<Crash>,
    /// A guest benchmark: `bench=NAME tasks=N design=D warmup=S secs=S`,
    /// parsed by `bench::params` (the same parser as host mode).
    pub bench: Option<bench::params::Params>,
    /// `trace=lookup`: print every path-walk step to the console.
    pub trace_lookup: bool,
    /// `demo=`: a demonstration to run.
    pub demo: Option<Demo>,
    /// `rounds=N`: with `demo=table`, its rounds (default
    /// `demotable::TABLE_ROUNDS`, 8; fewer for a smoke that only needs the
    /// table's rows and exit status).
    pub rounds: Option<u32>,
    /// `stress=`: a stress test to run.
    pub stress: Option<Stress>,
    /// `secs=` as given (bench length, or stress length without `bench=`).
    pub secs: Option<u32>,
    /// `design=` as given (with `stress=`: only this design).
    pub design: Option<bench::params::Design>,
    /// `smb=//A.B.C.D/SHARE`: mount the share at /mnt and list it (`lsla`).
    pub smb: Option<crate::smbargs::SmbSource>,
    /// `smbopts=`: cifs mount options for `smb=`.
    pub smbopts: Option<crate::smbargs::Text<{ crate::smbargs::OPTS_MAX }>>,
    /// `smbread=PATH`: with `smb=`, read this share-relative file and
    /// print its checksum.
    pub smbread: Option<crate::smbargs::Text<{ crate::smbargs::READ_PATH_MAX }>>,
    /// `poison=0|1` as given: `1` fills freed memory and checks the fill on
    /// reuse from boot on; `stress=rcu` turns it on unless `poison=0`.
    pub poison: Option<bool>,
    /// `failslab=N`: refuse every N-th fs allocation (`fs::fault`).
    pub failslab: Option<u64>,
    /// `lock=K` as given: the kind of every fs lock (without it
    /// [`GUEST_LOCK`]; with `bench=` also the benchmark's `lock=`).
    pub lock: Option<bench::params::LockKind>,
    /// `host_cores=N`: the host cores QEMU may run on (`qemu-run` passes
    /// it), so that results can say when vCPUs outnumber them.
    pub host_cores: Option<u32>,
}

/// The lock kind fs locks get in the guest unless `lock=` says otherwise
/// (a benchmark's own default stays `bench::params`'s, qspinlock, as on the
/// host, and so does `demo=table`'s unless vCPUs outnumber host cores:
/// `demotable::demo_lock`): the paravirt lock, because guests usually run with more vCPUs
/// than the host has cores free (64-vCPU selftest on 2 cores:
/// `fs_lookups_all_cpus_per_design` 113-253 ms in 10 boots, against
/// 138 ms to 88 s with qspinlock; docs/overcommit.md).
pub const GUEST_LOCK: bench::params::LockKind = bench::params::LockKind::Pvqspinlock;

/// What `demo=` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Demo {
    /// Trace one `stat("/a/b/missing")` per ENOENT design.
    Trace,
    /// statneg on up to 4 CPUs in paired rounds of every design; one table
    /// of medians, the per-round ratios and the pairs it cannot tell apart.
    Table,
    /// `bench pingpong` between the first two CPUs.
    Pingpong,
}

/// What `stress=` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stress {
    /// Create/unlink/rename churn against checked lookups on every CPU.
    Rcu,
    /// 1,000,000 distinct missing names per design in a small guest.
    Mem,
    /// Fill tmpfs until memory admission says ENOMEM, then check recovery.
    Oom,
    /// Distinct missing names from every CPU for `secs=` (default 60), the
    /// negative design: memory must stay bounded.
    Hostile,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            selftest: false,
            log: log::LevelFilter::Info,
            hz: 100,
            smp_timeout_ms: 60_000,
            crash: None,
            bench: None,
            trace_lookup: false,
            demo: None,
            rounds: None,
            stress: None,
            secs: None,
            design: None,
            smb: None,
            smbopts: None,
            smbread: None,
            poison: None,
            failslab: None,
            lock: None,
            host_cores: None,
        }
    }
}

//! The platform-neutral run driver: start one task per CPU, sample their
//! iteration counters about once a second, print will-it-scale lines.
//!
//! What differs between the guest kernel and host threads is behind
//! [`Executor`]: starting N pinned tasks, the clock, and waiting. The
//! monitor (sampling and printing) runs either on the caller while the tasks
//! run ([`Executor::concurrent_monitor`] = true: host threads, or a kernel
//! with a spare CPU or preemption) or inside task 0, which then checks the
//! clock every [`POLL_EVERY`] iterations (a kernel with one task per CPU and
//! no preemption).
//!
//! A sample is a rate: each task's count since the previous sample divided
//! by the time the sample actually covered, read from the clock when it is
//! taken; the next deadline is a window after that time, not after the
//! start. So a monitor that was held up (task 0 stuck in an operation, a
//! descheduled vCPU) gives one long sample at the right rate, marked late
//! on the `timing:` line ([`output::Timing`]), not a burst of back-to-back
//! samples that each claim a second. The average is the measurement's
//! operations over its elapsed time.
//!
//! Each task owns one 128-byte-aligned [`TaskCounter`] and stores to it
//! only; the monitor only loads. So the counting adds no shared-line
//! traffic of its own. The shared flags (`go`, `stop`) are written once each.
//!
//! Touches: the fs counters through the `counters` hook; allocates only
//! before the tasks start and after they end.

use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use fs::stats::Counters;

use formats::output::{self, PerOpCounts, Sample, SampleTime, Timing};

/// Nanoseconds in a second.
pub const NS_PER_SEC: u64 = 1_000_000_000;
/// How often a task reports an RCU quiescent state and (task 0 in inline
/// mode) checks the clock: every this many iterations.
pub const POLL_EVERY: u64 = 64;

/// What the driver needs from its host (guest kernel or host threads).
pub trait Executor: Sync {
    /// Most tasks `run` can place one per CPU.
    fn max_tasks(&self) -> usize;
    /// Monotonic nanoseconds.
    fn now_ns(&self) -> u64;
    /// Return once `now_ns() >= deadline_ns` (sleep or spin). Only called
    /// from the monitor when [`Executor::concurrent_monitor`] is true; a
    /// kernel should count the wait as an RCU quiescent state.
    fn wait_until(&self, deadline_ns: u64);
    /// True: `run` calls `monitor` on the calling CPU while the tasks run
    /// (it sleeps in [`Executor::wait_until`] between samples). False: task 0
    /// does the monitor's work inline and `monitor` returns at once.
    fn concurrent_monitor(&self) -> bool;
    /// Call `task(i)` once for every `i in 0..n`, concurrently, each on its
    /// own CPU and pinned there; call `monitor()` once on the calling CPU
    /// meanwhile. Return when `monitor` and every task have returned.
    fn run(&self, n: usize, task: &(dyn Fn(usize) + Sync), monitor: &mut dyn FnMut());
    /// Pay once what a system call costs beyond the work inside the
    /// kernel (the `syscall` instruction, entry and exit work, speculation
    /// mitigations): `frontend=stat` calls it before each operation. A
    /// measured cost, never a guessed one: host mode makes one real cheap
    /// system call. The default pays nothing.
    fn enter_syscall(&self) {}
    /// What [`Executor::enter_syscall`] pays, for the `testcase:` line
    /// (`syscall=NAME`): `none` by default.
    fn syscall_name(&self) -> &'static str {
        "none"
    }
}

/// One iteration of a workload.
pub trait Body: Sync {
    /// Do one operation as task `task`; false if the answer was wrong.
    fn run_once(&self, task: usize) -> bool;
    /// Called every [`POLL_EVERY`] iterations outside any operation (report
    /// an RCU quiescent state).
    fn quiescent(&self) {}
    /// What a right answer is, for the error line (e.g. "ENOENT").
    fn expected(&self, task: usize) -> &'static str;
}

/// A task's counters, alone on their cache line pair.
#[repr(align(128))]
#[derive(Default)]
pub struct TaskCounter {
    iterations: AtomicU64,
    failures: AtomicU64,
}

impl TaskCounter {
    /// Iterations done so far.
    pub fn iterations(&self) -> u64 {
        self.iterations.load(Ordering::Relaxed)
    }
}

#[repr(align(128))]
struct Line<T>(T);

/// What to run and how long.
#[derive(Clone, Copy)]
pub struct RunConfig<'a> {
    /// Text after `testcase:`.
    pub description: &'a str,
    pub tasks: usize,
    pub warmup: u32,
    pub secs: u32,
    /// Reads the fs counters (summed over CPUs); None: no `per-op` line.
    pub counters: Option<fn() -> Counters>,
    /// Spin-wait hints each task runs after each operation (`pause=`).
    pub pause: u32,
}

/// What a finished run measured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub warmup: Vec<Sample>,
    pub measurement: Vec<Sample>,
    /// Each sample's elapsed time, as the `timing:` line prints it.
    pub timing: Timing,
    /// Measured operations per second: [`Summary::ops`] over the
    /// measurement's elapsed time.
    pub average: u64,
    /// Operations counted in the measurement window.
    pub ops: u64,
    /// The measurement window's length in nanoseconds.
    pub elapsed_ns: u64,
    pub per_op: Option<PerOpCounts>,
    /// The fs counter deltas of the measurement window.
    pub counters: Option<Counters>,
}

/// Why a run failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// tasks = 0 or more than the executor can place.
    Tasks { asked: usize, max: usize },
    /// Setting up the workload failed with this errno.
    Setup(fs::Errno),
    /// Writing the output failed.
    Output,
    /// `lock=` asked for a kind, but the fs was already in use with locks
    /// of another (a lock keeps the kind it was created with).
    LockKind {
        asked: fs::sync::rawlock::LockKind,
        built: fs::sync::rawlock::LockKind,
    },
    /// Some operations returned the wrong answer (reported, not ignored).
    WrongAnswers {
        task: usize,
        count: u64,
        total: u64,
        expected: &'static str,
    },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Tasks { asked, max } => {
                write!(f, "tasks={asked} but this platform can run 1 to {max}")
            }
            RunError::Setup(e) => write!(f, "workload setup failed: {e}"),
            RunError::Output => write!(f, "writing the output failed"),
            RunError::LockKind { asked, built } => write!(
                f,
                "lock={asked} came too late: the dcache's locks were already built as {built} \
                 (set it before the fs is first used)"
            ),
            RunError::WrongAnswers {
                task,
                count,
                total,
                expected,
            } => write!(
                f,
                "{total} wrong answers (task {task}: {count}; expected {expected})"
            ),
        }
    }
}

/// The sampling and printing state; owned by the caller or by task 0.
struct Monitor<'a, W: fmt::Write> {
    out: &'a mut W,
    cfg: RunConfig<'a>,
    tasks: &'a [TaskCounter],
    prev: Vec<u64>,
    /// When the last sample (or the zero sample) was taken.
    last_ns: u64,
    /// When the measurement window opened.
    measure_ns: u64,
    seconds: u32,
    warmup: Vec<Sample>,
    measurement: Vec<Sample>,
    timing: Timing,
    /// Operations counted in the measurement window so far.
    ops: u64,
    c0: Option<Counters>,
    c1: Option<Counters>,
    failed_write: bool,
}

impl<'a, W: fmt::Write> Monitor<'a, W> {
    /// A monitor of `tasks` printing to `out`, before the zero sample.
    fn new(out: &'a mut W, cfg: &RunConfig<'a>, tasks: &'a [TaskCounter]) -> Self {
        let n = tasks.len();
        Monitor {
            out,
            cfg: *cfg,
            tasks,
            prev: alloc::vec![0; n],
            last_ns: 0,
            measure_ns: 0,
            seconds: 0,
            warmup: Vec::with_capacity(cfg.warmup as usize),
            measurement: Vec::with_capacity(cfg.secs as usize),
            timing: Timing {
                warmup: Vec::with_capacity(cfg.warmup as usize),
                measurement: Vec::with_capacity(cfg.secs as usize),
            },
            ops: 0,
            c0: None,
            c1: None,
            failed_write: false,
        }
    }

    fn line(&mut self, args: fmt::Arguments<'_>) {
        if self.out.write_fmt(args).is_err() {
            self.failed_write = true;
        }
    }

    /// Print the header and take the zero sample; the tasks start after.
    fn begin(&mut self, now: u64) {
        self.last_ns = now;
        let desc = self.cfg.description;
        self.line(format_args!("testcase:{desc}\nwarmup\n"));
        for (p, t) in self.prev.iter_mut().zip(self.tasks) {
            *p = t.iterations();
        }
        if self.cfg.warmup == 0 {
            self.enter_measurement(now);
        }
    }

    fn enter_measurement(&mut self, now: u64) {
        self.line(format_args!("measurement\n"));
        self.measure_ns = now;
        self.c0 = self.cfg.counters.map(|f| f());
    }

    /// A window after the last sample.
    fn deadline(&self) -> u64 {
        self.last_ns.saturating_add(output::WINDOW_NS)
    }

    /// The clock read `now`, at or past [`Monitor::deadline`]: sample, print
    /// the counts since the last sample as rates over the time since it.
    /// True when the run is over.
    fn tick(&mut self, now: u64) -> bool {
        // At least 1 ns, so a clock that did not move divides by something.
        let elapsed = now.saturating_sub(self.last_ns).max(1);
        self.last_ns = now;
        let (mut min, mut max, mut total) = (u64::MAX, 0, 0u64);
        for (p, t) in self.prev.iter_mut().zip(self.tasks) {
            let c = t.iterations();
            let d = c.wrapping_sub(*p);
            *p = c;
            min = min.min(d);
            max = max.max(d);
            total = total.wrapping_add(d);
        }
        if min == u64::MAX {
            min = 0;
        }
        let s = Sample {
            min: output::rate(min, elapsed),
            max: output::rate(max, elapsed),
            total: output::rate(total, elapsed),
        };
        let time = SampleTime::new(elapsed, output::WINDOW_NS);
        self.seconds += 1;
        self.line(format_args!("{s}\n"));
        if self.seconds <= self.cfg.warmup {
            self.warmup.push(s);
            self.timing.warmup.push(time);
            if self.seconds == self.cfg.warmup {
                self.enter_measurement(now);
            }
            false
        } else {
            self.measurement.push(s);
            self.timing.measurement.push(time);
            self.ops = self.ops.wrapping_add(total);
            let done = self.seconds >= self.cfg.warmup + self.cfg.secs;
            if done {
                self.c1 = self.cfg.counters.map(|f| f());
            }
            done
        }
    }
}

/// The gap a task leaves after an operation (`pause=`): `pause` spin-wait
/// hints, no clock read and no store, so it adds think time and nothing
/// else.
#[inline]
pub fn gap(pause: u32) {
    for _ in 0..pause {
        core::hint::spin_loop();
    }
}

/// Run `body` on `cfg.tasks` tasks and print will-it-scale's format to
/// `out` as the run goes. Wrong answers end the output with an `error:`
/// line and make the result an error.
pub fn run<E, B, W>(
    exec: &E,
    cfg: &RunConfig<'_>,
    body: &B,
    out: &mut W,
) -> Result<Summary, RunError>
where
    E: Executor + ?Sized,
    B: Body,
    W: fmt::Write + Send,
{
    let n = cfg.tasks;
    let max = exec.max_tasks();
    if n == 0 || n > max {
        return Err(RunError::Tasks { asked: n, max });
    }
    let tasks: Vec<TaskCounter> = (0..n).map(|_| TaskCounter::default()).collect();
    let run = Run {
        exec,
        cfg,
        body,
        tasks: &tasks,
        ready: Line(AtomicUsize::new(0)),
        go: Line(AtomicBool::new(false)),
        stop: Line(AtomicBool::new(false)),
        inline: !exec.concurrent_monitor(),
        monitor: spin::Mutex::new(Monitor::new(out, cfg, &tasks)),
    };
    exec.run(n, &|i| run.task(i), &mut || run.watch());
    finish(run.monitor.into_inner(), &tasks, body)
}

/// One run's shared state: the tasks' counters, the flags that start and
/// stop them (each written once), and the monitor.
struct Run<'r, E: ?Sized, B, W: fmt::Write> {
    exec: &'r E,
    cfg: &'r RunConfig<'r>,
    body: &'r B,
    tasks: &'r [TaskCounter],
    /// Tasks at the starting line.
    ready: Line<AtomicUsize>,
    go: Line<AtomicBool>,
    stop: Line<AtomicBool>,
    /// The monitor runs inside task 0 ([`Executor::concurrent_monitor`]
    /// false).
    inline: bool,
    monitor: spin::Mutex<Monitor<'r, W>>,
}

impl<E, B, W> Run<'_, E, B, W>
where
    E: Executor + ?Sized,
    B: Body,
    W: fmt::Write + Send,
{
    /// Task `i`: wait for the start (task 0 inline gives it, once every
    /// task is ready), then run operations until told to stop, counting
    /// them and the wrong answers; task 0 inline samples at each deadline.
    fn task(&self, i: usize) {
        let me = &self.tasks[i];
        let monitoring = self.inline && i == 0;
        self.ready.0.fetch_add(1, Ordering::AcqRel);
        if monitoring {
            while self.ready.0.load(Ordering::Acquire) < self.tasks.len() {
                self.body.quiescent();
                core::hint::spin_loop();
            }
            self.monitor.lock().begin(self.exec.now_ns());
            self.go.0.store(true, Ordering::Release);
        } else {
            while !self.go.0.load(Ordering::Acquire) {
                self.body.quiescent();
                core::hint::spin_loop();
            }
        }
        let mut deadline = if monitoring {
            self.monitor.lock().deadline()
        } else {
            u64::MAX
        };
        let mut count = 0u64;
        let mut failures = 0u64;
        while !self.stop.0.load(Ordering::Relaxed) {
            if !self.body.run_once(i) {
                failures += 1;
                me.failures.store(failures, Ordering::Relaxed);
            }
            gap(self.cfg.pause);
            count += 1;
            me.iterations.store(count, Ordering::Relaxed);
            if count.is_multiple_of(POLL_EVERY) {
                self.body.quiescent();
                let now = if monitoring { self.exec.now_ns() } else { 0 };
                if monitoring && now >= deadline {
                    let mut m = self.monitor.lock();
                    if m.tick(now) {
                        self.stop.0.store(true, Ordering::Release);
                    }
                    deadline = m.deadline();
                }
            }
        }
    }

    /// The monitor on the calling CPU (nothing when it runs inline): once
    /// every task is ready, start them, then sample at each deadline until
    /// the run is over.
    fn watch(&self) {
        if self.inline {
            return;
        }
        while self.ready.0.load(Ordering::Acquire) < self.tasks.len() {
            self.exec.wait_until(self.exec.now_ns() + 100_000);
        }
        let mut m = self.monitor.lock();
        m.begin(self.exec.now_ns());
        self.go.0.store(true, Ordering::Release);
        loop {
            self.exec.wait_until(m.deadline());
            if m.tick(self.exec.now_ns()) {
                self.stop.0.store(true, Ordering::Release);
                break;
            }
        }
    }
}

/// After the tasks ended: print the `average:`, `per-op` and `timing:`
/// lines (an `error:` line before `timing:` on wrong answers) and sum the
/// run up.
fn finish<B: Body, W: fmt::Write>(
    m: Monitor<'_, W>,
    tasks: &[TaskCounter],
    body: &B,
) -> Result<Summary, RunError> {
    // The measurement runs from its opening to the last sample.
    let elapsed_ns = m.last_ns.saturating_sub(m.measure_ns);
    let ops = m.ops;
    let average = output::rate(ops, elapsed_ns);
    let counters = match (m.c0, m.c1) {
        (Some(a), Some(b)) => Some(b.delta(&a)),
        _ => None,
    };
    let per_op = counters.map(|c| PerOpCounts {
        ops,
        allocs: c.dentry_alloc,
        shared_stores: c.shared_stores,
        fallbacks: c.fallbacks,
        locks: c.locks,
        transfers: c.transfers,
    });
    let mut failed_write = m.failed_write;
    let out = m.out;
    failed_write |= writeln!(out, "average:{average}").is_err();
    if let Some(p) = &per_op {
        failed_write |= writeln!(out, "{p}").is_err();
    }
    let timing_line = alloc::format!("{}", m.timing);
    // Lock waiters that gave their host thread away (fs::sync::spinwait):
    // the run had more spinners than CPUs. Not part of the parsed output
    // (it goes to the log, and only where it happened: never in a guest).
    #[cfg(feature = "std")]
    if let Some(c) = counters.filter(|c| c.spin_yields > 0) {
        std::eprintln!(
            "bench: note: {} spin yields in {ops} ops: more spinning threads than CPUs, so ops/s include scheduler waits",
            c.spin_yields
        );
    }
    // Waiters that spun on past the yield threshold (a core per thread):
    // a lock holder or successor was off its CPU.
    #[cfg(feature = "std")]
    if let Some(c) = counters.filter(|c| c.spin_long_waits > 0) {
        std::eprintln!(
            "bench: note: {} long spin waits in {ops} ops: a lock holder or the next owner was off its CPU for over {} us, so ops/s include its preemption",
            c.spin_long_waits,
            fs::sync::spinwait::YIELD_AFTER_NS / 1000
        );
    }
    if let Some(e) = wrong_answers(tasks, body) {
        let _ = writeln!(out, "error: {e}");
        let _ = writeln!(out, "{timing_line}");
        return Err(e);
    }
    failed_write |= writeln!(out, "{timing_line}").is_err();
    if failed_write {
        return Err(RunError::Output);
    }
    Ok(Summary {
        warmup: m.warmup,
        measurement: m.measurement,
        timing: m.timing,
        average,
        ops,
        elapsed_ns,
        per_op,
        counters,
    })
}

/// The run's wrong answers, named by the first task that gave any; `None`
/// when every answer was right.
fn wrong_answers<B: Body>(tasks: &[TaskCounter], body: &B) -> Option<RunError> {
    let total: u64 = tasks
        .iter()
        .map(|t| t.failures.load(Ordering::Relaxed))
        .sum();
    let (task, t) = tasks
        .iter()
        .enumerate()
        .find(|(_, t)| t.failures.load(Ordering::Relaxed) > 0)?;
    Some(RunError::WrongAnswers {
        task,
        count: t.failures.load(Ordering::Relaxed),
        total,
        expected: body.expected(task),
    })
}

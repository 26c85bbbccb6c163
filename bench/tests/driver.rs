//! The platform-neutral driver, without the fs crate: both monitor
//! placements (concurrent, as on host threads; inline in task 0, as a
//! kernel without preemption would run it) and wrong-answer reporting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bench::driver::{run, Body, Executor, RunConfig, RunError};
use formats::output::parse;

/// Std threads; `inline` chooses where the monitor runs.
struct Threads {
    start: Instant,
    inline: bool,
}

impl Executor for Threads {
    fn max_tasks(&self) -> usize {
        8
    }
    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
    fn wait_until(&self, deadline_ns: u64) {
        assert!(!self.inline, "inline mode must not sleep in the monitor");
        let now = self.now_ns();
        if deadline_ns > now {
            std::thread::sleep(Duration::from_nanos(deadline_ns - now));
        }
    }
    fn concurrent_monitor(&self) -> bool {
        !self.inline
    }
    fn run(&self, n: usize, task: &(dyn Fn(usize) + Sync), monitor: &mut dyn FnMut()) {
        std::thread::scope(|s| {
            for i in 0..n {
                s.spawn(move || task(i));
            }
            monitor();
        });
    }
}

/// Spins a little per iteration; every `fail_every`-th call of task 1 is a wrong answer.
struct Spin {
    calls: [AtomicU64; 2],
    fail_every: u64,
}

impl Body for Spin {
    fn run_once(&self, task: usize) -> bool {
        let c = self.calls[task].fetch_add(1, Ordering::Relaxed) + 1;
        for _ in 0..50 {
            std::hint::spin_loop();
        }
        !(task == 1 && self.fail_every > 0 && c.is_multiple_of(self.fail_every))
    }
    fn expected(&self, _task: usize) -> &'static str {
        "true"
    }
}

fn counters() -> fs::stats::Counters {
    fs::stats::Counters {
        lookups: 7,
        ..Default::default()
    }
}

fn threads(inline: bool) -> Threads {
    Threads {
        start: Instant::now(),
        inline,
    }
}

fn spin(fail_every: u64) -> Spin {
    Spin {
        calls: Default::default(),
        fail_every,
    }
}

/// A 1-s run with no warmup and no counters.
fn quick(description: &str, tasks: usize, pause: u32) -> RunConfig<'_> {
    RunConfig {
        description,
        tasks,
        warmup: 0,
        secs: 1,
        counters: None,
        pause,
    }
}

fn check_run(inline: bool) {
    let (exec, body) = (threads(inline), spin(0));
    let cfg = RunConfig {
        description: "spin test",
        tasks: 2,
        warmup: 1,
        secs: 1,
        counters: Some(counters),
        pause: 0,
    };
    let mut out = String::new();
    let t = Instant::now();
    let sum = run(&exec, &cfg, &body, &mut out).unwrap();
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(5),
        "took {took:?}"
    );
    let parsed = parse(&out).unwrap();
    assert_eq!(parsed.testcase, "spin test");
    assert_eq!(parsed.warmup.len(), 1);
    assert_eq!(parsed.measurement.len(), 1);
    assert_eq!(parsed.measurement, sum.measurement);
    let m = parsed.measurement[0];
    // Each figure is its own count over the sample's time, rounded down:
    // the total is the sum of the two to within the two roundings.
    assert!(
        m.min > 0 && m.min <= m.max && (m.min + m.max..=m.min + m.max + 1).contains(&m.total),
        "{m:?}"
    );
    assert_eq!(parsed.average, m.total);
    // The constant fake counters give zero deltas.
    let p = parsed.per_op.unwrap();
    assert_eq!(p.allocs, 0.0);
    // Every iteration was counted: the sum of all samples is at most what the body saw.
    let seen: u64 = body.calls.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    let sampled: u64 = parsed
        .warmup
        .iter()
        .chain(&parsed.measurement)
        .map(|s| s.total)
        .sum();
    assert!(
        sampled <= seen && sampled > 0,
        "sampled {sampled} seen {seen}"
    );
    assert!(out.starts_with("testcase:spin test\nwarmup\nmin:"), "{out}");
}

#[test]
fn concurrent_monitor_run() {
    check_run(false);
}

#[test]
fn inline_monitor_run() {
    check_run(true);
}

#[test]
fn wrong_answers_are_reported() {
    let (exec, body, cfg) = (threads(false), spin(1000), quick("failing", 2, 0));
    let mut out = String::new();
    match run(&exec, &cfg, &body, &mut out) {
        Err(RunError::WrongAnswers {
            task: 1,
            count,
            total,
            ..
        }) => assert!(count > 0 && total == count),
        other => panic!("{other:?}"),
    }
    // The error line, then the timing line (which comes last so that a
    // reader of the older format finds the error right after the block).
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[lines.len() - 2].starts_with("error: "), "{out}");
    assert!(lines[lines.len() - 1].starts_with("timing: "), "{out}");
    assert!(
        !out.contains("per-op:"),
        "no counters, no per-op line: {out}"
    );
    assert!(
        parse(&out).is_err(),
        "a failed run's output must not parse as a result"
    );
}

#[test]
fn task_count_is_checked() {
    let (exec, body) = (threads(false), spin(0));
    for tasks in [0, 9] {
        let cfg = quick("x", tasks, 0);
        assert_eq!(
            run(&exec, &cfg, &body, &mut String::new()),
            Err(RunError::Tasks {
                asked: tasks,
                max: 8
            })
        );
    }
}

/// `pause=` leaves its spin-wait hints between two operations: with 100
/// times the body's own 50 hints as the gap, a run completes far fewer
/// operations than the same run without one (a 20× margin against the
/// ~100× expected, so a loaded machine cannot turn it round).
#[test]
fn the_pause_is_spent_between_operations() {
    let total = |pause: u32| {
        let (exec, body, cfg) = (threads(false), spin(0), quick("spin test", 1, pause));
        let mut out = String::new();
        let sum = run(&exec, &cfg, &body, &mut out).unwrap();
        let calls = body.calls[0].load(Ordering::Relaxed);
        assert!(calls >= sum.measurement[0].total, "{calls} calls");
        sum.measurement[0].total
    };
    let without = total(0);
    let with = total(5_000);
    assert!(with > 0, "a paused run still runs");
    assert!(
        with.saturating_mul(20) < without,
        "pause=5000: {with} ops; pause=0: {without} ops"
    );
}

/// A clock that moves only when the body says so: each operation costs a
/// millisecond, one of them `stall_ms` more. One task, monitor inline (task
/// 0 samples every [`bench::driver::POLL_EVERY`] operations, as a kernel
/// without preemption does), so every sample's time is known exactly.
struct FakeClock {
    now_ns: AtomicU64,
    calls: AtomicU64,
    stall_at: u64,
    stall_ms: u64,
}

impl Executor for FakeClock {
    fn max_tasks(&self) -> usize {
        1
    }
    fn now_ns(&self) -> u64 {
        self.now_ns.load(Ordering::Relaxed)
    }
    fn wait_until(&self, _deadline_ns: u64) {
        panic!("inline mode must not sleep in the monitor");
    }
    fn concurrent_monitor(&self) -> bool {
        false
    }
    fn run(&self, n: usize, task: &(dyn Fn(usize) + Sync), monitor: &mut dyn FnMut()) {
        assert_eq!(n, 1);
        monitor();
        task(0);
    }
}

impl Body for FakeClock {
    fn run_once(&self, _task: usize) -> bool {
        let c = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let ms = if c == self.stall_at {
            1 + self.stall_ms
        } else {
            1
        };
        self.now_ns.fetch_add(ms * 1_000_000, Ordering::Relaxed);
        true
    }
    fn expected(&self, _task: usize) -> &'static str {
        "true"
    }
}

/// The sampler held up for 5 s inside the first measured sample (the
/// 19.9-s "second" of a 16-vCPU statneg run): that sample is one long
/// sample at its real rate, marked late, the next deadline is a second
/// after it (not a burst of overdue deadlines each printed as a second),
/// and the average is the measured operations over the measured time.
#[test]
fn a_stalled_sampler_reports_rates_over_real_time() {
    let exec = FakeClock {
        now_ns: AtomicU64::new(0),
        calls: AtomicU64::new(0),
        stall_at: 2000,
        stall_ms: 5000,
    };
    let cfg = RunConfig {
        description: "stall",
        tasks: 1,
        warmup: 1,
        secs: 3,
        counters: None,
        pause: 0,
    };
    let mut out = String::new();
    let sum = run(&exec, &cfg, &exec, &mut out).unwrap();
    // Samples fall on the first multiple of 64 operations at or past each
    // deadline. Warm-up: 1024 ops in 1.024 s. Then ops 1025..2048 take
    // 1024 ms + the 5-s stall, and the next two samples 1024 ops each in
    // 1.024 s (the deadline 8.048 s is first passed at op 3072, 8.072 s).
    let ms = 1_000_000u64;
    let windows_ns = [1024 * ms, 6024 * ms, 1024 * ms, 1024 * ms];
    let rate = |ops: u64, ns: u64| ops * 1_000_000_000 / ns;
    let want: Vec<u64> = windows_ns.iter().map(|&ns| rate(1024, ns)).collect();
    assert_eq!(want, [1000, 169, 1000, 1000]);
    let parsed = parse(&out).unwrap();
    let got: Vec<u64> = parsed
        .warmup
        .iter()
        .chain(&parsed.measurement)
        .map(|s| s.total)
        .collect();
    assert_eq!(got, want, "{out}");
    let measured_ns: u64 = windows_ns[1..].iter().sum();
    assert_eq!(sum.ops, 3 * 1024);
    assert_eq!(sum.elapsed_ns, measured_ns);
    assert_eq!(parsed.average, rate(3 * 1024, measured_ns), "{out}");
    assert_eq!(parsed.average, 380);
    let timing = parsed.timing.expect("a timing: line");
    assert_eq!(timing, sum.timing);
    let late: Vec<bool> = timing.measurement.iter().map(|t| t.late).collect();
    assert_eq!(late, [true, false, false], "{out}");
    assert!(!timing.warmup[0].late);
    assert_eq!(timing.measurement[0].elapsed_us, 6_024_000);
    assert!(
        out.ends_with("timing: warmup_us=1024000 measurement_us=6024000!,1024000,1024000 late=1\n"),
        "{out}"
    );
}

/// A sample that came a tenth of its window late or less is not flagged.
#[test]
fn late_means_more_than_a_tenth_past_the_window() {
    use formats::output::is_late;
    let w = 1_000_000_000;
    assert!(!is_late(w, w));
    assert!(!is_late(w + w / 10, w));
    assert!(is_late(w + w / 10 + 1, w));
}

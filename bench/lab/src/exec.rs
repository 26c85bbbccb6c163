//! The host executor: one std thread per task, pinned to a CPU of this
//! process's affinity mask, with the monitor on the calling thread.
//!
//! Pinning in safe code only (bench/ forbids the other kind): each thread
//! sets its own affinity (`sched_setaffinity` through `core_affinity`)
//! before it reports ready, which needs no program on the machine, so the
//! static `bench` (`make bench-static`) pins on a bare one too. If the
//! kernel refuses, the run goes on unpinned and [`HostExecutor::pinned`]
//! says so. The fs host platform gives each thread its CPU id by itself.
//!
//! Touches: threads, the calling threads' CPU affinity, /proc.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bench::driver::Executor;
use bench::params::MAX_TASKS;

/// Std threads as the driver's tasks.
pub struct HostExecutor {
    start: Instant,
    /// CPUs this process may run on; task i goes to `cpus[i % len]`.
    cpus: Vec<usize>,
    pin: bool,
    all_pinned: AtomicBool,
}

impl HostExecutor {
    /// Pin tasks when `pin` is true.
    pub fn new(pin: bool) -> Self {
        HostExecutor {
            start: Instant::now(),
            cpus: allowed_cpus(),
            pin,
            all_pinned: AtomicBool::new(pin),
        }
    }

    /// Did every task of the last run get pinned?
    pub fn pinned(&self) -> bool {
        self.all_pinned.load(Ordering::Relaxed)
    }

    /// The CPUs tasks are placed on.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    fn pin_current(&self, task: usize) {
        if !self.pin || self.cpus.is_empty() {
            return;
        }
        let cpu = self.cpus[task % self.cpus.len()];
        if !pin_current_thread(cpu) {
            self.all_pinned.store(false, Ordering::Relaxed);
        }
    }
}

impl Executor for HostExecutor {
    fn max_tasks(&self) -> usize {
        MAX_TASKS
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn wait_until(&self, deadline_ns: u64) {
        // The monitor holds no RCU reference while it sleeps: the host
        // RCU's grace periods need no barrier on its CPU meanwhile.
        fs::sync::host::rcu_offline();
        loop {
            let now = self.now_ns();
            if now >= deadline_ns {
                return;
            }
            std::thread::sleep(Duration::from_nanos(deadline_ns - now));
        }
    }

    fn concurrent_monitor(&self) -> bool {
        true
    }

    /// One real `getppid(2)`: the cheapest system call there is (no
    /// argument, no lock, no cache on the C library's side), so what it
    /// costs is the entry and exit and the mitigations around them.
    fn enter_syscall(&self) {
        std::hint::black_box(std::os::unix::process::parent_id());
    }

    fn syscall_name(&self) -> &'static str {
        "getppid"
    }

    fn run(&self, n: usize, task: &(dyn Fn(usize) + Sync), monitor: &mut dyn FnMut()) {
        std::thread::scope(|s| {
            for i in 0..n {
                std::thread::Builder::new()
                    .name(format!("bench-task-{i}"))
                    .spawn_scoped(s, move || {
                        self.pin_current(i);
                        task(i)
                    })
                    .expect("spawning a benchmark thread");
            }
            monitor();
        });
    }
}

/// Pin the calling thread to `cpu` (`sched_setaffinity` on this thread).
/// True on success.
pub fn pin_current_thread(cpu: usize) -> bool {
    core_affinity::set_for_current(core_affinity::CoreId { id: cpu })
}

/// This process's CPU affinity list (`Cpus_allowed_list` in
/// /proc/self/status), else `0..available_parallelism`.
pub fn allowed_cpus() -> Vec<usize> {
    let from_proc = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .and_then(|v| parse_cpu_list(v.trim()))
        });
    from_proc.filter(|v| !v.is_empty()).unwrap_or_else(|| {
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        (0..n).collect()
    })
}

/// Parse a Linux CPU list such as `0-3,8,10-11`.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if a > b || b - a > 4096 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// Set the host lock waiters' policy for `tasks` tasks on `cpus` CPUs,
/// `pinned` one to a CPU or not (fs::sync::spinwait), and say which it
/// is, in the line `bench host` prints. With a core per task they spin as
/// the guest's and Linux's do (`lock=K`, the same kind as the guest's
/// rows); with more tasks than cores, or tasks the scheduler may stack on
/// one core, spinning behind a descheduled holder or successor costs a
/// scheduler tick per hand-over, so they give their thread away every few
/// microseconds (`lock=K+yield`, another kind than the guest's).
pub fn wait_policy(
    kind: impl std::fmt::Display,
    tasks: usize,
    cpus: usize,
    pinned: bool,
) -> String {
    let yielding = tasks > cpus || !pinned;
    fs::sync::spinwait::set_yielding(yielding);
    if yielding {
        format!(
            "bench: host lock={kind}+yield (waiters yield after {} us of spinning: {tasks} tasks on {cpus} CPUs{}; the guest's do not)",
            fs::sync::spinwait::YIELD_AFTER_NS / 1000,
            if pinned { "" } else { ", not pinned" }
        )
    } else {
        format!(
            "bench: host lock={kind} (waiters spin as the guest's do: {tasks} tasks on {cpus} CPUs)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn pinning_takes_effect() {
        // Pin a fresh thread to the first allowed CPU and read its mask back.
        let cpu = allowed_cpus()[0];
        let mask = std::thread::spawn(move || {
            assert!(pin_current_thread(cpu), "pinning failed");
            std::fs::read_to_string("/proc/thread-self/status")
                .unwrap()
                .lines()
                .find_map(|l| {
                    l.strip_prefix("Cpus_allowed_list:")
                        .map(|v| v.trim().to_string())
                })
                .unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(mask, cpu.to_string());
    }
}

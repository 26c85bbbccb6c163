//! `bench pingpong`: how long one cache line takes to move between two CPUs.
//!
//! Two tasks, each pinned to its own CPU, bounce a counter that sits alone on
//! its cache line: task 0 turns an even value odd, task 1 turns it even
//! again, each spinning until the other has written. One round trip is two
//! line transfers (there and back), so *transfer ns* = round-trip ns ÷ 2.
//! Task 0 times batches of [`ROUNDS_PER_BATCH`] round trips on the
//! executor's clock; the figure is the median batch, which shrugs off the
//! batches a loaded machine preempted. This is the `t_x` of the scaling
//! model in `bench predict` (docs/scaling-model.md).
//!
//! The same code runs on host threads (`bench pingpong`) and in the guest
//! (`demo=pingpong`): it needs only an [`Executor`]. Output, one line:
//!
//! ```text
//! pingpong: transfer_ns=41.3 round_trip_ns=82.6 batches=200 rounds_per_batch=1000 min_ns=40.9 max_ns=77.0
//! ```
//!
//! Touches: the two CPUs it runs on, nothing else. Safe code only.

use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::driver::Executor;

/// Round trips timed together (one clock read per batch, so the clock's
/// own cost is spread over them).
pub const ROUNDS_PER_BATCH: u64 = 1000;

/// The result, in nanoseconds per one-way transfer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PingPong {
    /// Median over batches.
    pub transfer_ns: f64,
    /// Fastest and slowest batch.
    pub min_ns: f64,
    pub max_ns: f64,
    pub batches: usize,
    pub rounds_per_batch: u64,
}

impl fmt::Display for PingPong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pingpong: transfer_ns={:.1} round_trip_ns={:.1} batches={} rounds_per_batch={} min_ns={:.1} max_ns={:.1}",
            self.transfer_ns,
            2.0 * self.transfer_ns,
            self.batches,
            self.rounds_per_batch,
            self.min_ns,
            self.max_ns
        )
    }
}

/// Parse the `pingpong:` line back (for the sweep and tests): the
/// transfer ns, or `None` if `text` has no well-formed line.
pub fn parse_transfer_ns(text: &str) -> Option<f64> {
    let line = text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .find_map(|l| l.strip_prefix("pingpong: "))?;
    let v = line
        .split(' ')
        .find_map(|w| w.strip_prefix("transfer_ns="))?;
    let v: f64 = v.parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v)
}

/// The bounced line, alone on its 128 bytes (two 64-byte lines: adjacent-
/// line prefetchers pair lines up).
#[repr(align(128))]
struct Ball(AtomicU64);

/// Median of `v` (sorted in place); the lower one for an even count.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else {
        v[(v.len() - 1) / 2]
    }
}

/// Why a pingpong could not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PingPongError {
    /// Fewer than two CPUs to run on.
    OneCpu,
    /// `batches` was 0.
    NoBatches,
}

impl fmt::Display for PingPongError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PingPongError::OneCpu => f.write_str("pingpong needs two CPUs (EINVAL)"),
            PingPongError::NoBatches => f.write_str("pingpong needs at least one batch (EINVAL)"),
        }
    }
}

/// Bounce a line `batches × ROUNDS_PER_BATCH` times between tasks 0 and 1.
pub fn run<E: Executor>(exec: &E, batches: usize) -> Result<PingPong, PingPongError> {
    run_with(exec, batches, ROUNDS_PER_BATCH)
}

/// [`run`] with `rounds` round trips per batch (a TCG guest on a loaded
/// host needs fewer: each handoff may wait for a host time slice).
pub fn run_with<E: Executor>(
    exec: &E,
    batches: usize,
    per_batch: u64,
) -> Result<PingPong, PingPongError> {
    if exec.max_tasks() < 2 {
        return Err(PingPongError::OneCpu);
    }
    if batches == 0 || per_batch == 0 {
        return Err(PingPongError::NoBatches);
    }
    let ball = Ball(AtomicU64::new(0));
    let times: Vec<AtomicU64> = (0..batches).map(|_| AtomicU64::new(0)).collect();
    let ready = [AtomicBool::new(false), AtomicBool::new(false)];
    let rounds = batches as u64 * per_batch;
    let task = |i: usize| {
        ready[i].store(true, Ordering::Release);
        while !ready[1 - i].load(Ordering::Acquire) {
            core::hint::spin_loop();
        }
        if i == 0 {
            let mut v = 0;
            for slot in &times {
                let t0 = exec.now_ns();
                for _ in 0..per_batch {
                    ball.0.store(v + 1, Ordering::Release);
                    v += 2;
                    while ball.0.load(Ordering::Acquire) != v {
                        core::hint::spin_loop();
                    }
                }
                slot.store(exec.now_ns() - t0, Ordering::Relaxed);
            }
        } else if i == 1 {
            let mut v = 1;
            while v < 2 * rounds {
                while ball.0.load(Ordering::Acquire) != v {
                    core::hint::spin_loop();
                }
                ball.0.store(v + 1, Ordering::Release);
                v += 2;
            }
        }
    };
    exec.run(2, &task, &mut || {});
    let mut per: Vec<f64> = times
        .iter()
        .map(|t| t.load(Ordering::Relaxed) as f64 / (2 * per_batch) as f64)
        .collect();
    let transfer_ns = median(&mut per);
    Ok(PingPong {
        transfer_ns,
        min_ns: per[0],
        max_ns: per[per.len() - 1],
        batches,
        rounds_per_batch: per_batch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_parses_back() {
        let p = PingPong {
            transfer_ns: 41.3,
            min_ns: 40.0,
            max_ns: 70.0,
            batches: 3,
            rounds_per_batch: 10,
        };
        let s = alloc::format!("boot noise\r\n{p}\r\n");
        assert_eq!(parse_transfer_ns(&s), Some(41.3));
        assert_eq!(parse_transfer_ns("pingpong: transfer_ns=0.0"), None);
        assert_eq!(parse_transfer_ns("nothing"), None);
    }

    #[test]
    fn median_is_the_lower_middle() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.0);
        assert_eq!(median(&mut []), 0.0);
    }
}

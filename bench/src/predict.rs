//! The scaling model behind `bench predict`: ops/s at N CPUs from a 1-CPU
//! run and one cache-line transfer latency (docs/designs.md, "Predicting
//! scaling", writes it out with its assumptions).
//!
//! Inputs ([`Inputs`]), all per operation and measured on one CPU: the
//! time of an operation, and for its *hottest line* (the one it stores to
//! most, named by the line census of [`fs::stats`]) the stores to it, the
//! lock acquisitions on it and the time spent holding them; plus the
//! stores to the other lines every operation shares. With N CPUs:
//!
//! - a store finds the line last written by another CPU with probability
//!   `p = (N-1)/N`, and then costs one transfer `t_x` (from `bench
//!   pingpong`, or the user's `--transfer-ns`);
//! - the hottest line is a single server that every operation visits once:
//!   service `S = hold + p·stores·t_x`, plus the lock kind's handoff cost
//!   when `k` CPUs wait at it ([`LockKind::extra_transfers`]): nothing
//!   more for a queued lock (each waiter spins on its own line; the handoff
//!   moves one line), `k-1` more transfers for a ticket lock (every waiter
//!   re-reads the `now_serving` line at each release), `2(k-1)` for
//!   test-and-test-and-set (every waiter re-reads, then tries the RMW);
//! - everything else is think time `Z = t1 - hold + p·other·t_x`;
//! - N CPUs alternating between thinking and the server form a birth–death
//!   chain (the Markov model of Boyd-Wickizer et al., "Non-scalable locks
//!   are dangerous", 2012): in state k (CPUs at the line) arrivals come at
//!   `(N-k)/Z`, departures at `1/S_k`. Throughput = Σ π_k / S_k.
//!
//! With a queued lock S_k is constant and throughput rises to the bound
//! `1/S` and stays there; with ticket/TTAS locks S_k grows with the queue,
//! so past the knee throughput *falls* as CPUs are added.
//!
//! Touches nothing (arithmetic only).

use core::fmt;

/// The spinlock kinds a design can run with (`lock=` words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockKind {
    /// Linux's queued spinlock (MCS queue): waiters spin on their own line.
    Qspinlock,
    /// A ticket lock: waiters spin on one shared `now_serving` line.
    Ticket,
    /// Test-and-test-and-set: waiters spin on the lock word, then race.
    Ttas,
}

impl LockKind {
    /// Every kind, in report order.
    pub const ALL: [LockKind; 3] = [LockKind::Qspinlock, LockKind::Ticket, LockKind::Ttas];

    /// The `lock=` word.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Qspinlock => "qspinlock",
            LockKind::Ticket => "ticket",
            LockKind::Ttas => "ttas",
        }
    }

    /// Parse a `lock=` word.
    pub fn from_name(s: &str) -> Option<LockKind> {
        LockKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Line transfers a lock handoff costs beyond the one that moves the
    /// lock to its next holder, when `waiters` CPUs wait at it (including
    /// the one that gets it).
    pub fn extra_transfers(self, waiters: usize) -> f64 {
        let more = waiters.saturating_sub(1) as f64;
        match self {
            LockKind::Qspinlock => 0.0,
            LockKind::Ticket => more,
            LockKind::Ttas => 2.0 * more,
        }
    }
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A design's 1-CPU figures, per operation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Inputs {
    /// Nanoseconds per operation on one CPU (1e9 / ops/s).
    pub ns_per_op: f64,
    /// Stores to the hottest line.
    pub hot_stores: f64,
    /// Lock acquisitions on the hottest line.
    pub hot_holds: f64,
    /// Nanoseconds inside those locks.
    pub hold_ns: f64,
    /// Stores to the other lines every operation shares.
    pub other_stores: f64,
}

/// Probability that a store finds its line last written by another CPU.
pub fn remote_fraction(cpus: usize) -> f64 {
    if cpus <= 1 {
        0.0
    } else {
        (cpus - 1) as f64 / cpus as f64
    }
}

/// Predicted line transfers per operation at `cpus` CPUs (what the
/// `transfers=` counter should read, before queueing effects).
pub fn transfers_per_op(inp: &Inputs, cpus: usize) -> f64 {
    remote_fraction(cpus) * (inp.hot_stores + inp.other_stores)
}

/// Predicted total ops/s at `cpus` CPUs with `lock` and a transfer latency
/// of `transfer_ns`.
pub fn ops_per_sec(inp: &Inputs, lock: LockKind, transfer_ns: f64, cpus: usize) -> f64 {
    if cpus == 0 || inp.ns_per_op <= 0.0 {
        return 0.0;
    }
    let p = remote_fraction(cpus);
    let hold = inp.hold_ns.clamp(0.0, inp.ns_per_op);
    let base = hold + p * inp.hot_stores * transfer_ns;
    let think = (inp.ns_per_op - hold + p * inp.other_stores * transfer_ns).max(0.0);
    if base <= 0.0 {
        // Nothing is serialised: every CPU runs at its own speed.
        return cpus as f64 * 1e9 / (think + base).max(f64::MIN_POSITIVE);
    }
    let service = |k: usize| base + inp.hot_holds * lock.extra_transfers(k) * transfer_ns * p;
    if think <= 0.0 {
        // Everyone is always at the line: the chain sits in state N.
        return 1e9 / service(cpus);
    }
    // Birth–death chain over k = 0..=cpus, unnormalised weights in logs
    // would be overkill at 64 states; scale as we go to stay finite.
    let mut w = 1.0f64; // weight of state k
    let mut sum_w = 1.0;
    let mut sum_rate = 0.0;
    for k in 1..=cpus {
        let arrive = (cpus - (k - 1)) as f64 / think;
        let s = service(k);
        w *= arrive * s;
        sum_w += w;
        sum_rate += w / s;
        if sum_w > 1e200 {
            w /= 1e200;
            sum_w /= 1e200;
            sum_rate /= 1e200;
        }
    }
    1e9 * sum_rate / sum_w
}

/// The saturation bound of a queued lock: 1 / (service at full contention).
pub fn queued_bound(inp: &Inputs, transfer_ns: f64) -> f64 {
    let s = inp.hold_ns + inp.hot_stores * transfer_ns;
    if s <= 0.0 {
        f64::INFINITY
    } else {
        1e9 / s
    }
}

/// CPU counts the prediction tables and curves use.
pub const CPUS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

#[cfg(test)]
mod tests {
    use super::*;

    fn transient() -> Inputs {
        Inputs {
            ns_per_op: 2000.0,
            hot_stores: 6.0,
            hot_holds: 2.0,
            hold_ns: 100.0,
            other_stores: 4.0,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn one_cpu_is_the_measurement() {
        for lock in LockKind::ALL {
            assert!(close(ops_per_sec(&transient(), lock, 80.0, 1), 500_000.0));
        }
    }

    #[test]
    fn nothing_shared_scales_linearly() {
        let noalloc = Inputs {
            ns_per_op: 200.0,
            ..Inputs::default()
        };
        for n in CPUS {
            for lock in LockKind::ALL {
                assert!(close(ops_per_sec(&noalloc, lock, 80.0, n), n as f64 * 5e6));
            }
        }
        assert_eq!(transfers_per_op(&noalloc, 64), 0.0);
    }

    #[test]
    fn two_cpus_by_hand() {
        // N=2: p=1/2, S = 100 + 0.5*6*80 = 340, Z = 1900 + 0.5*4*80 = 2060.
        // States 0,1,2: w1 = (2/Z)·S, w2 = w1·(1/Z)·S (queued: S_k = S).
        let (s, z) = (340.0, 2060.0);
        let w1 = 2.0 / z * s;
        let w2 = w1 / z * s;
        let x = 1e9 * (w1 / s + w2 / s) / (1.0 + w1 + w2);
        assert!(close(
            ops_per_sec(&transient(), LockKind::Qspinlock, 80.0, 2),
            x
        ));
        // Ticket: S_2 = 340 + 2 holds * 1 extra * 80 * 0.5 = 420.
        let s2 = 420.0;
        let w2t = w1 / z * s2;
        let xt = 1e9 * (w1 / s + w2t / s2) / (1.0 + w1 + w2t);
        assert!(close(
            ops_per_sec(&transient(), LockKind::Ticket, 80.0, 2),
            xt
        ));
        assert!(close(transfers_per_op(&transient(), 2), 5.0));
    }

    #[test]
    fn queued_saturates_and_the_others_collapse() {
        let i = transient();
        let bound = queued_bound(&i, 80.0);
        let q: Vec<f64> = CPUS
            .iter()
            .map(|&n| ops_per_sec(&i, LockKind::Qspinlock, 80.0, n))
            .collect();
        // Rises to the bound and stays near it (the last few per cent come
        // from p = (N-1)/N still growing), never collapses.
        let qpeak = q.iter().cloned().fold(0.0, f64::max);
        assert!(q[..4].windows(2).all(|w| w[1] > w[0]), "{q:?}");
        assert!(q[3..].iter().all(|&x| x > 0.9 * qpeak), "{q:?}");
        assert!((q[6] - bound).abs() < 0.05 * bound, "{q:?} {bound}");
        for lock in [LockKind::Ticket, LockKind::Ttas] {
            let c: Vec<f64> = CPUS
                .iter()
                .map(|&n| ops_per_sec(&i, lock, 80.0, n))
                .collect();
            let peak = c.iter().cloned().fold(0.0, f64::max);
            assert!(c[6] < 0.5 * peak, "{lock}: {c:?}");
            assert!(c[6] < q[6], "{lock}: below the queued lock at 64");
        }
        // TTAS collapses harder than ticket.
        assert!(
            ops_per_sec(&i, LockKind::Ttas, 80.0, 64) < ops_per_sec(&i, LockKind::Ticket, 80.0, 64)
        );
    }

    #[test]
    fn lock_words_round_trip() {
        for k in LockKind::ALL {
            assert_eq!(LockKind::from_name(k.name()), Some(k));
        }
        assert_eq!(LockKind::from_name("mcs"), None);
        assert_eq!(LockKind::Ticket.extra_transfers(0), 0.0);
        assert_eq!(LockKind::Ttas.extra_transfers(3), 4.0);
    }
}

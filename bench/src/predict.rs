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
//!   when `k` CPUs wait at it ([`extra_transfers`]): nothing
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
//! The *sharing term* ([`allocating_fraction`]): concurrent misses of one
//! name find each other's hashed transient dentry and answer from it
//! without allocating. From the share `f` of a 1-CPU operation during which
//! its dentry is hashed and the cost of an operation that finds it hashed,
//! a fixed point gives the fraction `a` of operations that still allocate;
//! those visit the line, the others only add think time. With no window
//! (`f = 0`) or one CPU, `a = 1` and the model is the chain alone.
//!
//! Touches nothing (arithmetic only).

/// The spinlock kinds a design can run with: fs's own type (`lock=`).
pub use fs::sync::rawlock::LockKind;

/// Line transfers a lock handoff costs beyond the one that moves the lock
/// to its next holder, when `waiters` CPUs wait at it (including the one
/// that gets it): none for a queued lock (each waiter spins on its own
/// line), `waiters-1` for a ticket lock (every waiter re-reads the
/// `now_serving` line at each release), `2(waiters-1)` for TTAS (every
/// waiter re-reads the word, then tries the RMW).
pub fn extra_transfers(lock: LockKind, waiters: usize) -> f64 {
    let more = waiters.saturating_sub(1) as f64;
    match lock {
        LockKind::Qspinlock => 0.0,
        LockKind::Ticket => more,
        LockKind::Ttas => 2.0 * more,
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
    /// Nanoseconds per operation during which the operation's own dentry
    /// for the name is hashed (visible to another CPU's RCU-walk of the
    /// same name): the sharing window. 0: nothing to share.
    pub hashed_ns: f64,
    /// Nanoseconds an operation takes when it finds the name hashed (the
    /// RCU-walk part of the operation, before its miss handed over).
    pub hit_ns: f64,
    /// Dentry allocations per operation.
    pub allocs: f64,
}

/// Probability that a store finds its line last written by another CPU.
pub fn remote_fraction(cpus: usize) -> f64 {
    if cpus <= 1 {
        0.0
    } else {
        (cpus - 1) as f64 / cpus as f64
    }
}

/// Predicted line transfers per *allocating* operation at `cpus` CPUs
/// (an operation that shares another CPU's dentry stores nothing shared;
/// [`Prediction::transfers`] weighs both).
pub fn transfers_per_op(inp: &Inputs, cpus: usize) -> f64 {
    remote_fraction(cpus) * (inp.hot_stores + inp.other_stores)
}

/// What the model says about one CPU count.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Prediction {
    /// Total ops/s.
    pub ops: f64,
    /// Fraction of operations that miss and allocate (1 without sharing).
    pub allocating: f64,
    /// Line transfers per operation (what `transfers=` should read).
    pub transfers: f64,
    /// Dentry allocations per operation (what `allocs=` should read).
    pub allocs: f64,
    /// Total ops/s without the sharing term (every op allocates): the
    /// lower end where sharing is overestimated (beyond 2 CPUs, see
    /// docs/designs.md).
    pub ops_no_sharing: f64,
}

/// The time a sharing operation takes (the 1-CPU op if none was measured).
fn hit_ns(inp: &Inputs) -> f64 {
    if inp.hit_ns > 0.0 {
        inp.hit_ns.min(inp.ns_per_op)
    } else {
        inp.ns_per_op
    }
}

/// Total ops/s at `cpus` CPUs when a fraction `a` (0 < a <= 1) of the
/// operations allocate and visit the hottest line, the rest share another
/// CPU's dentry and cost [`Inputs::hit_ns`] without touching a shared line.
fn ops_with_allocating(inp: &Inputs, lock: LockKind, transfer_ns: f64, cpus: usize, a: f64) -> f64 {
    if cpus == 0 || inp.ns_per_op <= 0.0 {
        return 0.0;
    }
    let a = a.clamp(1e-12, 1.0);
    let p = remote_fraction(cpus);
    let hold = inp.hold_ns.clamp(0.0, inp.ns_per_op);
    let base = hold + p * inp.hot_stores * transfer_ns;
    let think_alloc = (inp.ns_per_op - hold + p * inp.other_stores * transfer_ns).max(0.0);
    // Between two visits to the line a CPU runs one allocating op's think
    // time and, on average, (1-a)/a sharing ops.
    let think = think_alloc + (1.0 - a) / a * hit_ns(inp);
    if base <= 0.0 {
        // Nothing is serialised: every CPU runs at its own speed.
        return cpus as f64 * 1e9 / (a * (think + base)).max(f64::MIN_POSITIVE);
    }
    let service = |k: usize| base + inp.hot_holds * extra_transfers(lock, k) * transfer_ns * p;
    if think <= 0.0 {
        // Everyone is always at the line: the chain sits in state N.
        return 1e9 / service(cpus) / a;
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
    // Visits per second, one per allocating op.
    1e9 * sum_rate / sum_w / a
}

/// The sharing fixed point at `cpus` CPUs running concurrently: the
/// fraction `a` of operations that allocate. An operation shares when its
/// RCU-walk finds another CPU's dentry for the name hashed. An allocating
/// operation keeps its dentry hashed for a share `f = v/t1` of its time
/// (`v` = [`Inputs::hashed_ns`], measured on one CPU; the window is most
/// of the slow part, so it stretches with the operation when transfers and
/// queueing slow it down). A CPU spends a share `s_A(a)` of its time in
/// allocating operations (the rest in sharing ones, [`Inputs::hit_ns`]
/// each), so its dentry is hashed a share `f·s_A(a)` of the time. A name
/// has at most one hashed dentry at a time: the others' windows do not
/// overlap, and a lookup at a random instant finds one with probability
/// `H = min(1, (N-1)·f·s_A(a))`. So `a = 1 - H`, found by bisection (`H`
/// grows with `a`).
pub fn allocating_fraction(inp: &Inputs, lock: LockKind, transfer_ns: f64, cpus: usize) -> f64 {
    if cpus <= 1 || inp.hashed_ns <= 0.0 || inp.ns_per_op <= 0.0 {
        return 1.0;
    }
    let f = (inp.hashed_ns / inp.ns_per_op).clamp(0.0, 1.0);
    let n = cpus as f64;
    let hit_s = hit_ns(inp) * 1e-9;
    let gap = |a: f64| {
        let x = ops_with_allocating(inp, lock, transfer_ns, cpus, a);
        // Per CPU: (1-a)·x/N sharing ops a second, each hit_s long.
        let s_alloc = (1.0 - (1.0 - a) * x / n * hit_s).clamp(0.0, 1.0);
        let hashed = ((n - 1.0) * f * s_alloc).min(1.0);
        1.0 - hashed - a
    };
    let (mut lo, mut hi) = (1e-9, 1.0);
    if gap(hi) >= 0.0 {
        return 1.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if gap(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Everything the model predicts at `cpus` CPUs running concurrently.
pub fn predict(inp: &Inputs, lock: LockKind, transfer_ns: f64, cpus: usize) -> Prediction {
    let a = allocating_fraction(inp, lock, transfer_ns, cpus);
    Prediction {
        ops: ops_with_allocating(inp, lock, transfer_ns, cpus, a),
        allocating: a,
        transfers: a * transfers_per_op(inp, cpus),
        allocs: a * inp.allocs,
        ops_no_sharing: ops_with_allocating(inp, lock, transfer_ns, cpus, 1.0),
    }
}

/// Predicted total ops/s at `cpus` CPUs with `lock` and a transfer latency
/// of `transfer_ns`.
pub fn ops_per_sec(inp: &Inputs, lock: LockKind, transfer_ns: f64, cpus: usize) -> f64 {
    predict(inp, lock, transfer_ns, cpus).ops
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
            ..Inputs::default()
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

    fn sharing() -> Inputs {
        Inputs {
            hashed_ns: 1200.0,
            hit_ns: 150.0,
            allocs: 1.0,
            ..transient()
        }
    }

    #[test]
    fn no_window_is_the_old_model() {
        // hashed_ns = 0: every op allocates, and the figures are the chain's
        // alone (two_cpus_by_hand checks those against the hand sum).
        for n in CPUS {
            for lock in LockKind::ALL {
                let p = predict(&transient(), lock, 80.0, n);
                assert_eq!(p.allocating, 1.0);
                assert!(close(
                    p.ops,
                    ops_with_allocating(&transient(), lock, 80.0, n, 1.0)
                ));
                assert!(close(p.transfers, transfers_per_op(&transient(), n)));
            }
        }
    }

    #[test]
    fn one_cpu_with_a_window_is_still_t1() {
        for lock in LockKind::ALL {
            let p = predict(&sharing(), lock, 80.0, 1);
            assert!(close(p.ops, 500_000.0));
            assert_eq!((p.allocating, p.allocs, p.transfers), (1.0, 1.0, 0.0));
        }
    }

    #[test]
    fn sharing_by_hand_without_a_hot_line() {
        // No serialised line: X(a) = 2e9 / (1000a + 100(1-a)) at 2 CPUs; a
        // CPU spends s_A = 1000a / (900a + 100) of its time allocating, its
        // dentry hashed f = 1/2 of that: H = 500a / (900a + 100), and
        // a = 1 - H gives 900a² - 300a - 100 = 0: a = (300 + √450000) / 1800.
        let i = Inputs {
            ns_per_op: 1000.0,
            hashed_ns: 500.0,
            hit_ns: 100.0,
            allocs: 1.0,
            ..Inputs::default()
        };
        let a = (300.0 + 450_000f64.sqrt()) / 1800.0;
        let p = predict(&i, LockKind::Qspinlock, 80.0, 2);
        assert!((p.allocating - a).abs() < 1e-9, "{p:?} {a}");
        assert!((p.allocs - a).abs() < 1e-9);
        assert!((p.ops - 2e9 / (1000.0 * a + 100.0 * (1.0 - a))).abs() < 1e-3 * p.ops);
    }

    #[test]
    fn sharing_raises_throughput_and_stays_a_fraction() {
        for lock in LockKind::ALL {
            for n in CPUS.into_iter().skip(1) {
                let with = predict(&sharing(), lock, 80.0, n);
                let without = predict(&transient(), lock, 80.0, n);
                assert!(with.allocating > 0.0 && with.allocating < 1.0, "{with:?}");
                assert!(with.ops > without.ops, "{lock} {n}: {with:?} {without:?}");
                assert!(close(with.ops_no_sharing, without.ops));
                assert!(with.transfers < without.transfers);
                // The fixed point holds: a = 1 - min(1, (N-1)·f·s_A).
                let a = with.allocating;
                let s_alloc = 1.0 - (1.0 - a) * with.ops / n as f64 * 150e-9;
                let h = (n - 1) as f64 * 0.6 * s_alloc;
                assert!(
                    (with.allocating - (1.0 - h.min(1.0))).abs() < 1e-6,
                    "{lock} {n}"
                );
            }
        }
        // A window as long as the op itself cannot push a below zero.
        let all = Inputs {
            hashed_ns: 2000.0,
            ..sharing()
        };
        assert!(predict(&all, LockKind::Ttas, 80.0, 64).allocating > 0.0);
    }

    #[test]
    fn lock_words_round_trip() {
        for k in LockKind::ALL {
            assert_eq!(LockKind::from_name(k.name()), Some(k));
        }
        assert_eq!(LockKind::from_name("mcs"), None);
        assert_eq!(extra_transfers(LockKind::Ticket, 0), 0.0);
        assert_eq!(extra_transfers(LockKind::Ttas, 3), 4.0);
    }
}

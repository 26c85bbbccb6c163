//! The scaling model behind `bench predict`: ops/s at N CPUs from a 1-CPU
//! run ([`Inputs`]: the time of an operation and, per shared [`Line`] of
//! the line census, its visits, lockref fast paths, stores inside holds and
//! the holds) and one cache-line transfer latency `t_x`. Every shared line
//! is a queueing station, solved by approximate mean-value analysis, with
//! the lock kind's handoff ([`extra_transfers`]) and the sharing term
//! ([`allocating_fraction`]); docs/scaling-model.md writes
//! it out with its assumptions and where it holds.
//!
//! Touches nothing (arithmetic only).

use alloc::vec;
use alloc::vec::Vec;

/// The spinlock kinds a design can run with: fs's own type (`lock=`).
pub use fs::sync::rawlock::LockKind;

/// Line transfers a lock handoff costs beyond the one that moves the lock
/// to its next holder, when `others` other CPUs wait at it on average (the
/// next holder among them): none for a queued lock (each waiter spins on
/// its own line), one per further waiter for a ticket lock (every waiter
/// re-reads the `now_serving` line at each release), two per further
/// waiter for TTAS (every waiter re-reads the word, then tries the RMW).
pub fn extra_transfers(lock: LockKind, others: f64) -> f64 {
    let more = (others - 1.0).max(0.0);
    match lock {
        LockKind::Qspinlock | LockKind::Pvqspinlock => 0.0,
        LockKind::Ticket => more,
        LockKind::Ttas => 2.0 * more,
    }
}

/// One line the operations share, per operation (from the census).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Line {
    /// Stores to it.
    pub stores: f64,
    /// Of those, the stores `transfers=` counts (with a writer tag; `Arc`
    /// counts and list heads have none).
    pub tagged: f64,
    /// Visits: runs of stores with no other line's store in between, made
    /// while not holding the line's lock.
    pub visits: f64,
    /// Of the visits, lockref fast paths (they lock when the lock is held).
    pub fast: f64,
    /// Stores made while holding this line's own lock.
    pub in_hold: f64,
    /// Lock acquisitions on it, and nanoseconds spent holding them.
    pub holds: f64,
    pub hold_ns: f64,
    /// Of the visits and in-hold stores, those made while the operation's
    /// own dentry is hashed (inside the sharing window).
    pub win_visits: f64,
    pub win_in_hold: f64,
}

impl Line {
    /// How many figures a line has ([`Line::values`]).
    pub const VALUES: usize = 9;
    /// Where `hold_ns` stands in [`Line::values`] (a time among counts).
    pub const HOLD_NS: usize = 6;

    /// Its figures in one fixed order (predict.csv's `lines` field and the
    /// report's table of lines use it): stores, tagged, visits, fast,
    /// in_hold, holds, hold_ns, win_visits, win_in_hold.
    pub fn values(&self) -> [f64; Line::VALUES] {
        [
            self.stores,
            self.tagged,
            self.visits,
            self.fast,
            self.in_hold,
            self.holds,
            self.hold_ns,
            self.win_visits,
            self.win_in_hold,
        ]
    }

    /// The line whose [`Line::values`] are `v`.
    pub fn from_values(v: [f64; Line::VALUES]) -> Line {
        let [stores, tagged, visits, fast, in_hold, holds, hold_ns, win_visits, win_in_hold] = v;
        Line {
            stores,
            tagged,
            visits,
            fast,
            in_hold,
            holds,
            hold_ns,
            win_visits,
            win_in_hold,
        }
    }

    /// Share of its stores that carry a writer tag.
    fn tagged_share(&self) -> f64 {
        if self.stores > 0.0 {
            (self.tagged / self.stores).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// A design's 1-CPU figures, per operation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inputs {
    /// Nanoseconds per operation on one CPU (1e9 / ops/s).
    pub ns_per_op: f64,
    /// Summary of [`Inputs::lines`]: the hottest line's stores, lock
    /// acquisitions and hold time, and the stores to every other line.
    pub hot_stores: f64,
    pub hot_holds: f64,
    pub hold_ns: f64,
    pub other_stores: f64,
    /// The shared lines, hottest first; empty for inputs that only have
    /// the summary (older predict.csv files), which then stands for them.
    pub lines: Vec<Line>,
    /// Nanoseconds per operation during which the operation's own dentry
    /// for the name is hashed (visible to another CPU's RCU-walk of the
    /// same name): the sharing window. 0: nothing to share.
    pub hashed_ns: f64,
    /// Nanoseconds an operation takes when it finds the name hashed (the
    /// RCU-walk part of the operation, before its miss handed over).
    pub hit_ns: f64,
    /// Nanoseconds from an RCU-walk miss to `d_alloc_parallel`'s look in
    /// the dcache: how long a miss is exposed to another CPU hashing the
    /// name first. 0: not measured (no found-path term).
    pub lookup_ns: f64,
    /// Dentry allocations per operation.
    pub allocs: f64,
}

impl Inputs {
    /// The lines the model runs on: [`Inputs::lines`], or, without them,
    /// the summary as two lines whose every store is a visit (the hottest
    /// with its holds, the rest as one).
    pub fn lines_or_summary(&self) -> Vec<Line> {
        if !self.lines.is_empty() {
            return self.lines.clone();
        }
        let line = |stores: f64, holds: f64, hold_ns: f64| Line {
            stores,
            tagged: stores,
            visits: stores,
            fast: 0.0,
            in_hold: 0.0,
            holds,
            hold_ns,
            win_visits: 0.0,
            win_in_hold: 0.0,
        };
        [
            line(self.hot_stores, self.hot_holds, self.hold_ns),
            line(self.other_stores, 0.0, 0.0),
        ]
        .into_iter()
        .filter(|l| l.stores > 0.0 || l.holds > 0.0)
        .collect()
    }
}

/// What the model says about one CPU count.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Prediction {
    /// Total ops/s.
    pub ops: f64,
    /// Fraction of operations that miss and allocate (1 without sharing).
    pub allocating: f64,
    /// Line transfers per operation that `transfers=` counts.
    pub transfers: f64,
    /// Dentry allocations per operation (what `allocs=` should read).
    pub allocs: f64,
    /// Of the allocating operations, the share that find the name hashed
    /// or in lookup in `d_alloc_parallel` (what `parallel_found` over
    /// `dentry_alloc` should read).
    pub found: f64,
    /// Total ops/s without the sharing term (every op allocates): the
    /// lower end where sharing is overestimated (beyond 2 CPUs, see
    /// docs/scaling-model.md).
    pub ops_no_sharing: f64,
}

/// The time a sharing operation takes (the 1-CPU op if none was measured).
pub fn hit_ns(inp: &Inputs) -> f64 {
    if inp.hit_ns > 0.0 {
        inp.hit_ns.min(inp.ns_per_op)
    } else {
        inp.ns_per_op
    }
}

/// How often the stores made inside `l`'s holds (`hold_ns` per op in
/// all) move its line to a waiter spinning on it, when the waiter is
/// always there and `fallbacks` fast paths per op took the lock instead.
/// The waiter takes the line back at most once per transfer: a hold of
/// `h` ns loses it at most `1 + h/t_x` times however many stores it makes
/// (stores that follow each other faster than the waiter's read comes back
/// commit together, as on the holder's own line). A fallback's hold is two
/// stores back to back (the count, the release): one move.
fn spun_moves(l: &Line, hold_ns: f64, transfer_ns: f64, fallbacks: f64) -> f64 {
    if l.holds <= 0.0 {
        return 0.0;
    }
    let per_hold = hold_ns.max(0.0) / l.holds;
    let most = l.holds * (1.0 + per_hold / transfer_ns.max(f64::MIN_POSITIVE));
    l.in_hold.min(most) + fallbacks
}

/// What the model charges when a visit finds its line moved:
/// `fixed_ns + of_latency·t_x`. The model's own price is
/// [`MovePrice::MODEL`], half a `t_x`; stores inside holds and lock
/// handoffs always cost a whole `t_x` (a waiter's read, then the holder's
/// upgrade, as in `bench pingpong`). Another price is for experiments that
/// re-price recorded rounds (docs/predict-probes.md, "reprice").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MovePrice {
    pub fixed_ns: f64,
    pub of_latency: f64,
}

impl MovePrice {
    /// Half a transfer latency per move: what `bench predict` charges. A
    /// visit's store is a read-modify-write of a line another CPU wrote
    /// last, one read-for-ownership; `bench pingpong`'s transfer is a
    /// spinning read that misses and then the store's upgrade, two
    /// coherence actions. Measured where the sharing term is out of play
    /// (`statneg-distinct`): 11 of 12 rounds within ±25 % at
    /// half a `t_x`, 10 at a whole one, and its far rounds 0.81–1.01
    /// against 0.63–0.80 (docs/predict-probes.md, "reprice").
    pub const MODEL: MovePrice = MovePrice {
        fixed_ns: 0.0,
        of_latency: 0.5,
    };
    /// A whole transfer latency per move: the model's earlier price, kept
    /// for re-pricing.
    pub const LATENCY: MovePrice = MovePrice {
        fixed_ns: 0.0,
        of_latency: 1.0,
    };

    /// Nanoseconds per move at a transfer latency of `transfer_ns`.
    pub fn ns(&self, transfer_ns: f64) -> f64 {
        self.fixed_ns + self.of_latency * transfer_ns
    }
}

/// The closed loop solved at one CPU count and allocating fraction.
#[derive(Clone, Copy, Debug, Default)]
struct Solved {
    /// Total ops/s.
    ops: f64,
    /// Counted transfers per allocating op.
    counted: f64,
    /// How long an allocating op keeps its dentry hashed at this CPU
    /// count: the 1-CPU window plus what its lines cost inside it (ns).
    window_ns: f64,
    /// How long an allocating op takes at this CPU count, waits included
    /// (ns).
    alloc_ns: f64,
}

/// [`solve_priced`] at the model's own price (the tests' shorthand).
#[cfg(test)]
fn solve(inp: &Inputs, lock: LockKind, transfer_ns: f64, cpus: usize, a: f64) -> Solved {
    solve_priced(inp, lock, transfer_ns, MovePrice::MODEL, cpus, a)
}

/// The closed loop at `cpus` CPUs when a fraction `a` (0 < a <= 1) of the
/// operations allocate and visit the lines, the rest share another CPU's
/// dentry and cost [`Inputs::hit_ns`] without touching a shared line; a
/// visit's move is charged at `price`.
fn solve_priced(
    inp: &Inputs,
    lock: LockKind,
    transfer_ns: f64,
    price: MovePrice,
    cpus: usize,
    a: f64,
) -> Solved {
    let visit_ns = price.ns(transfer_ns);
    if cpus == 0 || inp.ns_per_op <= 0.0 {
        return Solved::default();
    }
    let a = a.clamp(1e-12, 1.0);
    let lines = inp.lines_or_summary();
    let holds: Vec<f64> = lines
        .iter()
        .map(|l| l.hold_ns.clamp(0.0, inp.ns_per_op))
        .collect();
    let held: f64 = holds.iter().sum::<f64>().min(inp.ns_per_op);
    // Think time of one allocating op: everything but the holds, plus, on
    // average, (1-a)/a sharing ops between two allocating ones.
    let think = (inp.ns_per_op - held) + (1.0 - a) / a * hit_ns(inp);
    let window_1 = inp.hashed_ns.clamp(0.0, inp.ns_per_op);
    let n = cpus as f64;
    if cpus == 1 || lines.is_empty() {
        // Alone, or nothing shared: every CPU runs at its own speed.
        return Solved {
            ops: n * 1e9 / (a * (think + held)).max(f64::MIN_POSITIVE),
            counted: 0.0,
            window_ns: window_1,
            alloc_ns: inp.ns_per_op,
        };
    }
    let others = (n - 1.0) / n;
    // How often a visit finds its line moved: when another CPU's visit
    // came last, `(N-1)/N`. The census counts a visit per run of stores to
    // a line, several per operation; the other CPU's visits fall between
    // them as often as not, whatever the sharing (measured: at 2 CPUs
    // 0.42-0.77 of the counted visits moved, alike at 0.5 and 0.9 allocs
    // per op; the rule before this, `1 - (1-a)^(N-1)`, moved 1.6x too many
    // with almost every op allocating).
    let q_visit = others;
    // How often a waiter spins at a held lock. A shared lock puts the CPUs
    // in step (a convoy: the one that waited is right behind the holder
    // the next time), and a waiter is there whenever another CPU's
    // operation beside it is an allocating one, `1 - (1-a)^(N-1)` (a
    // sharing op takes none of these locks). Without a shared lock line
    // there is no waiter to find.
    let convoy = lines.iter().any(|l| l.holds > 0.0);
    let q_beside = if convoy {
        let mut none = 1.0;
        for _ in 1..cpus {
            none *= 1.0 - a;
        }
        1.0 - none
    } else {
        others
    };
    // Schweitzer's approximate MVA: x (allocating ops per ns, all CPUs)
    // and q (mean CPUs at each line), damped until they settle.
    let mut x = n / (think + held);
    let mut q = vec![0.0f64; lines.len()];
    let mut out = Solved::default();
    for _ in 0..4000 {
        let mut cycle = think;
        let mut resp = Vec::with_capacity(lines.len());
        out.counted = 0.0;
        out.window_ns = window_1;
        for (i, l) in lines.iter().enumerate() {
            let seen = others * q[i];
            // How often a waiter is at the line when the operation is. The
            // release hands the line to the waiter, and CPUs that run the
            // same operation fall into step behind it (a convoy): at 2 CPUs
            // or more one is always there (the independent arrivals of
            // mean-value analysis leave it there half as often, and
            // statneg-distinct then ran 1.9x slower than predicted). This
            // holds for TTAS too: its unfairness lets the releasing CPU
            // take the lock back only if it returns before the waiter's
            // read of the released word lands (about one transfer), and an
            // operation's holds of one line are several transfers apart
            // (measured: TTAS at 2 tasks runs as fast as the fair locks,
            // not faster). The kinds differ in what more waiters cost
            // (`extra_transfers`).
            let busy = if l.holds > 0.0 { q_beside } else { 0.0 };
            // Fast paths that find the lock held and take it.
            let fallbacks = l.fast * busy;
            let spun = spun_moves(l, holds[i], transfer_ns, fallbacks) * busy;
            let extra = (l.holds + fallbacks) * extra_transfers(lock, seen);
            let moved = l.visits * q_visit;
            let demand = holds[i] + visit_ns * moved + transfer_ns * (spun + extra);
            let r = demand * (1.0 + seen);
            cycle += r;
            resp.push(r);
            out.counted += moved * l.tagged_share();
            // Inside the window: visits move the line (`q_visit`) and wait
            // for the others there; in-hold stores move it to a waiter.
            if l.visits > 0.0 {
                out.window_ns += l.win_visits * (q_visit * visit_ns + seen * demand / l.visits)
                    + l.win_in_hold * busy * transfer_ns;
            }
        }
        out.alloc_ns = cycle - (1.0 - a) / a * hit_ns(inp);
        let x_new = n / cycle.max(f64::MIN_POSITIVE);
        let settled = (x_new - x).abs() <= 1e-12 * x.max(1e-300);
        x = 0.5 * (x + x_new);
        for (qi, r) in q.iter_mut().zip(&resp) {
            // Little's law at the line; never more CPUs than there are.
            *qi = (x * r).min(n);
        }
        if settled {
            break;
        }
    }
    out.ops = 1e9 * x / a;
    out
}

/// What the model says at `cpus` CPUs when a fraction `a` of the
/// operations allocate, the sharing term's fixed point left out
/// ([`with_allocating`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WithAllocating {
    /// Total ops/s.
    pub ops: f64,
    /// Counted transfers per *allocating* operation: what a run's
    /// `transfers=` over its allocating fraction should read.
    pub transfers_per_alloc: f64,
    /// How long an allocating op keeps its own dentry hashed (no finder
    /// holding it on), and how long its slow part lasts (from its miss to
    /// its end, waits included), at that fraction (ns): the spans the
    /// sharing term is fed, beside those a run measures
    /// (`crate::predict::spans`).
    pub window_ns: f64,
    pub slow_ns: f64,
}

/// The model at `cpus` CPUs when a fraction `a` of the operations
/// allocate, the sharing term's fixed point left out: fed the fraction a
/// run measured, it prices that run's allocating ops alone, which splits a
/// missed prediction into its two terms (the validation's *at measured
/// sharing* columns).
pub fn with_allocating(
    inp: &Inputs,
    lock: LockKind,
    transfer_ns: f64,
    cpus: usize,
    a: f64,
) -> WithAllocating {
    with_allocating_priced(inp, lock, transfer_ns, MovePrice::MODEL, cpus, a)
}

/// [`with_allocating`] with a visit's move charged at `price`.
pub fn with_allocating_priced(
    inp: &Inputs,
    lock: LockKind,
    transfer_ns: f64,
    price: MovePrice,
    cpus: usize,
    a: f64,
) -> WithAllocating {
    let s = solve_priced(inp, lock, transfer_ns, price, cpus, a);
    WithAllocating {
        ops: s.ops,
        transfers_per_alloc: s.counted,
        window_ns: s.window_ns,
        slow_ns: (s.alloc_ns - hit_ns(inp)).max(0.0),
    }
}

/// The sharing fixed point at `cpus` CPUs running concurrently: the
/// fraction `a` of operations that allocate. An operation shares when its
/// RCU-walk finds another CPU's dentry for the name hashed.
///
/// Each CPU runs `s = a·X/N` allocating operations a second. One that
/// hashes its dentry keeps it hashed for the window `w`: the 1-CPU window
/// ([`Inputs::hashed_ns`]) plus what the lines it visits meanwhile cost at
/// N CPUs (moves, and waits for the other CPUs there; the kill unhashes
/// before it takes the parent's lock, as Linux 6.12 does, so the census
/// sees no parent-line visit inside it).
///
/// The found path: a miss looks in the dcache once more in
/// `d_alloc_parallel`, `Δ` after it missed ([`Inputs::lookup_ns`],
/// stretched as the slow part is at N CPUs). If another CPU hashed the name
/// meanwhile, the miss finds that dentry, holds it, and drops it only at
/// its own end, so that dentry stays hashed until then. With
/// `c = (N-1)·s·Δ`:
/// - a share `c/(1+c)` of the misses find one instead of hashing their own;
/// - a hashed dentry is found with probability `min(1, c)`, and then stays
///   hashed for about the finder's slow part less `Δ/2`, if that is longer
///   than `w`.
///
/// A name has at most one hashed dentry at a time: the others' windows do
/// not overlap, and a lookup at a random instant finds one with probability
/// `H = min(1, (N-1)·(hashing ops a second)·(mean window))`. So
/// `a = 1 - H`, found by bisection.
pub fn allocating_fraction(inp: &Inputs, lock: LockKind, transfer_ns: f64, cpus: usize) -> f64 {
    allocating_fraction_priced(inp, lock, transfer_ns, MovePrice::MODEL, cpus)
}

/// Whether concurrent operations can share a dentry at all: more than one
/// CPU and a window during which the operation's dentry is hashed.
fn can_share(inp: &Inputs, cpus: usize) -> bool {
    cpus > 1 && inp.hashed_ns > 0.0 && inp.ns_per_op > 0.0
}

/// [`allocating_fraction`] with a visit's move charged at `price`.
fn allocating_fraction_priced(
    inp: &Inputs,
    lock: LockKind,
    transfer_ns: f64,
    price: MovePrice,
    cpus: usize,
) -> f64 {
    if !can_share(inp, cpus) {
        return 1.0;
    }
    let gap = |a: f64| {
        let (h, _) = hashed_and_found(inp, lock, transfer_ns, price, cpus, a);
        1.0 - h - a
    };
    if gap(1.0) >= 0.0 {
        return 1.0;
    }
    // `gap` falls from `1 - a`'s side as `a` grows, but not always
    // monotonically (a collapsing lock makes X fall with `a`): take the
    // largest root, the least sharing — the term's known error is too much
    // of it. Walk down from `a = 1` to the first sign change, then bisect.
    const STEPS: usize = 64;
    let (mut lo, mut hi) = (1e-9, 1.0);
    for k in 1..=STEPS {
        let a = 1.0 - k as f64 / STEPS as f64;
        if a <= lo || gap(a) > 0.0 {
            lo = a.max(lo);
            break;
        }
        hi = a;
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

/// The sharing term at `cpus` CPUs when a fraction `a` of the operations
/// allocate ([`allocating_fraction`] solves for `a`): the probability `H`
/// that a lookup at a random instant finds the name hashed, and the share
/// `c/(1+c)` of the misses that find it in `d_alloc_parallel` (what the
/// run's `parallel_found` over its allocations should read).
fn hashed_and_found(
    inp: &Inputs,
    lock: LockKind,
    transfer_ns: f64,
    price: MovePrice,
    cpus: usize,
    a: f64,
) -> (f64, f64) {
    let n = cpus as f64;
    // The slow part at one CPU: from the miss to the end of the walk.
    let slow_1 = (inp.ns_per_op - hit_ns(inp)).max(f64::MIN_POSITIVE);
    let sv = solve_priced(inp, lock, transfer_ns, price, cpus, a);
    let rate = a * sv.ops * 1e-9 / n; // allocating ops per ns per CPU
    let slow = (sv.alloc_ns - hit_ns(inp)).max(slow_1);
    let delta = inp.lookup_ns.max(0.0) * slow / slow_1;
    let c = (n - 1.0) * rate * delta;
    let hashing = rate / (1.0 + c);
    let found = c.min(1.0);
    let window = (1.0 - found) * sv.window_ns + found * sv.window_ns.max(slow - delta / 2.0);
    let h = ((n - 1.0) * hashing * window).clamp(0.0, 1.0);
    (h, c / (1.0 + c))
}

/// Everything the model predicts at `cpus` CPUs running concurrently.
pub fn predict(inp: &Inputs, lock: LockKind, transfer_ns: f64, cpus: usize) -> Prediction {
    predict_priced(inp, lock, transfer_ns, MovePrice::MODEL, cpus)
}

/// [`predict`] with a visit's move charged at `price` (to set the whole
/// model, sharing term included, beside recorded runs at another price).
pub fn predict_priced(
    inp: &Inputs,
    lock: LockKind,
    transfer_ns: f64,
    price: MovePrice,
    cpus: usize,
) -> Prediction {
    let a = allocating_fraction_priced(inp, lock, transfer_ns, price, cpus);
    let s = solve_priced(inp, lock, transfer_ns, price, cpus, a);
    Prediction {
        ops: s.ops,
        allocating: a,
        transfers: a * s.counted,
        allocs: a * inp.allocs,
        found: if can_share(inp, cpus) {
            hashed_and_found(inp, lock, transfer_ns, price, cpus, a).1
        } else {
            0.0
        },
        ops_no_sharing: with_allocating_priced(inp, lock, transfer_ns, price, cpus, 1.0).ops,
    }
}

/// Predicted total ops/s at `cpus` CPUs with `lock` and a transfer latency
/// of `transfer_ns`.
pub fn ops_per_sec(inp: &Inputs, lock: LockKind, transfer_ns: f64, cpus: usize) -> f64 {
    predict(inp, lock, transfer_ns, cpus).ops
}

/// The saturation bound of a queued lock: 1 / (the busiest line's demand
/// when every visit moves it (at [`MovePrice::MODEL`]), a waiter always
/// spins on it and every fast path takes the lock).
pub fn queued_bound(inp: &Inputs, transfer_ns: f64) -> f64 {
    let d = inp
        .lines_or_summary()
        .iter()
        .map(|l| {
            let spun = spun_moves(l, l.hold_ns, transfer_ns, l.fast);
            l.hold_ns.max(0.0) + MovePrice::MODEL.ns(transfer_ns) * l.visits + transfer_ns * spun
        })
        .fold(0.0, f64::max);
    if d <= 0.0 {
        f64::INFINITY
    } else {
        1e9 / d
    }
}

/// CPU counts the prediction tables and curves use.
pub const CPUS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

#[cfg(test)]
mod tests;

//! The three spinlock algorithms the lookup path can run on, and the lock
//! word they share.
//!
//! Which lock a spinlock is decides how a contended design collapses, so it
//! is a design dimension ([`LockKind`], the benchmark word `lock=`):
//!
//! - [`LockKind::Qspinlock`] (the default, [`LockKind::DEFAULT`]):
//!   Linux's queued spinlock (`kernel/locking/qspinlock.c`), see
//!   [`super::qspinlock`]. One waiter spins on the lock word (the *pending*
//!   bit); every further waiter joins an MCS queue and spins on its own
//!   per-CPU node, so a release moves one cache line to one CPU, however
//!   many wait.
//! - [`LockKind::Pvqspinlock`]: the same queued lock with Linux's paravirt
//!   waits (`kernel/locking/qspinlock_paravirt.h`), see
//!   [`super::pvqspinlock`]: after a bounded spin a waiter halts its CPU
//!   until the CPU it waits for kicks it, for guests with more vCPUs than
//!   host cores.
//! - [`LockKind::Ticket`]: a ticket lock (Linux's x86 spinlock before 4.2):
//!   take a number (`fetch_add` on `next`), wait until `owner` shows it.
//!   FIFO, but every waiter spins on the lock word, so each release sends
//!   the line to all of them: the collapse that Boyd-Wickizer et al. ("Non-
//!   scalable locks are dangerous", 2012) measured.
//! - [`LockKind::Ttas`]: test-and-test-and-set, this crate's first lock
//!   (the default until the queued lock's host convoy was understood):
//!   unfair, every waiter spins on the word and races for it on release.
//!
//! Every kind waits through [`super::spinwait::SpinWait`], which on host
//! threads gives the CPU away after a long wait: without that, a fair lock
//! (queued or ticket) handing over to a descheduled thread stalls every
//! other waiter for a scheduler tick, which on a 2-core machine with three
//! spinning threads looked like a lost hand-over (see that module).
//!
//! The lock word every kind keeps its state in, [`LockWord`], is
//! [`super::lockword`]'s.
//!
//! Counting ([`crate::stats`]) is the callers' business, the same for every
//! kind: one `locks` and one `shared_stores` event per acquisition, one
//! `shared_stores` event per release.
//!
//! Touches: only the lock words it is handed (and, for the queued lock, this
//! CPU's MCS nodes). Never sleeps, never allocates.

use core::fmt;
use core::str::FromStr;
use core::sync::atomic::AtomicU8 as ConfigU8;

use super::atomic::Ordering;
use super::lockword::LockWord;
use super::spinwait::SpinWait;
use super::{pvqspinlock, qspinlock};

/// A spinlock algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum LockKind {
    /// Linux's queued spinlock (MCS queue, pending bit, locked byte).
    Qspinlock = 0,
    /// A FIFO ticket lock.
    Ticket = 1,
    /// Test-and-test-and-set.
    Ttas = 2,
    /// The queued spinlock whose waiters halt their CPU (guests).
    Pvqspinlock = 3,
}

impl LockKind {
    /// Every kind, the default first.
    pub const ALL: [LockKind; 4] = [
        LockKind::Qspinlock,
        LockKind::Ticket,
        LockKind::Ttas,
        LockKind::Pvqspinlock,
    ];
    /// The kind every lock gets unless `lock=` says otherwise: Linux's.
    pub const DEFAULT: LockKind = LockKind::Qspinlock;

    /// The name used in `lock=` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Qspinlock => "qspinlock",
            LockKind::Ticket => "ticket",
            LockKind::Ttas => "ttas",
            LockKind::Pvqspinlock => "pvqspinlock",
        }
    }

    /// The kind named `s` (`qspinlock`, `ticket`, `ttas` or `pvqspinlock`).
    pub fn from_name(s: &str) -> Option<LockKind> {
        LockKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Is `v` (a lock word's 32-bit value) free, with nobody waiting? The
    /// lockref's cmpxchg fast path runs only then, as Linux's
    /// `arch_spin_value_unlocked`.
    #[inline]
    pub fn value_unlocked(self, v: u32) -> bool {
        match self {
            // Pending or queued waiters also keep the fast path off.
            LockKind::Qspinlock | LockKind::Pvqspinlock | LockKind::Ttas => v == 0,
            LockKind::Ticket => v & 0xffff == v >> 16,
        }
    }

    /// Spin until `w` is ours.
    #[inline]
    pub(crate) fn lock(self, w: &impl LockWord) {
        match self {
            LockKind::Qspinlock => qspinlock::lock(w),
            LockKind::Pvqspinlock => pvqspinlock::lock(w),
            LockKind::Ticket => ticket_lock(w),
            LockKind::Ttas => ttas_lock(w),
        }
    }

    /// Take `w` if that needs no waiting.
    #[inline]
    pub(crate) fn try_lock(self, w: &impl LockWord) -> bool {
        match self {
            LockKind::Qspinlock => qspinlock::try_lock(w),
            LockKind::Pvqspinlock => pvqspinlock::try_lock(w),
            LockKind::Ticket => {
                let v = w.load(Ordering::Relaxed);
                v & 0xffff == v >> 16
                    && w.cas(v, v.wrapping_add(TICKET_NEXT), Ordering::Acquire)
                        .is_ok()
            }
            LockKind::Ttas => w.cas(0, 1, Ordering::Acquire).is_ok(),
        }
    }

    /// Release `w`, which the caller holds.
    #[inline]
    pub(crate) fn unlock(self, w: &impl LockWord) {
        match self {
            LockKind::Qspinlock => qspinlock::unlock(w),
            LockKind::Pvqspinlock => pvqspinlock::unlock(w),
            LockKind::Ticket => {
                // Only the holder moves `owner`, so its value is ours to
                // know; adding 1 must not carry into `next` when it wraps.
                let owner = w.load(Ordering::Relaxed) & 0xffff;
                let step = if owner == 0xffff {
                    1u32.wrapping_sub(TICKET_NEXT)
                } else {
                    1
                };
                w.fetch_add(step, Ordering::Release);
            }
            // Nobody else writes a held TTAS word: a plain store will do.
            LockKind::Ttas => w.release_zero(),
        }
    }
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LockKind {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LockKind::from_name(s).ok_or("expected qspinlock, ticket, ttas or pvqspinlock")
    }
}

/// The kind new locks get (configuration, not synchronisation: a plain
/// atomic even under loom).
static DEFAULT_KIND: ConfigU8 = ConfigU8::new(LockKind::DEFAULT as u8);

/// The kind every lock created from now on uses. A lock keeps the kind it
/// was created with (its word's meaning depends on it), so set this before
/// the fs is first used: benchmarks do it first thing, from `lock=`.
pub fn set_default_kind(kind: LockKind) {
    DEFAULT_KIND.store(kind as u8, core::sync::atomic::Ordering::Relaxed);
    // Waits that are not lock waits halt with the paravirt lock only.
    super::spinwait::set_halting(kind == LockKind::Pvqspinlock);
}

// Before any `set_default_kind`, waits halt as the default kind says.
const _: () = assert!(
    super::spinwait::HALTING_AT_START == matches!(LockKind::DEFAULT, LockKind::Pvqspinlock)
);

/// The kind new locks get ([`LockKind::DEFAULT`] unless set otherwise).
#[inline]
pub fn default_kind() -> LockKind {
    match DEFAULT_KIND.load(core::sync::atomic::Ordering::Relaxed) {
        0 => LockKind::Qspinlock,
        1 => LockKind::Ticket,
        2 => LockKind::Ttas,
        _ => LockKind::Pvqspinlock,
    }
}

/// The increment of the ticket lock's `next` field.
const TICKET_NEXT: u32 = 1 << 16;

fn ticket_lock(w: &impl LockWord) {
    let t = w.fetch_add(TICKET_NEXT, Ordering::Acquire);
    let mine = t >> 16;
    if t & 0xffff == mine {
        return;
    }
    // Everyone waits on the same word: each release is seen by all.
    let mut wait = SpinWait::new();
    while w.load(Ordering::Acquire) & 0xffff != mine {
        wait.turn();
    }
}

fn ttas_lock(w: &impl LockWord) {
    let mut wait = SpinWait::new();
    while w.cas(0, 1, Ordering::Acquire).is_err() {
        // Test before test-and-set: spin on a shared (read-only) copy of
        // the line instead of bouncing it with failed RMWs.
        while w.load(Ordering::Relaxed) != 0 {
            wait.turn();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sync::atomic::{AtomicU32, AtomicU64};
    use crate::sync::lockword::{HighHalf, LOW};

    #[test]
    fn names_round_trip() {
        for k in LockKind::ALL {
            assert_eq!(k.name().parse::<LockKind>(), Ok(k));
        }
        assert!("mcs".parse::<LockKind>().is_err());
        assert_eq!(LockKind::ALL[0], LockKind::Qspinlock);
    }

    #[test]
    fn high_half_never_touches_the_count() {
        let a = AtomicU64::new(0xdead_beef);
        let h = HighHalf(&a);
        assert_eq!(h.cas(0, 0xffff_ffff, Ordering::Relaxed), Ok(0));
        assert_eq!(h.fetch_add(1, Ordering::Relaxed), 0xffff_ffff);
        assert_eq!(a.load(Ordering::Relaxed), 0xdead_beef);
        h.fetch_or(0x8000_0001, Ordering::Relaxed);
        h.fetch_and(0x1, Ordering::Relaxed);
        assert_eq!(a.load(Ordering::Relaxed), (1 << 32) | 0xdead_beef);
        assert_eq!(h.cas(0, 5, Ordering::Relaxed), Err(1));
        h.release_zero();
        assert_eq!(a.load(Ordering::Relaxed), 0xdead_beef);
    }

    #[test]
    fn each_kind_excludes_and_releases_on_both_words() {
        for k in LockKind::ALL {
            let a = AtomicU32::new(0);
            let b = AtomicU64::new(7);
            let hb = HighHalf(&b);
            for _ in 0..3 {
                k.lock(&a);
                assert!(!k.try_lock(&a), "{k}: try_lock on a held lock");
                assert!(!k.value_unlocked(a.load(Ordering::Relaxed)));
                k.unlock(&a);
                assert!(k.value_unlocked(a.load(Ordering::Relaxed)));
                assert!(k.try_lock(&hb));
                assert!(!k.value_unlocked(hb.load(Ordering::Relaxed)));
                k.unlock(&hb);
                assert!(k.value_unlocked(hb.load(Ordering::Relaxed)));
            }
            assert_eq!(b.load(Ordering::Relaxed) & LOW, 7);
        }
    }

    #[test]
    fn ticket_owner_wraps_without_touching_next() {
        let a = AtomicU32::new(0xffff_ffff); // next = owner = 0xffff
        assert!(LockKind::Ticket.value_unlocked(a.load(Ordering::Relaxed)));
        LockKind::Ticket.lock(&a);
        assert_eq!(a.load(Ordering::Relaxed), 0x0000_ffff);
        LockKind::Ticket.unlock(&a);
        assert_eq!(a.load(Ordering::Relaxed), 0);
        assert!(LockKind::Ticket.value_unlocked(0));
    }

    #[test]
    fn contended_counting_stays_exact() {
        use std::sync::Arc;
        for k in LockKind::ALL {
            struct S(AtomicU32, core::cell::UnsafeCell<u64>);
            // SAFETY: the cell is only touched under the lock being tested.
            unsafe impl Sync for S {}
            let s = Arc::new(S(AtomicU32::new(0), core::cell::UnsafeCell::new(0)));
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let s = s.clone();
                    std::thread::spawn(move || {
                        for _ in 0..20_000 {
                            k.lock(&s.0);
                            // SAFETY: we hold the lock.
                            unsafe { *s.1.get() += 1 };
                            k.unlock(&s.0);
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            // SAFETY: every thread has been joined.
            assert_eq!(unsafe { *s.1.get() }, 80_000, "{k}");
            assert!(k.value_unlocked(s.0.load(Ordering::Relaxed)), "{k}");
        }
    }
}

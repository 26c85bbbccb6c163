//! The host platform: ordinary threads play CPUs, and RCU is epoch based.
//!
//! CPU ids: the first time a thread calls into the fs crate it claims a free
//! slot in a fixed table (`MAX_CPUS` of them) and keeps it until it exits;
//! the slot index is its CPU id, so per-CPU counters stay per-thread.
//!
//! RCU (epoch-based reclamation, a close cousin of Linux's QSBR; the epoch
//! machine itself is [`super::epoch`], where the loom models run it too):
//! - A global epoch counter `E`. A reader entering its outermost section
//!   publishes `(E << 1) | 1` in its own slot (a store to a line only it
//!   writes) and, unless the writer side can fence for it (below), issues a
//!   full fence; leaving, it stores 0.
//! - The epoch may advance from `e` to `e + 1` only when every slot is either
//!   idle or was entered in epoch `e`.
//! - An object unlinked while the epoch read `r` may be freed once the epoch
//!   reaches `r + 2`: any reader that could have seen it entered in an
//!   epoch `<= r`, and two advances prove it has left.
//! - `call_rcu` queues on the calling thread (no lock, no allocation once the
//!   queue has grown) and never runs a destructor itself: its caller may hold
//!   dcache locks that a destructor (a `dput`) would take again.
//! - Who runs the callbacks depends on the thread, as in Linux, where they
//!   run in softirq on the CPU that queued them unless that CPU offloads
//!   them to `rcuo` kthreads (`rcu_nocbs`):
//!   - A thread that reports quiescent states (`rcu_quiescent_state`, at
//!     points where it holds no lock of ours: the benchmark loop every 64
//!     operations) runs its own due callbacks there. The memory it frees
//!     is memory it allocated, so the allocator stays thread-local (glibc's
//!     tcache and the thread's own arena), as a kernel's per-CPU slab does.
//!     Its queue waits for grace periods that the background thread drives
//!     (below); past [`OWN_LIMIT`] entries, or when the thread exits, it is
//!     handed over like any other.
//!   - Any other thread's queue moves, in one batch past [`RECLAIM_AT`]
//!     entries or when the thread exits, to a global pending list that a
//!     background reclaimer thread (Linux's `rcuo` kthreads) drains once
//!     the epoch allows, holding no lock of ours.
//!
//!   Handing every callback to the reclaimer, as all threads once did, made
//!   a 2-task transient run free each dentry on another thread than the one
//!   that allocated it: glibc took the arena's lock for every such free (a
//!   futex wake when the owner held it), trimmed and refaulted its heaps
//!   (`clear_page_erms` was the top kernel symbol), and the reclaimer took a
//!   CPU from a benchmark thread. With each task in its own directory
//!   (`bench=statneg-owndir`: no dentry shared) 2 tasks ran at 0.88-0.92 x
//!   the rate of one; with callbacks run by their own thread, at 0.96-1.05 x
//!   (docs/host-mode.md, "Host mode's RCU callbacks").
//! - `synchronize_rcu` waits for two epoch advances and then runs whatever
//!   is due itself (its caller holds no locks: it is about to wait).
//! - `rcu_barrier` (Linux's `rcu_barrier()`) waits until every callback
//!   queued before it has *run*, and the callbacks those queued too. A grace
//!   period is not enough: the reclaimer takes a batch off the pending list
//!   ([`take_due`]) and runs it afterwards, so for a while its objects are
//!   in no list that `synchronize_rcu` sees (and their destructors' own
//!   callbacks sit in the reclaimer's queue). Every batch taken is counted
//!   in `IN_FLIGHT` until it has run and its callbacks are back on the
//!   pending list; the barrier waits for "pending empty and nothing in
//!   flight", read together under the pending lock. Other live threads'
//!   queues are theirs (they hand them over at 128 entries or on exit).
//!
//! Fence-free readers (liburcu's `urcu-memb` flavour): the reader's fence
//! orders its slot store before its loads of RCU-protected pointers, and
//! pairs with the advancer's fence before it scans the slots. A full fence
//! costs a reader more than the rest of a noalloc lookup's RCU entry, and
//! readers are many while advances are rare, so when the kernel lets us we
//! move the cost to the advancer: `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`
//! runs a full barrier on every CPU currently running one of our threads
//! before it returns, which is a fence on the reader's side, issued only
//! when an advancer needs one. The reader keeps a compiler barrier, so its
//! loads stay after its store in program order, and its epoch load
//! acquires, so they stay after that load too: a reader that saw the epoch
//! an advance made sees the unlinks of what that advance may free next
//! (x86's loads keep their order anyway; C11 gives it no reader without a
//! fence, see `fs/tests/loom_host_rcu.rs`). The process registers once
//! (`MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`) when the platform is
//! created; where the syscall is missing or refused (old kernels, seccomp),
//! or `FS_RCU_READER=fence` is set, readers fence as before. In the
//! fence-free mode `rcu_quiescent_state` no longer advances the epoch (that
//! would be a syscall every few operations): the reclaimer thread and
//! `synchronize_rcu` do. `bench rcu-reader` measures the two modes against
//! each other (figures in `docs/host-mode.md`, "Host mode's RCU readers").
//!
//! Grace periods without `membarrier` (Linux's normal grace periods, which
//! wait for quiescent states the CPUs report from their ticks and context
//! switches, and leave IPIs to `synchronize_rcu_expedited`): the barrier is
//! needed only for a slot whose thread may have entered a section with a
//! slot store the advancer cannot see yet. Two kinds of thread promise it
//! has not, in its slot's ack ([`super::epoch`], "Promises", where the
//! loom model `fs/tests/loom_host_rcu.rs` runs them):
//! - A thread that reports a quiescent state (outside any section) reads
//!   the epoch `e`, fences, and stores `e` in its ack. Every section it
//!   enters later reads the epoch after that fence, so it entered in an
//!   epoch `>= e` and saw every unlink that an object retired before `e`
//!   had (the same pairing as a fenced reader's: epoch load, fence, loads),
//!   and its earlier sections ended before the store (release).
//! - A thread that waits outside any section (the benchmark's monitor
//!   between samples, the reclaimer between ticks) stores [`OFFLINE`](super::epoch::OFFLINE)
//!   (Linux's extended quiescent state, an idle CPU): before its next
//!   section it stores 0 and fences, so either the advancer's fence comes
//!   first and the section sees every unlink before it, or the advancer
//!   sees the 0 and uses `membarrier`. A thread claims its slot offline.
//!
//! The advancer fences, then reads which slots are claimed (a thread that
//! claims one later comes online, so it fences after the advancer's fence
//! and sees what it saw), then reads the acks: when every slot other than
//! its own is offline or acked the current epoch, the fence was all the
//! pairing needed and it skips `membarrier`. A benchmark's tasks report
//! quiescent states every 64 operations, so a measured window pays no
//! `membarrier` unless a task stalls for a whole grace period (then the
//! advance takes the barrier, as before). Each call is counted
//! ([`membarrier_calls`], the `membarriers` of [`crate::stats::Counters`]).
//!
//! Touches: its own slot table and thread-locals; std's thread_local only;
//! the `membarrier` syscall.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;

use super::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use super::epoch::{due, Epoch, Slot};
use super::rcu::Retired;
use crate::platform::{Platform, MAX_CPUS};

#[allow(clippy::declare_interior_mutable_const)]
const SLOT: Slot = Slot::new();
static SLOTS: [Slot; MAX_CPUS] = [SLOT; MAX_CPUS];
static HIGH_WATER: AtomicUsize = AtomicUsize::new(0);
static EPOCH: Epoch = Epoch::new();

/// `membarrier(2)` calls this process made (all commands).
static MEMBARRIERS: AtomicU64 = AtomicU64::new(0);

/// How many `membarrier(2)` calls host mode's RCU has made so far.
pub fn membarrier_calls() -> u64 {
    MEMBARRIERS.load(Ordering::Relaxed)
}

/// Queue length at which a thread that does not run its own callbacks
/// hands them to the reclaimer.
const RECLAIM_AT: usize = 128;

/// Queue length at which a thread that runs its own callbacks hands them
/// over all the same (it stopped reporting quiescent states, or reports
/// them too rarely for the callbacks to keep up).
const OWN_LIMIT: usize = 1 << 16;

struct Local {
    slot: usize,
    nest: Cell<u32>,
    queue: RefCell<VecDeque<(u64, Retired)>>,
    /// This thread reports quiescent states, so it runs its own callbacks
    /// (set by its first `rcu_quiescent_state`).
    runs_own: Cell<bool>,
    /// This thread is counted in [`OWN_WAITING`].
    waiting: Cell<bool>,
    /// This slot's ack reads offline: come online before a section.
    offline: Cell<bool>,
}

/// Threads whose own callback queue waits for a grace period: while any
/// does, the reclaimer advances the epoch on its 1 ms tick.
static OWN_WAITING: AtomicUsize = AtomicUsize::new(0);

impl Local {
    fn claim() -> Local {
        for (i, s) in SLOTS.iter().enumerate() {
            if !s.in_use.load(Ordering::Relaxed)
                && s.in_use
                    .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                HIGH_WATER.fetch_max(i + 1, Ordering::Relaxed);
                return Local {
                    slot: i,
                    nest: Cell::new(0),
                    queue: RefCell::new(VecDeque::new()),
                    runs_own: Cell::new(false),
                    waiting: Cell::new(false),
                    // Its ack reads OFFLINE: the last owner left it so.
                    offline: Cell::new(true),
                };
            }
        }
        panic!("fs host platform: more than {MAX_CPUS} threads use the fs crate at once");
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        SLOTS[self.slot].exit();
        // No more sections on this thread; the next owner comes online.
        SLOTS[self.slot].go_offline();
        self.set_waiting(false);
        let q: Vec<_> = self.queue.get_mut().drain(..).collect();
        if !q.is_empty() {
            hand_over(q);
        }
        SLOTS[self.slot].in_use.store(false, Ordering::Release);
    }
}

impl Local {
    /// Count this thread in [`OWN_WAITING`] (or stop counting it). The
    /// reclaimer may be in its long idle sleep when the first thread starts
    /// waiting: wake it.
    fn set_waiting(&self, on: bool) {
        if self.waiting.get() == on {
            return;
        }
        self.waiting.set(on);
        if on {
            if OWN_WAITING.fetch_add(1, Ordering::Relaxed) == 0 {
                start_reclaimer();
                WAKE.notify_one();
            }
        } else {
            OWN_WAITING.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Outside any section: promise that later sections come after a
    /// fence that follows a read of epoch `e` (module doc).
    fn ack(&self) {
        SLOTS[self.slot].quiescent(&EPOCH);
        self.offline.set(false);
    }

    /// Outside any section, about to wait: no section until
    /// [`Local::come_online`].
    fn go_offline(&self) {
        if self.nest.get() == 0 && !self.offline.get() {
            self.offline.set(true);
            SLOTS[self.slot].go_offline();
        }
    }

    /// Before the first section after [`Local::go_offline`]: withdraw the
    /// promise, then fence (Dekker with the advancer's fence and read of
    /// the ack).
    #[cold]
    fn come_online(&self) {
        self.offline.set(false);
        SLOTS[self.slot].come_online();
    }

    /// Run this thread's callbacks whose grace period is over, oldest
    /// first. One at a time: a destructor may queue more (a `dput` of the
    /// parent), which needs the queue.
    fn run_own_due(&self) {
        let now = EPOCH.now();
        loop {
            let ready = {
                let mut q = self.queue.borrow_mut();
                match q.front() {
                    Some(&(r, _)) if due(r, now) => q.pop_front().map(|(_, obj)| obj),
                    _ => None,
                }
            };
            match ready {
                Some(obj) => obj.reclaim(),
                None => break,
            }
        }
        let empty = self.queue.borrow().is_empty();
        self.set_waiting(!empty);
    }
}

std::thread_local! {
    static LOCAL: Local = Local::claim();
}

/// Readers skip their fence: the advancer's `membarrier` stands in for it.
/// Set once, while the platform is created, before any reader runs.
static FENCE_FREE: AtomicBool = AtomicBool::new(false);

// From <linux/membarrier.h>.
const MEMBARRIER_CMD_QUERY: libc::c_int = 0;
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

fn membarrier(cmd: libc::c_int) -> libc::c_long {
    MEMBARRIERS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: membarrier(2) takes two integers and touches no memory of
    // ours; an unknown command fails with EINVAL.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_uint,
            0 as libc::c_int,
        )
    }
}

/// Decide the reader mode (once): fence-free when `FS_RCU_READER` is not
/// `fence` and the kernel offers and accepts the private expedited
/// membarrier. Returns why, for [`HostPlatform::rcu_reader_mode`].
fn choose_reader_mode() -> &'static str {
    if std::env::var_os("FS_RCU_READER").is_some_and(|v| v == "fence") {
        return "fence (FS_RCU_READER=fence)";
    }
    let offered = membarrier(MEMBARRIER_CMD_QUERY);
    if offered < 0 || offered & libc::c_long::from(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 {
        return "fence (membarrier private expedited not offered)";
    }
    if membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0 {
        return "fence (membarrier registration refused)";
    }
    FENCE_FREE.store(true, Ordering::SeqCst);
    "membarrier"
}

/// The slots claimed so far. Read after the advancer's fence
/// ([`Epoch::try_advance`]): a thread that claimed a later slot fenced
/// after it (it comes online before its first section) and sees all
/// the advancer saw.
fn claimed() -> &'static [Slot] {
    &SLOTS[..HIGH_WATER.load(Ordering::Relaxed)]
}

/// The rest of the advancer's half of the reader/advancer pairing, after
/// [`Epoch::try_advance`]'s fence: for fence-free readers whose slot made
/// no promise (module doc), a barrier on every CPU running our threads.
fn barrier(slots: &[Slot]) {
    // Registered, so the membarrier cannot fail; if it did, readers that
    // skip their fence would be unprotected: stop.
    if FENCE_FREE.load(Ordering::Relaxed)
        && !all_promised(slots)
        && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0
    {
        std::process::abort();
    }
}

/// Has every slot in `slots` but the caller's promised that its thread's
/// sections see what preceded the current epoch ([`Epoch::promised`])?
/// Read after the advancer's fence.
fn all_promised(slots: &[Slot]) -> bool {
    let own = LOCAL.try_with(|l| l.slot).ok();
    EPOCH.promised(slots, own)
}

/// The calling thread is about to wait outside any read-side section (a
/// benchmark's monitor between samples): grace periods need no barrier on
/// its CPU until its next section (module doc). Nothing in a section.
pub fn rcu_offline() {
    let _ = LOCAL.try_with(|l| l.go_offline());
}

/// Try to move the global epoch forward by one. Returns the epoch after.
fn try_advance() -> u64 {
    EPOCH.try_advance(claimed, barrier)
}

/// Objects handed over by `call_rcu`, oldest batch first, with the epoch
/// at which each was retired.
static PENDING: Mutex<Vec<(u64, Retired)>> = Mutex::new(Vec::new());
/// Objects taken off `PENDING` whose destructors (and the hand-over of the
/// callbacks those queued) have not finished; changed under the `PENDING`
/// lock when taken, after the work when done.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static WAKE: Condvar = Condvar::new();

fn pending() -> std::sync::MutexGuard<'static, Vec<(u64, Retired)>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Pending entries past which a hand-over wakes the reclaimer at once
/// rather than leaving the batch to its next millisecond tick.
const WAKE_AT: usize = 1 << 16;

/// Move a batch to the pending list and make sure the reclaimer will run
/// it. Like Linux's `call_rcu`, which queues and leaves grace periods to
/// the RCU kthreads' own pace, a hand-over wakes the reclaimer only when it
/// may be in its long idle sleep (the list was empty) or the list has grown
/// past [`WAKE_AT`]; otherwise the reclaimer's 1 ms tick takes it. Waking
/// it on every hand-over made a 2-task transient run wake it about 3 400
/// times a second, each wake a `membarrier` (an interrupt on every CPU
/// running a benchmark thread) and a preemption of one benchmark thread:
/// the other then waited for it behind the fair lock.
fn hand_over(batch: impl IntoIterator<Item = (u64, Retired)>) {
    let mut p = pending();
    let was_empty = p.is_empty();
    p.extend(batch);
    let wake = was_empty || p.len() >= WAKE_AT;
    drop(p);
    if wake {
        WAKE.notify_one();
    }
    start_reclaimer();
}

/// Take what is due (retired at least two epochs ago) off the pending list,
/// counting it in `IN_FLIGHT`: the taker runs it with [`run_due`].
fn take_due() -> Vec<Retired> {
    take_due_at(try_advance())
}

/// [`take_due`] at epoch `now`, without trying to advance it.
fn take_due_at(now: u64) -> Vec<Retired> {
    let mut p = pending();
    let mut ready = Vec::new();
    let mut keep = Vec::with_capacity(p.len());
    for (r, obj) in p.drain(..) {
        if due(r, now) {
            ready.push(obj);
        } else {
            keep.push((r, obj));
        }
    }
    *p = keep;
    IN_FLIGHT.fetch_add(ready.len(), Ordering::AcqRel);
    ready
}

/// Run what [`take_due`] took, hand the callbacks the destructors queued
/// to the pending list, and only then stop counting the batch in flight.
fn run_due(due: Vec<Retired>) {
    let n = due.len();
    for obj in due {
        obj.reclaim();
    }
    flush_local();
    IN_FLIGHT.fetch_sub(n, Ordering::AcqRel);
}

/// Is every handed-over callback run? (Pending list empty and no batch in
/// flight, read together under the pending lock.)
fn all_run() -> bool {
    let p = pending();
    p.is_empty() && IN_FLIGHT.load(Ordering::Acquire) == 0
}

/// Move this thread's queue to the pending list.
fn flush_local() {
    let batch = LOCAL.with(|l| core::mem::take(&mut *l.queue.borrow_mut()));
    if !batch.is_empty() {
        hand_over(batch);
    }
}

fn start_reclaimer() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        std::thread::Builder::new()
            .name("rcu-reclaim".into())
            .spawn(reclaimer)
            .expect("cannot start the RCU reclaimer thread");
    });
}

/// The reclaimer: run due destructors of handed-over queues (holding none
/// of the callers' locks; callbacks they queue come back through this
/// thread's own queue), and advance the epoch every millisecond while
/// anything waits for a grace period, including the queues of threads that
/// run their own callbacks (Linux's grace-period kthread).
fn reclaimer() {
    // Since when its ticks have found a slot without a promise (module
    // doc) and left the epoch alone.
    let mut unpromised_since: Option<Instant> = None;
    loop {
        rcu_offline();
        {
            let p = pending();
            let idle = p.is_empty() && OWN_WAITING.load(Ordering::Relaxed) == 0;
            let _ = WAKE
                .wait_timeout(
                    p,
                    std::time::Duration::from_millis(if idle { 50 } else { 1 }),
                )
                .unwrap_or_else(|e| e.into_inner());
        }
        // Linux's grace-period kthread waits for the CPUs' quiescent-state
        // reports and forces the laggards (an IPI) only after a few
        // jiffies: a tick that finds a task without a fresh ack (it is
        // descheduled, or inside a long section) waits for it up to
        // FORCE_AFTER before an advance pays the membarrier.
        if FENCE_FREE.load(Ordering::Relaxed) {
            fence(Ordering::SeqCst);
            if all_promised(claimed()) {
                unpromised_since = None;
            } else {
                let since = *unpromised_since.get_or_insert_with(Instant::now);
                if since.elapsed() < FORCE_AFTER {
                    run_due(take_due_at(EPOCH.now()));
                    continue;
                }
                unpromised_since = None;
            }
        }
        run_due(take_due());
    }
}

/// How long the reclaimer waits for a slot's promise before it forces the
/// advance with a `membarrier` (Linux: `jiffies_till_first_fqs`, a few
/// jiffies). A task descheduled for longer costs one barrier per this
/// period at most; `synchronize_rcu` and `rcu_barrier` never wait for it.
const FORCE_AFTER: std::time::Duration = std::time::Duration::from_millis(10);

/// The host implementation of [`Platform`].
pub struct HostPlatform {
    start: Instant,
    reader_mode: &'static str,
}

impl HostPlatform {
    /// The process-wide instance.
    pub fn global() -> &'static HostPlatform {
        static P: OnceLock<HostPlatform> = OnceLock::new();
        P.get_or_init(|| HostPlatform {
            start: Instant::now(),
            reader_mode: choose_reader_mode(),
        })
    }

    /// How readers order their slot store before their loads: `membarrier`
    /// (fence-free readers) or `fence (why)`.
    pub fn rcu_reader_mode(&self) -> &'static str {
        self.reader_mode
    }

    /// Current global epoch (tests and diagnostics).
    pub fn epoch() -> u64 {
        EPOCH.now()
    }
}

impl Platform for HostPlatform {
    /// Host mode's memory budget ([`super::budget`]): admits everything
    /// unless a budget is set.
    fn may_alloc(&self, bytes: usize) -> bool {
        super::budget::may_alloc(bytes)
    }

    #[inline]
    fn cpu_id(&self) -> usize {
        LOCAL.with(|l| l.slot)
    }

    fn cpu_count(&self) -> usize {
        HIGH_WATER.load(Ordering::Relaxed).max(1)
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    #[inline]
    fn rcu_read_lock(&self) {
        LOCAL.with(|l| {
            let n = l.nest.get();
            l.nest.set(n + 1);
            if n == 0 {
                if l.offline.get() {
                    l.come_online();
                }
                // Fence-free, the advancer's membarrier is our fence.
                EPOCH.enter(&SLOTS[l.slot], FENCE_FREE.load(Ordering::Relaxed));
            }
        })
    }

    #[inline]
    fn rcu_read_unlock(&self) {
        LOCAL.with(|l| {
            let n = l.nest.get();
            debug_assert!(n > 0, "rcu_read_unlock without rcu_read_lock");
            l.nest.set(n - 1);
            if n == 1 {
                SLOTS[l.slot].exit();
            }
        })
    }

    fn call_rcu(&self, obj: Retired) {
        let r = EPOCH.snap();
        let mut obj = Some(obj);
        let full = LOCAL
            .try_with(|l| {
                let mut q = l.queue.borrow_mut();
                if let Some(o) = obj.take() {
                    q.push_back((r, o));
                }
                if l.runs_own.get() {
                    drop(q);
                    l.set_waiting(true);
                    l.queue.borrow().len() >= OWN_LIMIT
                } else {
                    q.len() >= RECLAIM_AT
                }
            })
            .unwrap_or(false);
        if let Some(o) = obj {
            // This thread is exiting (its thread-locals are gone).
            hand_over([(r, o)]);
        } else if full {
            flush_local();
        }
    }

    fn synchronize_rcu(&self) {
        let nested = LOCAL.with(|l| l.nest.get());
        assert_eq!(nested, 0, "synchronize_rcu inside an RCU read-side section");
        flush_local();
        let target = EPOCH.snap() + 2;
        while try_advance() < target {
            std::thread::yield_now();
        }
        // Everything retired before the call is due now; destructors may
        // retire more, which the next grace period covers.
        run_due(take_due());
    }

    fn rcu_barrier(&self) {
        let nested = LOCAL.with(|l| l.nest.get());
        assert_eq!(nested, 0, "rcu_barrier inside an RCU read-side section");
        // Our own queue first; then help: advance, run what is due, and
        // wait out batches the reclaimer is running, until nothing is left.
        flush_local();
        while !all_run() {
            let _ = try_advance();
            run_due(take_due());
            std::thread::yield_now();
        }
    }

    fn rcu_quiescent_state(&self) {
        // Epoch-based RCU needs no quiescent-state reports; use the call to
        // push reclamation along, where that costs no syscall.
        if !FENCE_FREE.load(Ordering::Relaxed) {
            let _ = try_advance();
        }
        // The caller holds no lock of ours (the contract of the call): run
        // this thread's due callbacks, and from now on keep them here.
        let _ = LOCAL.try_with(|l| {
            l.runs_own.set(true);
            if l.nest.get() == 0 {
                l.run_own_due();
                l.ack();
            }
        });
    }
}

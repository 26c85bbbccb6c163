//! QSBR RCU and the kernel's implementation of `fs::platform::Platform`.
//!
//! Mental model: a grace period (GP) is numbered; starting one bumps the
//! `started` counter. A CPU reports a quiescent state (QS) by copying the
//! current `started` into its `qs_seen`, which it may only do while it is
//! outside any read-side section (nesting counter zero): from the LAPIC tick
//! when the interrupted code holds no RCU read lock, and at explicit points
//! (`rcu_quiescent_state`, `synchronize_rcu`, the idle loop). GP `g` is
//! complete once every online CPU has `qs_seen >= g`: each of them passed a
//! moment with no reader after `g` started, so no reader that could have
//! seen an object unpublished before `g` started is still running. That
//! machine (counters, reports, `advance`, and the orderings they rely on)
//! is [`fs::sync::qsbr`], where the loom models run it too; this module
//! adds the per-CPU callback queues, the tick and the platform.
//!
//! Readers only touch their own CPU's nesting counter (plain loads and stores
//! of a per-CPU atomic, ordered against the critical section by compiler
//! fences: the tick that reads it interrupts the same CPU).
//!
//! `call_rcu` queues the object on the calling CPU's callback queue tagged
//! with the GP it needs (`started + 1`). That GP is started at once if
//! none is in flight, else by whoever next completes the current one
//! (`advance`, which looks at every CPU's `requested`): callbacks batch up
//! behind one grace period and `call_rcu` makes no store to shared memory
//! except, once per grace period, starting it. Callbacks run
//! on their own CPU at explicit points once that GP is complete — never in
//! the tick: the tick only stores `qs_seen`, so it cannot deadlock against a
//! `call_rcu` it interrupted, and destructors (which free memory) never run
//! in interrupt context — and never in `call_rcu` either, whose caller may
//! hold dcache locks that a callback's `dput` takes, and whose grace-period
//! work (a fence, every CPU's lines, a locked store to `done`) would run
//! inside those locks. The queue lock is per CPU and uncontended.
//!
//! ## Callback memory: small segments, a spare reserve, back-pressure
//!
//! Linux's `call_rcu` never allocates: the `rcu_head` is embedded in the
//! object (`struct dentry` has one in `d_u`), so queueing cannot fail.
//! `kvfree_rcu` batches pointers into page-sized blocks and, when no block
//! can be had, falls back to that embedded head (or, for a headless
//! object, to a synchronous grace period where it may sleep). Our
//! [`Retired`] is two words with no embedded link, so the queue must hold
//! it somewhere. A single growable `VecDeque` per CPU needs one contiguous
//! block twice its size at every doubling — exactly when the dcache
//! shrinker, called because memory is short, retires thousands of
//! dentries (a 393,216-byte doubling failed that way in `stress=hostile`).
//!
//! So each CPU's queue is a list of fixed segments of [`SEG_CAP`]
//! callbacks (one 512-byte slab object each, like kvfree_rcu's blocks),
//! obtained with `try_reserve_exact`, never infallibly. A segment carries
//! the grace period its newest callback needs; callbacks only join the tail
//! segment and their targets never decrease, so a segment whose tag is
//! complete can be run as a whole (its callbacks are moved to the stack
//! and the segment recycled before they run, so the callbacks they queue
//! in turn find it). Drained segments are kept as per-CPU
//! spares (up to [`SPARES`]) and refilled at callback time only while the
//! heap is above its admission watermark. A new segment comes from the
//! allocator while memory is plentiful, else from the spares, else from the
//! upper half of the heap's reserve (which exists for allocations like
//! this one); the lower half stays for allocations that cannot fail.
//!
//! Back-pressure: [`room`] (`Platform::call_rcu_room`) makes sure the
//! calling CPU can queue `n` more callbacks without allocating, fallibly.
//! The fs asks it before the shrinker kills a dentry, and the kernel's
//! `may_alloc` asks it whenever the heap is below its watermark (a new
//! dentry is killed some day, perhaps by the LRU limit, which cannot say
//! no), so reclaim stops, and the allocating caller gets `ENOMEM`, when no
//! segment can be had. A `call_rcu` that
//! still finds no segment (a caller that did not ask, with the heap
//! exhausted) neither panics nor waits for a grace period (it may hold
//! locks or be inside a read section): it leaks the object, counted in
//! [`leaked`] and said once on the console. Leaking is safe; freeing
//! early is not.
//!
//! Touches: per-CPU RCU state, `crate::time` (clock), `crate::smp` (CPU
//! count), `crate::mm::allocator` (memory admission for the fs). Safe code
//! only.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use fs::platform::Platform;
use fs::sync::qsbr::{CpuGp, GracePeriods};
use fs::sync::rcu::Retired;

use crate::percpu::{per_cpu, PerCpu};

/// The grace-period counters (`fs::sync::qsbr`, where the loom models run
/// them too).
static GP: GracePeriods = GracePeriods::new();

/// Callbacks per segment: 32 two-word [`Retired`]s, one 512-byte slab
/// object (a slab refill of that class takes 32 KiB from talc, which a
/// nearly full, fragmented heap can still give; 2 KiB segments need 128 KiB).
pub const SEG_CAP: usize = 32;
/// Bytes of one segment's allocation.
const SEG_BYTES: usize = SEG_CAP * core::mem::size_of::<Retired>();
/// Empty segments each CPU keeps for when memory is short.
pub const SPARES: usize = 4;

/// Callbacks that found no segment and were leaked (see the module doc).
static LEAKED: AtomicU64 = AtomicU64::new(0);
/// Test hook: make every fresh segment allocation fail.
static FAIL_SEGMENTS: AtomicBool = AtomicBool::new(false);

/// Callbacks whose grace period is at most `gp` (the newest one's target).
struct Segment {
    gp: u64,
    items: VecDeque<Retired>,
}

/// One CPU's callbacks: segments oldest first, and spare empty segments.
struct Queue {
    segs: VecDeque<Segment>,
    spares: Vec<VecDeque<Retired>>,
    len: usize,
}

/// A fresh empty segment, or `None` if it would take the lower half of
/// the heap's reserve (kept for allocations that cannot fail,
/// [`crate::mm::allocator::may_alloc_from_reserve`]) or the allocator has
/// none.
fn new_segment() -> Option<VecDeque<Retired>> {
    if FAIL_SEGMENTS.load(Ordering::Relaxed)
        || !crate::mm::allocator::may_alloc_from_reserve(SEG_BYTES)
    {
        return None;
    }
    let mut v = VecDeque::new();
    v.try_reserve_exact(SEG_CAP).ok()?;
    Some(v)
}

/// Is the heap above its admission watermark for one more segment?
fn memory_plentiful() -> bool {
    crate::mm::allocator::may_alloc(SEG_BYTES)
}

impl Queue {
    /// Free slots that need no allocation: the tail's and the spares'.
    fn room(&self) -> usize {
        let tail = self
            .segs
            .back()
            .map_or(0, |s| SEG_CAP.saturating_sub(s.items.len()));
        tail + self.spares.len() * SEG_CAP
    }

    /// An empty segment: fresh while memory is plentiful, else a spare,
    /// else from the heap's reserve.
    fn take_segment(&mut self) -> Option<VecDeque<Retired>> {
        let plenty = memory_plentiful();
        if plenty {
            if let Some(s) = new_segment() {
                return Some(s);
            }
        }
        if let Some(s) = self.spares.pop() {
            return Some(s);
        }
        if plenty {
            None
        } else {
            new_segment()
        }
    }

    /// Keep an empty segment as a spare (or free it if there are enough).
    fn recycle(&mut self, seg: VecDeque<Retired>) {
        if self.spares.len() < SPARES && self.spares.try_reserve(1).is_ok() {
            self.spares.push(seg);
        }
    }

    /// Top the spares up to `want`, fallibly (recycling trims them back to
    /// [`SPARES`]). Returns whether the header list can also take them.
    fn fill_spares(&mut self, want: usize) -> bool {
        while self.spares.len() < want {
            if self.spares.try_reserve(1).is_err() {
                return false;
            }
            match new_segment() {
                Some(s) => self.spares.push(s),
                None => return false,
            }
        }
        self.segs.try_reserve(self.spares.len() + 1).is_ok()
    }

    /// Queue `obj` for grace period `target`; gives it back if no segment
    /// could be had.
    fn push(&mut self, target: u64, obj: Retired) -> Result<(), Retired> {
        if let Some(tail) = self.segs.back_mut() {
            if tail.items.len() < SEG_CAP {
                // Capacity is at least SEG_CAP: no allocation here.
                tail.gp = tail.gp.max(target);
                tail.items.push_back(obj);
                self.len += 1;
                return Ok(());
            }
        }
        let Some(mut items) = self.take_segment() else {
            return Err(obj);
        };
        if self.segs.try_reserve(1).is_err() {
            self.recycle(items);
            return Err(obj);
        }
        items.push_back(obj);
        self.segs.push_back(Segment { gp: target, items });
        self.len += 1;
        Ok(())
    }
}

struct RcuCpu {
    /// Nesting, quiescent states, requested grace periods.
    gp: CpuGp,
    /// Callbacks waiting for their grace period, in segments.
    callbacks: spin::Mutex<Queue>,
    /// Callbacks run on this CPU, counted as each batch starts: whoever
    /// sees a callback's effect (an acquire load of what it wrote) sees it
    /// counted. Counting after the batch left a window in which a callback
    /// had run but was not counted yet; on a slow CPU (an instruction-
    /// emulating KVM) `rcu_async_callbacks` fell into it ("cpu 1 did not
    /// run its own callbacks").
    reclaimed: AtomicU64,
    /// This CPU is inside `run_callbacks` (a callback that calls
    /// `call_rcu`, e.g. a dentry dropping its inode, must not recurse into
    /// another round: the outer loop keeps draining).
    in_callbacks: AtomicBool,
}

static CPUS: PerCpu<RcuCpu> = per_cpu!(RcuCpu {
    gp: CpuGp::new(),
    callbacks: spin::Mutex::new(Queue {
        segs: VecDeque::new(),
        spares: Vec::new(),
        len: 0,
    }),
    reclaimed: AtomicU64::new(0),
    in_callbacks: AtomicBool::new(false),
});

/// Let the calling CPU take part in grace periods (during its bring-up).
pub fn cpu_online() {
    GP.online(&CPUS.get().gp);
}

/// Enter a read-side section.
#[inline]
pub fn read_lock() {
    CPUS.get().gp.read_lock();
}

/// Leave a read-side section.
#[inline]
pub fn read_unlock() {
    CPUS.get().gp.read_unlock();
}

/// Read-side nesting depth of the calling CPU.
pub fn nesting() -> u32 {
    CPUS.get().gp.nesting()
}

/// Report a quiescent state if the calling CPU is outside any read-side
/// section. Cheap: no store when nothing changed.
#[inline]
fn report_qs() {
    GP.report_qs(&CPUS.get().gp);
}

/// Tick hook (interrupt context): quiescent state if no reader is active.
pub fn on_tick() {
    report_qs();
}

/// Try to complete grace periods, and start the next one if none is in
/// flight and some CPU's callbacks wait for it. Returns the highest complete
/// grace period.
fn advance() -> u64 {
    let n = crate::smp::cpu_count();
    GP.advance(|| CPUS.iter(n).map(|c| &c.gp))
}

/// Run the calling CPU's callbacks whose grace period is complete.
/// Returns how many ran.
pub fn run_callbacks() -> usize {
    let me = CPUS.get();
    if me.in_callbacks.swap(true, Ordering::Relaxed) {
        return 0;
    }
    let done = advance();
    let mut ran = 0;
    loop {
        // Take the oldest segment if it is due, then run it without the
        // lock (a callback may call_rcu: that joins the tail).
        let seg = crate::arch::interrupts::without(|| {
            let mut q = me.callbacks.lock();
            match q.segs.front() {
                Some(s) if s.gp <= done => {
                    let s = q.segs.pop_front();
                    q.len -= s.as_ref().map_or(0, |s| s.items.len());
                    s
                }
                _ => None,
            }
        });
        let Some(mut seg) = seg else { break };
        // Empty the segment onto the stack and give it back first: the
        // callbacks (a dentry dropping its parent and name) queue more,
        // and under memory pressure this segment may be the only one.
        let mut batch: [Option<Retired>; SEG_CAP] = [const { None }; SEG_CAP];
        let mut n = 0;
        for slot in batch.iter_mut() {
            *slot = seg.items.pop_front();
            n += u64::from(slot.is_some());
        }
        crate::arch::interrupts::without(|| me.callbacks.lock().recycle(seg.items));
        me.reclaimed.fetch_add(n, Ordering::Relaxed);
        for obj in batch.into_iter().flatten() {
            obj.reclaim();
            ran += 1;
        }
    }
    // Refill the reserve while memory is not short.
    if memory_plentiful() {
        crate::arch::interrupts::without(|| {
            let mut q = me.callbacks.lock();
            if q.spares.len() < SPARES {
                q.fill_spares(SPARES);
            }
        });
    }
    me.in_callbacks.store(false, Ordering::Relaxed);
    ran
}

/// Explicit quiescent state (outside read sections) plus callback processing.
pub fn quiescent_state() {
    report_qs();
    run_callbacks();
}

/// Queue `obj` to be reclaimed after a grace period. No grace-period work
/// and no callback here: the caller may hold dcache locks (`rculist`'s
/// remove runs under a dentry's and a bucket's lock, inside a `d_seq`
/// write section), and a callback may `dput`. The queue waits for the
/// CPU's next explicit quiescent state ([`quiescent_state`]: the
/// benchmark and stress loops every 64 operations, every wait, the idle
/// loop), as host mode's queues do and as Linux's wait for softirq or the
/// `rcuc` kthread; memory stays bounded by the segments' back-pressure
/// ([`room`]).
pub fn call_rcu(obj: Retired) {
    let me = CPUS.get();
    let target = GP.snap();
    let refused = crate::arch::interrupts::without(|| me.callbacks.lock().push(target, obj).err());
    if let Some(obj) = refused {
        leak(obj);
        return;
    }
    // Only one CPU per grace period writes the counters (no shared store
    // per call).
    GP.request(&me.gp, target);
}

/// No segment for `obj`: leak it (safe), count it, say so once.
#[cold]
fn leak(obj: Retired) {
    drop(obj);
    if LEAKED.fetch_add(1, Ordering::Relaxed) == 0 {
        crate::console::kprintln!(
            "rcu: no memory for a callback segment on cpu {}: leaking retired objects (rcu_leaked counts them)",
            crate::arch::cpu_id()
        );
    }
}

/// Make sure the calling CPU can queue `n` more callbacks without an
/// allocation (allocating spare segments fallibly if needed); `false` when
/// memory is too short. What `Platform::call_rcu_room` answers: the fs
/// shrinker and memory admission stop on `false` (back-pressure).
pub fn room(n: usize) -> bool {
    let me = CPUS.get();
    crate::arch::interrupts::without(|| {
        let mut q = me.callbacks.lock();
        let headers = q.spares.len() + 1;
        if q.room() >= n && q.segs.try_reserve(headers).is_ok() {
            return true;
        }
        let tail = q.room() - q.spares.len() * SEG_CAP;
        let want = n.saturating_sub(tail).div_ceil(SEG_CAP);
        q.fill_spares(want) && q.room() >= n
    })
}

/// Callbacks leaked because no segment could be had, since boot.
pub fn leaked() -> u64 {
    LEAKED.load(Ordering::Relaxed)
}

/// Test hook: make fresh segment allocations fail (`true`) or not.
pub fn fail_segments(on: bool) {
    FAIL_SEGMENTS.store(on, Ordering::Relaxed);
}

/// (segments queued, spare segments) on the calling CPU.
pub fn segments() -> (usize, usize) {
    let me = CPUS.get();
    crate::arch::interrupts::without(|| {
        let q = me.callbacks.lock();
        (q.segs.len(), q.spares.len())
    })
}

/// Wait for a full grace period, then run this CPU's due callbacks. Must be
/// called outside any read-side section, with interrupts enabled (other
/// CPUs' ticks are what completes the grace period).
pub fn synchronize_rcu() {
    assert_eq!(
        nesting(),
        0,
        "synchronize_rcu inside an RCU read-side section"
    );
    let target = GP.start();
    loop {
        report_qs();
        if advance() >= target {
            break;
        }
        crate::arch::processor::pause();
    }
    run_callbacks();
}

/// (grace periods started, grace periods complete).
pub fn gp_state() -> (u64, u64) {
    GP.state()
}

/// Callbacks still queued on `cpu`.
pub fn pending(cpu: usize) -> usize {
    crate::arch::interrupts::without(|| CPUS[cpu].callbacks.lock().len)
}

/// Callbacks run so far on `cpu`.
pub fn reclaimed(cpu: usize) -> u64 {
    CPUS[cpu].reclaimed.load(Ordering::Relaxed)
}

/// The kernel's `fs::platform::Platform`.
pub struct KernelPlatform;

/// The instance installed with `fs::platform::install` at boot.
pub static PLATFORM: KernelPlatform = KernelPlatform;

impl Platform for KernelPlatform {
    fn cpu_id(&self) -> usize {
        crate::arch::cpu_id()
    }

    fn cpu_count(&self) -> usize {
        crate::smp::cpu_count()
    }

    fn now_ns(&self) -> u64 {
        crate::time::now_ns()
    }

    fn rcu_read_lock(&self) {
        read_lock()
    }

    fn rcu_read_unlock(&self) {
        read_unlock()
    }

    fn call_rcu(&self, obj: Retired) {
        call_rcu(obj)
    }

    fn synchronize_rcu(&self) {
        synchronize_rcu()
    }

    fn call_rcu_room(&self, n: usize) -> bool {
        room(n)
    }

    fn rcu_quiescent_state(&self) {
        quiescent_state()
    }

    fn halt_while(&self, still: &dyn Fn() -> bool) {
        crate::arch::processor::halt_while(still)
    }

    fn halts(&self) -> bool {
        true
    }

    fn kick(&self, cpu: usize) {
        crate::arch::smp::pv_kick(cpu)
    }

    /// The heap's answer; below the watermark (where a yes comes from free
    /// slab objects) also room for the callbacks the new object's kill
    /// will queue, so that the LRU limit's kill, which cannot say no,
    /// never finds the callback queue without a segment.
    fn may_alloc(&self, bytes: usize) -> bool {
        crate::mm::allocator::may_alloc(bytes)
            && (memory_plentiful() || room(fs::mem::RCU_PER_KILL))
    }
}

/// Install [`PLATFORM`] as the fs crate's platform.
pub fn install() -> bool {
    fs::platform::install(&PLATFORM)
}

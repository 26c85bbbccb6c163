//! Memory admission: may the fs allocate now, or must the caller get
//! `ENOMEM`?
//!
//! Stable Rust cannot ask `Arc::new` to fail: when the global allocator
//! returns null, the program aborts. So, like Linux's page-allocator
//! watermarks, the fs asks *before* each allocation on a path that can
//! return an error — a dentry and its long name (`d_alloc`), an inode
//! (file, directory or symlink creation), the growth of a tmpfs file — and
//! answers `ENOMEM` while there is still memory left. The host decides
//! ([`Platform::may_alloc`]): the kernel refuses once the free heap would
//! fall under a reserve kept for the allocations that cannot fail (the
//! console, `Vec`s on other paths, the network stack); the host platform
//! always admits.
//!
//! A refusal first runs the registered shrinker (the dcache's, on a batch
//! of unused dentries: Linux's direct reclaim) and asks again. The dcache
//! registers it when it is created ([`register_shrinker`]), as Linux's
//! caches register shrinkers, so this module sits below the dcache. What the shrinker frees may
//! only come back after an RCU grace period, so the second answer can still
//! be no; then the caller gets `ENOMEM`, counted in
//! [`crate::stats::Counters::enomem`]. Reclaim itself needs memory: every
//! dentry it kills queues RCU callbacks. So the shrinker kills a dentry only
//! while the platform's callback queue has room for it
//! ([`Platform::call_rcu_room`], [`RCU_PER_KILL`]), and under pressure an
//! allocation is admitted only if that room exists too (the dentry it makes
//! will be killed some day, perhaps by the LRU limit, which cannot say no):
//! when the queue cannot grow, the answer is `ENOMEM`, never a panic. Fault injection ([`crate::fault`])
//! refuses before anyone is asked, like Linux's `failslab`.
//!
//! Every step is cheap when memory is plentiful: a relaxed load (fault
//! injection off) and the platform's answer (two relaxed loads in the
//! kernel). Lookups that allocate nothing (the noalloc design) never come
//! here.
//!
//! Touches: the platform, the registered shrinker (refusals only), counters.

use crate::errno::{Errno, KResult};
use crate::platform;
#[cfg(doc)]
use crate::platform::Platform;
use crate::stats::{self, Event};

/// Unused dentries the shrinker is asked to reclaim per refusal.
pub const SHRINK_BATCH: usize = 1024;

/// RCU callbacks one dentry kill may queue, counted generously: its hash
/// chain reference, its inode, its name, and a parent killed after it.
pub const RCU_PER_KILL: usize = 8;

/// The reclaim hook: frees up to `n` unused objects and returns how many
/// it took (set once, by the dcache when it is created).
static SHRINKER: spin::Once<fn(usize) -> usize> = spin::Once::new();

/// Register the reclaim a refusal runs before asking again (Linux
/// `register_shrinker`). The first registration wins.
pub fn register_shrinker(shrink: fn(usize) -> usize) {
    SHRINKER.call_once(|| shrink);
}

/// Bytes of one `Arc<T>` allocation: the value plus the two counts in
/// front of it, padded to the value's alignment (a line-aligned dentry,
/// inode or superblock gets its counts a line of their own).
pub const fn arc_size<T>() -> usize {
    let counts = 2 * core::mem::size_of::<usize>();
    core::mem::size_of::<T>() + counts.next_multiple_of(core::mem::align_of::<T>())
}

/// May the fs allocate `bytes` (one allocation) now? `Err(ENOMEM)` if
/// fault injection or the platform says no, even after reclaim.
#[inline]
pub fn admit(bytes: usize) -> KResult<()> {
    if crate::fault::should_fail() {
        crate::trace!("  mem: allocation of {bytes} bytes refused (fault injection) -> ENOMEM");
        return Err(refused());
    }
    if platform::get().may_alloc(bytes) {
        return Ok(());
    }
    admit_after_reclaim(bytes)
}

/// The platform refused: reclaim unused dentries and ask once more.
#[cold]
fn admit_after_reclaim(bytes: usize) -> KResult<()> {
    // No shrinker yet means no dcache yet: nothing unused to reclaim.
    let freed = SHRINKER.get().map_or(0, |shrink| shrink(SHRINK_BATCH));
    let p = platform::get();
    if freed > 0 && p.may_alloc(bytes) && p.call_rcu_room(RCU_PER_KILL) {
        crate::trace!("  mem: {bytes} bytes admitted after reclaiming {freed} dentries");
        return Ok(());
    }
    crate::trace!(
        "  mem: allocation of {bytes} bytes refused (reclaimed {freed} dentries) -> ENOMEM"
    );
    Err(refused())
}

#[cold]
fn refused() -> Errno {
    stats::inc(Event::Enomem);
    Errno::ENOMEM
}

#[cfg(test)]
mod tests {
    use super::arc_size;

    /// An `Arc`'s two counts come first and the value at its alignment
    /// after them (`ArcInner` is `repr(C)`), so a line-aligned value
    /// costs a whole line of counts.
    #[test]
    fn arc_size_counts_the_padding_before_an_aligned_value() {
        #[repr(align(64))]
        struct Line(#[allow(dead_code)] [u8; 64]);
        #[repr(align(128))]
        struct Two(#[allow(dead_code)] [u8; 128]);
        assert_eq!(arc_size::<u64>(), 24);
        assert_eq!(arc_size::<Line>(), 128);
        assert_eq!(arc_size::<Two>(), 256);
        assert_eq!(arc_size::<crate::dcache::Dentry>(), 320);
        assert_eq!(arc_size::<crate::inode::Inode>(), 256);
    }
}

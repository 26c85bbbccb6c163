//! `stress=oom`: per design, on one CPU, create files of
//! [`OOM_FILE_BYTES`] in a fresh tmpfs until memory admission refuses
//! (the heap's free bytes reach its reserve, `mm::heap::reserve`), then
//! [`OOM_MORE`] more attempts. Checked: every refusal is ENOMEM (never a
//! panic, never another error); every file created before reads back
//! whole, the refused ones are absent or empty, missing names are still
//! ENOENT (the designs that allocate to answer a miss may answer ENOMEM
//! instead: counted as `lookup_enomem`; noalloc never may); after
//! unlinking everything and a grace period the file data is back in the
//! heap and as many files can be created again; live dentries return to
//! their baseline. Prints one `stress=oom design=D ...` line of figures
//! per design.
//!
//! Touches: the fs crate (a fresh tmpfs per design), `mm::heap` (figures and
//! its reserve), RCU, the console. Safe code only.

use bench::params::Design;
use fs::vfs::{FileType, OpenFlags, Vfs};
use fs::Errno;

use super::{designs, drain, scratch_tmpfs, settle, show};
use crate::console::kprintln;
use crate::sync::rcu;

/// `stress=oom`: bytes written to each file.
pub const OOM_FILE_BYTES: usize = 4096;
/// `stress=oom`: attempts after the first ENOMEM.
pub const OOM_MORE: usize = 256;
/// `stress=oom`: the first ENOMEM must come with at most this much more
/// than the reserve free (a slab refill of the largest class, rounded up):
/// admission lets the fs use the heap up to its watermark.
const OOM_NEAR_RESERVE: usize = 256 << 10;
/// `stress=oom`: missing names looked up while memory is short.
const OOM_MISSES: usize = 256;

/// `/o/fNNNNNNN` (`f` or another one-letter prefix) into `buf`; returns the
/// length.
fn oom_name(buf: &mut [u8; 16], prefix: u8, mut i: usize) -> usize {
    buf[..4].copy_from_slice(b"/o/f");
    buf[3] = prefix;
    for k in (4..11).rev() {
        buf[k] = b'0' + (i % 10) as u8;
        i /= 10;
    }
    11
}

/// What one fill of `/o` did.
struct Fill {
    /// Files created and written in full before the first ENOMEM.
    created: usize,
    /// Attempts answered ENOMEM (the first one included).
    enomem: u64,
    /// Attempts answered anything else: wrong.
    wrong: u64,
}

/// Create and write files `/o/{prefix}N` until the first ENOMEM, stopping
/// early after `max` files.
fn fill(vfs: &Vfs, prefix: u8, max: usize, data: &[u8]) -> Fill {
    let mut f = Fill {
        created: 0,
        enomem: 0,
        wrong: 0,
    };
    let mut buf = [0u8; 16];
    while f.created < max {
        let len = oom_name(&mut buf, prefix, f.created);
        match vfs.write_file(&buf[..len], data) {
            Ok(()) => f.created += 1,
            Err(Errno::ENOMEM) => {
                f.enomem += 1;
                break;
            }
            Err(e) => {
                f.wrong += 1;
                kprintln!("stress=oom: {}: {e}", show(&buf[..len]));
                break;
            }
        }
        if f.created.is_multiple_of(64) {
            rcu::quiescent_state();
        }
    }
    f
}

/// Unlink `/o/{prefix}0 .. /o/{prefix}{n-1}` (absent ones included: a
/// refused create leaves nothing). Returns the answers other than done
/// or ENOENT.
fn unlink_all(vfs: &Vfs, prefix: u8, n: usize) -> u64 {
    let mut buf = [0u8; 16];
    let mut wrong = 0;
    for i in 0..n {
        let len = oom_name(&mut buf, prefix, i);
        if !matches!(vfs.unlink(&buf[..len]), Ok(()) | Err(Errno::ENOENT)) {
            wrong += 1;
        }
        if i.is_multiple_of(64) {
            rcu::quiescent_state();
        }
    }
    wrong
}

/// [`OOM_MORE`] more creates after the first ENOMEM, files
/// `/o/f{tail}..`: each may squeeze in (`created`) or be refused; nothing
/// else.
fn keep_asking(vfs: &Vfs, tail: usize, data: &[u8]) -> Fill {
    let mut f = Fill {
        created: 0,
        enomem: 0,
        wrong: 0,
    };
    let mut buf = [0u8; 16];
    for i in tail..tail + OOM_MORE {
        let len = oom_name(&mut buf, b'f', i);
        match vfs.write_file(&buf[..len], data) {
            Ok(()) => f.created += 1,
            Err(Errno::ENOMEM) => f.enomem += 1,
            Err(e) => {
                f.wrong += 1;
                kprintln!("stress=oom: late {}: {e}", show(&buf[..len]));
            }
        }
    }
    f
}

/// Lookups while memory is short: the `created` files (and any that
/// squeezed in from `tail` on) are whole, a refused file is absent or
/// empty (its create passed, its write was refused), missing names are
/// ENOENT — or ENOMEM for a design that allocates to answer a miss.
/// Returns (lookups answered ENOMEM, wrong answers).
fn lookups_when_short(
    vfs: &Vfs,
    d: Design,
    created: usize,
    tail: usize,
    data: &[u8],
) -> (u64, u64) {
    let mut buf = [0u8; 16];
    let mut read = [0u8; OOM_FILE_BYTES];
    let miss_allocates = d.imp().tmpfs_misses().allocates();
    let (mut lookup_enomem, mut wrong) = (0u64, 0u64);
    for i in 0..tail + OOM_MORE {
        let len = oom_name(&mut buf, b'f', i);
        let ok = match vfs.stat(&buf[..len]) {
            // Created before the first ENOMEM, or squeezed in later:
            // whole (reading allocates nothing).
            Ok(st) if st.kind == FileType::File && st.size == OOM_FILE_BYTES as u64 => {
                (i < created || i >= tail)
                    && vfs
                        .open(&buf[..len], OpenFlags::RDONLY, 0)
                        .and_then(|f| f.read(&mut read))
                        .is_ok_and(|n| n == OOM_FILE_BYTES && read[..] == *data)
            }
            Ok(st) if st.kind == FileType::File && st.size == 0 => i >= created,
            Err(Errno::ENOENT) => i >= created,
            Err(Errno::ENOMEM) if miss_allocates && i >= created => {
                lookup_enomem += 1;
                true
            }
            _ => false,
        };
        if !ok && wrong < 3 {
            kprintln!(
                "stress=oom: after ENOMEM, {}: wrong answer",
                show(&buf[..len])
            );
        }
        wrong += !ok as u64;
    }
    for i in 0..OOM_MISSES {
        let len = oom_name(&mut buf, b'm', i);
        match vfs.stat(&buf[..len]) {
            Err(Errno::ENOENT) => {}
            Err(Errno::ENOMEM) if miss_allocates => lookup_enomem += 1,
            r => {
                wrong += 1;
                kprintln!("stress=oom: miss {}: {r:?}", show(&buf[..len]));
            }
        }
    }
    (lookup_enomem, wrong)
}

/// `stress=oom` for one design: true when it kept its promises.
fn oom_design(d: Design) -> bool {
    use crate::mm::heap;
    let base = drain(2000);
    let free_start = heap::free();
    let Some(vfs) = scratch_tmpfs("oom", d, b"/o") else {
        return false;
    };
    let c0 = fs::stats::snapshot();
    let data = [0x5au8; OOM_FILE_BYTES];
    let first = fill(&vfs, b'f', usize::MAX, &data);
    let free_at_enomem = heap::free();
    let (mut enomem, mut wrong) = (first.enomem, first.wrong);
    // Keep asking: a create or a write may still squeeze in (memory the
    // shrinker or a grace period gave back), or be refused; nothing else.
    let tail = first.created + 1;
    let more = keep_asking(&vfs, tail, &data);
    enomem += more.enomem;
    wrong += more.wrong;
    let late = more.created as u64;
    let (lookup_enomem, lookup_wrong) = lookups_when_short(&vfs, d, first.created, tail, &data);
    wrong += lookup_wrong;
    // Give it all back, then fill again: the data returned to the heap.
    wrong += unlink_all(&vfs, b'f', tail + OOM_MORE);
    drain(2000);
    let free_after_unlink = heap::free();
    let second = fill(&vfs, b'g', first.created, &data);
    wrong += second.wrong + unlink_all(&vfs, b'g', second.created + 1);
    let c = fs::stats::snapshot().delta(&c0);
    drop(vfs);
    let live = settle(base, 3000);
    let free_end = heap::free();
    let (_, heap_size, _) = heap::stats();
    let data_bytes = first.created * OOM_FILE_BYTES;
    let returned = free_after_unlink.saturating_sub(free_at_enomem);
    kprintln!(
        "stress=oom design={d} file_bytes={OOM_FILE_BYTES} files_before_enomem={} enomem={enomem} late_ok={late} lookup_enomem={lookup_enomem} wrong={wrong} fs_enomem={} shrunk={} refill={} of {} heap_kib={} reserve_kib={} free_kib: start={} at_enomem={} after_unlink={} end={} dentries_live={base}->{live}",
        first.created,
        c.enomem,
        c.shrunk,
        second.created,
        first.created,
        heap_size >> 10,
        heap::reserve() >> 10,
        free_start >> 10,
        free_at_enomem >> 10,
        free_after_unlink >> 10,
        free_end >> 10,
    );
    // The data came back (90%: the heap also serves RCU queues and the
    // like meanwhile), and 90% of the files could be created again.
    let ok = wrong == 0
        && first.created > 0
        && enomem >= 1
        && c.enomem >= enomem
        && free_at_enomem < heap::reserve() + OOM_NEAR_RESERVE
        && returned >= data_bytes / 10 * 9
        && second.created >= first.created / 10 * 9
        && live == base;
    if !ok {
        kprintln!(
            "stress=oom design={d}: FAILED (wrong={wrong}, ENOMEM seen {enomem} / counted {}, data {data_bytes} B, returned {returned} B, refill {} of {}, dentries {base}->{live})",
            c.enomem,
            second.created,
            first.created
        );
    }
    ok
}

/// `stress=oom`: true when every design kept its promises.
pub fn oom_stress(only: Option<Design>) -> bool {
    let mut ok = true;
    for d in designs(only) {
        ok &= oom_design(d);
    }
    ok
}

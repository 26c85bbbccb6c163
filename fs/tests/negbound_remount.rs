//! negbound's per-directory tally across a remount to another design and
//! back: a negative counted under negbound and killed under the design the
//! mount has now leaves the tally all the same, so the bound still means
//! "negatives cached here" when negbound comes back.
//!
//! Its own test binary: a remount shrinks every unused dentry of the
//! process (`dcache::shrink_all`), which would race with other tests'
//! cached negatives. Touches only the fs crate's public API.

use std::sync::atomic::Ordering;

use fs::dcache::{self, design::NEGBOUND_LIMIT};
use fs::errno::Errno;
use fs::namei::{self, LookupFlags};
use fs::vfs::Vfs;

/// The directory at `path`, its tally (negbound's design word 0) and the
/// names hashed under it.
fn look(v: &Vfs, path: &[u8]) -> (u64, Vec<Vec<u8>>) {
    let lf = LookupFlags {
        follow: true,
        directory: true,
    };
    let (_m, d) = namei::resolve(v.mnt_ns(), path, lf).unwrap();
    let names = dcache::all_children(&d)
        .into_iter()
        .filter(|c| c.is_hashed())
        .map(|c| c.name.to_vec())
        .collect();
    (d.design_state.words[0].load(Ordering::Relaxed), names)
}

#[test]
fn a_remount_away_from_negbound_and_back_keeps_the_tally_true() {
    let v = Vfs::new_tmpfs("enoent=negbound").unwrap();
    v.mkdir(b"/d", 0o755).unwrap();
    for i in 0..NEGBOUND_LIMIT {
        let p = format!("/d/n{i}");
        assert_eq!(v.stat(p.as_bytes()).err(), Some(Errno::ENOENT));
    }
    assert_eq!(look(&v, b"/d").0, NEGBOUND_LIMIT, "the bound is reached");

    // Away: the remount drops every unused dentry, the counted negatives
    // of /d among them, under negative's care.
    v.remount(b"/", "enoent=negative").unwrap();
    let (tally, names) = look(&v, b"/d");
    assert!(names.is_empty(), "the remount dropped them: {names:?}");
    assert_eq!(
        tally, 0,
        "negatives killed under another design are forgotten"
    );

    // And back: a miss in /d is cached again.
    v.remount(b"/", "enoent=negbound").unwrap();
    assert_eq!(v.stat(b"/d/again").err(), Some(Errno::ENOENT));
    let (tally, names) = look(&v, b"/d");
    assert_eq!(
        names,
        vec![b"again".to_vec()],
        "negbound caches a miss in /d"
    );
    assert_eq!(tally, 1);
}

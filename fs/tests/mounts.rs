//! Many mounts (issue #13 item 5): mounts are indexed by mountpoint (a
//! mount hash, as Linux's), a stack of mounts on one directory is crossed
//! in one step, RCU-walk crosses mounts without a lock or a fallback, and a
//! namespace holds at most `fs.mount-max` (100,000) mounts: one more is
//! ENOSPC.
//!
//! Before the hash, N × `mount enoent=noalloc /m` took 0.5 s (N = 1000),
//! 1.2 s (2000), 26 s (4000) and did not finish for 100,000; the counts
//! here finish in about a second.
//!
//! The counters are global to the process, so the tests of this file run
//! one at a time (`SERIAL`). Touches only the fs crate's public API.

use std::sync::Mutex;
use std::time::Instant;

use fs::errno::Errno;
use fs::mount::MOUNT_MAX;
use fs::stats;
use fs::vfs::Vfs;

mod turns;

static SERIAL: Mutex<()> = Mutex::new(());

/// A test's turn; it ends with the test's RCU callbacks run ([`turns`]):
/// the 100,000-mount namespace's last dentries must not be freed inside
/// the other test's lock-free window.
fn serial() -> turns::Turn {
    turns::take(&SERIAL)
}

#[test]
fn stacked_mounts_hide_each_other_and_cross_lock_free() {
    let _s = serial();
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/m", 0o755).unwrap();
    v.write_file(b"/outside", b"o").unwrap();
    let n = 4000;
    let t = Instant::now();
    for i in 0..n {
        v.mount("tmpfs", b"/m", "enoent=noalloc").unwrap();
        // Each new mount starts empty: the previous level is hidden.
        if i > 0 {
            let prev = format!("/m/level{}", i - 1);
            assert_eq!(v.stat(prev.as_bytes()), Err(Errno::ENOENT), "{prev}");
        }
        v.write_file(format!("/m/level{i}").as_bytes(), b"x")
            .unwrap();
    }
    println!(
        "mounts: {n} stacked on /m in {:.3} s",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(v.mount_count(), n + 1);
    assert_eq!(v.stat(b"/m/level3999").unwrap().size, 1);
    // `..` from the top of the stack leaves the whole stack.
    assert_eq!(v.stat(b"/m/../outside").unwrap().size, 1);
    // A mount on a directory inside the top one is its own place.
    v.mkdir(b"/m/sub", 0o755).unwrap();
    v.mount("tmpfs", b"/m/sub", "enoent=negative").unwrap();
    v.write_file(b"/m/sub/f", b"yz").unwrap();
    assert_eq!(v.stat(b"/m/sub/f").unwrap().size, 2);
    assert_eq!(v.stat(b"/m/level3999").unwrap().size, 1);

    // A missing name behind the 4000-mount stack: answered in RCU-walk,
    // with no lock and no fallback to ref-walk (noalloc design on top).
    assert_eq!(v.stat(b"/m/missing"), Err(Errno::ENOENT));
    let walks = 1000;
    // The counters are global: let the RCU callbacks of the setup above
    // (dentry frees, which take locks) finish before the window opens.
    fs::sync::rcu::rcu_barrier();
    let before = stats::snapshot();
    for _ in 0..walks {
        assert_eq!(v.stat(b"/m/missing"), Err(Errno::ENOENT));
    }
    let d = stats::snapshot().delta(&before);
    assert_eq!(d.lookups, walks, "{d:?}");
    assert_eq!(d.rcu_walks, walks, "every walk stayed in RCU mode: {d:?}");
    assert_eq!(d.fallbacks, 0, "{d:?}");
    assert_eq!(d.locks, 0, "crossing the mounts took a lock: {d:?}");
}

#[test]
fn mount_max_is_enospc() {
    let _s = serial();
    assert_eq!(MOUNT_MAX, 100_000, "Linux's default fs.mount-max");
    // The real limit, reached the way the reproducer does.
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/m", 0o755).unwrap();
    let t = Instant::now();
    for i in 1..MOUNT_MAX {
        if let Err(e) = v.mount("tmpfs", b"/m", "enoent=noalloc") {
            panic!("mount {i} of {MOUNT_MAX}: {e:?}");
        }
    }
    println!(
        "mounts: {} stacked on /m in {:.3} s",
        MOUNT_MAX - 1,
        t.elapsed().as_secs_f64()
    );
    assert_eq!(v.mount_count(), MOUNT_MAX, "the root counts");
    assert_eq!(
        v.mount("tmpfs", b"/m", "enoent=noalloc"),
        Err(Errno::ENOSPC)
    );
    assert_eq!(v.mount_count(), MOUNT_MAX);
    // The refused mount left nothing behind: the top is still usable.
    v.write_file(b"/m/f", b"1").unwrap();
    assert_eq!(v.stat(b"/m/f").unwrap().size, 1);
    drop(v);

    // A lower sysctl: the limit moves; raising it lets mounts in again.
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/a", 0o755).unwrap();
    v.mkdir(b"/b", 0o755).unwrap();
    v.set_mount_max(2);
    v.mount("tmpfs", b"/a", "").unwrap();
    assert_eq!(v.mount("tmpfs", b"/b", ""), Err(Errno::ENOSPC));
    v.set_mount_max(3);
    v.mount("tmpfs", b"/b", "").unwrap();
    assert_eq!(v.mount_count(), 3);
}

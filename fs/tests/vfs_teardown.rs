//! Dropping a namespace frees its whole tree. Alone in its own test binary
//! (one process, one test), so the process-wide counters are exact.

use fs::stats;
use fs::vfs::Vfs;

#[test]
fn dropping_a_namespace_frees_every_dentry() {
    let before = stats::snapshot();
    {
        let v = Vfs::new_tmpfs("enoent=negative").unwrap();
        v.mkdir(b"/a", 0o755).unwrap();
        for i in 0..100 {
            v.write_file(format!("/a/f{i}").as_bytes(), b"x").unwrap();
            assert!(v.stat(format!("/a/missing{i}").as_bytes()).is_err());
        }
        v.symlink(b"/a/f1", b"/l").unwrap();
        v.rename(b"/a/f2", b"/f2").unwrap();
        v.unlink(b"/a/f3").unwrap();
        v.mount("tmpfs", b"/a", "enoent=transient").unwrap();
        v.mkdir(b"/a/inner", 0o755).unwrap();
        assert!(v.stat(b"/a/inner/nope").is_err());
        let d = stats::snapshot().delta(&before);
        assert!(d.dentry_alloc >= 205, "{d:?}");
        assert_eq!(
            d.negative_created - d.negative_destroyed,
            100,
            "negatives kept: {d:?}"
        );
    }
    let mut d = stats::snapshot().delta(&before);
    for _ in 0..200 {
        fs::sync::rcu::synchronize_rcu();
        d = stats::snapshot().delta(&before);
        if d.dentry_free == d.dentry_alloc {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(d.dentry_free, d.dentry_alloc, "leaked dentries: {d:?}");
    assert_eq!(d.negative_created, d.negative_destroyed, "{d:?}");
}

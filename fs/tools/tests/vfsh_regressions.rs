//! Regression tests for problems the vfsh tests found that a script or the
//! differential test cannot pin down on their own (they need more than one
//! shell in a process, or a time limit).
//!
//! Touches: global dcache state (shells share the process's dcache, RCU and
//! counters); one helper thread per check, to apply a time limit. One test
//! function only: a concurrent test thread would change the RCU timing.

use std::sync::mpsc;
use std::time::Duration;

use fstools::shell::Shell;

/// Run `f` on its own thread; fail if it does not finish within `limit`
/// (a hung thread is left behind: the test binary ends anyway).
fn within(limit: Duration, what: &str, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(limit) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: still running after {limit:?} (hang)")
        }
    }
}

/// Found by the differential test: a remount shrinks the dcache; killing a
/// dentry queues an RCU callback; the host `call_rcu` runs due callbacks
/// inline once its queue is full, and one of them drops the mount table of
/// an earlier, dropped namespace, whose `dput` spins on a dentry lock the
/// shrinker already holds.
#[test]
fn remount_after_an_earlier_namespace_with_a_mount_does_not_hang() {
    within(Duration::from_secs(20), "remount", || {
        let mut a = Shell::new("enoent=negative");
        assert_eq!(a.exec("mkdir /m"), ["ok"]);
        assert_eq!(a.exec("mount enoent=negative /m"), ["ok"]);
        for i in 0..300 {
            assert_eq!(a.exec(&format!("stat /m/x{i}")), ["err ENOENT"]);
        }
        drop(a);
        let mut b = Shell::new("enoent=negative");
        for i in 0..300 {
            assert_eq!(b.exec(&format!("stat /y{i}")), ["err ENOENT"]);
        }
        assert_eq!(b.exec("mount enoent=noalloc"), ["ok"]);
        assert_eq!(b.exec("stat /y1"), ["err ENOENT"]);
    });
    namespaces_in_turn_stay_independent();
}

/// Many namespaces one after another, each with mounts, negative entries
/// and design switches, must neither hang nor leak answers into each other.
/// (Called from the test above, after it: a second test thread running at
/// the same time changes the RCU timing and hides that test's hang.)
fn namespaces_in_turn_stay_independent() {
    within(Duration::from_secs(60), "namespaces in turn", || {
        let designs: Vec<&str> = fs::dcache::design::DESIGNS
            .iter()
            .map(|d| d.name())
            .collect();
        let n = designs.len();
        for round in 0..30.max(2 * n) {
            let design = designs[round % n];
            let mut sh = Shell::new(&format!("enoent={design}"));
            assert_eq!(sh.exec("ls /"), ["ok"], "round {round}: not empty");
            assert_eq!(sh.exec("mkdir /m"), ["ok"]);
            assert_eq!(sh.exec("mount enoent=noalloc /m"), ["ok"]);
            for i in 0..50 {
                assert_eq!(sh.exec(&format!("stat /m/n{i}")), ["err ENOENT"]);
                assert_eq!(sh.exec(&format!("stat /n{i}")), ["err ENOENT"]);
            }
            assert_eq!(sh.exec(&format!("write /m/f{round} x")), ["ok"]);
            let next = designs[(round + 1) % n];
            assert_eq!(sh.exec(&format!("mount enoent={next}")), ["ok"]);
            assert_eq!(sh.exec("ls /m"), [format!("ok f{round}")]);
        }
        fs::dcache::design::say_ran(
            "vfsh_regressions::namespaces_in_turn_stay_independent",
            &designs,
        );
    });
}

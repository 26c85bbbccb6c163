//! The Linux patch check: every series under `linux/patches/REL/` (6.12, and
//! 7.3 where it exists) applies with `git am` to that release's pristine tree
//! (Debian's `linux-source-REL`, fetched and unpacked once under build/) and
//! every C file it touches compiles with `linux/config/REL-guest.config`
//! (`linux/check-series.sh`, once per tree).
//! Skips where the source package or the kernel build tools cannot be had (a
//! failure under `REQUIRE_FIXTURES=1`). A few minutes the first time (the
//! object tree is prepared), seconds after.

use std::process::Command;

const FILE: &str = "linux_patches";

#[test]
fn every_series_applies_and_compiles() {
    for tool in [
        "make", "gcc", "flex", "bison", "bc", "ccache", "git", "flock",
    ] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return qemu::fixtures::skip(
                FILE,
                "the kernel build tools",
                format!("{tool} is missing (make setup)"),
            );
        }
    }
    let build_dir = qemu::linuxref::default_build_dir();
    let root = qemu::runner::workspace_root();
    // Each release that has series here, against its own pristine tree.
    for release in qemu::linuxref::Release::PATCHED {
        let dir = root.join(qemu::linuxref::patches_dir(release));
        if !dir.is_dir() {
            continue;
        }
        let tree = match qemu::linuxref::ensure_linux_source(&build_dir, release) {
            Ok(t) => t,
            Err(why) => return qemu::fixtures::skip(FILE, &release.source_package(), why),
        };
        check_release(&tree, &build_dir, &dir);
    }
}

/// `linux/check-series.sh TREE BUILD_DIR` passes and names every series of
/// `dir` (the release's `linux/patches/REL/`).
fn check_release(tree: &std::path::Path, build_dir: &std::path::Path, dir: &std::path::Path) {
    let root = qemu::runner::workspace_root();
    let out = Command::new("bash")
        .arg(root.join("linux/check-series.sh"))
        .arg(tree)
        .arg(build_dir)
        .output()
        .expect("running linux/check-series.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "check-series failed on {}:\n{stdout}\n{stderr}",
        tree.display()
    );
    // Every series directory is named in the output: none was skipped.
    let mut series = 0;
    for e in std::fs::read_dir(dir).expect("linux/patches/REL") {
        let e = e.unwrap();
        if e.path().is_dir() {
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(
                stdout.contains(&format!("check-series: {name}: ")),
                "{name} not checked:\n{stdout}"
            );
            series += 1;
        }
    }
    assert!(
        series >= 2,
        "expected at least tmpfs-negative and tmpfs-noalloc"
    );
    assert!(
        stdout.contains(&format!("check-series: {series} series ok")),
        "{stdout}"
    );
}

//! `qemu::fixtures` itself: a skipping test passes under plain `cargo test`
//! and the binary's exit prints the closing `SKIPPED:` count; under
//! `REQUIRE_FIXTURES=1` the same test fails and names the fixture. Each
//! case reruns this test binary as a child on the one `child` test.

use std::process::Command;

const CHILD: &str = "FIXTURES_SKIP_CHILD";

/// Skips when run as the child; passes trivially in the parent run.
#[test]
fn child() {
    if std::env::var_os(CHILD).is_some() {
        qemu::fixtures::skip("fixtures_skip", "a fixture", "made missing on purpose");
    }
}

fn run_child(require: bool) -> (bool, String) {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "child", "--test-threads=1"])
        .env(CHILD, "1");
    if require {
        c.env(qemu::fixtures::REQUIRE_FIXTURES, "1");
    } else {
        c.env_remove(qemu::fixtures::REQUIRE_FIXTURES);
    }
    let out = c.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn skip_passes_and_exit_prints_the_count() {
    let (ok, text) = run_child(false);
    assert!(ok, "{text}");
    assert!(text.contains("SKIP "), "{text}");
    assert!(
        text.contains("needs a fixture: made missing on purpose"),
        "{text}"
    );
    assert!(
        text.contains("SKIPPED: 1 test of this binary did not run"),
        "{text}"
    );
    // The count comes last, after the harness's summary.
    let summary = text.find("test result:").expect("summary");
    assert!(text.rfind("SKIPPED:").unwrap() > summary, "{text}");
}

#[test]
fn require_fixtures_fails_and_names_the_fixture() {
    let (ok, text) = run_child(true);
    assert!(!ok, "{text}");
    assert!(
        text.contains("needs a fixture, which is missing here"),
        "{text}"
    );
    assert!(!text.contains("SKIPPED:"), "{text}");
}

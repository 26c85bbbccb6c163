//! Our kernel's `selftest` console output, read back: one verdict per test
//! and the closing counts, for host-side tests that must tell a skipped
//! self-test from a passed one.
//!
//! ```text
//! selftest: 30 tests on 2 CPUs
//! test cmdline_parser ... ok (6 ms)
//! test exception_breakpoint ... skipped: KVM here emulates instructions (…)
//! test rcu_async_callbacks ... FAILED: cpu 1 did not run its own callbacks
//! 28 passed, 1 failed, 1 skipped
//! ```
//!
//! The verdict line is `N passed, M failed`, with `, K skipped` appended
//! only when K is not 0 (so output without skips reads as it always did).
//! Log lines and other CPUs' output in between are ignored; serial `\r`s
//! are dropped.
//!
//! Touches nothing.

/// What became of one self-test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    /// Not run on this machine; the kernel's reason.
    Skipped(String),
    /// Ran and failed; the test's reason.
    Failed(String),
}

/// A `selftest` run's console output, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SelftestReport {
    /// The `selftest: N tests on C CPUs` header's N.
    pub announced: Option<usize>,
    /// Each `test NAME ... VERDICT` line, in order.
    pub tests: Vec<(String, Verdict)>,
    /// The closing `passed, failed, skipped` counts, if that line came.
    pub summary: Option<(usize, usize, usize)>,
}

impl SelftestReport {
    /// Parse `serial` (see the module doc).
    pub fn parse(serial: &str) -> SelftestReport {
        let mut r = SelftestReport::default();
        for l in serial.lines().map(|l| l.trim_end_matches('\r')) {
            if let Some(rest) = l.strip_prefix("selftest: ") {
                if let Some((n, _)) = rest.split_once(" tests on ") {
                    r.announced = n.parse().ok();
                }
            } else if let Some(rest) = l.strip_prefix("test ") {
                let Some((name, v)) = rest.split_once(" ... ") else {
                    continue;
                };
                let verdict = if v.starts_with("ok") {
                    Verdict::Ok
                } else if let Some(why) = v.strip_prefix("skipped: ") {
                    Verdict::Skipped(why.to_string())
                } else if let Some(why) = v.strip_prefix("FAILED: ") {
                    Verdict::Failed(why.to_string())
                } else {
                    continue;
                };
                r.tests.push((name.to_string(), verdict));
            } else if let Some(s) = parse_summary(l) {
                r.summary = Some(s);
            }
        }
        r
    }

    /// Names of the tests with this kind of verdict.
    fn names(&self, pick: impl Fn(&Verdict) -> bool) -> Vec<&str> {
        self.tests
            .iter()
            .filter(|(_, v)| pick(v))
            .map(|(n, _)| n.as_str())
            .collect()
    }

    pub fn passed(&self) -> Vec<&str> {
        self.names(|v| *v == Verdict::Ok)
    }

    pub fn failed(&self) -> Vec<&str> {
        self.names(|v| matches!(v, Verdict::Failed(_)))
    }

    /// Skipped tests with their reasons.
    pub fn skipped(&self) -> Vec<(&str, &str)> {
        self.tests
            .iter()
            .filter_map(|(n, v)| match v {
                Verdict::Skipped(why) => Some((n.as_str(), why.as_str())),
                _ => None,
            })
            .collect()
    }
}

/// `N passed, M failed` or `N passed, M failed, K skipped`.
fn parse_summary(l: &str) -> Option<(usize, usize, usize)> {
    let (p, rest) = l.split_once(" passed, ")?;
    let (f, rest) = rest.split_once(" failed")?;
    let k = if rest.is_empty() {
        0
    } else {
        rest.strip_prefix(", ")?
            .strip_suffix(" skipped")?
            .parse()
            .ok()?
    };
    Some((p.parse().ok()?, f.parse().ok()?, k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_and_counts() {
        let text = "\
[   0.356885] cpu 0 INFO: time: TSC 2596 MHz\r
selftest: 3 tests on 2 CPUs\r
test cmdline_parser ... ok (6 ms)\r
[  35.4] cpu 0 INFO: hypervisor: KVMKVMKVM runs guest code at 410 loop iterations/ms (emulated)
test exception_breakpoint ... skipped: KVM here emulates instructions\r
test rcu_async_callbacks ... FAILED: cpu 1 did not run its own callbacks
1 passed, 1 failed, 1 skipped\r
exit: status=1
";
        let r = SelftestReport::parse(text);
        assert_eq!(r.announced, Some(3));
        assert_eq!(r.passed(), ["cmdline_parser"]);
        assert_eq!(
            r.skipped(),
            [("exception_breakpoint", "KVM here emulates instructions")]
        );
        assert_eq!(r.failed(), ["rcu_async_callbacks"]);
        assert_eq!(r.summary, Some((1, 1, 1)));
    }

    #[test]
    fn the_old_verdict_line_has_no_skips() {
        assert_eq!(parse_summary("30 passed, 0 failed"), Some((30, 0, 0)));
        assert_eq!(
            parse_summary("29 passed, 0 failed, 1 skipped"),
            Some((29, 0, 1))
        );
        assert_eq!(parse_summary("29 passed, 0 failed, x skipped"), None);
        assert_eq!(parse_summary("29 passed, 0 failedx"), None);
        assert_eq!(parse_summary("boot complete"), None);
        let r = SelftestReport::parse("test a ... ok (1 ms)\ntest b ... running\n");
        assert_eq!(r.tests.len(), 1);
        assert_eq!(r.summary, None);
    }
}

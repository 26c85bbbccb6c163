//! will-it-scale's format as the reference guest and `statneg-host` print
//! it: `testcase:DESC`, `warmup`, `min:N max:N total:N` per second,
//! `measurement`, the same lines, `average:N`.
//!
//! Touches nothing; allocates for the parsed result only.

use super::LinuxRefError;

/// One `min:N max:N total:N` line: operations in one second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The slowest thread's count.
    pub min: u64,
    /// The fastest thread's count.
    pub max: u64,
    /// All threads together.
    pub total: u64,
}

/// A parsed will-it-scale report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WisResult {
    /// The `testcase:` description.
    pub testcase: String,
    /// Per-second samples of the warm-up.
    pub warmup: Vec<Sample>,
    /// Per-second samples of the measurement.
    pub measurement: Vec<Sample>,
    /// `average:` (mean of the measurement totals), ops/s.
    pub average: u64,
}

impl WisResult {
    /// Lowest per-thread count of any measurement second.
    pub fn min(&self) -> u64 {
        self.measurement.iter().map(|s| s.min).min().unwrap_or(0)
    }
    /// Highest per-thread count of any measurement second.
    pub fn max(&self) -> u64 {
        self.measurement.iter().map(|s| s.max).max().unwrap_or(0)
    }
}

/// Parses will-it-scale's format out of `text`. Lines that are not part of
/// the format (kernel messages on a shared console) are ignored; the
/// structure (testcase, warmup, samples, measurement, samples, average) is
/// required, and `average` must be the mean of the measurement totals.
pub fn parse_wis(text: &str) -> Result<WisResult, LinuxRefError> {
    #[derive(PartialEq)]
    enum Phase {
        Start,
        Warmup,
        Measure,
    }
    let err = |m: String| Err(LinuxRefError::Parse(m));
    let mut testcase = None;
    let mut phase = Phase::Start;
    let mut warmup = Vec::new();
    let mut measurement = Vec::new();
    for line in text.lines().map(|l| l.trim_end_matches('\r').trim()) {
        if let Some(t) = line.strip_prefix("testcase:") {
            testcase = Some(t.to_string());
            phase = Phase::Start;
            warmup.clear();
            measurement.clear();
        } else if line == "warmup" && testcase.is_some() {
            phase = Phase::Warmup;
        } else if line == "measurement" && phase == Phase::Warmup {
            phase = Phase::Measure;
        } else if let Some(s) = parse_sample(line) {
            match phase {
                Phase::Warmup => warmup.push(s),
                Phase::Measure => measurement.push(s),
                Phase::Start => return err(format!("sample before `warmup`: {line}")),
            }
        } else if let Some(a) = line.strip_prefix("average:") {
            let Some(testcase) = testcase else {
                return err("`average:` without `testcase:`".into());
            };
            if phase != Phase::Measure || measurement.is_empty() {
                return err("`average:` before any measurement sample".into());
            }
            let Ok(average) = a.trim().parse::<u64>() else {
                return err(format!("bad average line: {line}"));
            };
            let mean = measurement.iter().map(|s| s.total).sum::<u64>() / measurement.len() as u64;
            if mean != average {
                return err(format!(
                    "average:{average} is not the mean of the totals ({mean})"
                ));
            }
            return Ok(WisResult {
                testcase,
                warmup,
                measurement,
                average,
            });
        }
    }
    err("no complete report (testcase, warmup, measurement, average) found".into())
}

fn parse_sample(line: &str) -> Option<Sample> {
    let mut it = line.split_whitespace();
    let mut field = |name: &str| -> Option<u64> { it.next()?.strip_prefix(name)?.parse().ok() };
    let s = Sample {
        min: field("min:")?,
        max: field("max:")?,
        total: field("total:")?,
    };
    (it.next().is_none() && s.min <= s.max).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "testcase:stat() of a missing name (/mnt/tmpfs/x), 2 threads\n\
        warmup\n\
        min:10 max:12 total:22\n\
        measurement\n\
        min:11 max:13 total:24\n\
        min:9 max:11 total:20\n\
        average:22\n";

    #[test]
    fn parses_will_it_scale_format() {
        let r = parse_wis(REPORT).unwrap();
        assert_eq!(
            r.testcase,
            "stat() of a missing name (/mnt/tmpfs/x), 2 threads"
        );
        assert_eq!(
            r.warmup,
            vec![Sample {
                min: 10,
                max: 12,
                total: 22
            }]
        );
        assert_eq!(r.measurement.len(), 2);
        assert_eq!(r.average, 22);
        assert_eq!(r.min(), 9);
        assert_eq!(r.max(), 13);
    }

    #[test]
    fn ignores_interleaved_console_noise_and_crlf() {
        let noisy = REPORT.replace(
            "measurement\n",
            "measurement\r\n[   12.3] random: crng init done\r\n",
        );
        assert_eq!(parse_wis(&noisy).unwrap().average, 22);
    }

    #[test]
    fn rejects_malformed_reports() {
        assert!(parse_wis("").is_err());
        assert!(parse_wis(&REPORT.replace("average:22", "average:23")).is_err());
        assert!(parse_wis(&REPORT.replace("average:22\n", "")).is_err());
        assert!(parse_wis(&REPORT.replace("measurement\n", "")).is_err());
        assert!(parse_wis(&REPORT.replace("warmup\n", "")).is_err());
        assert!(parse_sample("min:5 max:4 total:9").is_none());
        assert!(parse_sample("min:1 max:2 total:3 extra").is_none());
        assert!(parse_sample("min:x max:2 total:3").is_none());
    }
}

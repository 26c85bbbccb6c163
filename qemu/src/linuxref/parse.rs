//! will-it-scale's format as the reference guest and `statneg-host` print
//! it: `testcase:DESC`, `warmup`, `min:N max:N total:N` per second,
//! `measurement`, the same lines, `average:N`, and from the guest's
//! counting run `per-op: allocs=A locks=L rwsem=R fallbacks=F`.
//!
//! The parsing itself is [`formats::output`] (the one parser, for our
//! driver's output too); this adds what a shared console needs: kernel
//! messages (`[   12.3] …`) are dropped first, and `average` must be the
//! mean of the measurement totals. `statneg.c` ends each run with its
//! answer check, `statneg-check wrong=N first=… fstype=… ops=N`: those
//! lines leave the text before it is parsed, and a run with `wrong` other
//! than 0 (an answer that was not ENOENT) is an error, never a figure.
//!
//! Touches nothing; allocates for the parsed result only.

use super::LinuxRefError;
pub use formats::output::{PerOp, RunOutput as WisResult, Sample};

/// Parses will-it-scale's format out of `text` (see the module doc); a
/// `statneg-check` line with `wrong` other than 0 is an error.
pub fn parse_wis(text: &str) -> Result<WisResult, LinuxRefError> {
    for check in text
        .lines()
        .filter_map(|l| l.trim_end_matches('\r').strip_prefix("statneg-check "))
    {
        let wrong = check
            .split_whitespace()
            .find_map(|w| w.strip_prefix("wrong="))
            .and_then(|v| v.parse::<u64>().ok());
        if wrong != Some(0) {
            return Err(LinuxRefError::Parse(format!(
                "statneg's answers were not all ENOENT: statneg-check {check}"
            )));
        }
    }
    parse_wis_unchecked(text)
}

/// [`parse_wis`] for a caller that reads the `statneg-check` line itself
/// (the fidelity guest reports a wrong answer with its window): the line
/// leaves the text unjudged.
pub fn parse_wis_unchecked(text: &str) -> Result<WisResult, LinuxRefError> {
    let clean: Vec<&str> = text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !is_kernel_message(l) && !l.starts_with("statneg-check "))
        .collect();
    let r = formats::output::parse(&clean.join("\n"))
        .map_err(|e| LinuxRefError::Parse(e.to_string()))?;
    let mean = formats::output::average(&r.measurement);
    if mean != r.average {
        return Err(LinuxRefError::Parse(format!(
            "average:{} is not the mean of the totals ({mean})",
            r.average
        )));
    }
    Ok(r)
}

/// A printk line on the console: `[ SECONDS.MICROS] text`.
fn is_kernel_message(l: &str) -> bool {
    let Some(rest) = l.trim_start().strip_prefix('[') else {
        return false;
    };
    rest.split_once(']').is_some_and(|(t, _)| {
        !t.trim().is_empty() && t.trim().bytes().all(|b| b.is_ascii_digit() || b == b'.')
    })
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
        assert_eq!(r.task_min(), 9);
        assert_eq!(r.task_max(), 13);
        assert_eq!(r.per_op, None);
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
    fn the_answer_check_leaves_the_text_and_a_wrong_answer_fails() {
        let check = "statneg-check wrong=0 first=none fstype=0x1021994 ops=44\n";
        let text = REPORT.replace("average:22\n", &format!("average:22\n{check}"))
            + "per-op: allocs=1.000 locks=4.002 rwsem=1.000 fallbacks=1.000\n"
            + check;
        let r = parse_wis(&text).unwrap();
        assert_eq!(
            r.per_op.map(|p| p.allocs),
            Some(1.0),
            "the per-op line read"
        );
        let wrong = text.replacen("wrong=0 first=none", "wrong=1 first=exists", 1);
        let e = parse_wis(&wrong).unwrap_err().to_string();
        assert!(e.contains("first=exists"), "{e}");
    }

    #[test]
    fn reads_the_guest_per_op_line() {
        let text = format!("{REPORT}per-op: allocs=1.000 locks=4.002 rwsem=1.000 fallbacks=1.000\nlinuxref-count ops=10\n");
        let p = parse_wis(&text).unwrap().per_op.unwrap();
        assert_eq!(
            (p.allocs, p.locks, p.rwsem, p.fallbacks),
            (1.0, 4.002, Some(1.0), 1.0)
        );
        assert!(parse_wis(&format!("{REPORT}per-op: allocs=1.000\n")).is_err());
        assert!(parse_wis(&format!("{REPORT}error: the counting run did not run\n")).is_err());
    }

    #[test]
    fn rejects_malformed_reports() {
        assert!(parse_wis("").is_err());
        assert!(parse_wis(&REPORT.replace("average:22", "average:23")).is_err());
        assert!(parse_wis(&REPORT.replace("average:22\n", "")).is_err());
        assert!(parse_wis(&REPORT.replace("measurement\n", "")).is_err());
        assert!(parse_wis(&REPORT.replace("warmup\n", "")).is_err());
        assert!(parse_wis(&REPORT.replace("min:9 max:11", "min:12 max:11")).is_err());
        assert!(parse_wis(&REPORT.replace("total:20", "total:20 extra")).is_err());
        assert!(parse_wis(&REPORT.replace("min:9", "min:x")).is_err());
        assert!(!is_kernel_message("[x] y") && is_kernel_message("[ 1.5] y"));
    }
}

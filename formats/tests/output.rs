//! will-it-scale's output format: write → parse round trip, the seed's own
//! output, and malformed text.

use formats::output::{self, parse, PerOpCounts, RunOutput, Sample, SampleTime, Timing};

/// The seed's `./statneg_processes -t 10` output (tmpfs, Linux), verbatim.
const SEED: &str = "\
# ./statneg_processes -t 10
testcase:non-existent file stat
warmup
min:261181 max:285570 total:2780930
min:311086 max:352403 total:3348461
min:310552 max:349138 total:3277166
min:308172 max:321618 total:3134878
min:310914 max:332300 total:3185394
min:355424 max:385750 total:3702454
measurement
min:311937 max:348949 total:3289838
min:293611 max:323888 total:3070839
min:296091 max:313330 total:3036069
min:288423 max:303650 total:2981185
min:287714 max:317808 total:3023488
average:3080283
";

#[test]
fn seed_output_parses() {
    let r = parse(SEED).unwrap();
    assert_eq!(r.testcase, "non-existent file stat");
    assert_eq!(r.warmup.len(), 6);
    assert_eq!(r.measurement.len(), 5);
    assert_eq!(
        r.measurement[0],
        Sample {
            min: 311937,
            max: 348949,
            total: 3289838
        }
    );
    assert_eq!(r.average, 3080283);
    assert_eq!(
        output::average(&r.measurement),
        3080283,
        "will-it-scale's average is the mean total"
    );
    assert_eq!(r.per_op, None);
    assert_eq!(r.min_total(), 2981185);
    assert_eq!(r.max_total(), 3289838);
    assert_eq!(r.task_min(), 287714);
    assert_eq!(r.task_max(), 348949);
}

#[test]
fn round_trip_with_per_op() {
    let run = RunOutput {
        testcase: "non-existent file stat (tmpfs enoent=transient)".into(),
        warmup: vec![Sample {
            min: 1,
            max: 2,
            total: 3,
        }],
        measurement: vec![
            Sample {
                min: 10,
                max: 12,
                total: 22,
            },
            Sample {
                min: 9,
                max: 13,
                total: 22,
            },
        ],
        average: 22,
        per_op: None,
        timing: None,
    };
    let counts = PerOpCounts {
        ops: 44,
        allocs: 44,
        shared_stores: 220,
        fallbacks: 45,
        locks: 88,
        transfers: 66,
    };
    let mut text = String::new();
    output::write_run(&mut text, &run, Some(&counts)).unwrap();
    assert!(
        text.ends_with(
            "average:22\nper-op: allocs=1.000 shared_stores=5.000 fallbacks=1.023 locks=2.000 transfers=1.500\n"
        ),
        "{text}"
    );
    let back = parse(&format!("boot log line\n{text}qemu-run: exited\n")).unwrap();
    assert_eq!(back.testcase, run.testcase);
    assert_eq!(back.warmup, run.warmup);
    assert_eq!(back.measurement, run.measurement);
    assert_eq!(back.average, 22);
    let p = back.per_op.unwrap();
    assert_eq!(
        (
            p.allocs,
            p.shared_stores,
            p.fallbacks,
            p.locks,
            p.rwsem,
            p.transfers
        ),
        (1.0, Some(5.0), 1.023, 2.0, None, Some(1.5))
    );
}

/// The Linux reference guest's line (from its kprobe counting run): no
/// shared_stores, an rwsem count; the required keys stay required.
#[test]
fn linux_per_op_line() {
    let block = "testcase:x\nwarmup\nmeasurement\nmin:1 max:1 total:1\naverage:1\n";
    let p = parse(&format!(
        "{block}per-op: allocs=1.002 locks=5.010 rwsem=1.000 fallbacks=1.000\n"
    ))
    .unwrap()
    .per_op
    .unwrap();
    assert_eq!(
        (p.allocs, p.shared_stores, p.fallbacks, p.locks, p.rwsem),
        (1.002, None, 1.0, 5.01, Some(1.0))
    );
    for bad in [
        "per-op: allocs=1 rwsem=1 fallbacks=1",
        "per-op: allocs=1 locks=1 rwsem=1 rwsem=2 fallbacks=1",
        "per-op: allocs=1 locks=1 mutex=1 fallbacks=1",
        "per-op: allocs=1 locks=-1 fallbacks=1",
    ] {
        assert!(parse(&format!("{block}{bad}\n")).is_err(), "{bad}");
    }
}

/// `transfers=` is appended to the per-op line: output from before it
/// still parses (no figure), a repeated or malformed one does not.
#[test]
fn per_op_transfers_is_optional_and_appended() {
    let head = "testcase:t\nwarmup\nmeasurement\nmin:1 max:1 total:2\naverage:2\n";
    let old = parse(&format!(
        "{head}per-op: allocs=1.000 shared_stores=5.000 fallbacks=0.000 locks=2.000\n"
    ))
    .unwrap();
    let p = old.per_op.unwrap();
    assert_eq!((p.locks, p.transfers), (2.0, None));
    let new = parse(&format!(
        "{head}per-op: allocs=1.000 shared_stores=5.000 fallbacks=0.000 locks=2.000 transfers=3.250\n"
    ))
    .unwrap();
    assert_eq!(new.per_op.unwrap().transfers, Some(3.25));
    for bad in [
        "per-op: allocs=1 shared_stores=5 fallbacks=0 locks=2 transfers=1 transfers=1",
        "per-op: allocs=1 shared_stores=5 fallbacks=0 locks=2 transfers=x",
        "per-op: allocs=1 shared_stores=5 fallbacks=0 transfers=1",
    ] {
        assert!(parse(&format!("{head}{bad}\n")).is_err(), "{bad}");
    }
}

#[test]
fn per_op_rounding_and_zero_ops() {
    let c = PerOpCounts {
        ops: 3,
        allocs: 1,
        shared_stores: 2,
        fallbacks: 0,
        locks: 0,
        transfers: 2,
    };
    assert_eq!(
        c.to_string(),
        "per-op: allocs=0.333 shared_stores=0.667 fallbacks=0.000 locks=0.000 transfers=0.667"
    );
    let z = PerOpCounts::default();
    assert_eq!(
        z.to_string(),
        "per-op: allocs=0.000 shared_stores=0.000 fallbacks=0.000 locks=0.000 transfers=0.000"
    );
}

#[test]
fn crlf_serial_output_parses() {
    let text = SEED.replace('\n', "\r\n");
    assert_eq!(parse(&text).unwrap().average, 3080283);
}

#[test]
fn malformed_output_is_refused() {
    let ok = "testcase:x\nwarmup\nmeasurement\nmin:1 max:2 total:3\naverage:3\n";
    assert!(parse(ok).is_ok());
    for (bad, why) in [
        ("", "no testcase"),
        ("testcase:x\n", "ends early"),
        ("testcase:x\nmeasurement\n", "no warmup line"),
        ("testcase:x\nwarmup\nmeasurement\naverage:3\n", "no measurement lines"),
        ("testcase:x\nwarmup\nmin:1 max:2 total:3\naverage:3\n", "average before measurement"),
        ("testcase:x\nwarmup\nmeasurement\nmin:1 max:2 total:3\n", "no average"),
        ("testcase:x\nwarmup\nmeasurement\nmin:1 max:2\naverage:3\n", "short sample"),
        ("testcase:x\nwarmup\nmeasurement\nmin:3 max:2 total:5\naverage:5\n", "min > max"),
        ("testcase:x\nwarmup\nmeasurement\nmin:1 max:2 total:3\nlog line\naverage:3\n", "noise inside"),
        ("testcase:x\nwarmup\nmeasurement\nmin:1 max:2 total:3\naverage:-3\n", "negative average"),
        ("testcase:x\nwarmup\nmeasurement\nmeasurement\nmin:1 max:2 total:3\naverage:3\n", "two measurement"),
        (&format!("{ok}per-op: allocs=1.000 shared_stores=1.000 fallbacks=0.000\n"), "per-op missing locks"),
        (&format!("{ok}per-op: allocs=x shared_stores=1 fallbacks=0 locks=0\n"), "per-op bad number"),
        (&format!("{ok}per-op: allocs=0.000 shared_stores=0.000 fallbacks=0.000 locks=0.000\nerror: 3 wrong answers\n"), "error line"),
        (&format!("{ok}error: 3 wrong answers\n"), "error line without per-op"),
    ] {
        assert!(parse(bad).is_err(), "accepted ({why}): {bad:?}");
    }
}

/// The `timing:` line goes after everything a reader of the older format
/// looks at: with it, the rest of the block is the same text, and a run's
/// `error:` line still comes right after `per-op:`.
#[test]
fn timing_line_is_appended_and_read_back() {
    let t = |elapsed_us, late| SampleTime { elapsed_us, late };
    let run = RunOutput {
        testcase: "t".into(),
        warmup: vec![Sample {
            min: 1,
            max: 1,
            total: 2,
        }],
        measurement: vec![
            Sample {
                min: 5,
                max: 6,
                total: 11,
            },
            Sample {
                min: 5,
                max: 7,
                total: 12,
            },
        ],
        average: 11,
        per_op: None,
        timing: Some(Timing {
            warmup: vec![t(1_000_100, false)],
            measurement: vec![t(19_861_000, true), t(1_000_003, false)],
        }),
    };
    let counts = PerOpCounts {
        ops: 1,
        ..Default::default()
    };
    let mut text = String::new();
    output::write_run(&mut text, &run, Some(&counts)).unwrap();
    let last = text.lines().last().unwrap();
    assert_eq!(
        last,
        "timing: warmup_us=1000100 measurement_us=19861000!,1000003 late=1"
    );
    let back = parse(&text).unwrap();
    assert_eq!(back.timing, run.timing);
    assert_eq!(back.late(), 1);
    // Without the line: the same run, no timing.
    let older = text.replace(&format!("{last}\n"), "");
    let old = parse(&older).unwrap();
    assert_eq!((old.late(), &old.timing), (0, &None));
    assert_eq!(
        (old.measurement, old.average),
        (back.measurement, back.average)
    );
    // An error line still sits right after per-op and still fails the parse.
    let failed = text.replace(
        &format!("{last}\n"),
        &format!("error: 3 wrong answers\n{last}\n"),
    );
    assert!(parse(&failed).is_err());
    // A timing line for another number of samples, a wrong late count, a
    // bad number: refused.
    for bad in [
        "timing: warmup_us=1 measurement_us=2 late=0",
        "timing: warmup_us=1 measurement_us=2!,3 late=0",
        "timing: warmup_us=1 measurement_us=2,x late=0",
        "timing: measurement_us=2,3 warmup_us=1 late=0",
    ] {
        let t = text.replace(last, bad);
        assert!(parse(&t).is_err(), "{bad}");
    }
}

//! `negcost`'s lines and its prototype side (issue 50): the line reads back
//! what it printed and refuses what is not one; at a small N the designs
//! keep what they promise in the directory the misses were made in
//! (negative every name, negbound its bound, noalloc and transient none),
//! and the emptied directory is still removed. Touches a fresh host-mode
//! tmpfs per design.

use benchlab::negcost::{linux_line, run_proto, Line, KEYS};
use fs::dcache::design::NEGBOUND_LIMIT;
use qemu::linuxref::{trace_steps, GuestNegcost};

const LINE: &str = "negcost kernel=7.3.4-negative design=negative names=1000000 ls_ms=61.250 \
                    rmdir_ms=140.500 dentries=1000012 max_locked_us=70543.2 stat_ms=18000.0 \
                    locked_by=simple_empty mode=guest-tcg";

#[test]
fn a_line_reads_back_what_it_printed() {
    let l = Line::parse(LINE).unwrap();
    assert_eq!(l.kernel, "7.3.4-negative");
    assert_eq!(l.design, "negative");
    assert_eq!(l.names, 1_000_000);
    assert_eq!(l.ls_ms, 61.25);
    assert_eq!(l.rmdir_ms, 140.5);
    assert_eq!(l.dentries, 1_000_012);
    assert_eq!(l.max_locked_us, 70543.2);
    assert_eq!(l.extra("locked_by"), Some("simple_empty"));
    assert_eq!(l.extra("mode"), Some("guest-tcg"));
    assert_eq!(
        l.to_string(),
        LINE.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    assert_eq!(Line::parse(&l.to_string()).unwrap(), l);
    // The seven keys, in this order, open every line.
    let words: Vec<&str> = LINE.split_whitespace().skip(1).take(7).collect();
    for (w, k) in words.iter().zip(KEYS) {
        assert!(w.starts_with(&format!("{k}=")), "{w} is not {k}=");
    }
}

#[test]
fn what_is_not_a_line_is_refused_with_the_reason() {
    let without = |k: &str| {
        LINE.split_whitespace()
            .filter(|w| !w.starts_with(&format!("{k}=")))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for k in KEYS {
        let e = Line::parse(&without(k)).unwrap_err();
        assert!(e.contains(&format!("no {k}=")), "{k}: {e}");
    }
    assert!(Line::parse("linuxpatch kernel=x").is_err());
    assert!(Line::parse(&LINE.replace("ls_ms=61.250", "ls_ms=fast")).is_err());
    assert!(Line::parse(&LINE.replace("ls_ms=61.250", "ls_ms=NaN")).is_err());
    assert!(Line::parse(&LINE.replace("names=1000000", "names=-1")).is_err());
    assert!(
        Line::parse(&format!("{LINE} names=3")).is_err(),
        "a key twice"
    );
    assert!(Line::parse(&format!("{LINE} junk")).is_err());
    // A negative growth is a figure (a guest that freed dentries meanwhile).
    assert_eq!(
        Line::parse(&LINE.replace("dentries=1000012", "dentries=-3"))
            .unwrap()
            .dentries,
        -3
    );
}

/// 10^3 names in each design: what stays in the directory.
#[test]
fn each_design_keeps_what_it_promises_at_a_thousand_names() {
    let n = 1000;
    let kept = |d: &str| {
        let l = run_proto(d, n).unwrap_or_else(|e| panic!("{d}: {e}"));
        assert_eq!(
            (l.kernel.as_str(), l.design.as_str(), l.names),
            ("proto", d, n)
        );
        assert!(l.ls_ms >= 0.0 && l.rmdir_ms >= 0.0 && l.max_locked_us >= 0.0);
        assert_eq!(Line::parse(&l.to_string()).unwrap().dentries, l.dentries);
        l.dentries
    };
    assert_eq!(kept("negative"), n as i64, "negative keeps every name");
    let b = kept("negbound");
    assert!(
        b > 0 && b as u64 <= NEGBOUND_LIMIT,
        "negbound keeps at most its bound: {b}"
    );
    assert_eq!(kept("noalloc"), 0, "noalloc allocates none");
    assert_eq!(kept("transient"), 0, "transient frees each at once");
    assert!(run_proto("nosuch", 1).is_err());
}

#[test]
fn a_guest_run_becomes_a_line_named_by_its_longest_locked_call() {
    let mut g = GuestNegcost {
        names: 10000,
        files: 10,
        stat_us: 180_000.0,
        ls_us: 730.0,
        ls_entries: 12,
        rmdir_us: 13_000.0,
        dentries_before: 850,
        dentries_after: 10_850,
        steps: trace_steps(
            " 0)  |  /* negcost-ls 1 */\n 0) ! 536.0 us |  find_positive_dentry();\n\
             \x20 0)  |  /* negcost-rmdir */\n 0) ! 668.2 us |  simple_empty();\n",
        ),
        rc: 0,
    };
    let l = linux_line("7.3.4-negative", "negative", &g);
    assert_eq!(
        l.to_string(),
        "negcost kernel=7.3.4-negative design=negative names=10000 ls_ms=0.730 rmdir_ms=13.000 \
         dentries=10000 max_locked_us=668.2 stat_ms=180.0 locked_by=simple_empty mode=guest-tcg"
    );
    // Nothing traced: the longer operation bounds the stretch, and says so.
    g.steps.clear();
    let l = linux_line("7.3.4-negative", "negative", &g);
    assert_eq!(l.max_locked_us, 13_000.0);
    assert_eq!(l.extra("locked_by"), Some("upper-bound"));
}

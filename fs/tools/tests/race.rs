//! `vfsh race`: a command run at an exact step of an RCU-walk forces the
//! fallback it should, with the counted reason, and the walk still answers
//! what it would answer had the command simply run first.
//!
//! The counters are global and the exact counts below must not see other
//! tests' walks: every test here holds `SERIAL`.
//!
//! Touches: fresh tmpfs shells, the global counters.

use std::collections::HashMap;

use fstools::shell::Shell;
use serde_json::Value;

const PATH: &str = "/a/b/missing";

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

struct Case {
    what: &'static str,
    design: &'static str,
    setup: &'static [&'static str],
    step: &'static str,
    cmd: &'static str,
    /// The fallback counter the race must add to the walk's.
    reason: &'static str,
    /// The sequence count whose check must fail.
    seq: &'static str,
}

const CASES: &[Case] = &[
    Case {
        what: "rename of a component",
        design: "noalloc",
        setup: &["mkdir /a", "mkdir /a/b"],
        step: "step_into b",
        cmd: "rename /a/b /a/c",
        reason: "d_seq",
        seq: "d_seq",
    },
    Case {
        what: "unlink of the dentry",
        design: "noalloc",
        setup: &["mkdir /a", "mkdir /a/b", "create /a/b/missing"],
        step: "lookup_fast missing",
        cmd: "unlink /a/b/missing",
        reason: "d_seq",
        seq: "d_seq",
    },
    Case {
        what: "create of the missing name under noalloc",
        design: "noalloc",
        setup: &["mkdir /a", "mkdir /a/b"],
        step: "lookup_fast missing",
        cmd: "create /a/b/missing",
        reason: "dir_seq",
        seq: "dir_seq",
    },
    Case {
        what: "mount over a component",
        design: "noalloc",
        setup: &["mkdir /a", "mkdir /a/b"],
        step: "step_into b",
        cmd: "mount enoent=noalloc /a/b",
        reason: "global_seq",
        seq: "mount_seq",
    },
];

fn shell(c: &Case) -> Shell {
    let mut sh = Shell::new(&format!("enoent={}", c.design));
    for l in c.setup {
        assert_eq!(sh.exec(l), ["ok"], "{}: setup {l}", c.what);
    }
    sh
}

/// `stats` as a map.
fn stats(sh: &mut Shell) -> HashMap<String, u64> {
    let out = sh.exec("stats");
    assert_eq!(out.last().map(String::as_str), Some("ok"));
    out[..out.len() - 1]
        .iter()
        .map(|l| {
            let mut w = l.strip_prefix("# ").unwrap().split(' ');
            (
                w.next().unwrap().to_string(),
                w.next().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

fn delta(a: &HashMap<String, u64>, b: &HashMap<String, u64>) -> HashMap<String, u64> {
    b.iter().map(|(k, v)| (k.clone(), v - a[k])).collect()
}

fn result(out: &[String]) -> String {
    let r: Vec<&String> = out.iter().filter(|l| !l.starts_with("# ")).collect();
    assert_eq!(r.len(), 1, "{out:?}");
    r[0].clone()
}

fn steps(out: &[String]) -> Vec<Value> {
    out.iter()
        .filter_map(|l| l.strip_prefix("# {"))
        .map(|j| serde_json::from_str(&format!("{{{j}")).expect("a JSON step"))
        .collect()
}

#[test]
fn each_race_forces_its_fallback_and_keeps_the_answer() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for c in CASES {
        // Ground truth: the command simply runs before the stat.
        let mut truth = shell(c);
        let before = stats(&mut truth);
        let cmd_out = truth.exec(c.cmd);
        assert_eq!(cmd_out, ["ok"], "{}", c.what);
        let own = delta(&before, &stats(&mut truth));
        let want = result(&truth.exec(&format!("stat {PATH}")));

        // The race: the command runs while the stat's RCU-walk is at STEP.
        let mut sh = shell(c);
        assert_eq!(sh.exec(&format!("race {} {}", c.step, c.cmd)), ["ok"]);
        assert_eq!(sh.exec("trace json"), ["ok"]);
        let before = stats(&mut sh);
        let out = sh.exec(&format!("stat {PATH}"));
        let d = delta(&before, &stats(&mut sh));
        assert_eq!(
            result(&out),
            want,
            "{}: raced answer vs ground truth: {out:?}",
            c.what
        );
        let fired = format!("# race: at \"{}\" ran `{}`: ok", c.step, c.cmd);
        assert!(out.contains(&fired), "{}: {out:?}", c.what);

        // Exactly one fallback more than the command's own, with the reason.
        for (k, v) in &d {
            if !k.starts_with("fallbacks") && k != "rcu_walks" {
                continue;
            }
            let mut expect = own[k];
            if k == "fallbacks" || *k == format!("fallbacks_{}", c.reason) {
                expect += 1;
            }
            assert_eq!(
                *v, expect,
                "{}: counter {k} (command's own: {})",
                c.what, own[k]
            );
        }

        // The JSON steps: RCU-walk, the failed check, the handover, ref-walk.
        let st = steps(&out);
        let last = st.last().expect("steps");
        assert_eq!(last["function"], "filename_lookup");
        assert_eq!(
            last["mode"], "ref",
            "{}: the walk ended in ref-walk",
            c.what
        );
        let counters = &last["counters"];
        assert_eq!(counters["fallbacks"], 1, "{}: {counters}", c.what);
        assert_eq!(counters[format!("fallbacks_{}", c.reason)], 1, "{}", c.what);
        let race_at = st
            .iter()
            .position(|s| s["step"] == "race")
            .expect("a race step");
        assert_eq!(
            st[race_at - 1]["step"],
            c.step,
            "{}: raced at its step",
            c.what
        );
        assert_eq!(st[race_at - 1]["mode"], "rcu");
        let failed = st[race_at..]
            .iter()
            .position(|s| s["seq"]["ok"] == false)
            .map(|i| &st[race_at + i])
            .unwrap_or_else(|| panic!("{}: no failed check after the race", c.what));
        assert_eq!(failed["seq"]["which"], c.seq, "{}: {failed}", c.what);
        assert_eq!(failed["mode"], "rcu");
        assert!(
            st.iter().any(|s| s["reason"] == c.reason),
            "{}: no step names the reason {}",
            c.what,
            c.reason
        );
        let first_ref = st.iter().position(|s| s["mode"] == "ref").unwrap();
        assert!(
            first_ref > race_at,
            "{}: ref-walk only after the race",
            c.what
        );

        // The race fired once: the next stat is an ordinary walk.
        let again = sh.exec(&format!("stat {PATH}"));
        assert_eq!(result(&again), want, "{}", c.what);
        assert!(!again.iter().any(|l| l.starts_with("# race")), "{again:?}");
    }
}

/// A dentry killed between the RCU-walk stepping on it and the handover:
/// `try_to_unlazy` cannot take its reference, counts `dead` besides the
/// handover's own `cache_miss`, and the ref-walk answers what it would
/// have answered had the rmdir run first.
#[test]
fn a_dentry_killed_before_the_handover_counts_dead() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = |sh: &mut Shell| {
        for l in ["mkdir /a", "mkdir /a/b"] {
            assert_eq!(sh.exec(l), ["ok"]);
        }
    };
    let mut truth = Shell::new("enoent=transient");
    setup(&mut truth);
    assert_eq!(truth.exec("rmdir /a/b"), ["ok"]);
    let want = result(&truth.exec(&format!("stat {PATH}")));

    let mut sh = Shell::new("enoent=transient");
    setup(&mut sh);
    assert_eq!(sh.exec("race try_to_unlazy rmdir /a/b"), ["ok"]);
    assert_eq!(sh.exec("trace json"), ["ok"]);
    let before = stats(&mut sh);
    let out = sh.exec(&format!("stat {PATH}"));
    let d = delta(&before, &stats(&mut sh));
    assert_eq!(result(&out), want, "{out:?}");
    assert!(
        out.contains(&"# race: at \"try_to_unlazy\" ran `rmdir /a/b`: ok".to_string()),
        "{out:?}"
    );
    assert_eq!(d["fallbacks_dead"], 1, "{d:?}");
    assert_eq!(d["fallbacks_cache_miss"], 1, "{d:?}");
    assert_eq!(d["fallbacks_poisoned"], 0, "{d:?}");
    let st = steps(&out);
    let race_at = st.iter().position(|s| s["step"] == "race").unwrap();
    assert!(
        st[race_at..]
            .iter()
            .any(|s| s["function"] == "try_to_unlazy" && s["reason"] == "dead"),
        "no try_to_unlazy step names the reason dead: {st:?}"
    );
    assert_eq!(st.last().unwrap()["mode"], "ref");
}

#[test]
fn race_parsing_and_a_step_never_reached() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut sh = Shell::new("enoent=noalloc");
    assert_eq!(sh.exec("race frob b mkdir /x"), ["err EINVAL"]);
    assert_eq!(sh.exec("race lookup_fast b"), ["err EINVAL"]);
    assert_eq!(sh.exec("race lookup_fast b stats"), ["err EINVAL"]);
    assert_eq!(sh.exec("race lookup_fast b race off"), ["err EINVAL"]);
    assert_eq!(sh.exec("race step_into zz mkdir /x"), ["ok"]);
    let out = sh.exec("stat /a");
    assert_eq!(
        out,
        [
            "# race: \"step_into zz\" not reached, still armed",
            "err ENOENT"
        ]
    );
    assert_eq!(sh.exec("race off"), ["ok"]);
    assert_eq!(sh.exec("stat /a"), ["err ENOENT"]);
    // A bare step (no component), armed at the fallback itself.
    assert_eq!(sh.exec("mkdir /d"), ["ok"]);
    assert_eq!(sh.exec("race try_to_unlazy mkdir /x"), ["ok"]);
    let out = sh.exec("mkdir /d/e");
    assert!(
        out.iter()
            .any(|l| l.starts_with("# race: at \"try_to_unlazy\" ran `mkdir /x`: ok")),
        "{out:?}"
    );
    assert_eq!(out.last().map(String::as_str), Some("ok"));
    assert_eq!(sh.exec("stat /x"), ["ok dir"]);
}

/// The benchmarks run the kernel, which builds fs without `teaching`: its
/// image holds none of the step points' texts, while this (teaching) build
/// does. (`make test` builds the kernel before the host tests.)
#[test]
fn the_kernel_build_has_no_step_points() {
    // A step text of Nd::try_to_unlazy, written backwards here so that this
    // test's own literal is not what it finds.
    let mark: Vec<u8> = b"dnats ew erehw no ecnerefer a ekat :klaw-UCR evael"
        .iter()
        .rev()
        .copied()
        .collect();
    let mark = mark.as_slice();
    let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    assert!(
        me.windows(mark.len()).any(|w| w == mark),
        "the teaching build should carry the step texts"
    );
    // Where the Makefile builds it: CARGO_TARGET_DIR if set, else target/.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let elf = target.join("x86_64-unknown-none/release/kernel");
    let Ok(k) = std::fs::read(&elf) else {
        qemu::fixtures::skip(
            "race",
            "the kernel image",
            format!("no {} (make build-kernel)", elf.display()),
        );
        return;
    };
    assert!(
        !k.windows(mark.len()).any(|w| w == mark),
        "the kernel image carries walk step points"
    );
}

//! vfsh's `stats` and `trace` commands: their `# ` lines and what they show.
//!
//! These are not comparable with Linux (they report our own counters and
//! walk steps), so they are checked here by shape and by what must move:
//! counters grow when lookups happen, a traced lookup prints its steps
//! before its result, and tracing never changes a result.
//!
//! Touches: the global counters and trace flag (other tests in this binary
//! may bump the counters concurrently; every check here is monotonic).

use fstools::shell::Shell;

const COUNTERS: [&str; 23] = [
    "lookups",
    "rcu_walks",
    "fallbacks",
    "fallbacks_cache_miss",
    "fallbacks_d_seq",
    "fallbacks_dir_seq",
    "fallbacks_global_seq",
    "fallbacks_dead",
    "fallbacks_revalidate",
    "fallbacks_other",
    "fallbacks_poisoned",
    "dentry_alloc",
    "dentry_free",
    "negative_created",
    "negative_destroyed",
    "enoent",
    "locks",
    "shared_stores",
    "shrunk",
    "enomem",
    "transfers",
    "parallel_found",
    "in_lookup_waits",
];

/// Run `stats`; check its shape; return the counters by name.
fn stats(sh: &mut Shell) -> std::collections::BTreeMap<String, u64> {
    let out = sh.exec("stats");
    assert_eq!(out.last().map(String::as_str), Some("ok"), "{out:?}");
    let mut m = std::collections::BTreeMap::new();
    let mut names = Vec::new();
    for l in &out[..out.len() - 1] {
        let rest = l
            .strip_prefix("# ")
            .unwrap_or_else(|| panic!("not a # line: {l:?}"));
        let (name, v) = rest
            .split_once(' ')
            .unwrap_or_else(|| panic!("not `# name value`: {l:?}"));
        let v: u64 = v
            .parse()
            .unwrap_or_else(|_| panic!("value of {name} not a number: {l:?}"));
        names.push(name.to_string());
        m.insert(name.to_string(), v);
    }
    assert_eq!(
        names, COUNTERS,
        "stats prints each counter once, in a fixed order"
    );
    m
}

#[test]
fn stats_lines_and_counters_move() {
    for opts in &fs::dcache::design::mount_opts() {
        let mut sh = Shell::new(opts);
        assert_eq!(sh.exec("mkdir /a"), ["ok"]);
        let before = stats(&mut sh);
        for _ in 0..10 {
            assert_eq!(sh.exec("stat /a/missing"), ["err ENOENT"]);
        }
        assert_eq!(sh.exec("stat /a"), ["ok dir"]);
        let after = stats(&mut sh);
        assert!(
            after["lookups"] >= before["lookups"] + 11,
            "{opts}: {before:?} -> {after:?}"
        );
        assert!(
            after["enoent"] >= before["enoent"] + 10,
            "{opts}: {before:?} -> {after:?}"
        );
        let by_reason: u64 = COUNTERS[3..11].iter().map(|n| after[*n]).sum();
        assert_eq!(
            by_reason, after["fallbacks"],
            "fallbacks = sum of the reasons"
        );
    }
    fs::dcache::design::say_ran(
        "vfsh_stats_trace::stats_lines_and_counters_move",
        &fs::dcache::design::mount_opts(),
    );
}

#[test]
fn trace_prints_the_walk_before_the_result() {
    for opts in &fs::dcache::design::mount_opts() {
        let mut sh = Shell::new(opts);
        assert_eq!(sh.exec("mkdir /alpha"), ["ok"]);
        assert_eq!(sh.exec("mkdir /alpha/beta"), ["ok"]);
        assert_eq!(sh.exec("trace on"), ["ok"]);
        let out = sh.exec("stat /alpha/beta/missing");
        assert_eq!(
            out.last().map(String::as_str),
            Some("err ENOENT"),
            "{opts}: {out:?}"
        );
        let trace = &out[..out.len() - 1];
        assert!(
            !trace.is_empty(),
            "{opts}: traced stat printed no trace lines"
        );
        assert!(trace.iter().all(|l| l.starts_with("# ")), "{opts}: {out:?}");
        for name in ["alpha", "beta", "missing"] {
            assert!(
                trace.iter().any(|l| l.contains(name)),
                "{opts}: no trace line names the component {name}: {trace:?}"
            );
        }
        // Commands that look nothing up still print exactly one line each.
        assert_eq!(sh.exec("trace on"), ["ok"]);
        let out = sh.exec("stat /alpha");
        assert_eq!(out.last().map(String::as_str), Some("ok dir"));
        assert_eq!(sh.exec("trace off"), ["ok"]);
        assert_eq!(sh.exec("stat /alpha/beta/missing"), ["err ENOENT"]);
        assert_eq!(sh.exec("stat /alpha"), ["ok dir"]);
    }
}

#[test]
fn tracing_changes_no_answer_and_stays_with_its_shell() {
    let script = [
        "mkdir /d",
        "write /d/f x",
        "symlink /d/f /s",
        "read /s",
        "stat /d/nx",
        "rename /d/f /d/g",
        "ls /d",
        "rmdir /d",
        "unlink /d/g",
        "rmdir /d",
    ];
    let mut plain = Shell::new("enoent=noalloc");
    let mut traced = Shell::new("enoent=noalloc");
    assert_eq!(traced.exec("trace on"), ["ok"]);
    for cmd in script {
        let p = plain.exec(cmd);
        let t = traced.exec(cmd);
        // The untraced shell on the same thread never sees trace lines.
        assert_eq!(p.len(), 1, "{cmd}: {p:?}");
        let t_result: Vec<&String> = t.iter().filter(|l| !l.starts_with("# ")).collect();
        assert_eq!(t_result, [&p[0]], "{cmd}");
    }
}

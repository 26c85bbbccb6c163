//! Hand-written vfsh scripts with their expected output.
//!
//! Each `tests/scripts/NAME.vfsh` has a `NAME.out` next to it. The expected
//! files are Linux's answers: `expected_outputs_are_linux_answers` checks
//! them against host Linux (as root, in a chrooted tmpfs), and
//! `VFSH_BLESS=1 cargo test -p fs --test vfsh_scripts -- --ignored bless`
//! writes them from Linux after a script changed. Our engine must print the
//! same on every ENOENT design, in-process and through the `vfsh` binary.
//!
//! Touches: the script files (read; written only by `bless`), the vfsh
//! binary, and (Linux side) a private mount namespace and chroot of one
//! thread.

mod vfsh_linux;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use fstools::shell::Shell;
use qemu::process::output_with_stdin;

fn note(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

fn scripts_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/scripts")
}

/// (name, script text, expected output text), sorted by name.
fn scripts() -> Vec<(String, String, Option<String>)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(scripts_dir()).expect("tests/scripts") {
        let p = e.expect("dir entry").path();
        if p.extension().and_then(|x| x.to_str()) != Some("vfsh") {
            continue;
        }
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&p).expect("script");
        let out = std::fs::read_to_string(p.with_extension("out")).ok();
        v.push((name, text, out));
    }
    v.sort();
    assert!(
        v.len() >= 5,
        "scripts missing from {}",
        scripts_dir().display()
    );
    v
}

fn run_lines(mut exec: impl FnMut(&str) -> Vec<String>, text: &str) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        for l in exec(line) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// A readable first difference of two outputs, with the script line.
fn diff(script: &str, want: &str, got: &str) -> String {
    let cmds: Vec<&str> = script
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let mut s = String::new();
    for i in 0..w.len().max(g.len()) {
        let (a, b) = (w.get(i).copied(), g.get(i).copied());
        if a != b {
            let cmd = cmds.get(i).copied().unwrap_or("?");
            let cmd = if cmd.len() > 60 { &cmd[..60] } else { cmd };
            s.push_str(&format!(
                "  line {}: `{cmd}`\n    want: {}\n    got:  {}\n",
                i + 1,
                a.unwrap_or("(nothing)"),
                b.unwrap_or("(nothing)")
            ));
        }
    }
    s
}

#[test]
fn scripts_give_expected_output_on_every_design() {
    let mut failures = Vec::new();
    for (name, text, out) in scripts() {
        let want = out.unwrap_or_else(|| panic!("{name}.out missing (see the module doc: bless)"));
        for opts in &fs::dcache::design::mount_opts() {
            let mut sh = Shell::new(opts);
            let got = run_lines(|l| sh.exec(l), &text);
            if got != want {
                failures.push(format!(
                    "{name}.vfsh on {opts}:\n{}",
                    diff(&text, &want, &got)
                ));
            }
        }
    }
    fs::dcache::design::say_ran(
        "vfsh_scripts::scripts_give_expected_output_on_every_design",
        &fs::dcache::design::mount_opts(),
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn expected_outputs_are_linux_answers() {
    if let Some(why) = vfsh_linux::unavailable() {
        qemu::fixtures::skip("vfsh_scripts", "root", why);
        return;
    }
    // Read the scripts here: the sandbox thread is chrooted away from them.
    let all = scripts();
    let r = vfsh_linux::in_sandbox(move |sb| {
        let mut failures = Vec::new();
        for (name, text, out) in all {
            sb.reset().expect("reset");
            let mut lx = vfsh_linux::LinuxShell::new();
            let got = run_lines(|l| lx.exec(l), &text);
            match out {
                Some(want) if want == got => {}
                Some(want) => failures.push(format!(
                    "{name}.out is not what Linux says:\n{}",
                    diff(&text, &want, &got)
                )),
                None => failures.push(format!("{name}.out missing")),
            }
        }
        failures
    });
    match r {
        Ok(failures) => assert!(failures.is_empty(), "\n{}", failures.join("\n")),
        Err(why) => qemu::fixtures::skip(
            "vfsh_scripts",
            "the Linux sandbox",
            format!("cannot set it up: {why}"),
        ),
    }
}

/// Write every `NAME.out` from Linux's answers (root only).
#[test]
#[ignore = "writes tests/scripts/*.out; run with VFSH_BLESS=1 -- --ignored bless"]
fn bless() {
    if std::env::var("VFSH_BLESS").as_deref() != Ok("1") {
        note("bless: set VFSH_BLESS=1 to write the .out files");
        return;
    }
    if let Some(why) = vfsh_linux::unavailable() {
        panic!("bless needs the Linux side: {why}");
    }
    // The sandbox thread is chrooted: it only computes, this thread writes.
    let all = scripts();
    let outs = vfsh_linux::in_sandbox(move |sb| {
        let mut outs = Vec::new();
        for (name, text, _) in all {
            sb.reset().expect("reset");
            let mut lx = vfsh_linux::LinuxShell::new();
            outs.push((name, run_lines(|l| lx.exec(l), &text)));
        }
        outs
    })
    .expect("sandbox");
    for (name, got) in outs {
        let p = scripts_dir().join(format!("{name}.out"));
        std::fs::write(&p, got).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        note(&format!("bless: wrote {}", p.display()));
    }
}

fn vfsh_bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vfsh"))
}

#[test]
fn binary_runs_a_script_file_and_stdin() {
    let (_, text, out) = scripts()
        .into_iter()
        .find(|(n, _, _)| n == "basic")
        .expect("basic.vfsh");
    let want = out.expect("basic.out");
    let path = scripts_dir().join("basic.vfsh");

    let o = vfsh_bin().arg(&path).output().expect("run vfsh");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), want);

    let o = output_with_stdin(vfsh_bin().args(["-o", "enoent=negative"]), text.as_bytes())
        .expect("run vfsh");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), want);
}

#[test]
fn binary_answers_each_line_before_the_next_arrives() {
    use std::io::{BufRead, BufReader};
    let mut child = vfsh_bin()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn vfsh");
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    for (cmd, want) in [
        ("mkdir /a", "ok"),
        ("stat /a", "ok dir"),
        ("# comment", ""),
        ("stat /b", "err ENOENT"),
    ] {
        writeln!(input, "{cmd}").unwrap();
        input.flush().unwrap();
        if want.is_empty() {
            continue;
        }
        let mut line = String::new();
        output.read_line(&mut line).expect("answer");
        assert_eq!(line.trim_end(), want, "answer to {cmd}");
    }
    drop(input);
    assert!(child.wait().expect("vfsh exit").success());
}

#[test]
fn binary_rejects_bad_invocations_with_a_message() {
    let o = vfsh_bin().arg("/nonexistent/script.vfsh").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot open"));

    let o = vfsh_bin()
        .args(["-o", "enoent=bogus"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("enoent=bogus"));

    let o = vfsh_bin().arg("--frob").output().unwrap();
    assert_eq!(o.status.code(), Some(2));

    let o = vfsh_bin().arg("--help").output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("symlink TARGET P"));

    // Bad lines: err EINVAL on stdout, the reason on stderr; not UTF-8 too.
    let o = output_with_stdin(&mut vfsh_bin(), b"frob /a\nstat /\xff\nmkdir /a\n").unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "err EINVAL\nerr EINVAL\nok\n"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 1: unknown command `frob`"), "{err}");
    assert!(err.contains("line 2: not UTF-8"), "{err}");
}

#[test]
fn binary_prints_trace_and_stats_as_hash_lines() {
    let o = output_with_stdin(
        &mut vfsh_bin(),
        b"mkdir /a\ntrace on\nstat /a/nothere\ntrace off\nstat /a/nothere\nstats\n",
    )
    .unwrap();
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    // mkdir, trace on: one line each; the traced stat: # lines, then its result.
    assert_eq!(lines[..2], ["ok", "ok"], "{out}");
    let end = lines
        .iter()
        .position(|l| *l == "err ENOENT")
        .expect("traced result");
    assert!(end > 2, "no trace lines before the traced result:\n{out}");
    assert!(lines[2..end].iter().all(|l| l.starts_with("# ")), "{out}");
    assert!(lines[2..end].iter().any(|l| l.contains("nothere")), "{out}");
    // trace off, the untraced stat, then stats: `# name value` lines and ok.
    assert_eq!(lines[end + 1..end + 3], ["ok", "err ENOENT"], "{out}");
    let stats = &lines[end + 3..];
    assert_eq!(stats.last(), Some(&"ok"), "{out}");
    assert!(stats.len() > 5, "{out}");
    for l in &stats[..stats.len() - 1] {
        let mut w = l.split(' ');
        assert_eq!(w.next(), Some("#"), "{l}");
        assert!(w.next().is_some_and(|n| !n.is_empty()), "{l}");
        assert!(w.next().is_some_and(|v| v.parse::<u64>().is_ok()), "{l}");
        assert_eq!(w.next(), None, "{l}");
    }
}

/// `# name value` lines of one `stats` answer, by name.
fn counters(lines: &[&str]) -> std::collections::BTreeMap<String, u64> {
    lines
        .iter()
        .map(|l| {
            let mut w = l.strip_prefix("# ").expect("a # line").split(' ');
            let name = w.next().expect("a name").to_string();
            let v = w.next().and_then(|v| v.parse().ok()).expect("a value");
            (name, v)
        })
        .collect()
}

#[test]
fn binary_help_lists_every_command_step_and_design() {
    let o = output_with_stdin(&mut vfsh_bin(), b"help\nhelp me\n").expect("run vfsh");
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    // `help`: `# ` lines, then ok; `help me`: a wrong number of arguments.
    assert_eq!(lines[lines.len() - 2..], ["ok", "err EINVAL"], "{out}");
    let help = &lines[..lines.len() - 2];
    assert!(help.iter().all(|l| l.starts_with("# ")), "{out}");
    for u in fstools::shell::USAGE {
        assert!(
            help.contains(&format!("#   {u}").as_str()),
            "no `{u}`:\n{out}"
        );
    }
    assert!(
        out.contains("`step_into b`"),
        "race's two-word steps:\n{out}"
    );
    assert!(
        out.contains("without enoent=: noalloc"),
        "the default:\n{out}"
    );
    for d in fs::dcache::design::DESIGNS {
        assert!(
            help.iter()
                .any(|l| l.starts_with(&format!("#   {} ", d.name())) && l.ends_with(d.help())),
            "no design {}:\n{out}",
            d.name()
        );
    }
    // `vfsh --help` prints the same list.
    let o = vfsh_bin().arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    for l in help {
        assert!(text.contains(&l[2..]), "--help lacks {l:?}");
    }
}

#[test]
fn binary_stats_reset_counts_from_zero() {
    // A process of its own: nothing else moves its counters.
    let o = output_with_stdin(
        &mut vfsh_bin(),
        b"mkdir /a\nstat /a/x\nstat /a/x\nstats reset\nstats\nstat /a/x\nstats\n",
    )
    .expect("run vfsh");
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..4],
        ["ok", "err ENOENT", "err ENOENT", "ok"],
        "{out}"
    );
    let ends: Vec<usize> = (4..lines.len()).filter(|&i| lines[i] == "ok").collect();
    assert_eq!(ends.len(), 2, "two stats answers:\n{out}");
    let first = counters(&lines[4..ends[0]]);
    assert!(first.values().all(|&v| v == 0), "after reset: {first:?}");
    assert_eq!(lines[ends[0] + 1], "err ENOENT", "{out}");
    let second = counters(&lines[ends[0] + 2..ends[1]]);
    assert_eq!(
        second.keys().collect::<Vec<_>>(),
        first.keys().collect::<Vec<_>>()
    );
    assert_eq!(second["enoent"], 1, "{second:?}");
    assert!(second["lookups"] >= 1, "{second:?}");
}

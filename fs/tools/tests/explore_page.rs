//! The step-through page (docs/explore/index.html) in a real browser.
//!
//! Headless Chromium loads the committed page from disk with `#selftest`:
//! the page steps through every scenario by synthesized key presses (→
//! until the step counter stops, ↓ to the next scenario, `c` for the designs
//! side by side) and writes what it showed into `<pre id="selftest">`, which
//! `--dump-dom` prints. This test checks that against a fresh run of the same
//! scenarios through the vfsh engine: no console errors, as many steps shown
//! as `trace json` prints, the RCU-walk → ref-walk transition shown for every
//! race, the same answers, and beside each scenario with a committed Linux
//! walk every call of that walk (docs/explore/linux/). Then it takes a
//! screenshot into build/ (looked at by people, not compared).
//!
//! A stale page (the walk changed, `make explore` not rerun) fails here.
//! Without Chromium (Debian `chromium`, `make setup`) the test skips through
//! `qemu::fixtures::skip` (a failure under REQUIRE_FIXTURES=1, as in `make test`).
//!
//! Touches: runs chromium with a fresh profile under build/, writes build/.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fstools::explore::{linux, scenarios};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"].iter().find_map(|n| {
        std::env::split_paths(&path)
            .map(|d| d.join(n))
            .find(|p| p.is_file())
    })
}

/// Chromium with the flags the project allows, a fresh profile, a deadline.
fn run_chromium(bin: &Path, extra: &[String], profile: &Path) -> (String, String) {
    let _ = std::fs::remove_dir_all(profile);
    std::fs::create_dir_all(profile).unwrap();
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(extra)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start chromium");
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut so, &mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut se, &mut s);
        s
    });
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium ran over 120 s: {extra:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (t_out.join().unwrap(), t_err.join().unwrap())
}

fn unescape_html(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

#[test]
fn page_steps_every_scenario_in_chromium() {
    let Some(bin) = chromium() else {
        qemu::fixtures::skip(
            "explore_page",
            "Chromium",
            "no chromium on PATH (make setup installs Debian's chromium)",
        );
        return;
    };
    let page = root().join("docs/explore/index.html");
    let page = page
        .canonicalize()
        .expect("docs/explore/index.html (make explore)");
    let build = root().join("build");
    std::fs::create_dir_all(&build).unwrap();
    let profile = build.join("explore-chromium-profile");
    let url = format!("file://{}#selftest", page.display());
    let (dom, stderr) = run_chromium(
        &bin,
        &[
            "--virtual-time-budget=10000".into(),
            "--dump-dom".into(),
            url,
        ],
        &profile,
    );
    let start = dom
        .find("<pre id=\"selftest\"")
        .expect("the page wrote no self-test result");
    let body = &dom[start..];
    let body = &body[body.find('>').unwrap() + 1..body.find("</pre>").unwrap()];
    let report: Value = serde_json::from_str(&unescape_html(body)).expect("self-test JSON");

    // No console errors, in the page's own record or Chromium's log.
    assert_eq!(report["errors"], serde_json::json!([]), "page errors");
    for l in stderr.lines() {
        assert!(
            !(l.contains(":CONSOLE") && (l.contains("Uncaught") || l.contains("rror"))),
            "console error: {l}"
        );
    }

    let dir = root().join("docs/explore/linux");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    let walks: Vec<linux::Walk> = files
        .iter()
        .map(|f| {
            let rel = format!("docs/explore/linux/{f}");
            linux::parse_walk(&rel, &std::fs::read_to_string(root().join(&rel)).unwrap()).unwrap()
        })
        .collect();
    let shown = report["scenarios"].as_array().expect("scenarios");
    let all = scenarios::all();
    assert_eq!(shown.len(), all.len(), "every scenario stepped");
    for (s, r) in all.iter().zip(shown) {
        let run = scenarios::run(s).unwrap();
        assert_eq!(r["id"], s.id);
        assert_eq!(
            r["steps_shown"].as_u64(),
            Some(run.steps.len() as u64),
            "{}: steps shown vs `trace json` steps (stale page? run `make explore`)",
            s.id
        );
        assert!(
            r["answer"].as_str().unwrap().contains(&run.result),
            "{}: answer shown {} vs {}",
            s.id,
            r["answer"],
            run.result
        );
        assert!(
            r["steps_highlighting_a_dentry"].as_u64().unwrap() > 0,
            "{}: no step highlighted a dentry",
            s.id
        );
        if s.race.is_some() {
            assert_eq!(r["rcu_to_ref_shown"], true, "{}: RCU→ref not shown", s.id);
        }
        // Linux's walk beside it: every call of the committed walk shown,
        // in order (fs/tools/tests/explore_linux.rs checks the data itself).
        let want = linux::walks_for(s.id, &walks);
        match want.first() {
            None => assert!(
                r["linux"].is_null(),
                "{}: a Linux walk shown: {}",
                s.id,
                r["linux"]
            ),
            Some((w, _)) => {
                let shown: Vec<&str> = r["linux"]["calls"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{}: no Linux walk shown", s.id))
                    .iter()
                    .map(|c| c.as_str().unwrap())
                    .collect();
                let calls: Vec<&str> = w.calls.iter().map(|c| c.function.as_str()).collect();
                assert_eq!(r["linux"]["kernel"], w.kernel.as_str(), "{}", s.id);
                // The synthetic row of filename_lookup returning shows no call.
                assert_eq!(shown, calls, "{}: Linux calls shown vs {}", s.id, w.file);
            }
        }
    }
    let cmp = &report["compare"];
    assert_eq!(
        cmp["columns"],
        fs::dcache::design::DESIGNS.len(),
        "every registered design side by side"
    );
    assert_eq!(cmp["steps_shown"], cmp["expected"], "{cmp}");

    // A screenshot of a race at its failed check, for people to look at.
    let shot = build.join("explore.png");
    let _ = std::fs::remove_file(&shot);
    let at = format!("file://{}#race-rename@10", page.display());
    run_chromium(
        &bin,
        &[
            "--hide-scrollbars".into(),
            "--window-size=1280,1000".into(),
            "--virtual-time-budget=3000".into(),
            format!("--screenshot={}", shot.display()),
            at,
        ],
        &profile,
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a real PNG"
    );
    let _ = std::fs::remove_dir_all(&profile);
}

//! Linux's walks on the step-through page: the committed function graphs of
//! docs/explore/linux/ (`make linux-walks`) against the committed page
//! (docs/explore/index.html, `make explore`).
//!
//! - every function a committed walk names has its place on the page
//!   (`fstools::explore::linux::place`); a new kernel that calls a
//!   function nobody placed fails here until it is placed;
//! - every walk the page shows is the committed one, call for call, and
//!   its rows hold every call exactly once and every step of ours, each
//!   difference with its reason;
//! - the walks say what the designs say: transient's Linux walk allocates
//!   in `d_alloc_parallel` (`__d_alloc`) and kills the dentry
//!   (`__dentry_kill` or `dentry_kill`); a noalloc build's walk, once traced,
//!   answers in `lookup_fast` without `try_to_unlazy`.
//!
//! Touches: reads docs/ only.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use fstools::explore::linux;
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn committed_walks() -> Vec<linux::Walk> {
    let dir = root().join("docs/explore/linux");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no committed Linux walk");
    files
        .iter()
        .map(|f| {
            let rel = format!("docs/explore/linux/{f}");
            let text = std::fs::read_to_string(root().join(&rel)).unwrap();
            linux::parse_walk(&rel, &text).unwrap()
        })
        .collect()
}

fn page_data() -> Value {
    let html = std::fs::read_to_string(root().join("docs/explore/index.html")).unwrap();
    let start = html.find("const DATA = ").expect("the page's data") + "const DATA = ".len();
    let line = &html[start..start + html[start..].find('\n').unwrap()];
    serde_json::from_str(line.trim_end_matches(';').replace("<\\/", "</").as_str()).unwrap()
}

#[test]
fn every_function_of_a_committed_walk_is_placed() {
    for w in committed_walks() {
        for c in &w.calls {
            assert!(
                linux::place(&c.function).is_some(),
                "{}: the page does not place Linux function `{}` \
                 (fs/tools/src/explore/linux.rs: PLACES)",
                w.file,
                c.function
            );
        }
    }
}

#[test]
fn the_page_shows_each_committed_walk_whole_beside_our_steps() {
    let walks = committed_walks();
    let data = page_data();
    let mut shown = BTreeSet::new();
    for sc in data["scenarios"].as_array().unwrap() {
        let id = sc["id"].as_str().unwrap();
        let steps = sc["steps"].as_array().unwrap().len();
        let want: Vec<String> = linux::walks_for(id, &walks)
            .iter()
            .map(|(w, _)| w.file.clone())
            .collect();
        let got: Vec<String> = sc["linux"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["file"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            got, want,
            "{id}: the page shows other Linux walks than committed (make explore)"
        );
        for l in sc["linux"].as_array().unwrap() {
            let file = l["file"].as_str().unwrap();
            shown.insert(file.to_string());
            let w = walks.iter().find(|w| w.file == file).unwrap();
            let calls = l["calls"].as_array().unwrap();
            assert_eq!(calls.len(), w.calls.len(), "{id} {file}");
            for (c, wc) in calls.iter().zip(&w.calls) {
                assert_eq!(c[0].as_str().unwrap(), wc.function, "{id} {file}");
                assert_eq!(c[1].as_u64().unwrap(), u64::from(wc.depth), "{id} {file}");
            }
            let mut linux_seen = vec![0u32; calls.len()];
            let mut ours_seen = vec![0u32; steps];
            for r in l["rows"].as_array().unwrap() {
                let k = r["k"].as_str().unwrap();
                if k == "linux" || k == "ours" {
                    assert!(
                        r["why"].as_str().is_some_and(|s| !s.is_empty()),
                        "{id} {file}: a difference without a reason: {r}"
                    );
                }
                let range = |v: &Value| {
                    v.as_array().map(|a| {
                        (
                            a[0].as_u64().unwrap() as usize,
                            a[1].as_u64().unwrap() as usize,
                        )
                    })
                };
                if let Some((a, b)) = range(&r["o"]) {
                    (a..=b).for_each(|i| ours_seen[i] += 1);
                }
                if let (Some((a, b)), false) = (range(&r["l"]), r["end"].as_bool().unwrap()) {
                    (a..=b).for_each(|i| linux_seen[i] += 1);
                }
            }
            assert!(
                linux_seen.iter().all(|&n| n == 1),
                "{id} {file}: not every Linux call in exactly one row: {linux_seen:?}"
            );
            assert!(
                ours_seen.iter().all(|&n| n == 1),
                "{id} {file}: not every step of ours in exactly one row: {ours_seen:?}"
            );
        }
    }
    assert!(!shown.is_empty(), "the page shows no Linux walk");
}

/// The functions of a walk, in order.
fn functions(w: &linux::Walk) -> Vec<&str> {
    w.calls.iter().map(|c| c.function.as_str()).collect()
}

#[test]
fn linux_walks_do_what_the_designs_say() {
    let walks = committed_walks();
    let transient = linux::walks_for("transient", &walks);
    assert!(!transient.is_empty(), "no Linux walk beside transient");
    for (w, _) in transient {
        let f = functions(w);
        let at = |n: &str| f.iter().position(|x| *x == n);
        let (dap, alloc) = (at("d_alloc_parallel"), at("__d_alloc"));
        let kill = at("__dentry_kill").or(at("dentry_kill"));
        assert!(
            dap.is_some() && alloc > dap && kill > alloc,
            "{}: transient's walk should allocate in d_alloc_parallel and kill the dentry: {f:?}",
            w.file
        );
        assert!(at("try_to_unlazy") < dap, "{}", w.file);
    }
    for w in walks
        .iter()
        .filter(|w| w.kernel.ends_with("-noalloc") && w.case == "tmpfs-missing")
    {
        let f = functions(w);
        assert!(
            !f.contains(&"try_to_unlazy"),
            "{}: noalloc left RCU-walk: {f:?}",
            w.file
        );
        assert!(
            !f.contains(&"d_alloc_parallel"),
            "{}: noalloc allocated: {f:?}",
            w.file
        );
        let last_step = f
            .iter()
            .rev()
            .find(|n| matches!(linux::place(n), Some(linux::Place::Step(_))))
            .unwrap();
        assert_eq!(*last_step, "lookup_fast", "{}: {f:?}", w.file);
        assert_eq!(w.result, "ENOENT", "{}", w.file);
    }
}

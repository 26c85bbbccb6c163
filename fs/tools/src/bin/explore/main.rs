//! `explore`: writes the step-through page of the lookup walk
//! (docs/explore/index.html, `make explore`).
//!
//! Runs every scenario of `fstools::explore::scenarios` through the vfsh engine
//! with `trace on` and `trace json`, finds the source line of each step's
//! function, and writes one self-contained HTML file: the page template
//! (`page.html`, with its CSS and JS inline) with the data as one JSON
//! object. No network, no external script or font.
//!
//! Beside a scenario the page shows Linux's own walk of the same stat: the
//! committed function graphs of docs/explore/linux/ (`make linux-walks`),
//! aligned with our steps by `fstools::explore::linux`, each difference
//! with its reason from docs/lookup-path.md. A committed walk that names a
//! function the page does not place, or a difference without a reason,
//! fails the run.
//!
//! `explore [--out FILE] [--root DIR]`: FILE defaults to
//! docs/explore/index.html, DIR (the repository root, for source lines, the
//! Linux walks and the reasons) to `.`.
//!
//! Touches: reads fs/src sources, docs/explore/linux/, docs/lookup-path.md;
//! writes FILE.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

use fstools::explore::{linux, scenarios};
use fstools::shell::steps::json_str;

const PAGE: &str = include_str!("page.html");

/// `fs/src/namei.rs: Nd::a, b; fs/src/dcache/mod.rs: c` →
/// `[[file, function, line]…]`, the line of `fn NAME` in the file (0: not found).
fn links(root: &str, src: &str, cache: &mut BTreeMap<String, String>) -> String {
    let mut out = String::from("[");
    let mut first = true;
    for part in src.split("; ") {
        let Some((file, funcs)) = part.split_once(": ") else {
            continue;
        };
        let text = cache.entry(file.to_string()).or_insert_with(|| {
            std::fs::read_to_string(format!("{root}/{file}")).unwrap_or_default()
        });
        for f in funcs.split(", ") {
            let bare = f.rsplit("::").next().unwrap_or(f);
            let pat = format!("fn {bare}");
            let line = text
                .lines()
                .position(|l| {
                    l.trim_start()
                        .trim_start_matches("pub(crate) ")
                        .trim_start_matches("pub ")
                        .starts_with(&pat)
                        && l[l.find(&pat).unwrap() + pat.len()..].starts_with(['(', '<'])
                })
                .map_or(0, |i| i + 1);
            if !first {
                out.push(',');
            }
            first = false;
            out.push('[');
            json_str(&mut out, file);
            out.push(',');
            json_str(&mut out, f);
            let _ = write!(out, ",{line}]");
        }
    }
    out.push(']');
    out
}

/// `hash=0x0123…` → `hash=0x…`.
fn mask_hash(l: &str) -> String {
    let mut out = String::with_capacity(l.len());
    let mut rest = l;
    while let Some(p) = rest.find("hash=0x") {
        out.push_str(&rest[..p + 7]);
        out.push('…');
        rest = rest[p + 7..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    out
}

fn strs(out: &mut String, v: &[&str]) {
    out.push('[');
    for (i, s) in v.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_str(out, s);
    }
    out.push(']');
}

/// The committed Linux walks (sorted by file name) and the reasons.
fn linux_inputs(root: &str) -> Result<(Vec<linux::Walk>, BTreeMap<String, String>), String> {
    let dir = format!("{root}/docs/explore/linux");
    let mut files: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".json"))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    let mut walks = Vec::new();
    for f in files {
        let rel = format!("docs/explore/linux/{f}");
        let text =
            std::fs::read_to_string(format!("{root}/{rel}")).map_err(|e| format!("{rel}: {e}"))?;
        let w = linux::parse_walk(&rel, &text)?;
        if let Some(c) = w.calls.iter().find(|c| linux::place(&c.function).is_none()) {
            return Err(format!(
                "{rel}: the page does not place Linux function `{}` (fs/tools/src/explore/linux.rs: PLACES)",
                c.function
            ));
        }
        walks.push(w);
    }
    let md = std::fs::read_to_string(format!("{root}/docs/lookup-path.md"))
        .map_err(|e| format!("docs/lookup-path.md: {e}"))?;
    Ok((walks, linux::parse_reasons(&md)))
}

/// The `"linux"` field of a scenario: each Linux walk beside it, aligned.
fn linux_json(
    id: &str,
    steps: &[String],
    walks: &[linux::Walk],
    reasons: &BTreeMap<String, String>,
) -> Result<String, String> {
    let funcs: Vec<String> = steps
        .iter()
        .map(|s| {
            serde_json::from_str::<serde_json::Value>(s)
                .ok()
                .and_then(|v| v.get("function")?.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect();
    let funcs: Vec<&str> = funcs.iter().map(String::as_str).collect();
    let mut out = String::from("[");
    for (n, (w, note)) in linux::walks_for(id, walks).into_iter().enumerate() {
        let rows = linux::align(&funcs, w, reasons)?;
        if n > 0 {
            out.push(',');
        }
        out.push('{');
        for (k, v) in [
            ("kernel", w.kernel.as_str()),
            ("note", note),
            ("file", &w.file),
            ("uname", &w.uname),
            ("source", &w.source),
            ("case", &w.case),
            ("path", &w.path),
            ("root", &w.root),
            ("result", &w.result),
            ("tracer", &w.tracer),
            ("command", &w.command),
        ] {
            json_str(&mut out, k);
            out.push(':');
            json_str(&mut out, v);
            out.push(',');
        }
        out.push_str("\"calls\":[");
        for (i, c) in w.calls.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('[');
            json_str(&mut out, &c.function);
            let _ = write!(out, ",{}", c.depth);
            match c.duration_us {
                Some(d) => {
                    let _ = write!(out, ",{d}]");
                }
                None => out.push_str(",null]"),
            }
        }
        out.push_str("],\"rows\":[");
        let pair = |o: &mut String, r: Option<(usize, usize)>| match r {
            Some((a, b)) => {
                let _ = write!(o, "[{a},{b}]");
            }
            None => o.push_str("null"),
        };
        for (i, r) in rows.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"k\":");
            json_str(&mut out, r.kind.name());
            out.push_str(",\"o\":");
            pair(&mut out, r.ours);
            out.push_str(",\"l\":");
            pair(&mut out, r.linux);
            let _ = write!(out, ",\"end\":{}", r.end.is_some());
            out.push_str(",\"why\":");
            match &r.reason {
                Some(w) => json_str(&mut out, w),
                None => out.push_str("null"),
            }
            out.push('}');
        }
        out.push_str("]}");
    }
    out.push(']');
    Ok(out)
}

/// `--side-by-side ID`: scenario ID beside each of its Linux walks, as text
/// (the blocks of docs/lookup-path.md's "Beside Linux's own walk").
fn print_side_by_side(
    id: &str,
    walks: &[linux::Walk],
    reasons: &BTreeMap<String, String>,
) -> ExitCode {
    let all = scenarios::all();
    let Some(s) = all.iter().find(|s| s.id == id) else {
        eprintln!("explore: no scenario {id}");
        return ExitCode::from(2);
    };
    let run = match scenarios::run(s) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("explore: {e}");
            return ExitCode::FAILURE;
        }
    };
    let field = |st: &str, k: &str| {
        serde_json::from_str::<serde_json::Value>(st)
            .ok()
            .and_then(|v| v.get(k)?.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    let funcs: Vec<String> = run.steps.iter().map(|st| field(st, "function")).collect();
    let names: Vec<String> = run.steps.iter().map(|st| field(st, "step")).collect();
    let funcs: Vec<&str> = funcs.iter().map(String::as_str).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    for (w, _) in linux::walks_for(id, walks) {
        match linux::align(&funcs, w, reasons) {
            Ok(rows) => println!("{}", linux::side_by_side(&names, w, &rows)),
            Err(e) => {
                eprintln!("explore: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// The page's inputs that last across scenarios: the Linux walks and
/// reasons beside ours, and the source links found so far.
struct Page<'a> {
    root: &'a str,
    walks: &'a [linux::Walk],
    reasons: &'a BTreeMap<String, String>,
    /// Each step's `src` → its links (a JSON object).
    srcs: BTreeMap<String, String>,
    /// Source files read so far (for `links`).
    cache: BTreeMap<String, String>,
}

impl Page<'_> {
    /// One scenario, run (a raced answer must equal its ground truth), as
    /// the page's JSON object; its steps' sources join `srcs`.
    fn scenario_json(&mut self, s: &scenarios::Scenario) -> Result<String, String> {
        let run = scenarios::run(s)?;
        if let Some(t) = &run.truth {
            if *t != run.result {
                return Err(format!(
                    "{}: raced answer {} differs from the ground truth {t}",
                    s.id, run.result
                ));
            }
        }
        let mut data = String::from("{\"id\":");
        json_str(&mut data, s.id);
        for (k, v) in [
            ("group", s.group),
            ("title", s.title),
            ("design", s.design),
            ("command", s.command),
            ("intro", s.intro),
            ("watch", s.watch),
            ("result", &run.result),
        ] {
            let _ = write!(data, ",\"{k}\":");
            json_str(&mut data, v);
        }
        data.push_str(",\"truth\":");
        match &run.truth {
            Some(t) => json_str(&mut data, t),
            None => data.push_str("null"),
        }
        data.push_str(",\"setup\":");
        strs(&mut data, s.setup);
        data.push_str(",\"race\":");
        match s.race {
            Some((step, cmd)) => {
                data.push_str("{\"step\":");
                json_str(&mut data, step);
                data.push_str(",\"cmd\":");
                json_str(&mut data, cmd);
                data.push('}');
            }
            None => data.push_str("null"),
        }
        data.push_str(",\"text\":");
        // Name hashes are seeded per run: masked (as docs/lookup-path.md
        // does) so that the page only changes when the walk does.
        let masked: Vec<String> = run.text.iter().map(|l| mask_hash(l)).collect();
        let text: Vec<&str> = masked.iter().map(String::as_str).collect();
        strs(&mut data, &text);
        data.push_str(",\"steps\":[");
        for (j, st) in run.steps.iter().enumerate() {
            if j > 0 {
                data.push(',');
            }
            data.push_str(st);
            self.note_src(st);
        }
        data.push_str("],\"linux\":");
        data.push_str(&linux_json(s.id, &run.steps, self.walks, self.reasons)?);
        data.push('}');
        Ok(data)
    }

    /// The step's "src" string joins the links table.
    fn note_src(&mut self, step: &str) {
        let Some(p) = step.find("\"src\":\"") else {
            return;
        };
        let rest = &step[p + 7..];
        if let Some(e) = rest.find('"') {
            let src = &rest[..e];
            if !self.srcs.contains_key(src) {
                let l = links(self.root, src, &mut self.cache);
                self.srcs.insert(src.to_string(), l);
            }
        }
    }

    /// The page's data: every scenario and the links table.
    fn data(&mut self, all: &[scenarios::Scenario]) -> Result<String, String> {
        let mut data = String::from("{\"scenarios\":[");
        for (i, s) in all.iter().enumerate() {
            if i > 0 {
                data.push(',');
            }
            data.push_str(&self.scenario_json(s)?);
        }
        data.push_str("],\"links\":{");
        for (i, (k, v)) in self.srcs.iter().enumerate() {
            if i > 0 {
                data.push(',');
            }
            json_str(&mut data, k);
            data.push(':');
            data.push_str(v);
        }
        data.push_str("}}");
        Ok(data)
    }
}

/// page.html with `data` in place of its placeholder, written to `out_path`.
fn write_page(out_path: &str, data: &str) -> Result<(), String> {
    // Inside <script>: no "</" may end it early.
    let data = data.replace("</", "<\\/");
    let Some((head, tail)) = PAGE.split_once("/*DATA*/null") else {
        return Err("page.html has no /*DATA*/null placeholder".into());
    };
    let html = format!("{head}{data}{tail}");
    if let Some(dir) = std::path::Path::new(out_path).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(out_path, html).map_err(|e| format!("cannot write {out_path}: {e}"))
}

fn main() -> ExitCode {
    let mut out_path = "docs/explore/index.html".to_string();
    let mut side: Option<String> = None;
    let mut root = ".".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--out", Some(v)) => out_path = v,
            ("--root", Some(v)) => root = v,
            ("--side-by-side", Some(v)) => side = Some(v),
            _ => {
                eprintln!("usage: explore [--out FILE] [--root DIR] [--side-by-side SCENARIO]");
                return ExitCode::from(2);
            }
        }
    }
    let (walks, reasons) = match linux_inputs(&root) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("explore: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(id) = side {
        return print_side_by_side(&id, &walks, &reasons);
    }
    let mut page = Page {
        root: &root,
        walks: &walks,
        reasons: &reasons,
        srcs: BTreeMap::new(),
        cache: BTreeMap::new(),
    };
    let all = scenarios::all();
    match page
        .data(&all)
        .and_then(|data| write_page(&out_path, &data))
    {
        Ok(()) => {
            println!("explore: wrote {out_path} ({} scenarios)", all.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("explore: {e}");
            ExitCode::FAILURE
        }
    }
}

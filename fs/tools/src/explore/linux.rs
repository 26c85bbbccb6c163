//! Linux's own walk beside ours on the step-through page: the function
//! graphs `make linux-walks` committed under docs/explore/linux/ (one JSON
//! per kernel and case: `calls` of `function`, `depth`, `duration_us`),
//! each function given its place ([`place`]) and the walk aligned with our
//! steps ([`align`]); where the two differ, the reason comes from
//! docs/lookup-path.md's "Differences from Linux, on purpose"
//! ([`parse_reasons`]).
//!
//! Reads the files it is given; writes nothing. Host only (`std`).

use std::collections::BTreeMap;
use std::string::{String, ToString};
use std::vec::Vec;

use serde_json::Value;

/// Where a Linux function sits beside our steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The namesake of our step `func` (`lookup_fast`, `step_into`, …):
    /// the row of that step.
    Step(&'static str),
    /// Part of the row it appears in: a helper, a lock, a reference count,
    /// the filesystem's own lookup.
    Within,
    /// Opens the next row: a frame around steps (`walk_component`), or
    /// what the next step begins with (`down_read` before `__lookup_slow`).
    Next,
    /// A step Linux takes that ours does not: its own row, with the reason
    /// keyed `linux:KEY` in docs/lookup-path.md.
    Linux(&'static str),
}

/// Every function `qemu/linuxref/walk-functions.txt` keeps, placed.
pub const PLACES: &[(&str, Place)] = &[
    // fs/stat.c and the syscall: the frame around the walk.
    ("__x64_sys_newfstatat", Place::Next),
    ("vfs_fstatat", Place::Next),
    ("vfs_statx", Place::Next),
    ("getname_flags", Place::Next),
    ("getname", Place::Next),
    ("putname", Place::Within),
    ("vfs_statx_path", Place::Linux("vfs_getattr")),
    ("vfs_getattr", Place::Linux("vfs_getattr")),
    ("vfs_getattr_nosec", Place::Linux("vfs_getattr")),
    ("shmem_getattr", Place::Within),
    ("ext4_getattr", Place::Within),
    ("generic_fillattr", Place::Within),
    ("path_put", Place::Linux("path_put")),
    // fs/namei.c
    ("filename_lookup", Place::Next),
    ("path_lookupat", Place::Next),
    ("set_nameidata", Place::Next),
    ("restore_nameidata", Place::Within),
    ("path_init", Place::Step("walk")),
    ("nd_jump_root", Place::Within),
    ("set_root", Place::Within),
    ("link_path_walk", Place::Next),
    ("walk_component", Place::Next),
    ("lookup_last", Place::Next),
    ("lookup_one_common", Place::Within),
    ("may_lookup", Place::Linux("may_lookup")),
    ("inode_permission", Place::Linux("may_lookup")),
    ("generic_permission", Place::Within),
    ("lookup_fast", Place::Step("lookup_fast")),
    ("lookup_slow", Place::Step("lookup_slow")),
    ("__lookup_slow", Place::Step("lookup_slow")),
    ("step_into", Place::Step("step_into")),
    ("step_into_slowpath", Place::Step("step_into")),
    ("handle_mounts", Place::Step("step_into")),
    ("__follow_mount_rcu", Place::Within),
    ("traverse_mounts", Place::Within),
    ("pick_link", Place::Within),
    ("handle_dots", Place::Step("handle_dots")),
    ("follow_dotdot", Place::Step("handle_dots")),
    ("follow_dotdot_rcu", Place::Step("handle_dots")),
    ("try_to_unlazy", Place::Step("try_to_unlazy")),
    ("try_to_unlazy_next", Place::Step("try_to_unlazy")),
    ("legitimize_links", Place::Within),
    ("legitimize_path", Place::Within),
    ("__legitimize_path", Place::Within),
    ("legitimize_root", Place::Within),
    ("drop_links", Place::Within),
    ("complete_walk", Place::Step("complete_walk")),
    ("terminate_walk", Place::Linux("terminate_walk")),
    // fs/dcache.c
    ("__d_lookup_rcu", Place::Within),
    ("__d_lookup_rcu_op_compare", Place::Within),
    ("__d_lookup", Place::Within),
    ("d_lookup", Place::Within),
    ("d_same_name", Place::Within),
    ("d_alloc_parallel", Place::Step("d_alloc_parallel")),
    ("d_alloc", Place::Within),
    ("__d_alloc", Place::Within),
    ("d_set_d_op", Place::Within),
    ("d_wait_lookup", Place::Within),
    ("d_add", Place::Step("d_add")),
    ("d_splice_alias", Place::Step("d_add")),
    ("d_splice_alias_ops", Place::Within),
    ("__d_add", Place::Within),
    ("__d_rehash", Place::Within),
    ("d_instantiate", Place::Within),
    ("d_lookup_done", Place::Within),
    ("__d_lookup_done", Place::Within),
    ("__d_lookup_unhash", Place::Within),
    ("__d_lookup_unhash_wake", Place::Within),
    ("dget_parent", Place::Within),
    ("dput", Place::Linux("dput")),
    ("fast_dput", Place::Within),
    ("retain_dentry", Place::Within),
    ("always_delete_dentry", Place::Within),
    ("lock_for_kill", Place::Within),
    ("dentry_kill", Place::Within),
    ("__dentry_kill", Place::Within),
    ("dentry_unlink_inode", Place::Within),
    ("d_lru_add", Place::Within),
    ("d_lru_del", Place::Within),
    ("dentry_free", Place::Within),
    ("d_free", Place::Within),
    ("__d_free", Place::Within),
    ("__d_drop", Place::Within),
    ("___d_drop", Place::Within),
    ("d_delete", Place::Within),
    // the filesystems' lookups
    ("simple_lookup", Place::Within),
    ("shmem_lookup", Place::Within),
    ("ext4_lookup", Place::Within),
    ("__ext4_find_entry", Place::Within),
    ("ext4_find_entry", Place::Within),
    ("ext4_fname_setup_filename", Place::Within),
    ("ext4_dx_find_entry", Place::Within),
    // locks, reference counts, RCU, the allocator
    ("down_read", Place::Next),
    ("down_write", Place::Next),
    ("up_read", Place::Within),
    ("up_write", Place::Within),
    ("_raw_spin_lock", Place::Within),
    ("_raw_spin_unlock", Place::Within),
    ("_raw_spin_lock_nested", Place::Within),
    ("_raw_spin_trylock", Place::Within),
    ("_raw_spin_lock_irq", Place::Within),
    ("_raw_spin_unlock_irq", Place::Within),
    ("_raw_spin_lock_irqsave", Place::Within),
    ("_raw_spin_unlock_irqrestore", Place::Within),
    ("lockref_get", Place::Within),
    ("lockref_get_not_dead", Place::Within),
    ("lockref_get_not_zero", Place::Within),
    ("lockref_put_return", Place::Within),
    ("lockref_put_or_lock", Place::Within),
    ("lockref_mark_dead", Place::Within),
    ("mntget", Place::Within),
    ("mntput", Place::Within),
    ("mntput_no_expire", Place::Within),
    ("__legitimize_mnt", Place::Within),
    ("legitimize_mnt", Place::Within),
    ("call_rcu", Place::Within),
    ("__rcu_read_lock", Place::Within),
    ("__rcu_read_unlock", Place::Within),
    ("kmem_cache_alloc_lru", Place::Within),
    ("kmem_cache_alloc_lru_noprof", Place::Within),
    ("kmem_cache_alloc_noprof", Place::Within),
    ("kmem_cache_free", Place::Within),
];

/// The place of Linux function `f`, if the page knows it.
pub fn place(f: &str) -> Option<Place> {
    PLACES.iter().find(|(n, _)| *n == f).map(|(_, p)| *p)
}

/// One call of a Linux walk.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub function: String,
    pub depth: u32,
    pub duration_us: Option<f64>,
}

/// A committed Linux walk (docs/explore/linux/KERNEL.CASE.json).
#[derive(Clone, Debug, PartialEq)]
pub struct Walk {
    /// The file it came from, relative to the repository.
    pub file: String,
    /// How the page names the kernel (`Debian 6.12.117`, `6.12.117-noalloc`).
    pub kernel: String,
    pub uname: String,
    pub source: String,
    pub case: String,
    pub path: String,
    pub root: String,
    pub result: String,
    pub tracer: String,
    pub command: String,
    pub calls: Vec<Call>,
}

/// Reads one committed walk.
pub fn parse_walk(file: &str, text: &str) -> Result<Walk, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| std::format!("{file}: {e}"))?;
    let s = |k: &str| -> Result<String, String> {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| std::format!("{file}: no string `{k}`"))
    };
    let calls = v
        .get("calls")
        .and_then(Value::as_array)
        .ok_or_else(|| std::format!("{file}: no `calls` array"))?
        .iter()
        .map(|c| {
            Ok(Call {
                function: c
                    .get("function")
                    .and_then(Value::as_str)
                    .ok_or_else(|| std::format!("{file}: a call without `function`"))?
                    .to_string(),
                depth: c
                    .get("depth")
                    .and_then(Value::as_u64)
                    .and_then(|d| u32::try_from(d).ok())
                    .ok_or_else(|| std::format!("{file}: a call without `depth`"))?,
                duration_us: c.get("duration_us").and_then(Value::as_f64),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Walk {
        file: file.to_string(),
        kernel: s("kernel")?,
        uname: s("uname")?,
        source: s("source")?,
        case: s("case")?,
        path: s("path")?,
        root: s("root")?,
        result: s("result")?,
        tracer: s("tracer")?,
        command: s("command")?,
        calls,
    })
}

/// The reasons of docs/lookup-path.md's "Differences from Linux, on
/// purpose": `- Linux `KEY`: reason` → `linux:KEY`, `- Ours `KEY`: reason`
/// → `ours:KEY` (an item may wrap onto indented lines).
pub fn parse_reasons(md: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut inside = false;
    let mut cur: Option<(String, String)> = None;
    let mut flush = |cur: &mut Option<(String, String)>| {
        if let Some((k, v)) = cur.take() {
            out.insert(k, v);
        }
    };
    for line in md.lines() {
        if line.starts_with("## ") {
            flush(&mut cur);
            inside = line.trim() == "## Differences from Linux, on purpose";
            continue;
        }
        if !inside {
            continue;
        }
        let item = line
            .strip_prefix("- Linux `")
            .map(|r| ("linux", r))
            .or_else(|| line.strip_prefix("- Ours `").map(|r| ("ours", r)));
        if let Some((side, rest)) = item {
            flush(&mut cur);
            if let Some((key, reason)) = rest.split_once('`') {
                let reason = reason.trim_start_matches(|c: char| c != ':');
                let reason = reason.strip_prefix(':').unwrap_or(reason).trim();
                cur = Some((std::format!("{side}:{key}"), reason.to_string()));
            }
        } else if line.starts_with("  ") && !line.trim().is_empty() {
            if let Some((_, v)) = cur.as_mut() {
                v.push(' ');
                v.push_str(line.trim());
            }
        } else {
            flush(&mut cur);
        }
    }
    flush(&mut cur);
    out
}

/// What a row of the side-by-side shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The same step on both sides.
    Same,
    /// A step Linux takes that ours does not.
    LinuxOnly,
    /// A step ours takes that Linux does not.
    OursOnly,
    /// Linux's frame before the first step (the syscall, `filename_lookup`).
    Context,
}

impl Kind {
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Same => "same",
            Kind::LinuxOnly => "linux",
            Kind::OursOnly => "ours",
            Kind::Context => "context",
        }
    }
}

/// One row: our steps `ours` (first..=last index) beside Linux's calls
/// `linux` (first..=last index; `end` marks the synthetic row of
/// `filename_lookup` returning), and for a difference its reason.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub kind: Kind,
    pub ours: Option<(usize, usize)>,
    pub linux: Option<(usize, usize)>,
    /// The row stands for `filename_lookup` returning (call index of it).
    pub end: Option<usize>,
    pub reason: Option<String>,
    /// The reason's key (`linux:may_lookup`, `ours:step_into`).
    pub reason_key: Option<String>,
}

/// A Linux row before alignment.
struct Group {
    key: Option<String>,
    /// `linux:KEY` for a difference.
    reason_key: Option<String>,
    calls: (usize, usize),
    end: Option<usize>,
    head_depth: u32,
    open: bool,
}

/// Linux's calls cut into rows (every call in exactly one), each keyed by
/// the step of ours it is the namesake of.
fn linux_groups(w: &Walk) -> Result<Vec<Group>, String> {
    let mut groups: Vec<Group> = Vec::new();
    let mut pending: Option<usize> = None;
    let lookup = w.calls.iter().position(|c| c.function == "filename_lookup");
    let mut end_done = false;
    for (i, c) in w.calls.iter().enumerate() {
        let Some(p) = place(&c.function) else {
            return Err(std::format!(
                "{}: the page does not place Linux function `{}` (fs/tools/src/explore/linux.rs: PLACES)",
                w.file,
                c.function
            ));
        };
        // `filename_lookup` returned: the row of our answer.
        if let Some(l) = lookup {
            if !end_done && i > l && c.depth <= w.calls[l].depth {
                groups.push(Group {
                    key: Some("filename_lookup".into()),
                    reason_key: None,
                    calls: (l, l),
                    end: Some(l),
                    head_depth: c.depth,
                    open: false,
                });
                end_done = true;
            }
        }
        if let Some(g) = groups.last_mut() {
            if c.depth <= g.head_depth {
                g.open = false;
            }
        }
        let start = pending.take().unwrap_or(i);
        let (key, reason_key) = match p {
            Place::Step(f) => (Some(f.to_string()), None),
            Place::Linux(k) => (None, Some(std::format!("linux:{k}"))),
            Place::Next => {
                pending = Some(start);
                continue;
            }
            Place::Within => {
                match groups.last_mut() {
                    Some(g) if g.end.is_none() => g.calls.1 = i,
                    _ => pending = Some(start),
                }
                continue;
            }
        };
        // A call inside the row's first call, of the same step (or inside
        // a Linux-only row), is part of that row.
        let merge = groups.last().is_some_and(|g| {
            g.end.is_none()
                && g.open
                && ((key.is_some() && g.key == key) || (g.reason_key.is_some() && key.is_none()))
        });
        if merge {
            let g = groups.last_mut().expect("checked");
            g.calls.1 = i;
            continue;
        }
        // What opened before the first step is the frame around the walk.
        if groups.is_empty() && start < i {
            groups.push(Group {
                key: None,
                reason_key: None,
                calls: (start, i - 1),
                end: None,
                head_depth: 0,
                open: false,
            });
            groups.push(Group {
                key,
                reason_key,
                calls: (i, i),
                end: None,
                head_depth: c.depth,
                open: true,
            });
            continue;
        }
        groups.push(Group {
            key,
            reason_key,
            calls: (start, i),
            end: None,
            head_depth: c.depth,
            open: true,
        });
    }
    if let Some(start) = pending {
        match groups.last_mut() {
            Some(g) if g.end.is_none() => g.calls.1 = w.calls.len() - 1,
            _ => groups.push(Group {
                key: None,
                reason_key: None,
                calls: (start, w.calls.len() - 1),
                end: None,
                head_depth: 0,
                open: false,
            }),
        }
    }
    if let (Some(l), false) = (lookup, end_done) {
        groups.push(Group {
            key: Some("filename_lookup".into()),
            reason_key: None,
            calls: (l, l),
            end: Some(l),
            head_depth: 0,
            open: false,
        });
    }
    Ok(groups)
}

/// Our steps (their `function`s, in order) cut into rows: consecutive
/// steps of the same function are one row.
fn our_groups(funcs: &[&str]) -> Vec<(String, (usize, usize))> {
    let mut out: Vec<(String, (usize, usize))> = Vec::new();
    for (i, f) in funcs.iter().enumerate() {
        match out.last_mut() {
            Some((k, r)) if k == f => r.1 = i,
            _ => out.push((f.to_string(), (i, i))),
        }
    }
    out
}

/// Our walk (`funcs`: each step's function) beside Linux's `w`: the longest
/// common sequence of steps is aligned, the rest is a difference whose
/// reason `reasons` must hold (else an error naming the key to add).
pub fn align(
    funcs: &[&str],
    w: &Walk,
    reasons: &BTreeMap<String, String>,
) -> Result<Vec<Row>, String> {
    let lg = linux_groups(w)?;
    let og = our_groups(funcs);
    let (n, m) = (og.len(), lg.len());
    // lcs[i][j]: the longest common sequence of og[i..] and lg[j..].
    let mut lcs = std::vec![std::vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if lg[j].key.as_deref() == Some(og[i].0.as_str()) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let reason = |k: &str| -> Result<String, String> {
        reasons.get(k).cloned().ok_or_else(|| {
            std::format!(
                "{}: no reason for `{k}` in docs/lookup-path.md's \"Differences from Linux, on purpose\"",
                w.file
            )
        })
    };
    let mut rows = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && lg[j].key.as_deref() == Some(og[i].0.as_str()) {
            rows.push(Row {
                kind: Kind::Same,
                ours: Some(og[i].1),
                linux: Some(lg[j].calls),
                end: lg[j].end,
                reason: None,
                reason_key: None,
            });
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] > lcs[i + 1][j]) {
            // (On a tie our step comes first: Linux's extra steps are most
            // often the ones after the walk.)
            let g = &lg[j];
            let (kind, key) = match (&g.key, &g.reason_key) {
                (None, None) => (Kind::Context, None),
                (_, Some(k)) => (Kind::LinuxOnly, Some(k.clone())),
                (Some(k), None) => (Kind::LinuxOnly, Some(std::format!("linux:{k}"))),
            };
            rows.push(Row {
                kind,
                ours: None,
                linux: Some(g.calls),
                end: g.end,
                reason: key.as_deref().map(reason).transpose()?,
                reason_key: key,
            });
            j += 1;
        } else {
            let key = std::format!("ours:{}", og[i].0);
            rows.push(Row {
                kind: Kind::OursOnly,
                ours: Some(og[i].1),
                linux: None,
                end: None,
                reason: Some(reason(&key)?),
                reason_key: Some(key),
            });
            i += 1;
        }
    }
    Ok(rows)
}

/// A kernel's file stem (`debian-6.12.117`) and, when it stands in for
/// another, why.
pub type KernelNote = (&'static str, &'static str);

/// Which of our scenarios a Linux case stands beside, and under which
/// kernels, best first: `(scenario, case, [(kernel file stem, note)])`.
pub const PAIRS: &[(&str, &str, &[KernelNote])] = &[
    (
        "transient",
        "tmpfs-missing",
        &[
            ("6.12.117-vanilla", ""),
            ("7.3.4-vanilla", ""),
            ("debian-6.12.117", "Debian's kernel, unpatched: the same tmpfs as our vanilla build"),
            ("debian-7.3.4", "Debian's kernel, unpatched: the same tmpfs as our vanilla build"),
        ],
    ),
    (
        "negative",
        "tmpfs-missing",
        &[("6.12.117-negative", ""), ("7.3.4-negative", "")],
    ),
    (
        "negative",
        "ext4-missing",
        &[
            ("debian-6.12.117", "ext4 keeps negative dentries, as the negative design does: a stand-in until our negative build is traced"),
            ("debian-7.3.4", "ext4 keeps negative dentries, as the negative design does: a stand-in until our negative build is traced"),
        ],
    ),
    (
        "noalloc",
        "tmpfs-missing",
        &[("6.12.117-noalloc", ""), ("7.3.4-noalloc", "")],
    ),
    (
        "hit",
        "tmpfs-hit",
        &[
            ("6.12.117-vanilla", ""),
            ("7.3.4-vanilla", ""),
            ("debian-6.12.117", ""),
            ("debian-7.3.4", ""),
        ],
    ),
];

/// The file stem of a walk: `debian-6.12.117.tmpfs-missing.json` →
/// (`debian-6.12.117`, `tmpfs-missing`).
pub fn stem(file: &str) -> Option<(&str, &str)> {
    let name = file.rsplit('/').next()?.strip_suffix(".json")?;
    name.rsplit_once('.')
}

/// For scenario `id`, the walks to show, best first, each with its note:
/// every kernel of [`PAIRS`] that has a committed walk of the case; the
/// first pair of the scenario with any walk wins (a stand-in shows only
/// while the real kernel has none).
pub fn walks_for<'a>(id: &str, walks: &'a [Walk]) -> Vec<(&'a Walk, &'static str)> {
    for (sid, case, kernels) in PAIRS {
        if *sid != id {
            continue;
        }
        let found: Vec<(&Walk, &str)> = kernels
            .iter()
            .filter_map(|(k, note)| {
                walks
                    .iter()
                    .find(|w| stem(&w.file) == Some((k, case)))
                    .map(|w| (w, *note))
            })
            .collect();
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

/// Linux calls the text form leaves out of a row (they are in the JSON and
/// on the page): RCU read sections, spinlocks, mount references, the
/// permission helpers.
fn quiet(f: &str) -> bool {
    f.starts_with("__rcu_read_")
        || f.starts_with("_raw_spin_")
        || f.starts_with("mnt")
        || f.contains("legitimize")
        || matches!(
            f,
            "generic_permission" | "set_root" | "nd_jump_root" | "d_set_d_op"
        )
}

/// The side-by-side as text (docs/lookup-path.md): one line per row, our
/// steps left, `=` same step, `+` Linux only, `-` ours only, Linux's calls
/// right (the quiet ones left out), each difference's reason key after it.
/// `steps`: each of our steps' name (`lookup_fast a`).
pub fn side_by_side(steps: &[&str], w: &Walk, rows: &[Row]) -> String {
    let mut out = std::format!(
        "{:<30} Linux {} ({}, {} {})\n",
        "ours",
        w.kernel,
        w.case,
        w.path,
        w.result
    );
    for r in rows {
        let ours = match r.ours {
            Some((a, b)) if b > a && steps[a] == steps[b] => {
                std::format!("{} ({} steps)", steps[a], b - a + 1)
            }
            Some((a, b)) if b > a => std::format!("{} … {}", steps[a], steps[b]),
            Some((a, _)) => steps[a].to_string(),
            None => String::new(),
        };
        let mark = match r.kind {
            Kind::Same => '=',
            Kind::LinuxOnly => '+',
            Kind::OursOnly => '-',
            Kind::Context => ' ',
        };
        let linux = match (r.linux, r.end) {
            (Some(_), Some(_)) => std::format!("filename_lookup returns {}", w.result),
            (Some((a, b)), None) => {
                let mut v: Vec<&str> = Vec::new();
                let mut locks = 0;
                for c in &w.calls[a..=b] {
                    if c.function.starts_with("_raw_spin_lock") {
                        locks += 1;
                    }
                    if !quiet(&c.function) {
                        v.push(&c.function);
                    }
                }
                let mut s = v.join(" › ");
                if locks > 0 {
                    s.push_str(&std::format!(" (spinlocks: {locks})"));
                }
                s
            }
            (None, _) => String::new(),
        };
        let why = r
            .reason_key
            .as_deref()
            .map(|k| std::format!("   [{k}]"))
            .unwrap_or_default();
        out.push_str(std::format!("{ours:<30} {mark} {linux}{why}").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(calls: &[(&str, u32)]) -> Walk {
        Walk {
            file: "t.json".into(),
            kernel: "k".into(),
            uname: "u".into(),
            source: "s".into(),
            case: "tmpfs-missing".into(),
            path: "/a".into(),
            root: "/tmp".into(),
            result: "ENOENT".into(),
            tracer: "t".into(),
            command: "c".into(),
            calls: calls
                .iter()
                .map(|(f, d)| Call {
                    function: f.to_string(),
                    depth: *d,
                    duration_us: Some(1.0),
                })
                .collect(),
        }
    }

    const MD: &str = "# x\n## Differences from Linux, on purpose\n\n\
        - Linux `terminate_walk`: references are values\n  that drop.\n\
        - Ours `complete_walk`: ours checks.\n\n## Next\n- Linux `other`: not here\n";

    #[test]
    fn reads_the_reasons_of_the_section_only() {
        let r = parse_reasons(MD);
        assert_eq!(
            r["linux:terminate_walk"],
            "references are values that drop."
        );
        assert_eq!(r["ours:complete_walk"], "ours checks.");
        assert!(!r.contains_key("linux:other"));
    }

    #[test]
    fn aligns_steps_and_marks_the_differences() {
        let w = walk(&[
            ("vfs_statx", 0),
            ("filename_lookup", 1),
            ("path_lookupat", 2),
            ("path_init", 3),
            ("walk_component", 3),
            ("lookup_fast", 4),
            ("__d_lookup_rcu", 5),
            ("step_into", 4),
            ("terminate_walk", 3),
            ("dput", 4),
        ]);
        let ours = [
            "walk",
            "lookup_fast",
            "step_into",
            "step_into",
            "complete_walk",
            "filename_lookup",
        ];
        let rows = align(&ours, &w, &parse_reasons(MD)).unwrap();
        let kinds: Vec<&str> = rows.iter().map(|r| r.kind.name()).collect();
        assert_eq!(
            kinds,
            ["context", "same", "same", "same", "ours", "linux", "same"]
        );
        // walk_component opens lookup_fast's row; __d_lookup_rcu is in it.
        assert_eq!(rows[2].linux, Some((4, 6)));
        // dput inside terminate_walk is part of its row (after our complete_walk).
        assert_eq!(rows[5].linux, Some((8, 9)));
        assert_eq!(rows[3].ours, Some((2, 3)));
        assert_eq!(rows[6].end, Some(1));
        // Every call is in exactly one row.
        let mut seen = std::vec![0; w.calls.len()];
        for r in rows.iter().filter(|r| r.end.is_none()) {
            if let Some((a, b)) = r.linux {
                (a..=b).for_each(|i| seen[i] += 1);
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    }

    #[test]
    fn an_unplaced_function_or_a_missing_reason_is_an_error() {
        let w = walk(&[("vfs_statx", 0), ("path_init", 1), ("no_such_fn", 2)]);
        let e = align(&["walk"], &w, &BTreeMap::new()).unwrap_err();
        assert!(e.contains("no_such_fn"), "{e}");
        let w = walk(&[("vfs_statx", 0), ("path_init", 1), ("terminate_walk", 1)]);
        let e = align(&["walk"], &w, &BTreeMap::new()).unwrap_err();
        assert!(e.contains("linux:terminate_walk"), "{e}");
    }
}

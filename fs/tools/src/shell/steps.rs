//! The shell's side of the walk steps (`teaching` feature): `trace json`
//! lines, the dentry tree they carry, and the race hook behind `vfsh race`.
//!
//! `namei` hands every walk step to [`step_sink`] (a [`fs::walk_event::WalkEvent`]
//! seen as a [`Step`]).
//! For the shell command that is running on this thread it
//! - writes the step as one JSON line (when `trace json` is on): the step
//!   name, function, component, RCU-walk or ref-walk, the dentry (a small id
//!   stable for the shell's life, with its state: positive, negative,
//!   in-lookup, unhashed), the sequence sample or check, the lock taken, the
//!   allocation, the handover reason and the command's counters so far;
//! - runs the armed race command when an RCU-walk reaches the armed step:
//!   right after the step has read and sampled what it describes, before any
//!   later check. The walk holds no lock there (RCU-walk takes none), so the
//!   command can take any; its own walks are not traced and its own counts
//!   are left out of the walk's counters.
//!
//! Deterministic: the race runs on the walking thread, at one exact point.
//!
//! Touches: the dcache (children lists, read), the mount table (read), the
//! counters (read), the shell's trace buffer; thread-locals only.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write;
use std::string::{String, ToString};
use std::sync::Arc;
use std::vec::Vec;

use super::{self as shell, Cmd};
use fs::dcache::{self, Dentry, D_MOUNTED, D_PAR_LOOKUP};
use fs::stats::{self, Counters, FallbackReason};
use fs::vfs::Vfs;
use fs::walk_event::{mirrors, Step};

/// A command armed to run at a walk step (`race STEP CMD…`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Armed {
    /// The step name as the trace prints it (`lookup_fast b`).
    pub step: String,
    /// The command to run there, and its text (for the output line).
    pub cmd: Cmd,
    pub text: String,
}

/// Small dentry ids, stable for one shell (first seen, first numbered).
#[derive(Default)]
pub struct Ids {
    map: HashMap<usize, u32>,
}

impl Ids {
    fn id(&mut self, d: &Dentry) -> u32 {
        let next = self.map.len() as u32 + 1;
        *self.map.entry(d as *const Dentry as usize).or_insert(next)
    }
}

struct Active {
    vfs: Arc<Vfs>,
    json: bool,
    race: Option<Armed>,
    ids: Ids,
    start: Counters,
    /// What the race command and the tree drawing counted themselves (left
    /// out of the walk's counters).
    race_own: Counters,
    in_race: bool,
    index: u32,
}

std::thread_local! {
    static ACTIVE: RefCell<Option<Active>> = const { RefCell::new(None) };
}

/// Is a race command running on this thread (its trace is not shown)?
pub fn in_race() -> bool {
    ACTIVE
        .try_with(|a| {
            // `try_borrow`: never panic if asked from inside the step sink.
            a.try_borrow()
                .is_ok_and(|a| a.as_ref().is_some_and(|a| a.in_race))
        })
        .unwrap_or(false)
}

/// Start watching the steps of one shell command on this thread.
pub fn begin(vfs: Arc<Vfs>, json: bool, race: Option<Armed>, ids: Ids) {
    fs::walk_event::set_step_sink(step_sink);
    let a = Active {
        vfs,
        json,
        race,
        ids,
        start: stats::snapshot(),
        race_own: Counters::default(),
        in_race: false,
        index: 0,
    };
    let _ = ACTIVE.try_with(|c| *c.borrow_mut() = Some(a));
}

/// Stop watching; returns the race still armed (not reached) and the ids.
pub fn end() -> (Option<Armed>, Ids) {
    ACTIVE
        .try_with(|c| c.borrow_mut().take())
        .ok()
        .flatten()
        .map(|a| (a.race, a.ids))
        .unwrap_or_default()
}

/// The step name `race` matches: the function, then the component.
pub fn step_name(func: &str, name: &[u8]) -> String {
    if name.is_empty() {
        func.to_string()
    } else {
        std::format!("{func} {}", shell::escape_word(name))
    }
}

/// JSON string literal of `s`.
pub fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn state(d: &Dentry) -> &'static str {
    if d.flags() & D_PAR_LOOKUP != 0 {
        "in-lookup"
    } else if d.is_negative() {
        "negative"
    } else if !d.is_hashed() && !d.is_root() {
        "unhashed"
    } else {
        "positive"
    }
}

fn kind(d: &Dentry) -> &'static str {
    match d.inode_arc() {
        None => "none",
        Some(i) if i.is_dir() => "dir",
        Some(i) if i.is_symlink() => "symlink",
        Some(_) => "file",
    }
}

/// `"id":N,"parent":P,"dname":…,"state":…,"kind":…` of a dentry.
fn dentry_fields(out: &mut String, ids: &mut Ids, d: &Dentry, parent: Option<u32>) {
    let id = ids.id(d);
    let parent = parent.or_else(|| d.parent.get_arc().map(|p| ids.id(&p)));
    let _ = write!(out, "\"id\":{id},\"parent\":");
    match parent {
        Some(p) => {
            let _ = write!(out, "{p}");
        }
        None => out.push_str("null"),
    }
    out.push_str(",\"dname\":");
    let name = if d.is_root() && parent.is_none() {
        "/".to_string()
    } else {
        shell::escape_word(&d.name.to_vec())
    };
    json_str(out, &name);
    let _ = write!(out, ",\"state\":\"{}\",\"kind\":\"{}\"", state(d), kind(d));
}

/// The whole dentry tree of the namespace as a JSON array: each dentry once,
/// parents before children; a mount's root hangs under its mountpoint.
fn tree_json(out: &mut String, vfs: &Vfs, ids: &mut Ids) {
    let mounts = vfs.mnt_ns().all();
    out.push('[');
    let mut first = true;
    let root = vfs.mnt_ns().root().root_arc().clone();
    let mut stack: Vec<(Arc<Dentry>, Option<u32>, Option<u64>)> = vec![(root, None, None)];
    let mut seen = 0usize;
    while let Some((d, parent, mnt)) = stack.pop() {
        seen += 1;
        if seen > 10_000 {
            break; // a drawing, not a census
        }
        if !first {
            out.push(',');
        }
        first = false;
        out.push('{');
        dentry_fields(out, ids, &d, parent);
        if let Some(m) = mnt {
            let _ = write!(out, ",\"mount\":{m}");
        }
        out.push('}');
        let me = Some(ids.id(&d));
        let mut kids = dcache::all_children(&d);
        kids.sort_by_key(|k| std::cmp::Reverse(k.name.to_vec()));
        for k in kids {
            stack.push((k, me, None));
        }
        if d.flags() & D_MOUNTED != 0 {
            for m in mounts.iter().filter(|m| {
                m.mountpoint
                    .as_ref()
                    .is_some_and(|mp| Arc::ptr_eq(mp.arc(), &d))
            }) {
                stack.push((m.root_arc().clone(), me, Some(m.id)));
            }
        }
    }
    out.push(']');
}

fn counters_json(out: &mut String, c: &Counters) {
    let _ = write!(
        out,
        "{{\"lookups\":{},\"rcu_walks\":{},\"fallbacks\":{}",
        c.lookups, c.rcu_walks, c.fallbacks
    );
    for r in FallbackReason::ALL {
        let n = c.fallbacks_by_reason[r as usize];
        if n != 0 {
            let _ = write!(out, ",\"fallbacks_{}\":{n}", r.name());
        }
    }
    let _ = write!(
        out,
        ",\"dentry_alloc\":{},\"negative_created\":{},\"locks\":{},\"shared_stores\":{},\"enoent\":{}}}",
        c.dentry_alloc, c.negative_created, c.locks, c.shared_stores, c.enoent
    );
}

fn step_json(a: &mut Active, s: &Step<'_>, step: &str) -> String {
    let mut o = String::with_capacity(512);
    let (linux, src) = mirrors(s.func);
    let _ = write!(o, "{{\"i\":{},\"step\":", a.index);
    json_str(&mut o, step);
    o.push_str(",\"function\":");
    json_str(&mut o, s.func);
    o.push_str(",\"linux\":");
    json_str(&mut o, linux);
    o.push_str(",\"src\":");
    json_str(&mut o, src);
    o.push_str(",\"name\":");
    json_str(&mut o, &shell::escape_word(s.name));
    let _ = write!(o, ",\"mode\":\"{}\"", if s.rcu { "rcu" } else { "ref" });
    o.push_str(",\"dentry\":");
    match s.dentry {
        Some(d) => {
            o.push('{');
            dentry_fields(&mut o, &mut a.ids, d, None);
            o.push('}');
        }
        None => o.push_str("null"),
    }
    o.push_str(",\"seq\":");
    match s.seq {
        Some(n) => {
            let _ = write!(o, "{{\"which\":\"{}\",\"sampled\":{}", n.which, n.sampled);
            if let Some(now) = n.now {
                let _ = write!(o, ",\"now\":{now},\"ok\":{}", n.ok());
            }
            o.push('}');
        }
        None => o.push_str("null"),
    }
    o.push_str(",\"lock\":");
    match s.lock {
        Some(l) => json_str(&mut o, l),
        None => o.push_str("null"),
    }
    let _ = write!(o, ",\"alloc\":{},\"reason\":", s.alloc);
    match s.reason {
        Some(r) => json_str(&mut o, r.name()),
        None => o.push_str("null"),
    }
    o.push_str(",\"what\":");
    json_str(&mut o, s.what);
    o.push_str(",\"counters\":");
    let c = stats::snapshot().delta(&a.start).delta(&a.race_own);
    counters_json(&mut o, &c);
    if s.func == "walk" || s.func == "race" {
        o.push_str(",\"tree\":");
        let vfs = a.vfs.clone();
        // Drawing the tree takes the directories' d_locks: not the walk's.
        let before = stats::snapshot();
        tree_json(&mut o, &vfs, &mut a.ids);
        let own = stats::snapshot().delta(&before);
        a.race_own = add(&a.race_own, &own);
    }
    o.push('}');
    a.index += 1;
    o
}

/// The step sink: JSON line, then the race if this is its step.
fn step_sink(s: &Step<'_>) {
    let step = step_name(s.func, s.name);
    let fire = ACTIVE
        .try_with(|c| {
            let mut c = c.borrow_mut();
            let a = c.as_mut()?;
            if a.in_race {
                return None;
            }
            if a.json {
                let line = step_json(a, s, &step);
                shell::push_trace_line(line);
            }
            let hit = s.rcu && a.race.as_ref().is_some_and(|r| r.step == step);
            if hit {
                a.in_race = true;
                a.race.take().map(|r| (r, a.vfs.clone()))
            } else {
                None
            }
        })
        .ok()
        .flatten();
    let Some((race, vfs)) = fire else { return };
    // Run the command with no borrow of ACTIVE held: it walks too, and its
    // steps come back here (and are skipped: `in_race`).
    let before = stats::snapshot();
    let result = shell::run_fs_on(&vfs, &race.cmd);
    let own = stats::snapshot().delta(&before);
    shell::push_trace_line(std::format!(
        "race: at \"{step}\" ran `{}`: {result}",
        race.text
    ));
    let _ = ACTIVE.try_with(|c| {
        let mut c = c.borrow_mut();
        let Some(a) = c.as_mut() else { return };
        a.in_race = false;
        a.race_own = add(&a.race_own, &own);
        if a.json {
            let what = std::format!("{} -> {result}", race.text);
            let st = Step {
                func: "race",
                name: b"",
                rcu: s.rcu,
                dentry: None,
                seq: None,
                lock: None,
                alloc: false,
                reason: None,
                what: &what,
            };
            let line = step_json(a, &st, "race");
            shell::push_trace_line(line);
        }
    });
}

fn add(a: &Counters, b: &Counters) -> Counters {
    let mut c = *a;
    c.lookups += b.lookups;
    c.rcu_walks += b.rcu_walks;
    c.fallbacks += b.fallbacks;
    for i in 0..c.fallbacks_by_reason.len() {
        c.fallbacks_by_reason[i] += b.fallbacks_by_reason[i];
    }
    c.dentry_alloc += b.dentry_alloc;
    c.dentry_free += b.dentry_free;
    c.negative_created += b.negative_created;
    c.negative_destroyed += b.negative_destroyed;
    c.enoent += b.enoent;
    c.locks += b.locks;
    c.shared_stores += b.shared_stores;
    c.shrunk += b.shrunk;
    c.poison_seen += b.poison_seen;
    c.enomem += b.enomem;
    c
}

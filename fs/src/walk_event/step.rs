//! Steps: the walk events as the step sink sees them (the `teaching`
//! feature): `trace json`, the step-through page (docs/explore/) and the
//! race hook (`vfsh race STEP CMD…`).
//!
//! Touches: two globals (the step flag and the step sink).

use core::sync::atomic::{AtomicBool, Ordering};

use super::walk::{SeqNote, UnlazyFail, WalkEvent};
use crate::dcache::Dentry;
use crate::stats::FallbackReason;

/// One step of a walk, as the step sink receives it.
pub struct Step<'a> {
    /// The step's function as the trace names it (`lookup_fast`,
    /// `step_into`, `try_to_unlazy`, …); with `name` it makes the step name
    /// `race` matches (`lookup_fast b`).
    pub func: &'static str,
    /// The component (or the path, for `walk`), or empty.
    pub name: &'a [u8],
    /// In RCU-walk (else ref-walk).
    pub rcu: bool,
    /// The dentry this step is about (found, stood on, allocated).
    pub dentry: Option<&'a Dentry>,
    /// A sequence sample or check.
    pub seq: Option<SeqNote>,
    /// A lock this step takes (`i_rwsem shared`, …).
    pub lock: Option<&'static str>,
    /// Did this step allocate a dentry?
    pub alloc: bool,
    /// The handover reason, for `try_to_unlazy` and `restart`.
    pub reason: Option<FallbackReason>,
    /// What happened, in a few words.
    pub what: &'a str,
}

impl<'a> Step<'a> {
    fn new(func: &'static str, name: &'a [u8], rcu: bool, d: Option<&'a Dentry>) -> Self {
        Step {
            func,
            name,
            rcu,
            dentry: d,
            seq: None,
            lock: None,
            alloc: false,
            reason: None,
            what: "",
        }
    }
    fn seq(mut self, seq: SeqNote) -> Self {
        self.seq = Some(seq);
        self
    }
    fn sample_if(mut self, rcu: bool, which: &'static str, seq: u32) -> Self {
        self.seq = rcu.then(|| SeqNote::sample(which, seq));
        self
    }
    fn reason(mut self, why: FallbackReason) -> Self {
        self.reason = Some(why);
        self
    }
    fn lock(mut self, lock: &'static str) -> Self {
        self.lock = Some(lock);
        self
    }
    fn what(mut self, what: &'a str) -> Self {
        self.what = what;
        self
    }
}

impl<'a> WalkEvent<'a> {
    /// The event as a step (`trace json`, the page, the race hook), if the
    /// step sink sees it.
    pub fn step(&self) -> Option<Step<'a>> {
        use WalkEvent::*;
        let s = match *self {
            PathInit {
                path,
                root,
                rcu,
                seq,
                parent,
            } => {
                let s = Step::new("walk", path, rcu, Some(root));
                if parent {
                    s.what("path_init: walk to the parent of the last component")
                } else if rcu {
                    s.sample_if(rcu, "d_seq", seq)
                        .what("path_init: start at the root, lock-free (RCU-walk)")
                } else {
                    s.what("path_init: start at the root, taking references (ref-walk)")
                }
            }
            Unlazy { d, why } => Step::new("try_to_unlazy", b"", true, Some(d))
                .reason(why)
                .what("leave RCU-walk: take a reference on where we stand"),
            UnlazyFailed { d, how } => {
                let s = Step::new("try_to_unlazy", b"", true, Some(d));
                match how {
                    UnlazyFail::MountSeq(n) => s
                        .seq(n)
                        .what("failed: something was mounted meanwhile; restart in ref-walk"),
                    UnlazyFail::Dead => s
                        .reason(FallbackReason::Dead)
                        .what("failed: the dentry died; restart in ref-walk"),
                    UnlazyFail::DSeq(n) => s
                        .seq(n)
                        .what("failed: the dentry changed; restart in ref-walk"),
                }
            }
            Unlazied { d, seq } => Step::new("try_to_unlazy", b"", false, Some(d))
                .seq(seq)
                .what("holding a reference (a lockref cmpxchg: a shared store, no lock): continue in ref-walk"),
            Restart { d, why } => Step::new("restart", b"", true, Some(d))
                .reason(why)
                .what("a check failed: drop everything, restart the walk in ref-walk"),
            DotDotMount { d, rcu, .. } => Step::new("handle_dots", b"..", rcu, Some(d))
                .what("at a mount root: over to the mountpoint in the parent mount"),
            DotDot { d, rcu, seq } => Step::new("handle_dots", b"..", rcu, Some(d))
                .sample_if(rcu, "d_seq", seq)
                .what("up to the parent"),
            FastHit { name, d, seq, .. } => Step::new("lookup_fast", name, true, Some(d))
                .seq(SeqNote::sample("d_seq", seq))
                .what("found in the dcache (hash chain walked without locks)"),
            FastMiss {
                name, dir, dir_seq, ..
            } => Step::new("lookup_fast", name, true, Some(dir))
                .seq(SeqNote::sample("dir_seq", dir_seq))
                .what("not in the dcache"),
            MissCheck { name, dir, seq } => {
                let what = match (seq.which, seq.ok()) {
                    ("dir_seq", true) => "dir_seq unchanged: no name was added or removed here",
                    ("dir_seq", false) => {
                        "dir_seq moved: a name was added or removed here meanwhile"
                    }
                    (_, true) => "rename_seq unchanged: no rename anywhere",
                    (_, false) => "rename_seq moved: a rename happened meanwhile",
                };
                Step::new("lookup_fast", name, true, Some(dir))
                    .seq(seq)
                    .what(what)
            }
            FastEnoent { name, dir, .. } => Step::new("lookup_fast", name, true, Some(dir))
                .what("the miss is the answer: ENOENT, nothing allocated, no lock"),
            RefHit { name, d } => Step::new("lookup_fast", name, false, Some(d))
                .what("found in the dcache (d_lookup, taking a reference: a shared store)"),
            Slow { name, dir } => Step::new("lookup_slow", name, false, Some(dir))
                .lock("i_rwsem (shared)")
                .what("ask the filesystem, the directory locked shared"),
            SlowFound { name, d } => {
                Step::new("lookup_slow", name, false, Some(d)).what("found under i_rwsem")
            }
            SlowEnoent { name, dir } => Step::new("lookup_slow", name, false, Some(dir))
                .what("miss under i_rwsem: ENOENT, nothing allocated"),
            ParallelFound { name, d } => Step::new("d_alloc_parallel", name, false, Some(d))
                .what("someone else's dentry was there: use it"),
            ParallelAlloc { name, d } => {
                let mut s = Step::new("d_alloc_parallel", name, false, Some(d))
                    .lock("in-lookup hash bucket")
                    .what("allocated a dentry, in-lookup until the filesystem answers");
                s.alloc = true;
                s
            }
            DAdd { name, d, .. } => Step::new("d_add", name, false, Some(d))
                .lock("d_lock")
                .what("the filesystem answered: the dentry is hashed"),
            StepInto { name, d, rcu } => Step::new("step_into", name, rcu, Some(d))
                .what("read the child's inode and mount flag"),
            // In ref-walk the crossing needs no check: only its text line.
            MountHere { name, d, seq, .. } => {
                let seq = seq?;
                Step::new("step_into", name, true, Some(d))
                    .seq(seq)
                    .what(if seq.ok() {
                        "a mount sits here; mount_seq unchanged since the walk began"
                    } else {
                        "a mount sits here, but mount_seq moved: something was mounted meanwhile"
                    })
            }
            MountRoot {
                name,
                root,
                rcu,
                seq,
            } => Step::new("step_into", name, rcu, Some(root))
                .sample_if(rcu, "d_seq", seq)
                .what("a mount sits here: cross into its root"),
            ChildCheck { name, d, seq } => Step::new("step_into", name, true, Some(d))
                .seq(seq)
                .what(if seq.ok() {
                    "d_seq unchanged: what we read is the name's"
                } else {
                    "d_seq moved: renamed, unlinked or instantiated meanwhile"
                }),
            Negative { name, d, rcu } => {
                Step::new("step_into", name, rcu, Some(d)).what("a negative dentry: ENOENT")
            }
            Symlink { name, d, rcu, .. } => {
                Step::new("step_into", name, rcu, Some(d)).what("a symlink: walk its body next")
            }
            Onto { name, d, rcu } => {
                Step::new("step_into", name, rcu, Some(d)).what("now standing here")
            }
            CompleteWalk { d, seq } => Step::new("complete_walk", b"", true, Some(d))
                .seq(seq)
                .what(if seq.which == "mount_seq" {
                    "and nothing was mounted or unmounted"
                } else {
                    "is the answer still true? re-check the last dentry"
                }),
            Done { .. } => return None,
            Result { path, rcu, result } => {
                Step::new("filename_lookup", path, rcu, None).what(result)
            }
        };
        Some(s)
    }
}

/// The Linux function each step mirrors, and where ours lives (as
/// `FILE: fn, fn; FILE: fn`, which the step-through page turns into links).
pub fn mirrors(func: &str) -> (&'static str, &'static str) {
    match func {
        "walk" => (
            "path_init",
            "fs/src/namei.rs: Nd::path_init, walk_and_finish",
        ),
        "lookup_fast" => (
            "lookup_fast / __d_lookup_rcu",
            "fs/src/namei.rs: Nd::lookup_fast_rcu; fs/src/dcache/mod.rs: d_lookup_rcu",
        ),
        "lookup_slow" => ("lookup_slow", "fs/src/namei.rs: Nd::lookup_slow"),
        "d_alloc_parallel" => (
            "d_alloc_parallel",
            "fs/src/dcache/in_lookup.rs: d_alloc_parallel",
        ),
        "d_add" => ("d_add", "fs/src/dcache/mod.rs: d_add"),
        "step_into" => (
            "step_into / handle_mounts",
            "fs/src/namei.rs: Nd::step_into",
        ),
        "handle_dots" => (
            "handle_dots / follow_dotdot_rcu",
            "fs/src/namei.rs: Nd::handle_dots",
        ),
        "try_to_unlazy" => ("try_to_unlazy", "fs/src/namei.rs: Nd::try_to_unlazy"),
        "restart" => (
            "-ECHILD (restart in ref-walk)",
            "fs/src/namei.rs: Nd::restart, filename_lookup",
        ),
        "complete_walk" => ("complete_walk", "fs/src/namei.rs: Nd::complete_walk"),
        "filename_lookup" => ("filename_lookup", "fs/src/namei.rs: filename_lookup"),
        "race" => ("(none: the race command)", "fs/tools/src/shell/steps.rs"),
        _ => ("?", "fs/src/namei.rs"),
    }
}

static STEPS_ON: AtomicBool = AtomicBool::new(false);
static STEP_SINK: spin::RwLock<Option<fn(&Step<'_>)>> = spin::RwLock::new(None);

/// Install the function that receives walk steps (replacing any earlier one).
pub fn set_step_sink(f: fn(&Step<'_>)) {
    *STEP_SINK.write() = Some(f);
}

/// Turn step events on or off.
pub fn enable_steps(on: bool) {
    STEPS_ON.store(on, Ordering::Relaxed);
}

/// Are step events on? Always false without the `teaching` feature or with
/// `--cfg fs_notrace` (no load at all).
#[inline(always)]
pub fn steps_enabled() -> bool {
    cfg!(all(feature = "teaching", not(fs_notrace))) && STEPS_ON.load(Ordering::Relaxed)
}

#[doc(hidden)]
#[cold]
pub fn emit_step(s: &Step<'_>) {
    let f = *STEP_SINK.read();
    if let Some(f) = f {
        f(s)
    }
}

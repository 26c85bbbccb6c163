//! Lookup tracing: one line per step of a walk, for students and debugging.
//!
//! Off by default and cheap when off: each trace point is one relaxed load of
//! a read-mostly flag and a predictable branch; the line is only formatted
//! when tracing is on. The host (vfsh, the kernel's serial console) installs
//! a sink that receives each formatted line.
//!
//! A step of the path walk is one typed [`WalkEvent`], emitted once by
//! `namei` ([`walk_event!`]) and rendered here: as its text line (`trace on`,
//! the guest's `demo=trace`) and, with the `teaching` feature, as a [`Step`]
//! (`trace json`, the step-through page, the race hook of `vfsh race`).
//!
//! Touches: four globals (the two flags and the two sinks).

use core::fmt;

use core::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);
/// Where trace lines go. A lock is fine here: it is only taken while
/// tracing is on, which is never on a measured path.
static SINK: spin::RwLock<Option<fn(fmt::Arguments<'_>)>> = spin::RwLock::new(None);

/// Install the function that prints trace lines (replacing any earlier one).
pub fn set_sink(f: fn(fmt::Arguments<'_>)) {
    *SINK.write() = Some(f);
}

/// Turn tracing on or off.
pub fn enable(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Is tracing on? Always false with `--cfg fs_notrace` (no load at all).
#[inline(always)]
pub fn enabled() -> bool {
    !cfg!(fs_notrace) && ENABLED.load(Ordering::Relaxed)
}

#[doc(hidden)]
#[cold]
pub fn emit(args: fmt::Arguments<'_>) {
    let f = *SINK.read();
    if let Some(f) = f {
        f(args)
    }
}

/// `trace!("fmt", args…)`: emit one trace line when tracing is on.
#[cfg(not(fs_notrace))]
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => {
        if $crate::trace::enabled() {
            $crate::trace::emit(format_args!($($arg)*));
        }
    };
}

/// With `--cfg fs_notrace` the trace points compile to nothing: the A/B
/// build that shows what tracing costs when it is off.
#[cfg(fs_notrace)]
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => {};
}

// ---------------------------------------------------------------------------
// Walk events: one per step of a path walk.
//
// Cost, as for `trace!`: an event with a text line costs one flag load when
// tracing is off; the others cost nothing at all without the `teaching`
// feature (the kernel, and so every benchmark, builds fs without it), and
// with `--cfg fs_notrace` no event costs anything.

use crate::dcache::Dentry;
use crate::stats::FallbackReason;

/// A sequence count the walk read at a step: `now == None` is a sample
/// (the walk remembers `sampled` to check later); `Some(now)` is a check,
/// which passes when nothing was written since (`now == sampled`).
#[derive(Clone, Copy, Debug)]
pub struct SeqNote {
    /// `d_seq`, `dir_seq`, `rename_seq` or `mount_seq` (the counts of
    /// `rename_lock` and `mount_lock`).
    pub which: &'static str,
    pub sampled: u32,
    pub now: Option<u32>,
}

impl SeqNote {
    /// A sample.
    pub fn sample(which: &'static str, sampled: u32) -> Self {
        SeqNote {
            which,
            sampled,
            now: None,
        }
    }
    /// A check of `sampled` against the count read `now`.
    pub fn check(which: &'static str, sampled: u32, now: u32) -> Self {
        SeqNote {
            which,
            sampled,
            now: Some(now),
        }
    }
    /// Did the check pass (or is this a sample)?
    pub fn ok(&self) -> bool {
        self.now.is_none_or(|n| n == self.sampled)
    }
}

/// How `try_to_unlazy` failed.
#[derive(Clone, Copy, Debug)]
pub enum UnlazyFail {
    /// Something was mounted or unmounted since the walk began.
    MountSeq(SeqNote),
    /// The dentry died: no reference can be taken.
    Dead,
    /// The dentry changed (its `d_seq` moved).
    DSeq(SeqNote),
}

/// One step of a path walk (`namei`), named after the Linux function that
/// takes it. `rcu`: the step runs in RCU-walk (else ref-walk); `name`: the
/// component; `d`: the dentry the step is about; `dir`: the directory
/// searched.
#[derive(Clone, Copy)]
pub enum WalkEvent<'a> {
    /// `path_init`: a walk (of the whole path, or of its `parent` only)
    /// starts at the root, whose `d_seq` is `seq` in RCU-walk.
    PathInit {
        path: &'a [u8],
        root: &'a Dentry,
        rcu: bool,
        seq: u32,
        parent: bool,
    },
    /// `try_to_unlazy`: leave RCU-walk for `why`.
    Unlazy { d: &'a Dentry, why: FallbackReason },
    /// `try_to_unlazy` failed: the walk restarts in ref-walk.
    UnlazyFailed { d: &'a Dentry, how: UnlazyFail },
    /// `try_to_unlazy` holds its reference: ref-walk from here.
    Unlazied { d: &'a Dentry, seq: SeqNote },
    /// A check failed in RCU-walk (Linux `-ECHILD`): restart in ref-walk.
    Restart { d: &'a Dentry, why: FallbackReason },
    /// `handle_dots`: `..` at a mount root, over to the mountpoint `d` in
    /// the parent mount `mount`.
    DotDotMount {
        d: &'a Dentry,
        rcu: bool,
        mount: u64,
    },
    /// `handle_dots`: `..` up to the parent `d` (whose `d_seq` is `seq`).
    DotDot { d: &'a Dentry, rcu: bool, seq: u32 },
    /// `lookup_fast` (RCU-walk): `d` found on the hash chain, `d_seq` `seq`.
    FastHit {
        name: &'a [u8],
        hash: u64,
        d: &'a Dentry,
        seq: u32,
    },
    /// `lookup_fast` (RCU-walk): not in the dcache (`dir_seq` sampled
    /// before the search). `enoent`: the `design` may answer the miss
    /// itself, after the checks; otherwise the walk leaves RCU-walk.
    FastMiss {
        name: &'a [u8],
        hash: u64,
        dir: &'a Dentry,
        dir_seq: u32,
        design: &'static str,
        enoent: bool,
    },
    /// `lookup_fast`: a check (`dir_seq`, `rename_seq`) before a miss may
    /// answer ENOENT.
    MissCheck {
        name: &'a [u8],
        dir: &'a Dentry,
        seq: SeqNote,
    },
    /// `lookup_fast`: the miss is the answer (ENOENT, nothing allocated).
    FastEnoent {
        name: &'a [u8],
        hash: u64,
        dir: &'a Dentry,
        dir_seq: u32,
        rename_seq: u32,
        design: &'static str,
    },
    /// `lookup_fast` in ref-walk (`d_lookup`): found, with a reference.
    RefHit { name: &'a [u8], d: &'a Dentry },
    /// `lookup_slow`: ask the filesystem, `dir` locked shared.
    Slow { name: &'a [u8], dir: &'a Dentry },
    /// `lookup_slow`: found in the dcache under the lock.
    SlowFound { name: &'a [u8], d: &'a Dentry },
    /// `lookup_slow`: a miss under the lock is ENOENT (nothing allocated).
    SlowEnoent { name: &'a [u8], dir: &'a Dentry },
    /// `d_alloc_parallel` found a dentry someone else had added.
    ParallelFound { name: &'a [u8], d: &'a Dentry },
    /// `d_alloc_parallel` allocated `d`, in-lookup.
    ParallelAlloc { name: &'a [u8], d: &'a Dentry },
    /// `d_add`: the filesystem `fs` answered (`positive` or not); `d` is
    /// hashed.
    DAdd {
        name: &'a [u8],
        d: &'a Dentry,
        fs: &'static str,
        positive: bool,
    },
    /// `step_into`: about to read the child's inode and mount flag.
    StepInto {
        name: &'a [u8],
        d: &'a Dentry,
        rcu: bool,
    },
    /// `step_into`: mount `mount` (of type `fs`) sits on `d`; in RCU-walk
    /// `seq` checks `mount_seq` before crossing.
    MountHere {
        name: &'a [u8],
        d: &'a Dentry,
        mount: u64,
        fs: &'static str,
        seq: Option<SeqNote>,
    },
    /// `step_into`: crossed into the mount's `root` (`d_seq` `seq`).
    MountRoot {
        name: &'a [u8],
        root: &'a Dentry,
        rcu: bool,
        seq: u32,
    },
    /// `step_into` (RCU-walk): the child's `d_seq` check.
    ChildCheck {
        name: &'a [u8],
        d: &'a Dentry,
        seq: SeqNote,
    },
    /// `step_into`: a negative dentry, ENOENT.
    Negative {
        name: &'a [u8],
        d: &'a Dentry,
        rcu: bool,
    },
    /// `step_into`: a symlink to follow (the `nlinks`-th), its `body` next.
    Symlink {
        name: &'a [u8],
        d: &'a Dentry,
        rcu: bool,
        body: &'a [u8],
        nlinks: u32,
    },
    /// `step_into`: now standing on `d`.
    Onto {
        name: &'a [u8],
        d: &'a Dentry,
        rcu: bool,
    },
    /// `complete_walk`: re-check `d_seq` of the last dentry, or `mount_seq`.
    CompleteWalk { d: &'a Dentry, seq: SeqNote },
    /// The walk has its answer (after `complete_walk`).
    Done { rcu: bool },
    /// `filename_lookup` returns: `ok` or the errno's name.
    Result {
        path: &'a [u8],
        rcu: bool,
        result: &'static str,
    },
}

/// `walk_event!(Kind, field: value, …)`: emit one [`WalkEvent`] to the
/// text trace and the step sink, where they are on. Which kinds have a text
/// line is listed here, so that the others cost nothing without `teaching`.
#[macro_export]
macro_rules! walk_event {
    (@text PathInit) => { true };
    (@text Unlazy) => { true };
    (@text UnlazyFailed) => { true };
    (@text Restart) => { true };
    (@text DotDotMount) => { true };
    (@text DotDot) => { true };
    (@text FastHit) => { true };
    (@text FastMiss) => { true };
    (@text MissCheck) => { true };
    (@text FastEnoent) => { true };
    (@text RefHit) => { true };
    (@text SlowFound) => { true };
    (@text SlowEnoent) => { true };
    (@text ParallelFound) => { true };
    (@text DAdd) => { true };
    (@text MountHere) => { true };
    (@text Negative) => { true };
    (@text Symlink) => { true };
    (@text Done) => { true };
    (@text $other:ident) => { false };
    ($kind:ident $(, $($field:tt)*)?) => {
        if ($crate::walk_event!(@text $kind) && $crate::trace::enabled())
            || $crate::trace::steps_enabled()
        {
            $crate::trace::emit_walk(
                &$crate::trace::WalkEvent::$kind { $($($field)*)? },
                $crate::walk_event!(@text $kind),
            );
        }
    };
}

#[doc(hidden)]
#[cold]
pub fn emit_walk(e: &WalkEvent<'_>, has_text: bool) {
    debug_assert!(
        has_text || e.text().is_none(),
        "walk_event!: a kind with a text line is missing from its list"
    );
    let text = || {
        if let Some(t) = e.text().filter(|_| enabled()) {
            emit(format_args!("{t}"));
        }
    };
    // The lookup steps print their line once the step sink (a race) had
    // its turn; the others before.
    let late = matches!(
        e,
        WalkEvent::FastHit { .. }
            | WalkEvent::FastMiss { .. }
            | WalkEvent::MissCheck { .. }
            | WalkEvent::FastEnoent { .. }
            | WalkEvent::SlowEnoent { .. }
            | WalkEvent::ParallelFound { .. }
    );
    if !late {
        text();
    }
    if steps_enabled() {
        if let Some(s) = e.step() {
            emit_step(&s);
        }
    }
    if late {
        text();
    }
}

fn name_str(n: &[u8]) -> &str {
    core::str::from_utf8(n).unwrap_or("<non-utf8>")
}

fn mode(rcu: bool) -> &'static str {
    if rcu {
        "rcu"
    } else {
        "ref"
    }
}

/// The text line of a [`WalkEvent`] (a `Display`).
pub struct Text<'e, 'a>(&'e WalkEvent<'a>);

impl<'a> WalkEvent<'a> {
    /// The event's line in the text trace, if it has one.
    pub fn text(&self) -> Option<Text<'_, 'a>> {
        use WalkEvent::*;
        match self {
            Unlazied { .. } | Slow { .. } | ParallelAlloc { .. } | StepInto { .. } => None,
            MountRoot { .. } | ChildCheck { .. } | Onto { .. } | CompleteWalk { .. } => None,
            Result { .. } => None,
            FastMiss { enoent: true, .. } => None,
            MissCheck { seq, .. } if seq.ok() => None,
            PathInit { .. } | Unlazy { .. } | UnlazyFailed { .. } | Restart { .. } => {
                Some(Text(self))
            }
            DotDotMount { .. } | DotDot { .. } | FastHit { .. } | FastMiss { .. } => {
                Some(Text(self))
            }
            MissCheck { .. } | FastEnoent { .. } | RefHit { .. } | SlowFound { .. } => {
                Some(Text(self))
            }
            SlowEnoent { .. } | ParallelFound { .. } | DAdd { .. } | MountHere { .. } => {
                Some(Text(self))
            }
            Negative { .. } | Symlink { .. } | Done { .. } => Some(Text(self)),
        }
    }
}

impl fmt::Display for Text<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use WalkEvent::*;
        match *self.0 {
            PathInit {
                path, rcu, parent, ..
            } => {
                let of = if parent { "parent of " } else { "" };
                write!(f, "walk {of}\"{}\" mode={}", name_str(path), mode(rcu))
            }
            Unlazy { why, .. } => write!(f, "  unlazy: leaving rcu-walk, reason={}", why.name()),
            UnlazyFailed { how, .. } => match how {
                UnlazyFail::MountSeq(_) => {
                    f.write_str("  unlazy failed: mount_seq changed -> restart in ref-walk")
                }
                UnlazyFail::Dead => {
                    f.write_str("  unlazy failed: dentry is dead -> restart in ref-walk")
                }
                UnlazyFail::DSeq(s) => write!(
                    f,
                    "  unlazy failed: d_seq {} moved -> restart in ref-walk",
                    s.sampled
                ),
            },
            Restart { why, .. } => {
                write!(f, "  {} check failed -> restart in ref-walk", why.name())
            }
            DotDotMount { mount, .. } => {
                write!(f, "  ..: mount root -> mountpoint in parent mount {mount}")
            }
            DotDot { rcu, .. } => write!(f, "  ..: up to parent ({})", mode(rcu)),
            FastHit {
                name, hash, seq, ..
            } => write!(
                f,
                "  lookup_fast \"{}\" hash={hash:#018x}: found dentry, d_seq={seq} (rcu)",
                name_str(name)
            ),
            FastMiss {
                name, hash, design, ..
            } => write!(
                f,
                "  lookup_fast \"{}\" hash={hash:#018x}: miss ({design})",
                name_str(name)
            ),
            MissCheck { name, seq, .. } => write!(
                f,
                "  lookup_fast \"{}\": miss, but {} {} -> {}",
                name_str(name),
                seq.which,
                seq.sampled,
                seq.now.unwrap_or(seq.sampled)
            ),
            FastEnoent {
                name,
                hash,
                dir_seq,
                rename_seq,
                design,
                ..
            } => write!(
                f,
                "  lookup_fast \"{}\" hash={hash:#018x}: miss; dir_seq={dir_seq} \
                 rename_seq={rename_seq} unchanged -> ENOENT, nothing allocated ({design})",
                name_str(name)
            ),
            RefHit { name, .. } => write!(f, "  lookup_fast \"{}\": found (ref)", name_str(name)),
            SlowFound { name, .. } => {
                write!(
                    f,
                    "  lookup_slow \"{}\": found under i_rwsem",
                    name_str(name)
                )
            }
            SlowEnoent { name, .. } => write!(
                f,
                "  lookup_slow \"{}\": miss under i_rwsem -> ENOENT, nothing allocated",
                name_str(name)
            ),
            ParallelFound { name, .. } => write!(
                f,
                "  lookup_slow \"{}\": d_alloc_parallel found it",
                name_str(name)
            ),
            DAdd {
                name, fs, positive, ..
            } => write!(
                f,
                "  lookup_slow \"{}\": d_alloc_parallel -> in-lookup; {fs} lookup -> {}; d_add",
                name_str(name),
                if positive { "positive" } else { "negative" }
            ),
            MountHere { mount, fs, .. } => {
                write!(f, "  step_into: crossing into mount {mount} ({fs})")
            }
            Negative { rcu, .. } => {
                write!(f, "  step_into: negative dentry -> ENOENT ({})", mode(rcu))
            }
            Symlink { body, nlinks, .. } => write!(
                f,
                "  step_into: symlink -> \"{}\" (follow #{nlinks})",
                name_str(body)
            ),
            Done { rcu } => write!(f, "  done ({})", mode(rcu)),
            _ => Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------
// Steps: the events as the step sink sees them (the `teaching` feature):
// `trace json`, the step-through page (docs/explore/) and the race hook
// (`vfsh race STEP CMD…`).

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
        "race" => ("(none: the race command)", "fs/src/tools/shell/steps.rs"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::Vfs;

    /// `walk_event!` lists the kinds that have a text line (the others cost
    /// nothing without `teaching`): a kind left off the list would lose its
    /// line in the kernel's trace. Every kind, in each of its shapes.
    #[test]
    fn the_text_list_of_walk_event_matches_the_renderer() {
        let vfs = Vfs::new_tmpfs("").unwrap();
        let d: &Dentry = vfs.root_mount().root_arc();
        let (name, hash, why) = (&b"x"[..], 7, FallbackReason::CacheMiss);
        let (same, moved) = (
            SeqNote::check("d_seq", 2, 2),
            SeqNote::check("dir_seq", 2, 4),
        );
        let mut texts = 0;
        macro_rules! check {
            ($kind:ident $(, $($field:tt)*)?) => {{
                let e = WalkEvent::$kind { $($($field)*)? };
                let listed = crate::walk_event!(@text $kind);
                assert!(listed || e.text().is_none(), "{} has a line", stringify!($kind));
                if let Some(t) = e.text() {
                    texts += 1;
                    assert!(!alloc::format!("{t}").is_empty(), "{}", stringify!($kind));
                }
                e.step().map(|s| assert!(!s.what.is_empty(), "{}", stringify!($kind)));
            }};
        }
        for rcu in [true, false] {
            check!(PathInit, path: b"/x", root: d, rcu, seq: 2, parent: rcu);
            check!(DotDotMount, d, rcu, mount: 1);
            check!(DotDot, d, rcu, seq: 2);
            check!(FastMiss, name, hash, dir: d, dir_seq: 2, design: "negative", enoent: rcu);
            check!(StepInto, name, d, rcu);
            check!(MountRoot, name, root: d, rcu, seq: 2);
            check!(Negative, name, d, rcu);
            check!(Symlink, name, d, rcu, body: b"/y", nlinks: 1);
            check!(Onto, name, d, rcu);
            check!(Done, rcu);
            check!(Result, path: b"/x", rcu, result: "ok");
            check!(DAdd, name, d, fs: "tmpfs", positive: rcu);
        }
        check!(Unlazy, d, why);
        check!(UnlazyFailed, d, how: UnlazyFail::MountSeq(moved));
        check!(UnlazyFailed, d, how: UnlazyFail::Dead);
        check!(UnlazyFailed, d, how: UnlazyFail::DSeq(moved));
        check!(Unlazied, d, seq: same);
        check!(Restart, d, why);
        check!(FastHit, name, hash, d, seq: 2);
        check!(MissCheck, name, dir: d, seq: same);
        check!(MissCheck, name, dir: d, seq: moved);
        check!(FastEnoent, name, hash, dir: d, dir_seq: 2, rename_seq: 2, design: "noalloc");
        check!(RefHit, name, d);
        check!(Slow, name, dir: d);
        check!(SlowFound, name, d);
        check!(SlowEnoent, name, dir: d);
        check!(ParallelFound, name, d);
        check!(ParallelAlloc, name, d);
        check!(MountHere, name, d, mount: 1, fs: "tmpfs", seq: Some(same));
        check!(MountHere, name, d, mount: 1, fs: "tmpfs", seq: None);
        check!(ChildCheck, name, d, seq: same);
        check!(CompleteWalk, d, seq: same);
        assert_eq!(texts, 29);
    }
}

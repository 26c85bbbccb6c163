//! Walk events: one per step of a path walk, and their text lines.
//!
//! Cost, as for `trace!`: an event with a text line costs one flag load when
//! tracing is off; the others cost nothing at all without the `teaching`
//! feature (the kernel, and so every benchmark, builds fs without it), and
//! with `--cfg fs_notrace` no event costs anything.
//!
//! Touches: nothing of its own (the text flag and sink of [`crate::trace`],
//! the step flag and sink of [`super`]).

use core::fmt;

use super::{emit_step, steps_enabled};
use crate::dcache::Dentry;
use crate::stats::FallbackReason;
use crate::trace::{emit, enabled};

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
            || $crate::walk_event::steps_enabled()
        {
            $crate::walk_event::emit_walk(
                &$crate::walk_event::WalkEvent::$kind { $($($field)*)? },
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
        let d: &Dentry = vfs.mnt_ns().root().root_arc();
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

//! The fixed scenarios of the step-through page (`make explore`,
//! docs/explore/index.html) and of its browser test: each one a few vfsh
//! lines of setup, maybe a race, and one traced command.
//!
//! Touches: fresh tmpfs shells only.

use std::string::{String, ToString};
use std::vec::Vec;

use crate::shell::Shell;

/// One scenario of the page.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    /// Short id (the page's anchor).
    pub id: &'static str,
    /// `designs`, `walks` or `races`.
    pub group: &'static str,
    pub title: &'static str,
    /// The root tmpfs's ENOENT design.
    pub design: &'static str,
    /// vfsh lines run first, untraced.
    pub setup: &'static [&'static str],
    /// `(STEP, CMD)` for `race STEP CMD`.
    pub race: Option<(&'static str, &'static str)>,
    /// The traced command.
    pub command: &'static str,
    /// What the student is about to see, in plain words.
    pub intro: &'static str,
    /// What to look for.
    pub watch: &'static str,
}

const AB: &[&str] = &["mkdir /a", "mkdir /a/b", "stat /a/b/missing"];

/// The scenarios, in page order.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        id: "transient",
        group: "designs",
        title: "ENOENT, transient design (Linux without negative dentries)",
        design: "transient",
        setup: AB,
        race: None,
        command: "stat /a/b/missing",
        intro: "The walk finds /a and /a/b in the dentry cache without taking a single lock \
                (RCU-walk). Then it looks for \"missing\" and finds nothing. With the transient \
                design a miss proves nothing: the name might exist on disk. Only the filesystem \
                can say, and asking it needs the directory lock, which RCU-walk may not take.",
        watch: "The try_to_unlazy step with reason cache_miss: the walk turns into a ref-walk \
                (it takes a reference on /a/b), allocates an in-lookup dentry, asks tmpfs, and \
                throws the negative answer away. Every stat of a missing name pays this again.",
    },
    Scenario {
        id: "negative",
        group: "designs",
        title: "ENOENT, negative design (Linux's default: negative dentries)",
        design: "negative",
        setup: AB,
        race: None,
        command: "stat /a/b/missing",
        intro: "The same stat. The first stat (in the setup) left a negative dentry for \
                \"missing\": a cache entry that says \"this name does not exist\".",
        watch: "lookup_fast finds the negative dentry in RCU-walk; step_into checks its d_seq \
                and answers ENOENT. No lock, no allocation, no fallback: but the negative \
                dentry costs memory, and each one is a shared cache line.",
    },
    Scenario {
        id: "noalloc",
        group: "designs",
        title: "ENOENT, noalloc design (a complete in-memory directory)",
        design: "noalloc",
        setup: AB,
        race: None,
        command: "stat /a/b/missing",
        intro: "The same stat on a filesystem whose dcache is complete (tmpfs keeps every \
                name in memory), so a miss can be the answer, if nothing changed during it.",
        watch: "lookup_fast samples the directory's dir_seq before searching and checks it \
                after the miss (and rename_seq too): unchanged means no name was added or \
                removed meanwhile, so ENOENT is proved without a lock and nothing is allocated.",
    },
    Scenario {
        id: "hit",
        group: "walks",
        title: "A hit: stat /a/b/f",
        design: "noalloc",
        setup: &["mkdir /a", "mkdir /a/b", "write /a/b/f hello"],
        race: None,
        command: "stat /a/b/f",
        intro: "The common case: every component is in the dentry cache.",
        watch: "Each lookup_fast samples the child's d_seq; each step_into checks it after \
                reading the inode. complete_walk re-checks the last dentry. The whole walk \
                stays RCU-walk: no lock, no reference, no shared store.",
    },
    Scenario {
        id: "symlink",
        group: "walks",
        title: "A symlink: stat /l/f where /l -> /a/b",
        design: "noalloc",
        setup: &[
            "mkdir /a",
            "mkdir /a/b",
            "write /a/b/f hi",
            "symlink /a/b /l",
        ],
        race: None,
        command: "stat /l/f",
        intro: "/l is a symbolic link to /a/b. The walk meets it as the first component.",
        watch: "step_into l finds a symlink: the walk jumps to the root and walks the link \
                body a/b, then carries on with f, all still in RCU-walk (tmpfs keeps link \
                bodies in memory).",
    },
    Scenario {
        id: "dotdot",
        group: "walks",
        title: "\"..\" across a mount: stat /m/x/../../a",
        design: "noalloc",
        setup: &[
            "mkdir /a",
            "mkdir /m",
            "mount enoent=noalloc /m",
            "mkdir /m/x",
        ],
        race: None,
        command: "stat /m/x/../../a",
        intro: "A second tmpfs is mounted on /m. The walk goes down into it and back up with \
                two \"..\" components.",
        watch: "step_into m crosses into the mount's root (checking mount_seq). The first .. \
                goes from x up to the mount root; the second is at a mount root, so \
                handle_dots first moves over to the mountpoint /m in the parent mount, then \
                up to /.",
    },
    Scenario {
        id: "race-rename",
        group: "races",
        title: "Race: rename /a/b while the walk stands on it",
        design: "noalloc",
        setup: &["mkdir /a", "mkdir /a/b"],
        race: Some(("step_into b", "rename /a/b /a/c")),
        command: "stat /a/b/missing",
        intro: "The walk has just found the dentry b (and sampled its d_seq). Right then, \
                before it reads b's inode, another task renames /a/b to /a/c. RCU-walk holds \
                no lock and no reference: nothing stopped the rename.",
        watch: "The rename bumped b's d_seq. step_into's check fails (sampled != now): what \
                the walk read may belong to a renamed dentry. It restarts the whole walk in \
                ref-walk (reason d_seq), which now finds no /a/b: ENOENT, the same answer as \
                if the rename had simply happened first.",
    },
    Scenario {
        id: "race-unlink",
        group: "races",
        title: "Race: unlink /a/b/missing just after lookup_fast found it",
        design: "noalloc",
        setup: &["mkdir /a", "mkdir /a/b", "create /a/b/missing"],
        race: Some(("lookup_fast missing", "unlink /a/b/missing")),
        command: "stat /a/b/missing",
        intro: "This time the file exists. lookup_fast finds its dentry; before step_into \
                reads the inode, another task unlinks the file.",
        watch: "unlink turns the dentry negative inside a d_seq write section. step_into's \
                d_seq check fails, the walk restarts in ref-walk (reason d_seq) and answers \
                ENOENT: never \"ok file\" from a dentry that was being unlinked.",
    },
    Scenario {
        id: "race-create",
        group: "races",
        title: "Race: create the missing name during a noalloc miss",
        design: "noalloc",
        setup: &["mkdir /a", "mkdir /a/b"],
        race: Some(("lookup_fast missing", "create /a/b/missing")),
        command: "stat /a/b/missing",
        intro: "noalloc answers ENOENT from a miss only if the directory did not change during \
                the search. Here another task creates /a/b/missing right after the miss.",
        watch: "The create bumped b's dir_seq. The check after the miss fails, so the miss is \
                no proof: try_to_unlazy (reason dir_seq) moves to ref-walk, lookup_slow takes \
                the directory lock and finds the new file: ok file, as if the create had come \
                first.",
    },
    Scenario {
        id: "race-mount",
        group: "races",
        title: "Race: mount over /a/b while the walk stands on it",
        design: "noalloc",
        setup: &["mkdir /a", "mkdir /a/b"],
        race: Some(("step_into b", "mount enoent=noalloc /a/b")),
        command: "stat /a/b/missing",
        intro: "The walk found b; before step_into looks at b's mount flag, another task \
                mounts a fresh tmpfs on /a/b.",
        watch: "step_into sees the mount, but mount_seq moved since the walk began, so \
                crossing it without references is not safe: restart in ref-walk (reason \
                global_seq). The ref-walk crosses into the new, empty tmpfs: ENOENT.",
    },
];

/// What running a scenario printed.
pub struct Run {
    /// The `trace json` steps (JSON objects, one per step).
    pub steps: Vec<String>,
    /// The text trace and race lines (without `# `).
    pub text: Vec<String>,
    /// The command's result line.
    pub result: String,
    /// For a race: the answer when CMD simply runs first.
    pub truth: Option<String>,
}

/// Every scenario, in page order: [`SCENARIOS`], with one generated
/// "designs" scenario (the `stat /a/b/missing` of the others, introduced by
/// the design's own help line) for each design of the registry that has no
/// written one, so the page compares every registered design.
pub fn all() -> Vec<Scenario> {
    let mut v: Vec<Scenario> = SCENARIOS.to_vec();
    let at = v
        .iter()
        .rposition(|s| s.group == "designs")
        .map_or(0, |i| i + 1);
    let extra: Vec<Scenario> = fs::dcache::design::DESIGNS
        .iter()
        .filter(|d| {
            !SCENARIOS
                .iter()
                .any(|s| s.group == "designs" && s.id == d.name())
        })
        .map(|d| Scenario {
            id: d.name(),
            group: "designs",
            title: Box::leak(std::format!("ENOENT, {} design", d.name()).into_boxed_str()),
            design: d.name(),
            setup: AB,
            race: None,
            command: "stat /a/b/missing",
            intro: d.help(),
            watch: "Compare the steps with the written designs: where the miss is answered, \
                    whether a lock is taken and whether a dentry is allocated.",
        })
        .collect();
    v.splice(at..at, extra);
    v
}

fn shell(s: &Scenario) -> Result<Shell, String> {
    let mut sh = Shell::try_new(&std::format!("enoent={}", s.design)).map_err(|e| e.to_string())?;
    for l in s.setup {
        let out = sh.exec(l);
        if out.last().map(String::as_str) != Some("ok")
            && !(l.starts_with("stat ") && out.last().is_some_and(|r| r.starts_with("err ")))
        {
            return Err(std::format!("{}: setup `{l}`: {out:?}", s.id));
        }
    }
    Ok(sh)
}

/// Run one scenario through the vfsh engine.
pub fn run(s: &Scenario) -> Result<Run, String> {
    let mut sh = shell(s)?;
    if let Some((step, cmd)) = s.race {
        let out = sh.exec(&std::format!("race {step} {cmd}"));
        if out != ["ok"] {
            return Err(std::format!("{}: race: {out:?}", s.id));
        }
    }
    sh.exec("trace on");
    sh.exec("trace json");
    let mut out = sh.exec(s.command);
    let result = out.pop().unwrap_or_default();
    let mut steps = Vec::new();
    let mut text = Vec::new();
    for l in out {
        let l = l.strip_prefix("# ").unwrap_or(&l).to_string();
        if l.starts_with('{') {
            steps.push(l);
        } else {
            text.push(l);
        }
    }
    let truth = match s.race {
        None => None,
        Some((_, cmd)) => {
            let mut t = shell(s)?;
            t.exec(cmd);
            t.exec(s.command).pop()
        }
    };
    Ok(Run {
        steps,
        text,
        result,
        truth,
    })
}

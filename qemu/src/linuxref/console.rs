//! A reference guest that did not finish: the kernel's own report of the
//! crash (an oops, a BUG, a panic) cut out of its console, the whole console
//! kept on disk beside the kernel image, and the one retry a crashed boot
//! gets. Every Linux-guest runner (statneg, the oracle, the walks) judges
//! each boot's console through [`judge`], and every figure it prints comes
//! through [`retry_on_panic`], so a run that needed a second boot says so
//! (`retried=1` on its line) and a run that crashed twice is reported with
//! both crashes' lines. Touches only `DIR/consoles/` next to the kernel.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::LinuxRefError;
use crate::runner::GuestStatus;

/// What a line that opens the report of a kernel that died starts with
/// (after the printk timestamp): `arch/x86/mm/fault.c`'s `BUG:` lines,
/// `arch/x86/kernel/dumpstack.c`'s `Oops:` header (every `die()`, a general
/// protection fault and an invalid opcode included; before 6.x the header
/// began with the fault's name), `lib/bug.c`'s `kernel BUG at` and
/// `kernel/panic.c`'s panic line (a panic with no oops before it: init
/// killed, a watchdog set to panic, sysrq-c).
const FATAL: &[&str] = &[
    "BUG: ",
    "Oops: ",
    "kernel BUG at ",
    "Kernel BUG at ",
    "general protection fault",
    "Kernel panic - not syncing",
];

/// What a line that opens the report of a kernel that is stuck, but alive,
/// starts with: `kernel/watchdog.c`'s soft and hard lockups,
/// `kernel/workqueue.c`'s lockup, `kernel/hung_task.c`'s blocked task and
/// every RCU stall warning (`rcu: INFO: rcu_preempt detected stalls`,
/// `self-detected stall`, `detected expedited stalls`, the tasks flavours).
/// Checked before [`FATAL`], whose `BUG: ` would take the workqueue's.
const STUCK: &[(&str, &str)] = &[
    ("watchdog: BUG: soft lockup", ""),
    ("watchdog: Watchdog detected hard LOCKUP", ""),
    ("BUG: workqueue lockup", ""),
    ("INFO: task ", "blocked for more than"),
    ("rcu: INFO: ", "stall"),
];

/// At most this many lines of a crash report are quoted (the whole console
/// is on disk); the line that ends the report is always among them.
const MAX_QUOTED: usize = 40;

/// The printk record in a console line: the text after its timestamp
/// (`[   10.336117] `), wherever on the line that stands (a user-space
/// write in flight on the same serial port can put its text before it);
/// the trimmed line when it has none.
fn message(line: &str) -> &str {
    let mut rest = line;
    while let Some(i) = rest.find('[') {
        rest = &rest[i + 1..];
        if let Some((stamp, msg)) = rest.split_once("] ") {
            let digits = stamp.trim_start();
            if digits.contains('.')
                && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
                && digits.chars().any(|c| c.is_ascii_digit())
            {
                return msg;
            }
        }
    }
    line.trim_start()
}

/// Whether a report's line opens one, and of which kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opens {
    /// The kernel died (or will: an oops in a task that is not init leaves
    /// a kernel that may hang, and whose figures are not to be believed).
    Fatal,
    /// The kernel reports itself stuck.
    Stuck,
}

fn opens(m: &str) -> Option<Opens> {
    if STUCK
        .iter()
        .any(|(start, has)| m.starts_with(start) && m.contains(has))
    {
        return Some(Opens::Stuck);
    }
    FATAL
        .iter()
        .any(|o| m.starts_with(o))
        .then_some(Opens::Fatal)
}

/// A kernel's report cut out of a console ([`crash_report`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashReport {
    /// The report's lines, register dumps and code bytes left out.
    pub lines: Vec<String>,
    /// The kernel died (a [`FATAL`] opener), rather than reported itself
    /// stuck.
    pub fatal: bool,
}

/// The kernel's report in `console`, if it holds one: from the first line
/// that opens the report of a kernel that died (else of one that is stuck)
/// to the `Kernel panic - not syncing` line after it (else the oops' `---[
/// end trace` line, else the console's end), the register dumps left out,
/// at most [`MAX_QUOTED`] lines with the last always among them.
pub fn crash_report(console: &str) -> Option<CrashReport> {
    let lines: Vec<&str> = console.lines().collect();
    let first = |kind| lines.iter().position(|l| opens(message(l)) == Some(kind));
    let (start, fatal) = match first(Opens::Fatal) {
        Some(i) => (i, true),
        None => (first(Opens::Stuck)?, false),
    };
    let after = |pat: &str| {
        lines[start..]
            .iter()
            .position(|l| message(l).starts_with(pat))
            .map(|i| start + i)
    };
    let end = after("Kernel panic - not syncing")
        .or_else(|| after("---[ end trace"))
        .unwrap_or(lines.len() - 1);
    let mut out: Vec<String> = lines[start..=end]
        .iter()
        .map(|l| message(l))
        .filter(|m| {
            // Register dumps (RAX: ... R15: ...) and the code bytes say
            // nothing a reader of the summary needs; the console file has
            // them.
            let is_regs = m.len() > 4
                && m.as_bytes()[0] == b'R'
                && m.split_whitespace()
                    .next()
                    .is_some_and(|w| w.ends_with(':'))
                && !m.starts_with("RIP:");
            !is_regs && !m.starts_with("Code: ")
        })
        .map(|m| m.trim_end().to_string())
        .collect();
    if out.len() > MAX_QUOTED {
        let last = out.pop().unwrap_or_default();
        let cut = out.len() - (MAX_QUOTED - 2);
        out.truncate(MAX_QUOTED - 2);
        out.push(format!(
            "... ({cut} lines left out; the console file has them)"
        ));
        out.push(last);
    }
    Some(CrashReport { lines: out, fatal })
}

/// Writes `console` to `DIR/consoles/WHAT-N.txt` beside `kernel` (the first
/// free N) and returns its path; `None` if it cannot be written.
pub fn keep_console(kernel: &Path, what: &str, console: &str) -> Option<PathBuf> {
    let dir = kernel.parent()?.join("consoles");
    std::fs::create_dir_all(&dir).ok()?;
    let stem: String = what
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    (1..10_000).find_map(|n| {
        let p = dir.join(format!("{stem}-{n}.txt"));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
            .and_then(|mut f| std::io::Write::write_all(&mut f, console.as_bytes()))
            .ok()
            .map(|()| p)
    })
}

/// How a guest (`what`, booting `kernel`) ended, from its console and
/// whether its runner saw it `finished` (its done marker, QEMU's end as
/// asked). A kernel that died, or oopsed and went on, is
/// [`LinuxRefError::Panic`] with its report, finished or not: an oops in a
/// task other than init does not stop the guest, but the figures of a kernel
/// that oopsed are not to be believed, and the crash is what to retry. A
/// guest that did not finish otherwise is [`LinuxRefError::Guest`], with the
/// kernel's report when it said it was stuck (a lockup, a stall, a blocked
/// task: a hang, not retried), else the console's last lines. The console is
/// kept on disk whenever there is an error.
pub fn judge(
    kernel: &Path,
    what: &str,
    status: &GuestStatus,
    console: &str,
    finished: bool,
) -> Result<(), LinuxRefError> {
    let report = crash_report(console);
    if finished && !report.as_ref().is_some_and(|r| r.fatal) {
        return Ok(());
    }
    Err(error(kernel, what, status, console, report, finished))
}

/// The error for a guest (`what`, booting `kernel`) that did not finish:
/// [`LinuxRefError::Panic`] with the kernel's report when it died, else
/// [`LinuxRefError::Guest`], with the kernel's report when it said it was
/// stuck (a lockup, a stall, a blocked task: a hang, which a second boot
/// would repeat, so not retried), else the console's last lines. The
/// console is kept on disk either way.
pub fn unfinished(kernel: &Path, what: &str, status: &GuestStatus, console: &str) -> LinuxRefError {
    error(kernel, what, status, console, crash_report(console), false)
}

/// The error of a guest whose console is `console`: the console kept, the
/// report quoted.
fn error(
    kernel: &Path,
    what: &str,
    status: &GuestStatus,
    console: &str,
    report: Option<CrashReport>,
    finished: bool,
) -> LinuxRefError {
    let kept = keep_console(kernel, what, console);
    let kept_note = kept
        .as_ref()
        .map_or(String::new(), |p| format!("; console: {}", p.display()));
    let finished_note = if finished {
        "; it finished, but its kernel oopsed"
    } else {
        ""
    };
    match report {
        Some(r) if r.fatal => LinuxRefError::Panic {
            what: format!("{what} ({status}{finished_note}{kept_note})"),
            lines: r.lines,
            console: console.to_string(),
        },
        Some(r) => LinuxRefError::Guest(format!(
            "{what} did not finish ({status}{kept_note}); the kernel said it was stuck:\n{}",
            indent(&r.lines)
        )),
        None => {
            let tail: Vec<&str> = console.lines().rev().take(15).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            LinuxRefError::Guest(format!(
                "{what} did not finish ({status}{kept_note}); last console lines:\n{}",
                tail.join("\n")
            ))
        }
    }
}

/// What [`retry_on_panic`] gives back: the run's result, and the crash that
/// made it boot a second time, if one did.
pub struct Retried<T> {
    pub result: Result<T, LinuxRefError>,
    pub first_crash: Option<LinuxRefError>,
}

impl<T> Retried<T> {
    /// ` retried=1` after a second boot, else nothing: the end of a result
    /// line (a field only where it says something, so that lines of runs
    /// that booted once read as they always have).
    pub fn suffix(&self) -> &'static str {
        if self.first_crash.is_some() {
            " retried=1"
        } else {
            ""
        }
    }

    /// Tells stderr about the first crash, if there was one: `who` crashed
    /// and was booted again, and the kernel's lines.
    pub fn report_first_crash(&self, who: &str) {
        if let Some(e) = &self.first_crash {
            eprintln!("{who}: {e}{who}: booted once more (retried=1)");
        }
    }
}

/// Runs `boot`, and once more if the guest crashed (a
/// [`LinuxRefError::Panic`]); any other error is not retried: a guest that
/// hangs or prints no figures would do it again.
pub fn retry_on_panic<T>(mut boot: impl FnMut() -> Result<T, LinuxRefError>) -> Retried<T> {
    match boot() {
        Err(e @ LinuxRefError::Panic { .. }) => Retried {
            result: boot(),
            first_crash: Some(e),
        },
        result => Retried {
            result,
            first_crash: None,
        },
    }
}

/// The crash report as an indented block (for stderr).
pub fn indent(lines: &[String]) -> String {
    let mut s = String::new();
    for l in lines {
        let _ = writeln!(s, "    {l}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The crash of a 2-vCPU 7.3.4 guest while its hist triggers were
    /// taken down (abridged console).
    const CRASH: &str = "linuxref-begin fs=tmpfs\n\
[   10.101010] BUG: kernel NULL pointer dereference, address: 0000000000000000\n\
[   10.101011] #PF: supervisor instruction fetch in kernel mode\n\
[   10.101012] CPU: 0 UID: 0 PID: 1 Comm: init Not tainted 7.3.4+deb13-cloud-amd64 #1 PREEMPT(lazy)\n\
[   10.101013] RIP: 0010:0x0\n\
[   10.101014] Code: Unable to access opcode bytes at 0xffffffffffffffd6.\n\
[   10.101015] RAX: ffffffffffffffda RBX: 000000002d7a06f0 RCX: 0000000000461189\n\
[   10.101016] Call Trace:\n\
[   10.101017]  __queue_work+0x1c5/0x520\n\
[   10.101018] Kernel panic - not syncing: Fatal exception in interrupt\n\
[   10.101019] Kernel Offset: 0x6800000 from 0xffffffff81000000\n";

    #[test]
    fn a_crash_report_is_cut_out_without_registers() {
        let r = crash_report(CRASH).expect("a crash");
        assert!(r.fatal);
        let r = r.lines;
        assert_eq!(
            r.first().map(String::as_str),
            Some("BUG: kernel NULL pointer dereference, address: 0000000000000000")
        );
        assert_eq!(
            r.last().map(String::as_str),
            Some("Kernel panic - not syncing: Fatal exception in interrupt")
        );
        assert!(r.iter().any(|l| l == "RIP: 0010:0x0"));
        assert!(r.iter().any(|l| l.contains("__queue_work")));
        assert!(!r
            .iter()
            .any(|l| l.starts_with("RAX:") || l.starts_with("Code:")));
    }

    /// The 7.3.4 crash as a 2-vCPU guest printed it in full: more lines
    /// than are quoted, its panic line last.
    fn whole_crash() -> String {
        let mut c = String::from(
            "linuxref-begin fs=tmpfs\n\
[   10.100000] BUG: kernel NULL pointer dereference, address: 0000000000000000\n\
[   10.100001] #PF: supervisor instruction fetch in kernel mode\n\
[   10.100002] #PF: error_code(0x0010) - not-present page\n\
[   10.100003] PGD 0 P4D 0\n\
[   10.100004] Oops: Oops: 0010 [#1] SMP NOPTI\n\
[   10.100005] CPU: 0 UID: 0 PID: 1 Comm: init Not tainted 7.3.4+deb13-cloud-amd64 #1 PREEMPT(lazy)\n\
[   10.100006] Hardware name: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 1.16.2-debian-1.16.2-1 04/01/2014\n\
[   10.100007] RIP: 0010:0x0\n\
[   10.100008] Code: Unable to access opcode bytes at 0xffffffffffffffd6.\n\
[   10.100009] RSP: 0018:ffffa4c280003e48 EFLAGS: 00010046\n\
[   10.100010] RAX: 0000000000000000 RBX: ffff8e4b41c0b000 RCX: 0000000000000000\n\
[   10.100011] Call Trace:\n\
[   10.100012]  <IRQ>\n",
        );
        for i in 0..40 {
            c.push_str(&format!("[   10.1001{i:02}]  frame_{i}+0x1c5/0x520\n"));
        }
        c.push_str(
            "[   10.100200]  </TASK>\n\
[   10.100201] ---[ end trace 0000000000000000 ]---\n\
[   10.100202] RIP: 0010:0x0\n\
[   10.100203] Kernel panic - not syncing: Fatal exception in interrupt\n\
[   10.100204] Kernel Offset: 0x6800000 from 0xffffffff81000000\n",
        );
        c
    }

    #[test]
    fn a_long_report_keeps_its_panic_line() {
        let r = crash_report(&whole_crash()).expect("a crash");
        assert!(r.fatal);
        assert_eq!(r.lines.len(), MAX_QUOTED);
        assert!(r.lines[0].starts_with("BUG: kernel NULL pointer"));
        assert_eq!(
            r.lines.last().map(String::as_str),
            Some("Kernel panic - not syncing: Fatal exception in interrupt")
        );
        assert!(r.lines[MAX_QUOTED - 2].contains("lines left out"));
    }

    /// Each kind of report as the kernel prints it (its first lines), and
    /// whether it says the kernel died.
    const REPORTS: &[(&str, bool)] = &[
        // arch/x86/mm/fault.c
        ("BUG: unable to handle page fault for address: ffffc90000bd3000", true),
        // A general protection fault's die() header, 6.12 and before 6.x.
        ("Oops: general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] PREEMPT SMP NOPTI", true),
        ("general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] SMP PTI", true),
        // BUG_ON(): lib/bug.c, then the die() header of its ud2.
        ("kernel BUG at fs/dcache.c:1842!", true),
        ("Oops: invalid opcode: 0000 [#1] PREEMPT SMP NOPTI", true),
        // Panics with no oops before them.
        ("Kernel panic - not syncing: sysrq triggered crash", true),
        ("Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000100", true),
        ("Kernel panic - not syncing: softlockup: hung tasks", true),
        // Stuck, not dead.
        ("watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [statneg:91]", false),
        ("watchdog: Watchdog detected hard LOCKUP on cpu 1", false),
        ("BUG: workqueue lockup - pool cpus=1 node=0 flags=0x0 nice=0 stuck for 31s!", false),
        ("INFO: task init:1 blocked for more than 122 seconds.", false),
        ("rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:", false),
        ("rcu: INFO: rcu_preempt self-detected stall on CPU", false),
        ("rcu: INFO: rcu_sched detected expedited stalls on CPUs/tasks: { 1-... } 21002 jiffies s: 377 root: 0x2/.", false),
        ("rcu: INFO: rcu_tasks_trace detected stalls on tasks:", false),
    ];

    #[test]
    fn every_kind_of_report_is_recognised() {
        for &(opener, fatal) in REPORTS {
            let console = format!(
                "linuxref-begin fs=tmpfs\n[   12.345678] {opener}\n[   12.345679] CPU: 1 UID: 0 PID: 91 Comm: statneg\n"
            );
            let r = crash_report(&console).unwrap_or_else(|| panic!("not recognised: {opener}"));
            assert_eq!((r.fatal, r.lines[0].as_str()), (fatal, opener));
        }
        // Not reports: a warning, a line that only mentions one.
        for l in [
            "WARNING: CPU: 0 PID: 1 at kernel/trace/trace_kprobe.c:1 foo+0x1/0x2",
            "INFO: task list printed",
            "rcu: INFO: nothing to see",
        ] {
            assert_eq!(crash_report(&format!("[    1.000000] {l}\n")), None, "{l}");
        }
    }

    #[test]
    fn a_report_behind_user_output_on_its_line_is_found() {
        // The guest's shell had written part of a line when the kernel
        // printed.
        let console = "linuxref-begin fs=tmpfs\nspin_lock=12[   10.101010] BUG: kernel NULL pointer dereference, address: 0000000000000000\n[   10.101018] Kernel panic - not syncing: Fatal exception in interrupt\n";
        let r = crash_report(console).expect("a crash");
        assert!(r.fatal);
        assert!(
            r.lines[0].starts_with("BUG: kernel NULL pointer"),
            "{:?}",
            r.lines
        );
    }

    #[test]
    fn a_stuck_kernel_that_timed_out_is_a_hang_not_a_crash() {
        let dir = std::env::temp_dir().join(format!("linuxref-stuck-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kernel = dir.join("bzImage");
        let console = "linuxref-begin fs=tmpfs\n\
[   40.000000] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [statneg:91]\n\
[   40.000001] CPU: 1 UID: 0 PID: 91 Comm: statneg\n";
        let e = unfinished(&kernel, "x", &GuestStatus::TimedOut, console);
        let LinuxRefError::Guest(m) = &e else {
            panic!("a hang taken for a crash: {e}")
        };
        assert!(m.contains("stuck") && m.contains("soft lockup"), "{m}");
        // A retry is for crashes only.
        let r: Retried<()> =
            retry_on_panic(|| Err(unfinished(&kernel, "x", &GuestStatus::TimedOut, console)));
        assert_eq!(r.suffix(), "");
        // A stuck kernel that then panicked (softlockup_panic) is a crash.
        let panicked =
            format!("{console}[   40.1] Kernel panic - not syncing: softlockup: hung tasks\n");
        let e = unfinished(&kernel, "x", &GuestStatus::NoDebugExit, &panicked);
        assert!(matches!(e, LinuxRefError::Panic { .. }), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_finished_guest_whose_kernel_oopsed_is_a_crash() {
        let dir = std::env::temp_dir().join(format!("linuxref-judge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kernel = dir.join("bzImage");
        // An oops in statneg's thread: the task dies, init goes on, the
        // counting run fails and the guest powers off as usual.
        let oopsed = "linuxref-begin fs=tmpfs\n\
[   11.000000] BUG: unable to handle page fault for address: ffffc90000bd3000\n\
[   11.000001] Oops: Oops: 0000 [#1] SMP NOPTI\n\
[   11.000002] CPU: 1 UID: 0 PID: 91 Comm: statneg Not tainted 7.3.4+deb13-cloud-amd64 #1\n\
[   11.000003] ---[ end trace 0000000000000000 ]---\n\
error: the counting run did not run\n\
linuxref-end fs=tmpfs rc=0\n\
linuxref-done\n";
        let e = judge(&kernel, "g", &GuestStatus::NoDebugExit, oopsed, true).unwrap_err();
        let LinuxRefError::Panic { what, lines, .. } = &e else {
            panic!("not a crash: {e}")
        };
        assert!(
            what.contains("it finished, but its kernel oopsed"),
            "{what}"
        );
        assert_eq!(
            lines.last().map(String::as_str),
            Some("---[ end trace 0000000000000000 ]---")
        );
        assert!(dir.join("consoles/g-1.txt").exists());
        // Retried like any crash.
        let r: Retried<()> =
            retry_on_panic(|| judge(&kernel, "g", &GuestStatus::NoDebugExit, oopsed, true));
        assert_eq!(r.suffix(), " retried=1");
        // A finished guest with a clean console, or one that was only
        // stuck for a while, passes (and keeps no console).
        let stuck = "[   40.0] rcu: INFO: rcu_preempt self-detected stall on CPU\nlinuxref-done\n";
        for c in ["linuxref-done\n", stuck] {
            assert!(judge(&kernel, "ok", &GuestStatus::NoDebugExit, c, true).is_ok());
        }
        assert!(!dir.join("consoles/ok-1.txt").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_clean_console_has_no_crash() {
        assert_eq!(
            crash_report("linuxref-begin fs=tmpfs\nlinuxref-done\n"),
            None
        );
        // "BUG" inside a line is not an opener.
        assert!(crash_report("[ 1.0] checking for BUG: nothing\n").is_none());
    }

    #[test]
    fn a_crash_is_retried_once_and_other_errors_never() {
        let crash = || LinuxRefError::Panic {
            what: "guest".into(),
            lines: vec!["BUG: x".into()],
            console: String::new(),
        };
        // Crashed once, then finished: the result, and the crash kept.
        let mut boots = 0;
        let r = retry_on_panic(|| {
            boots += 1;
            if boots == 1 {
                Err(crash())
            } else {
                Ok(7)
            }
        });
        assert_eq!((boots, r.suffix()), (2, " retried=1"));
        assert!(matches!(r.result, Ok(7)));
        // Crashed twice: the second crash is the result, no third boot.
        let mut boots = 0;
        let r: Retried<()> = retry_on_panic(|| {
            boots += 1;
            Err(crash())
        });
        assert_eq!(boots, 2);
        assert!(matches!(r.result, Err(LinuxRefError::Panic { .. })));
        // A guest that did not finish for another reason is not booted again.
        let mut boots = 0;
        let r: Retried<()> = retry_on_panic(|| {
            boots += 1;
            Err(LinuxRefError::Guest("timed out".into()))
        });
        assert_eq!((boots, r.suffix()), (1, ""));
    }

    #[test]
    fn an_unfinished_guest_keeps_its_console() {
        let dir = std::env::temp_dir().join(format!("linuxref-console-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kernel = dir.join("bzImage");
        let e = unfinished(
            &kernel,
            "7.3.4-vanilla 2 vCPUs",
            &GuestStatus::NoDebugExit,
            CRASH,
        );
        let LinuxRefError::Panic { what, lines, .. } = &e else {
            panic!("not a crash: {e}")
        };
        assert!(lines[0].starts_with("BUG: kernel NULL pointer"));
        let kept = dir.join("consoles/7.3.4-vanilla_2_vCPUs-1.txt");
        assert!(what.contains(&kept.display().to_string()), "{what}");
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), CRASH);
        let e = unfinished(
            &kernel,
            "x",
            &GuestStatus::TimedOut,
            "booting\nstill booting\n",
        );
        assert!(matches!(e, LinuxRefError::Guest(ref m) if m.contains("still booting")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

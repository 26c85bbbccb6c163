//! A reference guest that did not finish: the kernel's own report of the
//! crash (an oops, a BUG, a panic) cut out of its console, the whole console
//! kept on disk beside the kernel image, and the one retry a crashed boot
//! gets. Every Linux-guest runner (statneg, the oracle, the walks) ends an
//! unfinished boot through [`unfinished`], and every figure it prints comes
//! through [`retry_on_panic`], so a run that needed a second boot says so
//! (`retried=1` on its line) and a run that crashed twice is reported with
//! both crashes' lines. Touches only `DIR/consoles/` next to the kernel.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::LinuxRefError;
use crate::runner::GuestStatus;

/// What a line that opens a kernel crash report starts with (after the
/// printk timestamp), as `lib/bug.c`, `arch/x86/mm/fault.c`,
/// `kernel/panic.c` and the lockup detectors print them.
const OPENERS: &[&str] = &[
    "BUG: ",
    "Oops: ",
    "kernel BUG at ",
    "general protection fault",
    "watchdog: BUG: soft lockup",
    "rcu: INFO: rcu_sched detected stalls",
    "rcu: INFO: rcu_preempt detected stalls",
    "Kernel panic - not syncing",
];

/// At most this many lines of a crash report are quoted (the whole console
/// is on disk).
const MAX_QUOTED: usize = 40;

/// Strips a printk timestamp (`[   10.336117] `).
fn message(line: &str) -> &str {
    let t = line.trim_start();
    match t.strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((stamp, rest)) if stamp.trim().parse::<f64>().is_ok() => rest,
        _ => t,
    }
}

/// The kernel's crash report in `console`, if it holds one: from the first
/// line that opens a report to the `Kernel panic - not syncing` line that
/// ends it (or [`MAX_QUOTED`] lines), the register dumps left out.
pub fn crash_report(console: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = console.lines().collect();
    let start = lines
        .iter()
        .position(|l| OPENERS.iter().any(|o| message(l).starts_with(o)))?;
    let mut out = Vec::new();
    for l in &lines[start..] {
        let m = message(l);
        // Register dumps (RAX: ... R15: ...) and the code bytes say nothing
        // a reader of the summary needs; the console file has them.
        let is_regs = m.len() > 4
            && m.as_bytes()[0] == b'R'
            && m.split_whitespace()
                .next()
                .is_some_and(|w| w.ends_with(':'))
            && !m.starts_with("RIP:");
        if !is_regs && !m.starts_with("Code: ") {
            out.push(m.trim_end().to_string());
        }
        if m.starts_with("Kernel panic - not syncing") || out.len() >= MAX_QUOTED {
            break;
        }
    }
    Some(out)
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

/// The error for a guest (`what`, booting `kernel`) that did not finish:
/// [`LinuxRefError::Panic`] with the crash report when the console holds one,
/// else [`LinuxRefError::Guest`] with the console's last lines. The console
/// is kept on disk either way.
pub fn unfinished(kernel: &Path, what: &str, status: &GuestStatus, console: &str) -> LinuxRefError {
    let kept = keep_console(kernel, what, console);
    let kept_note = kept
        .as_ref()
        .map_or(String::new(), |p| format!("; console: {}", p.display()));
    match crash_report(console) {
        Some(lines) => LinuxRefError::Panic {
            what: format!("{what} ({status}{kept_note})"),
            lines,
        },
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

    #[test]
    fn a_clean_console_has_no_crash() {
        assert!(crash_report("linuxref-begin fs=tmpfs\nlinuxref-done\n").is_none());
        // "BUG" inside a line is not an opener.
        assert!(crash_report("[ 1.0] checking for BUG: nothing\n").is_none());
    }

    #[test]
    fn a_crash_is_retried_once_and_other_errors_never() {
        let crash = || LinuxRefError::Panic {
            what: "guest".into(),
            lines: vec!["BUG: x".into()],
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
        let LinuxRefError::Panic { what, lines } = &e else {
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

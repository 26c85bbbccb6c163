//! Child processes with a wall-clock limit: start, collect stdout and
//! stderr, kill the child (only the one we started) if it runs too long.
//!
//! Touches: the child it starts.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a finished (or killed) child left.
#[derive(Debug)]
pub struct Finished {
    /// Exit code; None if killed by a signal or by the timeout.
    pub code: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Run `cmd` with a limit. Errors only if it cannot be started.
pub fn run_with_timeout(mut cmd: Command, limit: Duration) -> Result<Finished, String> {
    let prog = format!("{:?}", cmd.get_program());
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {prog}: {e}"))?;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let t_out = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
    });
    let t_err = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if start.elapsed() >= limit => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let stdout = t_out.join().unwrap_or_default();
    let stderr = t_err.join().unwrap_or_default();
    Ok(Finished {
        code: status.and_then(|s| s.code()).filter(|_| !timed_out),
        timed_out,
        stdout,
        stderr,
    })
}

/// The last non-empty line of `s`, for short error notes.
pub fn last_line(s: &str) -> &str {
    s.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// CPU time this process has used so far, user + system, all its threads
/// (finished ones included), in milliseconds: fields 14 and 15 of
/// `/proc/self/stat`, in clock ticks of 1/100 s (Linux's fixed `USER_HZ`
/// on x86). `None` where /proc is not Linux's.
pub fn self_cpu_ms() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_stat_cpu_ms(&stat)
}

/// The user + system milliseconds of a `/proc/PID/stat` line.
pub fn parse_stat_cpu_ms(stat: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14, stime 15.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) * 10)
}

/// CPU time of this process's children that have ended and been waited
/// for, user + system, in milliseconds: fields 16 and 17 of
/// `/proc/self/stat` (`cutime`, `cstime`; what `getrusage(RUSAGE_CHILDREN)`
/// reports). A child's own waited-for children are in it too, so a
/// `qemu-run` child brings its QEMU's threads. `None` where /proc is not
/// Linux's.
pub fn children_cpu_ms() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_stat_children_ms(&stat)
}

/// The cutime + cstime milliseconds of a `/proc/PID/stat` line.
pub fn parse_stat_children_ms(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let cutime: u64 = f.get(13)?.parse().ok()?;
    let cstime: u64 = f.get(14)?.parse().ok()?;
    Some((cutime + cstime) * 10)
}

/// The value of `key=` in `qemu-run`'s stderr line (`qemu-run: ... key=v ...`).
fn runner_word(stderr: &str, key: &str) -> Option<String> {
    stderr.lines().find_map(|l| {
        let rest = l.strip_prefix("qemu-run:")?;
        let v = rest
            .split_whitespace()
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))?;
        Some(v.to_string())
    })
}

/// The CPU model `qemu-run` reports on stderr (`... cpu=qemu64 ...`).
pub fn runner_cpu(stderr: &str) -> Option<String> {
    runner_word(stderr, "cpu")
}

/// The accelerator `qemu-run` reports on stderr (`... accel=tcg (...)`).
pub fn runner_accel(stderr: &str) -> Option<String> {
    runner_word(stderr, "accel")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accel_from_runner_stderr() {
        let e = "qemu-run: smp=2 mem=512M accel=tcg (auto: cached) timeout=60s cmdline=\"x\"\n";
        assert_eq!(runner_accel(e).as_deref(), Some("tcg"));
        assert_eq!(runner_accel("nothing here"), None);
        let e =
            "qemu-run: smp=2 mem=512M accel=kvm (asked) cpu=host,-arch-capabilities timeout=60s\n";
        assert_eq!(runner_cpu(e).as_deref(), Some("host,-arch-capabilities"));
        assert_eq!(runner_cpu("qemu-run: smp=2 accel=tcg\n"), None);
    }

    #[test]
    fn children_cpu_fields() {
        let line = "4242 (bench task (x)) R 1 4242 4242 0 -1 4194304 300 0 0 0 250 7 31 2 20 0 3 0 99 1000 200";
        assert_eq!(parse_stat_children_ms(line), Some(330));
        assert_eq!(parse_stat_children_ms("4242 (x) R 1 2"), None);
        // A child that burns CPU and is waited for shows up.
        let before = children_cpu_ms().unwrap();
        let st = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(st.success());
        assert!(children_cpu_ms().unwrap() > before);
    }

    #[test]
    fn stat_cpu_fields() {
        let line = "4242 (bench task (x)) R 1 4242 4242 0 -1 4194304 300 0 0 0 250 7 0 0 20 0 3 0 99 1000 200";
        assert_eq!(parse_stat_cpu_ms(line), Some(2570));
        assert_eq!(parse_stat_cpu_ms("garbage"), None);
        assert!(self_cpu_ms().is_some());
    }
}

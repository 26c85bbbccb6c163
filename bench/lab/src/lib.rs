//! The benchmark lab: the host-side tools around the no_std `bench` crate
//! (its workloads, driver and output format) and the `bench` binary: std
//! threads as the driver's executor, host mode, the host Linux `stat()`
//! reference, the sweep over sources × designs × CPU counts, the report
//! (raw.csv, report.md, scaling.svg), the cifs `ls -la` and SMB read/write
//! experiments, and the scaling model with its command (`bench predict`).
//!
//! - [`exec`]: [`exec::HostExecutor`], one pinned std thread per task.
//! - [`linux`]: host Linux's own `stat()` of a missing name, same driver.
//! - [`rows`]: one raw.csv row per run, written and read back.
//! - [`points`]: the runs of one measured point and its median run.
//! - [`report`]: report.md from rows; [`plot`]: scaling.svg.
//! - [`sweep`]: runs every source and writes `results/<timestamp>/`.
//! - [`proc`]: subprocesses with a timeout.
//! - [`rcureader`]: `bench rcu-reader`, the host RCU reader's fence as an A/B.
//! - [`predict`]: `bench predict` and the scaling model ([`predict::model`]).
//! - [`lsla`]: `bench lsla`, cifs `ls -la` against Linux's; [`smbrw`]:
//!   `bench smb-rw`.
//! - [`negcost`]: the `negcost` binary's lines and its prototype side.
//! - [`fidelity`]: `bench fidelity`, the prototype's ratios beside Linux's.
//!
//! Touches: threads, files under the chosen output directory, child
//! processes (this binary, the QEMU runner) it starts and waits for.

extern crate alloc;

pub mod exec;
pub mod fidelity;
pub mod linux;
pub mod lsla;
pub mod negcost;
pub mod plot;
pub mod points;
pub mod predict;
pub mod proc;
pub mod rcureader;
pub mod report;
pub mod rows;
pub mod smbrw;
pub mod sweep;
pub mod text;

use std::fmt;
use std::io::Write;

/// `fmt::Write` to stdout, flushed at every line end, so per-second lines
/// appear as the run goes.
pub struct StdoutWriter(pub std::io::Stdout);

impl StdoutWriter {
    pub fn new() -> Self {
        StdoutWriter(std::io::stdout())
    }
}

impl Default for StdoutWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Write for StdoutWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut lock = self.0.lock();
        lock.write_all(s.as_bytes()).map_err(|_| fmt::Error)?;
        if s.contains('\n') {
            lock.flush().map_err(|_| fmt::Error)?;
        }
        Ok(())
    }
}

/// `12.34 M`, `567.8 k`, `12`.
pub fn human(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// This machine's host name (for the `host` column).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// The first `model name` of a `/proc/cpuinfo` text.
pub fn cpu_model_from_cpuinfo(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name")
            .then(|| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|v| !v.is_empty())
    })
}

/// This machine's CPU model (`/proc/cpuinfo`'s `model name`; empty when it
/// cannot be read), for the `cpu_model` column of host rows.
pub fn host_cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| cpu_model_from_cpuinfo(&t))
        .unwrap_or_default()
}

/// The `cpu_model` of a guest row: the accelerator and QEMU's `-cpu`
/// model, e.g. `TCG qemu64`, `KVM host,-arch-capabilities`.
pub fn guest_cpu_model(accel: &str, qemu_cpu: &str) -> String {
    format!("{} {qemu_cpu}", accel.to_uppercase())
}

/// UTC time as `YYYYMMDDTHHMMSSZ` (for result directory names).
pub fn utc_stamp(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let rem = unix_secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// [`utc_stamp`] of now.
pub fn now_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    utc_stamp(secs)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_models() {
        let info = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R)  CPU @ 2.20GHz\n\
                    processor\t: 1\nmodel name\t: Intel(R) Xeon(R)  CPU @ 2.20GHz\n";
        assert_eq!(
            super::cpu_model_from_cpuinfo(info).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        assert_eq!(super::cpu_model_from_cpuinfo("processor : 0\n"), None);
        assert_eq!(super::guest_cpu_model("tcg", "qemu64"), "TCG qemu64");
        assert_eq!(super::guest_cpu_model("kvm", "host"), "KVM host");
        // This machine has one (Linux).
        assert!(!super::host_cpu_model().is_empty());
    }

    #[test]
    fn utc_stamp_known_dates() {
        assert_eq!(super::utc_stamp(0), "19700101T000000Z");
        assert_eq!(super::utc_stamp(951_782_400), "20000229T000000Z");
        assert_eq!(super::utc_stamp(1_796_016_555), "20261130T052915Z");
    }
}

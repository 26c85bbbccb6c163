//! How a run ended: [`GuestStatus`], mapped from QEMU's exit code and stderr
//! back to the value the guest wrote to `isa-debug-exit` (see the table in
//! the module above). Pure functions, no I/O.

use std::fmt;

use super::{EXIT_NO_DEBUG_EXIT, EXIT_QEMU_ERROR, EXIT_TIMEOUT};

/// How a run ended, from the guest's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestStatus {
    /// The guest wrote `V` to `isa-debug-exit` (0 = success).
    Exited(u8),
    /// QEMU exited 0: the guest reset or powered off without writing a status.
    NoDebugExit,
    /// QEMU failed by itself with this exit code.
    QemuError(i32),
    /// QEMU was killed by this signal (not by us).
    Signaled(i32),
    /// The wall-clock timeout expired and QEMU was killed.
    TimedOut,
}

impl GuestStatus {
    /// Maps QEMU's exit to the guest's status. `stderr` is what QEMU printed:
    /// exit code 1 is both "guest wrote 0" and QEMU's own failure code, and an
    /// error line from QEMU (one that is not a warning) tells them apart.
    pub fn from_qemu_exit(code: Option<i32>, signal: Option<i32>, stderr: &str) -> GuestStatus {
        Self::from_qemu_exit_and_serial(code, signal, stderr, "")
    }

    /// [`Self::from_qemu_exit`], but first believing the guest: when its
    /// console's last `exit: status=V` line (printed by our kernel just
    /// before it writes the port) agrees with QEMU's exit code `(V << 1) | 1`,
    /// the guest wrote `V`, whatever QEMU printed on stderr (KVM's CPUID
    /// warnings, for instance). Without that line (another guest, or one
    /// that died before reaching it) stderr decides as before.
    pub fn from_qemu_exit_and_serial(
        code: Option<i32>,
        signal: Option<i32>,
        stderr: &str,
        serial: &str,
    ) -> GuestStatus {
        if let (Some(c), Some(v)) = (code, announced_status(serial)) {
            if v < 128 && ((v << 1) | 1) as i32 == c {
                return GuestStatus::Exited(v as u8);
            }
        }
        match (code, signal) {
            (Some(0), _) => GuestStatus::NoDebugExit,
            (Some(1), _) if qemu_reported_error(stderr) => GuestStatus::QemuError(1),
            (Some(c), _) if c & 1 == 1 => GuestStatus::Exited(((c >> 1) & 0x7f) as u8),
            (Some(c), _) => GuestStatus::QemuError(c),
            (None, Some(sig)) => GuestStatus::Signaled(sig),
            (None, None) => GuestStatus::QemuError(-1),
        }
    }

    /// True only when the guest wrote 0.
    pub fn success(self) -> bool {
        self == GuestStatus::Exited(0)
    }

    /// The process exit code `qemu-run` ends with (see the module table).
    pub fn exit_code(self) -> i32 {
        match self {
            GuestStatus::Exited(v) => i32::from(v),
            GuestStatus::TimedOut => EXIT_TIMEOUT,
            GuestStatus::NoDebugExit => EXIT_NO_DEBUG_EXIT,
            GuestStatus::QemuError(_) => EXIT_QEMU_ERROR,
            GuestStatus::Signaled(sig) => 128 + sig,
        }
    }
}

impl fmt::Display for GuestStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuestStatus::Exited(0) => write!(f, "guest exited with status 0 (success)"),
            GuestStatus::Exited(v) => write!(f, "guest exited with status {v} (failure)"),
            GuestStatus::NoDebugExit => write!(
                f,
                "QEMU ended without the guest writing its status to isa-debug-exit \
                 (reset, power-off or triple fault): treated as failure"
            ),
            GuestStatus::QemuError(c) => write!(f, "QEMU itself failed (exit code {c})"),
            GuestStatus::Signaled(s) => write!(f, "QEMU was killed by signal {s}"),
            GuestStatus::TimedOut => write!(f, "wall-clock timeout: QEMU was killed"),
        }
    }
}

/// The `V` of the last `exit: status=V` line on the guest console, if any.
/// The line may follow another CPU's unfinished output on the same line.
pub fn announced_status(serial: &str) -> Option<u32> {
    const TAG: &str = "exit: status=";
    let line = serial.lines().rev().find(|l| l.contains(TAG))?;
    let rest = &line[line.rfind(TAG)? + TAG.len()..];
    rest.trim_end().parse().ok()
}

/// True when QEMU's stderr holds an error line (`qemu-system-x86_64: ...` or
/// `qemu: ...`, as its loaders print) that is not a warning.
fn qemu_reported_error(stderr: &str) -> bool {
    stderr.lines().any(|l| {
        let Some((prog, rest)) = l.split_once(": ") else {
            return false;
        };
        prog.rsplit('/').next().unwrap_or(prog).starts_with("qemu")
            && !rest.trim_start().starts_with("warning:")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_exit_status_maps_back_to_guest_value() {
        // (V << 1) | 1 for V = 0, 1, 3, 127.
        assert_eq!(
            GuestStatus::from_qemu_exit(Some(1), None, ""),
            GuestStatus::Exited(0)
        );
        assert_eq!(
            GuestStatus::from_qemu_exit(Some(3), None, ""),
            GuestStatus::Exited(1)
        );
        assert_eq!(
            GuestStatus::from_qemu_exit(Some(7), None, ""),
            GuestStatus::Exited(3)
        );
        assert_eq!(
            GuestStatus::from_qemu_exit(Some(255), None, ""),
            GuestStatus::Exited(127)
        );
        assert!(GuestStatus::Exited(0).success());
        assert!(!GuestStatus::Exited(3).success());
        assert_eq!(GuestStatus::Exited(3).exit_code(), 3);
    }

    #[test]
    fn announced_status_overrules_qemu_warnings_and_errors() {
        let kvm_warn = "qemu-system-x86_64: warning: host doesn't support requested feature: \
                        CPUID.01H:ECX.pni [bit 0]\nqemu-system-x86_64: some KVM complaint\n";
        let serial = "demo: done\nexit: status=0\n";
        // Without the line, the error-looking stderr line wins.
        assert_eq!(
            GuestStatus::from_qemu_exit(Some(1), None, kvm_warn),
            GuestStatus::QemuError(1)
        );
        // With an agreeing line the guest's own status decides.
        assert_eq!(
            GuestStatus::from_qemu_exit_and_serial(Some(1), None, kvm_warn, serial),
            GuestStatus::Exited(0)
        );
        assert_eq!(
            GuestStatus::from_qemu_exit_and_serial(Some(7), None, kvm_warn, "x\nexit: status=3\n"),
            GuestStatus::Exited(3)
        );
        // A line that disagrees with the exit code is not trusted.
        assert_eq!(
            GuestStatus::from_qemu_exit_and_serial(Some(1), None, kvm_warn, "exit: status=3\n"),
            GuestStatus::QemuError(1)
        );
        assert_eq!(
            GuestStatus::from_qemu_exit_and_serial(Some(0), None, "", serial),
            GuestStatus::NoDebugExit
        );
        assert_eq!(
            GuestStatus::from_qemu_exit_and_serial(None, Some(9), "", serial),
            GuestStatus::Signaled(9)
        );
        // The last line counts, also after another CPU's partial output.
        assert_eq!(
            announced_status("exit: status=1\nlog: parexit: status=4\r\n"),
            Some(4)
        );
        assert_eq!(announced_status("exit: status=\n"), None);
        assert_eq!(announced_status("no line\n"), None);
    }

    #[test]
    fn non_debug_exits_are_failures() {
        let s = GuestStatus::from_qemu_exit(Some(0), None, "");
        assert_eq!(s, GuestStatus::NoDebugExit);
        assert!(!s.success());
        assert_eq!(s.exit_code(), EXIT_NO_DEBUG_EXIT);
        let s = GuestStatus::from_qemu_exit(
            Some(1),
            None,
            "qemu-system-x86_64: -kernel /nope: could not load kernel\n",
        );
        assert_eq!(s, GuestStatus::QemuError(1));
        assert_eq!(s.exit_code(), EXIT_QEMU_ERROR);
        let s = GuestStatus::from_qemu_exit(
            Some(1),
            None,
            "qemu: could not open kernel file '/nope': No such file or directory\n",
        );
        assert_eq!(s, GuestStatus::QemuError(1));
        // A warning alone does not turn a clean guest exit into an error.
        let s = GuestStatus::from_qemu_exit(
            Some(1),
            None,
            "/usr/bin/qemu-system-x86_64: warning: host doesn't support requested feature\n",
        );
        assert_eq!(s, GuestStatus::Exited(0));
        assert_eq!(
            GuestStatus::from_qemu_exit(Some(2), None, ""),
            GuestStatus::QemuError(2)
        );
        assert_eq!(
            GuestStatus::from_qemu_exit(None, Some(9), ""),
            GuestStatus::Signaled(9)
        );
        assert_eq!(GuestStatus::Signaled(9).exit_code(), 137);
        assert_eq!(GuestStatus::TimedOut.exit_code(), 124);
    }
}

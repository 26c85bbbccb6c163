//! Exit status convention. The guest writes V to QEMU's `isa-debug-exit`
//! port (0xf4); QEMU then exits with status `(V << 1) | 1`. The host runner
//! maps that back to V, so `make boot` exits with V:
//!
//! | V | QEMU status | meaning                                             |
//! |---|-------------|-----------------------------------------------------|
//! | 0 | 1           | success (self-tests all passed / mode finished)     |
//! | 1 | 3           | self-tests ran and at least one failed              |
//! | 2 | 5           | bad kernel command line (valid keys were printed)   |
//! | 3 | 7           | fatal CPU exception (dump and backtrace printed)    |
//! | 4 | 9           | kernel panic (message, location, backtrace printed) |
//! | 5 | 11          | boot failure (no memory map, no RAM, ...)           |
//! | 6 | 13          | the requested run failed (e.g. `smb=`: no network,  |
//! |   |             | server unreachable, mount or listing error)         |
//!
//! QEMU exiting with 0 means the guest never reached the port (triple fault
//! with `-no-reboot`, or QEMU killed): the runner must treat it as failure.
//!
//! Just before writing the port the kernel prints one last console line,
//! `exit: status=V`. QEMU's exit code 1 means both "the guest wrote 0" and
//! "QEMU itself failed", and QEMU's stderr (CPUID warnings under KVM) cannot
//! always tell them apart; the runner trusts `(V << 1) | 1` as the guest's
//! own status when this line agrees with it.

/// Why the kernel stops; the value written to the debug-exit port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ExitCode {
    /// Everything asked for succeeded.
    Success = 0,
    /// At least one self-test failed.
    TestsFailed = 1,
    /// The command line was rejected.
    BadCmdline = 2,
    /// A CPU exception nobody handles.
    Exception = 3,
    /// `panic!`.
    Panic = 4,
    /// The machine cannot be brought up.
    BootFailure = 5,
    /// The work the command line asked for failed (error printed).
    RunFailed = 6,
}

/// Leave QEMU with `code`, announcing it on the console first.
pub fn exit(code: ExitCode) -> ! {
    // The fatal paths come here too, so print the way they do (a bounded
    // wait for the console lock, never a deadlock on it).
    crate::console::emergency(format_args!("exit: status={}\n", code as u32));
    crate::arch::exit(code as u32)
}

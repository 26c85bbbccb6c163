//! The in-guest self-tests (`selftest` on the command line): this file holds
//! the list and the runner.
//!
//! One layout, after Asterinas's `#[ktest]`: a test body lives beside what
//! it tests, as `TOPIC_test.rs` in the same folder, declared by the module
//! that declares its subject (`mm/poison_test.rs` beside `mm/poison.rs`,
//! `time_test.rs` beside `time.rs`), and this one runner gathers them. The
//! bodies share one leaf harness, `crate::ktest` (the result type,
//! `ensure!`, `ncpus`, `wait_until`, `DropFlag`). This file imports the
//! bodies, the bodies import the harness, the harness imports neither, and
//! no body imports another: a line, not a circle. The bodies:
//!
//! - `mm::alloc_test` (frames, heap, slab under concurrent use from every
//!   CPU), `mm::poison_test` (free-memory poisoning), `mm::stack_test`
//!   (guarded stacks);
//! - `arch::percpu_test` (per-core data and CPU ids), `arch::trap_test`
//!   (a breakpoint, page faults through the probe, caught);
//! - `time_test` (TSC against the reference clock, ticks), `smp_test`
//!   (cross-CPU calls and IPIs);
//! - `sync::rcu_test` (grace periods, callbacks, `call_rcu` short of
//!   memory), `sync::fs_test` (the fs crate on this kernel's platform);
//! - `cmdline_test` (the library's command-line parser, in the guest).
//!
//! They are built where they run, into the kernel, and into every image:
//! they need the machine (CPUs, the local APIC, page faults, the guest's
//! memory), so no host build can run them; and the one ELF that `make run`
//! and the benchmarks boot is the one that `make test-boot`, `make
//! test-kvm`, `scripts/same-output.sh` and the host tests
//! (`qemu/tests/guest_*.rs`) boot with `selftest`, so what the tests pass
//! on is what is measured. A cargo feature would mean a second kernel
//! build (a second target directory, or one path holding whichever was
//! built last). They cost about 46 KiB of the image's 1.03 MiB of text and
//! run only when `selftest` is on the command line.
//!
//! Each test runs on the boot CPU (fanning out with `smp::run_on`), returns
//! `Err(reason)` on failure, and is reported as one line; `run` returns the
//! [`Summary`] and `main` prints the `N passed, M failed` verdict.
//!
//! A test that needs what not every machine offers is listed in [`NEEDS`];
//! where the kernel finds at run time that this machine lacks it (today:
//! `int3` under a KVM that emulates instructions, see
//! `arch::hypervisor`), the test is not run and its line reads
//! `test NAME ... skipped: REASON`; the verdict then gains `, K skipped`
//! (`N passed, M failed, K skipped`). Where nothing is skipped the output
//! is as it always was.

use crate::cmdline_test;
use crate::console::kprintln;
use crate::ktest::{ncpus, TestResult};
use crate::mm::{alloc_test, poison_test, slab, stack_test};
use crate::smp;
use crate::sync::{fs_test, rcu, rcu_test};
use crate::{smp_test, time, time_test};

type Test = (&'static str, fn() -> TestResult);

const TESTS: &[Test] = &[
    ("cmdline_parser", cmdline_test::cmdline_parser),
    ("percpu_data", crate::arch::percpu_test::percpu_data),
    ("frame_alloc_all_cpus", alloc_test::frame_alloc_all_cpus),
    ("heap_large_all_cpus", alloc_test::heap_large_all_cpus),
    ("slab_all_cpus", alloc_test::slab_all_cpus),
    ("slab_cross_cpu_free", alloc_test::slab_cross_cpu_free),
    (
        "slab_fast_path_is_per_cpu",
        alloc_test::slab_fast_path_is_per_cpu,
    ),
    ("poison_clean_cycle", poison_test::clean_cycle),
    (
        "poison_write_after_free_counted",
        poison_test::write_after_free_counted,
    ),
    (
        "poison_freed_inode_reads_as_poison",
        poison_test::freed_inode_reads_as_poison,
    ),
    ("tsc_vs_reference_clock", time_test::tsc_vs_reference_clock),
    (
        "clock_monotonic_across_cpus",
        time_test::clock_monotonic_across_cpus,
    ),
    (
        "timer_ticks_on_every_cpu",
        time_test::timer_ticks_on_every_cpu,
    ),
    ("cross_cpu_calls", smp_test::cross_cpu_calls),
    ("ipi_delivery", smp_test::ipi_delivery),
    ("rcu_waits_for_reader", rcu_test::rcu_waits_for_reader),
    ("rcu_call_rcu_all_cpus", rcu_test::rcu_call_rcu_all_cpus),
    ("rcu_grace_periods_idle", rcu_test::rcu_grace_periods_idle),
    ("rcu_async_callbacks", rcu_test::rcu_async_callbacks),
    (
        "rcu_call_rcu_without_segments",
        rcu_test::rcu_call_rcu_without_segments,
    ),
    (
        "rcu_call_rcu_nearly_full_heap",
        rcu_test::rcu_call_rcu_nearly_full_heap,
    ),
    (
        "exception_breakpoint",
        crate::arch::trap_test::exception_breakpoint,
    ),
    (
        "exception_page_fault",
        crate::arch::trap_test::exception_page_fault,
    ),
    ("guarded_stack", stack_test::guarded_stack),
    ("fs_platform", fs_test::fs_platform),
    (
        "fs_mkdir_stat_enoent_per_design",
        fs_test::fs_mkdir_stat_enoent_per_design,
    ),
    (
        "fs_lookups_all_cpus_per_design",
        fs_test::fs_lookups_all_cpus_per_design,
    ),
    (
        "fs_rcu_grace_period_reclaims_dentries",
        fs_test::fs_rcu_grace_period_reclaims_dentries,
    ),
    (
        "poison_rcu_lookup_counts_freed_dentry",
        poison_test::rcu_lookup_counts_freed_dentry,
    ),
    ("fs_enomem_is_an_answer", fs_test::fs_enomem_is_an_answer),
];

/// What a test needs beyond what every x86 machine we boot on offers.
#[derive(Clone, Copy, Debug)]
enum Needs {
    /// `int3` delivered to our #BP handler (an instruction-emulating KVM
    /// stops the whole VM instead).
    Breakpoint,
}

impl Needs {
    /// Why this machine lacks it, or `None` where it has it (decided by
    /// probing at run time, never by which host we are on).
    fn missing(self) -> Option<&'static str> {
        match self {
            Needs::Breakpoint => crate::arch::hypervisor::breakpoint_unsupported(),
        }
    }
}

/// The tests that need something of [`Needs`].
const NEEDS: &[(&str, Needs)] = &[("exception_breakpoint", Needs::Breakpoint)];

/// Why `name` cannot run on this machine, if it cannot.
fn skip_reason(name: &str) -> Option<&'static str> {
    NEEDS
        .iter()
        .filter(|(n, _)| *n == name)
        .find_map(|(_, needs)| needs.missing())
}

/// How the suite went. Prints as the verdict line: `N passed, M failed`,
/// with `, K skipped` appended when K is not 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl core::fmt::Display for Summary {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} passed, {} failed", self.passed, self.failed)?;
        if self.skipped > 0 {
            write!(f, ", {} skipped", self.skipped)?;
        }
        Ok(())
    }
}

/// Run every test this machine can run; returns the counts.
pub fn run() -> Summary {
    kprintln!(
        "selftest: {} tests on {} CPUs",
        TESTS.len(),
        smp::online_count()
    );
    let mut sum = Summary::default();
    for (name, test) in TESTS {
        if let Some(why) = skip_reason(name) {
            sum.skipped += 1;
            kprintln!("test {name} ... skipped: {why}");
            continue;
        }
        let t0 = time::now_ns();
        let r = test();
        let ms = (time::now_ns() - t0) / 1_000_000;
        match r {
            Ok(()) => {
                sum.passed += 1;
                kprintln!("test {name} ... ok ({ms} ms)");
            }
            Err(e) => {
                sum.failed += 1;
                kprintln!("test {name} ... FAILED: {e}");
            }
        }
        rcu::quiescent_state();
    }
    let (allocs, frees) = slab::totals(ncpus());
    let (_, heap_size, heap_used) = crate::mm::heap::stats();
    let (nfull, nempty, carved) = (0..slab::NCLASSES)
        .map(slab::depot_stats)
        .fold((0, 0, 0), |a, d| (a.0 + d.0, a.1 + d.1, a.2 + d.2));
    log::info!(
        "mm: {allocs} allocations, {frees} frees on {} CPUs; heap {} of {} KiB in use; depot {nfull} full/{nempty} empty magazines, {carved} slab objects",
        ncpus(),
        heap_used >> 10,
        heap_size >> 10
    );
    sum
}

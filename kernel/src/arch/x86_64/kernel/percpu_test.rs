//! Self-test of per-core data (listed in `crate::selftest`): on every CPU,
//! `cpu_id()` names the CPU the job was sent to, and the three views of its
//! APIC id (CPUID, the local APIC's register, the id recorded in the
//! per-core area at bring-up) agree and are unique.
//!
//! It lives here because it checks x86 identities that generic code must not
//! name. Safe code only. Touches: nothing but reads, on every CPU.

use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use super::{apic, core_local};
use crate::ktest::{ensure, ncpus, TestResult};
use crate::smp::{self, CpuSet};

pub(crate) fn percpu_data() -> TestResult {
    let r = smp::run_on_collect(&CpuSet::all(), |cpu| {
        (
            crate::arch::cpu_id(),
            crate::arch::processor::initial_apic_id(),
            apic::id(),
            core_local::of(cpu).apic_id.load(Ordering::Relaxed),
        )
    });
    ensure!(
        r.len() == ncpus(),
        "{} results for {} CPUs",
        r.len(),
        ncpus()
    );
    let mut apics = Vec::new();
    for (cpu, (id, cpuid_apic, lapic, recorded)) in r {
        ensure!(cpu == id, "job for cpu {cpu} saw cpu_id {id}");
        ensure!(
            cpuid_apic == lapic && lapic == recorded,
            "cpu {cpu}: APIC ids {cpuid_apic}/{lapic}/{recorded}"
        );
        apics.push(lapic);
    }
    apics.sort_unstable();
    apics.dedup();
    ensure!(apics.len() == ncpus(), "APIC ids not unique");
    Ok(())
}

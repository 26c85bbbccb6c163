//! Starting the application processors and running closures on them.
//!
//! Start: for every AP of the MADT the boot CPU maps a guarded kernel stack,
//! records APIC id -> CPU id, copies the trampoline, then sends INIT to all
//! APs, waits 10 ms, and sends two rounds of STARTUP IPIs (the second only to
//! APs not yet online). All APs run the trampoline concurrently; each finds
//! its stack by APIC id and enters [`ap_entry64`].
//! This file reads `start::trampoline` and not the other way round: it
//! installs the trampoline and hands it each AP's stack and the entry,
//! [`ap_entry64`], as data (Linux's `initial_code`), so the assembly names
//! no symbol of this file.
//!
//! Cross-CPU calls: each CPU has a mailbox holding a pointer to a [`Job`] on
//! the caller's stack. [`call_on`] fills the mailboxes, sends a wake-up IPI,
//! runs its own share if it is in the set, and spins until every target has
//! finished; idle CPUs pick their job up in [`poll_mailbox`]. One call at a
//! time (a global lock); not callable from inside a job.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::super::start::trampoline;
use super::apic::{KICK_VECTOR, TEST_VECTOR, WAKEUP_VECTOR};
use super::{apic, core_local, processor};
use crate::percpu::{per_cpu, PerCpu, MAX_CPUS};

/// Kernel stack of every AP.
pub const AP_STACK_SIZE: usize = 128 * 1024;

static APIC_TO_CPU: [AtomicU32; 256] = [const { AtomicU32::new(u32::MAX) }; 256];
static ONLINE: PerCpu<AtomicBool> = per_cpu!(AtomicBool::new(false));
static ONLINE_COUNT: AtomicUsize = AtomicUsize::new(0);
static ID_LIMIT: AtomicUsize = AtomicUsize::new(1);
static LAST_ONLINE_TSC: AtomicU64 = AtomicU64::new(0);

/// Number of CPUs online (boot CPU included).
pub fn online_count() -> usize {
    ONLINE_COUNT.load(Ordering::Acquire)
}

/// Highest online CPU id + 1 (equals `online_count()` unless an AP failed
/// to start).
pub fn id_limit() -> usize {
    ID_LIMIT.load(Ordering::Acquire)
}

/// Is CPU `cpu` online?
pub fn is_online(cpu: usize) -> bool {
    cpu < MAX_CPUS && ONLINE[cpu].load(Ordering::Acquire)
}

/// TSC when the last CPU came online.
pub fn last_online_tsc() -> u64 {
    LAST_ONLINE_TSC.load(Ordering::Acquire)
}

/// APIC id of CPU `cpu`.
pub fn apic_id_of(cpu: usize) -> u32 {
    core_local::of(cpu).apic_id.load(Ordering::Relaxed)
}

/// Mark the calling CPU online (last step of its bring-up).
pub fn mark_online(cpu: usize) {
    LAST_ONLINE_TSC.fetch_max(processor::rdtsc(), Ordering::AcqRel);
    ONLINE[cpu].store(true, Ordering::Release);
    ID_LIMIT.fetch_max(cpu + 1, Ordering::AcqRel);
    ONLINE_COUNT.fetch_add(1, Ordering::AcqRel);
}

/// Register the boot CPU (CPU 0) under its APIC id.
pub fn register_boot_cpu(apic_id: u32) {
    APIC_TO_CPU[apic_id as usize].store(0, Ordering::Relaxed);
    core_local::of(0).apic_id.store(apic_id, Ordering::Relaxed);
}

/// Start every AP in `apic_ids` (the boot CPU's id is skipped) and wait up to
/// `timeout_ms` for them. Returns the number of CPUs online.
pub fn start_aps(apic_ids: &[u32], timeout_ms: u64) -> usize {
    let bsp = apic::id();
    let mut aps = Vec::new();
    for &apic in apic_ids.iter().filter(|&&a| a != bsp && a < 255) {
        let cpu = aps.len() + 1;
        if cpu >= MAX_CPUS {
            log::warn!("smp: more than {MAX_CPUS} CPUs, ignoring APIC id {apic}");
            continue;
        }
        let stack = match crate::mm::stack::alloc(AP_STACK_SIZE) {
            Ok(s) => s,
            Err(e) => {
                log::warn!("smp: no stack for APIC id {apic}: {e}");
                break;
            }
        };
        core_local::set_stack(cpu, stack.bottom, stack.top);
        core_local::of(cpu).apic_id.store(apic, Ordering::Relaxed);
        APIC_TO_CPU[apic as usize].store(cpu as u32, Ordering::Release);
        trampoline::set_stack(apic, stack.top as u64);
        aps.push(apic);
    }
    if aps.is_empty() {
        return online_count();
    }
    let (frame, _) = ::x86_64::registers::control::Cr3::read();
    trampoline::install(frame.start_address().as_u64(), ap_entry64);
    let page = (trampoline::TRAMPOLINE_BASE >> 12) as u8;

    for &apic in &aps {
        apic::send_init(apic);
    }
    crate::time::delay_us(10_000);
    for &apic in &aps {
        apic::send_startup(apic, page);
    }
    crate::time::delay_us(200);
    for &apic in &aps {
        let cpu = APIC_TO_CPU[apic as usize].load(Ordering::Relaxed) as usize;
        if !is_online(cpu) {
            apic::send_startup(apic, page);
        }
    }
    let want = aps.len() + 1;
    let deadline = crate::time::now_ns() + timeout_ms * 1_000_000;
    while online_count() < want && crate::time::now_ns() < deadline {
        processor::pause();
    }
    online_count()
}

/// First Rust code of an AP, on its own stack (called by the trampoline).
pub extern "C" fn ap_entry64(apic_id: u32) -> ! {
    let cpu = APIC_TO_CPU[apic_id as usize & 0xff].load(Ordering::Acquire);
    if cpu == u32::MAX {
        // Not one we started (cannot happen with targeted SIPIs): park it.
        loop {
            ::x86_64::instructions::interrupts::disable();
            ::x86_64::instructions::hlt();
        }
    }
    let cpu = cpu as usize;
    super::application_processor_init(cpu);
    crate::ap_main(cpu)
}

/// A closure posted to other CPUs, living on the caller's stack.
struct Job {
    call: unsafe fn(*const (), usize),
    data: *const (),
    pending: AtomicUsize,
}

static MAILBOX: PerCpu<AtomicPtr<Job>> = per_cpu!(AtomicPtr::new(core::ptr::null_mut()));
static CALL_LOCK: spin::Mutex<()> = spin::Mutex::new(());
static IN_JOB: PerCpu<AtomicBool> = per_cpu!(AtomicBool::new(false));

unsafe fn call_thunk<F: Fn(usize) + Sync>(data: *const (), cpu: usize) {
    // SAFETY: `data` was made from `&F` in `call_on`, which does not return
    // (so the closure stays alive) until every target has run it.
    let f = unsafe { &*(data as *const F) };
    f(cpu)
}

/// Run `f(cpu)` on every CPU in `cpus` (online CPU ids, no duplicates), the
/// caller included if listed, and return when all have finished.
///
/// Panics if a target is offline or if called from inside a job.
pub fn call_on<F: Fn(usize) + Sync>(cpus: &[usize], f: &F) {
    let me = core_local::cpu_id();
    assert!(
        !IN_JOB[me].load(Ordering::Relaxed),
        "smp::call_on from inside a cross-CPU job"
    );
    let _g = CALL_LOCK.lock();
    let others = cpus.iter().filter(|&&c| c != me).count();
    let job = Job {
        call: call_thunk::<F>,
        data: f as *const F as *const (),
        pending: AtomicUsize::new(others),
    };
    for &c in cpus.iter().filter(|&&c| c != me) {
        assert!(is_online(c), "smp::call_on: cpu {c} is not online");
        let prev = MAILBOX[c].swap(&job as *const Job as *mut Job, Ordering::AcqRel);
        assert!(prev.is_null(), "smp::call_on: cpu {c} mailbox busy");
        apic::send_ipi(apic_id_of(c), WAKEUP_VECTOR);
    }
    if cpus.contains(&me) {
        IN_JOB[me].store(true, Ordering::Relaxed);
        f(me);
        IN_JOB[me].store(false, Ordering::Relaxed);
    }
    while job.pending.load(Ordering::Acquire) != 0 {
        processor::pause();
    }
}

/// Is there a job waiting for this CPU?
pub fn has_job() -> bool {
    !MAILBOX.get().load(Ordering::Acquire).is_null()
}

/// Run this CPU's pending job, if any. Returns whether one ran.
pub fn poll_mailbox() -> bool {
    let cpu = core_local::cpu_id();
    let p = MAILBOX[cpu].swap(core::ptr::null_mut(), Ordering::AcqRel);
    if p.is_null() {
        return false;
    }
    // SAFETY: a non-null mailbox pointer is a Job on the stack of a caller
    // blocked in `call_on` until `pending` reaches zero; we decrement it only
    // after our last use of the job.
    let job = unsafe { &*p };
    IN_JOB[cpu].store(true, Ordering::Relaxed);
    // SAFETY: `call` and `data` were paired by `call_on` (same F).
    unsafe { (job.call)(job.data, cpu) };
    IN_JOB[cpu].store(false, Ordering::Relaxed);
    job.pending.fetch_sub(1, Ordering::Release);
    true
}

/// Send a test IPI to `cpu`.
pub fn send_test_ipi(cpu: usize) {
    apic::send_ipi(apic_id_of(cpu), TEST_VECTOR);
}

/// Kick `cpu` out of a paravirt lock's halt (`processor::halt_while`).
pub fn pv_kick(cpu: usize) {
    apic::send_ipi(apic_id_of(cpu), KICK_VECTOR);
}

/// Send a wake-up IPI to `cpu`.
pub fn kick(cpu: usize) {
    apic::send_ipi(apic_id_of(cpu), WAKEUP_VECTOR);
}

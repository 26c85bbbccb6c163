//! Who runs us, and what they can run: the hypervisor's CPUID signature and
//! whether guest code runs on the processor or through an instruction
//! emulator. The self-tests ask [`breakpoint_unsupported`] before raising
//! `int3` on purpose (`crate::selftest` reports the test as skipped, with
//! the reason, instead of running it).
//!
//! Why a probe and not a list: on KVM with hardware virtualization `int3`
//! is delivered to our #BP handler without the host seeing it, as on bare
//! metal. Some machines offer a `/dev/kvm` that is an instruction emulator
//! instead (measured on the project's test machines: a 10^8-iteration loop
//! took 42 s under KVM and 0.11 s under TCG); its emulator does not know
//! `int3` and stops the whole VM ("KVM internal error. Suberror: 1 …
//! emulation failure"), which no handler of ours can catch. Raising one to
//! find out would be that very stop, so we look at the two things that
//! tell such a machine apart without risk: the CPUID hypervisor signature
//! says "KVMKVMKVM", and a short loop runs at tens of iterations per
//! millisecond where any processor (bare metal, hardware KVM, TCG's
//! translated code) runs tens or hundreds of thousands.
//!
//! Touches: CPUID, the clock (`crate::time`); nothing else. Safe code.

use alloc::format;
use alloc::string::String;

use super::processor::cpuid;

/// Loop iterations per millisecond below which guest code is taken to be
/// emulated. Measured on a loaded 2-core test machine: the
/// emulating KVM 23–220, TCG 68 000–99 000; a processor running the loop
/// itself does one iteration in a few cycles (hundreds of thousands).
pub const EMULATED_BELOW_PER_MS: u64 = 2_000;

/// The hypervisor's 12-byte CPUID signature (leaf 0x4000_0000, EBX ECX
/// EDX), if CPUID.1:ECX bit 31 says one is present. KVM's is
/// `KVMKVMKVM\0\0\0`.
pub fn signature() -> Option<[u8; 12]> {
    if cpuid(1, 0).2 & (1 << 31) == 0 {
        return None;
    }
    let (_, b, c, d) = cpuid(0x4000_0000, 0);
    let mut sig = [0u8; 12];
    sig[0..4].copy_from_slice(&b.to_le_bytes());
    sig[4..8].copy_from_slice(&c.to_le_bytes());
    sig[8..12].copy_from_slice(&d.to_le_bytes());
    Some(sig)
}

/// The signature as text (NULs dropped, other non-printing bytes as `?`),
/// or `none`.
pub fn signature_text() -> String {
    match signature() {
        None => String::from("none"),
        Some(sig) => sig
            .iter()
            .filter(|&&b| b != 0)
            .map(|&b| if b.is_ascii_graphic() { b as char } else { '?' })
            .collect(),
    }
}

/// True under KVM (by its CPUID signature).
pub fn is_kvm() -> bool {
    signature().is_some_and(|s| &s[..9] == b"KVMKVMKVM")
}

/// How fast this CPU runs a simple dependent loop: iterations per
/// millisecond of the reference clock, the best of three short rounds (a
/// round the host preempted only lowers its own figure). 30–260 ms in
/// all under the emulator (23–220 iterations/ms), tens of microseconds
/// elsewhere.
pub fn loop_rate_per_ms() -> u64 {
    const N: u64 = 2_000;
    let mut best = 0;
    for _ in 0..3 {
        let t0 = crate::time::now_ns();
        let mut x = 0u64;
        for i in 0..N {
            x = core::hint::black_box(x.wrapping_add(i));
        }
        core::hint::black_box(x);
        let dt = (crate::time::now_ns() - t0).max(1);
        best = best.max(N * 1_000_000 / dt);
    }
    best
}

/// Why `int3` must not be raised here, or `None` where it is delivered to
/// our handler. Measured once and remembered.
pub fn breakpoint_unsupported() -> Option<&'static str> {
    static VERDICT: spin::Once<Option<String>> = spin::Once::new();
    VERDICT
        .call_once(|| {
            if !is_kvm() {
                return None;
            }
            let rate = loop_rate_per_ms();
            log::info!(
                "hypervisor: {} runs guest code at {rate} loop iterations/ms ({})",
                signature_text(),
                if rate < EMULATED_BELOW_PER_MS {
                    "emulated"
                } else {
                    "on the processor"
                }
            );
            (rate < EMULATED_BELOW_PER_MS).then(|| {
                format!(
                    "KVM here emulates instructions (a loop runs {rate} iterations/ms, TCG and \
                     hardware run tens of thousands or more) and its emulator stops the VM at int3"
                )
            })
        })
        .as_deref()
}

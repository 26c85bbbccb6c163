//! Hardware entropy for protocol nonces: RDRAND when CPUID says the CPU has
//! it (QEMU's TCG `-cpu max` does; the default `qemu64` does not), else the
//! TSC mixed through a 64-bit finaliser. Not a cryptographic generator in
//! the fallback case — good enough for SMB client challenges in a test
//! guest, and said so.
//!
//! Touches: CPUID, RDRAND, the TSC; one atomic counter.

use core::sync::atomic::{AtomicU64, Ordering};

static MIX: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);

/// Whether RDRAND is available (CPUID.1:ECX bit 30).
pub fn has_rdrand() -> bool {
    super::processor::cpuid(1, 0).2 & (1 << 30) != 0
}

fn rdrand() -> Option<u64> {
    if !has_rdrand() {
        return None;
    }
    for _ in 0..10 {
        let v: u64;
        let ok: u8;
        // SAFETY: CPUID said RDRAND exists; it writes two registers and the
        // flags, nothing in memory.
        unsafe {
            core::arch::asm!("rdrand {v}", "setc {ok}", v = out(reg) v, ok = out(reg_byte) ok,
                options(nomem, nostack))
        };
        if ok == 1 {
            return Some(v);
        }
    }
    None
}

fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// 64 unpredictable-enough bits.
pub fn u64() -> u64 {
    if let Some(v) = rdrand() {
        return v;
    }
    let tsc = super::processor::rdtsc();
    let k = MIX.fetch_add(0x9e37_79b9_7f4a_7c15 ^ tsc, Ordering::Relaxed);
    splitmix(k ^ tsc.rotate_left(17))
}

/// Fill `buf` with [`u64`] output.
pub fn fill(buf: &mut [u8]) {
    for chunk in buf.chunks_mut(8) {
        let v = u64().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

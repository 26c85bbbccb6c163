//! Hardware entropy for protocol nonces and keys: RDSEED when CPUID says
//! the CPU has it, else RDRAND (both the CPU's own DRBG, seeded from its
//! noise source: a cryptographic generator), else — QEMU's default TCG
//! model `qemu64` has neither — the TSC mixed through a 64-bit
//! finaliser, which is **not** cryptographic: its output can be guessed
//! by anyone who can estimate the TSC. [`source`] says which one this CPU
//! uses (the boot log names it), and [`Source::cryptographic`] lets the
//! cifs mount refuse `sign` and `seal` on the fallback. Before the first
//! use the hardware is checked as Linux checks it at boot
//! ([`kernel::randcheck`]); a part that fails then, or later gives
//! nothing usable, is not used again.
//!
//! Touches: CPUID, RDSEED, RDRAND, the TSC; one atomic counter, two flags.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use kernel::randcheck::{samples_sane, stuck, SAMPLES};

static MIX: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
/// Set for good the first time the hardware gave nothing usable and
/// [`u64`] fell back to the TSC, or failed the first-use check: from then
/// on [`source`] says so, so that `sign` and `seal` are refused on a
/// machine whose keys may already have come from the fallback, and
/// [`u64`] draws from the fallback only.
static HW_FAILED: AtomicBool = AtomicBool::new(false);
/// Set (Release, after any HW_FAILED store) once the first-use check has
/// run to its end on some CPU; a CPU that finds it clear (Acquire) runs
/// the check itself, so no draw and no answer of [`source`] comes before
/// one has been made.
static CHECKED: AtomicBool = AtomicBool::new(false);

/// Where [`u64`] draws from on this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// RDSEED (CPUID.(7,0):EBX bit 18), RDRAND when it runs dry.
    Rdseed,
    /// RDRAND (CPUID.1:ECX bit 30).
    Rdrand,
    /// Neither: the TSC through splitmix, not cryptographic.
    TscFallback,
    /// RDSEED or RDRAND exists but failed (ten refusals in a row, the
    /// stuck values 0 and all-ones that broken parts return with the carry
    /// set, or draws that do not change before the first use): the TSC
    /// fallback is used from then on, and is the source named.
    HwFailed,
}

impl Source {
    /// The name the boot log gives it.
    pub fn name(self) -> &'static str {
        match self {
            Source::Rdseed => "RDSEED (RDRAND when it runs dry)",
            Source::Rdrand => "RDRAND",
            Source::TscFallback => {
                "TSC + splitmix fallback: the CPU has no RDRAND or RDSEED; not cryptographic"
            }
            Source::HwFailed => {
                "TSC + splitmix fallback: RDSEED/RDRAND failed or returned a stuck value; not cryptographic"
            }
        }
    }

    /// Whether keys and nonces drawn from it can be trusted.
    pub fn cryptographic(self) -> bool {
        !matches!(self, Source::TscFallback | Source::HwFailed)
    }
}

/// Whether RDRAND is available (CPUID.1:ECX bit 30).
pub fn has_rdrand() -> bool {
    super::processor::cpuid(1, 0).2 & (1 << 30) != 0
}

/// Whether RDSEED is available (CPUID.(EAX=7,ECX=0):EBX bit 18; leaf 7
/// exists when CPUID.0:EAX ≥ 7).
pub fn has_rdseed() -> bool {
    super::processor::cpuid(0, 0).0 >= 7 && super::processor::cpuid(7, 0).1 & (1 << 18) != 0
}

/// The source this CPU gives [`u64`].
pub fn source() -> Source {
    check_once();
    if HW_FAILED.load(Ordering::Acquire) {
        Source::HwFailed
    } else if has_rdseed() {
        Source::Rdseed
    } else if has_rdrand() {
        Source::Rdrand
    } else {
        Source::TscFallback
    }
}

fn rdseed() -> Option<u64> {
    if !has_rdseed() {
        return None;
    }
    for _ in 0..10 {
        let v: u64;
        let ok: u8;
        // SAFETY: CPUID said RDSEED exists; it writes two registers and
        // the flags, nothing in memory.
        unsafe {
            core::arch::asm!("rdseed {v}", "setc {ok}", v = out(reg) v, ok = out(reg_byte) ok,
                options(nomem, nostack))
        };
        if ok == 1 && !stuck(v) {
            return Some(v);
        }
    }
    None
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
        if ok == 1 && !stuck(v) {
            return Some(v);
        }
    }
    None
}

/// Linux's boot check (`x86_init_rdrand`), made once before the first
/// use: [`SAMPLES`] draws in a row must come, and change often enough
/// ([`samples_sane`]). RDRAND alone, as Linux checks it; RDSEED through
/// RDRAND when it runs dry, as [`u64`] draws. A failure sets HW_FAILED.
fn check_once() {
    if CHECKED.load(Ordering::Acquire) {
        return;
    }
    let sane = |draw: &dyn Fn() -> Option<u64>| {
        let mut s = [0u64; SAMPLES];
        for x in &mut s {
            match draw() {
                Some(v) => *x = v,
                None => return false,
            }
        }
        samples_sane(&s)
    };
    if (has_rdrand() && !sane(&rdrand)) || (has_rdseed() && !sane(&|| rdseed().or_else(rdrand))) {
        HW_FAILED.store(true, Ordering::Release);
    }
    CHECKED.store(true, Ordering::Release);
}

fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// 64 bits from [`source`]: RDSEED, RDRAND, or (neither present, or both
/// failing ten times in a row or stuck, or the first-use check failed)
/// the TSC fallback; a failure of present hardware is remembered
/// ([`Source::HwFailed`]) before the fallback's value is returned, so a
/// caller that asks [`source`] after its draws sees it.
pub fn u64() -> u64 {
    check_once();
    if !HW_FAILED.load(Ordering::Acquire) {
        if let Some(v) = rdseed().or_else(rdrand) {
            return v;
        }
        if has_rdseed() || has_rdrand() {
            HW_FAILED.store(true, Ordering::Release);
        }
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

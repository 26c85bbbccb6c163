//! The rules by which the kernel's random source (`arch::rand`) judges
//! what RDSEED and RDRAND return, kept free of hardware so that the host
//! tests them. Two rules: a single draw of 0 or all-ones is refused (what
//! parts with the known RDRAND erratum return forever with the carry set),
//! and, once before the first use, [`SAMPLES`] draws in a row must change
//! at least [`MIN_CHANGE`] times (Linux's `x86_init_rdrand`, which
//! disables RDRAND and RDSEED when they do not): a part stuck on any other
//! constant passes the first rule and not the second. Touches nothing.

/// Draws the first-use check takes.
pub const SAMPLES: usize = 8;
/// Changes from one draw to the next it needs among them.
pub const MIN_CHANGE: usize = 5;

/// A draw refused on its own: 0 or all-ones. An honest 64-bit draw is
/// one of them with probability 2^-63, which costs one retry.
pub fn stuck(v: u64) -> bool {
    v == 0 || v == u64::MAX
}

/// Whether [`SAMPLES`] consecutive draws look like a generator's: at
/// least [`MIN_CHANGE`] of the draws after the first differ from the one
/// before. Honest draws fail it only when three of the seven pairs are
/// equal, with probability below 2^-186.
pub fn samples_sane(samples: &[u64; SAMPLES]) -> bool {
    let changes = samples.windows(2).filter(|w| w[0] != w[1]).count();
    changes >= MIN_CHANGE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erratum_values_are_stuck_and_others_are_not() {
        assert!(stuck(0));
        assert!(stuck(u64::MAX));
        for v in [1, u64::MAX - 1, 0x9e37_79b9_7f4a_7c15, 1 << 63] {
            assert!(!stuck(v), "{v:#x}");
        }
    }

    #[test]
    fn a_part_stuck_on_any_constant_fails_the_first_use_check() {
        // Not 0 nor all-ones: the per-draw rule alone takes every one.
        let c = 0x1234_5678_9abc_def0;
        assert!(!stuck(c));
        assert!(!samples_sane(&[c; SAMPLES]));
        // Alternating between two values changes every time: that is
        // not "stuck" in Linux's sense and passes, as it does there.
        let two = core::array::from_fn(|i| if i % 2 == 0 { c } else { !c });
        assert!(samples_sane(&two));
        // Three repeats among seven pairs: four changes, refused.
        let mut s: [u64; SAMPLES] = core::array::from_fn(|i| i as u64 + 1);
        s[1] = s[0];
        s[3] = s[2];
        s[5] = s[4];
        assert!(!samples_sane(&s));
        // Two repeats: five changes, enough.
        s[5] = 99;
        assert!(samples_sane(&s));
    }

    #[test]
    fn honest_draws_pass() {
        // splitmix64 over a counter: distinct, well spread.
        let mut z = 0u64;
        let s = core::array::from_fn(|_| {
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            x ^ (x >> 31)
        });
        assert!(samples_sane(&s));
        assert!(s.iter().all(|&v| !stuck(v)));
    }
}

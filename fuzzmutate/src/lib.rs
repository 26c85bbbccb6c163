//! A small seeded mutator for the stable fuzz runs (`fs/tests/fuzz_replay.rs`,
//! `kernel/src/fuzz_cmdline/replay.rs`, and the cargo-fuzz harnesses of the
//! `fuzzharness` crate): libFuzzer-like byte mutations driven by the
//! workspace's seeded generator (`fastrand`), so every machine runs the same
//! inputs. Its own crate, below fs and the kernel, so that neither reads the
//! other's files. Pure code.

/// The generator: [`Rng::new`] seeds stream `k` (any value; 0 is fine).
pub struct Rng(fastrand::Rng);

impl Rng {
    /// A generator for stream `k`.
    pub fn new(k: u64) -> Self {
        Rng(fastrand::Rng::with_seed(k))
    }
    /// A random byte.
    pub fn byte(&mut self) -> u8 {
        self.0.u8(..)
    }
    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.0.usize(..n)
        }
    }
}

const INTERESTING: [u64; 10] = [
    0,
    1,
    0x7f,
    0x80,
    0xff,
    0xffff,
    0x8000_0000,
    0xffff_ffff,
    0x7fff_ffff_ffff_ffff,
    u64::MAX,
];

/// One to four mutations of `d`: bit flips, random bytes, interesting
/// little-endian integers, inserts, deletes, duplicated ranges, splices
/// from `other`, truncation.
pub fn mutate(rng: &mut Rng, d: &mut Vec<u8>, other: &[u8]) {
    for _ in 0..1 + rng.below(4) {
        let len = d.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                d[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                d[i] = rng.byte();
            }
            2 if len > 0 => {
                let v = INTERESTING[rng.below(INTERESTING.len())].to_le_bytes();
                let w = [1, 2, 4, 8][rng.below(4)];
                let i = rng.below(len);
                let k = w.min(len - i);
                d[i..i + k].copy_from_slice(&v[..k]);
            }
            3 => {
                let i = rng.below(len + 1);
                for _ in 0..1 + rng.below(16) {
                    d.insert(i, rng.byte());
                }
            }
            4 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(32));
                d.drain(i..i + n);
            }
            5 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                let chunk = d[i..i + n].to_vec();
                let at = rng.below(len + 1);
                d.splice(at..at, chunk);
            }
            6 if !other.is_empty() => {
                let i = rng.below(other.len());
                let n = 1 + rng.below((other.len() - i).min(128));
                let at = rng.below(len + 1);
                let end = (at + n).min(len);
                d.splice(at..end, other[i..i + n].iter().copied());
            }
            _ if len > 0 => d.truncate(rng.below(len)),
            _ => d.push(rng.byte()),
        }
    }
}

/// Lowercase hex of `b` (reproducers in failure messages).
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

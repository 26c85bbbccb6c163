//! Lists whose entries are chained by an offset to the next one: directory
//! entries and FILE_FULL_EA_INFORMATION lists (NextEntryOffset, MS-FSCC
//! 2.4) and compound replies (NextCommand, MS-SMB2 3.2.5.1.x). One walker,
//! [`walk`], for all of them; each list brings its [`Rule`], the one its
//! specification states.
//!
//! The walk never loops (every step is at least the NextEntryOffset field
//! past it, so at least 4 bytes forward) and never reads past the buffer;
//! an entry ends where the next one begins (the last one at the end of the
//! buffer), so a parser reading one entry cannot read into the next.
//!
//! Stateless; reads only the buffer it is given.

use super::{u32_at, Result, WireError};

/// The chain rule of one kind of list.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// Where an entry's offset to the next (a little-endian u32, 0 for the
    /// last entry) sits in the entry.
    pub next_at: usize,
    /// Every entry but the first begins on a multiple of this many bytes
    /// from the start of the list (8 for directory entries and compound
    /// members, 4 for EAs).
    pub align: usize,
    /// The shortest step: an entry is at least its fixed part long.
    pub min: usize,
    /// Most entries accepted (`usize::MAX`: the buffer bounds them).
    pub max: usize,
    /// The error an offset that breaks the rule gives.
    pub what: &'static str,
}

/// One entry of a chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Where the entry begins in the list.
    pub at: usize,
    /// Its bytes: up to the next entry, or to the end of the list for the
    /// last (and for one whose offset to the next breaks the rule).
    pub bytes: &'a [u8],
}

/// Walks the entries of `buf` by `rule`: each item is an entry or the
/// error that ends the walk. The offset an entry gives to the next is
/// checked when the walk goes on to it, so a caller that stops at an entry
/// (an EA list ends at an empty name, as Linux's `move_smb2_ea_to_cifs`
/// stops there) never meets it; the offset must be a multiple of
/// `rule.align`, at least `rule.min`, and land inside the buffer.
pub fn walk(buf: &[u8], rule: Rule) -> Walk<'_> {
    Walk {
        buf,
        at: 0,
        count: 0,
        rule,
        state: State::More,
    }
}

/// The iterator [`walk`] returns.
#[derive(Clone, Debug)]
pub struct Walk<'a> {
    buf: &'a [u8],
    /// Where the next entry begins (inside `buf` while `state` is `More`).
    at: usize,
    /// Entries given so far.
    count: usize,
    rule: Rule,
    state: State,
}

/// Where a walk stands.
#[derive(Clone, Copy, Debug)]
enum State {
    /// An entry begins at `at`.
    More,
    /// The last entry gave an offset that breaks the rule: this error is
    /// what the walk gives next.
    Broken(WireError),
    /// The walk is over.
    Done,
}

/// Past [`Rule::max`] entries.
const TOO_LONG: WireError = WireError::new("chain too long");

impl<'a> Iterator for Walk<'a> {
    type Item = Result<Entry<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.state {
            State::Done => return None,
            State::Broken(e) => {
                self.state = State::Done;
                return Some(Err(e));
            }
            State::More => {}
        }
        self.state = State::Done;
        let rest = self.buf.get(self.at..)?;
        let next = match u32_at(rest, self.rule.next_at) {
            Ok(n) => n as usize,
            Err(e) => return Some(Err(e)),
        };
        if self.count == self.rule.max {
            return Some(Err(TOO_LONG));
        }
        self.count += 1;
        let at = self.at;
        if next == 0 {
            return Some(Ok(Entry { at, bytes: rest }));
        }
        let min = self.rule.min.max(self.rule.next_at + 4);
        if next < min || !next.is_multiple_of(self.rule.align) || next >= rest.len() {
            self.state = State::Broken(WireError::new(self.rule.what));
            return Some(Ok(Entry { at, bytes: rest }));
        }
        self.at += next;
        self.state = State::More;
        Some(Ok(Entry {
            at,
            bytes: &rest[..next],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    const RULE: Rule = Rule {
        next_at: 0,
        align: 4,
        min: 8,
        max: usize::MAX,
        what: "bad next",
    };

    /// A list of entries of the given lengths, each one's offset to the
    /// next at its start (the last 0).
    fn list(lens: &[usize]) -> Vec<u8> {
        let mut b = Vec::new();
        for (i, &n) in lens.iter().enumerate() {
            let next = if i + 1 < lens.len() { n as u32 } else { 0 };
            b.extend_from_slice(&next.to_le_bytes());
            b.resize(b.len() + n - 4, i as u8);
        }
        b
    }

    fn entries(b: &[u8], rule: Rule) -> Result<Vec<(usize, usize)>> {
        walk(b, rule)
            .map(|e| e.map(|e| (e.at, e.bytes.len())))
            .collect()
    }

    #[test]
    fn entries_end_where_the_next_begins() {
        let b = list(&[12, 8, 9]);
        assert_eq!(
            entries(&b, RULE),
            Ok(alloc::vec![(0, 12), (12, 8), (20, 9)])
        );
        assert_eq!(entries(&list(&[5]), RULE), Ok(alloc::vec![(0, 5)]));
    }

    #[test]
    fn offsets_that_break_the_rule_end_the_walk() {
        let bad = |first: u32| {
            let mut b = list(&[12, 12]);
            b[..4].copy_from_slice(&first.to_le_bytes());
            entries(&b, RULE)
        };
        assert_eq!(bad(12), Ok(alloc::vec![(0, 12), (12, 12)]));
        let err = Err(WireError::new("bad next"));
        for off in [1, 4, 6, 10, 24, 25, 1000, u32::MAX] {
            assert_eq!(bad(off), err, "{off}");
        }
        // Too short to hold the offset: truncated.
        assert_eq!(entries(&[0, 0, 0], RULE), Err(WireError::new("truncated")));
        assert_eq!(entries(&[], RULE), Err(WireError::new("truncated")));
        // At most `max` entries.
        let three = list(&[8, 8, 8]);
        let two = Rule { max: 2, ..RULE };
        assert_eq!(entries(&three, two), Err(TOO_LONG));
        assert_eq!(entries(&list(&[8, 8]), two).unwrap().len(), 2);
    }

    /// The entry whose offset breaks the rule is still given (whole rest),
    /// and the error only when the walk goes on.
    #[test]
    fn a_caller_that_stops_never_meets_the_bad_offset() {
        let mut b = list(&[12, 12]);
        b[..4].copy_from_slice(&3u32.to_le_bytes());
        let mut w = walk(&b, RULE);
        assert_eq!(w.next(), Some(Ok(Entry { at: 0, bytes: &b })));
        assert_eq!(w.next(), Some(Err(WireError::new("bad next"))));
        assert_eq!(w.next(), None);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Any bytes, any rule: the walk ends, within the buffer, with
            /// at most one entry per `min` bytes.
            #[test]
            fn any_bytes_walk_to_an_end(
                bytes in proptest::collection::vec(any::<u8>(), 0..256),
                next_at in 0usize..24,
                align in proptest::sample::select(alloc::vec![1usize, 2, 4, 8]),
                min in 0usize..80,
            ) {
                let rule = Rule { next_at, align, min, max: usize::MAX, what: "bad" };
                let step = min.max(next_at + 4);
                let mut n = 0;
                for e in walk(&bytes, rule) {
                    let Ok(e) = e else { break };
                    prop_assert!(e.at + e.bytes.len() <= bytes.len());
                    n += 1;
                    prop_assert!(n <= bytes.len() / step + 1);
                }
            }
        }
    }
}

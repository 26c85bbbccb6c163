//! The seven characters Windows reserves in names (`" * : < > ? |`, and
//! `\`), carried in private-use code points so a Linux name that holds
//! them can still be stored on the server, as Linux's cifs does:
//! `mapposix` (the SMB3 default) uses the Services-for-Mac points U+F020…
//! and also maps a trailing space or period; `mapchars` uses the
//! Services-for-Unix points (the character + U+F000). Pure functions on
//! one name component; `/` never occurs in one.

use alloc::string::String;

/// Which mapping a mount uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remap {
    /// `mapposix`: Services for Mac (Linux's SMB3 default).
    Sfm,
    /// `mapchars`: Services for Unix.
    Sfu,
    /// Names go as they are (`nomapposix`, `nomapchars`).
    None,
}

fn sfm(c: char) -> Option<char> {
    Some(match c {
        '"' => '\u{f020}',
        '*' => '\u{f021}',
        ':' => '\u{f022}',
        '<' => '\u{f023}',
        '>' => '\u{f024}',
        '?' => '\u{f025}',
        '\\' => '\u{f026}',
        '|' => '\u{f027}',
        _ => return None,
    })
}

fn sfu(c: char) -> Option<char> {
    matches!(c, '*' | '?' | ':' | '<' | '>' | '|' | '\\')
        .then(|| char::from_u32(0xf000 + c as u32).expect("BMP code point"))
}

/// A local name component as it goes on the wire.
pub fn to_wire(name: &str, map: Remap) -> String {
    let n = name.chars().count();
    name.chars()
        .enumerate()
        .map(|(i, c)| match map {
            Remap::Sfm if i + 1 == n && c == ' ' => '\u{f028}',
            Remap::Sfm if i + 1 == n && c == '.' && name != "." && name != ".." => '\u{f029}',
            Remap::Sfm => sfm(c).unwrap_or(c),
            Remap::Sfu => sfu(c).unwrap_or(c),
            Remap::None => c,
        })
        .collect()
}

/// A name component from the wire as the VFS shows it.
pub fn from_wire(name: &str, map: Remap) -> String {
    name.chars()
        .map(|c| {
            let back = match map {
                Remap::Sfm => match c {
                    '\u{f028}' => Some(' '),
                    '\u{f029}' => Some('.'),
                    _ => "\"*:<>?\\|".chars().find(|&r| sfm(r) == Some(c)),
                },
                Remap::Sfu => "*?:<>|\\".chars().find(|&r| sfu(r) == Some(c)),
                Remap::None => None,
            };
            back.unwrap_or(c)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_mappings_round_trip() {
        let name = "a:b*c?\"<>|\\ end. ";
        for m in [Remap::Sfm, Remap::Sfu, Remap::None] {
            assert_eq!(from_wire(&to_wire(name, m), m), name, "{m:?}");
        }
        assert_eq!(to_wire("a:b", Remap::Sfm), "a\u{f022}b");
        assert_eq!(to_wire("a:b", Remap::Sfu), "a\u{f03a}b");
        assert_eq!(to_wire("x.", Remap::Sfm), "x\u{f029}");
        assert_eq!(to_wire("..", Remap::Sfm), "..");
        assert_eq!(to_wire("a:b", Remap::None), "a:b");
        assert_eq!(to_wire("plain.txt", Remap::Sfm), "plain.txt");
    }
}

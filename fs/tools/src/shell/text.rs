//! The shell's words: the escapes of paths and text (`\xHH`, `\n`, `\s`
//! ...) and the answer lines (`ok ...`, `ls`, `stat`) every command prints.
//! Pure functions over strings and bytes; the format is the contract
//! [`super`] describes.

use std::string::{String, ToString};
use std::vec::Vec;

use super::ParseError;
use fs::vfs::FileType;

pub(super) fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// Decode the escapes of a word or text (see the module doc).
pub fn unescape(s: &str) -> Result<Vec<u8>, ParseError> {
    let bad = || ParseError::BadEscape(s.to_string());
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'\\') => out.push(b'\\'),
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b't') => out.push(b'\t'),
            Some(b'x') => {
                let hex = b.get(i + 2..i + 4).ok_or_else(bad)?;
                let hex = core::str::from_utf8(hex).map_err(|_| bad())?;
                out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
                i += 4;
                continue;
            }
            _ => return Err(bad()),
        }
        i += 2;
    }
    Ok(out)
}

/// Decode one path or link-target word: escapes, `""` for empty, no NUL.
pub(super) fn path_word(w: &str) -> Result<Vec<u8>, ParseError> {
    if w == "\"\"" {
        return Ok(Vec::new());
    }
    let p = unescape(w)?;
    if p.contains(&0) {
        return Err(ParseError::Nul);
    }
    Ok(p)
}

fn escape_into(out: &mut String, bytes: &[u8], space_too: bool) {
    use core::fmt::Write;
    let mut rest = bytes;
    while !rest.is_empty() {
        let (valid, bad) = match core::str::from_utf8(rest) {
            Ok(s) => (s, &[][..]),
            Err(e) => {
                let (v, b) = rest.split_at(e.valid_up_to());
                // `valid_up_to` guarantees `v` is valid UTF-8.
                (core::str::from_utf8(v).unwrap_or(""), b)
            }
        };
        for c in valid.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                ' ' if space_too => out.push_str("\\x20"),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c => out.push(c),
            }
        }
        if bad.is_empty() {
            break;
        }
        // One byte that does not start valid UTF-8 here: escape it and go on.
        let _ = write!(out, "\\x{:02x}", bad[0]);
        rest = &bad[1..];
    }
}

/// Escape file contents for a `read` line (spaces stay spaces).
pub fn escape_text(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    escape_into(&mut s, bytes, false);
    s
}

/// Escape a name or link target for an `ls`/`readlink` line (spaces too).
pub fn escape_word(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    escape_into(&mut s, bytes, true);
    s
}

/// `ok` followed by ` PAYLOAD` when the payload is not empty.
pub fn ok_with(payload: &str) -> String {
    if payload.is_empty() {
        "ok".to_string()
    } else {
        let mut s = String::with_capacity(3 + payload.len());
        s.push_str("ok ");
        s.push_str(payload);
        s
    }
}

/// The `ls` result line for these names (any order; they are sorted here).
pub fn ls_line(mut names: Vec<Vec<u8>>) -> String {
    names.sort();
    let words: Vec<String> = names.iter().map(|n| escape_word(n)).collect();
    ok_with(&words.join(" "))
}

/// The `stat`/`lstat` result line.
pub fn stat_line(kind: FileType, size: u64) -> String {
    match kind {
        FileType::Dir => "ok dir".to_string(),
        FileType::Symlink => "ok symlink".to_string(),
        FileType::File => std::format!("ok file size={size}"),
    }
}

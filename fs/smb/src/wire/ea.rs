//! Extended attributes on the wire (MS-FSCC 2.4.15.1, 2.4.15) and the WSL
//! metadata EAs `$LXUID`, `$LXGID`, `$LXMOD`, `$LXDEV`.
//!
//! WSL stores a file's Linux owner, group and mode as EAs whose values are
//! little-endian u32; `$LXDEV` holds the device number as two little-endian
//! u32 (major, minor). A client asks for exactly these names with a
//! FILE_GET_EA_INFORMATION list; the server answers with a
//! FILE_FULL_EA_INFORMATION list (Samba returns all EAs of the file and
//! ignores the list), or STATUS_NO_EAS_ON_FILE.

use super::chain::{self, Rule};
use super::{pad_to, put_fixed, set_u32, slice, u16_at, u32_at, u8_at, Result, WireError};
use alloc::string::String;
use alloc::vec::Vec;

/// Field offsets, each relative to the start of its entry, named as
/// MS-FSCC names them.
mod field {
    /// FILE_GET_EA_INFORMATION (MS-FSCC 2.4.15.1).
    pub mod get_ea {
        pub const NEXT_ENTRY_OFFSET: usize = 0;
        pub const EA_NAME_LENGTH: usize = 4;
        /// EaName, NUL-terminated, right after the fixed part.
        pub const EA_NAME: usize = 5;
        /// Length of the fixed part.
        pub const LEN: usize = EA_NAME;
    }

    /// FILE_FULL_EA_INFORMATION (MS-FSCC 2.4.15).
    pub mod full_ea {
        pub const NEXT_ENTRY_OFFSET: usize = 0;
        pub const FLAGS: usize = 4;
        pub const EA_NAME_LENGTH: usize = 5;
        pub const EA_VALUE_LENGTH: usize = 6;
        /// EaName, NUL-terminated, then EaValue.
        pub const EA_NAME: usize = 8;
        /// Length of the fixed part.
        pub const LEN: usize = EA_NAME;
    }

    /// The value of `$LXDEV`: two little-endian u32.
    pub mod lxdev {
        pub const MAJOR: usize = 0;
        pub const MINOR: usize = 4;
        /// Length of the value.
        pub const LEN: usize = 8;
    }
}

/// EaName ends with a NUL that EaNameLength does not count.
const NAME_NUL: usize = 1;
/// Entries of FILE_GET_EA_INFORMATION and FILE_FULL_EA_INFORMATION lists
/// start 4-aligned (MS-FSCC 2.4.15, 2.4.15.1: "each MUST be aligned on a
/// 4-byte boundary"; Samba, ksmbd and Windows pad so).
const EA_ALIGN: usize = 4;

/// The chain of a FILE_FULL_EA_INFORMATION list.
const FULL_EA_CHAIN: Rule = Rule {
    next_at: field::full_ea::NEXT_ENTRY_OFFSET,
    align: EA_ALIGN,
    min: field::full_ea::LEN,
    max: usize::MAX,
    what: "bad ea NextEntryOffset",
};
/// Length of the `$LXUID`, `$LXGID` and `$LXMOD` values (one u32).
const WSL_U32_LEN: usize = 4;

/// The four WSL EA names, in the order the client asks for them.
pub const WSL_EA_NAMES: [&str; 4] = ["$LXUID", "$LXGID", "$LXMOD", "$LXDEV"];

/// Info class FileFullEaInformation.
pub const FILE_FULL_EA_INFORMATION: u8 = 15;

/// A FILE_GET_EA_INFORMATION list naming `names` (each entry 4-aligned).
pub fn emit_get_ea_list(names: &[&str]) -> Vec<u8> {
    use field::get_ea as f;
    let mut out = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let start = out.len();
        let b = put_fixed(&mut out, f::LEN);
        set_u32(b, f::NEXT_ENTRY_OFFSET, 0); // last, unless patched below
        b[f::EA_NAME_LENGTH] = n.len() as u8;
        out.extend_from_slice(n.as_bytes());
        out.push(0); // the NUL after EaName
        if i + 1 < names.len() {
            pad_to(&mut out, EA_ALIGN);
            let next = (out.len() - start) as u32;
            set_u32(&mut out[start..], f::NEXT_ENTRY_OFFSET, next);
        }
    }
    out
}

/// One full EA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FullEa {
    pub flags: u8,
    pub name: String,
    pub value: Vec<u8>,
}

/// Longest EA name a Linux user can be shown: `user.NAME` within
/// XATTR_NAME_MAX (255 bytes).
pub const MAX_EA_NAME: usize = 255 - "user.".len();

/// A FILE_FULL_EA_INFORMATION list with the names a Linux user cannot be
/// given left out and counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EaList {
    pub eas: Vec<FullEa>,
    /// Entries refused for their name: an empty name (the list ends there,
    /// as Linux's `move_smb2_ea_to_cifs` stops at `name_len == 0`; the
    /// entries after it are not looked at), a NUL inside it, or one whose
    /// `user.NAME` would pass XATTR_NAME_MAX.
    pub bad_names: u32,
}

/// Parses a FILE_FULL_EA_INFORMATION list (see [`parse_full_ea_list_counted`]
/// for the names it leaves out).
pub fn parse_full_ea_list(buf: &[u8]) -> Result<Vec<FullEa>> {
    parse_full_ea_list_counted(buf).map(|l| l.eas)
}

/// Parses a FILE_FULL_EA_INFORMATION list: entries chained by their
/// NextEntryOffset (4-aligned, at least the fixed part: [`chain`]), each
/// inside its own bytes (or the whole list is an error); names are checked
/// as [`EaList`] says.
pub fn parse_full_ea_list_counted(buf: &[u8]) -> Result<EaList> {
    let mut out = EaList::default();
    if buf.is_empty() {
        return Ok(out);
    }
    use field::full_ea as f;
    for entry in chain::walk(buf, FULL_EA_CHAIN) {
        let rec = entry?.bytes;
        let flags = u8_at(rec, f::FLAGS)?;
        let name_len = u8_at(rec, f::EA_NAME_LENGTH)? as usize;
        let value_len = u16_at(rec, f::EA_VALUE_LENGTH)? as usize;
        if name_len == 0 {
            out.bad_names += 1;
            return Ok(out);
        }
        let name = slice(rec, f::EA_NAME, name_len)?;
        let value = slice(rec, f::EA_NAME + name_len + NAME_NUL, value_len)?;
        if name.contains(&0) || name_len > MAX_EA_NAME {
            out.bad_names += 1;
        } else {
            let name =
                core::str::from_utf8(name).map_err(|_| WireError::new("ea name not UTF-8"))?;
            out.eas.push(FullEa {
                flags,
                name: String::from(name),
                value: value.to_vec(),
            });
        }
    }
    Ok(out)
}

/// A FILE_FULL_EA_INFORMATION list of one entry, for SET_INFO: `name`
/// set to `value` (an empty value removes the EA, MS-FSCC 2.4.15). `None`
/// if the name is longer than 255 bytes or the value than 65535.
pub fn emit_full_ea(name: &[u8], value: &[u8]) -> Option<Vec<u8>> {
    use field::full_ea as f;
    let name_len = u8::try_from(name.len()).ok()?;
    let value_len = u16::try_from(value.len()).ok()?;
    let mut out = Vec::new();
    let b = put_fixed(&mut out, f::LEN);
    set_u32(b, f::NEXT_ENTRY_OFFSET, 0);
    b[f::FLAGS] = 0;
    b[f::EA_NAME_LENGTH] = name_len;
    b[f::EA_VALUE_LENGTH..f::EA_VALUE_LENGTH + 2].copy_from_slice(&value_len.to_le_bytes());
    out.extend_from_slice(name);
    out.push(0); // the NUL after EaName
    out.extend_from_slice(value);
    Some(out)
}

/// The decoded WSL metadata of one file; a field is `None` if its EA is
/// absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct WslEas {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub mode: Option<u32>,
    /// (major, minor).
    pub dev: Option<(u32, u32)>,
}

impl WslEas {
    /// True if none of the four EAs was present.
    pub fn is_empty(&self) -> bool {
        self.uid.is_none() && self.gid.is_none() && self.mode.is_none() && self.dev.is_none()
    }

    /// Picks the WSL EAs out of a full EA list (names compared without
    /// regard to case). A WSL EA whose value has the wrong length is an
    /// error; other EAs are ignored.
    pub fn from_eas(eas: &[FullEa]) -> Result<Self> {
        let mut w = WslEas::default();
        for ea in eas {
            let u32v = |v: &[u8]| -> Result<u32> {
                if v.len() != WSL_U32_LEN {
                    return Err(WireError::new("WSL EA value length"));
                }
                u32_at(v, 0)
            };
            let n = ea.name.as_str();
            if n.eq_ignore_ascii_case("$LXUID") {
                w.uid = Some(u32v(&ea.value)?);
            } else if n.eq_ignore_ascii_case("$LXGID") {
                w.gid = Some(u32v(&ea.value)?);
            } else if n.eq_ignore_ascii_case("$LXMOD") {
                w.mode = Some(u32v(&ea.value)?);
            } else if n.eq_ignore_ascii_case("$LXDEV") {
                use field::lxdev;
                if ea.value.len() != lxdev::LEN {
                    return Err(WireError::new("WSL $LXDEV length"));
                }
                w.dev = Some((
                    u32_at(&ea.value, lxdev::MAJOR)?,
                    u32_at(&ea.value, lxdev::MINOR)?,
                ));
            }
        }
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry of a FILE_FULL_EA_INFORMATION list, `next` its
    /// NextEntryOffset (0: last).
    fn full(name: &[u8], value: &[u8], next: bool) -> Vec<u8> {
        let mut e = Vec::new();
        e.extend_from_slice(&[0; 4]);
        e.push(0);
        e.push(name.len() as u8);
        e.extend_from_slice(&(value.len() as u16).to_le_bytes());
        e.extend_from_slice(name);
        e.push(0);
        e.extend_from_slice(value);
        pad_to(&mut e, 4);
        if next {
            let n = e.len() as u32;
            e[..4].copy_from_slice(&n.to_le_bytes());
        }
        e
    }

    /// Names a Linux user cannot be given are left out and counted: a NUL
    /// inside, `user.NAME` past 255 bytes; an empty name ends the list
    /// (Linux stops there).
    #[test]
    fn bad_ea_names_are_left_out_and_counted() {
        let long = [b'n'; MAX_EA_NAME + 1];
        let fits = [b'n'; MAX_EA_NAME];
        let mut l = Vec::new();
        l.extend(full(b"a", b"1", true));
        l.extend(full(b"x\0y", b"2", true));
        l.extend(full(&long, b"3", true));
        l.extend(full(&fits, b"4", true));
        l.extend(full(b"", b"5", true));
        l.extend(full(b"after", b"6", false));
        let r = parse_full_ea_list_counted(&l).unwrap();
        let names: Vec<&str> = r.eas.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a", core::str::from_utf8(&fits).unwrap()]);
        assert_eq!(r.bad_names, 3);
        assert_eq!(parse_full_ea_list(&l).unwrap().len(), 2);
    }

    /// The chain rule of a FILE_FULL_EA_INFORMATION list (MS-FSCC
    /// 2.4.15): the next entry begins 4-aligned, after the fixed part and
    /// inside the list, and an entry's name and value stay inside it.
    #[test]
    fn full_ea_entries_are_4_aligned_and_stay_inside() {
        let mut l = full(b"ab", b"1", true);
        l.extend(full(b"c", b"2", false));
        assert_eq!(parse_full_ea_list(&l).unwrap().len(), 2);
        // 8 + "abc\0" + "1" = 13 bytes, NextEntryOffset 13: unaligned.
        let mut u = alloc::vec![13, 0, 0, 0, 0, 3, 1, 0];
        u.extend_from_slice(b"abc\0"); // EaName, NUL
        u.push(b'1'); // EaValue
        u.extend(full(b"d", b"2", false));
        assert_eq!(
            parse_full_ea_list(&u).unwrap_err().what,
            "bad ea NextEntryOffset"
        );
        // Padded to 16, it is a list.
        u[0] = 16;
        u.splice(13..13, [0, 0, 0]);
        assert_eq!(parse_full_ea_list(&u).unwrap().len(), 2);
        // A value that runs into the next entry (EaValueLength 5 in a
        // 12-byte entry) is refused.
        let mut over = l.clone();
        over[6] = 5;
        assert!(parse_full_ea_list(&over).is_err());
        // An offset inside the fixed part or past the end is refused.
        for next in [4u8, 40] {
            let mut bad = l.clone();
            bad[0] = next;
            assert!(parse_full_ea_list(&bad).is_err(), "{next}");
        }
    }

    #[test]
    fn get_list_layout() {
        let l = emit_get_ea_list(&WSL_EA_NAMES);
        // 4 + 1 + 6 + 1 = 12 per entry, already 4-aligned; last unpadded.
        assert_eq!(l.len(), 48);
        assert_eq!(u32_at(&l, 0).unwrap(), 12);
        assert_eq!(&l[5..11], b"$LXUID");
        assert_eq!(u32_at(&l, 36).unwrap(), 0);
    }

    /// FILE_GET_EA_INFORMATION and FILE_FULL_EA_INFORMATION lists
    /// (MS-FSCC), written out by hand.
    #[test]
    fn ea_list_bytes() {
        #[rustfmt::skip]
        let want: [u8; 17] = [
            12, 0, 0, 0,             // NextEntryOffset
            5,                       // EaNameLength
            b'a', b'b', b'c', b'd', b'e', 0, // EaName, NUL
            0,                       // padding to 4
            0, 0, 0, 0,              // NextEntryOffset: last
            1,                       // EaNameLength
        ];
        let got = emit_get_ea_list(&["abcde", "x"]);
        assert_eq!(&got[..17], &want[..]);
        assert_eq!(&got[17..], b"x\0");

        #[rustfmt::skip]
        let full: [u8; 29] = [
            16, 0, 0, 0,             // NextEntryOffset
            0x80,                    // Flags: FILE_NEED_EA
            2,                       // EaNameLength
            3, 0,                    // EaValueLength
            b'n', b'1', 0,           // EaName, NUL
            7, 8, 9,                 // EaValue
            0, 0,                    // padding
            0, 0, 0, 0,              // NextEntryOffset: last
            0,                       // Flags
            1,                       // EaNameLength
            4, 0,                    // EaValueLength
            b'm', 0,                 // EaName, NUL
            1, 0, 0,                 // EaValue (one byte short)
        ];
        assert!(parse_full_ea_list(&full).is_err());
        let mut full = full.to_vec();
        full.push(0);
        let eas = parse_full_ea_list(&full).unwrap();
        assert_eq!(
            eas,
            alloc::vec![
                FullEa {
                    flags: 0x80,
                    name: "n1".into(),
                    value: alloc::vec![7, 8, 9],
                },
                FullEa {
                    flags: 0,
                    name: "m".into(),
                    value: alloc::vec![1, 0, 0, 0],
                },
            ]
        );
    }

    #[test]
    fn decode_wsl() {
        let mk = |n: &str, v: &[u8]| FullEa {
            flags: 0,
            name: n.into(),
            value: v.to_vec(),
        };
        let eas = [
            mk("$LXUID", &1000u32.to_le_bytes()),
            mk("$lxgid", &100u32.to_le_bytes()),
            mk("$LXMOD", &0o100644u32.to_le_bytes()),
            mk("$LXDEV", &[8, 0, 0, 0, 1, 0, 0, 0]),
            mk("user.other", b"x"),
        ];
        let w = WslEas::from_eas(&eas).unwrap();
        assert_eq!(w.uid, Some(1000));
        assert_eq!(w.gid, Some(100));
        assert_eq!(w.mode, Some(0o100644));
        assert_eq!(w.dev, Some((8, 1)));
        assert!(WslEas::from_eas(&[mk("$LXUID", b"abc")]).is_err());
    }

    #[test]
    fn full_ea_emit_parses_back() {
        let b = emit_full_ea(b"x", b"12").unwrap();
        let eas = parse_full_ea_list(&b).unwrap();
        assert_eq!(
            eas,
            vec![FullEa {
                flags: 0,
                name: "x".into(),
                value: b"12".to_vec()
            }]
        );
        assert!(emit_full_ea(&[b'n'; 256], b"").is_none());
        assert!(emit_full_ea(b"n", &[0; 65536]).is_none());
    }
}

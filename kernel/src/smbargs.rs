//! The SMB words of the kernel command line, parsed without allocation so
//! [`crate::cmdline::Config`] stays `Copy`:
//!
//! - `smb=//A.B.C.D/SHARE` — mount that share at boot and list it
//!   ([`SmbSource`]). The server is an IPv4 address (the guest has no
//!   resolver); under QEMU it is the `guestfwd` address, 10.0.2.100.
//! - `smbopts=OPTS` — the cifs mount options, as `mount -t cifs -o`
//!   takes them (`username=root,password=PW,eacache=easize`); checked by the
//!   fs crate at mount time, here only for length and characters.
//! - `smbread=PATH` — after the listing, read the share-relative file PATH
//!   through the mount and print its size and SHA-256 ([`parse_read_path`]).
//!
//! Pure code, unit-tested on the host (`cargo test -p kernel --lib`).

use core::fmt;

/// A short string held inline (`N` bytes at most).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Text<const N: usize> {
    len: usize,
    buf: [u8; N],
}

impl<const N: usize> Text<N> {
    /// Copy `s` if it fits.
    pub fn new(s: &str) -> Option<Self> {
        if s.len() > N {
            return None;
        }
        let mut buf = [0u8; N];
        buf[..s.len()].copy_from_slice(s.as_bytes());
        Some(Text { len: s.len(), buf })
    }

    /// The string.
    pub fn as_str(&self) -> &str {
        // Built from a &str, so always UTF-8; an empty string otherwise.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> fmt::Debug for Text<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<const N: usize> fmt::Display for Text<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Longest share name accepted.
pub const SHARE_MAX: usize = 80;
/// Longest `smbopts=` value accepted: a pasted Linux mount line with
/// credentials fits (the seed's options plus credentials are 261).
pub const OPTS_MAX: usize = 1024;

/// Longest `smbread=` path accepted.
pub const READ_PATH_MAX: usize = 200;
/// What `smbread=` accepts, for the error message.
pub const READ_PATH_EXPECTED: &str =
    "a share-relative file path (a/b/c), at most 200 printable characters, no `..`";

/// Check and keep a `smbread=` path (share-relative; a leading `/` is
/// allowed and ignored by the mount's path walk).
pub fn parse_read_path(v: &str) -> Result<Text<READ_PATH_MAX>, &'static str> {
    let ok = |b: u8| b.is_ascii_graphic() && !b"\\\"*:<>?|".contains(&b);
    if v.is_empty() || !v.bytes().all(ok) || v.split('/').any(|c| c == "..") {
        return Err(READ_PATH_EXPECTED);
    }
    Text::new(v).ok_or(READ_PATH_EXPECTED)
}

/// `smb=//A.B.C.D/SHARE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmbSource {
    /// Server IPv4 address.
    pub addr: [u8; 4],
    /// Share name.
    pub share: Text<SHARE_MAX>,
}

impl SmbSource {
    /// The UNC as the cifs mount takes it: `//A.B.C.D/SHARE`.
    pub fn unc_parts(&self) -> ([u8; 4], &str) {
        (self.addr, self.share.as_str())
    }
}

impl fmt::Display for SmbSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.addr;
        write!(f, "//{a}.{b}.{c}.{d}/{}", self.share)
    }
}

/// What `smb=` accepts, for the error message.
pub const SOURCE_EXPECTED: &str = "//A.B.C.D/SHARE (an IPv4 address and a share name)";
/// What `smbopts=` accepts, for the error message.
pub const OPTS_EXPECTED: &str =
    "comma-separated cifs mount options, at most 1024 printable characters";

fn ipv4(s: &str) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = s.split('.');
    for o in out.iter_mut() {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// Parse `//A.B.C.D/SHARE`.
pub fn parse_source(v: &str) -> Result<SmbSource, &'static str> {
    let rest = v.strip_prefix("//").ok_or(SOURCE_EXPECTED)?;
    let (host, share) = rest.split_once('/').ok_or(SOURCE_EXPECTED)?;
    let addr = ipv4(host).ok_or(SOURCE_EXPECTED)?;
    let ok = |b: u8| b.is_ascii_graphic() && !b"/\\\"*:<>?|".contains(&b);
    if share.is_empty() || !share.bytes().all(ok) {
        return Err(SOURCE_EXPECTED);
    }
    let share = Text::new(share).ok_or(SOURCE_EXPECTED)?;
    Ok(SmbSource { addr, share })
}

/// Check and keep a `smbopts=` value.
pub fn parse_opts(v: &str) -> Result<Text<OPTS_MAX>, &'static str> {
    if !v.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(OPTS_EXPECTED);
    }
    Text::new(v).ok_or(OPTS_EXPECTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_paths() {
        assert_eq!(
            parse_read_path("dir/file.bin").unwrap().as_str(),
            "dir/file.bin"
        );
        for v in ["", "a/../b", "..", "a b", "a\\b", "a*"] {
            assert!(parse_read_path(v).is_err(), "{v:?}");
        }
        assert!(parse_read_path(&"x".repeat(READ_PATH_MAX + 1)).is_err());
    }

    #[test]
    fn source_parses() {
        let s = parse_source("//10.0.2.100/share").unwrap();
        assert_eq!(s.addr, [10, 0, 2, 100]);
        assert_eq!(s.share.as_str(), "share");
        assert_eq!(std::format!("{s}"), "//10.0.2.100/share");
    }

    #[test]
    fn bad_sources_rejected() {
        for v in [
            "10.0.2.100/share",
            "//10.0.2.100",
            "//10.0.2.100/",
            "//10.0.2/share",
            "//10.0.2.256/share",
            "//10.0.2.1.5/share",
            "//host/share",
            "//10.0.2.100/a/b",
            "//+1.0.2.100/s",
        ] {
            assert_eq!(parse_source(v), Err(SOURCE_EXPECTED), "{v}");
        }
        let long = std::format!("//1.2.3.4/{}", "x".repeat(SHARE_MAX + 1));
        assert!(parse_source(&long).is_err());
    }

    #[test]
    fn opts_kept_verbatim_and_bounded() {
        let o = parse_opts("username=root,password=pw,eacache=always").unwrap();
        assert_eq!(o.as_str(), "username=root,password=pw,eacache=always");
        assert!(parse_opts(&"a".repeat(OPTS_MAX + 1)).is_err());
        // A pasted Linux mount line with credentials (issue 14: 261 chars).
        assert!(parse_opts(&"a".repeat(1024)).is_ok());
        assert!(parse_opts("a\u{7f}b").is_err());
    }
}

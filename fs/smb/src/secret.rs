//! Secrets held in memory. [`Secret`] is a string (a password) whose
//! `Debug` never shows it and whose bytes are zeroed when it is dropped or
//! cleared, with RustCrypto's `zeroize` (volatile writes the compiler may
//! not optimise away). [`Redacted`] is what every `Debug` of a key prints
//! instead of the key. Touches nothing but the values it wraps.
//!
//! What it cannot reach: copies made before a value became a `Secret`
//! (the mount option string a caller passes in, a `String` that grew and
//! moved while it was parsed) and copies inside the hash and cipher
//! crates' stack frames.

use alloc::string::String;
use core::fmt;
use core::ops::Deref;
use zeroize::Zeroize;

/// What `Debug` prints in place of a secret.
pub struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A secret string: redacted in `Debug`, zeroed on drop and on
/// [`Secret::clear`]. It reads as a `&str` (`Deref`) but cannot be grown
/// in place, since a `String` that reallocates leaves its old bytes
/// behind; assign a new one instead.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `s` (moved, not copied).
    pub fn new(s: String) -> Self {
        Secret(s)
    }

    /// The secret as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Zeroes the bytes and empties the string.
    pub fn clear(&mut self) {
        self.0.zeroize();
        self.0.clear();
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl fmt::Debug for Secret {
    /// `<redacted>`, or `""` when empty (that no password was given is no
    /// secret, and tells a reader of a log what happened).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("\"\"")
        } else {
            Redacted.fmt(f)
        }
    }
}

impl Deref for Secret {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Secret(s.into())
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Secret(s)
    }
}

impl PartialEq<str> for Secret {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Secret {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn debug_redacts_and_clear_zeroes() {
        let mut s = Secret::from("hunter2");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(format!("{s:#?}"), "<redacted>");
        assert_eq!(&*s, "hunter2");
        assert!(s == "hunter2");
        s.clear();
        assert_eq!(s.as_str(), "");
        assert_eq!(format!("{s:?}"), "\"\"");
    }
}

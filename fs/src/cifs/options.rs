//! The cifs mount-option parser: the `a=b,c,...` string of `mount -t cifs`
//! turned into [`CifsOpts`], with Linux's option names. It touches nothing
//! but the string it is given.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use super::wslea::{self, WSLEA_DESIGNS};

/// Parsed mount options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CifsOpts {
    pub vers: Vec<u16>,
    pub username: String,
    pub password: String,
    pub domain: String,
    pub uid: u32,
    pub forceuid: bool,
    pub gid: u32,
    pub forcegid: bool,
    pub file_mode: u32,
    pub dir_mode: u32,
    /// file_mode / dir_mode given explicitly.
    pub file_mode_set: bool,
    pub dir_mode_set: bool,
    pub acregmax_ms: u64,
    pub acdirmax_ms: u64,
    pub soft: bool,
    pub noserverino: bool,
    /// Index into [`WSLEA_DESIGNS`].
    pub wslea: usize,
    /// K of the negcache design.
    pub wslea_k: u32,
    /// Signing on every request (`sign`), else only where required.
    pub sign: bool,
    /// Largest READ asked for, in bytes (`rsize=`; Linux's default 4 MiB,
    /// a multiple of 4096; the server's MaxReadSize caps it further).
    pub rsize: u32,
    /// Largest WRITE sent, in bytes (`wsize=`; same rules as `rsize`).
    pub wsize: u32,
}

/// A mount option the parser refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptError(pub String);

impl fmt::Display for OptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The option names, for help texts.
pub const OPTION_NAMES: &str = "vers= username= password= domain= uid= forceuid gid= forcegid \
file_mode= dir_mode= acregmax= acdirmax= actimeo= soft hard noserverino sign rsize= wsize= wslea=probe|negcache|easize|off wslea_k=";

impl Default for CifsOpts {
    fn default() -> Self {
        CifsOpts {
            vers: parse_vers("default").expect("default is a vers"),
            username: String::new(),
            password: String::new(),
            domain: String::new(),
            uid: 0,
            forceuid: false,
            gid: 0,
            forcegid: false,
            file_mode: 0o755,
            dir_mode: 0o755,
            file_mode_set: false,
            dir_mode_set: false,
            acregmax_ms: 1000,
            acdirmax_ms: 30_000,
            soft: true,
            noserverino: false,
            wslea: wslea::by_name("easize").expect("easize exists"),
            wslea_k: 8,
            sign: false,
            rsize: DEFAULT_IOSIZE,
            wsize: DEFAULT_IOSIZE,
        }
    }
}

/// `vers=` with Linux's meanings: one dialect, or `3` (3.0 and up) or
/// `default` (2.1 and up). `1.0` (SMB1) is not spoken here.
pub fn parse_vers(v: &str) -> Result<Vec<u16>, OptError> {
    use crate::smb::wire::negotiate::dialect::*;
    Ok(match v {
        "2.0" => alloc::vec![SMB2_0_2],
        "2.1" => alloc::vec![SMB2_1],
        "3.0" => alloc::vec![SMB3_0],
        "3.0.2" | "3.02" => alloc::vec![SMB3_0_2],
        "3.1.1" | "3.11" => alloc::vec![SMB3_1_1],
        "3" => alloc::vec![SMB3_1_1, SMB3_0_2, SMB3_0],
        "default" => alloc::vec![SMB3_1_1, SMB3_0_2, SMB3_0, SMB2_1],
        "1.0" => {
            return Err(OptError(
                "cifs: vers=1.0 (SMB1) is not supported by this client".into(),
            ))
        }
        x => {
            return Err(OptError(format!(
            "cifs: Unknown vers= option specified: {x} (2.0, 2.1, 3, 3.0, 3.0.2, 3.1.1, default)"
        )))
        }
    })
}

/// Linux's default rsize/wsize (`SMB3_DEFAULT_IOSIZE`).
pub const DEFAULT_IOSIZE: u32 = 4 * 1024 * 1024;

/// An rsize/wsize value: rounded down to a multiple of 4096 (Linux rounds
/// to the page size), at least 4096, at most 8 MiB (Linux's SMB3 maximum).
fn iosize(k: &str, v: &str) -> Result<u32, OptError> {
    let n = num(k, v, 10)?;
    if n < 4096 {
        return Err(OptError(format!("cifs: {k}={v} too small (at least 4096)")));
    }
    Ok((n.min(8 * 1024 * 1024) as u32) & !4095)
}

fn num(k: &str, v: &str, radix: u32) -> Result<u64, OptError> {
    u64::from_str_radix(v, radix).map_err(|_| OptError(format!("cifs: bad value for {k}: {v:?}")))
}

impl CifsOpts {
    /// Parse `a=b,c,...` (Linux names; times in seconds, modes in octal).
    pub fn parse(s: &str) -> Result<CifsOpts, OptError> {
        let mut o = CifsOpts::default();
        for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let (k, v) = match w.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (w, None),
            };
            let need = || v.ok_or_else(|| OptError(format!("cifs: {k} needs a value")));
            match k {
                "vers" => o.vers = parse_vers(need()?)?,
                "username" | "user" => o.username = need()?.to_string(),
                "password" | "pass" => o.password = need()?.to_string(),
                "domain" => o.domain = need()?.to_string(),
                "uid" => o.uid = num(k, need()?, 10)? as u32,
                "gid" => o.gid = num(k, need()?, 10)? as u32,
                "forceuid" => o.forceuid = true,
                "forcegid" => o.forcegid = true,
                "file_mode" => {
                    o.file_mode = num(k, need()?, 8)? as u32 & 0o7777;
                    o.file_mode_set = true;
                }
                "dir_mode" => {
                    o.dir_mode = num(k, need()?, 8)? as u32 & 0o7777;
                    o.dir_mode_set = true;
                }
                "acregmax" => o.acregmax_ms = num(k, need()?, 10)? * 1000,
                "acdirmax" => o.acdirmax_ms = num(k, need()?, 10)? * 1000,
                "actimeo" => {
                    o.acregmax_ms = num(k, need()?, 10)? * 1000;
                    o.acdirmax_ms = o.acregmax_ms;
                }
                "soft" => o.soft = true,
                "hard" => o.soft = false,
                "noserverino" => o.noserverino = true,
                "sign" => o.sign = true,
                "rsize" => o.rsize = iosize(k, need()?)?,
                "wsize" => o.wsize = iosize(k, need()?)?,
                "wslea" => {
                    let v = need()?;
                    o.wslea = wslea::by_name(v).ok_or_else(|| {
                        OptError(format!(
                            "cifs: unknown wslea={v} (probe|negcache|easize|off)"
                        ))
                    })?;
                }
                "wslea_k" => o.wslea_k = num(k, need()?, 10)?.clamp(1, 1 << 20) as u32,
                _ => {
                    return Err(OptError(format!(
                        "cifs: unknown mount option {k:?}; valid: {OPTION_NAMES}"
                    )))
                }
            }
        }
        Ok(o)
    }

    /// Would every answer of a WSL-EA probe be thrown away?
    pub fn all_forced(&self) -> bool {
        self.forceuid && self.forcegid && self.file_mode_set && self.dir_mode_set
    }

    /// The design in force (`off` when everything is forced).
    pub fn effective_wslea(&self) -> &'static dyn wslea::WslEaDesign {
        if self.all_forced() {
            &wslea::Off
        } else {
            WSLEA_DESIGNS[self.wslea]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsize_wsize_round_to_pages_and_refuse_tiny() {
        let o = CifsOpts::parse("rsize=65536,wsize=100000").unwrap();
        assert_eq!((o.rsize, o.wsize), (65536, 98304));
        assert_eq!(CifsOpts::default().rsize, 4 << 20);
        assert_eq!(CifsOpts::parse("rsize=99999999").unwrap().rsize, 8 << 20);
        assert!(CifsOpts::parse("wsize=100").is_err());
    }
}

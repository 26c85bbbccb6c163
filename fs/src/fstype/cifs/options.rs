//! The cifs mount-option parser: the `a=b,c,...` string of `mount -t cifs`
//! turned into [`CifsOpts`], with Linux's option names and rules (Linux
//! 6.12 `fs/smb/client/fs_context.c`, plus the newer ones a 6.12+ mount line
//! shows: `upcall_target=`, `reparse=`, `nativesocket`, `symlink=`).
//!
//! Every option Linux accepts is accepted ([`OPTIONS`]); those that change
//! what this client does are implemented, the others are "accepted, no
//! effect here" with the reason in the table (docs/mount-options.md lists
//! them; scripts/mount-options-check.sh holds the list to the table).
//! Unknown options are refused like Linux refuses them, all named in one
//! message; `sloppy` accepts them. `user=name%pass` splits off the
//! password, `pass=p,,w` is Linux's escaped comma, `credentials=FILE`
//! reads `username=`/`password=`/`domain=` lines from a host file.
//!
//! It touches nothing but the string it is given (and, on the host, the
//! credentials file it names).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use super::eacache::{self, EACACHE_DESIGNS};

/// Parsed mount options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CifsOpts {
    pub vers: Vec<u16>,
    pub username: String,
    /// Redacted in `Debug`, zeroed on drop ([`smb::Secret`]).
    pub password: smb::Secret,
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
    /// Index into [`EACACHE_DESIGNS`] (`eacache=`, or its old name
    /// `wslea=`).
    pub eacache: usize,
    /// K of the negcache design (`eacache_k=`, old name `wslea_k=`).
    pub eacache_k: u32,
    /// Most entries whose EA queries one round trip carries where the
    /// design remembers answers (`eacache_batch=`; 1: each alone). See
    /// [`super::eacache`], "Batched sibling queries".
    pub eacache_batch: u32,
    /// `user_xattr` (Linux's default); `nouser_xattr` answers every
    /// `user.` attribute call with EOPNOTSUPP and sends nothing.
    pub user_xattr: bool,
    /// Signing on every request (`sign`), else only where required.
    pub sign: bool,
    /// Largest READ asked for, in bytes (`rsize=`; Linux's default 4 MiB,
    /// a multiple of 4096; the server's MaxReadSize caps it further).
    pub rsize: u32,
    /// Largest WRITE sent, in bytes (`wsize=`; same rules as `rsize`).
    pub wsize: u32,
    /// Encrypt every request (`seal`).
    pub seal: bool,
    /// `weakrandom`: allow `sign` and `seal`, and a server that requires
    /// signing or encryption, although the machine's random source is not
    /// cryptographic (their keys and nonces rest on it); refused without
    /// it.
    pub weakrandom: bool,
    /// `cache=`: the attribute-cache policy.
    pub cache: CachePolicy,
    /// `unix`/`posix`/`linux`: ask for the SMB 3.1.1 POSIX extensions
    /// (refused at mount: this client does not speak them); `nounix`
    /// (the behaviour here) clears it.
    pub unix: bool,
    /// `mapposix` (Linux's default for SMB3) / `mapchars` / neither
    /// (`nomapposix`, `nomapchars`).
    pub remap: Remap,
    /// `sec=none`: a null session (no user, no password).
    pub null_session: bool,
    /// Unknown options accepted because of `sloppy` (for the log).
    pub ignored: Vec<String>,
    /// Notes for the log about options given by an old name (`wslea=`).
    pub notes: Vec<String>,
}

/// `cache=` as an attribute-cache policy (this client caches no file data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CachePolicy {
    /// `cache=strict` (Linux's default): attributes and negative dentries
    /// are believed for acregmax/acdirmax.
    Strict,
    /// `cache=loose`: the same windows (Linux's loose differs only in data
    /// caching, which this client does not do).
    Loose,
    /// `cache=none`: nothing is believed; every lookup and stat asks the
    /// server (the windows become 0).
    None,
}

pub use smb::remap::Remap;

/// A mount option the parser refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptError(pub String);

impl fmt::Display for OptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The implemented option names, for help texts.
pub const OPTION_NAMES: &str = "vers= username=|user= password=|pass= domain=|dom= credentials= \
uid= forceuid gid= forcegid file_mode= dir_mode= acregmax= acdirmax= actimeo= noac soft hard \
serverino noserverino sign seal weakrandom sec= cache=strict|loose|none unix nounix mapposix mapchars \
iocharset=utf8 rsize= wsize= sloppy user_xattr nouser_xattr eacache=DESIGN eacache_k= eacache_batch= \
(wslea=, wslea_k=: their old names)";

/// The value an option takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No value (`soft`).
    Flag,
    /// No value, and a `no` form (`forceuid`, `noforceuid`).
    FlagNo,
    /// An unsigned number.
    Num,
    /// A string.
    Str,
}

/// One option Linux accepts, and what it does here.
#[derive(Clone, Copy, Debug)]
pub struct OptSpec {
    pub name: &'static str,
    pub kind: Kind,
    /// `None`: implemented. `Some(reason)`: accepted, no effect here.
    pub no_effect: Option<&'static str>,
}

const fn imp(name: &'static str, kind: Kind) -> OptSpec {
    OptSpec {
        name,
        kind,
        no_effect: None,
    }
}

const fn nop(name: &'static str, kind: Kind, why: &'static str) -> OptSpec {
    OptSpec {
        name,
        kind,
        no_effect: Some(why),
    }
}

const ONE_CONN: &str = "one connection, one channel per mount";
const NO_DATA_CACHE: &str = "no file data or handles are cached";
const NO_WRITES: &str = "the mount serves lookups, listings and reads";
const NO_ACL: &str = "permissions come from uid/gid/file_mode/dir_mode or the WSL EAs";
const NO_LOCKS: &str = "no byte-range locks are taken";
const NTLM_ONLY: &str = "authentication is NTLMv2 over raw NTLMSSP";
const CALLER_NET: &str = "the caller's connector chooses the address and port";
const VFS_FLAGS: &str = "a VFS mount flag Linux passes through; no such flags here";

/// Every option of Linux's cifs (`smb3_fs_parameters`), in its order.
pub const OPTIONS: &[OptSpec] = &[
    // Flags.
    imp("user_xattr", Kind::FlagNo),
    imp("forceuid", Kind::FlagNo),
    nop("multichannel", Kind::FlagNo, ONE_CONN),
    imp("forcegid", Kind::FlagNo),
    nop(
        "noblocksend",
        Kind::Flag,
        "sends always block until the transport took them",
    ),
    nop("noautotune", Kind::Flag, "no socket buffer tuning here"),
    nop("nolease", Kind::Flag, "no leases are requested"),
    imp("hard", Kind::FlagNo),
    imp("soft", Kind::FlagNo),
    nop(
        "perm",
        Kind::FlagNo,
        "the VFS checks no permissions on cifs inodes",
    ),
    nop("nodelete", Kind::Flag, NO_WRITES),
    imp("mapposix", Kind::FlagNo),
    imp("mapchars", Kind::Flag),
    imp("nomapchars", Kind::Flag),
    nop("sfu", Kind::FlagNo, "special files are not created"),
    nop("nodfs", Kind::Flag, "DFS referrals are not followed"),
    nop("posixpaths", Kind::FlagNo, "SMB1 only"),
    imp("unix", Kind::FlagNo),
    imp("linux", Kind::FlagNo),
    imp("posix", Kind::FlagNo),
    nop(
        "nocase",
        Kind::Flag,
        "names are passed to the server as given",
    ),
    nop(
        "ignorecase",
        Kind::Flag,
        "names are passed to the server as given",
    ),
    nop("brl", Kind::FlagNo, NO_LOCKS),
    nop("handlecache", Kind::FlagNo, NO_DATA_CACHE),
    nop("forcemandatorylock", Kind::Flag, NO_LOCKS),
    nop("forcemand", Kind::Flag, NO_LOCKS),
    nop("setuidfromacl", Kind::Flag, NO_ACL),
    nop("idsfromsid", Kind::Flag, NO_ACL),
    nop("setuids", Kind::FlagNo, NO_WRITES),
    nop("dynperm", Kind::FlagNo, NO_ACL),
    nop("intr", Kind::FlagNo, "no signals here"),
    nop("strictsync", Kind::FlagNo, NO_WRITES),
    imp("serverino", Kind::FlagNo),
    nop("rwpidforward", Kind::Flag, "no processes here"),
    nop("cifsacl", Kind::Flag, NO_ACL),
    nop("acl", Kind::FlagNo, NO_ACL),
    nop("locallease", Kind::Flag, NO_LOCKS),
    imp("sign", Kind::Flag),
    nop(
        "ignore_signature",
        Kind::Flag,
        "signed replies are always verified",
    ),
    nop(
        "signloosely",
        Kind::Flag,
        "signed replies are always verified",
    ),
    imp("seal", Kind::Flag),
    // This project's: accept `sign`/`seal` on a machine whose random
    // source is not cryptographic (the kernel's TSC fallback).
    imp("weakrandom", Kind::Flag),
    imp("noac", Kind::Flag),
    nop("fsc", Kind::Flag, NO_DATA_CACHE),
    nop(
        "mfsymlinks",
        Kind::Flag,
        "symlinks are not followed on cifs here",
    ),
    nop("multiuser", Kind::Flag, "one session per mount"),
    imp("sloppy", Kind::Flag),
    nop("nosharesock", Kind::Flag, ONE_CONN),
    nop("persistenthandles", Kind::FlagNo, NO_DATA_CACHE),
    nop("resilienthandles", Kind::FlagNo, NO_DATA_CACHE),
    nop(
        "tcpnodelay",
        Kind::FlagNo,
        "the transport sets TCP_NODELAY always",
    ),
    nop("nosparse", Kind::Flag, NO_WRITES),
    nop("domainauto", Kind::Flag, NTLM_ONLY),
    nop("rdma", Kind::Flag, "TCP only"),
    nop("modesid", Kind::Flag, NO_ACL),
    nop("modefromsid", Kind::Flag, NO_ACL),
    nop("rootfs", Kind::Flag, "not a root filesystem"),
    nop("compress", Kind::Flag, "no compression is negotiated"),
    nop("witness", Kind::Flag, "no witness (cluster) service"),
    nop(
        "nativesocket",
        Kind::FlagNo,
        "special files are not created",
    ),
    nop(
        "nbsessinit",
        Kind::FlagNo,
        "direct TCP (port 445 style), no NetBIOS session setup",
    ),
    nop("unicode", Kind::FlagNo, "SMB1 only"),
    // Numbers.
    nop("backupuid", Kind::Num, "no backup intent is claimed"),
    nop("backupgid", Kind::Num, "no backup intent is claimed"),
    imp("uid", Kind::Num),
    nop("cruid", Kind::Num, NTLM_ONLY),
    imp("gid", Kind::Num),
    imp("file_mode", Kind::Num),
    imp("dirmode", Kind::Num),
    imp("dir_mode", Kind::Num),
    nop("port", Kind::Num, CALLER_NET),
    nop("min_enc_offload", Kind::Num, "decryption is done inline"),
    nop("retrans", Kind::Num, "retries are set by soft/hard"),
    nop("esize", Kind::Num, "decryption is done inline"),
    nop("bsize", Kind::Num, "st_blksize is not reported"),
    nop("rasize", Kind::Num, "no readahead"),
    imp("rsize", Kind::Num),
    imp("wsize", Kind::Num),
    imp("actimeo", Kind::Num),
    imp("acdirmax", Kind::Num),
    imp("acregmax", Kind::Num),
    nop("closetimeo", Kind::Num, NO_DATA_CACHE),
    nop(
        "echo_interval",
        Kind::Num,
        "no ECHO keepalives; a dead link shows as a timeout",
    ),
    nop(
        "max_credits",
        Kind::Num,
        "the client asks for credits per request",
    ),
    nop(
        "max_cached_dirs",
        Kind::Num,
        "directory listings are cached per inode for acdirmax",
    ),
    nop("handletimeout", Kind::Num, NO_DATA_CACHE),
    nop(
        "snapshot",
        Kind::Num,
        "no previous versions (timewarp) access",
    ),
    nop("max_channels", Kind::Num, ONE_CONN),
    // Strings.
    nop(
        "source",
        Kind::Str,
        "the source is the mount's first argument",
    ),
    imp("user", Kind::Str),
    imp("username", Kind::Str),
    imp("pass", Kind::Str),
    imp("password", Kind::Str),
    nop("ip", Kind::Str, CALLER_NET),
    nop("addr", Kind::Str, CALLER_NET),
    imp("domain", Kind::Str),
    imp("dom", Kind::Str),
    nop("srcaddr", Kind::Str, CALLER_NET),
    imp("iocharset", Kind::Str),
    nop("netbiosname", Kind::Str, "no NetBIOS session setup"),
    nop("servern", Kind::Str, "no NetBIOS session setup"),
    imp("ver", Kind::Str),
    imp("vers", Kind::Str),
    imp("sec", Kind::Str),
    imp("cache", Kind::Str),
    nop("upcall_target", Kind::Str, "no key upcalls (no Kerberos)"),
    nop("reparse", Kind::Str, "special files are not created"),
    nop("symlink", Kind::Str, "symlinks are not created"),
    nop(
        "symlinkroot",
        Kind::Str,
        "symlinks are not followed on cifs here",
    ),
    // Ignored by Linux itself.
    nop(
        "guest",
        Kind::Flag,
        "ignored by Linux too (mount.cifs's word)",
    ),
    nop("noatime", Kind::Flag, VFS_FLAGS),
    nop("relatime", Kind::Flag, VFS_FLAGS),
    nop("_netdev", Kind::Flag, VFS_FLAGS),
    nop("suid", Kind::FlagNo, VFS_FLAGS),
    nop("exec", Kind::FlagNo, VFS_FLAGS),
    nop("dev", Kind::FlagNo, VFS_FLAGS),
    nop("mand", Kind::FlagNo, VFS_FLAGS),
    nop("auto", Kind::FlagNo, VFS_FLAGS),
    imp("cred", Kind::Str),
    imp("credentials", Kind::Str),
    nop("unc", Kind::Str, "the source is the mount's first argument"),
    nop(
        "prefixpath",
        Kind::Str,
        "the source is the mount's first argument",
    ),
    // This project's own (`wslea=`, `wslea_k=`: the old names).
    imp("eacache", Kind::Str),
    imp("eacache_k", Kind::Num),
    imp("eacache_batch", Kind::Num),
    imp("wslea", Kind::Str),
    imp("wslea_k", Kind::Num),
];

/// The spec of option `k`, with `negated` set when it is the `no` form of
/// a [`Kind::FlagNo`].
fn lookup(k: &str) -> Option<(&'static OptSpec, bool)> {
    if let Some(s) = OPTIONS.iter().find(|s| s.name == k) {
        return Some((s, false));
    }
    let base = k.strip_prefix("no")?;
    OPTIONS
        .iter()
        .find(|s| s.name == base && s.kind == Kind::FlagNo)
        .map(|s| (s, true))
}

/// Splits `s` on commas, keeping Linux's `,,` escape inside a password
/// (`pass=a,,b` is the password `a,b`).
fn split_options(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let (tok, after) = rest.split_once(',').unwrap_or((rest, ""));
        let mut tok = tok.to_string();
        rest = after;
        if tok.starts_with("pass=") || tok.starts_with("password=") {
            while let Some(r) = rest.strip_prefix(',') {
                let (more, after) = r.split_once(',').unwrap_or((r, ""));
                tok.push(',');
                tok.push_str(more);
                rest = after;
            }
        }
        out.push(tok);
    }
    out
}

/// Reads a credentials file (host only; `Err` with a reason in the guest).
pub type ReadFile<'a> = &'a dyn Fn(&str) -> Result<String, String>;

/// The std reader: `std::fs::read_to_string`.
#[cfg(feature = "std")]
fn read_host_file(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}

#[cfg(not(feature = "std"))]
fn read_host_file(_path: &str) -> Result<String, String> {
    Err("no host filesystem here (give username= and password=)".into())
}

impl Default for CifsOpts {
    fn default() -> Self {
        CifsOpts {
            vers: parse_vers("default").expect("default is a vers"),
            username: String::new(),
            password: smb::Secret::default(),
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
            eacache: eacache::by_name(eacache::DEFAULT).expect("the default design exists"),
            eacache_k: 8,
            eacache_batch: super::eacache::DEFAULT_BATCH,
            user_xattr: true,
            sign: false,
            rsize: DEFAULT_IOSIZE,
            wsize: DEFAULT_IOSIZE,
            seal: false,
            weakrandom: false,
            cache: CachePolicy::Strict,
            unix: false,
            remap: Remap::Sfm,
            null_session: false,
            ignored: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// `vers=` with Linux's meanings: one dialect, or `3` (3.0 and up) or
/// `default` (2.1 and up). `1.0` (SMB1) is not spoken here.
pub fn parse_vers(v: &str) -> Result<Vec<u16>, OptError> {
    use smb::wire::negotiate::dialect::*;
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

/// A parse in progress: the options so far, and what the steps after the
/// words need (the unknown names, `sloppy`, the credentials file, and which
/// identity options the line gave, since those win over the file).
#[derive(Default)]
struct Parse {
    o: CifsOpts,
    unknown: Vec<String>,
    sloppy: bool,
    cred_file: Option<String>,
    user_set: bool,
    pass_set: bool,
    dom_set: bool,
}

impl Parse {
    /// One word of the option string: `key` or `key=value`. An unknown key
    /// is set aside for [`Parse::judge_unknown`]; a known one must come
    /// with a value exactly when it takes one (a number where it is
    /// numeric), then takes effect.
    fn word(&mut self, w: &str) -> Result<(), OptError> {
        if w.is_empty() {
            return Ok(());
        }
        let (k, v) = match w.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (w, None),
        };
        let Some((spec, negated)) = lookup(k) else {
            self.unknown.push(k.to_string());
            return Ok(());
        };
        match (spec.kind, v) {
            (Kind::Flag | Kind::FlagNo, Some(_)) => {
                return Err(OptError(format!("cifs: Unexpected value for '{k}'")))
            }
            (Kind::Num | Kind::Str, None) => {
                return Err(OptError(format!("cifs: {k} needs a value")))
            }
            _ => {}
        }
        let val = v.unwrap_or("");
        if spec.kind == Kind::Num {
            num(k, val, 10).or_else(|e| num(k, val, 8).map_err(|_| e))?;
        }
        self.apply(spec, k, val, negated)
    }

    /// Option `spec` (spelled `k`, with its value `val`) takes effect.
    fn apply(&mut self, spec: &OptSpec, k: &str, val: &str, negated: bool) -> Result<(), OptError> {
        let o = &mut self.o;
        match spec.name {
            "vers" | "ver" => o.vers = parse_vers(val)?,
            "username" | "user" | "password" | "pass" | "domain" | "dom" | "credentials"
            | "cred" => self.identity(spec.name, val),
            "uid" | "gid" | "forceuid" | "forcegid" | "file_mode" | "dir_mode" | "dirmode" => {
                ownership(o, spec.name, k, val, negated)?
            }
            "acregmax" | "acdirmax" | "actimeo" | "noac" | "cache" => {
                caching(o, spec.name, k, val)?
            }
            "soft" => o.soft = !negated,
            "hard" => o.soft = negated,
            "serverino" => o.noserverino = negated,
            "sign" => o.sign = true,
            "seal" => o.seal = true,
            "weakrandom" => o.weakrandom = true,
            "sec" => security(o, val)?,
            "unix" | "linux" | "posix" => o.unix = !negated,
            "mapposix" => o.remap = if negated { Remap::None } else { Remap::Sfm },
            "mapchars" => o.remap = Remap::Sfu,
            "nomapchars" => o.remap = Remap::None,
            "iocharset" => {
                if !val.eq_ignore_ascii_case("utf8") && !val.eq_ignore_ascii_case("utf-8") {
                    return Err(OptError(format!(
                        "cifs: iocharset={val}: names are UTF-8 here (iocharset=utf8)"
                    )));
                }
            }
            "rsize" => o.rsize = iosize(k, val)?,
            "wsize" => o.wsize = iosize(k, val)?,
            "sloppy" => self.sloppy = true,
            "user_xattr" => o.user_xattr = !negated,
            "eacache" | "wslea" | "eacache_k" | "wslea_k" | "eacache_batch" => {
                ea_cache(o, spec.name, k, val)?
            }
            _ => debug_assert!(spec.no_effect.is_some(), "{} unhandled", spec.name),
        }
        Ok(())
    }

    /// Who mounts: `username=` (Linux's mount.cifs takes
    /// `user=name%password`), `password=`, `domain=`, `credentials=`.
    fn identity(&mut self, name: &str, val: &str) {
        let o = &mut self.o;
        match name {
            "username" | "user" => {
                match val.split_once('%') {
                    Some((u, p)) => {
                        o.username = u.to_string();
                        o.password = p.into();
                        self.pass_set = true;
                    }
                    None => o.username = val.to_string(),
                }
                self.user_set = true;
            }
            "password" | "pass" => {
                o.password = val.into();
                self.pass_set = true;
            }
            "domain" | "dom" => {
                o.domain = val.to_string();
                self.dom_set = true;
            }
            _ => self.cred_file = Some(val.to_string()),
        }
    }

    /// Unknown options are refused, naming them all, unless `sloppy` was
    /// given: then they are kept in [`CifsOpts::ignored`].
    fn judge_unknown(&mut self) -> Result<(), OptError> {
        if self.unknown.is_empty() {
            return Ok(());
        }
        if !self.sloppy {
            let names: Vec<String> = self.unknown.iter().map(|u| format!("'{u}'")).collect();
            let word = if self.unknown.len() == 1 {
                "parameter"
            } else {
                "parameters"
            };
            return Err(OptError(format!(
                "cifs: Unknown {word} {} (sloppy accepts them)",
                names.join(", ")
            )));
        }
        self.o.ignored = core::mem::take(&mut self.unknown);
        Ok(())
    }

    /// The `credentials=` file, read by `read`: its `username`, `password`
    /// and `domain` lines, where the option line did not give them (the
    /// line wins over the file, as with mount.cifs).
    fn read_credentials(&mut self, read: ReadFile<'_>) -> Result<(), OptError> {
        let Some(path) = self.cred_file.take() else {
            return Ok(());
        };
        let text = read(&path).map_err(|e| OptError(format!("cifs: credentials={path}: {e}")))?;
        let o = &mut self.o;
        for line in text.lines() {
            let line = line.trim();
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            match k.trim() {
                "username" | "user" if !self.user_set => match v.split_once('%') {
                    Some((u, p)) if !self.pass_set => {
                        o.username = u.into();
                        o.password = p.into();
                    }
                    _ => o.username = v.into(),
                },
                "password" | "pass" if !self.pass_set => o.password = v.into(),
                "domain" | "dom" if !self.dom_set => o.domain = v.into(),
                _ => {}
            }
        }
        Ok(())
    }

    /// The options checked against each other: `sec=none` drops the
    /// identity and refuses `sign` and `seal`; `cache=none` caches no
    /// attributes.
    fn finish(self) -> Result<CifsOpts, OptError> {
        let mut o = self.o;
        if o.null_session {
            if o.sign || o.seal {
                // A null session has no key: `sign` and `seal` would be
                // promises nothing keeps, so the contradiction is refused
                // before any connection, as Linux refuses contradictory
                // options (EINVAL).
                return Err(OptError(
                    "cifs: sec=none cannot be combined with sign or seal: a null session has no key to sign or encrypt with".into(),
                ));
            }
            o.username.clear();
            o.password.clear();
        }
        if o.cache == CachePolicy::None {
            o.acregmax_ms = 0;
            o.acdirmax_ms = 0;
        }
        Ok(o)
    }
}

/// Whose files they are: `uid=`, `gid=` (and `forceuid`, `forcegid`: the
/// server's owners ignored), `file_mode=`, `dir_mode=` (octal).
fn ownership(
    o: &mut CifsOpts,
    name: &str,
    k: &str,
    val: &str,
    negated: bool,
) -> Result<(), OptError> {
    match name {
        "uid" => o.uid = num(k, val, 10)? as u32,
        "gid" => o.gid = num(k, val, 10)? as u32,
        "forceuid" => o.forceuid = !negated,
        "forcegid" => o.forcegid = !negated,
        "file_mode" => {
            o.file_mode = num(k, val, 8)? as u32 & 0o7777;
            o.file_mode_set = true;
        }
        _ => {
            o.dir_mode = num(k, val, 8)? as u32 & 0o7777;
            o.dir_mode_set = true;
        }
    }
    Ok(())
}

/// How long attributes are believed (`acregmax=`, `acdirmax=`, `actimeo=`
/// in seconds, `noac`) and how file data is cached (`cache=`).
fn caching(o: &mut CifsOpts, name: &str, k: &str, val: &str) -> Result<(), OptError> {
    match name {
        "acregmax" => o.acregmax_ms = num(k, val, 10)? * 1000,
        "acdirmax" => o.acdirmax_ms = num(k, val, 10)? * 1000,
        "actimeo" => {
            o.acregmax_ms = num(k, val, 10)? * 1000;
            o.acdirmax_ms = o.acregmax_ms;
        }
        // Linux: "noac is deprecated, use actimeo=0".
        "noac" => {
            o.acregmax_ms = 0;
            o.acdirmax_ms = 0;
        }
        _ => {
            o.cache = match val {
                "strict" => CachePolicy::Strict,
                "loose" | "ro" | "singleclient" => CachePolicy::Loose,
                "none" => CachePolicy::None,
                _ => return Err(OptError(format!("cifs: bad cache= option: {val}"))),
            }
        }
    }
    Ok(())
}

/// `sec=`: NTLMSSP (signed with the `i` forms) or a null session; no
/// Kerberos.
fn security(o: &mut CifsOpts, val: &str) -> Result<(), OptError> {
    match val {
        "ntlmssp" | "ntlmv2" | "nontlm" => {}
        "ntlmsspi" | "ntlmv2i" => o.sign = true,
        "none" => o.null_session = true,
        "krb5" | "krb5i" | "krb5p" => {
            return Err(OptError(format!(
                "cifs: sec={val} is not supported here (no Kerberos; sec=ntlmssp)"
            )))
        }
        _ => return Err(OptError(format!("cifs: bad security option: {val}"))),
    }
    Ok(())
}

/// The EA-cache design (`eacache=`, `eacache_k=`), and its former names
/// (`wslea=`, `wslea_k=`), which still work and leave a note.
fn ea_cache(o: &mut CifsOpts, name: &str, k: &str, val: &str) -> Result<(), OptError> {
    match name {
        "eacache" => {
            o.eacache = eacache::by_name(val).ok_or_else(|| {
                OptError(format!(
                    "cifs: bad eacache= option: {val} ({})",
                    eacache::names()
                ))
            })?;
        }
        "wslea" => {
            o.eacache = eacache::from_wslea(val).ok_or_else(|| {
                OptError(format!(
                    "cifs: bad wslea= option: {val} (now eacache={})",
                    eacache::names()
                ))
            })?;
            let now = EACACHE_DESIGNS[o.eacache].name();
            o.notes.push(if val == "probe" {
                format!("cifs: wslea=probe is now eacache={now}: an EA query per stat models no Linux client; Linux asks on every listxattr")
            } else {
                format!("cifs: wslea={val} is now eacache={now}")
            });
        }
        "eacache_batch" => {
            o.eacache_batch = num(k, val, 10)?.clamp(1, super::eacache::MAX_BATCH as u64) as u32;
        }
        _ => {
            o.eacache_k = num(k, val, 10)?.clamp(1, 1 << 20) as u32;
            if k == "wslea_k" {
                o.notes.push("cifs: wslea_k= is now eacache_k=".into());
            }
        }
    }
    Ok(())
}

impl CifsOpts {
    /// Parse `a=b,c,...` (Linux names; times in seconds, modes in octal);
    /// `credentials=` reads the host file (refused in the guest).
    pub fn parse(s: &str) -> Result<CifsOpts, OptError> {
        Self::parse_with(s, &read_host_file)
    }

    /// [`CifsOpts::parse`] with the credentials file read by `read`: each
    /// word in turn ([`Parse::word`]), then the unknown ones judged, the
    /// credentials file read, and the options checked against each other.
    pub fn parse_with(s: &str, read: ReadFile<'_>) -> Result<CifsOpts, OptError> {
        let mut p = Parse::default();
        for w in split_options(s) {
            p.word(w.trim())?;
        }
        p.judge_unknown()?;
        p.read_credentials(read)?;
        p.finish()
    }

    /// Would every WSL metadata EA (read for reparse points) be thrown
    /// away?
    pub fn all_forced(&self) -> bool {
        self.forceuid && self.forcegid && self.file_mode_set && self.dir_mode_set
    }

    /// The EA-cache design in force (`off` under `nouser_xattr`).
    pub fn effective_eacache(&self) -> &'static dyn eacache::EaCacheDesign {
        if self.user_xattr {
            EACACHE_DESIGNS[self.eacache]
        } else {
            &eacache::Off
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

#[cfg(test)]
mod parse_tests;

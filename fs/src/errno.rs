//! Error numbers at the VFS boundary, with Linux's values and names.
//!
//! The names are a contract: `vfsh` prints `err ENAME` and the differential
//! test compares them with what host Linux returns. Internal signals of the
//! walk (retry with references, retry the whole walk) are separate enums in
//! `namei` and never escape as an `Errno`.

use core::fmt;

/// A Linux errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Errno {
    EPERM = 1,
    ENOENT = 2,
    EIO = 5,
    EBADF = 9,
    EFAULT = 14,
    ENOMEM = 12,
    EACCES = 13,
    EBUSY = 16,
    EEXIST = 17,
    EXDEV = 18,
    ENODEV = 19,
    ENOTDIR = 20,
    EISDIR = 21,
    EINVAL = 22,
    ENOSPC = 28,
    EROFS = 30,
    ENAMETOOLONG = 36,
    ENOSYS = 38,
    ENOTEMPTY = 39,
    ELOOP = 40,
    ENODATA = 61,
    EPROTO = 71,
    EOPNOTSUPP = 95,
    ECONNRESET = 104,
    ETIMEDOUT = 110,
    ESTALE = 116,
    EHOSTDOWN = 112,
    E2BIG = 7,
    ERANGE = 34,
    EAGAIN = 11,
    EMFILE = 24,
    EPIPE = 32,
    EREMCHG = 78,
    ENETRESET = 102,
    ECONNABORTED = 103,
    EDQUOT = 122,
    EKEYEXPIRED = 127,
    EKEYREVOKED = 128,
}

impl Errno {
    /// The symbolic name, e.g. `"ENOENT"`.
    pub fn name(self) -> &'static str {
        use Errno::*;
        match self {
            EPERM => "EPERM",
            ENOENT => "ENOENT",
            EIO => "EIO",
            EBADF => "EBADF",
            EFAULT => "EFAULT",
            ENOMEM => "ENOMEM",
            EACCES => "EACCES",
            EBUSY => "EBUSY",
            EEXIST => "EEXIST",
            EXDEV => "EXDEV",
            ENODEV => "ENODEV",
            ENOTDIR => "ENOTDIR",
            EISDIR => "EISDIR",
            EINVAL => "EINVAL",
            ENOSPC => "ENOSPC",
            EROFS => "EROFS",
            ENAMETOOLONG => "ENAMETOOLONG",
            ENOSYS => "ENOSYS",
            ENOTEMPTY => "ENOTEMPTY",
            ELOOP => "ELOOP",
            ENODATA => "ENODATA",
            EPROTO => "EPROTO",
            EOPNOTSUPP => "EOPNOTSUPP",
            ECONNRESET => "ECONNRESET",
            ETIMEDOUT => "ETIMEDOUT",
            ESTALE => "ESTALE",
            EHOSTDOWN => "EHOSTDOWN",
            EKEYREVOKED => "EKEYREVOKED",
            EKEYEXPIRED => "EKEYEXPIRED",
            EDQUOT => "EDQUOT",
            ECONNABORTED => "ECONNABORTED",
            ENETRESET => "ENETRESET",
            EREMCHG => "EREMCHG",
            EPIPE => "EPIPE",
            EMFILE => "EMFILE",
            EAGAIN => "EAGAIN",
            E2BIG => "E2BIG",
            ERANGE => "ERANGE",
        }
    }

    /// glibc's `strerror` text, e.g. `"Permission denied"` (what
    /// `mount(8)` prints).
    pub fn strerror(self) -> &'static str {
        use Errno::*;
        match self {
            EPERM => "Operation not permitted",
            ENOENT => "No such file or directory",
            EIO => "Input/output error",
            EBADF => "Bad file descriptor",
            EFAULT => "Bad address",
            ENOMEM => "Cannot allocate memory",
            EACCES => "Permission denied",
            EBUSY => "Device or resource busy",
            EEXIST => "File exists",
            EXDEV => "Invalid cross-device link",
            ENODEV => "No such device",
            ENOTDIR => "Not a directory",
            EISDIR => "Is a directory",
            EINVAL => "Invalid argument",
            ENOSPC => "No space left on device",
            EROFS => "Read-only file system",
            ENAMETOOLONG => "File name too long",
            ENOSYS => "Function not implemented",
            ENOTEMPTY => "Directory not empty",
            ELOOP => "Too many levels of symbolic links",
            ENODATA => "No data available",
            EPROTO => "Protocol error",
            EOPNOTSUPP => "Operation not supported",
            ECONNRESET => "Connection reset by peer",
            ETIMEDOUT => "Connection timed out",
            ESTALE => "Stale file handle",
            EHOSTDOWN => "Host is down",
            E2BIG => "Argument list too long",
            ERANGE => "Numerical result out of range",
            EAGAIN => "Resource temporarily unavailable",
            EMFILE => "Too many open files",
            EPIPE => "Broken pipe",
            EREMCHG => "Remote address changed",
            ENETRESET => "Network dropped connection on reset",
            ECONNABORTED => "Software caused connection abort",
            EDQUOT => "Disk quota exceeded",
            EKEYEXPIRED => "Key has expired",
            EKEYREVOKED => "Key has been revoked",
        }
    }

    /// The positive errno value.
    pub fn value(self) -> i32 {
        self as i32
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Result type of VFS operations.
pub type KResult<T> = Result<T, Errno>;

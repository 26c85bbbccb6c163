//! NT status → Linux errno and name, as Linux's `map_smb2_to_linux_error`
//! (`fs/smb/client/smb2maperror.c`) gives them, for the statuses an SMB2/3
//! client meets; every other status is EIO there too. The names let errors
//! read `Permission denied (STATUS_LOGON_FAILURE)` instead of a number.
//! [`SmbErrno`] gives every [`SmbError`] its errno and the message a Linux
//! user reads. Pure data; no state; reaches only `errno` and the smb layer's
//! error type.

use crate::errno::Errno;
use alloc::format;
use alloc::string::String;
use smb::wire::status;
use smb::SmbError;

/// `(status, name, errno)` rows, in status order.
const TABLE: &[(u32, &str, Errno)] = &[
    (0x0000_0000, "STATUS_SUCCESS", Errno::EIO),
    (0x0000_0103, "STATUS_PENDING", Errno::EIO),
    (0x8000_0005, "STATUS_BUFFER_OVERFLOW", Errno::E2BIG),
    (0x8000_0006, "STATUS_NO_MORE_FILES", Errno::ENODATA),
    (0xc000_0001, "STATUS_UNSUCCESSFUL", Errno::EIO),
    (0xc000_0002, "STATUS_NOT_IMPLEMENTED", Errno::EOPNOTSUPP),
    (0xc000_0003, "STATUS_INVALID_INFO_CLASS", Errno::EIO),
    (0xc000_0008, "STATUS_INVALID_HANDLE", Errno::EBADF),
    (0xc000_000d, "STATUS_INVALID_PARAMETER", Errno::EINVAL),
    (0xc000_000e, "STATUS_NO_SUCH_DEVICE", Errno::ENODEV),
    (0xc000_000f, "STATUS_NO_SUCH_FILE", Errno::ENOENT),
    (
        0xc000_0010,
        "STATUS_INVALID_DEVICE_REQUEST",
        Errno::EOPNOTSUPP,
    ),
    (0xc000_0011, "STATUS_END_OF_FILE", Errno::ENODATA),
    (0xc000_0016, "STATUS_MORE_PROCESSING_REQUIRED", Errno::EIO),
    (0xc000_0022, "STATUS_ACCESS_DENIED", Errno::EACCES),
    (0xc000_0023, "STATUS_BUFFER_TOO_SMALL", Errno::EIO),
    (0xc000_0033, "STATUS_OBJECT_NAME_INVALID", Errno::ENOENT),
    (0xc000_0034, "STATUS_OBJECT_NAME_NOT_FOUND", Errno::ENOENT),
    (0xc000_0035, "STATUS_OBJECT_NAME_COLLISION", Errno::EEXIST),
    (0xc000_0039, "STATUS_OBJECT_PATH_INVALID", Errno::ENOTDIR),
    (0xc000_003a, "STATUS_OBJECT_PATH_NOT_FOUND", Errno::ENOENT),
    (0xc000_0043, "STATUS_SHARING_VIOLATION", Errno::EBUSY),
    (0xc000_0044, "STATUS_QUOTA_EXCEEDED", Errno::EDQUOT),
    (0xc000_004f, "STATUS_EAS_NOT_SUPPORTED", Errno::EOPNOTSUPP),
    (0xc000_0052, "STATUS_NO_EAS_ON_FILE", Errno::ENODATA),
    (0xc000_0053, "STATUS_EA_CORRUPT_ERROR", Errno::EIO),
    (0xc000_0054, "STATUS_FILE_LOCK_CONFLICT", Errno::EACCES),
    (0xc000_0055, "STATUS_LOCK_NOT_GRANTED", Errno::EACCES),
    (0xc000_0056, "STATUS_DELETE_PENDING", Errno::ENOENT),
    (0xc000_0061, "STATUS_PRIVILEGE_NOT_HELD", Errno::EPERM),
    (0xc000_006a, "STATUS_WRONG_PASSWORD", Errno::EACCES),
    (0xc000_006d, "STATUS_LOGON_FAILURE", Errno::EACCES),
    (0xc000_006e, "STATUS_ACCOUNT_RESTRICTION", Errno::EACCES),
    (0xc000_006f, "STATUS_INVALID_LOGON_HOURS", Errno::EACCES),
    (0xc000_0070, "STATUS_INVALID_WORKSTATION", Errno::EACCES),
    (0xc000_0071, "STATUS_PASSWORD_EXPIRED", Errno::EKEYEXPIRED),
    (0xc000_0072, "STATUS_ACCOUNT_DISABLED", Errno::EKEYREVOKED),
    (0xc000_007f, "STATUS_DISK_FULL", Errno::ENOSPC),
    (0xc000_009a, "STATUS_INSUFFICIENT_RESOURCES", Errno::EAGAIN),
    (0xc000_00a2, "STATUS_MEDIA_WRITE_PROTECTED", Errno::EROFS),
    (0xc000_00b5, "STATUS_IO_TIMEOUT", Errno::EAGAIN),
    (0xc000_00ba, "STATUS_FILE_IS_A_DIRECTORY", Errno::EISDIR),
    (0xc000_00bb, "STATUS_NOT_SUPPORTED", Errno::EOPNOTSUPP),
    (0xc000_00be, "STATUS_BAD_NETWORK_PATH", Errno::EINVAL),
    (0xc000_00bf, "STATUS_NETWORK_BUSY", Errno::EBUSY),
    (0xc000_00c0, "STATUS_DEVICE_DOES_NOT_EXIST", Errno::ENODEV),
    (0xc000_00c9, "STATUS_NETWORK_NAME_DELETED", Errno::EREMCHG),
    (0xc000_00ca, "STATUS_NETWORK_ACCESS_DENIED", Errno::EACCES),
    (0xc000_00cc, "STATUS_BAD_NETWORK_NAME", Errno::ENOENT),
    (0xc000_0101, "STATUS_DIRECTORY_NOT_EMPTY", Errno::ENOTEMPTY),
    (0xc000_0103, "STATUS_NOT_A_DIRECTORY", Errno::ENOTDIR),
    (0xc000_0106, "STATUS_NAME_TOO_LONG", Errno::ENAMETOOLONG),
    (0xc000_011f, "STATUS_TOO_MANY_OPENED_FILES", Errno::EMFILE),
    (0xc000_0120, "STATUS_CANCELLED", Errno::EIO),
    (0xc000_0121, "STATUS_CANNOT_DELETE", Errno::EACCES),
    (0xc000_0128, "STATUS_FILE_CLOSED", Errno::EBADF),
    (0xc000_013c, "STATUS_REMOTE_DISCONNECT", Errno::ECONNRESET),
    (0xc000_014b, "STATUS_PIPE_BROKEN", Errno::EPIPE),
    (0xc000_0193, "STATUS_ACCOUNT_EXPIRED", Errno::EKEYEXPIRED),
    (0xc000_0203, "STATUS_USER_SESSION_DELETED", Errno::EIO),
    (
        0xc000_020c,
        "STATUS_CONNECTION_DISCONNECTED",
        Errno::ECONNABORTED,
    ),
    (0xc000_020d, "STATUS_CONNECTION_RESET", Errno::ENETRESET),
    (0xc000_0225, "STATUS_NOT_FOUND", Errno::ENOENT),
    (0xc000_0234, "STATUS_ACCOUNT_LOCKED_OUT", Errno::EACCES),
    (0xc000_0236, "STATUS_CONNECTION_REFUSED", Errno::EIO),
    (
        0xc000_0241,
        "STATUS_CONNECTION_ABORTED",
        Errno::ECONNABORTED,
    ),
    (0xc000_035c, "STATUS_NETWORK_SESSION_EXPIRED", Errno::EIO),
];

fn row(status: u32) -> Option<&'static (u32, &'static str, Errno)> {
    TABLE
        .binary_search_by_key(&status, |r| r.0)
        .ok()
        .map(|i| &TABLE[i])
}

/// The errno Linux gives `status` (EIO for any it does not map).
pub fn status_errno(status: u32) -> Errno {
    row(status).map_or(Errno::EIO, |r| r.2)
}

/// The status's name (`"STATUS_LOGON_FAILURE"`), if it is in the table.
pub fn status_name(status: u32) -> Option<&'static str> {
    row(status).map(|r| r.1)
}

/// The errno side of an [`SmbError`]: what the VFS reports for it.
pub trait SmbErrno {
    /// The errno the VFS reports. Timeouts and dropped connections are EIO
    /// (what a soft mount returns); malformed or forged replies are EIO.
    fn errno(&self) -> Errno;

    /// What a Linux user reads after `cifs: mount failed: `: the errno's
    /// words with the status name (`Permission denied
    /// (STATUS_LOGON_FAILURE)`), or the reason with its hint where Linux
    /// would log one.
    fn linux_message(&self) -> String;
}

impl SmbErrno for SmbError {
    fn errno(&self) -> Errno {
        match self {
            SmbError::Status(s) => status_errno(*s),
            SmbError::Share(status::BAD_NETWORK_NAME) => Errno::ENODEV,
            SmbError::Share(s) => status_errno(*s),
            SmbError::NoCommonDialect { .. } => Errno::EOPNOTSUPP,
            SmbError::Auth(_) | SmbError::EncryptionRequired | SmbError::Unverified(_) => {
                Errno::EACCES
            }
            SmbError::EncryptionUnavailable(_) => Errno::EOPNOTSUPP,
            SmbError::Invalid(_) => Errno::EINVAL,
            SmbError::NoMemory(_) => Errno::ENOMEM,
            SmbError::ConnectFailed => Errno::EHOSTDOWN,
            _ => Errno::EIO,
        }
    }

    fn linux_message(&self) -> String {
        match self {
            SmbError::Status(s) | SmbError::Share(s) => match status_name(*s) {
                Some(name) => format!("{} ({name})", self.errno().strerror()),
                None => format!("{} (status 0x{s:08x})", self.errno().strerror()),
            },
            SmbError::NoCommonDialect { .. } | SmbError::EncryptionRequired => format!("{self}"),
            _ => format!("{} ({self})", self.errno().strerror()),
        }
    }
}

/// The `rc=` of an `smb3_cmd_err` trace line: the negative errno, as
/// Linux's tracepoint prints it (for [`smb::TraceRing::dump`]).
pub fn trace_rc(e: &SmbError) -> i32 {
    -e.errno().value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_linux_errnos() {
        assert!(
            TABLE.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted for binary search"
        );
        assert_eq!(status_errno(0xc000_006d), Errno::EACCES);
        assert_eq!(status_name(0xc000_006d), Some("STATUS_LOGON_FAILURE"));
        assert_eq!(status_errno(0xc000_00cc), Errno::ENOENT);
        assert_eq!(status_errno(0xc000_00bb), Errno::EOPNOTSUPP);
        assert_eq!(status_errno(0xc000_0052), Errno::ENODATA);
        assert_eq!(status_errno(0xc0ff_ffff), Errno::EIO);
        assert_eq!(status_name(0xc0ff_ffff), None);
    }

    /// Every failure the protocol layer reports, as the VFS sees it (the
    /// assertions the smb unit tests made on `errno()` before the mapping
    /// moved here, and the rest of the table).
    #[test]
    fn smb_errors_map_like_linux() {
        use smb::WireError;
        let cases = [
            (SmbError::Status(0xc000_0052), Errno::ENODATA),
            (SmbError::Share(status::BAD_NETWORK_NAME), Errno::ENODEV),
            (SmbError::Share(0xc000_0022), Errno::EACCES),
            (SmbError::Wire(WireError::new("truncated")), Errno::EIO),
            (SmbError::BadSignature, Errno::EIO),
            (SmbError::Timeout, Errno::EIO),
            (SmbError::Disconnected, Errno::EIO),
            (SmbError::ConnectFailed, Errno::EHOSTDOWN),
            (SmbError::Protocol("x"), Errno::EIO),
            (SmbError::Auth("x"), Errno::EACCES),
            (SmbError::DecryptFailed, Errno::EIO),
            (SmbError::EncryptionUnavailable("x"), Errno::EOPNOTSUPP),
            (SmbError::EncryptionRequired, Errno::EACCES),
            (SmbError::Unverified("x"), Errno::EACCES),
            (
                SmbError::NoCommonDialect {
                    offered: 1,
                    server: 0,
                },
                Errno::EOPNOTSUPP,
            ),
            (SmbError::NoCredits, Errno::EIO),
            (SmbError::Invalid("x"), Errno::EINVAL),
            (SmbError::NoMemory("x"), Errno::ENOMEM),
        ];
        for (e, want) in cases {
            assert_eq!(e.errno(), want, "{e:?}");
            assert_eq!(trace_rc(&e), -want.value(), "{e:?}");
        }
        assert_eq!(
            SmbError::Status(0xc000_006d).linux_message(),
            "Permission denied (STATUS_LOGON_FAILURE)"
        );
        assert_eq!(
            SmbError::Status(0xc0ff_ffff).linux_message(),
            "Input/output error (status 0xc0ffffff)"
        );
    }

    /// What the SMB reply gate refuses, for every reply type it lists (a
    /// body one byte short of its fixed part, a wrong StructureSize), is
    /// EIO at the VFS, as Linux's `smb2_check_message` makes it.
    #[test]
    fn reply_gate_refusals_are_eio() {
        use smb::wire::reply::{Reply, ReplyBody};
        for &kind in Reply::ALL {
            let mut msg = alloc::vec![0u8; 64 + kind.fixed_len()];
            let wrong = kind.structure_size() ^ 0x100;
            msg[64..66].copy_from_slice(&wrong.to_le_bytes());
            let refusals = [
                ReplyBody::new_checked(&msg[..msg.len() - 1], kind),
                ReplyBody::new_checked(&msg, kind),
            ];
            for r in refusals {
                let e = SmbError::Wire(r.expect_err("refused"));
                assert_eq!(e.errno(), Errno::EIO, "{kind:?}: {e}");
            }
        }
    }
}

//! The reference side of the vfsh tests: the same commands run by host Linux.
//!
//! [`Sandbox`] gives the calling thread a private mount namespace and a chroot
//! into a fresh tmpfs, so that `/` in a command means the root of that tmpfs
//! (as `/` means the root tmpfs in vfsh). [`LinuxShell`] parses lines with
//! `fstools::shell::parse` and answers each command with the matching system call,
//! formatting results exactly as vfsh does.
//!
//! Touches: the calling thread's filesystem context (root, cwd: the thread
//! unshares them with CLONE_FS, so other threads keep theirs), a private
//! mount namespace, and one empty directory under the temp dir, removed on
//! drop. Needs root (CAP_SYS_ADMIN for unshare/mount, CAP_SYS_CHROOT).
//! The system calls go through rustix's safe wrappers: this file is built
//! into tests and an example, outside the directories that may hold raw calls.
#![allow(dead_code)]

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::OwnedFd;

use rustix::fs::{self as rfs, Dir, Mode, OFlags, XattrFlags};
use rustix::io::{self as rio, Errno};
use rustix::mount::{self, MountFlags, MountPropagationFlags, UnmountFlags};
use rustix::process;
use rustix::thread::{self, UnshareFlags};

use fs::vfs::FileType;
use fstools::shell::{self, Cmd};

/// Linux errno names for the values a path system call can return here.
pub fn errno_name(e: i32) -> String {
    let n = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENODATA => "ENODATA",
        libc::ERANGE => "ERANGE",
        libc::E2BIG => "E2BIG",
        libc::ESTALE => "ESTALE",
        _ => return format!("E{e}"),
    };
    n.to_string()
}

type LResult<T> = Result<T, i32>;

/// The errno of a failed call, as the result lines name it.
fn errno(e: Errno) -> i32 {
    e.raw_os_error()
}

/// The commands of vfsh, answered by Linux in the current root.
#[derive(Default)]
pub struct LinuxShell {}

impl LinuxShell {
    pub fn new() -> LinuxShell {
        LinuxShell {}
    }

    /// Like `fstools::shell::Shell::exec`: the output lines of one input line.
    /// `stats` prints no counters here and `trace` changes nothing.
    pub fn exec(&mut self, line: &str) -> Vec<String> {
        match shell::parse(line) {
            Ok(None) => Vec::new(),
            Ok(Some(cmd)) => vec![self.run(&cmd)],
            Err(_) => vec!["err EINVAL".to_string()],
        }
    }

    /// One command, one result line.
    pub fn run(&mut self, cmd: &Cmd) -> String {
        let r: LResult<String> = match cmd {
            Cmd::Mkdir(p) => mkdir(p).map(|_| ok()),
            Cmd::Create(p) => open(p, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL).map(|_| ok()),
            Cmd::Write(p, text) => write_file(p, text).map(|_| ok()),
            Cmd::Read(p) => read_file(p).map(|d| shell::ok_with(&shell::escape_text(&d))),
            Cmd::Symlink { target, path } => rfs::symlink(&target[..], &path[..])
                .map(|_| ok())
                .map_err(errno),
            Cmd::Readlink(p) => readlink(p).map(|t| shell::ok_with(&shell::escape_word(&t))),
            Cmd::Unlink(p) => rfs::unlink(&p[..]).map(|_| ok()).map_err(errno),
            Cmd::Rmdir(p) => rfs::rmdir(&p[..]).map(|_| ok()).map_err(errno),
            Cmd::Rename(a, b) => rfs::rename(&a[..], &b[..]).map(|_| ok()).map_err(errno),
            Cmd::Stat(p) => stat(p, true),
            Cmd::Lstat(p) => stat(p, false),
            Cmd::Ls(p) => readdir(p).map(shell::ls_line),
            Cmd::Mount { opts, path: None } => remount_root(opts),
            Cmd::Mount {
                opts,
                path: Some(p),
            } => mount_tmpfs(opts, p),
            Cmd::Cksum(p) => read_file(p).map(|d| {
                use sha2::Digest;
                let h = sha2::Sha256::digest(&d);
                let hex: String = h.iter().map(|b| format!("{b:02x}")).collect();
                shell::ok_with(&format!("{hex} {}", d.len()))
            }),
            // The Linux side of the differential mounts no shares.
            Cmd::MountCifs { .. } => Err(libc::EOPNOTSUPP),
            // Ours print `# ` lines first (`stats`, `help`): the scripts
            // compared with Linux use none of them but `stats reset`.
            Cmd::Stats
            | Cmd::StatsReset
            | Cmd::Help
            | Cmd::Trace(_)
            | Cmd::TraceJson
            | Cmd::Race(_) => Ok(ok()),
            Cmd::ListXattr { path, follow } => {
                list_xattr(path, *follow).map(shell::xattr_cmds::list_line)
            }
            Cmd::GetXattr { path, name, follow } => {
                get_xattr(path, name, *follow).map(|v| shell::xattr_cmds::value_line(&v))
            }
            Cmd::SetXattr {
                path,
                name,
                value,
                flags,
                follow,
            } => set_xattr(path, name, Some(value), *flags, *follow).map(|_| ok()),
            Cmd::RemoveXattr { path, name, follow } => {
                set_xattr(path, name, None, 0, *follow).map(|_| ok())
            }
        };
        r.unwrap_or_else(|e| format!("err {}", errno_name(e)))
    }
}

/// Does `p` (following symlinks) name the root directory? A mount there
/// would stack on the chroot's root, which Linux then hides from paths
/// that start at `/` but not from `..` or symlinks that reach it: an
/// artefact of the sandbox that the differential test does not compare.
pub fn resolves_to_root(p: &[u8]) -> bool {
    let ids = |p: &[u8]| rfs::stat(p).ok().map(|st| (st.st_dev, st.st_ino));
    let here = ids(p);
    here.is_some() && here == ids(b"/")
}

fn ok() -> String {
    "ok".to_string()
}

/// Our option words are not Linux tmpfs options: check them as vfsh's
/// tmpfs should (`enoent=` one of the designs) and do nothing else.
fn check_opts(opts: &str) -> LResult<()> {
    for o in opts.split(',').filter(|o| !o.is_empty()) {
        match o.split_once('=') {
            Some(("enoent", d)) if shell::designs().any(|n| n == d) => {}
            _ => return Err(libc::EINVAL),
        }
    }
    Ok(())
}

fn remount_root(opts: &str) -> LResult<String> {
    check_opts(opts).map(|_| ok())
}

fn mount_tmpfs(opts: &str, p: &[u8]) -> LResult<String> {
    check_opts(opts)?;
    mount::mount("vfsh", p, "tmpfs", MountFlags::empty(), None::<&CStr>)
        .map(|_| ok())
        .map_err(errno)
}

/// `(l)listxattr`: the size-0 call, then the call with that size.
fn list_xattr(p: &[u8], follow: bool) -> LResult<Vec<Vec<u8>>> {
    let need = if follow {
        rfs::listxattr_query(p)
    } else {
        rfs::llistxattr_query(p)
    }
    .map_err(errno)?;
    let mut buf = vec![0u8; need];
    let n = if follow {
        rfs::listxattr(p, &mut buf[..])
    } else {
        rfs::llistxattr(p, &mut buf[..])
    }
    .map_err(errno)?;
    Ok(buf[..n]
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(<[u8]>::to_vec)
        .collect())
}

/// `(l)getxattr`: the size-0 call, then the call with that size.
fn get_xattr(p: &[u8], name: &[u8], follow: bool) -> LResult<Vec<u8>> {
    let need = if follow {
        rfs::getxattr_query(p, name)
    } else {
        rfs::lgetxattr_query(p, name)
    }
    .map_err(errno)?;
    if need == 0 {
        return Ok(Vec::new());
    }
    let mut buf = vec![0u8; need];
    let got = if follow {
        rfs::getxattr(p, name, &mut buf[..])
    } else {
        rfs::lgetxattr(p, name, &mut buf[..])
    }
    .map_err(errno)?;
    buf.truncate(got);
    Ok(buf)
}

/// `(l)setxattr`, or `(l)removexattr` when `value` is `None`.
fn set_xattr(p: &[u8], name: &[u8], value: Option<&[u8]>, flags: u32, follow: bool) -> LResult<()> {
    // The bits go to the kernel as given: it judges unknown ones (EINVAL).
    let flags = XattrFlags::from_bits_retain(flags);
    match (value, follow) {
        (Some(v), true) => rfs::setxattr(p, name, v, flags),
        (Some(v), false) => rfs::lsetxattr(p, name, v, flags),
        (None, true) => rfs::removexattr(p, name),
        (None, false) => rfs::lremovexattr(p, name),
    }
    .map_err(errno)
}

fn mkdir(p: &[u8]) -> LResult<()> {
    rfs::mkdir(p, Mode::from_raw_mode(0o755)).map_err(errno)
}

/// `open(2)` with O_CLOEXEC; the mode is used only with O_CREAT. The fd
/// closes when the result drops.
fn open(p: &[u8], flags: OFlags) -> LResult<OwnedFd> {
    rfs::open(p, flags | OFlags::CLOEXEC, Mode::from_raw_mode(0o644)).map_err(errno)
}

fn write_file(p: &[u8], data: &[u8]) -> LResult<()> {
    let fd = open(p, OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC)?;
    let mut done = 0;
    while done < data.len() {
        done += rio::write(&fd, &data[done..]).map_err(errno)?;
    }
    Ok(())
}

fn read_file(p: &[u8]) -> LResult<Vec<u8>> {
    let fd = open(p, OFlags::RDONLY)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = rio::read(&fd, &mut buf[..]).map_err(errno)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// One `readlink(2)` into an 8 KiB buffer, as vfsh's targets never exceed it.
fn readlink(p: &[u8]) -> LResult<Vec<u8>> {
    rfs::readlink(p, Vec::with_capacity(8192))
        .map(CString::into_bytes)
        .map_err(errno)
}

fn stat(p: &[u8], follow: bool) -> LResult<String> {
    let st = if follow { rfs::stat(p) } else { rfs::lstat(p) }.map_err(errno)?;
    let kind = match rfs::FileType::from_raw_mode(st.st_mode as _) {
        rfs::FileType::Directory => FileType::Dir,
        rfs::FileType::Symlink => FileType::Symlink,
        rfs::FileType::RegularFile => FileType::File,
        other => return Ok(format!("ok other mode={:o}", other.as_raw_mode())),
    };
    Ok(shell::stat_line(kind, st.st_size as u64))
}

/// The names in directory `p` but `.` and `..`, in the kernel's order. A
/// failure part way through ends the list (as a NULL from readdir(3) does).
fn readdir(p: &[u8]) -> LResult<Vec<Vec<u8>>> {
    let fd = open(p, OFlags::RDONLY | OFlags::DIRECTORY)?;
    let mut dir = Dir::new(fd).map_err(errno)?;
    let mut names = Vec::new();
    while let Some(Ok(e)) = dir.read() {
        let name = e.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    Ok(names)
}

/// Why the Linux side cannot run here (the test then skips with this note).
pub fn unavailable() -> Option<String> {
    if !process::geteuid().is_root() {
        return Some(
            "not running as root: the Linux reference side needs unshare(CLONE_NEWNS), \
             mount(tmpfs) and chroot()"
                .to_string(),
        );
    }
    None
}

/// Sandbox directories in use (paths in the original root), so that a
/// process about to exit early can remove them: [`remove_sandbox_dirs`].
static DIRS: std::sync::Mutex<Vec<CString>> = std::sync::Mutex::new(Vec::new());

/// Remove the (empty, in the original mount namespace) sandbox directories
/// of this process. Call only from a thread that is not in a sandbox, just
/// before the process exits without dropping its sandboxes.
pub fn remove_sandbox_dirs() {
    for d in DIRS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        let _ = rfs::rmdir(d);
    }
}

/// A private tmpfs root for the calling thread.
///
/// Create it on a thread of its own (it changes that thread's root and mount
/// namespace for the thread's lifetime) and drop it on the same thread.
pub struct Sandbox {
    /// The mount point, outside the chroot.
    dir: CString,
    /// An O_PATH fd of the real root, to step out of the chroot between runs.
    real_root: OwnedFd,
    inside: bool,
}

fn os_err(what: &str, e: Errno) -> String {
    format!("{what}: {}", io::Error::from(e))
}

/// `unshare(2)` of this thread's filesystem context and mount namespace.
///
/// rustix 1.1 deprecates `thread::unshare` (its replacement asks the caller
/// for a proof) because of `CLONE_FILES`: a thread that unshares its fd
/// table must not use fds opened by others afterwards. This call never
/// passes `FILES`;
/// `FS` and `NEWNS` change only this thread's root, cwd, umask and mounts,
/// which the sandbox thread alone uses (allowed in multi-threaded processes).
#[allow(deprecated)]
fn unshare_fs_and_mounts() -> Result<(), Errno> {
    thread::unshare(UnshareFlags::FS | UnshareFlags::NEWNS)
}

impl Sandbox {
    /// Unshare the filesystem context and the mount namespace of this thread
    /// and enter a fresh tmpfs root. `Err` says why not (e.g. no privilege).
    pub fn enter() -> Result<Sandbox, String> {
        unshare_fs_and_mounts().map_err(|e| os_err("unshare(CLONE_FS|CLONE_NEWNS)", e))?;
        // Keep our mounts out of the host's namespace (systemd makes / shared).
        mount::mount_change(
            "/",
            MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
        )
        .map_err(|e| os_err("mount(/, MS_REC|MS_PRIVATE)", e))?;
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("vfsh-linux-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let dir = CString::new(dir.into_os_string().into_encoded_bytes())
            .map_err(|_| "temp dir path holds a NUL byte".to_string())?;
        DIRS.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(dir.clone());
        let real_root = rfs::open(
            "/",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| os_err("open /", e))?;
        let mut sb = Sandbox {
            dir,
            real_root,
            inside: false,
        };
        sb.reset()?;
        Ok(sb)
    }

    fn leave(&mut self) -> Result<(), String> {
        if self.inside {
            // chroot(".") from the real root restores this thread's root.
            process::fchdir(&self.real_root).map_err(|e| os_err("fchdir(real root)", e))?;
            process::chroot(".").map_err(|e| os_err("chroot(real root)", e))?;
            self.inside = false;
            // MNT_DETACH also drops everything mounted below.
            let _ = mount::unmount(&self.dir, UnmountFlags::DETACH);
        }
        Ok(())
    }

    /// Throw the current tree away and enter a new empty tmpfs root.
    pub fn reset(&mut self) -> Result<(), String> {
        self.leave()?;
        mount::mount(
            "vfsh",
            &self.dir,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            c"size=64m,mode=0755",
        )
        .map_err(|e| os_err("mount tmpfs", e))?;
        process::chdir(&self.dir).map_err(|e| os_err("chdir sandbox", e))?;
        process::chroot(".").map_err(|e| os_err("chroot sandbox", e))?;
        self.inside = true;
        process::chdir("/").map_err(|e| os_err("chdir /", e))?;
        Ok(())
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.leave();
        let _ = rfs::rmdir(&self.dir);
        // `real_root` closes as the field drops.
        DIRS.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|d| *d != self.dir);
    }
}

/// Run `f` on a new thread inside a fresh [`Sandbox`]; `Err` if the sandbox
/// cannot be set up (the reason), else what `f` returned. A panic in `f` is
/// passed on.
pub fn in_sandbox<T: Send + 'static>(
    f: impl FnOnce(&mut Sandbox) -> T + Send + 'static,
) -> Result<T, String> {
    let h = std::thread::Builder::new()
        .name("vfsh-linux".into())
        .stack_size(16 << 20)
        .spawn(move || {
            let mut sb = Sandbox::enter()?;
            Ok(f(&mut sb))
        })
        .expect("spawn sandbox thread");
    match h.join() {
        Ok(r) => r,
        Err(p) => std::panic::resume_unwind(p),
    }
}

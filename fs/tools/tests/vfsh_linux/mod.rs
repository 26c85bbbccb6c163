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
#![allow(dead_code)]

use std::ffi::{CStr, CString};
use std::io;

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

fn last_errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn cpath(p: &[u8]) -> CString {
    // The parser rejects NUL bytes in paths, so this cannot fail.
    CString::new(p).expect("vfsh parser let a NUL byte through")
}

type LResult<T> = Result<T, i32>;

fn check(r: libc::c_int) -> LResult<libc::c_int> {
    if r < 0 {
        Err(last_errno())
    } else {
        Ok(r)
    }
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
            Cmd::Create(p) => {
                open_close(p, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL).map(|_| ok())
            }
            Cmd::Write(p, text) => write_file(p, text).map(|_| ok()),
            Cmd::Read(p) => read_file(p).map(|d| shell::ok_with(&shell::escape_text(&d))),
            Cmd::Symlink { target, path } => {
                let (t, p) = (cpath(target), cpath(path));
                // SAFETY: two valid NUL-terminated strings.
                check(unsafe { libc::symlink(t.as_ptr(), p.as_ptr()) }).map(|_| ok())
            }
            Cmd::Readlink(p) => readlink(p).map(|t| shell::ok_with(&shell::escape_word(&t))),
            Cmd::Unlink(p) => {
                let c = cpath(p);
                // SAFETY: valid NUL-terminated string.
                check(unsafe { libc::unlink(c.as_ptr()) }).map(|_| ok())
            }
            Cmd::Rmdir(p) => {
                let c = cpath(p);
                // SAFETY: valid NUL-terminated string.
                check(unsafe { libc::rmdir(c.as_ptr()) }).map(|_| ok())
            }
            Cmd::Rename(a, b) => {
                let (a, b) = (cpath(a), cpath(b));
                // SAFETY: two valid NUL-terminated strings.
                check(unsafe { libc::rename(a.as_ptr(), b.as_ptr()) }).map(|_| ok())
            }
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
    let ids = |p: &CStr| {
        // SAFETY: all-zero is a valid `struct stat`.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: valid NUL-terminated string and a live `struct stat`.
        (unsafe { libc::stat(p.as_ptr(), &mut st) } == 0).then_some((st.st_dev, st.st_ino))
    };
    let c = cpath(p);
    let here = ids(&c);
    here.is_some() && here == ids(c"/")
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
    let c = cpath(p);
    // SAFETY: valid NUL-terminated strings; no data argument.
    check(unsafe {
        libc::mount(
            c"vfsh".as_ptr(),
            c.as_ptr(),
            c"tmpfs".as_ptr(),
            0,
            std::ptr::null(),
        )
    })
    .map(|_| ok())
}

/// `(l)listxattr`: the size-0 call, then the call with that size.
fn list_xattr(p: &[u8], follow: bool) -> LResult<Vec<Vec<u8>>> {
    let c = cpath(p);
    let call = |buf: &mut [u8]| {
        let ptr = if buf.is_empty() {
            std::ptr::null_mut()
        } else {
            buf.as_mut_ptr().cast()
        };
        // SAFETY: a valid NUL-terminated path; `ptr` is null with size 0
        // or points to `buf.len()` writable bytes.
        let r = unsafe {
            if follow {
                libc::listxattr(c.as_ptr(), ptr, buf.len())
            } else {
                libc::llistxattr(c.as_ptr(), ptr, buf.len())
            }
        };
        if r < 0 {
            Err(last_errno())
        } else {
            Ok(r as usize)
        }
    };
    let need = call(&mut [])?;
    let mut buf = vec![0u8; need];
    let n = call(&mut buf)?;
    Ok(buf[..n]
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(<[u8]>::to_vec)
        .collect())
}

/// `(l)getxattr`: the size-0 call, then the call with that size.
fn get_xattr(p: &[u8], name: &[u8], follow: bool) -> LResult<Vec<u8>> {
    let (c, n) = (cpath(p), cpath(name));
    let call = |buf: &mut [u8]| {
        let ptr = if buf.is_empty() {
            std::ptr::null_mut()
        } else {
            buf.as_mut_ptr().cast()
        };
        // SAFETY: valid NUL-terminated strings; `ptr` as in `list_xattr`.
        let r = unsafe {
            if follow {
                libc::getxattr(c.as_ptr(), n.as_ptr(), ptr, buf.len())
            } else {
                libc::lgetxattr(c.as_ptr(), n.as_ptr(), ptr, buf.len())
            }
        };
        if r < 0 {
            Err(last_errno())
        } else {
            Ok(r as usize)
        }
    };
    let need = call(&mut [])?;
    if need == 0 {
        return Ok(Vec::new());
    }
    let mut buf = vec![0u8; need];
    let got = call(&mut buf)?;
    buf.truncate(got);
    Ok(buf)
}

/// `(l)setxattr`, or `(l)removexattr` when `value` is `None`.
fn set_xattr(p: &[u8], name: &[u8], value: Option<&[u8]>, flags: u32, follow: bool) -> LResult<()> {
    let (c, n) = (cpath(p), cpath(name));
    // SAFETY: valid NUL-terminated strings; the value pointer and length
    // come from one slice.
    let r = unsafe {
        match (value, follow) {
            (Some(v), true) => libc::setxattr(
                c.as_ptr(),
                n.as_ptr(),
                v.as_ptr().cast(),
                v.len(),
                flags as libc::c_int,
            ),
            (Some(v), false) => libc::lsetxattr(
                c.as_ptr(),
                n.as_ptr(),
                v.as_ptr().cast(),
                v.len(),
                flags as libc::c_int,
            ),
            (None, true) => libc::removexattr(c.as_ptr(), n.as_ptr()),
            (None, false) => libc::lremovexattr(c.as_ptr(), n.as_ptr()),
        }
    };
    check(r).map(|_| ())
}

fn mkdir(p: &[u8]) -> LResult<()> {
    let c = cpath(p);
    // SAFETY: valid NUL-terminated string.
    check(unsafe { libc::mkdir(c.as_ptr(), 0o755) }).map(|_| ())
}

fn open(p: &[u8], flags: libc::c_int) -> LResult<libc::c_int> {
    let c = cpath(p);
    // SAFETY: valid NUL-terminated string; mode is used only with O_CREAT.
    check(unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o644 as libc::c_uint) })
}

fn close(fd: libc::c_int) {
    // SAFETY: `fd` was returned by open and is closed once.
    unsafe { libc::close(fd) };
}

fn open_close(p: &[u8], flags: libc::c_int) -> LResult<()> {
    close(open(p, flags)?);
    Ok(())
}

fn write_file(p: &[u8], data: &[u8]) -> LResult<()> {
    let fd = open(p, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC)?;
    let mut done = 0;
    while done < data.len() {
        // SAFETY: the pointer and length describe the live slice `data[done..]`.
        let n = unsafe { libc::write(fd, data[done..].as_ptr().cast(), data.len() - done) };
        if n < 0 {
            let e = last_errno();
            close(fd);
            return Err(e);
        }
        done += n as usize;
    }
    close(fd);
    Ok(())
}

fn read_file(p: &[u8]) -> LResult<Vec<u8>> {
    let fd = open(p, libc::O_RDONLY)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: `buf` is a live, writable buffer of the given length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = last_errno();
            close(fd);
            return Err(e);
        }
        if n == 0 {
            close(fd);
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n as usize]);
    }
}

fn readlink(p: &[u8]) -> LResult<Vec<u8>> {
    let c = cpath(p);
    let mut buf = vec![0u8; 8192];
    // SAFETY: valid NUL-terminated string and a live buffer of the given length.
    let n = unsafe { libc::readlink(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(last_errno());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

fn stat(p: &[u8], follow: bool) -> LResult<String> {
    let c = cpath(p);
    // SAFETY: all-zero is a valid `struct stat`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid NUL-terminated string and a live `struct stat`.
    let r = unsafe {
        if follow {
            libc::stat(c.as_ptr(), &mut st)
        } else {
            libc::lstat(c.as_ptr(), &mut st)
        }
    };
    check(r)?;
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Dir,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFREG => FileType::File,
        other => return Ok(format!("ok other mode={other:o}")),
    };
    Ok(shell::stat_line(kind, st.st_size as u64))
}

fn readdir(p: &[u8]) -> LResult<Vec<Vec<u8>>> {
    let c = cpath(p);
    // SAFETY: valid NUL-terminated string.
    let d = unsafe { libc::opendir(c.as_ptr()) };
    if d.is_null() {
        return Err(last_errno());
    }
    let mut names = Vec::new();
    loop {
        // SAFETY: `d` is an open directory stream.
        let e = unsafe { libc::readdir(d) };
        if e.is_null() {
            break;
        }
        // SAFETY: `d_name` of a returned entry is NUL-terminated.
        let name = unsafe { CStr::from_ptr((*e).d_name.as_ptr()) }.to_bytes();
        if name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    // SAFETY: `d` is open and closed once.
    unsafe { libc::closedir(d) };
    Ok(names)
}

/// Why the Linux side cannot run here (the test then skips with this note).
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
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
        // SAFETY: valid NUL-terminated string.
        unsafe { libc::rmdir(d.as_ptr()) };
    }
}

/// A private tmpfs root for the calling thread.
///
/// Create it on a thread of its own (it changes that thread's root and mount
/// namespace for the thread's lifetime) and drop it on the same thread.
pub struct Sandbox {
    /// The mount point, outside the chroot.
    dir: CString,
    /// An fd of the real root, to step out of the chroot between runs.
    real_root: libc::c_int,
    inside: bool,
}

fn os_err(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

impl Sandbox {
    /// Unshare the filesystem context and the mount namespace of this thread
    /// and enter a fresh tmpfs root. `Err` says why not (e.g. no privilege).
    pub fn enter() -> Result<Sandbox, String> {
        // SAFETY: unshare of these flags only affects this thread's fs context
        // and mount namespace (allowed in multi-threaded processes).
        if unsafe { libc::unshare(libc::CLONE_FS | libc::CLONE_NEWNS) } != 0 {
            return Err(os_err("unshare(CLONE_FS|CLONE_NEWNS)"));
        }
        // Keep our mounts out of the host's namespace (systemd makes / shared).
        // SAFETY: valid NUL-terminated strings.
        let r = unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
        };
        if r != 0 {
            return Err(os_err("mount(/, MS_REC|MS_PRIVATE)"));
        }
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("vfsh-linux-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let dir = CString::new(dir.into_os_string().into_encoded_bytes()).expect("temp dir path");
        DIRS.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(dir.clone());
        // SAFETY: valid NUL-terminated string.
        let real_root = unsafe {
            libc::open(
                c"/".as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if real_root < 0 {
            return Err(os_err("open /"));
        }
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
            // SAFETY: `real_root` is an open directory fd; chroot(".") of it
            // restores the original root of this thread.
            unsafe {
                if libc::fchdir(self.real_root) != 0 {
                    return Err(os_err("fchdir(real root)"));
                }
                if libc::chroot(c".".as_ptr()) != 0 {
                    return Err(os_err("chroot(real root)"));
                }
            }
            self.inside = false;
            // SAFETY: valid NUL-terminated string; MNT_DETACH also drops
            // everything mounted below.
            unsafe { libc::umount2(self.dir.as_ptr(), libc::MNT_DETACH) };
        }
        Ok(())
    }

    /// Throw the current tree away and enter a new empty tmpfs root.
    pub fn reset(&mut self) -> Result<(), String> {
        self.leave()?;
        // SAFETY: valid NUL-terminated strings.
        unsafe {
            if libc::mount(
                c"vfsh".as_ptr(),
                self.dir.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                c"size=64m,mode=0755".as_ptr().cast(),
            ) != 0
            {
                return Err(os_err("mount tmpfs"));
            }
            if libc::chdir(self.dir.as_ptr()) != 0 {
                return Err(os_err("chdir sandbox"));
            }
            if libc::chroot(c".".as_ptr()) != 0 {
                return Err(os_err("chroot sandbox"));
            }
            self.inside = true;
            if libc::chdir(c"/".as_ptr()) != 0 {
                return Err(os_err("chdir /"));
            }
        }
        Ok(())
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.leave();
        // SAFETY: valid NUL-terminated string / open fd closed once.
        unsafe {
            libc::rmdir(self.dir.as_ptr());
            libc::close(self.real_root);
        }
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

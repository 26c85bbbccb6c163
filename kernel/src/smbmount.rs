//! `smb=//A.B.C.D/SHARE smbopts=...`: bring the network up, mount the share
//! at /mnt with the fs crate's `cifs` filesystem over `crate::net`, and run
//! `lsla` — the calls of coreutils 9.7's `ls -la /mnt` (lstat and
//! llistxattr of /mnt, readdir, lstat and llistxattr of `.`, `..` and every
//! entry: [`bench::coreutils::ls_la`]) — once cold and once warm (inside the
//! attribute-cache window). Prints
//! every entry of the cold listing (`ls: MODE UID GID SIZE NAME`), the
//! client's `/proc/fs/cifs/Stats` lines, and one summary line:
//!
//! ```text
//! lsla design=D entries=N cold_s=T cold_frames=N warm_s=T warm_frames=N
//! ```
//!
//! (`frames`: request frames the client sent during that listing, a
//! compound counting once). With `smbread=PATH` the file is then read
//! through the mount (the VFS, cifs READs, smoltcp) and one line printed:
//!
//! ```text
//! smbread path=PATH size=N sha256=HEX secs=T
//! ```
//!
//! Last comes `smb: frames_total=N` (every frame since the connection
//! began, mount included: what a relay on the link counts).
//! Any failure prints `smb: ...` with the reason and exits with
//! `ExitCode::RunFailed`.
//!
//! Touches: the network stack, the heap, the console; runs on the boot CPU.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use fs::fstype::cifs::{self, CifsFs};
use fs::vfs::Vfs;
use kernel::smbargs::SmbSource;
use smb::wire::cmd;

use crate::console::kprintln;
use crate::exit::{exit, ExitCode};
use crate::net::smb::{KernelClock, SmbConnector};

/// TCP port of SMB direct (QEMU's `guestfwd` listens there).
const SMB_PORT: u16 = 445;
/// Connect timeout per attempt.
const CONNECT_TIMEOUT_MS: u64 = 10_000;
/// Where the share is mounted.
const MOUNT_POINT: &[u8] = b"/mnt";

/// One listing's figures.
struct Listing {
    entries: Vec<(String, fs::vfs::Stat)>,
    secs: f64,
    frames: u64,
    query_info: u64,
}

/// Mount, list cold and warm, report, exit.
pub fn run(source: &SmbSource, opts: &str, read: Option<&str>) -> ! {
    match mount_and_list(source, opts, read) {
        Ok(()) => exit(ExitCode::Success),
        Err(e) => {
            kprintln!("smb: {e}");
            exit(ExitCode::RunFailed)
        }
    }
}

fn mount_and_list(source: &SmbSource, opts: &str, read: Option<&str>) -> Result<(), String> {
    crate::net::init().map_err(|e| format!("network: {e}"))?;
    let vfs = Vfs::new_tmpfs("").map_err(|e| format!("root tmpfs: {e:?}"))?;
    vfs.mkdir(MOUNT_POINT, 0o755)
        .map_err(|e| format!("mkdir /mnt: {e:?}"))?;
    let unc = format!("{source}");
    let t0 = crate::time::now_ns();
    let sb = cifs::mount(
        &vfs,
        &unc,
        MOUNT_POINT,
        opts,
        alloc::boxed::Box::new(SmbConnector {
            addr: source.addr,
            port: SMB_PORT,
            timeout_ms: CONNECT_TIMEOUT_MS,
        }),
        alloc::boxed::Box::new(KernelClock),
    )
    .map_err(|e| format!("mount {unc} on /mnt: {e}"))?;
    let fs = sb
        .ops_as::<CifsFs>()
        .ok_or_else(|| String::from("mounted superblock is not cifs"))?;
    let design = fs.opts.effective_eacache().name();
    for note in &fs.opts.notes {
        kprintln!("smb: {note}");
    }
    kprintln!(
        "smb: mounted {unc} on /mnt in {:.3} s (eacache={design})",
        secs_since(t0)
    );
    let cold = listing(&vfs, fs)?;
    let warm = listing(&vfs, fs)?;
    for (name, st) in &cold.entries {
        kprintln!(
            "ls: {:?} {:o} {} {} {} {name}",
            st.kind,
            st.mode,
            st.uid,
            st.gid,
            st.size
        );
    }
    for line in fs.render_stats().lines() {
        kprintln!("{line}");
    }
    // The smb3 trace ring, so the seed's `grep -oP '(?<=status=)\S+'`
    // analysis runs on the guest's console log.
    kprintln!("smb3 trace begin");
    for line in fs.dump_trace().lines() {
        kprintln!("{line}");
    }
    kprintln!("smb3 trace end");
    kprintln!(
        "lsla: cold {:.3} s, {} frames, {} QUERY_INFO; warm {:.3} s, {} frames, {} QUERY_INFO",
        cold.secs,
        cold.frames,
        cold.query_info,
        warm.secs,
        warm.frames,
        warm.query_info
    );
    kprintln!(
        "lsla design={design} entries={} cold_s={:.3} cold_frames={} warm_s={:.3} warm_frames={}",
        cold.entries.len(),
        cold.secs,
        cold.frames,
        warm.secs,
        warm.frames
    );
    if let Some(p) = read {
        read_one(&vfs, p)?;
    }
    kprintln!("smb: frames_total={}", fs.with_stats(|s| s.frames));
    if let Some(c) = crate::net::counters() {
        log::info!(
            "net: {} frames in, {} out, {} rx errors, {} tx errors",
            c.rx_frames,
            c.tx_frames,
            c.rx_errors,
            c.tx_errors
        );
    }
    if warm.entries.len() != cold.entries.len() {
        return Err(format!(
            "warm listing saw {} entries, cold {}",
            warm.entries.len(),
            cold.entries.len()
        ));
    }
    Ok(())
}

/// `smbread=`: read /mnt/PATH to its end, print size and SHA-256. The file
/// streams through one read window ([`fs::vfs::READ_WINDOW`]) into the
/// hash: however long it is, the guest holds no more than that.
fn read_one(vfs: &Vfs, rel: &str) -> Result<(), String> {
    use sha2::Digest;
    let path = format!("/mnt/{}", rel.trim_start_matches('/'));
    let t0 = crate::time::now_ns();
    let mut h = sha2::Sha256::new();
    let size = vfs
        .read_chunks(path.as_bytes(), &mut |c| {
            h.update(c);
            Ok(())
        })
        .map_err(|e| format!("smbread {path}: {e:?}"))?;
    let secs = secs_since(t0);
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    kprintln!("smbread path={rel} size={size} sha256={hex} secs={secs:.3}");
    Ok(())
}

fn secs_since(t0: u64) -> f64 {
    crate::time::now_ns().saturating_sub(t0) as f64 / 1e9
}

/// coreutils 9.7's `ls -la /mnt`; counts the client's frames.
fn listing(vfs: &Vfs, fs: &CifsFs) -> Result<Listing, String> {
    let counts = || fs.with_stats(|s| (s.frames, s.get(cmd::QUERY_INFO).total));
    let (f0, q0) = counts();
    let recv0 = crate::net::smb::RECV_NS.load(core::sync::atomic::Ordering::Relaxed);
    let t0 = crate::time::now_ns();
    let l = bench::coreutils::ls_la(vfs, MOUNT_POINT).map_err(|e| format!("ls -la /mnt: {e:?}"))?;
    let secs = secs_since(t0);
    let recv1 = crate::net::smb::RECV_NS.load(core::sync::atomic::Ordering::Relaxed);
    let (f1, q1) = counts();
    let with_eas = l
        .entries
        .iter()
        .filter(|e| e.xattrs.as_ref().is_ok_and(|x| !x.is_empty()))
        .count();
    log::info!(
        "lsla: {} entries ({with_eas} with EAs) in {secs:.3} s, {} frames, {:.3} s waiting for replies",
        l.entries.len(),
        f1.saturating_sub(f0),
        recv1.saturating_sub(recv0) as f64 / 1e9
    );
    let entries = l
        .entries
        .into_iter()
        .map(|e| (String::from_utf8_lossy(&e.name).into_owned(), e.stat))
        .collect();
    Ok(Listing {
        entries,
        secs,
        frames: f1.saturating_sub(f0),
        query_info: q1.saturating_sub(q0),
    })
}

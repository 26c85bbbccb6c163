//! The reference guest's initramfs: busybox, the static helpers (statneg,
//! lrtime, xattr), GNU `ls` (Debian 13's coreutils 9.7 with its own loader
//! and libraries, and the host's with the libraries `ldd` names), the
//! modules in load order and `/init` (`qemu/linuxref/init.sh`), staged in
//! `DIR/initramfs-root/` and packed with `cpio` and `gzip`. Touches only the
//! directory it is given.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::tools::{pack_initramfs, run_tool};
use super::{failed, mkdir, SkipReason};

/// Debian 13 packages holding coreutils 9.7's `ls` and what it links.
const TRIXIE_LS_PACKAGES: &[&str] = &[
    "coreutils",
    "libc6",
    "libselinux1",
    "libcap2",
    "libpcre2-8-0",
];
/// The libraries trixie's `ls` needs (its loader comes beside them).
const TRIXIE_LS_LIBS: &[&str] = &[
    "libc.so.6",
    "libselinux.so.1",
    "libcap.so.2",
    "libpcre2-8.so.0",
];

/// The helper programs copied into the initramfs.
pub(super) struct Extra<'a> {
    pub(super) statneg: &'a Path,
    pub(super) lrtime: &'a Path,
    pub(super) xattr: &'a Path,
    /// The unpacked trixie packages of [`TRIXIE_LS_PACKAGES`].
    pub(super) trixie_ls: &'a Path,
}

/// Unpacks Debian 13's coreutils and the libraries its `ls` links into
/// `dir/trixie-ls` (fetched through the private trixie configuration):
/// the seed's RHEL 10 has coreutils 9.5, whose `ls -l` asks every entry
/// for its xattr names as 9.7 does, where the host's 9.1 does not.
pub(super) fn unpack_trixie_ls(build_dir: &Path, dir: &Path) -> Result<PathBuf, SkipReason> {
    let root = dir.join("trixie-ls");
    let _ = fs::remove_dir_all(&root);
    for p in TRIXIE_LS_PACKAGES {
        let deb = super::trixie_deb(build_dir, p)?;
        run_tool(
            &format!("dpkg -x {p}"),
            Command::new("dpkg").arg("-x").arg(&deb).arg(&root),
        )?;
    }
    Ok(root)
}

/// The guest's /init (`qemu/linuxref/init.sh`, beside the C programs it
/// runs), driven by `lr.*` words of the kernel command line:
/// - `lr.fs=tmpfs,ext4 lr.threads=N lr.warmup=S lr.secs=S`: the timed
///   statneg on each filesystem (no probe is registered while it runs);
/// - `lr.count=ITERS`: then, per filesystem, the counting run: kprobe events
///   on the dcache, spinlock, rwsem and slow-lookup functions with a hist
///   trigger keyed by task, statneg `--count` with 0 and with ITERS stats
///   per thread (the difference leaves out start-up and exit), printed as
///   `per-op: allocs=A locks=L rwsem=R fallbacks=F` right after
///   will-it-scale's lines, then `linuxref-count` with every probe's hits;
/// - `lr.stacks=1`: and one more counting run with each lock probe's hits
///   keyed by its caller (`linuxref-callers probe=P`, then the hist lines);
/// - `lr.unc=//10.0.2.100/SHARE lr.cifs=NAME:OPTIONS …`: per variant, mount
///   the share through the relay (10.0.2.100:445), then `ls -la` cold and
///   warm, each between two marker requests to 10.0.2.100:4450 (the host
///   snapshots the relay's counts there), printing its wall time,
///   /proc/fs/cifs/Stats and the seed's smb3 tracepoint analysis; the `ls`
///   is Debian 13's coreutils 9.7 unless `lr.ls=NAME:9.1` names the host's
///   for a variant, and every `linuxref-lsla` line ends with `ls=VERSION`;
/// - `lr.cifsko=PATH`: load that cifs.ko (a second initramfs archive)
///   instead of the packaged one, and print what the kernel logged;
/// - `lr.eashow=ENTRY`: after each listing, ENTRY's xattrs (`xattr list`);
/// - `lr.eacheck=NAME:ENTRY:WAIT`: after variant NAME's listings, an EA set
///   on ENTRY through a second (`nosharesock`) mount, and ENTRY's xattrs seen
///   by the first mount at once and WAIT seconds later;
/// - `lr.crash=timed|count`: a test hook, never in a measurement (the host
///   sets it only under `LINUXREF_TEST_CRASH`, see `guest.rs`): the kernel
///   panics on purpose in the last filesystem's run, before its timed
///   statneg or in its first counting run with the probes and triggers
///   armed.
///
/// Then it powers off.
pub(super) const INIT_SCRIPT: &str = include_str!("../../linuxref/init.sh");

/// `/cifs-mount.sh`, which `init.sh` sources: `cifs_mount`, the cifs mount
/// that drops the options the kernel does not know (the fstests guest
/// carries the same file, see `linux/fstests.sh`).
pub(super) const CIFS_MOUNT_SCRIPT: &str = include_str!("../../linuxref/cifs-mount.sh");

pub(super) fn build_initramfs(
    dir: &Path,
    busybox: &Path,
    extra: &Extra<'_>,
    modules: &[PathBuf],
    out: &Path,
) -> Result<(), SkipReason> {
    let root = dir.join("initramfs-root");
    let _ = fs::remove_dir_all(&root);
    for d in ["bin", "modules"] {
        mkdir(&root.join(d))?;
    }
    let copy = |from: &Path, to: PathBuf| {
        fs::copy(from, &to).map_err(|e| failed(&format!("copying {}", from.display()), e))
    };
    copy(busybox, root.join("bin/busybox"))?;
    copy(extra.statneg, root.join("statneg"))?;
    copy(extra.lrtime, root.join("lrtime"))?;
    copy(extra.xattr, root.join("xattr"))?;
    // GNU ls, as the seed ran it (busybox ls stats but reads no xattrs):
    // Debian 13's 9.7 under /trixie (the default), and the host's as
    // /usr/bin/gnu-ls (best effort: without it that variant says so).
    add_trixie_ls(&root, extra.trixie_ls)?;
    let _ = add_gnu_ls(&root);
    let mut order = String::new();
    for m in modules {
        let name = m
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        copy(m, root.join("modules").join(&name))?;
        order.push_str(&name);
        order.push('\n');
    }
    let w = |p: PathBuf, s: &str| fs::write(&p, s).map_err(|e| failed("writing the initramfs", e));
    w(root.join("modules/order"), &order)?;
    w(root.join("init"), INIT_SCRIPT)?;
    w(root.join("cifs-mount.sh"), CIFS_MOUNT_SCRIPT)?;
    let chmod = |p: PathBuf| {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755))
            .map_err(|e| failed("chmod in the initramfs", e))
    };
    chmod(root.join("init"))?;
    chmod(root.join("bin/busybox"))?;
    chmod(root.join("statneg"))?;
    chmod(root.join("lrtime"))?;
    chmod(root.join("xattr"))?;
    pack_initramfs(&root, out)
}

/// Copies trixie's `ls`, its loader and [`TRIXIE_LS_LIBS`] out of the
/// unpacked packages into `root/trixie/` (run as
/// `/trixie/ld-linux-x86-64.so.2 --library-path /trixie/lib /trixie/ls`).
fn add_trixie_ls(root: &Path, unpacked: &Path) -> Result<(), SkipReason> {
    let to = root.join("trixie");
    mkdir(&to.join("lib"))?;
    let libdir = unpacked.join("usr/lib/x86_64-linux-gnu");
    let mut files = vec![
        (unpacked.join("usr/bin/ls"), to.join("ls")),
        (
            libdir.join("ld-linux-x86-64.so.2"),
            to.join("ld-linux-x86-64.so.2"),
        ),
    ];
    for lib in TRIXIE_LS_LIBS {
        files.push((libdir.join(lib), to.join("lib").join(lib)));
    }
    for (from, to) in files {
        // fs::copy follows the packages' symlinks (libcap.so.2 -> .2.75).
        fs::copy(&from, &to).map_err(|e| failed(&format!("copying {}", from.display()), e))?;
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&to, fs::Permissions::from_mode(0o755))
            .map_err(|e| failed("chmod in the initramfs", e))?;
    }
    Ok(())
}

/// Copies the host's GNU `ls` to `root/usr/bin/gnu-ls` with the shared
/// libraries `ldd` names, at the same paths.
fn add_gnu_ls(root: &Path) -> Result<(), SkipReason> {
    let ls = ["/usr/bin/ls", "/bin/ls"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .ok_or_else(|| SkipReason::MissingTool {
            tool: "ls".into(),
            package: "coreutils".into(),
        })?;
    let ldd = run_tool("ldd ls", Command::new("ldd").arg(ls))?;
    let mut files = vec![];
    for l in ldd.lines() {
        let lib = match l.split_once("=>") {
            Some((_, r)) => r.split_whitespace().next(),
            None => l.split_whitespace().next(),
        };
        if let Some(lib) = lib.filter(|p| p.starts_with('/')) {
            files.push(PathBuf::from(lib));
        }
    }
    for f in &files {
        let to = root.join(f.strip_prefix("/").unwrap_or(f));
        mkdir(to.parent().unwrap_or(root))?;
        // Follow symlinks: the initramfs gets the files themselves.
        fs::copy(f, &to).map_err(|e| failed(&format!("copying {}", f.display()), e))?;
    }
    mkdir(&root.join("usr/bin"))?;
    fs::copy(ls, root.join("usr/bin/gnu-ls")).map_err(|e| failed("copying ls", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// init.sh's `solo`, run by a host shell (the guest's busybox when the
    /// host has one) against a made-up sysfs: each CPU's state read back,
    /// a refused write and a CPU count short of the boot's are failures.
    fn solo(sysfs: &Path, nproc: &str, arg: &str) -> (bool, String) {
        let start = INIT_SCRIPT.find("SYSCPU=${SYSCPU").expect("solo's set-up");
        let body = &INIT_SCRIPT[start..];
        let solo = body.find("\nsolo() {").expect("solo's definition");
        let end = solo + body[solo..].find("\n}\n").expect("solo's end") + 3;
        let script = format!("{}solo {arg}", &body[..end]);
        let shell = if Path::new("/usr/bin/busybox").exists() {
            vec!["/usr/bin/busybox", "sh"]
        } else {
            vec!["sh"]
        };
        let out = std::process::Command::new(shell[0])
            .args(&shell[1..])
            .arg("-c")
            .arg(&script)
            .env("SYSCPU", sysfs)
            .env("NPROC", nproc)
            .output()
            .expect("a shell");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `cifs_mount` (cifs-mount.sh), run by the host's shell with a `mount`
    /// and a `dmesg` of its own in PATH:
    /// (the status, stdout, the `-o` of each mount tried).
    fn cifs_mount(fixed: &str, opts: &str, refuse: &str) -> (bool, String, String) {
        let dir = std::env::temp_dir().join(format!(
            "linuxref-cifs-mount-{}-{}",
            std::process::id(),
            refuse.len() + opts.len()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        // The kernel refuses the options named in REFUSE (Linux's words in
        // dmesg) and any mount whose options hold `fail`.
        for (name, body) in [
            (
                "mount",
                include_str!("../../linuxref/testdata/fake-mount.sh"),
            ),
            (
                "dmesg",
                include_str!("../../linuxref/testdata/fake-dmesg.sh"),
            ),
        ] {
            let p = dir.join(name);
            fs::write(&p, body).unwrap();
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        }
        // The host's sh, not busybox's: busybox runs its own `mount`
        // applet before anything in PATH.
        let script = format!(
            "{CIFS_MOUNT_SCRIPT}\ncifs_mount //h/s /mnt \"$FIXED\" \"$OPTS\" \"x-dropped v=a\"; st=$?; echo \"opts=$cifs_opts\"; exit $st"
        );
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    dir.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("LOG", &dir)
            .env("REFUSE", refuse)
            .env("FIXED", fixed)
            .env("OPTS", opts)
            .output()
            .expect("a shell");
        let tried = fs::read_to_string(dir.join("tried")).unwrap_or_default();
        fs::remove_dir_all(&dir).unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            tried,
        )
    }

    /// Each option the kernel does not know is dropped (value and all),
    /// said, and the mount retried; the fixed part is never dropped.
    #[test]
    fn cifs_mount_drops_the_unknown_options_and_retries() {
        let (ok, said, tried) =
            cifs_mount("user=u", "vers=3.1.1,bogus,newopt=2,soft", "bogus newopt");
        assert!(ok, "{said}");
        assert_eq!(
            said,
            "x-dropped v=a option=bogus\nx-dropped v=a option=newopt\nopts=vers=3.1.1,soft\n"
        );
        assert_eq!(
            tried,
            "user=u,vers=3.1.1,bogus,newopt=2,soft\nuser=u,vers=3.1.1,newopt=2,soft\nuser=u,vers=3.1.1,soft\n"
        );
        // No fixed part: no leading comma.
        let (ok, said, tried) = cifs_mount("", "bogus,soft", "bogus");
        assert!(ok);
        assert_eq!(said, "x-dropped v=a option=bogus\nopts=soft\n");
        assert_eq!(tried, "bogus,soft\nsoft\n");
    }

    /// A mount that fails for another reason, or on an unknown option
    /// that is not among OPTS (the fixed part's), is not retried.
    #[test]
    fn cifs_mount_fails_at_once_on_other_errors() {
        let (ok, said, tried) = cifs_mount("user=u", "soft,fail", "");
        assert!(!ok);
        assert_eq!(
            (said.as_str(), tried.as_str()),
            ("opts=soft,fail\n", "user=u,soft,fail\n")
        );
        let (ok, said, tried) = cifs_mount("user=u", "soft", "user");
        assert!(!ok);
        assert_eq!(
            (said.as_str(), tried.as_str()),
            ("opts=soft\n", "user=u,soft\n")
        );
    }

    /// init.sh's `present_cpus`: the guest boots with one CPU online, so
    /// the count it checks `solo off` against is the CPUs QEMU gave it.
    #[test]
    fn the_cpu_count_is_the_present_cpus_not_the_online_ones() {
        let start = INIT_SCRIPT.find("present_cpus() {").expect("present_cpus");
        let body = &INIT_SCRIPT[start..];
        let end = body.find("\n}\n").expect("its end") + 3;
        let dir = std::env::temp_dir().join(format!("linuxref-present-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for (present, want) in [
            ("0-1\n", "2"),
            ("0\n", "1"),
            ("0-15\n", "16"),
            // A hole is not a CPU: `solo off` brings up cpu2 and cpu3 only.
            ("0,2-3\n", "3"),
            ("0-1,4\n", "3"),
            ("", "1"),
        ] {
            fs::write(dir.join("present"), present).unwrap();
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{}present_cpus", &body[..end]))
                .env("SYSCPU", &dir)
                .output()
                .expect("a shell");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                want,
                "{present}"
            );
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn solo_reads_back_every_cpu_and_the_cpu_count() {
        let dir = std::env::temp_dir().join(format!("linuxref-solo-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for c in ["cpu0", "cpu1", "cpu2"] {
            fs::create_dir_all(dir.join(c)).unwrap();
        }
        for c in ["cpu1", "cpu2"] {
            fs::write(dir.join(c).join("online"), "1\n").unwrap();
        }
        let host = String::from_utf8(std::process::Command::new("nproc").output().unwrap().stdout)
            .unwrap();
        let host = host.trim();
        let online = |c: &str| fs::read_to_string(dir.join(c).join("online")).unwrap();
        assert_eq!(solo(&dir, host, "on"), (true, String::new()));
        assert_eq!(
            (online("cpu1"), online("cpu2")),
            ("0\n".into(), "0\n".into())
        );
        assert_eq!(solo(&dir, host, "off"), (true, String::new()));
        assert_eq!(online("cpu2"), "1\n");
        // Fewer CPUs than the guest booted with after `solo off`.
        let (ok, said) = solo(&dir, "999", "off");
        assert!(
            !ok && said.contains("linuxref-solo-failed off: nproc="),
            "{said}"
        );
        // A CPU whose state cannot be changed (the kernel refused the
        // write): both ways.
        fs::remove_file(dir.join("cpu2/online")).unwrap();
        fs::create_dir(dir.join("cpu2/online")).unwrap();
        for arg in ["on", "off"] {
            let (ok, said) = solo(&dir, host, arg);
            assert!(!ok, "{arg}: {said}");
            assert!(
                said.contains(&format!("linuxref-solo-failed {arg}: "))
                    && said.contains("cpu2 online=?"),
                "{said}"
            );
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}

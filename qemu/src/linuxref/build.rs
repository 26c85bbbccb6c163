//! Building the reference guest: the Debian kernel and busybox packages
//! (`apt-cache`/`apt-get download`; for 6.12 through a private apt
//! configuration under `BUILD_DIR/linuxref/apt-trixie/` — its own sources
//! list, lists and cache directories — so the machine's apt configuration is
//! never changed), `dpkg -x`, the static statneg, lrtime and xattr
//! (`gcc -static`), GNU `ls`: Debian 13's coreutils 9.7 with its own loader
//! and libraries (trixie packages) and the host's with its libraries (`ldd`),
//! the initramfs (`cpio`, `gzip`, `xz` for the 6.12 modules) and the ext4
//! image (`mkfs.ext4`). Touches only `BUILD_DIR/linuxref/`, where everything
//! it made is cached behind a stamp.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::modules::{decompressed_modules, find_file, module_load_order};
use super::{failed, mkdir, Paths, Release, SkipReason, BUSYBOX_PACKAGE, KERNEL_METAPACKAGE};

/// The suites of the private apt configuration (Debian 13 and its backports).
pub const PRIVATE_SUITES: &[&str] = &["trixie", "trixie-backports"];

/// Modules the guest loads (with their dependencies): the virtio disk and
/// network, the cifs client and the NLS table `iocharset=utf8` needs.
/// Built-in ones (`modules.builtin`) are skipped. `gcm(aes)`, which cifs
/// allocates at session setup, looks its `ghash` up by name at run time
/// (no symbol dependency), so ghash_generic is named here (where the kernel
/// has it: see `OPTIONAL_MODULES`).
const GUEST_MODULES: &[&str] = &[
    "virtio_pci",
    "virtio_blk",
    "virtio_net",
    "ghash_generic",
    "cifs",
    "nls_utf8",
];
/// Size of the ext4 image.
const EXT4_IMAGE_MIB: u32 = 64;
/// Bumped whenever the layout of the cached build changes.
const STAMP_VERSION: &str = "linuxref-build 3";
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
/// The Debian archive used when the machine's sources name none.
const DEFAULT_ARCHIVE: &str = "http://deb.debian.org/debian";

/// The C source of statneg.
pub fn statneg_source() -> PathBuf {
    super::guest_file("statneg.c")
}

/// The C source of lrtime (runs a command, prints its wall time).
pub fn lrtime_source() -> PathBuf {
    super::guest_file("lrtime.c")
}

/// The C source of xattr (lists and sets extended attributes).
pub fn xattr_source() -> PathBuf {
    super::guest_file("xattr.c")
}

/// The workspace's default build directory (`build/`).
pub fn default_build_dir() -> PathBuf {
    crate::runner::workspace_root().join("build")
}

/// Builds (or finds cached) the default reference ([`Release::default`], 6.12).
pub fn ensure_built(build_dir: &Path) -> Result<Paths, SkipReason> {
    ensure_release(build_dir, Release::default())
}

/// Builds (or finds cached in `build_dir/linuxref/RELEASE/`) the kernel,
/// initramfs, ext4 image and host statneg of `release`.
pub fn ensure_release(build_dir: &Path, release: Release) -> Result<Paths, SkipReason> {
    let top = build_dir.join("linuxref");
    let dir = top.join(release.name());
    mkdir(&dir)?;
    // Absolute and free of `..`, since shell steps below `cd` into it.
    let dir = dir
        .canonicalize()
        .map_err(|e| failed(&format!("resolving {}", dir.display()), e))?;
    let top = dir.parent().map(Path::to_path_buf).unwrap_or(dir.clone());
    let paths = Paths {
        kernel: dir.join("vmlinuz"),
        initramfs: dir.join("initramfs.gz"),
        ext4_image: dir.join("ext4.img"),
        statneg_host: dir.join("statneg-host"),
        kernel_package: String::new(),
        package_version: String::new(),
        kernel_release: String::new(),
        release,
        dir: dir.clone(),
    };
    for (tool, package) in [
        ("gcc", "gcc"),
        ("cpio", "cpio"),
        ("gzip", "gzip"),
        ("xz", "xz-utils"),
        ("ldd", "libc-bin"),
        ("mkfs.ext4", "e2fsprogs"),
        ("dpkg", "dpkg"),
        ("apt-get", "apt"),
        ("apt-cache", "apt"),
    ] {
        if !have_tool(tool) {
            return Err(SkipReason::MissingTool {
                tool: tool.into(),
                package: package.into(),
            });
        }
    }

    // statneg and lrtime are cheap: rebuild whenever a source changed.
    let statneg = dir.join("statneg");
    build_c(&statneg_source(), &statneg)?;
    let lrtime = dir.join("lrtime");
    build_c(&lrtime_source(), &lrtime)?;
    let xattr = dir.join("xattr");
    build_c(&xattr_source(), &xattr)?;
    let _ = fs::remove_file(&paths.statneg_host);
    fs::copy(&statneg, &paths.statneg_host).map_err(|e| failed("copying statneg-host", e))?;

    // The rest is cached behind a stamp that names what went into the
    // initramfs (the helpers and the init script).
    let stamp = dir.join("stamp");
    let sum = digest(&[
        &fs::read(&statneg).unwrap_or_default(),
        &fs::read(&lrtime).unwrap_or_default(),
        &fs::read(&xattr).unwrap_or_default(),
        INIT_SCRIPT.as_bytes(),
        GUEST_MODULES.join(",").as_bytes(),
    ]);
    if let Ok(s) = fs::read_to_string(&stamp) {
        let l: Vec<&str> = s.lines().collect();
        if l.len() == 5
            && l[0] == STAMP_VERSION
            && l[1] == sum
            && [&paths.kernel, &paths.initramfs, &paths.ext4_image]
                .iter()
                .all(|p| p.is_file())
        {
            return Ok(Paths {
                kernel_package: l[2].to_string(),
                package_version: l[3].to_string(),
                kernel_release: l[4].to_string(),
                ..paths
            });
        }
    }

    let apt = AptSource::for_release(&top, release)?;
    let kernel_packages = match release.split_packages() {
        Some(split) => split,
        None => vec![current_kernel_package(&apt)?],
    };
    let kernel_package = kernel_packages[0].clone();
    let debs = dir.join("debs");
    mkdir(&debs)?;
    let mut kernel_debs = Vec::new();
    for p in &kernel_packages {
        kernel_debs.push(download(&debs, p, &apt)?);
    }
    // busybox comes from the machine's own lists for every release.
    let busybox_deb = download(&debs, BUSYBOX_PACKAGE, &AptSource::machine())?;
    let package_version = deb_version(&kernel_debs[0]).unwrap_or_default();

    let kroot = dir.join("kernel-root");
    let bbroot = dir.join("busybox-root");
    for root in [&kroot, &bbroot] {
        let _ = fs::remove_dir_all(root);
    }
    for (deb, root) in kernel_debs
        .iter()
        .map(|d| (d, &kroot))
        .chain([(&busybox_deb, &bbroot)])
    {
        run_tool("dpkg -x", Command::new("dpkg").arg("-x").arg(deb).arg(root))?;
    }
    let vmlinuz = kernel_image(&kroot).ok_or_else(|| SkipReason::BuildFailed {
        step: "unpacking the kernel".into(),
        detail: format!(
            "no boot/vmlinuz-* or usr/lib/modules/*/vmlinuz* in {}",
            kernel_packages.join(", ")
        ),
    })?;
    fs::copy(&vmlinuz, &paths.kernel).map_err(|e| failed("copying vmlinuz", e))?;
    let busybox = bbroot.join("bin/busybox");
    if !busybox.is_file() {
        return Err(SkipReason::BuildFailed {
            step: "unpacking busybox-static".into(),
            detail: "no bin/busybox in the package".into(),
        });
    }

    // Debian 13 is merged-/usr: its modules sit under usr/lib/modules.
    let modules_root = ["lib/modules", "usr/lib/modules"]
        .iter()
        .map(|p| kroot.join(p))
        .find(|p| p.is_dir())
        .ok_or_else(|| SkipReason::BuildFailed {
            step: "unpacking the kernel".into(),
            detail: "no lib/modules in the package".into(),
        })?;
    let kernel_release = fs::read_dir(&modules_root)
        .ok()
        .and_then(|rd| rd.filter_map(|e| e.ok()).next())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .unwrap_or_default();
    let modules = module_load_order(&modules_root, GUEST_MODULES)?;
    let modules = decompressed_modules(&dir.join("modules-xz"), &modules)?;
    let trixie_ls = unpack_trixie_ls(build_dir, &dir)?;
    let extra = Extra {
        statneg: &statneg,
        lrtime: &lrtime,
        xattr: &xattr,
        trixie_ls: &trixie_ls,
    };
    build_initramfs(&dir, &busybox, &extra, &modules, &paths.initramfs)?;
    build_ext4_image(&dir, &paths.ext4_image)?;

    fs::write(
        &stamp,
        format!("{STAMP_VERSION}\n{sum}\n{kernel_package}\n{package_version}\n{kernel_release}\n"),
    )
    .map_err(|e| failed("writing the stamp", e))?;
    // The unpacked trees are large and no longer needed.
    let _ = fs::remove_dir_all(&kroot);
    let _ = fs::remove_dir_all(&bbroot);
    let _ = fs::remove_dir_all(dir.join("initramfs-root"));
    let _ = fs::remove_dir_all(dir.join("modules-xz"));
    let _ = fs::remove_dir_all(&trixie_ls);
    Ok(Paths {
        kernel_package,
        package_version,
        kernel_release,
        ..paths
    })
}

/// The kernel image in unpacked kernel packages: `boot/vmlinuz-*` (6.1,
/// 6.12), or from 6.19 on `usr/lib/modules/ABI/vmlinuz` (`vmlinuz.unsigned`
/// in `linux-binary-unsigned-*`).
pub(crate) fn kernel_image(kroot: &Path) -> Option<PathBuf> {
    if let Some(p) = find_file(&kroot.join("boot"), |n| n.starts_with("vmlinuz-")) {
        return Some(p);
    }
    let modules = kroot.join("usr/lib/modules");
    let mut abis: Vec<PathBuf> = fs::read_dir(&modules)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    abis.sort();
    abis.iter()
        .flat_map(|d| [d.join("vmlinuz"), d.join("vmlinuz.unsigned")])
        .find(|p| p.is_file())
}

/// The helper programs copied into the initramfs.
struct Extra<'a> {
    statneg: &'a Path,
    lrtime: &'a Path,
    xattr: &'a Path,
    /// The unpacked trixie packages of [`TRIXIE_LS_PACKAGES`].
    trixie_ls: &'a Path,
}

/// Unpacks Debian 13's coreutils and the libraries its `ls` links into
/// `dir/trixie-ls` (fetched through the private trixie configuration):
/// the seed's RHEL 10 has coreutils 9.5, whose `ls -l` asks every entry
/// for its xattr names as 9.7 does, where the host's 9.1 does not.
fn unpack_trixie_ls(build_dir: &Path, dir: &Path) -> Result<PathBuf, SkipReason> {
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

/// Where apt looks: the machine's own configuration (6.1, busybox), or a
/// private one for another suite of the same archive (6.12: `trixie`).
#[derive(Clone, Debug, Default)]
pub struct AptSource {
    /// `-o KEY=VALUE` options for apt-get and apt-cache.
    pub options: Vec<String>,
}

impl AptSource {
    /// The machine's apt configuration, unchanged.
    pub fn machine() -> Self {
        AptSource::default()
    }

    /// The source `release`'s kernel comes from; for a Debian 13 suite, the
    /// private configuration under `top/apt-trixie/` (see
    /// [`super::source::trixie_apt`]).
    pub fn for_release(top: &Path, release: Release) -> Result<Self, SkipReason> {
        match release.suite() {
            None => Ok(AptSource::machine()),
            Some(_) => AptSource::private(&top.join("apt-trixie"), PRIVATE_SUITES),
        }
    }

    /// A private configuration in `dir` naming `SUITE main` of the archive
    /// the machine's sources use, one line per suite; runs `apt-get update`
    /// against it when a suite's lists are missing.
    pub fn private(dir: &Path, suites: &[&str]) -> Result<Self, SkipReason> {
        let lists = dir.join("lists");
        let cache = dir.join("cache");
        for d in [lists.join("partial"), cache.join("archives/partial")] {
            mkdir(&d)?;
        }
        let sources = dir.join("sources.list");
        let uri = machine_archive_uri();
        fs::write(&sources, private_sources(&uri, suites))
            .map_err(|e| failed("writing the private apt sources", e))?;
        let apt = AptSource {
            options: vec![
                format!("Dir::Etc::SourceList={}", sources.display()),
                "Dir::Etc::SourceParts=/dev/null".into(),
                format!("Dir::State::Lists={}", lists.display()),
                format!("Dir::Cache={}", cache.display()),
            ],
        };
        let names: Vec<String> = fs::read_dir(&lists)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if !suites.iter().all(|s| has_packages_list(&names, s)) {
            let out = apt
                .command("apt-get")
                .args(["-q", "update"])
                .stdin(Stdio::null())
                .output()
                .map_err(|e| failed("apt-get update (private lists)", e))?;
            if !out.status.success() {
                return Err(SkipReason::PackageUnavailable {
                    package: format!("the Debian `{}` package lists ({uri})", suites.join("`, `")),
                    detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                });
            }
        }
        Ok(apt)
    }

    /// `tool` with this source's options.
    fn command(&self, tool: &str) -> Command {
        let mut c = Command::new(tool);
        for o in &self.options {
            c.arg("-o").arg(o);
        }
        c
    }
}

/// The private sources file: one `deb` line per suite.
fn private_sources(uri: &str, suites: &[&str]) -> String {
    suites
        .iter()
        .map(|suite| {
            format!(
                "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {uri} {suite} main\n"
            )
        })
        .collect()
}

/// Whether apt's lists directory (its file `names`) holds `suite`'s
/// Packages index (`…_dists_SUITE_main_binary-amd64_Packages[.lz4]`).
fn has_packages_list(names: &[String], suite: &str) -> bool {
    let key = format!("_dists_{suite}_main_binary-");
    names
        .iter()
        .any(|n| n.contains(&key) && (n.ends_with("_Packages") || n.ends_with("_Packages.lz4")))
}

/// The first archive URI of the machine's Debian sources (deb822 `URIs:`
/// or one-line `deb URI SUITE`), the security archive left out.
fn machine_archive_uri() -> String {
    let mut texts = Vec::new();
    if let Ok(rd) = fs::read_dir("/etc/apt/sources.list.d") {
        let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        files.sort();
        texts.extend(files.iter().filter_map(|p| fs::read_to_string(p).ok()));
    }
    texts.extend(fs::read_to_string("/etc/apt/sources.list").ok());
    texts
        .iter()
        .find_map(|t| pick_archive_uri(t))
        .unwrap_or_else(|| DEFAULT_ARCHIVE.to_string())
}

/// See [`machine_archive_uri`].
fn pick_archive_uri(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let l = l.trim();
        let uri = if let Some(v) = l.strip_prefix("URIs:") {
            v.split_whitespace().next()?
        } else if l.starts_with("deb ") {
            l.split_whitespace().skip(1).find(|w| !w.starts_with('['))?
        } else {
            return None;
        };
        (uri.contains("/debian") && !uri.contains("security")).then(|| uri.to_string())
    })
}

/// The version in a `.deb` file name (`NAME_VERSION_ARCH.deb`).
fn deb_version(deb: &Path) -> Option<String> {
    let name = deb.file_name()?.to_str()?;
    let v = name.split('_').nth(1)?;
    Some(v.replace("%3a", ":"))
}

/// Where `tool` is: on `PATH`, or in the sbin directories a non-root `PATH` lacks.
fn tool_path(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].iter().map(PathBuf::from))
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

fn have_tool(tool: &str) -> bool {
    tool_path(tool).is_some()
}

/// Runs a tool to completion; its stderr becomes the failure detail.
fn run_tool(step: &str, cmd: &mut Command) -> Result<String, SkipReason> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed(step, e))?;
    if !out.status.success() {
        return Err(SkipReason::BuildFailed {
            step: step.into(),
            detail: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A cheap content fingerprint (FNV-1a) of `parts` for the cache stamp.
fn digest(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(b"\0") {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("initramfs {h:016x}")
}

/// Compiles a helper (`gcc -static`) unless `out` is newer than `src`.
fn build_c(src: &Path, out: &Path) -> Result<(), SkipReason> {
    let fresh = match (fs::metadata(src), fs::metadata(out)) {
        (Ok(s), Ok(o)) => match (s.modified(), o.modified()) {
            (Ok(sm), Ok(om)) => om >= sm,
            _ => false,
        },
        (Err(e), _) => return Err(failed(&format!("reading {}", src.display()), e)),
        _ => false,
    };
    if fresh {
        return Ok(());
    }
    run_tool(
        &format!("compiling {} (gcc -static; needs libc6-dev)", src.display()),
        Command::new("gcc")
            .args(["-static", "-O2", "-pthread", "-Wall", "-o"])
            .arg(out)
            .arg(src),
    )
    .map(|_| ())
}

/// The versioned kernel package the metapackage depends on in `apt`'s lists.
fn current_kernel_package(apt: &AptSource) -> Result<String, SkipReason> {
    let out = apt
        .command("apt-cache")
        .args(["depends", KERNEL_METAPACKAGE])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed("apt-cache depends", e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    pick_kernel_package(&text).ok_or_else(|| SkipReason::PackageUnavailable {
        package: KERNEL_METAPACKAGE.into(),
        detail: format!(
            "apt-cache depends found no linux-image-*-cloud-amd64 dependency{}",
            if out.stderr.is_empty() {
                String::new()
            } else {
                format!(": {}", String::from_utf8_lossy(&out.stderr).trim())
            }
        ),
    })
}

/// Picks `linux-image-X-cloud-amd64` out of `apt-cache depends` output.
fn pick_kernel_package(apt_cache_depends: &str) -> Option<String> {
    apt_cache_depends.lines().find_map(|l| {
        let dep = l.trim().strip_prefix("Depends:")?.trim();
        (dep.starts_with("linux-image-")
            && dep.ends_with("-cloud-amd64")
            && dep != KERNEL_METAPACKAGE)
            .then(|| dep.to_string())
    })
}

/// `apt-get download PACKAGE` into `dir` (reusing a file already there).
pub(crate) fn download(dir: &Path, package: &str, apt: &AptSource) -> Result<PathBuf, SkipReason> {
    let prefix = format!("{package}_");
    if let Some(p) = find_file(dir, |n| n.starts_with(&prefix) && n.ends_with(".deb")) {
        return Ok(p);
    }
    let out = apt
        .command("apt-get")
        .args(["download", "-q", package])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed("apt-get download", e))?;
    match find_file(dir, |n| n.starts_with(&prefix) && n.ends_with(".deb")) {
        Some(p) if out.status.success() => Ok(p),
        _ => Err(SkipReason::PackageUnavailable {
            package: package.into(),
            detail: String::from_utf8_lossy(&out.stderr)
                .lines()
                .filter(|l| l.starts_with("E:"))
                .collect::<Vec<_>>()
                .join("; "),
        }),
    }
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
const INIT_SCRIPT: &str = include_str!("../../linuxref/init.sh");

fn build_initramfs(
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
    let tmp = out.with_extension("tmp");
    run_tool(
        "packing the initramfs (cpio | gzip)",
        Command::new("sh")
            .arg("-c")
            .arg("cd \"$1\" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -6 > \"$2\"")
            .arg("sh")
            .arg(&root)
            .arg(&tmp),
    )?;
    fs::rename(&tmp, out).map_err(|e| failed("writing the initramfs", e))
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

fn build_ext4_image(dir: &Path, out: &Path) -> Result<(), SkipReason> {
    // A few entries so the root directory is not trivially empty.
    let content = dir.join("ext4-root");
    let _ = fs::remove_dir_all(&content);
    mkdir(&content.join("dir"))?;
    fs::write(content.join("present"), "linuxref\n").map_err(|e| failed("ext4 content", e))?;
    let tmp = out.with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    run_tool(
        "mkfs.ext4 -d",
        Command::new(tool_path("mkfs.ext4").unwrap_or_else(|| "mkfs.ext4".into()))
            .args(["-q", "-F", "-L", "linuxref", "-d"])
            .arg(&content)
            .arg(&tmp)
            .arg(format!("{EXT4_IMAGE_MIB}M")),
    )?;
    let _ = fs::remove_dir_all(&content);
    fs::rename(&tmp, out).map_err(|e| failed("writing the ext4 image", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linuxref::modules::{modinfo_depends, modinfo_softdeps, module_name};

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

    /// init.sh's `present_cpus`: the guest boots with one CPU online, so
    /// the count it checks `solo off` against is the CPUs QEMU gave it.
    #[test]
    fn the_cpu_count_is_the_present_cpus_not_the_online_ones() {
        let start = INIT_SCRIPT.find("present_cpus() {").expect("present_cpus");
        let body = &INIT_SCRIPT[start..];
        let end = body.find("\n}\n").expect("its end") + 3;
        let dir = std::env::temp_dir().join(format!("linuxref-present-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for (present, want) in [("0-1\n", "2"), ("0\n", "1"), ("0-15\n", "16")] {
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

    #[test]
    fn picks_the_versioned_cloud_kernel() {
        let out = "linux-image-cloud-amd64\n  Depends: linux-image-6.1.0-57-cloud-amd64\n";
        assert_eq!(
            pick_kernel_package(out).as_deref(),
            Some("linux-image-6.1.0-57-cloud-amd64")
        );
        assert_eq!(pick_kernel_package("linux-image-cloud-amd64\n"), None);
    }

    #[test]
    fn reads_modinfo_depends() {
        let ko = b"\x7fELF...\0license=GPL\0depends=virtio_ring,virtio-pci-modern-dev\0intree=Y\0";
        assert_eq!(
            modinfo_depends(ko),
            vec!["virtio_ring", "virtio_pci_modern_dev"]
        );
        assert!(modinfo_depends(b"\0depends=\0").is_empty());
        assert!(modinfo_depends(b"nothing").is_empty());
    }

    #[test]
    fn reads_softdeps_and_the_machines_archive() {
        let ko = b"\0softdep=gcm\0softdep=pre: ecb hmac post: md5\0depends=netfs\0";
        assert_eq!(modinfo_softdeps(ko), ["gcm", "ecb", "hmac", "md5"]);
        let deb822 = "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n\n\
                      URIs: http://mirror.example/debian-security\n";
        assert_eq!(
            pick_archive_uri(deb822).as_deref(),
            Some("http://mirror.example/debian")
        );
        assert_eq!(
            pick_archive_uri("deb [arch=amd64] http://a.example/debian bookworm main\n").as_deref(),
            Some("http://a.example/debian")
        );
        assert_eq!(pick_archive_uri("# nothing\n"), None);
        assert_eq!(
            deb_version(Path::new(
                "/x/linux-image-6.12.117+deb13-cloud-amd64_6.12.117-1_amd64.deb"
            ))
            .as_deref(),
            Some("6.12.117-1")
        );
        assert_eq!(module_name("cifs_md4.ko.xz").as_deref(), Some("cifs_md4"));
        assert_eq!(module_name("virtio-pci.ko").as_deref(), Some("virtio_pci"));
        assert_eq!(module_name("modules.order"), None);
    }

    #[test]
    fn the_private_sources_name_both_suites() {
        let text = private_sources("http://a.example/debian", PRIVATE_SUITES);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://a.example/debian trixie main",
                "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://a.example/debian trixie-backports main",
            ]
        );
        // Lists fetched for trixie alone do not serve trixie-backports.
        let names = vec![
            "a.example_debian_dists_trixie_main_binary-amd64_Packages.lz4".to_string(),
            "a.example_debian_dists_trixie_InRelease".to_string(),
        ];
        assert!(has_packages_list(&names, "trixie"));
        assert!(!has_packages_list(&names, "trixie-backports"));
        let mut both = names.clone();
        both.push("a.example_debian_dists_trixie-backports_main_binary-amd64_Packages".into());
        assert!(has_packages_list(&both, "trixie-backports"));
    }

    #[test]
    fn the_kernel_image_is_found_in_either_layout() {
        let root = std::env::temp_dir().join(format!("linuxref-image-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let abi = root.join("usr/lib/modules/7.3.4+deb13-cloud-amd64");
        fs::create_dir_all(&abi).unwrap();
        assert_eq!(kernel_image(&root), None);
        fs::write(abi.join("vmlinuz.unsigned"), b"x").unwrap();
        assert_eq!(kernel_image(&root), Some(abi.join("vmlinuz.unsigned")));
        fs::create_dir_all(root.join("boot")).unwrap();
        fs::write(root.join("boot/vmlinuz-6.12.117+deb13-cloud-amd64"), b"x").unwrap();
        assert_eq!(
            kernel_image(&root),
            Some(root.join("boot/vmlinuz-6.12.117+deb13-cloud-amd64"))
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn module_order_puts_dependencies_first() {
        let root = std::env::temp_dir().join(format!("linuxref-mod-test-{}", std::process::id()));
        let d = root.join("6.1/kernel/drivers");
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("a.ko"), b"\0depends=b,c\0").unwrap();
        fs::write(d.join("b.ko"), b"\0depends=c\0").unwrap();
        fs::write(d.join("c.ko"), b"\0depends=\0").unwrap();
        fs::write(d.join("loop.ko"), b"\0depends=loop\0").unwrap();
        // Built-in modules are skipped; softdeps load first when they exist.
        fs::write(
            root.join("6.1/modules.builtin"),
            "kernel/drivers/virtio/virtio_pci.ko\n",
        )
        .unwrap();
        fs::write(
            d.join("s.ko"),
            b"\0softdep=pre: c absent\0depends=virtio_pci\0",
        )
        .unwrap();
        let soft: Vec<_> = module_load_order(&root, &["s", "virtio_pci"])
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(soft, ["c.ko", "s.ko"]);
        // An optional module the package lacks is left out; a required one is an error.
        let opt: Vec<_> = module_load_order(&root, &["ghash_generic", "c"]).unwrap();
        assert_eq!(opt.len(), 1);
        assert!(module_load_order(&root, &["ghash_other"]).is_err());
        let order = module_load_order(&root, &["a"]).unwrap();
        let names: Vec<_> = order
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["c.ko", "b.ko", "a.ko"]);
        assert!(module_load_order(&root, &["missing"]).is_err());
        assert!(module_load_order(&root, &["loop"]).is_err());
        fs::remove_dir_all(&root).unwrap();
    }
}

//! Building the reference guest: the Debian kernel and busybox packages
//! (fetched through [`super::apt`]), `dpkg -x`, the static statneg, lrtime
//! and xattr (`gcc -static`), the initramfs ([`super::initramfs`]; `xz` for
//! the 6.12 modules) and the ext4 image (`mkfs.ext4`). Touches only
//! `BUILD_DIR/linuxref/`, where everything it made is cached behind a stamp.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::apt::{current_kernel_package, deb_version, download, AptSource};
use super::initramfs::{build_initramfs, unpack_trixie_ls, Extra, CIFS_MOUNT_SCRIPT, INIT_SCRIPT};
use super::modules::{decompressed_modules, find_file, module_load_order};
use super::tools::{digest, dpkg_x, gcc_static, require_tools, run_tool, tool_path};
use super::{failed, mkdir, Paths, Release, SkipReason, BUSYBOX_PACKAGE};

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
/// initramfs, ext4 image and host statneg of `release`: the release's
/// paths, the tools, the static helpers, then either the cached build the
/// stamp vouches for or the packages fetched, unpacked and assembled into
/// the initramfs and ext4 image, the stamp written last.
pub fn ensure_release(build_dir: &Path, release: Release) -> Result<Paths, SkipReason> {
    let paths = release_paths(build_dir, release)?;
    require_tools(BUILD_TOOLS)?;
    let helpers = build_helpers(&paths)?;
    let stamp = Stamp::of(&paths, &helpers);
    if let Some(cached) = stamp.read(&paths) {
        return Ok(cached);
    }
    let debs = fetch_packages(&paths)?;
    let trees = unpack_packages(&paths, &debs)?;
    let (kernel_release, modules) = guest_modules(&paths.dir, &trees.kernel)?;
    let trixie_ls = unpack_trixie_ls(build_dir, &paths.dir)?;
    let extra = Extra {
        statneg: &helpers.statneg,
        lrtime: &helpers.lrtime,
        xattr: &helpers.xattr,
        trixie_ls: &trixie_ls,
    };
    build_initramfs(
        &paths.dir,
        &trees.busybox,
        &extra,
        &modules,
        &paths.initramfs,
    )?;
    build_ext4_image(&paths.dir, &paths.ext4_image)?;
    let paths = Paths {
        kernel_package: debs.kernel_packages[0].clone(),
        package_version: deb_version(&debs.kernel[0]).unwrap_or_default(),
        kernel_release,
        ..paths
    };
    stamp.write(&paths)?;
    remove_unpacked(&paths.dir, &trees, &trixie_ls);
    Ok(paths)
}

/// The programs a build runs, with the packages that have them.
const BUILD_TOOLS: &[(&str, &str)] = &[
    ("gcc", "gcc"),
    ("cpio", "cpio"),
    ("gzip", "gzip"),
    ("xz", "xz-utils"),
    ("ldd", "libc-bin"),
    ("mkfs.ext4", "e2fsprogs"),
    ("dpkg", "dpkg"),
    ("apt-get", "apt"),
    ("apt-cache", "apt"),
];

/// `release`'s cache directory (created, absolute and free of `..`, since
/// shell steps `cd` into it) and the paths of what is built there; the
/// package fields are filled once known.
fn release_paths(build_dir: &Path, release: Release) -> Result<Paths, SkipReason> {
    let dir = build_dir.join("linuxref").join(release.name());
    mkdir(&dir)?;
    let dir = dir
        .canonicalize()
        .map_err(|e| failed(&format!("resolving {}", dir.display()), e))?;
    Ok(Paths {
        kernel: dir.join("vmlinuz"),
        initramfs: dir.join("initramfs.gz"),
        ext4_image: dir.join("ext4.img"),
        statneg_host: dir.join("statneg-host"),
        kernel_package: String::new(),
        package_version: String::new(),
        kernel_release: String::new(),
        release,
        dir,
    })
}

/// The static helpers the guest runs.
struct Helpers {
    statneg: PathBuf,
    lrtime: PathBuf,
    xattr: PathBuf,
}

/// Compiles statneg, lrtime and xattr whenever a source changed (they are
/// cheap) and copies statneg to `statneg-host`.
fn build_helpers(paths: &Paths) -> Result<Helpers, SkipReason> {
    let h = Helpers {
        statneg: paths.dir.join("statneg"),
        lrtime: paths.dir.join("lrtime"),
        xattr: paths.dir.join("xattr"),
    };
    gcc_static(&statneg_source(), &h.statneg, &["-pthread"])?;
    gcc_static(&lrtime_source(), &h.lrtime, &["-pthread"])?;
    gcc_static(&xattr_source(), &h.xattr, &["-pthread"])?;
    let _ = fs::remove_file(&paths.statneg_host);
    fs::copy(&h.statneg, &paths.statneg_host).map_err(|e| failed("copying statneg-host", e))?;
    Ok(h)
}

/// The cache stamp: [`STAMP_VERSION`], the digest of what goes into the
/// initramfs (the helpers, the init script and `cifs-mount.sh`, the module
/// list), then the kernel package, its version and the kernel release, one
/// a line.
struct Stamp {
    file: PathBuf,
    sum: String,
}

impl Stamp {
    fn of(paths: &Paths, h: &Helpers) -> Stamp {
        let sum = format!(
            "initramfs {}",
            digest(&[
                &fs::read(&h.statneg).unwrap_or_default(),
                &fs::read(&h.lrtime).unwrap_or_default(),
                &fs::read(&h.xattr).unwrap_or_default(),
                INIT_SCRIPT.as_bytes(),
                CIFS_MOUNT_SCRIPT.as_bytes(),
                GUEST_MODULES.join(",").as_bytes(),
            ])
        );
        Stamp {
            file: paths.dir.join("stamp"),
            sum,
        }
    }

    /// The cached build, when the stamp matches and every output is there.
    fn read(&self, paths: &Paths) -> Option<Paths> {
        let s = fs::read_to_string(&self.file).ok()?;
        let l: Vec<&str> = s.lines().collect();
        let fresh = l.len() == 5
            && l[0] == STAMP_VERSION
            && l[1] == self.sum
            && [&paths.kernel, &paths.initramfs, &paths.ext4_image]
                .iter()
                .all(|p| p.is_file());
        fresh.then(|| Paths {
            kernel_package: l[2].to_string(),
            package_version: l[3].to_string(),
            kernel_release: l[4].to_string(),
            ..paths.clone()
        })
    }

    fn write(&self, p: &Paths) -> Result<(), SkipReason> {
        let (sum, package, version, release) = (
            &self.sum,
            &p.kernel_package,
            &p.package_version,
            &p.kernel_release,
        );
        fs::write(
            &self.file,
            format!("{STAMP_VERSION}\n{sum}\n{package}\n{version}\n{release}\n"),
        )
        .map_err(|e| failed("writing the stamp", e))
    }
}

/// The downloaded packages: the kernel's (the image first) and busybox.
struct Debs {
    kernel_packages: Vec<String>,
    kernel: Vec<PathBuf>,
    busybox: PathBuf,
}

/// Downloads the release's kernel packages (from its own apt source) and
/// busybox (from the machine's lists, for every release) into `DIR/debs/`.
fn fetch_packages(paths: &Paths) -> Result<Debs, SkipReason> {
    let top = paths.dir.parent().unwrap_or(&paths.dir);
    let apt = AptSource::for_release(top, paths.release)?;
    let kernel_packages = match paths.release.split_packages() {
        Some(split) => split,
        None => vec![current_kernel_package(&apt)?],
    };
    let debs = paths.dir.join("debs");
    mkdir(&debs)?;
    let mut kernel = Vec::new();
    for p in &kernel_packages {
        kernel.push(download(&debs, p, &apt)?);
    }
    let busybox = download(&debs, BUSYBOX_PACKAGE, &AptSource::machine())?;
    Ok(Debs {
        kernel_packages,
        kernel,
        busybox,
    })
}

/// The unpacked packages.
struct Trees {
    /// The kernel packages' files.
    kernel: PathBuf,
    /// busybox-static's files.
    busybox_root: PathBuf,
    /// Its `bin/busybox`.
    busybox: PathBuf,
}

/// Unpacks the packages (`dpkg -x`) and copies the kernel image to
/// `paths.kernel`.
fn unpack_packages(paths: &Paths, debs: &Debs) -> Result<Trees, SkipReason> {
    let kroot = paths.dir.join("kernel-root");
    let bbroot = paths.dir.join("busybox-root");
    for root in [&kroot, &bbroot] {
        let _ = fs::remove_dir_all(root);
    }
    for (deb, root) in debs
        .kernel
        .iter()
        .map(|d| (d, &kroot))
        .chain([(&debs.busybox, &bbroot)])
    {
        dpkg_x(deb, root)?;
    }
    let vmlinuz = kernel_image(&kroot).ok_or_else(|| SkipReason::BuildFailed {
        step: "unpacking the kernel".into(),
        detail: format!(
            "no boot/vmlinuz-* or usr/lib/modules/*/vmlinuz* in {}",
            debs.kernel_packages.join(", ")
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
    Ok(Trees {
        kernel: kroot,
        busybox_root: bbroot,
        busybox,
    })
}

/// The kernel release (`uname -r`) and [`GUEST_MODULES`] with their
/// dependencies in load order, decompressed into `dir/modules-xz/`.
fn guest_modules(dir: &Path, kroot: &Path) -> Result<(String, Vec<PathBuf>), SkipReason> {
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
    Ok((kernel_release, modules))
}

/// Removes what the build unpacked and staged: large, and no longer needed
/// once the stamp is written.
fn remove_unpacked(dir: &Path, trees: &Trees, trixie_ls: &Path) {
    for d in [
        &trees.kernel,
        &trees.busybox_root,
        &dir.join("initramfs-root"),
        &dir.join("modules-xz"),
        trixie_ls,
    ] {
        let _ = fs::remove_dir_all(d);
    }
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
    use crate::linuxref::modules::modinfo_depends;

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

    /// The stamp vouches for a build only with its own digest and every
    /// output in place, and gives back the package fields it was written with.
    #[test]
    fn the_stamp_reads_back_only_a_complete_build_of_the_same_inputs() {
        let root = std::env::temp_dir().join(format!("linuxref-stamp-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let paths = release_paths(&root, Release::V6_12).unwrap();
        let helpers = Helpers {
            statneg: paths.dir.join("statneg"),
            lrtime: paths.dir.join("lrtime"),
            xattr: paths.dir.join("xattr"),
        };
        fs::write(&helpers.statneg, b"v1").unwrap();
        let stamp = Stamp::of(&paths, &helpers);
        let built = Paths {
            kernel_package: "linux-image-6.12.117+deb13-cloud-amd64".into(),
            package_version: "6.12.117-1".into(),
            kernel_release: "6.12.117+deb13-cloud-amd64".into(),
            ..paths.clone()
        };
        stamp.write(&built).unwrap();
        assert!(stamp.read(&paths).is_none(), "no outputs yet");
        for p in [&paths.kernel, &paths.initramfs, &paths.ext4_image] {
            fs::write(p, b"x").unwrap();
        }
        let cached = stamp.read(&paths).expect("a complete build");
        assert_eq!(
            (
                cached.kernel_package,
                cached.package_version,
                cached.kernel_release
            ),
            (
                built.kernel_package.clone(),
                built.package_version.clone(),
                built.kernel_release.clone()
            )
        );
        // A helper changed: another digest, the cache is not used.
        fs::write(&helpers.statneg, b"v2").unwrap();
        assert!(Stamp::of(&paths, &helpers).read(&paths).is_none());
        fs::remove_dir_all(&root).unwrap();
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

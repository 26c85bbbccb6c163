//! Building the reference guest: the Debian kernel and busybox packages
//! (fetched through [`super::apt`]), `dpkg -x`, the static statneg, lrtime
//! and xattr (`gcc -static`), the initramfs ([`super::initramfs`]; `xz` for
//! the 6.12 modules) and the ext4 image (`mkfs.ext4`). Touches only
//! `BUILD_DIR/linuxref/`, where everything it made is cached behind a stamp.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::apt::{current_kernel_package, deb_version, download, AptSource};
use super::initramfs::{build_initramfs, unpack_trixie_ls, Extra, INIT_SCRIPT};
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
    require_tools(&[
        ("gcc", "gcc"),
        ("cpio", "cpio"),
        ("gzip", "gzip"),
        ("xz", "xz-utils"),
        ("ldd", "libc-bin"),
        ("mkfs.ext4", "e2fsprogs"),
        ("dpkg", "dpkg"),
        ("apt-get", "apt"),
        ("apt-cache", "apt"),
    ])?;

    // statneg and lrtime are cheap: rebuild whenever a source changed.
    let statneg = dir.join("statneg");
    gcc_static(&statneg_source(), &statneg, &["-pthread"])?;
    let lrtime = dir.join("lrtime");
    gcc_static(&lrtime_source(), &lrtime, &["-pthread"])?;
    let xattr = dir.join("xattr");
    gcc_static(&xattr_source(), &xattr, &["-pthread"])?;
    let _ = fs::remove_file(&paths.statneg_host);
    fs::copy(&statneg, &paths.statneg_host).map_err(|e| failed("copying statneg-host", e))?;

    // The rest is cached behind a stamp that names what went into the
    // initramfs (the helpers and the init script).
    let stamp = dir.join("stamp");
    let sum = format!(
        "initramfs {}",
        digest(&[
            &fs::read(&statneg).unwrap_or_default(),
            &fs::read(&lrtime).unwrap_or_default(),
            &fs::read(&xattr).unwrap_or_default(),
            INIT_SCRIPT.as_bytes(),
            GUEST_MODULES.join(",").as_bytes(),
        ])
    );
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
        dpkg_x(deb, root)?;
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

//! Building the reference guest: the Debian kernel and busybox packages
//! (`apt-cache`/`apt-get download`), `dpkg -x`, the static statneg
//! (`gcc -static`), the initramfs (`cpio`, `gzip`) and the ext4 image
//! (`mkfs.ext4`). Touches only `BUILD_DIR/linuxref/`, where everything it
//! made is cached behind a stamp.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{Paths, SkipReason, BUSYBOX_PACKAGE, KERNEL_METAPACKAGE};

/// Modules the guest loads (with their dependencies) to see the virtio disk.
const GUEST_MODULES: &[&str] = &["virtio_pci", "virtio_blk"];
/// Size of the ext4 image.
const EXT4_IMAGE_MIB: u32 = 64;
/// Bumped whenever the layout of the cached build changes.
const STAMP_VERSION: &str = "linuxref-build 1";

/// The C source of statneg.
pub fn statneg_source() -> PathBuf {
    crate::runner::workspace_root().join("bench/linux/statneg.c")
}

/// The workspace's default build directory (`build/`).
pub fn default_build_dir() -> PathBuf {
    crate::runner::workspace_root().join("build")
}

/// Builds (or finds cached in `build_dir/linuxref/`) the kernel, initramfs,
/// ext4 image and host statneg.
pub fn ensure_built(build_dir: &Path) -> Result<Paths, SkipReason> {
    let dir = build_dir.join("linuxref");
    mkdir(&dir)?;
    // Absolute and free of `..`, since shell steps below `cd` into it.
    let dir = dir
        .canonicalize()
        .map_err(|e| failed(&format!("resolving {}", dir.display()), e))?;
    let paths = Paths {
        kernel: dir.join("vmlinuz"),
        initramfs: dir.join("initramfs.gz"),
        ext4_image: dir.join("ext4.img"),
        statneg_host: dir.join("statneg-host"),
        kernel_package: String::new(),
        dir: dir.clone(),
    };
    for (tool, package) in [
        ("gcc", "gcc"),
        ("cpio", "cpio"),
        ("gzip", "gzip"),
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

    // statneg is cheap: rebuild whenever the source changed.
    let statneg = dir.join("statneg");
    build_statneg(&statneg)?;
    let _ = fs::remove_file(&paths.statneg_host);
    fs::copy(&statneg, &paths.statneg_host).map_err(|e| failed("copying statneg-host", e))?;

    // The rest is cached behind a stamp that names the statneg build it holds.
    let stamp = dir.join("stamp");
    let statneg_sum = file_digest(&statneg);
    if let Ok(s) = fs::read_to_string(&stamp) {
        let mut lines = s.lines();
        if lines.next() == Some(STAMP_VERSION) && lines.next() == Some(statneg_sum.as_str()) {
            if let Some(pkg) = lines.next() {
                if [&paths.kernel, &paths.initramfs, &paths.ext4_image]
                    .iter()
                    .all(|p| p.is_file())
                {
                    return Ok(Paths {
                        kernel_package: pkg.to_string(),
                        ..paths
                    });
                }
            }
        }
    }

    let kernel_package = current_kernel_package()?;
    let debs = dir.join("debs");
    mkdir(&debs)?;
    let kernel_deb = download(&debs, &kernel_package)?;
    let busybox_deb = download(&debs, BUSYBOX_PACKAGE)?;

    let kroot = dir.join("kernel-root");
    let bbroot = dir.join("busybox-root");
    for (deb, root) in [(&kernel_deb, &kroot), (&busybox_deb, &bbroot)] {
        let _ = fs::remove_dir_all(root);
        run_tool("dpkg -x", Command::new("dpkg").arg("-x").arg(deb).arg(root))?;
    }
    let vmlinuz =
        find_file(&kroot.join("boot"), |n| n.starts_with("vmlinuz-")).ok_or_else(|| {
            SkipReason::BuildFailed {
                step: "unpacking the kernel".into(),
                detail: format!("no boot/vmlinuz-* in {}", kernel_deb.display()),
            }
        })?;
    fs::copy(&vmlinuz, &paths.kernel).map_err(|e| failed("copying vmlinuz", e))?;
    let busybox = bbroot.join("bin/busybox");
    if !busybox.is_file() {
        return Err(SkipReason::BuildFailed {
            step: "unpacking busybox-static".into(),
            detail: "no bin/busybox in the package".into(),
        });
    }

    let modules = module_load_order(&kroot.join("lib/modules"), GUEST_MODULES)?;
    build_initramfs(&dir, &busybox, &statneg, &modules, &paths.initramfs)?;
    build_ext4_image(&dir, &paths.ext4_image)?;

    fs::write(
        &stamp,
        format!("{STAMP_VERSION}\n{statneg_sum}\n{kernel_package}\n"),
    )
    .map_err(|e| failed("writing the stamp", e))?;
    // The unpacked trees are large and no longer needed.
    let _ = fs::remove_dir_all(&kroot);
    let _ = fs::remove_dir_all(&bbroot);
    let _ = fs::remove_dir_all(dir.join("initramfs-root"));
    Ok(Paths {
        kernel_package,
        ..paths
    })
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

fn failed(step: &str, e: io::Error) -> SkipReason {
    SkipReason::BuildFailed {
        step: step.into(),
        detail: e.to_string(),
    }
}

fn mkdir(d: &Path) -> Result<(), SkipReason> {
    fs::create_dir_all(d).map_err(|e| failed(&format!("creating {}", d.display()), e))
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

/// A cheap content fingerprint (FNV-1a) for the cache stamp.
fn file_digest(p: &Path) -> String {
    let bytes = fs::read(p).unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("statneg {h:016x}")
}

fn build_statneg(out: &Path) -> Result<(), SkipReason> {
    let src = statneg_source();
    let fresh = match (fs::metadata(&src), fs::metadata(out)) {
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
        "compiling statneg (gcc -static; needs libc6-dev)",
        Command::new("gcc")
            .args(["-static", "-O2", "-pthread", "-Wall", "-o"])
            .arg(out)
            .arg(&src),
    )
    .map(|_| ())
}

/// The versioned kernel package the metapackage currently depends on.
fn current_kernel_package() -> Result<String, SkipReason> {
    let out = Command::new("apt-cache")
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
fn download(dir: &Path, package: &str) -> Result<PathBuf, SkipReason> {
    let prefix = format!("{package}_");
    if let Some(p) = find_file(dir, |n| n.starts_with(&prefix) && n.ends_with(".deb")) {
        return Ok(p);
    }
    let out = Command::new("apt-get")
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

fn find_file(dir: &Path, pred: impl Fn(&str) -> bool) -> Option<PathBuf> {
    let mut hits: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_str().is_some_and(&pred))
        .map(|e| e.path())
        .collect();
    hits.sort();
    hits.pop()
}

/// Module files under `modules_root/VERSION/` needed for `wanted`, in load
/// order (dependencies first), read from each module's `.modinfo` `depends=`
/// (the package ships no modules.dep: depmod runs at install time).
fn module_load_order(modules_root: &Path, wanted: &[&str]) -> Result<Vec<PathBuf>, SkipReason> {
    let mut by_name = BTreeMap::new();
    let mut stack = vec![modules_root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(n) = p.file_name().and_then(|n| n.to_str()) {
                if let Some(stem) = n.strip_suffix(".ko") {
                    by_name.insert(stem.replace('-', "_"), p.clone());
                }
            }
        }
    }
    let mut order = Vec::new();
    let mut done = BTreeSet::new();
    for w in wanted {
        visit_module(w, &by_name, &mut done, &mut Vec::new(), &mut order)?;
    }
    Ok(order)
}

fn visit_module(
    name: &str,
    by_name: &BTreeMap<String, PathBuf>,
    done: &mut BTreeSet<String>,
    path: &mut Vec<String>,
    order: &mut Vec<PathBuf>,
) -> Result<(), SkipReason> {
    if done.contains(name) {
        return Ok(());
    }
    if path.iter().any(|p| p == name) {
        return Err(SkipReason::BuildFailed {
            step: "resolving module dependencies".into(),
            detail: format!("dependency cycle through {name}"),
        });
    }
    let file = by_name.get(name).ok_or_else(|| SkipReason::BuildFailed {
        step: "resolving module dependencies".into(),
        detail: format!("module {name}.ko not in the kernel package"),
    })?;
    let bytes = fs::read(file).map_err(|e| failed("reading a module", e))?;
    path.push(name.to_string());
    for dep in modinfo_depends(&bytes) {
        visit_module(&dep, by_name, done, path, order)?;
    }
    path.pop();
    done.insert(name.to_string());
    order.push(file.clone());
    Ok(())
}

/// The `depends=` list of a module's `.modinfo` (NUL-separated `key=value`).
fn modinfo_depends(ko: &[u8]) -> Vec<String> {
    ko.split(|&b| b == 0)
        .find_map(|s| s.strip_prefix(b"depends="))
        .map(|d| {
            String::from_utf8_lossy(d)
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.replace('-', "_"))
                .collect()
        })
        .unwrap_or_default()
}

/// The guest's /init: mounts, loads the virtio modules, runs statneg on each
/// requested filesystem (from `lr.*` words of the kernel command line) and
/// powers off.
const INIT_SCRIPT: &str = r#"#!/bin/busybox sh
# linuxref init: runs statneg on tmpfs and ext4, then powers off.
/bin/busybox mkdir -p /proc /sys /dev /mnt/tmpfs /mnt/ext4
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules/order); do
    insmod /modules/$m || echo "linuxref: insmod $m failed"
done
FS=tmpfs,ext4 THREADS=1 WARMUP=1 SECS=3
for w in $(cat /proc/cmdline); do
    case $w in
        lr.fs=*) FS=${w#lr.fs=} ;;
        lr.threads=*) THREADS=${w#lr.threads=} ;;
        lr.warmup=*) WARMUP=${w#lr.warmup=} ;;
        lr.secs=*) SECS=${w#lr.secs=} ;;
    esac
done
mount -t tmpfs -o size=64m tmpfs /mnt/tmpfs || echo "linuxref: tmpfs mount failed"
i=0
while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
mount -t ext4 /dev/vda /mnt/ext4 || echo "linuxref: ext4 mount failed"
echo "linuxref: kernel $(uname -r), $(nproc) cpus, fs=$FS threads=$THREADS warmup=$WARMUP secs=$SECS"
for fs in $(echo $FS | tr , ' '); do
    echo "linuxref-begin fs=$fs"
    /statneg /mnt/$fs/missing-name $THREADS $WARMUP $SECS
    echo "linuxref-end fs=$fs rc=$?"
done
echo "linuxref-done"
sync
poweroff -f
"#;

fn build_initramfs(
    dir: &Path,
    busybox: &Path,
    statneg: &Path,
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
    copy(statneg, root.join("statneg"))?;
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
    fn module_order_puts_dependencies_first() {
        let root = std::env::temp_dir().join(format!("linuxref-mod-test-{}", std::process::id()));
        let d = root.join("6.1/kernel/drivers");
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("a.ko"), b"\0depends=b,c\0").unwrap();
        fs::write(d.join("b.ko"), b"\0depends=c\0").unwrap();
        fs::write(d.join("c.ko"), b"\0depends=\0").unwrap();
        fs::write(d.join("loop.ko"), b"\0depends=loop\0").unwrap();
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

//! Debian 13's packages beyond the kernel image, through the private apt
//! configuration the reference guest uses (`BUILD_DIR/linuxref/apt-trixie/`,
//! whose sources list names `trixie` and `trixie-backports`): a release's
//! kernel source (`linux-source-6.12`, `linux-source-7.3`, each unpacked once
//! under `BUILD_DIR/linux-src/`), and any other package by name
//! (`linux-headers-*`, `linux-kbuild-*`, `coreutils`), downloaded into
//! `BUILD_DIR/linuxref/debs-trixie/`. apt's candidate is trixie's version
//! wherever trixie has the package (backports are pinned below it), so a
//! package of the 6.12 line never comes from the backports.
//!
//! One fetch step for every user of a release's source: the Linux patches
//! under `linux/patches/REL/` (their apply check, the patched kernels, the
//! patched cifs module). Touches only `BUILD_DIR`; the machine's apt
//! configuration is never changed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::apt::{download, AptSource, PRIVATE_SUITES};
use super::{failed, mkdir, Release, SkipReason};

/// The Debian package holding the 6.12 source tarball.
pub const LINUX_SOURCE_PACKAGE: &str = "linux-source-6.12";
/// The release that package carries (the default reference guest's kernel).
pub const LINUX_SOURCE_VERSION: &str = "6.12.117";

/// The private Debian 13 apt configuration (its lists fetched once).
pub fn trixie_apt(build_dir: &Path) -> Result<AptSource, SkipReason> {
    AptSource::private(
        &build_dir.join("linuxref").join("apt-trixie"),
        PRIVATE_SUITES,
    )
}

/// `apt-get download PACKAGE` from Debian 13 (trixie, or its backports for
/// a package only they have) into `BUILD_DIR/linuxref/debs-trixie/` (a file
/// already there is reused).
pub fn trixie_deb(build_dir: &Path, package: &str) -> Result<PathBuf, SkipReason> {
    let apt = trixie_apt(build_dir)?;
    let dir = build_dir.join("linuxref").join("debs-trixie");
    mkdir(&dir)?;
    download(&dir, package, &apt)
}

/// The stamp that marks `release`'s tree as wholly unpacked.
fn stamp_path(top: &Path, release: Release) -> PathBuf {
    top.join(format!(".unpacked-{}", release.name()))
}

/// The unpacked source tree of `release`,
/// `BUILD_DIR/linux-src/linux-source-REL/` (a pristine tree: callers copy
/// or `git worktree` it before patching). Downloaded and unpacked once; a
/// `.unpacked-REL` stamp marks a whole tree (for 6.12 the stamp `.unpacked`
/// of an older layout counts too).
pub fn ensure_linux_source(build_dir: &Path, release: Release) -> Result<PathBuf, SkipReason> {
    let package = release.source_package();
    if release.full().is_none() {
        return Err(SkipReason::PackageUnavailable {
            package,
            detail: format!("Linux {release} is the machine's kernel; its source is not used"),
        });
    }
    let top = build_dir.join("linux-src");
    let tree = top.join(&package);
    let stamp = stamp_path(&top, release);
    let legacy = release == Release::V6_12 && top.join(".unpacked").exists();
    if (stamp.exists() || legacy) && tree.join("Makefile").exists() {
        return Ok(tree);
    }
    for tool in ["tar", "xz", "dpkg"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .map_or(true, |s| !s.success())
        {
            return Err(SkipReason::MissingTool {
                tool: tool.into(),
                package: if tool == "xz" { "xz-utils" } else { tool }.into(),
            });
        }
    }
    let deb = trixie_deb(build_dir, &package)?;
    mkdir(&top)?;
    let pkg = top.join(format!("pkg-{}", release.name()));
    let _ = fs::remove_dir_all(&pkg);
    let _ = fs::remove_dir_all(&tree);
    run(
        &format!("dpkg -x {package}"),
        Command::new("dpkg").arg("-x").arg(&deb).arg(&pkg),
    )?;
    let tarball = pkg.join(format!("usr/src/{package}.tar.xz"));
    run(
        &format!("unpacking {package}.tar.xz"),
        Command::new("tar")
            .arg("-xJf")
            .arg(&tarball)
            .arg("-C")
            .arg(&top),
    )?;
    let _ = fs::remove_dir_all(&pkg);
    let makefile = fs::read_to_string(tree.join("Makefile")).unwrap_or_default();
    if tree_release(&makefile).as_deref() != Some(release.name()) {
        return Err(SkipReason::BuildFailed {
            step: format!("unpacking {package}"),
            detail: format!(
                "{} does not hold a Linux {release} tree (its Makefile says {:?})",
                tree.display(),
                tree_release(&makefile)
            ),
        });
    }
    fs::write(&stamp, format!("{package} {}\n", deb.display()))
        .map_err(|e| failed("writing the source stamp", e))?;
    Ok(tree)
}

/// `VERSION.PATCHLEVEL` of a kernel tree's top Makefile (`7.3`), as
/// `linux/kbuild.sh` reads it.
pub fn tree_release(makefile: &str) -> Option<String> {
    let get = |key: &str| {
        makefile.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    Some(format!("{}.{}", get("VERSION")?, get("PATCHLEVEL")?))
}

/// Runs a step; its stderr and stdout become the failure detail.
fn run(step: &str, cmd: &mut Command) -> Result<(), SkipReason> {
    super::tools::run_tool(step, cmd).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_trees_release_as_kbuild_does() {
        let mk = "# SPDX\nVERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 4\nEXTRAVERSION =\n";
        assert_eq!(tree_release(mk).as_deref(), Some("7.3"));
        assert_eq!(
            tree_release("VERSION = 6\nPATCHLEVEL = 12\n").as_deref(),
            Some("6.12")
        );
        assert_eq!(tree_release("VERSION = 6\n"), None);
    }

    #[test]
    fn each_release_has_its_own_tree_and_stamp() {
        let top = Path::new("/b/linux-src");
        assert_ne!(
            stamp_path(top, Release::V6_12),
            stamp_path(top, Release::V7_3)
        );
        assert_eq!(Release::V7_3.source_package(), "linux-source-7.3");
        assert_eq!(Release::V6_12.source_package(), LINUX_SOURCE_PACKAGE);
        assert_eq!(Release::V6_12.full(), Some(LINUX_SOURCE_VERSION));
        let e = ensure_linux_source(Path::new("/nonexistent"), Release::V6_1).unwrap_err();
        assert!(e.to_string().contains("linux-source-6.1"), "{e}");
    }
}

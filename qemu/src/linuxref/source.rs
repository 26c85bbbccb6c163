//! Debian 13's packages beyond the kernel image, through the same private
//! trixie apt configuration the reference guest uses
//! (`BUILD_DIR/linuxref/apt-trixie/`): the kernel source
//! (`linux-source-6.12`, unpacked once under `BUILD_DIR/linux-src/`), and any
//! other trixie package by name (`linux-headers-*`, `linux-kbuild-*`,
//! `coreutils`), downloaded into `BUILD_DIR/linuxref/debs-trixie/`.
//!
//! One fetch step for every user of the 6.12 source: the Linux patches under
//! `linux/patches/6.12/` (their apply check, the patched kernels, the patched
//! cifs module). Touches only `BUILD_DIR`; the machine's apt configuration is
//! never changed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::build::{download, failed, mkdir, AptSource};
use super::SkipReason;

/// The Debian package holding the 6.12 source tarball.
pub const LINUX_SOURCE_PACKAGE: &str = "linux-source-6.12";
/// The release that package carries (the reference guest's kernel).
pub const LINUX_SOURCE_VERSION: &str = "6.12.117";

/// The private trixie apt configuration (its lists fetched once).
pub fn trixie_apt(build_dir: &Path) -> Result<AptSource, SkipReason> {
    AptSource::private(&build_dir.join("linuxref").join("apt-trixie"), "trixie")
}

/// `apt-get download PACKAGE` from trixie into
/// `BUILD_DIR/linuxref/debs-trixie/` (a file already there is reused).
pub fn trixie_deb(build_dir: &Path, package: &str) -> Result<PathBuf, SkipReason> {
    let apt = trixie_apt(build_dir)?;
    let dir = build_dir.join("linuxref").join("debs-trixie");
    mkdir(&dir)?;
    download(&dir, package, &apt)
}

/// The unpacked 6.12 source tree, `BUILD_DIR/linux-src/linux-source-6.12/`
/// (a pristine tree: callers copy or `git worktree` it before patching).
/// Downloaded and unpacked once; a `.unpacked` stamp marks a whole tree.
pub fn ensure_linux_source(build_dir: &Path) -> Result<PathBuf, SkipReason> {
    let top = build_dir.join("linux-src");
    let tree = top.join(LINUX_SOURCE_PACKAGE);
    let stamp = top.join(".unpacked");
    if stamp.exists() && tree.join("Makefile").exists() {
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
    let deb = trixie_deb(build_dir, LINUX_SOURCE_PACKAGE)?;
    mkdir(&top)?;
    let pkg = top.join("pkg");
    let _ = fs::remove_dir_all(&pkg);
    let _ = fs::remove_dir_all(&tree);
    run(
        "dpkg -x linux-source-6.12",
        Command::new("dpkg").arg("-x").arg(&deb).arg(&pkg),
    )?;
    let tarball = pkg.join("usr/src/linux-source-6.12.tar.xz");
    run(
        "unpacking linux-source-6.12.tar.xz",
        Command::new("tar")
            .arg("-xJf")
            .arg(&tarball)
            .arg("-C")
            .arg(&top),
    )?;
    let _ = fs::remove_dir_all(&pkg);
    if !tree.join("Makefile").exists() {
        return Err(SkipReason::BuildFailed {
            step: "unpacking linux-source-6.12".into(),
            detail: format!("no {} after unpacking", tree.join("Makefile").display()),
        });
    }
    fs::write(
        &stamp,
        format!("{LINUX_SOURCE_PACKAGE} {}\n", deb.display()),
    )
    .map_err(|e| failed("writing the source stamp", e))?;
    Ok(tree)
}

fn run(step: &str, cmd: &mut Command) -> Result<(), SkipReason> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed(step, e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(SkipReason::BuildFailed {
            step: step.into(),
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

//! A patched cifs.ko for the reference guest, built out of tree: Debian 13's
//! kernel headers and kbuild packages for the guest's kernel (6.12.117 from
//! trixie, 7.3.4 from trixie-backports), the client's source
//! (`fs/smb/client`, with the `fs/smb/common` and `fs/nls` headers it
//! includes by relative path, and `Documentation/admin-guide/cifs`, which a
//! series may document an option in) copied out of the release's pristine tree, a
//! patch series of `linux/patches/REL/SERIES/` applied with `git am`, then
//! `make -C HEADERS M=…/fs/smb/client modules`.
//!
//! Two things the trixie packages need on a Debian 12 host: kbuild's
//! `modpost` and `objtool` link glibc 2.38, so each is wrapped to run under
//! trixie's own loader and libc (unpacked beside them); and the package
//! ships no `scripts/asn1_compiler`, which the client's SPNEGO decoder needs,
//! so it is compiled from the source tree. The module is built with the
//! host's gcc (the kernel was built with gcc 14; Debian's headers skip the
//! compiler check), without `-fmin-function-alignment` (gcc 14 only; the
//! fallback `-falign-functions` aligns the same) and without BTF (no pahole).
//!
//! Touches only `BUILD_DIR/cifs-mod/` (6.12) or `BUILD_DIR/cifs-mod/REL/`
//! (and the trixie package cache); the result is cached behind a stamp
//! naming the release and the patches' contents.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::source::{ensure_linux_source, trixie_deb};
use super::tools::{dpkg_x, require_tools, run_step};
use super::{failed, mkdir};
use super::{Release, SkipReason};
/// Bumped whenever the layout of the build changes.
const STAMP_VERSION: &str = "cifs-mod 2";
/// Bumped whenever the unpacked headers are prepared differently.
const KBUILD_STAMP: &str = "kbuild 2";
/// trixie libraries the wrapped kbuild programs run with (objtool needs
/// libelf, which needs zlib and zstd).
const WRAPPER_LIB_PACKAGES: &[&str] = &["libc6", "libelf1t64", "zlib1g", "libzstd1"];

/// A cifs.ko built from a patch series.
#[derive(Clone, Debug)]
pub struct CifsModule {
    /// The module, debug info stripped (as the packaged one is).
    pub ko: PathBuf,
    /// The series (`cifs-eacache`).
    pub series: String,
    /// The release it was built for.
    pub release: Release,
    /// Its patch files, in order.
    pub patches: Vec<PathBuf>,
    /// Seconds the build took; `None` when the cached module was used.
    pub build_s: Option<f64>,
}

/// `linux/patches/REL/SERIES/` in the workspace.
pub fn patch_series_dir(release: Release, series: &str) -> PathBuf {
    crate::runner::workspace_root()
        .join(super::kbuild::patches_dir(release))
        .join(series)
}

/// The series' `NNNN-*.patch` files in order, its cover letter
/// (`0000-cover-letter.patch`, no diff) left out.
pub fn patch_series(release: Release, series: &str) -> Result<Vec<PathBuf>, SkipReason> {
    let dir = patch_series_dir(release, series);
    let mut patches: Vec<PathBuf> = fs::read_dir(&dir)
        .map_err(|e| failed(&format!("reading {}", dir.display()), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "patch"))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n != "0000-cover-letter.patch")
        })
        .collect();
    patches.sort();
    if patches.is_empty() {
        return Err(SkipReason::BuildFailed {
            step: format!("patch series {series}"),
            detail: format!("no *.patch in {}", dir.display()),
        });
    }
    Ok(patches)
}

/// The release's directory under `BUILD_DIR/cifs-mod/`: the top itself for
/// 6.12 (as before 7.3 existed), `REL/` otherwise.
fn release_dir(top: &Path, release: Release) -> PathBuf {
    match release {
        Release::V6_12 => top.to_path_buf(),
        r => top.join(r.name()),
    }
}

/// Builds (or finds cached) cifs.ko of `release` with `series` applied.
pub fn ensure_cifs_module(
    build_dir: &Path,
    release: Release,
    series: &str,
) -> Result<CifsModule, SkipReason> {
    let (Some(version), Some(abi)) = (release.full(), release.debian_abi()) else {
        return Err(SkipReason::BuildFailed {
            step: format!("building cifs.ko for Linux {release}"),
            detail: "only the Debian 13 releases (6.12, 7.3) have a source and headers here".into(),
        });
    };
    require_tools(&[
        ("make", "make"),
        ("gcc", "gcc"),
        ("git", "git"),
        ("strip", "binutils"),
        ("dpkg", "dpkg"),
    ])?;
    let patches = patch_series(release, series)?;
    let top = release_dir(&build_dir.join("cifs-mod"), release);
    mkdir(&top)?;
    let top = top
        .canonicalize()
        .map_err(|e| failed("resolving the cifs-mod dir", e))?;
    let out = top.join(series);
    let ko = out.join("cifs.ko");
    let stamp = out.join("stamp");
    let mut sum = format!("{STAMP_VERSION} {version}");
    for p in &patches {
        let text = fs::read(p).map_err(|e| failed(&format!("reading {}", p.display()), e))?;
        sum.push_str(&format!(" {}", fnv(&text)));
    }
    if ko.is_file() && fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == sum) {
        return Ok(CifsModule {
            ko,
            series: series.into(),
            release,
            patches,
            build_s: None,
        });
    }
    let tree = ensure_linux_source(build_dir, release)?;
    let (headers, trixie_libdir) = ensure_kbuild(build_dir, &top, &tree, &abi)?;

    let started = Instant::now();
    let src = out.join("src");
    let _ = fs::remove_dir_all(&out);
    for d in ["fs/smb", "fs/nls"] {
        mkdir(&src.join(d))?;
    }
    run_step(
        "copying fs/smb/client and fs/smb/common",
        Command::new("cp")
            .arg("-r")
            .arg(tree.join("fs/smb/client"))
            .arg(tree.join("fs/smb/common"))
            .arg(src.join("fs/smb")),
    )?;
    // The admin guide's cifs pages, which a series documenting a mount
    // option patches too.
    let docs = tree.join("Documentation/admin-guide/cifs");
    if docs.is_dir() {
        mkdir(&src.join("Documentation/admin-guide"))?;
        run_step(
            "copying Documentation/admin-guide/cifs",
            Command::new("cp")
                .arg("-r")
                .arg(&docs)
                .arg(src.join("Documentation/admin-guide")),
        )?;
    }
    run_step(
        "copying the fs/nls headers",
        Command::new("sh")
            .arg("-c")
            .arg("cp \"$1\"/fs/nls/*.h \"$2\"/fs/nls/")
            .arg("sh")
            .arg(&tree)
            .arg(&src),
    )?;
    // The copy becomes its own repository and takes the series with
    // `git am`, as the pristine tree would (and git never mistakes it for
    // part of a repository around BUILD_DIR); linux/git-lab.sh gives the
    // commits the lab's identity.
    let git_lab = crate::runner::workspace_root().join("linux/git-lab.sh");
    let git = |step: &str, args: &[&OsStr]| {
        run_step(
            step,
            Command::new("sh")
                .arg(&git_lab)
                .args(args)
                .current_dir(&src),
        )
    };
    git("git init", &["init", "-q"].map(OsStr::new))?;
    git("git add", &["add", "-A"].map(OsStr::new))?;
    let pristine = format!("Linux {version} (fs/smb, fs/nls headers)");
    git(
        "git commit (pristine)",
        &["commit", "-q", "-m", &pristine].map(OsStr::new),
    )?;
    for p in &patches {
        git(
            &format!("git am {}", p.display()),
            &[
                "am".as_ref(),
                "-q".as_ref(),
                "--keep-cr".as_ref(),
                p.as_os_str(),
            ],
        )?;
    }
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    run_step(
        "make modules (cifs.ko out of tree)",
        Command::new("make")
            .arg("-C")
            .arg(&headers)
            .arg(format!("M={}", src.join("fs/smb/client").display()))
            .args([
                "CC=gcc",
                "CONFIG_CC_HAS_MIN_FUNCTION_ALIGNMENT=",
                "CONFIG_DEBUG_INFO_BTF_MODULES=",
            ])
            .arg(format!("-j{jobs}"))
            .arg("modules")
            .env("TRIXIE_LIBDIR", &trixie_libdir),
    )?;
    run_step(
        "strip --strip-debug cifs.ko",
        Command::new("strip")
            .arg("--strip-debug")
            .arg("-o")
            .arg(&ko)
            .arg(src.join("fs/smb/client/cifs.ko")),
    )?;
    let build_s = started.elapsed().as_secs_f64();
    // The object files are large (debug info); the module is what is kept.
    let _ = fs::remove_dir_all(&src);
    fs::write(&stamp, format!("{sum}\n")).map_err(|e| failed("writing the cifs-mod stamp", e))?;
    fs::write(out.join("build-seconds"), format!("{build_s:.1}\n"))
        .map_err(|e| failed("writing the build time", e))?;
    Ok(CifsModule {
        ko,
        series: series.into(),
        release,
        patches,
        build_s: Some(build_s),
    })
}

/// Unpacks the headers and kbuild packages once into `top/kbuild/` and
/// makes them usable here; returns the headers directory for `make -C` and
/// the trixie library directory its wrapped programs run with
/// (`TRIXIE_LIBDIR` of `qemu/linuxref/trixie-exec.sh`).
fn ensure_kbuild(
    build_dir: &Path,
    top: &Path,
    tree: &Path,
    abi: &str,
) -> Result<(PathBuf, PathBuf), SkipReason> {
    let root = top.join("kbuild");
    let headers = root.join(format!("usr/src/linux-headers-{abi}-cloud-amd64"));
    let libroot = root.join("trixie-libs");
    let libdir = libroot.join("usr/lib/x86_64-linux-gnu");
    let ready = root.join(".ready");
    if fs::read_to_string(&ready).is_ok_and(|s| s.trim() == KBUILD_STAMP)
        && headers.join("Makefile").is_file()
    {
        return Ok((headers, libdir));
    }
    let _ = fs::remove_dir_all(&root);
    for p in [
        format!("linux-headers-{abi}-cloud-amd64"),
        format!("linux-headers-{abi}-common"),
        format!("linux-kbuild-{abi}"),
    ] {
        dpkg_x(&trixie_deb(build_dir, &p)?, &root)?;
    }
    symlinks_inside(&root)?;
    // The arch package's Makefile includes the common one by absolute path.
    let mk = headers.join("Makefile");
    let text = fs::read_to_string(&mk).map_err(|e| failed("reading the headers' Makefile", e))?;
    let common = format!("/usr/src/linux-headers-{abi}-common/Makefile");
    let text = text.replace(
        &format!("include {common}"),
        &format!(
            "include $(dir $(lastword $(MAKEFILE_LIST)))../linux-headers-{abi}-common/Makefile"
        ),
    );
    let text = headers_makefile_inside(&text, &root);
    fs::write(&mk, text).map_err(|e| failed("writing the headers' Makefile", e))?;

    // trixie's loader and libraries for the glibc-2.38 kbuild programs.
    for p in WRAPPER_LIB_PACKAGES {
        dpkg_x(&trixie_deb(build_dir, p)?, &libroot)?;
    }
    let kbuild = root.join(format!("usr/lib/linux-kbuild-{abi}"));
    for prog in [
        "scripts/mod/modpost.real-lsb-64",
        "tools/objtool/objtool.real-x86",
    ] {
        let p = kbuild.join(prog);
        let real = p.with_extension(format!(
            "{}.bin",
            p.extension().and_then(|e| e.to_str()).unwrap_or("")
        ));
        fs::rename(&p, &real).map_err(|e| failed(&format!("moving {prog}"), e))?;
        fs::copy(super::guest_file("trixie-exec.sh"), &p)
            .map_err(|e| failed(&format!("writing the {prog} wrapper"), e))?;
        chmod_x(&p)?;
    }
    // Not packaged: the ASN.1 compiler (a host program of the source tree).
    let asn1 = kbuild.join("scripts/asn1_compiler");
    run_step(
        "compiling scripts/asn1_compiler",
        Command::new("gcc")
            .args(["-O2", "-I"])
            .arg(tree.join("include"))
            .arg("-o")
            .arg(&asn1)
            .arg(tree.join("scripts/asn1_compiler.c")),
    )?;
    fs::write(&ready, format!("{KBUILD_STAMP}\n"))
        .map_err(|e| failed("writing the kbuild stamp", e))?;
    Ok((headers, libdir))
}

/// The arch headers' Makefile with its remaining absolute `/usr/src/`
/// paths moved under `root`: 7.3's also sets
/// `KBUILD_OUTPUT=/usr/src/linux-headers-…`, which an external module build
/// resolves (and refuses when it does not exist).
fn headers_makefile_inside(text: &str, root: &Path) -> String {
    text.replace("=/usr/src/", &format!("={}/usr/src/", root.display()))
        .replace(" /usr/src/", &format!(" {}/usr/src/", root.display()))
}

/// Rewrites every absolute symlink under `root` to point inside `root`
/// (a package unpacked with `dpkg -x` may link to `/usr/...`).
fn symlinks_inside(root: &Path) -> Result<(), SkipReason> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            let Ok(meta) = fs::symlink_metadata(&p) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(p);
            } else if meta.file_type().is_symlink() {
                let Ok(target) = fs::read_link(&p) else {
                    continue;
                };
                if let Ok(inside) = target.strip_prefix("/") {
                    let _ = fs::remove_file(&p);
                    std::os::unix::fs::symlink(root.join(inside), &p)
                        .map_err(|e| failed(&format!("relinking {}", p.display()), e))?;
                }
            }
        }
    }
    Ok(())
}

fn chmod_x(p: &Path) -> Result<(), SkipReason> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(0o755))
        .map_err(|e| failed(&format!("chmod {}", p.display()), e))
}

/// FNV-1a of `bytes`, for the stamp.
fn fnv(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headers_makefile_points_inside() {
        let mk = "KBUILD_OUTPUT=/usr/src/linux-headers-7.3.4+deb13-cloud-amd64\n\
                  include $(dir $(lastword $(MAKEFILE_LIST)))../linux-headers-7.3.4+deb13-common/Makefile\n";
        let got = headers_makefile_inside(mk, Path::new("/b/kbuild"));
        assert!(
            got.starts_with(
                "KBUILD_OUTPUT=/b/kbuild/usr/src/linux-headers-7.3.4+deb13-cloud-amd64\n"
            ),
            "{got}"
        );
        assert!(got.contains("include $(dir $(lastword $(MAKEFILE_LIST)))../"));
        // 6.12's include by absolute path, before the relative rewrite.
        assert_eq!(
            headers_makefile_inside("include /usr/src/x/Makefile\n", Path::new("/r")),
            "include /r/usr/src/x/Makefile\n"
        );
    }

    /// trixie-exec.sh as kbuild runs a wrapped program: the real one beside
    /// it as NAME.bin, run under the loader of TRIXIE_LIBDIR with every
    /// argument passed through (here the host's loader and `echo`).
    #[test]
    fn the_wrapper_runs_the_real_program_under_the_given_loader() {
        let libdir = Path::new("/lib/x86_64-linux-gnu");
        let echo = Path::new("/bin/echo");
        if !libdir.join("ld-linux-x86-64.so.2").is_file() || !echo.is_file() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("cifsmod-wrap-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let prog = dir.join("modpost.real-lsb-64");
        fs::copy(echo, dir.join("modpost.real-lsb-64.bin")).unwrap();
        fs::copy(super::super::guest_file("trixie-exec.sh"), &prog).unwrap();
        chmod_x(&prog).unwrap();
        let out = Command::new(&prog)
            .args(["a b", "-c"])
            .env("TRIXIE_LIBDIR", libdir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "a b -c\n");
        // Without the library directory the loader is not found: a failure.
        let out = Command::new(&prog)
            .env_remove("TRIXIE_LIBDIR")
            .output()
            .unwrap();
        assert!(!out.status.success());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn absolute_links_are_made_to_point_inside() {
        let root = std::env::temp_dir().join(format!("cifsmod-links-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("usr/src/a")).unwrap();
        fs::write(root.join("usr/src/a/Makefile"), "x").unwrap();
        std::os::unix::fs::symlink("/usr/src/a", root.join("usr/abs")).unwrap();
        std::os::unix::fs::symlink("src/a", root.join("usr/rel")).unwrap();
        symlinks_inside(&root).unwrap();
        assert_eq!(
            fs::read_link(root.join("usr/abs")).unwrap(),
            root.join("usr/src/a")
        );
        assert_eq!(
            fs::read_link(root.join("usr/rel")).unwrap(),
            Path::new("src/a")
        );
        assert!(root.join("usr/abs/Makefile").is_file());
        fs::remove_dir_all(&root).unwrap();
    }
}

//! The host programs a guest build runs, shared by the reference guest
//! ([`super::build`], [`super::initramfs`], and the extra archives of
//! `guest`, `oracle` and `walks`) and the ksmbd fixture
//! (`crate::ksmbd`): checking that they are installed, running one to
//! completion with its output (or its tail) as the failure detail, `dpkg -x`,
//! `gcc -static`, packing a staged tree into a gzipped newc initramfs (or
//! appending it to one), and the cache stamps' fingerprint. Touches only the paths its callers name.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{failed, SkipReason};

/// Where `tool` is: on `PATH`, or in the sbin directories a non-root `PATH` lacks.
pub(crate) fn tool_path(tool: &str) -> Option<PathBuf> {
    crate::samba::which(tool)
}

/// The first of `(tool, package)` that is not installed, as a
/// [`SkipReason::MissingTool`] naming the package that has it.
pub(crate) fn require_tools(tools: &[(&str, &str)]) -> Result<(), SkipReason> {
    match tools.iter().find(|(tool, _)| tool_path(tool).is_none()) {
        Some((tool, package)) => Err(SkipReason::MissingTool {
            tool: (*tool).into(),
            package: (*package).into(),
        }),
        None => Ok(()),
    }
}

/// Runs a tool to completion; its stderr becomes the failure detail.
pub(crate) fn run_tool(step: &str, cmd: &mut Command) -> Result<String, SkipReason> {
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

/// Runs a step whose output runs long (a kernel build): on failure the
/// detail is the last 12 lines of its stdout and then its stderr, where
/// make's error sits.
pub(crate) fn run_step(step: &str, cmd: &mut Command) -> Result<(), SkipReason> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed(step, e))?;
    if out.status.success() {
        return Ok(());
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let tail: Vec<&str> = text.lines().rev().take(12).collect();
    Err(SkipReason::BuildFailed {
        step: step.into(),
        detail: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
    })
}

/// `dpkg -x DEB ROOT`: a package's files unpacked under `root`.
pub(crate) fn dpkg_x(deb: &Path, root: &Path) -> Result<(), SkipReason> {
    run_tool(
        &format!("dpkg -x {}", deb.display()),
        Command::new("dpkg").arg("-x").arg(deb).arg(root),
    )
    .map(drop)
}

/// Compiles a helper (`gcc -static -O2 -Wall FLAGS`) unless `out` is newer
/// than `src`.
pub(crate) fn gcc_static(src: &Path, out: &Path, flags: &[&str]) -> Result<(), SkipReason> {
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
            .args(["-static", "-O2"])
            .args(flags)
            .args(["-Wall", "-o"])
            .arg(out)
            .arg(src),
    )
    .map(drop)
}

/// Packs the staged tree `root` into `out` (`cpio -H newc`, every file
/// owned by root, names sorted, `gzip -6`), written beside it and renamed
/// into place so a failed pack never leaves a half archive at `out`.
pub(crate) fn pack_initramfs(root: &Path, out: &Path) -> Result<(), SkipReason> {
    let tmp = out.with_extension("tmp");
    run_tool(
        "packing the initramfs (cpio | gzip)",
        Command::new("sh")
            .arg("-c")
            .arg("cd \"$1\" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -6 > \"$2\"")
            .arg("sh")
            .arg(root)
            .arg(&tmp),
    )?;
    fs::rename(&tmp, out).map_err(|e| failed("writing the initramfs", e))
}

/// `base` (a gzipped initramfs) with the staged tree `root` appended as a
/// second archive ([`pack_initramfs`]'s), written to `out` (beside it,
/// then renamed): the kernel unpacks concatenated archives in order, so
/// `root`'s files join `base`'s, replacing those of the same name.
pub(crate) fn append_initramfs(base: &Path, root: &Path, out: &Path) -> Result<(), SkipReason> {
    let extra = out.with_extension("extra.gz");
    pack_initramfs(root, &extra)?;
    let mut image =
        fs::read(base).map_err(|e| failed(&format!("reading {}", base.display()), e))?;
    image.extend(fs::read(&extra).map_err(|e| failed("reading the appended archive", e))?);
    let tmp = out.with_extension("tmp");
    fs::write(&tmp, image).map_err(|e| failed("writing the initramfs", e))?;
    fs::rename(&tmp, out).map_err(|e| failed("writing the initramfs", e))
}

/// A guest that runs an `/init` of its own over the reference one:
/// `dir/root`, made afresh, holds `init` as `/init` (mode 755) and each of
/// `programs` (C source, name under `/`, extra gcc flags) compiled static;
/// it is appended to `base` ([`append_initramfs`]) as `dir/initramfs.gz`,
/// which is returned.
pub(crate) fn initramfs_with_init(
    base: &Path,
    dir: &Path,
    init: &[u8],
    programs: &[(PathBuf, &str, &[&str])],
) -> Result<PathBuf, SkipReason> {
    use std::os::unix::fs::PermissionsExt;
    let root = dir.join("root");
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(&root).map_err(|e| failed(&format!("making {}", root.display()), e))?;
    for (src, name, flags) in programs {
        gcc_static(src, &root.join(name), flags)?;
    }
    let path = root.join("init");
    fs::write(&path, init).map_err(|e| failed("writing /init", e))?;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
        .map_err(|e| failed("chmod /init", e))?;
    let out = dir.join("initramfs.gz");
    append_initramfs(base, &root, &out)?;
    Ok(out)
}

/// A cheap content fingerprint (FNV-1a, 16 hex digits) of `parts` for a
/// cache stamp.
pub(crate) fn digest(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(b"\0") {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_fnv1a_of_the_parts_each_ended_by_a_nul() {
        // FNV-1a 64 of the empty input is its offset basis; of "\0" one step on.
        assert_eq!(digest(&[]), "cbf29ce484222325");
        assert_eq!(digest(&[b""]), format!("{:016x}", 0xaf63_bd4c_8601_b7dfu64));
        assert_ne!(digest(&[b"ab", b"c"]), digest(&[b"a", b"bc"]));
    }

    #[test]
    fn a_missing_tool_names_its_package() {
        assert!(require_tools(&[("sh", "dash")]).is_ok());
        match require_tools(&[("sh", "dash"), ("no-such-tool-here", "pkg")]) {
            Err(SkipReason::MissingTool { tool, package }) => {
                assert_eq!(
                    (tool.as_str(), package.as_str()),
                    ("no-such-tool-here", "pkg")
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_packed_tree_lists_its_files_sorted_and_owned_by_root() {
        let dir = std::env::temp_dir().join(format!("linuxref-pack-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let root = dir.join("root");
        fs::create_dir_all(root.join("bin")).unwrap();
        fs::write(root.join("init"), "#!/bin/sh\n").unwrap();
        fs::write(root.join("bin/x"), "x").unwrap();
        let out = dir.join("initramfs.gz");
        if tool_path("cpio").is_none() {
            return;
        }
        pack_initramfs(&root, &out).unwrap();
        assert!(!out.with_extension("tmp").exists());
        let list = Command::new("sh")
            .arg("-c")
            .arg("gzip -dc \"$1\" | cpio -t -v --quiet")
            .arg("sh")
            .arg(&out)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&list.stdout);
        let names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_whitespace().last())
            .collect();
        assert_eq!(names, [".", "bin", "bin/x", "init"], "{text}");
        assert!(text.lines().all(|l| l.contains(" root ")), "{text}");
        // A tree that is not there: a named failure, nothing at `out`.
        let missing = dir.join("missing.gz");
        assert!(pack_initramfs(&dir.join("absent"), &missing).is_err());
        assert!(!missing.exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_guest_with_its_own_init_carries_it_and_its_programs() {
        if tool_path("cpio").is_none() || tool_path("gcc").is_none() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("linuxref-withinit-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let src = dir.join("hello.c");
        fs::write(&src, "int main(void) { return 0; }\n").unwrap();
        let base = dir.join("base.gz");
        fs::write(&base, b"base").unwrap();
        let programs = [(src, "hello", &[][..])];
        let out = initramfs_with_init(&base, &dir.join("g"), b"#!/bin/sh\n", &programs).unwrap();
        assert_eq!(out, dir.join("g/initramfs.gz"));
        let image = fs::read(&out).unwrap();
        let extra = dir.join("extra.gz");
        fs::write(
            &extra,
            image.strip_prefix(&b"base"[..]).expect("base first"),
        )
        .unwrap();
        let list = Command::new("sh")
            .arg("-c")
            .arg("gzip -dc \"$1\" | cpio -t -v --quiet")
            .arg("sh")
            .arg(&extra)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&list.stdout);
        let names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_whitespace().last())
            .collect();
        assert_eq!(names, [".", "hello", "init"], "{text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("-rwxr-xr-x") && l.ends_with(" init")),
            "{text}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_appended_tree_is_a_second_archive_after_the_base() {
        let dir = std::env::temp_dir().join(format!("linuxref-append-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let root = dir.join("root");
        fs::create_dir_all(root.join("extra")).unwrap();
        fs::write(root.join("extra/cifs.ko"), "ko").unwrap();
        if tool_path("cpio").is_none() {
            return;
        }
        let base = dir.join("base.gz");
        fs::write(&base, b"the base archive's bytes").unwrap();
        let out = dir.join("initramfs.gz");
        append_initramfs(&base, &root, &out).unwrap();
        assert!(!out.with_extension("tmp").exists());
        let image = fs::read(&out).unwrap();
        let tail = image
            .strip_prefix(&b"the base archive's bytes"[..])
            .expect("the base comes first, unchanged");
        let extra = dir.join("extra.gz");
        fs::write(&extra, tail).unwrap();
        let list = Command::new("sh")
            .arg("-c")
            .arg("gzip -dc \"$1\" | cpio -t --quiet")
            .arg("sh")
            .arg(&extra)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&list.stdout);
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [".", "extra", "extra/cifs.ko"]
        );
        // A base that is not there: a named failure, nothing at `out`.
        let missing = dir.join("missing.gz");
        assert!(append_initramfs(&dir.join("absent.gz"), &root, &missing).is_err());
        assert!(!missing.exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}

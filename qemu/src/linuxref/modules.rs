//! The guest's kernel modules out of the unpacked Debian package: finding
//! them, decompressing Debian 13's `.ko.xz`, and their load order from each
//! module's own `.modinfo` (`depends=` and `softdep=`), dependencies first.
//! Touches only the directories it is given under `BUILD_DIR/linuxref/`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::SkipReason;
use super::{failed, mkdir};

/// Modules loaded where the kernel has them, left out where it does not:
/// `ghash_generic` (6.1, 6.12) is gone by 7.3, whose `gcm` carries GHASH
/// from lib/crypto.
pub(super) const OPTIONAL_MODULES: &[&str] = &["ghash_generic"];

pub(super) fn find_file(dir: &Path, pred: impl Fn(&str) -> bool) -> Option<PathBuf> {
    let mut hits: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_str().is_some_and(&pred))
        .map(|e| e.path())
        .collect();
    hits.sort();
    hits.pop()
}

/// A module's name from its file name: `cifs_md4.ko.xz` → `cifs_md4`.
pub(super) fn module_name(file: &str) -> Option<String> {
    let stem = file
        .strip_suffix(".ko")
        .or_else(|| file.strip_suffix(".ko.xz"))?;
    Some(stem.replace('-', "_"))
}

/// A module file's bytes, xz-compressed ones (Debian 13) decompressed.
pub(super) fn module_bytes(file: &Path) -> Result<Vec<u8>, SkipReason> {
    if file.extension().is_some_and(|e| e == "xz") {
        let out = Command::new("xz")
            .arg("-dc")
            .arg(file)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| failed("xz -dc", e))?;
        if !out.status.success() {
            return Err(SkipReason::BuildFailed {
                step: format!("xz -dc {}", file.display()),
                detail: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        Ok(out.stdout)
    } else {
        fs::read(file).map_err(|e| failed("reading a module", e))
    }
}

/// `modules` with every `.ko.xz` replaced by its decompressed `.ko` in
/// `dir` (busybox insmod takes plain ELF).
pub(crate) fn decompressed_modules(
    dir: &Path,
    modules: &[PathBuf],
) -> Result<Vec<PathBuf>, SkipReason> {
    let _ = fs::remove_dir_all(dir);
    mkdir(dir)?;
    let mut out = Vec::new();
    for m in modules {
        let name = m.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        match name.strip_suffix(".xz") {
            Some(plain) => {
                let to = dir.join(plain);
                fs::write(&to, module_bytes(m)?).map_err(|e| failed("writing a module", e))?;
                out.push(to);
            }
            None => out.push(m.clone()),
        }
    }
    Ok(out)
}

/// Module files under `modules_root/VERSION/` needed for `wanted`, in load
/// order (dependencies first), read from each module's `.modinfo`
/// `depends=` (the package ships no modules.dep: depmod runs at install
/// time). A wanted module that is built in (`modules.builtin`) is skipped;
/// `softdep=` modules (cifs asks for its crypto that way) are loaded first
/// when they exist as modules and skipped otherwise; so is a wanted module
/// of [`OPTIONAL_MODULES`] that the package lacks.
pub(crate) fn module_load_order(
    modules_root: &Path,
    wanted: &[&str],
) -> Result<Vec<PathBuf>, SkipReason> {
    let mut by_name = BTreeMap::new();
    let mut builtin = BTreeSet::new();
    let mut stack = vec![modules_root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(n) = p.file_name().and_then(|n| n.to_str()) {
                if n == "modules.builtin" {
                    let text = fs::read_to_string(&p).unwrap_or_default();
                    builtin.extend(
                        text.lines()
                            .filter_map(|l| module_name(l.rsplit('/').next()?)),
                    );
                } else if let Some(name) = module_name(n) {
                    by_name.insert(name, p.clone());
                }
            }
        }
    }
    let mut order = Vec::new();
    let mut done = builtin;
    for w in wanted {
        if OPTIONAL_MODULES.contains(w) && !by_name.contains_key(*w) {
            continue;
        }
        visit_module(w, &by_name, &mut done, &mut Vec::new(), &mut order)?;
    }
    Ok(order)
}

pub(super) fn visit_module(
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
    let bytes = module_bytes(file)?;
    path.push(name.to_string());
    for dep in modinfo_softdeps(&bytes) {
        if by_name.contains_key(&dep) && !path.contains(&dep) {
            visit_module(&dep, by_name, done, path, order)?;
        }
    }
    for dep in modinfo_depends(&bytes) {
        visit_module(&dep, by_name, done, path, order)?;
    }
    path.pop();
    done.insert(name.to_string());
    order.push(file.clone());
    Ok(())
}

/// The `depends=` list of a module's `.modinfo` (NUL-separated `key=value`).
pub(super) fn modinfo_depends(ko: &[u8]) -> Vec<String> {
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

/// Every module a `softdep=` entry names (`pre:`/`post:` markers dropped).
pub(super) fn modinfo_softdeps(ko: &[u8]) -> Vec<String> {
    ko.split(|&b| b == 0)
        .filter_map(|s| s.strip_prefix(b"softdep="))
        .flat_map(|d| {
            String::from_utf8_lossy(d)
                .split_whitespace()
                .filter(|w| !w.ends_with(':'))
                .map(|w| w.replace('-', "_"))
                .collect::<Vec<_>>()
        })
        .collect()
}

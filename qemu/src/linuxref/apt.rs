//! Where the reference guest's Debian packages come from: the machine's
//! own apt configuration (6.1, busybox) or a private one under
//! `BUILD_DIR/linuxref/apt-trixie/` for Debian 13 (its own sources list,
//! lists and cache directories, so the machine's apt configuration is never
//! changed); `apt-cache depends` for the versioned kernel package and
//! `apt-get download` into a directory. Touches only the directories it is
//! given and the network apt reaches.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::modules::find_file;
use super::{failed, mkdir, Release, SkipReason, KERNEL_METAPACKAGE};

/// The suites of the private apt configuration (Debian 13 and its backports).
pub const PRIVATE_SUITES: &[&str] = &["trixie", "trixie-backports"];
/// The Debian archive used when the machine's sources name none.
const DEFAULT_ARCHIVE: &str = "http://deb.debian.org/debian";

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
pub(super) fn deb_version(deb: &Path) -> Option<String> {
    let name = deb.file_name()?.to_str()?;
    let v = name.split('_').nth(1)?;
    Some(v.replace("%3a", ":"))
}

/// The versioned kernel package the metapackage depends on in `apt`'s lists.
pub(super) fn current_kernel_package(apt: &AptSource) -> Result<String, SkipReason> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linuxref::modules::{modinfo_softdeps, module_name};

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
}

//! Our own builds of the reference guest's kernel: Debian's
//! `linux-source-6.12` (6.12.117, the release of the reference guest)
//! configured with `linux/config/6.12-guest.config`, unpatched (`vanilla`) or
//! with patch series of `linux/patches/6.12/` (`negative`, `noalloc`, ...),
//! and booted with the same reference initramfs as Debian's kernel.
//!
//! Building runs `linux/kbuild.sh` (make, gcc, ccache), which writes only
//! `BUILD_DIR/kbuild/` and `BUILD_DIR/ccache/` and reads the pristine tree
//! that [`ensure_linux_source`] unpacked. Selecting a kernel
//! ([`select_kernel`]) gives the reference's [`Paths`] with that kernel
//! image and names, so every runner of the guest takes it unchanged.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{ensure_linux_source, Paths, SkipReason, LINUX_SOURCE_VERSION};

/// The patch series of our 6.12 kernels, one directory each.
pub const PATCHES_DIR: &str = "linux/patches/6.12";
/// Deliberately broken variants (never shipped), for the stress oracle's
/// proof that it can fail: each directory stacks on a series of
/// [`PATCHES_DIR`].
pub const BROKEN_DIR: &str = "linux/broken/6.12";

/// Named variants whose series directory is not their own name.
const NAMED: &[(&str, &[&str])] = &[
    ("vanilla", &[]),
    ("negative", &["patches/6.12/tmpfs-negative"]),
    ("noalloc", &["patches/6.12/tmpfs-noalloc"]),
    (
        "noalloc-broken",
        &[
            "patches/6.12/tmpfs-noalloc",
            "broken/6.12/noalloc-no-rename-check",
        ],
    ),
];

/// A kernel the reference guest can boot.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kernel {
    /// Debian's `linux-image-6.12.117+deb13-cloud-amd64` (modules loaded
    /// from the initramfs).
    Debian,
    /// Our build, named by its variant: `vanilla`, `negative`, `noalloc`,
    /// or any series directory of [`PATCHES_DIR`].
    Built(String),
}

impl Kernel {
    /// The kernels `make linux-patched` compares, in report order.
    pub fn defaults() -> Vec<Kernel> {
        ["debian", "vanilla", "negative", "noalloc"]
            .iter()
            .map(|k| k.parse().expect("known kernel"))
            .collect()
    }

    /// How reports name it: `6.12.117` (Debian's) or `6.12.117-VARIANT`.
    pub fn label(&self) -> String {
        match self {
            Kernel::Debian => LINUX_SOURCE_VERSION.to_string(),
            Kernel::Built(v) => format!("{LINUX_SOURCE_VERSION}-{v}"),
        }
    }

    /// The series directories applied to the pristine tree, in order
    /// (empty for vanilla and Debian's kernel).
    pub fn series(&self) -> Vec<PathBuf> {
        let Kernel::Built(v) = self else {
            return Vec::new();
        };
        let linux = crate::runner::workspace_root().join("linux");
        match NAMED.iter().find(|(n, _)| n == v) {
            Some((_, dirs)) => dirs.iter().map(|d| linux.join(d)).collect(),
            None => vec![linux.join("patches/6.12").join(v)],
        }
    }
}

impl std::str::FromStr for Kernel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let prefix = format!("{LINUX_SOURCE_VERSION}-");
        let v = s.strip_prefix(&prefix).unwrap_or(s);
        if v == "debian" || v == LINUX_SOURCE_VERSION {
            return Ok(Kernel::Debian);
        }
        let ok = !v.is_empty()
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        let k = Kernel::Built(v.to_string());
        if ok && k.series().iter().all(|d| d.is_dir()) {
            Ok(k)
        } else {
            Err(format!(
                "unknown kernel `{s}` (expected debian, vanilla, negative, noalloc, noalloc-broken \
                 or a series directory of {PATCHES_DIR}/)"
            ))
        }
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// What a kernel build needs beyond the reference guest's tools, with the
/// Debian package of each.
const BUILD_TOOLS: &[(&str, &str)] = &[
    ("make", "make"),
    ("gcc", "gcc"),
    ("flex", "flex"),
    ("bison", "bison"),
    ("bc", "bc"),
    ("ccache", "ccache"),
    ("perl", "perl"),
    ("git", "git"),
    ("flock", "util-linux"),
];

/// Builds `variant` (or finds it up to date) and returns its bzImage,
/// `BUILD_DIR/kbuild/VARIANT/bzImage`. The build's progress goes to stderr.
pub fn ensure_kernel(build_dir: &Path, kernel: &Kernel) -> Result<PathBuf, SkipReason> {
    let Kernel::Built(variant) = kernel else {
        return Err(SkipReason::BuildFailed {
            step: "building a kernel".into(),
            detail: "Debian's kernel is downloaded, not built".into(),
        });
    };
    for (tool, package) in BUILD_TOOLS {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Err(SkipReason::MissingTool {
                tool: (*tool).into(),
                package: (*package).into(),
            });
        }
    }
    let tree = ensure_linux_source(build_dir)?;
    let script = crate::runner::workspace_root().join("linux/kbuild.sh");
    let status = Command::new("bash")
        .arg(&script)
        .arg(&tree)
        .arg(build_dir)
        .arg(variant)
        .args(kernel.series())
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| SkipReason::BuildFailed {
            step: format!("running {}", script.display()),
            detail: e.to_string(),
        })?;
    let image = build_dir.join("kbuild").join(variant).join("bzImage");
    if status.success() && image.is_file() {
        Ok(image)
    } else {
        Err(SkipReason::BuildFailed {
            step: format!("building kernel {}", kernel.label()),
            detail: format!("linux/kbuild.sh exited with {status} (its output is above)"),
        })
    }
}

/// The reference guest `paths` with `kernel` in place of Debian's: its image
/// (built when missing) and the names reports print.
pub fn select_kernel(
    paths: &Paths,
    build_dir: &Path,
    kernel: &Kernel,
) -> Result<Paths, SkipReason> {
    if *kernel == Kernel::Debian {
        return Ok(paths.clone());
    }
    let image = ensure_kernel(build_dir, kernel)?;
    let series: Vec<String> = kernel
        .series()
        .iter()
        .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let patches = if series.is_empty() {
        "unpatched".to_string()
    } else {
        series.join(" + ")
    };
    Ok(Paths {
        kernel: image,
        kernel_package: format!(
            "our build of linux-source-6.12, {patches}, linux/config/6.12-guest.config"
        ),
        package_version: kernel.label(),
        kernel_release: kernel.label(),
        ..paths.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_round_trip() {
        for k in Kernel::defaults() {
            assert_eq!(k.label().parse::<Kernel>(), Ok(k.clone()));
        }
        assert_eq!("6.12.117".parse::<Kernel>(), Ok(Kernel::Debian));
        assert_eq!(
            "6.12.117-noalloc".parse::<Kernel>(),
            Ok(Kernel::Built("noalloc".into()))
        );
        assert!("nosuch".parse::<Kernel>().is_err());
        assert!("../x".parse::<Kernel>().is_err());
    }

    #[test]
    fn variants_name_their_series() {
        let k: Kernel = "noalloc-broken".parse().unwrap();
        let s = k.series();
        assert_eq!(s.len(), 2);
        assert!(s[0].ends_with("patches/6.12/tmpfs-noalloc"));
        assert!(Kernel::Built("vanilla".into()).series().is_empty());
    }
}

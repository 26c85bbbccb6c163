//! Our own builds of the reference guest's kernel, per release: Debian's
//! `linux-source-6.12` (6.12.117) or `linux-source-7.3` (7.3.4) configured
//! with `linux/config/REL-guest.config`, unpatched (`vanilla`) or with patch
//! series of `linux/patches/REL/` (`negative`, `noalloc`, ...), and booted
//! with the same reference initramfs as Debian's kernel of that release.
//!
//! Building runs `linux/kbuild.sh` (make, gcc, ccache), which writes only
//! `BUILD_DIR/kbuild/` (6.12) or `BUILD_DIR/kbuild-REL/` and
//! `BUILD_DIR/ccache/`, and reads the pristine tree that
//! [`ensure_linux_source`] unpacked. Selecting a kernel ([`select_kernel`])
//! gives the reference's [`Paths`] with that kernel image and names, so every
//! runner of the guest takes it unchanged.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{ensure_linux_source, Fs, Paths, Release, SkipReason};

/// The patch series of our 6.12 kernels, one directory each.
pub const PATCHES_DIR: &str = "linux/patches/6.12";
/// Deliberately broken 6.12 variants (never shipped), for the stress
/// oracle's proof that it can fail: each directory stacks on a series of
/// [`PATCHES_DIR`].
pub const BROKEN_DIR: &str = "linux/broken/6.12";

/// `linux/patches/REL` of a release.
pub fn patches_dir(release: Release) -> String {
    format!("linux/patches/{}", release.name())
}

/// `linux/broken/REL` of a release: its deliberately broken variants
/// (never shipped); a directory `noalloc-*` there stacks on the release's
/// `tmpfs-noalloc` series.
pub fn broken_dir(release: Release) -> String {
    format!("linux/broken/{}", release.name())
}

/// A deliberately broken variant: its name, its directory under
/// `linux/broken/REL/`, whether that stacks on the release's `tmpfs-noalloc`
/// (or is a whole series of its own), and the filesystems on which the
/// oracle must find wrong answers in it (on every other one it must find
/// none).
struct Broken {
    name: &'static str,
    dir: &'static str,
    on_noalloc: bool,
    fails_on: &'static [Fs],
}

/// `noalloc-broken` drops the rename_lock re-check of a final miss (a miss
/// is final on tmpfs and ramfs, the two filesystems that set the flag);
/// `noalloc-flag-collision` (7.3) is the noalloc
/// series with the 6.12 series' flag value, 7.3's `SB_I_ALLOW_HSM`, which
/// ext4 sets.
const BROKEN: &[Broken] = &[
    Broken {
        name: "noalloc-broken",
        dir: "noalloc-no-rename-check",
        on_noalloc: true,
        fails_on: &[Fs::Tmpfs, Fs::Ramfs],
    },
    Broken {
        name: "noalloc-flag-collision",
        dir: "noalloc-flag-collision",
        on_noalloc: false,
        fails_on: &[Fs::Ext4],
    },
];

/// A kernel the reference guest can boot.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kernel {
    /// Debian's cloud kernel of the release
    /// (`linux-image-6.12.117+deb13-cloud-amd64`, the split 7.3.4 packages),
    /// modules loaded from the initramfs.
    Debian(Release),
    /// Our build of the release, named by its variant: `vanilla`,
    /// `negative`, `noalloc`, a broken variant, or any series directory of
    /// `linux/patches/REL/`.
    Built(Release, String),
}

impl Kernel {
    /// The kernels `make linux-patched` compares, in report order.
    pub fn defaults(release: Release) -> Vec<Kernel> {
        let mut v = vec![Kernel::Debian(release)];
        v.extend(
            ["vanilla", "negative", "noalloc"]
                .iter()
                .map(|k| Kernel::Built(release, (*k).to_string())),
        );
        v
    }

    /// The kernels `make linux-oracle` checks: our vanilla, negative and
    /// noalloc, then every broken variant whose series exists in this
    /// checkout for the release.
    pub fn oracle_set(release: Release) -> Vec<Kernel> {
        let mut v: Vec<Kernel> = ["vanilla", "negative", "noalloc"]
            .iter()
            .map(|k| Kernel::Built(release, (*k).to_string()))
            .collect();
        for b in BROKEN {
            let k = Kernel::Built(release, b.name.to_string());
            if k.series().iter().all(|d| d.is_dir()) {
                v.push(k);
            }
        }
        v
    }

    /// The release it is of.
    pub fn release(&self) -> Release {
        match self {
            Kernel::Debian(r) | Kernel::Built(r, _) => *r,
        }
    }

    /// The full release (`7.3.4`; `6.1` for the machine's kernel).
    fn full(&self) -> &'static str {
        let r = self.release();
        r.full().unwrap_or(r.name())
    }

    /// How reports name it: `6.12.117` (Debian's) or `7.3.4-VARIANT`.
    pub fn label(&self) -> String {
        match self {
            Kernel::Debian(_) => self.full().to_string(),
            Kernel::Built(_, v) => format!("{}-{v}", self.full()),
        }
    }

    /// The variant of our build (`None`: Debian's kernel).
    pub fn variant(&self) -> Option<&str> {
        match self {
            Kernel::Debian(_) => None,
            Kernel::Built(_, v) => Some(v),
        }
    }

    /// Where the oracle must find wrong answers (a deliberately broken
    /// variant, the oracle's negative control); empty: nowhere.
    pub fn broken_on(&self) -> &'static [Fs] {
        let Some(v) = self.variant() else {
            return &[];
        };
        BROKEN
            .iter()
            .find(|b| b.name == v)
            .map_or(&[], |b| b.fails_on)
    }

    /// Whether a path walk's dcache miss on `fs` is final in this kernel,
    /// so that `openat2(RESOLVE_CACHED)` of a missing name answers ENOENT
    /// rather than EAGAIN: the tmpfs-noalloc series and the variants built
    /// on it give tmpfs and ramfs a complete dcache; the flag collision
    /// gives one to ext4 as well (that is how it is broken).
    pub fn miss_is_final(&self, fs: Fs) -> bool {
        let noalloc = self.variant().is_some_and(|v| v.starts_with("noalloc"));
        match fs {
            Fs::Tmpfs | Fs::Ramfs | Fs::Devtmpfs => noalloc,
            Fs::Ext4 => self.broken_on().contains(&Fs::Ext4),
        }
    }

    /// The series directories applied to the pristine tree, in order
    /// (empty for vanilla and Debian's kernel).
    pub fn series(&self) -> Vec<PathBuf> {
        let Kernel::Built(r, v) = self else {
            return Vec::new();
        };
        let root = crate::runner::workspace_root();
        let patches = root.join(patches_dir(*r));
        let broken = root.join(broken_dir(*r));
        let noalloc = patches.join("tmpfs-noalloc");
        match v.as_str() {
            "vanilla" => Vec::new(),
            "negative" => vec![patches.join("tmpfs-negative")],
            "noalloc" => vec![noalloc],
            v => match BROKEN.iter().find(|b| b.name == v) {
                Some(b) if b.on_noalloc => vec![noalloc, broken.join(b.dir)],
                Some(b) => vec![broken.join(b.dir)],
                None => vec![patches.join(v)],
            },
        }
    }

    /// Parses a kernel name: `debian` or a variant (of `release`), or a
    /// full label (`6.12.117`, `7.3.4-noalloc`), which names its own release.
    pub fn parse(s: &str, release: Release) -> Result<Kernel, String> {
        let (release, v) = Release::PATCHED
            .iter()
            .find_map(|r| {
                let full = r.full()?;
                if s == full {
                    Some((*r, "debian"))
                } else {
                    Some((*r, s.strip_prefix(full)?.strip_prefix('-')?))
                }
            })
            .unwrap_or((release, s));
        if v == "debian" {
            return Ok(Kernel::Debian(release));
        }
        let ok = !v.is_empty()
            && release.full().is_some()
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        let k = Kernel::Built(release, v.to_string());
        if ok && k.series().iter().all(|d| d.is_dir()) {
            Ok(k)
        } else {
            Err(format!(
                "unknown kernel `{s}` for Linux {release} (expected debian, vanilla, negative, \
                 noalloc, {} or a series directory of {}/)",
                BROKEN.iter().map(|b| b.name).collect::<Vec<_>>().join(", "),
                patches_dir(release)
            ))
        }
    }

    /// Parses a comma-separated list ([`Kernel::parse`] each).
    pub fn parse_list(s: &str, release: Release) -> Result<Vec<Kernel>, String> {
        s.split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(|w| Kernel::parse(w, release))
            .collect()
    }
}

impl std::str::FromStr for Kernel {
    type Err = String;
    /// [`Kernel::parse`] with the default release (6.12).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kernel::parse(s, Release::default())
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

/// Where `linux/kbuild.sh` leaves `kernel`'s image:
/// `BUILD_DIR/kbuild/VARIANT/bzImage` (6.12),
/// `BUILD_DIR/kbuild-REL/VARIANT/bzImage` (other releases).
pub fn kernel_image(build_dir: &Path, kernel: &Kernel) -> Option<PathBuf> {
    let v = kernel.variant()?;
    Some(
        build_dir
            .join(kernel.release().kbuild_dir())
            .join(v)
            .join("bzImage"),
    )
}

/// Builds `variant` (or finds it up to date) and returns its bzImage (see
/// [`kernel_image`]). The build's progress goes to stderr.
pub fn ensure_kernel(build_dir: &Path, kernel: &Kernel) -> Result<PathBuf, SkipReason> {
    let (Some(variant), Some(image)) = (kernel.variant(), kernel_image(build_dir, kernel)) else {
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
    let tree = ensure_linux_source(build_dir, kernel.release())?;
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
    if paths.release != kernel.release() {
        return Err(SkipReason::BuildFailed {
            step: format!("selecting kernel {kernel}"),
            detail: format!(
                "the reference guest is Linux {}'s, the kernel Linux {}'s",
                paths.release,
                kernel.release()
            ),
        });
    }
    if let Kernel::Debian(_) = kernel {
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
            "our build of {}, {patches}, linux/config/{}-guest.config",
            kernel.release().source_package(),
            kernel.release().name()
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
        for r in Release::PATCHED {
            // Our variants parse where their series exist in this checkout.
            for k in Kernel::defaults(r)
                .into_iter()
                .filter(|k| k.series().iter().all(|d| d.is_dir()))
            {
                assert_eq!(k.label().parse::<Kernel>(), Ok(k.clone()));
                assert_eq!(Kernel::parse(&k.label(), Release::V6_1), Ok(k.clone()));
            }
        }
        assert_eq!(
            "6.12.117".parse::<Kernel>(),
            Ok(Kernel::Debian(Release::V6_12))
        );
        assert_eq!(
            "6.12.117-noalloc".parse::<Kernel>(),
            Ok(Kernel::Built(Release::V6_12, "noalloc".into()))
        );
        assert!("nosuch".parse::<Kernel>().is_err());
        assert!("../x".parse::<Kernel>().is_err());
        assert!(Kernel::parse("vanilla", Release::V6_1).is_err());
    }

    #[test]
    fn the_release_switch_picks_the_kernels_release() {
        let k = Kernel::parse("debian", Release::V7_3).unwrap();
        assert_eq!(k, Kernel::Debian(Release::V7_3));
        assert_eq!(k.label(), "7.3.4");
        let v = Kernel::parse("vanilla", Release::V7_3).unwrap();
        assert_eq!(v.label(), "7.3.4-vanilla");
        // A full label names its own release whatever the switch says.
        assert_eq!(
            Kernel::parse("6.12.117-vanilla", Release::V7_3).unwrap(),
            Kernel::Built(Release::V6_12, "vanilla".into())
        );
        assert_eq!(
            Kernel::parse_list("debian, vanilla", Release::V7_3).unwrap(),
            [Kernel::Debian(Release::V7_3), v.clone()]
        );
        let b = Path::new("/b");
        assert_eq!(
            kernel_image(b, &v),
            Some(PathBuf::from("/b/kbuild-7.3/vanilla/bzImage"))
        );
        assert_eq!(
            kernel_image(b, &Kernel::Built(Release::V6_12, "noalloc".into())),
            Some(PathBuf::from("/b/kbuild/noalloc/bzImage"))
        );
        assert_eq!(kernel_image(b, &k), None);
    }

    #[test]
    fn variants_name_their_series() {
        let k: Kernel = "noalloc-broken".parse().unwrap();
        let s = k.series();
        assert_eq!(s.len(), 2);
        assert!(s[0].ends_with("patches/6.12/tmpfs-noalloc"));
        assert!(s[1].ends_with("broken/6.12/noalloc-no-rename-check"));
        assert_eq!(k.broken_on(), [Fs::Tmpfs, Fs::Ramfs]);
        let c = Kernel::Built(Release::V7_3, "noalloc-flag-collision".into());
        let s = c.series();
        assert_eq!(s.len(), 1, "a whole series of its own");
        assert!(s[0].ends_with("broken/7.3/noalloc-flag-collision"));
        assert_eq!(c.broken_on(), [Fs::Ext4]);
        assert!(c.miss_is_final(Fs::Ext4) && c.miss_is_final(Fs::Ramfs));
        assert!(k.miss_is_final(Fs::Tmpfs) && !k.miss_is_final(Fs::Ext4));
        let v = Kernel::Built(Release::V7_3, "vanilla".into());
        let d = Kernel::Debian(Release::V7_3);
        for fs in [Fs::Tmpfs, Fs::Ramfs, Fs::Ext4] {
            assert!(!v.miss_is_final(fs) && !d.miss_is_final(fs));
        }
        assert_eq!(
            Kernel::Built(Release::V7_3, "noalloc".into()).broken_on(),
            []
        );
        assert!(Kernel::Built(Release::V6_12, "vanilla".into())
            .series()
            .is_empty());
        // The oracle's set holds only variants whose series exist here.
        let set = Kernel::oracle_set(Release::V6_12);
        assert!(set.contains(&k));
        assert!(set.iter().all(|k| k.series().iter().all(|d| d.is_dir())));
    }
}

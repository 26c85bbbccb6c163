//! The Linux patch check: every series under `linux/patches/REL/` (6.12, and
//! 7.3 where it exists) applies with `git am` to that release's pristine tree
//! (Debian's `linux-source-REL`, fetched and unpacked once under build/) and
//! every C file it touches compiles with `linux/config/REL-guest.config`
//! (`linux/check-series.sh`, once per tree). `make test` checks the newest
//! release's series (the ones posted); every release is `make linux-check`
//! (`#[ignore]`d in `make test`: each release's tree is fetched and its
//! object tree prepared on a fresh clone).
//! Skips where the source package or the kernel build tools cannot be had (a
//! failure under `REQUIRE_FIXTURES=1`). A few minutes the first time (the
//! object tree is prepared), seconds after.

use std::process::Command;

const FILE: &str = "linux_patches";

/// The tests of this file run in parallel threads, and a fresh checkout has
/// no source yet: two `apt-get update`s on one private list directory would
/// collide on its lock. One fetch at a time.
static FETCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn linux_source(
    build_dir: &std::path::Path,
    release: qemu::linuxref::Release,
) -> Result<std::path::PathBuf, qemu::linuxref::SkipReason> {
    let _one = FETCH.lock().unwrap_or_else(|e| e.into_inner());
    qemu::linuxref::ensure_linux_source(build_dir, release)
}

#[test]
#[ignore = "every release's tree and object tree: run with `make linux-check`"]
fn every_series_applies_and_compiles() {
    check_releases(&qemu::linuxref::Release::PATCHED);
}

/// The newest release's series only: the posted ones.
#[test]
fn the_newest_series_apply_and_compile() {
    check_releases(&qemu::linuxref::Release::PATCHED[qemu::linuxref::Release::PATCHED.len() - 1..]);
}

/// `check_release` for each release of `releases` that has series here.
fn check_releases(releases: &[qemu::linuxref::Release]) {
    for tool in [
        "make", "gcc", "flex", "bison", "bc", "ccache", "git", "flock",
    ] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return qemu::fixtures::skip(
                FILE,
                "the kernel build tools",
                format!("{tool} is missing (make setup)"),
            );
        }
    }
    let build_dir = qemu::linuxref::default_build_dir();
    let root = qemu::runner::workspace_root();
    // Each release that has series here, against its own pristine tree.
    for &release in releases {
        let dir = root.join(qemu::linuxref::patches_dir(release));
        if !dir.is_dir() {
            continue;
        }
        let tree = match linux_source(&build_dir, release) {
            Ok(t) => t,
            Err(why) => return qemu::fixtures::skip(FILE, &release.source_package(), why),
        };
        check_release(&tree, &build_dir, &dir);
    }
}

/// The posting check's negative control: each series of the newest release,
/// copied with the form its v1 was posted in (a placeholder Signed-off-by
/// glued to the message without a blank line, the cover letter's To/Cc
/// gone), is refused with those reasons; the series as committed pass.
#[test]
fn check_posting_refuses_the_v1_form() {
    let release = *qemu::linuxref::Release::PATCHED.last().expect("a release");
    let root = qemu::runner::workspace_root();
    let dir = root.join(qemu::linuxref::patches_dir(release));
    let build_dir = qemu::linuxref::default_build_dir();
    let tree = match linux_source(&build_dir, release) {
        Ok(t) => t,
        Err(why) => return qemu::fixtures::skip(FILE, &release.source_package(), why),
    };
    let check = |series: &[std::path::PathBuf]| {
        Command::new("python3")
            .arg(root.join("linux/check-posting.py"))
            .arg(&tree)
            .args(series)
            .output()
            .expect("running linux/check-posting.py")
    };
    let mut series: Vec<_> = std::fs::read_dir(&dir)
        .expect("linux/patches/REL")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    series.sort();
    let ok = check(&series);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    // A withdrawn series (its cover letter says "Not for posting") is
    // checked all the same, and its line says it is no posting; the
    // others' lines do not.
    let ok_out = String::from_utf8_lossy(&ok.stdout);
    for s in &series {
        let name = s.file_name().unwrap().to_string_lossy();
        let cover = std::fs::read_to_string(s.join("0000-cover-letter.patch")).unwrap_or_default();
        let withdrawn = cover.lines().any(|l| l.starts_with("Not for posting"));
        let line = ok_out
            .lines()
            .find(|l| l.starts_with(&format!("check-posting: {name}: ")))
            .unwrap_or_else(|| panic!("{name}: no line in:\n{ok_out}"));
        assert_eq!(line.contains("not for posting"), withdrawn, "{line}");
    }
    let tmp = std::env::temp_dir().join(format!("check-posting-v1-{}", std::process::id()));
    let mut copies = Vec::new();
    for s in &series {
        let to = tmp.join(s.file_name().unwrap());
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(s).unwrap() {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap();
            let v1 = if p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("0000-")
            {
                // No To/Cc headers.
                text.lines()
                    .scan(false, |in_cc, l| {
                        let cont = *in_cc && l.starts_with(' ');
                        *in_cc = l.starts_with("To: ") || l.starts_with("Cc: ") || cont;
                        Some((*in_cc, l))
                    })
                    .filter(|(drop, _)| !drop)
                    .map(|(_, l)| format!("{l}\n"))
                    .collect()
            } else {
                // The trailers replaced by a placeholder sign-off glued to
                // the last paragraph.
                let (msg, rest) = text.split_once("\n---\n").unwrap();
                let body = msg.rsplit_once("\n\n").unwrap().0;
                format!("{body}\nSigned-off-by: vfs-lab <vfs-lab@localhost>\n---\n{rest}")
            };
            std::fs::write(to.join(p.file_name().unwrap()), v1).unwrap();
        }
        copies.push(to);
    }
    let bad = check(&copies);
    let _ = std::fs::remove_dir_all(&tmp);
    let out = String::from_utf8_lossy(&bad.stdout);
    assert_eq!(bad.status.code(), Some(1), "{out}");
    for s in &series {
        let name = s.file_name().unwrap().to_string_lossy();
        for reason in ["not a block of trailers", "To/Cc lack"] {
            assert!(
                out.lines()
                    .any(|l| l.starts_with(&format!("check-posting: {name}: "))
                        && l.contains(reason)),
                "{name}: no '{reason}' in:\n{out}"
            );
        }
    }
}

/// A patch whose message has no trailer block (git interpret-trailers
/// --parse finds none; b4 would guess where the tags it collects go) is
/// refused: every series of the newest release, its patches' trailer
/// blocks cut off.
#[test]
fn check_posting_refuses_a_patch_without_trailers() {
    let release = *qemu::linuxref::Release::PATCHED.last().expect("a release");
    let root = qemu::runner::workspace_root();
    let dir = root.join(qemu::linuxref::patches_dir(release));
    let build_dir = qemu::linuxref::default_build_dir();
    let tree = match linux_source(&build_dir, release) {
        Ok(t) => t,
        Err(why) => return qemu::fixtures::skip(FILE, &release.source_package(), why),
    };
    let tmp = std::env::temp_dir().join(format!("check-posting-bare-{}", std::process::id()));
    let mut copies = Vec::new();
    let mut names = Vec::new();
    for e in std::fs::read_dir(&dir).expect("linux/patches/REL") {
        let s = e.unwrap().path();
        if !s.is_dir() {
            continue;
        }
        let to = tmp.join(s.file_name().unwrap());
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(&s).unwrap() {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let bare = if name.starts_with("0000-") {
                text
            } else {
                let (msg, rest) = text.split_once("\n---\n").unwrap();
                let body = msg.rsplit_once("\n\n").unwrap().0;
                format!("{body}\n---\n{rest}")
            };
            std::fs::write(to.join(&name), bare).unwrap();
        }
        names.push(s.file_name().unwrap().to_string_lossy().to_string());
        copies.push(to);
    }
    let bad = Command::new("python3")
        .arg(root.join("linux/check-posting.py"))
        .arg(&tree)
        .args(&copies)
        .output()
        .expect("running linux/check-posting.py");
    let _ = std::fs::remove_dir_all(&tmp);
    let out = String::from_utf8_lossy(&bad.stdout);
    assert_eq!(bad.status.code(), Some(1), "{out}");
    for name in names {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("check-posting: {name}: "))
                    && l.contains("no trailer block")),
            "{name}: no 'no trailer block' in:\n{out}"
        );
    }
}

/// The 7.3 series as they were first committed for posting (their v1, read
/// from git history: the commit before 91efa64, which gave them their
/// posting form), through the posting check: every patch carries the lab's
/// placeholder sign-off, and each series has a patch whose trailers git does
/// not parse (no blank line before them); both are refused by name. The
/// series as committed pass (`check_posting_refuses_the_v1_form`).
#[test]
fn check_posting_refuses_the_posted_v1() {
    const V1: &str = "91efa64^";
    let release = qemu::linuxref::Release::V7_3;
    let root = qemu::runner::workspace_root();
    let build_dir = qemu::linuxref::default_build_dir();
    let tree = match linux_source(&build_dir, release) {
        Ok(t) => t,
        Err(why) => return qemu::fixtures::skip(FILE, &release.source_package(), why),
    };
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let Some(listing) = git(&["ls-tree", "-r", "--name-only", V1, "linux/patches/7.3/"]) else {
        return qemu::fixtures::skip(
            FILE,
            "git history",
            format!("this checkout has no commit {V1} (a shallow clone or an export)"),
        );
    };
    let tmp = std::env::temp_dir().join(format!("check-posting-git-v1-{}", std::process::id()));
    let mut series = std::collections::BTreeMap::<String, Vec<String>>::new();
    for path in listing.lines().filter(|p| p.ends_with(".patch")) {
        let rel = path.strip_prefix("linux/patches/7.3/").unwrap();
        let (name, file) = rel.split_once('/').unwrap();
        let text = git(&["show", &format!("{V1}:{path}")]).expect("git show of a listed file");
        std::fs::create_dir_all(tmp.join(name)).unwrap();
        std::fs::write(tmp.join(rel), text).unwrap();
        if !file.starts_with("0000-") {
            series
                .entry(name.to_string())
                .or_default()
                .push(file.to_string());
        }
    }
    assert!(
        series.contains_key("tmpfs-noalloc") && series.contains_key("tmpfs-negative"),
        "{listing}"
    );
    let out = Command::new("python3")
        .arg(root.join("linux/check-posting.py"))
        .arg(&tree)
        .args(series.keys().map(|n| tmp.join(n)))
        .output()
        .expect("running linux/check-posting.py");
    let _ = std::fs::remove_dir_all(&tmp);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for (name, patches) in &series {
        let said = |file: &str, reason: &str| {
            text.lines().any(|l| {
                l.starts_with(&format!("check-posting: {name}: {file}")) && l.contains(reason)
            })
        };
        for p in patches {
            assert!(
                said(p, "carries 'Signed-off-by: vfs-lab <vfs-lab@localhost>'"),
                "{name}/{p}: the placeholder sign-off is not named in:\n{text}"
            );
        }
        assert!(
            patches.iter().any(|p| said(p, "not a block of trailers")),
            "{name}: no patch refused for its trailers in:\n{text}"
        );
    }
}

/// `linux/check-series.sh TREE BUILD_DIR` passes and names every series of
/// `dir` (the release's `linux/patches/REL/`).
fn check_release(tree: &std::path::Path, build_dir: &std::path::Path, dir: &std::path::Path) {
    let root = qemu::runner::workspace_root();
    let out = Command::new("bash")
        .arg(root.join("linux/check-series.sh"))
        .arg(tree)
        .arg(build_dir)
        .output()
        .expect("running linux/check-series.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "check-series failed on {}:\n{stdout}\n{stderr}",
        tree.display()
    );
    // Every series directory is named in the output: none was skipped.
    let mut series = 0;
    for e in std::fs::read_dir(dir).expect("linux/patches/REL") {
        let e = e.unwrap();
        if e.path().is_dir() {
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(
                stdout.contains(&format!("check-series: {name}: ")),
                "{name} not checked:\n{stdout}"
            );
            series += 1;
        }
    }
    assert!(
        series >= 2,
        "expected at least tmpfs-negative and tmpfs-noalloc"
    );
    assert!(
        stdout.contains(&format!("check-series: {series} series ok")),
        "{stdout}"
    );
}

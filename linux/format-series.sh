#!/usr/bin/env bash
# format-series.sh: writes a patch series directory for posting from the
# commits of a scratch repository (linux/apply-series.sh makes one from a
# series, on which the next version is committed):
#
#   linux/format-series.sh PRISTINE_SRC REPO RANGE VERSION COVER OUT_DIR
#
# `git format-patch --cover-letter --thread --notes` of RANGE in REPO with
# subject prefix "PATCH vVERSION" (each commit's git note, its version
# history, lands below its `---`); the cover letter's subject is COVER's
# first line and its text the rest of COVER. Each patch's To/Cc mail
# headers are what PRISTINE_SRC's scripts/get_maintainer.pl names for it
# (To: the maintainers, Cc: everyone else), the cover letter's what it
# names for the whole series; commit messages carry no Cc trailers.
# Writes OUT_DIR's *.patch (old ones removed); reads the rest.
set -euo pipefail

pristine=$(realpath "$1")
repo=$2 range=$3 version=$4 cover=$5 out=$6
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$here/git-lab.sh" -C "$repo" format-patch -q --cover-letter --thread=shallow --notes \
    --subject-prefix="PATCH v$version" -o "$tmp" "$range"
python3 - "$pristine" "$cover" "$tmp" <<'PY'
import glob, os, re, subprocess, sys

pristine, cover, tmp = sys.argv[1:4]
files = sorted(glob.glob(os.path.join(tmp, "*.patch")))
cover_file = [f for f in files if os.path.basename(f).startswith("0000-")][0]
patches = [f for f in files if f != cover_file]


def named(paths):
    out = subprocess.run(["perl", "scripts/get_maintainer.pl", "--no-git",
                          "--no-git-fallback"] + paths, cwd=pristine,
                         capture_output=True, text=True, check=True).stdout
    to, cc = [], []
    for line in out.splitlines():
        who, _, role = line.partition(" (")
        (to if role.startswith("maintainer:") else cc).append(who.strip())
    return to, cc


def add_headers(path, to, cc):
    text = open(path, encoding="utf-8").read()
    head, sep, body = text.partition("\n\n")
    fold = lambda xs: ",\n    ".join(xs)
    head += "\nTo: " + fold(to) + ("\nCc: " + fold(cc) if cc else "")
    open(path, "w", encoding="utf-8").write(head + sep + body)


for p in patches:
    add_headers(p, *named([p]))
text = open(cover_file, encoding="utf-8").read()
lines = open(cover, encoding="utf-8").read().split("\n", 1)
text = text.replace("*** SUBJECT HERE ***", lines[0].strip())
text = text.replace("*** BLURB HERE ***", lines[1].strip("\n"))
open(cover_file, "w", encoding="utf-8").write(text)
add_headers(cover_file, *named(patches))
PY
mkdir -p "$out"
rm -f "$out"/*.patch
cp "$tmp"/*.patch "$out"/
ls "$out"

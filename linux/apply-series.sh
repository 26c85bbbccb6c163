#!/usr/bin/env bash
# apply-series.sh: applies patch series with `git am` to the pristine
# files they touch (any release), in a scratch repository.
#
#   linux/apply-series.sh PRISTINE_SRC OUT_REPO SERIES_DIR...
#
# OUT_REPO (recreated) gets a first commit holding the pristine copy of every
# file the diffs name, then one commit per patch (`git am`: each series in
# the order given, its patches in name order). Reads PRISTINE_SRC only.
# Exits non-zero, with git's reason, if a patch does not apply.
set -euo pipefail

lab_git=$(dirname "$(realpath "$0")")/git-lab.sh
pristine=$(realpath "$1")
out=$2
shift 2

shopt -s nullglob
patches=()
for series in "$@"; do
    p=()
    for f in "$(realpath "$series")"/*.patch; do
        # A cover letter (git format-patch --cover-letter) carries no diff.
        [[ $(basename "$f") == 0000-cover-letter.patch ]] || p+=("$f")
    done
    ((${#p[@]})) || { echo "apply-series: no patches in $series" >&2; exit 2; }
    patches+=("${p[@]}")
done
rm -rf "$out"
mkdir -p "$out"
# Files named by the diffs (old and new side), relative to the tree.
grep -h -E '^(---|\+\+\+) [ab]/' "${patches[@]}" | sed -E 's#^(---|\+\+\+) [ab]/##' | sort -u |
    while read -r f; do
        if [[ -f $pristine/$f ]]; then
            mkdir -p "$out/$(dirname "$f")"
            cp "$pristine/$f" "$out/$f"
        fi
    done
cd "$out"
git init -q
"$lab_git" add -A
"$lab_git" commit -q --allow-empty -m "pristine $(basename "$pristine") (files the series touches)"
"$lab_git" am -q --committer-date-is-author-date "${patches[@]}" ||
    { git am --abort 2>/dev/null || true; echo "apply-series: $* does not apply" >&2; exit 1; }

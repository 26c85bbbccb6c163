#!/usr/bin/env bash
# generated-check.sh: the files in git that a command makes from other
# committed files must equal what that command makes now (`make
# test-generated`, part of `make test`). Each is regenerated into a
# temporary directory with the Makefile's own commands and compared byte
# for byte; a mismatch prints the head of the diff and the command that
# regenerates the file. `--write` copies the regenerated files over the
# committed ones instead (`make generated`).
#
# Checked:
#   docs/explore/index.html   explore --out FILE (the step-through page:
#                             fixed scenarios through the vfsh engine; its
#                             source links carry line numbers, so any edit
#                             above a linked function makes it stale; Linux's
#                             walks beside them from the committed
#                             docs/explore/linux/*.json, with the reasons of
#                             docs/lookup-path.md: the command fails on a
#                             Linux function the page does not place)
#   docs/bench/report.md      bench report docs/bench --out DIR (the report
#   docs/bench/scaling.svg    and plot of the committed rows and predictions;
#   docs/bench/raw.csv        raw.csv and predict.csv must come back as they
#   docs/bench/predict.csv    went in)
#   docs/bench/overcommit/    bench report --with-overcommit (report.md,
#                             scaling.svg, raw.csv of the overcommit sweep)
# Not checked, because a timed run made them and no committed input can
# make them again: docs/bench/raw.csv's and predict.csv's figures themselves
# (bench sweep, bench predict), docs/bench/validation.md (bench predict
# --validate), docs/bench/smb.md and smb-7.3.md (bench smb-sweep; their
# rows are not committed), docs/bench/statneg-many.md (a sweep whose raw.csv
# is not committed), docs/explore/linux/*.json (make linux-walks: ftrace in
# the reference guest), and docs/explore/*.png (Chromium's rendering, which
# moves with its version and fonts; fs/tools/tests/explore_page.rs checks the
# page itself in Chromium).
#
# Usage: EXPLORE_RUN=CMD BENCH_RUN=CMD scripts/generated-check.sh [--write]
#   EXPLORE_RUN: runs the explore binary (default: cargo run --release -p fstools --bin explore --)
#   BENCH_RUN:   runs the bench binary (default: cargo run --release -p benchlab --bin bench --)
# Prints `generated: N files as committed` and exits 0, or the differences,
# `generated: M of N files differ` and exits 1 (`--write`: `generated: N
# files, W rewritten`).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

write=0
case "${1:-}" in
"") ;;
--write) write=1 ;;
*)
    echo "usage: $0 [--write]" >&2
    exit 2
    ;;
esac
explore_run=${EXPLORE_RUN:-cargo run --release -p fstools --bin explore --}
bench_run=${BENCH_RUN:-cargo run --release -p benchlab --bin bench --}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checked=0
differ=0
wrote=0

# The diff shown: the explore page's data is one long JSON line, so lines
# are split after each `,"` (between JSON fields) and cut at 200 columns.
shown() { sed 's/,"/,\n"/g' "$1"; }

# compare COMMITTED REGENERATED HOW: count, print the diff head on mismatch.
compare() {
    local committed=$1 fresh=$2 how=$3
    checked=$((checked + 1))
    if [[ ! -f $fresh ]]; then
        echo "generated: $committed: the command made no such file (regenerate: $how)"
        differ=$((differ + 1))
        return
    fi
    if cmp -s "$committed" "$fresh"; then
        return
    fi
    if ((write)); then
        cp "$fresh" "$committed"
        wrote=$((wrote + 1))
        echo "generated: wrote $committed"
        return
    fi
    differ=$((differ + 1))
    echo "generated: $committed differs from what its command makes now"
    diff -u --label "$committed (committed)" --label "$committed (regenerated)" \
        <(shown "$committed") <(shown "$fresh") | head -n 40 | cut -c1-200
    echo "generated: regenerate with: $how"
}

# The step-through page.
page=docs/explore/index.html
# shellcheck disable=SC2086 # the commands are word lists on purpose
if $explore_run --out "$tmp/index.html" >"$tmp/explore.log" 2>&1; then
    compare "$page" "$tmp/index.html" "make explore"
else
    cat "$tmp/explore.log"
    echo "generated: $page: the explore command failed"
    checked=$((checked + 1))
    differ=$((differ + 1))
fi

# The benchmark report of the committed rows and predictions.
# shellcheck disable=SC2086
if $bench_run report docs/bench --out "$tmp/bench" >"$tmp/bench.log" 2>&1; then
    for f in report.md scaling.svg raw.csv predict.csv; do
        compare "docs/bench/$f" "$tmp/bench/$f" "make generated"
    done
else
    cat "$tmp/bench.log"
    echo "generated: docs/bench: bench report failed"
    checked=$((checked + 1))
    differ=$((differ + 1))
fi

# The overcommit sweep (issue 31): the same report, overcommitted rows kept.
if $bench_run report --with-overcommit docs/bench/overcommit --out "$tmp/overcommit" >"$tmp/overcommit.log" 2>&1; then
    for f in report.md scaling.svg raw.csv; do
        compare "docs/bench/overcommit/$f" "$tmp/overcommit/$f" "make generated"
    done
else
    cat "$tmp/overcommit.log"
    echo "generated: docs/bench/overcommit: bench report failed"
    checked=$((checked + 1))
    differ=$((differ + 1))
fi

if ((differ)); then
    echo "generated: $differ of $checked files differ"
    exit 1
fi
if ((write)); then
    echo "generated: $checked files, $wrote rewritten"
else
    echo "generated: $checked files as committed"
fi

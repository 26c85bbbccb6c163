#!/usr/bin/env bash
# mount-options-check.sh: the "Accepted, no effect here" list of
# docs/mount-options.md names every cifs option that the option table
# (fs/src/fstype/cifs/options.rs, OPTIONS) accepts with no effect here,
# and the table's reason for it, so the two cannot drift apart. The table's
# lines come from the fstools example cifs-no-effect (the option as the
# document shows it, a tab, the reason). Part of `make test-generated`.
#
# Usage: OPTIONS_RUN=CMD scripts/mount-options-check.sh
#   OPTIONS_RUN: prints the table's lines (default: cargo run --release -q
#   -p fstools --example cifs-no-effect)
# Prints `mount-options: N options listed` and exits 0, or one line per
# option or reason the document misses and exits 1.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

run=${OPTIONS_RUN:-cargo run --release -q -p fstools --example cifs-no-effect}
doc=docs/mount-options.md
heading="Accepted, no effect here"

section=$(sed -n "/$heading/,\$p" "$doc")
if [[ -z $section ]]; then
    echo "mount-options: $doc has no \"$heading\" list"
    exit 1
fi
# shellcheck disable=SC2086 # the command is a word list on purpose
if ! table=$($run); then
    echo "mount-options: the option table's command failed: $run"
    exit 1
fi

listed=0
missing=0
while IFS=$'\t' read -r shown why; do
    [[ -n $shown ]] || continue
    listed=$((listed + 1))
    if [[ $section != *"$shown"* ]]; then
        echo "mount-options: $doc misses $shown"
        missing=$((missing + 1))
    elif [[ $section != *"$why"* ]]; then
        echo "mount-options: $doc misses the reason of $shown: $why"
        missing=$((missing + 1))
    fi
done <<<"$table"

if ((listed == 0)); then
    echo "mount-options: the option table's command printed no option: $run"
    exit 1
fi
if ((missing)); then
    echo "mount-options: $missing of $listed options missing"
    exit 1
fi
echo "mount-options: $listed options listed"

#!/usr/bin/env bash
# scripts/same-output.sh BASE [HEAD]: do two commits print the same thing?
#
# A check for restructuring work (file splits, renames, shared helpers):
# such a change must leave every deterministic output as it was. This
# exports BASE and HEAD (default: HEAD) with `git archive` into
# build/same-output/{base,head}/ (no worktree registered, nothing else
# touched), builds each there (vfsh, explore, qemu-run, bench, the kernel)
# into one shared target dir, runs the same fixed set of outputs at both,
# masks what is not deterministic, and diffs them. It prints
# `same: N outputs` and exits 0, or prints the diff and exits 1.
#
# The outputs (each one file under build/same-output/out/{base,head}/):
#   vfsh-readme        the README's first vfsh session (trace on, stat)
#   vfsh-DESIGN        per ENOENT design: mkdir, stat a missing name twice
#                      with trace on, stats
#   vfsh-script-NAME   every fs/tools/tests/scripts/*.vfsh of BASE, run at both
#                      (the same input files on both sides)
#   vfsh-errors        bad input: unknown command, bad -o design
#   help-*             vfsh, qemu-run, bench, latency-relay --help
#   explore-page       the step-through page (explore --out), if BASE has it
#   kernel-selftest    the selftest lines at 2 vCPUs (test names, order,
#                      verdicts)
#   kernel-demo-table  the demo=table rows at 2 vCPUs: design and tasks;
#                      ops/s masked, per-op counters as 0.000 or `+`
#   kernel-demo-trace  demo=trace: one traced stat per design
#   kernel-badcmdline  the answer to an unknown command-line key
#
# Masked: name hashes (`hash=0x…`, seeded per run), test and boot timings
# (`(N ms)`, `after N s`, `[  t.tttttt]`), ops/s figures. What is left is
# expected to be byte-identical for a pure move.
#
# Not part of `make test` (two builds take minutes). Environment:
#   SAME_OUTPUT_TARGET  the shared cargo target dir (default
#                       build/same-output/target, seeded once from ./target
#                       with `cp -a` so that dependencies are not rebuilt)
#   SAME_OUTPUT_KERNEL  0: skip the kernel outputs (no QEMU needed)
#   SAME_OUTPUT_SMP     vCPUs for the kernel outputs (default 2)
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
    exit "${1:-2}"
}
[[ $# -ge 1 && $# -le 2 ]] || usage
[[ $1 == -h || $1 == --help ]] && usage 0

root=$(git rev-parse --show-toplevel)
cd "$root"
base_rev=$(git rev-parse --verify "$1^{commit}")
head_rev=$(git rev-parse --verify "${2:-HEAD}^{commit}")
work=$root/build/same-output
target=${SAME_OUTPUT_TARGET:-$work/target}
kernel_outputs=${SAME_OUTPUT_KERNEL:-1}
smp=${SAME_OUTPUT_SMP:-2}
mkdir -p "$work"

if [[ ! -d $target ]]; then
    if [[ -d $root/target ]]; then
        echo "same-output: seeding $target from ./target (once)" >&2
        cp -a "$root/target" "$target"
    else
        mkdir -p "$target"
    fi
fi
export CARGO_TARGET_DIR=$target

# The fixed inputs, taken from BASE so that both sides get the same bytes.
inputs=$work/inputs
rm -rf "$inputs"
mkdir -p "$inputs/scripts"
# The scripts live with the vfsh crate: fs/tools/tests/scripts since the
# shell left fs (fstools), fs/tests/scripts before.
for d in fs/tools/tests/scripts fs/tests/scripts; do
    git archive "$base_rev" "$d" 2>/dev/null | tar -x -m -C "$inputs" || continue
    cp "$inputs/$d"/*.vfsh "$inputs/scripts/" 2>/dev/null || true
    break
done

# -m: files get the time of extraction, not the commit's: cargo must not
# take a tree exported over an older build's as unchanged.
export_tree() { # REV DIR
    rm -rf "$2"
    mkdir -p "$2"
    git archive "$1" | tar -x -m -C "$2"
}

build_side() { # DIR
    (
        cd "$1"
        # vfsh and explore: package fstools (fs/tools/) since the tools
        # left the fs crate; package fs before.
        if [[ -e fs/tools/Cargo.toml ]]; then
            cargo build --release -q -p fstools --bins
        else
            cargo build --release -q -p fs --bins
        fi
        cargo build --release -q -p qemu --bins
        # The `bench` binary: package benchlab (bench/lab/) since the lab
        # left the no_std bench crate; package bench before.
        if [[ -e bench/lab/Cargo.toml ]]; then
            cargo build --release -q -p benchlab --bin bench
        else
            cargo build --release -q -p bench --bin bench
        fi
        if [[ $kernel_outputs == 1 ]]; then
            cargo build --release -q -p kernel --target x86_64-unknown-none
        fi
    )
}

mask() {
    sed -E -e 's/hash=0x[0-9a-f]+/hash=0x#/g' \
        -e 's/\(([0-9]+) ms\)/(# ms)/g' \
        -e 's/ after [0-9.]+ s/ after # s/g' \
        -e 's/^\[ *[0-9?.]+\]/[#]/'
}

# The demo=table rows: keep design and tasks, mask ops/s, per-op counters
# as 0.000 or + (nonzero: how much depends on the timing).
mask_table() {
    awk '
        /^design +tasks/ { intable = 1; print; next }
        intable && NF >= 4 && $2 ~ /^[0-9]+$/ {
            out = $1 " " $2 " # #"
            for (i = 5; i <= NF; i++) out = out " " ($i + 0 == 0 ? $i : "+")
            print out; next
        }
        intable { intable = 0 }
        /^statneg/ { print }
    '
}

run_outputs() { # DIR OUT
    local dir=$1 out=$2 bin=$target/release
    rm -rf "$out"
    mkdir -p "$out"
    local vfsh=$bin/vfsh
    printf 'mkdir /a\nmkdir /a/b\ntrace on\nstat /a/b/missing\n' | "$vfsh" 2>&1 | mask >"$out/vfsh-readme" || true
    for d in transient negative noalloc; do
        printf 'mkdir /a\nmkdir /a/b\ntrace on\nstat /a/b/missing\nstat /a/b/missing\ntrace off\nstats\n' |
            "$vfsh" -o "enoent=$d" 2>&1 | mask >"$out/vfsh-$d" || true
    done
    local s
    for s in "$inputs"/scripts/*.vfsh; do
        [[ -e $s ]] || continue
        "$vfsh" "$s" 2>&1 | mask >"$out/vfsh-script-$(basename "$s" .vfsh)" || true
    done
    {
        printf 'frobnicate /a\n' | "$vfsh" 2>&1 || echo "exit $?"
        "$vfsh" -o enoent=bogus </dev/null 2>&1 || echo "exit $?"
    } | mask >"$out/vfsh-errors"
    "$vfsh" --help >"$out/help-vfsh" 2>&1 || true
    "$bin/qemu-run" --help >"$out/help-qemu-run" 2>&1 || true
    "$bin/bench" --help >"$out/help-bench" 2>&1 || true
    "$bin/latency-relay" --help >"$out/help-latency-relay" 2>&1 || true
    if [[ -e $dir/fs/tools/src/bin/explore/main.rs || -e $dir/fs/src/bin/explore/main.rs ]]; then
        (cd "$dir" && "$bin/explore" --out "$out/explore-page" >/dev/null 2>&1) || echo "explore failed" >"$out/explore-page"
    fi
    if [[ $kernel_outputs == 1 ]]; then
        local elf=$target/x86_64-unknown-none/release/kernel
        boot() { # CMDLINE
            "$bin/qemu-run" --kernel "$elf" --smp "$smp" --mem 512M --timeout 300 --cmdline "$1" 2>&1 || echo "exit $?"
        }
        boot selftest | grep -E '^(test |selftest:|[0-9]+ passed)' | mask >"$out/kernel-selftest"
        boot demo=table | mask_table >"$out/kernel-demo-table"
        boot demo=trace | grep -E '^(==|--|#|->)' | mask >"$out/kernel-demo-trace"
        boot 'selftest bogus=1' | grep -v -E '^qemu-run: (smp=|guest exited)' | mask >"$out/kernel-badcmdline"
    fi
}

for side in base head; do
    rev=$base_rev
    [[ $side == head ]] && rev=$head_rev
    echo "same-output: $side = $(git log --format='%h %s' -1 "$rev" | cut -c1-72)" >&2
    export_tree "$rev" "$work/$side"
    build_side "$work/$side"
    run_outputs "$work/$side" "$work/out/$side"
done

n=$(find "$work/out/base" "$work/out/head" -type f -printf '%f\n' | sort -u | wc -l)
if diff -ru "$work/out/base" "$work/out/head"; then
    echo "same: $n outputs"
else
    echo "different: see the diff above ($n outputs; build/same-output/out/{base,head})"
    exit 1
fi

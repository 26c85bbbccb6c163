#!/usr/bin/env bash
# fstests-smoke.sh: the fstests smoke of `make test`. Three quick tmpfs
# tests (generic/023, 024, 025: renameat2 plain, RENAME_NOREPLACE,
# RENAME_EXCHANGE) under Debian's 6.12 in the fstests guest
# (linux/fstests.sh); fails unless all three ran and passed, so it fails
# whenever the guest cannot run fstests. Without fstests' source
# (FSTESTS_SRC unset and no snapshot) it is skipped with fstests.sh's note
# on what to fetch. Before the guest it checks `fstests.sh --compare` on
# made-up results and the crash reader on made-up consoles (no guest
# needed); `--no-guest` stops there (what `make test` runs: fstests runs
# are `make test-fstests` and `make linux-fstests`). Writes what
# fstests.sh writes.
set -uo pipefail
cd "$(dirname "$0")/.."
no_guest=0
[ "${1:-}" = --no-guest ] && no_guest=1

# --compare first (no guest): a run that fails only what its base fails
# passes; one that fails a test its base passed is named and fails.
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t"/{base,good,bad}/tmpfs/quick
printf '%s\n' 'generic/001         12s' 'generic/002        [not run] no reflink' \
    'generic/080        [failed, exit status 2]- output mismatch' 'generic/131         3s' 'generic/133        ' \
    >"$t/base/tmpfs/quick/check.out"
printf '%s\n' 'generic/001         14s' 'generic/002        [not run] no reflink' \
    'generic/080        [failed, exit status 2]- output mismatch' 'generic/131         3s' \
    >"$t/good/tmpfs/quick/check.out"
printf '%s\n' 'generic/001         11s' 'generic/002        [not run] no reflink' \
    'generic/080         2s' 'generic/131        [failed, exit status 1]- output mismatch' \
    >"$t/bad/tmpfs/quick/check.out"
cmp=$(bash linux/fstests.sh --compare "$t/base/tmpfs/quick" "$t/good/tmpfs/quick" "$t/bad/tmpfs/quick")
crc=$?
want="fstests-compare kernel=good fs=tmpfs group=quick base=base/tmpfs/quick common=4 same=4 new_failures=- base_only_failures=-
fstests-compare kernel=bad fs=tmpfs group=quick base=base/tmpfs/quick common=4 same=2 new_failures=generic/131 base_only_failures=generic/080"
if [ $crc != 1 ] || [ "$cmp" != "$want" ]; then
    printf 'fstests smoke FAILED: --compare said (exit %s):\n%s\nnot:\n%s\n' "$crc" "$cmp" "$want" >&2
    exit 1
fi
echo "fstests --compare: a new failure named and refused, a base-only failure allowed"

# The crash reader fstests.sh asks whether a guest that did not finish
# crashed (booted once more) or hung (not): a panic, a stall, nothing.
lr=target/release/linuxref
printf '%s\n' 'generic/023 ' '[   10.1] BUG: kernel NULL pointer dereference, address: 0000000000000000' \
    '[   10.2] RAX: 0 RBX: 0' '[   10.3] Kernel panic - not syncing: Fatal exception in interrupt' >"$t/crashed.txt"
printf '%s\n' 'generic/023 ' '[  40.1] rcu: INFO: rcu_preempt self-detected stall on CPU' >"$t/stuck.txt"
printf '%s\n' 'generic/023 ' 'generic/024 ' >"$t/quiet.txt"
for want in "crashed 0" "stuck 3" "quiet 1"; do
    set -- $want
    rep=$("$lr" --crash-report "$t/$1.txt")
    rc=$?
    if [ "$rc" != "$2" ] || { [ "$1" = crashed ] && [ "$(echo "$rep" | tail -1)" != "Kernel panic - not syncing: Fatal exception in interrupt" ]; }; then
        printf 'fstests smoke FAILED: %s --crash-report on a %s console: status %s (not %s):\n%s\n' "$lr" "$1" "$rc" "$2" "$rep" >&2
        exit 1
    fi
done
echo "fstests crash reader: a panic is a crash, a stall a hang, a quiet console neither"
[ $no_guest = 1 ] && exit 0

out=$(bash linux/fstests.sh --kernels debian --fs tmpfs --tests generic/023,generic/024,generic/025)
rc=$?
if [ $rc = 3 ]; then
    echo "fstests smoke skipped: fstests' source is not here (see above)"
    exit 0
fi
echo "$out"
if [ $rc != 0 ] || ! echo "$out" | grep -q '^fstests kernel=.* fs=tmpfs group=tests ran=3 passed=3 failed=0 notrun=0 '; then
    echo "fstests smoke FAILED: the guest did not run and pass generic/023, 024, 025 (results/fstests/*/tmpfs/tests/)" >&2
    exit 1
fi
echo "fstests smoke passed"

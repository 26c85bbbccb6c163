#!/usr/bin/env bash
# fstests-smoke.sh: the fstests smoke of `make test`. Three quick tmpfs
# tests (generic/023, 024, 025: renameat2 plain, RENAME_NOREPLACE,
# RENAME_EXCHANGE) under Debian's 6.12 in the fstests guest
# (linux/fstests.sh); fails unless all three ran and passed, so it fails
# whenever the guest cannot run fstests. Without fstests' source
# (FSTESTS_SRC unset and no snapshot) it is skipped with fstests.sh's note
# on what to fetch. Before the guest it checks `fstests.sh --compare` on
# made-up results (no guest needed). Writes what fstests.sh writes.
set -uo pipefail
cd "$(dirname "$0")/.."

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

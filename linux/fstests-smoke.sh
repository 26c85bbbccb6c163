#!/usr/bin/env bash
# fstests-smoke.sh: the fstests smoke of `make test`. Three quick tmpfs
# tests (generic/023, 024, 025: renameat2 plain, RENAME_NOREPLACE,
# RENAME_EXCHANGE) under Debian's 6.12 in the fstests guest
# (linux/fstests.sh); fails unless all three ran and passed, so it fails
# whenever the guest cannot run fstests. Without fstests' source
# (FSTESTS_SRC unset and no snapshot) it is skipped with fstests.sh's note
# on what to fetch. Writes what fstests.sh writes.
set -uo pipefail
cd "$(dirname "$0")/.."
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

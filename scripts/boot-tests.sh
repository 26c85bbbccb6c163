#!/usr/bin/env bash
# boot-tests.sh: the QEMU boot tests of `make test`. Boots the kernel with
# `selftest` once per vCPU count through qemu-run and checks that the guest
# exits 0, reports `smp: N CPUs online in X ms` for the requested N and ends
# its suite with `K passed, 0 failed`. A self-test the kernel skipped
# (`test NAME ... skipped: REASON`, verdict `K passed, 0 failed, S skipped`:
# what an instruction-emulating KVM cannot run) fails the boot unless the
# options say `--accel kvm`: under TCG every test runs. Serial logs go to
# build/boot-tests/.
# Prints one line per boot and, last, `P passed, F failed`; exits non-zero
# when any boot failed.
#
# Usage: boot-tests.sh QEMU_RUN KERNEL_ELF "SMP LIST" [qemu-run options...]
set -uo pipefail

if (($# < 3)); then
    echo "usage: $0 QEMU_RUN KERNEL_ELF \"1 2 8 64\" [qemu-run options...]" >&2
    exit 2
fi
qemu_run=$1
kernel=$2
smps=$3
shift 3
accel_kvm=0
prev=""
for a in "$@"; do
    if [[ $a == --accel=kvm || ($prev == --accel && $a == kvm) ]]; then
        accel_kvm=1
    fi
    prev=$a
done

logdir=build/boot-tests
mkdir -p "$logdir"
passed=0
failed=0
summary=()

for n in $smps; do
    log=$logdir/smp-$n.log
    echo "=== boot test: smp=$n cmdline=selftest (serial log: $log)"
    start=$(date +%s%N)
    "$qemu_run" --kernel "$kernel" --smp "$n" --cmdline selftest --serial-log "$log" --quiet "$@"
    rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    wall=$(printf '%d.%02d' $((ms / 1000)) $((ms % 1000 / 10)))
    clean=$(tr -d '\r' <"$log" 2>/dev/null || true)
    online=$(grep -E "^smp: $n CPUs online in [0-9.]+ ms" <<<"$clean" | tail -n1)
    result=$(grep -E '^[0-9]+ passed, [0-9]+ failed' <<<"$clean" | tail -n1)
    skips=$(grep -E '^test [^ ]+ \.\.\. skipped: ' <<<"$clean" | sed -E 's/^test ([^ ]+) .*/\1/' | tr '\n' ' ')
    why=""
    if ((rc != 0)); then
        why="exit status $rc"
    elif [[ -z $online ]]; then
        why="no 'smp: $n CPUs online in X ms' line"
    elif ! grep -qE '^[0-9]+ passed, 0 failed' <<<"$result"; then
        why="no 'K passed, 0 failed' line (got '${result:-nothing}')"
    elif [[ -n $skips ]] && ((accel_kvm == 0)); then
        why="self-tests skipped without --accel kvm: ${skips% }"
    fi
    if [[ -z $why ]]; then
        passed=$((passed + 1))
        line="PASS smp=$n  wall=${wall}s  [$online] [$result]"
    else
        failed=$((failed + 1))
        line="FAIL smp=$n  wall=${wall}s  $why"
        echo "--- last 40 lines of $log:"
        tail -n 40 "$log" 2>/dev/null || true
        echo "---"
    fi
    echo "$line"
    summary+=("$line")
done

echo
echo "=== QEMU boot tests"
for l in "${summary[@]}"; do
    echo "$l"
done
echo "$passed passed, $failed failed"
((failed == 0))

#!/usr/bin/env bash
# overcommit-bench.sh: how the guest's spinlocks behave with more vCPUs than
# host cores (issue 31). Two measurements, each over BOOTS boots:
#
#   statneg:  `bench=statneg design=transient tasks=V secs=SECS lock=K` at
#             V vCPUs, for every V in VCPUS and K in LOCKS. One line per
#             boot: `statneg lock=K vcpus=V host_cores=C boot=I ops/s=N`.
#             Then per (K, V): `summary statneg lock=K vcpus=V host_cores=C
#             boots=B median=N min=N max=N spread=X` (spread = max / min).
#   lookups:  `selftest lock=K` at SELFTEST_SMP vCPUs (default 64), the time
#             of `fs_lookups_all_cpus_per_design` per boot:
#             `lookups lock=K vcpus=V host_cores=C boot=I ms=N`, then
#             `summary lookups lock=K vcpus=V boots=B max_ms=N median_ms=N`.
#
# The machine must be quiet for the figures to mean anything: the script
# prints `uptime` first and last. Serial logs go to build/overcommit/.
#
# Usage: scripts/overcommit-bench.sh [statneg] [lookups]   (default: both)
# Environment: QEMU_RUN, KERNEL (default: the release builds), BOOTS (10),
#   VCPUS ("2 4 8"), LOCKS ("qspinlock pvqspinlock"), SECS (2),
#   SELFTEST_SMP (64), SELFTEST_LOCKS ("pvqspinlock"), TIMEOUT (600), MEM (512M).
set -uo pipefail

qemu_run=${QEMU_RUN:-target/release/qemu-run}
kernel=${KERNEL:-target/x86_64-unknown-none/release/kernel}
boots=${BOOTS:-10}
vcpus_list=${VCPUS:-2 4 8}
locks=${LOCKS:-qspinlock pvqspinlock}
secs=${SECS:-2}
selftest_smp=${SELFTEST_SMP:-64}
selftest_locks=${SELFTEST_LOCKS:-pvqspinlock}
timeout=${TIMEOUT:-600}
what=${*:-statneg lookups}
cores=$(nproc)
logdir=build/overcommit
mkdir -p "$logdir"

for f in "$qemu_run" "$kernel"; do
    [[ -e $f ]] || { echo "missing $f (make build)" >&2; exit 2; }
done

echo "uptime before: $(uptime)"
summaries=()

# summary NAME VALUES...: median, min, max of integer values.
stats() {
    sort -n | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "boots=0"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)
        s = (v[1] > 0) ? sprintf("%.2f", v[NR] / v[1]) : "inf"
        printf "boots=%d median=%d min=%d max=%d spread=%s\n", NR, m, v[1], v[NR], s
    }'
}

if [[ " $what " == *" statneg "* ]]; then
    for lock in $locks; do
        for v in $vcpus_list; do
            vals=()
            for i in $(seq 1 "$boots"); do
                log=$logdir/statneg-$lock-$v-$i.log
                "$qemu_run" --kernel "$kernel" --smp "$v" --timeout "$timeout" --quiet \
                    --serial-log "$log" \
                    --cmdline "bench=statneg design=transient tasks=$v warmup=1 secs=$secs lock=$lock" \
                    >/dev/null 2>&1
                ops=$(tr -d '\r' <"$log" | grep -E '^average:[0-9]+' | tail -n1 | cut -d: -f2)
                echo "statneg lock=$lock vcpus=$v host_cores=$cores boot=$i ops/s=${ops:-FAILED}"
                [[ -n $ops ]] && vals+=("$ops")
            done
            s=$(printf '%s\n' "${vals[@]}" | grep -v '^$' | stats)
            summaries+=("summary statneg lock=$lock vcpus=$v host_cores=$cores $s")
            echo "${summaries[-1]}"
        done
    done
fi

if [[ " $what " == *" lookups "* ]]; then
    for lock in $selftest_locks; do
        vals=()
        for i in $(seq 1 "$boots"); do
            log=$logdir/lookups-$lock-$selftest_smp-$i.log
            "$qemu_run" --kernel "$kernel" --smp "$selftest_smp" --timeout "$timeout" --quiet \
                --mem "${MEM:-512M}" --serial-log "$log" --cmdline "selftest lock=$lock" >/dev/null 2>&1
            ms=$(tr -d '\r' <"$log" |
                sed -nE 's/^test fs_lookups_all_cpus_per_design \.\.\. ok \(([0-9]+) ms\)/\1/p' | tail -n1)
            verdict=$(tr -d '\r' <"$log" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n1)
            echo "lookups lock=$lock vcpus=$selftest_smp host_cores=$cores boot=$i ms=${ms:-FAILED} [${verdict:-no verdict}]"
            [[ -n $ms ]] && vals+=("$ms")
        done
        s=$(printf '%s\n' "${vals[@]}" | grep -v '^$' | stats |
            sed -E 's/median=([0-9]+) min=[0-9]+ max=([0-9]+) spread=[^ ]+/max_ms=\2 median_ms=\1/')
        summaries+=("summary lookups lock=$lock vcpus=$selftest_smp host_cores=$cores $s")
        echo "${summaries[-1]}"
    done
fi

echo
echo "uptime after: $(uptime)"
for l in "${summaries[@]}"; do
    echo "$l"
done

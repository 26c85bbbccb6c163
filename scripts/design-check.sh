#!/usr/bin/env bash
# Add an ENOENT design the way docs/designs.md tells a user to (the fs
# feature `test-design`: a type implementing EnoentDesign, copied from
# `negative` under the name `probe`, and one entry in DESIGNS) and check
# that every surface takes it and every per-design test runs it, with no
# other edit: vfsh, `bench host design=`, the guest words (the kernel's
# command-line parser), the sweep and its report, the kernel's `demo=table`
# and `selftest`, and the per-design host tests (each says
# `designs ran by TEST: ...` into $FS_DESIGNS_RAN_LOG).
#
# The same for an EA-cache design (`askall`, a copy of `always` with its
# `sends()` declaration, one entry in EACACHE_DESIGNS): the cifs option
# parser (vfsh `mount cifs ... eacache=`), `bench smb-sweep`'s design
# arguments and --help, the guest's `smbopts=` (a kernel command-line unit
# test through the same option parser), and the cifs per-design tests
# against the Samba fixture.
#
# Usage: scripts/design-check.sh QEMU_RUN   (the feature build gets its own
# target directory, $TARGET_DIR/design-check, like loom's);
#        scripts/design-check.sh --build-only   (the builds alone: `make
# test` runs them beside the host tests, which leave a core idle while they
# wait on guests and fixtures).
set -euo pipefail

NEW=probe
NEW_EA=askall
build_only=0
if [[ ${1:-} == --build-only ]]; then
    build_only=1
else
    qemu_run=${1:?usage: $0 QEMU_RUN | --build-only}
fi
export CARGO_TARGET_DIR=${TARGET_DIR:-target}/design-check
t=$CARGO_TARGET_DIR
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
bad() {
    echo "design-check: FAILED: $*" >&2
    fail=1
}

# Every host invocation selects the same packages and features, so cargo
# resolves one feature set and builds fs and its dependencies once for all
# of them (a package set per invocation built fs four times over).
host=(-p fs -p fstools -p bench -p benchlab --features fs/test-design)

echo "=== design-check: build with the added design '$NEW'"
cargo build --release -p kernel --features test-design --target x86_64-unknown-none
# vfsh and bench (used below) are built as the integration tests' binaries.
cargo test --release "${host[@]}" --no-run \
    --test stress --test enomem --test fuzz_replay --test vfsstress \
    --test differential --test vfsh_scripts --test vfsh_regressions --test vfsh_stats_trace \
    --test cifs_samba --test cifs_eas --test cifs_xattr --test cifs_impacket \
    --test params --test report --test sweep_inputs
cargo test --release -p kernel --lib --features test-design --no-run
if ((build_only)); then
    echo "design-check: built with '$NEW' and '$NEW_EA'"
    exit 0
fi

echo "=== design-check: per-design host tests"
export FS_DESIGNS_RAN_LOG=$work/ran.log VFSH_DIFF_SEQS=${VFSH_DIFF_SEQS:-400}
: >"$FS_DESIGNS_RAN_LOG"
cargo test --release "${host[@]}" \
    --test stress --test enomem --test fuzz_replay --test vfsstress -- \
    rcu_stress_all_designs vfsstress_all_designs \
    every_operation_returns_enomem a_later_allocation_failing \
    missing_names_with_every_7th path_walk_runs_every_design
cargo test --release "${host[@]}" \
    --test differential --test vfsh_scripts --test vfsh_regressions --test vfsh_stats_trace -- \
    random_sequences_agree_with_linux scripts_give_expected_output_on_every_design \
    remount_after_an_earlier_namespace stats_lines_and_counters_move
cargo test --release "${host[@]}" \
    --test cifs_samba --test cifs_eas --test cifs_xattr --test cifs_impacket -- \
    ls_la_per_eacache_design ea_support_no_every_design \
    an_ea_added_on_the_server_shows_after_the_window mount_list_stat_read
cargo test --release -p kernel --lib --features test-design -- every_registered_
cargo test --release "${host[@]}" --test params --test report
cargo test --release "${host[@]}" --test sweep_inputs -- \
    smb_sweep_help_names_every_design smb_sweep_refuses_an_unknown_design
for test in stress::rcu_stress_all_designs \
    differential::random_sequences_agree_with_linux \
    enomem::every_operation_returns_enomem_when_every_allocation_fails \
    enomem::a_later_allocation_failing_undoes_the_earlier_ones \
    enomem::missing_names_with_every_7th_allocation_failing \
    vfsh_scripts::scripts_give_expected_output_on_every_design \
    vfsh_regressions::namespaces_in_turn_stay_independent \
    vfsh_stats_trace::stats_lines_and_counters_move \
    fuzz_replay::path_walk_runs_every_design \
    vfsstress::vfsstress_all_designs; do
    if grep -qE "^designs ran by $test:.* $NEW( |$)" "$FS_DESIGNS_RAN_LOG"; then
        echo "ran $NEW: $test"
    else
        bad "$test did not run $NEW"
    fi
done
for test in cifs_samba::ls_la_per_eacache_design cifs_eas::ea_support_no_every_design \
    cifs_xattr::an_ea_added_on_the_server_shows_after_the_window \
    cifs_impacket::mount_list_stat_read; do
    if grep -qE "^designs ran by $test:.* $NEW_EA( |$)" "$FS_DESIGNS_RAN_LOG"; then
        echo "ran $NEW_EA: $test"
    else
        bad "$test did not run $NEW_EA"
    fi
done

echo "=== design-check: vfsh"
out=$(printf 'mkdir /a\nstat /a/x\nstat /a/x\nmount enoent=%s\nstat /a/x\n' "$NEW" |
    "$t/release/vfsh" -o "enoent=$NEW")
want=$'ok\nerr ENOENT\nerr ENOENT\nok\nerr ENOENT'
[[ $out == "$want" ]] || bad "vfsh -o enoent=$NEW: got '$out'"
"$t/release/vfsh" --help | grep -q "^ *$NEW " || bad "vfsh --help does not list $NEW"

echo "=== design-check: the cifs option parser (vfsh mount cifs eacache=$NEW_EA)"
# Port 1 on loopback has no server: an accepted option set gets as far as
# connecting (EHOSTDOWN); a refused one is EINVAL naming every design.
out=$(printf 'mkdir /m\nmount cifs //127.0.0.1:1/x /m username=u,password=p,eacache=%s\nmount cifs //127.0.0.1:1/x /m username=u,password=p,eacache=nosuch\n' \
    "$NEW_EA" | "$t/release/vfsh" 2>&1)
grep -q "^err EHOSTDOWN" <<<"$out" && ! grep -q "bad eacache= option: $NEW_EA" <<<"$out" ||
    bad "vfsh mount cifs eacache=$NEW_EA: $out"
grep -qE "bad eacache= option: nosuch \(.*\|$NEW_EA(\||\))" <<<"$out" ||
    bad "eacache=nosuch is not refused naming $NEW_EA: $out"

echo "=== design-check: bench smb-sweep $NEW_EA (arguments only; nothing runs)"
"$t/release/bench" smb-sweep --help | grep -qE "^ +$NEW_EA " ||
    bad "bench smb-sweep --help does not list $NEW_EA"
set +e
err=$("$t/release/bench" smb-sweep "$NEW_EA" nosuch --linux none 2>&1 >/dev/null)
code=$?
set -e
[[ $code == 2 && $err == *'no EA-cache design "nosuch" ('*"|$NEW_EA"* ]] ||
    bad "bench smb-sweep $NEW_EA nosuch: exit $code: $err"

echo "=== design-check: bench host and the sweep"
"$t/release/bench" host bench=statneg tasks=1 "design=$NEW" warmup=0 secs=1 >"$work/host.txt" ||
    bad "bench host design=$NEW"
grep -q "enoent=$NEW" "$work/host.txt" || bad "bench host output does not name $NEW"
"$t/release/bench" sweep --sources host --testcases statneg --designs "transient,$NEW" \
    --cpus 1 --warmup 0 --secs 1 --repeat 2 --out "$work/sweep" >/dev/null || bad "bench sweep --designs $NEW"
cat "$work"/sweep/*/report.md >"$work/report.md" 2>/dev/null || true
grep -qE "\| $NEW \| [0-9.]+×" "$work/report.md" ||
    bad "the sweep's report gives $NEW no ratio to the baseline"

echo "=== design-check: the kernel (demo=table, selftest)"
kernel=$t/x86_64-unknown-none/release/kernel
# One round: the check is the design's row and the exit status (seven
# rounds, make run's table, are 105 s under TCG).
"$qemu_run" --kernel "$kernel" --smp 2 --cmdline "demo=table rounds=1" --serial-log "$work/demo.log" \
    --quiet --timeout 300 || bad "demo=table did not exit cleanly"
tr -d '\r' <"$work/demo.log" | grep -qE "^$NEW +[0-9]+ " || bad "demo=table has no $NEW row"
"$qemu_run" --kernel "$kernel" --smp 2 --cmdline selftest --serial-log "$work/selftest.log" \
    --quiet --timeout 300 || bad "selftest did not exit cleanly"
clean=$(tr -d '\r' <"$work/selftest.log")
grep -qE '^[0-9]+ passed, 0 failed' <<<"$clean" || bad "selftest failed"
for test in fs_mkdir_stat_enoent_per_design fs_lookups_all_cpus_per_design \
    fs_rcu_grace_period_reclaims_dentries fs_enomem_is_an_answer; do
    grep -qE "^designs ran by selftest $test:.*\|$NEW(\||$)" <<<"$clean" ||
        bad "selftest $test did not run $NEW"
done

if ((fail)); then
    exit 1
fi
echo "design-check: every surface took '$NEW' and '$NEW_EA' and every per-design test ran them"

#!/bin/busybox sh
# linuxref init: statneg on tmpfs and ext4 (timed, then counted), ls -la of
# cifs shares; then powers off.
/bin/busybox mkdir -p /proc /sys /dev /tmp /mnt/tmpfs /mnt/ext4 /mnt/cifs
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
FS=tmpfs,ext4 THREADS=1 WARMUP=1 SECS=3 COUNT=0 STACKS=0 UNC= CIFS= CIFSKO= LSV= EASHOW= EACHECK= CRASH= RENAMES=
for w in $(cat /proc/cmdline); do
    case $w in
        lr.cifsko=*) CIFSKO=${w#lr.cifsko=} ;;
        lr.ls=*) LSV="$LSV ${w#lr.ls=}" ;;
        lr.eashow=*) EASHOW="$EASHOW ${w#lr.eashow=}" ;;
        lr.eacheck=*) EACHECK=${w#lr.eacheck=} ;;
        lr.fs=*) FS=${w#lr.fs=} ;;
        lr.threads=*) THREADS=${w#lr.threads=} ;;
        lr.warmup=*) WARMUP=${w#lr.warmup=} ;;
        lr.secs=*) SECS=${w#lr.secs=} ;;
        lr.count=*) COUNT=${w#lr.count=} ;;
        lr.stacks=*) STACKS=${w#lr.stacks=} ;;
        lr.unc=*) UNC=${w#lr.unc=} ;;
        lr.cifs=*) CIFS="$CIFS ${w#lr.cifs=}" ;;
        lr.crash=*) CRASH=${w#lr.crash=} ;;
        lr.renames=*) RENAMES=${w#lr.renames=} ;;
    esac
done
# cifs_mount: a cifs mount that drops the options this kernel does not
# know (qemu/linuxref/cifs-mount.sh, shared with the fstests guest).
. /cifs-mount.sh
# lr.cifsko=PATH: that cifs.ko (a second initramfs archive) instead of the
# packaged one; what the kernel says about loading it is printed.
for m in $(cat /modules/order); do
    f=/modules/$m
    [ "$m" = cifs.ko ] && [ -n "$CIFSKO" ] && f=$CIFSKO
    insmod $f || echo "linuxref: insmod $f failed"
done
if [ -n "$CIFSKO" ]; then
    echo "linuxref: cifs.ko from $CIFSKO, tainted=$(cat /proc/sys/kernel/tainted)"
    dmesg | grep -E '^\[[ 0-9.]*\] cifs: ' | grep -i -E 'taint|signature|verification' \
        | while read -r l; do echo "linuxref-dmesg: $l"; done
fi
mount -t tmpfs -o size=64m tmpfs /mnt/tmpfs || echo "linuxref: tmpfs mount failed"
i=0
while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
mount -t ext4 /dev/vda /mnt/ext4 || echo "linuxref: ext4 mount failed"
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T || echo "linuxref: no tracefs"
# No jump-optimized kprobes (the optimizer rewrites probed code from a
# worker while other CPUs run it). The probes on function entries are
# ftrace-based anyway (the entry's fentry call); the hit counts are the
# same either way.
[ -w /proc/sys/debug/kprobes-optimization ] && echo 0 > /proc/sys/debug/kprobes-optimization
# solo on|off: every CPU but CPU 0 offline, or back online. Every change to
# the probes and their hist triggers is made solo: arming a probe (and
# adding or removing a trigger, which enables or disables its event)
# patches the probed function's fentry site, and under QEMU's
# multi-threaded TCG a vCPU that runs a site while another patches it can
# call address 0 or die on an int3 nobody claims (docs/linux-guest-crash.md;
# scripts/linux-pokes.sh reproduces it, and shows solo ending it). Each
# CPU's state is read back: a write the kernel refused (EBUSY) would
# leave the change unprotected (on), or the counted statneg pinning its
# threads to fewer CPUs than it was asked to (off: statneg pins to the
# CPUs sched_getaffinity gives, which is what nproc counts); either is
# said (linuxref-solo-failed) and is status 1.
# A write to online returns once the CPU is active, so statneg started
# after `solo off` sees every CPU. SYSCPU is only ever changed by the test
# of this function (qemu/src/linuxref/build.rs).
SYSCPU=${SYSCPU:-/sys/devices/system/cpu}
# The CPUs QEMU gave the guest, not nproc: the guest boots with one online
# (see the `solo off` after the set-up). present is a CPU list ("0", "0-1",
# "0,2-3"): each range counts its CPUs, so that the count is that of the
# cpuN directories `solo off` brings up (the highest number plus one would
# count a hole as a CPU). No list at all counts as CPU 0 alone.
present_cpus() {
    n=0
    for r in $(cat "$SYSCPU/present" 2>/dev/null | tr , ' '); do
        case $r in
            *-*) n=$((n + ${r#*-} - ${r%-*} + 1)) ;;
            *) n=$((n + 1)) ;;
        esac
    done
    echo $((n > 0 ? n : 1))
}
NPROC=${NPROC:-$(present_cpus)}
solo() {
    v=1
    [ "$1" = on ] && v=0
    solo_rc=0
    for c in "$SYSCPU"/cpu[1-9]*/online; do
        [ -e "$c" ] || continue
        echo $v 2>/dev/null > "$c"
        now=$(cat "$c" 2>/dev/null)
        if [ "$now" != $v ]; then
            echo "linuxref-solo-failed $1: ${c%/online} online=${now:-?}" >&2
            solo_rc=1
        fi
    done
    if [ "$1" = off ] && [ "$(nproc)" != "$NPROC" ]; then
        echo "linuxref-solo-failed off: nproc=$(nproc) of the $NPROC CPUs the guest has" >&2
        solo_rc=1
    fi
    return $solo_rc
}
# crash PHASE: a test hook, never in a measurement (lr.crash=timed|count,
# set by the host's LINUXREF_TEST_CRASH, qemu/src/linuxref/guest.rs): the
# kernel panics on purpose in the last filesystem's run (the others finish
# first), before its timed statneg (timed) or in its first counting run,
# probes and triggers armed and every CPU online (count), so that the
# host's crash path runs end to end. sysrq-c where the kernel has it, else
# init exits (a panic too: "Attempted to kill init!").
crash() {
    [ "$CRASH" = "$1" ] && [ "$fs" = "${FS##*,}" ] || return 0
    echo "linuxref: crashing on purpose (lr.crash=$1)" >&2
    sync
    [ -w /proc/sysrq-trigger ] && echo c > /proc/sysrq-trigger
    exit 1
}
# The guest boots with one CPU online (maxcpus=1, qemu/src/linuxref/guest.rs)
# and brings the others up only here, after its modules are in and its
# filesystems mounted. A kernel patches its own text while it boots (static
# keys flipped by initcalls, a module's jump labels) and again when probes
# are armed; under QEMU's multi-threaded TCG a vCPU that runs a site while
# another vCPU patches it can die at address 0 or on an int3 nobody claims
# (docs/linux-guest-crash.md; scripts/linux-pokes.sh reproduces it). So the
# text changes only while one CPU is online: here, and under solo. The
# host checks the count this line prints against the vCPUs it gave.
solo off
echo "linuxref: kernel $(uname -r), $(nproc) cpus, fs=$FS threads=$THREADS warmup=$WARMUP secs=$SECS count=$COUNT"

PROBES="d_alloc:d_alloc d_alloc_parallel:d_alloc_parallel __d_alloc:__d_alloc lookup_slow:__lookup_slow
 down_read:down_read down_write:down_write spin_lock:_raw_spin_lock spin_lock_nested:_raw_spin_lock_nested
 spin_lock_irq:_raw_spin_lock_irq spin_lock_irqsave:_raw_spin_lock_irqsave spin_lock_bh:_raw_spin_lock_bh
 spin_trylock:_raw_spin_trylock"
# Counted by task comm at the moment of the hit (the comm filter reads the
# current task), not by the pid's cached name: worker threads are often not
# in tracefs' saved_cmdlines and would print as <...>.
HIST='hist:keys=common_pid if comm == "statneg"'
# One counted statneg: hits of every probe by statneg's threads, then its ops.
# A solo that failed fails the run (count-failed): see solo.
count_run() {
    solo on || echo "count-failed=1"
    for e in $T/events/lr/*/; do echo "$HIST" > ${e}trigger || echo "count-failed=1"; done
    solo off || echo "count-failed=1"
    crash count
    /statneg --count "$1" $THREADS $2 $3 || echo "count-failed=1"
    solo on || echo "count-failed=1"
    for e in $T/events/lr/*/; do
        echo "$(basename $e)=$(awk '/hitcount:/ { s += $NF } END { print s + 0 }' ${e}hist)"
        echo "!$HIST" > ${e}trigger
    done
    solo off || echo "count-failed=1"
}
count_fs() {
    : > /tmp/missing
    solo on
    for p in $PROBES; do
        echo "p:lr/${p%%:*} ${p#*:} caller=+0(\$stack):x64" >> $T/kprobe_events 2>/dev/null || echo "${p#*:}" >> /tmp/missing
    done
    solo off
    count_run /mnt/$1/missing-name 0 > /tmp/c0
    count_run /mnt/$1/missing-name $COUNT > /tmp/c1
    # Only key=N lines are counts (statneg's check line is not).
    awk -F= 'NF != 2 { next } NR == FNR { b[$1] = $2; next } { d[$1] = $2 - b[$1] }
    END {
        ops = d["count-ops"]
        # A failure in either run (the baseline too) fails the count.
        if ("count-failed" in b || "count-failed" in d) { print "error: the counting run failed (count-failed)"; exit }
        if (ops <= 0) { print "error: the counting run did not run"; exit }
        a = ("__d_alloc" in d) ? d["__d_alloc"] : d["d_alloc"]
        l = d["spin_lock"] + d["spin_lock_nested"] + d["spin_lock_irq"] + d["spin_lock_irqsave"] + d["spin_lock_bh"] + d["spin_trylock"]
        printf "per-op: allocs=%.3f locks=%.3f rwsem=%.3f fallbacks=%.3f\n", a / ops, l / ops, (d["down_read"] + d["down_write"]) / ops, d["lookup_slow"] / ops
        s = "linuxref-count ops=" ops
        for (k in d) if (k != "count-ops") s = s " " k "=" d[k]
        print s
    }' /tmp/c0 /tmp/c1
    [ -s /tmp/missing ] && echo "linuxref-count-missing $(cat /tmp/missing | tr '\n' ' ')"
    # lr.renames=RATE@FS,...: the counting run again per entry while a
    # "renamer" thread renames a file of its own in /mnt/FS RATE times a
    # second (0: flat out); its renames are not counted (another comm). Any
    # rename bumps rename_lock, which noalloc's lockless miss checks: the
    # line says how many misses still fall back (__lookup_slow per stat).
    for r in $(echo $RENAMES | tr , ' '); do
        count_run /mnt/$1/missing-name $COUNT "${r%@*}:/mnt/${r#*@}" > /tmp/cr
        awk -F= -v fs=$1 -v rate=${r%@*} -v on=${r#*@} 'NR == FNR { b[$1] = $2; next } { v[$1] = $2 }
        END {
            ops = v["count-ops"] - b["count-ops"]
            if ("count-failed" in b || "count-failed" in v || ops <= 0 || !("count-renames" in v)) {
                print "error: the rename counting run on " fs " (" rate "@" on ") failed"; exit
            }
            f = v["lookup_slow"] - b["lookup_slow"]
            printf "linuxref-renames fs=%s on=%s rate=%s renames_per_s=%.0f stats_per_s=%.0f ops=%d renames=%d fallbacks=%.5f per_rename=%.3f allocs=%.5f rwsem=%.5f\n",
                fs, on, rate, v["count-renames"] * 1e9 / v["count-ns"], ops * 1e9 / v["count-ns"], ops,
                v["count-renames"], f / ops, (v["count-renames"] > 0 ? f / v["count-renames"] : 0),
                (v["__d_alloc"] - b["__d_alloc"]) / ops,
                (v["down_read"] + v["down_write"] - b["down_read"] - b["down_write"]) / ops
        }' /tmp/c0 /tmp/cr
    done
    if [ "$STACKS" = 1 ]; then
        # Who takes the locks: one more run, each lock probe's hits keyed by
        # its caller (the return address on the stack at function entry).
        solo on
        for p in spin_lock spin_lock_irqsave spin_trylock down_read; do
            e=$T/events/lr/$p/
            [ -d $e ] && echo "hist:keys=caller.sym-offset if comm == \"statneg\"" > ${e}trigger
        done
        solo off
        /statneg --count /mnt/$1/missing-name $THREADS $COUNT > /dev/null
        solo on
        for p in spin_lock spin_lock_irqsave spin_trylock down_read; do
            e=$T/events/lr/$p/
            [ -d $e ] || continue
            echo "linuxref-callers probe=$p"
            grep 'hitcount:' ${e}hist | sort -t: -k3 -rn | head -8
            echo "!hist:keys=caller.sym-offset if comm == \"statneg\"" > ${e}trigger
        done
        solo off
    fi
    solo on
    echo > $T/kprobe_events
    solo off
}
for fs in $(echo $FS | tr , ' '); do
    echo "linuxref-begin fs=$fs"
    crash timed
    /statneg /mnt/$fs/missing-name $THREADS $WARMUP $SECS
    rc=$?
    [ $rc = 0 ] && [ "$COUNT" != 0 ] && count_fs $fs
    echo "linuxref-end fs=$fs rc=$rc"
done

# ea_check OPTIONS ENTRY:WAIT, after a variant's listings: an EA set
# through a second connection (nosharesock) on ENTRY, then ENTRY's EAs seen
# by the first mount at once and WAIT seconds later.
ea_check() {
    e=${2%%:*} wait=${2#*:}
    mkdir -p /mnt/cifs2
    echo "linuxref-xattr variant=$name when=before $(/xattr list /mnt/cifs/$e)"
    if mount -t cifs "$UNC" /mnt/cifs2 -o "$1,nosharesock"; then
        /xattr set /mnt/cifs2/$e user.lrcheck added || echo "linuxref: setting user.lrcheck failed"
        umount /mnt/cifs2
    else
        echo "linuxref: second cifs mount failed"
    fi
    echo "linuxref-xattr variant=$name when=soon $(/xattr list /mnt/cifs/$e)"
    sleep $wait
    echo "linuxref-xattr variant=$name when=later $(/xattr list /mnt/cifs/$e)"
}
mark() {
    wget -q -O /dev/null "http://10.0.2.100:4450/$1" || echo "linuxref: marker $1 failed"
}
if [ -n "$CIFS" ]; then
    ip link set lo up
    ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 \
        || echo "linuxref: network setup failed"
    echo 8192 > $T/buffer_size_kb
    for v in $CIFS; do
        name=${v%%:*}
        # lr.ls=NAME:9.1: the host's GNU ls for that variant; by default
        # Debian 13's (its own loader and libraries under /trixie).
        want=9.7
        for l in $LSV; do [ "${l%%:*}" = "$name" ] && want=${l#*:}; done
        LS="ls"
        if [ "$want" = 9.1 ] && [ -x /usr/bin/gnu-ls ]; then
            LS="/usr/bin/gnu-ls"
        elif [ "$want" != 9.1 ] && [ -x /trixie/ls ]; then
            LS="/trixie/ld-linux-x86-64.so.2 --library-path /trixie/lib /trixie/ls"
        fi
        lsver=$($LS --version 2>/dev/null | head -1 | awk '{ print $NF }')
        [ -n "$lsver" ] || lsver=busybox
        echo "linuxref: ls of $name is $LS ($lsver)"
        echo "linuxref-cifs-begin variant=$name"
        # An option this kernel does not know (cifs: Unknown parameter 'X')
        # is dropped, said so, and the mount retried (/cifs-mount.sh): the
        # seed's 6.12.0 is a distribution kernel with later options
        # backported.
        ok=0
        cifs_mount "$UNC" /mnt/cifs "" "${v#*:}" "linuxref-dropped variant=$name" && ok=1
        o=$cifs_opts
        if [ $ok = 1 ]; then
            for phase in cold warm; do
                echo 0 > /proc/fs/cifs/Stats
                echo 0 > $T/events/cifs/enable
                echo > $T/trace
                echo 1 > $T/events/cifs/enable
                mark $name-$phase
                t=$(/lrtime /tmp/ls.out $LS -la /mnt/cifs)
                mark $name-$phase-end
                echo 0 > $T/events/cifs/enable
                echo "linuxref-lsla variant=$name phase=$phase $t lines=$(wc -l < /tmp/ls.out) ls=$lsver"
                echo "linuxref-stats variant=$name phase=$phase"
                cat /proc/fs/cifs/Stats
                echo "linuxref-trace variant=$name phase=$phase"
                cat $T/trace > /tmp/trace
                grep -o 'status=0x[0-9a-f]*' /tmp/trace | sort | uniq -c
                grep -o 'cmd=[0-9]*' /tmp/trace | sort -t= -k2 -n | uniq -c
                grep -o 'smb3_[a-z0-9_]*:' /tmp/trace | sort | uniq -c | sort -rn
                echo "linuxref-trace-end"
                # lr.eashow=ENTRY: what listxattr/getxattr give for it now.
                for e in $EASHOW; do
                    echo "linuxref-xattr variant=$name when=$phase $(/xattr list /mnt/cifs/$e)"
                done
            done
            [ "${EACHECK%%:*}" = "$name" ] && ea_check "$o" "${EACHECK#*:}"
            umount /mnt/cifs || echo "linuxref: umount failed"
        else
            echo "linuxref: cifs mount of $name failed"
            dmesg | grep -i -E 'cifs|smb' | tail -4 | while read -r l; do echo "linuxref: dmesg: $l"; done
        fi
        echo "linuxref-cifs-end variant=$name"
    done
fi
echo "linuxref-done"
sync
poweroff -f

#!/bin/busybox sh
# fidelity init (`make fidelity`, the Linux side): the system call constant
# (statneg --calib, a getppid loop) and one statneg window, both through
# qemu/linuxref/statneg.c, then powers off. It replaces the reference
# initramfs's /init for this boot (a second archive holds it and the
# /statneg built from this tree, which replaces the cached initramfs's
# copy) and reuses busybox. No modules
# are loaded and no probes armed: nothing patches kernel text once the
# second CPU is up (docs/linux-guest-crash.md), and nothing distorts the
# timed run.
#
# The missing name is /nonexistent in the root: the initramfs's rootfs,
# which is tmpfs (shmem) when the kernel has CONFIG_TMPFS and no root= is
# given; statneg prints the directory's f_type, so a ramfs root shows.
# That is the prototype's statneg path: one component in the root of a
# tmpfs, no mount crossed.
#
# With fid.probed=1 a second window follows the timed one in the same
# boot, with the kprobes of `make linux-patched`'s counting run armed
# (qemu/linuxref/init.sh's PROBES, each counted by a hist trigger filtered
# on the comm statneg): its rate beside the first one's is the distortion
# the probes add, and its hits over its stats are Linux's per-op counters.
# The probes are armed and disarmed with one CPU online (solo, as init.sh
# does: a kernel that patches its text while another vCPU runs it dies
# under QEMU's multi-threaded TCG, docs/linux-guest-crash.md); the probed
# window itself runs on every CPU.
#
#   fid.threads=N fid.warmup=S fid.secs=S fid.calib=S fid.path=PATH fid.probed=0|1
# Prints `fidelity-kernel RELEASE N cpus`, statneg's lines, `fidelity-end
# rc=RC`; with fid.probed=1 `fidelity-probed-begin`, the probed window's
# statneg lines, `fidelity-probed PROBE=HITS …`, `fidelity-probed-end
# rc=RC`; `fidelity-error …` for what could not be done, `linuxref-done`.
/bin/busybox mkdir -p /proc /sys /dev
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
THREADS=1 WARMUP=1 SECS=2 CALIB=1 P=/nonexistent PROBED=0
for w in $(cat /proc/cmdline); do
    case $w in
        fid.threads=*) THREADS=${w#fid.threads=} ;;
        fid.warmup=*) WARMUP=${w#fid.warmup=} ;;
        fid.secs=*) SECS=${w#fid.secs=} ;;
        fid.calib=*) CALIB=${w#fid.calib=} ;;
        fid.path=*) P=${w#fid.path=} ;;
        fid.probed=*) PROBED=${w#fid.probed=} ;;
    esac
done
# The guest boots with one CPU online (maxcpus=1); the others come up here.
for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
    [ -e "$c" ] && { echo 1 > "$c" || echo "fidelity-error cannot online ${c%/online}"; }
done
echo "fidelity-kernel $(uname -r) $(nproc) cpus"
/statneg --calib $CALIB || echo "fidelity-error calibration failed"
/statneg $P $THREADS $WARMUP $SECS
echo "fidelity-end rc=$?"
# solo on|off: every CPU but CPU 0 offline (on) or online again (off).
solo() {
    v=1
    [ "$1" = on ] && v=0
    for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
        [ -e "$c" ] || continue
        echo $v > "$c" 2>/dev/null
        [ "$(cat "$c")" = $v ] || { echo "fidelity-error solo $1: ${c%/online}"; return 1; }
    done
}
if [ "$PROBED" = 1 ]; then
    T=/sys/kernel/tracing
    [ -d $T/events ] || mount -t tracefs tracefs $T || echo "fidelity-error no tracefs"
    PROBES="d_alloc:d_alloc d_alloc_parallel:d_alloc_parallel __d_alloc:__d_alloc lookup_slow:__lookup_slow
 down_read:down_read down_write:down_write spin_lock:_raw_spin_lock spin_lock_nested:_raw_spin_lock_nested
 spin_lock_irq:_raw_spin_lock_irq spin_lock_irqsave:_raw_spin_lock_irqsave spin_lock_bh:_raw_spin_lock_bh
 spin_trylock:_raw_spin_trylock"
    HIST='hist:keys=common_pid if comm == "statneg"'
    solo on
    for p in $PROBES; do
        echo "p:lr/${p%%:*} ${p#*:}" >> $T/kprobe_events 2>/dev/null
    done
    for e in $T/events/lr/*/; do echo "$HIST" > ${e}trigger || echo "fidelity-error trigger $e"; done
    solo off
    echo "fidelity-probed-begin"
    /statneg $P $THREADS $WARMUP $SECS
    prc=$?
    solo on
    s="fidelity-probed"
    for e in $T/events/lr/*/; do
        s="$s $(basename $e)=$(awk '/hitcount:/ { s += $NF } END { print s + 0 }' ${e}hist)"
        echo "!$HIST" > ${e}trigger
    done
    echo > $T/kprobe_events
    solo off
    echo "$s"
    echo "fidelity-probed-end rc=$prc"
fi
echo "linuxref-done"
sync
poweroff -f

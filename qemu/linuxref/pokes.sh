#!/bin/busybox sh
# pokes init: the cross-modifying-code reproducer of docs/linux-guest-crash.md.
# With statneg stat'ing a missing tmpfs name on every CPU (so that every CPU
# runs _raw_spin_lock and the scheduler's paths all the time), the kernel
# patches its own text N times while the other CPUs execute it, in one of
# three ways (pk.mode=):
#   kprobe      register an ftrace-based kprobe on _raw_spin_lock, enable,
#               disable, unregister (the counting run's arming, all CPUs on);
#   ftrace      the function tracer on _raw_spin_lock alone, on and off;
#   schedstats  kernel.sched_schedstats on and off (a static key whose
#               branches sit in the scheduler's enqueue and dequeue paths).
# pk.solo=1 takes every CPU but CPU 0 offline around each patch, as
# init.sh's solo does around the counting run's probes and triggers.
# Prints "pokes-done mode=M n=N cpus=C" and powers off; a kernel that dies on
# the way prints its oops instead (read by scripts/linux-pokes.sh).
/bin/busybox mkdir -p /proc /sys /dev /tmp /mnt/tmpfs
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /mnt/tmpfs
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T
MODE=kprobe N=100 SOLO=0
for w in $(cat /proc/cmdline); do
    case "$w" in
        pk.mode=*) MODE=${w#pk.mode=} ;;
        pk.n=*) N=${w#pk.n=} ;;
        pk.solo=*) SOLO=${w#pk.solo=} ;;
    esac
done
[ -w /proc/sys/debug/kprobes-optimization ] && echo 0 > /proc/sys/debug/kprobes-optimization
/statneg /mnt/tmpfs/missing-name "$(nproc)" 0 3600 > /dev/null &
sleep 1
NPROC=$(nproc)
online() {
    [ "$SOLO" = 1 ] || return 0
    for c in /sys/devices/system/cpu/cpu[1-9]*/online; do echo "$1" > "$c"; done
}
i=0
while [ $i -lt "$N" ]; do
    online 0
    case "$MODE" in
        kprobe)
            echo 'p:pk/sl _raw_spin_lock' >> $T/kprobe_events
            echo 1 > $T/events/pk/sl/enable
            echo 0 > $T/events/pk/sl/enable
            echo '-:pk/sl' >> $T/kprobe_events
            ;;
        ftrace)
            echo _raw_spin_lock > $T/set_ftrace_filter
            echo function > $T/current_tracer
            echo nop > $T/current_tracer
            ;;
        schedstats)
            echo 1 > /proc/sys/kernel/sched_schedstats
            echo 0 > /proc/sys/kernel/sched_schedstats
            ;;
        *) echo "pokes: unknown pk.mode=$MODE"; break ;;
    esac
    online 1
    i=$((i + 1))
done
echo "pokes-done mode=$MODE n=$i cpus=$(nproc) booted=$NPROC"
sync
poweroff -f

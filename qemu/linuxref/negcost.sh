#!/bin/busybox sh
# negcost init (`make negcost`): what N distinct missing names stat()ed in
# one tmpfs directory cost its later readdir and rmdir, per N; then powers
# off. It replaces the reference initramfs's /init for this boot (a second
# archive holds it and /negcost, qemu/linuxref/negcost.c) and reuses the
# rest: busybox, the module list.
#
# The guest kernels have no preemptoff/irqsoff tracer and no soft-lockup
# detector (linux/config/7.3-guest.config), so the locked stretches are
# timed by ftrace's function graph on the functions that hold the parent's
# d_lock across their walk of its children: find_positive_dentry (readdir,
# fs/libfs.c), simple_empty (shmem_rmdir) and d_walk (shrink_dcache_parent
# in vfs_rmdir). Each is a leaf of the graph (nothing else is traced), so
# its duration is the time from its entry to its return: the lock held,
# plus the few instructions around it. Only the readdir and the rmdir are
# traced (negcost sets tracing_on around them, and marks each step in the
# trace: negcost-ls K, negcost-unlink, negcost-rmdir). One vCPU: the text patching
# of arming the tracer races nothing (docs/linux-guest-crash.md).
#
#   negcost.names=N[,N...] negcost.files=F
# Prints `negcost-kernel RELEASE`, `negcost-traced FUNCS` (those this
# kernel can trace), and per N `negcost-begin names=N`, negcost's line, the
# trace file and `negcost-end names=N rc=RC`; `negcost-error …` for what
# could not be done; `linuxref-done` last.
/bin/busybox mkdir -p /proc /sys /dev /mnt/t
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
if [ -f /modules/order ]; then
    for m in $(cat /modules/order); do insmod /modules/$m 2>/dev/null; done
fi
NAMES=10000 FILES=10
for w in $(cat /proc/cmdline); do
    case $w in
        negcost.names=*) NAMES=${w#negcost.names=} ;;
        negcost.files=*) FILES=${w#negcost.files=} ;;
    esac
done
mount -t tmpfs tmpfs /mnt/t || echo "negcost-error tmpfs mount failed"
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T || echo "negcost-error no tracefs"
echo "negcost-kernel $(uname -r)"

traced=
for f in find_positive_dentry simple_empty d_walk; do
    grep -q "^$f\$" $T/available_filter_functions 2>/dev/null && traced="$traced $f"
done
TR=
if ! grep -qw function_graph $T/available_tracers 2>/dev/null; then
    echo "negcost-error no function_graph tracer (CONFIG_FUNCTION_GRAPH_TRACER)"
elif [ -z "$traced" ]; then
    echo "negcost-error none of find_positive_dentry simple_empty d_walk is traceable"
else
    echo 0 > $T/tracing_on
    echo 4096 > $T/buffer_size_kb
    echo "$traced" > $T/set_ftrace_filter
    echo function_graph > $T/current_tracer
    [ -e $T/options/funcgraph-retval ] && echo 0 > $T/options/funcgraph-retval
    TR=$T
fi
echo "negcost-traced$traced"
# A warm-up run, untraced and unreported: under TCG the first pass of any
# code pays for its translation (the first N's readdir took twice the
# second's, ten times fewer names).
/negcost /mnt/t/warm 100 $FILES > /dev/null || echo "negcost-error the warm-up run failed"

for n in $(echo $NAMES | tr , ' '); do
    echo "negcost-begin names=$n"
    /negcost /mnt/t/d$n $n $FILES $TR
    rc=$?
    [ -n "$TR" ] && cat $T/trace
    echo "negcost-end names=$n rc=$rc"
    # What the run left cached goes before the next N (the negatives of a
    # removed directory are dropped with it; this is the rest).
    sync
    echo 2 > /proc/sys/vm/drop_caches
done
[ -n "$TR" ] && echo nop > $T/current_tracer
echo "linuxref-done"
sync
poweroff -f

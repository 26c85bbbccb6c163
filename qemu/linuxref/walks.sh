#!/bin/busybox sh
# linux-walks init (`make linux-walks`): ftrace's function graph of single
# stat() calls on tmpfs and ext4, printed between markers on the console;
# then powers off. It replaces the reference initramfs's /init for this boot
# (a second archive holds it and /walkstat) and reuses the rest: busybox,
# the module list, the ext4 disk.
#
# Each case: the directory tree made, walkstat (qemu/linuxref/walkstat.c)
# chroots into the filesystem's root, stats PATH twice untraced (warm), then
# once with tracing on, its own pid the only one traced; three tries each. The tracer is
# function_graph with set_graph_function on the stat entry point (the first
# of ENTRIES this kernel can trace), interrupts left out, each closing brace
# named (funcgraph-tail). The host keeps the lookup path's functions
# (qemu/linuxref/walk-functions.txt) out of the graph.
#
# Prints: `linuxwalk-kernel RELEASE`, `linuxwalk-tracers LIST`, and per case
# `linuxwalk-begin case=C fs=F root=R path=P entry=E`, the trace file,
# `walkstat path=P result=R`, `linuxwalk-end case=C`; `linuxwalk-error …`
# for what could not be done; `linuxref-done` last.
/bin/busybox mkdir -p /proc /sys /dev /tmp /mnt/ext4
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules/order); do
    insmod /modules/$m 2>/dev/null || echo "linuxwalk-note insmod $m failed"
done
mount -t tmpfs -o size=64m tmpfs /tmp || echo "linuxwalk-error tmpfs mount failed"
i=0
while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
mount -t ext4 /dev/vda /mnt/ext4 || echo "linuxwalk-error ext4 mount failed"
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T || echo "linuxwalk-error no tracefs"
echo "linuxwalk-kernel $(uname -r)"
echo "linuxwalk-tracers $(cat $T/available_tracers)"

ENTRIES="vfs_statx vfs_fstatat __x64_sys_newfstatat"
entry=
for e in $ENTRIES; do
    if grep -q "^$e\$" $T/available_filter_functions; then entry=$e; break; fi
done
if ! grep -qw function_graph $T/available_tracers; then
    echo "linuxwalk-error no function_graph tracer (CONFIG_FUNCTION_GRAPH_TRACER)"
elif [ -z "$entry" ]; then
    echo "linuxwalk-error none of $ENTRIES is traceable"
else
    echo 0 > $T/tracing_on
    echo 16384 > $T/buffer_size_kb
    echo function_graph > $T/current_tracer
    echo "$entry" > $T/set_graph_function
    echo 0 > $T/options/funcgraph-irqs
    echo 1 > $T/options/funcgraph-tail
    [ -e $T/options/funcgraph-retval ] && echo 0 > $T/options/funcgraph-retval

    mkdir -p /tmp/a/b /mnt/ext4/a/b
    echo hello > /tmp/a/b/f
    sync
    for c in tmpfs-missing:tmpfs:/tmp:/a/b/missing tmpfs-hit:tmpfs:/tmp:/a/b/f \
        ext4-missing:ext4:/mnt/ext4:/a/b/missing; do
        name=${c%%:*} rest=${c#*:}
        fs=${rest%%:*} rest=${rest#*:}
        root=${rest%%:*} path=${rest#*:}
        # Three tries: an interrupt or a preemption inside the traced stat
        # puts its handler in the graph; the host keeps the first clean try.
        for try in 1 2 3; do
            echo > $T/trace
            echo "linuxwalk-begin case=$name fs=$fs root=$root path=$path entry=$entry try=$try"
            /walkstat $T "$root" "$path" > /tmp/walkstat.out
            cat $T/trace
            cat /tmp/walkstat.out
            echo "linuxwalk-end case=$name"
        done
    done
    echo nop > $T/current_tracer
fi
echo "linuxref-done"
sync
poweroff -f

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
#   fid.threads=N fid.warmup=S fid.secs=S fid.calib=S fid.path=PATH
# Prints `fidelity-kernel RELEASE N cpus`, statneg's lines, `fidelity-end
# rc=RC`, `fidelity-error …` for what could not be done, `linuxref-done`.
/bin/busybox mkdir -p /proc /sys /dev
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
THREADS=1 WARMUP=1 SECS=2 CALIB=1 P=/nonexistent
for w in $(cat /proc/cmdline); do
    case $w in
        fid.threads=*) THREADS=${w#fid.threads=} ;;
        fid.warmup=*) WARMUP=${w#fid.warmup=} ;;
        fid.secs=*) SECS=${w#fid.secs=} ;;
        fid.calib=*) CALIB=${w#fid.calib=} ;;
        fid.path=*) P=${w#fid.path=} ;;
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
echo "linuxref-done"
sync
poweroff -f

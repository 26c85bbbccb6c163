#!/bin/busybox sh
# dcache-oracle init: the stress oracle (/dcache-oracle) on a fresh tmpfs, a
# fresh ramfs and the reference guest's ext4 disk (/dev/vda) (or devtmpfs,
# mounted again on /mnt/devtmpfs), then power
# off. Appended as /init to the reference initramfs by
# qemu/src/linuxref/oracle.rs.
#   oracle.fs=tmpfs,ext4,ramfs oracle.readers=N oracle.secs=S
# Per filesystem it prints `dcache-oracle-begin fs=FS`, the oracle's lines
# and `dcache-oracle-exit fs=FS rc=RC`; then the case-folding check's and
# the RESOLVE_CACHED check's lines, and `linuxref-done`.
/bin/busybox mkdir -p /proc /sys /dev /mnt/tmpfs /mnt/ext4 /mnt/ramfs /mnt/devtmpfs
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
READERS=1 SECS=60 FS=tmpfs
for w in $(cat /proc/cmdline); do
    case $w in
        oracle.readers=*) READERS=${w#oracle.readers=} ;;
        oracle.secs=*) SECS=${w#oracle.secs=} ;;
        oracle.fs=*) FS=${w#oracle.fs=} ;;
    esac
done
# Debian's kernels need their virtio modules (our builds have them built
# in, and no module support: there every insmod fails, quietly).
if [ -f /modules/order ]; then
    for m in $(cat /modules/order); do insmod /modules/$m 2>/dev/null; done
fi
mount -t tmpfs -o size=64m tmpfs /mnt/tmpfs || echo "dcache-oracle: tmpfs mount failed"
mount -t ramfs ramfs /mnt/ramfs || echo "dcache-oracle: ramfs mount failed"
# The kernel's one devtmpfs superblock (the one on /dev), a second time: a
# tmpfs instance, so noalloc gives it a complete dcache too.
mount -t devtmpfs devtmpfs /mnt/devtmpfs || echo "dcache-oracle: devtmpfs mount failed"
i=0
while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
mount -t ext4 /dev/vda /mnt/ext4 || echo "dcache-oracle: ext4 mount failed"
# Booted with one CPU online (maxcpus=1, qemu/src/linuxref/oracle.rs): the
# others come up now that the modules are in, so that no CPU runs kernel
# text while another patches it at boot (docs/linux-guest-crash.md). The
# host checks the count printed here against the vCPUs it gave.
for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
    [ -e "$c" ] && echo 1 > "$c"
done
echo "dcache-oracle-kernel $(uname -r) $(nproc) cpus"
for fs in $(echo $FS | tr , ' '); do
    echo "dcache-oracle-begin fs=$fs"
    /dcache-oracle /mnt/$fs/oracle $READERS $SECS
    echo "dcache-oracle-exit fs=$fs rc=$?"
done
# Case folding (tmpfs has it from 6.13 on): what a casefolded directory
# must answer, on every kernel alike (qemu/linuxref/casefold.c).
mkdir -p /mnt/ci
if mount -t tmpfs -o casefold tmpfs /mnt/ci 2>/dev/null; then
    /casefold /mnt/ci
    echo "casefold-exit rc=$?"
else
    echo "casefold-unsupported: mount -t tmpfs -o casefold failed"
fi
# A missing name under RESOLVE_CACHED and O_CREAT, on each filesystem
# (qemu/linuxref/cached.c): the host judges the answers per kernel.
/cached /mnt/tmpfs /mnt/ramfs /mnt/ext4 /mnt/devtmpfs
echo "cached-exit rc=$?"
echo linuxref-done
poweroff -f

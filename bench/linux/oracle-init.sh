#!/bin/busybox sh
# dcache-oracle init: the stress oracle on a fresh tmpfs, then power off.
/bin/busybox mkdir -p /proc /sys /dev /mnt/tmpfs
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o size=64m tmpfs /mnt/tmpfs
READERS=1 SECS=60
for w in $(cat /proc/cmdline); do
    case $w in
        oracle.readers=*) READERS=${w#oracle.readers=} ;;
        oracle.secs=*) SECS=${w#oracle.secs=} ;;
    esac
done
echo "dcache-oracle-kernel $(uname -r) $(nproc) cpus"
/dcache-oracle /mnt/tmpfs/oracle $READERS $SECS
echo "dcache-oracle-exit $?"
echo linuxref-done
poweroff -f

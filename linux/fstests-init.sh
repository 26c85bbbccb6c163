#!/bin/bash
# fstests-init.sh: /init of the fstests guest (linux/fstests.sh). The guest's
# root is the initramfs: a Debian 12 userland with fstests built against its
# libraries under /fstests, the reference guest's modules under /modules, and
# this run's settings in /fstests-run/env (FSTYP, KERNEL, GROUP, the check
# arguments, for cifs the shares and mount options). It mounts fstests'
# results disk (/dev/vda, ext4) on /results, runs `check` once, prints the
# summary between `fstests-begin` and `fstests-end`, and powers off. It
# touches only the guest.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /run /tmp /results /mnt/test /mnt/scratch
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
[ -d /sys/kernel/debug ] && mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/mounts /etc/mtab
hostname fstests
ip link set lo up
# The essential variant has no /etc/hosts; the lock tests (generic/131's
# locktest) reach their server as `localhost`.
printf '127.0.0.1\tlocalhost\n127.0.1.1\tfstests\n::1\tlocalhost ip6-localhost\n' > /etc/hosts

# shellcheck disable=SC1091
. /fstests-run/env
if [ -f /modules/order ]; then
    for m in $(cat /modules/order); do
        insmod "/modules/$m" 2>/dev/null
    done
fi
echo "fstests: kernel $(uname -r), $(nproc) cpus, fs=$FSTYP group=$GROUP"

i=0
while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if ! mount -t ext4 /dev/vda /results; then
    echo "fstests: the results disk did not mount"
    echo o > /proc/sysrq-trigger
    sleep 60
fi

cat > /fstests/local.config <<EOF
export FSTYP=$FSTYP
export TEST_DIR=/mnt/test
export SCRATCH_MNT=/mnt/scratch
export RESULT_BASE=/results/results
EOF
if [ "$FSTYP" = tmpfs ]; then
    cat >> /fstests/local.config <<EOF
export TEST_DEV=tmpfs_test
export SCRATCH_DEV=tmpfs_scratch
EOF
elif [ "$FSTYP" = cifs ]; then
    ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 \
        || echo "fstests: network setup failed"
    if [ -n "$CIFSKO" ]; then
        rmmod cifs 2>/dev/null
        insmod "$CIFSKO" && echo "fstests: cifs.ko from $CIFSKO, tainted=$(cat /proc/sys/kernel/tainted)"
    fi
    # An option this kernel does not know (cifs: Unknown parameter 'X') is
    # dropped, said so, and the mount retried, by the reference guest's
    # own function (qemu/linuxref/cifs-mount.sh).
    # shellcheck disable=SC1091
    . /fstests-run/cifs-mount.sh
    ok=0
    cifs_mount "$TEST_UNC" /mnt/test "$CIFS_CREDS" "$CIFS_OPTS" fstests-dropped && ok=1
    o=$cifs_opts
    [ $ok = 1 ] || echo "fstests: the cifs test share did not mount"
    umount /mnt/test 2>/dev/null
    echo "fstests-cifs options=$o"
    cat >> /fstests/local.config <<EOF
export TEST_DEV=$TEST_UNC
export SCRATCH_DEV=$SCRATCH_UNC
export CIFS_MOUNT_OPTIONS="-o $CIFS_CREDS,$o"
export TEST_FS_MOUNT_OPTS="-o $CIFS_CREDS,$o"
EOF
fi

cd /fstests || exit 1
args=()
[ -s /fstests-run/exclude ] && args+=(-E /fstests-run/exclude)
if [ -s /fstests-run/tests ]; then
    mapfile -t tests < <(sed 's/#.*$//' /fstests-run/tests | tr -s ' \t' '\n\n' | grep -v '^$')
    args+=("${tests[@]}")
else
    args+=(-g "$GROUP")
fi
echo "fstests-begin fs=$FSTYP group=$GROUP"
start=$(date +%s)
# BUDGET (seconds): check is interrupted (SIGINT, as ^C) and writes its
# summary of what ran so far.
if [ -n "${BUDGET:-}" ]; then
    timeout -s INT -k 300 "$BUDGET" ./check "${args[@]}" 2>&1 | tee /results/check.out
else
    ./check "${args[@]}" 2>&1 | tee /results/check.out
fi
end=$(date +%s)
echo
echo "fstests-secs $((end - start))"
# Our own cases beside fstests (linux/fstests/extra.sh): user.* EAs and
# name length limits on the TEST filesystem.
if [ -x /fstests-run/extra ]; then
    umount /mnt/test 2>/dev/null
    if [ "$FSTYP" = cifs ]; then
        mount -t cifs "$TEST_UNC" /mnt/test -o "$CIFS_CREDS,$o"
    else
        mount -t tmpfs -o size=1G tmpfs_test /mnt/test
    fi && /fstests-run/extra /mnt/test 2>&1
    umount /mnt/test 2>/dev/null
fi
echo "fstests-end fs=$FSTYP group=$GROUP"
dmesg > /results/dmesg.txt
sync
umount /results
sync
# A test of the quick group can leave /proc unmounted; without it the
# power-off below fails, init exits and the kernel panics after the run.
[ -e /proc/sysrq-trigger ] || mount -t proc proc /proc
echo o > /proc/sysrq-trigger
sleep 10

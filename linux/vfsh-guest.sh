#!/usr/bin/env bash
# vfsh-guest.sh: the Linux half of the vfsh scripts (fs/tools/tests/scripts),
# run by fs/tools/examples/vfsh-linux inside the reference guest under each kernel
# given, compared with the scripts' recorded Linux answers (NAME.out).
#
#   linux/vfsh-guest.sh RELEASE [KERNEL_IMAGE...]
#
# RELEASE (6.12 or 7.3) picks the reference guest (build/linuxref/RELEASE/
# initramfs.gz, e.g. from `make linuxref LINUX_RELEASE=RELEASE`); without
# images, its Debian kernel and our vanilla, negative and noalloc builds
# (build/kbuild/ for 6.12, build/kbuild-RELEASE/ otherwise). Builds the static
# example with cargo (target/static/).
# Appends an archive (the example, the scripts, an /init of its own) to the
# reference initramfs in build/kbuild/vfsh-RELEASE/, boots QEMU (TCG, 2
# vCPUs) once per kernel and prints the guest's `vfsh-linux ...` lines.
# Exits non-zero when any script differs under any kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
release=${1:?usage: linux/vfsh-guest.sh RELEASE [KERNEL_IMAGE...]}
shift
case $release in
    6.12) kbuild=build/kbuild ;;
    7.3) kbuild=build/kbuild-$release ;;
    *) echo "vfsh-guest: unknown release $release (6.12 or 7.3)" >&2; exit 2 ;;
esac
if (($# == 0)); then
    set -- "build/linuxref/$release/vmlinuz" "$kbuild/vanilla/bzImage" \
        "$kbuild/negative/bzImage" "$kbuild/noalloc/bzImage"
fi
RUSTFLAGS="-C target-feature=+crt-static" CARGO_TARGET_DIR=target/static \
    cargo build -q --release -p fstools --example vfsh-linux --target x86_64-unknown-linux-gnu
work=build/kbuild/vfsh-$release
rm -rf "$work/root"
mkdir -p "$work/root/scripts"
cp target/static/x86_64-unknown-linux-gnu/release/examples/vfsh-linux "$work/root/"
cp fs/tools/tests/scripts/*.vfsh fs/tools/tests/scripts/*.out "$work/root/scripts/"
cat > "$work/root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "vfsh-linux kernel=$(uname -r)"
/vfsh-linux /scripts
echo "vfsh-linux-exit $?"
poweroff -f
INIT
chmod 755 "$work/root/init"
cp "build/linuxref/$release/initramfs.gz" "$work/initramfs.gz"
(cd "$work/root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -6) >> "$work/initramfs.gz"
bad=0
for k in "$@"; do
    out=$(timeout 300 qemu-system-x86_64 -machine q35 -nodefaults -accel tcg,thread=multi -smp 2 -m 512M \
        -kernel "$k" -initrd "$work/initramfs.gz" -append "console=ttyS0 quiet loglevel=1 panic=-1 no_timer_check rdinit=/init" \
        -serial stdio -display none -no-reboot 2>&1 | tr -d '\r')
    echo "$out" | grep -E '^(vfsh-linux|  want|  got)'
    echo "$out" | grep -q '^vfsh-linux-exit 0$' || bad=1
done
exit $bad

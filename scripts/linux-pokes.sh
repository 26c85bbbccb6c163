#!/bin/bash
# linux-pokes.sh: boots a Linux reference kernel BOOTS times with
# qemu/linuxref/pokes.sh as its init (the kernel patches its own text while
# every vCPU runs it; --solo: with only CPU 0 online) and counts the boots that finish and the ones whose
# kernel oopses. The evidence behind docs/linux-guest-crash.md's verdict on
# the 2-vCPU crash. Needs `make linux-reference` (or linux-patched) first.
#
#   scripts/linux-pokes.sh [--kernel BZIMAGE] [--release 7.3] [--mode kprobe|ftrace|schedstats]
#                          [--n N] [--boots B] [--cpus C] [--accel multi|single] [--solo] [--append WORDS]
#
# Prints one line per run, and keeps each crashed boot's console in $OUT:
#   linuxpokes kernel=K mode=M n=N solo=S accel=A cpus=C boots=B finished=F crashed=X other=O
set -euo pipefail
root=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
release=7.3 kernel= mode=kprobe n=100 boots=10 cpus=2 accel=multi append= timeout=600 solo=0
while [ $# -gt 0 ]; do
    case "$1" in
        --kernel) kernel=$2; shift 2 ;;
        --release) release=$2; shift 2 ;;
        --mode) mode=$2; shift 2 ;;
        --n) n=$2; shift 2 ;;
        --boots) boots=$2; shift 2 ;;
        --cpus) cpus=$2; shift 2 ;;
        --accel) accel=$2; shift 2 ;;
        --append) append=$2; shift 2 ;;
        --solo) solo=1; shift ;;
        --timeout) timeout=$2; shift 2 ;;
        *) echo "linux-pokes: unknown argument $1" >&2; exit 2 ;;
    esac
done
dir=$root/build/linuxref/$release
kernel=${kernel:-$dir/vmlinuz}
[ -f "$dir/initramfs.gz" ] && [ -f "$kernel" ] || {
    echo "linux-pokes: no $dir/initramfs.gz or $kernel: run make linux-reference LINUX_RELEASE=$release" >&2
    exit 2
}
case "$accel" in multi|single) ;; *) echo "linux-pokes: --accel multi|single" >&2; exit 2 ;; esac
OUT=${OUT:-$root/build/linuxref/pokes}
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The reference initramfs with pokes.sh appended as /pokes (the kernel
# unpacks concatenated archives in order).
mkdir "$work/extra"
cp "$root/qemu/linuxref/pokes.sh" "$work/extra/pokes"
chmod 755 "$work/extra/pokes"
(cd "$work/extra" && echo pokes | cpio -o -H newc --quiet | gzip) > "$work/extra.gz"
cat "$dir/initramfs.gz" "$work/extra.gz" > "$work/initrd.gz"
name=$(basename "$(dirname "$kernel")")
[ "$kernel" = "$dir/vmlinuz" ] && name=debian-$release
finished=0 crashed=0 other=0
for b in $(seq 1 "$boots"); do
    con=$work/console
    timeout "$timeout" qemu-system-x86_64 -machine q35 -nodefaults -smp "$cpus" -m 512M \
        -accel "tcg,thread=$accel" -cpu qemu64 -display none -no-reboot -serial "file:$con" \
        -kernel "$kernel" -initrd "$work/initrd.gz" \
        -append "console=ttyS0 loglevel=4 panic=-1 no_timer_check rdinit=/pokes pk.mode=$mode pk.n=$n pk.solo=$solo $append" \
        > /dev/null 2>&1 || true
    if grep -q -E 'Oops:|BUG:|general protection fault|Kernel panic|kernel BUG at' "$con"; then
        crashed=$((crashed + 1))
        keep=$OUT/$name-$mode-$accel-$cpus-$b-$$.console
        cp "$con" "$keep"
        echo "linux-pokes: boot $b crashed: $(grep -m1 -E 'Oops:|BUG:|general protection fault|Kernel panic|kernel BUG at' "$con") ($keep)" >&2
    elif grep -q "pokes-done mode=$mode n=$n " "$con"; then
        finished=$((finished + 1))
    else
        other=$((other + 1))
        echo "linux-pokes: boot $b neither finished nor crashed: $(tail -n 2 "$con" | tr '\n' ' ')" >&2
    fi
done
echo "linuxpokes kernel=$name mode=$mode n=$n solo=$solo accel=$accel cpus=$cpus boots=$boots finished=$finished crashed=$crashed other=$other"

#!/usr/bin/env bash
# check-series.sh: the patch check `make test` runs: every series directory
# under linux/patches/6.12/ applies with `git am` to the pristine 6.12.117
# tree, and every C file it touches compiles with the committed
# configuration (x86_64 defconfig + linux/config/6.12-guest.config).
#
#   linux/check-series.sh PRISTINE_SRC BUILD_DIR
#
# Writes only BUILD_DIR/kcheck/ (a hard-linked source copy whose touched
# files are replaced by new files and put back afterwards, a prepared
# object tree cached behind the fragment's hash) and BUILD_DIR/ccache/.
# Prints `check-series: SERIES: N patches apply; compiled F.o ...` per
# series, then `check-series: S series ok`; exits non-zero on the first
# that does not apply or compile, with the compiler's reason. A few minutes
# the first time (the object tree is prepared), seconds after.
set -euo pipefail

pristine=$(realpath "$1")
build=$(realpath -m "$2")
here=$(cd "$(dirname "$0")" && pwd)
fragment=$here/config/6.12-guest.config
work=$build/kcheck
mkdir -p "$work" "$build/ccache"
exec 9>"$work/lock"
flock 9
export CCACHE_DIR=$build/ccache KBUILD_BUILD_USER=vfs-lab KBUILD_BUILD_HOST=localhost
mk() { make -s -C "$work/src" O="$work/obj" CC="ccache gcc" HOSTCC="ccache gcc" "$@"; }

# Put back what an interrupted run left patched.
restore() {
    if [[ -f $work/src.patched ]]; then
        while read -r f; do
            rm -f "$work/src/$f"
            if [[ -e $pristine/$f ]]; then cp "$pristine/$f" "$work/src/$f"; fi
        done < "$work/src.patched"
        rm -f "$work/src.patched"
    fi
}
if [[ ! -d $work/src ]]; then
    cp -al "$pristine" "$work/src.tmp"
    mv "$work/src.tmp" "$work/src"
fi
restore

# The prepared object tree, once per configuration.
want="$(sha256sum "$fragment" | cut -d' ' -f1)"
if [[ "$(cat "$work/obj/prepared" 2>/dev/null)" != "$want" ]]; then
    rm -rf "$work/obj"
    mkdir -p "$work/obj"
    mk x86_64_defconfig
    "$work/src/scripts/kconfig/merge_config.sh" -m -O "$work/obj" "$work/obj/.config" "$fragment" >/dev/null
    "$work/src/scripts/config" --file "$work/obj/.config" --set-str LOCALVERSION "-check" --disable LOCALVERSION_AUTO
    mk olddefconfig
    mk -j"$(nproc)" prepare
    echo "$want" > "$work/obj/prepared"
fi

n=0
for series in "$here"/patches/6.12/*/; do
    series=${series%/}
    name=$(basename "$series")
    "$here/apply-series.sh" "$pristine" "$work/am" "$series"
    count=$(ls "$series"/*.patch | wc -l)
    (cd "$work/am" && git diff --name-only "$(git rev-list --max-parents=0 HEAD)" HEAD) > "$work/src.patched"
    objs=()
    while read -r f; do
        rm -f "$work/src/$f"
        if [[ -e $work/am/$f ]]; then
            mkdir -p "$(dirname "$work/src/$f")"
            cp "$work/am/$f" "$work/src/$f"
            [[ $f == *.c ]] && objs+=("${f%.c}.o")
        fi
    done < "$work/src.patched"
    if ((${#objs[@]})); then
        # W=1 would flag what checkpatch does not; the default warnings are
        # the kernel's own bar. Any warning in a touched file fails here.
        log=$work/$name.log
        if ! mk -j"$(nproc)" KCFLAGS=-Werror "${objs[@]}" > "$log" 2>&1; then
            cat "$log" >&2
            restore
            echo "check-series: $name: does not compile" >&2
            exit 1
        fi
    fi
    restore
    echo "check-series: $name: $count patches apply; compiled ${objs[*]:-nothing (no C files)}"
    n=$((n + 1))
done
((n > 0)) || { echo "check-series: no series under $here/patches/6.12/" >&2; exit 1; }
echo "check-series: $n series ok"

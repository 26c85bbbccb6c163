#!/usr/bin/env bash
# kbuild.sh: builds one reference-guest kernel (6.12.117 or 7.3.4), vanilla
# or with patch series (linux/patches/RELEASE/*), out of tree and through
# ccache. The release is the one PRISTINE_SRC's Makefile names
# (VERSION.PATCHLEVEL); its configuration fragment is
# linux/config/RELEASE-guest.config.
#
#   linux/kbuild.sh PRISTINE_SRC BUILD_DIR VARIANT [SERIES_DIR...]
#
# PRISTINE_SRC (the unpacked linux-source-RELEASE) is never written. One working
# tree serves every variant, as a kernel developer switches branches: its
# source, BUILD_DIR/kbuild/src, is a hard-linked copy of the pristine tree in
# which every file the series touches is replaced (unlinked, then written)
# by its `git am` result from a scratch repository of just those files (and
# linked back to pristine when the next variant no longer touches it); its
# objects, BUILD_DIR/kbuild/obj, are rebuilt by make only where a changed
# file reaches, and through ccache (CCACHE_DIR=BUILD_DIR/ccache), so
# switching back to a variant built before costs cache hits. The
# configuration is x86_64 defconfig + linux/config/RELEASE-guest.config +
# LOCALVERSION=-VARIANT, the same for every variant. The result,
# BUILD_DIR/kbuild/VARIANT/bzImage for 6.12 and
# BUILD_DIR/kbuild-RELEASE/VARIANT/bzImage for any later release (+ config,
# System.map; each release has its own tree and objects), is rebuilt only
# when the fragment, this script or the series changed. One build at a time
# (a lock file): the tree is shared.
set -euo pipefail

pristine=$(realpath "$1")
build=$(realpath -m "$2")
variant=$3
shift 3
series=("$@")
here=$(cd "$(dirname "$0")" && pwd)
jobs=${KBUILD_JOBS:-$(nproc)}

[[ -f $pristine/Makefile ]] || { echo "kbuild: no kernel source at $pristine" >&2; exit 2; }
release=$(awk '/^VERSION =/ {v=$3} /^PATCHLEVEL =/ {p=$3} END {print v "." p}' "$pristine/Makefile")
fragment=$here/config/$release-guest.config
[[ -f $fragment ]] || { echo "kbuild: no configuration fragment for $release ($fragment)" >&2; exit 2; }
if [[ $release == 6.12 ]]; then work=$build/kbuild; else work=$build/kbuild-$release; fi
out=$work/$variant
mkdir -p "$out" "$build/ccache"
exec 9>"$work/lock"
flock 9

# The stamp: everything that decides the result.
stamp_text() {
    echo "kbuild 1 $variant"
    sha256sum "$fragment" "$0" | cut -d' ' -f1
    # The diffs only: a reworded commit message or cover letter builds
    # the same kernel.
    for s in "${series[@]}"; do sed -n '/^diff --git /,/^-- $/p' "$s"/*.patch | sha256sum | cut -d' ' -f1; done
}
if [[ -f $out/bzImage && -f $out/stamp ]] && diff -q <(stamp_text) "$out/stamp" >/dev/null; then
    echo "kbuild: $variant up to date ($out/bzImage)"
    exit 0
fi

start=$(date +%s)
# 1. The source: hard links to the pristine tree, patched files replaced.
if [[ ! -d $work/src ]]; then
    cp -al "$pristine" "$work/src.tmp"
    mv "$work/src.tmp" "$work/src"
fi
if [[ -f $work/src.patched ]]; then
    # Undo the last series: pristine copies (new files, so their mtime is
    # newer than the objects built from the patched ones, and make rebuilds).
    while read -r f; do
        rm -f "$work/src/$f"
        if [[ -e $pristine/$f ]]; then cp "$pristine/$f" "$work/src/$f"; fi
    done < "$work/src.patched"
    rm -f "$work/src.patched"
fi
if ((${#series[@]})); then
    "$here/apply-series.sh" "$pristine" "$work/am" "${series[@]}"
    (cd "$work/am" && git diff --name-only "$(git rev-list --max-parents=0 HEAD)" HEAD) > "$work/src.patched.tmp"
    while read -r f; do
        rm -f "$work/src/$f"
        if [[ -e $work/am/$f ]]; then
            mkdir -p "$(dirname "$work/src/$f")"
            cp "$work/am/$f" "$work/src/$f"
        fi
    done < "$work/src.patched.tmp"
    mv "$work/src.patched.tmp" "$work/src.patched"
fi

# 2. The configuration.
export CCACHE_DIR=$build/ccache CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-6G}
export KBUILD_BUILD_USER=vfs-lab KBUILD_BUILD_HOST=localhost
mk() { make -s -C "$work/src" O="$work/obj" CC="ccache gcc" HOSTCC="ccache gcc" "$@"; }
mkdir -p "$work/obj"
mk x86_64_defconfig
"$work/src/scripts/kconfig/merge_config.sh" -m -O "$work/obj" "$work/obj/.config" "$fragment" >/dev/null
"$work/src/scripts/config" --file "$work/obj/.config" --set-str LOCALVERSION "-$variant" --disable LOCALVERSION_AUTO
mk olddefconfig
# Every line of the fragment must have survived olddefconfig.
bad=0
while read -r line; do
    case $line in
        CONFIG_*=*) grep -qxF "$line" "$work/obj/.config" || { echo "kbuild: $line did not stick" >&2; bad=1; } ;;
        "# CONFIG_"*" is not set")
            opt=${line#\# }; opt=${opt%% *}
            grep -q "^$opt=" "$work/obj/.config" && { echo "kbuild: $opt is still set" >&2; bad=1; } ;;
    esac
done < "$fragment"
((bad == 0)) || exit 1
config_s=$(($(date +%s) - start))

# 3. The kernel.
mk -j"$jobs" bzImage
cp "$work/obj/arch/x86/boot/bzImage" "$out/bzImage.tmp"
cp "$work/obj/System.map" "$out/System.map"
cp "$work/obj/.config" "$out/config"
mv "$out/bzImage.tmp" "$out/bzImage"
stamp_text > "$out/stamp"
echo "kbuild: $variant built in $(($(date +%s) - start)) s (config $config_s s): $out/bzImage ($(cat "$work/obj/include/config/kernel.release"))"

#!/usr/bin/env bash
# check-series.sh: the patch check `make test` runs, once per release: every
# series directory under linux/patches/RELEASE/ (RELEASE is the one
# PRISTINE_SRC's Makefile names: 6.12 or 7.3)
#  - is in a form to post (linux/check-posting.py): trailers that `git
#    interpret-trailers` parses, no Signed-off-by or placeholder identity,
#    Cc as scripts/get_maintainer.pl names, checkpatch --strict clean or each
#    CHECK answered in the message;
#  - defines no flag bit (SB_I_*, DCACHE_*, LOOKUP_*, CIFS_FATTR_*) that the
#    tree already uses (linux/flag-check.py);
#  - applies with `git am` to the pristine tree, and, where it has a cover
#    letter, also as one mbox through `b4 am` (offline) and `git am`;
#  - compiles every C file it touches with the committed configuration
#    (x86_64 defconfig + linux/config/RELEASE-guest.config), warnings as
#    errors;
#  - and, built with W=1 and sparse (C=2), adds no warning to those files
#    that the pristine files do not have (line numbers aside).
#
#   linux/check-series.sh PRISTINE_SRC BUILD_DIR
#
# Writes only BUILD_DIR/kcheck/ (6.12) or BUILD_DIR/kcheck-RELEASE/ (a
# hard-linked source copy whose touched files are replaced by new files and
# put back afterwards, a prepared object tree cached behind the fragment's
# hash, the pristine files' W=1/sparse warnings) and BUILD_DIR/ccache/.
# Prints `check-series: SERIES: N patches apply; compiled F.o ...` per
# series, then `check-series: S series ok (RELEASE)`; exits non-zero on the
# first that collides, does not apply, does not compile or warns anew, with
# the reason. A few minutes the first time (the object tree is prepared),
# well under one after.
set -euo pipefail

pristine=$(realpath "$1")
build=$(realpath -m "$2")
here=$(cd "$(dirname "$0")" && pwd)
[[ -f $pristine/Makefile ]] || { echo "check-series: no kernel source at $pristine" >&2; exit 2; }
release=$(awk '/^VERSION =/ {v=$3} /^PATCHLEVEL =/ {p=$3} END {print v "." p}' "$pristine/Makefile")
fragment=$here/config/$release-guest.config
[[ -f $fragment ]] || { echo "check-series: no configuration fragment for $release ($fragment)" >&2; exit 2; }
command -v sparse >/dev/null || { echo "check-series: sparse is missing (apt-get install sparse; make setup)" >&2; exit 2; }
# b4 from PATH, else from make setup's environment under BUILD_DIR.
b4=$(command -v b4 || echo "$build/impacket-venv/bin/b4")
[[ -x $b4 ]] || { echo "check-series: b4 is missing (make setup installs it into $build/impacket-venv; or pip install b4)" >&2; exit 2; }
if [[ $release == 6.12 ]]; then work=$build/kcheck; else work=$build/kcheck-$release; fi
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

# Sparse as this tree wants it: 7.3's scripts/checker-valid.sh asks for
# __typeof_unqual__, which Debian's sparse 0.6.4 (12 and 13) lacks; the
# kernel then skips C= with a warning, so say so rather than claim a check.
checkflags=(C=2)
checker="W=1 C=2"
if [[ -f $pristine/scripts/checker-valid.sh ]] &&
    [[ $(sh "$pristine/scripts/checker-valid.sh" sparse --arch=x86 -mlittle-endian -m64 2>/dev/null) != 1 ]]; then
    checkflags=()
    checker="W=1 (sparse $(sparse --version 2>&1 | head -1) is too old for $release: no C=)"
fi

# The warnings of a W=1 (and sparse) build of OBJS, one per line, without
# line and column numbers (so that a patch moving code does not count),
# sorted.
warnings() {
    local log=$1
    shift
    mk -j"$(nproc)" W=1 "${checkflags[@]}" "$@" > "$log" 2>&1 || { cat "$log" >&2; return 1; }
    grep -E ': (warning|error): ' "$log" | sed -E 's/^([^:]+):[0-9]+(:[0-9]+)?:/\1:/' | sort || true
}

n=0
for series in "$here"/patches/$release/*/; do
    series=${series%/}
    name=$(basename "$series")
    python3 "$here/flag-check.py" "$pristine" "$series"/*.patch > "$work/$name.flags" ||
        { cat "$work/$name.flags" >&2; echo "check-series: $name: a new flag takes a bit $release already uses" >&2; exit 1; }
    # The posting's form, as a maintainer's tools read it.
    python3 "$here/check-posting.py" "$pristine" "$series" ||
        { echo "check-series: $name: not in a form to post (above)" >&2; exit 1; }
    # As a maintainer takes it: one mbox, through `b4 am` (offline), then
    # `git am` of what b4 wrote.
    via=""
    if [[ -f $series/0000-cover-letter.patch ]]; then
        cat "$series"/*.patch > "$work/$name.mbox"
        msgid=$(grep -m1 -i '^message-id:' "$series/0000-cover-letter.patch" | sed -E 's/.*<(.*)>.*/\1/')
        rm -rf "$work/b4-$name" "$work/b4-$name.series"
        if ! "$b4" --offline-mode --no-stdin -q am -m "$work/$name.mbox" -o "$work/b4-$name" "$msgid" > "$work/$name.b4.log" 2>&1; then
            cat "$work/$name.b4.log" >&2
            echo "check-series: $name: b4 am does not take the mbox" >&2
            exit 1
        fi
        mkdir -p "$work/b4-$name.series"
        cp "$work/b4-$name"/*.mbx "$work/b4-$name.series/0001-b4.patch"
        "$here/apply-series.sh" "$pristine" "$work/am" "$work/b4-$name.series"
        via=" (b4 am)"
    fi
    "$here/apply-series.sh" "$pristine" "$work/am" "$series"
    count=$(ls "$series"/*.patch | grep -vc '/0000-cover-letter.patch$')
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
    wnew=0
    if ((${#objs[@]})); then
        # The default warnings are the kernel's own bar: any warning in a
        # touched file fails here.
        log=$work/$name.log
        if ! mk -j"$(nproc)" KCFLAGS=-Werror "${objs[@]}" > "$log" 2>&1; then
            cat "$log" >&2
            restore
            echo "check-series: $name: does not compile" >&2
            exit 1
        fi
        # W=1 and sparse: the patched files against the pristine ones.
        warnings "$work/$name.w1.log" "${objs[@]}" > "$work/$name.w1" || { restore; exit 1; }
        restore
        base=$work/pristine-w1/$({ echo "$checker"; printf '%s\n' "${objs[@]}" | sort; } | sha256sum | cut -c1-16)
        if [[ ! -f $base ]]; then
            mkdir -p "$work/pristine-w1"
            warnings "$work/$name.w1-pristine.log" "${objs[@]}" > "$base.tmp" || exit 1
            mv "$base.tmp" "$base"
        fi
        comm -13 "$base" "$work/$name.w1" > "$work/$name.w1-new"
        if [[ -s $work/$name.w1-new ]]; then
            cat "$work/$name.w1-new" >&2
            echo "check-series: $name: new warnings with $checker (above)" >&2
            exit 1
        fi
        wnew=$(wc -l < "$work/$name.w1")
    fi
    restore
    echo "check-series: $name: $count patches apply$via; compiled ${objs[*]:-nothing (no C files)}; $checker: no new warnings ($wnew as before)"
    n=$((n + 1))
done
((n > 0)) || { echo "check-series: no series under $here/patches/$release/" >&2; exit 1; }
echo "check-series: $n series ok ($release)"

#!/usr/bin/env bash
# fstests.sh: fstests (xfstests), the filesystem community's regression
# suite, in the reference guest under QEMU (TCG): tmpfs and cifs, under
# Debian's kernels and our builds. Prints one line per kernel x filesystem x
# group:
#
#   fstests kernel=K fs=F group=G ran=N passed=P failed=F notrun=X secs=S failures=t1,t2,...
#
# (`failures=-` when none; `ran` counts the tests that ran, not those that
# were not run; `secs` is check's wall time inside the guest), then, when
# --budget stopped check before the end of a list, `fstests-left kernel=K
# fs=F group=G n=N tests=...` naming the tests it did not reach; keeps
# fstests' own results directory in results/fstests/K/F/G/ (check.log,
# result.xml, each test's .out.bad/.full/.dmesg, the guest's dmesg).
#
#   linux/fstests.sh [--kernels K,...] [--fs tmpfs,cifs,cifs-eacache] [--server samba|ksmbd]
#                    [--group G | --list FILE | --tests T,...] [--exclude FILE]
#                    [--cpus N] [--mem SIZE] [--budget SECS] [--build-only]
#   linux/fstests.sh --report results/fstests/K/F/G [--list FILE | --group G] [--exclude FILE]
#   linux/fstests.sh --compare results/fstests/BASE/F/G results/fstests/K/F/G ...
#
# --compare checks the claim a patch's fstests runs must carry: each run's
# failures are a subset of the base run's (the same release's vanilla; for
# cifs-eacache, the packaged cifs under the same kernel), on
# the tests both finished. One line per run, exit status 1 when a run fails a
# test the base passed or did not run:
#
#   fstests-compare kernel=K fs=F group=G base=BK/BF/BG common=N same=S new_failures=t1,...|- base_only_failures=t1,...|-
#
# Kernels: `debian` (Debian's 6.12 of the reference guest), `vanilla`,
# `negative`, `noalloc`, ... (our 6.12 builds, build/kbuild/V/bzImage),
# `7.3-V` (our 7.3 builds, build/kbuild-7.3/V/bzImage), `debian-7.3`
# (build/linuxref/7.3/vmlinuz), or `LABEL=IMAGE[:MODULES]` for any bzImage
# (MODULES: a gzip'd newc archive holding /modules/*.ko and /modules/order,
# as the reference guest's initramfs does). Filesystems:
# `tmpfs`; `cifs` (the packaged cifs.ko) and `cifs-eacache` (under Debian's
# 6.12 or 7.3: cifs.ko with linux/patches/REL/cifs-eacache, built once into
# build/cifs-mod/ by `linuxref --linux-release REL --cifs-module
# cifs-eacache`) against the
# project's Samba fixture (TEST and SCRATCH shares) through the latency relay
# (QEMU user networking guestfwd), or with `--server ksmbd` against the ksmbd
# guest fixture (target/release/ksmbd-fixture: Debian's 7.3.4 ksmbd in a
# second QEMU guest, its one tmpfs share holding TEST and SCRATCH as the
# directories `test` and `scratch`); a ksmbd run's filesystem is named
# F-ksmbd (`fs=cifs-ksmbd`, results/fstests/K/cifs-ksmbd/G). A list file holds test names, `#` comments.
# `--budget SECS` stops check (SIGINT: it writes its summary) after SECS.
# A guest whose kernel crashes (an oops, a BUG, a panic before fstests-end)
# is reported with the crash's lines and booted once more: that run's line
# ends in `retried=1`. One that hangs (a timeout, even one the kernel
# reports as a lockup or stall) is reported, not booted again. Every other
# kernel and filesystem still runs; the exit status is 1 at the end if a run
# did not finish.
#
# fstests itself comes from FSTESTS_SRC (a checkout or a `git archive`
# tarball) or, when unset, the snapshot ../shared/vendor/fstests-63a29724a85f.tar.gz;
# without either it says what to fetch and exits with status 3. The guest's userland is Debian 12
# (mmdebstrap, the machine's apt sources) with fstests built on this Debian 12
# host against the same libraries; both cached in build/fstests/ behind a
# stamp. Writes only build/fstests/ and results/fstests/; needs the
# reference guest (build/linuxref/6.12, `make linuxref`) for Debian's kernel
# and its modules, and target/release/{samba-fixture,latency-relay} for cifs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

FSTESTS_COMMIT=63a29724a85f1999e49bf0a9bf0d22643b6116e5
FSTESTS_GIT=https://git.kernel.org/pub/scm/fs/xfs/xfstests-dev.git
SNAPSHOT=$ROOT/../shared/vendor/fstests-63a29724a85f.tar.gz
STAMP_VERSION="fstests-userland 1"
# Debian 12 packages of the guest's userland (with their dependencies):
# what fstests runs (README, "run time") and what this harness uses.
PACKAGES=bash,xfsprogs,attr,acl,perl,gawk,sed,bc,psmisc,util-linux,e2fsprogs,cifs-utils,\
libaio1,liburing2,libgdbm6,libcap2,libcap2-bin,libuuid1,libacl1,libattr1,keyutils,procps,kmod,\
coreutils,findutils,grep,diffutils,file,xz-utils,hostname,iproute2,passwd,login,mount,bsdextrautils,uuid-runtime,sysvinit-utils
# Seed mount options (bench/lab/src/lsla.rs SEED_OPTS) less what fstests must
# control itself: ownership and modes (uid, gid, forceuid, forcegid,
# file_mode, dir_mode), since its tests chown and chmod and check the result.
CIFS_OPTS="vers=3.1.1,cache=strict,upcall_target=app,iocharset=utf8,soft,nounix,mapposix,\
reparse=nfs,nativesocket,symlink=native,rsize=4194304,wsize=4194304,acdirmax=300,acregmax=30"

KERNELS=debian FSS=tmpfs SERVER=samba GROUP=quick LIST= TESTS= EXCLUDE= CPUS=2 MEM=4G BUDGET=0 BUILD_ONLY=0 REPORT=
COMPARE=()
while [ $# -gt 0 ]; do
    case $1 in
        --kernels) KERNELS=$2; shift ;;
        --fs) FSS=$2; shift ;;
        --server) SERVER=$2; shift ;;
        --group) GROUP=$2; shift ;;
        --list) LIST=$2; shift ;;
        --tests) TESTS=$2; shift ;;
        --exclude) EXCLUDE=$2; shift ;;
        --cpus) CPUS=$2; shift ;;
        --mem) MEM=$2; shift ;;
        --budget) BUDGET=$2; shift ;;
        --build-only) BUILD_ONLY=1 ;;
        --report) REPORT=$2; shift ;;
        --compare) shift; COMPARE=("$@"); set -- ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "fstests.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    [ $# -gt 0 ] && shift
done

# test_verdicts FILE: "TEST pass|fail|notrun" for each test a check.out or
# console finished, sorted; the test the budget interrupted has no verdict
# and is left out. The one reading of fstests' per-test lines: --compare
# and the count of a run without check's summary both use it.
test_verdicts() {
    awk '
        $1 ~ /^[a-z0-9]+\/[0-9]+$/ {
            t = $1
            if ($0 ~ /\[not run\]/) r[t] = "notrun"
            else if ($0 ~ /\[expunged\]/) next
            else if ($0 ~ /output mismatch|\[failed|_check_dmesg|_check_.*inconsistent/) r[t] = "fail"
            else if ($0 ~ /[0-9]+s *$/ && r[t] != "fail") r[t] = "pass"
        }
        END { for (t in r) print t, r[t] }' "$1" | LC_ALL=C sort
}

# test_results DIR: test_verdicts of a results directory (check.out, else
# the console).
test_results() {
    local f=$1/check.out
    [ -s "$f" ] || f=$1/console.txt
    [ -f "$f" ] || { echo "fstests.sh: no check.out or console.txt in $1" >&2; return 1; }
    test_verdicts "$f"
}

if [ ${#COMPARE[@]} -gt 0 ]; then
    [ ${#COMPARE[@]} -ge 2 ] || { echo "fstests.sh: --compare BASE RUN..." >&2; exit 2; }
    base=${COMPARE[0]%/} status=0
    # The base as K/F/G: the same kernel's other filesystem (cifs for
    # cifs-eacache) or the same release's vanilla.
    bk=$(basename "$(dirname "$(dirname "$base")")")/$(basename "$(dirname "$base")")/$(basename "$base")
    bres=$(test_results "$base") || exit 2
    for d in "${COMPARE[@]:1}"; do
        d=${d%/}
        g=$(basename "$d") f=$(basename "$(dirname "$d")") k=$(basename "$(dirname "$(dirname "$d")")")
        res=$(test_results "$d") || exit 2
        line=$(join <(echo "$bres") <(echo "$res") | awk '
            { n++; if ($2 == $3) same++
              if ($3 == "fail" && $2 != "fail") nf = nf (nf == "" ? "" : ",") $1
              if ($2 == "fail" && $3 != "fail") bf = bf (bf == "" ? "" : ",") $1 }
            END { printf "common=%d same=%d new_failures=%s base_only_failures=%s\n",
                  n, same, nf == "" ? "-" : nf, bf == "" ? "-" : bf }')
        echo "fstests-compare kernel=$k fs=$f group=$g base=$bk $line"
        case $line in *"new_failures=-"*) ;; *) status=1 ;; esac
    done
    exit $status
fi

W=$ROOT/build/fstests
mkdir -p "$W"
say() { echo "fstests.sh: $*" >&2; }
die() { say "$*"; exit 1; }

for t in mmdebstrap cpio gzip mkfs.ext4 debugfs qemu-system-x86_64 make gcc; do
    command -v $t >/dev/null || [ -x /usr/sbin/$t ] || [ -x /sbin/$t ] \
        || die "\`$t\` is missing (make setup installs what this needs)"
done
export PATH=$PATH:/usr/sbin:/sbin

# --- fstests' source and build -------------------------------------------
src_id() {
    local s=$1
    if [ -f "$s" ]; then
        sha256sum "$s" | cut -c1-16
    elif [ -d "$s/.git" ] || git -C "$s" rev-parse HEAD >/dev/null 2>&1; then
        echo "git-$(git -C "$s" rev-parse HEAD)$(git -C "$s" diff --quiet HEAD 2>/dev/null || echo -dirty)"
    else
        echo "dir-$(cd "$s" && find . -type f -newer "$s" 2>/dev/null | wc -l)-$(stat -c %Y "$s")"
    fi
}
SRC=${FSTESTS_SRC:-}
if [ -z "$SRC" ]; then
    if [ -f "$SNAPSHOT" ]; then
        SRC=$SNAPSHOT
    else
        cat >&2 <<EOF
fstests.sh: fstests is not here. Fetch it (any checkout works; this harness
was measured with commit $FSTESTS_COMMIT):
  git clone $FSTESTS_GIT fstests-src
  git -C fstests-src checkout $FSTESTS_COMMIT
then run with FSTESTS_SRC=\$PWD/fstests-src (a directory, or a tarball of it).
Build packages (Debian 12): autoconf automake libtool libtool-bin make gcc
xfsprogs xfslibs-dev uuid-dev libattr1-dev libacl1-dev libaio-dev liburing-dev
libgdbm-dev libcap-dev (make setup installs them).
EOF
        exit 3
    fi
fi
[ -e "$SRC" ] || die "FSTESTS_SRC=$SRC does not exist"
SRC=$(realpath "$SRC")

build_fstests() {
    local id
    id=$(src_id "$SRC")
    if [ -f "$W/src.stamp" ] && [ "$(cat "$W/src.stamp")" = "$id" ] && [ -x "$W/src/fstests/ltp/fsstress" ]; then
        return
    fi
    say "building fstests from $SRC"
    rm -rf "$W/src" && mkdir -p "$W/src"
    if [ -f "$SRC" ]; then
        tar -C "$W/src" -xzf "$SRC"
        # A `git archive --prefix=DIR/` tarball: its one top directory.
        local top
        top=$(find "$W/src" -mindepth 1 -maxdepth 1 -type d | head -1)
        [ "$top" = "$W/src/fstests" ] || mv "$top" "$W/src/fstests"
    else
        cp -a "$SRC" "$W/src/fstests"
        rm -rf "$W/src/fstests/.git"
    fi
    local t0=$SECONDS
    (cd "$W/src/fstests" && make -j"$(nproc)" >"$W/src/make.log" 2>&1) \
        || die "building fstests failed (build/fstests/src/make.log; needs the build packages of --help)"
    say "fstests built in $((SECONDS - t0)) s"
    echo "$id" >"$W/src.stamp"
}

# --- the userland (Debian 12 + fstests), one gzip'd newc archive ----------
build_userland() {
    local want
    want=$(printf '%s\n%s\n%s\n' "$STAMP_VERSION" "$(cat "$W/src.stamp")" "$PACKAGES" | sha256sum | cut -c1-16)
    if [ -f "$W/userland.stamp" ] && [ "$(cat "$W/userland.stamp")" = "$want" ] && [ -f "$W/userland.cpio.gz" ]; then
        return
    fi
    local t0=$SECONDS
    say "building the Debian 12 userland (mmdebstrap)"
    rm -rf "$W/rootfs"
    # Maintainer scripts run in a chroot (root mode); docs, manuals and
    # translations are left out. fstests' users: fsgqa, fsgqa2, 123456-fsgqa.
    mmdebstrap --quiet --variant=essential --include="$PACKAGES" \
        --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
        --customize-hook='chroot "$1" useradd -m fsgqa' \
        --customize-hook='chroot "$1" useradd -m fsgqa2' \
        --customize-hook='chroot "$1" useradd -m 123456-fsgqa' \
        bookworm "$W/rootfs" >"$W/mmdebstrap.log" 2>&1 \
        || die "mmdebstrap failed (build/fstests/mmdebstrap.log)"
    rm -rf "$W/rootfs/var/cache/apt" "$W/rootfs/var/lib/apt/lists"
    cp -a "$W/src/fstests" "$W/rootfs/fstests"
    find "$W/rootfs/fstests" -name '*.o' -delete
    (cd "$W/rootfs" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1) >"$W/userland.cpio.gz.tmp"
    mv "$W/userland.cpio.gz.tmp" "$W/userland.cpio.gz"
    say "userland: $(du -sm "$W/rootfs" | cut -f1) MiB unpacked, $(($(stat -c %s "$W/userland.cpio.gz") / 1048576)) MiB gzip'd, built in $((SECONDS - t0)) s"
    rm -rf "$W/rootfs"
    echo "$want" >"$W/userland.stamp"
}

build_fstests
build_userland
[ $BUILD_ONLY = 1 ] && { say "built: build/fstests/userland.cpio.gz"; exit 0; }

# --- kernels ---------------------------------------------------------------
# kernel_image SPEC -> "LABEL IMAGE MODULES_INITRAMFS" (modules: the
# reference guest's initramfs whose /modules go along, or -).
ref_version() { # the Debian package's upstream version, from the stamp
    sed -n 4p "$1/stamp" | sed 's/-.*//'
}
kernel_image() {
    local k=$1 ref612=$ROOT/build/linuxref/6.12 ref73=$ROOT/build/linuxref/7.3
    case $k in
        *=*:*) local rest=${k#*=}; echo "${k%%=*} ${rest%%:*} ${rest#*:}" ;;
        *=*) echo "${k%%=*} ${k#*=} -" ;;
        debian|debian-6.12)
            [ -f "$ref612/vmlinuz" ] || die "no build/linuxref/6.12/vmlinuz: run \`make linuxref\` (or target/release/linuxref --build-only)"
            echo "$(ref_version "$ref612") $ref612/vmlinuz $ref612/initramfs.gz" ;;
        debian-7.3)
            [ -f "$ref73/vmlinuz" ] || die "no build/linuxref/7.3/vmlinuz: run target/release/linuxref --linux 7.3 --build-only"
            echo "$(ref_version "$ref73") $ref73/vmlinuz $ref73/initramfs.gz" ;;
        7.3-*)
            local v=${k#7.3-}
            [ -f "$ROOT/build/kbuild-7.3/$v/bzImage" ] || die "no build/kbuild-7.3/$v/bzImage (our 7.3 build of $v)"
            echo "7.3.4-$v $ROOT/build/kbuild-7.3/$v/bzImage -" ;;
        *)
            [ -f "$ROOT/build/kbuild/$k/bzImage" ] || die "no build/kbuild/$k/bzImage: run \`make linux-patched-build\`"
            echo "6.12.117-$k $ROOT/build/kbuild/$k/bzImage -" ;;
    esac
}

# The modules of a reference initramfs (/modules/*), as their own archive.
modules_archive() {
    local ref=$1 out=$2
    if [ "$ref" = - ]; then : >"$out"; return; fi
    [ -f "$ref" ] || die "no modules archive $ref"
    ref=$(realpath "$ref")
    local d
    d=$(mktemp -d "$W/mods.XXXXXX")
    (cd "$d" && zcat "$ref" | cpio -idm --quiet 'modules' 'modules/*' 2>/dev/null || true)
    if [ -d "$d/modules" ]; then
        (cd "$d" && find modules | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1) >"$out"
    else
        : >"$out"
    fi
    rm -rf "$d"
}

# --- one boot: kernel x filesystem x group ---------------------------------
# no_timer_check: on a host this loaded, the kernel's IO-APIC timer check
# can starve under TCG and panic ("IO-APIC + timer doesn't work!").
SAMBA_FIFO= SAMBA_PID=
stop_samba() {
    if [ -n "$SAMBA_PID" ]; then
        exec 9>&-
        wait "$SAMBA_PID" 2>/dev/null || true
        SAMBA_PID=
    fi
}
trap stop_samba EXIT

start_samba() { # -> SAMBA_PORT, SAMBA_PW
    local bin=$ROOT/target/release/samba-fixture out=$1
    [ -x "$bin" ] && [ -x "$ROOT/target/release/latency-relay" ] \
        || die "cifs needs target/release/samba-fixture and latency-relay (cargo build --release -p qemu)"
    SAMBA_FIFO=$out.stdin
    rm -f "$SAMBA_FIFO" && mkfifo "$SAMBA_FIFO"
    # The shares live on disk under build/fstests/samba/, not in the
    # fixture's default /dev/shm: fstests writes gigabytes through cifs
    # (fsstress, large sparse files filled in by the server), and in host
    # memory two cifs runs side by side drove the host out of memory.
    mkdir -p "$W/samba"
    if [ "$SERVER" = ksmbd ]; then
        # The guest boots under TCG: up to its 150 s NEGOTIATE wait.
        bin=$ROOT/target/release/ksmbd-fixture
        [ -x "$bin" ] || die "--server ksmbd needs target/release/ksmbd-fixture (cargo build --release -p qemu)"
        "$bin" --dir test --dir scratch <"$SAMBA_FIFO" >"$out" 2>&1 &
    else
        SAMBA_FIXTURE_DIR=$W/samba "$bin" --entries 0 --share test --extra-share scratch <"$SAMBA_FIFO" >"$out" 2>&1 &
    fi
    SAMBA_PID=$!
    exec 9>"$SAMBA_FIFO"
    local i=0
    while ! grep -q '^port=' "$out" && [ $i -lt 3000 ]; do
        kill -0 "$SAMBA_PID" 2>/dev/null || die "the Samba fixture did not start: $(cat "$out")"
        sleep 0.1; i=$((i + 1))
    done
    SAMBA_PORT=$(sed -n 's/^port=\([0-9]*\) .*/\1/p' "$out")
    SAMBA_PW=$(sed -n 's/^port=.* password=\(.*\)$/\1/p' "$out")
    [ -n "$SAMBA_PORT" ] || die "the Samba fixture printed no port: $(cat "$out")"
}

# parse_summary CHECK_LOG CONSOLE -> "RAN PASSED FAILED NOTRUN FAILURES"
parse_summary() {
    local log=$1 console=$2
    if [ -f "$log" ] && grep -q '^Ran:' "$log"; then
        # Interrupted (--budget): the last test tried did not finish; it is
        # neither passed nor failed.
        awk '
            /^Interrupted!/ { cut = 1 }
            /^Ran:/ { for (i = 2; i <= NF; i++) tried[$i] = 1; last = $NF }
            END { if (cut) delete tried[last] }
            /^Not run:/ { for (i = 3; i <= NF; i++) notrun[$i] = 1 }
            /^Failures:/ { for (i = 2; i <= NF; i++) failed[$i] = 1 }
            END {
                t = 0; n = 0; f = 0; list = ""
                for (x in tried) t++
                for (x in notrun) if (x in tried) n++
                for (x in failed) { f++; list = list (list == "" ? "" : ",") x }
                if (list == "") list = "-"
                print t - n, t - n - f, f, n, list
            }' "$log" | while read -r r p f n list; do
                echo "$r $p $f $n $(echo "$list" | tr ',' '\n' | sort | paste -sd, -)"
            done
    else
        # No summary (the guest stopped early): count the per-test verdicts.
        test_verdicts "$console" | awk '
            { c[$2]++ }
            $2 == "fail" { list = list (list == "" ? "" : ",") $1 }
            END { print c["pass"] + c["fail"], c["pass"] + 0, c["fail"] + 0, c["notrun"] + 0, list == "" ? "-" : list }'
    fi
}

# report OUT LABEL FS GROUP FSTYP WALL: the fstests line (and fstests-left)
# of one results directory.
report() {
    local out=$1 label=$2 fs=$3 glabel=$4 fstyp=$5 wall=$6
    local secs
    secs=$(sed -n 's/.*fstests-secs \([0-9]*\)$/\1/p' "$out/console.txt" | tail -1)
    [ -n "$secs" ] || secs=$wall
    local console=$out/check.out
    [ -s "$console" ] || console=$out/console.txt
    local r p f n list
    read -r r p f n list < <(parse_summary "$out/results/check.log" "$console")
    echo "fstests kernel=$label fs=$fs group=$glabel ran=$r passed=$p failed=$f notrun=$n secs=$secs failures=$list${RETRIED:+ retried=1}"
    # The tests of the list or group check never reached or did not finish
    # (the budget ran out first); a group's members from fstests' group.list.
    local cut=
    grep -q '^Interrupted!' "$out/results/check.log" 2>/dev/null \
        && cut=$(sed -n 's/^Ran: .* \([^ ]*\)$/\1/p' "$out/results/check.log" | tail -1)
    local left
    left=$({
        if [ -n "$LIST$TESTS" ]; then
            [ -n "$LIST" ] && sed 's/#.*$//' "$LIST"
            echo "$TESTS" | tr ',' '\n'
        else
            for d in generic "$fstyp"; do
                awk -v d="$d" -v g="$GROUP" '!/^#/ { for (i = 2; i <= NF; i++) if ($i == g) print d "/" $1 }' \
                    "$W/src/fstests/tests/$d/group.list" 2>/dev/null
            done
        fi
    } | tr -s ' \t' '\n\n' | grep -v '^$' | while read -r t; do
        if [ "$t" = "$cut" ]; then echo "$t"; continue; fi
        grep -q "^$t " "$console" 2>/dev/null || grep -qx "$t\b.*" "${EXCLUDE:-/dev/null}" || echo "$t"
    done | paste -sd, -)
    [ -n "$left" ] && echo "fstests-left kernel=$label fs=$fs group=$glabel n=$(echo "$left" | tr ',' '\n' | wc -l) tests=$left"
    return 0
}

# crash_lines CONSOLE: the kernel's report in CONSOLE, read as every
# Linux-guest runner reads one (qemu/src/linuxref/console.rs, through
# `linuxref --crash-report`): status 0 when the kernel died (a crash: booted
# once more), 3 when it only said it was stuck (a lockup, a stall, a blocked
# task: a hang, not booted again), 1 when there is no report.
crash_lines() {
    local bin=$ROOT/target/release/linuxref
    if [ ! -x "$bin" ]; then
        say "no $bin to read the console's crash report with (cargo build --release -p qemu)"
        return 1
    fi
    "$bin" --crash-report "$1"
}

# run_one KERNEL FS: one guest. Status 0 when it finished, 3 when its kernel
# crashed (the crash's lines printed; the first time without the run's line,
# which the retry prints), 1 when it did not finish otherwise.
run_one() {
    local spec=$1 fs=$2 label image modref
    read -r label image modref < <(kernel_image "$spec")
    local glabel=$GROUP
    [ -n "$LIST" ] && glabel=$(basename "$LIST" .list)
    [ -n "$TESTS" ] && glabel=tests
    local fs=$fs
    [ "$SERVER" = ksmbd ] && fs=$fs-ksmbd
    local out=$ROOT/results/fstests/$label/$fs/$glabel
    rm -rf "$out" && mkdir -p "$out"
    local run=$W/run.$$ && rm -rf "$run" && mkdir -p "$run/fstests-run"
    cp linux/fstests-init.sh "$run/init" && chmod 755 "$run/init"
    local fstyp=$fs cifsko=
    case ${fs%-ksmbd} in
        tmpfs) [ "$SERVER" = samba ] || die "--server $SERVER is for cifs" ;;
        cifs) fstyp=cifs ;;
        cifs-eacache)
            fstyp=cifs
            # The module is built against Debian's kernel of its release,
            # so it loads only under that kernel.
            local rel=
            for r in 6.12 7.3; do
                if [ -f "$ROOT/build/linuxref/$r/stamp" ] \
                    && [ "$label" = "$(ref_version "$ROOT/build/linuxref/$r")" ]; then
                    rel=$r
                fi
            done
            [ -n "$rel" ] \
                || die "cifs-eacache is a module for Debian's kernels (debian, debian-7.3), not $label"
            local ko
            ko=$("$ROOT/target/release/linuxref" --linux-release "$rel" --cifs-module cifs-eacache) \
                || die "cifs.ko with linux/patches/$rel/cifs-eacache could not be built"
            mkdir -p "$run/extra" && cp "$ko" "$run/extra/cifs.ko"
            cifsko=/extra/cifs.ko ;;
        *) die "unknown filesystem $fs (tmpfs, cifs, cifs-eacache)" ;;
    esac
    {
        echo "FSTYP=$fstyp"
        echo "GROUP=$glabel"
        echo "KERNEL=$label"
        echo "CIFSKO=$cifsko"
    } >"$run/fstests-run/env"
    if [ -n "$LIST" ]; then
        cp "$LIST" "$run/fstests-run/tests"
    elif [ -n "$TESTS" ]; then
        echo "$TESTS" | tr ',' '\n' >"$run/fstests-run/tests"
    fi
    [ -n "$EXCLUDE" ] && cp "$EXCLUDE" "$run/fstests-run/exclude"
    cp linux/fstests/extra.sh "$run/fstests-run/extra" && chmod 755 "$run/fstests-run/extra"
    cp qemu/linuxref/cifs-mount.sh "$run/fstests-run/cifs-mount.sh"
    local netdev=()
    if [ "$fstyp" = cifs ]; then
        start_samba "$out/$SERVER-fixture.txt"
        local unc=//10.0.2.100 user=root
        if [ "$SERVER" = ksmbd ]; then
            unc=//10.0.2.100/$(sed -n 's/^port=.* share=\([^ ]*\) .*/\1/p' "$out/$SERVER-fixture.txt")
            user=$(sed -n 's/^port=.* user=\([^ ]*\) .*/\1/p' "$out/$SERVER-fixture.txt")
        fi
        {
            echo "TEST_UNC=$unc/test"
            echo "SCRATCH_UNC=$unc/scratch"
            echo "CIFS_CREDS=username=$user,password=$SAMBA_PW"
            echo "CIFS_OPTS=$CIFS_OPTS"
        } >>"$run/fstests-run/env"
        local relay="$ROOT/target/release/latency-relay --target 127.0.0.1:$SAMBA_PORT"
        netdev=(-netdev "user,id=n0,restrict=on,guestfwd=tcp:10.0.2.100:445-cmd:$relay" -device virtio-net-pci,netdev=n0)
    fi
    if [ "$BUDGET" != 0 ]; then echo "BUDGET=$BUDGET" >>"$run/fstests-run/env"; fi
    modules_archive "$modref" "$run/modules.cpio.gz"
    (cd "$run" && find init fstests-run $([ -d extra ] && echo extra) | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1) >"$run/run.cpio.gz"
    cat "$W/userland.cpio.gz" "$run/modules.cpio.gz" "$run/run.cpio.gz" >"$run/initrd"
    truncate -s 2G "$run/results.img"
    mkfs.ext4 -q -F "$run/results.img"
    local limit=$((BUDGET > 0 ? BUDGET + 900 : 6 * 3600)) t0=$SECONDS
    timeout "$limit" qemu-system-x86_64 -machine q35 -nodefaults -accel tcg,thread=multi \
        -smp "$CPUS" -m "$MEM" -kernel "$image" -initrd "$run/initrd" \
        -append "console=ttyS0 panic=-1 rdinit=/init quiet loglevel=4 no_timer_check" \
        -drive "file=$run/results.img,format=raw,if=virtio" "${netdev[@]}" \
        -serial "file:$out/console.txt" -display none -no-reboot </dev/null >"$out/qemu.txt" 2>&1 || true
    local wall=$((SECONDS - t0))
    stop_samba
    tr -d '\r' <"$out/console.txt" >"$out/console.tmp" && mv "$out/console.tmp" "$out/console.txt"
    debugfs -R "rdump /results $out" "$run/results.img" >/dev/null 2>&1 || true
    for f in check.out dmesg.txt; do
        debugfs -R "dump /$f $out/$f" "$run/results.img" >/dev/null 2>&1 || true
    done
    rm -rf "$run"
    local finished=1 crashed=0 report_rc=1
    grep -q '^fstests-end ' "$out/console.txt" || finished=0
    if [ $finished = 0 ]; then
        report_rc=0
        crash_lines "$out/console.txt" >"$out/crash.txt" || report_rc=$?
        [ $report_rc = 0 ] && crashed=1
    fi
    if [ $crashed = 1 ] && [ -z "${RETRIED:-}" ]; then
        # The retry's directory replaces this one: keep the crashed console.
        mv "$out/console.txt" "$out/../$glabel.crashed-console.txt"
        say "kernel=$label fs=$fs: the kernel crashed (wall ${wall} s; results/fstests/$label/$fs/$glabel.crashed-console.txt):"
        sed 's/^/    /' "$out/crash.txt" >&2
        return 3
    fi
    report "$out" "$label" "$fs" "$glabel" "$fstyp" "$wall"
    grep -E '^(fstests-dropped|fstests-cifs|fstests-extra|fstests: )' "$out/console.txt" | sed 's/^/  /' >&2 || true
    if [ $finished = 0 ]; then
        say "kernel=$label fs=$fs: the guest did not finish (wall ${wall} s; results/fstests/$label/$fs/$glabel/console.txt)"
        if [ $report_rc = 0 ] || [ $report_rc = 3 ]; then
            [ $report_rc = 3 ] && say "kernel=$label fs=$fs: its kernel said it was stuck:"
            sed 's/^/    /' "$out/crash.txt" >&2
        fi
        return 1
    fi
    rm -f "$out/crash.txt"
}

if [ -n "$REPORT" ]; then
    # --report results/fstests/K/F/G: the lines of a finished run again
    # (with the --list/--group/--exclude it ran with, for fstests-left).
    d=$(realpath "$REPORT")
    g=$(basename "$d") f=$(basename "$(dirname "$d")") k=$(basename "$(dirname "$(dirname "$d")")")
    ft=$f
    case $f in cifs*) ft=cifs ;; esac
    report "$d" "$k" "$f" "$g" "$ft" 0
    exit 0
fi
IFS=, read -r -a kernels <<<"$KERNELS"
IFS=, read -r -a fss <<<"$FSS"
# Each run in a subshell of its own under `set -e`, so that one that fails
# ends only itself; a crashed kernel gets one more boot.
status=0
for k in "${kernels[@]}"; do
    for fs in "${fss[@]}"; do
        set +e
        (set -e; run_one "$k" "$fs")
        rc=$?
        if [ $rc = 3 ]; then
            say "kernel=$k fs=$fs: booting once more (retried=1)"
            (set -e; RETRIED=1 run_one "$k" "$fs")
            rc=$?
        fi
        set -e
        [ $rc = 0 ] || status=1
    done
done
exit $status

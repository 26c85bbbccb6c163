#!/usr/bin/env bash
# setup.sh: checks (and, as root on Debian/Ubuntu, installs) what building,
# running and testing this project needs, in two tiers:
#   run   what `make run` needs: QEMU, a C linker for the host binaries and
#         the Rust target x86_64-unknown-none for the kernel;
#   test  (the default; `make setup`, `make test`) the run tier and the
#         fixtures of the tests, the Linux builds and the tools around them.
# Touches only apt (as root), rustup and build/impacket-venv. Exits non-zero,
# printing the exact apt-get/rustup/pip line to run, when something is
# missing and it cannot install it.
#
# Usage: scripts/setup.sh [run|test]
set -euo pipefail

cd "$(dirname "$0")/.."

tier=${1:-test}
case $tier in
run) target=setup-run ;;
test) target=setup ;;
*)
    echo "usage: $0 [run|test]" >&2
    exit 2
    ;;
esac

# The run tier: qemu-system-x86 boots the kernel (qemu-run spawns
# qemu-system-x86_64); gcc and libc6-dev are the linker and C runtime that
# cargo links host binaries (qemu-run, the build scripts) with. The kernel
# itself links with rust-lld, which the toolchain brings.
RUN_PACKAGES=(qemu-system-x86 gcc libc6-dev)
# The test tier adds: Samba + smbclient + attr for the SMB fixture,
# busybox-static/e2fsprogs/cpio (and gcc/libc6-dev's static libc for
# statneg) for the Linux reference guest, python3-venv for the impacket
# fixture's virtual environment, chromium for the step-through page's
# browser test (fs/tools/tests/explore_page.rs) and `make explore`'s screenshot,
# linux-perf for `bench rcu-reader --perf` (bench/lab/tests/rcu_reader.rs),
# make flex bison bc libelf-dev libssl-dev ccache git for our Linux builds
# (linux/kbuild.sh, linux/check-series.sh: `make linux-patched`, the patch
# check of `make test`), and sparse for that check's C= build; mmdebstrap
# and fstests' build packages (autoconf ... libcap-dev) for the fstests
# guest (linux/fstests.sh: `make linux-fstests`, the fstests smoke of `make
# test`).
TEST_PACKAGES=(samba smbclient attr busybox-static e2fsprogs cpio python3-venv chromium linux-perf
               make flex bison bc libelf-dev libssl-dev ccache git sparse
               mmdebstrap autoconf automake libtool libtool-bin xfsprogs xfslibs-dev uuid-dev libattr1-dev libacl1-dev
               libaio-dev liburing-dev libgdbm-dev libcap-dev)
RUST_TARGET=x86_64-unknown-none
# `make lint` (cargo fmt, cargo clippy); rust-toolchain.toml names them too.
TEST_COMPONENTS=(rustfmt clippy)

PACKAGES=("${RUN_PACKAGES[@]}")
[[ $tier == test ]] && PACKAGES+=("${TEST_PACKAGES[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "setup: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    else
        echo "setup ($tier): missing Debian packages: ${missing[*]}" >&2
        echo "setup: install them as root:  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
        echo "setup: (or run \`make $target\` as root)" >&2
        exit 1
    fi
fi

if ! command -v cargo >/dev/null || ! command -v rustup >/dev/null; then
    echo "setup: Rust (rustup + cargo) is missing: install rustup from your distribution or rustup.rs," >&2
    echo "setup: then run \`make setup\` again (rust-toolchain.toml pins the toolchain)." >&2
    exit 1
fi

# rustup reads rust-toolchain.toml here, so this checks the pinned toolchain.
if ! rustup target list --installed | grep -qx "$RUST_TARGET"; then
    echo "setup: adding Rust target $RUST_TARGET"
    if ! rustup target add "$RUST_TARGET"; then
        echo "setup: could not add the Rust target: run  rustup target add $RUST_TARGET" >&2
        exit 1
    fi
fi

if [[ $tier == run ]]; then
    echo "setup: ok for make run (${PACKAGES[*]}, rust target $RUST_TARGET; \`make setup\` adds what make test needs)"
    exit 0
fi

components=()
for c in "${TEST_COMPONENTS[@]}"; do
    rustup component list --installed | grep -q "^$c-" || components+=("$c")
done
if ((${#components[@]})); then
    echo "setup: adding Rust components ${components[*]}"
    if ! rustup component add "${components[@]}"; then
        echo "setup: could not add the Rust components: run  rustup component add ${components[*]}" >&2
        exit 1
    fi
fi

# impacket (PyPI) in a virtual environment under build/: a second SMB server
# (smbserver.py, SMB 2.0.2 only) for the cifs tests. Only this directory is
# touched; the system's Python stays as it is.
# b4 (PyPI) goes in the same environment: the patch check takes each
# series as a maintainer does, one mbox through `b4 am` (offline).
IMPACKET_VERSION=0.13.1
B4_VERSION=0.16.0
VENV=build/impacket-venv
if ! [[ -x $VENV/bin/smbserver.py && -x $VENV/bin/b4 ]] \
    || ! "$VENV/bin/python" -c "import sys; from importlib.metadata import version; sys.exit(version('impacket') != '$IMPACKET_VERSION' or version('b4') != '$B4_VERSION')" 2>/dev/null; then
    py=/usr/bin/python3
    [[ -x $py ]] || py=$(command -v python3 || true)
    if [[ -z $py ]]; then
        echo "setup: python3 is missing (needed for the impacket fixture): apt-get install -y python3 python3-venv" >&2
        exit 1
    fi
    echo "setup: installing impacket==$IMPACKET_VERSION b4==$B4_VERSION into $VENV (PyPI)"
    mkdir -p build
    if ! "$py" -m venv "$VENV" || ! "$VENV/bin/pip" install -q "impacket==$IMPACKET_VERSION" "b4==$B4_VERSION"; then
        echo "setup: could not make $VENV: run  $py -m venv $VENV && $VENV/bin/pip install impacket==$IMPACKET_VERSION b4==$B4_VERSION" >&2
        echo "setup: (python3-venv must be installed; PyPI must be reachable)" >&2
        exit 1
    fi
fi

echo "setup: ok (${PACKAGES[*]}, rust target $RUST_TARGET, components ${TEST_COMPONENTS[*]}, impacket $IMPACKET_VERSION and b4 $B4_VERSION in $VENV)"

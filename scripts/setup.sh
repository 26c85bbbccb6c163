#!/usr/bin/env bash
# setup.sh: checks (and, as root on Debian/Ubuntu, installs) what building and
# testing this project needs: the Debian packages below and the Rust target
# x86_64-unknown-none. Touches only apt (as root) and rustup. Exits non-zero,
# saying exactly what to install, when something is missing and it cannot
# install it.
set -euo pipefail

cd "$(dirname "$0")/.."

# Debian packages: QEMU for the guest, Samba + smbclient + attr for the SMB
# fixture, busybox-static/e2fsprogs/cpio/gcc/libc6-dev (static libc for
# statneg) for the Linux reference guest, python3-venv for the impacket
# fixture's virtual environment, chromium for the step-through page's
# browser test (fs/tests/explore_page.rs) and `make explore`'s screenshot,
# linux-perf for `bench rcu-reader --perf` (bench/lab/tests/rcu_reader.rs),
# make flex bison bc libelf-dev libssl-dev ccache git for our Linux 6.12
# builds (linux/kbuild.sh, linux/check-series.sh: `make linux-patched`, the
# patch check of `make test`); mmdebstrap and fstests' build packages
# (autoconf ... libcap-dev) for the fstests guest (linux/fstests.sh: `make
# linux-fstests`, the fstests smoke of `make test`).
PACKAGES=(qemu-system-x86 samba smbclient attr busybox-static e2fsprogs cpio gcc libc6-dev python3-venv chromium linux-perf
          make flex bison bc libelf-dev libssl-dev ccache git
          mmdebstrap autoconf automake libtool libtool-bin xfsprogs xfslibs-dev uuid-dev libattr1-dev libacl1-dev
          libaio-dev liburing-dev libgdbm-dev libcap-dev)
RUST_TARGET=x86_64-unknown-none

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
        echo "setup: missing Debian packages: ${missing[*]}" >&2
        echo "setup: install them as root:  apt-get update && apt-get install -y ${missing[*]}" >&2
        echo "setup: (or run \`make setup\` as root)" >&2
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

# impacket (PyPI) in a virtual environment under build/: a second SMB server
# (smbserver.py, SMB 2.0.2 only) for the cifs tests. Only this directory is
# touched; the system's Python stays as it is.
IMPACKET_VERSION=0.13.1
VENV=build/impacket-venv
if ! [[ -x $VENV/bin/smbserver.py ]] \
    || ! "$VENV/bin/python" -c "import sys; from importlib.metadata import version; sys.exit(version('impacket') != '$IMPACKET_VERSION')" 2>/dev/null; then
    py=/usr/bin/python3
    [[ -x $py ]] || py=$(command -v python3 || true)
    if [[ -z $py ]]; then
        echo "setup: python3 is missing (needed for the impacket fixture): apt-get install -y python3 python3-venv" >&2
        exit 1
    fi
    echo "setup: installing impacket==$IMPACKET_VERSION into $VENV (PyPI)"
    mkdir -p build
    if ! "$py" -m venv "$VENV" || ! "$VENV/bin/pip" install -q "impacket==$IMPACKET_VERSION"; then
        echo "setup: could not make $VENV: run  $py -m venv $VENV && $VENV/bin/pip install impacket==$IMPACKET_VERSION" >&2
        echo "setup: (python3-venv must be installed; PyPI must be reachable)" >&2
        exit 1
    fi
fi

echo "setup: ok (${PACKAGES[*]}, rust target $RUST_TARGET, impacket $IMPACKET_VERSION in $VENV)"

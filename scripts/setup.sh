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
# statneg) for the Linux reference guest, chromium for the step-through page's
# browser test (fs/tests/explore_page.rs) and `make explore`'s screenshot.
PACKAGES=(qemu-system-x86 samba smbclient attr busybox-static e2fsprogs cpio gcc libc6-dev chromium)
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

echo "setup: ok (${PACKAGES[*]}, rust target $RUST_TARGET)"

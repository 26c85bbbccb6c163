#!/bin/sh
# Installed in place of a kbuild program of Debian 13's linux-kbuild
# package (modpost, objtool) by the out-of-tree cifs.ko build
# (qemu/src/linuxref/cifsmod.rs): the program links glibc 2.38, which a
# Debian 12 host lacks, so it runs under trixie's own loader and libraries.
# The real program sits beside this script as NAME.bin; TRIXIE_LIBDIR, set
# in make's environment, is the unpacked trixie library directory.
exec "$TRIXIE_LIBDIR/ld-linux-x86-64.so.2" --library-path "$TRIXIE_LIBDIR" "$0.bin" "$@"

#!/bin/sh
# git-lab.sh: git under the lab's identity, for the scratch repositories a
# patch series is applied in with `git am` (linux/apply-series.sh, and the
# out-of-tree cifs.ko build of qemu/src/linuxref/cifsmod.rs). The identity
# is written here and nowhere else.
#
#   linux/git-lab.sh GIT-ARGS...
exec git -c user.name=vfs-lab -c user.email=vfs-lab@localhost "$@"

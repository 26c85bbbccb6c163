#!/bin/bash
# extra.sh DIR: cases of our own beside fstests, on a mounted filesystem:
# user.* extended attributes (what fstests' EA tests generic/020, 062, 097,
# 337, 377 check, for cifs, where those are not run) and name length limits
# (NAME_MAX: no generic test checks them outside fscrypt). Run by the fstests
# guest (linux/fstests-init.sh) on the TEST filesystem after check. One line
# per case:
#   fstests-extra case=NAME result=pass|fail [want=[...] got=[...]]
# and a last `fstests-extra cases=N failed=F`. Touches only DIR/extra.*.
set -u
d=$1/extra.$$
n=0 bad=0
check() { # NAME EXPECTED ACTUAL
    n=$((n + 1))
    if [ "$2" = "$3" ]; then
        echo "fstests-extra case=$1 result=pass"
    else
        bad=$((bad + 1))
        echo "fstests-extra case=$1 result=fail want=[$2] got=[$3]"
    fi
}
get() { getfattr --absolute-names --only-values -n "$2" "$1" 2>&1; }
names() { getfattr --absolute-names -d -m '^user\.' "$1" 2>/dev/null | sed -n 's/^\(user\.[^=]*\)=.*/\1/p' | sort | tr '\n' ' '; }
mkdir -p "$d" && touch "$d/f" && mkdir "$d/sub"
setfattr -n user.one -v first "$d/f"
check set-get first "$(get "$d/f" user.one)"
setfattr -n user.one -v second "$d/f"
check replace second "$(get "$d/f" user.one)"
setfattr -n user.two -v 2 "$d/f"
check list "user.one user.two " "$(names "$d/f")"
setfattr -x user.one "$d/f"
check remove "user.two " "$(names "$d/f")"
check get-removed "No such attribute" "$(get "$d/f" user.one | grep -o 'No such attribute')"
setfattr -n user.dir -v d "$d/sub"
check directory d "$(get "$d/sub" user.dir)"
v=$(head -c 4000 /dev/zero | tr '\0' x)
setfattr -n user.big -v "$v" "$d/f"
check value-4000 4000 "$(get "$d/f" user.big | tr -d '\n' | wc -c)"
mv "$d/f" "$d/g"
check after-rename "user.big user.two " "$(names "$d/g")"
# The 255-byte name on a file of its own: beside user.big a server on ext4
# runs out of the inode's one xattr block (ENOSPC), which is the server's
# filesystem, not the name.
ln=$(printf 'user.%0250d' 0)
touch "$d/h"
setfattr -n "$ln" -v long "$d/h" 2>/dev/null
check name-255 long "$(get "$d/h" "$ln")"
n255=$(printf 'n%0254d' 0)
touch "$d/$n255" 2>/dev/null
check create-name-255 yes "$([ -e "$d/$n255" ] && echo yes || echo no)"
mv "$d/$n255" "$d/${n255%?}x" 2>/dev/null
check rename-name-255 yes "$([ -e "$d/${n255%?}x" ] && [ ! -e "$d/$n255" ] && echo yes || echo no)"
check create-name-256 "File name too long" "$(touch "$d/${n255}x" 2>&1 | grep -o 'File name too long')"
check lookup-name-256 "File name too long" "$(stat "$d/${n255}x" 2>&1 | grep -o 'File name too long')"
rm -rf "$d"
echo "fstests-extra cases=$n failed=$bad"

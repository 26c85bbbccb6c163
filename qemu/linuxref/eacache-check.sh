# eacache-check.sh: sourced by the reference guest's /init after its cifs
# listings (qemu/tests/linuxref_eacache_check.rs puts it there), for
# `make eacache-check`'s Linux client lines. Uses init.sh's $UNC, $CIFS
# and /xattr; touches only /mnt/cifs and /tmp.
#
# /eack.conf holds words VARIANT:ROUNDS; for each, with VARIANT's mount
# options: getxattr
# (`xattr list`) of `user.srv` on b-ea and c-ea after a listing; then
# ROUNDS rounds of setxattr(f-set, user.x) through this mount, a listing,
# and user.x read back; then ROUNDS rounds of setxattr + read back beside a
# loop listing the share. Each set is undone with an empty value (SMB2
# removes an EA set to nothing). Prints
#   linuxref: eack variant=V hidden=H stale=S sets=N
# hidden: b-ea/c-ea answered as without user.srv (a list lacking it, or
# ENODATA; EOPNOTSUPP is the server's refusal, not a hidden EA); stale:
# reads after a successful set without the value just set.
#
# A word VARIANT:race runs the forced interleaving instead, against a relay
# started with `--hold 0xe:0x11 --hold-armed-by MARKS/race-arm`: on a fresh
# mount (nothing listed yet), `mark race-arm` arms the hold, `ls -la` runs
# in the background and its QUERY_DIRECTORY reply (the server's listing
# with f-set's EaSize 0) is held at the relay; setxattr(f-set, user.x=v)
# runs and its SET_INFO response releases the listing, which the client
# then applies; user.x is read back after the listing ends. Prints
#   linuxref: eack-race variant=V set=0|1 stale=0|1 ls=RC
# and snapshots the stats at marker race-V-end (the relay's `hold` field
# says whether the reply was held and what released it).
#
# A word VARIANT:twin needs the share to hold directory tw/t-dir (no EAs)
# and tw/t-twin, a server-side symlink to it (in a subdirectory: listing
# the share's root must not meet them): one directory reached by two names,
# which the client gives two inodes (cifs_find_inode() flags the second
# as a collision). Two listings, setxattr(t-dir, user.x=v), then user.x
# read through t-twin. Prints
#   linuxref: eack-twin variant=V set=0|1 stale=0|1 ino=I1,I2 serverino=on|off
# (stale: t-twin's answer lacks user.x=v; ino: the two inode numbers;
# serverino: whether the mount still uses server inode numbers after).
#
# A word VARIANT:rewind needs the share to hold directory d-rw with x (no
# EAs) and b-ea (user.srv set on the server's side: the listing shows
# that the server fills EaSize in), and /eack-rewind in the guest: on a
# fresh mount, d-rw opened and read once (FIND_FIRST: x with EaSize 0),
# setxattr(x, user.x=v), read to the end (a FIND_NEXT sent after the set,
# answered STATUS_NO_MORE_FILES), rewound to 0 and read again (the first
# reply's entries from the client's buffer, no round trip), getxattr(x,
# user.x). Prints
#   linuxref: eack-rewind variant=V set=0|1 seen=N,M got=G stale=0|1 serverino=on|off
# (eack-rewind.c says what each field is.)
#
# A word VARIANT:ctime needs the share to hold directory h with f (no
# EAs), g (a hard link to f) and b-ea (user.srv set on the server's
# side): on a fresh mount, f opened and held (inode A), a second
# superblock at /mnt/c2 sets f's creation time (user.cifs.creationtime),
# h listed on the first mount (g gets a second inode B, its createtime
# differing from A's, with EaSize 0), setxattr(f, user.x=v) through A,
# user.x read through g (B). Prints
#   linuxref: eack-ctime variant=V ct=0|1 set=0|1 stale=0|1 serverino=on|off
# (ct: the creation time was set). Both names report one st_ino: the
# inodes are told apart by what they answer, not by their numbers.
#
# A word VARIANT:deny needs the share to hold directory d-deny with one
# file x0 (no EAs), and the relay started with `--rewrite-status
# 0xc0000052:0xc0000022 --hold-armed-by MARKS/deny-arm`: once armed, each
# STATUS_NO_EAS_ON_FILE is answered as STATUS_ACCESS_DENIED, a server that
# refuses this user the EAs of x0 while listing it with EaSize 0. On a
# fresh mount, `mark deny-arm`, a listing of d-deny (nothing in it shows
# that the server fills EaSize in, so x0's EAs are asked), listxattr(x0)
# (the server refuses: first), a listing of the share's root (b-ea's
# EaSize shows that the server fills it in; no twins there, so serverino
# stays on), d-deny listed again (x0's live inode, EaSize 0),
# listxattr(x0) (live); then the root listed, the dentry and inode caches
# dropped (x0's inode evicted), d-deny listed again (a new inode for x0,
# EaSize 0), listxattr(x0) (after). (BusyBox ls asks no EAs.) Prints
#   linuxref: eack-deny variant=V first=A after=A live=A serverino=on|off
# A: denied (EACCES), none (an empty list), or other. Run it last: the
# rewrite stays armed for the rest of the boot.
# A word VARIANT:reconnect needs the share to hold directory d-rc with x
# (no EAs) and b-ea (user.srv set on the server's side), directory
# d-rc2 with only b-ea, and file a0 at the root, and the relay started
# with `--drop-armed-by MARKS/drop-arm`: on a fresh mount, d-rc listed
# (x with EaSize 0; b-ea's EaSize shows that the server fills it in),
# `mark drop-arm` arms the drop, a0 stat'ed until it succeeds (its lookup
# meets the dropped connection, the client reconnects), d-rc2 listed (b-ea
# shows again that the server fills EaSize in; x is not in it), then
# listxattr(x). Prints
#   linuxref: eack-reconnect variant=V qi_before=N qi_after=M answer=A reconnects=R stat_tries=T serverino=on|off
# qi: the client's QueryInfos count just before and after listxattr(x)
# (M > N: x's EaSize 0 from before the reconnect was not believed and the
# server was asked); A as eack-deny's; R: the client's session reconnects
# (/proc/fs/cifs/Stats) during the step. Each `mark drop-arm` arms one
# drop (the relay renames the marker's directory away when it fires).
eack_answer() {
    out=$(/xattr list "$1")
    case "$out" in
    *"error=Permission denied"*) echo denied ;;
    *" n=0") echo none ;;
    *) echo other ;;
    esac
}
# QueryInfos and QueryDirectories of /proc/fs/cifs/Stats, on one line.
eack_qi() {
    grep -E 'QueryInfos|QueryDirectories' /proc/fs/cifs/Stats | tr -s ' \n' ' '
}
eack_twin() {
    if ! mount -t cifs "$UNC" /mnt/cifs -o "$2"; then
        echo "linuxref: eack mount of $1 failed"
        return
    fi
    ls -la /mnt/cifs/tw > /dev/null
    ls -la /mnt/cifs/tw > /dev/null
    set=0 stale=0
    /xattr set /mnt/cifs/tw/t-dir user.x v > /dev/null && set=1
    eack_has /mnt/cifs/tw/t-twin user.x v || stale=1
    ino=$(stat -c %i /mnt/cifs/tw/t-dir),$(stat -c %i /mnt/cifs/tw/t-twin)
    # A second live inode of one directory makes cifs_iget() turn serverino
    # off for the superblock (cifs_autodisable_serverino()).
    si=$(eack_serverino)
    echo "linuxref: eack-twin variant=$1 set=$set stale=$stale ino=$ino serverino=$si"
    /xattr set /mnt/cifs/tw/t-dir user.x "" > /dev/null
    umount /mnt/cifs || echo "linuxref: umount failed"
}
# on|off: whether /mnt/cifs still uses server inode numbers (/proc/mounts
# names serverino only while it is on).
eack_serverino() {
    case $(grep /mnt/cifs /proc/mounts) in
    *,serverino*) echo on ;;
    *) echo off ;;
    esac
}
eack_deny() {
    if ! mount -t cifs "$UNC" /mnt/cifs -o "$2"; then
        echo "linuxref: eack mount of $1 failed"
        return
    fi
    mark deny-arm
    # d-deny holds only x0: its listing shows no EaSize but 0, so the tree
    # connection does not yet believe EaSize and x0's query is sent.
    ls -la /mnt/cifs/d-deny > /dev/null
    first=$(eack_answer /mnt/cifs/d-deny/x0)
    q1=$(eack_qi)
    # The share's root holds b-ea and no second name of any directory:
    # b-ea's EaSize shows that the server fills it in, and serverino stays
    # on. d-deny listed again shows x0's EaSize 0 to its live inode.
    ls -la /mnt/cifs > /dev/null
    ls -la /mnt/cifs/d-deny > /dev/null
    q2=$(eack_qi)
    live=$(eack_answer /mnt/cifs/d-deny/x0)
    q3=$(eack_qi)
    # Again with x0's inode evicted (as memory pressure may) before d-deny
    # is listed: the new inode learns EaSize 0 from the listing.
    ls -la /mnt/cifs > /dev/null
    echo 2 > /proc/sys/vm/drop_caches
    ls -la /mnt/cifs/d-deny > /dev/null
    q4=$(eack_qi)
    after=$(eack_answer /mnt/cifs/d-deny/x0)
    q5=$(eack_qi)
    si=$(eack_serverino)
    echo "linuxref: eack-deny variant=$1 first=$first after=$after live=$live serverino=$si"
    # The client's QueryInfos and QueryDirectories counts after each step.
    echo "linuxref: eack-deny-qi $q1 / $q2 / $q3 / $q4 / $q5"
    umount /mnt/cifs || echo "linuxref: umount failed"
}
# The client's QueryInfos count (the first tree connection listed).
eack_qin() {
    grep -m1 QueryInfos /proc/fs/cifs/Stats | awk '{ print $2 }'
}
# The client's session reconnects so far.
eack_reconnects() {
    grep -m1 'session.*share reconnects' /proc/fs/cifs/Stats | awk '{ print $1 }'
}
eack_reconnect() {
    if ! mount -t cifs "$UNC" /mnt/cifs -o "$2"; then
        echo "linuxref: eack mount of $1 failed"
        return
    fi
    r0=$(eack_reconnects)
    # x listed with EaSize 0, b-ea with EaSize != 0: the tree connection
    # believes EaSize, and x's inode learns "no EAs" from the listing.
    ls -la /mnt/cifs/d-rc > /dev/null
    mark drop-arm
    # a0 was never looked up: its lookup goes to the server, meets the
    # dropped connection, and is retried until the client has reconnected.
    tries=0
    while [ $tries -lt 30 ]; do
        tries=$((tries + 1))
        stat /mnt/cifs/a0 > /dev/null 2>&1 && break
        sleep 1
    done
    # After the reconnect the server shows again that it fills EaSize in
    # (b-ea); x is not listed again.
    ls -la /mnt/cifs/d-rc2 > /dev/null
    qb=$(eack_qin)
    answer=$(eack_answer /mnt/cifs/d-rc/x)
    qa=$(eack_qin)
    r1=$(eack_reconnects)
    si=$(eack_serverino)
    echo "linuxref: eack-reconnect variant=$1 qi_before=$qb qi_after=$qa answer=$answer reconnects=$((r1 - r0)) stat_tries=$tries serverino=$si"
    umount /mnt/cifs || echo "linuxref: umount failed"
}
eack_rewind() {
    if ! mount -t cifs "$UNC" /mnt/cifs -o "$2"; then
        echo "linuxref: eack mount of $1 failed"
        return
    fi
    out=$(/eack-rewind /mnt/cifs/d-rw x user.x v)
    si=$(eack_serverino)
    echo "linuxref: eack-rewind variant=$1 ${out#eack-rewind } serverino=$si"
    /xattr set /mnt/cifs/d-rw/x user.x "" > /dev/null
    umount /mnt/cifs || echo "linuxref: umount failed"
}
eack_ctime() {
    if ! mount -t cifs "$UNC" /mnt/cifs -o "$2"; then
        echo "linuxref: eack mount of $1 failed"
        return
    fi
    mkdir -p /mnt/c2
    # Another acregmax: a second superblock (cifs_match_super() compares it).
    if ! mount -t cifs "$UNC" /mnt/c2 -o "$2,acregmax=59"; then
        echo "linuxref: eack mount of $1 at /mnt/c2 failed"
        umount /mnt/cifs
        return
    fi
    # h/f's inode A (nothing of h listed yet), held open.
    exec 3< /mnt/cifs/h/f
    ct=0 set=0 stale=0
    /xattr set /mnt/c2/h/f user.cifs.creationtime AAAAAAAA > /dev/null && ct=1
    # g, a hard link to f, now shows another createtime: cifs_find_inode()
    # does not match A, and g gets inode B (a file: serverino stays on),
    # with EaSize 0 from the listing (b-ea's shows that Samba fills it in).
    ls -la /mnt/cifs/h > /dev/null
    /xattr set /mnt/cifs/h/f user.x v > /dev/null && set=1
    eack_has /mnt/cifs/h/g user.x v || stale=1
    si=$(eack_serverino)
    echo "linuxref: eack-ctime variant=$1 ct=$ct set=$set stale=$stale serverino=$si"
    exec 3<&-
    /xattr set /mnt/cifs/h/f user.x "" > /dev/null
    umount /mnt/c2 || echo "linuxref: umount failed"
    umount /mnt/cifs || echo "linuxref: umount failed"
}
eack_race() {
    if ! mount -t cifs "$UNC" /mnt/cifs -o "$2"; then
        echo "linuxref: eack mount of $1 failed"
        return
    fi
    mark race-arm
    ls -la /mnt/cifs > /tmp/race-ls.out 2>&1 &
    lp=$!
    # Long enough for the listing's request to reach the server (TCG).
    sleep 3
    set=0 stale=0
    /xattr set /mnt/cifs/f-set user.x v > /dev/null && set=1
    wait $lp
    lsrc=$?
    eack_has /mnt/cifs/f-set user.x v || stale=1
    echo "linuxref: eack-race variant=$1 set=$set stale=$stale ls=$lsrc $(/xattr list /mnt/cifs/f-set)"
    /xattr set /mnt/cifs/f-set user.x "" > /dev/null
    mark race-$1-end
    umount /mnt/cifs || echo "linuxref: umount failed"
}
EACK=$(cat /eack.conf 2> /dev/null)
eack_has() {
    /xattr list "$1" | grep -q " $2=$3\( \|\$\)"
}
# The answer says NAME is not there (a list without it, or ENODATA): not
# an error such as EOPNOTSUPP, which is the server's own answer.
eack_absent() {
    out=$(/xattr list "$1")
    echo "$out" | grep -q " $2=$3\( \|\$\)" && return 1
    case "$out" in *" n="* | *"error=No data available"*) return 0 ;; esac
    return 1
}
for ew in $EACK; do
    ev=${ew%%:*} rounds=${ew#*:} eo=
    for v in $CIFS; do [ "${v%%:*}" = "$ev" ] && eo=${v#*:}; done
    if [ "$rounds" = race ]; then
        [ -n "$eo" ] && eack_race "$ev" "$eo"
        continue
    fi
    if [ "$rounds" = twin ] || [ "$rounds" = rewind ] || [ "$rounds" = ctime ] ||
        [ "$rounds" = deny ] || [ "$rounds" = reconnect ]; then
        [ -n "$eo" ] && eack_$rounds "$ev" "$eo"
        continue
    fi
    if [ -n "$eo" ] && mount -t cifs "$UNC" /mnt/cifs -o "$eo"; then
        ls -la /mnt/cifs > /dev/null
        hid=0
        for e in b-ea c-ea; do eack_absent /mnt/cifs/$e user.srv 1 && hid=$((hid + 1)); done
        stale=0 sets=0 i=0
        while [ $i -lt $rounds ]; do
            if /xattr set /mnt/cifs/f-set user.x s$i > /dev/null; then
                sets=$((sets + 1))
                ls -la /mnt/cifs > /dev/null
                eack_has /mnt/cifs/f-set user.x s$i || stale=$((stale + 1))
                /xattr set /mnt/cifs/f-set user.x "" > /dev/null
                ls -la /mnt/cifs > /dev/null
            fi
            i=$((i + 1))
        done
        rm -f /tmp/eack-stop
        (while [ ! -e /tmp/eack-stop ]; do ls -la /mnt/cifs > /dev/null; done) &
        i=0
        while [ $i -lt $rounds ]; do
            if /xattr set /mnt/cifs/f-set user.x r$i > /dev/null; then
                sets=$((sets + 1))
                eack_has /mnt/cifs/f-set user.x r$i || stale=$((stale + 1))
                /xattr set /mnt/cifs/f-set user.x "" > /dev/null
            fi
            i=$((i + 1))
        done
        touch /tmp/eack-stop
        wait
        echo "linuxref: eack variant=$ev hidden=$hid stale=$stale sets=$sets"
        umount /mnt/cifs || echo "linuxref: umount failed"
    else
        echo "linuxref: eack mount of $ev failed"
    fi
done

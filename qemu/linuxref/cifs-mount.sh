# cifs-mount.sh: the cifs mount both Linux guests make, sourced by their
# /init: the reference guest's (qemu/linuxref/init.sh, as /cifs-mount.sh)
# and the fstests guest's (linux/fstests-init.sh, as
# /fstests-run/cifs-mount.sh). POSIX sh (the reference guest runs busybox);
# defines one function and touches nothing until called.
#
# cifs_mount UNC DIR FIXED OPTS SAY: mount -t cifs UNC on DIR with
# -o FIXED,OPTS (FIXED, e.g. the credentials, may be empty and is never
# dropped). An option this kernel does not know (dmesg: cifs: Unknown
# parameter 'X') is dropped from OPTS, said as `SAY option=X`, and the
# mount retried, 8 tries at most: a distribution kernel may lack an option,
# or carry later ones backported. Leaves OPTS as last tried in cifs_opts;
# status 0 when mounted.
cifs_mount() {
    cifs_opts=$4
    cifs_tries=0
    while [ $cifs_tries -lt 8 ]; do
        cifs_tries=$((cifs_tries + 1))
        if mount -t cifs "$1" "$2" -o "${3:+$3,}$cifs_opts"; then return 0; fi
        cifs_bad=$(dmesg | grep -o "Unknown parameter '[^']*'" | tail -1 | cut -d"'" -f2)
        [ -n "$cifs_bad" ] && echo ",$cifs_opts," | grep -q ",$cifs_bad[,=]" || return 1
        echo "$5 option=$cifs_bad"
        cifs_opts=$(echo ",$cifs_opts," | sed -E "s/,$cifs_bad(=[^,]*)?,/,/; s/^,//; s/,$//")
    done
    return 1
}

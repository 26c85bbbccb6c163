#!/bin/busybox sh
# /init of the ksmbd guest (qemu/src/ksmbd.rs): Linux's in-kernel SMB server
# on a tmpfs share, reached by the host through QEMU's user network
# (hostfwd 127.0.0.1:PORT -> 10.0.2.15:445). Reads the share's user, share
# name and entries from /ksmbd/spec (a second initramfs archive written by
# the host), prints `ksmbd-guest: ready` once ksmbd.mountd runs, and powers
# off after `ksmbd.life=SECS` seconds (the host stops it sooner on drop;
# the limit only covers a host process that died without stopping it).
#
# /ksmbd/spec, one item per line, fields separated by a single space:
#   user NAME PASSWORD     the SMB user (a Unix user of uid 1000)
#   share NAME             the share (a tmpfs at /srv/share)
#   dir NAME               a directory in the share
#   file NAME TEXT         a regular file holding TEXT (no spaces)
#   xattr NAME XNAME VALUE an extended attribute on NAME (user.* is an EA)
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mkdir -p /proc /sys /dev /run /tmp /srv/share /etc/ksmbd
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp

say() { echo "ksmbd-guest: $*"; }
fail() { say "FAILED: $*"; poweroff -f; }

life=600
for w in $(cat /proc/cmdline); do
    case "$w" in ksmbd.life=*) life=${w#ksmbd.life=} ;; esac
done

while read -r m; do
    insmod "/modules/$m" || fail "insmod $m"
done < /modules/order

ip link set lo up
ip link set eth0 up || fail "no eth0"
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2

mount -t tmpfs -o mode=0755 share /srv/share || fail "tmpfs share"
user=fixture pass=fixture-pw share=share
while read -r kind a b c; do
    case "$kind" in
    user) user=$a pass=$b ;;
    share) share=$a ;;
    dir) mkdir -p "/srv/share/$a" || fail "mkdir $a" ;;
    file) printf '%s' "$b" > "/srv/share/$a" || fail "file $a" ;;
    xattr) /xattr set "/srv/share/$a" "$b" "$c" >/dev/null || fail "xattr $a $b" ;;
    '') ;;
    *) fail "bad spec line: $kind" ;;
    esac
done < /ksmbd/spec
chown -R 1000:1000 /srv/share

cat > /etc/passwd <<PW
root:x:0:0:root:/root:/bin/sh
$user:x:1000:1000:$user:/srv/share:/bin/false
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PW
cat > /etc/group <<GR
root:x:0:
$user:x:1000:
nogroup:x:65534:
GR
echo "passwd: files" > /etc/nsswitch.conf
echo "group: files" >> /etc/nsswitch.conf

cat > /etc/ksmbd/ksmbd.conf <<CONF
[global]
	netbios name = KSMBD
	server signing = auto
	server min protocol = SMB2_10
	map to guest = never
[$share]
	path = /srv/share
	read only = no
	force user = $user
	force group = $user
CONF
ksmbd.adduser -a "$user" -p "$pass" || fail "ksmbd.adduser"
ksmbd.mountd -n &
mountd=$!

# ksmbd listens once mountd has handed it the configuration.
i=0
while ! grep -q ':01BD ' /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
    i=$((i + 1))
    [ $i -gt 200 ] && fail "nothing listens on 445"
    kill -0 $mountd 2>/dev/null || fail "ksmbd.mountd exited"
    sleep 0.1
done
say "ready (share $share, user $user, Linux $(uname -r))"
sleep "$life"
say "life of $life s is over"
poweroff -f

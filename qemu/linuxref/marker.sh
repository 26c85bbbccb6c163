#!/bin/sh
# The marker forward's responder (the guestfwd to 10.0.2.100:4450 that
# CifsRun::netdev_arg in qemu/src/linuxref/guest.rs sets up): QEMU runs it
# once per connection with the guest's bytes on stdin. It reads the request
# line (`GET /NAME HTTP/1.0`), copies the relay's stats files
# (STATS_DIR/*.json) into MARKS_DIR/NAME/ and only then answers 200, so the
# guest knows the snapshot is taken.
#
#   marker.sh MARKS_DIR STATS_DIR
read m p v
d=$1/${p#/}
mkdir -p "$d"
cp "$2"/*.json "$d"/ 2>/dev/null
printf 'HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n'

#!/bin/sh
# The fake kernel log of cifs_mount's test: what fake-mount.sh refused.
cat "$LOG/kmsg" 2>/dev/null

#!/bin/sh
# A fake mount(8) for cifs_mount's test (qemu/src/linuxref/initramfs.rs):
# logs each -o it is given, refuses the options named in $REFUSE as the
# kernel does (its words in $LOG/kmsg) and any option list holding `fail`.
echo "$6" >> "$LOG/tried"
for o in $REFUSE; do
    case ",$6," in *",$o,"*|*",$o="*)
        echo "CIFS: VFS: cifs: Unknown parameter '$o'" >> "$LOG/kmsg"; exit 32 ;;
    esac
done
case ",$6," in *,fail,*) exit 32 ;; esac

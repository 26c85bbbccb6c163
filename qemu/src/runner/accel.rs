//! Accelerator choice: what the user asked for ([`AccelChoice`]), and the
//! `auto` probe that times a tiny guest under TCG and KVM and caches its
//! verdict, an [`Accel`].
//!
//! It touches `/dev/kvm` (opened to see whether it exists), spawns QEMU for
//! the probe, and writes the verdict file in the cache directory.
//!
//! It reads `config` and not the other way round: [`Accel`] is one of the
//! command line's values and lives there, and the probe here builds a
//! [`QemuConfig`] to time its tiny guest.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use super::config::{Accel, MemSize, QemuConfig};
use super::status::GuestStatus;
use super::{workspace_root, Runner, DEBUG_EXIT_IOBASE};

/// What the user asked for: a fixed accelerator or `auto` (see [`resolve_accel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccelChoice {
    /// KVM only if `/dev/kvm` opens and a short probe shows it at least as fast as TCG.
    Auto,
    /// Always TCG.
    Tcg,
    /// Always KVM.
    Kvm,
}

impl FromStr for AccelChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(AccelChoice::Auto),
            "tcg" => Ok(AccelChoice::Tcg),
            "kvm" => Ok(AccelChoice::Kvm),
            other => Err(format!(
                "unknown accelerator `{other}` (expected auto, tcg or kvm)"
            )),
        }
    }
}

/// Loop iterations the probe guest runs (about 0.1 s under TCG here).
const PROBE_LOOPS: u32 = 100_000_000;
/// Name of the cached verdict file inside the cache directory.
const PROBE_CACHE_FILE: &str = "accel-probe";

/// The default directory for the accelerator verdict: the workspace's `build/`.
pub fn default_cache_dir() -> PathBuf {
    workspace_root().join("build")
}

/// Resolves `choice` to an accelerator and says why. `auto` picks KVM only
/// when `/dev/kvm` opens read-write and a probe guest (a counted loop) runs
/// at least as fast under KVM as under TCG; the verdict is cached in
/// `cache_dir` per host kernel release and QEMU binary.
pub fn resolve_accel(choice: AccelChoice, qemu: &Path, cache_dir: &Path) -> (Accel, String) {
    match choice {
        AccelChoice::Tcg => (Accel::Tcg, "tcg requested".into()),
        AccelChoice::Kvm => (Accel::Kvm, "kvm requested".into()),
        AccelChoice::Auto => {
            if let Err(e) = OpenOptions::new().read(true).write(true).open("/dev/kvm") {
                return (Accel::Tcg, format!("auto: /dev/kvm does not open ({e})"));
            }
            let key = probe_cache_key(qemu);
            let cache = cache_dir.join(PROBE_CACHE_FILE);
            if let Some(accel) = read_cached_verdict(&cache, &key) {
                return (
                    accel,
                    format!("auto: cached probe verdict in {}", cache.display()),
                );
            }
            let (accel, why) = probe_accel(qemu);
            // A cache that cannot be written only costs a probe next time.
            let _ = fs::create_dir_all(cache_dir)
                .and_then(|_| fs::write(&cache, format!("{key}\n{}\n# {why}\n", accel.name())));
            (accel, format!("auto: {why}"))
        }
    }
}

fn probe_cache_key(qemu: &Path) -> String {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("key host-kernel={} qemu={}", release.trim(), qemu.display())
}

fn read_cached_verdict(cache: &Path, key: &str) -> Option<Accel> {
    let text = fs::read_to_string(cache).ok()?;
    let mut lines = text.lines();
    if lines.next()? != key {
        return None;
    }
    match lines.next()? {
        "tcg" => Some(Accel::Tcg),
        "kvm" => Some(Accel::Kvm),
        _ => None,
    }
}

/// Times the probe guest under TCG, then under KVM with a deadline of twice
/// the TCG time (plus a second for start-up noise).
fn probe_accel(qemu: &Path) -> (Accel, String) {
    let dir = std::env::temp_dir().join(format!("qemu-run-probe-{}", std::process::id()));
    let elf = dir.join("probe.elf");
    if let Err(e) = fs::create_dir_all(&dir)
        .and_then(|_| fs::write(&elf, probe_elf(PROBE_LOOPS, b"probe\n", 0)))
    {
        return (
            Accel::Tcg,
            format!("cannot write the probe guest ({e}): TCG"),
        );
    }
    let run = |accel: Accel, timeout: Duration| {
        Runner::new(
            QemuConfig::new(&elf)
                .qemu(qemu)
                .accel(accel)
                .memory(MemSize("64M".into())),
        )
        .timeout(timeout)
        .run()
    };
    let verdict = match run(Accel::Tcg, Duration::from_secs(30)) {
        Ok(t) if t.status.success() => {
            let limit = t.wall * 2 + Duration::from_secs(1);
            match run(Accel::Kvm, limit) {
                Ok(k) if k.status.success() && k.wall <= t.wall => (
                    Accel::Kvm,
                    format!("probe: KVM {:.2} s <= TCG {:.2} s", k.wall.as_secs_f64(), t.wall.as_secs_f64()),
                ),
                Ok(k) if k.status.success() => (
                    Accel::Tcg,
                    format!("probe: KVM {:.2} s slower than TCG {:.2} s", k.wall.as_secs_f64(), t.wall.as_secs_f64()),
                ),
                Ok(k) if k.status == GuestStatus::TimedOut => (
                    Accel::Tcg,
                    format!(
                        "probe: KVM still running after {:.2} s, TCG took {:.2} s (slow KVM emulation)",
                        limit.as_secs_f64(),
                        t.wall.as_secs_f64()
                    ),
                ),
                Ok(k) => (Accel::Tcg, format!("probe: KVM run failed ({})", k.status)),
                Err(e) => (Accel::Tcg, format!("probe: KVM run failed ({e})")),
            }
        }
        Ok(t) => (
            Accel::Tcg,
            format!("probe: TCG run failed ({}), KVM not trusted", t.status),
        ),
        Err(e) => (Accel::Tcg, format!("probe: TCG run failed ({e})")),
    };
    let _ = fs::remove_dir_all(&dir);
    verdict
}

/// Builds a tiny PVH-bootable ELF64 guest: it prints `message` on COM1, counts
/// down `loops` iterations, writes `status` to `isa-debug-exit` and halts.
/// Used by the accelerator probe and by tests that need a guest without the
/// real kernel.
pub fn probe_elf(loops: u32, message: &[u8], status: u32) -> Vec<u8> {
    const LOAD: u32 = 0x10_0000; // 1 MiB, where PVH guests are loaded
    const CODE_OFF: usize = 0x100; // file offset of the loaded segment
    const CODE_LEN: usize = 45; // machine code below, message follows

    // 32-bit protected mode, paging off (the PVH entry state).
    let mut code = Vec::with_capacity(CODE_LEN + message.len());
    code.push(0xfc); // cld
    code.push(0xbe); // mov esi, msg
    code.extend_from_slice(&(LOAD + CODE_LEN as u32).to_le_bytes());
    code.push(0xb9); // mov ecx, len
    code.extend_from_slice(&(message.len() as u32).to_le_bytes());
    code.extend_from_slice(&[0x66, 0xba, 0xf8, 0x03]); // mov dx, 0x3f8
    code.extend_from_slice(&[0x85, 0xc9]); // next: test ecx, ecx
    code.extend_from_slice(&[0x74, 0x05]); // jz done
    code.push(0xac); // lodsb
    code.push(0xee); // out dx, al
    code.push(0x49); // dec ecx
    code.extend_from_slice(&[0xeb, 0xf7]); // jmp next
    code.push(0xb9); // done: mov ecx, loops + 1
    code.extend_from_slice(&loops.saturating_add(1).to_le_bytes());
    code.push(0x49); // spin: dec ecx
    code.extend_from_slice(&[0x75, 0xfd]); // jnz spin
    code.extend_from_slice(&[0x66, 0xba]); // mov dx, DEBUG_EXIT_IOBASE
    code.extend_from_slice(&DEBUG_EXIT_IOBASE.to_le_bytes());
    code.push(0xb8); // mov eax, status
    code.extend_from_slice(&status.to_le_bytes());
    code.push(0xef); // out dx, eax
    code.push(0xf4); // h: hlt
    code.extend_from_slice(&[0xeb, 0xfd]); // jmp h
    debug_assert_eq!(code.len(), CODE_LEN);
    code.extend_from_slice(message);

    // The Xen PVH note: name "Xen", type 18 (XEN_ELFNOTE_PHYS32_ENTRY), desc = entry.
    let mut note = Vec::new();
    note.extend_from_slice(&4u32.to_le_bytes());
    note.extend_from_slice(&4u32.to_le_bytes());
    note.extend_from_slice(&18u32.to_le_bytes());
    note.extend_from_slice(b"Xen\0");
    note.extend_from_slice(&LOAD.to_le_bytes());
    note.extend_from_slice(&[0; 4]); // QEMU reads the entry as 8 bytes
    let note_off = 64 + 2 * 56;

    let mut elf = Vec::new();
    // ELF header.
    elf.extend_from_slice(b"\x7fELF");
    elf.extend_from_slice(&[2, 1, 1, 0]); // 64-bit, little endian, version 1, SysV
    elf.extend_from_slice(&[0; 8]);
    elf.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    elf.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    elf.extend_from_slice(&1u32.to_le_bytes());
    elf.extend_from_slice(&u64::from(LOAD).to_le_bytes()); // e_entry
    elf.extend_from_slice(&64u64.to_le_bytes()); // e_phoff
    elf.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    elf.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    elf.extend_from_slice(&64u16.to_le_bytes()); // e_ehsize
    elf.extend_from_slice(&56u16.to_le_bytes()); // e_phentsize
    elf.extend_from_slice(&2u16.to_le_bytes()); // e_phnum
    elf.extend_from_slice(&64u16.to_le_bytes()); // e_shentsize
    elf.extend_from_slice(&0u16.to_le_bytes()); // e_shnum
    elf.extend_from_slice(&0u16.to_le_bytes()); // e_shstrndx
    let phdr =
        |elf: &mut Vec<u8>, ty: u32, flags: u32, off: u64, addr: u64, len: u64, align: u64| {
            elf.extend_from_slice(&ty.to_le_bytes());
            elf.extend_from_slice(&flags.to_le_bytes());
            elf.extend_from_slice(&off.to_le_bytes());
            elf.extend_from_slice(&addr.to_le_bytes()); // p_vaddr
            elf.extend_from_slice(&addr.to_le_bytes()); // p_paddr
            elf.extend_from_slice(&len.to_le_bytes()); // p_filesz
            elf.extend_from_slice(&len.to_le_bytes()); // p_memsz
            elf.extend_from_slice(&align.to_le_bytes());
        };
    let code_len = code.len() as u64;
    phdr(
        &mut elf,
        1,
        5,
        CODE_OFF as u64,
        u64::from(LOAD),
        code_len,
        0x10,
    ); // PT_LOAD, R+X
    phdr(&mut elf, 4, 4, note_off as u64, 0, note.len() as u64, 4); // PT_NOTE
    elf.extend_from_slice(&note);
    elf.resize(CODE_OFF, 0);
    elf.extend_from_slice(&code);
    elf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accel_choice_parses() {
        assert_eq!("auto".parse(), Ok(AccelChoice::Auto));
        assert_eq!("tcg".parse(), Ok(AccelChoice::Tcg));
        assert_eq!("kvm".parse(), Ok(AccelChoice::Kvm));
        assert!("hvf".parse::<AccelChoice>().is_err());
    }

    #[test]
    fn probe_elf_is_a_pvh_elf() {
        let e = probe_elf(5, b"hi", 3);
        assert_eq!(&e[..4], b"\x7fELF");
        assert_eq!(e[4], 2);
        let note = 64 + 2 * 56;
        assert_eq!(&e[note + 12..note + 16], b"Xen\0");
        assert_eq!(
            u32::from_le_bytes(e[note + 8..note + 12].try_into().unwrap()),
            18
        );
        assert!(e.ends_with(b"hi"));
    }

    #[test]
    fn cached_verdict_needs_matching_key() {
        let dir = std::env::temp_dir().join(format!("qemu-run-cache-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let f = dir.join("v");
        fs::write(&f, "key A\nkvm\n").unwrap();
        assert_eq!(read_cached_verdict(&f, "key A"), Some(Accel::Kvm));
        assert_eq!(read_cached_verdict(&f, "key B"), None);
        fs::write(&f, "key A\nbogus\n").unwrap();
        assert_eq!(read_cached_verdict(&f, "key A"), None);
        fs::remove_dir_all(&dir).unwrap();
    }
}

//! `hvm_start_info`, the PVH boot structure QEMU hands the entry in `%ebx`:
//! command line, memory map and RSDP address.
//!
//! [`read`] copies what the kernel needs into a [`BootInfo`] owned by the
//! kernel (fixed-size arrays, no allocation: the heap does not exist yet), so
//! the low memory QEMU put the structures in can be reused afterwards (the AP
//! trampoline lives there). Touches only the physical memory named by the
//! structure (identity-mapped by the boot page tables).

/// `hvm_start_info.magic`.
pub const START_INFO_MAGIC: u32 = 0x336e_c578;
/// Memory map entries kept; QEMU passes a handful.
pub const MAX_MEMMAP: usize = 64;
/// Longest command line kept; a longer one sets
/// [`BootInfo::cmdline_truncated`] and the parser refuses it (exit 2).
pub const MAX_CMDLINE: usize = kernel::cmdline::MAX_LEN;

/// `hvm_memmap_table_entry.type` of usable RAM.
pub const MEMMAP_RAM: u32 = 1;

/// One memory map entry (E820 semantics).
#[derive(Clone, Copy, Debug, Default)]
pub struct MemRegion {
    /// Physical start address.
    pub addr: u64,
    /// Length in bytes.
    pub size: u64,
    /// 1 = RAM, 2 = reserved, 3 = ACPI reclaimable, 4 = ACPI NVS, 5 = unusable.
    pub kind: u32,
}

/// What the kernel keeps from `hvm_start_info`.
pub struct BootInfo {
    cmdline: [u8; MAX_CMDLINE],
    cmdline_len: usize,
    /// The command line did not fit in [`MAX_CMDLINE`] bytes (the boot
    /// refuses it: `kernel::cmdline::parse_boot`).
    pub cmdline_truncated: bool,
    memmap: [MemRegion; MAX_MEMMAP],
    memmap_len: usize,
    /// Physical address of the ACPI RSDP, 0 if QEMU gave none.
    pub rsdp: u64,
    /// `hvm_start_info.version`.
    pub version: u32,
}

impl BootInfo {
    /// The raw command line bytes (not yet validated as UTF-8).
    pub fn cmdline(&self) -> &[u8] {
        &self.cmdline[..self.cmdline_len]
    }

    /// The memory map as given.
    pub fn memory_map(&self) -> &[MemRegion] {
        &self.memmap[..self.memmap_len]
    }
}

#[repr(C)]
struct HvmStartInfo {
    magic: u32,
    version: u32,
    flags: u32,
    nr_modules: u32,
    modlist_paddr: u64,
    cmdline_paddr: u64,
    rsdp_paddr: u64,
    memmap_paddr: u64,
    memmap_entries: u32,
    reserved: u32,
}

#[repr(C)]
struct HvmMemmapEntry {
    addr: u64,
    size: u64,
    kind: u32,
    reserved: u32,
}

static BOOT_INFO: spin::Once<BootInfo> = spin::Once::new();

/// Copy `hvm_start_info` at physical `paddr` into a kernel-owned
/// [`BootInfo`] (once; later calls return the first copy).
pub fn read(paddr: u32) -> Result<&'static BootInfo, &'static str> {
    if let Some(info) = BOOT_INFO.get() {
        return Ok(info);
    }
    if paddr == 0 || !paddr.is_multiple_of(8) {
        return Err("no hvm_start_info (not booted through PVH?)");
    }
    // SAFETY: QEMU's PVH loader passes the physical address of a valid,
    // 8-byte aligned hvm_start_info in %ebx; all of low memory is
    // identity-mapped by the boot page tables and nothing else writes it.
    let si = unsafe { core::ptr::read_volatile(paddr as usize as *const HvmStartInfo) };
    if si.magic != START_INFO_MAGIC {
        return Err("hvm_start_info has a bad magic number");
    }
    let mut info = BootInfo {
        cmdline: [0; MAX_CMDLINE],
        cmdline_len: 0,
        cmdline_truncated: false,
        memmap: [MemRegion::default(); MAX_MEMMAP],
        memmap_len: 0,
        rsdp: si.rsdp_paddr,
        version: si.version,
    };
    if si.cmdline_paddr != 0 && si.cmdline_paddr < (1 << 32) {
        let base = si.cmdline_paddr as usize as *const u8;
        let mut n = 0;
        loop {
            // SAFETY: the command line is a NUL-terminated string in
            // identity-mapped low memory placed there by the loader; we stop
            // at its NUL or after MAX_CMDLINE bytes.
            let b = unsafe { core::ptr::read_volatile(base.add(n)) };
            if b == 0 {
                break;
            }
            if n == MAX_CMDLINE {
                info.cmdline_truncated = true;
                break;
            }
            info.cmdline[n] = b;
            n += 1;
        }
        info.cmdline_len = n;
    }
    if si.version >= 1 && si.memmap_paddr != 0 && si.memmap_paddr < (1 << 32) {
        let n = (si.memmap_entries as usize).min(MAX_MEMMAP);
        let table = si.memmap_paddr as usize as *const HvmMemmapEntry;
        for i in 0..n {
            // SAFETY: `memmap_entries` entries of 24 bytes at memmap_paddr,
            // identity-mapped low memory written by the loader.
            let e = unsafe { core::ptr::read_volatile(table.add(i)) };
            info.memmap[i] = MemRegion {
                addr: e.addr,
                size: e.size,
                kind: e.kind,
            };
        }
        info.memmap_len = n;
    }
    if info.memmap_len == 0 {
        return Err("hvm_start_info has no memory map (version < 1?)");
    }
    Ok(BOOT_INFO.call_once(|| info))
}

//! ACPI through the `acpi` crate (v5, no allocator API): find the MADT from
//! the RSDP (the PVH start info's, else a BIOS-area scan) and list the local
//! APICs to start; note where the HPET is. Tables are read through the boot identity map, so the
//! handler's "mapping" is the physical address itself.

use alloc::vec::Vec;
use core::ptr::NonNull;

use ::acpi::madt::{Madt, MadtEntry};
use ::acpi::HpetInfo;
use ::acpi::{AcpiHandler, AcpiTables, PhysicalMapping};

#[derive(Clone, Copy, Debug)]
struct IdentityMap;

impl AcpiHandler for IdentityMap {
    unsafe fn map_physical_region<T>(&self, phys: usize, size: usize) -> PhysicalMapping<Self, T> {
        let virt = NonNull::new(phys as *mut T).expect("ACPI table at physical address 0");
        // SAFETY: all of the first 4 GiB (where QEMU puts ACPI tables) is
        // identity-mapped by the boot page tables, so `phys` is also the
        // virtual address of the region, valid for `size` bytes.
        unsafe { PhysicalMapping::new(phys, virt, size, size, *self) }
    }

    fn unmap_physical_region<T>(_region: &PhysicalMapping<Self, T>) {}
}

/// What the MADT says about the processors.
#[derive(Debug)]
pub struct Processors {
    /// Physical address of the local APICs.
    pub lapic_base: u64,
    /// APIC ids of enabled processors, in MADT order.
    pub apic_ids: Vec<u32>,
    /// Physical address of the HPET registers, if there is an HPET table.
    pub hpet_base: Option<u64>,
}

/// Parse the MADT. `rsdp` is the physical RSDP address (0: scan the BIOS
/// area).
pub fn processors(rsdp: u64) -> Result<Processors, &'static str> {
    // SAFETY: the RSDP address comes from the PVH start info (or the
    // crate's scan of the BIOS area); tables are identity-mapped and
    // read-only to us.
    let tables = unsafe {
        if rsdp != 0 {
            AcpiTables::from_rsdp(IdentityMap, rsdp as usize)
        } else {
            AcpiTables::search_for_rsdp_bios(IdentityMap)
        }
    }
    .map_err(|_| "no valid ACPI RSDP/RSDT")?;
    let madt = tables.find_table::<Madt>().map_err(|_| "no ACPI MADT")?;
    let mut lapic_base = madt.get().local_apic_address as u64;
    let mut apic_ids = Vec::new();
    for entry in madt.get().entries() {
        match entry {
            MadtEntry::LocalApic(e) => {
                let flags = e.flags;
                if flags & 1 != 0 {
                    apic_ids.push(e.apic_id as u32);
                }
            }
            MadtEntry::LocalX2Apic(e) => {
                let flags = e.flags;
                let id = e.x2apic_id;
                if flags & 1 != 0 && id < 256 && !apic_ids.contains(&id) {
                    apic_ids.push(id);
                }
            }
            MadtEntry::LocalApicAddressOverride(e) => {
                lapic_base = e.local_apic_address;
            }
            _ => {}
        }
    }
    if apic_ids.is_empty() {
        return Err("MADT lists no enabled processor");
    }
    let hpet_base = HpetInfo::new(&tables).ok().map(|h| h.base_address as u64);
    Ok(Processors {
        lapic_base,
        apic_ids,
        hpet_base,
    })
}

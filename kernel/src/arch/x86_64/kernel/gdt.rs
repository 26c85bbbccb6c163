//! Per-CPU GDT and TSS. Each CPU gets a 64-bit code segment, a data segment
//! and a TSS whose IST slot 1 is a guarded stack for the double fault (so a
//! kernel stack overflow, which faults on the guard page and then cannot push
//! the page-fault frame, still gets reported).
//!
//! The tables are leaked heap objects: they live as long as the CPU.

use alloc::boxed::Box;

use ::x86_64::instructions::segmentation::{Segment, CS, DS, ES, SS};
use ::x86_64::instructions::tables::load_tss;
use ::x86_64::structures::gdt::{Descriptor, GlobalDescriptorTable};
use ::x86_64::structures::tss::TaskStateSegment;
use ::x86_64::VirtAddr;

/// IST index (1-based in the IDT, 0-based in the TSS array) of the
/// double-fault stack.
pub const DOUBLE_FAULT_IST: u8 = 1;
/// Bytes of each double-fault stack.
pub const IST_STACK_SIZE: usize = 16 * 1024;

/// Build and load this CPU's GDT and TSS (allocates the IST stack).
pub fn init_cpu(cpu: usize) {
    let ist = crate::mm::stack::alloc(IST_STACK_SIZE)
        .unwrap_or_else(|e| panic!("cpu {cpu}: no double-fault stack: {e}"));
    let mut tss = TaskStateSegment::new();
    tss.interrupt_stack_table[(DOUBLE_FAULT_IST - 1) as usize] = VirtAddr::new(ist.top as u64);
    let tss: &'static TaskStateSegment = Box::leak(Box::new(tss));

    let gdt: &'static mut GlobalDescriptorTable = Box::leak(Box::new(GlobalDescriptorTable::new()));
    let code = gdt.append(Descriptor::kernel_code_segment());
    let data = gdt.append(Descriptor::kernel_data_segment());
    let tss_sel = gdt.append(Descriptor::tss_segment(tss));
    let gdt: &'static GlobalDescriptorTable = gdt;
    gdt.load();
    // SAFETY: (1) the selectors come from the GDT just loaded, in which
    // `code` is a 64-bit ring-0 code segment and `data` a writable data
    // segment; (2) the TSS descriptor points at a leaked ('static) TSS and
    // is loaded once per CPU.
    unsafe {
        CS::set_reg(code);
        DS::set_reg(data);
        ES::set_reg(data);
        SS::set_reg(data);
        load_tss(tss_sel);
    }
}

//! x86_64 half of memory management: page tables (`paging`). The generic
//! half (frames, heap, slab, stacks) is `crate::mm`.

pub mod paging;

//! Entry points: the 32-bit PVH entry of the boot CPU (`entry`), the
//! `hvm_start_info` it is handed (`pvh`), and the real-mode trampoline the
//! application processors start in (`trampoline`).

pub mod entry;
pub mod pvh;
pub mod trampoline;

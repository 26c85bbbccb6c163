//! The architecture seam: generic kernel code says `crate::arch::…` and never
//! names x86. Only x86_64 exists today; a second architecture would be one
//! more `cfg`-selected module re-exported here under the same names.
//!
//! Everything below `arch/` may use unsafe code (each block with a SAFETY
//! comment); the generic modules that call it stay safe.

pub mod x86_64;

pub use self::x86_64::*;

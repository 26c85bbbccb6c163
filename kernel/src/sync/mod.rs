//! Kernel synchronisation services: [`rcu`], the QSBR implementation of the
//! fs crate's `Platform` (RCU, CPU id, clock), installed at boot.

pub mod fs_test;
pub mod rcu;
pub mod rcu_test;

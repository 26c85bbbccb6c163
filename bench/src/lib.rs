#![cfg_attr(not(feature = "host"), no_std)]
//! Workloads.

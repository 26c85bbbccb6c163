//! runner (to be written).

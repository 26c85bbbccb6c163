//! linuxref (to be written).

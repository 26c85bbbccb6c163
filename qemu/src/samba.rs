//! samba (to be written).

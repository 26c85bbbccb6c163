//! relay (to be written).

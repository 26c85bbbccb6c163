//! `getname` and `putname`: a path copied in from the caller before the
//! walk sees it (Linux `getname_flags`, `putname`, `names_cache` in
//! `fs/namei.c` and `fs/dcache.c`).
//!
//! Linux copies every path a system call is given into a `names_cache`
//! object of `PATH_MAX` bytes, so the walk reads kernel memory the caller
//! cannot change under it. The object starts with `struct filename` (the
//! name pointer, the caller's pointer, a reference count, the audit slot)
//! and the name follows it; a name too long to fit behind that header is
//! copied again over the whole object, with the header allocated apart.
//! The copy is `strncpy_from_user` ([`crate::uaccess`]): `EFAULT` for a
//! bad caller buffer, `ENAMETOOLONG` once no NUL lies within `PATH_MAX`
//! bytes, and `ENOENT` for the empty name (POSIX; Linux's `LOOKUP_EMPTY`,
//! which `AT_EMPTY_PATH` sets, is not modelled: no caller here asks for it).
//!
//! `names_cache` here is a per-CPU slot holding one free buffer of
//! `PATH_MAX` bytes' capacity: `getname` takes this CPU's, `putname` (the
//! [`Filename`]'s drop, so every error path gives it back) returns it to
//! the CPU it is dropped on. A slot is touched by its own CPU only, so its
//! lock is never contended and its line never shared: the cost is that of
//! SLUB's per-CPU freelist, one atomic operation each way. An empty slot
//! (the first call on a CPU, or a CPU that frees more than it took) costs
//! a real allocation, admitted by [`crate::mem`] as every fs allocation
//! that can fail is (`ENOMEM`).
//!
//! Touches: this CPU's `names_cache` slot, the caller's buffer (read).

use alloc::vec::Vec;

use crate::errno::{Errno, KResult};
use crate::platform::{self, MAX_CPUS};
use crate::uaccess::{strncpy_from_user, UserPtr};

use super::PATH_MAX;

/// Bytes of Linux's `struct filename` header in front of an embedded name
/// (`name`, `uptr`, `refcnt`, `aname`: four words on x86-64).
pub const FILENAME_HEADER: usize = 32;
/// The longest name that fits behind the header (Linux
/// `EMBEDDED_NAME_MAX`); a name this long or longer is copied twice.
pub const EMBEDDED_NAME_MAX: usize = PATH_MAX - FILENAME_HEADER;

/// One CPU's free `names_cache` object, alone on its cache lines.
#[repr(align(128))]
struct Slot(spin::Mutex<Option<Vec<u8>>>);

// Inline const: `Slot` is not `Copy`, and every slot starts empty.
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot(spin::Mutex::new(None));

static NAMES_CACHE: [Slot; MAX_CPUS] = [EMPTY; MAX_CPUS];

/// `names_cache` objects allocated because a CPU's slot was empty (the
/// slab's slow path; for tests and the frontend's docs).
static REFILLS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// How many `names_cache` objects were allocated so far (slot misses).
pub fn names_cache_refills() -> u64 {
    REFILLS.load(core::sync::atomic::Ordering::Relaxed)
}

/// Linux `__getname`: a `names_cache` object, this CPU's if it has one.
fn names_cache_alloc() -> KResult<Vec<u8>> {
    let cpu = platform::get().cpu_id() % MAX_CPUS;
    if let Some(buf) = NAMES_CACHE[cpu].0.lock().take() {
        return Ok(buf);
    }
    REFILLS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    crate::mem::admit(PATH_MAX)?;
    let mut buf = Vec::new();
    buf.try_reserve_exact(PATH_MAX).map_err(|_| Errno::ENOMEM)?;
    Ok(buf)
}

/// Linux `__putname`: back to this CPU's slot, or freed if it is taken.
fn names_cache_free(buf: Vec<u8>) {
    let cpu = platform::get().cpu_id() % MAX_CPUS;
    let mut slot = NAMES_CACHE[cpu].0.lock();
    if slot.is_none() {
        *slot = Some(buf);
    }
}

/// A path copied from the caller (Linux `struct filename`): the bytes
/// without their NUL, in a `names_cache` object that goes back when this
/// drops ([`putname`]).
#[derive(Debug)]
pub struct Filename {
    buf: Vec<u8>,
}

impl Filename {
    /// The name, without its NUL.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Filename {
    fn drop(&mut self) {
        names_cache_free(core::mem::take(&mut self.buf));
    }
}

/// Linux `getname`: copy the NUL-terminated path at `src` in.
pub fn getname(src: UserPtr<'_>) -> KResult<Filename> {
    let mut name = Filename {
        buf: names_cache_alloc()?,
    };
    // First try to embed the name behind the header.
    let len = strncpy_from_user(&mut name.buf, src, EMBEDDED_NAME_MAX)?;
    if len == EMBEDDED_NAME_MAX {
        // Approaching PATH_MAX: Linux allocates the header apart and copies
        // again over the whole object. (Its header allocation is not
        // modelled: one small allocation on a path no benchmark takes.)
        let len = strncpy_from_user(&mut name.buf, src, PATH_MAX)?;
        if len == PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
    }
    if name.buf.is_empty() {
        // POSIX: the empty path names nothing.
        return Err(Errno::ENOENT);
    }
    Ok(name)
}

/// Linux `putname`: give the name's object back (what dropping it does;
/// named so a caller reads as Linux's does).
#[inline]
pub fn putname(name: Filename) {
    drop(name)
}

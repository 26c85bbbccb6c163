//! cifs extended attributes: the server's EAs as the `user.` namespace,
//! and the WSL metadata EAs of reparse points.
//!
//! As Linux's `fs/smb/client/xattr.c`: `user.NAME` is the EA `NAME`;
//! `listxattr` lists every EA as `user.NAME`; `getxattr` fetches the whole
//! list (FileFullEaInformation) and picks the name; `setxattr` is SET_INFO
//! of one FILE_FULL_EA_INFORMATION entry, and `removexattr` the same with
//! an empty value (SMB's "delete"), after a query that says whether the
//! name exists (ENODATA). Other namespaces are EOPNOTSUPP (Linux's cifs
//! handlers for its ACL names are not modelled); `nouser_xattr` makes
//! `user.` EOPNOTSUPP too, without a round trip. Whether a
//! `listxattr`/`getxattr`/`removexattr` asks the server at all is the
//! EA-cache design's decision ([`super::eacache`]). Unlike Linux, `setxattr`
//! does not query the list first (Linux does, to check the room left).
//!
//! WSL metadata (`$LXUID $LXGID $LXMOD $LXDEV`) is asked for only when a
//! `stat` meets a reparse point, once per attribute window, as Linux 6.12
//! reads it only for reparse points.
//!
//! Where the design remembers answers, a question that must go to the
//! server takes its listed siblings' along (one round trip for many
//! entries: [`eacache`], "Batched sibling queries").
//!
//! Touches: the connection (one send per question), the inode's and its
//! listed siblings' [`CifsInode`] EA fields and the per-tcon [`TconEa`],
//! each under its own lock, never two at once.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::eacache::{self, EaAnswer, EaCacheDesign, EaCtx};
use super::{data_errno, CifsFs, CifsInode, EaSizeTrust, Listing};
use crate::errno::{Errno, KResult};
use crate::inode::Inode;
use crate::simple_xattr::{under_prefix, USER_PREFIX};
use smb::wire::ea::FullEa;
use smb::wire::status;
use smb::SmbError;

/// The EA name `user.NAME` stands for (EINVAL for `user.` alone,
/// EOPNOTSUPP for any other namespace).
fn ea_name(name: &[u8]) -> KResult<&str> {
    if !under_prefix(name, &[USER_PREFIX])? {
        return Err(Errno::EOPNOTSUPP);
    }
    core::str::from_utf8(&name[USER_PREFIX.len()..]).map_err(|_| Errno::EINVAL)
}

fn cifs_inode(inode: &Inode) -> KResult<&CifsInode> {
    inode.private::<CifsInode>().ok_or(Errno::EOPNOTSUPP)
}

impl CifsFs {
    /// What the design may look at for `inode` now.
    fn ea_ctx(&self, inode: &Inode, ci: &CifsInode, now: u64) -> EaCtx {
        // A local EA change through another name of the same file, later
        // than what this inode learned, makes that unknown.
        let linked = self.ea_linked_generation(ci);
        let generation = self.conn.lock().generation();
        let mut t = self.tcon.lock();
        t.follow(generation);
        let window = self.attr_window(inode);
        let since = |ms: u64| (ms != 0).then(|| now.saturating_sub(ms));
        let attrs_fresh = now.saturating_sub(ci.attr_ms.load(Ordering::Relaxed)) < window;
        let (size, no_eas_ms) = {
            let e = ci.ea.lock();
            (
                if e.size_sample >= linked {
                    e.size
                } else {
                    u32::MAX
                },
                if e.no_eas_sample >= linked {
                    e.no_eas_ms
                } else {
                    0
                },
            )
        };
        EaCtx {
            since_no_eas_ms: since(no_eas_ms),
            ea_size: (size != u32::MAX && attrs_fresh).then_some(size),
            tcon_trusts_easize: t.trusts_easize(),
            tcon_no_eas: t.no_eas,
            tcon_positive: t.positive,
            since_tcon_stop_ms: t.stop_ms.map(|s| now.saturating_sub(s)),
            tcon_refused: t.refused,
            window_ms: window,
            k: self.opts.eacache_k,
        }
    }

    /// Every EA of `inode`: answered locally when the design says so, else
    /// asked of the server (with its listed siblings where the design
    /// batches and a walk over the listing is visible), each answer taught
    /// to its inode and the tcon.
    fn eas(&self, inode: &Inode) -> KResult<Vec<FullEa>> {
        let ci = cifs_inode(inode)?;
        let now = self.now();
        let design = self.opts.effective_eacache();
        let walk = self.ea_walk(inode, ci, now);
        let sample = self.ea_sample();
        let ctx = self.ea_ctx(inode, ci, now);
        match design.decide(&ctx) {
            EaAnswer::Unsupported => return Err(Errno::EOPNOTSUPP),
            EaAnswer::NoEas => {
                self.ea_local.fetch_add(1, Ordering::Relaxed);
                return Ok(Vec::new());
            }
            EaAnswer::Ask => {}
        }
        let siblings = match walk {
            Some(by_name) => self.ea_siblings(ci, now, design, by_name),
            None => Vec::new(),
        };
        if siblings.is_empty() {
            self.ea_queries.fetch_add(1, Ordering::Relaxed);
            let r = self.conn.lock().query_eas(&ci.path());
            return self.ea_answer(inode, ci, &ctx, sample, now, r);
        }
        let mut paths = Vec::with_capacity(siblings.len() + 1);
        paths.push(ci.path());
        for (s, _) in &siblings {
            paths.push(cifs_inode(s).map(CifsInode::path).unwrap_or_default());
        }
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let (r, parked, generation) = {
            let mut c = self.conn.lock();
            let interim = c.stats().interim;
            let r = c.query_eas_many(&refs);
            (r, c.stats().interim > interim, c.generation())
        };
        self.ea_batches.fetch_add(1, Ordering::Relaxed);
        if parked {
            let mut t = self.tcon.lock();
            t.follow(generation);
            t.parked = true;
        }
        let mut answers = match r {
            // The chains actually sent: fewer than asked where the credits
            // or a new link (one query alone) left siblings out.
            Ok(a) => {
                self.ea_queries.fetch_add(a.len() as u64, Ordering::Relaxed);
                a.into_iter()
            }
            // Nothing came back: the entry asked about gets the error,
            // its siblings learn nothing.
            Err(e) => {
                self.ea_queries.fetch_add(1, Ordering::Relaxed);
                return self.ea_answer(inode, ci, &ctx, sample, now, Err(e));
            }
        };
        let own = answers
            .next()
            .unwrap_or(Err(SmbError::Protocol("no answer for the entry asked")));
        let own = self.ea_answer(inode, ci, &ctx, sample, now, own);
        // Each sibling's answer teaches the tree connect as a single query
        // would, and NO_EAS is recorded as the inode's own answer (under
        // the generation rule); nothing else is kept: a list of EAs or
        // EACCES would be served later as if the server said it then, and
        // an error is met when the entry is asked on its own.
        for ((s, sctx), r) in siblings.iter().zip(answers) {
            self.ea_batched.fetch_add(1, Ordering::Relaxed);
            let Ok(sci) = cifs_inode(s) else { continue };
            let _ = self.ea_answer(s, sci, sctx, sample, now, r);
        }
        own
    }

    /// Notes an EA question about `ci` on its listing and says whether a
    /// walk over that listing is visible, as readahead sees a sequential
    /// reader: the previous question on the listing, inside the attribute
    /// window, was about the entry listed just before (`Some(false)`: in
    /// the server's order) or just before by name (`Some(true)`: `ls`
    /// sorts). Any other question starts the batches small again.
    fn ea_walk(&self, inode: &Inode, ci: &CifsInode, now: u64) -> Option<bool> {
        let (l, at) = ci.listed.lock().clone()?;
        let prev = l.last_at.swap(at, Ordering::Relaxed);
        let prev_ms = l.last_ms.swap(now, Ordering::Relaxed);
        if prev == at {
            // The same entry again (a size query, then the fetch): no new
            // evidence either way.
            return None;
        }
        let fresh = prev != usize::MAX && now.saturating_sub(prev_ms) < self.attr_window(inode);
        let np = l.name_pos.get(at).copied().unwrap_or(0);
        let walk = if !fresh {
            None
        } else if at > 0 && prev == at - 1 {
            Some(false)
        } else if np > 0 && l.by_name.get(np - 1) == Some(&prev) {
            Some(true)
        } else {
            None
        };
        if walk.is_none() {
            let first = eacache::FIRST_BATCH.min(self.opts.eacache_batch as usize);
            l.next_batch.store(first, Ordering::Relaxed);
        }
        walk
    }

    /// A listing's entries, in the server's order: each learns its place,
    /// for the EA batches (nothing kept where the design does not batch).
    pub(super) fn remember_listing(&self, order: &[Arc<Inode>]) {
        let batch = self.opts.eacache_batch as usize;
        if batch <= 1 || !eacache::batches(self.opts.effective_eacache().sends()) {
            return;
        }
        let names: Vec<String> = order
            .iter()
            .map(|i| {
                i.private::<CifsInode>()
                    .map(CifsInode::path)
                    .unwrap_or_default()
            })
            .collect();
        let mut by_name: Vec<usize> = (0..order.len()).collect();
        by_name.sort_by(|&a, &b| names[a].as_bytes().cmp(names[b].as_bytes()));
        let mut name_pos = alloc::vec![0; order.len()];
        for (p, &i) in by_name.iter().enumerate() {
            name_pos[i] = p;
        }
        let l = Arc::new(Listing {
            entries: order.iter().map(Arc::downgrade).collect(),
            by_name,
            name_pos,
            next_batch: AtomicUsize::new(eacache::FIRST_BATCH.min(batch)),
            last_at: AtomicUsize::new(usize::MAX),
            last_ms: AtomicU64::new(0),
        });
        for (i, inode) in order.iter().enumerate() {
            if let Some(ci) = inode.private::<CifsInode>() {
                *ci.listed.lock() = Some((l.clone(), i));
            }
        }
    }

    /// The entries whose EA queries go with `ci`'s: listed with it, after
    /// it in the walk's order (by name when `by_name`, else the server's;
    /// never past the last), that the design would ask about now; at most
    /// the
    /// listing's batch size less one, looking at no more than four times
    /// that many (a walk over a large listing's answered entries costs no
    /// more than the batch). None before the tree connect has answered
    /// one EA query (a server that refuses the class then costs one), nor
    /// while the link is down (the next request makes a new one).
    fn ea_siblings(
        &self,
        ci: &CifsInode,
        now: u64,
        design: &dyn EaCacheDesign,
        by_name: bool,
    ) -> Vec<(Arc<Inode>, EaCtx)> {
        let mut out = Vec::new();
        if !eacache::batches(design.sends()) || self.opts.eacache_batch <= 1 {
            return out;
        }
        let (generation, up) = {
            let c = self.conn.lock();
            (c.generation(), c.is_connected())
        };
        let before_stop = {
            let mut t = self.tcon.lock();
            t.follow(generation);
            // A link that went down is brought up by the next request,
            // as a new tree connect: its first EA query goes alone.
            // A batch that met a parked CREATE: no more batches here.
            if !up || !t.answered || t.refused || t.parked {
                return out;
            }
            // negcache's per-tcon stop needs K answers without EAs: a
            // batch asks no more than the stop would.
            match design.sends() {
                eacache::EaSends::PerInodeAndTcon if !t.positive => {
                    self.opts.eacache_k.saturating_sub(t.no_eas) as usize
                }
                _ => usize::MAX,
            }
        };
        let Some((l, at)) = ci.listed.lock().clone() else {
            return out;
        };
        let base = l.next_batch.load(Ordering::Relaxed).max(1);
        let want = base.min(before_stop).max(1);
        let n = l.entries.len();
        for k in (1..n).take(want.saturating_mul(4)) {
            if out.len() + 1 >= want {
                break;
            }
            let place = if by_name {
                let np = l.name_pos.get(at).copied().unwrap_or(n);
                l.by_name.get(np + k).copied()
            } else {
                Some(at + k)
            };
            // The walk's end: nothing after the last entry.
            let Some(w) = place.and_then(|p| l.entries.get(p)) else {
                break;
            };
            let Some(s) = w.upgrade() else {
                continue;
            };
            let Some(sci) = s.private::<CifsInode>() else {
                continue;
            };
            let sctx = self.ea_ctx(&s, sci, now);
            // A sibling listed with EaSize != 0 has EAs: a batch keeps
            // only NO_EAS, so its list would be fetched and dropped, and
            // fetched again on its own turn. It waits for that turn.
            let listed_with_eas = matches!(sctx.ea_size, Some(n) if n != 0);
            if !listed_with_eas && design.decide(&sctx) == EaAnswer::Ask {
                out.push((s, sctx));
            }
        }
        if !out.is_empty() {
            let next = base.saturating_mul(2).min(self.opts.eacache_batch as usize);
            l.next_batch.store(next, Ordering::Relaxed);
        }
        out
    }

    /// The server's answer `r` to an EA query about `inode`, sent after
    /// `sample` with `ctx` in force: taught to the inode and the tree
    /// connect, and turned into what the caller gets.
    fn ea_answer(
        &self,
        inode: &Inode,
        ci: &CifsInode,
        ctx: &EaCtx,
        sample: u64,
        now: u64,
        r: Result<Vec<FullEa>, SmbError>,
    ) -> KResult<Vec<FullEa>> {
        // EAs found where a fresh EaSize, recorded at the generation this
        // query was sent at, said 0: the server does not fill EaSize.
        let contradicted = matches!(&r, Ok(eas) if !eas.is_empty())
            && ctx.ea_size == Some(0)
            && ci.ea.lock().generation <= sample;
        // Or an EA added since the listing (another client, the server's
        // own side): an honest server's own attributes for the file show
        // it now. Asked once, while the tree connect is still unknown.
        let liar = contradicted
            && self.tcon.lock().trust == EaSizeTrust::Unknown
            && !self.easize_shows_eas(inode, ci);
        let generation = self.conn.lock().generation();
        let mut t = self.tcon.lock();
        t.follow(generation);
        match r {
            Err(SmbError::Status(status::NOT_SUPPORTED | status::INVALID_INFO_CLASS)) => {
                // Not "this file has none" but "this server has no EA
                // query": Linux's EOPNOTSUPP; the designs may stop asking.
                self.ea_refused.fetch_add(1, Ordering::Relaxed);
                t.refused = true;
                Err(Errno::EOPNOTSUPP)
            }
            Err(e) => {
                let e = data_errno(e);
                if e == Errno::EACCES {
                    // What EaSize says is no longer what this user would
                    // be answered.
                    t.denied = true;
                    t.answered = true;
                }
                Err(e)
            }
            Ok(eas) if eas.is_empty() => {
                t.answered = true;
                drop(t);
                ci.record_no_eas(now, sample);
                let mut t = self.tcon.lock();
                t.follow(generation);
                let window = self.attr_window(inode);
                if t.stop_ms.is_some_and(|s| now.saturating_sub(s) >= window) {
                    // The stop's window passed: count again.
                    t.no_eas = 0;
                    t.stop_ms = None;
                }
                t.no_eas += 1;
                if t.no_eas == self.opts.eacache_k {
                    t.stop_ms = Some(now);
                }
                Ok(eas)
            }
            Ok(eas) => {
                t.answered = true;
                t.positive = true;
                if liar && t.trust == EaSizeTrust::Unknown {
                    t.trust = EaSizeTrust::Liar;
                }
                drop(t);
                ci.ea.lock().no_eas_ms = 0;
                Ok(eas)
            }
        }
    }

    /// EAs were found where a fresh EaSize said 0: do the file's own
    /// attributes (FileAllInformation) show them now? An honest server's
    /// do (Samba, Windows: the EaSize that proves the field, recorded and
    /// taught to the tree connect); ksmbd's EASize is 0 always. An error
    /// is "no": the tree connect is then not trusted, the safe side.
    fn easize_shows_eas(&self, inode: &Inode, ci: &CifsInode) -> bool {
        let sample = self.ea_sample();
        let r = self.conn.lock().stat(&ci.path());
        let Ok(st) = r else { return false };
        self.apply_stat(inode, &st, sample);
        st.attributes & super::ATTR_REPARSE == 0 && st.ea_size.is_some_and(super::easize_is_proof)
    }

    /// `listxattr`: `user.NAME\0` for every EA.
    pub(super) fn ea_list(&self, inode: &Arc<Inode>) -> KResult<Vec<u8>> {
        let mut out = Vec::new();
        for ea in self.eas(inode)? {
            out.extend_from_slice(USER_PREFIX);
            out.extend_from_slice(ea.name.as_bytes());
            out.push(0);
        }
        Ok(out)
    }

    /// `getxattr`: the value of `user.NAME`.
    pub(super) fn ea_get(&self, inode: &Arc<Inode>, name: &[u8]) -> KResult<Vec<u8>> {
        let want = ea_name(name)?;
        self.eas(inode)?
            .into_iter()
            .find(|e| e.name == want)
            .map(|e| e.value)
            .ok_or(Errno::ENODATA)
    }

    /// `setxattr` (`value` `None`: `removexattr`).
    pub(super) fn ea_set(
        &self,
        inode: &Arc<Inode>,
        name: &[u8],
        value: Option<&[u8]>,
    ) -> KResult<()> {
        let ea = ea_name(name)?;
        let ci = cifs_inode(inode)?;
        let now = self.now();
        let design = self.opts.effective_eacache();
        if design.decide(&self.ea_ctx(inode, ci, now)) == EaAnswer::Unsupported {
            return Err(Errno::EOPNOTSUPP);
        }
        if value.is_none() && !self.eas(inode)?.iter().any(|e| e.name == ea) {
            return Err(Errno::ENODATA);
        }
        let path = ci.path();
        let r = self
            .conn
            .lock()
            .set_ea(&path, ea, value.unwrap_or_default());
        let g = ci.forget_eas(&self.ea_clock);
        self.ea_changed_here(ci, g);
        r.map_err(data_errno)
    }

    /// The WSL metadata of a reparse point, once per attribute window
    /// (`stat`'s part; other entries are never asked).
    pub(super) fn wsl_refresh(&self, inode: &Arc<Inode>, ci: &CifsInode, now: u64) -> KResult<()> {
        if !ci.reparse.load(Ordering::Relaxed) || self.opts.all_forced() {
            return Ok(());
        }
        let last = ci.wsl_ms.load(Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) < self.attr_window(inode) {
            return Ok(());
        }
        self.wsl_queries.fetch_add(1, Ordering::Relaxed);
        let r = self.conn.lock().query_wsl_eas(&ci.path());
        ci.wsl_ms.store(now.max(1), Ordering::Relaxed);
        let w = match r {
            Ok(Some(w)) => w,
            Ok(None) => return Ok(()),
            Err(SmbError::Status(status::NOT_SUPPORTED | status::INVALID_INFO_CLASS)) => {
                self.ea_refused.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            Err(e) => return Err(data_errno(e)),
        };
        let st = inode.stat();
        let o = &self.opts;
        let uid = if o.forceuid {
            st.uid
        } else {
            w.uid.unwrap_or(st.uid)
        };
        let gid = if o.forcegid {
            st.gid
        } else {
            w.gid.unwrap_or(st.gid)
        };
        let forced_mode = if inode.is_dir() {
            o.dir_mode_set
        } else {
            o.file_mode_set
        };
        let mode = if forced_mode {
            st.mode
        } else {
            w.mode.map_or(st.mode, |m| m & 0o7777)
        };
        inode.set_owner(uid, gid, mode);
        Ok(())
    }
}

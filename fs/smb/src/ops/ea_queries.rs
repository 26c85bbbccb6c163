//! The EA operations of [`Connection`]: the WSL metadata EAs, every EA of
//! a path (one compound, or ten paths' compounds in one send) and setting
//! one (the frames are the table in [`super`]).
//!
//! Touches: what `ops` touches (the connection's exchanges); safe code.

use super::*;

/// One path's answer in [`Connection::query_eas_many`], from its CREATE's
/// and QUERY_INFO's replies, as [`Connection::query_eas`] reads them.
fn ea_chain_answer(c: &mut Connection, create: &Reply, q: &Reply) -> SmbResult<Vec<ea::FullEa>> {
    c.body(create, CreateResponse::parse)?;
    if q.hdr.status == status::NO_EAS_ON_FILE {
        return Ok(Vec::new());
    }
    let l = c.body(q, |m| {
        ea::parse_full_ea_list_counted(OutputResponse::parse(m)?.data)
    })?;
    c.stats.bad_ea_names += u64::from(l.bad_names);
    Ok(l.eas)
}

impl Connection {
    /// The WSL metadata EAs of `path`: CREATE + QUERY_INFO(FileFullEa with
    /// the names `$LXUID $LXGID $LXMOD $LXDEV`) + CLOSE in one compound.
    /// `Ok(None)` when the server answers STATUS_NO_EAS_ON_FILE or the file
    /// has EAs but none of the four.
    pub fn query_wsl_eas(&mut self, path: &str) -> SmbResult<Option<WslEas>> {
        let p = smb_path(path)?;
        let list = ea::emit_get_ea_list(&ea::WSL_EA_NAMES);
        self.run(|c| {
            let q = QueryInfoRequest {
                info_type: info_type::FILE,
                class: ea::FILE_FULL_EA_INFORMATION,
                output_len: out_len(c, 65_535),
                input: &list,
                additional_info: 0,
                flags: 0,
                file_id: FileId::RELATED,
            };
            let desired = access::FILE_READ_EA | access::FILE_READ_ATTRIBUTES;
            let r = create_query_close(c, &p, desired, q)?;
            if r.hdr.status == status::NO_EAS_ON_FILE {
                return Ok(None);
            }
            let w = c.body(&r, |m| {
                WslEas::from_eas(&ea::parse_full_ea_list(OutputResponse::parse(m)?.data)?)
            })?;
            Ok(if w.is_empty() { None } else { Some(w) })
        })
    }

    /// Every EA of `path`, as Linux's `smb2_query_eas` asks for them:
    /// CREATE(FILE_READ_EA) + QUERY_INFO(FileFullEaInformation, no name
    /// list) + CLOSE in one compound. STATUS_NO_EAS_ON_FILE is an empty
    /// list.
    pub fn query_eas(&mut self, path: &str) -> SmbResult<Vec<ea::FullEa>> {
        let p = smb_path(path)?;
        self.run(|c| {
            let q = QueryInfoRequest {
                info_type: info_type::FILE,
                class: ea::FILE_FULL_EA_INFORMATION,
                output_len: out_len(c, 65_535),
                input: &[],
                additional_info: 0,
                flags: 0,
                file_id: FileId::RELATED,
            };
            let r = create_query_close(c, &p, access::FILE_READ_EA, q)?;
            if r.hdr.status == status::NO_EAS_ON_FILE {
                return Ok(Vec::new());
            }
            let l = c.body(&r, |m| {
                ea::parse_full_ea_list_counted(OutputResponse::parse(m)?.data)
            })?;
            c.stats.bad_ea_names += u64::from(l.bad_names);
            Ok(l.eas)
        })
    }

    /// The EAs of several files in one round trip, each asked as
    /// [`Connection::query_eas`] asks: a related CREATE(FILE_READ_EA) +
    /// QUERY_INFO(FileFullEaInformation) + CLOSE compound per path, each
    /// its own frame (its own signatures, its own transform header when
    /// sealed), every frame sent before any reply is read. One frame per
    /// chain because MS-SMB2 3.2.4.1.4 and 3.3.5.2.7 give two styles of
    /// compounding, related and unrelated, that MUST NOT be mixed in one
    /// transport send (the server SHOULD fail each request with
    /// STATUS_INVALID_PARAMETER): several chains in one compound would be
    /// both at once.
    ///
    /// Only as many paths as the credits the link holds pay for (three per
    /// path) are asked, and always the first; only the first where the
    /// link went down (and came up again) since the call began: the answer has one entry per
    /// path asked, in order, each that path's own answer as `query_eas`
    /// would give it (STATUS_NO_EAS_ON_FILE an empty list, the CREATE's or
    /// QUERY_INFO's status an error, an EA list that does not parse
    /// [`SmbError::Wire`]). The outer error is the exchange's (transport,
    /// timeout, a reply frame that does not parse): nothing was learnt.
    pub fn query_eas_many(&mut self, paths: &[&str]) -> SmbResult<Vec<SmbResult<Vec<ea::FullEa>>>> {
        let ps: Vec<String> = paths
            .iter()
            .map(|p| smb_path(p))
            .collect::<SmbResult<_>>()?;
        if ps.is_empty() {
            return Ok(Vec::new());
        }
        let generation = self.generation();
        self.run(|c| {
            let sign = c.sign_requests();
            // Three credits per chain; one is always sent, and a link
            // without three makes the exchange answer NoCredits (the
            // connection then starts over, as for any request). A link
            // brought up since the caller chose the batch (a new tree
            // connect, whose first EA query goes alone) asks the first
            // path only.
            let fit = if c.generation() != generation {
                1
            } else {
                (c.credits() / 3).max(1) as usize
            };
            let asked = &ps[..ps.len().min(fit)];
            let output_len = out_len(c, 65_535);
            let frames: Vec<Vec<Req>> = asked
                .iter()
                .map(|p| {
                    let q = QueryInfoRequest {
                        info_type: info_type::FILE,
                        class: ea::FILE_FULL_EA_INFORMATION,
                        output_len,
                        input: &[],
                        additional_info: 0,
                        flags: 0,
                        file_id: FileId::RELATED,
                    };
                    vec![
                        create_req(p, access::FILE_READ_EA, OpenKind::Any),
                        Req::new(cmd::QUERY_INFO, true, 1, |o| q.emit(o)),
                        close_req(FileId::RELATED, true),
                    ]
                })
                .collect();
            let r = c.exchange_frames(frames, sign)?;
            if r.len() != asked.len() * 3 {
                return Err(SmbError::Protocol("compound reply count"));
            }
            let mut out = Vec::with_capacity(asked.len());
            for chain in r.chunks(3) {
                out.push(ea_chain_answer(c, &chain[0], &chain[1]));
            }
            Ok(out)
        })
    }

    /// Sets EA `name` of `path` to `value` (empty: removes it):
    /// CREATE(FILE_WRITE_EA) + SET_INFO(FileFullEaInformation) + CLOSE.
    pub fn set_ea(&mut self, path: &str, name: &str, value: &[u8]) -> SmbResult<()> {
        let p = smb_path(path)?;
        let info = ea::emit_full_ea(name.as_bytes(), value)
            .ok_or(SmbError::Invalid("EA name or value too long"))?;
        self.run(|c| {
            let desired = access::FILE_WRITE_EA | access::FILE_READ_ATTRIBUTES;
            let class = ea::FILE_FULL_EA_INFORMATION;
            set_info_compound(c, &p, desired, OpenKind::Any, class, &info).map(|_| ())
        })
    }
}

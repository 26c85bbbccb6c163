//! The client operations the filesystem layer uses, each built from one or
//! a few exchanges on a [`Connection`] and run through
//! [`Connection::run`] (connect on demand, reconnect and retry):
//!
//! | operation | frames (round trips) |
//! |---|---|
//! | [`Connection::list_dir`] | CREATE+QUERY_DIRECTORY, QUERY_DIRECTORY… until NO_MORE_FILES, CLOSE |
//! | [`Connection::stat`] | CREATE+QUERY_INFO(FileAllInformation)+CLOSE |
//! | [`Connection::query_wsl_eas`] | CREATE+QUERY_INFO(FileFullEaInformation, 4 names)+CLOSE |
//! | [`Connection::query_eas`] | CREATE(FILE_READ_EA)+QUERY_INFO(FileFullEaInformation)+CLOSE |
//! | [`Connection::query_eas_many`] | that chain for each of several paths, ten chains a compound, every compound in one send |
//! | [`Connection::set_ea`] | CREATE(FILE_WRITE_EA)+SET_INFO(FileFullEaInformation)+CLOSE |
//! | [`Connection::read_file`] | CREATE+READ, READ…, CLOSE |
//! | [`Connection::read_at`] | CREATE+READ+CLOSE (one chunk), else CREATE+READ, READ…, CLOSE |
//! | [`Connection::write_at`] | CREATE+WRITE+CLOSE (one chunk), else CREATE+WRITE, WRITE…, CLOSE |
//! | [`Connection::create`] | CREATE(disposition)+QUERY_INFO(FileAllInformation)+CLOSE |
//! | [`Connection::delete`] | CREATE(DELETE)+SET_INFO(FileDispositionInformation)+CLOSE |
//! | [`Connection::rename`] | CREATE(DELETE)+SET_INFO(FileRenameInformation)+CLOSE |
//! | [`Connection::set_size`] | CREATE+SET_INFO(FileEndOfFileInformation)+CLOSE |
//!
//! Every chunk respects the negotiated MaxReadSize / MaxWriteSize, the
//! caller's `rsize` / `wsize` and the credits granted (a multi-credit
//! request charges one credit per 64 KiB); QUERY_DIRECTORY and QUERY_INFO
//! output buffers respect MaxTransactSize. The CLOSE of a data operation
//! asks for the attributes after it (POSTQUERY_ATTRIB), so size and times
//! after a write are the server's.
//!
//! Paths are share-relative with `/` or `\` separators; the share root is
//! `""` or `"/"`.

use crate::conn::{Connection, Reply, Req};
use crate::error::{SmbError, SmbResult};
use crate::wire::create::{
    access, options, parse_close, parse_close_attrs, share, CloseAttrs, CloseRequest,
    CreateRequest, CreateResponse, FileId, CLOSE_POSTQUERY_ATTRIB, FILE_OPEN,
};
use crate::wire::dirinfo::{self, DirInfo};
use crate::wire::ea::{self, WslEas};
use crate::wire::info::{self, FileStat};
use crate::wire::query::{
    info_type, qd_flags, OutputResponse, QueryDirectoryRequest, QueryInfoRequest,
};
use crate::wire::read::{ReadRequest, ReadResponse};
use crate::wire::setinfo::{self, SetInfoRequest};
use crate::wire::write::{parse_write, WriteRequest};
use crate::wire::{cmd, status};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// What kind of object an open expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenKind {
    Any,
    Directory,
    File,
}

/// Longest accepted path, in bytes.
const MAX_PATH: usize = 4096;
/// QUERY_DIRECTORY / QUERY_INFO(EA) output buffer we would like (one
/// credit); a smaller MaxTransactSize wins.
const DIR_BUF: u32 = 65_536;
/// One credit pays for this many bytes of a multi-credit request.
const CREDIT_BYTES: u32 = 65_536;
/// Most entries one listing may hold. Linux streams a listing through
/// getdents and keeps none of it; this client keeps the whole listing to
/// prime the dcache, so a server that never answers STATUS_NO_MORE_FILES
/// must not make it grow without end: past this many entries (or
/// [`MAX_LIST_BYTES`] of wire records) the listing fails with EIO.
pub const MAX_LIST_ENTRIES: usize = 1 << 20;
/// Most bytes of QUERY_DIRECTORY output one listing may consume.
pub const MAX_LIST_BYTES: usize = 256 << 20;

/// How to open for a data or namespace operation.
#[derive(Clone, Copy, Debug)]
pub struct OpenSpec {
    pub desired_access: u32,
    pub kind: OpenKind,
    /// CreateDisposition ([`crate::wire::create::FILE_OPEN`] …).
    pub disposition: u32,
    /// Extra CreateOptions bits.
    pub options: u32,
}

impl OpenSpec {
    /// Open the existing file (not a directory) for `desired_access`.
    pub fn existing_file(desired_access: u32) -> OpenSpec {
        OpenSpec {
            desired_access,
            kind: OpenKind::File,
            disposition: FILE_OPEN,
            options: 0,
        }
    }
}

/// What a created or opened object looks like afterwards.
#[derive(Clone, Copy, Debug)]
pub struct Created {
    pub create: CreateResponse,
    pub stat: FileStat,
}

/// Converts a VFS path to the share-relative SMB form.
pub fn smb_path(path: &str) -> SmbResult<String> {
    if path.len() > MAX_PATH {
        return Err(SmbError::Invalid("path too long"));
    }
    let mut out = String::with_capacity(path.len());
    for comp in path
        .split(['/', '\\'])
        .filter(|c| !c.is_empty() && *c != ".")
    {
        if comp == ".." {
            return Err(SmbError::Invalid("'..' in an SMB path"));
        }
        if comp.contains(['\0', ':', '*', '?', '"', '<', '>', '|']) {
            return Err(SmbError::Invalid("character not allowed in an SMB name"));
        }
        if !out.is_empty() {
            out.push('\\');
        }
        out.push_str(comp);
    }
    Ok(out)
}

fn create_req(path: &str, desired_access: u32, kind: OpenKind) -> Req {
    create_req_spec(
        path,
        OpenSpec {
            desired_access,
            kind,
            disposition: FILE_OPEN,
            options: 0,
        },
    )
}

fn create_req_spec(path: &str, spec: OpenSpec) -> Req {
    let opts = match spec.kind {
        OpenKind::Any => 0,
        OpenKind::Directory => options::DIRECTORY_FILE,
        OpenKind::File => options::NON_DIRECTORY_FILE,
    };
    let c = CreateRequest {
        desired_access: spec.desired_access | access::SYNCHRONIZE,
        file_attributes: 0,
        share_access: share::ALL,
        disposition: spec.disposition,
        options: opts | spec.options,
        path,
    };
    Req::new(cmd::CREATE, false, 1, |o| c.emit(o))
}

fn close_req(fid: FileId, related: bool) -> Req {
    Req::new(cmd::CLOSE, related, 1, |o| {
        CloseRequest { file_id: fid }.emit(o)
    })
}

fn close_req_attrs(fid: FileId, related: bool) -> Req {
    Req::new(cmd::CLOSE, related, 1, |o| {
        CloseRequest { file_id: fid }.emit_flags(o, CLOSE_POSTQUERY_ATTRIB)
    })
}

/// Output buffer of a QUERY_DIRECTORY / QUERY_INFO: what we want, within
/// the negotiated MaxTransactSize.
fn out_len(c: &Connection, want: u32) -> u32 {
    want.min(c.max_transact()).max(1)
}

/// The data chunk of one READ/WRITE: within `limit` (rsize/wsize), the
/// negotiated maximum and what the credits allow (`spare` credits are kept
/// for the other members of a compound). Returns (bytes, credit charge).
fn chunk(c: &Connection, limit: u32, negotiated: u32, spare: u16) -> (u32, u16) {
    let charge_max = c.max_charge().saturating_sub(spare).max(1) as u32;
    let len = limit.min(negotiated).min(charge_max * CREDIT_BYTES).max(1);
    (len, len.div_ceil(CREDIT_BYTES).max(1) as u16)
}

fn charge_for(len: usize) -> u16 {
    (len as u32).div_ceil(CREDIT_BYTES).max(1) as u16
}

fn qd_req(c: &Connection, fid: FileId, class: u8, restart: bool, related: bool) -> Req {
    let q = QueryDirectoryRequest {
        class,
        flags: if restart { qd_flags::RESTART_SCANS } else { 0 },
        file_id: fid,
        pattern: "*",
        output_len: out_len(c, DIR_BUF),
    };
    Req::new(cmd::QUERY_DIRECTORY, related, 1, |o| q.emit(o))
}

/// Entries of one QUERY_DIRECTORY reply and the bytes of output they came
/// in: `None` at the end of the listing. An output buffer longer than the
/// one asked for is malformed (EIO).
fn dir_page(c: &mut Connection, r: &Reply, class: u8) -> SmbResult<Option<(Vec<DirInfo>, usize)>> {
    if r.hdr.status == status::NO_MORE_FILES {
        return Ok(None);
    }
    let asked = out_len(c, DIR_BUF) as usize;
    let v = c.body(r, |m| {
        let data = OutputResponse::parse(m)?.data;
        if data.len() > asked {
            return Err(crate::wire::WireError::new(
                "query directory output longer than asked",
            ));
        }
        Ok((dirinfo::parse(class, data)?, data.len()))
    })?;
    Ok(Some(v))
}

/// Appends one page of a listing to `all` within the listing's limits
/// ([`MAX_LIST_ENTRIES`], [`MAX_LIST_BYTES`]: EIO past them) and memory
/// admission (ENOMEM when the kernel heap cannot take it; the page's own
/// entries are bounded by the frame they came in).
fn keep_page(
    admit: fn(usize) -> bool,
    all: &mut Vec<DirInfo>,
    bytes: &mut usize,
    page: Vec<DirInfo>,
    page_bytes: usize,
) -> SmbResult<()> {
    *bytes = bytes.saturating_add(page_bytes);
    if all.len().saturating_add(page.len()) > MAX_LIST_ENTRIES || *bytes > MAX_LIST_BYTES {
        return Err(SmbError::Protocol(
            "directory listing too long (server never ended it)",
        ));
    }
    let names: usize = page.iter().map(|d| d.name.len()).sum();
    let grow = page.len() * core::mem::size_of::<DirInfo>() + names;
    if !admit(grow.saturating_mul(2)) || all.try_reserve(page.len()).is_err() {
        return Err(SmbError::NoMemory("directory listing"));
    }
    all.extend(page);
    Ok(())
}

/// The compound CREATE + QUERY_INFO + CLOSE on one path; returns the
/// QUERY_INFO reply (the CREATE's error if the open failed).
fn create_query_close(
    c: &mut Connection,
    path: &str,
    desired: u32,
    q: QueryInfoRequest<'_>,
) -> SmbResult<Reply> {
    let sign = c.sign_requests();
    let reqs = vec![
        create_req(path, desired, OpenKind::Any),
        Req::new(cmd::QUERY_INFO, true, 1, |o| q.emit(o)),
        close_req(FileId::RELATED, true),
    ];
    let mut r = c.exchange(reqs, sign)?;
    if r.len() != 3 {
        return Err(SmbError::Protocol("compound reply count"));
    }
    c.body(&r[0], CreateResponse::parse)?;
    Ok(r.swap_remove(1))
}

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
    /// Opens `path` (share-relative) for reading attributes/data.
    pub fn open(&mut self, path: &str, kind: OpenKind) -> SmbResult<(FileId, CreateResponse)> {
        let p = smb_path(path)?;
        self.run(|c| {
            let sign = c.sign_requests();
            let desired = access::FILE_READ_DATA | access::FILE_READ_ATTRIBUTES;
            let r = c.exchange(vec![create_req(&p, desired, kind)], sign)?;
            let cr = c.body(&r[0], CreateResponse::parse)?;
            Ok((cr.file_id, cr))
        })
    }

    /// Closes an open (errors other than transport ones are ignored by
    /// callers that clean up).
    pub fn close(&mut self, fid: FileId) -> SmbResult<()> {
        let sign = self.sign_requests();
        let r = self.exchange(vec![close_req(fid, false)], sign)?;
        self.body(&r[0], parse_close)?;
        Ok(())
    }

    /// One QUERY_DIRECTORY page on an open directory: `None` when the
    /// listing is complete.
    pub fn query_directory(
        &mut self,
        fid: FileId,
        class: u8,
        restart: bool,
    ) -> SmbResult<Option<Vec<DirInfo>>> {
        let sign = self.sign_requests();
        let r = self.exchange(vec![qd_req(self, fid, class, restart, false)], sign)?;
        Ok(dir_page(self, &r[0], class)?.map(|(v, _)| v))
    }

    /// Lists a directory (all pages) with info class `class`
    /// ([`dirinfo::class`]); `.` and `..` are left out.
    pub fn list_dir_class(&mut self, path: &str, class: u8) -> SmbResult<Vec<DirInfo>> {
        if dirinfo::fixed_len(class).is_none() {
            return Err(SmbError::Invalid("unsupported directory info class"));
        }
        let p = smb_path(path)?;
        self.run(|c| {
            let sign = c.sign_requests();
            let desired = access::FILE_READ_DATA | access::FILE_READ_ATTRIBUTES;
            let reqs = vec![
                create_req(&p, desired, OpenKind::Directory),
                qd_req(c, FileId::RELATED, class, true, true),
            ];
            let r = c.exchange(reqs, sign)?;
            if r.len() != 2 {
                return Err(SmbError::Protocol("compound reply count"));
            }
            let fid = c.body(&r[0], CreateResponse::parse)?.file_id;
            let mut all: Vec<DirInfo> = Vec::new();
            let mut bytes = 0usize;
            let mut page = dir_page(c, &r[1], class);
            let res = loop {
                match page {
                    Ok(Some((v, n))) => {
                        if let Err(e) = keep_page(c.config().admit, &mut all, &mut bytes, v, n) {
                            break Err(e);
                        }
                    }
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
                let sign = c.sign_requests();
                page = match c.exchange(vec![qd_req(c, fid, class, false, false)], sign) {
                    Ok(r) => dir_page(c, &r[0], class),
                    Err(e) => Err(e),
                };
            };
            match res {
                Ok(()) => {
                    c.close(fid)?;
                }
                Err(e) => {
                    if c.is_connected() {
                        let _ = c.close(fid);
                    }
                    return Err(e);
                }
            }
            all.retain(|d| d.name != "." && d.name != "..");
            Ok(all)
        })
    }

    /// Lists a directory with FileIdBothDirectoryInformation (class 37).
    pub fn list_dir(&mut self, path: &str) -> SmbResult<Vec<DirInfo>> {
        self.list_dir_class(path, dirinfo::class::ID_BOTH_DIRECTORY)
    }

    /// Attributes of `path`: CREATE + QUERY_INFO(FileAllInformation) + CLOSE
    /// in one compound.
    pub fn stat(&mut self, path: &str) -> SmbResult<FileStat> {
        let p = smb_path(path)?;
        self.run(|c| {
            let q = QueryInfoRequest {
                info_type: info_type::FILE,
                class: info::class::ALL,
                output_len: 4096,
                input: &[],
                additional_info: 0,
                flags: 0,
                file_id: FileId::RELATED,
            };
            let r = create_query_close(c, &p, access::FILE_READ_ATTRIBUTES, q)?;
            // BUFFER_OVERFLOW (a long name cut short) still carries the
            // fixed part.
            if r.hdr.status != status::BUFFER_OVERFLOW {
                r.ok()?;
            }
            c.body(&r, |m| info::parse_all(OutputResponse::parse(m)?.data))
        })
    }

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

    /// The whole contents of a file: CREATE + READ, further READs until end
    /// of file, CLOSE.
    pub fn read_file(&mut self, path: &str) -> SmbResult<Vec<u8>> {
        let p = smb_path(path)?;
        self.run(|c| {
            let spec =
                OpenSpec::existing_file(access::FILE_READ_DATA | access::FILE_READ_ATTRIBUTES);
            let first = whole_file_chunk(c);
            // Up to the size the CREATE reported: a server that keeps
            // sending data cannot make this read without end.
            let (data, _) = read_chunks(c, &p, spec, 0, first, |c, cr, got| {
                ((got as u64) < cr.end_of_file).then(|| whole_file_chunk(c))
            })?;
            Ok(data)
        })
    }
}

/// Replies of [`open_do_close`]: the CREATE's answer, the middle requests'
/// replies, and the attributes after the CLOSE (if the server sent them).
struct Bracket {
    create: CreateResponse,
    middle: Vec<Reply>,
    closed: Option<CloseAttrs>,
}

/// The compound CREATE + `middle` (related) + CLOSE(POSTQUERY) on one path.
/// A failed CREATE is the error. When the related CLOSE fails (a server
/// that fails the members after a failed one), the handle is closed again
/// on its own so that it never leaks.
fn open_do_close(
    c: &mut Connection,
    path: &str,
    spec: OpenSpec,
    middle: Vec<Req>,
) -> SmbResult<Bracket> {
    let sign = c.sign_requests();
    let n = middle.len();
    let mut reqs = Vec::with_capacity(n + 2);
    reqs.push(create_req_spec(path, spec));
    reqs.extend(middle);
    reqs.push(close_req_attrs(FileId::RELATED, true));
    let mut r = c.exchange(reqs, sign)?;
    if r.len() != n + 2 {
        return Err(SmbError::Protocol("compound reply count"));
    }
    let create = c.body(&r[0], CreateResponse::parse)?;
    let close = r.pop().ok_or(SmbError::Protocol("no reply"))?;
    let closed = match c.body(&close, parse_close_attrs) {
        Ok(a) => a,
        Err(SmbError::Status(_)) => {
            if c.is_connected() {
                let _ = c.close(create.file_id);
            }
            None
        }
        Err(e) => return Err(e),
    };
    r.remove(0);
    Ok(Bracket {
        create,
        middle: r,
        closed,
    })
}

/// The result of [`Connection::write_at`].
#[derive(Clone, Copy, Debug)]
pub struct Written {
    pub bytes: u64,
    /// The file's attributes after the CLOSE (the server's size and mtime),
    /// when the server reports them.
    pub attrs: Option<CloseAttrs>,
}

impl Connection {
    /// Reads up to `len` bytes at `off` of the file `path`, in chunks of at
    /// most `rsize` bytes (and the negotiated MaxReadSize, and the credits).
    /// Short only at end of file. Returns the bytes and the file's size as
    /// the CREATE reported it.
    pub fn read_at(
        &mut self,
        path: &str,
        off: u64,
        len: usize,
        rsize: u32,
    ) -> SmbResult<(Vec<u8>, u64)> {
        let p = smb_path(path)?;
        self.run(|c| {
            let spec =
                OpenSpec::existing_file(access::FILE_READ_DATA | access::FILE_READ_ATTRIBUTES);
            let (first, charge) = chunk(c, rsize, c.max_read(), 2);
            let first = first.min(len.try_into().unwrap_or(u32::MAX));
            let charge = charge.min(charge_for(first as usize));
            if first as usize >= len {
                // One chunk: CREATE + READ + CLOSE, one round trip.
                let rd = ReadRequest {
                    length: first,
                    offset: off,
                    file_id: FileId::RELATED,
                    minimum: 0,
                };
                let read = Req::new(cmd::READ, true, charge, |o| rd.emit(o));
                let b = open_do_close(c, &p, spec, vec![read])?;
                let data = read_reply(c, &b.middle[0], first)?;
                let size = b.closed.map_or(b.create.end_of_file, |a| a.end_of_file);
                return Ok((data, size));
            }
            let (data, cr) = read_chunks(c, &p, spec, off, (first, charge), |c, cr, got| {
                if got >= len || off + got as u64 >= cr.end_of_file {
                    return None;
                }
                let (want, charge) = chunk(c, rsize, c.max_read(), 0);
                let want = want.min((len - got).try_into().unwrap_or(u32::MAX));
                Some((want, charge.min(charge_for(want as usize))))
            })?;
            Ok((data, cr.end_of_file))
        })
    }

    /// Writes `data` at `off` of the existing file `path` in chunks of at
    /// most `wsize` bytes (and MaxWriteSize, and the credits). A short
    /// write from the server ends the operation with what was written.
    pub fn write_at(
        &mut self,
        path: &str,
        off: u64,
        data: &[u8],
        wsize: u32,
    ) -> SmbResult<Written> {
        let p = smb_path(path)?;
        self.run(|c| {
            let spec =
                OpenSpec::existing_file(access::FILE_WRITE_DATA | access::FILE_READ_ATTRIBUTES);
            let (max, _) = chunk(c, wsize, c.max_write(), 2);
            if data.len() <= max as usize {
                let w = WriteRequest {
                    offset: off,
                    file_id: FileId::RELATED,
                    data,
                };
                let req = Req::new(cmd::WRITE, true, charge_for(data.len()), |o| w.emit(o));
                let b = open_do_close(c, &p, spec, vec![req])?;
                let n = c.body(&b.middle[0], parse_write)? as u64;
                if n > data.len() as u64 {
                    return Err(WRITE_TOO_LONG);
                }
                c.note_bytes_written(n);
                return Ok(Written {
                    bytes: n,
                    attrs: b.closed,
                });
            }
            let sign = c.sign_requests();
            let r = c.exchange(vec![create_req_spec(&p, spec)], sign)?;
            let fid = c.body(&r[0], CreateResponse::parse)?.file_id;
            let mut done = 0usize;
            let res: SmbResult<()> = loop {
                if done >= data.len() {
                    break Ok(());
                }
                let (max, _) = chunk(c, wsize, c.max_write(), 0);
                let piece = &data[done..data.len().min(done + max as usize)];
                let w = WriteRequest {
                    offset: off + done as u64,
                    file_id: fid,
                    data: piece,
                };
                let req = Req::new(cmd::WRITE, false, charge_for(piece.len()), |o| w.emit(o));
                let n = match c.exchange(vec![req], sign) {
                    Ok(v) => match c.body(&v[0], parse_write) {
                        Ok(n) if n as usize > piece.len() => break Err(WRITE_TOO_LONG),
                        Ok(n) => n as usize,
                        Err(e) => break Err(e),
                    },
                    Err(e) => break Err(e),
                };
                c.note_bytes_written(n as u64);
                done += n.min(piece.len());
                if n < piece.len() {
                    break Ok(());
                }
            };
            if !c.is_connected() {
                res?;
                return Err(SmbError::Disconnected);
            }
            let r = c.exchange(vec![close_req_attrs(fid, false)], sign);
            res?;
            let attrs = c.body(&r?[0], parse_close_attrs)?;
            Ok(Written {
                bytes: done as u64,
                attrs,
            })
        })
    }

    /// Creates (or opens, per `disposition`) `path` as a file or directory
    /// and returns its attributes: CREATE + QUERY_INFO(All) + CLOSE.
    pub fn create(&mut self, path: &str, kind: OpenKind, disposition: u32) -> SmbResult<Created> {
        let p = smb_path(path)?;
        self.run(|c| {
            let spec = OpenSpec {
                desired_access: access::FILE_READ_ATTRIBUTES
                    | if kind == OpenKind::Directory {
                        0
                    } else {
                        access::FILE_WRITE_DATA
                    },
                kind,
                disposition,
                options: 0,
            };
            let q = QueryInfoRequest {
                info_type: info_type::FILE,
                class: info::class::ALL,
                output_len: out_len(c, 4096),
                input: &[],
                additional_info: 0,
                flags: 0,
                file_id: FileId::RELATED,
            };
            let b = open_do_close(
                c,
                &p,
                spec,
                vec![Req::new(cmd::QUERY_INFO, true, 1, |o| q.emit(o))],
            )?;
            let r = &b.middle[0];
            let mut stat = if r.hdr.status == status::BUFFER_OVERFLOW || r.ok().is_ok() {
                c.body(r, |m| info::parse_all(OutputResponse::parse(m)?.data))?
            } else {
                // The object exists; only the query failed: what the
                // CREATE said is enough.
                FileStat {
                    times: b.create.times,
                    attributes: b.create.attributes,
                    allocation_size: b.create.allocation_size,
                    end_of_file: b.create.end_of_file,
                    nlink: 1,
                    directory: b.create.attributes & 0x10 != 0,
                    ..FileStat::default()
                }
            };
            if let Some(a) = b.closed {
                stat.end_of_file = a.end_of_file;
                stat.times = a.times;
            }
            Ok(Created {
                create: b.create,
                stat,
            })
        })
    }

    /// Removes `path` (a file, or an empty directory): CREATE(DELETE) +
    /// SET_INFO(FileDispositionInformation) + CLOSE.
    pub fn delete(&mut self, path: &str, kind: OpenKind) -> SmbResult<()> {
        let p = smb_path(path)?;
        let info = setinfo::disposition_info(true);
        self.run(|c| {
            let desired = access::DELETE | access::FILE_READ_ATTRIBUTES;
            set_info_compound(c, &p, desired, kind, setinfo::class::DISPOSITION, &info)?;
            Ok(())
        })
    }

    /// Renames `old` to `new` (both share-relative), replacing a target
    /// that exists: CREATE(DELETE) + SET_INFO(FileRenameInformation) + CLOSE.
    pub fn rename(&mut self, old: &str, new: &str) -> SmbResult<()> {
        let po = smb_path(old)?;
        let pn = smb_path(new)?;
        let info = setinfo::rename_info(&pn, true);
        self.run(|c| {
            let desired = access::DELETE | access::FILE_READ_ATTRIBUTES;
            set_info_compound(
                c,
                &po,
                desired,
                OpenKind::Any,
                setinfo::class::RENAME,
                &info,
            )?;
            Ok(())
        })
    }

    /// Sets the size of the file `path` (truncate or extend with zeros):
    /// CREATE + SET_INFO(FileEndOfFileInformation) + CLOSE. Returns the
    /// attributes after the CLOSE.
    pub fn set_size(&mut self, path: &str, size: u64) -> SmbResult<Option<CloseAttrs>> {
        let p = smb_path(path)?;
        let info = setinfo::end_of_file_info(size);
        self.run(|c| {
            let desired = access::FILE_WRITE_DATA | access::FILE_READ_ATTRIBUTES;
            let class = setinfo::class::END_OF_FILE;
            set_info_compound(c, &p, desired, OpenKind::File, class, &info)
        })
    }
}

/// CREATE (`desired` access, an existing `kind`) + SET_INFO(`class`,
/// `info`) + CLOSE(POSTQUERY) on `path`, the compound behind delete,
/// rename and set_size. The SET_INFO's status is the answer; returns the
/// attributes after the CLOSE.
fn set_info_compound(
    c: &mut Connection,
    path: &str,
    desired: u32,
    kind: OpenKind,
    class: u8,
    info: &[u8],
) -> SmbResult<Option<CloseAttrs>> {
    let spec = OpenSpec {
        desired_access: desired,
        kind,
        disposition: FILE_OPEN,
        options: 0,
    };
    let b = open_do_close(c, path, spec, vec![set_info_req(class, info)])?;
    c.body(&b.middle[0], setinfo::parse_set_info)?;
    Ok(b.closed)
}

fn set_info_req(class: u8, buffer: &[u8]) -> Req {
    let s = SetInfoRequest {
        info_type: info_type::FILE,
        class,
        file_id: FileId::RELATED,
        buffer,
    };
    Req::new(cmd::SET_INFO, true, 1, |o| s.emit(o))
}

/// A READ chunk of [`Connection::read_file`]: as many whole 64 KiB credits
/// as MaxReadSize and the credits allow, at most 1 MiB. Returns (bytes,
/// credit charge).
fn whole_file_chunk(c: &Connection) -> (u32, u16) {
    let units = (c.max_read() / 65_536).clamp(1, c.max_charge() as u32);
    let len = (units * 65_536).min(c.max_read()).min(1 << 20);
    (len, len.div_ceil(65_536).max(1) as u16)
}

/// The READ loop of [`Connection::read_file`] and of a multi-chunk
/// [`Connection::read_at`]: CREATE + READ (`first`: bytes, credit charge,
/// at `off`) in one compound, then one READ after another at the end of
/// what came back, then CLOSE. After each reply, `next` gets the CREATE's
/// answer and the number of bytes so far, and returns the next chunk, or
/// `None` when the caller has what it asked for. The loop also ends when a
/// READ returns no data (0 bytes, or END_OF_FILE: short reads end only
/// there). A failed READ is the error, after the handle is closed if the
/// connection still stands. Returns the bytes and the CREATE's answer.
fn read_chunks(
    c: &mut Connection,
    path: &str,
    spec: OpenSpec,
    off: u64,
    first: (u32, u16),
    mut next: impl FnMut(&Connection, &CreateResponse, usize) -> Option<(u32, u16)>,
) -> SmbResult<(Vec<u8>, CreateResponse)> {
    let sign = c.sign_requests();
    let rd = ReadRequest {
        length: first.0,
        offset: off,
        file_id: FileId::RELATED,
        minimum: 0,
    };
    let reqs = vec![
        create_req_spec(path, spec),
        Req::new(cmd::READ, true, first.1, |o| rd.emit(o)),
    ];
    let r = c.exchange(reqs, sign)?;
    if r.len() != 2 {
        return Err(SmbError::Protocol("compound reply count"));
    }
    let cr = c.body(&r[0], CreateResponse::parse)?;
    let fid = cr.file_id;
    let mut data = Vec::new();
    let mut reply = r[1].clone();
    let mut asked = first.0;
    let res: SmbResult<()> = loop {
        if reply.hdr.status == status::END_OF_FILE {
            break Ok(());
        }
        let got = match c.body(&reply, ReadResponse::parse) {
            Ok(rr) if rr.data.len() > asked as usize => break Err(READ_TOO_LONG),
            Ok(rr) => rr.data,
            Err(e) => break Err(e),
        };
        let n = got.len();
        if data.try_reserve(n).is_err() || !c.admit(n) {
            break Err(SmbError::NoMemory("read"));
        }
        data.extend_from_slice(got);
        c.note_bytes_read(n as u64);
        if n == 0 {
            break Ok(());
        }
        let Some((len, charge)) = next(c, &cr, data.len()) else {
            break Ok(());
        };
        asked = len;
        let rd = ReadRequest {
            length: len,
            offset: off + data.len() as u64,
            file_id: fid,
            minimum: 0,
        };
        match c.exchange(
            vec![Req::new(cmd::READ, false, charge, |o| rd.emit(o))],
            sign,
        ) {
            Ok(mut v) => reply = v.remove(0),
            Err(e) => break Err(e),
        }
    };
    if c.is_connected() {
        let closed = c.close(fid);
        res?;
        closed?;
    } else {
        res?;
    }
    Ok((data, cr))
}

/// A READ reply with more data than its request's Length: Linux's
/// `smb2_readv_callback`/`handle_read_data` refuse it (EIO), and so do we,
/// before a byte of it is kept.
const READ_TOO_LONG: SmbError = SmbError::Protocol("read reply longer than asked");
/// A WRITE reply whose Count exceeds the bytes sent: believing it would
/// move the file position past data never written (EIO, as Linux).
const WRITE_TOO_LONG: SmbError = SmbError::Protocol("write reply counts more bytes than sent");

/// The data of one READ reply of at most `asked` bytes; END_OF_FILE is no
/// data.
fn read_reply(c: &mut Connection, r: &Reply, asked: u32) -> SmbResult<Vec<u8>> {
    if r.hdr.status == status::END_OF_FILE {
        return Ok(Vec::new());
    }
    let d = c.body(r, ReadResponse::parse)?.data;
    if d.len() > asked as usize {
        return Err(READ_TOO_LONG);
    }
    let d = d.to_vec();
    c.note_bytes_read(d.len() as u64);
    Ok(d)
}

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

mod data;
mod ea_queries;

pub use data::Written;

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

impl Connection {
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

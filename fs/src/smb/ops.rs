//! The client operations the filesystem layer uses, each built from one or
//! a few exchanges on a [`Connection`] and run through
//! [`Connection::run`] (connect on demand, reconnect and retry):
//!
//! | operation | frames (round trips) |
//! |---|---|
//! | [`Connection::list_dir`] | CREATE+QUERY_DIRECTORY, QUERY_DIRECTORY… until NO_MORE_FILES, CLOSE |
//! | [`Connection::stat`] | CREATE+QUERY_INFO(FileAllInformation)+CLOSE |
//! | [`Connection::query_wsl_eas`] | CREATE+QUERY_INFO(FileFullEaInformation, 4 names)+CLOSE |
//! | [`Connection::read_file`] | CREATE+READ, READ…, CLOSE |
//!
//! Paths are share-relative with `/` or `\` separators; the share root is
//! `""` or `"/"`.

use crate::smb::conn::{Connection, Reply, Req};
use crate::smb::wire::create::{
    access, options, parse_close, share, CloseRequest, CreateRequest, CreateResponse, FileId,
    FILE_OPEN,
};
use crate::smb::wire::dirinfo::{self, DirInfo};
use crate::smb::wire::ea::{self, WslEas};
use crate::smb::wire::info::{self, FileStat};
use crate::smb::wire::query::{
    info_type, qd_flags, OutputResponse, QueryDirectoryRequest, QueryInfoRequest,
};
use crate::smb::wire::read::{ReadRequest, ReadResponse};
use crate::smb::wire::{cmd, status};
use crate::smb::{SmbError, SmbResult};
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
/// QUERY_DIRECTORY output buffer (one credit).
const DIR_BUF: u32 = 65_536;

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
    let opts = match kind {
        OpenKind::Any => 0,
        OpenKind::Directory => options::DIRECTORY_FILE,
        OpenKind::File => options::NON_DIRECTORY_FILE,
    };
    let c = CreateRequest {
        desired_access: desired_access | access::SYNCHRONIZE,
        file_attributes: 0,
        share_access: share::ALL,
        disposition: FILE_OPEN,
        options: opts,
        path,
    };
    Req::new(cmd::CREATE, false, 1, |o| c.emit(o))
}

fn close_req(fid: FileId, related: bool) -> Req {
    Req::new(cmd::CLOSE, related, 1, |o| {
        CloseRequest { file_id: fid }.emit(o)
    })
}

fn qd_req(fid: FileId, class: u8, restart: bool, related: bool) -> Req {
    let q = QueryDirectoryRequest {
        class,
        flags: if restart { qd_flags::RESTART_SCANS } else { 0 },
        file_id: fid,
        pattern: "*",
        output_len: DIR_BUF,
    };
    Req::new(cmd::QUERY_DIRECTORY, related, 1, |o| q.emit(o))
}

/// Entries of one QUERY_DIRECTORY reply: `None` at the end of the listing.
fn dir_page(c: &mut Connection, r: &Reply, class: u8) -> SmbResult<Option<Vec<DirInfo>>> {
    if r.hdr.status == status::NO_MORE_FILES {
        return Ok(None);
    }
    let v = c.body(r, |m| dirinfo::parse(class, OutputResponse::parse(m)?.data))?;
    Ok(Some(v))
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
        let r = self.exchange(vec![qd_req(fid, class, restart, false)], sign)?;
        dir_page(self, &r[0], class)
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
                qd_req(FileId::RELATED, class, true, true),
            ];
            let r = c.exchange(reqs, sign)?;
            if r.len() != 2 {
                return Err(SmbError::Protocol("compound reply count"));
            }
            let fid = c.body(&r[0], CreateResponse::parse)?.file_id;
            let mut all = Vec::new();
            let mut page = dir_page(c, &r[1], class);
            let res = loop {
                match page {
                    Ok(Some(v)) => all.extend(v),
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
                page = c.query_directory(fid, class, false);
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
                output_len: 65_535,
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

    /// The whole contents of a file: CREATE + READ, further READs until end
    /// of file, CLOSE.
    pub fn read_file(&mut self, path: &str) -> SmbResult<Vec<u8>> {
        let p = smb_path(path)?;
        self.run(|c| {
            let sign = c.sign_requests();
            let chunk_for = |c: &Connection| -> (u32, u16) {
                let units = (c.max_read() / 65_536).clamp(1, c.max_charge() as u32);
                let len = (units * 65_536).min(c.max_read()).min(1 << 20);
                (len, len.div_ceil(65_536).max(1) as u16)
            };
            let (len, charge) = chunk_for(c);
            let rd = ReadRequest {
                length: len,
                offset: 0,
                file_id: FileId::RELATED,
                minimum: 0,
            };
            let reqs = vec![
                create_req(
                    &p,
                    access::FILE_READ_DATA | access::FILE_READ_ATTRIBUTES,
                    OpenKind::File,
                ),
                Req::new(cmd::READ, true, charge, |o| rd.emit(o)),
            ];
            let r = c.exchange(reqs, sign)?;
            if r.len() != 2 {
                return Err(SmbError::Protocol("compound reply count"));
            }
            let fid = c.body(&r[0], CreateResponse::parse)?.file_id;
            let mut data = Vec::new();
            let mut reply = r[1].clone();
            let res: SmbResult<()> = loop {
                if reply.hdr.status == status::END_OF_FILE {
                    break Ok(());
                }
                let rr = match c.body(&reply, ReadResponse::parse) {
                    Ok(rr) => rr,
                    Err(e) => break Err(e),
                };
                let got = rr.data.len();
                data.extend_from_slice(rr.data);
                c.note_bytes_read(got as u64);
                if got == 0 {
                    break Ok(());
                }
                let (len, charge) = chunk_for(c);
                let rd = ReadRequest {
                    length: len,
                    offset: data.len() as u64,
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
            Ok(data)
        })
    }
}

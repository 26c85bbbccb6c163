//! The data operations of [`Connection`]: whole-file and ranged reads,
//! ranged writes, each in chunks the negotiated sizes, `rsize`/`wsize` and
//! the credits allow (the frames are the table in [`super`]).
//!
//! Touches: what `ops` touches (the connection's exchanges); safe code.

use super::*;

/// The result of [`Connection::write_at`].
#[derive(Clone, Copy, Debug)]
pub struct Written {
    pub bytes: u64,
    /// The file's attributes after the CLOSE (the server's size and mtime),
    /// when the server reports them.
    pub attrs: Option<CloseAttrs>,
}

impl Connection {
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

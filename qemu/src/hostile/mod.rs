//! A hostile SMB2 server for tests: a small, honest server over one
//! in-memory share, speaking SMB 2.1 unsigned or ([`Proto`]) 3.0 or 3.1.1
//! with signing (it knows the password, so it derives the session's keys
//! as a real server does and signs what it bends: the attacker is the
//! server itself; no encryption), whose replies a [`Case`] bends the way a
//! malicious server or a broken one would — a listing that never ends,
//! READ replies longer than asked or past the end of the file, WRITE
//! counts above the bytes sent, names no directory may hold, credits
//! drained to zero, interim replies forever or every 2 s, a reply's data
//! offset pointing into its header or fixed part or past its end, a file
//! that never ends, EA names Linux cannot show — and a per-reply hook
//! ([`Server::tamper`]) for anything else a test wants to script. With
//! [`Server::require_mic`] it behaves as a Windows server that requires
//! the NTLM MIC (a timestamp in its CHALLENGE, STATUS_LOGON_FAILURE for an
//! AUTHENTICATE whose MIC is missing or does not verify). [`mitm`]
//! is the other attacker: a proxy in front of a real server that rewrites
//! the client's NEGOTIATE or strips the encryption flags of the server's
//! SESSION_SETUP and TREE_CONNECT responses.
//!
//! The server speaks over any byte stream: [`serve_tcp`] listens on a
//! loopback port (host tests), the `hostile-smb` binary serves
//! stdin/stdout (QEMU's `guestfwd=…-cmd:` for the guest). It touches only
//! loopback sockets and the streams it is given.

pub mod mitm;
pub mod sign;
pub mod wire;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use wire::{cmd, status, ReqHdr, HEADER_LEN};

/// How the server misbehaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Case {
    /// No misbehaviour: an honest 2.1 server.
    Honest,
    /// QUERY_DIRECTORY never answers STATUS_NO_MORE_FILES: every page
    /// holds new names, for ever.
    EndlessListing,
    /// Every READ returns this many bytes more than its Length asked.
    ReadLonger(u32),
    /// READ returns data past the end of the file (the file's size stays
    /// what CREATE and QUERY_INFO say); `extra` bytes of it.
    ReadPastEof(u32),
    /// Every WRITE reply counts this many bytes more than were sent.
    WriteCountMore(u32),
    /// The listing holds these names (UTF-16 code units) beside the
    /// share's own entries.
    BadNames(Vec<Vec<u16>>),
    /// After the first `after` requests of the first connection, every
    /// reply grants 0 credits; later connections are honest.
    DrainCredits { after: u64 },
    /// Like [`Case::DrainCredits`], on every connection.
    DrainCreditsAlways { after: u64 },
    /// After the mount (handshake and the root's stat), every request gets
    /// STATUS_PENDING interim replies and never a final one.
    PendingForever,
    /// QUERY_DIRECTORY output buffers longer than the client asked for.
    ListingOversized,
    /// The data offset of every `cmd` reply is `off` (from the start of
    /// the header) while the data stays where it was: READ's DataOffset,
    /// QUERY_INFO's and QUERY_DIRECTORY's OutputBufferOffset,
    /// SESSION_SETUP's SecurityBufferOffset, IOCTL's OutputOffset,
    /// NEGOTIATE's NegotiateContextOffset (3.1.1).
    /// NEGOTIATE, SESSION_SETUP and IOCTL (VALIDATE_NEGOTIATE_INFO) are
    /// bent during the mount, the others after it.
    BadOffset { cmd: u16, off: u32 },
    /// After the mount, every request gets a STATUS_PENDING interim reply
    /// every `every_ms`, for ever, and never a final one.
    PendingSlow { every_ms: u64 },
    /// The share also holds `endless.bin`, whose EndOfFile is 2^62 and
    /// whose READs return what is asked (byte `i` is `i % 251`) until
    /// `stop_after` bytes, then STATUS_END_OF_FILE.
    EndlessFile { stop_after: u64 },
    /// QUERY_INFO(FileFullEaInformation) of any file answers an EA of each
    /// of these names (value `v`), in order.
    EaNames(Vec<Vec<u8>>),
    /// QUERY_INFO(FileFullEaInformation) answers STATUS_NO_EAS_ON_FILE,
    /// and the third EA query chain (CREATE + QUERY_INFO(FileFullEa) +
    /// CLOSE, one frame) of a connection gets a reply frame one member
    /// short: its CLOSE is never answered. A client that asks its first
    /// EA query alone and then a batch meets it in the batch's second
    /// chain.
    ShortBatch,
    /// Every EA query chain (CREATE + QUERY_INFO(FileFullEa) + CLOSE, one
    /// frame) gets a STATUS_PENDING interim reply to its CREATE first (an
    /// open parked on another client's oplock or lease break), then its
    /// replies in full; QUERY_INFO(FileFullEaInformation) answers
    /// STATUS_NO_EAS_ON_FILE.
    PendingEaCreate,
}

/// Size the server claims for `endless.bin` ([`Case::EndlessFile`]).
pub const ENDLESS_SIZE: u64 = 1 << 62;
/// The name of the endless file.
pub const ENDLESS_NAME: &str = "endless.bin";

/// Byte `i` of the endless file.
pub fn endless_byte(i: u64) -> u8 {
    (i % 251) as u8
}

impl Case {
    /// Every case by the name the `hostile-smb` binary takes.
    pub fn by_name(name: &str) -> Option<Case> {
        Some(match name {
            "honest" => Case::Honest,
            "endless-listing" => Case::EndlessListing,
            "read-longer" => Case::ReadLonger(100),
            "read-past-eof" => Case::ReadPastEof(100),
            "write-count-more" => Case::WriteCountMore(1000),
            "bad-names" => Case::BadNames(vec![wire::utf16("a/b")]),
            "drain-credits" => Case::DrainCredits { after: 8 },
            "drain-credits-always" => Case::DrainCreditsAlways { after: 0 },
            "pending-forever" => Case::PendingForever,
            "listing-oversized" => Case::ListingOversized,
            "read-offset-header" => Case::BadOffset {
                cmd: cmd::READ,
                off: 0,
            },
            "query-info-offset-zero" => Case::BadOffset {
                cmd: cmd::QUERY_INFO,
                off: 0,
            },
            "pending-slow" => Case::PendingSlow { every_ms: 2000 },
            "endless-file" => Case::EndlessFile {
                stop_after: 1 << 30,
            },
            "endless-file-small" => Case::EndlessFile {
                stop_after: 4 << 20,
            },
            "ea-empty-name" => Case::EaNames(vec![b"good".to_vec(), Vec::new()]),
            "ea-bad-names" => {
                Case::EaNames(vec![b"x\0y".to_vec(), vec![b'n'; 251], b"good".to_vec()])
            }
            "short-batch" => Case::ShortBatch,
            "pending-ea-create" => Case::PendingEaCreate,
            _ => return None,
        })
    }

    /// The names [`Case::by_name`] knows.
    pub const NAMES: [&'static str; 19] = [
        "honest",
        "endless-listing",
        "read-longer",
        "read-past-eof",
        "write-count-more",
        "bad-names",
        "drain-credits",
        "drain-credits-always",
        "pending-forever",
        "listing-oversized",
        "read-offset-header",
        "query-info-offset-zero",
        "pending-slow",
        "endless-file",
        "endless-file-small",
        "ea-empty-name",
        "ea-bad-names",
        "short-batch",
        "pending-ea-create",
    ];
}

/// Requests of a mount: NEGOTIATE, 2 SESSION_SETUP, TREE_CONNECT, and the
/// root's CREATE+QUERY_INFO+CLOSE (a signed 3.0 mount adds one IOCTL,
/// VALIDATE_NEGOTIATE_INFO).
const MOUNT_REQUESTS: u64 = 7;

/// The password the server checks nothing against but derives the
/// session key from (the tests mount with `username=u,password=p`).
pub const PASSWORD: &str = "p";

/// The dialect and signing the server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proto {
    /// 0x0210, 0x0300 or 0x0311.
    pub dialect: u16,
    /// Require signing and sign every reply after the session setup.
    pub sign: bool,
}

impl Proto {
    /// SMB 2.1, unsigned (the default).
    pub const SMB21: Proto = Proto {
        dialect: 0x0210,
        sign: false,
    };
    /// SMB 3.0, signed.
    pub const SMB30_SIGNED: Proto = Proto {
        dialect: 0x0300,
        sign: true,
    };
    /// SMB 3.1.1, signed.
    pub const SMB311_SIGNED: Proto = Proto {
        dialect: 0x0311,
        sign: true,
    };
}

/// One object of the share.
#[derive(Clone, Debug)]
struct Node {
    dir: bool,
    data: Vec<u8>,
    ino: u64,
    /// The size claimed instead of `data`'s (the endless file).
    claimed: Option<u64>,
}

impl Node {
    fn size(&self) -> u64 {
        self.claimed.unwrap_or(self.data.len() as u64)
    }
}

/// A per-reply hook: the request's header and the reply message (header
/// included), to rewrite at will before it is sent.
pub type Tamper = Arc<dyn Fn(&ReqHdr, &mut Vec<u8>) + Send + Sync>;

/// The server: its share and its misbehaviour, shared by every
/// connection it serves.
pub struct Server {
    pub case: Case,
    pub proto: Proto,
    share: Mutex<BTreeMap<String, Node>>,
    /// Connections served so far.
    pub connections: AtomicU64,
    /// Requests answered, all connections together.
    pub requests: AtomicU64,
    /// Rewrites each reply last (see [`Tamper`]).
    pub tamper: Option<Tamper>,
    /// Behave as a Windows server that requires the NTLM MIC: the
    /// CHALLENGE carries a timestamp, and an AUTHENTICATE without a MIC
    /// that verifies gets STATUS_LOGON_FAILURE.
    pub require_mic: bool,
}

/// Per-connection state.
struct Conn {
    /// 0-based index of this connection.
    index: u64,
    requests: u64,
    handshaken: bool,
    next_fid: u64,
    /// Open handles: fid → path.
    open: BTreeMap<u64, String>,
    last_fid: u64,
    /// Names handed out by an endless listing.
    listed: u64,
    /// The 3.1.1 preauth integrity hash so far.
    preauth: [u8; 64],
    /// The signing key, once the session is set up (signed protos).
    key: Option<[u8; 16]>,
    /// The NTLMSSP NEGOTIATE and CHALLENGE of this connection (the MIC
    /// covers them).
    ntlm_negotiate: Vec<u8>,
    ntlm_challenge: Vec<u8>,
    /// EA query chains (one frame each) answered so far.
    ea_chains: u64,
}

impl Conn {
    fn new(index: u64) -> Conn {
        Conn {
            index,
            requests: 0,
            handshaken: false,
            next_fid: 1,
            open: BTreeMap::new(),
            last_fid: 0,
            listed: 0,
            preauth: [0; 64],
            key: None,
            ntlm_negotiate: Vec::new(),
            ntlm_challenge: Vec::new(),
            ea_chains: 0,
        }
    }
}

/// Reply frame(s) to one request frame; `None`: close the connection.
type Frames = Option<Vec<Vec<u8>>>;

impl Server {
    /// A server for `case` with `files` (`name`, bytes) and `dirs` at the
    /// share's root.
    pub fn new(case: Case, files: &[(&str, &[u8])], dirs: &[&str]) -> Arc<Server> {
        let mut share = BTreeMap::new();
        share.insert(
            String::new(),
            Node {
                dir: true,
                data: Vec::new(),
                ino: 1,
                claimed: None,
            },
        );
        for (i, (n, d)) in files.iter().enumerate() {
            let node = Node {
                dir: false,
                data: d.to_vec(),
                ino: 100 + i as u64,
                claimed: None,
            };
            share.insert(n.to_string(), node);
        }
        for (i, n) in dirs.iter().enumerate() {
            let node = Node {
                dir: true,
                data: Vec::new(),
                ino: 1000 + i as u64,
                claimed: None,
            };
            share.insert(n.to_string(), node);
        }
        if matches!(case, Case::EndlessFile { .. }) {
            let node = Node {
                dir: false,
                data: Vec::new(),
                ino: 99,
                claimed: Some(ENDLESS_SIZE),
            };
            share.insert(ENDLESS_NAME.to_string(), node);
        }
        Arc::new(Server {
            case,
            proto: Proto::SMB21,
            share: Mutex::new(share),
            connections: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            tamper: None,
            require_mic: false,
        })
    }

    /// The same server with a per-reply hook.
    pub fn with_tamper(
        case: Case,
        files: &[(&str, &[u8])],
        dirs: &[&str],
        tamper: Tamper,
    ) -> Arc<Server> {
        let s = Server::new(case, files, dirs);
        let mut s = Arc::try_unwrap(s).ok().expect("fresh server");
        s.tamper = Some(tamper);
        Arc::new(s)
    }

    /// The same server speaking `proto`.
    pub fn with_proto(
        case: Case,
        files: &[(&str, &[u8])],
        dirs: &[&str],
        proto: Proto,
    ) -> Arc<Server> {
        let s = Server::new(case, files, dirs);
        let mut s = Arc::try_unwrap(s).ok().expect("fresh server");
        s.proto = proto;
        Arc::new(s)
    }

    /// Requests of a mount on this server (see [`MOUNT_REQUESTS`]).
    fn mount_requests(&self) -> u64 {
        MOUNT_REQUESTS + u64::from(self.proto.sign && self.proto.dialect == 0x0300)
    }

    /// The bytes of file `name` now (what the client's writes left).
    pub fn file(&self, name: &str) -> Option<Vec<u8>> {
        self.share.lock().unwrap().get(name).map(|n| n.data.clone())
    }

    /// Serves one connection until the peer closes or the case says to
    /// stop. Errors are the stream's.
    pub fn serve(&self, r: &mut impl Read, w: &mut impl Write) -> std::io::Result<()> {
        let index = self.connections.fetch_add(1, Ordering::SeqCst);
        let mut c = Conn::new(index);
        loop {
            let mut h = [0u8; 4];
            if r.read_exact(&mut h).is_err() {
                return Ok(());
            }
            let n = u32::from_be_bytes(h) as usize & 0x00ff_ffff;
            let mut frame = vec![0u8; n];
            r.read_exact(&mut frame)?;
            if let Case::PendingSlow { every_ms } = self.case {
                if c.handshaken && c.requests >= self.mount_requests() {
                    return self.pending_slow(&frame, every_ms, w);
                }
            }
            let Some(replies) = self.answer(&mut c, &frame) else {
                return Ok(());
            };
            for f in replies {
                let mut out = Vec::with_capacity(4 + f.len());
                out.extend_from_slice(&(f.len() as u32).to_be_bytes());
                out.extend_from_slice(&f);
                w.write_all(&out)?;
            }
            w.flush()?;
        }
    }

    /// [`Case::PendingSlow`]: an interim reply to the first request of
    /// `frame` every `every_ms` until the peer goes away.
    fn pending_slow(&self, frame: &[u8], every_ms: u64, w: &mut impl Write) -> std::io::Result<()> {
        let Some(h) = wire::split(frame).first().and_then(|m| ReqHdr::parse(m)) else {
            return Ok(());
        };
        self.requests.fetch_add(1, Ordering::SeqCst);
        let mut r = wire::reply_header(&h, status::PENDING, 1, Some(h.message_id));
        r.extend_from_slice(&wire::error_body());
        let mut out = (r.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&r);
        loop {
            w.write_all(&out)?;
            w.flush()?;
            std::thread::sleep(std::time::Duration::from_millis(every_ms));
        }
    }

    /// Credits granted in the reply to `h`: 64 from an honest server; a
    /// draining one grants a few more than charged (so the client never
    /// hoards many) until `after` requests, then none.
    fn credits(&self, c: &Conn, h: &ReqHdr) -> u16 {
        let (after, this_conn) = match self.case {
            Case::DrainCredits { after } => (after, c.index == 0),
            Case::DrainCreditsAlways { after } => (after, true),
            _ => return 64,
        };
        if this_conn && c.requests > after {
            0
        } else {
            h.credit_charge.max(1) + 2
        }
    }

    fn answer(&self, c: &mut Conn, frame: &[u8]) -> Frames {
        let msgs = wire::split(frame);
        let cmds: Vec<u16> = msgs
            .iter()
            .filter_map(|m| ReqHdr::parse(m))
            .map(|h| h.command)
            .collect();
        let ea_chain = cmds == [cmd::CREATE, cmd::QUERY_INFO, cmd::CLOSE]
            && msgs.get(1).and_then(|m| m.get(HEADER_LEN + 3)) == Some(&15);
        if ea_chain {
            c.ea_chains += 1;
        }
        let short = self.case == Case::ShortBatch && ea_chain && c.ea_chains == 3;
        let first = msgs.first().and_then(|m| ReqHdr::parse(m));
        let mut out = Vec::new();
        for m in msgs {
            let h = ReqHdr::parse(m)?;
            c.requests += 1;
            self.requests.fetch_add(1, Ordering::SeqCst);
            if c.handshaken && c.requests > MOUNT_REQUESTS && self.case == Case::PendingForever {
                // An interim reply now and then, never the final one.
                let mut r = wire::reply_header(&h, status::PENDING, 1, Some(h.message_id));
                r.extend_from_slice(&wire::error_body());
                return Some(vec![r; 100]);
            }
            let v311 = self.proto.dialect == 0x0311;
            let handshake = matches!(h.command, cmd::NEGOTIATE | cmd::SESSION_SETUP);
            if v311 && handshake {
                sign::preauth_update(&mut c.preauth, m);
            }
            let (st, body) = self.reply(c, &h, m);
            let mut r = wire::reply_header(&h, st, self.credits(c, &h), None);
            if h.command == cmd::SESSION_SETUP {
                r[40..48].copy_from_slice(&0x1234u64.to_le_bytes());
            }
            if h.command == cmd::TREE_CONNECT {
                r[36..40].copy_from_slice(&1u32.to_le_bytes());
            }
            r.extend_from_slice(&body);
            if v311 && (h.command == cmd::NEGOTIATE || st == status::MORE_PROCESSING_REQUIRED) {
                // Every handshake reply but the last is in the hash.
                sign::preauth_update(&mut c.preauth, &r);
            }
            if let Case::BadOffset { cmd, off } = self.case {
                // The mount's own QUERY_INFO (the root's) is answered
                // honestly, so that the bent reply meets a user's command.
                let after_mount = c.requests > self.mount_requests();
                let mount_only = matches!(cmd, cmd::NEGOTIATE | cmd::SESSION_SETUP | cmd::IOCTL);
                if h.command == cmd && (after_mount || mount_only) {
                    wire::set_data_offset(&mut r, off);
                }
            }
            if let Some(t) = &self.tamper {
                t(&h, &mut r);
            }
            out.push(r);
        }
        if short {
            out.pop();
        }
        let mut frame = wire::chain(out);
        if let Some(key) = c.key {
            wire::for_each_message(&mut frame, |m| sign::sign(&key, m));
        }
        if self.case == Case::PendingEaCreate && ea_chain {
            let h = first?;
            let mut r = wire::reply_header(&h, status::PENDING, 1, Some(h.message_id));
            r.extend_from_slice(&wire::error_body());
            return Some(vec![r, frame]);
        }
        Some(vec![frame])
    }

    fn path_of(&self, c: &Conn, m: &[u8], at: usize) -> Option<String> {
        let fid = wire::u64_at(m, HEADER_LEN + at);
        let fid = if fid == u64::MAX { c.last_fid } else { fid };
        c.open.get(&fid).cloned()
    }

    /// Status and body of the reply to one request.
    fn reply(&self, c: &mut Conn, h: &ReqHdr, m: &[u8]) -> (u32, Vec<u8>) {
        let b = &m[HEADER_LEN.min(m.len())..];
        let err = |st| (st, wire::error_body());
        match h.command {
            cmd::NEGOTIATE => (
                status::SUCCESS,
                wire::negotiate_body_for(self.proto.dialect, self.proto.sign, 1 << 16),
            ),
            cmd::SESSION_SETUP => {
                if c.requests <= 2 {
                    // A FILETIME in 2023, when a Windows-like server wants
                    // a MIC (it asks with a timestamp).
                    let ts = self.require_mic.then_some(133_200_000_000_000_000);
                    let t = wire::ntlm_challenge_at(ts);
                    let at = m.windows(8).position(|w| w == b"NTLMSSP\0");
                    c.ntlm_negotiate = at.map_or(Vec::new(), |a| m[a..].to_vec());
                    c.ntlm_challenge = t.clone();
                    (status::MORE_PROCESSING_REQUIRED, wire::session_body(&t))
                } else {
                    if self.require_mic {
                        let mic =
                            sign::mic_verifies(m, &c.ntlm_negotiate, &c.ntlm_challenge, PASSWORD);
                        if mic != Some(true) {
                            return err(status::LOGON_FAILURE);
                        }
                    }
                    if self.proto.sign {
                        if let Some(k) = sign::session_key(m, PASSWORD) {
                            c.key = Some(match self.proto.dialect {
                                0x0311 => sign::signing_key_311(&k, &c.preauth),
                                _ => sign::signing_key_30(&k),
                            });
                        }
                    }
                    (status::SUCCESS, wire::session_body(&[]))
                }
            }
            cmd::TREE_CONNECT => {
                c.handshaken = true;
                (status::SUCCESS, wire::tree_body())
            }
            cmd::TREE_DISCONNECT | cmd::LOGOFF | cmd::ECHO => (status::SUCCESS, wire::small_body()),
            cmd::CREATE => {
                let off = wire::u16_at(b, 44) as usize;
                let len = wire::u16_at(b, 46) as usize;
                let path = wire::utf16_at(m, off, len).replace('\\', "/");
                let disposition = wire::u32_at(b, 36);
                let mut share = self.share.lock().unwrap();
                if !share.contains_key(&path) {
                    // FILE_CREATE (2), FILE_OPEN_IF (3), FILE_OVERWRITE_IF (5).
                    if ![2, 3, 5].contains(&disposition) {
                        return err(status::OBJECT_NAME_NOT_FOUND);
                    }
                    let dir = wire::u32_at(b, 40) & 1 != 0;
                    let ino = 5000 + share.len() as u64;
                    let node = Node {
                        dir,
                        data: Vec::new(),
                        ino,
                        claimed: None,
                    };
                    share.insert(path.clone(), node);
                } else if disposition == 2 {
                    return err(status::OBJECT_NAME_COLLISION);
                }
                let node = &share[&path];
                let fid = c.next_fid;
                c.next_fid += 1;
                c.last_fid = fid;
                c.open.insert(fid, path);
                (
                    status::SUCCESS,
                    wire::create_body(fid, node.dir, node.size()),
                )
            }
            cmd::CLOSE => {
                let path = self.path_of(c, m, 8);
                let postquery = wire::u16_at(b, 2) & 1 != 0;
                let share = self.share.lock().unwrap();
                let node = path.as_ref().and_then(|p| share.get(p));
                let (dir, size) = node.map_or((false, 0), |n| (n.dir, n.size()));
                (status::SUCCESS, wire::close_body(postquery, dir, size))
            }
            cmd::QUERY_INFO => {
                let Some(path) = self.path_of(c, m, 24) else {
                    return err(status::INVALID_PARAMETER);
                };
                if let (Case::EaNames(names), Some(&15)) = (&self.case, b.get(3)) {
                    return (status::SUCCESS, wire::output_body(&wire::full_eas(names)));
                }
                let no_eas = matches!(self.case, Case::ShortBatch | Case::PendingEaCreate);
                if no_eas && b.get(3) == Some(&15) {
                    return err(status::NO_EAS_ON_FILE);
                }
                if b.get(3) != Some(&18) {
                    return err(status::NOT_SUPPORTED);
                }
                let share = self.share.lock().unwrap();
                let n = &share[&path];
                let info = wire::all_info(n.dir, n.size(), n.ino);
                (status::SUCCESS, wire::output_body(&info))
            }
            cmd::QUERY_DIRECTORY => self.list(c, b, m),
            cmd::READ => {
                let len = wire::u32_at(b, 4) as usize;
                let off = wire::u64_at(b, 8) as usize;
                let Some(path) = self.path_of(c, m, 16) else {
                    return err(status::INVALID_PARAMETER);
                };
                let share = self.share.lock().unwrap();
                let node = &share[&path];
                let mut out = match (&self.case, node.claimed) {
                    (Case::EndlessFile { stop_after }, Some(_)) => {
                        let end = (off as u64).saturating_add(len as u64).min(*stop_after);
                        (off as u64..end.max(off as u64))
                            .map(endless_byte)
                            .collect()
                    }
                    _ => node.data.get(off..).unwrap_or(&[]).to_vec(),
                };
                out.truncate(len);
                match self.case {
                    Case::ReadLonger(extra) => out.resize(len + extra as usize, b'L'),
                    Case::ReadPastEof(extra) => {
                        out.extend(std::iter::repeat_n(b'P', extra as usize))
                    }
                    _ => {}
                }
                if out.is_empty() {
                    return err(status::END_OF_FILE);
                }
                (status::SUCCESS, wire::read_body(&out))
            }
            cmd::WRITE => {
                let doff = wire::u16_at(b, 2) as usize;
                let len = wire::u32_at(b, 4) as usize;
                let off = wire::u64_at(b, 8) as usize;
                let Some(path) = self.path_of(c, m, 16) else {
                    return err(status::INVALID_PARAMETER);
                };
                let data = m.get(doff..doff + len).unwrap_or(&[]).to_vec();
                let mut share = self.share.lock().unwrap();
                let f = &mut share.get_mut(&path).expect("open path exists").data;
                if f.len() < off + data.len() {
                    f.resize(off + data.len(), 0);
                }
                f[off..off + data.len()].copy_from_slice(&data);
                let more = match self.case {
                    Case::WriteCountMore(n) => n,
                    _ => 0,
                };
                (status::SUCCESS, wire::write_body(len as u32 + more))
            }
            cmd::SET_INFO => (status::SUCCESS, wire::set_info_body()),
            // FSCTL_VALIDATE_NEGOTIATE_INFO, answered as the NEGOTIATE was.
            cmd::IOCTL if wire::u32_at(b, 4) == 0x0014_0204 => (
                status::SUCCESS,
                wire::validate_negotiate_body(self.proto.dialect, self.proto.sign),
            ),
            cmd::IOCTL => err(status::NOT_SUPPORTED),
            _ => err(status::NOT_SUPPORTED),
        }
    }

    /// QUERY_DIRECTORY: the directory's children in one page, then
    /// NO_MORE_FILES (as the case allows).
    fn list(&self, c: &mut Conn, b: &[u8], m: &[u8]) -> (u32, Vec<u8>) {
        let restart = b.get(3).is_some_and(|f| f & 1 != 0);
        let asked = wire::u32_at(b, 28) as usize;
        let Some(dir) = self.path_of(c, m, 8) else {
            return (status::INVALID_PARAMETER, wire::error_body());
        };
        if self.case == Case::EndlessListing {
            // Fill the page the client asked for with fresh names.
            let mut page = Vec::new();
            // 104 fixed bytes + 34 of name, 8-aligned: 144 per record.
            while (page.len() + 1) * 144 <= asked {
                c.listed += 1;
                page.push((
                    wire::utf16(&format!("endless-{:09}", c.listed)),
                    false,
                    1,
                    c.listed + 10_000,
                ));
            }
            return (
                status::SUCCESS,
                wire::output_body(&wire::dir_records(&page)),
            );
        }
        if !restart && c.listed > 0 {
            c.listed = 0;
            return (status::NO_MORE_FILES, wire::error_body());
        }
        c.listed = 1;
        let share = self.share.lock().unwrap();
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut page: Vec<(Vec<u16>, bool, u64, u64)> = vec![
            (wire::utf16("."), true, 0, 1),
            (wire::utf16(".."), true, 0, 1),
        ];
        for (p, n) in share.iter() {
            if let Some(name) = p.strip_prefix(&prefix) {
                if !name.is_empty() && !name.contains('/') {
                    page.push((wire::utf16(name), n.dir, n.size(), n.ino));
                }
            }
        }
        if let Case::BadNames(names) = &self.case {
            for (i, n) in names.iter().enumerate() {
                page.push((n.clone(), false, 0, 20_000 + i as u64));
            }
        }
        let mut data = wire::dir_records(&page);
        if self.case == Case::ListingOversized {
            data.resize(asked + 4096, 0);
        }
        (status::SUCCESS, wire::output_body(&data))
    }
}

/// One connection to a [`Server`] without a socket: frames in, frames out
/// (fuzz harnesses and in-process tests).
pub struct MemConn {
    server: Arc<Server>,
    conn: Conn,
}

impl MemConn {
    /// A new connection (counted like an accepted one).
    pub fn new(server: Arc<Server>) -> MemConn {
        let index = server.connections.fetch_add(1, Ordering::SeqCst);
        let conn = Conn::new(index);
        MemConn { server, conn }
    }

    /// The reply frames (without the 4-byte framing) to one request frame;
    /// `None`: the server closes the connection.
    pub fn answer(&mut self, frame: &[u8]) -> Option<Vec<Vec<u8>>> {
        self.server.answer(&mut self.conn, frame)
    }
}

/// A server on a loopback port; every connection gets a thread. The
/// listener lives as long as the returned handle.
pub struct Listening {
    pub addr: SocketAddr,
    pub server: Arc<Server>,
}

/// Serves `server` on 127.0.0.1 (a free port) in background threads.
pub fn serve_tcp(server: Arc<Server>) -> std::io::Result<Listening> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let s = server.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(stream) = conn else { continue };
            let s = s.clone();
            std::thread::spawn(move || serve_stream(&s, stream));
        }
    });
    Ok(Listening { addr, server })
}

fn serve_stream(s: &Server, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(mut r) = stream.try_clone() else {
        return;
    };
    let mut w = stream;
    let _ = s.serve(&mut r, &mut w);
}

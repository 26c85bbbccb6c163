//! The fuzz harness bodies: run by the cargo-fuzz targets in `fuzz/`
//! (nightly) and by the stable replay/mutation test `fs/tests/fuzz_replay.rs`.
//! Its own crate, above `fs`, `smb` and `qemu` (whose `hostile` server it
//! drives), so that neither side reads the other's files.
//!
//! Each harness takes arbitrary bytes and drives one untrusted-input surface:
//! the SMB2 reply parsers ([`smb_wire`]), the connection state machine behind
//! a scripted fake server ([`smb_conn`]), the NTLMSSP CHALLENGE parser and
//! the AUTHENTICATE builder ([`ntlm`]), the path walk with short op
//! sequences on a fresh tmpfs ([`path_walk`]), the SMB3 transform header
//! and decryption with a known key ([`smb_transform`]), the cifs
//! mount-option parser ([`cifs_opts`]), and listed names on their way into
//! the dcache behind `qemu::hostile`'s in-memory server
//! ([`cifs_listing`]), and the structure-aware reply fuzzer: whole reply
//! sequences, `arbitrary`-derived, through that server's transport to the
//! full client ([`replies`]); the kernel command-line parser has its
//! harness beside the parser, in the kernel's library
//! (`kernel::fuzz_cmdline::harness`). Errors are fine; a panic (or an
//! abort, e.g. an allocation the input sized) is a bug. The few checks that
//! assert are facts every input must keep (noted where they are).
//!
//! Touches only the public `fs` API. No I/O.

pub use fuzzmutate as mutate;
pub mod replies;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use fs::vfs::{OpenFlags, Vfs};
use smb::crypto::{PreauthHash, SignAlg, Signer};
use smb::ntlm::{self, Challenge, Credentials};
use smb::transport::{frame_len, FnTransport};
use smb::wire::compound::split;
use smb::wire::create::{parse_close, CreateResponse, FileId, FileTimes};
use smb::wire::dirinfo;
use smb::wire::ea::{parse_full_ea_list, WslEas};
use smb::wire::error_response::ErrorResponse;
use smb::wire::from_utf16le;
use smb::wire::header::{flags, Header, HeaderRepr};
use smb::wire::info;
use smb::wire::negotiate::{dialect, NegotiateResponse};
use smb::wire::netbios;
use smb::wire::query::OutputResponse;
use smb::wire::read::ReadResponse;
use smb::wire::reply::{Reply, ReplyBody};
use smb::wire::session::{parse_small, SessionSetupResponse};
use smb::wire::tree::TreeConnectResponse;
use smb::{Clock, Config, Connection, Connector, Signing, Transport, TransportError};

/// The targets, by the names of their `fuzz/fuzz_targets/*.rs` and
/// `fuzz/corpus/*` directories.
/// (`cmdline` has its own harness, in the kernel's library, which owns
/// the command line's key tables.)
pub const TARGETS: [&str; 8] = [
    "smb_wire",
    "smb_conn",
    "ntlm",
    "path_walk",
    "smb_transform",
    "cifs_opts",
    "cifs_listing",
    "smb_replies",
];

/// Runs harness `name` on `data`. Unknown names panic (a test bug).
pub fn run(name: &str, data: &[u8]) {
    match name {
        "smb_wire" => smb_wire(data),
        "smb_conn" => {
            smb_conn(data);
        }
        "ntlm" => ntlm(data),
        "path_walk" => path_walk(data),
        "smb_transform" => smb_transform(data),
        "cifs_opts" => cifs_opts(data),
        "cifs_listing" => cifs_listing(data),
        "smb_replies" => replies::smb_replies(data),
        _ => panic!("no harness {name}"),
    }
}

// ---------------------------------------------------------------- smb_wire

/// Every reply parser of the body `msg` (a whole message, header included).
fn parse_bodies(msg: &[u8]) {
    if let Ok(h) = HeaderRepr::parse(msg) {
        let _ = h.is_response();
    }
    if let Ok(h) = Header::new_checked(msg) {
        let _ = (h.credit_charge(), h.status(), h.command(), h.credits());
        let _ = (h.flags(), h.next_command(), h.message_id(), h.async_id());
        let _ = (h.tree_id(), h.session_id(), h.signature());
    }
    let _ = NegotiateResponse::parse(msg);
    if let Ok(r) = SessionSetupResponse::parse(msg) {
        let _ = Challenge::parse(r.token);
    }
    let _ = parse_small(msg);
    let _ = TreeConnectResponse::parse(msg);
    let _ = CreateResponse::parse(msg);
    let _ = parse_close(msg);
    let _ = ErrorResponse::parse(msg);
    if let Ok(r) = ReadResponse::parse(msg) {
        let _ = r.data.len();
    }
    if let Ok(out) = OutputResponse::parse(msg) {
        parse_payloads(out.data);
    }
}

/// Every parser of a QUERY_DIRECTORY / QUERY_INFO output buffer.
fn parse_payloads(b: &[u8]) {
    for class in [
        dirinfo::class::FULL_DIRECTORY,
        dirinfo::class::ID_BOTH_DIRECTORY,
        dirinfo::class::ID_EXTD_DIRECTORY,
    ] {
        let _ = dirinfo::fixed_len(class);
        if let Ok(v) = dirinfo::parse(class, b) {
            for e in &v {
                let _ = e.is_dir();
            }
        }
    }
    let mut st = info::FileStat::default();
    let _ = info::parse_basic(b, &mut st);
    let _ = info::parse_standard(b, &mut st);
    let _ = info::parse_all(b);
    let _ = smb::wire::ea::parse_full_ea_list_counted(b);
    if let Ok(eas) = parse_full_ea_list(b) {
        if let Ok(w) = WslEas::from_eas(&eas) {
            let _ = w.is_empty();
        }
    }
}

/// SMB reply parsing: `data` is a received frame (what the transport hands
/// the connection), and separately a bare body for the payload parsers.
pub fn smb_wire(data: &[u8]) {
    // NetBIOS / direct-TCP framing of the first four bytes.
    if let Some(h) = data.get(..4) {
        let h = [h[0], h[1], h[2], h[3]];
        let _ = netbios::parse_header(h);
        if let Ok(Some(n)) = frame_len(h) {
            assert!(n <= smb::transport::MAX_MESSAGE, "frame_len over limit");
        }
    }
    // The frame as the connection sees it: compound split, then each part.
    match split(data) {
        Ok(parts) => {
            for r in parts {
                // Fact: split only returns ranges inside the frame.
                let m = &data[r];
                parse_bodies(m);
            }
        }
        Err(_) => parse_bodies(data),
    }
    // The same bytes as a bare payload (after a 1-byte class selector, so
    // the fuzzer can aim at one class).
    if let Some((&sel, rest)) = data.split_first() {
        let _ = dirinfo::parse(sel, rest);
        parse_payloads(rest);
        let _ = FileId::parse(rest, sel as usize);
        let _ = FileTimes::parse(rest, sel as usize);
        // The gate and the offset rule on any message, as the reply type
        // the selector picks: fixed part, fields and area.
        let kind = Reply::ALL[sel as usize % Reply::ALL.len()];
        if let Ok(body) = ReplyBody::new_checked(rest, kind) {
            let len = rest.len().saturating_sub(sel as usize / 2);
            let _ = (body.u64(sel as usize % 72), body.bytes16(sel as usize));
            let _ = body.area(sel as usize, len);
            let _ = body.area_to_end(sel as usize);
            let _ = body.read_data(sel as usize, len);
        }
        let _ = from_utf16le(rest);
    }
    // Signature verification of hostile messages (any length).
    let key = [7u8; 16];
    let _ = Signer::smb2(&key).verify(data);
    let _ = Signer::smb30(&key).verify(data);
    let pre = PreauthHash::default();
    let _ = Signer::smb311(&key, SignAlg::AesGmac, &pre).verify(data);
}

// ---------------------------------------------------------------- smb_conn

/// One scripted reply frame.
#[derive(Clone)]
struct Record {
    ctl: u8,
    bytes: Vec<u8>,
}

/// `ctl` bits of a record.
pub mod ctl {
    /// Rewrite each message of the frame to answer the request at the
    /// same position (message id, command, response flag), so captured or
    /// mutated replies reach the body parsers instead of being dropped as
    /// stale.
    pub const FIXUP: u8 = 0x01;
    /// With FIXUP: clear the SIGNED flag (the fake server has no keys).
    pub const UNSIGN: u8 = 0x02;
    /// Queue the next record with this one (answer with two frames, e.g.
    /// an interim STATUS_PENDING then the final reply).
    pub const MORE: u8 = 0x04;
    /// The connection "drops": the frame is not delivered and the send
    /// fails.
    pub const DROP: u8 = 0x08;
}

/// Encodes a script: the option byte, then `(ctl, u16 length, bytes)`
/// records. Used to build seeds.
pub fn encode_script(options: u8, records: &[(u8, &[u8])]) -> Vec<u8> {
    let mut out = vec![options];
    for (c, b) in records {
        let n = b.len().min(u16::MAX as usize);
        out.push(*c);
        out.extend_from_slice(&(n as u16).to_le_bytes());
        out.extend_from_slice(&b[..n]);
    }
    out
}

fn decode_script(data: &[u8]) -> VecDeque<Record> {
    let mut q = VecDeque::new();
    let mut off = 0;
    while off + 3 <= data.len() {
        let c = data[off];
        let n = u16::from_le_bytes([data[off + 1], data[off + 2]]) as usize;
        off += 3;
        let end = (off + n).min(data.len());
        q.push_back(Record {
            ctl: c,
            bytes: data[off..end].to_vec(),
        });
        off = end;
    }
    q
}

type Script = Arc<Mutex<VecDeque<Record>>>;

/// Rewrites the messages of `reply` to answer the messages of `req`.
fn fixup(reply: &mut [u8], req: &[u8], unsign: bool) {
    let Ok(req_parts) = split(req) else { return };
    let Ok(rep_parts) = split(reply) else { return };
    for (rq, rp) in req_parts.iter().zip(rep_parts.iter()) {
        let (Ok(q), Some(m)) = (
            HeaderRepr::parse(&req[rq.clone()]),
            reply.get_mut(rp.clone()),
        ) else {
            continue;
        };
        if m.len() < 64 {
            continue;
        }
        m[12..14].copy_from_slice(&q.command.to_le_bytes());
        let mut fl = u32::from_le_bytes([m[16], m[17], m[18], m[19]]) | flags::SERVER_TO_REDIR;
        if unsign {
            fl &= !flags::SIGNED;
        }
        m[16..20].copy_from_slice(&fl.to_le_bytes());
        m[24..32].copy_from_slice(&q.message_id.to_le_bytes());
    }
}

struct ScriptConnector {
    script: Script,
    /// Forever mode: the whole script, replayed from its start each time
    /// it runs out, so the server never stops answering.
    forever: Option<Arc<VecDeque<Record>>>,
}

impl Connector for ScriptConnector {
    fn connect(&mut self) -> Result<Box<dyn Transport>, TransportError> {
        if self.script.lock().unwrap().is_empty() && self.forever.is_none() {
            return Err(TransportError::Connect);
        }
        let script = self.script.clone();
        let forever = self.forever.clone();
        Ok(Box::new(DropTransport {
            inner: FnTransport::new(move |req: &[u8]| {
                let mut q = script.lock().unwrap();
                if q.is_empty() {
                    if let Some(all) = &forever {
                        q.extend(all.iter().cloned());
                    }
                }
                let mut out = Vec::new();
                while let Some(mut r) = q.pop_front() {
                    if r.ctl & ctl::DROP != 0 {
                        out.push(DROP_MARK.to_vec());
                        break;
                    }
                    if r.ctl & ctl::FIXUP != 0 {
                        fixup(&mut r.bytes, req, r.ctl & ctl::UNSIGN != 0);
                    }
                    out.push(r.bytes);
                    if r.ctl & ctl::MORE == 0 {
                        break;
                    }
                }
                out
            }),
            dropped: false,
        }))
    }
}

/// A frame no real server sends: makes the next `recv` fail with Closed.
const DROP_MARK: &[u8] = b"\xffDROP";

/// FnTransport plus connection drops (a recv of [`DROP_MARK`] closes).
struct DropTransport<F: FnMut(&[u8]) -> Vec<Vec<u8>> + Send> {
    inner: FnTransport<F>,
    dropped: bool,
}

impl<F: FnMut(&[u8]) -> Vec<Vec<u8>> + Send> Transport for DropTransport<F> {
    fn send(&mut self, msg: &[u8]) -> Result<(), TransportError> {
        if self.dropped {
            return Err(TransportError::Closed);
        }
        self.inner.send(msg)
    }
    fn recv(&mut self, timeout_ms: u64) -> Result<Vec<u8>, TransportError> {
        if self.dropped {
            return Err(TransportError::Closed);
        }
        let f = self.inner.recv(timeout_ms)?;
        if f == DROP_MARK {
            self.dropped = true;
            return Err(TransportError::Closed);
        }
        Ok(f)
    }
}

/// Deterministic clock: +1 ms per reading, counter-filled "random" bytes.
struct StepClock(std::sync::atomic::AtomicU64);

impl Clock for StepClock {
    fn now_ms(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
    fn filetime(&self) -> u64 {
        133_000_000_000_000_000
    }
    fn fill_random(&self, buf: &mut [u8]) {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
    }
}

/// The options byte of a `smb_conn` input.
pub mod conn_opt {
    /// Offer only 2.1 (else 3.1.1, 3.0.2, 2.1).
    pub const ONLY_21: u8 = 0x01;
    /// Offer only 3.0.2.
    pub const ONLY_302: u8 = 0x02;
    /// Signing on.
    pub const SIGN: u8 = 0x04;
    /// Hard mount (retries timeouts).
    pub const HARD: u8 = 0x08;
    /// Accept guest sessions.
    pub const GUEST: u8 = 0x10;
    /// The server answers forever: the script starts over when it runs
    /// out (a client loop a reply drives cannot end on an empty script).
    pub const FOREVER: u8 = 0x20;
}

/// The connection state machine against a hostile server: `data[0]`
/// chooses the configuration, the rest is the script of reply frames (see
/// [`encode_script`]). The client connects, lists the root, stats an entry,
/// queries its WSL EAs, reads a file and disconnects; each step may fail.
/// Returns how many of connect, list, stat, EA query succeeded (for tests
/// that check a seed reaches deep).
pub fn smb_conn(data: &[u8]) -> u32 {
    let Some((&opt, rest)) = data.split_first() else {
        return 0;
    };
    let mut cfg = Config::new("127.0.0.1", "share", "root", "fixture-pw");
    if opt & conn_opt::ONLY_21 != 0 {
        cfg.dialects = vec![dialect::SMB2_1];
    } else if opt & conn_opt::ONLY_302 != 0 {
        cfg.dialects = vec![dialect::SMB3_0_2];
    }
    if opt & conn_opt::SIGN != 0 {
        cfg.signing = Signing::On;
    }
    cfg.soft = opt & conn_opt::HARD == 0;
    cfg.allow_guest = opt & conn_opt::GUEST != 0;
    cfg.timeout_ms = 1000;
    cfg.retries = 2;
    cfg.trace_capacity = 64;
    cfg.admit = |bytes| fs::mem::admit(bytes).is_ok();
    let records = decode_script(rest);
    let forever =
        (opt & conn_opt::FOREVER != 0 && !records.is_empty()).then(|| Arc::new(records.clone()));
    let script: Script = Arc::new(Mutex::new(records));
    let connector = ScriptConnector {
        script: script.clone(),
        forever: forever.clone(),
    };
    let clock = StepClock(std::sync::atomic::AtomicU64::new(0));
    let mut c = Connection::new(cfg, Box::new(connector), Box::new(clock));
    let mut depth = c.connect().is_ok() as u32;
    if let Ok(v) = c.list_dir("") {
        depth += 1;
        for e in &v {
            let _ = e.is_dir();
        }
    }
    depth += c.stat("d000").is_ok() as u32;
    depth += c.query_wsl_eas("d000").is_ok() as u32;
    if forever.is_some() {
        // A server that never stops can claim any size: read a bounded
        // range (the whole-file read keeps what it gets).
        if let Ok((d, _)) = c.read_at("f", 0, 1 << 16, 1 << 16) {
            assert!(d.len() <= 1 << 16, "read_at returned more than asked");
        }
    } else if let Ok(d) = c.read_file("f") {
        // Fact: the client never returns more than the server could send.
        assert!(d.len() <= data.len(), "read_file returned invented bytes");
    }
    let _ = c.stat("d001");
    let s = c.stats();
    // Fact: a connection is counted once per completed handshake.
    assert_eq!(s.connects, c.generation(), "connects != generation");
    let _ = c.render_stats();
    let _ = c.trace().dump(fs::fstype::cifs::errmap::trace_rc);
    c.disconnect();
    depth
}

// ---------------------------------------------------------------- smb_transform

/// The SMB3 transform header and decryption with a known key. `data[0]`
/// picks the cipher (bit 0, 3.1.1 only), the dialect's key derivation (bit 2) and
/// the mode (bit 3): raw, the rest is a received frame for the client's
/// sealer as is; sealed, the rest is `[pos u16][xor u8]` and a plaintext
/// the server seals with the same session's keys, then byte `pos` of the
/// sealed frame is XORed with `xor`. Facts: an untouched sealed frame
/// opens to its plaintext; a touched one never opens (AEAD).
pub fn smb_transform(data: &[u8]) {
    use smb::crypto::{Cipher, Sealer};
    use smb::wire::transform::{is_transform, TransformHeader};
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let cipher = [Cipher::Aes128Ccm, Cipher::Aes128Gcm][sel as usize & 1];
    let key = [0x5au8; 16];
    let sid = 0x1122_3344_5566_7788u64;
    let client = if sel & 4 != 0 {
        let mut pre = PreauthHash::default();
        pre.update(b"negotiate");
        Sealer::smb311(&key, cipher, &pre, sid, [1, 2, 3, 4])
    } else {
        Sealer::smb30(&key, sid, [1, 2, 3, 4])
    };
    if sel & 8 == 0 {
        let _ = is_transform(rest);
        let _ = TransformHeader::parse(rest);
        if let Ok(plain) = client.open(rest) {
            parse_bodies(&plain);
        }
        return;
    }
    if rest.len() < 3 {
        return;
    }
    let pos = u16::from_le_bytes([rest[0], rest[1]]) as usize;
    let xor = rest[2];
    let plain = &rest[3..];
    // The server's sealer: the client's keys the other way round.
    let (enc, dec) = transform_keys(&key, sel & 4 != 0);
    let mut server = Sealer::with_keys(client.cipher, &dec, &enc, sid, [9, 9, 9, 9]);
    let mut frame = server.seal(plain);
    let touched = xor != 0 && !frame.is_empty();
    if touched {
        let i = pos % frame.len();
        frame[i] ^= xor;
    }
    match client.open(&frame) {
        Ok(p) => {
            assert!(!touched, "a tampered sealed frame opened");
            assert_eq!(p, plain, "sealed then opened is not the plaintext");
            parse_bodies(&p);
        }
        Err(_) => assert!(touched, "an untouched sealed frame did not open"),
    }
}

/// The client's (encrypt, decrypt) keys as [`smb::crypto::Sealer`]
/// derives them (MS-SMB2 3.1.4.2), for the harness's server side.
fn transform_keys(key: &[u8; 16], smb311: bool) -> ([u8; 16], [u8; 16]) {
    use smb::crypto::kdf;
    if smb311 {
        let mut pre = PreauthHash::default();
        pre.update(b"negotiate");
        (
            kdf(key, b"SMBC2SCipherKey\0", &pre.0),
            kdf(key, b"SMBS2CCipherKey\0", &pre.0),
        )
    } else {
        (
            kdf(key, b"SMB2AESCCM\0", b"ServerIn \0"),
            kdf(key, b"SMB2AESCCM\0", b"ServerOut\0"),
        )
    }
}

// ---------------------------------------------------------------- cifs_opts

/// A connector that never connects (the option parser runs first).
struct NoServer;

impl Connector for NoServer {
    fn connect(&mut self) -> Result<Box<dyn Transport>, TransportError> {
        Err(TransportError::Connect)
    }
}

/// The cifs mount-option parser on arbitrary text, then a whole mount
/// with those options against no server. Fact: such a mount never
/// succeeds.
pub fn cifs_opts(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(o) = fs::fstype::cifs::CifsOpts::parse(&text) {
        let _ = o.effective_eacache().name();
    }
    let v = Vfs::new_tmpfs("").expect("tmpfs");
    v.mkdir(b"/mnt", 0o755).expect("mkdir");
    let clock = StepClock(std::sync::atomic::AtomicU64::new(0));
    let r = fs::fstype::cifs::mount(
        &v,
        "//127.0.0.1/share",
        b"/mnt",
        &text,
        Box::new(NoServer),
        Box::new(clock),
    );
    assert!(r.is_err(), "mounted with no server");
}

// ---------------------------------------------------------------- cifs_listing

/// Listed names on their way into the dcache: a cifs mount on
/// `qemu::hostile`'s in-memory server whose QUERY_DIRECTORY answer is
/// `data[1..]` (FileIdBothDirectoryInformation records) and whose next one
/// is NO_MORE_FILES; `data[0]` picks `mapposix`, `mapchars` or neither.
/// Fact: every name readdir returns is one a directory may hold (not
/// empty, no `/` or NUL, not `.`/`..` beyond the two it adds); each is
/// then `lstat`ed (the primed dentry, or a lookup on the server).
pub fn cifs_listing(data: &[u8]) {
    use qemu::hostile::{wire as hw, Case, MemConn, Server};
    let Some((&sel, records)) = data.split_first() else {
        return;
    };
    let records = Arc::new(records.to_vec());
    let tamper = {
        let records = records.clone();
        Arc::new(move |h: &hw::ReqHdr, r: &mut Vec<u8>| {
            let st = u32::from_le_bytes([r[8], r[9], r[10], r[11]]);
            if h.command == hw::cmd::QUERY_DIRECTORY && st == 0 {
                r.truncate(hw::HEADER_LEN);
                r.extend_from_slice(&hw::output_body(&records));
            }
        })
    };
    let server = Server::with_tamper(Case::Honest, &[("f", b"x")], &["d"], tamper);
    struct Mem(Arc<Server>);
    impl Connector for Mem {
        fn connect(&mut self) -> Result<Box<dyn Transport>, TransportError> {
            let mut c = MemConn::new(self.0.clone());
            Ok(Box::new(FnTransport::new(move |req: &[u8]| {
                c.answer(req).unwrap_or_default()
            })))
        }
    }
    let opts = [
        "username=u,password=p",
        "username=u,password=p,mapchars",
        "username=u,password=p,nomapposix",
    ][sel as usize % 3];
    let v = Vfs::new_tmpfs("").expect("tmpfs");
    v.mkdir(b"/mnt", 0o755).expect("mkdir");
    let clock = StepClock(std::sync::atomic::AtomicU64::new(0));
    fs::fstype::cifs::mount(
        &v,
        "//127.0.0.1/share",
        b"/mnt",
        opts,
        Box::new(Mem(server)),
        Box::new(clock),
    )
    .expect("the in-memory server mounts");
    let Ok(entries) = v.readdir(b"/mnt") else {
        return;
    };
    for e in entries {
        let n = &e.name[..];
        if n == b"." || n == b".." {
            continue;
        }
        assert!(
            !n.is_empty() && !n.contains(&b'/') && !n.contains(&0),
            "readdir returned the name {n:?}"
        );
        let mut p = b"/mnt/".to_vec();
        p.extend_from_slice(n);
        let _ = v.lstat(&p);
    }
}

// ---------------------------------------------------------------- ntlm

/// The NTLMSSP CHALLENGE parser, and the AUTHENTICATE builder on whatever
/// it accepts.
pub fn ntlm(data: &[u8]) {
    let Ok(ch) = Challenge::parse(data) else {
        return;
    };
    let _ = ch.av_pairs();
    let _ = ch.timestamp();
    let creds = Credentials {
        user: "root".into(),
        password: "fixture-pw".into(),
        domain: "DOM".into(),
        workstation: "WS".into(),
    };
    let negotiate = ntlm::negotiate_message();
    let built = ntlm::authenticate_message(
        &creds,
        &ch,
        &negotiate,
        "cifs/fuzz",
        &[1; 8],
        133_000_000_000_000_000,
    );
    // A TargetInfo near 64 KiB is refused, never wrapped.
    let Ok((auth, key)) = built else {
        return;
    };
    // Fact: what we build is an NTLMSSP AUTHENTICATE (type 3) that fits
    // its u16 lengths.
    assert_eq!(&auth[..8], ntlm::SIGNATURE, "AUTHENTICATE signature");
    assert_eq!(auth[8], 3, "AUTHENTICATE type");
    assert!(auth.len() <= u16::MAX as usize, "AUTHENTICATE length");
    let _ = key;
}

// ---------------------------------------------------------------- path_walk

/// Splits the next length-prefixed byte string off `d`.
fn take<'a>(d: &mut &'a [u8]) -> &'a [u8] {
    let Some((&n, rest)) = d.split_first() else {
        return &[];
    };
    let n = (n as usize).min(rest.len());
    let (a, b) = rest.split_at(n);
    *d = b;
    a
}

/// `enoent=` of the design `sel` picks, modulo the registry's length.
fn design_opts(sel: usize) -> String {
    let all = fs::dcache::design::mount_opts();
    all[sel % all.len()].clone()
}

/// The path walk over arbitrary byte paths: `data[0]` picks the ENOENT
/// design (an index into the registry, modulo its length), then op records `(op, len, path[, len, path2])` run on a tmpfs
/// holding a small tree (`/a/b/f`, `/a/l -> b/f`, `/loop -> loop`).
pub fn path_walk(data: &[u8]) {
    let Some((&sel, mut d)) = data.split_first() else {
        return;
    };
    let v = Vfs::new_tmpfs(&design_opts(sel as usize)).expect("tmpfs mount");
    v.mkdir(b"/a", 0o755).expect("mkdir /a");
    v.mkdir(b"/a/b", 0o755).expect("mkdir /a/b");
    v.write_file(b"/a/b/f", b"x").expect("write /a/b/f");
    v.symlink(b"b/f", b"/a/l").expect("symlink /a/l");
    v.symlink(b"loop", b"/loop").expect("symlink /loop");
    let mut ops = 0;
    while !d.is_empty() && ops < 64 {
        ops += 1;
        let op = d[0];
        d = &d[1..];
        let p = take(&mut d);
        match op % 16 {
            0 => {
                let _ = v.stat(p);
            }
            1 => {
                let _ = v.lstat(p);
            }
            2 => {
                if v.mkdir(p, 0o755).is_ok() {
                    // Fact: a directory just made is there.
                    let st = v.lstat(p);
                    assert!(st.is_ok(), "mkdir ok but lstat {st:?}");
                }
            }
            3 => {
                let _ = v.unlink(p);
            }
            4 => {
                let _ = v.rmdir(p);
            }
            5 => {
                let q = take(&mut d);
                let _ = v.rename(p, q);
            }
            6 => {
                let q = take(&mut d);
                let _ = v.symlink(q, p);
            }
            7 => {
                let _ = v.readlink(p);
            }
            8 => {
                let _ = v.readdir(p);
            }
            9 => {
                let body = [op; 3];
                if v.write_file(p, &body).is_ok() {
                    // Fact: what was just written reads back.
                    let r = v.read_file(p);
                    assert_eq!(r.as_deref(), Ok(&body[..]), "write then read");
                }
            }
            10 => {
                let _ = v.read_file(p);
            }
            11 => {
                let fl = take(&mut d);
                let bits = fl.iter().fold(0u32, |a, &b| a.rotate_left(8) ^ b as u32);
                if let Ok(f) = v.open(p, OpenFlags(bits & 0o703303), 0o644) {
                    let mut buf = [0u8; 8];
                    let _ = f.read(&mut buf);
                    let _ = f.write(b"z");
                    let _ = f.stat();
                }
            }
            12 => {
                let _ = fs::namei::check_name(p);
            }
            13 => {
                let _ = fs::namei::filename_parentat(v.mnt_ns(), p);
            }
            14 => {
                let _ = v.mount("tmpfs", p, "");
            }
            _ => {
                let _ = v.remount(b"/", &design_opts(op as usize / 16));
            }
        }
    }
}

// ---------------------------------------------------------------- seeds

/// `[u32 LE length][message]` records of a capture in
/// `fs/smb/src/wire/testdata/` (requests and replies alternate).
pub fn capture_frames(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + 4 <= bytes.len() {
        let n = u32::from_le_bytes([bytes[off], bytes[off + 1], bytes[off + 2], bytes[off + 3]])
            as usize;
        let Some(m) = bytes.get(off + 4..off + 4 + n) else {
            break;
        };
        out.push(m.to_vec());
        off += 4 + n;
    }
    out
}

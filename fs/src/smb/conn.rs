//! The connection, session and tree-connect state machine.
//!
//! One [`Connection`] holds at most one live link: a transport with a
//! negotiated dialect, an authenticated session and one tree connect. It
//! consumes parsed replies (from [`super::wire`]) and takes time and
//! entropy from an explicit [`Clock`]; it never opens sockets itself but asks
//! its [`Connector`] for a transport.
//!
//! States: *down* (no link) → *up* (negotiated, session set up, tree
//! connected). Every operation goes through [`Connection::run`], which
//! brings the link up if it is down (re-negotiate, re-authenticate,
//! re-tree-connect) and, after a dropped connection or an expired session,
//! drops the link and retries the operation up to `Config::retries` times.
//! A timeout drops the link too (a late reply could desynchronise the
//! stream); on a soft mount it is not retried and surfaces as EIO.
//!
//! Message ids and credits: each request consumes `max(1, CreditCharge)`
//! ids and credits; every reply (interim ones too) returns the credits the
//! server granted. A STATUS_PENDING interim reply (async header) restarts
//! the wait for the final reply with the same MessageId. Replies to
//! requests not outstanding (oplock breaks, late replies) are skipped.
//!
//! Signing: with [`Signing::On`] every request after SESSION_SETUP is signed
//! and every reply must carry a valid signature; with [`Signing::Off`] only
//! what the server demands is signed (the 3.1.1 TREE_CONNECT, or everything
//! if the server requires signing). A reply with the SIGNED flag is always
//! verified; a bad signature is [`SmbError::BadSignature`] and drops the
//! link.

use crate::smb::crypto::{PreauthHash, SignAlg, Signer};
use crate::smb::ntlm::{self, Challenge, Credentials};
use crate::smb::stats::{TconStats, TraceEvent, TraceKind, TraceRing};
use crate::smb::transport::{Clock, Connector, Transport, TransportError};
use crate::smb::wire::compound;
use crate::smb::wire::header::{flags, HeaderRepr, HEADER_LEN};
use crate::smb::wire::negotiate::{
    dialect, security_mode, sign_alg, NegotiateRequest, NegotiateResponse, HASH_SHA512,
};
use crate::smb::wire::session::{SessionSetupRequest, SessionSetupResponse};
use crate::smb::wire::tree::{TreeConnectRequest, TreeConnectResponse};
use crate::smb::wire::{cmd, status, WireError};
use crate::smb::{status_errno, SmbError, SmbResult};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// Global capability LARGE_MTU (multi-credit requests).
const CAP_LARGE_MTU: u32 = 0x4;
/// Most STATUS_PENDING interim replies accepted in one exchange.
const MAX_INTERIM: u32 = 64;
/// Session flags.
const SESSION_FLAG_IS_GUEST: u16 = 0x1;
const SESSION_FLAG_IS_NULL: u16 = 0x2;

/// Signing policy of the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signing {
    /// Sign only what the server demands; verify whatever comes signed.
    Off,
    /// Sign every request; require a valid signature on every reply.
    On,
}

/// Connection parameters.
#[derive(Clone, Debug)]
pub struct Config {
    /// Server name as it appears in the UNC path.
    pub server: String,
    pub share: String,
    pub creds: Credentials,
    /// Dialects offered (any of 0x0210, 0x0300, 0x0302, 0x0311).
    pub dialects: Vec<u16>,
    pub signing: Signing,
    /// Signing algorithms offered in the 3.1.1 context, preferred first.
    pub signing_algs: Vec<u16>,
    /// How long to wait for a reply (and for connect).
    pub timeout_ms: u64,
    /// Soft mount: a timeout fails the operation (EIO) instead of retrying.
    pub soft: bool,
    /// Retries of one operation after a dropped connection / expired
    /// session (and after timeouts on hard mounts).
    pub retries: u32,
    /// Credits asked for in each request.
    pub credit_request: u16,
    /// Trace ring capacity (events).
    pub trace_capacity: usize,
    /// Accept a session the server mapped to guest.
    pub allow_guest: bool,
}

impl Config {
    /// Defaults: all three dialects, signing off, 10 s soft timeouts, one
    /// retry after a dropped connection.
    pub fn new(server: &str, share: &str, user: &str, password: &str) -> Self {
        Config {
            server: server.into(),
            share: share.into(),
            creds: Credentials {
                user: user.into(),
                password: password.into(),
                domain: String::new(),
                workstation: "UNIKERNEL".into(),
            },
            dialects: vec![dialect::SMB3_1_1, dialect::SMB3_0_2, dialect::SMB2_1],
            signing: Signing::Off,
            signing_algs: vec![
                sign_alg::AES_GMAC,
                sign_alg::AES_CMAC,
                sign_alg::HMAC_SHA256,
            ],
            timeout_ms: 10_000,
            soft: true,
            retries: 1,
            credit_request: 256,
            trace_capacity: 65_536,
            allow_guest: false,
        }
    }

    /// `\\server\share`.
    pub fn unc(&self) -> String {
        format!("\\\\{}\\{}", self.server, self.share)
    }
}

/// One request of an exchange: its command and the whole message with a
/// 64-byte header placeholder in front of the body.
pub struct Req {
    pub cmd: u16,
    pub related: bool,
    pub charge: u16,
    pub msg: Vec<u8>,
}

impl Req {
    /// A request whose body `emit` appends after the header placeholder.
    pub fn new(cmd: u16, related: bool, charge: u16, emit: impl FnOnce(&mut Vec<u8>)) -> Self {
        let mut msg = vec![0u8; HEADER_LEN];
        emit(&mut msg);
        Req {
            cmd,
            related,
            charge,
            msg,
        }
    }
}

/// One reply: parsed header and the whole message bytes.
#[derive(Clone, Debug)]
pub struct Reply {
    pub hdr: HeaderRepr,
    pub msg: Vec<u8>,
}

impl Reply {
    /// The message if the status is not an error; else the status as error
    /// (after checking the ERROR body is well formed).
    pub fn ok(&self) -> SmbResult<&[u8]> {
        if status::is_error(self.hdr.status) {
            return Err(SmbError::Status(self.hdr.status));
        }
        Ok(&self.msg)
    }
}

/// The live link: transport plus negotiated, session and tree state.
struct Link {
    t: Box<dyn Transport>,
    dialect: u16,
    max_read: u32,
    max_transact: u32,
    max_write: u32,
    large_mtu: bool,
    signer: Option<Signer>,
    sign_all: bool,
    session_id: u64,
    tree_id: u32,
    next_mid: u64,
    credits: u32,
    /// The last frame sent (for the preauth hash).
    last_sent: Vec<u8>,
}

/// An SMB2/3 client connection to one share.
pub struct Connection {
    cfg: Config,
    connector: Box<dyn Connector>,
    clock: Box<dyn Clock>,
    link: Option<Link>,
    stats: TconStats,
    trace: TraceRing,
    /// Successful connects so far (never reset): caches keyed on the
    /// session, like a negative WSL-EA cache, compare it to notice a
    /// reconnect.
    generation: u64,
}

impl Connection {
    /// A connection in the *down* state; the first operation connects.
    pub fn new(cfg: Config, connector: Box<dyn Connector>, clock: Box<dyn Clock>) -> Self {
        let stats = TconStats {
            unc: cfg.unc(),
            ..Default::default()
        };
        let trace = TraceRing::new(cfg.trace_capacity);
        Connection {
            cfg,
            connector,
            clock,
            link: None,
            stats,
            trace,
            generation: 0,
        }
    }

    /// A connection over std TCP to `addr` with the host clock.
    #[cfg(feature = "std")]
    pub fn tcp(cfg: Config, addr: std::net::SocketAddr) -> Self {
        let connector = crate::smb::transport::TcpConnector {
            addr,
            timeout_ms: cfg.timeout_ms,
        };
        Connection::new(
            cfg,
            Box::new(connector),
            Box::new(crate::smb::transport::StdClock::default()),
        )
    }

    /// Connects now (negotiate, session setup, tree connect) if down.
    pub fn connect(&mut self) -> SmbResult<()> {
        if self.link.is_some() {
            return Ok(());
        }
        let t = self
            .connector
            .connect()
            .map_err(|_| SmbError::ConnectFailed)?;
        self.link = Some(Link {
            t,
            dialect: 0,
            max_read: 65536,
            max_transact: 65536,
            max_write: 65536,
            large_mtu: false,
            signer: None,
            sign_all: false,
            session_id: 0,
            tree_id: 0,
            next_mid: 0,
            credits: 1,
            last_sent: Vec::new(),
        });
        match self.handshake() {
            Ok(()) => {
                self.stats.connects += 1;
                self.generation += 1;
                Ok(())
            }
            Err(e) => {
                self.link = None;
                Err(e)
            }
        }
    }

    /// How many times the link has been brought up (1 after the first
    /// connect; +1 per reconnect).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }
    /// True while a link is up.
    pub fn is_connected(&self) -> bool {
        self.link.is_some()
    }
    /// The negotiated dialect, while up.
    pub fn dialect(&self) -> Option<u16> {
        self.link.as_ref().map(|l| l.dialect)
    }
    /// The signing algorithm of the session, while up.
    pub fn signing_alg(&self) -> Option<SignAlg> {
        self.link.as_ref()?.signer.as_ref().map(|s| s.alg)
    }
    /// True if every request is signed.
    pub fn signs_all(&self) -> bool {
        self.link.as_ref().is_some_and(|l| l.sign_all)
    }
    /// Largest read the server allows, while up.
    pub fn max_read(&self) -> u32 {
        self.link.as_ref().map_or(65536, |l| l.max_read)
    }
    /// Largest QUERY_* output buffer, while up.
    pub fn max_transact(&self) -> u32 {
        self.link.as_ref().map_or(65536, |l| l.max_transact)
    }

    /// The negotiated MaxWriteSize (65536 before a negotiate).
    pub fn max_write(&self) -> u32 {
        self.link.as_ref().map_or(65536, |l| l.max_write)
    }
    /// Credits currently granted.
    pub fn credits(&self) -> u32 {
        self.link.as_ref().map_or(0, |l| l.credits)
    }
    /// Counters of this tree connect.
    pub fn stats(&self) -> &TconStats {
        &self.stats
    }
    /// Resets the counters (keeping the UNC).
    pub fn reset_stats(&mut self) {
        let unc = core::mem::take(&mut self.stats.unc);
        self.stats = TconStats {
            unc,
            ..Default::default()
        };
    }
    /// The counters in `/proc/fs/cifs/Stats` layout.
    pub fn render_stats(&self) -> String {
        self.stats.render()
    }
    /// The trace ring.
    pub fn trace(&self) -> &TraceRing {
        &self.trace
    }
    /// The trace ring, to clear it.
    pub fn trace_mut(&mut self) -> &mut TraceRing {
        &mut self.trace
    }
    /// Monotonic time from the connection's clock.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }
    /// Drops the link without telling the server (the next operation
    /// reconnects).
    pub fn drop_link(&mut self) {
        self.link = None;
    }

    /// Polite shutdown: TREE_DISCONNECT and LOGOFF, errors ignored.
    pub fn disconnect(&mut self) {
        if self.link.is_none() {
            return;
        }
        let sign = self.link.as_ref().is_some_and(|l| l.sign_all);
        let td = Req::new(
            cmd::TREE_DISCONNECT,
            false,
            1,
            crate::smb::wire::session::emit_small,
        );
        let _ = self.exchange(vec![td], sign);
        if self.link.is_some() {
            let lo = Req::new(cmd::LOGOFF, false, 1, crate::smb::wire::session::emit_small);
            let _ = self.exchange(vec![lo], sign);
        }
        self.link = None;
    }

    /// Runs one operation: connects if down; after a dropped connection or
    /// an expired session (and a timeout on hard mounts) reconnects and
    /// retries, at most `retries` times.
    pub fn run<T>(&mut self, mut op: impl FnMut(&mut Self) -> SmbResult<T>) -> SmbResult<T> {
        let mut tries = 0;
        loop {
            let r = self.connect().and_then(|_| op(self));
            let e = match r {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let session_gone = matches!(
                e,
                SmbError::Status(
                    status::NETWORK_SESSION_EXPIRED
                        | status::USER_SESSION_DELETED
                        | status::NETWORK_NAME_DELETED
                )
            );
            if session_gone {
                self.link = None;
            }
            let retry = session_gone
                || e == SmbError::Disconnected
                || (e == SmbError::Timeout && !self.cfg.soft);
            if !retry || tries >= self.cfg.retries {
                return Err(e);
            }
            tries += 1;
        }
    }

    fn handshake(&mut self) -> SmbResult<()> {
        let cfg = self.cfg.clone();
        let mode = match cfg.signing {
            Signing::On => security_mode::SIGNING_ENABLED | security_mode::SIGNING_REQUIRED,
            Signing::Off => security_mode::SIGNING_ENABLED,
        };
        // NEGOTIATE
        let mut guid = [0u8; 16];
        let mut salt = [0u8; 32];
        self.clock.fill_random(&mut guid);
        self.clock.fill_random(&mut salt);
        let neg = NegotiateRequest {
            dialects: &cfg.dialects,
            security_mode: mode,
            capabilities: CAP_LARGE_MTU,
            client_guid: guid,
            salt,
            signing_algs: &cfg.signing_algs,
        };
        let r = self.exchange1(Req::new(cmd::NEGOTIATE, false, 0, |o| neg.emit(o)), false)?;
        let neg_req = self.link_mut()?.last_sent.clone();
        let nr = self.body(&r, NegotiateResponse::parse)?;
        if !cfg.dialects.contains(&nr.dialect) {
            return Err(SmbError::Protocol("server chose a dialect not offered"));
        }
        let mut preauth = PreauthHash::default();
        let alg = match nr.dialect {
            dialect::SMB3_1_1 => {
                if nr.preauth_hash != Some(HASH_SHA512) {
                    return Err(SmbError::Protocol("preauth hash is not SHA-512"));
                }
                preauth.update(&neg_req);
                preauth.update(&r.msg);
                match nr.signing_alg {
                    None => SignAlg::AesCmac,
                    Some(id) if cfg.signing_algs.contains(&id) => {
                        SignAlg::from_id(id).ok_or(SmbError::Protocol("signing algorithm"))?
                    }
                    Some(_) => return Err(SmbError::Protocol("signing algorithm not offered")),
                }
            }
            dialect::SMB3_0 | dialect::SMB3_0_2 => SignAlg::AesCmac,
            _ => SignAlg::HmacSha256,
        };
        {
            let l = self.link_mut()?;
            l.dialect = nr.dialect;
            l.large_mtu = nr.capabilities & CAP_LARGE_MTU != 0;
            l.max_read = nr.max_read.clamp(4096, 8 * 1024 * 1024);
            l.max_transact = nr.max_transact.clamp(4096, 8 * 1024 * 1024);
            l.max_write = nr.max_write.clamp(4096, 8 * 1024 * 1024);
            l.sign_all = cfg.signing == Signing::On
                || nr.security_mode & security_mode::SIGNING_REQUIRED != 0;
        }

        // SESSION_SETUP 1: NTLMSSP NEGOTIATE
        let tok = ntlm::negotiate_message();
        let ss1 = SessionSetupRequest {
            security_mode: mode as u8,
            capabilities: 0,
            previous_session_id: 0,
            token: &tok,
        };
        let r1 = self.exchange1(
            Req::new(cmd::SESSION_SETUP, false, 1, |o| ss1.emit(o)),
            false,
        )?;
        if r1.hdr.status != status::MORE_PROCESSING_REQUIRED {
            r1.ok()?;
            return Err(SmbError::Protocol("session setup skipped the challenge"));
        }
        preauth.update(&self.link_mut()?.last_sent);
        preauth.update(&r1.msg);
        self.link_mut()?.session_id = r1.hdr.session_id;
        let ch = self.body(&r1, |m| {
            Challenge::parse(SessionSetupResponse::parse(m)?.token)
        })?;

        // SESSION_SETUP 2: NTLMSSP AUTHENTICATE
        let mut cc = [0u8; 8];
        self.clock.fill_random(&mut cc);
        let (auth, key) = ntlm::authenticate_message(&cfg.creds, &ch, &cc, self.clock.filetime());
        let ss2 = SessionSetupRequest {
            token: &auth,
            ..ss1
        };
        let r2 = self.exchange1(
            Req::new(cmd::SESSION_SETUP, false, 1, |o| ss2.emit(o)),
            false,
        )?;
        preauth.update(&self.link_mut()?.last_sent);
        r2.ok()?;
        if r2.hdr.status != status::SUCCESS {
            return Err(SmbError::Protocol("session setup did not complete"));
        }
        let resp2 = self.body(&r2, SessionSetupResponse::parse)?;
        let guest = resp2.session_flags & (SESSION_FLAG_IS_GUEST | SESSION_FLAG_IS_NULL) != 0;
        if guest && !cfg.allow_guest {
            return Err(SmbError::Auth("server mapped the login to guest"));
        }
        let dialect = nr.dialect;
        if !guest {
            let signer = match dialect {
                dialect::SMB3_1_1 => Signer::smb311(&key, alg, &preauth),
                dialect::SMB3_0 | dialect::SMB3_0_2 => Signer::smb30(&key),
                _ => Signer::smb2(&key),
            };
            let signed = r2.hdr.flags & flags::SIGNED != 0;
            if signed && !signer.verify(&r2.msg) {
                self.link = None;
                return Err(SmbError::BadSignature);
            }
            if !signed && dialect == dialect::SMB3_1_1 {
                self.link = None;
                return Err(SmbError::BadSignature);
            }
            self.link_mut()?.signer = Some(signer);
        } else {
            self.link_mut()?.sign_all = false;
        }

        // TREE_CONNECT (3.1.1: always signed, Samba refuses it otherwise)
        let unc = cfg.unc();
        let sign_tc = !guest && (self.link_mut()?.sign_all || dialect == dialect::SMB3_1_1);
        let tc = TreeConnectRequest { unc: &unc };
        let r = self.exchange1(
            Req::new(cmd::TREE_CONNECT, false, 1, |o| tc.emit(o)),
            sign_tc,
        )?;
        self.body(&r, TreeConnectResponse::parse)?;
        self.link_mut()?.tree_id = r.hdr.tree_id;
        Ok(())
    }

    fn link_mut(&mut self) -> SmbResult<&mut Link> {
        self.link.as_mut().ok_or(SmbError::Disconnected)
    }

    pub(crate) fn note_bytes_read(&mut self, n: u64) {
        self.stats.bytes_read += n;
    }

    pub(crate) fn note_bytes_written(&mut self, n: u64) {
        self.stats.bytes_written += n;
    }

    /// Whether requests of the current link are signed.
    pub(crate) fn sign_requests(&self) -> bool {
        self.link.as_ref().is_some_and(|l| l.sign_all)
    }

    /// The greatest CreditCharge a request may carry now.
    pub(crate) fn max_charge(&self) -> u16 {
        match &self.link {
            Some(l) if l.large_mtu => l.credits.clamp(1, 128) as u16,
            _ => 1,
        }
    }

    fn exchange1(&mut self, req: Req, sign: bool) -> SmbResult<Reply> {
        let mut v = self.exchange(vec![req], sign)?;
        v.pop().ok_or(SmbError::Protocol("no reply"))
    }

    /// Sends `reqs` as one frame (a compound if several) and waits for a
    /// reply to each. Replies with error statuses are returned, not turned
    /// into errors; transport failures, timeouts, malformed frames and bad
    /// signatures are errors and drop the link.
    pub fn exchange(&mut self, reqs: Vec<Req>, sign: bool) -> SmbResult<Vec<Reply>> {
        let timeout = self.cfg.timeout_ms;
        let credit_request = self.cfg.credit_request;
        let t0 = self.clock.now_ms();
        if reqs.is_empty() {
            return Ok(Vec::new());
        }
        let link = self.link.as_mut().ok_or(SmbError::Disconnected)?;
        let need: u32 = reqs.iter().map(|r| r.charge.max(1) as u32).sum();
        if link.credits < need {
            return Err(SmbError::NoCredits);
        }
        let sign = sign && link.signer.is_some();
        let mut mids = Vec::with_capacity(reqs.len());
        let mut msgs = Vec::with_capacity(reqs.len());
        for r in reqs.iter() {
            let mid = link.next_mid;
            link.next_mid += r.charge.max(1) as u64;
            mids.push(mid);
            let mut m = r.msg.clone();
            let mut h = Vec::with_capacity(HEADER_LEN);
            HeaderRepr {
                credit_charge: r.charge,
                command: r.cmd,
                credits: credit_request,
                flags: if r.related { flags::RELATED } else { 0 },
                message_id: mid,
                tree_id: link.tree_id,
                session_id: link.session_id,
                ..Default::default()
            }
            .emit(&mut h);
            m[..HEADER_LEN].copy_from_slice(&h);
            msgs.push(m);
        }
        let (mut frame, ranges) = compound::chain(&msgs);
        if sign {
            if let Some(s) = &link.signer {
                for r in &ranges {
                    s.sign(&mut frame[r.clone()]);
                }
            }
        }
        link.credits -= need;
        let (sid, tid) = (link.session_id, link.tree_id);
        for (r, mid) in reqs.iter().zip(&mids) {
            self.stats.sent(r.cmd);
            self.trace.push(TraceEvent {
                t_ms: t0,
                kind: TraceKind::Enter,
                sid,
                tid,
                cmd: r.cmd,
                mid: *mid,
                status: 0,
                rc: 0,
            });
        }
        self.stats.frames += 1;
        let sent = link.t.send(&frame);
        link.last_sent = frame;
        if sent.is_err() {
            return Err(self.fail_all(&reqs, &mids, SmbError::Disconnected));
        }
        let mut replies: Vec<Option<Reply>> = vec![None; reqs.len()];
        let mut deadline = t0.saturating_add(timeout);
        let mut interim = 0u32;
        while replies.iter().any(|r| r.is_none()) {
            let now = self.clock.now_ms();
            if now >= deadline {
                return Err(self.fail_pending(&reqs, &mids, &replies, SmbError::Timeout));
            }
            let link = self.link.as_mut().ok_or(SmbError::Disconnected)?;
            let frame = match link.t.recv(deadline - now) {
                Ok(f) => f,
                Err(TransportError::Timeout) => {
                    return Err(self.fail_pending(&reqs, &mids, &replies, SmbError::Timeout))
                }
                Err(_) => {
                    return Err(self.fail_pending(&reqs, &mids, &replies, SmbError::Disconnected))
                }
            };
            let parts = match compound::split(&frame) {
                Ok(p) => p,
                Err(e) => return Err(self.fail_pending(&reqs, &mids, &replies, e.into())),
            };
            for range in parts {
                let m = &frame[range];
                let hdr = match HeaderRepr::parse(m) {
                    Ok(h) => h,
                    Err(e) => return Err(self.fail_pending(&reqs, &mids, &replies, e.into())),
                };
                let link = self.link.as_mut().ok_or(SmbError::Disconnected)?;
                if !hdr.is_response() {
                    let e = SmbError::Protocol("request from server");
                    return Err(self.fail_pending(&reqs, &mids, &replies, e));
                }
                link.credits = (link.credits + hdr.credits as u32).min(65_535);
                let Some(i) = mids.iter().position(|&x| x == hdr.message_id) else {
                    continue; // unsolicited (oplock break) or a stale reply
                };
                if replies[i].is_some() {
                    continue;
                }
                if hdr.command != reqs[i].cmd {
                    let e = SmbError::Protocol("reply to a different command");
                    return Err(self.fail_pending(&reqs, &mids, &replies, e));
                }
                if hdr.status == status::PENDING && hdr.flags & flags::ASYNC != 0 {
                    // Interim reply: the final one follows; wait afresh
                    // (a bounded number of times: a server cannot stall us
                    // forever with interim replies).
                    interim += 1;
                    if interim > MAX_INTERIM {
                        let e = SmbError::Protocol("too many interim replies");
                        return Err(self.fail_pending(&reqs, &mids, &replies, e));
                    }
                    deadline = self.clock.now_ms().saturating_add(timeout);
                    continue;
                }
                let is_signed = hdr.flags & flags::SIGNED != 0;
                let check = hdr.command != cmd::SESSION_SETUP && link.signer.is_some();
                let good = match (&link.signer, is_signed) {
                    (Some(s), true) if check => s.verify(m),
                    (_, false) => !sign,
                    _ => true,
                };
                if !good {
                    return Err(self.fail_pending(&reqs, &mids, &replies, SmbError::BadSignature));
                }
                self.note_reply(&hdr, sid, tid);
                replies[i] = Some(Reply {
                    hdr,
                    msg: m.to_vec(),
                });
            }
        }
        Ok(replies.into_iter().flatten().collect())
    }

    fn note_reply(&mut self, hdr: &HeaderRepr, sid: u64, tid: u32) {
        let t = self.clock.now_ms();
        // MORE_PROCESSING_REQUIRED is a step of SESSION_SETUP, not a failure.
        let ok = hdr.status == status::SUCCESS || hdr.status == status::MORE_PROCESSING_REQUIRED;
        if !ok && status::is_error(hdr.status) {
            self.stats.failed(hdr.command);
        }
        self.trace.push(TraceEvent {
            t_ms: t,
            kind: if ok { TraceKind::Done } else { TraceKind::Err },
            sid: if hdr.session_id != 0 {
                hdr.session_id
            } else {
                sid
            },
            tid: if hdr.async_id.is_none() {
                hdr.tree_id
            } else {
                tid
            },
            cmd: hdr.command,
            mid: hdr.message_id,
            status: hdr.status,
            rc: if ok {
                0
            } else {
                -status_errno(hdr.status).value()
            },
        });
    }

    /// Parses the body of a reply whose status was not an error. A body
    /// that does not parse is a failure of that command, like Linux's
    /// `MID_RESPONSE_MALFORMED`: it is counted as failed and its trace
    /// event turns from `smb3_cmd_done` into `smb3_cmd_err` (rc -EIO), so
    /// the Stats and the trace agree with what the caller got. An error
    /// status is returned as such (see [`Reply::ok`]), except
    /// MORE_PROCESSING_REQUIRED, a step of SESSION_SETUP with a body.
    pub(crate) fn body<'r, T>(
        &mut self,
        r: &'r Reply,
        parse: impl FnOnce(&'r [u8]) -> Result<T, WireError>,
    ) -> SmbResult<T> {
        let m = if r.hdr.status == status::MORE_PROCESSING_REQUIRED {
            &r.msg[..]
        } else {
            r.ok()?
        };
        parse(m).map_err(|e| {
            self.stats.failed(r.hdr.command);
            self.stats.malformed += 1;
            let (sid, tid) = self
                .link
                .as_ref()
                .map_or((0, 0), |l| (l.session_id, l.tree_id));
            self.trace.mark_err(TraceEvent {
                t_ms: self.clock.now_ms(),
                kind: TraceKind::Err,
                sid,
                tid,
                cmd: r.hdr.command,
                mid: r.hdr.message_id,
                status: r.hdr.status,
                rc: -SmbError::Wire(e).errno().value(),
            });
            SmbError::Wire(e)
        })
    }

    fn fail_all(&mut self, reqs: &[Req], mids: &[u64], e: SmbError) -> SmbError {
        let none: Vec<Option<Reply>> = vec![None; reqs.len()];
        self.fail_pending(reqs, mids, &none, e)
    }

    /// Records the unanswered requests as failed, drops the link, returns `e`.
    fn fail_pending(
        &mut self,
        reqs: &[Req],
        mids: &[u64],
        replies: &[Option<Reply>],
        e: SmbError,
    ) -> SmbError {
        let t = self.clock.now_ms();
        let (sid, tid) = self
            .link
            .as_ref()
            .map_or((0, 0), |l| (l.session_id, l.tree_id));
        for ((r, mid), rep) in reqs.iter().zip(mids).zip(replies) {
            if rep.is_none() {
                self.stats.failed(r.cmd);
                self.trace.push(TraceEvent {
                    t_ms: t,
                    kind: TraceKind::Err,
                    sid,
                    tid,
                    cmd: r.cmd,
                    mid: *mid,
                    status: 0,
                    rc: -e.errno().value(),
                });
            }
        }
        self.link = None;
        e
    }
}

#[cfg(test)]
impl Connection {
    /// Installs an up link over `t` without a handshake (dialect 2.1, the
    /// given signer), for driving `exchange` against a fake server.
    fn test_link(&mut self, t: Box<dyn Transport>, signer: Option<Signer>) {
        self.link = Some(Link {
            t,
            dialect: dialect::SMB2_1,
            max_read: 65536,
            max_transact: 65536,
            max_write: 65536,
            large_mtu: false,
            sign_all: signer.is_some(),
            signer,
            session_id: 0x77,
            tree_id: 5,
            next_mid: 10,
            credits: 4,
            last_sent: Vec::new(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smb::transport::FnTransport;
    use crate::smb::wire::put_u16;
    use core::sync::atomic::{AtomicU64, Ordering};

    /// A clock that advances 50 ms per reading.
    struct StepClock(AtomicU64);
    impl Clock for StepClock {
        fn now_ms(&self) -> u64 {
            self.0.fetch_add(50, Ordering::SeqCst)
        }
        fn filetime(&self) -> u64 {
            0
        }
        fn fill_random(&self, buf: &mut [u8]) {
            buf.fill(7);
        }
    }

    struct NoConnect;
    impl Connector for NoConnect {
        fn connect(&mut self) -> Result<Box<dyn Transport>, TransportError> {
            Err(TransportError::Connect)
        }
    }

    fn conn(timeout_ms: u64) -> Connection {
        let mut cfg = Config::new("h", "s", "u", "p");
        cfg.timeout_ms = timeout_ms;
        Connection::new(
            cfg,
            Box::new(NoConnect),
            Box::new(StepClock(AtomicU64::new(0))),
        )
    }

    /// A reply to the request header `req`: same mid and command.
    fn reply(req: &HeaderRepr, st: u32, async_id: Option<u64>, credits: u16) -> Vec<u8> {
        let mut v = Vec::new();
        HeaderRepr {
            status: st,
            command: req.command,
            credits,
            flags: flags::SERVER_TO_REDIR,
            message_id: req.message_id,
            async_id,
            session_id: req.session_id,
            tree_id: req.tree_id,
            ..Default::default()
        }
        .emit(&mut v);
        put_u16(&mut v, 9);
        v.extend_from_slice(&[0; 7]);
        v
    }

    fn requests(frame: &[u8]) -> Vec<HeaderRepr> {
        compound::split(frame)
            .unwrap()
            .into_iter()
            .map(|r| HeaderRepr::parse(&frame[r]).unwrap())
            .collect()
    }

    fn echo_req() -> Req {
        Req::new(cmd::ECHO, false, 1, |o| {
            put_u16(o, 4);
            put_u16(o, 0);
        })
    }

    #[test]
    fn interim_pending_then_final_and_unsolicited_frames() {
        let mut c = conn(1000);
        let t = FnTransport::new(|f: &[u8]| {
            let h = requests(f)[0];
            let mut oplock = h;
            oplock.message_id = u64::MAX;
            vec![
                reply(&oplock, 0, None, 0),
                reply(&h, status::PENDING, Some(0xabc), 3),
                reply(&h, status::SUCCESS, Some(0xabc), 2),
            ]
        });
        c.test_link(Box::new(t), None);
        let r = c.exchange(vec![echo_req()], false).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].hdr.status, status::SUCCESS);
        assert_eq!(r[0].hdr.message_id, 10);
        // 4 - 1 charged + 0 + 3 + 2 granted
        assert_eq!(c.credits(), 8);
        let d = c.trace().dump();
        assert_eq!(d.matches("smb3_cmd_enter").count(), 1, "{d}");
        assert_eq!(d.matches("smb3_cmd_done").count(), 1, "{d}");
        assert!(!d.contains("smb3_cmd_err"), "{d}");
    }

    #[test]
    fn endless_interim_replies_are_cut_off() {
        let mut c = conn(1000);
        let t = FnTransport::new(|f: &[u8]| {
            let h = requests(f)[0];
            (0..100)
                .map(|_| reply(&h, status::PENDING, Some(1), 1))
                .collect()
        });
        c.test_link(Box::new(t), None);
        assert!(matches!(
            c.exchange(vec![echo_req()], false),
            Err(SmbError::Protocol(_))
        ));
    }

    #[test]
    fn compound_replies_in_separate_frames_and_error_statuses() {
        let mut c = conn(1000);
        let t = FnTransport::new(|f: &[u8]| {
            let hs = requests(f);
            assert_eq!(hs.len(), 2);
            assert_eq!(hs[0].next_command % 8, 0);
            assert!(hs[1].flags & flags::RELATED != 0);
            vec![
                reply(&hs[1], status::NO_EAS_ON_FILE, None, 1),
                reply(&hs[0], status::SUCCESS, None, 1),
            ]
        });
        c.test_link(Box::new(t), None);
        let mut second = echo_req();
        second.related = true;
        let r = c.exchange(vec![echo_req(), second], false).unwrap();
        assert_eq!(r[0].hdr.message_id, 10);
        assert_eq!(
            r[1].ok().unwrap_err(),
            SmbError::Status(status::NO_EAS_ON_FILE)
        );
        assert_eq!(c.stats().get(cmd::ECHO).total, 2);
        assert_eq!(c.stats().get(cmd::ECHO).failed, 1);
        assert_eq!(c.stats().frames, 1);
        assert!(c.trace().dump().contains("status=0xc0000052 rc=-61"));
    }

    /// A SUCCESS reply whose body does not parse fails the operation, and
    /// the counters and the trace say so (not `smb3_cmd_done`).
    #[test]
    fn malformed_body_with_success_status_counts_as_failed() {
        use crate::smb::wire::create::CreateResponse;
        let mut c = conn(1000);
        // `reply` carries a 9-byte ERROR-shaped body: too short for CREATE.
        let t = FnTransport::new(|f: &[u8]| vec![reply(&requests(f)[0], 0, None, 1)]);
        c.test_link(Box::new(t), None);
        let create = Req::new(cmd::CREATE, false, 1, |o| {
            put_u16(o, 57);
            o.extend_from_slice(&[0; 55]);
        });
        let r = c.exchange(vec![create], false).unwrap();
        let e = c.body(&r[0], CreateResponse::parse).unwrap_err();
        assert!(matches!(e, SmbError::Wire(_)), "{e:?}");
        assert_eq!(e.errno(), crate::Errno::EIO);
        let n = c.stats().get(cmd::CREATE);
        assert_eq!((n.total, n.failed, c.stats().malformed), (1, 1, 1));
        let d = c.trace().dump();
        assert!(!d.contains("smb3_cmd_done"), "{d}");
        assert_eq!(d.matches("smb3_cmd_err").count(), 1, "{d}");
        assert!(d.contains("cmd=5 mid=10 status=0x0 rc=-5"), "{d}");
        assert!(c.is_connected(), "a malformed body does not drop the link");
        // A well-formed reply through the same path is not counted.
        let r = c.exchange(vec![echo_req()], false).unwrap();
        c.body(&r[0], |m| Ok(m.len())).unwrap();
        assert_eq!(c.stats().malformed, 1);
    }

    #[test]
    fn silence_is_a_timeout_and_drops_the_link() {
        let mut c = conn(200);
        c.test_link(Box::new(FnTransport::new(|_: &[u8]| Vec::new())), None);
        assert_eq!(
            c.exchange(vec![echo_req()], false).unwrap_err(),
            SmbError::Timeout
        );
        assert!(!c.is_connected());
        assert_eq!(c.stats().get(cmd::ECHO).failed, 1);
        // The next operation tries to reconnect (and here cannot).
        assert_eq!(c.run(|_| Ok(())).unwrap_err(), SmbError::ConnectFailed);
    }

    #[test]
    fn credits_and_wrong_replies() {
        let mut c = conn(1000);
        c.test_link(Box::new(FnTransport::new(|_: &[u8]| Vec::new())), None);
        let reqs = (0..5).map(|_| echo_req()).collect();
        assert_eq!(c.exchange(reqs, false).unwrap_err(), SmbError::NoCredits);

        let mut c = conn(1000);
        let t = FnTransport::new(|f: &[u8]| {
            let mut h = requests(f)[0];
            h.command = cmd::READ;
            vec![reply(&h, 0, None, 1)]
        });
        c.test_link(Box::new(t), None);
        assert!(matches!(
            c.exchange(vec![echo_req()], false),
            Err(SmbError::Protocol(_))
        ));
        assert!(!c.is_connected());
    }

    #[test]
    fn signed_session_rejects_unsigned_and_forged_replies() {
        let key = [9u8; 16];
        for forge in [false, true] {
            let mut c = conn(1000);
            let t = FnTransport::new(move |f: &[u8]| {
                let h = requests(f)[0];
                let mut r = reply(&h, 0, None, 1);
                if forge {
                    Signer::smb2(&[1u8; 16]).sign(&mut r);
                }
                vec![r]
            });
            c.test_link(Box::new(t), Some(Signer::smb2(&key)));
            assert_eq!(
                c.exchange(vec![echo_req()], true).unwrap_err(),
                SmbError::BadSignature
            );
        }
        // A correctly signed reply passes, and our request was signed.
        let mut c = conn(1000);
        let t = FnTransport::new(move |f: &[u8]| {
            assert!(Signer::smb2(&key).verify(f));
            let h = requests(f)[0];
            let mut r = reply(&h, 0, None, 1);
            Signer::smb2(&key).sign(&mut r);
            vec![r]
        });
        c.test_link(Box::new(t), Some(Signer::smb2(&key)));
        c.exchange(vec![echo_req()], true).unwrap();
    }
}

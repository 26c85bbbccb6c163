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
//! Credits drained to zero are handled the same way: the link can carry
//! nothing more, so it is dropped and the operation retried on a new one.
//! A timeout drops the link too (a late reply could desynchronise the
//! stream); on a soft mount it is not retried and surfaces as EIO.
//!
//! Message ids and credits: each request consumes `max(1, CreditCharge)`
//! ids and credits; the credits a server grants count only from a reply
//! to an outstanding request that passed verification (signed, sealed, or
//! not required to be signed) and from its interim replies (which MS-SMB2
//! leaves unsigned); a frame nobody asked for grants nothing, so one
//! forged on a signing link cannot inflate them. A STATUS_PENDING interim reply (async header) restarts
//! the wait for the final reply with the same MessageId. Replies to
//! requests not outstanding (oplock breaks, late replies) are skipped.
//!
//! Signing: with [`Signing::On`] every request after SESSION_SETUP is signed
//! and every reply must carry a valid signature; with [`Signing::Off`] only
//! what the server demands is signed (everything if the server requires
//! signing) and what carries security flags: the TREE_CONNECT on 3.x. A
//! reply with the SIGNED flag is always verified; a bad signature is
//! [`SmbError::BadSignature`] and drops the link.
//!
//! The flags that ask for encryption are believed only from signed
//! responses: on 3.x the final SESSION_SETUP response (SessionFlags) and
//! the TREE_CONNECT response (ShareFlags) of an authenticated session
//! must come signed with the session's key, else the link is dropped with
//! [`SmbError::Unverified`] (EACCES at mount) before another request goes
//! out, so a man in the middle cannot strike SESSION_FLAG_ENCRYPT_DATA or
//! SHAREFLAG_ENCRYPT_DATA and get requests in clear.
//!
//! Encryption (3.x): the client always offers it (the ENCRYPTION capability
//! on 3.0/3.0.2, the cipher context on 3.1.1, as Linux does). It is switched
//! on for every request after SESSION_SETUP when `Config::seal` asks, or
//! when the server requires it for the session (SESSION_FLAG_ENCRYPT_DATA)
//! or the share (SHAREFLAG_ENCRYPT_DATA). Encrypted messages are not signed:
//! the AEAD tag authenticates them. A reply that does not decrypt, or comes
//! in clear on an encrypting session, is [`SmbError::DecryptFailed`] (EIO),
//! counted in [`TconStats::decrypt_failed`], and drops the link.

use crate::counters::{TconStats, TraceEvent, TraceKind, TraceRing};
use crate::crypto::{Cipher, PreauthHash, Sealer, SignAlg, Signer};
use crate::error::{SmbError, SmbResult};
use crate::ntlm::{self, Challenge, Credentials};
use crate::transport::{Clock, Connector, Transport, TransportError};
use crate::wire::compound;
use crate::wire::header::{flags, HeaderRepr, HEADER_LEN};
use crate::wire::negotiate::{
    cipher, dialect, security_mode, sign_alg, NegotiateRequest, NegotiateResponse, CAP_ENCRYPTION,
    HASH_SHA512,
};
use crate::wire::session::{SessionSetupRequest, SessionSetupResponse};
use crate::wire::transform;
use crate::wire::tree::{TreeConnectRequest, TreeConnectResponse};
use crate::wire::{cmd, status, WireError};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// Global capability LARGE_MTU (multi-credit requests).
const CAP_LARGE_MTU: u32 = 0x4;
/// Most STATUS_PENDING interim replies accepted for one request (one
/// message id), however many requests its exchange carries.
const MAX_INTERIM: u32 = 64;
/// How many timeouts interim replies may stretch one request's wait to,
/// counted from when it was sent (see [`request_deadline_ms`]).
pub const INTERIM_TIMEOUTS: u64 = 4;
/// The most interim replies may stretch one request's wait to: above the
/// 35 s a Windows server gives another client to acknowledge an oplock
/// break (MS-SMB2 3.3.2.1, the reason a CREATE goes pending), below the
/// 60 s after which a user takes the mount for hung.
pub const INTERIM_CAP_MS: u64 = 45_000;

/// The total deadline of one request, from when it is sent: the timeout
/// without interim replies; with them, each one restarts the timeout, but
/// never past [`INTERIM_TIMEOUTS`] timeouts or [`INTERIM_CAP_MS`] in all
/// (whichever is less; a timeout above the cap is its own bound). Linux
/// sets no bound of its own here (an interim reply counts as a sign of
/// life, so only a silent server is dropped), which lets a server stall a
/// request for ever; this is that behaviour with a cap.
pub fn request_deadline_ms(timeout_ms: u64) -> u64 {
    timeout_ms.max(
        timeout_ms
            .saturating_mul(INTERIM_TIMEOUTS)
            .min(INTERIM_CAP_MS),
    )
}
/// Session flags.
const SESSION_FLAG_IS_GUEST: u16 = 0x1;
const SESSION_FLAG_IS_NULL: u16 = 0x2;
const SESSION_FLAG_ENCRYPT_DATA: u16 = 0x4;
/// Share flag: the share requires encrypted access.
const SHAREFLAG_ENCRYPT_DATA: u32 = 0x8000;

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
    /// Dialects offered (any of 0x0202, 0x0210, 0x0300, 0x0302, 0x0311).
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
    /// Encrypt every request after SESSION_SETUP (`seal`); the mount fails
    /// if the server cannot. Off: encrypt only when the server requires it.
    pub seal: bool,
    /// Go on when the session signs or encrypts (the server requires
    /// signing, or encryption for the session or the share) although the
    /// [`crate::Clock`]'s random source is not cryptographic (the mount
    /// option `weakrandom`). Off: such a session is refused with
    /// [`SmbError::Invalid`], since its client challenge, nonce salt and
    /// preauth salt would be guessable. A null session has no key and is
    /// not concerned.
    pub accept_weak_random: bool,
    /// Ciphers offered in the 3.1.1 context, preferred first.
    pub ciphers: Vec<u16>,
    /// Memory admission: asked before a reply's data is kept (listing
    /// growth, READ buffers); `false` fails the operation with
    /// [`SmbError::NoMemory`]. The kernel's filesystem passes its heap's
    /// admission; the default admits everything.
    pub admit: fn(usize) -> bool,
}

impl Config {
    /// Defaults: Linux's `vers=default` (2.1, 3.0, 3.0.2, 3.1.1), signing off, 10 s soft timeouts, one
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
            dialects: vec![
                dialect::SMB3_1_1,
                dialect::SMB3_0_2,
                dialect::SMB3_0,
                dialect::SMB2_1,
            ],
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
            accept_weak_random: false,
            seal: false,
            ciphers: vec![cipher::AES_128_GCM, cipher::AES_128_CCM],
            admit: |_| true,
        }
    }

    /// `\\server\share`.
    pub fn unc(&self) -> String {
        format!("\\\\{}\\{}", self.server, self.share)
    }
}

/// One request of an exchange: its command and the whole message with a
/// [`HEADER_LEN`]-byte header placeholder in front of the body.
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
    /// The session's encryption keys (3.x sessions that are not guest).
    sealer: Option<Sealer>,
    /// Every request after SESSION_SETUP is encrypted.
    encrypt: bool,
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
    pub(crate) stats: TconStats,
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
        let connector = crate::transport::TcpConnector {
            addr,
            timeout_ms: cfg.timeout_ms,
        };
        Connection::new(
            cfg,
            Box::new(connector),
            Box::new(crate::transport::StdClock::default()),
        )
    }

    /// Connects now (negotiate, session setup, tree connect) if down.
    pub fn connect(&mut self) -> SmbResult<()> {
        if self.link.is_some() {
            return Ok(());
        }
        if self.cfg.creds.is_anonymous() && (self.cfg.seal || self.cfg.signing == Signing::On) {
            // Refused before any byte goes out: a null session has no key.
            return Err(SmbError::Invalid(
                "null credentials cannot sign or seal (a null session has no key)",
            ));
        }
        match self.bring_up(|c| c.handshake()) {
            Ok(()) => {
                self.stats.connects += 1;
                self.generation += 1;
                Ok(())
            }
            Err(SmbError::NoCommonDialect { offered, .. }) => {
                // Ask the server once more, offering every dialect, so the
                // error can say which `vers=` would work.
                let mine =
                    core::mem::replace(&mut self.cfg.dialects, crate::error::DIALECTS.to_vec());
                let server = self
                    .bring_up(|c| c.negotiate().map(|_| ()))
                    .ok()
                    .and_then(|_| self.dialect());
                self.link = None;
                self.cfg.dialects = mine;
                Err(SmbError::NoCommonDialect {
                    offered,
                    server: server.unwrap_or(0),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// A fresh link from the connector, then `step` on it; on failure the
    /// link is dropped again.
    fn bring_up(&mut self, step: impl FnOnce(&mut Self) -> SmbResult<()>) -> SmbResult<()> {
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
            sealer: None,
            encrypt: false,
            session_id: 0,
            tree_id: 0,
            next_mid: 0,
            credits: 1,
            last_sent: Vec::new(),
        });
        let r = step(self);
        if r.is_err() {
            self.link = None;
        }
        r
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
    /// The cipher of the session, while up and encrypting.
    pub fn cipher(&self) -> Option<Cipher> {
        let l = self.link.as_ref()?;
        l.sealer.as_ref().filter(|_| l.encrypt).map(|s| s.cipher)
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
    /// Whether `bytes` more may be kept ([`Config::admit`]).
    pub(crate) fn admit(&self, bytes: usize) -> bool {
        (self.cfg.admit)(bytes)
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
            crate::wire::session::emit_small,
        );
        let _ = self.exchange(vec![td], sign);
        if self.link.is_some() {
            let lo = Req::new(cmd::LOGOFF, false, 1, crate::wire::session::emit_small);
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
            // No credits left with nothing in flight: the server can never
            // grant more on this link (Linux reconnects then too, see
            // `smb2_add_credits`): drop it and start over on a fresh one.
            let starved = e == SmbError::NoCredits;
            if session_gone || starved {
                self.link = None;
            }
            let retry = session_gone
                || starved
                || e == SmbError::Disconnected
                || (e == SmbError::Timeout && !self.cfg.soft);
            if !retry || tries >= self.cfg.retries {
                return Err(e);
            }
            tries += 1;
        }
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
}

mod exchange;
mod handshake;
#[cfg(test)]
mod tests;

//! The handshake that brings a link up, in the three steps Linux's
//! `smb2pdu.c` names `SMB2_negotiate`, `SMB2_sess_setup` and `SMB2_tcon`:
//! [`Connection::negotiate`] settles the dialect and the algorithms,
//! [`Connection::session_setup`] authenticates (NTLMSSP in two rounds) and
//! derives the session's signing key, [`Connection::tree_connect`] attaches
//! the share. The 3.1.1 preauth integrity hash runs through the first two.
//! It touches only the [`Connection`]'s link and sends through
//! [`Connection::exchange`].

use super::*;
use crate::wire::ioctl::{ValidateNegotiateRequest, ValidateNegotiateResponse};

/// The NTLMv2 session key the signing and sealing keys derive from
/// (wiped when dropped).
type SessionKey = zeroize::Zeroizing<[u8; 16]>;

/// What NEGOTIATE settled, carried into SESSION_SETUP.
pub(super) struct Negotiated {
    /// The dialect the server chose (one of those offered).
    pub dialect: u16,
    /// The signing algorithm of the session to come.
    pub sign_alg: SignAlg,
    /// The cipher the session may encrypt with: 3.1.1's encryption
    /// context, AES-128-CCM on 3.0/3.0.2 when the server has the
    /// ENCRYPTION capability, none on 2.x.
    pub cipher: Option<Cipher>,
    /// SecurityMode the client sent (SESSION_SETUP repeats it).
    pub client_mode: u16,
    /// The 3.1.1 preauth hash so far: NEGOTIATE request and response
    /// (stays zero on other dialects).
    pub preauth: PreauthHash,
    /// What the client sent (VALIDATE_NEGOTIATE_INFO repeats it).
    pub client_caps: u32,
    pub client_guid: [u8; 16],
    pub dialects: Vec<u16>,
    /// What the server answered (VALIDATE_NEGOTIATE_INFO must match it).
    pub server_caps: u32,
    pub server_guid: [u8; 16],
    pub server_mode: u16,
}

/// What SESSION_SETUP settled, carried into TREE_CONNECT.
pub(super) struct Session {
    /// The server mapped the login to guest (or a null session): no
    /// signing key.
    pub guest: bool,
}

impl Connection {
    /// NEGOTIATE, SESSION_SETUP, TREE_CONNECT on a fresh link.
    pub(super) fn handshake(&mut self) -> SmbResult<()> {
        let neg = self.negotiate()?;
        let session = self.session_setup(&neg)?;
        self.tree_connect(&neg, &session)?;
        self.validate_negotiate(&neg, &session)
    }

    /// Whether a session that will sign or seal must be refused: the
    /// clock's random source is not cryptographic (its client challenge
    /// and salts could be guessed) and `weakrandom` was not given. The
    /// mount options `sign` and `seal` are refused before any connection;
    /// this catches a server that requires signing (NEGOTIATE) or
    /// encryption (SESSION_SETUP, TREE_CONNECT), and a source that failed
    /// during the handshake's own draws (asked again after the last one).
    fn weak_random_refused(&self) -> bool {
        !self.cfg.accept_weak_random && self.clock.weak_random().is_some()
    }

    /// NEGOTIATE: offers `Config::dialects` (with the 3.1.1 preauth and
    /// signing contexts when 3.1.1 is among them), checks the server picked
    /// one of them, and records on the link the dialect, LARGE_MTU, the
    /// size limits and whether the server requires signing.
    pub(super) fn negotiate(&mut self) -> SmbResult<Negotiated> {
        let client_mode = match self.cfg.signing {
            Signing::On => security_mode::SIGNING_ENABLED | security_mode::SIGNING_REQUIRED,
            Signing::Off => security_mode::SIGNING_ENABLED,
        };
        let mut client_guid = [0u8; 16];
        let mut salt = [0u8; 32];
        self.clock.fill_random(&mut client_guid);
        self.clock.fill_random(&mut salt);
        let dialects = self.cfg.dialects.clone();
        let signing_algs = self.cfg.signing_algs.clone();
        let ciphers = self.cfg.ciphers.clone();
        // Encryption is always offered on 3.x (as Linux does), so a server
        // that requires it can have it without `seal`.
        let any_smb3 = dialects.iter().any(|&d| d >= dialect::SMB3_0);
        let client_caps = CAP_LARGE_MTU | if any_smb3 { CAP_ENCRYPTION } else { 0 };
        let request = NegotiateRequest {
            dialects: &dialects,
            security_mode: client_mode,
            capabilities: client_caps,
            client_guid,
            salt,
            signing_algs: &signing_algs,
            ciphers: &ciphers,
        };
        let reply = self.exchange1(
            Req::new(cmd::NEGOTIATE, false, 0, |o| request.emit(o)),
            false,
        )?;
        let request_msg = self.link_mut()?.last_sent.clone();
        if reply.hdr.status == status::NOT_SUPPORTED {
            let offered = crate::error::DIALECTS
                .iter()
                .enumerate()
                .filter(|(_, d)| dialects.contains(d))
                .fold(0u8, |m, (i, _)| m | 1 << i);
            return Err(SmbError::NoCommonDialect { offered, server: 0 });
        }
        let response = self.body(&reply, NegotiateResponse::parse)?;
        if !dialects.contains(&response.dialect) {
            return Err(SmbError::Protocol("server chose a dialect not offered"));
        }
        let mut preauth = PreauthHash::default();
        let sign_alg = match response.dialect {
            dialect::SMB3_1_1 => {
                if response.preauth_hash != Some(HASH_SHA512) {
                    return Err(SmbError::Protocol("preauth hash is not SHA-512"));
                }
                preauth.update(&request_msg);
                preauth.update(&reply.msg);
                match response.signing_alg {
                    None => SignAlg::AesCmac,
                    Some(id) if signing_algs.contains(&id) => {
                        SignAlg::from_id(id).ok_or(SmbError::Protocol("signing algorithm"))?
                    }
                    Some(_) => return Err(SmbError::Protocol("signing algorithm not offered")),
                }
            }
            dialect::SMB3_0 | dialect::SMB3_0_2 => SignAlg::AesCmac,
            _ => SignAlg::HmacSha256,
        };
        let cipher = match response.dialect {
            dialect::SMB3_1_1 => match response.cipher {
                None | Some(0) => None,
                Some(id) if ciphers.contains(&id) => Cipher::from_id(id),
                Some(_) => return Err(SmbError::Protocol("cipher not offered")),
            },
            dialect::SMB3_0 | dialect::SMB3_0_2 if response.capabilities & CAP_ENCRYPTION != 0 => {
                Some(Cipher::Aes128Ccm)
            }
            _ => None,
        };
        if self.cfg.seal && cipher.is_none() {
            return Err(SmbError::EncryptionUnavailable(
                if response.dialect < dialect::SMB3_0 {
                    "seal needs SMB 3.0 or later, the server chose 2.x"
                } else {
                    "the server offers no common cipher"
                },
            ));
        }
        let sign_all = self.cfg.signing == Signing::On
            || response.security_mode & security_mode::SIGNING_REQUIRED != 0;
        // Refused before the AUTHENTICATE goes out; a null session, which
        // will have no key, is left alone.
        if sign_all && !self.cfg.creds.is_anonymous() && self.weak_random_refused() {
            return Err(SmbError::Invalid(
                "signing needs a cryptographic random source and this machine has none; mount with weakrandom to accept it",
            ));
        }
        let link = self.link_mut()?;
        link.dialect = response.dialect;
        link.large_mtu = response.capabilities & CAP_LARGE_MTU != 0;
        link.max_read = response.max_read.clamp(4096, 8 * 1024 * 1024);
        link.max_transact = response.max_transact.clamp(4096, 8 * 1024 * 1024);
        link.max_write = response.max_write.clamp(4096, 8 * 1024 * 1024);
        link.sign_all = sign_all;
        Ok(Negotiated {
            dialect: response.dialect,
            sign_alg,
            cipher,
            client_mode,
            preauth,
            client_caps,
            client_guid,
            dialects,
            server_caps: response.capabilities,
            server_guid: response.server_guid,
            server_mode: response.security_mode,
        })
    }

    /// SESSION_SETUP in two rounds: NTLMSSP NEGOTIATE → the server's
    /// CHALLENGE (status MORE_PROCESSING_REQUIRED, with the session id),
    /// then NTLMSSP AUTHENTICATE → SUCCESS. From the NTLMv2 session key it
    /// derives the signing key (3.1.1: over the preauth hash of every
    /// message up to, not including, the final response) and verifies the
    /// final response's signature with it — [`Connection::exchange`] cannot,
    /// since the key does not exist until this reply is in hand. A guest or
    /// null session gets no key and signs nothing.
    pub(super) fn session_setup(&mut self, neg: &Negotiated) -> SmbResult<Session> {
        let mut preauth = neg.preauth;
        let negotiate_token = ntlm::negotiate_message();
        let negotiate_setup = SessionSetupRequest {
            security_mode: neg.client_mode as u8,
            capabilities: 0,
            previous_session_id: 0,
            token: &negotiate_token,
        };
        let challenge_reply = self.exchange1(
            Req::new(cmd::SESSION_SETUP, false, 1, |o| negotiate_setup.emit(o)),
            false,
        )?;
        if challenge_reply.hdr.status != status::MORE_PROCESSING_REQUIRED {
            challenge_reply.ok()?;
            return Err(SmbError::Protocol("session setup skipped the challenge"));
        }
        preauth.update(&self.link_mut()?.last_sent);
        preauth.update(&challenge_reply.msg);
        self.link_mut()?.session_id = challenge_reply.hdr.session_id;
        let (auth_token, session_key) =
            self.authenticate_token(&challenge_reply, &negotiate_token)?;
        let auth_setup = SessionSetupRequest {
            token: &auth_token,
            ..negotiate_setup
        };
        let auth_reply = self.exchange1(
            Req::new(cmd::SESSION_SETUP, false, 1, |o| auth_setup.emit(o)),
            false,
        )?;
        preauth.update(&self.link_mut()?.last_sent);
        if auth_reply.hdr.status == status::ACCESS_DENIED && neg.cipher.is_none() {
            // What Samba answers when it requires encryption and the
            // session cannot have it (its log alone says why).
            return Err(SmbError::EncryptionRequired);
        }
        auth_reply.ok()?;
        if auth_reply.hdr.status != status::SUCCESS {
            return Err(SmbError::Protocol("session setup did not complete"));
        }
        let session_flags = self
            .body(&auth_reply, SessionSetupResponse::parse)?
            .session_flags;
        let server_wants_seal = session_flags & SESSION_FLAG_ENCRYPT_DATA != 0;
        let Some(key) =
            self.key_unless_guest(neg, session_flags, session_key, server_wants_seal)?
        else {
            return Ok(Session { guest: true });
        };
        self.install_keys(neg, &auth_reply, &preauth, &key, server_wants_seal)?;
        Ok(Session { guest: false })
    }

    /// The NTLMSSP AUTHENTICATE token answering the CHALLENGE in
    /// `challenge_reply`, and the NTLMv2 session key (none for null
    /// credentials, which authenticate anonymously: no response over an
    /// empty password that anyone could recompute, hence no key).
    fn authenticate_token(
        &mut self,
        challenge_reply: &Reply,
        negotiate_token: &[u8],
    ) -> SmbResult<(Vec<u8>, Option<SessionKey>)> {
        let challenge = self.body(challenge_reply, |m| {
            Challenge::parse(SessionSetupResponse::parse(m)?.token)
        })?;
        let built = if self.cfg.creds.is_anonymous() {
            let ws = &self.cfg.creds.workstation;
            ntlm::anonymous_authenticate_message(&challenge, ws).map(|t| (t, None))
        } else {
            let mut client_challenge = [0u8; 8];
            self.clock.fill_random(&mut client_challenge);
            let spn = format!("cifs/{}", self.cfg.server);
            ntlm::authenticate_message(
                &self.cfg.creds,
                &challenge,
                negotiate_token,
                &spn,
                &client_challenge,
                self.clock.filetime(),
            )
            .map(|(t, k)| (t, Some(zeroize::Zeroizing::new(k))))
        };
        // Every length in the AUTHENTICATE and SESSION_SETUP's
        // SecurityBufferLength is a u16: a CHALLENGE whose TargetInfo
        // nears 64 KiB (echoed in the NTLMv2 response), or a name that
        // long, would wrap them into a malformed request. Refused before
        // anything is sent: EIO for the server's part, EINVAL for ours.
        match built {
            Ok(b) => Ok(b),
            Err(e) if e.from_server() => Err(SmbError::Protocol(e.0)),
            Err(e) => Err(SmbError::Invalid(e.0)),
        }
    }

    /// The session's key, or `None` for a guest or null session (which
    /// signs nothing and may not encrypt): what the final response's
    /// (unsigned) SessionFlags may take away, and what they may not.
    fn key_unless_guest(
        &mut self,
        neg: &Negotiated,
        session_flags: u16,
        session_key: Option<SessionKey>,
        server_wants_seal: bool,
    ) -> SmbResult<Option<SessionKey>> {
        let server_guest = session_flags & (SESSION_FLAG_IS_GUEST | SESSION_FLAG_IS_NULL) != 0;
        if server_guest && !self.cfg.allow_guest {
            return Err(SmbError::Auth("server mapped the login to guest"));
        }
        // IS_GUEST / IS_NULL come unsigned (a server does not sign a
        // guest session's response). For a session the client
        // authenticated with a secret they would drop the key, signing
        // and encryption, so they are not believed where that loses
        // something: on 3.x (signed TREE_CONNECT, encryption flags
        // believed only signed) and wherever signing is required; a man
        // in the middle who sets the flag and strips the signature gets
        // EACCES, not a session it can forge every reply on. A 2.x
        // session that signs nothing anyway may still be mapped to guest.
        let unkeys = neg.dialect >= dialect::SMB3_0
            || self.cfg.signing == Signing::On
            || self.link_mut()?.sign_all;
        if server_guest && session_key.is_some() && unkeys {
            self.link = None;
            return Err(SmbError::Unverified(
                "the final SESSION_SETUP response says guest for a session authenticated with a password",
            ));
        }
        // A null session is a guest session whatever the (unsigned) flags
        // say: the client sent no secret, so it has no key.
        match session_key {
            Some(k) if !server_guest => Ok(Some(k)),
            _ => {
                if self.cfg.seal || server_wants_seal {
                    return Err(SmbError::EncryptionUnavailable(
                        "a guest or null session has no key to encrypt with",
                    ));
                }
                if self.cfg.signing == Signing::On {
                    return Err(SmbError::Auth(
                        "sign: a guest or null session has no key to sign with",
                    ));
                }
                self.link_mut()?.sign_all = false;
                Ok(None)
            }
        }
    }

    /// Derive the signing key (3.1.1: over the preauth hash of every
    /// message up to, not including, the final response) and the sealer,
    /// verify the final response with them, and install both on the link.
    fn install_keys(
        &mut self,
        neg: &Negotiated,
        auth_reply: &Reply,
        preauth: &PreauthHash,
        session_key: &SessionKey,
        server_wants_seal: bool,
    ) -> SmbResult<()> {
        let signer = match neg.dialect {
            dialect::SMB3_1_1 => Signer::smb311(session_key, neg.sign_alg, preauth),
            dialect::SMB3_0 | dialect::SMB3_0_2 => Signer::smb30(session_key),
            _ => Signer::smb2(session_key),
        };
        // The final response carries what the rest of the session rests
        // on: the SessionFlags (ENCRYPT_DATA), the SessionId the 3.x
        // sealer binds into every nonce's AAD, and on 3.1.1 the proof
        // that the server saw the same preauth hash. A server signs it
        // for every session that is neither guest nor anonymous
        // (MS-SMB2 3.3.5.5.3), so on 3.x, where the flags can ask for
        // encryption, an unsigned one can only have been stripped on the
        // way; on 2.x (no encryption flags) it is required under `sign`.
        let signed = auth_reply.hdr.flags & flags::SIGNED != 0;
        let must_sign = neg.dialect >= dialect::SMB3_0 || self.cfg.signing == Signing::On;
        if signed && !signer.verify(&auth_reply.msg) {
            self.link = None;
            return Err(SmbError::Unverified(
                "the final SESSION_SETUP response's signature is invalid",
            ));
        }
        if !signed && must_sign {
            self.link = None;
            return Err(SmbError::Unverified(
                "the final SESSION_SETUP response is unsigned",
            ));
        }
        // The SessionId is covered by the final response's signature,
        // required above on 3.x: the 3.0.x sealer binds it into every
        // nonce's AAD. Requests name the one the (unsigned) CHALLENGE
        // reply gave; the two must agree, or requests would carry one
        // SessionId while the sealer binds another (3.1.1's preauth hash
        // covers the first too; on 3.0.x only this comparison does).
        let session_id = auth_reply.hdr.session_id;
        if session_id != self.link_mut()?.session_id {
            self.link = None;
            return Err(SmbError::Protocol(
                "the final SESSION_SETUP response names another session",
            ));
        }
        let mut nonce_salt = [0u8; 4];
        self.clock.fill_random(&mut nonce_salt);
        let sealer = neg.cipher.map(|c| match neg.dialect {
            dialect::SMB3_1_1 => Sealer::smb311(session_key, c, preauth, session_id, nonce_salt),
            _ => Sealer::smb30(session_key, session_id, nonce_salt),
        });
        let encrypt = self.cfg.seal || server_wants_seal;
        // Every draw the session's keys and nonces rest on (ClientGuid and
        // preauth salt in NEGOTIATE, client challenge and nonce salt here)
        // is behind us, so the source is asked again: one that failed
        // during them says so now (the kernel's HwFailed is set by the
        // failing draw itself), and the checks at mount and in NEGOTIATE,
        // which ran before the last draws, could not have seen it.
        if (encrypt || self.link_mut()?.sign_all) && self.weak_random_refused() {
            self.link = None;
            return Err(SmbError::Invalid(if encrypt {
                "encryption needs a cryptographic random source and this machine has none; mount with weakrandom to accept it"
            } else {
                "signing needs a cryptographic random source and this machine has none; mount with weakrandom to accept it"
            }));
        }
        if encrypt && sealer.is_none() {
            return Err(SmbError::EncryptionUnavailable("no common cipher"));
        }
        let link = self.link_mut()?;
        link.signer = Some(signer);
        link.sealer = sealer;
        link.encrypt = encrypt;
        Ok(())
    }

    /// TREE_CONNECT to `\\server\share`. Signed when every request is, and
    /// on 3.x always for an authenticated user, so that the reply must
    /// come signed too: its ShareFlags can ask for encryption, and a
    /// flag a man in the middle could clear unnoticed would let every
    /// later request go in clear (Samba also refuses an unsigned
    /// TREE_CONNECT on 3.1.1). Sealed instead when the session encrypts.
    /// A share that requires encryption (SHAREFLAG_ENCRYPT_DATA) switches
    /// it on for every later request (refused on a weak random source
    /// without `weakrandom`, as a session's is). Records the tree id on
    /// the link.
    pub(super) fn tree_connect(&mut self, neg: &Negotiated, session: &Session) -> SmbResult<()> {
        let unc = self.cfg.unc();
        let sign = !session.guest && (self.link_mut()?.sign_all || neg.dialect >= dialect::SMB3_0);
        let request = TreeConnectRequest { unc: &unc };
        let reply = match self.exchange1(
            Req::new(cmd::TREE_CONNECT, false, 1, |o| request.emit(o)),
            sign,
        ) {
            Err(SmbError::BadSignature) => {
                return Err(SmbError::Unverified(
                    "the TREE_CONNECT response is unsigned or its signature is invalid",
                ))
            }
            r => r?,
        };
        let link = self.link_mut()?;
        if reply.hdr.status == status::ACCESS_DENIED && !link.encrypt && link.sealer.is_none() {
            return Err(SmbError::EncryptionRequired);
        }
        if status::is_error(reply.hdr.status) {
            return Err(SmbError::Share(reply.hdr.status));
        }
        let response = self.body(&reply, TreeConnectResponse::parse)?;
        let weak = self.weak_random_refused();
        let link = self.link_mut()?;
        if response.share_flags & SHAREFLAG_ENCRYPT_DATA != 0 && !link.encrypt {
            if link.sealer.is_none() {
                return Err(SmbError::EncryptionUnavailable(
                    "the share requires encryption and this session cannot encrypt",
                ));
            }
            // The sealer's nonce salt came from the clock's source, as a
            // session's encryption would (SESSION_SETUP refuses that one).
            if weak {
                self.link = None;
                return Err(SmbError::Invalid(
                    "the share requires encryption, which needs a cryptographic random source, and this machine has none; mount with weakrandom to accept it",
                ));
            }
            link.encrypt = true;
        }
        link.tree_id = reply.hdr.tree_id;
        Ok(())
    }

    /// FSCTL_VALIDATE_NEGOTIATE_INFO on a 3.0 / 3.0.2 session (Linux's
    /// `smb3_validate_negotiate`, MS-SMB2 3.2.5.14.12): the client repeats
    /// its NEGOTIATE (capabilities, GUID, security mode, dialects) in a
    /// signed (or sealed) IOCTL, and the server's signed answer must repeat
    /// what its NEGOTIATE response said. A man in the middle who struck
    /// 3.1.1 from the offer cannot forge either signature, so the mount
    /// fails with EIO instead of running on the weaker dialect. 3.1.1 needs
    /// none (its preauth hash covers the NEGOTIATE); 2.x has no such
    /// check; a guest session has no key to sign with. A server that
    /// answers (signed) that it does not know the FSCTL is accepted, as
    /// Linux accepts it of old Windows and NetApp.
    pub(super) fn validate_negotiate(
        &mut self,
        neg: &Negotiated,
        session: &Session,
    ) -> SmbResult<()> {
        if session.guest || !matches!(neg.dialect, dialect::SMB3_0 | dialect::SMB3_0_2) {
            return Ok(());
        }
        let v = ValidateNegotiateRequest {
            capabilities: neg.client_caps,
            client_guid: neg.client_guid,
            security_mode: neg.client_mode,
            dialects: &neg.dialects,
        };
        const NO_ANSWER: &str = "validate negotiate: no valid answer (possible downgrade attack)";
        let failed = SmbError::Protocol;
        let reply = match self.exchange1(Req::new(cmd::IOCTL, false, 1, |o| v.emit(o)), true) {
            Ok(r) => r,
            Err(SmbError::BadSignature | SmbError::DecryptFailed) => {
                return Err(failed("validate negotiate: unsigned or forged answer"))
            }
            Err(_) => return Err(failed(NO_ANSWER)),
        };
        if matches!(
            reply.hdr.status,
            status::NOT_SUPPORTED | status::INVALID_DEVICE_REQUEST
        ) {
            return Ok(());
        }
        let r = self
            .body(&reply, ValidateNegotiateResponse::parse)
            .map_err(|_| failed(NO_ANSWER))?;
        if r.dialect != neg.dialect
            || r.security_mode != neg.server_mode
            || r.capabilities != neg.server_caps
            || r.server_guid != neg.server_guid
        {
            self.link = None;
            return Err(failed(
                "validate negotiate: security settings mismatch (possible downgrade attack)",
            ));
        }
        Ok(())
    }
}

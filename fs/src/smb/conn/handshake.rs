//! The handshake that brings a link up, in the three steps Linux's
//! `smb2pdu.c` names `SMB2_negotiate`, `SMB2_sess_setup` and `SMB2_tcon`:
//! [`Connection::negotiate`] settles the dialect and the algorithms,
//! [`Connection::session_setup`] authenticates (NTLMSSP in two rounds) and
//! derives the session's signing key, [`Connection::tree_connect`] attaches
//! the share. The 3.1.1 preauth integrity hash runs through the first two.
//! It touches only the [`Connection`]'s link and sends through
//! [`Connection::exchange`].

use super::*;

/// What NEGOTIATE settled, carried into SESSION_SETUP.
pub(super) struct Negotiated {
    /// The dialect the server chose (one of those offered).
    pub dialect: u16,
    /// The signing algorithm of the session to come.
    pub sign_alg: SignAlg,
    /// SecurityMode the client sent (SESSION_SETUP repeats it).
    pub client_mode: u16,
    /// The 3.1.1 preauth hash so far: NEGOTIATE request and response
    /// (stays zero on other dialects).
    pub preauth: PreauthHash,
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
        self.tree_connect(&neg, &session)
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
        let request = NegotiateRequest {
            dialects: &dialects,
            security_mode: client_mode,
            capabilities: CAP_LARGE_MTU,
            client_guid,
            salt,
            signing_algs: &signing_algs,
        };
        let reply = self.exchange1(
            Req::new(cmd::NEGOTIATE, false, 0, |o| request.emit(o)),
            false,
        )?;
        let request_msg = self.link_mut()?.last_sent.clone();
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
        let sign_all = self.cfg.signing == Signing::On
            || response.security_mode & security_mode::SIGNING_REQUIRED != 0;
        let link = self.link_mut()?;
        link.dialect = response.dialect;
        link.large_mtu = response.capabilities & CAP_LARGE_MTU != 0;
        link.max_read = response.max_read.clamp(4096, 8 * 1024 * 1024);
        link.max_transact = response.max_transact.clamp(4096, 8 * 1024 * 1024);
        link.sign_all = sign_all;
        Ok(Negotiated {
            dialect: response.dialect,
            sign_alg,
            client_mode,
            preauth,
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
        let challenge = self.body(&challenge_reply, |m| {
            Challenge::parse(SessionSetupResponse::parse(m)?.token)
        })?;

        let mut client_challenge = [0u8; 8];
        self.clock.fill_random(&mut client_challenge);
        let (auth_token, session_key) = ntlm::authenticate_message(
            &self.cfg.creds,
            &challenge,
            &client_challenge,
            self.clock.filetime(),
        );
        let auth_setup = SessionSetupRequest {
            token: &auth_token,
            ..negotiate_setup
        };
        let auth_reply = self.exchange1(
            Req::new(cmd::SESSION_SETUP, false, 1, |o| auth_setup.emit(o)),
            false,
        )?;
        preauth.update(&self.link_mut()?.last_sent);
        auth_reply.ok()?;
        if auth_reply.hdr.status != status::SUCCESS {
            return Err(SmbError::Protocol("session setup did not complete"));
        }
        let response = self.body(&auth_reply, SessionSetupResponse::parse)?;
        let guest = response.session_flags & (SESSION_FLAG_IS_GUEST | SESSION_FLAG_IS_NULL) != 0;
        if guest && !self.cfg.allow_guest {
            return Err(SmbError::Auth("server mapped the login to guest"));
        }
        if guest {
            self.link_mut()?.sign_all = false;
            return Ok(Session { guest });
        }
        let signer = match neg.dialect {
            dialect::SMB3_1_1 => Signer::smb311(&session_key, neg.sign_alg, &preauth),
            dialect::SMB3_0 | dialect::SMB3_0_2 => Signer::smb30(&session_key),
            _ => Signer::smb2(&session_key),
        };
        let signed = auth_reply.hdr.flags & flags::SIGNED != 0;
        // 3.1.1 servers must sign the final response (it proves they saw
        // the same preauth hash); older dialects may leave it unsigned.
        if (signed && !signer.verify(&auth_reply.msg))
            || (!signed && neg.dialect == dialect::SMB3_1_1)
        {
            self.link = None;
            return Err(SmbError::BadSignature);
        }
        self.link_mut()?.signer = Some(signer);
        Ok(Session { guest })
    }

    /// TREE_CONNECT to `\\server\share`. Signed when every request is, and
    /// always on 3.1.1 for an authenticated user (Samba refuses it
    /// unsigned there). Records the tree id on the link.
    pub(super) fn tree_connect(&mut self, neg: &Negotiated, session: &Session) -> SmbResult<()> {
        let unc = self.cfg.unc();
        let sign =
            !session.guest && (self.link_mut()?.sign_all || neg.dialect == dialect::SMB3_1_1);
        let request = TreeConnectRequest { unc: &unc };
        let reply = self.exchange1(
            Req::new(cmd::TREE_CONNECT, false, 1, |o| request.emit(o)),
            sign,
        )?;
        self.body(&reply, TreeConnectResponse::parse)?;
        self.link_mut()?.tree_id = reply.hdr.tree_id;
        Ok(())
    }
}

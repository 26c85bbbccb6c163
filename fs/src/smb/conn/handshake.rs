//! The handshake that brings a link up: NEGOTIATE, the two NTLMSSP
//! SESSION_SETUP rounds and TREE_CONNECT, with the 3.1.1 preauth hash and
//! the session's signing key. It touches only the [`Connection`]'s link and
//! sends through [`Connection::exchange`].

use super::*;

impl Connection {
    pub(super) fn handshake(&mut self) -> SmbResult<()> {
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
}

//! Unit tests of the exchange against fake servers ([`FnTransport`]).

use super::*;
use crate::transport::FnTransport;
use crate::wire::put_u16;
use core::sync::atomic::{AtomicU64, Ordering};

/// The trace's `rc=` for these tests: a stand-in for the cifs mapping
/// (`fs::fstype::cifs::errmap::trace_rc`, tested there) that tells the failures
/// these tests meet apart.
fn rc(e: &SmbError) -> i32 {
    match e {
        SmbError::Status(0xc000_0052) => -61,
        SmbError::Wire(_) => -5,
        _ => -1000,
    }
}

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
    let d = c.trace().dump(rc);
    assert_eq!(d.matches("smb3_cmd_enter").count(), 1, "{d}");
    assert_eq!(d.matches("smb3_cmd_done").count(), 1, "{d}");
    assert!(!d.contains("smb3_cmd_err"), "{d}");
}

#[test]
fn endless_interim_replies_are_cut_off() {
    // A timeout long enough that the count, not the deadline, ends it.
    let mut c = conn(100_000);
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

/// A server that answers every request with an interim reply per receive,
/// for ever (one every 100 ms of the step clock).
struct Trickle(Option<HeaderRepr>);
impl Transport for Trickle {
    fn send(&mut self, msg: &[u8]) -> Result<(), TransportError> {
        self.0 = Some(requests(msg)[0]);
        Ok(())
    }
    fn recv(&mut self, _timeout_ms: u64) -> Result<Vec<u8>, TransportError> {
        let h = self.0.ok_or(TransportError::Timeout)?;
        Ok(reply(&h, status::PENDING, Some(1), 1))
    }
}

/// Interim replies stretch a request's wait only up to its total deadline
/// (4 timeouts here), then it times out: they no longer restart the
/// timeout without end.
#[test]
fn trickling_interim_replies_meet_the_total_deadline() {
    assert_eq!(request_deadline_ms(1000), 4000);
    assert_eq!(request_deadline_ms(10_000), 40_000);
    assert_eq!(request_deadline_ms(20_000), INTERIM_CAP_MS);
    assert_eq!(request_deadline_ms(60_000), 60_000);
    let mut c = conn(1000);
    c.test_link(Box::new(Trickle(None)), None);
    let t0 = c.now_ms();
    let r = c.exchange(vec![echo_req()], false);
    let waited = c.now_ms() - t0;
    assert_eq!(r.err(), Some(SmbError::Timeout));
    assert!((4000..=4200).contains(&waited), "waited {waited} ms");
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
    assert!(c.trace().dump(rc).contains("status=0xc0000052 rc=-61"));
}

/// A SUCCESS reply whose body does not parse fails the operation, and
/// the counters and the trace say so (not `smb3_cmd_done`).
#[test]
fn malformed_body_with_success_status_counts_as_failed() {
    use crate::wire::create::CreateResponse;
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
    let n = c.stats().get(cmd::CREATE);
    assert_eq!((n.total, n.failed, c.stats().malformed), (1, 1, 1));
    let d = c.trace().dump(rc);
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

/// Credits come only from replies that passed verification: on a signed
/// link, frames forged unsigned — one for a message id nobody asked
/// about, a duplicate of the answered request — grant nothing; an interim
/// reply (which MS-SMB2 leaves unsigned) and the signed final reply grant
/// theirs. Before, the stray frame's 30,000 counted (30,008).
#[test]
fn credits_count_only_from_verified_replies() {
    let key = [9u8; 16];
    let mut c = conn(1000);
    let t = FnTransport::new(move |f: &[u8]| {
        let h = requests(f)[0];
        let mut stray = h;
        stray.message_id = 999;
        let mut good = reply(&h, 0, Some(0x5), 2);
        Signer::smb2(&key).sign(&mut good);
        vec![
            reply(&stray, 0, None, 30_000),
            reply(&h, status::PENDING, Some(0x5), 3),
            good.clone(),
            reply(&h, 0, Some(0x5), 30_000),
        ]
    });
    c.test_link(Box::new(t), Some(Signer::smb2(&key)));
    c.exchange(vec![echo_req()], true).unwrap();
    // 4 - 1 charged + 3 (interim) + 2 (final, signed).
    assert_eq!(c.credits(), 8);
}

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
            sealer: None,
            encrypt: false,
            session_id: 0x77,
            tree_id: 5,
            next_mid: 10,
            credits: 4,
            last_sent: Vec::new(),
        });
    }
}

/// A sealed session: the request goes out in a transform header, a good
/// sealed reply is accepted, and a tampered, clear, truncated or foreign
/// reply fails the request with EIO, is counted, and never panics.
#[test]
fn sealed_exchange_accepts_good_replies_and_counts_bad_ones() {
    use crate::crypto::Cipher;
    use crate::wire::transform::{is_transform, TRANSFORM_LEN};
    let (c2s, s2c) = ([3u8; 16], [4u8; 16]);
    // 0: good; 1: flipped ciphertext byte; 2: clear reply; 3: truncated;
    // 4: another session's keys.
    for case in 0..5 {
        let mut c = conn(1000);
        let t = FnTransport::new(move |f: &[u8]| {
            assert!(is_transform(f), "request not sealed");
            let server = Sealer::with_keys(Cipher::Aes128Gcm, &s2c, &c2s, 0x77, [1; 4]);
            let plain = server.open(f).expect("client sealed with the right key");
            let h = requests(&plain)[0];
            let r = reply(&h, 0, None, 1);
            let mut server = server;
            let mut sealed = server.seal(&r);
            match case {
                1 => sealed[TRANSFORM_LEN + 3] ^= 1,
                2 => return vec![r],
                3 => sealed.truncate(TRANSFORM_LEN + 2),
                4 => {
                    sealed =
                        Sealer::with_keys(Cipher::Aes128Gcm, &[9; 16], &c2s, 0x77, [1; 4]).seal(&r)
                }
                _ => {}
            }
            vec![sealed]
        });
        c.test_link(Box::new(t), None);
        {
            let l = c.link.as_mut().unwrap();
            l.sealer = Some(Sealer::with_keys(
                Cipher::Aes128Gcm,
                &c2s,
                &s2c,
                0x77,
                [2; 4],
            ));
            l.encrypt = true;
        }
        let r = c.exchange(vec![echo_req()], false);
        if case == 0 {
            assert_eq!(r.unwrap()[0].hdr.status, status::SUCCESS);
            assert_eq!(c.stats().sealed, 1);
            assert_eq!(c.stats().decrypt_failed, 0);
            assert!(c
                .render_stats()
                .contains("Encrypted frames: 1 sent 0 decrypt failures"));
        } else {
            let e = r.unwrap_err();
            assert_eq!(e, SmbError::DecryptFailed, "case {case}");
            assert_eq!(c.stats().decrypt_failed, 1, "case {case}");
            assert!(!c.is_connected(), "case {case}: link dropped");
        }
    }
}

/// FSCTL_VALIDATE_NEGOTIATE_INFO on a 3.0.2 session against a fake
/// server holding the session's signing key: a signed answer that repeats
/// the NEGOTIATE passes; one naming another dialect, security mode,
/// capability or GUID, an unsigned one, and a forged one refuse the
/// session with EIO; a signed "not supported" is accepted (as Linux
/// accepts it of old servers). The request went out signed, repeating
/// what the client offered.
#[test]
fn validate_negotiate_checks_the_signed_answer() {
    use super::handshake::{Negotiated, Session};
    use crate::wire::ioctl::FSCTL_VALIDATE_NEGOTIATE_INFO;
    let key = [9u8; 16];
    let neg = || Negotiated {
        dialect: dialect::SMB3_0_2,
        sign_alg: SignAlg::AesCmac,
        cipher: None,
        client_mode: 1,
        preauth: PreauthHash::default(),
        client_caps: 0x44,
        client_guid: [3; 16],
        dialects: vec![dialect::SMB3_1_1, dialect::SMB3_0_2],
        server_caps: 0x7,
        server_guid: [5; 16],
        server_mode: 1,
    };
    // (what the fake server changes, sign it?, status) → accepted?
    #[derive(Clone, Copy)]
    enum Answer {
        Same,
        Dialect,
        Mode,
        Caps,
        Guid,
        NotSupported,
    }
    let cases = [
        (Answer::Same, true, true),
        (Answer::Dialect, true, false),
        (Answer::Mode, true, false),
        (Answer::Caps, true, false),
        (Answer::Guid, true, false),
        (Answer::Same, false, false),
        (Answer::NotSupported, true, true),
    ];
    for (i, (answer, sign, ok)) in cases.into_iter().enumerate() {
        let mut c = conn(1000);
        let t = FnTransport::new(move |f: &[u8]| {
            assert!(Signer::smb30(&key).verify(f), "the request is signed");
            let h = requests(f)[0];
            assert_eq!(h.command, cmd::IOCTL);
            // The input repeats the NEGOTIATE: caps, GUID, mode, dialects.
            let input = &f[120..];
            assert_eq!(&input[..4], &0x44u32.to_le_bytes());
            assert_eq!(&input[4..20], &[3; 16]);
            assert_eq!(&input[22..28], &[2, 0, 0x11, 3, 2, 3]);
            let st = match answer {
                Answer::NotSupported => status::NOT_SUPPORTED,
                _ => 0,
            };
            let mut r = reply(&h, st, None, 1);
            if st == 0 {
                r.truncate(HEADER_LEN);
                let mut b = vec![0u8; 48];
                b[0] = 49;
                b[4..8].copy_from_slice(&FSCTL_VALIDATE_NEGOTIATE_INFO.to_le_bytes());
                b[32..36].copy_from_slice(&112u32.to_le_bytes());
                b[36..40].copy_from_slice(&24u32.to_le_bytes());
                r.extend_from_slice(&b);
                let mut o = vec![0u8; 24];
                o[..4].copy_from_slice(&0x7u32.to_le_bytes());
                o[4..20].fill(5);
                o[20..22].copy_from_slice(&1u16.to_le_bytes());
                o[22..24].copy_from_slice(&0x0302u16.to_le_bytes());
                match answer {
                    Answer::Dialect => o[22] = 0x00, // 3.0
                    Answer::Mode => o[20] = 3,
                    Answer::Caps => o[0] = 0x47,
                    Answer::Guid => o[4] = 6,
                    _ => {}
                }
                r.extend_from_slice(&o);
            }
            if sign {
                Signer::smb30(&key).sign(&mut r);
            }
            vec![r]
        });
        c.test_link(Box::new(t), Some(Signer::smb30(&key)));
        let r = c.validate_negotiate(&neg(), &Session { guest: false });
        assert_eq!(r.is_ok(), ok, "case {i}: {r:?}");
        if let Err(e) = r {
            assert!(matches!(e, SmbError::Protocol(_)), "case {i}: {e:?}");
            assert!(
                format!("{e}").contains("validate negotiate"),
                "case {i}: {e}"
            );
        }
    }
    // Not sent on 3.1.1 (preauth integrity covers it) nor for a guest.
    let mut c = conn(1000);
    let t = FnTransport::new(|_: &[u8]| panic!("nothing may be sent"));
    c.test_link(Box::new(t), Some(Signer::smb30(&key)));
    let mut n = neg();
    n.dialect = dialect::SMB3_1_1;
    c.validate_negotiate(&n, &Session { guest: false }).unwrap();
    c.validate_negotiate(&neg(), &Session { guest: true })
        .unwrap();
}

/// A reply to `req` with `body` after the header.
fn reply_with(req: &HeaderRepr, st: u32, body: &[u8]) -> Vec<u8> {
    let mut v = reply(req, st, None, 8);
    v.truncate(HEADER_LEN);
    v.extend_from_slice(body);
    v
}

/// A CREATE reply body (MS-SMB2 2.2.14) opening FileId 1/1.
fn create_ok() -> Vec<u8> {
    let mut b = vec![0u8; 88];
    b[0] = 89;
    b[64] = 1;
    b[72] = 1;
    b
}

/// A QUERY_INFO reply body (MS-SMB2 2.2.38) carrying `data`.
fn output(data: &[u8]) -> Vec<u8> {
    let mut b = vec![9, 0, 72, 0];
    b.extend_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(data);
    b
}

/// What the fake server answers the chain of path number `i` of a batched
/// EA query, by `i % 6`: no EAs; `srv=1`; CREATE denied (the related
/// members fail with it); the class refused; an EA list that does not
/// parse; a QUERY_INFO reply body cut short.
fn ea_chain_reply(i: usize, h: &[HeaderRepr]) -> Vec<Vec<u8>> {
    let srv = crate::wire::ea::emit_full_ea(b"srv", b"1").unwrap();
    let (create, q) = match i % 6 {
        0 => (
            create_ok(),
            (status::NO_EAS_ON_FILE, vec![9, 0, 0, 0, 0, 0, 0, 0, 0]),
        ),
        1 => (create_ok(), (status::SUCCESS, output(&srv))),
        2 => {
            let denied = 0xc000_0022;
            return h.iter().map(|h| reply(h, denied, None, 1)).collect();
        }
        3 => (
            create_ok(),
            (status::NOT_SUPPORTED, vec![9, 0, 0, 0, 0, 0, 0, 0, 0]),
        ),
        4 => (create_ok(), (status::SUCCESS, output(&[0xff; 7]))),
        _ => (create_ok(), (status::SUCCESS, vec![9, 0, 72])),
    };
    vec![
        reply_with(&h[0], status::SUCCESS, &create),
        reply_with(&h[1], q.0, &q.1),
        reply(&h[2], status::SUCCESS, None, 1),
    ]
}

/// A batched EA query: each chain its own related compound (its own
/// frame), every frame sent before a reply is read, each path's own answer from its chain (a
/// garbled or short reply is that path's EIO, never a panic), and no more
/// paths than the credits pay for.
#[test]
fn batched_ea_queries_answer_per_chain() {
    use alloc::string::ToString;
    use core::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Mutex};
    let frames = Arc::new(Mutex::new(Vec::new()));
    let seen = frames.clone();
    let chain = Arc::new(AtomicUsize::new(0));
    let n = chain.clone();
    // The step clock moves 50 ms a reading: room for 36 replies.
    let mut c = conn(100_000);
    let t = FnTransport::new(move |f: &[u8]| {
        let h = requests(f);
        seen.lock().unwrap().push(h.len());
        h.chunks(3)
            .flat_map(|h| {
                assert_eq!(
                    h.iter().map(|h| h.command).collect::<Vec<_>>(),
                    [cmd::CREATE, cmd::QUERY_INFO, cmd::CLOSE]
                );
                assert_eq!(h[0].flags & flags::RELATED, 0, "each chain starts afresh");
                assert!(h[1..].iter().all(|h| h.flags & flags::RELATED != 0));
                ea_chain_reply(n.fetch_add(1, Ordering::SeqCst), h)
            })
            .collect()
    });
    c.test_link(Box::new(t), None);
    c.link.as_mut().unwrap().credits = 100;
    let paths: Vec<String> = (0..12).map(|i| format!("d/f{i}")).collect();
    let refs: Vec<&str> = paths.iter().map(|p| p.as_str()).collect();
    let r = c.query_eas_many(&refs).unwrap();
    assert_eq!(*frames.lock().unwrap(), [3; 12], "one frame per chain");
    assert_eq!(r.len(), 12);
    for (i, a) in r.iter().enumerate() {
        match i % 6 {
            0 => assert_eq!(a, &Ok(Vec::new()), "{i}"),
            1 => {
                let eas = a.as_ref().unwrap();
                assert_eq!(
                    (eas[0].name.to_string(), &eas[0].value[..]),
                    ("srv".into(), &b"1"[..])
                );
            }
            2 => assert_eq!(a, &Err(SmbError::Status(0xc000_0022)), "{i}"),
            3 => assert_eq!(a, &Err(SmbError::Status(status::NOT_SUPPORTED)), "{i}"),
            _ => assert!(matches!(a, Err(SmbError::Wire(_))), "{i}: {a:?}"),
        }
    }
    // Credits for 4 chains (13 / 3): only the first 4 paths are asked.
    c.link.as_mut().unwrap().credits = 13;
    frames.lock().unwrap().clear();
    let r = c.query_eas_many(&refs).unwrap();
    assert_eq!(r.len(), 4);
    assert_eq!(*frames.lock().unwrap(), [3; 4]);
}

/// A server that answers a batched EA query with fewer replies than
/// requests (the last chain's CLOSE never comes): the whole question
/// fails (a timeout, EIO on a soft mount), nothing is made up, no panic.
#[test]
fn a_batch_answered_short_fails_whole() {
    let mut c = conn(1000);
    let t = FnTransport::new(|f: &[u8]| {
        let h = requests(f);
        let mut out: Vec<Vec<u8>> = h.chunks(3).flat_map(|h| ea_chain_reply(0, h)).collect();
        out.pop();
        out
    });
    c.test_link(Box::new(t), None);
    c.link.as_mut().unwrap().credits = 100;
    let r = c.query_eas_many(&["a", "b", "c"]);
    assert!(matches!(r, Err(SmbError::Timeout)), "{r:?}");
    assert!(!c.is_connected(), "the link is dropped after a timeout");
}

/// Review of the batched EA query (issue 48): a server that sends one
/// STATUS_PENDING interim reply for each CREATE of a batch (Windows does
/// for an open that waits on another client's oplock or lease break;
/// Samba for one that waits on a share-mode or lease break) answers every
/// chain, yet the batch fails as a whole: the interim cap
/// ([`MAX_INTERIM`], 64) is counted per exchange, not per request, so a
/// batch of more than 64 chains that each go pending once is refused as
/// "too many interim replies" and the link dropped, where each path asked
/// alone would have had its answer.
#[test]
fn a_batch_whose_creates_each_go_pending_once_is_answered() {
    let mut c = conn(10_000_000);
    let t = FnTransport::new(|f: &[u8]| {
        let h = requests(f);
        h.chunks(3)
            .enumerate()
            .flat_map(|(i, h)| {
                let mut out = vec![reply(&h[0], status::PENDING, Some(1 + i as u64), 1)];
                out.extend(ea_chain_reply(0, h));
                out
            })
            .collect()
    });
    c.test_link(Box::new(t), None);
    // 300 credits pay for 100 chains: a batch of 100 paths.
    c.link.as_mut().unwrap().credits = 300;
    let paths: Vec<String> = (0..100).map(|i| format!("d/f{i}")).collect();
    let refs: Vec<&str> = paths.iter().map(|p| p.as_str()).collect();
    let r = c.query_eas_many(&refs);
    let r = r.expect("each chain was answered (one interim reply each)");
    assert_eq!(r.len(), 100);
    assert!(r.iter().all(|a| a == &Ok(Vec::new())));
    assert!(c.is_connected());
    assert_eq!(c.stats().interim, 100, "interim replies counted");
}

/// Review of the batched EA query (issue 48): the request timeout is one
/// deadline for the whole exchange, sized for a chain of three, and a
/// batch of 128 chains is 384 requests under it. A server that answers
/// steadily, each reply well inside the timeout of the one before (the
/// step clock moves 50 ms a reading, one reading a reply: a server
/// that spends that long on each open, as a slow NAS or one scanning
/// opens does), answers every chain, yet the batch times out as a whole
/// and the link is dropped, where each path asked alone (three replies,
/// well under a second) would have had its answer.
#[test]
fn a_steady_server_answers_a_full_batch_within_the_timeout() {
    let mut c = conn(10_000);
    let t = FnTransport::new(|f: &[u8]| {
        let h = requests(f);
        h.chunks(3).flat_map(|h| ea_chain_reply(0, h)).collect()
    });
    c.test_link(Box::new(t), None);
    // 384 credits pay for the default eacache_batch= of 128 chains.
    c.link.as_mut().unwrap().credits = 384;
    let paths: Vec<String> = (0..128).map(|i| format!("d/f{i}")).collect();
    let refs: Vec<&str> = paths.iter().map(|p| p.as_str()).collect();
    let r = c.query_eas_many(&refs);
    let r = r.expect("every chain was answered, each reply inside the timeout");
    assert_eq!(r.len(), 128);
    assert!(c.is_connected());
}

/// Review of the batched EA query (issue 48): MS-SMB2 3.2.4.1.4 and
/// 3.3.5.2.7 give two styles of compounding, related (every request but
/// the first has SMB2_FLAGS_RELATED_OPERATIONS) and unrelated (none has
/// it), which "MUST NOT be intermixed in the same transport send" (the
/// server SHOULD fail each request with STATUS_INVALID_PARAMETER). A
/// compound of several CREATE + QUERY_INFO + CLOSE chains is both at once;
/// each chain must go out as its own related compound (several frames of
/// one send still cost one round trip).
#[test]
fn a_batched_ea_query_never_mixes_compounding_styles_in_a_frame() {
    use std::sync::{Arc, Mutex};
    let mixed = Arc::new(Mutex::new(Vec::new()));
    let seen = mixed.clone();
    let mut c = conn(100_000);
    let t = FnTransport::new(move |f: &[u8]| {
        let h = requests(f);
        let related = h[1..].iter().all(|h| h.flags & flags::RELATED != 0);
        let unrelated = h.iter().all(|h| h.flags & flags::RELATED == 0);
        if !related && !unrelated {
            seen.lock().unwrap().push(h.len());
        }
        h.chunks(3).flat_map(|h| ea_chain_reply(0, h)).collect()
    });
    c.test_link(Box::new(t), None);
    c.link.as_mut().unwrap().credits = 100;
    let paths: Vec<String> = (0..12).map(|i| format!("d/f{i}")).collect();
    let refs: Vec<&str> = paths.iter().map(|p| p.as_str()).collect();
    assert_eq!(c.query_eas_many(&refs).unwrap().len(), 12);
    assert_eq!(
        *mixed.lock().unwrap(),
        Vec::<usize>::new(),
        "sizes of the frames that mix related and unrelated requests"
    );
}

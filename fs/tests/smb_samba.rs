//! The SMB2/3 client against a real loopback Samba (the `qemu::samba`
//! fixture): authentication, each dialect with signing on and off,
//! listings with EaSize, WSL EAs absent and present, stat, read, counters
//! and trace, reconnect, forged and malformed replies, timeouts.
//!
//! Skips (with the reason; a failure under `REQUIRE_FIXTURES=1`, see
//! `qemu::fixtures`) only when the fixture cannot run here: smbd/smbpasswd
//! not installed, or not root.

use fs::errno::Errno;
use fs::fstype::cifs::errmap::{trace_rc, SmbErrno};
use qemu::samba::client_share::{self, file_bytes, ENTRIES, FILE_LEN, WSL_ENTRIES};
use qemu::samba::Fixture;
use smb::wire::dirinfo::class;
use smb::wire::negotiate::{dialect, sign_alg};
use smb::wire::status;
use smb::{
    Config, Connection, Connector, FaultInjector, Faults, Signing, SmbError, StdClock,
    TcpTransport, Transport, TransportError, WslEas,
};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The share every test uses ([`client_share`]): 20 dirs, the first three
/// with WSL EAs, d010 with a non-WSL EA, one 1.5 MB file.
fn fixture() -> Option<Fixture> {
    client_share::start("smb_samba")
}

/// A connector whose transports go through a shared [`Faults`].
struct FaultyConnector {
    addr: SocketAddr,
    faults: Arc<Faults>,
}

impl Connector for FaultyConnector {
    fn connect(&mut self) -> Result<Box<dyn Transport>, TransportError> {
        let t = TcpTransport::connect(self.addr, 2000)?;
        Ok(Box::new(FaultInjector::new(
            Box::new(t),
            self.faults.clone(),
        )))
    }
}

fn config(fx: &Fixture, password: &str) -> Config {
    let mut c = Config::new("127.0.0.1", &fx.share, &fx.user, password);
    c.timeout_ms = 5000;
    c
}

fn connect_with(fx: &Fixture, cfg: Config) -> (Connection, Arc<Faults>) {
    let faults = Faults::new();
    let conn = Connection::new(
        cfg,
        Box::new(FaultyConnector {
            addr: fx.addr(),
            faults: faults.clone(),
        }),
        Box::new(StdClock::default()),
    );
    (conn, faults)
}

fn connect(fx: &Fixture) -> (Connection, Arc<Faults>) {
    connect_with(fx, config(fx, &fx.password))
}

fn expected_wsl(i: usize) -> WslEas {
    WslEas {
        uid: Some(1000 + i as u32),
        gid: Some(2000 + i as u32),
        mode: Some(0o040_750),
        dev: Some((0, 0)),
    }
}

#[test]
fn auth_right_and_wrong_password() {
    let Some(fx) = fixture() else { return };
    let (mut ok, _) = connect(&fx);
    ok.connect().expect("right password");
    assert!(ok.is_connected());
    let (mut bad, _) = connect_with(&fx, config(&fx, "not-the-password"));
    let e = bad.connect().unwrap_err();
    assert_eq!(e, SmbError::Status(status::LOGON_FAILURE), "{e}");
    assert_eq!(e.errno(), Errno::EACCES);
    assert!(!bad.is_connected());
    // An operation reports the same, without retry loops.
    assert_eq!(
        bad.stat("d000").unwrap_err(),
        SmbError::Status(status::LOGON_FAILURE)
    );
    assert_eq!(bad.stats().get(1).failed, 2, "{}", bad.render_stats());
}

#[test]
fn each_dialect_with_signing_on_and_off() {
    let Some(fx) = fixture() else { return };
    let cases: &[(u16, &[u16], Option<smb::crypto::SignAlg>)] = &[
        (
            dialect::SMB3_1_1,
            &[sign_alg::AES_GMAC, sign_alg::AES_CMAC],
            None,
        ),
        (dialect::SMB3_1_1, &[sign_alg::AES_CMAC], None),
        (dialect::SMB3_1_1, &[sign_alg::HMAC_SHA256], None),
        (dialect::SMB3_0_2, &[], None),
        (dialect::SMB2_1, &[], None),
    ];
    use smb::crypto::SignAlg;
    for &(d, algs, _) in cases {
        for signing in [Signing::Off, Signing::On] {
            let mut cfg = config(&fx, &fx.password);
            cfg.dialects = vec![d];
            if !algs.is_empty() {
                cfg.signing_algs = algs.to_vec();
            }
            cfg.signing = signing;
            let (mut c, _) = connect_with(&fx, cfg);
            let what = format!("dialect {d:#x} algs {algs:?} {signing:?}");
            let list = c.list_dir("/").unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(c.dialect(), Some(d), "{what}");
            let want_alg = match d {
                dialect::SMB3_1_1 => SignAlg::from_id(algs[0]).unwrap(),
                dialect::SMB3_0_2 => SignAlg::AesCmac,
                _ => SignAlg::HmacSha256,
            };
            assert_eq!(c.signing_alg(), Some(want_alg), "{what}");
            assert_eq!(c.signs_all(), signing == Signing::On, "{what}");
            assert_eq!(list.len(), ENTRIES + 1, "{what}");
            let st = c.stat("d005").unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(st.directory, "{what}");
            assert_eq!(c.query_wsl_eas("d005").unwrap(), None, "{what}");
            assert_eq!(
                c.query_wsl_eas("d001").unwrap(),
                Some(expected_wsl(1)),
                "{what}"
            );
            c.disconnect();
        }
    }
}

#[test]
fn listing_carries_ea_size_and_attributes() {
    let Some(fx) = fixture() else { return };
    let (mut c, _) = connect(&fx);
    for cls in [class::ID_BOTH_DIRECTORY, class::FULL_DIRECTORY] {
        let mut list = c.list_dir_class("", cls).unwrap();
        list.sort_by(|a, b| a.name.cmp(&b.name));
        let names: Vec<&str> = list.iter().map(|d| d.name.as_str()).collect();
        let mut want: Vec<String> = (0..ENTRIES).map(qemu::samba::entry_name).collect();
        want.push("big.bin".into());
        want.sort();
        assert_eq!(names, want);
        for d in &list {
            let i: Option<usize> = d.name.strip_prefix('d').and_then(|n| n.parse().ok());
            match i {
                Some(i) => {
                    assert!(d.is_dir(), "{}", d.name);
                    let has_ea = i < WSL_ENTRIES || i == 10;
                    assert_eq!(d.ea_size.unwrap() > 0, has_ea, "{} {:?}", d.name, d.ea_size);
                }
                None => {
                    assert!(!d.is_dir());
                    assert_eq!(d.end_of_file, FILE_LEN as u64);
                    assert_eq!(d.ea_size, Some(0));
                }
            }
            assert_eq!(d.reparse_tag, None);
            assert_eq!(d.file_id.is_some(), cls == class::ID_BOTH_DIRECTORY);
            assert!(d.times.last_write > 116_444_736_000_000_000);
        }
    }
    // FileIdExtdDirectoryInformation: used when the server supports it.
    match c.list_dir_class("", class::ID_EXTD_DIRECTORY) {
        Ok(l) => assert_eq!(l.len(), ENTRIES + 1),
        Err(SmbError::Status(s)) => assert!(
            s == status::INVALID_INFO_CLASS
                || s == status::NOT_SUPPORTED
                || s == status::INVALID_PARAMETER,
            "{s:#x}"
        ),
        Err(e) => panic!("{e}"),
    }
    // Three frames: CREATE+QUERY_DIRECTORY, QUERY_DIRECTORY, CLOSE.
    c.reset_stats();
    c.list_dir("").unwrap();
    assert_eq!(c.stats().frames, 3, "{}", c.render_stats());
    // Errors.
    assert_eq!(c.list_dir("nope").unwrap_err().errno(), Errno::ENOENT);
    assert_eq!(c.list_dir("big.bin").unwrap_err().errno(), Errno::ENOTDIR);
}

#[test]
fn wsl_eas_absent_and_present_stat_and_read() {
    let Some(fx) = fixture() else { return };
    let (mut c, _) = connect(&fx);
    for i in 0..WSL_ENTRIES {
        let name = qemu::samba::entry_name(i);
        assert_eq!(
            c.query_wsl_eas(&name).unwrap(),
            Some(expected_wsl(i)),
            "{name}"
        );
    }
    // Only a non-WSL EA: no WSL metadata.
    assert_eq!(c.query_wsl_eas("d010").unwrap(), None);
    c.reset_stats();
    c.trace_mut().clear();
    for i in 11..ENTRIES {
        let name = qemu::samba::entry_name(i);
        assert_eq!(c.query_wsl_eas(&name).unwrap(), None, "{name}");
    }
    let n = (ENTRIES - 11) as u64;
    let s = c.render_stats();
    assert!(
        s.contains(&format!("QueryInfos: {n} total {n} failed\n")),
        "{s}"
    );
    assert!(s.contains(&format!("Creates: {n} total 0 failed\n")), "{s}");
    assert!(s.contains(&format!("Closes: {n} total 0 failed\n")), "{s}");
    assert_eq!(c.stats().frames, n);
    let dump = c.trace().dump(trace_rc);
    let errs = dump.matches("smb3_cmd_err:").count() as u64;
    let no_eas = dump.matches("cmd=16 ").count() as u64;
    assert_eq!(errs, n, "{dump}");
    assert_eq!(no_eas, 2 * n, "{dump}");
    assert_eq!(dump.matches("status=0xc0000052 rc=-61").count() as u64, n);
    assert_eq!(dump.matches("smb3_cmd_enter:").count() as u64, 3 * n);

    let e = c.query_wsl_eas("missing").unwrap_err();
    assert_eq!(e, SmbError::Status(status::OBJECT_NAME_NOT_FOUND));
    assert_eq!(e.errno(), Errno::ENOENT);

    let st = c.stat("big.bin").unwrap();
    assert!(!st.directory);
    assert_eq!(st.end_of_file, FILE_LEN as u64);
    assert_eq!(st.ea_size, Some(0));
    assert!(c.stat("d000").unwrap().ea_size.unwrap() > 0);
    assert_eq!(c.stat("d000/missing").unwrap_err().errno(), Errno::ENOENT);

    let data = c.read_file("big.bin").unwrap();
    assert!(data == file_bytes(), "read {} bytes", data.len());
    assert_eq!(c.read_file("d000").unwrap_err().errno(), Errno::EISDIR);
}

#[test]
fn reconnect_after_drop_and_session_loss() {
    let Some(fx) = fixture() else { return };
    let (mut c, faults) = connect(&fx);
    c.stat("d000").unwrap();
    assert_eq!(c.stats().connects, 1);
    // The connection drops under the next request: reconnect, retry.
    faults.drop_next_send.store(true, Ordering::SeqCst);
    assert!(c.stat("d001").unwrap().directory);
    assert_eq!(c.stats().connects, 2);
    // The client lost the link between operations: the next one reconnects.
    c.drop_link();
    assert_eq!(c.query_wsl_eas("d002").unwrap(), Some(expected_wsl(2)));
    assert_eq!(c.stats().connects, 3);
    assert_eq!(c.generation(), 3);
    // smbd restarts are covered by a fresh connect: kill the TCP session
    // server-side by stopping the fixture.
    let mut fx = fx;
    fx.stop();
    let e = c.stat("d000").unwrap_err();
    assert!(
        matches!(e, SmbError::ConnectFailed | SmbError::Disconnected),
        "{e:?}"
    );
    assert!(matches!(e.errno(), Errno::EIO | Errno::EHOSTDOWN));
}

#[test]
fn forged_and_malformed_replies_are_errors() {
    let Some(fx) = fixture() else { return };
    let mut cfg = config(&fx, &fx.password);
    cfg.signing = Signing::On;
    let (mut c, faults) = connect_with(&fx, cfg);
    c.stat("d000").unwrap();
    // A flipped bit in a signed reply body: the signature check catches it.
    faults.corrupt_at.store(100, Ordering::SeqCst);
    faults.corrupt_xor.store(0x01, Ordering::SeqCst);
    assert_eq!(c.stat("d000").unwrap_err(), SmbError::BadSignature);
    assert!(!c.is_connected());
    assert_eq!(SmbError::BadSignature.errno(), Errno::EIO);
    assert!(
        c.stat("d000").unwrap().directory,
        "reconnects after a forgery"
    );

    // Unsigned session: truncations and bit flips of real replies must be
    // errors or (for bytes nobody reads) harmless — never a panic.
    let (mut c, faults) = connect(&fx);
    let mut errors = 0;
    for k in 0..48usize {
        if k % 2 == 0 {
            faults.truncate_to.store(k * 13 % 300, Ordering::SeqCst);
        } else {
            faults.corrupt_at.store(k * 37 % 400, Ordering::SeqCst);
            faults.corrupt_xor.store(1 << (k % 8), Ordering::SeqCst);
        }
        let r = match k % 3 {
            0 => c.stat("d003").map(|_| ()),
            1 => c.query_wsl_eas("d000").map(|_| ()),
            _ => c.list_dir("").map(|_| ()),
        };
        if r.is_err() {
            errors += 1;
        }
    }
    assert!(
        errors > 10,
        "only {errors} of 48 damaged replies were noticed"
    );
    // And the connection still works afterwards.
    assert_eq!(c.list_dir("").unwrap().len(), ENTRIES + 1);
}

#[test]
fn soft_timeouts_are_eio() {
    // A server that accepts and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let mut cfg = Config::new("127.0.0.1", "share", "u", "p");
    cfg.timeout_ms = 300;
    let mut c = Connection::tcp(cfg, addr);
    let t = Instant::now();
    let e = c.stat("x").unwrap_err();
    assert_eq!(e, SmbError::Timeout);
    assert_eq!(e.errno(), Errno::EIO);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(c.trace().dump(trace_rc).contains("smb3_cmd_err:"));
    drop(silent);

    // A live session whose server goes silent.
    let Some(fx) = fixture() else { return };
    let mut cfg = config(&fx, &fx.password);
    cfg.timeout_ms = 300;
    let (mut c, faults) = connect_with(&fx, cfg);
    c.stat("d000").unwrap();
    faults.swallow.store(true, Ordering::SeqCst);
    assert_eq!(c.stat("d000").unwrap_err().errno(), Errno::EIO);
    faults.swallow.store(false, Ordering::SeqCst);
    assert!(c.stat("d000").unwrap().directory);
}

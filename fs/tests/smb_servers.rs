//! The client against Samba configured the ways a Linux user meets servers
//! (issue 14): each dialect with `server max protocol` set to it, signing
//! mandatory, `smb encrypt = required`, and the mount-failure messages in
//! Linux's words. Each test starts and stops its own `qemu::samba` fixture.
//!
//! Skips (passing, with a printed note) only when the fixture cannot run
//! here: smbd/smbpasswd not installed, or not root.

use fs::smb::wire::negotiate::dialect;
use fs::smb::{Config, Connection, Signing};
use qemu::samba::{Fixture, FixtureOpts};

const ENTRIES: usize = 6;

/// Deterministic file contents (a checksum of them is compared).
fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 31 + seed * 7) % 251) as u8)
        .collect()
}

/// FNV-1a 64: a checksum that differs for any single-byte change.
fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// A fixture with `ENTRIES` directories, a 1-byte file and a 3 MB file,
/// and the given tweaks; `None` (after printing SKIP) where Samba cannot run.
fn fixture_with(tweak: impl FnOnce(&mut FixtureOpts)) -> Option<Fixture> {
    if let Err(why) = Fixture::available() {
        println!("SKIP smb_servers: {why}");
        return None;
    }
    let mut opts = FixtureOpts {
        entries: ENTRIES,
        ..Default::default()
    };
    opts.files.push(("one.bin".into(), pattern(1, 1)));
    opts.files.push(("big.bin".into(), pattern(3 << 20, 2)));
    tweak(&mut opts);
    Some(Fixture::start(&opts).expect("Samba fixture must start when smbd is installed"))
}

fn config(fx: &Fixture, dialects: &[u16]) -> Config {
    let mut c = Config::new("127.0.0.1", &fx.share, &fx.user, &fx.password);
    c.timeout_ms = 10_000;
    c.dialects = dialects.to_vec();
    c
}

/// List, stat, and read the 1-byte and the 3 MB file with checksums.
fn list_stat_read(c: &mut Connection, what: &str) {
    let list = c
        .list_dir("")
        .unwrap_or_else(|e| panic!("{what}: list: {e}"));
    assert_eq!(list.len(), ENTRIES + 2, "{what}");
    let st = c
        .stat("d003")
        .unwrap_or_else(|e| panic!("{what}: stat: {e}"));
    assert!(st.directory, "{what}");
    let st = c
        .stat("big.bin")
        .unwrap_or_else(|e| panic!("{what}: stat: {e}"));
    assert_eq!(st.end_of_file, 3 << 20, "{what}");
    let one = c
        .read_file("one.bin")
        .unwrap_or_else(|e| panic!("{what}: read: {e}"));
    assert_eq!(one, pattern(1, 1), "{what}");
    let big = c
        .read_file("big.bin")
        .unwrap_or_else(|e| panic!("{what}: read: {e}"));
    assert_eq!(big.len(), 3 << 20, "{what}");
    assert_eq!(fnv(&big), fnv(&pattern(3 << 20, 2)), "{what}: checksum");
}

/// Each dialect against a server whose `server max protocol` is that
/// dialect: the default offer (Linux's `vers=default`) reaches 2.1 and up,
/// `vers=2.0` reaches a 2.0.2-only server, and each single-dialect offer
/// gets exactly that dialect.
#[test]
fn each_dialect_against_a_server_capped_at_it() {
    let cases: &[(&str, u16)] = &[
        ("SMB2_02", dialect::SMB2_0_2),
        ("SMB2_10", dialect::SMB2_1),
        ("SMB3_00", dialect::SMB3_0),
        ("SMB3_02", dialect::SMB3_0_2),
        ("SMB3_11", dialect::SMB3_1_1),
    ];
    for &(proto, d) in cases {
        let Some(fx) = fixture_with(|o| o.max_protocol = Some(proto.into())) else {
            return;
        };
        let what = format!("server max protocol {proto}");
        let mut c = Connection::tcp(config(&fx, &[d]), fx.addr());
        list_stat_read(&mut c, &what);
        assert_eq!(c.dialect(), Some(d), "{what}");
        c.disconnect();
        if d != dialect::SMB2_0_2 {
            // The default offer negotiates the server's highest dialect.
            let cfg = Config::new("127.0.0.1", &fx.share, &fx.user, &fx.password);
            let mut c = Connection::tcp(cfg, fx.addr());
            c.connect()
                .unwrap_or_else(|e| panic!("{what}: default offer: {e}"));
            assert_eq!(c.dialect(), Some(d), "{what}: default offer");
            c.disconnect();
        }
    }
}

/// `server signing = mandatory`: every dialect signs every request even
/// with the client's signing off, and the session works.
#[test]
fn signing_mandatory_each_dialect() {
    let Some(fx) = fixture_with(|o| o.server_signing = Some("mandatory".into())) else {
        return;
    };
    for d in [
        dialect::SMB2_0_2,
        dialect::SMB2_1,
        dialect::SMB3_0,
        dialect::SMB3_0_2,
        dialect::SMB3_1_1,
    ] {
        let what = format!("signing mandatory, dialect {}", dialect::name(d));
        let mut cfg = config(&fx, &[d]);
        cfg.signing = Signing::Off;
        let mut c = Connection::tcp(cfg, fx.addr());
        list_stat_read(&mut c, &what);
        assert!(c.signs_all(), "{what}");
        c.disconnect();
    }
}

/// `smb encrypt = required` (global, then on the share only): every 3.x
/// dialect switches encryption on by itself (no `seal`), with the cipher
/// Linux would get (3.1.1: GCM preferred, CCM when only CCM is offered;
/// 3.0.x: CCM), and lists, stats and reads 1 byte and 3 MB with correct
/// checksums. 2.1 cannot encrypt: the error says so in Linux's words.
#[test]
fn encryption_required_each_3x_dialect_and_cipher() {
    use fs::smb::crypto::Cipher;
    use fs::smb::wire::negotiate::cipher;
    for (scope, global) in [("global", true), ("share", false)] {
        let Some(fx) = fixture_with(|o| {
            let line = "smb encrypt = required".to_string();
            if global {
                o.extra_global.push(line);
            } else {
                o.extra_share.push(line);
            }
        }) else {
            return;
        };
        let cases: &[(u16, &[u16], Cipher)] = &[
            (dialect::SMB3_0, &[], Cipher::Aes128Ccm),
            (dialect::SMB3_0_2, &[], Cipher::Aes128Ccm),
            (
                dialect::SMB3_1_1,
                &[cipher::AES_128_GCM, cipher::AES_128_CCM],
                Cipher::Aes128Gcm,
            ),
            (dialect::SMB3_1_1, &[cipher::AES_128_CCM], Cipher::Aes128Ccm),
        ];
        for &(d, ciphers, want) in cases {
            let what = format!("encrypt required ({scope}), {}", dialect::name(d));
            let mut cfg = config(&fx, &[d]);
            if !ciphers.is_empty() {
                cfg.ciphers = ciphers.to_vec();
            }
            let mut c = Connection::tcp(cfg, fx.addr());
            list_stat_read(&mut c, &what);
            assert_eq!(c.cipher(), Some(want), "{what}");
            let st = c.stats();
            assert!(st.sealed > 5, "{what}: {}", c.render_stats());
            assert_eq!(st.decrypt_failed, 0, "{what}");
            c.disconnect();
        }
        let mut c = Connection::tcp(config(&fx, &[dialect::SMB2_1]), fx.addr());
        let e = c.connect().unwrap_err();
        assert_eq!(e, fs::smb::SmbError::EncryptionRequired, "{scope}: {e}");
        assert_eq!(e.errno(), fs::errno::Errno::EACCES);
    }
}

/// `seal` against a server that does not require encryption: every
/// request after SESSION_SETUP goes sealed and the replies come sealed;
/// on 2.1 `seal` is refused before any data moves.
#[test]
fn seal_on_a_server_that_does_not_require_it() {
    let Some(fx) = fixture_with(|_| {}) else {
        return;
    };
    for d in [dialect::SMB3_0_2, dialect::SMB3_1_1] {
        let what = format!("seal, {}", dialect::name(d));
        let mut cfg = config(&fx, &[d]);
        cfg.seal = true;
        let mut c = Connection::tcp(cfg, fx.addr());
        list_stat_read(&mut c, &what);
        assert!(c.cipher().is_some(), "{what}");
        let frames = c.stats().frames;
        // NEGOTIATE and the two SESSION_SETUPs go in clear.
        assert_eq!(c.stats().sealed, frames - 3, "{what}");
        c.disconnect();
    }
    let mut cfg = config(&fx, &[dialect::SMB2_1]);
    cfg.seal = true;
    let e = Connection::tcp(cfg, fx.addr()).connect().unwrap_err();
    assert!(
        matches!(e, fs::smb::SmbError::EncryptionUnavailable(_)),
        "{e}"
    );
}

//! `make eacache-check`: per server (Samba, ksmbd, impacket) and EA-cache
//! design, does our client ever answer "no such EA" for an EA that exists
//! (`hidden`) or that it has just set (`stale_after_set`), and what does a
//! cold and a warm `ls -la` cost in round trips. One line each, exact, for
//! tools:
//!
//! `eacache-check server=S client=proto design=D default=yes|no hidden=H stale_after_set=S lsla_rt_cold=C lsla_rt_warm=W`
//!
//! The share, the same on every server ([`qemu::eashare`]): files `a0`
//! `a1` `a2` and `f-set` without EAs, file `b-ea` and directory `c-ea`
//! carrying `user.srv` set on the server's side. Per design, on a
//! fresh mount (`acregmax=60,acdirmax=60`, `eacache_k=2`; the setxattr
//! rounds on a second one with `acdirmax=0`, so that every listing reaches
//! the server):
//! - `ls -la` as coreutils 9.7 runs it (the listing, then `lstat` and
//!   `llistxattr` of `.` and each entry), cold then warm: round trips are
//!   the compounds sent; an EA-bearing entry whose list lacks `user.srv`
//!   counts as hidden, as does a `getxattr(user.srv)` answered ENODATA;
//! - `stale_after_set`: rounds of `setxattr(f-set, user.x)`, a listing
//!   (ksmbd lists EaSize 0 for it), `getxattr` and `listxattr`; one round
//!   whose listing reply is held while the setxattr runs (the client's
//!   hook); and rounds of setxattr + getxattr beside a thread listing the
//!   share. Every answer without the EA counts.
//!
//! `default=yes` designs (`easize`) and `always` must show `hidden=0
//! stale_after_set=0` on every server: asserted. `negcache` is the opt-in
//! that believes EaSize 0 on any server; its line says what it hides.
//! `off` answers EOPNOTSUPP by definition and is left out. impacket
//! refuses the EA class (EOPNOTSUPP, never "absent"): its EAs cannot be
//! hidden, and its sets fail, so its lines measure the cost only.
//!
//! ksmbd runs in a QEMU guest ([`qemu::ksmbd`]), booted once for its test.

mod roundtrips;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use fs::errno::Errno;
use fs::fstype::cifs::{eacache, CifsFs};
use fs::inode::SuperBlock;
use fs::vfs::Vfs;
use qemu::eashare::{self, Line, EA_DIR, EA_FILE};
use smb::StdClock;

const EA_NAME: &[u8] = eashare::EA_NAME.as_bytes();
/// The designs measured; `off` answers EOPNOTSUPP by definition.
const DESIGNS: &[&str] = &["always", "easize", "negcache"];

/// A server as the check sees it.
struct Target {
    server: &'static str,
    addr: SocketAddr,
    user: String,
    password: String,
    share: String,
    /// Further mount options (`vers=2.0` for impacket).
    extra: &'static str,
    /// setxattr rounds of each kind (fewer against the TCG guest, where a
    /// round trip costs milliseconds: 25 keep its test near 45 s).
    rounds: usize,
}

struct Mounted {
    v: Arc<Vfs>,
    sb: Arc<SuperBlock>,
    sent: Arc<AtomicU64>,
}

/// A mount with `design`; `acdirmax` 60 for the listings, 0 for the
/// setxattr rounds (every listing then reaches the server, whose EaSize
/// for the file just set is what the rounds test).
fn mount(t: &Target, design: &str, acdirmax: u32) -> Mounted {
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/mnt", 0o755).unwrap();
    let o = format!(
        "username={},password={},eacache={design},eacache_k=2,acregmax=60,acdirmax={acdirmax}{}",
        t.user, t.password, t.extra
    );
    let (v, sb, sent) = roundtrips::mount(t.addr, &t.share, &o)
        .unwrap_or_else(|e| panic!("{}: mount {o}: {e}", t.server));
    Mounted {
        v: Arc::new(v),
        sb,
        sent,
    }
}

/// coreutils 9.7 `ls -la /mnt`: (round trips, EAs hidden).
fn ls_la(m: &Mounted) -> (u64, u64) {
    let s0 = m.sent.load(Ordering::Relaxed);
    let mut names: Vec<Vec<u8>> =
        m.v.readdir(b"/mnt")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .filter(|n| n != b"." && n != b"..")
            .collect();
    names.sort();
    let mut hidden = 0;
    let _ = m.v.lstat(b"/mnt");
    let _ = m.v.xattr_names(b"/mnt", false);
    for n in &names {
        let p = [b"/mnt/", &n[..]].concat();
        m.v.lstat(&p).unwrap();
        let has = n == EA_FILE.as_bytes() || n == EA_DIR.as_bytes();
        match m.v.xattr_names(&p, false) {
            Ok(l) if has && !l.iter().any(|x| x == EA_NAME) => hidden += 1,
            Err(Errno::ENODATA) if has => hidden += 1,
            _ => {}
        }
    }
    (m.sent.load(Ordering::Relaxed) - s0, hidden)
}

/// `getxattr(user.srv)` on both EA-bearing entries: how many answer ENODATA.
fn get_hidden(m: &Mounted) -> u64 {
    [EA_FILE, EA_DIR]
        .iter()
        .filter(|n| {
            let p = format!("/mnt/{n}");
            m.v.xattr_value(p.as_bytes(), EA_NAME, false) == Err(Errno::ENODATA)
        })
        .count() as u64
}

/// Whether `user.x` is missing from `f-set` for getxattr or listxattr.
fn missing_x(v: &Vfs, val: &[u8]) -> u64 {
    let mut n = 0;
    match v.xattr_value(b"/mnt/f-set", b"user.x", true) {
        Ok(got) => assert_eq!(got, val, "getxattr(user.x) after setxattr"),
        Err(_) => n += 1,
    }
    match v.xattr_names(b"/mnt/f-set", true) {
        Ok(l) if l.iter().any(|x| x == b"user.x") => {}
        _ => n += 1,
    }
    n
}

/// (stale answers, successful sets).
fn stale_after_set(t: &Target, m: &Mounted) -> (u64, u64) {
    let v = &m.v;
    let (mut stale, mut sets) = (0, 0);
    for i in 0..t.rounds {
        let val = format!("s{i}");
        if v.setxattr(b"/mnt/f-set", b"user.x", val.as_bytes(), 0)
            .is_err()
        {
            continue;
        }
        sets += 1;
        v.readdir(b"/mnt").unwrap();
        stale += missing_x(v, val.as_bytes());
        let _ = v.removexattr(b"/mnt/f-set", b"user.x");
        v.readdir(b"/mnt").unwrap();
    }
    // A listing sent before the setxattr, its reply applied after it.
    let fs = m.sb.ops_as::<CifsFs>().unwrap();
    let set = v.clone();
    let ok = Arc::new(AtomicBool::new(false));
    let ok2 = ok.clone();
    fs.on_next_listing_reply(move || {
        ok2.store(
            set.setxattr(b"/mnt/f-set", b"user.x", b"held", 0).is_ok(),
            Ordering::Relaxed,
        );
    });
    v.readdir(b"/mnt").unwrap();
    if ok.load(Ordering::Relaxed) {
        sets += 1;
        stale += missing_x(v, b"held");
        let _ = v.removexattr(b"/mnt/f-set", b"user.x");
    }
    // setxattr + getxattr beside a thread listing the share.
    let stop = AtomicBool::new(false);
    let (s2, n2) = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let _ = v.readdir(b"/mnt");
            }
        });
        let (mut stale, mut sets) = (0, 0);
        for i in 0..t.rounds {
            let val = format!("r{i}");
            if v.setxattr(b"/mnt/f-set", b"user.x", val.as_bytes(), 0)
                .is_err()
            {
                continue;
            }
            sets += 1;
            match v.xattr_value(b"/mnt/f-set", b"user.x", true) {
                Ok(got) => assert_eq!(got, val.as_bytes()),
                Err(_) => stale += 1,
            }
            let _ = v.removexattr(b"/mnt/f-set", b"user.x");
        }
        stop.store(true, Ordering::Relaxed);
        (stale, sets)
    });
    (stale + s2, sets + n2)
}

/// Every design's line for `t`; asserts the default's and `always`'s.
fn check(t: &Target) {
    let mut failures = Vec::new();
    for design in DESIGNS {
        let t0 = Instant::now();
        let m = mount(t, design, 60);
        let (cold, h1) = ls_la(&m);
        let (warm, h2) = ls_la(&m);
        let h3 = get_hidden(&m);
        // The rounds on a mount that has listed the share (negcache's
        // per-tcon stop in force where K answers said none).
        let r = mount(t, design, 0);
        ls_la(&r);
        let (stale, sets) = stale_after_set(t, &r);
        let hidden = h1 + h2 + h3;
        let line = Line {
            server: t.server,
            client: "proto",
            design,
            default: *design == eacache::DEFAULT,
            hidden,
            stale_after_set: stale,
            lsla_rt_cold: cold,
            lsla_rt_warm: warm,
        };
        println!("{line}");
        eprintln!(
            "  {} {design}: hidden cold={h1} warm={h2} getxattr={h3}; {sets} sets; {:.1} s",
            t.server,
            t0.elapsed().as_secs_f64()
        );
        if (line.default || *design == "always") && line.hides() {
            failures.push(format!("{design}: hidden={hidden} stale_after_set={stale}"));
        }
    }
    assert!(failures.is_empty(), "{}: {failures:?}", t.server);
}

#[test]
fn samba() {
    use qemu::samba::Fixture;
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("eacache_check", "Samba", why);
        return;
    }
    let fx = Fixture::start(&eashare::samba_opts()).expect("samba fixture");
    check(&Target {
        server: "samba",
        addr: fx.addr(),
        user: fx.user.clone(),
        password: fx.password.clone(),
        share: fx.share.clone(),
        extra: "",
        rounds: 200,
    });
}

#[test]
fn impacket() {
    use qemu::impacket::Server;
    if let Err(why) = Server::available() {
        qemu::fixtures::skip("eacache_check", "impacket", why);
        return;
    }
    let srv = eashare::start_impacket().expect("impacket fixture");
    check(&Target {
        server: "impacket",
        addr: srv.addr(),
        user: srv.user.clone(),
        password: srv.password.clone(),
        share: srv.share.clone(),
        extra: ",vers=2.0",
        rounds: 50,
    });
}

/// What ksmbd sends for the EA-bearing entries, through the protocol
/// library (no cache): the EAs are there (FileFullEaInformation), and
/// EaSize is 0 in every listing class and in FileAllInformation. One
/// `ksmbd-easize` line per entry and class, for the record.
fn ksmbd_easize(t: &Target) {
    use smb::wire::dirinfo::class;
    use smb::{Config, Connection, TcpConnector};
    let mut cfg = Config::new("127.0.0.1", &t.share, &t.user, &t.password);
    cfg.timeout_ms = 10_000;
    let mut c = Connection::new(
        cfg,
        Box::new(TcpConnector {
            addr: t.addr,
            timeout_ms: 10_000,
        }),
        Box::new(StdClock::default()),
    );
    for n in [EA_FILE, EA_DIR] {
        let eas = c
            .query_eas(n)
            .unwrap_or_else(|e| panic!("ksmbd: EAs of {n}: {e}"));
        assert!(
            eas.iter().any(|e| e.name == "srv" && e.value == b"1"),
            "ksmbd: {n} carries srv=1 on the server: {eas:?}"
        );
        let st = c.stat(n).unwrap();
        println!(
            "ksmbd-easize entry={n} class=FileAllInformation ea_size={:?} eas={}",
            st.ea_size,
            eas.len()
        );
        assert_eq!(
            st.ea_size,
            Some(0),
            "ksmbd: FileAllInformation's EaSize of {n}"
        );
    }
    for (name, cls) in [
        ("FileFullDirectoryInformation", class::FULL_DIRECTORY),
        ("FileIdBothDirectoryInformation", class::ID_BOTH_DIRECTORY),
    ] {
        let list = c.list_dir_class("", cls).unwrap();
        for n in [EA_FILE, EA_DIR] {
            let d = list.iter().find(|d| d.name == n).expect("listed");
            println!(
                "ksmbd-easize entry={n} class={name} ea_size={:?}",
                d.ea_size
            );
            assert_eq!(d.ea_size, Some(0), "ksmbd: {name}'s EaSize of {n}");
        }
    }
    c.disconnect();
}

/// ksmbd: the guest booted once for every design; also what ksmbd sends
/// (EaSize 0 for the entries with EAs) and a server-side EA added by a
/// second client after the listing.
#[test]
fn ksmbd() {
    use qemu::ksmbd::{Fixture, KsmbdOpts};
    let t0 = Instant::now();
    let opts = KsmbdOpts {
        entries: eashare::ksmbd_entries(),
        ..KsmbdOpts::default()
    };
    let Some((image, fx)) = Fixture::start_or_skip("eacache_check", &opts) else {
        return;
    };
    eprintln!(
        "  ksmbd guest: {} ({}), NEGOTIATE answered after {:.1} s",
        fx.ready_line,
        image.tools_package,
        fx.boot_time.as_secs_f64()
    );
    let t = Target {
        server: "ksmbd",
        addr: fx.addr(),
        user: fx.user.clone(),
        password: fx.password.clone(),
        share: fx.share.clone(),
        extra: "",
        rounds: 25,
    };
    ksmbd_easize(&t);
    check(&t);
    eprintln!(
        "  ksmbd: {:.1} s from boot to the last check",
        t0.elapsed().as_secs_f64()
    );
}

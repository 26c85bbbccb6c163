//! Batched sibling EA queries (`fs::fstype::cifs::eacache`, "Batched
//! sibling queries"): where EaSize is not trusted, an entry's EA query
//! takes its listed siblings' along in one round trip.
//!
//! - Samba, a share of 300 entries without EAs (nothing proves EaSize):
//!   coreutils 9.7's `ls -la` costs a few round trips cold with the
//!   default batch, one per entry with `eacache_batch=1`, and none warm;
//!   every entry's answer is the server's (an empty list);
//! - ksmbd, the seed's 511 subdirectories, two with `user.x` (ksmbd's
//!   EaSize is 0 for all): the same, both EAs shown cold and warm;
//! - the hostile server answering a batch one reply short: the entry asked
//!   about gets EIO (after the request timeout), its siblings learn
//!   nothing, an entry asked alone afterwards gets the server's answer,
//!   and nothing panics.

mod roundtrips;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fs::errno::Errno;
use fs::fstype::cifs::CifsFs;
use fs::inode::SuperBlock;
use fs::vfs::Vfs;

fn mount(addr: SocketAddr, share: &str, opts: &str) -> (Vfs, Arc<SuperBlock>, Arc<AtomicU64>) {
    roundtrips::mount(addr, share, opts).unwrap_or_else(|e| panic!("mount {opts}: {e}"))
}

/// (round trips, EA queries sent) of one `ls -la /mnt`; every entry's
/// list must be empty but those named in `with_x`, which list `user.x`.
fn ls_la(
    v: &Vfs,
    sb: &SuperBlock,
    trips: &AtomicU64,
    entries: usize,
    with_x: &[&str],
) -> (u64, u64) {
    let fs = sb.ops_as::<CifsFs>().unwrap();
    let (t0, q0) = (
        trips.load(Ordering::Relaxed),
        fs.ea_queries.load(Ordering::Relaxed),
    );
    let l = bench::coreutils::ls_la(v, b"/mnt").unwrap();
    assert_eq!(l.entries.len(), entries);
    for e in &l.entries {
        let want = if with_x.iter().any(|n| n.as_bytes() == e.name) {
            vec![b"user.x".to_vec()]
        } else {
            Vec::new()
        };
        assert_eq!(e.xattrs, Ok(want), "{:?}", e.name);
    }
    (
        trips.load(Ordering::Relaxed) - t0,
        fs.ea_queries.load(Ordering::Relaxed) - q0,
    )
}

#[test]
fn samba_lsla_costs_a_few_round_trips() {
    use qemu::samba::{Fixture, FixtureOpts};
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_eabatch", "Samba", why);
        return;
    }
    const N: usize = 300;
    let fx = Fixture::start(&FixtureOpts {
        entries: N,
        ..FixtureOpts::default()
    })
    .expect("samba fixture");
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, fx.port));
    let base = format!(
        "username={},password={},eacache=easize,acregmax=60,acdirmax=60",
        fx.user, fx.password
    );
    let mut got = Vec::new();
    for batch in ["", ",eacache_batch=1"] {
        let (v, sb, trips) = mount(addr, &fx.share, &format!("{base}{batch}"));
        let (cold, cold_q) = ls_la(&v, &sb, &trips, N, &[]);
        let (warm, warm_q) = ls_la(&v, &sb, &trips, N, &[]);
        let fs = sb.ops_as::<CifsFs>().unwrap();
        println!(
            "eabatch server=samba entries={N} eas=0 design=easize{batch} lsla_rt_cold={cold} lsla_ea_queries_cold={cold_q} lsla_rt_warm={warm} lsla_ea_queries_warm={warm_q} batches={}",
            fs.ea_batches.load(Ordering::Relaxed)
        );
        // Each inode is asked once, batched or not (/mnt and . are one).
        assert_eq!(cold_q, N as u64 + 1, "easize{batch}");
        assert_eq!((warm, warm_q), (0, 0), "easize{batch}: warm");
        got.push(cold);
    }
    // The listing (3), /mnt alone (the tree connect's first EA query),
    // d000 alone (no walk seen yet), then from d001 on, a walk by name:
    // batches of 8, 16, 32, 64, 128 and the last 51.
    assert!(got[0] <= 11, "batched: {} round trips cold", got[0]);
    assert!(got[1] > N as u64, "one by one: {} round trips cold", got[1]);
}

/// ksmbd (EaSize never trusted: 0 for every entry, EAs or not), the
/// seed's 511 subdirectories, two of them with `user.x`: `ls -la` shows
/// both EAs, and costs a few round trips cold with the default batch
/// (every entry asked, in batches), one per entry with `eacache_batch=1`;
/// warm, only the two EA-bearing entries are asked again (their lists are
/// not kept past one call), each alone.
#[test]
fn ksmbd_lsla_costs_a_few_round_trips() {
    use qemu::ksmbd::{Entry, Fixture, KsmbdOpts};
    const N: usize = 511;
    let with_x = ["d100", "d400"];
    let mut entries: Vec<Entry> = (0..N).map(|i| Entry::Dir(format!("d{i:03}"))).collect();
    for n in with_x {
        entries.push(Entry::Xattr(n.into(), "user.x".into(), "1".into()));
    }
    let opts = KsmbdOpts {
        entries,
        ..KsmbdOpts::default()
    };
    let Some((_, fx)) = Fixture::start_or_skip("cifs_eabatch", &opts) else {
        return;
    };
    let base = format!(
        "username={},password={},eacache=easize,acregmax=60,acdirmax=60",
        fx.user, fx.password
    );
    let mut got = Vec::new();
    for batch in ["", ",eacache_batch=1"] {
        let (v, sb, trips) = mount(fx.addr(), &fx.share, &format!("{base}{batch}"));
        let (cold, cold_q) = ls_la(&v, &sb, &trips, N, &with_x);
        let (warm, warm_q) = ls_la(&v, &sb, &trips, N, &with_x);
        let fs = sb.ops_as::<CifsFs>().unwrap();
        println!(
            "eabatch server=ksmbd entries={N} eas=2 design=easize{batch} lsla_rt_cold={cold} lsla_ea_queries_cold={cold_q} lsla_rt_warm={warm} lsla_ea_queries_warm={warm_q} batches={}",
            fs.ea_batches.load(Ordering::Relaxed)
        );
        // Each inode is asked once cold (/mnt and . are one), and the two
        // with EAs, asked in a batch, once more on their own turn (a
        // sibling's list is not kept); warm, the two with EAs (ls asks
        // again on ERANGE: not with one short name).
        let again = if batch.is_empty() { 2 } else { 0 };
        assert_eq!(cold_q, N as u64 + 1 + again, "easize{batch}");
        assert_eq!(warm_q, 2, "easize{batch}: warm");
        got.push((cold, warm));
    }
    // The listing, /mnt and d000 alone, batches of 8 .. 128 by name, d100
    // and d400 on their own turns; warm, d100 and d400 each alone.
    assert!(got[0].0 <= 14, "batched: {:?}", got[0]);
    assert!(got[0].1 <= 2, "batched warm: {:?}", got[0]);
    assert!(got[1].0 > N as u64, "one by one: {:?}", got[1]);
}

/// A batch answered one reply short fails as a whole (EIO for the entry
/// asked); nothing is made up for its siblings, and the connection
/// recovers for the next question.
#[test]
fn hostile_short_batch_is_eio_not_a_made_up_answer() {
    use qemu::hostile::{self, Case, Server};
    let files: Vec<(String, Vec<u8>)> = (0..6).map(|i| (format!("f{i}"), b"x".to_vec())).collect();
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    let srv = Server::new(Case::ShortBatch, &refs, &[]);
    let l = hostile::serve_tcp(srv).expect("hostile server");
    let (v, sb, _) = mount(
        l.addr,
        "share",
        "username=u,password=p,eacache=easize,acregmax=60,acdirmax=60",
    );
    let fs = sb.ops_as::<CifsFs>().unwrap();
    v.readdir(b"/mnt").unwrap();
    // The tree connect's first EA query goes alone: answered.
    assert_eq!(v.xattr_names(b"/mnt/f0", false), Ok(vec![]));
    // The next one (a walk: f1 is listed after f0) takes its siblings
    // along, a frame per chain; the reply to the batch's second chain
    // lacks its CLOSE: the request times out.
    assert_eq!(v.xattr_names(b"/mnt/f1", false), Err(Errno::EIO));
    assert_eq!(fs.ea_batches.load(Ordering::Relaxed), 1);
    // A new connection: its first query goes alone again, and f2's
    // answer is the server's own, not one the short batch left behind.
    assert_eq!(v.xattr_names(b"/mnt/f2", false), Ok(vec![]));
    assert_eq!(fs.ea_batches.load(Ordering::Relaxed), 1);
}

/// A batch whose CREATEs the server parks (a STATUS_PENDING interim reply
/// each, as for an open that waits on another client's oplock or lease
/// break) is answered, and the tree connect batches no more: the next
/// question of the walk goes alone, so a parked sibling cannot hold up
/// the connection again.
#[test]
fn a_batch_that_meets_a_parked_create_stops_batching() {
    use qemu::hostile::{self, Case, Server};
    let files: Vec<(String, Vec<u8>)> = (0..12)
        .map(|i| (format!("f{i:02}"), b"x".to_vec()))
        .collect();
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    let srv = Server::new(Case::PendingEaCreate, &refs, &[]);
    let l = hostile::serve_tcp(srv).expect("hostile server");
    let (v, sb, _) = mount(
        l.addr,
        "share",
        "username=u,password=p,eacache=easize,acregmax=60,acdirmax=60",
    );
    let fs = sb.ops_as::<CifsFs>().unwrap();
    let q = || fs.ea_queries.load(Ordering::Relaxed);
    v.readdir(b"/mnt").unwrap();
    // The tree connect's first EA query goes alone.
    assert_eq!(v.xattr_names(b"/mnt/f00", false), Ok(vec![]));
    // A walk: f01's query takes 7 siblings along (f01..f08), each
    // CREATE parked once, every chain answered.
    let q0 = q();
    assert_eq!(v.xattr_names(b"/mnt/f01", false), Ok(vec![]));
    assert_eq!(q() - q0, 8);
    assert_eq!(fs.ea_batches.load(Ordering::Relaxed), 1);
    for i in 2..=8 {
        let p = format!("/mnt/f{i:02}");
        assert_eq!(v.xattr_names(p.as_bytes(), false), Ok(vec![]));
    }
    assert_eq!(q() - q0, 8, "f02..f08 answered by the batch");
    // f09 continues the walk, but the tree connect met a parked CREATE:
    // asked alone.
    assert_eq!(v.xattr_names(b"/mnt/f09", false), Ok(vec![]));
    assert_eq!(q() - q0, 9);
    assert_eq!(fs.ea_batches.load(Ordering::Relaxed), 1);
}

//! smbclient against the Samba fixture through the latency relay: exact
//! frame/command/status counts of `ls`, the guestfwd stdio mode at 76 ms RTT
//! (timed against a direct run), signing seen on the wire, and each fault
//! as a real client meets it. Skips where the fixture cannot run (a failure
//! under `REQUIRE_FIXTURES=1`).

mod relay_util;

use qemu::relay::ConnStats;
use qemu::samba::{Fixture, FixtureOpts};
use relay_util::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn skip() -> bool {
    match Fixture::smbclient_available() {
        Ok(()) => false,
        Err(why) => {
            qemu::fixtures::skip("samba_relay", "Samba", why);
            true
        }
    }
}

fn map(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// What `smbclient -c ls` of the share costs, as measured on Samba 4.17 /
/// smbclient 4.17: 15 request frames, none compounded.
fn assert_ls_counts(c: &ConnStats) {
    let cmds = map(&[
        ("NEGOTIATE", 1),
        ("SESSION_SETUP", 2),
        ("TREE_CONNECT", 2),
        ("IOCTL", 1),
        ("CREATE", 2),
        ("QUERY_INFO", 1),
        ("QUERY_DIRECTORY", 2),
        ("CLOSE", 2),
        ("TREE_DISCONNECT", 2),
    ]);
    assert_eq!(c.round_trips, 15, "{c:#?}");
    assert_eq!(c.client_to_server.commands, cmds);
    assert_eq!(c.server_to_client.commands, cmds);
    assert_eq!(c.client_to_server.compound_frames, 0);
    assert_eq!(c.server_to_client.smb2_frames, 15);
    let st = &c.server_to_client.command_statuses;
    assert_eq!(
        st["SESSION_SETUP"],
        map(&[("0x00000000", 1), ("0xc0000016", 1)])
    );
    assert_eq!(
        st["QUERY_DIRECTORY"],
        map(&[("0x00000000", 1), ("0x80000006", 1)])
    );
    assert_eq!(st["CREATE"], map(&[("0x00000000", 2)]));
    assert_eq!(c.server_to_client.status(0), 12);
    assert_eq!(
        c.client_to_server.unparsed_bytes + c.server_to_client.unparsed_bytes,
        0
    );
    assert!(c.closed);
}

#[test]
fn ls_counts_through_listen_relay_and_signing_on_the_wire() {
    if skip() {
        return;
    }
    let fx = Fixture::start(&FixtureOpts::default()).unwrap();
    let r = Relay::start(fx.addr(), &[]);
    let (ok, out) = fx.smbclient(r.port(), &[], "ls").unwrap();
    assert!(ok, "{out}");
    assert_eq!(qemu::samba::parse_ls_names(&out).len(), 511);
    let st = r.closed_stats(1);
    assert_eq!(st.len(), 1);
    assert_ls_counts(&st[0]);
    let default_signed = st[0].server_to_client.signed_messages;

    // With `server signing = mandatory`, every reply after authentication
    // is signed: the relay sees it.
    let fx2 = Fixture::start(&FixtureOpts {
        entries: 2,
        server_signing: Some("mandatory".into()),
        ..FixtureOpts::default()
    })
    .unwrap();
    let r2 = Relay::start(fx2.addr(), &[]);
    let (ok, out) = fx2.smbclient(r2.port(), &[], "ls").unwrap();
    assert!(ok, "{out}");
    let st2 = r2.closed_stats(1);
    let signed = st2[0].server_to_client.signed_messages;
    eprintln!("signed replies: default {default_signed}, mandatory {signed}");
    assert!(
        signed >= 10 && default_signed <= 5,
        "default {default_signed}, mandatory {signed}"
    );
}

#[test]
fn ls_through_guestfwd_at_76ms_rtt_vs_direct() {
    if skip() {
        return;
    }
    let fx = Fixture::start(&FixtureOpts::default()).unwrap();
    let t = Instant::now();
    let (ok, out) = fx.smbclient(fx.port, &[], "ls").unwrap();
    let direct = t.elapsed();
    assert!(ok, "{out}");

    let g = GuestFwd::start(fx.addr(), &["--delay-ms", "38"]);
    let t = Instant::now();
    let (ok, out) = fx.smbclient(g.addr.port(), &[], "ls").unwrap();
    let relayed = t.elapsed();
    assert!(ok, "{out}");
    assert_eq!(qemu::samba::parse_ls_names(&out).len(), 511);
    eprintln!(
        "smbclient ls of 511 entries: direct {:.3} s, through the relay at 38 ms one-way {:.3} s",
        direct.as_secs_f64(),
        relayed.as_secs_f64()
    );
    let st = wait_closed(&g.stats_dir, 1);
    assert_eq!(st.len(), 1);
    assert_ls_counts(&st[0]);
    // 15 round trips of 76 ms each, and no accumulation beyond that (loose
    // upper bounds: the machine is shared).
    assert!(relayed >= Duration::from_millis(15 * 76), "{relayed:?}");
    assert!(
        relayed < Duration::from_millis(15 * 76 + 3000),
        "{relayed:?}"
    );
    assert!(direct < relayed, "direct {direct:?} relayed {relayed:?}");
}

#[test]
fn faults_as_smbclient_meets_them() {
    if skip() {
        return;
    }
    let fx = Fixture::start(&FixtureOpts {
        entries: 3,
        ..FixtureOpts::default()
    })
    .unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["--drop-after", "5"], "NT_STATUS_CONNECTION_DISCONNECTED"),
        // Reply 5 is the signed SESSION_SETUP success or TREE_CONNECT:
        // smbclient checks the signature and gives up.
        (&["--forge-signature-after", "5"], "NT_STATUS_ACCESS_DENIED"),
        (
            &["--corrupt-after", "1"],
            "NT_STATUS_INVALID_NETWORK_RESPONSE",
        ),
        (
            &["--corrupt-after", "8"],
            "NT_STATUS_INVALID_NETWORK_RESPONSE",
        ),
    ];
    for (args, want) in cases {
        let r = Relay::start(fx.addr(), args);
        let (ok, out) = fx.smbclient(r.port(), &[], "ls").unwrap();
        assert!(!ok || out.contains(want), "{args:?}: {out}");
        assert!(out.contains(want), "{args:?}: {out}");
        let st = r.closed_stats(1);
        let f = &st[0].fault_stats;
        match args[0] {
            "--drop-after" => assert!(f.dropped && st[0].round_trips == 5, "{st:?}"),
            "--forge-signature-after" => assert!(f.forged >= 1, "{st:?}"),
            _ => assert_eq!(f.corrupted, 1, "{st:?}"),
        }
    }
    // And the server is still fine afterwards.
    let (ok, out) = fx.smbclient(fx.port, &[], "ls").unwrap();
    assert!(ok, "{out}");
}

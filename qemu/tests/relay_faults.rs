//! Each fault mode of the relay against a fake SMB2 server (no Samba
//! needed): drop, stall, corrupt, forge; and compound counting on the wire.

mod relay_util;

use relay_util::*;
use std::io::{ErrorKind, Write};
use std::net::TcpStream;
use std::time::Duration;

fn req(i: u64) -> Vec<u8> {
    frame(&[msg(5, 0, 0, 56, i)])
}

fn exchange(s: &mut TcpStream, i: u64) -> Option<Vec<u8>> {
    s.write_all(&req(i)).ok()?;
    read_frame(s).ok().flatten()
}

#[test]
fn drop_after_closes_both_sides() {
    let (server, closed) = fake_smb_server();
    for use_stdio in [false, true] {
        let (addr, dir, _keep): (_, _, Box<dyn std::any::Any>) = if use_stdio {
            let g = GuestFwd::start(server, &["--drop-after", "2", "--delay-ms", "5"]);
            (g.addr, g.stats_dir.clone(), Box::new(g))
        } else {
            let r = Relay::start(server, &["--drop-after", "2", "--delay-ms", "5"]);
            (r.addr, r.stats_dir.clone(), Box::new(r))
        };
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(exchange(&mut s, 1), Some(fake_reply(&req(1))));
        assert_eq!(exchange(&mut s, 2), Some(fake_reply(&req(2))));
        // Frame 3 is not forwarded; the client sees the connection end.
        let _ = s.write_all(&req(3));
        match read_frame(&mut s) {
            Ok(None) => {}
            Err(e) => assert!(
                matches!(
                    e.kind(),
                    ErrorKind::ConnectionReset | ErrorKind::UnexpectedEof
                ),
                "stdio={use_stdio}: {e:?}"
            ),
            Ok(Some(f)) => panic!("stdio={use_stdio}: got a reply after drop: {f:?}"),
        }
        // The server saw exactly two frames before its side closed.
        assert_eq!(
            closed.recv_timeout(Duration::from_secs(5)),
            Ok(2),
            "stdio={use_stdio}"
        );
        let st = wait_closed(&dir, 1);
        let c = &st[0];
        assert!(c.fault_stats.dropped, "{c:?}");
        assert_eq!(c.round_trips, 2);
        assert_eq!(c.close_reason, "dropped by fault");
    }
}

#[test]
fn stall_after_keeps_socket_open_and_forwards_nothing() {
    let (server, closed) = fake_smb_server();
    let r = Relay::start(server, &["--stall-after", "1"]);
    let mut s = TcpStream::connect(r.addr).unwrap();
    assert_eq!(exchange(&mut s, 1), Some(fake_reply(&req(1))));
    s.write_all(&req(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(400)))
        .unwrap();
    match read_frame(&mut s) {
        Err(e) => assert!(
            matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
            "{e:?}"
        ),
        other => panic!("expected a stall (timeout), got {other:?}"),
    }
    // Still open: more writes are accepted (and swallowed).
    s.write_all(&req(3)).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let live = qemu::relay::load_stats_dir(&r.stats_dir).unwrap();
    assert!(!live[0].closed);
    assert!(live[0].fault_stats.stalled);
    drop(s);
    assert_eq!(closed.recv_timeout(Duration::from_secs(5)), Ok(1));
    let st = r.closed_stats(1);
    assert!(st[0].closed);
    assert_eq!(st[0].round_trips, 1);
    assert_eq!(st[0].close_reason, "stalled by fault");
    assert_eq!(st[0].client_to_server.bytes, 3 * req(1).len() as u64);
}

#[test]
fn corrupt_after_flips_one_byte_of_the_nth_reply() {
    let (server, _closed) = fake_smb_server();
    let r = Relay::start(server, &["--corrupt-after", "2"]);
    let mut s = TcpStream::connect(r.addr).unwrap();
    for i in 1..=3 {
        let got = exchange(&mut s, i).unwrap();
        let want = fake_reply(&req(i));
        let diff: Vec<usize> = (0..want.len()).filter(|&k| got[k] != want[k]).collect();
        if i == 2 {
            assert_eq!(diff, vec![4 + 64]);
            assert_eq!(got[4 + 64], want[4 + 64] ^ 0xff);
        } else {
            assert!(diff.is_empty(), "reply {i}: {diff:?}");
        }
    }
    drop(s);
    let st = r.closed_stats(1);
    assert_eq!(st[0].fault_stats.corrupted, 1);
}

#[test]
fn forge_signature_after_flips_signatures_from_the_nth_reply_on() {
    let (server, _closed) = fake_smb_server();
    let r = Relay::start(server, &["--forge-signature-after", "2"]);
    let mut s = TcpStream::connect(r.addr).unwrap();
    for i in 1..=4 {
        let got = exchange(&mut s, i).unwrap();
        let want = fake_reply(&req(i));
        let diff: Vec<usize> = (0..want.len()).filter(|&k| got[k] != want[k]).collect();
        if i >= 2 {
            assert_eq!(diff, vec![4 + 48], "reply {i}");
        } else {
            assert!(diff.is_empty());
        }
    }
    drop(s);
    let st = r.closed_stats(1);
    assert_eq!(st[0].fault_stats.forged, 3);
    assert_eq!(st[0].server_to_client.signed_messages, 4);
}

#[test]
fn compounds_count_once_as_round_trips_and_per_command() {
    let (server, _closed) = fake_smb_server();
    let r = Relay::start(server, &["--segment-on-echo"]);
    let mut s = TcpStream::connect(r.addr).unwrap();
    let compound = frame(&[
        msg(5, 0, 0, 57, 1),
        msg(0x10, 0, 0, 41, 2),
        msg(6, 0, 0, 24, 3),
    ]);
    for _ in 0..4 {
        s.write_all(&compound).unwrap();
        read_frame(&mut s).unwrap().unwrap();
    }
    s.write_all(&frame(&[msg(0xd, 0, 0, 4, 9)])).unwrap();
    read_frame(&mut s).unwrap().unwrap();
    s.write_all(&compound).unwrap();
    read_frame(&mut s).unwrap().unwrap();
    drop(s);
    let st = r.closed_stats(1);
    let c = &st[0];
    assert_eq!(c.round_trips, 6);
    assert_eq!(c.client_to_server.compound_frames, 5);
    assert_eq!(c.client_to_server.messages, 16);
    assert_eq!(c.client_to_server.command("QUERY_INFO"), 5);
    assert_eq!(c.client_to_server.command("ECHO"), 1);
    assert_eq!(c.server_to_client.command("CREATE"), 5);
    assert_eq!(c.server_to_client.status(0), 6);
    assert_eq!(c.segments.len(), 2);
    assert_eq!(c.segments[0].round_trips, 4);
    assert_eq!(c.segments[1].round_trips, 2);
    assert_eq!(c.segments[1].client_to_server.command("QUERY_INFO"), 1);
    assert_eq!(c.segments[1].server_to_client.command("ECHO"), 1);
}

#[test]
fn sync_stats_are_current_when_the_reply_arrives() {
    let (server, _closed) = fake_smb_server();
    let r = Relay::start(server, &["--sync-stats"]);
    let mut s = TcpStream::connect(r.addr).unwrap();
    for i in 1..=20u64 {
        exchange(&mut s, i).unwrap();
        // No waiting: the file already holds this request and its reply.
        let st = qemu::relay::load_stats_dir(&r.stats_dir).unwrap();
        assert_eq!(st[0].round_trips, i);
        assert_eq!(st[0].server_to_client.smb2_frames, i);
        assert!(!st[0].closed);
    }
}

#[test]
fn fault_conns_limits_faults_to_the_first_connections() {
    let (server, _closed) = fake_smb_server();
    let g = GuestFwd::start(server, &["--drop-after", "2", "--fault-conns", "1"]);
    let mut s = TcpStream::connect(g.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(exchange(&mut s, 1).is_some());
    assert!(exchange(&mut s, 2).is_some());
    assert_eq!(exchange(&mut s, 3), None, "first connection dropped");
    drop(s);
    // The client reconnects: no faults on the second connection.
    let mut s = TcpStream::connect(g.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for i in 1..=5 {
        assert_eq!(
            exchange(&mut s, i),
            Some(fake_reply(&req(i))),
            "exchange {i}"
        );
    }
    drop(s);
    let st = wait_closed(&g.stats_dir, 2);
    assert_eq!(st.len(), 2);
    assert_eq!((st[0].ordinal, st[1].ordinal), (0, 1));
    assert!(st[0].fault_stats.dropped && !st[1].fault_stats.dropped);
    assert_eq!(st[1].faults, qemu::relay::Faults::default());
    assert_eq!(qemu::relay::Totals::sum(&st).round_trips, 7);
}

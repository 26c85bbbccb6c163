//! The relay as a plain TCP forwarder (no Samba needed): the delay it adds,
//! that chunk timing is kept (no accumulation), the guestfwd stdio mode,
//! non-SMB bytes forwarded intact and counted as unparsed, loopback only.

mod relay_util;

use relay_util::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

fn ping(s: &mut TcpStream, payload: &[u8]) -> Duration {
    let t = Instant::now();
    s.write_all(payload).unwrap();
    let mut back = vec![0u8; payload.len()];
    s.read_exact(&mut back).unwrap();
    assert_eq!(back, payload);
    t.elapsed()
}

#[test]
fn round_trip_is_twice_the_one_way_delay() {
    let echo = echo_server();
    let r = Relay::start(echo, &["--delay-ms", "40"]);
    let mut s = TcpStream::connect(r.addr).unwrap();
    s.set_nodelay(true).unwrap();
    let mut rtts: Vec<Duration> = (0..6).map(|i| ping(&mut s, &[i as u8; 100])).collect();
    rtts.sort();
    eprintln!("rtt at 40 ms one-way: {rtts:?}");
    assert!(rtts[0] >= Duration::from_millis(80), "{rtts:?}");
    assert!(
        rtts[3] < Duration::from_millis(130),
        "median too slow: {rtts:?}"
    );

    let r0 = Relay::start(echo, &[]);
    let mut s0 = TcpStream::connect(r0.addr).unwrap();
    s0.set_nodelay(true).unwrap();
    let mut rtt0: Vec<Duration> = (0..6).map(|i| ping(&mut s0, &[i as u8; 100])).collect();
    rtt0.sort();
    eprintln!("rtt at 0 ms: {rtt0:?}");
    assert!(rtt0[3] < Duration::from_millis(60), "{rtt0:?}");
}

#[test]
fn delay_line_keeps_spacing_and_does_not_accumulate() {
    let echo = echo_server();
    let r = Relay::start(echo, &["--delay-ms", "30"]);
    let s = TcpStream::connect(r.addr).unwrap();
    s.set_nodelay(true).unwrap();
    let mut rd = s.try_clone().unwrap();
    let n = 25;
    let t0 = Instant::now();
    let writer = std::thread::spawn(move || {
        let mut s = s;
        let mut sent = Vec::new();
        for i in 0..n {
            sent.push(t0.elapsed());
            s.write_all(&[i as u8; 16]).unwrap();
            std::thread::sleep(Duration::from_millis(4));
        }
        sent
    });
    let mut got = Vec::new();
    for i in 0..n {
        let mut m = [0u8; 16];
        rd.read_exact(&mut m).unwrap();
        assert_eq!(m, [i as u8; 16]);
        got.push(t0.elapsed());
    }
    let sent = writer.join().unwrap();
    let lat: Vec<u128> = sent
        .iter()
        .zip(&got)
        .map(|(a, b)| (*b - *a).as_millis())
        .collect();
    eprintln!("per-message latency (ms) at 30 ms one-way, 4 ms apart: {lat:?}");
    // Per-chunk sleeps would add ~52 ms per message (the last one near
    // 1.3 s); a delay line keeps every message near 60 ms. The bounds leave
    // room for scheduling noise on a loaded 2-core machine.
    assert!(lat.iter().all(|l| *l >= 60), "{lat:?}");
    let mut sorted = lat.clone();
    sorted.sort();
    assert!(sorted[n / 2] < 100, "median: {lat:?}");
    assert!(sorted[n - 1] < 400, "max: {lat:?}");
    assert!(lat[n - 1] < lat[0] + 300, "growing: {lat:?}");
}

#[test]
fn stdio_mode_forwards_arbitrary_bytes_and_counts_them_unparsed() {
    let echo = echo_server();
    let g = GuestFwd::start(echo, &["--delay-ms", "10"]);
    let mut s = TcpStream::connect(g.addr).unwrap();
    s.set_nodelay(true).unwrap();
    let rtt = ping(&mut s, b"hello");
    assert!(rtt >= Duration::from_millis(20), "{rtt:?}");
    let payload: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut rd = s.try_clone().unwrap();
    let p2 = payload.clone();
    let w = std::thread::spawn(move || s.write_all(&p2).map(|_| s));
    let mut back = vec![0u8; payload.len()];
    rd.read_exact(&mut back).unwrap();
    assert!(back == payload, "payload corrupted in transit");
    let s = w.join().unwrap().unwrap();
    drop(s);
    drop(rd);
    let stats = wait_closed(&g.stats_dir, 1);
    assert_eq!(stats.len(), 1, "one connection, one stats file");
    let c = &stats[0];
    assert!(c.closed, "{c:?}");
    assert_eq!(c.close_reason, "client closed");
    let total = payload.len() as u64 + 5;
    assert_eq!(c.client_to_server.bytes, total);
    assert_eq!(c.server_to_client.bytes, total);
    assert_eq!(c.client_to_server.smb2_frames, 0);
    // Almost everything is unparsed garbage (a random 8-byte window can
    // look like a frame header only by a 2^-40 chance).
    assert_eq!(c.client_to_server.unparsed_bytes, total);
    assert_eq!(c.round_trips, 0);
    assert!((c.delay_ms - 10.0).abs() < 1e-9);
}

#[test]
fn refuses_anything_but_loopback_and_bad_flags() {
    for args in [
        vec!["--target", "10.0.2.2:445"],
        vec!["--target", "127.0.0.1:445", "--listen", "0.0.0.0:0"],
        vec!["--target", "127.0.0.1:445", "--delay-ms", "-5"],
        vec!["--target", "nonsense"],
        vec![],
    ] {
        let out = Command::new(RELAY).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if args.first() == Some(&"--target") && args.len() == 2 && args[1].starts_with("10.") {
            assert!(err.contains("loopback"), "{err}");
        }
    }
}

#[test]
fn config_args_are_accepted_by_the_binary() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = qemu::samba::make_temp_dir("relay-test-stats").unwrap();
    let mut cfg = qemu::relay::RelayConfig::new(dead);
    cfg.delay = Duration::from_micros(38_500);
    cfg.stats_dir = Some(dir.clone());
    cfg.segment_on_echo = true;
    cfg.sync_stats = true;
    cfg.faults.stall_after = Some(3);
    cfg.faults.forge_signature_after = Some(9);
    cfg.faults.corrupt_after = Some(2);
    cfg.faults.corrupt_offset = 70;
    // Stdio mode, nothing listening: parses, fails to connect (exit 1, not
    // the usage error 2) and records the config in its stats file.
    let out = Command::new(RELAY)
        .args(cfg.to_args())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let st = qemu::relay::load_stats_dir(&dir).unwrap();
    assert_eq!(st.len(), 1);
    assert_eq!(st[0].faults, cfg.faults);
    assert!((st[0].delay_ms - 38.5).abs() < 1e-9);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn usage_errors_reach_the_log_file() {
    let dir = qemu::samba::make_temp_dir("relay-test-log").unwrap();
    let log = dir.join("relay.log");
    let out = Command::new(RELAY)
        .args(["--target", "127.0.0.1:445", "--bogus", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("--bogus"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn connect_failure_is_reported_in_stats() {
    // A port nothing listens on (bound then released).
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let log = qemu::samba::make_temp_dir("relay-test-log")
        .unwrap()
        .join("relay.log");
    let g = GuestFwd::start(dead, &["--log", log.to_str().unwrap()]);
    let mut s = TcpStream::connect(g.addr).unwrap();
    let mut b = [0u8; 64];
    // The relay exits, closing our connection, and writes nothing into it
    // (its stderr is the connection, as under libslirp).
    assert_eq!(s.read(&mut b).unwrap_or(0), 0);
    let stats = wait_closed(&g.stats_dir, 1);
    assert_eq!(stats.len(), 1);
    assert!(
        stats[0].close_reason.contains("connect to"),
        "{:?}",
        stats[0].close_reason
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("connect to") && text.contains("refused"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(log.parent().unwrap());
}

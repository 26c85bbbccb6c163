//! Unit tests of the relay's stream parser on hand-built SMB2 bytes: framing,
//! compounds, garbage, chunking at every boundary, and each fault.

use super::parser::PROTO_SMB2;
use super::*;

/// An SMB2 header: command, status, flags, NextCommand, MessageId.
fn hdr(cmd: u16, status: u32, flags: u32, next: u32, mid: u64) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(&PROTO_SMB2);
    h[4..6].copy_from_slice(&64u16.to_le_bytes());
    h[8..12].copy_from_slice(&status.to_le_bytes());
    h[12..14].copy_from_slice(&cmd.to_le_bytes());
    h[16..20].copy_from_slice(&flags.to_le_bytes());
    h[20..24].copy_from_slice(&next.to_le_bytes());
    h[24..32].copy_from_slice(&mid.to_le_bytes());
    for (i, b) in h[48..64].iter_mut().enumerate() {
        *b = 0xa0 + i as u8;
    }
    h
}

/// One message: header + `body` bytes (padded to 8 when `pad`).
fn msg(cmd: u16, status: u32, flags: u32, body: usize, mid: u64) -> Vec<u8> {
    let mut m = hdr(cmd, status, flags, 0, mid);
    m.extend((0..body).map(|i| (i * 7 + 3) as u8));
    m
}

/// A NetBIOS frame holding `msgs` chained as a compound.
fn frame(msgs: &[Vec<u8>]) -> Vec<u8> {
    let mut body = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let mut m = m.clone();
        if i + 1 < msgs.len() {
            while m.len() % 8 != 0 {
                m.push(0);
            }
            let next = m.len() as u32;
            m[20..24].copy_from_slice(&next.to_le_bytes());
        }
        body.extend(m);
    }
    let mut f = vec![0u8];
    f.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    f.extend(body);
    f
}

fn feed_chunked(
    p: &mut StreamParser,
    data: &[u8],
    chunk: usize,
) -> (Vec<u8>, Option<(usize, Cut)>) {
    let mut out = data.to_vec();
    let mut pos = 0;
    while pos < out.len() {
        let end = (pos + chunk).min(out.len());
        let fed = p.feed(&mut out[pos..end]);
        if let Some((k, c)) = fed.cut {
            return (out, Some((pos + k, c)));
        }
        pos = end;
    }
    (out, None)
}

const RESP: u32 = 1;

fn lsla_compound_response() -> Vec<u8> {
    frame(&[
        msg(5, 0, RESP, 88, 10),
        msg(0x10, 0xc000_0052, RESP, 8, 11),
        msg(6, 0, RESP, 60, 12),
    ])
}

#[test]
fn counts_compound_response_at_every_chunk_size() {
    let f = lsla_compound_response();
    for chunk in 1..=f.len() {
        let mut p = StreamParser::new(Direction::ServerToClient, Faults::default());
        let (out, cut) = feed_chunked(&mut p, &f, chunk);
        assert_eq!(cut, None);
        assert_eq!(out, f, "no faults: bytes unchanged");
        let c = &p.counts;
        assert_eq!(
            (c.frames, c.smb2_frames, c.compound_frames, c.messages),
            (1, 1, 1, 3),
            "chunk {chunk}"
        );
        assert_eq!(c.command("CREATE"), 1);
        assert_eq!(c.command("QUERY_INFO"), 1);
        assert_eq!(c.command("CLOSE"), 1);
        assert_eq!(c.status(0), 2);
        assert_eq!(c.status(0xc000_0052), 1);
        assert_eq!(c.command_statuses["QUERY_INFO"]["0xc0000052"], 1);
        assert_eq!(c.bytes, f.len() as u64);
        assert_eq!(
            (c.unparsed_bytes, c.unparsed_frames, c.bad_chains),
            (0, 0, 0)
        );
    }
}

#[test]
fn requests_count_round_trips_not_statuses() {
    let mut data = frame(&[msg(0, 0, 0, 36, 0)]);
    data.extend(frame(&[
        msg(5, 0, 0, 56, 1),
        msg(0x10, 0, 0, 40, 2),
        msg(6, 0, 0, 24, 3),
    ]));
    data.extend(frame(&[msg(0xe, 0, 0, 33, 4)]));
    let mut p = StreamParser::new(Direction::ClientToServer, Faults::default());
    let fed = p.feed(&mut data.clone());
    assert_eq!(fed.frames_done, 3);
    assert_eq!(p.counts.round_trips(), 3);
    assert_eq!(p.counts.messages, 5);
    assert_eq!(p.counts.command("QUERY_DIRECTORY"), 1);
    assert!(p.counts.statuses.is_empty());
}

#[test]
fn garbage_is_counted_and_parsing_resumes() {
    let good = frame(&[msg(3, 0, RESP, 16, 1)]);
    let mut data = b"GET / HTTP/1.0\r\n\0\0\0\0\xfeSMz\x00\x01".to_vec();
    let garbage_len = data.len();
    data.extend(&good);
    data.extend(b"\x42\x00\x00");
    data.extend(&good);
    for chunk in [1, 3, 7, 64, data.len()] {
        let mut p = StreamParser::new(Direction::ServerToClient, Faults::default());
        let (out, _) = feed_chunked(&mut p, &data, chunk);
        assert_eq!(out, data);
        let c = &p.counts;
        assert_eq!(c.smb2_frames, 2, "chunk {chunk}: {c:?}");
        assert_eq!(c.command("TREE_CONNECT"), 2);
        assert_eq!(c.unparsed_bytes, garbage_len as u64 + 3, "chunk {chunk}");
        assert!(c.unparsed_frames >= 2);
    }
}

#[test]
fn non_smb_stream_is_all_unparsed() {
    let mut data: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let mut p = StreamParser::new(Direction::ClientToServer, Faults::default());
    p.feed(&mut data);
    p.finish();
    assert_eq!(p.counts.smb2_frames, 0);
    assert_eq!(p.counts.bytes, 10_000);
    assert_eq!(p.counts.unparsed_bytes, 10_000);
}

#[test]
fn bad_chain_and_short_frames_do_not_panic() {
    let mut m1 = msg(5, 0, 0, 8, 1);
    m1[20..24].copy_from_slice(&1000u32.to_le_bytes());
    let mut data = frame(&[m1]);
    data.extend([0u8, 0, 0, 6, 0xfe, b'S', b'M', b'B', 1, 2]); // shorter than a header
    data.extend([0x85, 0, 0, 0]); // keepalive
    data.extend([0, 0, 0, 2, 1]); // too short for a protocol id; truncated
    let mut p = StreamParser::new(Direction::ClientToServer, Faults::default());
    p.feed(&mut data);
    p.finish();
    let c = &p.counts;
    assert_eq!(c.smb2_frames, 2);
    assert_eq!(c.bad_chains, 2);
    assert_eq!(c.command("CREATE"), 1);
    assert_eq!(c.netbios_other, 1);
    assert_eq!(c.truncated_frames, 1);
}

#[test]
fn drop_and_stall_cut_at_frame_start() {
    let f1 = frame(&[msg(0, 0, 0, 36, 0)]);
    let f2 = frame(&[msg(1, 0, 0, 24, 1)]);
    let f3 = frame(&[msg(1, 0, 0, 24, 2)]);
    let all = [f1.clone(), f2.clone(), f3].concat();
    for (faults, want) in [
        (
            Faults {
                drop_after: Some(2),
                ..Faults::default()
            },
            Cut::Drop,
        ),
        (
            Faults {
                stall_after: Some(2),
                ..Faults::default()
            },
            Cut::Stall,
        ),
    ] {
        for chunk in [1, 5, all.len()] {
            let mut p = StreamParser::new(Direction::ClientToServer, faults.clone());
            let (_, cut) = feed_chunked(&mut p, &all, chunk);
            assert_eq!(cut, Some((f1.len() + f2.len(), want)), "chunk {chunk}");
            assert_eq!(p.counts.smb2_frames, 2);
        }
    }
    // drop_after 0: nothing is forwarded.
    let mut p = StreamParser::new(
        Direction::ClientToServer,
        Faults {
            drop_after: Some(0),
            ..Faults::default()
        },
    );
    assert_eq!(p.feed(&mut all.clone()).cut, Some((0, Cut::Drop)));
    // Faults of the other direction are ignored.
    let mut p = StreamParser::new(
        Direction::ServerToClient,
        Faults {
            drop_after: Some(0),
            ..Faults::default()
        },
    );
    assert_eq!(p.feed(&mut all.clone()).cut, None);
}

#[test]
fn corrupt_flips_one_body_byte_of_the_nth_reply() {
    let f1 = frame(&[msg(0, 0, RESP, 64, 0)]);
    let f2 = lsla_compound_response();
    let f3 = frame(&[msg(6, 0, RESP, 60, 3)]);
    let all = [f1.clone(), f2.clone(), f3].concat();
    for chunk in [1, 2, 13, 68, all.len()] {
        let faults = Faults {
            corrupt_after: Some(2),
            ..Faults::default()
        };
        let mut p = StreamParser::new(Direction::ServerToClient, faults);
        let (out, _) = feed_chunked(&mut p, &all, chunk);
        let diff: Vec<usize> = (0..all.len()).filter(|&i| out[i] != all[i]).collect();
        let at = f1.len() + 4 + 64;
        assert_eq!(diff, vec![at], "chunk {chunk}");
        assert_eq!(out[at], all[at] ^ 0xff);
        assert_eq!(p.fault_stats.corrupted, 1);
        // Counting still sees three frames.
        assert_eq!(p.counts.smb2_frames, 3);
    }
}

#[test]
fn forge_flips_every_signature_from_the_nth_reply_on() {
    let f1 = frame(&[msg(0, 0, RESP, 64, 0)]);
    let f2 = frame(&[msg(1, 0, RESP | SMB2_FLAGS_SIGNED, 9, 1)]);
    let f3 = lsla_compound_response();
    let all = [f1.clone(), f2.clone(), f3.clone()].concat();
    let mut expect = vec![f1.len() + 4 + 48];
    let base3 = f1.len() + f2.len() + 4;
    let mut off = 0;
    loop {
        expect.push(base3 + off + 48);
        let next = u32::from_le_bytes(f3[4 + off + 20..4 + off + 24].try_into().unwrap());
        if next == 0 {
            break;
        }
        off += next as usize;
    }
    for chunk in [1, 3, 50, 64, 65, all.len()] {
        let faults = Faults {
            forge_signature_after: Some(2),
            ..Faults::default()
        };
        let mut p = StreamParser::new(Direction::ServerToClient, faults);
        let (out, _) = feed_chunked(&mut p, &all, chunk);
        let diff: Vec<usize> = (0..all.len()).filter(|&i| out[i] != all[i]).collect();
        assert_eq!(diff, expect, "chunk {chunk}");
        assert_eq!(p.fault_stats.forged, 4);
        assert_eq!(p.counts.messages, 5);
    }
}

#[test]
fn echo_starts_a_segment_in_both_directions() {
    let seg = Arc::new(AtomicUsize::new(0));
    let mut up = StreamParser::with_segments(
        Direction::ClientToServer,
        Faults::default(),
        Some(seg.clone()),
    );
    let mut down = StreamParser::with_segments(
        Direction::ServerToClient,
        Faults::default(),
        Some(seg.clone()),
    );
    up.feed(&mut frame(&[msg(0, 0, 0, 36, 0)]));
    down.feed(&mut frame(&[msg(0, 0, RESP, 64, 0)]));
    up.feed(&mut frame(&[msg(SMB2_ECHO, 0, 0, 4, 1)]));
    down.feed(&mut frame(&[msg(SMB2_ECHO, 0, RESP, 4, 1)]));
    up.feed(&mut frame(&[
        msg(5, 0, 0, 56, 2),
        msg(0x10, 0, 0, 40, 3),
        msg(6, 0, 0, 24, 4),
    ]));
    down.feed(&mut lsla_compound_response());
    assert_eq!(seg.load(Ordering::SeqCst), 1);
    assert_eq!(up.segments.len(), 2);
    assert_eq!(up.segments[0].round_trips(), 1);
    assert_eq!(up.segments[1].round_trips(), 2);
    assert_eq!(up.segments[1].command("ECHO"), 1);
    assert_eq!(down.segments[1].status(0xc000_0052), 1);
    assert_eq!(down.segments[0].command("NEGOTIATE"), 1);
    assert_eq!(up.counts.round_trips(), 3);
}

#[test]
fn totals_sum_and_difference() {
    let mut p = StreamParser::new(Direction::ServerToClient, Faults::default());
    p.feed(&mut lsla_compound_response());
    let a = ConnStats {
        round_trips: 4,
        server_to_client: p.counts.clone(),
        closed: true,
        ..ConnStats::default()
    };
    let b = ConnStats {
        round_trips: 1,
        ..a.clone()
    };
    let t1 = Totals::sum(std::slice::from_ref(&a));
    let t2 = Totals::sum(&[a, b]);
    assert_eq!(t2.connections, 2);
    assert_eq!(t2.round_trips, 5);
    assert_eq!(t2.server_to_client.status(0xc000_0052), 2);
    let d = t2.since(&t1);
    assert_eq!(d.round_trips, 1);
    assert_eq!(d.server_to_client.command("CREATE"), 1);
    assert_eq!(
        d.server_to_client.command_statuses["QUERY_INFO"]["0xc0000052"],
        1
    );
    // Round-trips through JSON unchanged.
    let j = serde_json::to_string(&t2).unwrap();
    assert_eq!(serde_json::from_str::<Totals>(&j).unwrap(), t2);
}

#[test]
fn names() {
    assert_eq!(command_name(0x10), "QUERY_INFO");
    assert_eq!(command_name(0x99), "0x0099");
    assert_eq!(status_key(0xc000_0052), "0xc0000052");
    assert_eq!(status_name(0xc000_0052), Some("STATUS_NO_EAS_ON_FILE"));
    assert!(check_loopback(&"127.0.0.1:445".parse().unwrap(), "t").is_ok());
    assert!(check_loopback(&"10.0.2.2:445".parse().unwrap(), "t").is_err());
}

#[test]
fn config_to_args() {
    let mut c = RelayConfig::new("127.0.0.1:4455".parse().unwrap());
    assert_eq!(c.to_args(), vec!["--target", "127.0.0.1:4455"]);
    c.delay = Duration::from_millis(38);
    c.stats_dir = Some("/dev/shm/x".into());
    c.segment_on_echo = true;
    c.faults.drop_after = Some(7);
    c.faults.corrupt_offset = 3;
    assert_eq!(
        c.to_args(),
        vec![
            "--target",
            "127.0.0.1:4455",
            "--delay-ms",
            "38",
            "--stats-dir",
            "/dev/shm/x",
            "--segment-on-echo",
            "--drop-after",
            "7",
            "--corrupt-offset",
            "3"
        ]
    );
    c = RelayConfig::new("127.0.0.1:4455".parse().unwrap());
    c.drop_armed_by = Some("/tmp/m/drop-arm".into());
    assert_eq!(
        c.to_args(),
        vec![
            "--target",
            "127.0.0.1:4455",
            "--drop-armed-by",
            "/tmp/m/drop-arm"
        ]
    );
}

/// A loopback echo server for `n` connections; returns its address.
fn echo_server(n: usize) -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().take(n) {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut b = [0u8; 256];
                while let Ok(k) = s.read(&mut b) {
                    if k == 0 || s.write_all(&b[..k]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

/// One relayed connection: the client socket and the relay's result.
fn relayed(cfg: &RelayConfig) -> (TcpStream, std::thread::JoinHandle<io::Result<ConnStats>>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    let cfg = cfg.clone();
    let h = std::thread::spawn(move || run_connection(ClientConn::Tcp(s), &cfg));
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    (client, h)
}

#[test]
fn armed_drop_closes_one_connection_once() {
    let dir = std::env::temp_dir().join(format!("relay-armed-drop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let arm = dir.join("drop");
    let mut cfg = RelayConfig::new(echo_server(2));
    cfg.drop_armed_by = Some(arm.clone());
    let (mut c, h) = relayed(&cfg);
    let mut b = [0u8; 8];
    // Not armed: bytes pass both ways.
    c.write_all(b"one").unwrap();
    c.read_exact(&mut b[..3]).unwrap();
    assert_eq!(&b[..3], b"one");
    std::fs::write(&arm, b"").unwrap();
    // Armed: these bytes are not forwarded and the connection closes.
    c.write_all(b"two").unwrap();
    let n = c.read(&mut b).unwrap_or(0);
    assert_eq!(n, 0, "the armed drop forwarded or echoed bytes");
    let st = h.join().unwrap().unwrap();
    assert_eq!(st.close_reason, "dropped when armed");
    assert!(!arm.exists());
    let fired = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("drop.fired-"))
        })
        .count();
    assert_eq!(fired, 1);
    // Once: the client's next connection passes.
    let (mut c, h) = relayed(&cfg);
    c.write_all(b"three").unwrap();
    c.read_exact(&mut b[..5]).unwrap();
    assert_eq!(&b[..5], b"three");
    drop(c);
    assert_eq!(h.join().unwrap().unwrap().close_reason, "client closed");
    let _ = std::fs::remove_dir_all(&dir);
}

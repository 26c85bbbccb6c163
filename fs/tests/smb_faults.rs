//! Faults on the wire, injected by the `latency-relay` child process in
//! front of the loopback Samba fixture: the connection dropped after N
//! client frames, a stalled server, a corrupted reply byte and forged
//! signatures (signing on). Each time the client must fail the operation
//! with a clear error (EIO) within its soft timeout, bring the link back on
//! the next operation (`--fault-conns 1`: only the first connection is
//! faulted), never panic, and show it in its counters (TconStats connects
//! and failed counts, `smb3_cmd_err` trace lines). A corrupted body under a
//! good header is the exception: an error, the link stays up, nothing is
//! counted as failed (printed, not asserted).
//!
//! Skips (with the reason; a failure under `REQUIRE_FIXTURES=1`, see
//! `qemu::fixtures`) when the fixture cannot run here (no smbd, not root)
//! or the relay binary cannot be found or built.
//! Starts and kills its own relay processes; touches loopback only.

use fs::errno::Errno;
use fs::fstype::cifs::errmap::{trace_rc, SmbErrno};
use qemu::samba::{Fixture, FixtureOpts};
use smb::wire::cmd;
use smb::{Config, Connection, Signing, SmbError};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Soft timeout of every connection here.
const TIMEOUT_MS: u64 = 800;
/// Slack over the soft timeout for the measured failure (2 loaded cores).
const SLACK_MS: u64 = 700;
/// Client frames of a handshake: NEGOTIATE, 2×SESSION_SETUP, TREE_CONNECT.
const HANDSHAKE_FRAMES: u64 = 4;

/// The `latency-relay` binary next to this test's target dir (built by
/// `cargo test` of the workspace); built here when missing.
fn relay_bin() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // …/target/<profile>/deps/smb_faults-HASH → …/target/<profile>/
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("no target dir")?
        .to_path_buf();
    let bin = profile_dir.join("latency-relay");
    if bin.exists() {
        return Ok(bin);
    }
    let release = profile_dir.file_name().is_some_and(|n| n == "release");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let mut c = Command::new(cargo);
    c.args(["build", "-q", "-p", "qemu", "--bin", "latency-relay"])
        .arg("--manifest-path")
        .arg(manifest);
    if release {
        c.arg("--release");
    }
    if let Some(target_dir) = profile_dir.parent() {
        c.env("CARGO_TARGET_DIR", target_dir);
    }
    let st = c
        .status()
        .map_err(|e| format!("cargo build latency-relay: {e}"))?;
    if !st.success() || !bin.exists() {
        return Err(format!("latency-relay not built ({st})"));
    }
    Ok(bin)
}

/// A relay child process; killed on drop.
struct Relay {
    child: Child,
    addr: SocketAddr,
    stats: PathBuf,
}

impl Relay {
    fn start(bin: &Path, target: u16, stats: PathBuf, fault: &[&str]) -> Relay {
        std::fs::create_dir_all(&stats).unwrap();
        let mut child = Command::new(bin)
            .args(["--listen", "127.0.0.1:0", "--target"])
            .arg(format!("127.0.0.1:{target}"))
            .args(["--delay-ms", "0", "--sync-stats", "--fault-conns", "1"])
            .arg("--stats-dir")
            .arg(&stats)
            .args(fault)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start latency-relay");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("relay said {line:?}"));
        Relay { child, addr, stats }
    }

    /// Connections the relay has seen (one stats file each).
    fn connections(&self) -> usize {
        std::fs::read_dir(&self.stats)
            .map(|d| d.filter(|e| e.is_ok()).count())
            .unwrap_or(0)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Case {
    name: &'static str,
    fault: Vec<String>,
    signing: Signing,
    /// What the faulted operation must fail with.
    expect: fn(&SmbError) -> bool,
    /// The link is gone after the failure (the next op reconnects).
    reconnects: bool,
    /// The failure shows in the failed counters and as `smb3_cmd_err`.
    counted: bool,
}

/// Runs one fault case through a fresh relay and returns the wall time of
/// the faulted operation.
fn run_case(fx: &Fixture, bin: &Path, case: &Case) -> Duration {
    let stats = fx.dir.join(format!("relay-{}", case.name));
    let fault: Vec<&str> = case.fault.iter().map(String::as_str).collect();
    let relay = Relay::start(bin, fx.port, stats, &fault);
    let mut cfg = Config::new("127.0.0.1", &fx.share, &fx.user, &fx.password);
    cfg.timeout_ms = TIMEOUT_MS;
    cfg.soft = true;
    // No silent retry: the faulted operation must report its error; the
    // *next* operation reconnects.
    cfg.retries = 0;
    cfg.signing = case.signing;
    let mut c = Connection::tcp(cfg, relay.addr);

    c.connect().expect("handshake through the relay");
    assert_eq!(c.stats().connects, 1);
    // Client frame 5 / server frame 5: one good operation.
    let st = c.stat("d000").expect("first stat through the relay");
    assert!(st.attributes & 0x10 != 0, "d000 is a directory");
    let failed0: u64 = c.stats().cmds.iter().map(|x| x.failed).sum();

    // The faulted operation (client frame 6 / server frame 6).
    let t = Instant::now();
    let e = c.stat("d001").expect_err("the faulted stat must fail");
    let took = t.elapsed();
    println!(
        "smb_faults case={} error=\"{e}\" errno={:?} secs={:.3}",
        case.name,
        e.errno(),
        took.as_secs_f64()
    );
    assert!((case.expect)(&e), "{}: unexpected error {e:?}", case.name);
    assert_eq!(
        e.errno(),
        Errno::EIO,
        "{}: soft mounts report EIO",
        case.name
    );
    assert!(
        took <= Duration::from_millis(TIMEOUT_MS + SLACK_MS),
        "{}: error after {took:?}, soft timeout {TIMEOUT_MS} ms",
        case.name
    );
    let failed1: u64 = c.stats().cmds.iter().map(|x| x.failed).sum();
    let trace = c.trace().dump(trace_rc);
    let err_lines = trace
        .lines()
        .filter(|l| l.contains("smb3_cmd_err") && l.contains(&format!("cmd={}", cmd::CREATE)))
        .count();
    println!(
        "smb_faults case={} failed_delta={} create_err_lines={err_lines}",
        case.name,
        failed1 - failed0
    );
    if case.counted {
        assert!(
            failed1 > failed0,
            "{}: failed counters did not move",
            case.name
        );
        assert!(
            err_lines > 0,
            "{}: no smb3_cmd_err for the CREATE",
            case.name
        );
    }
    assert_eq!(
        c.is_connected(),
        !case.reconnects,
        "{}: link state",
        case.name
    );

    // The next operation works (reconnecting if the link went down).
    let st = c.stat("d002").expect("the next stat must succeed");
    assert!(st.attributes & 0x10 != 0);
    let names = c.list_dir("").expect("listing after the fault");
    assert!(
        names.iter().any(|d| d.name == "d003"),
        "listing is complete"
    );
    let want_connects = if case.reconnects { 2 } else { 1 };
    assert_eq!(c.stats().connects, want_connects, "{}: connects", case.name);
    assert_eq!(c.generation(), want_connects);
    assert_eq!(
        relay.connections() as u64,
        want_connects,
        "{}: relay saw",
        case.name
    );
    let rendered = c.render_stats();
    assert!(rendered.contains("Creates: "), "{rendered}");
    c.disconnect();
    took
}

#[test]
fn faults_through_the_relay() {
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("smb_faults", "Samba", why);
        return;
    }
    let bin = match relay_bin() {
        Ok(b) => b,
        Err(why) => {
            qemu::fixtures::skip("smb_faults", "the latency-relay binary", why);
            return;
        }
    };
    let fx = Fixture::start(&FixtureOpts {
        entries: 5,
        ..Default::default()
    })
    .expect("Samba fixture must start when smbd is installed");
    let n = HANDSHAKE_FRAMES + 1;
    let cases = [
        Case {
            name: "drop",
            fault: vec!["--drop-after".into(), n.to_string()],
            signing: Signing::Off,
            expect: |e| *e == SmbError::Disconnected,
            reconnects: true,
            counted: true,
        },
        Case {
            name: "stall",
            fault: vec!["--stall-after".into(), n.to_string()],
            signing: Signing::Off,
            expect: |e| *e == SmbError::Timeout,
            reconnects: true,
            counted: true,
        },
        Case {
            // Flips the first byte of the reply's SMB2 header (ProtocolId):
            // the frame is garbage, the link is dropped.
            name: "corrupt-header",
            fault: vec![
                "--corrupt-after".into(),
                (n + 1).to_string(),
                "--corrupt-offset".into(),
                "0".into(),
            ],
            signing: Signing::Off,
            expect: |e| matches!(e, SmbError::Wire(_)),
            reconnects: true,
            counted: true,
        },
        Case {
            // Flips the StructureSize of the CREATE reply: a malformed
            // body under a good header, on a healthy link (it stays up).
            // Not asserted in the counters: the reply's status is SUCCESS,
            // so the client counts nothing as failed (reported).
            name: "corrupt-body",
            fault: vec!["--corrupt-after".into(), (n + 1).to_string()],
            signing: Signing::Off,
            expect: |e| matches!(e, SmbError::Wire(_)),
            reconnects: false,
            counted: false,
        },
        Case {
            name: "forge",
            fault: vec!["--forge-signature-after".into(), (n + 1).to_string()],
            signing: Signing::On,
            expect: |e| *e == SmbError::BadSignature,
            reconnects: true,
            counted: true,
        },
    ];
    let t0 = Instant::now();
    for case in &cases {
        run_case(&fx, &bin, case);
    }
    println!(
        "smb_faults cases={} secs={:.2}",
        cases.len(),
        t0.elapsed().as_secs_f64()
    );
}

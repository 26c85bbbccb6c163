//! `latency-relay`: forward one SMB connection (stdin/stdout, as QEMU's
//! `guestfwd=…-cmd:` starts it) or every connection to a loopback port
//! (`--listen`) to a loopback target, with a fixed one-way delay each way,
//! SMB2 counting into a stats dir, and optional faults. The logic lives in
//! [`qemu::relay`]; this file only parses flags and picks the mode. It
//! touches loopback sockets, the stats dir, stdin/stdout, stderr and the
//! optional `--log` file.
//!
//! libslirp starts a guestfwd command with stdin, stdout *and stderr* all on
//! the guest's connection, so in that mode nothing may be written to
//! stderr (it would land in the guest's SMB stream): messages go to
//! `--log FILE` (if given) and the stats file's `close_reason` instead.
#![deny(unsafe_code)]

use clap::Parser;
use qemu::relay::{self, ClientConn, Faults, RelayConfig, Totals};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::Duration;

/// Latency relay with SMB2 counting and fault injection (loopback only).
#[derive(Parser, Debug)]
#[command(name = "latency-relay")]
struct Args {
    /// Server to forward to (loopback only), e.g. 127.0.0.1:44445.
    #[arg(long, required_unless_present = "sum")]
    target: Option<SocketAddr>,
    /// Accept connections on this loopback address instead of relaying
    /// stdin/stdout (port 0 picks one); prints `listening on ADDR`.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// One-way delay added in each direction, milliseconds (RTT += 2×).
    #[arg(long, default_value_t = 0.0)]
    delay_ms: f64,
    /// Directory for stats: one `conn-<start ms>-<pid>-<seq>.json` per
    /// connection, rewritten after every frame and on close.
    #[arg(long)]
    stats_dir: Option<PathBuf>,
    /// Also count per segment; a client frame starting with ECHO opens the
    /// next segment.
    #[arg(long)]
    segment_on_echo: bool,
    /// Rewrite the stats file inline before forwarding each frame (exact
    /// mid-connection snapshots; slows forwarding on a slow disk) instead
    /// of from a background writer.
    #[arg(long)]
    sync_stats: bool,
    /// Forward N client frames, then close both sides when frame N+1 begins.
    #[arg(long)]
    drop_after: Option<u64>,
    /// Forward N client frames, then forward nothing (sockets stay open).
    #[arg(long)]
    stall_after: Option<u64>,
    /// Flip (XOR 0xff) one byte of the Nth server frame (see --corrupt-offset).
    #[arg(long)]
    corrupt_after: Option<u64>,
    /// Payload offset of the byte --corrupt-after flips (default 64: first
    /// byte after the SMB2 header); clamped to the frame's last byte.
    #[arg(long, default_value_t = 64)]
    corrupt_offset: usize,
    /// From the Nth server frame on, flip a byte of every SMB2 signature.
    #[arg(long)]
    forge_signature_after: Option<u64>,
    /// Inject the faults only on the first K connections (counted through
    /// --stats-dir, so across guestfwd processes), so the client can
    /// reconnect cleanly afterwards.
    #[arg(long, value_name = "K")]
    fault_conns: Option<u64>,
    /// Hold the first successful response to command CMD until a response
    /// to UNTIL has gone back to the client (numbers, hex with 0x), e.g.
    /// `0xe:0x11`: a QUERY_DIRECTORY reply held while a SET_INFO runs.
    /// Encrypted frames are never held (mount without encryption).
    #[arg(long, value_name = "CMD:UNTIL")]
    hold: Option<String>,
    /// Release the held frame after this long anyway (stats: `hold.released_by`
    /// = `timeout`).
    #[arg(long, default_value_t = 10_000)]
    hold_timeout_ms: u64,
    /// Arm --hold only once this path exists (e.g. a marker's directory).
    #[arg(long)]
    hold_armed_by: Option<PathBuf>,
    /// Once armed (--hold-armed-by), rewrite NT status FROM into TO in
    /// every SMB2 response header (hex with 0x), e.g.
    /// `0xc0000052:0xc0000022`: STATUS_NO_EAS_ON_FILE answered as
    /// STATUS_ACCESS_DENIED. Unsigned mounts only.
    #[arg(long, value_name = "FROM:TO")]
    rewrite_status: Option<String>,
    /// Once this path exists, close the connection at the next client bytes
    /// (not forwarded), once per appearance: FILE is renamed away
    /// (FILE.fired-PID-NS), so the client's reconnection and other
    /// connections pass until FILE appears again.
    #[arg(long, value_name = "FILE")]
    drop_armed_by: Option<PathBuf>,
    /// Print the totals of a stats dir as JSON and exit.
    #[arg(long, value_name = "DIR")]
    sum: Option<PathBuf>,
    /// Append error messages here (stderr is the guest's connection under
    /// QEMU guestfwd, so it is never written to there).
    #[arg(long)]
    log: Option<PathBuf>,
}

static LOG: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();

/// True when stderr is the same socket as stdin (QEMU guestfwd).
fn stderr_is_the_connection() -> bool {
    let link = |fd: u32| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok();
    match (link(0), link(2)) {
        (Some(a), Some(b)) => a == b && a.to_string_lossy().starts_with("socket:"),
        _ => false,
    }
}

/// Report a message: to `--log` if given, to stderr unless stderr is the
/// guest's connection.
fn say(msg: &str) {
    if let Some(Some(path)) = LOG.get() {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            use std::io::Write as _;
            let _ = writeln!(f, "latency-relay[{}]: {msg}", std::process::id());
        }
    }
    if !stderr_is_the_connection() {
        eprintln!("latency-relay: {msg}");
    }
}

fn fail(msg: impl std::fmt::Display) -> ! {
    say(&msg.to_string());
    std::process::exit(2);
}

/// `--log FILE` picked out of the raw arguments, so that even a usage
/// error reaches the log in guestfwd mode.
fn raw_log_arg() -> Option<PathBuf> {
    let argv: Vec<String> = std::env::args().collect();
    argv.iter()
        .enumerate()
        .find_map(|(i, a)| match a.strip_prefix("--log=") {
            Some(v) => Some(PathBuf::from(v)),
            None if a == "--log" => argv.get(i + 1).map(PathBuf::from),
            None => None,
        })
}

fn main() {
    let raw_log = raw_log_arg();
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let kind = e.kind();
            if matches!(
                kind,
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) {
                let _ = e.print();
                std::process::exit(0);
            }
            let _ = LOG.set(raw_log);
            fail(e.to_string().trim_end());
        }
    };
    let _ = LOG.set(args.log.clone());
    if let Some(dir) = &args.sum {
        match relay::load_stats_dir(dir) {
            Ok(conns) => {
                let t = Totals::sum(&conns);
                match serde_json::to_string_pretty(&t) {
                    Ok(s) => println!("{s}"),
                    Err(e) => fail(e),
                }
                return;
            }
            Err(e) => fail(format!("{}: {e}", dir.display())),
        }
    }
    let Some(target) = args.target else {
        fail("--target is required");
    };
    if !(args.delay_ms.is_finite() && (0.0..=3_600_000.0).contains(&args.delay_ms)) {
        fail(format!(
            "--delay-ms {} out of range 0..3600000",
            args.delay_ms
        ));
    }
    let rewrite_status = args.rewrite_status.as_deref().map(|r| {
        let num = |v: &str| match v.strip_prefix("0x") {
            Some(x) => u32::from_str_radix(x, 16).ok(),
            None => v.parse().ok(),
        };
        r.split_once(':')
            .and_then(|(f, t)| Some((num(f)?, num(t)?)))
            .unwrap_or_else(|| {
                fail(format!(
                    "--rewrite-status {r}: expected FROM:TO, e.g. 0xc0000052:0xc0000022"
                ))
            })
    });
    let hold = args.hold.as_deref().map(|h| {
        let num = |v: &str| match v.strip_prefix("0x") {
            Some(x) => u16::from_str_radix(x, 16).ok(),
            None => v.parse().ok(),
        };
        let (c, u) = h
            .split_once(':')
            .and_then(|(c, u)| Some((num(c)?, num(u)?)))
            .unwrap_or_else(|| fail(format!("--hold {h}: expected CMD:UNTIL, e.g. 0xe:0x11")));
        relay::HoldRule {
            command: c,
            until: u,
            timeout: Duration::from_millis(args.hold_timeout_ms),
            armed_by: args.hold_armed_by.clone(),
            rewrite_status,
        }
    });
    // A rewrite without a hold: a rule that holds nothing.
    let hold = hold.or_else(|| {
        rewrite_status.map(|r| relay::HoldRule {
            command: relay::NEVER,
            until: relay::NEVER,
            timeout: Duration::from_millis(args.hold_timeout_ms),
            armed_by: args.hold_armed_by.clone(),
            rewrite_status: Some(r),
        })
    });
    let cfg = RelayConfig {
        hold,
        drop_armed_by: args.drop_armed_by.clone(),
        delay: Duration::from_secs_f64(args.delay_ms / 1000.0),
        stats_dir: args.stats_dir.clone(),
        segment_on_echo: args.segment_on_echo,
        sync_stats: args.sync_stats,
        fault_conns: args.fault_conns,
        faults: Faults {
            drop_after: args.drop_after,
            stall_after: args.stall_after,
            corrupt_after: args.corrupt_after,
            corrupt_offset: args.corrupt_offset,
            forge_signature_after: args.forge_signature_after,
        },
        ..RelayConfig::new(target)
    };
    if let Err(e) = relay::check_loopback(&target, "--target") {
        fail(e);
    }
    match args.listen {
        Some(addr) => listen(addr, cfg),
        None => stdio(cfg),
    }
}

/// QEMU guestfwd mode: the connection is on stdin/stdout; exit when done.
fn stdio(cfg: RelayConfig) -> ! {
    let dup = |fd: std::io::Result<std::os::fd::OwnedFd>| match fd {
        Ok(fd) => std::fs::File::from(fd),
        Err(e) => fail(format!("cannot duplicate stdin/stdout: {e}")),
    };
    let input = dup(std::io::stdin().as_fd().try_clone_to_owned());
    let output = dup(std::io::stdout().as_fd().try_clone_to_owned());
    let code =
        match relay::run_connection(ClientConn::Pipe(Box::new(input), Box::new(output)), &cfg) {
            Ok(_) => 0,
            Err(e) => {
                say(&e.to_string());
                1
            }
        };
    // The stdin reader may still be blocked; exiting closes the connection.
    std::process::exit(code);
}

fn listen(addr: SocketAddr, cfg: RelayConfig) -> ! {
    if let Err(e) = relay::check_loopback(&addr, "--listen") {
        fail(e);
    }
    let l = match TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) => fail(format!("bind {addr}: {e}")),
    };
    match l.local_addr() {
        Ok(a) => println!("listening on {a}"),
        Err(e) => fail(e),
    }
    for conn in l.incoming() {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                say(&format!("accept: {e}"));
                continue;
            }
        };
        let cfg = cfg.clone();
        let spawned = std::thread::Builder::new()
            .name("relay-conn".into())
            .spawn(move || {
                if let Err(e) = relay::run_connection(ClientConn::Tcp(stream), &cfg) {
                    say(&e.to_string());
                }
            });
        if let Err(e) = spawned {
            say(&format!("cannot start a connection thread: {e}"));
        }
    }
    std::process::exit(0);
}

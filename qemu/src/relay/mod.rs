//! The latency relay: a TCP forwarder that adds a fixed one-way delay in each
//! direction, watches the NetBIOS/SMB2 framing on the way through, counts
//! frames, SMB2 commands and NT statuses per direction (compounds included),
//! and can inject faults (drop, stall, corrupt a byte, forge a signature).
//!
//! It is the observer that does not trust the client's own counters: the
//! `latency-relay` binary wraps [`run_connection`], started by QEMU as
//! `guestfwd=…-cmd:latency-relay …` (one process per guest connection, the
//! connection on stdin/stdout) or listening on a loopback port for host tests.
//!
//! Layers, bottom up, one module each:
//! - `parser` ([`StreamParser`], with the names and counters of `counts`):
//!   a byte-stream state machine for one direction. It is fed the chunks as
//!   they pass, never holds bytes back (so it adds no latency), keeps a copy
//!   of the current frame to walk compound chains, flips bytes in place for
//!   the corrupt/forge faults, and tells the caller where to cut the stream
//!   for drop/stall. Garbage (anything that is not a NetBIOS session frame
//!   carrying SMB) is counted as unparsed and skipped until a plausible
//!   frame header is found again.
//! - `delay`, the delay line: a reader thread stamps each chunk with `read
//!   time + delay` and a writer thread writes it at that absolute instant,
//!   so chunks keep their spacing and delays never accumulate.
//! - `hold` ([`Holder`]): optionally keeps one response back (the first
//!   successful QUERY_DIRECTORY) until another's (SET_INFO) has gone by,
//!   to force an interleaving; stats file field `hold` ([`HoldStats`]).
//! - the armed drop (`--drop-armed-by FILE`, [`drop_armed_fires`]): once
//!   FILE appears, the next client bytes are not forwarded and the
//!   connection is closed, once across all connections per appearance of
//!   FILE (close reason `dropped when armed`), so a test forces one
//!   reconnect at a chosen point.
//! - `statsfile`, the stats file: one JSON file per connection ([`ConnStats`]),
//!   rewritten atomically (temp file + rename) after every complete frame
//!   and on close; [`load_stats_dir`] and [`Totals`] sum a directory of
//!   them.
//!
//! Stats file `<stats-dir>/conn-<start ms>-<pid>-<seq>.json` (schema
//! `latency-relay/1`): `id`, `pid`, `ordinal`, `target`, `delay_ms`,
//! `started_unix_ms`, `updated_unix_ms`, `updates`, `closed`,
//! `close_reason`, `round_trips` (client SMB frames; a compound is one),
//! `client_to_server` and `server_to_client` ([`DirCounts`]: `bytes`,
//! `frames`, `smb2_frames`, `compound_frames`, `messages`, `smb1_frames`,
//! `encrypted_frames`, `compressed_frames`, `netbios_other`,
//! `unparsed_frames`, `unparsed_bytes`, `bad_chains`, `truncated_frames`,
//! `signed_messages`, `commands` {name → n}, and on the server side
//! `statuses` {"0xc0000052" → n} and `command_statuses` {name → {status →
//! n}}), `faults` (in force), `fault_stats` (`dropped`, `stalled`,
//! `corrupted`, `forged`), `segments` (segment-on-echo only: per segment
//! `round_trips` and both directions' counts).
//!
//! Timing of the numbers: by default a background thread rewrites the file
//! whenever it changed, so forwarding never waits for the disk and the file
//! lags by one write at most; the file written at close is exact.
//! `--sync-stats` writes before each frame is forwarded (a client that holds
//! a reply finds it counted). To split one connection into phases (mount,
//! cold listing, warm listing) exactly, have the client send an SMB2 ECHO
//! at each phase start and run with `--segment-on-echo`: each ECHO opens a
//! segment and is counted in it (one round trip to subtract).
//!
//! It touches only loopback sockets (both ends are checked to be loopback),
//! the stats directory, and for the stdio mode the process's stdin/stdout.

mod counts;
mod delay;
mod hold;
mod parser;
mod statsfile;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use self::counts::{command_name, status_key, status_name, DirCounts, Direction};
use self::delay::{spawn_direction, Dest};
pub use self::hold::{
    chain, rewrite_status, HoldRule, HoldStats, Holder, NEVER, SMB2_QUERY_DIRECTORY, SMB2_SET_INFO,
};
pub use self::parser::{
    Cut, FaultStats, Faults, Fed, StreamParser, SMB2_ECHO, SMB2_FLAGS_SIGNED, SMB2_HEADER_LEN,
    SMB2_SIGNATURE_OFFSET,
};
pub use self::statsfile::{load_stats_dir, ConnStats, SegmentStats, Totals};
use self::statsfile::{lock, unix_ms, Shared, StatsState};

/// `schema` field of every stats file.
pub const SCHEMA: &str = "latency-relay/1";

/// How one connection is relayed.
#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// Server address (must be loopback).
    pub target: SocketAddr,
    /// One-way delay added in each direction.
    pub delay: Duration,
    /// Directory for one stats file per connection (created if missing).
    pub stats_dir: Option<PathBuf>,
    /// Keep per-segment counts; a client frame starting with ECHO begins a
    /// new segment (so a harness can mark phases in-band).
    pub segment_on_echo: bool,
    /// Faults to inject.
    pub faults: Faults,
    /// Apply the faults only to the first K connections (counted through
    /// the stats dir, so across guestfwd processes; per process without
    /// one). `None`: every connection. Lets a client reconnect cleanly.
    pub fault_conns: Option<u64>,
    /// Rewrite the stats file inline after every frame, before forwarding
    /// it (a client holding a reply then always finds it counted), instead
    /// of in a background writer that coalesces updates (the default, so
    /// forwarding never waits for the disk). Use with a tmpfs stats dir.
    pub sync_stats: bool,
    /// Timeout for connecting to the target.
    pub connect_timeout: Duration,
    /// Hold one response back (see [`Holder`]).
    pub hold: Option<HoldRule>,
    /// Close the connection once, at the first client bytes read after
    /// this file appears (see [`drop_armed_fires`]): the client's next
    /// request meets a closed connection and it reconnects on its own.
    pub drop_armed_by: Option<PathBuf>,
}

impl RelayConfig {
    /// A plain relay to `target` with no delay, stats or faults.
    pub fn new(target: SocketAddr) -> Self {
        RelayConfig {
            target,
            delay: Duration::ZERO,
            stats_dir: None,
            segment_on_echo: false,
            faults: Faults::default(),
            fault_conns: None,
            sync_stats: false,
            connect_timeout: Duration::from_secs(5),
            hold: None,
            drop_armed_by: None,
        }
    }

    /// The `latency-relay` flags that reproduce this config (stdio mode),
    /// e.g. for QEMU's `guestfwd=…-cmd:latency-relay ARGS`.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec!["--target".to_string(), self.target.to_string()];
        if !self.delay.is_zero() {
            a.push("--delay-ms".into());
            a.push(format!("{}", self.delay.as_secs_f64() * 1000.0));
        }
        if let Some(d) = &self.stats_dir {
            a.push("--stats-dir".into());
            a.push(d.display().to_string());
        }
        if self.segment_on_echo {
            a.push("--segment-on-echo".into());
        }
        if self.sync_stats {
            a.push("--sync-stats".into());
        }
        let f = &self.faults;
        for (flag, v) in [
            ("--drop-after", f.drop_after),
            ("--stall-after", f.stall_after),
            ("--corrupt-after", f.corrupt_after),
            ("--forge-signature-after", f.forge_signature_after),
        ] {
            if let Some(n) = v {
                a.push(flag.into());
                a.push(n.to_string());
            }
        }
        if let Some(k) = self.fault_conns {
            a.push("--fault-conns".into());
            a.push(k.to_string());
        }
        if let Some(h) = &self.hold {
            a.push("--hold".into());
            a.push(format!("{:#06x}:{:#06x}", h.command, h.until));
            a.push("--hold-timeout-ms".into());
            a.push(h.timeout.as_millis().to_string());
            if let Some(p) = &h.armed_by {
                a.push("--hold-armed-by".into());
                a.push(p.display().to_string());
            }
            if let Some((from, to)) = h.rewrite_status {
                a.push("--rewrite-status".into());
                a.push(format!("{from:#x}:{to:#x}"));
            }
        }
        if let Some(p) = &self.drop_armed_by {
            a.push("--drop-armed-by".into());
            a.push(p.display().to_string());
        }
        if f.corrupt_offset != SMB2_HEADER_LEN {
            a.push("--corrupt-offset".into());
            a.push(f.corrupt_offset.to_string());
        }
        a
    }
}

/// The client end of a relayed connection.
pub enum ClientConn {
    /// A TCP connection accepted by the `--listen` mode.
    Tcp(TcpStream),
    /// Raw reader/writer (QEMU guestfwd: stdin/stdout). Closing it is up to
    /// the caller (the process exits).
    Pipe(Box<dyn Read + Send>, Box<dyn Write + Send>),
}

/// Refuse anything but loopback: the relay must never reach elsewhere.
pub fn check_loopback(addr: &SocketAddr, what: &str) -> io::Result<()> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} {addr} is not a loopback address; the relay only uses loopback"),
        ))
    }
}

/// The one-shot drop of `--drop-armed-by FILE`: true when FILE existed and
/// this call renamed it away (to `FILE.fired-<pid>-<ns>`, a name no other
/// firing uses, so a non-empty directory left by an earlier one never
/// blocks it). The rename is atomic, so among all connections and guestfwd
/// processes watching FILE exactly one fires per time FILE appears, and
/// the client's reconnection finds it gone.
pub fn drop_armed_fires(file: &std::path::Path) -> bool {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut fired = file.as_os_str().to_owned();
    fired.push(format!(".fired-{}-{ns}", std::process::id()));
    std::fs::rename(file, fired).is_ok()
}

/// Per-process connection counter (part of the stats id).
static CONN_SEQ: AtomicU32 = AtomicU32::new(0);

/// Relay one client connection to `cfg.target` until both directions end
/// (or a drop fault fires); returns the final stats (also written to the
/// stats dir). In `Pipe` mode the client → server reader may still be
/// blocked on its reader when this returns; the caller then exits.
pub fn run_connection(client: ClientConn, cfg: &RelayConfig) -> io::Result<ConnStats> {
    check_loopback(&cfg.target, "target")?;
    let started = unix_ms();
    let seq = CONN_SEQ.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let id = format!("{started}-{pid}-{seq}");
    // The connection's ordinal: earlier stats files in the dir (so it
    // spans guestfwd's one-process-per-connection), else this process's.
    let (file, ordinal) = match &cfg.stats_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            let earlier = std::fs::read_dir(d)?
                .filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.starts_with("conn-") && n.ends_with(".json")
                })
                .count() as u64;
            (Some(d.join(format!("conn-{id}.json"))), earlier)
        }
        None => (None, u64::from(seq)),
    };
    let faulty = cfg.fault_conns.is_none_or(|k| ordinal < k);
    let faults = if faulty {
        cfg.faults.clone()
    } else {
        Faults::default()
    };
    let mut stats = ConnStats {
        schema: SCHEMA.into(),
        id,
        pid,
        target: cfg.target.to_string(),
        delay_ms: cfg.delay.as_secs_f64() * 1000.0,
        started_unix_ms: started,
        ordinal,
        faults: faults.clone(),
        ..ConnStats::default()
    };
    // Claim the ordinal at once (the file exists from here on).
    Shared::write_locked(&mut stats, file.as_deref());
    let server = match TcpStream::connect_timeout(&cfg.target, cfg.connect_timeout) {
        Ok(s) => s,
        Err(e) => {
            stats.closed = true;
            stats.close_reason = format!("connect to {} failed: {e}", cfg.target);
            Shared::write_locked(&mut stats, file.as_deref());
            return Err(io::Error::new(e.kind(), stats.close_reason));
        }
    };
    server.set_nodelay(true)?;
    let (client_reader, client_writer, client_sock): (Box<dyn Read + Send>, Dest, _) = match client
    {
        ClientConn::Tcp(s) => {
            s.set_nodelay(true)?;
            (Box::new(s.try_clone()?), Dest::Tcp(s.try_clone()?), Some(s))
        }
        ClientConn::Pipe(r, w) => (r, Dest::Pipe(w), None),
    };
    let shared = Arc::new(Shared {
        state: Mutex::new(StatsState {
            stats,
            dirty: false,
            stop: false,
        }),
        wake: std::sync::Condvar::new(),
        sync_stats: cfg.sync_stats,
        file,
        stalled: AtomicBool::new(false),
        dropped: AtomicBool::new(false),
        closing: AtomicBool::new(false),
        server: server.try_clone()?,
        client: client_sock,
        hold: cfg.hold.clone().map(|r| Mutex::new(Holder::new(r))),
        drop_armed_by: cfg.drop_armed_by.clone(),
    });
    let writer = match (&shared.file, cfg.sync_stats) {
        (Some(_), false) => {
            let sh = shared.clone();
            Some(
                std::thread::Builder::new()
                    .name("relay-stats".into())
                    .spawn(move || sh.writer_loop())?,
            )
        }
        _ => None,
    };
    let segment = cfg.segment_on_echo.then(|| Arc::new(AtomicUsize::new(0)));
    let c2s =
        StreamParser::with_segments(Direction::ClientToServer, faults.clone(), segment.clone());
    let s2c = StreamParser::with_segments(Direction::ServerToClient, faults, segment);

    let (done_tx, done_rx) = mpsc::channel::<Direction>();
    let up = spawn_direction(
        client_reader,
        Dest::Tcp(server.try_clone()?),
        c2s,
        cfg.delay,
        shared.clone(),
        done_tx.clone(),
    )?;
    let down = spawn_direction(
        Box::new(server),
        client_writer,
        s2c,
        cfg.delay,
        shared.clone(),
        done_tx,
    )?;
    // The connection ends when responses stop (server closed, error, drop)
    // or when a drop fault fires on the request side.
    let mut finished_up = false;
    while let Ok(d) = done_rx.recv() {
        match d {
            Direction::ServerToClient => break,
            Direction::ClientToServer => {
                finished_up = true;
                if shared.dropped.load(Ordering::SeqCst) || shared.stalled.load(Ordering::SeqCst) {
                    break;
                }
            }
        }
    }
    shared.close_all();
    let _ = down.join();
    if finished_up || shared.client.is_some() {
        let _ = up.join();
    }
    shared.stop_writer(writer);
    let mut st = lock(&shared.state);
    let s = &mut st.stats;
    s.closed = true;
    if s.close_reason.is_empty() {
        s.close_reason = "closed".into();
    }
    Shared::write_locked(s, shared.file.as_deref());
    Ok(s.clone())
}

#[cfg(test)]
mod tests;

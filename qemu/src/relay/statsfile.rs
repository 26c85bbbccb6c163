//! The stats file: [`ConnStats`] (one JSON file per connection, rewritten
//! atomically), the sums over a directory of them ([`Totals`],
//! [`load_stats_dir`]), and the state both directions publish into.

use serde::{Deserialize, Serialize};
use std::io;
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use super::*;

/// Counts of one segment of a connection (segment-on-echo mode).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SegmentStats {
    /// Client → server SMB frames.
    pub round_trips: u64,
    /// Requests.
    pub client_to_server: DirCounts,
    /// Responses.
    pub server_to_client: DirCounts,
}

/// The stats file of one connection (`<stats-dir>/conn-*.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnStats {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Unique id: `<start unix ms>-<pid>-<seq>` (also the file name stem).
    pub id: String,
    /// Relay process id.
    pub pid: u32,
    /// Connections seen before this one (stats files already in the stats
    /// dir, else this process's earlier connections), from 0.
    pub ordinal: u64,
    /// Server address.
    pub target: String,
    /// One-way delay per direction, milliseconds.
    pub delay_ms: f64,
    /// Connection start, ms since the Unix epoch.
    pub started_unix_ms: u64,
    /// Last rewrite, ms since the Unix epoch.
    pub updated_unix_ms: u64,
    /// Number of rewrites of this file so far.
    pub updates: u64,
    /// The connection is over (final numbers).
    pub closed: bool,
    /// Why it ended (`"client closed"`, `"server closed"`, `"dropped"`, …).
    pub close_reason: String,
    /// Client → server SMB frames (a compound counts once).
    pub round_trips: u64,
    /// Requests.
    pub client_to_server: DirCounts,
    /// Responses.
    pub server_to_client: DirCounts,
    /// Faults in force on this connection (none when `fault_conns` has
    /// been used up).
    pub faults: Faults,
    /// Faults applied.
    pub fault_stats: FaultStats,
    /// Per-segment counts (segment-on-echo mode only; empty otherwise).
    pub segments: Vec<SegmentStats>,
    /// What the hold rule did (only with a rule).
    pub hold: Option<HoldStats>,
}

/// Sums over many connections (see [`load_stats_dir`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Connections summed.
    pub connections: u64,
    /// Of which still open.
    pub open: u64,
    /// Client → server SMB frames.
    pub round_trips: u64,
    /// Requests.
    pub client_to_server: DirCounts,
    /// Responses.
    pub server_to_client: DirCounts,
    /// Faults applied (dropped/stalled: any connection).
    pub fault_stats: FaultStats,
}

impl Totals {
    /// Sum of `conns`.
    pub fn sum(conns: &[ConnStats]) -> Totals {
        let mut t = Totals::default();
        for c in conns {
            t.connections += 1;
            t.open += u64::from(!c.closed);
            t.round_trips += c.round_trips;
            t.client_to_server.add(&c.client_to_server);
            t.server_to_client.add(&c.server_to_client);
            t.fault_stats.dropped |= c.fault_stats.dropped;
            t.fault_stats.stalled |= c.fault_stats.stalled;
            t.fault_stats.corrupted += c.fault_stats.corrupted;
            t.fault_stats.forged += c.fault_stats.forged;
        }
        t
    }

    /// `self - earlier`: the traffic between two snapshots of a directory.
    pub fn since(&self, earlier: &Totals) -> Totals {
        Totals {
            connections: self.connections.saturating_sub(earlier.connections),
            open: self.open,
            round_trips: self.round_trips.saturating_sub(earlier.round_trips),
            client_to_server: self.client_to_server.since(&earlier.client_to_server),
            server_to_client: self.server_to_client.since(&earlier.server_to_client),
            fault_stats: FaultStats {
                dropped: self.fault_stats.dropped,
                stalled: self.fault_stats.stalled,
                corrupted: self
                    .fault_stats
                    .corrupted
                    .saturating_sub(earlier.fault_stats.corrupted),
                forged: self
                    .fault_stats
                    .forged
                    .saturating_sub(earlier.fault_stats.forged),
            },
        }
    }
}

/// Read every `conn-*.json` in `dir`, sorted by id (start time first).
/// Files that do not parse are an error naming the file.
pub fn load_stats_dir(dir: &Path) -> io::Result<Vec<ConnStats>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !(name.starts_with("conn-") && name.ends_with(".json")) {
            continue;
        }
        let text = std::fs::read_to_string(&p)?;
        let c: ConnStats = serde_json::from_str(&text).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", p.display()))
        })?;
        out.push(c);
    }
    out.sort_by(|a, b| {
        (a.started_unix_ms, &a.id)
            .partial_cmp(&(b.started_unix_ms, &b.id))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    Ok(out)
}

pub(super) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The stats and the "needs writing" flag, under one lock.
pub(super) struct StatsState {
    pub(super) stats: ConnStats,
    pub(super) dirty: bool,
    pub(super) stop: bool,
}

pub(super) struct Shared {
    pub(super) state: Mutex<StatsState>,
    /// Wakes the stats writer thread.
    pub(super) wake: std::sync::Condvar,
    /// Write inline (under the lock) instead of in the writer thread.
    pub(super) sync_stats: bool,
    pub(super) file: Option<PathBuf>,
    pub(super) stalled: AtomicBool,
    pub(super) dropped: AtomicBool,
    pub(super) closing: AtomicBool,
    pub(super) server: TcpStream,
    pub(super) client: Option<TcpStream>,
    /// The hold rule on the server → client stream.
    pub(super) hold: Option<Mutex<Holder>>,
    /// The armed drop's file (client → server reader).
    pub(super) drop_armed_by: Option<PathBuf>,
}

impl Shared {
    /// Merge one direction's parser state into the stats and get the file
    /// rewritten: inline with `sync_stats`, else by the writer thread, which
    /// coalesces updates so forwarding never waits for the disk.
    pub(super) fn publish(&self, p: &StreamParser, close: Option<&str>) {
        let mut st = lock(&self.state);
        let s = &mut st.stats;
        match p.direction() {
            Direction::ClientToServer => {
                s.client_to_server = p.counts.clone();
                s.round_trips = p.counts.round_trips();
                s.fault_stats.dropped |= p.fault_stats.dropped;
                s.fault_stats.stalled |= p.fault_stats.stalled;
            }
            Direction::ServerToClient => {
                s.server_to_client = p.counts.clone();
                s.fault_stats.corrupted = p.fault_stats.corrupted;
                s.fault_stats.forged = p.fault_stats.forged;
            }
        }
        if !p.segments.is_empty() {
            if s.segments.len() < p.segments.len() {
                s.segments.resize(p.segments.len(), SegmentStats::default());
            }
            for (i, seg) in p.segments.iter().enumerate() {
                match p.direction() {
                    Direction::ClientToServer => {
                        s.segments[i].client_to_server = seg.clone();
                        s.segments[i].round_trips = seg.round_trips();
                    }
                    Direction::ServerToClient => s.segments[i].server_to_client = seg.clone(),
                }
            }
        }
        if let Some(reason) = close {
            if s.close_reason.is_empty() {
                s.close_reason = reason.to_string();
            }
        }
        if self.sync_stats || self.file.is_none() {
            Self::write_locked(&mut st.stats, self.file.as_deref());
        } else {
            st.dirty = true;
            self.wake.notify_one();
        }
    }

    /// Record the hold rule's stats (written like [`Shared::publish`]).
    pub(super) fn set_hold(&self, h: &HoldStats) {
        let mut st = lock(&self.state);
        if st.stats.hold.as_ref() == Some(h) {
            return;
        }
        st.stats.hold = Some(h.clone());
        if self.sync_stats || self.file.is_none() {
            Self::write_locked(&mut st.stats, self.file.as_deref());
        } else {
            st.dirty = true;
            self.wake.notify_one();
        }
    }

    /// The stats writer thread: rewrite the file whenever it is dirty.
    pub(super) fn writer_loop(&self) {
        let Some(file) = self.file.as_deref() else {
            return;
        };
        loop {
            let snapshot = {
                let mut st = lock(&self.state);
                while !st.dirty && !st.stop {
                    st = match self.wake.wait(st) {
                        Ok(g) => g,
                        Err(p) => p.into_inner(),
                    };
                }
                if !st.dirty {
                    return;
                }
                st.dirty = false;
                st.stats.updated_unix_ms = unix_ms();
                st.stats.updates += 1;
                st.stats.clone()
            };
            Self::write_file(&snapshot, file);
        }
    }

    /// Stop the writer thread (it writes a pending update first).
    pub(super) fn stop_writer(&self, writer: Option<std::thread::JoinHandle<()>>) {
        lock(&self.state).stop = true;
        self.wake.notify_all();
        if let Some(w) = writer {
            let _ = w.join();
        }
    }

    pub(super) fn write_locked(s: &mut ConnStats, file: Option<&Path>) {
        s.updated_unix_ms = unix_ms();
        s.updates += 1;
        if let Some(file) = file {
            Self::write_file(s, file);
        }
    }

    /// Atomic rewrite: temp file + rename, so readers never see half a file.
    fn write_file(s: &ConnStats, file: &Path) {
        let Ok(text) = serde_json::to_string_pretty(s) else {
            return;
        };
        let tmp = file.with_extension("json.tmp");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, file);
        }
    }

    pub(super) fn close_all(&self) {
        self.closing.store(true, Ordering::SeqCst);
        let _ = self.server.shutdown(Shutdown::Both);
        if let Some(c) = &self.client {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

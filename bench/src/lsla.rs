//! `lsla`: the cifs seed's experiment — `ls -la` of a share of N entries
//! over a delayed link, per WSL-EA design, cold then warm — in host mode:
//! the fs crate's SMB client on host threads, a loopback Samba started for
//! the run, and the latency relay between them as the independent observer.
//!
//! For each RTT one relay runs in `--listen` mode with `--sync-stats` (its
//! per-connection JSON is current before each frame is forwarded, so a
//! snapshot taken after a reply arrives counts everything up to it). For
//! each design: mount (not counted), snapshot, cold listing, snapshot, warm
//! listing, snapshot; the differences are the figures. At the end of each
//! mount the relay's round trips for the whole connection are compared with
//! the client's own `frames` counter.
//!
//! Touches: child processes (smbd through the fixture, the relay), a temp
//! dir for the relay's stats, loopback sockets only.

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use fs::cifs::{self, CifsFs};
use fs::smb::{StdClock, TcpConnector};
use fs::vfs::Vfs;
use qemu::relay::{load_stats_dir, Totals};
use qemu::samba::{Fixture, FixtureOpts};

/// What to run.
#[derive(Clone, Debug)]
pub struct LslaConfig {
    pub designs: Vec<String>,
    pub rtts_ms: Vec<u64>,
    pub entries: usize,
    /// Entries (the first ones) that carry WSL EAs.
    pub wsl_entries: usize,
    /// The `latency-relay` binary.
    pub relay_bin: PathBuf,
    /// Extra mount options (appended).
    pub extra_opts: String,
}

/// One design × RTT.
#[derive(Clone, Debug, Default)]
pub struct LslaRow {
    pub design: String,
    pub rtt_ms: u64,
    pub entries: usize,
    pub cold_s: f64,
    pub warm_s: f64,
    pub cold: Totals,
    pub warm: Totals,
    /// Whole connection, relay vs client (must agree).
    pub relay_round_trips: u64,
    pub client_frames: u64,
    /// The client's /proc/fs/cifs/Stats after the run.
    pub client_stats: String,
    /// (name, uid, gid, mode) of the first few entries, cold.
    pub sample: Vec<(String, u32, u32, u32)>,
}

impl LslaRow {
    /// The exact summary line of the issue.
    pub fn line(&self) -> String {
        format!(
            "lsla design={} rtt_ms={} entries={} cold_s={:.3} cold_round_trips={} warm_s={:.3} warm_round_trips={} cold_query_info={} warm_query_info={}",
            self.design,
            self.rtt_ms,
            self.entries,
            self.cold_s,
            self.cold.round_trips,
            self.warm_s,
            self.warm.round_trips,
            qi(&self.cold),
            qi(&self.warm),
        )
    }
}

fn qi(t: &Totals) -> u64 {
    t.client_to_server
        .commands
        .get("QUERY_INFO")
        .copied()
        .unwrap_or(0)
}

struct Relay {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Relay {
    fn start(bin: &Path, target: u16, one_way_ms: f64, dir: &Path) -> Result<Relay, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut child = Command::new(bin)
            .args(["--listen", "127.0.0.1:0", "--target"])
            .arg(format!("127.0.0.1:{target}"))
            .arg("--delay-ms")
            .arg(format!("{one_way_ms}"))
            .arg("--stats-dir")
            .arg(dir)
            .arg("--sync-stats")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let out = child.stdout.take().ok_or("relay stdout")?;
        let mut line = String::new();
        BufReader::new(out)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("relay said {line:?}"))?;
        Ok(Relay {
            child,
            port,
            dir: dir.to_path_buf(),
        })
    }

    fn totals(&self) -> Totals {
        Totals::sum(&load_stats_dir(&self.dir).unwrap_or_default())
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ls -la`: readdir, then lstat of every entry. Returns the sorted names'
/// (name, uid, gid, mode).
fn ls_la(v: &Vfs) -> Result<Vec<(String, u32, u32, u32)>, String> {
    let mut names: Vec<String> = v
        .readdir(b"/mnt")
        .map_err(|e| format!("readdir: {e}"))?
        .into_iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .collect();
    names.sort();
    let mut out = Vec::with_capacity(names.len());
    for n in names {
        let st = v
            .lstat(format!("/mnt/{n}").as_bytes())
            .map_err(|e| format!("lstat {n}: {e}"))?;
        out.push((n, st.uid, st.gid, st.mode));
    }
    Ok(out)
}

fn diff(a: &Totals, b: &Totals) -> Totals {
    b.since(a)
}

/// Run every design × RTT; `progress` is told what runs.
pub fn run(cfg: &LslaConfig, mut progress: impl FnMut(&str)) -> Result<Vec<LslaRow>, String> {
    Fixture::available()?;
    let fx = Fixture::start(
        &FixtureOpts {
            entries: cfg.entries,
            ..FixtureOpts::default()
        }
        .with_wsl_eas(cfg.wsl_entries),
    )
    .map_err(|e| format!("samba fixture: {e}"))?;
    let tmp = std::env::temp_dir().join(format!("lsla-{}", std::process::id()));
    let mut rows = Vec::new();
    for &rtt in &cfg.rtts_ms {
        for design in &cfg.designs {
            progress(&format!("lsla design={design} rtt_ms={rtt}"));
            let dir = tmp.join(format!("{design}-{rtt}"));
            let relay = Relay::start(&cfg.relay_bin, fx.port, rtt as f64 / 2.0, &dir)?;
            let v = Vfs::new_tmpfs("").map_err(|e| e.to_string())?;
            v.mkdir(b"/mnt", 0o755).map_err(|e| e.to_string())?;
            let opts = format!(
                "username={},password={},acregmax=30,acdirmax=300,wslea={design}{}{}",
                fx.user,
                fx.password,
                if cfg.extra_opts.is_empty() { "" } else { "," },
                cfg.extra_opts
            );
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, relay.port));
            let sb = cifs::mount(
                &v,
                &format!("//127.0.0.1/{}", fx.share),
                b"/mnt",
                &opts,
                Box::new(TcpConnector {
                    addr,
                    timeout_ms: 30_000,
                }),
                Box::new(StdClock::default()),
            )
            .map_err(|e| format!("mount: {e}"))?;
            let fs = sb.ops_as::<CifsFs>().ok_or("not a cifs mount")?;
            let t0 = relay.totals();
            let s = Instant::now();
            let sample = ls_la(&v)?;
            let cold_s = s.elapsed().as_secs_f64();
            let t1 = relay.totals();
            let s = Instant::now();
            ls_la(&v)?;
            let warm_s = s.elapsed().as_secs_f64();
            let t2 = relay.totals();
            let client_frames = fs.with_stats(|st| st.frames);
            let client_stats = fs.render_stats();
            drop(v);
            drop(sb);
            // The connection is closed now; the relay's final file is exact.
            let mut total = relay.totals();
            for _ in 0..50 {
                if total.open == 0 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
                total = relay.totals();
            }
            rows.push(LslaRow {
                design: design.clone(),
                rtt_ms: rtt,
                entries: cfg.entries,
                cold_s,
                warm_s,
                cold: diff(&t0, &t1),
                warm: diff(&t1, &t2),
                relay_round_trips: total.round_trips,
                client_frames,
                client_stats,
                sample: sample.into_iter().take(4).collect(),
            });
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(rows)
}

/// The report: a table per RTT, the seed-style distributions, the lines.
pub fn report(rows: &[LslaRow]) -> String {
    let mut s = String::from("# `ls -la` over SMB: WSL-EA designs\n\n");
    s.push_str("Host mode: the fs crate's SMB client, a loopback Samba 511-entry share, the latency relay counting frames.\n\n");
    s.push_str("| design | RTT ms | cold s | cold round trips | cold QUERY_INFO | warm s | warm round trips | warm QUERY_INFO | relay = client frames |\n|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {:.3} | {} | {} | {:.3} | {} | {} | {} |\n",
            r.design,
            r.rtt_ms,
            r.cold_s,
            r.cold.round_trips,
            qi(&r.cold),
            r.warm_s,
            r.warm.round_trips,
            qi(&r.warm),
            if r.relay_round_trips == r.client_frames {
                "yes".to_string()
            } else {
                format!("NO ({} vs {})", r.relay_round_trips, r.client_frames)
            },
        ));
    }
    for rtt in rows
        .iter()
        .map(|r| r.rtt_ms)
        .collect::<std::collections::BTreeSet<_>>()
    {
        let by = |d: &str| rows.iter().find(|r| r.rtt_ms == rtt && r.design == d);
        if let (Some(p), Some(e)) = (by("probe"), by("easize")) {
            if e.cold_s > 0.0 {
                s.push_str(&format!(
                    "\nRTT {rtt} ms: probe / easize cold time = {:.1}×\n",
                    p.cold_s / e.cold_s
                ));
            }
        }
    }
    s.push_str("\n## Command and status distribution of the cold listing (relay)\n");
    for r in rows {
        s.push_str(&format!("\n### {} at {} ms\n\n```\n", r.design, r.rtt_ms));
        for (c, n) in &r.cold.client_to_server.commands {
            s.push_str(&format!("{n:>7} {c}\n"));
        }
        for (st, n) in &r.cold.server_to_client.statuses {
            s.push_str(&format!("{n:>7} status={st}\n"));
        }
        s.push_str("```\n");
    }
    s.push_str("\n## Lines\n\n```\n");
    for r in rows {
        s.push_str(&r.line());
        s.push('\n');
    }
    s.push_str("```\n");
    s
}

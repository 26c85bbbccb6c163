//! `lsla`: the cifs seed's experiment — coreutils 9.7's `ls -la` of a share
//! of N entries over a delayed link (its calls: lstat and llistxattr of
//! every name, [`bench::coreutils::ls_la`]), per EA-cache design (`eacache=`),
//! cold then warm — in host mode:
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

use formats::markdown::{Align, Table};
use fs::fstype::cifs::{self, CifsFs};
use fs::vfs::Vfs;
use qemu::relay::{load_stats_dir, Totals};
use qemu::samba::{Fixture, FixtureOpts};
use smb::{StdClock, TcpConnector};

/// What to run.
#[derive(Clone, Debug)]
pub struct LslaConfig {
    pub designs: Vec<String>,
    pub rtts_ms: Vec<u64>,
    pub entries: usize,
    /// Entries (the first ones) that carry WSL EAs.
    pub wsl_entries: usize,
    /// Entries (the last ones) that carry the EA `user.x` = `1`, as
    /// `setfattr -n user.x -v 1` on the server's files makes it; every
    /// listing must show it (see [`check_eas`]).
    pub ea_entries: usize,
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

/// coreutils 9.7's `ls -la /mnt`.
fn ls_la(v: &Vfs) -> Result<bench::coreutils::LsListing, String> {
    bench::coreutils::ls_la(v, b"/mnt").map_err(|e| format!("ls -la /mnt: {e}"))
}

/// The (name, uid, gid, mode) of a listing's entries.
fn owners(l: &bench::coreutils::LsListing) -> Vec<(String, u32, u32, u32)> {
    l.entries
        .iter()
        .map(|e| {
            let n = String::from_utf8_lossy(&e.name).into_owned();
            (n, e.stat.uid, e.stat.gid, e.stat.mode)
        })
        .collect()
}

/// The name of the share's `i`th entry that [`LslaConfig::ea_entries`]
/// gives `user.x`.
fn ea_entry(entries: usize, ea_entries: usize, i: usize) -> String {
    qemu::samba::entry_name(entries - ea_entries + i)
}

/// Does the listing show what the share holds? The entries given
/// `user.x` list it, the WSL entries their `user.$LX…` EAs, the others
/// nothing — except where the mount has no `user.` names at all
/// (`unsupported`: `eacache=off`, `nouser_xattr`): EOPNOTSUPP everywhere.
pub fn check_eas(
    l: &bench::coreutils::LsListing,
    cfg: &LslaConfig,
    unsupported: bool,
) -> Result<(), String> {
    let x: std::collections::BTreeSet<String> = (0..cfg.ea_entries.min(cfg.entries))
        .map(|i| ea_entry(cfg.entries, cfg.ea_entries.min(cfg.entries), i))
        .collect();
    for e in &l.entries {
        let name = String::from_utf8_lossy(&e.name).into_owned();
        let wsl = (0..cfg.wsl_entries).any(|i| qemu::samba::entry_name(i) == name);
        let ok = match &e.xattrs {
            Err(fs::errno::Errno::EOPNOTSUPP) => unsupported,
            Err(_) => false,
            Ok(_) if unsupported => false,
            Ok(names) => {
                let has = |n: &[u8]| names.iter().any(|m| m == n);
                has(b"user.x") == x.contains(&name)
                    && has(b"user.$LXUID") == wsl
                    && names.is_empty() == (!wsl && !x.contains(&name))
            }
        };
        if !ok {
            return Err(format!("{name}: llistxattr gave {:?}", e.xattrs));
        }
    }
    Ok(())
}

fn diff(a: &Totals, b: &Totals) -> Totals {
    b.since(a)
}

/// Run every design × RTT; `progress` is told what runs.
pub fn run(cfg: &LslaConfig, mut progress: impl FnMut(&str)) -> Result<Vec<LslaRow>, String> {
    Fixture::available()?;
    let fx = Fixture::start(&fixture_opts(cfg)).map_err(|e| format!("samba fixture: {e}"))?;
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
                "username={},password={},acregmax=30,acdirmax=300,eacache={design}{}{}",
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
            let cold = ls_la(&v)?;
            let cold_s = s.elapsed().as_secs_f64();
            let t1 = relay.totals();
            let s = Instant::now();
            let warm = ls_la(&v)?;
            let warm_s = s.elapsed().as_secs_f64();
            let t2 = relay.totals();
            let unsupported =
                fs.opts.effective_eacache().sends() == fs::fstype::cifs::eacache::EaSends::Never;
            for (l, when) in [(&cold, "cold"), (&warm, "warm")] {
                check_eas(l, cfg, unsupported)
                    .map_err(|e| format!("eacache={design} rtt_ms={rtt}, {when} listing: {e}"))?;
            }
            let sample = owners(&cold);
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

/// The share of `cfg`: its entries, the WSL EAs, `user.x` on the last
/// [`LslaConfig::ea_entries`].
fn fixture_opts(cfg: &LslaConfig) -> FixtureOpts {
    let mut o = FixtureOpts {
        entries: cfg.entries,
        ..FixtureOpts::default()
    }
    .with_wsl_eas(cfg.wsl_entries);
    for i in 0..cfg.ea_entries.min(cfg.entries) {
        let name = ea_entry(cfg.entries, cfg.ea_entries.min(cfg.entries), i);
        o.other_xattrs
            .push((name, "user.x".to_string(), b"1".to_vec()));
    }
    o
}

/// The figures table of [`report_all`] and [`report_linux`]: a row per
/// design × RTT, its last column `agree` (whether the counts agree).
fn figures_table(agree: &str) -> Table {
    Table::new(
        [
            "design",
            "RTT ms",
            "cold s",
            "cold round trips",
            "cold QUERY_INFO",
            "warm s",
            "warm round trips",
            "warm QUERY_INFO",
            agree,
        ]
        .map(|h| (h, Align::Left)),
    )
}

/// One row of [`figures_table`].
fn figures_row(t: &mut Table, r: &LslaRow, agree: impl std::fmt::Display) {
    t.row([
        r.design.clone(),
        r.rtt_ms.to_string(),
        format!("{:.3}", r.cold_s),
        r.cold.round_trips.to_string(),
        qi(&r.cold).to_string(),
        format!("{:.3}", r.warm_s),
        r.warm.round_trips.to_string(),
        qi(&r.warm).to_string(),
        agree.to_string(),
    ]);
}

/// The report: a table per RTT, the seed-style distributions, the lines.
pub fn report(rows: &[LslaRow]) -> String {
    report_all(&[], rows)
}

/// [`report`] with the real Linux client's rows first (the base mount in
/// the main table, the seed's variants in their own table beside the
/// seed's figures, then its distributions).
pub fn report_all(linux: &[LinuxLsla], rows: &[LslaRow]) -> String {
    let mut s = String::from("# `ls -la` over SMB: EA-cache designs\n\n");
    s.push_str("Host mode: the fs crate's SMB client making coreutils 9.7's calls (lstat + llistxattr per name), a loopback Samba 511-entry share, the latency relay counting frames.");
    if let Some(l) = linux.first() {
        s.push_str(&format!(" The `linux-…` rows are the real client ({}) in the reference guest, same share, same relay (see below).", l.kernel));
    }
    s.push_str("\n\n");
    let mut t = figures_table("relay = client frames");
    for l in linux.iter().filter(|l| !l.is_variant) {
        let agree = if l.stats_agree() { "yes" } else { "NO" };
        figures_row(
            &mut t,
            &l.row,
            format!("{agree} (QueryInfos of /proc/fs/cifs/Stats)"),
        );
    }
    for r in rows {
        let agree = if r.relay_round_trips == r.client_frames {
            "yes".to_string()
        } else {
            format!("NO ({} vs {})", r.relay_round_trips, r.client_frames)
        };
        figures_row(&mut t, r, agree);
    }
    s.push_str(&t.into_string());
    for rtt in rows
        .iter()
        .map(|r| r.rtt_ms)
        .collect::<std::collections::BTreeSet<_>>()
    {
        let by = |d: &str| rows.iter().find(|r| r.rtt_ms == rtt && r.design == d);
        if let (Some(p), Some(e)) = (by("always"), by("easize")) {
            if e.cold_s > 0.0 {
                s.push_str(&format!(
                    "\nRTT {rtt} ms: always / easize cold time = {:.1}×\n",
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
    if !linux.is_empty() {
        s.push_str(&variants_table(linux));
        s.push('\n');
        s.push_str(&report_linux(linux));
    }
    s.push_str("\n## Lines\n\n```\n");
    for l in linux {
        s.push_str(&l.line());
        s.push('\n');
    }
    for r in rows {
        s.push_str(&r.line());
        s.push('\n');
    }
    s.push_str("```\n");
    s
}

// ---------------------------------------------------------------------------
// The real Linux cifs client (the reference guest) against the same share
// ---------------------------------------------------------------------------

/// The seed's mount options, exactly (credentials and `ip=` are added).
pub const SEED_OPTS: &str = "vers=3.1.1,cache=strict,upcall_target=app,uid=5000,forceuid,\
gid=5000,forcegid,file_mode=0664,dir_mode=0775,iocharset=utf8,soft,nounix,mapposix,\
reparse=nfs,nativesocket,symlink=native,rsize=4194304,wsize=4194304,acdirmax=300,acregmax=30";

/// The seed's "What doesn't help" variants, and the workaround that needs
/// no patch (`nouser_xattr`): (name, option changed).
pub const SEED_VARIANTS: &[(&str, &str)] = &[
    ("noserverino", "noserverino"),
    ("symlink=none", "symlink=none"),
    ("reparse=wsl", "reparse=wsl"),
    ("vers=3.0", "vers=3.0"),
    ("nouser_xattr", "nouser_xattr"),
];

/// Mounts per boot of the reference guest (see [`run_linux`]).
const MOUNTS_PER_BOOT: usize = 4;

/// The variant that lists with the host's coreutils (9.1 on Debian 12)
/// instead of Debian 13's 9.7, seed options unchanged.
pub const HOST_LS_VARIANT: &str = "ls-host";

/// The seed's option string with `change` applied: a `key=value` replaces
/// the seed's value of `key`; a bare flag is appended.
pub fn seed_opts_with(change: &str) -> String {
    let mut words: Vec<String> = SEED_OPTS.split(',').map(str::to_string).collect();
    match change.split_once('=') {
        Some((k, _)) => {
            match words
                .iter_mut()
                .find(|w| w.split_once('=').is_some_and(|(wk, _)| wk == k))
            {
                Some(w) => *w = change.to_string(),
                None => words.push(change.to_string()),
            }
        }
        None if !change.is_empty() => words.push(change.to_string()),
        None => {}
    }
    words.join(",")
}

/// The Linux guest's part of an SMB sweep.
#[derive(Clone, Debug)]
pub struct LinuxLslaConfig {
    /// Which reference kernel.
    pub release: qemu::linuxref::Release,
    /// Where the guest is built and cached.
    pub build_dir: PathBuf,
    /// Also run [`SEED_VARIANTS`] at this RTT (the seed's is 76 ms).
    pub variants_rtt: Option<u64>,
    /// A patch series of `linux/patches/REL/` whose cifs.ko (built out of
    /// tree against the release's headers) lists the share too, in its own
    /// boot per RTT (`design=linux-REL+SERIES` less its `cifs-` prefix).
    /// Where the release has no such series, those rows are left out (and
    /// the progress says so).
    pub patch: Option<String>,
}

/// One Linux listing row, with what only the real client can tell.
#[derive(Clone, Debug, Default)]
pub struct LinuxLsla {
    /// The figures, in the same form as ours (`design=linux-6.12`, or
    /// `linux-6.12+VARIANT`).
    pub row: LslaRow,
    /// The mount options asked for (credentials left out).
    pub opts: String,
    /// Those the kernel refused (`Unknown parameter`) and the guest dropped.
    pub dropped: Vec<String>,
    /// The guest's view of the cold and warm listings (Stats, trace analysis).
    pub cold: qemu::linuxref::CifsListing,
    pub warm: qemu::linuxref::CifsListing,
    /// The exact kernel.
    pub kernel: String,
    /// The `ls` that listed: its version (`9.7`, `9.1`).
    pub ls: String,
    /// A variant of the seed's options (or of its `ls`), not a main row.
    pub is_variant: bool,
    /// With a module built out of tree: what the kernel logged loading it
    /// (its taint and signature lines, `/proc/sys/kernel/tainted`).
    pub module_log: Vec<String>,
}

impl LinuxLsla {
    /// [`LslaRow::line`] with the `ls` version appended (`ls=9.7`).
    pub fn line(&self) -> String {
        format!("{} ls={}", self.row.line(), self.ls)
    }
}

/// Boots the reference guest once per RTT; in each boot its cifs client
/// mounts the share through the relay and lists it cold and warm. The
/// relay counts from each listing's start: the guest sends an HTTP request
/// to a second forward (10.0.2.100:4450, a separate marker connection)
/// before and after each listing, and that forward copies the relay's
/// stats dir (`--sync-stats`: current before each frame is forwarded)
/// before answering, so each listing's counts are the difference of two
/// snapshots and the mount is never counted.
pub fn run_linux(
    cfg: &LslaConfig,
    lcfg: &LinuxLslaConfig,
    mut progress: impl FnMut(&str),
) -> Result<Vec<LinuxLsla>, String> {
    use qemu::linuxref;
    let paths =
        linuxref::ensure_release(&lcfg.build_dir, lcfg.release).map_err(|e| e.to_string())?;
    Fixture::available()?;
    let fx = Fixture::start(
        &FixtureOpts {
            entries: cfg.entries,
            ..FixtureOpts::default()
        }
        .with_wsl_eas(cfg.wsl_entries),
    )
    .map_err(|e| format!("samba fixture: {e}"))?;
    let module = match &lcfg.patch {
        Some(series) if !linuxref::patch_series_dir(lcfg.release, series).is_dir() => {
            progress(&format!(
                "lsla design={}+{} skipped: no {}/{series} for Linux {}",
                paths.cifs_design(),
                series.strip_prefix("cifs-").unwrap_or(series),
                linuxref::patches_dir(lcfg.release),
                lcfg.release
            ));
            None
        }
        Some(series) => {
            progress(&format!(
                "building cifs.ko of Linux {} with {series} (out of tree)",
                lcfg.release
            ));
            // A module that cannot be built leaves out its rows only.
            match linuxref::ensure_cifs_module(&lcfg.build_dir, lcfg.release, series) {
                Ok(m) => {
                    if let Some(t) = m.build_s {
                        progress(&format!("cifs.ko with {series}: built in {t:.0} s"));
                    }
                    Some(m)
                }
                Err(e) => {
                    progress(&format!(
                        "lsla design={}+{} skipped: {e}",
                        paths.cifs_design(),
                        series.strip_prefix("cifs-").unwrap_or(series)
                    ));
                    None
                }
            }
        }
        None => None,
    };
    let design = paths.cifs_design();
    let tmp = std::env::temp_dir().join(format!("lsla-linux-{}", std::process::id()));
    let mut out = Vec::new();
    for &rtt in &cfg.rtts_ms {
        let mut variants = vec![("base".to_string(), SEED_OPTS.to_string())];
        if lcfg.variants_rtt == Some(rtt) {
            for (name, change) in SEED_VARIANTS {
                variants.push((name.replace('=', "-"), seed_opts_with(change)));
            }
            variants.push((HOST_LS_VARIANT.to_string(), SEED_OPTS.to_string()));
        }
        progress(&format!(
            "lsla design={design} rtt_ms={rtt} ({} mount{})",
            variants.len(),
            if variants.len() == 1 { "" } else { "s" }
        ));
        // The guest's command line carries every variant's options and
        // x86 keeps 2048 bytes of it: at most 4 of the seed's per boot.
        for (i, chunk) in variants.chunks(MOUNTS_PER_BOOT).enumerate() {
            let boot = Boot {
                paths: &paths,
                fx: &fx,
                cfg,
                rtt,
                dir: tmp.join(format!("rtt{rtt}-{i}")),
            };
            out.extend(boot.run(chunk, None, &design)?);
        }
        let boot = Boot {
            paths: &paths,
            fx: &fx,
            cfg,
            rtt,
            dir: tmp.join(format!("rtt{rtt}")),
        };
        if let Some(m) = &module {
            let patched = format!(
                "{design}+{}",
                m.series.strip_prefix("cifs-").unwrap_or(&m.series)
            );
            progress(&format!("lsla design={patched} rtt_ms={rtt} (1 mount)"));
            let boot = Boot {
                dir: tmp.join(format!("rtt{rtt}-{}", m.series)),
                ..boot
            };
            out.extend(boot.run(&variants[..1], Some(&m.ko), &patched)?);
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(out)
}

/// One boot of the reference guest at one RTT (see [`run_linux`]).
#[derive(Clone)]
struct Boot<'a> {
    paths: &'a qemu::linuxref::Paths,
    fx: &'a Fixture,
    cfg: &'a LslaConfig,
    rtt: u64,
    dir: PathBuf,
}

impl Boot<'_> {
    /// Lists the share once per variant (cold, warm) with `module` (or the
    /// packaged cifs.ko); rows are named `design` (`design+VARIANT`).
    fn run(
        &self,
        variants: &[(String, String)],
        module: Option<&Path>,
        design: &str,
    ) -> Result<Vec<LinuxLsla>, String> {
        use qemu::linuxref::{self, CifsRun, GuestRun};
        let (fx, rtt, dir) = (self.fx, self.rtt, &self.dir);
        let _ = std::fs::remove_dir_all(dir);
        let (stats_dir, marks_dir) = (dir.join("stats"), dir.join("marks"));
        let relay = vec![
            self.cfg.relay_bin.display().to_string(),
            "--target".into(),
            format!("127.0.0.1:{}", fx.port),
            "--delay-ms".into(),
            format!("{}", rtt as f64 / 2.0),
            "--stats-dir".into(),
            stats_dir.display().to_string(),
            "--sync-stats".into(),
            "--log".into(),
            dir.join("relay.log").display().to_string(),
        ];
        let creds = format!(
            ",username={},password={},ip=10.0.2.100",
            fx.user, fx.password
        );
        let run = GuestRun {
            cifs: Some(CifsRun {
                unc: format!("//10.0.2.100/{}", fx.share),
                variants: variants
                    .iter()
                    .map(|(n, o)| (n.clone(), format!("{o}{creds}")))
                    .collect(),
                relay,
                stats_dir,
                marks_dir: marks_dir.clone(),
                ls: variants
                    .iter()
                    .filter(|(n, _)| n == HOST_LS_VARIANT)
                    .map(|(n, _)| (n.clone(), "9.1".to_string()))
                    .collect(),
                eashow: Vec::new(),
                eacheck: None,
            }),
            cifs_module: module.map(Path::to_path_buf),
            ..GuestRun::statneg(1, vec![], 0, 1)
        };
        let report = linuxref::run_guest(self.paths, &run).map_err(|e| e.to_string())?;
        let snap = |name: &str| -> Result<Totals, String> {
            let d = marks_dir.join(name);
            let conns = load_stats_dir(&d).map_err(|e| format!("marker {name}: {e}"))?;
            Ok(Totals::sum(&conns))
        };
        let mut out = Vec::new();
        for (name, opts) in variants {
            let find = |phase: &str| {
                report
                    .listings
                    .iter()
                    .find(|l| &l.variant == name && l.phase == phase)
                    .cloned()
                    .ok_or_else(|| format!("no {phase} listing of {name}"))
            };
            let (cold, warm) = (find("cold")?, find("warm")?);
            if cold.rc != 0 || warm.rc != 0 {
                return Err(format!(
                    "ls -la failed in the guest ({name}): rc {} / {}",
                    cold.rc, warm.rc
                ));
            }
            let c = snap(&format!("{name}-cold-end"))?.since(&snap(&format!("{name}-cold"))?);
            let w = snap(&format!("{name}-warm-end"))?.since(&snap(&format!("{name}-warm"))?);
            let total = Totals::sum(&load_stats_dir(&dir.join("stats")).unwrap_or_default());
            let row = LslaRow {
                design: if name == "base" {
                    design.to_string()
                } else {
                    format!("{design}+{name}")
                },
                rtt_ms: rtt,
                entries: cold.entries(),
                cold_s: cold.wall_s,
                warm_s: warm.wall_s,
                cold: c,
                warm: w,
                relay_round_trips: total.round_trips,
                // The real client has no frame counter of ours; its own
                // count is /proc/fs/cifs/Stats (see LinuxLsla::stats_agree).
                client_frames: total.round_trips,
                client_stats: cold.stats.clone(),
                sample: Vec::new(),
            };
            out.push(LinuxLsla {
                row,
                opts: opts.clone(),
                dropped: report
                    .dropped
                    .iter()
                    .filter(|(v, _)| v == name)
                    .map(|(_, o)| o.clone())
                    .collect(),
                ls: cold.ls.clone(),
                cold,
                warm,
                kernel: match module {
                    Some(ko) => format!("{} with {}", self.paths.describe(), ko.display()),
                    None => self.paths.describe(),
                },
                is_variant: name != "base",
                module_log: report.module_log.clone(),
            });
        }
        Ok(out)
    }
}

impl LinuxLsla {
    /// The relay's QUERY_INFO counts equal the client's own
    /// (`QueryInfos:` of /proc/fs/cifs/Stats), cold and warm.
    pub fn stats_agree(&self) -> bool {
        self.cold.stat("QueryInfos") == Some(qi(&self.row.cold))
            && self.warm.stat("QueryInfos") == Some(qi(&self.row.warm))
    }
}

/// The Linux rows' part of the report: the table's first rows, the
/// variants beside the seed's figures, the relay's and the tracepoints'
/// distributions, the Stats.
pub fn report_linux(rows: &[LinuxLsla]) -> String {
    use qemu::linuxref::trace_counts;
    let mut s = String::new();
    if let Some(r) = rows.first() {
        s.push_str(&format!("## The real Linux client: {}\n\n", r.kernel));
        s.push_str("The reference guest's cifs.ko, mounted with the seed's options (plus credentials and `ip=`), GNU `ls -la` (Debian 13's coreutils 9.7, with its own loader and libraries, unless a row's `ls` says otherwise) of the same share through the same relay; counted by the relay between two marker requests on a separate connection.\n\n");
    }
    let mut t = figures_table("relay = client Stats");
    for r in rows {
        figures_row(&mut t, &r.row, if r.stats_agree() { "yes" } else { "NO" });
    }
    s.push_str(&t.into_string());
    for r in rows {
        let x = &r.row;
        s.push_str(&format!(
            "\n### {} at {} ms: cold listing\n\n",
            x.design, x.rtt_ms
        ));
        if !r.module_log.is_empty() {
            s.push_str(&format!(
                "Loading the module, the kernel logged: `{}`\n\n",
                r.module_log.join("`; `")
            ));
        }
        s.push_str(&format!("Options: `{}`", r.opts));
        if !r.dropped.is_empty() {
            s.push_str(&format!(
                " — this kernel refused (`Unknown parameter`) and the guest dropped: `{}`",
                r.dropped.join("`, `")
            ));
        }
        s.push_str("\n\n```\n");
        s.push_str("relay, client to server:\n");
        for (c, n) in &x.cold.client_to_server.commands {
            s.push_str(&format!("{n:>7} {c}\n"));
        }
        s.push_str("relay, server statuses:\n");
        for (st, n) in &x.cold.server_to_client.statuses {
            s.push_str(&format!("{n:>7} status={st}\n"));
        }
        s.push_str("smb3 tracepoints (the seed's greps): statuses, commands, events\n");
        for (k, n) in trace_counts(&r.cold.trace, "status") {
            s.push_str(&format!("{n:>7} {k}\n"));
        }
        for (k, n) in trace_counts(&r.cold.trace, "cmd") {
            s.push_str(&format!("{n:>7} cmd={k}\n"));
        }
        for l in r.cold.trace.lines().filter(|l| l.ends_with(':')) {
            s.push_str(&format!("{l}\n"));
        }
        s.push_str("/proc/fs/cifs/Stats after the cold listing:\n");
        for l in r.cold.stats.lines().filter(|l| l.contains("total")) {
            s.push_str(&format!("  {}\n", l.trim()));
        }
        s.push_str("```\n");
    }
    s
}

/// The seed's "What doesn't help" table, measured with the real client at
/// the variants' RTT, beside the seed's own figures (6.12.0 against Windows
/// at ~76 ms: 511 queries in 39 s; noserverino 271 in 21 s; no change for
/// the others).
pub fn variants_table(linux: &[LinuxLsla]) -> String {
    let Some(rtt) = linux.iter().find(|l| l.is_variant).map(|l| l.row.rtt_ms) else {
        return String::new();
    };
    let seed = |v: &str| match v {
        "" => "511 queries, 39 s",
        "noserverino" => "511 → 271 queries, 39 s → 21 s (not reproduced against Samba)",
        "nouser_xattr" => "not tried (the workaround without a patch)",
        HOST_LS_VARIANT => "the seed's ls: RHEL 10's coreutils 9.5",
        _ => "no change",
    };
    let mut s = format!("\n## What doesn't help, with the real client at {rtt} ms\n\n");
    let mut t = Table::new(
        [
            "variant",
            "ls",
            "cold QUERY_INFO",
            "cold s",
            "warm QUERY_INFO",
            "warm s",
            "the seed (6.12.0, Windows)",
        ]
        .map(|h| (h, Align::Left)),
    );
    let packaged = linux
        .iter()
        .find(|l| !l.is_variant)
        .map(|l| l.row.design.clone());
    for l in linux.iter().filter(|l| {
        l.row.rtt_ms == rtt && (l.is_variant || Some(&l.row.design) == packaged.as_ref())
    }) {
        let v = l.row.design.split_once('+').map_or("", |(_, v)| v);
        let r = &l.row;
        t.row([
            if v.is_empty() { "seed options" } else { v }.to_string(),
            l.ls.clone(),
            qi(&r.cold).to_string(),
            format!("{:.3}", r.cold_s),
            qi(&r.warm).to_string(),
            format!("{:.3}", r.warm_s),
            seed(v).to_string(),
        ]);
    }
    s.push_str(&t.into_string());
    s
}

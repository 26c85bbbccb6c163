//! `smb-rw`: throughput of whole-file reads and writes through the cifs
//! mount in host mode (the fs crate's SMB client on host threads, a
//! loopback Samba started for the run, no delay): write a file of SIZE
//! bytes through the VFS (O_TRUNC, one write call), read it back (one
//! `read_file`), REPS times each, and print one line per direction:
//!
//! ```text
//! smb-rw op=write size=3000000 reps=5 mb_s=MEDIAN min=… max=… frames=N
//! ```
//!
//! (MB = 10^6 bytes; `frames`: request frames of one repetition). Every
//! read is checked against what was written.
//!
//! Touches: a Samba fixture (child process, temp dir), loopback sockets.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Instant;

use fs::fstype::cifs::{self, CifsFs};
use fs::vfs::Vfs;
use qemu::samba::{Fixture, FixtureOpts};
use smb::{StdClock, TcpConnector};

/// One direction's figures.
#[derive(Clone, Debug)]
pub struct RwRow {
    pub op: &'static str,
    pub size: usize,
    pub mb_s: Vec<f64>,
    pub frames: u64,
}

impl RwRow {
    /// The output line.
    pub fn line(&self) -> String {
        let mut v = self.mb_s.clone();
        v.sort_by(f64::total_cmp);
        let med = v.get(v.len() / 2).copied().unwrap_or(0.0);
        format!(
            "smb-rw op={} size={} reps={} mb_s={med:.1} min={:.1} max={:.1} frames={}",
            self.op,
            self.size,
            v.len(),
            v.first().copied().unwrap_or(0.0),
            v.last().copied().unwrap_or(0.0),
            self.frames
        )
    }
}

/// Run it: `opts` are extra cifs mount options.
pub fn run(size: usize, reps: usize, opts: &str) -> Result<Vec<RwRow>, String> {
    Fixture::available()?;
    let fx = Fixture::start(&FixtureOpts {
        entries: 0,
        ..FixtureOpts::default()
    })
    .map_err(|e| format!("samba fixture: {e}"))?;
    let v = Vfs::new_tmpfs("").map_err(|e| e.to_string())?;
    v.mkdir(b"/mnt", 0o755).map_err(|e| e.to_string())?;
    let o = format!(
        "username={},password={}{}{opts}",
        fx.user,
        fx.password,
        if opts.is_empty() { "" } else { "," }
    );
    let sb = cifs::mount(
        &v,
        &format!("//127.0.0.1/{}", fx.share),
        b"/mnt",
        &o,
        Box::new(TcpConnector {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, fx.port)),
            timeout_ms: 30_000,
        }),
        Box::new(StdClock::default()),
    )
    .map_err(|e| format!("mount: {e}"))?;
    let fs = sb.ops_as::<CifsFs>().ok_or("not a cifs mount")?;
    let data: Vec<u8> = (0..size).map(|i| (i * 131 % 251) as u8).collect();
    let frames = || fs.with_stats(|s| s.frames);
    let mut w = RwRow {
        op: "write",
        size,
        mb_s: Vec::new(),
        frames: 0,
    };
    let mut r = RwRow {
        op: "read",
        size,
        mb_s: Vec::new(),
        frames: 0,
    };
    for _ in 0..reps.max(1) {
        let f0 = frames();
        let t = Instant::now();
        v.write_file(b"/mnt/rw.bin", &data)
            .map_err(|e| format!("write: {e}"))?;
        w.mb_s.push(size as f64 / 1e6 / t.elapsed().as_secs_f64());
        w.frames = frames() - f0;
        let f0 = frames();
        let t = Instant::now();
        let got = v
            .read_file(b"/mnt/rw.bin")
            .map_err(|e| format!("read: {e}"))?;
        r.mb_s.push(size as f64 / 1e6 / t.elapsed().as_secs_f64());
        r.frames = frames() - f0;
        if got != data {
            return Err("read back differs from what was written".into());
        }
    }
    Ok(vec![w, r])
}

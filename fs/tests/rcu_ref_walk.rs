//! A measurement for the issue's "unconfirmed" point (#47): the path walk
//! holds its RCU read-side guard for the whole walk, ref-walk included
//! (`fs::namei`'s first documented difference from Linux), so a lookup
//! that asks a slow filesystem (cifs: a network round trip) holds up every
//! grace period for as long as it waits.
//!
//! A remote-like filesystem whose `lookup` takes `LOOKUP_MS` stands in for
//! a cifs server at that round-trip time (the walk reaches `FsOps::lookup`
//! by the same path for both: `lookup_slow` under the directory's shared
//! `i_rwsem`). One thread stats a missing name there; another, once the
//! lookup has begun, asks for a grace period (`synchronize_rcu`) and
//! notes when it ended, counted from the lookup's start. Run it with
//! `cargo test --release -p fs --test rcu_ref_walk -- --ignored --nocapture`;
//! it prints one `rcu_ref_walk` line per round trip (docs/vfs-locking.md
//! gives the figures). Ignored by default: it measures, it asserts nothing
//! about what should be.

use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fs::dcache::{self, design};
use fs::inode::{FsOps, Inode, SuperBlock};
use fs::sync::rcu::synchronize_rcu;
use fs::types::FileType;
use fs::vfs::Vfs;
use fs::KResult;

struct Slow {
    ms: u64,
    /// When the lookup began.
    began: Arc<Mutex<Option<Instant>>>,
}

impl FsOps for Slow {
    fn fs_type(&self) -> &'static str {
        "slowremote"
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn lookup(&self, _sb: &SuperBlock, _dir: &Inode, _name: &[u8]) -> KResult<Option<Arc<Inode>>> {
        *self.began.lock().unwrap() = Some(Instant::now());
        std::thread::sleep(Duration::from_millis(self.ms));
        Ok(None)
    }
    fn writable(&self) -> bool {
        false
    }
    fn negative_valid(&self, _d_time_ms: u64) -> bool {
        false
    }
    fn remote(&self) -> bool {
        true
    }
}

/// For one round trip: how long the walk took, and when (after the
/// lookup began) a grace period asked for during it ended.
fn one(ms: u64) -> (Duration, Duration) {
    let began = Arc::new(Mutex::new(None));
    let sb = Arc::new(SuperBlock::new(
        design::by_name("transient").unwrap(),
        false,
        Box::new(Slow {
            ms,
            began: began.clone(),
        }),
    ));
    let root = Inode::new_arc(1, FileType::Dir, 0o755, b"").unwrap();
    let v = Arc::new(Vfs::new_tmpfs("").unwrap());
    v.mkdir(b"/r", 0o755).unwrap();
    v.mount_root(b"/r", dcache::d_alloc_root(sb, root)).unwrap();
    let v2 = v.clone();
    let walker = std::thread::spawn(move || {
        let t = Instant::now();
        let _ = v2.stat(b"/r/missing");
        t.elapsed()
    });
    let t = loop {
        if let Some(t) = *began.lock().unwrap() {
            break t;
        }
        std::thread::yield_now();
    };
    synchronize_rcu();
    let gp = t.elapsed();
    (walker.join().unwrap(), gp)
}

#[test]
#[ignore]
fn a_grace_period_waits_for_a_slow_lookup() {
    // A grace period with no slow walk, for scale.
    let t = Instant::now();
    synchronize_rcu();
    println!(
        "rcu_ref_walk rtt_ms=0 grace_period_ms={:.3}",
        t.elapsed().as_secs_f64() * 1e3
    );
    for ms in [20, 76, 200] {
        let (walk, gp) = one(ms);
        println!(
            "rcu_ref_walk rtt_ms={ms} walk_ms={:.1} grace_period_ended_ms={:.1}",
            walk.as_secs_f64() * 1e3,
            gp.as_secs_f64() * 1e3
        );
    }
}

//! `ksmbd-fixture`: start the ksmbd guest fixture ([`qemu::ksmbd::Fixture`],
//! Debian's 7.3.4 kernel and `ksmbd-tools` under QEMU) by hand or from a
//! script such as `linux/fstests.sh --server ksmbd`, print how to reach it,
//! and stop it when stdin reaches EOF or a line is entered. Its one share
//! holds the empty directories named by `--dir` (fstests' TEST and SCRATCH
//! as subdirectories of it). Touches only what the fixture touches (its
//! temp dir and the QEMU process it starts).
#![deny(unsafe_code)]

use clap::Parser;
use qemu::ksmbd::{Entry, Fixture, KsmbdOpts};
use std::io::BufRead;
use std::time::Duration;

/// Start the ksmbd guest on a loopback port.
#[derive(Parser, Debug)]
#[command(name = "ksmbd-fixture")]
struct Args {
    /// An empty directory in the share (repeatable).
    #[arg(long = "dir", value_name = "NAME")]
    dirs: Vec<String>,
    /// The guest powers itself off after this many seconds.
    #[arg(long, default_value_t = 3600)]
    life: u64,
}

fn main() {
    let args = Args::parse();
    let image = match Fixture::prepare() {
        Ok(i) => i,
        Err(why) => {
            eprintln!("ksmbd-fixture: {why}");
            std::process::exit(2);
        }
    };
    let opts = KsmbdOpts {
        entries: args.dirs.iter().cloned().map(Entry::Dir).collect(),
        life: Duration::from_secs(args.life),
        ..KsmbdOpts::default()
    };
    let fx = match Fixture::start(&image, &opts) {
        Ok(fx) => fx,
        Err(e) => {
            eprintln!("ksmbd-fixture ({}): {e}", image.kernel_release);
            std::process::exit(1);
        }
    };
    println!("started in {:.3} s", fx.boot_time.as_secs_f64());
    println!(
        "port={} share={} user={} password={}",
        fx.port, fx.share, fx.user, fx.password
    );
    println!("dir={} log={}", fx.dir.display(), fx.log.display());
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    drop(fx);
    println!("stopped");
}

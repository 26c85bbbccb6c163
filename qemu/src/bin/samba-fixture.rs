//! `samba-fixture`: start the loopback Samba fixture by hand, print how to
//! reach it, and stop it when stdin reaches EOF or a line is entered (or
//! after `--seconds N`). Touches only what [`qemu::samba::Fixture`] touches.
#![deny(unsafe_code)]

use clap::Parser;
use qemu::samba::{Fixture, FixtureOpts};
use std::io::BufRead;
use std::time::Duration;

/// Start a loopback-only Samba share for manual use with smbclient.
#[derive(Parser, Debug)]
#[command(name = "samba-fixture")]
struct Args {
    /// Number of subdirectories in the share.
    #[arg(long, default_value_t = 511)]
    entries: usize,
    /// Give the first N entries WSL EAs ($LXUID/$LXGID/$LXMOD/$LXDEV).
    #[arg(long, default_value_t = 0)]
    wsl_eas: usize,
    /// `server signing =` (auto, mandatory, disabled).
    #[arg(long)]
    server_signing: Option<String>,
    /// `server max protocol =` (SMB3_11, SMB3_02, SMB2_10, …).
    #[arg(long)]
    max_protocol: Option<String>,
    /// Share name (`//127.0.0.1/NAME`).
    #[arg(long, default_value = "share")]
    share: String,
    /// A further empty share with the same settings (repeatable), e.g.
    /// fstests' SCRATCH share beside its TEST share.
    #[arg(long = "extra-share", value_name = "NAME")]
    extra_shares: Vec<String>,
    /// Password for root.
    #[arg(long, default_value = "fixture-pw")]
    password: String,
    /// Stop after this many seconds instead of waiting for stdin.
    #[arg(long)]
    seconds: Option<u64>,
}

fn main() {
    let args = Args::parse();
    if let Err(why) = Fixture::available() {
        eprintln!("samba-fixture: {why}");
        std::process::exit(2);
    }
    let opts = FixtureOpts {
        entries: args.entries,
        server_signing: args.server_signing,
        max_protocol: args.max_protocol,
        password: args.password,
        share: args.share,
        extra_shares: args.extra_shares,
        ..FixtureOpts::default()
    }
    .with_wsl_eas(args.wsl_eas);
    let t0 = std::time::Instant::now();
    let fx = match Fixture::start(&opts) {
        Ok(fx) => fx,
        Err(e) => {
            eprintln!("samba-fixture: {e}");
            std::process::exit(1);
        }
    };
    println!("started in {:.3} s", t0.elapsed().as_secs_f64());
    println!(
        "port={} share={} user={} password={}",
        fx.port, fx.share, fx.user, fx.password
    );
    println!("dir={} log={}", fx.dir.display(), fx.log.display());
    println!(
        "try: smbclient -p {} {} -U '{}' -c ls",
        fx.port,
        fx.unc(),
        fx.credentials()
    );
    match args.seconds {
        Some(s) => std::thread::sleep(Duration::from_secs(s)),
        None => {
            println!("(press Enter or close stdin to stop)");
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
        }
    }
    let t1 = std::time::Instant::now();
    drop(fx);
    println!("stopped in {:.3} s", t1.elapsed().as_secs_f64());
}

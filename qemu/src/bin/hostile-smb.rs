//! `hostile-smb --case NAME [--dialect 2.1|3.0|3.1.1] [--sign]`: the
//! hostile SMB2 server of [`qemu::hostile`]
//! on one connection over stdin/stdout (as QEMU's `guestfwd=…-cmd:`
//! starts it) or, with `--listen`, on a loopback port. The share holds
//! `hello.txt` (13 bytes) and the directories `d0`, `d1` (and
//! `endless.bin` for the endless-file cases). Nothing is
//! written to stderr in stdio mode (libslirp puts it on the guest's
//! connection). Touches stdin/stdout or one loopback port.
#![deny(unsafe_code)]

use clap::Parser;
use qemu::hostile::{serve_tcp, Case, Proto, Server};

/// A hostile SMB2 server (loopback or stdio only).
#[derive(Parser, Debug)]
#[command(name = "hostile-smb")]
struct Args {
    /// How it misbehaves: honest, endless-listing, read-longer,
    /// read-past-eof, write-count-more, bad-names, drain-credits,
    /// drain-credits-always, pending-forever, listing-oversized,
    /// read-offset-header, query-info-offset-zero, pending-slow,
    /// endless-file, endless-file-small, ea-empty-name, ea-bad-names.
    #[arg(long, default_value = "honest")]
    case: String,
    /// The dialect it chooses: 2.1, 3.0 or 3.1.1.
    #[arg(long, default_value = "2.1")]
    dialect: String,
    /// Require signing and sign every reply after the session setup.
    #[arg(long)]
    sign: bool,
    /// Listen on a free loopback port (prints `listening on ADDR`) instead
    /// of serving stdin/stdout.
    #[arg(long)]
    listen: bool,
}

fn main() {
    let a = Args::parse();
    let Some(case) = Case::by_name(&a.case) else {
        eprintln!(
            "hostile-smb: unknown case {:?}; known: {:?}",
            a.case,
            Case::NAMES
        );
        std::process::exit(2);
    };
    let dialect = match a.dialect.as_str() {
        "2.1" => 0x0210,
        "3.0" => 0x0300,
        "3.1.1" => 0x0311,
        d => {
            eprintln!("hostile-smb: unknown dialect {d:?}; known: 2.1, 3.0, 3.1.1");
            std::process::exit(2);
        }
    };
    let proto = Proto {
        dialect,
        sign: a.sign,
    };
    let files: &[(&str, &[u8])] = &[("hello.txt", b"hello, world\n")];
    let server = Server::with_proto(case, files, &["d0", "d1"], proto);
    if a.listen {
        let l = serve_tcp(server).unwrap_or_else(|e| {
            eprintln!("hostile-smb: listen: {e}");
            std::process::exit(1)
        });
        println!("listening on {}", l.addr);
        loop {
            std::thread::park();
        }
    }
    let mut r = std::io::stdin().lock();
    let mut w = std::io::stdout().lock();
    let _ = server.serve(&mut r, &mut w);
}

//! A man in the middle for downgrade tests: a loopback TCP proxy in front
//! of a real server that rewrites the client's NEGOTIATE request, striking
//! dialects from its list (each struck entry becomes a copy of the lowest
//! dialect offered, so no length or offset changes), and passes every
//! other byte through untouched. It cannot forge signatures, so a client
//! that validates the negotiation afterwards notices; one that does not
//! runs on the weaker dialect. Touches loopback sockets only.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A running MITM; it serves connections in background threads for as
/// long as the process lives.
pub struct Mitm {
    pub addr: SocketAddr,
    /// NEGOTIATE requests rewritten so far.
    pub rewritten: Arc<AtomicU64>,
}

/// Strikes `strike` from the dialect list of the SMB2 NEGOTIATE request
/// `msg` (one message, no framing); true if anything changed.
pub fn strike_dialect(msg: &mut [u8], strike: u16) -> bool {
    if msg.len() < 64 + 36 || msg[..4] != *b"\xfeSMB" || msg[12] != 0 || msg[13] != 0 {
        return false;
    }
    let count = u16::from_le_bytes([msg[66], msg[67]]) as usize;
    let list = 64 + 36;
    let Some(ds) = msg.get(list..list + 2 * count) else {
        return false;
    };
    let ds: Vec<u16> = ds
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let Some(&lowest) = ds.iter().filter(|&&d| d != strike).min() else {
        return false;
    };
    let mut changed = false;
    for (i, d) in ds.iter().enumerate() {
        if *d == strike {
            msg[list + 2 * i..list + 2 * i + 2].copy_from_slice(&lowest.to_le_bytes());
            changed = true;
        }
    }
    changed
}

/// Starts a MITM on 127.0.0.1 (a free port) forwarding to `target`,
/// striking `strike` (e.g. 0x0311) from every NEGOTIATE.
pub fn start(target: SocketAddr, strike: u16) -> std::io::Result<Mitm> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let rewritten = Arc::new(AtomicU64::new(0));
    let count = rewritten.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(client) = c else { continue };
            let Ok(server) = TcpStream::connect(target) else {
                continue;
            };
            let count = count.clone();
            std::thread::spawn(move || relay(client, server, strike, &count));
        }
    });
    Ok(Mitm { addr, rewritten })
}

fn relay(client: TcpStream, server: TcpStream, strike: u16, count: &AtomicU64) {
    let (Ok(mut c_in), Ok(mut s_out), Ok(mut s_in), Ok(mut c_out)) = (
        client.try_clone(),
        server.try_clone(),
        server.try_clone(),
        client.try_clone(),
    ) else {
        return;
    };
    let back = std::thread::spawn(move || {
        let _ = std::io::copy(&mut s_in, &mut c_out);
        let _ = c_out.shutdown(Shutdown::Both);
    });
    // Client to server, frame by frame, rewriting NEGOTIATE.
    loop {
        let mut h = [0u8; 4];
        if c_in.read_exact(&mut h).is_err() {
            break;
        }
        let n = u32::from_be_bytes(h) as usize & 0x00ff_ffff;
        let mut f = vec![0u8; n];
        if c_in.read_exact(&mut f).is_err() {
            break;
        }
        if strike_dialect(&mut f, strike) {
            count.fetch_add(1, Ordering::SeqCst);
        }
        if s_out.write_all(&h).is_err() || s_out.write_all(&f).is_err() {
            break;
        }
    }
    let _ = server.shutdown(Shutdown::Both);
    let _ = back.join();
}

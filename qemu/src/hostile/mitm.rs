//! A man in the middle for downgrade tests: a loopback TCP proxy in front
//! of a real server that bends what a [`Rewrite`] names and passes every
//! other byte through untouched.
//!
//! Client to server it can strike dialects from the NEGOTIATE request's
//! list (each struck entry becomes a copy of the lowest dialect offered,
//! so no length or offset changes), and bend the NTLMSSP AUTHENTICATE of
//! the final SESSION_SETUP request ([`AuthBend`]: a MIC byte, or the
//! workstation name, which the NTLMv2 response does not cover and only
//! the MIC does), as a relay would. Server to client it can clear the
//! encryption a server asks for: SESSION_FLAG_ENCRYPT_DATA in the final
//! SESSION_SETUP response, SHAREFLAG_ENCRYPT_DATA in a TREE_CONNECT
//! response, leaving the signature (which then no longer verifies) or
//! stripping it too (SIGNED flag and signature cleared), and change the
//! final SESSION_SETUP response's SessionId. It cannot forge
//! signatures nor open sealed frames, so a client that believes those
//! flags only from signed responses notices; one that does not sends in
//! clear what the server wanted sealed. The proxy watches for exactly
//! that: every client frame in clear after the server asked for
//! encryption (whether or not the flag was struck) is counted in
//! [`Mitm::clear_after_ask`].
//!
//! Touches loopback sockets only.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// SMB2 header offsets and values the proxy reads or bends (MS-SMB2 2.2.1).
const HDR: usize = 64;
const FLAGS: usize = 16;
const FLAG_RESPONSE: u32 = 0x1;
const FLAG_SIGNED: u32 = 0x8;
const SESSION_ID: usize = 40;
const SIGNATURE: usize = 48;
const SESSION_SETUP: u16 = 1;
const TREE_CONNECT: u16 = 3;
/// SESSION_SETUP response SessionFlags (body offset 2): encrypt the session.
const SESSION_FLAG_ENCRYPT_DATA: u16 = 0x4;
/// TREE_CONNECT response ShareFlags (body offset 4): encrypt the share.
const SHAREFLAG_ENCRYPT_DATA: u32 = 0x8000;

/// How a flag the server sent is bent on its way to the client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strip {
    /// Left alone.
    #[default]
    No,
    /// The flag cleared, the signature left as it was (it no longer
    /// verifies).
    Flag,
    /// The flag cleared and the message made unsigned: SIGNED flag off,
    /// signature zeroed.
    FlagAndSignature,
}

/// How the client's NTLMSSP AUTHENTICATE is bent on its way to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthBend {
    /// The first byte of the MIC (MS-NLMP 2.2.1.3, offset 72) flipped.
    MicByte,
    /// The first byte of the workstation name flipped: covered by the MIC
    /// alone (not by the NTLMv2 response nor, on 3.0.x, by any key).
    Workstation,
}

/// What the proxy bends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rewrite {
    /// A dialect struck from every NEGOTIATE request (e.g. 0x0311).
    pub strike: Option<u16>,
    /// SESSION_FLAG_ENCRYPT_DATA of the final SESSION_SETUP response.
    pub session_encrypt: Strip,
    /// SHAREFLAG_ENCRYPT_DATA of TREE_CONNECT responses.
    pub share_encrypt: Strip,
    /// The NTLMSSP AUTHENTICATE of SESSION_SETUP requests.
    pub authenticate: Option<AuthBend>,
    /// The SessionId of the final SESSION_SETUP response (status
    /// SUCCESS): its low byte flipped, the signature left (it no longer
    /// verifies).
    pub final_session_id: bool,
}

/// A running MITM; it serves connections in background threads for as
/// long as the process lives.
pub struct Mitm {
    pub addr: SocketAddr,
    /// NEGOTIATE requests rewritten so far.
    pub rewritten: Arc<AtomicU64>,
    /// AUTHENTICATE messages bent so far.
    pub auth_rewritten: Arc<AtomicU64>,
    /// Server responses rewritten so far (flags struck).
    pub replies_rewritten: Arc<AtomicU64>,
    /// The server asked for encryption (a session or share flag) on some
    /// connection.
    pub asked: Arc<AtomicBool>,
    /// Client frames sent in clear (not a TRANSFORM) after the server
    /// asked for encryption on that connection.
    pub clear_after_ask: Arc<AtomicU64>,
    /// The commands of those frames' first messages, in order.
    pub clear_commands: Arc<Mutex<Vec<u16>>>,
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

/// Applies `how` to the NTLMSSP AUTHENTICATE carried by the SMB2
/// SESSION_SETUP request `msg` (one message, raw NTLMSSP token); true if
/// anything changed.
pub fn bend_authenticate(msg: &mut [u8], how: AuthBend) -> bool {
    const SESSION_SETUP_REQ: [u8; 2] = [1, 0];
    if msg.len() < HDR + 24 || msg[..4] != *b"\xfeSMB" || msg[12..14] != SESSION_SETUP_REQ {
        return false;
    }
    if msg[FLAGS] & FLAG_RESPONSE as u8 != 0 {
        return false;
    }
    // SecurityBufferOffset (from the header) and Length: body 12 and 14.
    let off = u16::from_le_bytes([msg[HDR + 12], msg[HDR + 13]]) as usize;
    let len = u16::from_le_bytes([msg[HDR + 14], msg[HDR + 15]]) as usize;
    let Some(t) = msg.get_mut(off..off + len) else {
        return false;
    };
    if t.len() < 88 || t[..8] != *b"NTLMSSP\0" || t[8..12] != [3, 0, 0, 0] {
        return false;
    }
    let at = match how {
        AuthBend::MicByte => 72,
        AuthBend::Workstation => {
            let wlen = u16::from_le_bytes([t[44], t[45]]) as usize;
            let woff = u32::from_le_bytes([t[48], t[49], t[50], t[51]]) as usize;
            if wlen == 0 || woff >= t.len() {
                return false;
            }
            woff
        }
    };
    t[at] ^= 1;
    true
}

/// What [`bend_reply`] saw and did to one server frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bent {
    /// The frame asked for encryption (before any strike).
    pub asked: bool,
    /// The frame was changed.
    pub changed: bool,
}

/// Applies `rw`'s strikes to the server frame `f` (one message in clear;
/// sealed frames and compounds pass untouched).
pub fn bend_reply(f: &mut [u8], rw: &Rewrite) -> Bent {
    let mut out = Bent::default();
    if f.len() < HDR + 8 || f[..4] != *b"\xfeSMB" || f[20..24] != [0; 4] {
        return out;
    }
    let flags = u32::from_le_bytes([f[FLAGS], f[FLAGS + 1], f[FLAGS + 2], f[FLAGS + 3]]);
    if flags & FLAG_RESPONSE == 0 {
        return out;
    }
    let command = u16::from_le_bytes([f[12], f[13]]);
    let status = u32::from_le_bytes([f[8], f[9], f[10], f[11]]);
    if status != 0 {
        return out;
    }
    if command == SESSION_SETUP && rw.final_session_id {
        f[SESSION_ID] ^= 1;
        out.changed = true;
    }
    let (at, mask, how) = match command {
        SESSION_SETUP => (
            HDR + 2,
            SESSION_FLAG_ENCRYPT_DATA as u32,
            rw.session_encrypt,
        ),
        TREE_CONNECT => (HDR + 4, SHAREFLAG_ENCRYPT_DATA, rw.share_encrypt),
        _ => return out,
    };
    let mut v = if command == SESSION_SETUP {
        u16::from_le_bytes([f[at], f[at + 1]]) as u32
    } else {
        u32::from_le_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]])
    };
    out.asked = v & mask != 0;
    if !out.asked || how == Strip::No {
        return out;
    }
    v &= !mask;
    if command == SESSION_SETUP {
        f[at..at + 2].copy_from_slice(&(v as u16).to_le_bytes());
    } else {
        f[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    if how == Strip::FlagAndSignature {
        f[FLAGS..FLAGS + 4].copy_from_slice(&(flags & !FLAG_SIGNED).to_le_bytes());
        f[SIGNATURE..SIGNATURE + 16].fill(0);
    }
    out.changed = true;
    out
}

/// Starts a MITM on 127.0.0.1 (a free port) forwarding to `target`,
/// striking `strike` (e.g. 0x0311) from every NEGOTIATE.
pub fn start(target: SocketAddr, strike: u16) -> std::io::Result<Mitm> {
    start_with(
        target,
        Rewrite {
            strike: Some(strike),
            ..Rewrite::default()
        },
    )
}

/// Starts a MITM on 127.0.0.1 (a free port) forwarding to `target`,
/// bending what `rw` names.
pub fn start_with(target: SocketAddr, rw: Rewrite) -> std::io::Result<Mitm> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let m = Mitm {
        addr: l.local_addr()?,
        rewritten: Arc::default(),
        auth_rewritten: Arc::default(),
        replies_rewritten: Arc::default(),
        asked: Arc::default(),
        clear_after_ask: Arc::default(),
        clear_commands: Arc::default(),
    };
    let counts = Counts {
        rewritten: m.rewritten.clone(),
        auth_rewritten: m.auth_rewritten.clone(),
        replies_rewritten: m.replies_rewritten.clone(),
        asked: m.asked.clone(),
        clear_after_ask: m.clear_after_ask.clone(),
        clear_commands: m.clear_commands.clone(),
    };
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(client) = c else { continue };
            let Ok(server) = TcpStream::connect(target) else {
                continue;
            };
            let counts = counts.clone();
            std::thread::spawn(move || relay(client, server, rw, counts));
        }
    });
    Ok(m)
}

/// The [`Mitm`]'s counters, shared with the relay threads.
#[derive(Clone)]
struct Counts {
    rewritten: Arc<AtomicU64>,
    auth_rewritten: Arc<AtomicU64>,
    replies_rewritten: Arc<AtomicU64>,
    asked: Arc<AtomicBool>,
    clear_after_ask: Arc<AtomicU64>,
    clear_commands: Arc<Mutex<Vec<u16>>>,
}

/// One NetBIOS-framed frame from `r`: the 4-byte length word and the
/// bytes.
fn read_frame(r: &mut impl Read) -> Option<([u8; 4], Vec<u8>)> {
    let mut h = [0u8; 4];
    r.read_exact(&mut h).ok()?;
    let n = u32::from_be_bytes(h) as usize & 0x00ff_ffff;
    let mut f = vec![0u8; n];
    r.read_exact(&mut f).ok()?;
    Some((h, f))
}

fn relay(client: TcpStream, server: TcpStream, rw: Rewrite, counts: Counts) {
    let (Ok(mut c_in), Ok(mut s_out), Ok(mut s_in), Ok(mut c_out)) = (
        client.try_clone(),
        server.try_clone(),
        server.try_clone(),
        client.try_clone(),
    ) else {
        return;
    };
    // This connection's server asked for encryption.
    let asked_here = Arc::new(AtomicBool::new(false));
    let back = {
        let asked_here = asked_here.clone();
        let counts = counts.clone();
        std::thread::spawn(move || {
            while let Some((h, mut f)) = read_frame(&mut s_in) {
                let b = bend_reply(&mut f, &rw);
                if b.asked {
                    // Set before the reply leaves, so the client's next
                    // frame is judged against it.
                    asked_here.store(true, Ordering::SeqCst);
                    counts.asked.store(true, Ordering::SeqCst);
                }
                if b.changed {
                    counts.replies_rewritten.fetch_add(1, Ordering::SeqCst);
                }
                if c_out.write_all(&h).is_err() || c_out.write_all(&f).is_err() {
                    break;
                }
            }
            let _ = c_out.shutdown(Shutdown::Both);
        })
    };
    // Client to server, frame by frame.
    while let Some((h, mut f)) = read_frame(&mut c_in) {
        if let Some(strike) = rw.strike {
            if strike_dialect(&mut f, strike) {
                counts.rewritten.fetch_add(1, Ordering::SeqCst);
            }
        }
        if let Some(how) = rw.authenticate {
            if bend_authenticate(&mut f, how) {
                counts.auth_rewritten.fetch_add(1, Ordering::SeqCst);
            }
        }
        if asked_here.load(Ordering::SeqCst) && f.get(..4) == Some(b"\xfeSMB") {
            counts.clear_after_ask.fetch_add(1, Ordering::SeqCst);
            let command = f
                .get(12..14)
                .map_or(u16::MAX, |c| u16::from_le_bytes([c[0], c[1]]));
            if let Ok(mut v) = counts.clear_commands.lock() {
                v.push(command);
            }
        }
        if s_out.write_all(&h).is_err() || s_out.write_all(&f).is_err() {
            break;
        }
    }
    let _ = server.shutdown(Shutdown::Both);
    let _ = back.join();
}

//! Shared helpers of the relay and Samba integration tests: start the
//! `latency-relay` binary (listen mode, or guestfwd-style with a socket on
//! stdin/stdout), a fake SMB2 server, and SMB2 frame builders. Touches only
//! loopback sockets, temp dirs and the processes it starts.
#![allow(dead_code)]

use qemu::relay::{self, ConnStats, Totals};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const RELAY: &str = env!("CARGO_BIN_EXE_latency-relay");

/// A `latency-relay --listen 127.0.0.1:0` child with its own stats dir.
pub struct Relay {
    pub child: Child,
    pub addr: SocketAddr,
    pub stats_dir: PathBuf,
}

impl Relay {
    pub fn start(target: SocketAddr, args: &[&str]) -> Relay {
        let stats_dir = qemu::samba::make_temp_dir("relay-test-stats").unwrap();
        let mut child = Command::new(RELAY)
            .arg("--target")
            .arg(target.to_string())
            .args(["--listen", "127.0.0.1:0", "--stats-dir"])
            .arg(&stats_dir)
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start latency-relay");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("relay said {line:?}"))
            .parse()
            .unwrap();
        Relay {
            child,
            addr,
            stats_dir,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// All connections' stats; waits (up to 5 s) until `n` are closed.
    pub fn closed_stats(&self, n: usize) -> Vec<ConnStats> {
        wait_closed(&self.stats_dir, n)
    }
}

pub fn wait_closed(dir: &std::path::Path, n: usize) -> Vec<ConnStats> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let s = relay::load_stats_dir(dir).unwrap_or_default();
        if s.iter().filter(|c| c.closed).count() >= n || Instant::now() > deadline {
            return s;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn totals(s: &[ConnStats]) -> Totals {
    Totals::sum(s)
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.stats_dir);
    }
}

/// A QEMU-guestfwd look-alike: accepts on a loopback port and starts one
/// `latency-relay` process per connection with the socket as its stdin and
/// stdout.
pub struct GuestFwd {
    pub addr: SocketAddr,
    pub stats_dir: PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<Child>>>,
}

impl GuestFwd {
    pub fn start(target: SocketAddr, args: &[&str]) -> GuestFwd {
        let stats_dir = qemu::samba::make_temp_dir("relay-test-stats").unwrap();
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut argv: Vec<String> = vec![
            "--target".into(),
            target.to_string(),
            "--stats-dir".into(),
            stats_dir.display().to_string(),
        ];
        argv.extend(args.iter().map(|s| s.to_string()));
        let stop2 = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut kids = Vec::new();
            while !stop2.load(std::sync::atomic::Ordering::SeqCst) {
                match l.accept() {
                    Ok((s, _)) => {
                        s.set_nonblocking(false).unwrap();
                        // As libslirp does: stdin, stdout and stderr are
                        // all the connection.
                        let fd_in = OwnedFd::from(s.try_clone().unwrap());
                        let fd_err = OwnedFd::from(s.try_clone().unwrap());
                        let fd_out = OwnedFd::from(s);
                        kids.push(
                            Command::new(RELAY)
                                .args(&argv)
                                .stdin(Stdio::from(fd_in))
                                .stdout(Stdio::from(fd_out))
                                .stderr(Stdio::from(fd_err))
                                .spawn()
                                .unwrap(),
                        );
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            kids
        });
        GuestFwd {
            addr,
            stats_dir,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for GuestFwd {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            if let Ok(kids) = t.join() {
                for mut k in kids {
                    let _ = k.kill();
                    let _ = k.wait();
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.stats_dir);
    }
}

/// A TCP echo server on loopback (one thread per connection).
pub fn echo_server() -> SocketAddr {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            s.set_nodelay(true).unwrap();
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                loop {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

pub const RESP: u32 = 1;
pub const SIGNED: u32 = 8;

/// An SMB2 header + body.
pub fn msg(cmd: u16, status: u32, flags: u32, body: usize, mid: u64) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(&[0xfe, b'S', b'M', b'B']);
    h[4..6].copy_from_slice(&64u16.to_le_bytes());
    h[8..12].copy_from_slice(&status.to_le_bytes());
    h[12..14].copy_from_slice(&cmd.to_le_bytes());
    h[16..20].copy_from_slice(&flags.to_le_bytes());
    h[24..32].copy_from_slice(&mid.to_le_bytes());
    for (i, b) in h[48..64].iter_mut().enumerate() {
        *b = 0x10 + i as u8;
    }
    h.extend((0..body).map(|i| (i * 13 + 1) as u8));
    h
}

/// A NetBIOS frame of `msgs` chained as a compound.
pub fn frame(msgs: &[Vec<u8>]) -> Vec<u8> {
    let mut body = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let mut m = m.clone();
        if i + 1 < msgs.len() {
            while m.len() % 8 != 0 {
                m.push(0);
            }
            let next = m.len() as u32;
            m[20..24].copy_from_slice(&next.to_le_bytes());
        }
        body.extend(m);
    }
    let mut f = vec![0u8];
    f.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    f.extend(body);
    f
}

/// Read one NetBIOS frame (header included); None at EOF.
pub fn read_frame(s: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut h = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = s.read(&mut h[got..])?;
        if n == 0 {
            return Ok(None);
        }
        got += n;
    }
    let len = u32::from_be_bytes([0, h[1], h[2], h[3]]) as usize;
    let mut f = h.to_vec();
    f.resize(4 + len, 0);
    s.read_exact(&mut f[4..])?;
    Ok(Some(f))
}

/// The reply the fake server sends to request frame `f`: same commands,
/// status SUCCESS, response + signed flags, 40-byte bodies.
pub fn fake_reply(f: &[u8]) -> Vec<u8> {
    let cmd = u16::from_le_bytes([f[4 + 12], f[4 + 13]]);
    let mid = u64::from_le_bytes(f[4 + 24..4 + 32].try_into().unwrap());
    frame(&[msg(cmd, 0, RESP | SIGNED, 40, mid)])
}

/// A fake SMB2 server: answers every request frame with [`fake_reply`].
/// Returns its address and a receiver of "connection closed" events
/// carrying the number of frames that connection received.
pub fn fake_smb_server() -> (SocketAddr, std::sync::mpsc::Receiver<usize>) {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut n = 0;
                while let Ok(Some(f)) = read_frame(&mut s) {
                    n += 1;
                    if s.write_all(&fake_reply(&f)).is_err() {
                        break;
                    }
                }
                let _ = tx.send(n);
            });
        }
    });
    (addr, rx)
}

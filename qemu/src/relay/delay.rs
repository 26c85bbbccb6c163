//! The delay line: per direction a reader thread that parses, applies
//! faults and stamps each chunk with `read time + delay`, and a writer
//! thread that writes it at that instant. With a hold rule, the server →
//! client reader passes its bytes through the [`Holder`] (whole frames, one
//! kept back) and a timer thread releases the held frame at its timeout.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

enum Item {
    Data(Instant, Vec<u8>),
    Eof(Instant),
}

/// Where a direction's bytes go: a socket half or the client pipe.
pub(super) enum Dest {
    Tcp(TcpStream),
    Pipe(Box<dyn Write + Send>),
}

impl Dest {
    fn write_chunk(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Dest::Tcp(s) => s.write_all(b),
            Dest::Pipe(w) => {
                w.write_all(b)?;
                w.flush()
            }
        }
    }

    fn close_write(&mut self) {
        match self {
            Dest::Tcp(s) => {
                let _ = s.shutdown(Shutdown::Write);
            }
            Dest::Pipe(w) => {
                let _ = w.flush();
            }
        }
    }
}

/// Start one direction: a reader thread (parse, fault, stamp) and, when
/// there is a delay, a writer thread (the delay line).
pub(super) fn spawn_direction(
    mut src: Box<dyn Read + Send>,
    dest: Dest,
    mut parser: StreamParser,
    delay: Duration,
    shared: Arc<Shared>,
    done: mpsc::Sender<Direction>,
) -> io::Result<std::thread::JoinHandle<()>> {
    let dir = parser.direction();
    let dest = Arc::new(Mutex::new(dest));
    let (tx, writer) = if delay.is_zero() {
        (None, None)
    } else {
        // Bounded: a stuck destination eventually stops the reader too.
        let (tx, rx) = mpsc::sync_channel::<Item>(4096);
        let dest = dest.clone();
        let shared = shared.clone();
        let h = std::thread::Builder::new()
            .name(format!("relay-delay-{dir:?}"))
            .spawn(move || delay_writer(rx, dest, shared))?;
        (Some(tx), Some(h))
    };
    let hold_on = dir == Direction::ServerToClient && shared.hold.is_some();
    if hold_on {
        let (shared, dest, tx) = (shared.clone(), dest.clone(), tx.clone());
        std::thread::Builder::new()
            .name("relay-hold-timer".into())
            .spawn(move || hold_timer(&shared, &dest, &tx, delay))?;
    }
    std::thread::Builder::new()
        .name(format!("relay-read-{dir:?}"))
        .spawn(move || {
            let hold = if hold_on { shared.hold.as_ref() } else { None };
            let mut buf = vec![0u8; 64 * 1024];
            let reason = loop {
                let n = match src.read(&mut buf) {
                    Ok(0) => break "eof",
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break "read error",
                };
                if dir == Direction::ClientToServer
                    && shared
                        .drop_armed_by
                        .as_deref()
                        .is_some_and(drop_armed_fires)
                {
                    // Nothing of this chunk goes on: the request meets a
                    // closed connection.
                    shared.dropped.store(true, Ordering::SeqCst);
                    break "dropped when armed";
                }
                let stamp = Instant::now() + delay;
                let chunk = &mut buf[..n];
                let fed = parser.feed(chunk);
                let stalled = shared.stalled.load(Ordering::SeqCst);
                let fwd = match fed.cut {
                    Some((k, _)) => k,
                    None => n,
                };
                let mut out_ok = true;
                if fed.frames_done > 0 || fed.cut.is_some() {
                    // Published before forwarding: with `sync_stats`, a
                    // client holding a reply also finds it in the file.
                    parser_publish(&shared, &parser, fed.cut);
                }
                if !stalled && fwd > 0 {
                    out_ok = match hold {
                        Some(h) => {
                            let mut h = lock(h);
                            let outs = h.push(&chunk[..fwd], Instant::now());
                            shared.set_hold(&h.stats);
                            outs.into_iter().all(|d| emit(&tx, &dest, stamp, d))
                        }
                        None => emit(&tx, &dest, stamp, chunk[..fwd].to_vec()),
                    };
                }
                match fed.cut {
                    Some((_, Cut::Drop)) => {
                        shared.dropped.store(true, Ordering::SeqCst);
                        break "dropped";
                    }
                    Some((_, Cut::Stall)) => shared.stalled.store(true, Ordering::SeqCst),
                    None => {}
                }
                if !out_ok {
                    break "write error";
                }
            };
            parser.finish();
            if let Some(h) = hold {
                let mut h = lock(h);
                for d in h.finish(Instant::now()) {
                    emit(&tx, &dest, Instant::now() + delay, d);
                }
                shared.set_hold(&h.stats);
            }
            let reason = match (dir, reason) {
                (_, "dropped") => "dropped by fault".to_string(),
                (_, "dropped when armed") => "dropped when armed".to_string(),
                (Direction::ClientToServer, "eof") => "client closed".to_string(),
                (Direction::ServerToClient, "eof") => "server closed".to_string(),
                (d, r) => format!("{r} ({d:?})"),
            };
            let closing = shared.closing.load(Ordering::SeqCst);
            shared.publish(&parser, (!closing).then_some(reason.as_str()));
            match tx {
                Some(tx) => {
                    let _ = tx.send(Item::Eof(Instant::now() + delay));
                    drop(tx);
                    if let Some(w) = writer {
                        let _ = w.join();
                    }
                }
                None => lock(&dest).close_write(),
            }
            if dir == Direction::ClientToServer && shared.stalled.load(Ordering::SeqCst) {
                // Stalled and the client gave up: nothing more will flow.
                shared.close_all();
            }
            let _ = done.send(dir);
        })
}

/// Forward one piece: into the delay line, or straight to `dest`.
fn emit(
    tx: &Option<mpsc::SyncSender<Item>>,
    dest: &Mutex<Dest>,
    stamp: Instant,
    data: Vec<u8>,
) -> bool {
    match tx {
        Some(tx) => tx.send(Item::Data(stamp, data)).is_ok(),
        None => lock(dest).write_chunk(&data).is_ok(),
    }
}

/// Release the held frame at its timeout when no server frame comes to do
/// it; ends with the rule or the connection.
fn hold_timer(
    shared: &Shared,
    dest: &Mutex<Dest>,
    tx: &Option<mpsc::SyncSender<Item>>,
    delay: Duration,
) {
    let Some(hold) = shared.hold.as_ref() else {
        return;
    };
    while !shared.closing.load(Ordering::SeqCst) {
        {
            let mut h = lock(hold);
            if h.done() {
                return;
            }
            if let Some(d) = h.expire(Instant::now()) {
                emit(tx, dest, Instant::now() + delay, d);
                shared.set_hold(&h.stats);
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn parser_publish(shared: &Shared, parser: &StreamParser, cut: Option<(usize, Cut)>) {
    if let Some((_, c)) = cut {
        let reason = match c {
            Cut::Drop => "dropped by fault",
            Cut::Stall => "stalled by fault",
        };
        shared.publish(parser, Some(reason));
    } else {
        shared.publish(parser, None);
    }
}

/// The delay line's writer: waits for each chunk's absolute deadline, so the
/// spacing of chunks is kept and the delay never accumulates.
fn delay_writer(rx: mpsc::Receiver<Item>, dest: Arc<Mutex<Dest>>, shared: Arc<Shared>) {
    while let Ok(item) = rx.recv() {
        let (when, data) = match item {
            Item::Data(w, d) => (w, Some(d)),
            Item::Eof(w) => (w, None),
        };
        let now = Instant::now();
        if when > now {
            std::thread::sleep(when - now);
        }
        match data {
            Some(d) => {
                if shared.stalled.load(Ordering::SeqCst) || shared.dropped.load(Ordering::SeqCst) {
                    continue;
                }
                if lock(&dest).write_chunk(&d).is_err() {
                    shared.close_all();
                    // Keep draining so the reader never blocks on us.
                    continue;
                }
            }
            None => {
                lock(&dest).close_write();
                return;
            }
        }
    }
}

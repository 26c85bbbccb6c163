//! The structure-aware reply fuzzer `smb_replies`: an `arbitrary`-derived
//! [`Plan`] — a protocol (2.1, signed 3.0, signed 3.1.1), a few user
//! operations, and the bends of the server's replies — drives the whole
//! client (mount, cifs, the VFS, the connection state machine) against
//! `qemu::hostile`'s in-memory server through its transport
//! ([`qemu::hostile::MemConn`]). Message bends (data offsets, fields,
//! statuses, credits, sizes, message ids, commands, flags, bytes) are made
//! by the server before it signs, as a hostile server would; frame bends
//! (interim replies, a dropped connection, a duplicated frame) after.
//!
//! Facts every plan must keep: no panic; a successful `read` of
//! `hello.txt` never holds the SMB2 header's magic (header bytes returned
//! as data); a whole-file read never returns more than the server sent.
//! Time and memory are bounded by the clock (deterministic) and by the
//! endless file's stop. No I/O.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use arbitrary::{Arbitrary, Unstructured};
use fs::vfs::{OpenFlags, Vfs};
use qemu::hostile::{wire as hw, Case, MemConn, Proto, Server};
use smb::{Clock, Connector, Transport, TransportError};

/// What the endless file serves before END_OF_FILE.
const ENDLESS_SENT: u64 = 256 << 10;
/// At most this many operations and bends of each kind per plan.
const MAX_OPS: usize = 8;
const MAX_BENDS: usize = 16;

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Dialect {
    Smb21,
    Smb30Signed,
    Smb311Signed,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum File {
    Hello,
    Endless,
    Missing,
    Dir,
}

impl File {
    fn path(self) -> &'static [u8] {
        match self {
            File::Hello => b"/mnt/hello.txt",
            File::Endless => b"/mnt/endless.bin",
            File::Missing => b"/mnt/missing",
            File::Dir => b"/mnt/d0",
        }
    }
}

/// A user's operation on the mount.
#[derive(Arbitrary, Debug, Clone)]
pub enum Op {
    Stat(File),
    Read(File),
    Ls(bool),
    ListXattr(File),
    Write(File, u8),
    Mkdir(u8),
    Unlink(File),
}

/// Where a reply's data offset field is bent to, as in the issue's
/// corner cases or anywhere.
#[derive(Arbitrary, Debug, Clone)]
pub enum MsgHow {
    DataOffset(u32),
    /// A u32 of the body at this offset (after the header).
    Field(u8, u32),
    Status(u8),
    Credits(u16),
    StructureSize(u16),
    Truncate(u16),
    Extend(u16),
    MessageId(u64),
    Command(u16),
    FlagsXor(u32),
    NextCommand(u32),
    ByteXor(u16, u8),
}

#[derive(Arbitrary, Debug, Clone)]
pub enum FrameHow {
    /// This many interim replies before the frame.
    Pending(u8),
    /// Interim replies only, for ever.
    PendingForever,
    Drop,
    Duplicate,
}

/// A whole run: what the fuzzer's bytes decode to.
#[derive(Arbitrary, Debug, Clone)]
pub struct Plan {
    pub dialect: Dialect,
    pub eacache_always: bool,
    pub ops: Vec<Op>,
    /// (replies to let pass first, bend).
    pub msg_bends: Vec<(u8, MsgHow)>,
    pub frame_bends: Vec<(u8, FrameHow)>,
}

/// Statuses a bend picks from (the last: any other error).
const STATUSES: [u32; 8] = [
    0,
    0x0000_0103, // PENDING
    0x8000_0005, // BUFFER_OVERFLOW
    0x8000_0006, // NO_MORE_FILES
    0xc000_0011, // END_OF_FILE
    0xc000_0016, // MORE_PROCESSING_REQUIRED
    0xc000_0022, // ACCESS_DENIED
    0xc000_0203, // USER_SESSION_DELETED
];

/// Bends in reply order: `(position, bend)`.
fn schedule<T: Clone>(v: &[(u8, T)]) -> VecDeque<(u64, T)> {
    let mut at = 0u64;
    v.iter()
        .take(MAX_BENDS)
        .map(|(skip, h)| {
            at += u64::from(*skip);
            (at, h.clone())
        })
        .collect()
}

fn bend_msg(r: &mut Vec<u8>, how: &MsgHow) {
    let body = hw::HEADER_LEN;
    match *how {
        MsgHow::DataOffset(off) => hw::set_data_offset(r, off),
        MsgHow::Field(at, mut v) => {
            if v == u32::from_le_bytes(*b"\xfeSMB") {
                v ^= 1;
            }
            let at = body + at as usize;
            if let Some(f) = r.get_mut(at..at + 4) {
                f.copy_from_slice(&v.to_le_bytes());
            }
        }
        MsgHow::Status(i) => {
            let st = STATUSES[i as usize % STATUSES.len()];
            r[8..12].copy_from_slice(&st.to_le_bytes());
        }
        MsgHow::Credits(c) => r[14..16].copy_from_slice(&c.to_le_bytes()),
        MsgHow::StructureSize(s) => {
            if let Some(f) = r.get_mut(body..body + 2) {
                f.copy_from_slice(&s.to_le_bytes());
            }
        }
        MsgHow::Truncate(n) => r.truncate(r.len().saturating_sub(n as usize).max(body)),
        MsgHow::Extend(n) => r.resize(r.len() + n as usize, 0),
        MsgHow::MessageId(m) => r[24..32].copy_from_slice(&m.to_le_bytes()),
        MsgHow::Command(c) => r[12..14].copy_from_slice(&c.to_le_bytes()),
        MsgHow::FlagsXor(x) => {
            let f = u32::from_le_bytes([r[16], r[17], r[18], r[19]]) ^ x;
            r[16..20].copy_from_slice(&f.to_le_bytes());
        }
        MsgHow::NextCommand(n) => r[20..24].copy_from_slice(&n.to_le_bytes()),
        MsgHow::ByteXor(at, x) => {
            let n = r.len();
            r[at as usize % n] ^= x;
        }
    }
}

/// Frames seen so far, and the frame bends still to come.
type FrameBends = Arc<Mutex<(u64, VecDeque<(u64, FrameHow)>)>>;

/// The server's connections: each a [`MemConn`] whose frames pass the
/// frame bends.
struct Mem {
    server: Arc<Server>,
    frames: FrameBends,
}

impl Connector for Mem {
    fn connect(&mut self) -> Result<Box<dyn Transport>, TransportError> {
        Ok(Box::new(MemTransport {
            conn: MemConn::new(self.server.clone()),
            frames: self.frames.clone(),
            queue: VecDeque::new(),
            last_req: None,
            forever: false,
            closed: false,
        }))
    }
}

struct MemTransport {
    conn: MemConn,
    frames: FrameBends,
    queue: VecDeque<Vec<u8>>,
    last_req: Option<hw::ReqHdr>,
    forever: bool,
    closed: bool,
}

fn interim(h: &hw::ReqHdr) -> Vec<u8> {
    let mut r = hw::reply_header(h, hw::status::PENDING, 1, Some(7));
    r.extend_from_slice(&hw::error_body());
    r
}

impl Transport for MemTransport {
    fn send(&mut self, msg: &[u8]) -> Result<(), TransportError> {
        if self.closed {
            return Err(TransportError::Closed);
        }
        self.last_req = hw::split(msg).first().and_then(|m| hw::ReqHdr::parse(m));
        let Some(replies) = self.conn.answer(msg) else {
            self.closed = true;
            return Ok(());
        };
        let mut st = self.frames.lock().unwrap();
        for f in replies {
            let n = st.0;
            st.0 += 1;
            let mut how = None;
            if st.1.front().is_some_and(|(at, _)| *at <= n) {
                how = st.1.pop_front().map(|(_, h)| h);
            }
            match (how, self.last_req) {
                (Some(FrameHow::Pending(k)), Some(h)) => {
                    for _ in 0..k {
                        self.queue.push_back(interim(&h));
                    }
                    self.queue.push_back(f);
                }
                (Some(FrameHow::PendingForever), _) => self.forever = true,
                (Some(FrameHow::Drop), _) => self.closed = true,
                (Some(FrameHow::Duplicate), _) => {
                    self.queue.push_back(f.clone());
                    self.queue.push_back(f);
                }
                _ => self.queue.push_back(f),
            }
        }
        Ok(())
    }

    fn recv(&mut self, _timeout_ms: u64) -> Result<Vec<u8>, TransportError> {
        if let Some(f) = self.queue.pop_front() {
            return Ok(f);
        }
        if self.closed {
            return Err(TransportError::Closed);
        }
        match (self.forever, self.last_req) {
            (true, Some(h)) => Ok(interim(&h)),
            _ => Err(TransportError::Timeout),
        }
    }
}

/// Deterministic clock: +1 ms per reading.
struct StepClock(std::sync::atomic::AtomicU64);

impl Clock for StepClock {
    fn now_ms(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
    fn filetime(&self) -> u64 {
        133_000_000_000_000_000
    }
    fn fill_random(&self, buf: &mut [u8]) {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(29).wrapping_add(3);
        }
    }
}

/// Decodes `data` into a [`Plan`] and runs it.
pub fn smb_replies(data: &[u8]) {
    let Ok(plan) = Plan::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    run_plan(&plan);
}

/// Runs one plan; the facts above are asserted.
pub fn run_plan(plan: &Plan) {
    let (proto, opts) = match plan.dialect {
        Dialect::Smb21 => (Proto::SMB21, "username=u,password=p"),
        Dialect::Smb30Signed => (Proto::SMB30_SIGNED, "username=u,password=p,vers=3.0,sign"),
        Dialect::Smb311Signed => (
            Proto::SMB311_SIGNED,
            "username=u,password=p,vers=3.1.1,sign",
        ),
    };
    let opts = if plan.eacache_always {
        format!("{opts},eacache=always")
    } else {
        opts.to_string()
    };
    let msgs = Arc::new(Mutex::new((0u64, schedule(&plan.msg_bends))));
    let tamper = {
        let msgs = msgs.clone();
        Arc::new(move |_h: &hw::ReqHdr, r: &mut Vec<u8>| {
            let mut st = msgs.lock().unwrap();
            let n = st.0;
            st.0 += 1;
            while st.1.front().is_some_and(|(at, _)| *at <= n) {
                if let Some((_, how)) = st.1.pop_front() {
                    bend_msg(r, &how);
                }
            }
        })
    };
    let case = Case::EndlessFile {
        stop_after: ENDLESS_SENT,
    };
    let server = Server::with_proto(case, &[("hello.txt", b"hello, world\n")], &["d0"], proto);
    let server = {
        let mut s = Arc::try_unwrap(server).ok().expect("fresh server");
        s.tamper = Some(tamper);
        Arc::new(s)
    };
    let frames = Arc::new(Mutex::new((0u64, schedule(&plan.frame_bends))));
    let v = Vfs::new_tmpfs("").expect("tmpfs");
    v.mkdir(b"/mnt", 0o755).expect("mkdir");
    let clock = StepClock(std::sync::atomic::AtomicU64::new(0));
    let connector = Box::new(Mem { server, frames });
    let mounted = fs::fstype::cifs::mount(
        &v,
        "//127.0.0.1/share",
        b"/mnt",
        &opts,
        connector,
        Box::new(clock),
    );
    if mounted.is_err() {
        return;
    }
    for op in plan.ops.iter().take(MAX_OPS) {
        match op {
            Op::Stat(f) => {
                let _ = v.stat(f.path());
            }
            Op::Read(f) => {
                if let Ok(d) = v.read_file(f.path()) {
                    if matches!(f, File::Hello) {
                        assert!(
                            !d.windows(4).any(|w| w == b"\xfeSMB"),
                            "header bytes read as data: {d:?}"
                        );
                    }
                    if matches!(f, File::Endless) {
                        assert!(d.len() as u64 <= ENDLESS_SENT, "{} bytes", d.len());
                    }
                }
            }
            Op::Ls(root) => {
                let _ = v.readdir(if *root { b"/mnt" } else { b"/mnt/d0" });
            }
            Op::ListXattr(f) => {
                let mut buf = [0u8; 512];
                let _ = v.listxattr(f.path(), &mut buf);
            }
            Op::Write(f, n) => {
                if let Ok(h) = v.open(f.path(), OpenFlags::WRONLY | OpenFlags::CREAT, 0o644) {
                    let _ = h.write(&vec![b'w'; *n as usize]);
                }
            }
            Op::Mkdir(n) => {
                let _ = v.mkdir(format!("/mnt/m{n}").as_bytes(), 0o755);
            }
            Op::Unlink(f) => {
                let _ = v.unlink(f.path());
            }
        }
    }
}

//! Captures the reply vectors this crate's unit tests replay
//! (`src/wire/testdata/*.frames`, read by `src/wire/tests.rs`) from a real
//! loopback Samba serving the SMB client tests' share
//! (`qemu::samba::client_share`, the share of `fs/tests/smb_samba.rs`).
//! Ignored: run by hand when the vectors must be made again. Writes only
//! `src/wire/testdata/`.

use qemu::samba::client_share;
use smb::wire::negotiate::dialect;
use smb::{
    Config, Connection, Connector, Signing, StdClock, TcpTransport, Transport, TransportError,
};
use std::net::SocketAddr;
use std::sync::Arc;

/// Records every frame both ways (for the committed test vectors).
struct Recorder {
    inner: TcpTransport,
    log: Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
}

impl Transport for Recorder {
    fn send(&mut self, msg: &[u8]) -> Result<(), TransportError> {
        self.log.lock().unwrap().push(msg.to_vec());
        self.inner.send(msg)
    }
    fn recv(&mut self, timeout_ms: u64) -> Result<Vec<u8>, TransportError> {
        let f = self.inner.recv(timeout_ms)?;
        self.log.lock().unwrap().push(f.clone());
        Ok(f)
    }
}

struct RecordingConnector {
    addr: SocketAddr,
    log: Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
}

impl Connector for RecordingConnector {
    fn connect(&mut self) -> Result<Box<dyn Transport>, TransportError> {
        Ok(Box::new(Recorder {
            inner: TcpTransport::connect(self.addr, 2000)?,
            log: self.log.clone(),
        }))
    }
}

/// One captured operation.
type Op = dyn Fn(&mut Connection);

fn write_frames(path: &std::path::Path, frames: &[Vec<u8>]) {
    let mut out = Vec::new();
    for f in frames {
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap();
}

/// Regenerates `src/wire/testdata/*.frames` (the unit tests' captured
/// replies): `cargo test -p smb --test capture -- --ignored`. Each file is a sequence of (u32 LE length, frame),
/// requests and replies alternating.
#[test]
#[ignore]
fn capture_test_vectors() {
    let Some(fx) = client_share::start("capture") else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/wire/testdata");
    std::fs::create_dir_all(&dir).unwrap();
    let runs: [(&str, u16, Signing); 3] = [
        ("smb311", dialect::SMB3_1_1, Signing::Off),
        ("smb302", dialect::SMB3_0_2, Signing::On),
        ("smb210", dialect::SMB2_1, Signing::On),
    ];
    for (name, d, signing) in runs {
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut cfg = Config::new("127.0.0.1", &fx.share, &fx.user, &fx.password);
        cfg.timeout_ms = 5000;
        cfg.dialects = vec![d];
        cfg.signing = signing;
        let mut c = Connection::new(
            cfg,
            Box::new(RecordingConnector {
                addr: fx.addr(),
                log: log.clone(),
            }),
            Box::new(StdClock::default()),
        );
        c.connect().unwrap();
        write_frames(
            &dir.join(format!("{name}_handshake.frames")),
            &log.lock().unwrap(),
        );
        if d != dialect::SMB3_1_1 {
            continue;
        }
        let ops: [(&str, &Op); 4] = [
            ("list", &|c| {
                c.list_dir("").unwrap();
            }),
            ("ea_present", &|c| {
                c.query_wsl_eas("d000").unwrap().unwrap();
            }),
            ("ea_absent", &|c| {
                assert!(c.query_wsl_eas("d005").unwrap().is_none());
            }),
            ("stat", &|c| {
                c.stat("d010").unwrap();
            }),
        ];
        for (op, f) in ops {
            log.lock().unwrap().clear();
            f(&mut c);
            write_frames(
                &dir.join(format!("{name}_{op}.frames")),
                &log.lock().unwrap(),
            );
        }
    }
    println!("wrote vectors to {}", dir.display());
}

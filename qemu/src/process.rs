//! A server process that a fixture starts and owns: [`ServerProcess::spawn`]
//! runs it with its output going to a log file, [`ServerProcess::wait_for_port`]
//! waits until it accepts TCP connections on a loopback port (or says why
//! it did not, in the words of the fixture's [`Startup`]: it exited, or the
//! time ran out), and [`ServerProcess::stop`]
//! (also done on drop) sends SIGTERM, waits up to 5 s, then SIGKILLs; the
//! process is always reaped; [`start_on_a_free_port`] tries a start on
//! fresh ports. Shared by [`crate::samba`] (smbd), [`crate::impacket`]
//! (smbserver.py) and [`crate::ksmbd`] (QEMU). Beside them,
//! [`output_with_stdin`] runs a short command to its end with its input
//! fed on stdin (the tests' vfsh sessions and guest scripts).
//!
//! The child's stdin is a pipe held here: should the test process die
//! without dropping the guard, a server that reads its stdin (smbd in the
//! foreground, Python's smbserver.py) sees EOF and exits.
//!
//! Touches only: the process it spawns, the log file it is given, TCP
//! connects to the address it is given, `kill` (to send SIGTERM), and a
//! bind of loopback port 0 to find a free port.

use std::fs::File;
use std::io::{self, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// How a server shows that it is up, and how its start failures are
/// worded: one constant per fixture.
#[derive(Clone, Copy, Debug)]
pub struct Startup {
    /// The program's name in errors (`smbd`, `smbserver.py`).
    pub name: &'static str,
    /// Sleep between two connection attempts.
    pub poll: Duration,
    /// After a connection is accepted, wait this long and check that the
    /// child still runs (a server that lost the port to another process
    /// exits at once, while the other one accepts). `None`: the first
    /// accepted connection is enough.
    pub settle: Option<Duration>,
    /// Between an error and the log tail that follows it (`": "`,
    /// `"; log tail:\n"`).
    pub tail_sep: &'static str,
}

/// Why [`ServerProcess::wait`] gave up.
#[derive(Debug)]
enum NotReady {
    /// The process exited before it accepted (it is reaped).
    Exited(ExitStatus),
    /// It still ran but did not accept within the timeout.
    TimedOut,
    /// Asking for the child's status failed.
    Io(io::Error),
}

impl NotReady {
    /// The error a fixture returns: `NAME exited at start (STATUS)SEP TAIL`
    /// or `NAME did not accept on port PORT within TIMEOUTSEP TAIL`, where
    /// `tail` is the end of the server's log (an [`NotReady::Io`] stays
    /// itself).
    fn into_io(
        self,
        s: &Startup,
        addr: SocketAddr,
        timeout: Duration,
        tail: impl FnOnce() -> String,
    ) -> io::Error {
        let (name, sep) = (s.name, s.tail_sep);
        match self {
            NotReady::Io(e) => e,
            NotReady::Exited(status) => {
                io::Error::other(format!("{name} exited at start ({status}){sep}{}", tail()))
            }
            NotReady::TimedOut => io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "{name} did not accept on port {} within {timeout:?}{sep}{}",
                    addr.port(),
                    tail()
                ),
            ),
        }
    }
}

/// The guard of one server process (or of none: `default()`, or after
/// [`ServerProcess::stop`]).
#[derive(Debug, Default)]
pub struct ServerProcess {
    child: Option<Child>,
}

impl ServerProcess {
    /// Spawn `cmd` with stdin a pipe held by the guard and stdout and stderr
    /// into `log`.
    pub fn spawn(cmd: &mut Command, log: File) -> io::Result<ServerProcess> {
        let child = cmd
            .stdin(Stdio::piped())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        Ok(ServerProcess { child: Some(child) })
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Poll until `addr` accepts a TCP connection (see [`Startup`]), the
    /// process exits, or `timeout` passes; the error says which, in the
    /// fixture's words, followed by `tail()` (the end of its log).
    pub fn wait_for_port(
        &mut self,
        addr: SocketAddr,
        timeout: Duration,
        startup: &Startup,
        tail: impl FnOnce() -> String,
    ) -> io::Result<()> {
        self.wait(addr, timeout, startup)
            .map_err(|e| e.into_io(startup, addr, timeout, tail))
    }

    /// [`ServerProcess::wait_for_port`] with the end of the server's `log`
    /// (its last 2000 bytes) as the tail.
    pub fn wait_for_port_logged(
        &mut self,
        addr: SocketAddr,
        timeout: Duration,
        startup: &Startup,
        log: &Path,
    ) -> io::Result<()> {
        self.wait_for_port(addr, timeout, startup, || log_tail(log, 2000))
    }

    fn wait(&mut self, addr: SocketAddr, timeout: Duration, s: &Startup) -> Result<(), NotReady> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait().map_err(NotReady::Io)? {
                    self.child = None;
                    return Err(NotReady::Exited(status));
                }
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                let Some(settle) = s.settle else {
                    return Ok(());
                };
                // Someone accepts on the port; make sure it is our child.
                std::thread::sleep(settle);
                if let Some(child) = self.child.as_mut() {
                    if child.try_wait().map_err(NotReady::Io)?.is_none() {
                        return Ok(());
                    }
                }
                continue;
            }
            if Instant::now() >= deadline {
                return Err(NotReady::TimedOut);
            }
            std::thread::sleep(s.poll);
        }
    }

    /// SIGTERM, wait up to 5 s, then SIGKILL; always reaped. Idempotent.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-s", "TERM", &child.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The last `max` bytes of a log file (a character cut at the start, or
/// bytes that are not UTF-8, shown as U+FFFD).
pub fn log_tail(log: &Path, max: usize) -> String {
    let s = std::fs::read(log).unwrap_or_default();
    String::from_utf8_lossy(&s[s.len().saturating_sub(max)..]).into_owned()
}

/// How many times a fixture tries to start its server, and when it gives up
/// early: one constant per fixture, read by [`start_on_a_free_port`].
#[derive(Clone, Copy, Debug)]
pub struct PortRetry {
    /// The server in the last error, should no try have run (`smbd`).
    pub name: &'static str,
    /// Tries at most, each on a fresh port.
    pub tries: usize,
    /// Whether a try that failed with this error is worth another port
    /// (`None`: every failure is).
    pub only_on: Option<std::io::ErrorKind>,
}

/// Runs `cmd` to its end with `input` on its stdin (then closed): its
/// status, stdout and stderr, all piped. The input is written from a
/// thread, so a command that answers before it has read all of it cannot
/// stall on a full pipe.
pub fn output_with_stdin(cmd: &mut Command, input: &[u8]) -> io::Result<Output> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output()?;
    feeder.join().expect("the stdin feeder does not panic")?;
    Ok(out)
}

/// A free TCP port on 127.0.0.1 (bind to port 0, read it back, release it).
pub fn free_port() -> io::Result<u16> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(l.local_addr()?.port())
}

/// Starts a fixture's server on a fresh loopback port ([`free_port`]),
/// up to `retry.tries` times: another process may take the port between the
/// probe and the server's bind, and the server then fails to start.
/// `start(fixture, port, attempt)` records the port and starts the server
/// (attempt 0 first); after a failed try `stop(fixture)` stops what it
/// started before the next. Returns the last try's error when none worked.
pub fn start_on_a_free_port<T>(
    fixture: &mut T,
    retry: &PortRetry,
    mut start: impl FnMut(&mut T, u16, usize) -> io::Result<()>,
    mut stop: impl FnMut(&mut T),
) -> io::Result<()> {
    let mut last = None;
    for attempt in 0..retry.tries {
        let port = free_port()?;
        match start(fixture, port, attempt) {
            Ok(()) => return Ok(()),
            Err(e) => {
                stop(fixture);
                let again = retry.only_on.is_none_or(|k| e.kind() == k);
                last = Some(e);
                if !again {
                    break;
                }
            }
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other(format!("{} did not start", retry.name))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, TcpListener};

    fn log() -> File {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap()
    }

    /// A loopback address nothing listens on. Not 127.0.0.1: a free port
    /// there is only free until someone binds it, and the tests beside
    /// these (`settle_tells_another_listener_from_our_child`) bind
    /// ephemeral ports there, which once handed out the same port and made
    /// an exited child look ready. Every fixture binds 127.0.0.1 alone.
    fn free_addr() -> SocketAddr {
        let port = free_port().unwrap();
        SocketAddr::from((Ipv4Addr::new(127, 0, 0, 86), port))
    }

    const QUICK: Startup = Startup {
        name: "srv",
        poll: Duration::from_millis(10),
        settle: None,
        tail_sep: ": ",
    };

    #[test]
    fn exit_before_accepting_is_reported_and_reaped() {
        let mut p = ServerProcess::spawn(Command::new("sh").args(["-c", "exit 3"]), log()).unwrap();
        match p.wait(free_addr(), Duration::from_secs(10), &QUICK) {
            Err(NotReady::Exited(st)) => assert_eq!(st.code(), Some(3)),
            other => panic!("want Exited(3), got {other:?}"),
        }
        assert_eq!(p.pid(), None, "an exited child is forgotten");
        let mut p = ServerProcess::spawn(Command::new("sh").args(["-c", "exit 3"]), log()).unwrap();
        let e = p
            .wait_for_port(free_addr(), Duration::from_secs(10), &QUICK, || {
                "tail".into()
            })
            .unwrap_err();
        assert_eq!(e.to_string(), "srv exited at start (exit status: 3): tail");
    }

    #[test]
    fn silent_server_times_out_and_stop_reaps_it() {
        let mut p = ServerProcess::spawn(Command::new("sleep").arg("30"), log()).unwrap();
        let pid = p.pid().unwrap();
        let addr = free_addr();
        let t0 = Instant::now();
        let e = p
            .wait_for_port(addr, Duration::from_millis(300), &QUICK, || "tail".into())
            .unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(
            e.to_string(),
            format!(
                "srv did not accept on port {} within 300ms: tail",
                addr.port()
            )
        );
        drop(p);
        // Reaped: no zombie left under our pid.
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn settle_tells_another_listener_from_our_child() {
        // Someone else accepts on the port while our child exits: with a
        // settle time that is not "ready", it is the child's exit.
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = l.local_addr().unwrap();
        let settle = Startup {
            settle: Some(Duration::from_secs(1)),
            ..QUICK
        };
        let mut p = ServerProcess::spawn(Command::new("sleep").arg("0.3"), log()).unwrap();
        let r = p.wait(addr, Duration::from_secs(10), &settle);
        assert!(matches!(r, Err(NotReady::Exited(_))), "got {r:?}");
        // And a live child with the port answering is ready.
        let quick_settle = Startup {
            settle: Some(Duration::from_millis(50)),
            ..QUICK
        };
        let mut p = ServerProcess::spawn(Command::new("sleep").arg("30"), log()).unwrap();
        p.wait(addr, Duration::from_secs(10), &quick_settle)
            .unwrap();
        p.stop();
        assert_eq!(p.pid(), None);
    }

    /// Runs [`start_on_a_free_port`] with a start that answers `outcome(attempt)`:
    /// the result, the ports tried (none of them 0) and the stops.
    fn tries(
        retry: &PortRetry,
        outcome: impl Fn(usize) -> io::Result<()>,
    ) -> (io::Result<()>, usize, usize) {
        let mut fx = (Vec::new(), 0);
        let r = start_on_a_free_port(
            &mut fx,
            retry,
            |fx, port, attempt| {
                fx.0.push(port);
                outcome(attempt)
            },
            |fx| fx.1 += 1,
        );
        assert!(fx.0.iter().all(|&p| p != 0));
        (r, fx.0.len(), fx.1)
    }

    #[test]
    fn a_start_is_tried_on_fresh_ports_until_one_works_or_a_failure_is_final() {
        let in_use = || Err(io::Error::from(io::ErrorKind::AddrInUse));
        let any = PortRetry {
            name: "srv",
            tries: 3,
            only_on: None,
        };
        // Fails twice, then starts: three ports tried, two failed tries stopped.
        let (r, ports, stops) = tries(&any, |a| if a < 2 { in_use() } else { Ok(()) });
        assert!(r.is_ok());
        assert_eq!((ports, stops), (3, 2));
        // Never starts: the last error comes back after `tries` tries.
        let (r, ports, stops) = tries(&any, |a| Err(io::Error::other(format!("no {a}"))));
        assert_eq!(r.unwrap_err().to_string(), "no 2");
        assert_eq!((ports, stops), (3, 3));
        // Retried only on a taken port: another failure ends the tries.
        let addr_only = PortRetry {
            only_on: Some(io::ErrorKind::AddrInUse),
            ..any
        };
        let (r, ports, stops) = tries(&addr_only, |a| {
            if a == 0 {
                in_use()
            } else {
                Err(io::Error::other("boot failed"))
            }
        });
        assert_eq!(r.unwrap_err().to_string(), "boot failed");
        assert_eq!((ports, stops), (2, 2));
        // No tries at all: the server is named.
        let (r, ports, _) = tries(&PortRetry { tries: 0, ..any }, |_| Ok(()));
        assert_eq!(r.unwrap_err().to_string(), "srv did not start");
        assert_eq!(ports, 0);
    }

    #[test]
    fn a_log_tail_is_the_last_bytes_even_mid_character() {
        let log = std::env::temp_dir().join(format!("process-log-{}", std::process::id()));
        std::fs::write(&log, "start\nend: é\n").unwrap();
        assert_eq!(log_tail(&log, 3), "é\n");
        assert_eq!(log_tail(&log, 2), "\u{fffd}\n");
        assert_eq!(log_tail(&log, 100), "start\nend: é\n");
        std::fs::remove_file(&log).unwrap();
        assert_eq!(log_tail(&log, 10), "");
    }
}

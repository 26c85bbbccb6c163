//! Observability of one tree connect: command counters rendered in the
//! layout of Linux's `/proc/fs/cifs/Stats`, and a bounded ring of trace
//! events named like the smb3 tracepoints (`smb3_cmd_enter`,
//! `smb3_cmd_done`, `smb3_cmd_err`), so the usual
//! `grep -oP '(?<=status=)\S+' | sort | uniq -c` analysis works on a dump.
//!
//! Plain data owned by the connection; no locks, no clock of its own (the
//! caller passes timestamps).

use crate::error::SmbError;
use crate::wire::cmd;
use alloc::collections::VecDeque;
use alloc::string::String;
use core::fmt::Write;

/// Sent / failed counts of one command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CmdCount {
    /// Requests sent.
    pub total: u64,
    /// Replies with an error-severity status (or no reply at all).
    pub failed: u64,
}

/// Counters of one tree connect (kept across reconnects).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TconStats {
    /// `\\server\share`.
    pub unc: String,
    /// Indexed by command code (0..=18).
    pub cmds: [CmdCount; 19],
    /// Request frames sent (a compound counts once): the round trips.
    pub frames: u64,
    /// Requests sent (every compound member).
    pub smbs: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Successful (re)connects.
    pub connects: u64,
    /// Replies with a success status whose body did not parse (also
    /// counted in their command's `failed`).
    pub malformed: u64,
    /// Request frames sent encrypted (in a transform header).
    pub sealed: u64,
    /// Received frames that did not decrypt (bad tag, wrong session,
    /// malformed transform header) or came in clear on an encrypting
    /// session: each one failed its requests with EIO.
    pub decrypt_failed: u64,
    /// EA names a Linux user cannot be given (empty, a NUL inside, past
    /// XATTR_NAME_MAX with `user.`), left out of the answer.
    pub bad_ea_names: u64,
    /// STATUS_PENDING interim replies received (a request the server
    /// parked: on an oplock or lease break, a share-mode wait).
    pub interim: u64,
}

impl TconStats {
    /// Counts of command `c`.
    pub fn get(&self, c: u16) -> CmdCount {
        self.cmds.get(c as usize).copied().unwrap_or_default()
    }

    pub(crate) fn sent(&mut self, c: u16) {
        self.smbs += 1;
        if let Some(x) = self.cmds.get_mut(c as usize) {
            x.total += 1;
        }
    }

    pub(crate) fn failed(&mut self, c: u16) {
        if let Some(x) = self.cmds.get_mut(c as usize) {
            x.failed += 1;
        }
    }

    /// The counters in `/proc/fs/cifs/Stats` layout (one tcon, numbered 1).
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "1) {}", self.unc);
        let _ = writeln!(s, "SMBs: {}", self.smbs);
        let _ = writeln!(s, "Frames: {}", self.frames);
        let _ = writeln!(s, "Bytes read: {}", self.bytes_read);
        let _ = writeln!(s, "Bytes written: {}", self.bytes_written);
        if self.sealed + self.decrypt_failed > 0 {
            let _ = writeln!(
                s,
                "Encrypted frames: {} sent {} decrypt failures",
                self.sealed, self.decrypt_failed
            );
        }
        if self.bad_ea_names > 0 {
            let _ = writeln!(s, "Bad EA names: {}", self.bad_ea_names);
        }
        let rows: [(&str, u16); 12] = [
            ("Negotiates", cmd::NEGOTIATE),
            ("SessionSetups", cmd::SESSION_SETUP),
            ("Logoffs", cmd::LOGOFF),
            ("TreeConnects", cmd::TREE_CONNECT),
            ("TreeDisconnects", cmd::TREE_DISCONNECT),
            ("Creates", cmd::CREATE),
            ("Closes", cmd::CLOSE),
            ("Reads", cmd::READ),
            ("Writes", cmd::WRITE),
            ("QueryDirectories", cmd::QUERY_DIRECTORY),
            ("QueryInfos", cmd::QUERY_INFO),
            ("SetInfos", cmd::SET_INFO),
        ];
        for (name, c) in rows {
            let n = self.get(c);
            let _ = writeln!(s, "{}: {} total {} failed", name, n.total, n.failed);
        }
        s
    }
}

/// Which tracepoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    Enter,
    Done,
    Err,
}

/// One trace event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    pub t_ms: u64,
    pub kind: TraceKind,
    pub sid: u64,
    pub tid: u32,
    pub cmd: u16,
    pub mid: u64,
    /// NT status (Done: 0).
    pub status: u32,
    /// What the command failed with (Err only); the `rc=` field renders
    /// it as the negative errno the caller's mapping gives it.
    pub error: Option<SmbError>,
}

impl TraceEvent {
    /// One line, shaped like the kernel's trace output; `rc` gives the
    /// `rc=` value of a failure (Linux: the negative errno).
    pub fn render(&self, out: &mut String, rc: fn(&SmbError) -> i32) {
        let (name, extra) = match self.kind {
            TraceKind::Enter => ("smb3_cmd_enter", false),
            TraceKind::Done => ("smb3_cmd_done", false),
            TraceKind::Err => ("smb3_cmd_err", true),
        };
        let _ = write!(
            out,
            "smb-client [000] ..... {}.{:03}: {}: sid=0x{:x} tid=0x{:x} cmd={} mid={}",
            self.t_ms / 1000,
            self.t_ms % 1000,
            name,
            self.sid,
            self.tid,
            self.cmd,
            self.mid
        );
        if extra {
            let rc = self.error.as_ref().map_or(0, rc);
            let _ = write!(out, " status=0x{:x} rc={}", self.status, rc);
        }
        out.push('\n');
    }
}

/// A bounded ring of trace events; the oldest are dropped first.
#[derive(Clone, Debug)]
pub struct TraceRing {
    events: VecDeque<TraceEvent>,
    cap: usize,
    /// Events dropped for lack of room.
    pub dropped: u64,
}

impl TraceRing {
    /// A ring holding at most `cap` events (0 disables tracing).
    pub fn new(cap: usize) -> Self {
        TraceRing {
            events: VecDeque::new(),
            cap,
            dropped: 0,
        }
    }

    pub(crate) fn push(&mut self, e: TraceEvent) {
        if self.cap == 0 {
            return;
        }
        if self.events.len() == self.cap {
            self.events.pop_front();
            self.dropped += 1;
        }
        self.events.push_back(e);
    }

    /// Turns the newest `smb3_cmd_done` of `err`'s (mid, cmd) into `err`
    /// (its body turned out malformed); pushes `err` if the done event is
    /// no longer in the ring.
    pub(crate) fn mark_err(&mut self, err: TraceEvent) {
        let done = self
            .events
            .iter_mut()
            .rev()
            .find(|e| e.mid == err.mid && e.cmd == err.cmd && e.kind == TraceKind::Done);
        match done {
            Some(e) => {
                e.kind = TraceKind::Err;
                e.status = err.status;
                e.error = err.error;
            }
            None => self.push(err),
        }
    }

    /// The events, oldest first.
    pub fn events(&self) -> impl Iterator<Item = &TraceEvent> {
        self.events.iter()
    }

    /// Forgets all events.
    pub fn clear(&mut self) {
        self.events.clear();
        self.dropped = 0;
    }

    /// All events as text, one per line (`rc` as in [`TraceEvent::render`]).
    pub fn dump(&self, rc: fn(&SmbError) -> i32) -> String {
        let mut s = String::new();
        for e in &self.events {
            e.render(&mut s, rc);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_formats() {
        let mut st = TconStats {
            unc: "\\\\h\\s".into(),
            ..Default::default()
        };
        st.sent(cmd::QUERY_INFO);
        st.sent(cmd::QUERY_INFO);
        st.failed(cmd::QUERY_INFO);
        let r = st.render();
        assert!(r.contains("QueryInfos: 2 total 1 failed\n"), "{r}");
        assert!(r.contains("Creates: 0 total 0 failed\n"));
        let mut ring = TraceRing::new(2);
        for mid in 0..3 {
            ring.push(TraceEvent {
                t_ms: 1234,
                kind: TraceKind::Err,
                sid: 0x10,
                tid: 0x29,
                cmd: 16,
                mid,
                status: 0xc000_0052,
                error: Some(SmbError::Status(0xc000_0052)),
            });
        }
        assert_eq!(ring.dropped, 1);
        // The rc mapping is the caller's: any function of the error.
        let d = ring.dump(|e| match e {
            SmbError::Status(0xc000_0052) => -61,
            _ => 0,
        });
        assert_eq!(d.lines().count(), 2);
        assert!(d.starts_with(
            "smb-client [000] ..... 1.234: smb3_cmd_err: sid=0x10 tid=0x29 cmd=16 mid=1 status=0xc0000052 rc=-61\n"
        ), "{d}");
    }
}

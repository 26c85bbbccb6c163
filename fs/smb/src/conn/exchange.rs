//! One exchange of requests and replies on the live link: message ids,
//! credits, signing of requests and verification of replies, STATUS_PENDING
//! interim replies, and the counters and trace events of each command. It
//! touches only the [`Connection`]'s link, counters and trace.

use super::*;

impl Connection {
    /// The greatest CreditCharge a request may carry now.
    pub(crate) fn max_charge(&self) -> u16 {
        match &self.link {
            Some(l) if l.large_mtu => l.credits.clamp(1, 128) as u16,
            _ => 1,
        }
    }

    pub(super) fn exchange1(&mut self, req: Req, sign: bool) -> SmbResult<Reply> {
        let mut v = self.exchange(vec![req], sign)?;
        v.pop().ok_or(SmbError::Protocol("no reply"))
    }

    /// Sends `reqs` as one frame (a compound if several) and waits for a
    /// reply to each. Replies with error statuses are returned, not turned
    /// into errors; transport failures, timeouts, malformed frames, bad
    /// signatures and replies that do not decrypt are errors and drop the
    /// link. On an encrypting link the frame goes out sealed (not signed)
    /// and the replies must come sealed.
    pub fn exchange(&mut self, reqs: Vec<Req>, sign: bool) -> SmbResult<Vec<Reply>> {
        self.exchange_frames(vec![reqs], sign)
    }

    /// [`Connection::exchange`] of several frames in one send: each inner
    /// list goes out as its own frame (a compound if several), all of them
    /// before any reply is read, so they cost one round trip. The replies
    /// come back flat, in request order. The credits of every request are
    /// charged up front ([`SmbError::NoCredits`] if the link holds fewer);
    /// a frame that fails to go out fails them all.
    ///
    /// The wait: every reply that makes progress (a final reply, or an
    /// interim one) restarts the timeout, so a server that answers steadily
    /// never times out a large batch; a silent one is dropped after one
    /// timeout. The whole exchange is bounded by what its frames sent one
    /// after the other could have taken ([`request_deadline_ms`] each), and
    /// each request takes at most [`MAX_INTERIM`] interim replies.
    ///
    /// The steps, in order: [`Self::frame_requests`] (message ids, headers,
    /// credits, signatures), [`Self::note_sent`] (counters and trace),
    /// [`Self::transmit`] (sealed or not); then, until every request has
    /// its reply, [`Self::recv_frame`] (one frame, opened if sealed) and
    /// [`Self::take_reply`] for each message of it.
    pub fn exchange_frames(&mut self, frames: Vec<Vec<Req>>, sign: bool) -> SmbResult<Vec<Reply>> {
        let timeout = self.cfg.timeout_ms;
        let t0 = self.clock.now_ms();
        let sizes: Vec<usize> = frames.iter().map(Vec::len).filter(|&n| n > 0).collect();
        let nframes = sizes.len().max(1) as u64;
        let reqs: Vec<Req> = frames.into_iter().flatten().collect();
        if reqs.is_empty() {
            return Ok(Vec::new());
        }
        let (out, wire) = self.frame_requests(&reqs, &sizes, sign)?;
        self.note_sent(&reqs, &out, t0);
        self.transmit(&reqs, &out, wire)?;
        let mut wait = Awaiting {
            replies: vec![None; reqs.len()],
            timeout,
            deadline: t0.saturating_add(timeout),
            total: t0.saturating_add(request_deadline_ms(timeout).saturating_mul(nframes)),
            interim: vec![0; reqs.len()],
        };
        while wait.replies.iter().any(|r| r.is_none()) {
            let (frame, sealed_reply) = self.recv_frame(&reqs, &out, &wait)?;
            let parts = match compound::split(&frame) {
                Ok(p) => p,
                Err(e) => return Err(self.fail_pending(&reqs, &out.mids, &wait.replies, e.into())),
            };
            for range in parts {
                self.take_reply(&reqs, &out, &mut wait, &frame[range], sealed_reply)?;
            }
        }
        Ok(wait.replies.into_iter().flatten().collect())
    }

    /// The frames of `reqs`, `sizes` requests each: every request gets its
    /// message id and header, each frame's compound is chained and, on a
    /// signing link, each message signed; their credits are taken. Refused
    /// before anything is spent when the link is down or has too few
    /// credits.
    fn frame_requests(
        &mut self,
        reqs: &[Req],
        sizes: &[usize],
        sign: bool,
    ) -> SmbResult<(Outgoing, Vec<Vec<u8>>)> {
        let credit_request = self.cfg.credit_request;
        let link = self.link.as_mut().ok_or(SmbError::Disconnected)?;
        let need: u32 = reqs.iter().map(|r| r.charge.max(1) as u32).sum();
        if link.credits < need {
            return Err(SmbError::NoCredits);
        }
        let seal = link.encrypt
            && link.sealer.is_some()
            && !reqs
                .iter()
                .any(|r| r.cmd == cmd::NEGOTIATE || r.cmd == cmd::SESSION_SETUP);
        let sign = sign && link.signer.is_some() && !seal;
        let mut mids = Vec::with_capacity(reqs.len());
        let mut msgs = Vec::with_capacity(reqs.len());
        for r in reqs.iter() {
            let mid = link.next_mid;
            link.next_mid += r.charge.max(1) as u64;
            mids.push(mid);
            let mut m = r.msg.clone();
            let mut h = Vec::with_capacity(HEADER_LEN);
            HeaderRepr {
                // 2.0.2 has no multi-credit requests: the field is reserved
                // there and must be 0 (MS-SMB2 2.2.1.2).
                credit_charge: if link.dialect == dialect::SMB2_0_2 {
                    0
                } else {
                    r.charge
                },
                command: r.cmd,
                credits: credit_request,
                flags: if r.related { flags::RELATED } else { 0 },
                message_id: mid,
                tree_id: link.tree_id,
                session_id: link.session_id,
                ..Default::default()
            }
            .emit(&mut h);
            m[..HEADER_LEN].copy_from_slice(&h);
            msgs.push(m);
        }
        let mut wire = Vec::with_capacity(sizes.len());
        let mut rest = &msgs[..];
        for &n in sizes {
            let (these, more) = rest.split_at(n);
            rest = more;
            let (mut frame, ranges) = compound::chain(these);
            if sign {
                if let Some(s) = &link.signer {
                    for r in &ranges {
                        s.sign(&mut frame[r.clone()]);
                    }
                }
            }
            wire.push(frame);
        }
        link.credits -= need;
        let out = Outgoing {
            mids,
            seal,
            sign,
            sid: link.session_id,
            tid: link.tree_id,
        };
        Ok((out, wire))
    }

    /// Counts each request as sent and traces its start (at `t0`, when the
    /// exchange began).
    fn note_sent(&mut self, reqs: &[Req], out: &Outgoing, t0: u64) {
        for (r, mid) in reqs.iter().zip(&out.mids) {
            self.stats.sent(r.cmd);
            self.trace.push(TraceEvent {
                t_ms: t0,
                kind: TraceKind::Enter,
                sid: out.sid,
                tid: out.tid,
                cmd: r.cmd,
                mid: *mid,
                status: 0,
                error: None,
            });
        }
    }

    /// Sends the frames in order (sealed when `out.seal`), each kept as the
    /// last sent; a failed send stops there, fails every request and drops
    /// the link.
    fn transmit(&mut self, reqs: &[Req], out: &Outgoing, wire: Vec<Vec<u8>>) -> SmbResult<()> {
        let link = self.link.as_mut().ok_or(SmbError::Disconnected)?;
        let mut sent = Ok(());
        for frame in wire {
            self.stats.frames += 1;
            sent = match link.sealer.as_mut().filter(|_| out.seal) {
                Some(sealer) => {
                    self.stats.sealed += 1;
                    link.t.send(&sealer.seal(&frame))
                }
                None => link.t.send(&frame),
            };
            link.last_sent = frame;
            if sent.is_err() {
                break;
            }
        }
        if sent.is_err() {
            return Err(self.fail_all(reqs, &out.mids, SmbError::Disconnected));
        }
        Ok(())
    }

    /// The next frame from the server before the deadline, opened if it
    /// came sealed (and whether it did). A frame in clear to a sealed
    /// request, one that does not open, a timeout or a broken transport
    /// fails the requests still unanswered and drops the link.
    fn recv_frame(
        &mut self,
        reqs: &[Req],
        out: &Outgoing,
        wait: &Awaiting,
    ) -> SmbResult<(Vec<u8>, bool)> {
        let (mids, replies) = (&out.mids, &wait.replies);
        let now = self.clock.now_ms();
        if now >= wait.deadline {
            return Err(self.fail_pending(reqs, mids, replies, SmbError::Timeout));
        }
        let link = self.link.as_mut().ok_or(SmbError::Disconnected)?;
        match link.t.recv(wait.deadline - now) {
            Ok(f) if transform::is_transform(&f) => {
                match link.sealer.as_ref().map(|s| s.open(&f)) {
                    Some(Ok(plain)) => Ok((plain, true)),
                    _ => {
                        self.stats.decrypt_failed += 1;
                        let e = SmbError::DecryptFailed;
                        Err(self.fail_pending(reqs, mids, replies, e))
                    }
                }
            }
            Ok(_) if out.seal => {
                // A reply in clear to a sealed request could be forged
                // by anyone on the path.
                self.stats.decrypt_failed += 1;
                let e = SmbError::DecryptFailed;
                Err(self.fail_pending(reqs, mids, replies, e))
            }
            Ok(f) => Ok((f, false)),
            Err(TransportError::Timeout) => {
                Err(self.fail_pending(reqs, mids, replies, SmbError::Timeout))
            }
            Err(_) => Err(self.fail_pending(reqs, mids, replies, SmbError::Disconnected)),
        }
    }

    /// One message `m` of a received frame: skipped when it answers no
    /// outstanding request (an oplock break, a stale or duplicate reply);
    /// an interim reply moves the deadline; a final reply whose signature
    /// holds (or that came sealed) grants its credits and is kept. A
    /// request from the server, a reply to another command, too many
    /// interim replies or a bad signature fails the requests still
    /// unanswered and drops the link.
    ///
    /// The steps, in order: [`Self::reply_header`] (parsed, a response),
    /// [`Self::answered_request`] (which request, if any, it answers);
    /// then [`Self::take_interim`] for an interim reply, else
    /// [`Self::reply_authentic`] and [`Self::keep_reply`].
    ///
    /// Credits are granted only by a reply that answers an outstanding
    /// request and has passed the checks its kind gets: a frame nobody
    /// asked for (an oplock break, which grants none, a stale or duplicate
    /// reply, or one forged unsigned on a signing link) grants nothing.
    fn take_reply(
        &mut self,
        reqs: &[Req],
        out: &Outgoing,
        wait: &mut Awaiting,
        m: &[u8],
        sealed_reply: bool,
    ) -> SmbResult<()> {
        let hdr = self.reply_header(reqs, out, wait, m)?;
        let Some(i) = self.answered_request(reqs, out, wait, &hdr)? else {
            return Ok(());
        };
        if hdr.status == status::PENDING && hdr.flags & flags::ASYNC != 0 {
            return self.take_interim(reqs, out, wait, i, &hdr);
        }
        if !self.reply_authentic(&hdr, m, sealed_reply, out.sign) {
            return Err(self.fail_pending(reqs, &out.mids, &wait.replies, SmbError::BadSignature));
        }
        self.keep_reply(out, wait, i, hdr, m);
        Ok(())
    }

    /// The header of message `m`, which must parse and be a response (not
    /// a request from the server); the link must still be up.
    fn reply_header(
        &mut self,
        reqs: &[Req],
        out: &Outgoing,
        wait: &Awaiting,
        m: &[u8],
    ) -> SmbResult<HeaderRepr> {
        let hdr = match HeaderRepr::parse(m) {
            Ok(h) => h,
            Err(e) => return Err(self.fail_pending(reqs, &out.mids, &wait.replies, e.into())),
        };
        if self.link.is_none() {
            return Err(SmbError::Disconnected);
        }
        if !hdr.is_response() {
            let e = SmbError::Protocol("request from server");
            return Err(self.fail_pending(reqs, &out.mids, &wait.replies, e));
        }
        Ok(hdr)
    }

    /// The index of the request `hdr` answers: `None` for a message that
    /// answers none still outstanding (unsolicited, such as an oplock
    /// break, a stale reply, or a duplicate of one already kept). A reply
    /// to another command than its request's fails the exchange.
    fn answered_request(
        &mut self,
        reqs: &[Req],
        out: &Outgoing,
        wait: &Awaiting,
        hdr: &HeaderRepr,
    ) -> SmbResult<Option<usize>> {
        let Some(i) = out.mids.iter().position(|&x| x == hdr.message_id) else {
            return Ok(None);
        };
        if wait.replies[i].is_some() {
            return Ok(None);
        }
        if hdr.command != reqs[i].cmd {
            let e = SmbError::Protocol("reply to a different command");
            return Err(self.fail_pending(reqs, &out.mids, &wait.replies, e));
        }
        Ok(Some(i))
    }

    /// An interim reply to request `i`: the final one follows; wait afresh,
    /// but never past the exchange's total deadline nor more than
    /// [`MAX_INTERIM`] times, so a server cannot stall us for ever with
    /// interim replies. MS-SMB2 exempts interim replies from signing (the
    /// server grants the request's credits in them, so they must count);
    /// sealed, they are authenticated.
    fn take_interim(
        &mut self,
        reqs: &[Req],
        out: &Outgoing,
        wait: &mut Awaiting,
        i: usize,
        hdr: &HeaderRepr,
    ) -> SmbResult<()> {
        self.stats.interim += 1;
        wait.interim[i] += 1;
        if wait.interim[i] > MAX_INTERIM {
            let e = SmbError::Protocol("too many interim replies");
            return Err(self.fail_pending(reqs, &out.mids, &wait.replies, e));
        }
        self.progress(wait);
        self.grant_credits(hdr.credits);
        Ok(())
    }

    /// Whether a final reply may be trusted: it came sealed (its AEAD tag
    /// authenticated it), or its signature holds, or it need not be signed.
    ///
    /// SESSION_SETUP replies are not checked here: the key that signs the
    /// final one is derived from that very exchange (on 3.1.1 from the
    /// preauth hash of the request just sent), so only `session_setup` can
    /// verify it, once it has the key, and it drops the link on failure,
    /// credits and all; the intermediate MORE_PROCESSING replies come
    /// unsigned by design (MS-SMB2 3.3.5.5.3). An unsigned reply to a
    /// signed request is refused.
    fn reply_authentic(&self, hdr: &HeaderRepr, m: &[u8], sealed_reply: bool, sign: bool) -> bool {
        if sealed_reply {
            return true;
        }
        let signer = self.link.as_ref().and_then(|l| l.signer.as_ref());
        let is_signed = hdr.flags & flags::SIGNED != 0;
        let check = hdr.command != cmd::SESSION_SETUP && signer.is_some();
        match (signer, is_signed) {
            (Some(s), true) if check => s.verify(m),
            (_, false) => !sign,
            _ => true,
        }
    }

    /// A final reply to request `i` that passed its checks: it grants its
    /// credits, counts and traces as done (or failed), restarts the wait,
    /// and fills its slot.
    fn keep_reply(
        &mut self,
        out: &Outgoing,
        wait: &mut Awaiting,
        i: usize,
        hdr: HeaderRepr,
        m: &[u8],
    ) {
        self.grant_credits(hdr.credits);
        self.note_reply(&hdr, out.sid, out.tid);
        self.progress(wait);
        wait.replies[i] = Some(Reply {
            hdr,
            msg: m.to_vec(),
        });
    }

    /// Progress: the next frame gets a full timeout again, within the
    /// exchange's bound.
    fn progress(&self, wait: &mut Awaiting) {
        wait.deadline = self
            .clock
            .now_ms()
            .saturating_add(wait.timeout)
            .min(wait.total);
    }

    /// Adds the credits a checked reply grants (the link holds at most
    /// 65535). Without a link there is nothing to grant to.
    fn grant_credits(&mut self, n: u16) {
        if let Some(l) = self.link.as_mut() {
            l.credits = (l.credits + n as u32).min(65_535);
        }
    }

    pub(super) fn note_reply(&mut self, hdr: &HeaderRepr, sid: u64, tid: u32) {
        let t = self.clock.now_ms();
        // MORE_PROCESSING_REQUIRED is a step of SESSION_SETUP, not a failure.
        let ok = hdr.status == status::SUCCESS || hdr.status == status::MORE_PROCESSING_REQUIRED;
        if !ok && status::is_error(hdr.status) {
            self.stats.failed(hdr.command);
        }
        self.trace.push(TraceEvent {
            t_ms: t,
            kind: if ok { TraceKind::Done } else { TraceKind::Err },
            sid: if hdr.session_id != 0 {
                hdr.session_id
            } else {
                sid
            },
            tid: if hdr.async_id.is_none() {
                hdr.tree_id
            } else {
                tid
            },
            cmd: hdr.command,
            mid: hdr.message_id,
            status: hdr.status,
            error: (!ok).then_some(SmbError::Status(hdr.status)),
        });
    }

    /// Parses the body of a reply whose status was not an error. A body
    /// that does not parse is a failure of that command, like Linux's
    /// `MID_RESPONSE_MALFORMED`: it is counted as failed and its trace
    /// event turns from `smb3_cmd_done` into `smb3_cmd_err` (rc -EIO), so
    /// the Stats and the trace agree with what the caller got. An error
    /// status is returned as such (see [`Reply::ok`]), except
    /// MORE_PROCESSING_REQUIRED, a step of SESSION_SETUP with a body.
    pub(crate) fn body<'r, T>(
        &mut self,
        r: &'r Reply,
        parse: impl FnOnce(&'r [u8]) -> Result<T, WireError>,
    ) -> SmbResult<T> {
        let m = if r.hdr.status == status::MORE_PROCESSING_REQUIRED {
            &r.msg[..]
        } else {
            r.ok()?
        };
        parse(m).map_err(|e| {
            self.stats.failed(r.hdr.command);
            self.stats.malformed += 1;
            let (sid, tid) = self
                .link
                .as_ref()
                .map_or((0, 0), |l| (l.session_id, l.tree_id));
            self.trace.mark_err(TraceEvent {
                t_ms: self.clock.now_ms(),
                kind: TraceKind::Err,
                sid,
                tid,
                cmd: r.hdr.command,
                mid: r.hdr.message_id,
                status: r.hdr.status,
                error: Some(SmbError::Wire(e)),
            });
            SmbError::Wire(e)
        })
    }

    pub(super) fn fail_all(&mut self, reqs: &[Req], mids: &[u64], e: SmbError) -> SmbError {
        let none: Vec<Option<Reply>> = vec![None; reqs.len()];
        self.fail_pending(reqs, mids, &none, e)
    }

    /// Records the unanswered requests as failed, drops the link, returns `e`.
    pub(super) fn fail_pending(
        &mut self,
        reqs: &[Req],
        mids: &[u64],
        replies: &[Option<Reply>],
        e: SmbError,
    ) -> SmbError {
        let t = self.clock.now_ms();
        let (sid, tid) = self
            .link
            .as_ref()
            .map_or((0, 0), |l| (l.session_id, l.tree_id));
        for ((r, mid), rep) in reqs.iter().zip(mids).zip(replies) {
            if rep.is_none() {
                self.stats.failed(r.cmd);
                self.trace.push(TraceEvent {
                    t_ms: t,
                    kind: TraceKind::Err,
                    sid,
                    tid,
                    cmd: r.cmd,
                    mid: *mid,
                    status: 0,
                    error: Some(e),
                });
            }
        }
        self.link = None;
        e
    }
}

/// What the sending steps of [`Connection::exchange_frames`] leave to the
/// receiving ones.
struct Outgoing {
    /// Each request's message id, in order.
    mids: Vec<u64>,
    /// The frame went sealed: the replies must come sealed.
    seal: bool,
    /// The frame went signed: an unsigned reply is refused.
    sign: bool,
    /// The session and tree the requests went with (the trace's ids).
    sid: u64,
    tid: u32,
}

/// The replies awaited by [`Connection::exchange_frames`], and until when.
struct Awaiting {
    /// One slot per request, filled by its final reply.
    replies: Vec<Option<Reply>>,
    /// The configured timeout, in ms.
    timeout: u64,
    /// When the next frame must have come (every reply that answers an
    /// outstanding request, interim or final, moves it).
    deadline: u64,
    /// When the whole exchange must be over: [`request_deadline_ms`] per
    /// frame sent.
    total: u64,
    /// Interim replies seen so far, per request (each at most
    /// `MAX_INTERIM`).
    interim: Vec<u32>,
}

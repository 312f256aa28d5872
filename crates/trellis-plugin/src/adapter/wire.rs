//! The connection to the plugin: event lines handed over in blocks, requests with a
//! deadline, notifications, and serving what the plugin sends meanwhile.

use std::time::{Duration, Instant};

use serde_json::Value;
use trellis_core::ext::{ExtError, Host};

use super::PluginExt;
use crate::process::{Inbound, Piece};
use crate::protocol::{self, Incoming};

/// Event lines are handed to the writer in blocks of this size or [`OUT_PIECES`] lines
/// (or at the end of a batch): the host hands over events held during a storm in batches
/// of thousands, and each block wakes the writer.
const OUT_BLOCK: usize = 1 << 20;
const OUT_PIECES: usize = 4096;

impl PluginExt {
    /// Queues an event line, handed over in blocks.
    pub(super) fn send_buffered(&mut self, piece: Piece) -> Result<(), ExtError> {
        self.outbuf_bytes += piece.bytes();
        self.outbuf.push(piece);
        if self.outbuf_bytes >= OUT_BLOCK || self.outbuf.len() >= OUT_PIECES {
            self.flush_out()?;
        }
        Ok(())
    }

    /// Hands the buffered lines to the writer.
    pub(super) fn flush_out(&mut self) -> Result<(), ExtError> {
        if self.outbuf.is_empty() {
            return Ok(());
        }
        let block = std::mem::take(&mut self.outbuf);
        self.outbuf_bytes = 0;
        self.send_pieces(block)
    }

    /// Queues a line for the plugin, after whatever is buffered (order is kept).
    pub(super) fn send(&mut self, line: Vec<u8>) -> Result<(), ExtError> {
        self.flush_out()?;
        self.send_pieces(vec![Piece::Raw(line)])
    }

    pub(super) fn send_pieces(&mut self, pieces: Vec<Piece>) -> Result<(), ExtError> {
        let len: usize = pieces.iter().map(Piece::bytes).sum();
        let Some(p) = &self.proc else {
            return Err(ExtError::msg("the plugin process is not running"));
        };
        if p.backlog.load(std::sync::atomic::Ordering::Acquire) + len > self.spec.limits.backlog {
            let f = format!(
                "disconnected: more than {} MiB waiting for its stdin — it does not keep up with the session",
                self.spec.limits.backlog >> 20
            );
            self.kill();
            self.fatal = Some(f.clone());
            return Err(ExtError::Fatal(f));
        }
        if !p.send_pieces(pieces) {
            return Err(self.crashed("its stdin closed".into()));
        }
        Ok(())
    }

    /// Handles what the plugin sent. With `want`, waits (until `deadline`) for the
    /// answer to that request and returns it; without, handles what is there and returns.
    pub(super) fn pump(
        &mut self,
        host: &mut dyn Host,
        want: Option<u64>,
        deadline: Instant,
    ) -> Result<Option<Result<Value, protocol::RpcError>>, ExtError> {
        loop {
            let next = match want {
                Some(_) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match self.rx.recv_timeout(left) {
                        Ok(m) => m,
                        Err(_) => return Ok(None),
                    }
                }
                None => match self.rx.try_recv() {
                    Ok(m) => m,
                    Err(_) => return Ok(None),
                },
            };
            match next {
                Inbound::Msg { generation, .. }
                | Inbound::Broken { generation, .. }
                | Inbound::Eof { generation }
                    if generation != self.generation =>
                {
                    continue;
                }
                Inbound::Msg {
                    msg: Incoming::Response { id, result },
                    ..
                } => {
                    if Some(id) == want {
                        return Ok(Some(result));
                    }
                    // A late answer to a request that timed out: dropped.
                }
                Inbound::Msg {
                    msg: Incoming::Call { id, method, params },
                    ..
                } => {
                    let r = crate::serve::serve(host, &method, params);
                    match id {
                        Some(id) => {
                            self.send(protocol::response(&id, r))?;
                        }
                        None => {
                            if let Err(e) = r {
                                // A notification has nobody to answer: /status says it.
                                host.report(&method, &e.message);
                            }
                        }
                    }
                }
                Inbound::Broken { why, line, .. } => {
                    // Most often a print() that went to stdout: say so in those words.
                    let f = if why.starts_with("not JSON") {
                        format!(
                            "disconnected: it wrote «{line}» on stdout, which carries the protocol: print to stderr instead ({why})"
                        )
                    } else {
                        format!("disconnected: it wrote {why}: «{line}»")
                    };
                    self.kill();
                    self.fatal = Some(f.clone());
                    return Err(ExtError::Fatal(f));
                }
                Inbound::Eof { .. } => {
                    if self.registration.is_none() {
                        let exit = self.kill().unwrap_or_default();
                        return Err(ExtError::Fatal(format!(
                            "the process ended before it answered initialize ({exit})"
                        )));
                    }
                    return Err(self.crashed("the process ended".into()));
                }
            }
        }
    }

    /// Sends a request and waits for its answer (serving the plugin meanwhile).
    /// Sends a request and waits for its answer (serving the plugin meanwhile): `None`
    /// when none came in time.
    pub(super) fn exchange(
        &mut self,
        host: &mut dyn Host,
        method: &str,
        params: &impl serde::Serialize,
        limit: Duration,
    ) -> Result<Option<Result<Value, protocol::RpcError>>, ExtError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(protocol::request(id, method, params))?;
        self.pump(host, Some(id), Instant::now() + limit)
    }

    /// [`PluginExt::exchange`], an error answer or none in time being a failure.
    pub(super) fn request(
        &mut self,
        host: &mut dyn Host,
        method: &str,
        params: &impl serde::Serialize,
        limit: Duration,
    ) -> Result<Value, ExtError> {
        match self.exchange(host, method, params, limit)? {
            Some(Ok(v)) => Ok(v),
            // What its handler raised, in its words (the SDKs answer -32000 with the
            // exception and the author's line); a protocol error says which.
            Some(Err(e)) if e.code == -32000 => Err(ExtError::msg(e.message)),
            Some(Err(e)) => Err(ExtError::msg(format!(
                "{method} answered with error {}: {}",
                e.code, e.message
            ))),
            None => Err(ExtError::msg(format!(
                "no answer to {method} within {} ms",
                limit.as_millis()
            ))),
        }
    }

    /// Sends a notification at once (after whatever is queued).
    pub(super) fn notify(
        &mut self,
        host: &mut dyn Host,
        method: &str,
        params: &impl serde::Serialize,
    ) -> Result<(), ExtError> {
        if !self.ensure(host)? {
            self.lost += 1;
            return Ok(());
        }
        self.send(protocol::notification(method, params))?;
        self.pump(host, None, Instant::now())?;
        Ok(())
    }
}

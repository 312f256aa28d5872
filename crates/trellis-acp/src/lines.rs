//! Reading lines of bytes from a pipe with a bound on what one line may hold.
//!
//! Invariant: memory per line never exceeds `max` bytes, whatever the peer sends (a line
//! without a newline, a flood); what does not fit is counted, not kept.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Longest line accepted from the agent's stdout (a longer one is logged as an invalid
/// line with its head and length, and dropped).
pub const MAX_LINE: usize = 64 << 20;

/// One line read by [`read_line`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRead {
    /// Bytes of the line that did not fit into the buffer (dropped).
    pub dropped: usize,
}

/// Reads one line (its `\n` and a `\r` before it removed) into `buf`, keeping at most
/// `max` bytes. `Ok(None)` at the end of input with nothing read; a last line without a
/// newline is returned as a line.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<LineRead>> {
    buf.clear();
    let mut dropped = 0usize;
    let mut any = false;
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            return Ok(any.then(|| finish(buf, dropped)));
        }
        any = true;
        let (used, done) = take(available, buf, max, &mut dropped);
        r.consume(used);
        if done {
            return Ok(Some(finish(buf, dropped)));
        }
    }
}

/// [`read_line`] on a blocking reader.
pub fn read_line_blocking<R: std::io::BufRead>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<LineRead>> {
    buf.clear();
    let mut dropped = 0usize;
    let mut any = false;
    loop {
        let available = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(any.then(|| finish(buf, dropped)));
        }
        any = true;
        let (used, done) = take(available, buf, max, &mut dropped);
        r.consume(used);
        if done {
            return Ok(Some(finish(buf, dropped)));
        }
    }
}

/// Moves what `available` holds of the current line into `buf` (up to `max` bytes, the
/// rest counted in `dropped`): how many bytes it used, and whether the line ended.
fn take(available: &[u8], buf: &mut Vec<u8>, max: usize, dropped: &mut usize) -> (usize, bool) {
    let (chunk, done) = match memchr::memchr(b'\n', available) {
        Some(i) => (&available[..i], Some(i + 1)),
        None => (available, None),
    };
    let room = max.saturating_sub(buf.len());
    let keep = chunk.len().min(room);
    buf.extend_from_slice(&chunk[..keep]);
    *dropped += chunk.len() - keep;
    (done.unwrap_or(available.len()), done.is_some())
}

fn finish(buf: &mut Vec<u8>, dropped: usize) -> LineRead {
    if dropped == 0 && buf.last() == Some(&b'\r') {
        buf.pop();
    }
    LineRead { dropped }
}

/// True when `buf` holds another complete line with something other than whitespace on
/// it (blank lines are skipped by readers, so they never count as "more to come").
pub fn has_complete_line(buf: &[u8]) -> bool {
    let mut rest = buf;
    while let Some(i) = memchr::memchr(b'\n', rest) {
        if rest[..i].iter().any(|b| !b.is_ascii_whitespace()) {
            return true;
        }
        rest = &rest[i + 1..];
    }
    false
}

/// True when a line holds nothing but whitespace.
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Fewer, fuller reads while an agent streams. A reader that keeps up with a fast agent
/// wakes for every few lines, and each wake costs a sleep, a read, a log write, a wake of
/// the driver and an output write — switches between threads that cost more than the
/// lines. When the reader drains the pipe again soon after it last did (the agent is
/// streaming), it waits a moment before reading on, so the next read takes what arrived
/// meanwhile in one piece. At an interactive pace (a line now and then) nothing ever
/// waits: the first line after a pause is read at once; nor does an agent that writes
/// faster than it is read wait (the last read was big: the pipe was full).
///
/// How long it waits depends on what the pipe holds: the agent must not fill it meanwhile
/// (it would block, and a blocked writer costs more wakes, not fewer). A pipe grown to
/// [`Coalesce::ROOMY`] is gathered for [`Coalesce::GATHER_ROOMY`] into a reader's buffer of
/// [`Coalesce::BUFFER_ROOMY`]; a pipe of the usual 64 KiB for [`Coalesce::GATHER`].
#[derive(Debug)]
pub struct Coalesce {
    last_drain: Option<std::time::Instant>,
    gather: std::time::Duration,
    /// The reader's buffer.
    buffer: usize,
    /// A read this big means the agent writes faster than it is read: no waiting.
    big_read: usize,
}

impl Default for Coalesce {
    /// For a pipe of the usual size.
    fn default() -> Self {
        Coalesce::for_pipe(None)
    }
}

impl Coalesce {
    /// How long a reader waits to gather a streaming agent's next lines from a pipe of the
    /// usual 64 KiB.
    pub const GATHER: std::time::Duration = std::time::Duration::from_micros(500);
    /// The pipe asked for ([`trellis_os::fd::grow_pipe`]), and the least that counts as
    /// roomy. Pipe buffers are counted per user (past 64 MiB by default, the user's new
    /// pipes get one page): 512 KiB lets a hundred sessions run before that.
    pub const ROOMY: usize = 512 << 10;
    /// The wait for a roomy pipe. Measured on the headless floor's stream (100 000 calls,
    /// a streaming agent writing some 50 MB/s), against the usual pipe's half millisecond:
    /// 2 ms into a 256 or 512 KiB buffer cost a fifth less CPU (pipes of 256 KiB to 1 MiB
    /// alike); 1 ms a tenth less; 8 ms into 1 MiB no better than 2 ms; 2 ms with the usual
    /// pipe more (the agent blocks on the full pipe). A streamed line reaches the
    /// screen at most this much later, well within a frame — but a big piece is reduced
    /// in one go, and in the UI a key typed meanwhile then waited over a frame for its
    /// echo: only runs no one types into ask for it (`AgentSpec::bulk_reads`).
    pub const GATHER_ROOMY: std::time::Duration = std::time::Duration::from_millis(2);
    /// The reader's buffer for a roomy pipe (the usual one is 64 KiB): what a faster agent
    /// is read in at once. 512 KiB cost no less CPU, and against a fast agent (the demo
    /// agent's 10 000 calls) the bigger pieces held more memory at the peak.
    pub const BUFFER_ROOMY: usize = 256 << 10;
    /// Drains closer together than this mean the agent is streaming.
    pub const STREAMING: std::time::Duration = std::time::Duration::from_millis(4);

    /// For a pipe that holds `capacity` bytes (`None`: not known, the usual 64 KiB).
    pub fn for_pipe(capacity: Option<usize>) -> Coalesce {
        let (gather, buffer, big_read) = if capacity.is_some_and(|c| c >= Self::ROOMY) {
            let buffer = Self::BUFFER_ROOMY;
            (Self::GATHER_ROOMY, buffer, buffer * 3 / 4)
        } else {
            (Self::GATHER, 64 << 10, 16 << 10)
        };
        Coalesce {
            last_drain: None,
            gather,
            buffer,
            big_read,
        }
    }

    /// The reader's buffer that suits the pipe.
    pub fn buffer(&self) -> usize {
        self.buffer
    }

    /// The reader has handled every line it had, `last_read` bytes from its last read
    /// (the next read would wait for the agent), at `now`: how long to wait first, if at
    /// all.
    pub fn drained(
        &mut self,
        now: std::time::Instant,
        last_read: usize,
    ) -> Option<std::time::Duration> {
        let streaming = self
            .last_drain
            .is_some_and(|t| now.saturating_duration_since(t) < Self::STREAMING);
        self.last_drain = Some(now);
        (streaming && last_read < self.big_read).then_some(self.gather)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_streaming_agent_is_read_in_gathered_pieces() {
        use std::time::{Duration, Instant};
        let t0 = Instant::now();
        let mut c = Coalesce::default();
        // The first line, and a line after a pause, are read at once.
        assert_eq!(c.drained(t0, 100), None);
        assert_eq!(c.drained(t0 + Duration::from_millis(50), 100), None);
        // Drains in quick succession: the agent streams, the reader gathers.
        let t1 = t0 + Duration::from_millis(51);
        assert_eq!(c.drained(t1, 900), Some(Coalesce::GATHER));
        let t2 = t1 + Duration::from_millis(2);
        assert_eq!(c.drained(t2, 4000), Some(Coalesce::GATHER));
        // An agent faster than the reader (the last read found the pipe full) is read on
        // at once.
        assert_eq!(c.drained(t2 + Duration::from_millis(1), 64 << 10), None);
        // A pause ends it.
        assert_eq!(c.drained(t2 + Duration::from_millis(100), 100), None);
        assert_eq!(c.buffer(), 64 << 10);
    }

    #[test]
    fn a_roomy_pipe_is_gathered_longer_into_a_bigger_buffer() {
        use std::time::{Duration, Instant};
        for small in [None, Some(64 << 10), Some(Coalesce::ROOMY - 1)] {
            let c = Coalesce::for_pipe(small);
            assert_eq!((c.gather, c.buffer()), (Coalesce::GATHER, 64 << 10));
        }
        let mut c = Coalesce::for_pipe(Some(Coalesce::ROOMY));
        assert_eq!(c.buffer(), Coalesce::BUFFER_ROOMY);
        let t0 = Instant::now();
        assert_eq!(c.drained(t0, 100), None);
        let t1 = t0 + Duration::from_millis(1);
        assert_eq!(c.drained(t1, 100 << 10), Some(Coalesce::GATHER_ROOMY));
        // Three quarters of the buffer: the agent outpaces the reader.
        let full = Coalesce::BUFFER_ROOMY * 3 / 4;
        assert_eq!(c.drained(t1 + Duration::from_millis(1), full), None);
    }

    async fn lines(input: &[u8], max: usize) -> Vec<(Vec<u8>, usize)> {
        let mut r = tokio::io::BufReader::with_capacity(4, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(l) = read_line(&mut r, &mut buf, max).await.unwrap() {
            out.push((buf.clone(), l.dropped));
        }
        out
    }

    #[tokio::test]
    async fn bounded_lines_of_bytes() {
        let got = lines(b"ab\r\n\ncdefgh\n\xff\xfe\nlast", 4).await;
        assert_eq!(
            got,
            vec![
                (b"ab".to_vec(), 0),
                (b"".to_vec(), 0),
                (b"cdef".to_vec(), 2),
                (b"\xff\xfe".to_vec(), 0),
                (b"last".to_vec(), 0),
            ]
        );
        assert!(lines(b"", 4).await.is_empty());
        // The blocking reader reads the same lines.
        let mut r = std::io::BufReader::with_capacity(4, &b"ab\r\n\ncdefgh\n\xff\xfe\nlast"[..]);
        let mut buf = Vec::new();
        let mut blocking = Vec::new();
        while let Some(l) = read_line_blocking(&mut r, &mut buf, 4).unwrap() {
            blocking.push((buf.clone(), l.dropped));
        }
        assert_eq!(blocking, got);
    }

    #[test]
    fn more_means_a_non_blank_complete_line() {
        assert!(!has_complete_line(b"\n\n  \n"));
        assert!(!has_complete_line(b"\n{\"partial"));
        assert!(has_complete_line(b"\n\n{}\n"));
    }
}

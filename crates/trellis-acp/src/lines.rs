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
        let (chunk, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        let room = max.saturating_sub(buf.len());
        let keep = chunk.len().min(room);
        buf.extend_from_slice(&chunk[..keep]);
        dropped += chunk.len() - keep;
        let used = done.unwrap_or(available.len());
        r.consume(used);
        if done.is_some() {
            return Ok(Some(finish(buf, dropped)));
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn more_means_a_non_blank_complete_line() {
        assert!(!has_complete_line(b"\n\n  \n"));
        assert!(!has_complete_line(b"\n{\"partial"));
        assert!(has_complete_line(b"\n\n{}\n"));
    }
}

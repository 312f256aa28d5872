//! Server-sent events (the streams of streamable HTTP) read as they come: each event's
//! data becomes one line, bounded by the largest message taken.

use crate::remote::MESSAGE_LIMIT;

/// A server-sent-event stream read as it comes: each event's data, one line.
#[derive(Default)]
pub(crate) struct Sse {
    /// The line begun and not ended yet.
    line: Vec<u8>,
    /// The event's data so far.
    data: Vec<u8>,
    has_data: bool,
    /// The last byte was a `\r` (a `\n` right after it ends nothing more).
    after_cr: bool,
}

impl Sse {
    /// Takes `bytes`; the events they complete go to `out`, one line each.
    pub(crate) fn feed(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.after_cr && rest[0] == b'\n' {
                rest = &rest[1..];
                self.after_cr = false;
                continue;
            }
            self.after_cr = false;
            match memchr::memchr2(b'\n', b'\r', rest) {
                Some(i) => {
                    self.after_cr = rest[i] == b'\r';
                    if self.line.is_empty() {
                        // A whole line in this chunk: read where it is.
                        self.field(&rest[..i], out);
                    } else {
                        self.line.extend_from_slice(&rest[..i]);
                        let mut line = std::mem::take(&mut self.line);
                        self.field(&line, out);
                        line.clear();
                        self.line = line;
                    }
                    rest = &rest[i + 1..];
                }
                None => {
                    self.line.extend_from_slice(rest);
                    rest = &[];
                }
            }
            if self.line.len() + self.data.len() > MESSAGE_LIMIT {
                return Err("sent a message too large to take".into());
            }
        }
        Ok(())
    }

    /// One line of the stream: a field, a comment, or the blank line that ends an event.
    fn field(&mut self, line: &[u8], out: &mut Vec<u8>) {
        if line.is_empty() {
            if self.has_data && !self.data.is_empty() {
                out.extend_from_slice(&self.data);
                out.push(b'\n');
            }
            self.data.clear();
            self.has_data = false;
            return;
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(0) => return,
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        if name == b"data" {
            if self.has_data {
                self.data.push(b' ');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&str]) -> Vec<String> {
        let mut sse = Sse::default();
        let mut out = Vec::new();
        for c in chunks {
            sse.feed(c.as_bytes(), &mut out).unwrap();
        }
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn events_are_read_across_chunks_and_line_ends() {
        assert_eq!(
            events(&["data: {\"a\":1}\n\n", "data: {\"b\"", ":2}\r\n\r\n"]),
            ["{\"a\":1}", "{\"b\":2}"]
        );
        // A \r\n split between chunks ends one line, not two.
        assert_eq!(events(&["data: x\r", "\n\r", "\n"]), ["x"]);
        // Comments, other fields and events without data are no messages; data lines
        // of one event join into one line.
        assert_eq!(
            events(&[": keep-alive\n\nevent: message\nid: 7\ndata: {\"c\":\ndata: 3}\n\n"]),
            ["{\"c\": 3}"]
        );
    }

    #[test]
    fn an_event_too_large_is_refused() {
        let mut sse = Sse::default();
        let mut out = Vec::new();
        let big = vec![b'x'; MESSAGE_LIMIT / 4];
        let mut failed = false;
        sse.feed(b"data: ", &mut out).unwrap();
        for _ in 0..5 {
            if sse.feed(&big, &mut out).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed);
        assert!(out.is_empty());
    }
}

//! The text of a search hit, read again from its log: the index keeps the words of each
//! entry, not its text (a second copy of every tool output made the index bigger than the
//! logs). A hit's entry says which stretch of log its text came from; that stretch is read
//! by a fresh [`Extractor`], which finds the same document again.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::extract::{CallRow, Doc, Extractor, Sink};

/// The most log read again for one hit (hits are read one after another: this bounds the
/// memory a search holds). A record bigger than the text kept of it (1 MiB of a message,
/// 256 KiB of a call's output) fits. A call that ran across a longer turn is read at its
/// two ends (its announcement, then its last updates), which is where its text is.
pub(crate) const REREAD_CAP: u64 = 32 << 20;

/// Which document to find.
pub(crate) struct Wanted<'a> {
    pub kind: &'a str,
    pub call_id: Option<&'a str>,
    pub offset: u64,
    pub from: u64,
    pub to: u64,
}

struct Find<'a> {
    want: &'a Wanted<'a>,
    found: Option<Doc>,
}

impl Sink for Find<'_> {
    fn doc(&mut self, d: Doc) {
        if self.found.is_none()
            && d.kind.as_str() == self.want.kind
            && d.offset == self.want.offset
            && d.call_id.as_deref() == self.want.call_id
        {
            self.found = Some(d);
        }
    }
    fn call(&mut self, _: CallRow) {}
    fn checkpoint(&mut self, _: u64, _: u32) {}
}

/// The document `want` of the log at `log`, or `None` when the log is gone, is no longer
/// a regular file, or no longer holds it.
pub(crate) fn doc(log: &Path, want: &Wanted<'_>) -> Option<Doc> {
    let mut file = trellis_os::fd::open_regular(log).ok()??;
    let len = file.metadata().ok()?.len();
    let (from, to) = (want.from.min(len), want.to.min(len));
    if from >= to {
        return None;
    }
    let mut ex = Extractor::default();
    let mut find = Find { want, found: None };
    if to - from <= REREAD_CAP {
        let buf = read_at(&mut file, from, to - from)?;
        feed(&mut ex, &buf, from, &mut find);
    } else {
        let half = REREAD_CAP / 2;
        let head = read_at(&mut file, from, half)?;
        // Only the head's complete lines, then the tail from its first line start.
        let head_end = memchr::memrchr(b'\n', &head).map_or(0, |i| i + 1);
        feed(&mut ex, &head[..head_end], from, &mut find);
        let tail_at = to - half;
        let tail = read_at(&mut file, tail_at, half)?;
        let skip = memchr::memchr(b'\n', &tail).map_or(tail.len(), |i| i + 1);
        feed(&mut ex, &tail[skip..], tail_at + skip as u64, &mut find);
    }
    ex.finish(&mut find);
    find.found
}

fn read_at(file: &mut std::fs::File, at: u64, n: u64) -> Option<Vec<u8>> {
    file.seek(SeekFrom::Start(at)).ok()?;
    let mut buf = Vec::with_capacity(n as usize);
    file.take(n).read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// Feeds the complete lines of `buf` (which starts at log offset `at`).
fn feed(ex: &mut Extractor, buf: &[u8], at: u64, sink: &mut dyn Sink) {
    let mut pos = 0usize;
    while pos < buf.len() {
        let end = memchr::memchr(b'\n', &buf[pos..]).map_or(buf.len(), |i| pos + i + 1);
        let line = &buf[pos..end];
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        ex.feed(body, at + pos as u64, at + end as u64, sink);
        pos = end;
    }
}

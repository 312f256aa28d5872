//! The hot envelope read by hand: one pass over the line, strings found sixteen bytes at
//! a time, values built in place. serde's derived readers of the same structs moved each
//! of them (a few hundred bytes) through every level of nesting, and scanned strings eight
//! bytes at a time: together most of the cost of reading a line.
//!
//! Invariant: [`envelope`] either returns exactly what `serde_json::from_str::<HotEnvelope>`
//! returns for the line, or gives up (`None`) and the caller asks serde_json — it gives up
//! on anything it does not read the way serde_json would for sure: an escaped key, a
//! repeated field, nesting deeper than [`MAX_DEPTH`], a value of another type. It accepts
//! nothing serde_json refuses: strings, escapes, numbers and literals are checked as
//! strictly as serde_json checks them, and nothing may follow the object but whitespace.

use std::borrow::Cow;

use super::{Content, Hot, HotBlock, HotEnvelope, HotParams, Locations, Raw};
use crate::bulk::escaped::{Measured, Tally};
use crate::short_id::ShortId;
use crate::tool_call::Location;
use crate::tool_content::{FastBlock, FastItem};

/// Nesting given up on (serde_json allows 128 levels; agents' values nest a few).
const MAX_DEPTH: u32 = 64;

/// A string literal as it is on the line.
#[derive(Clone, Copy)]
struct Str<'a> {
    /// With its quotes.
    raw: &'a str,
    escaped: bool,
}

impl<'a> Str<'a> {
    /// Its value (`None` where serde_json would refuse it as a string: a lone surrogate).
    fn cow(self) -> Option<Cow<'a, str>> {
        if self.escaped {
            super::unescape(self.raw).map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(&self.raw[1..self.raw.len() - 1]))
        }
    }

    fn string(self) -> Option<String> {
        self.cow().map(Cow::into_owned)
    }
}

struct Cur<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Cur<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.s.as_bytes()
    }

    /// The next byte that is not whitespace (the cursor left on it).
    fn peek(&mut self) -> Option<u8> {
        let b = self.bytes();
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(self.i) {
            self.i += 1;
        }
        b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.peek()?;
        let end = self.i + word.len();
        (self.bytes().get(self.i..end)? == word.as_bytes()).then(|| self.i = end)
    }

    /// A string literal, its escapes checked as serde_json checks a string it skips (a
    /// known escape, or `\u` and four hex digits); no control character inside.
    fn string(&mut self) -> Option<Str<'a>> {
        self.string_seen(&mut ())
    }

    /// [`Cur::string`], also measuring the text as [`crate::bulk::Text::escaped`] would
    /// (`None` in the second place: not written the way it keeps): a tool's output is
    /// walked once, not a second time for its measure.
    fn measured_string(&mut self) -> Option<(Str<'a>, Option<Measured>)> {
        let mut tally = Tally::default();
        let s = self.string_seen(&mut tally)?;
        let body = &s.raw[1..s.raw.len() - 1];
        Some((s, tally.finish(body)))
    }

    /// A string literal, what is between its escapes (as places in the line) and each
    /// escape shown to `seen` as they are found.
    fn string_seen(&mut self, seen: &mut impl Seen) -> Option<Str<'a>> {
        self.eat(b'"')?;
        let (b, start) = (self.bytes(), self.i - 1);
        let mut escaped = false;
        loop {
            let at = crate::escape_scan::next_escape(b, self.i)?;
            seen.run(self.s, self.i, at);
            match b[at] {
                b'"' => {
                    self.i = at + 1;
                    return Some(Str {
                        raw: &self.s[start..self.i],
                        escaped,
                    });
                }
                b'\\' => {
                    escaped = true;
                    seen.escape(&b[at..]);
                    self.i = match *b.get(at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at + 2,
                        b'u' if b.get(at + 2..at + 6)?.iter().all(u8::is_ascii_hexdigit) => at + 6,
                        _ => return None,
                    };
                }
                // A control character.
                _ => return None,
            }
        }
    }

    /// A number by JSON's grammar.
    fn number(&mut self) -> Option<()> {
        let b = self.bytes();
        let digits = |mut i: usize| {
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            i
        };
        let mut i = self.i + usize::from(b.get(self.i) == Some(&b'-'));
        i = match *b.get(i)? {
            b'0' => i + 1,
            b'1'..=b'9' => digits(i + 1),
            _ => return None,
        };
        if b.get(i) == Some(&b'.') {
            if !b.get(i + 1)?.is_ascii_digit() {
                return None;
            }
            i = digits(i + 1);
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            if !b.get(i)?.is_ascii_digit() {
                return None;
            }
            i = digits(i);
        }
        self.i = i;
        Some(())
    }

    /// Any value, checked; its text as it is on the line.
    fn value(&mut self, depth: u32) -> Option<&'a str> {
        let c = self.peek()?;
        let start = self.i;
        match c {
            b'"' => {
                self.string()?;
            }
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.members(|cur, _| cur.value(depth + 1).map(drop))?;
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.array(|cur| cur.value(depth + 1).map(drop))?;
            }
            b't' => self.literal("true")?,
            b'f' => self.literal("false")?,
            b'n' => self.literal("null")?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        }
        Some(&self.s[start..self.i])
    }

    /// An object whose keys are matched: `member` reads each value, given its key (an
    /// escaped key is given up on: serde would match it unescaped).
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.members(|cur, key| member(cur, key?))
    }

    /// An object: `member` reads each value, given its key (`None`: an escaped key).
    fn members(
        &mut self,
        mut member: impl FnMut(&mut Self, Option<&'a str>) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            member(self, (!key.escaped).then(|| &key.raw[1..key.raw.len() - 1]))?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An array: `item` reads each element.
    fn array(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            item(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// `null` (`Some(None)`) or what `read` reads.
    fn nullable<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.peek()? == b'n' {
            self.literal("null")?;
            return Some(None);
        }
        read(self).map(Some)
    }

    fn opt_string(&mut self) -> Option<Option<String>> {
        self.nullable(|c| c.string()?.string())
    }

    /// An id, held in place when short (see [`ShortId`]).
    fn opt_short(&mut self) -> Option<Option<ShortId>> {
        self.nullable(|c| c.string()?.cow().map(|s| ShortId::new(&s)))
    }

    fn opt_cow(&mut self) -> Option<Option<Cow<'a, str>>> {
        self.nullable(|c| c.string()?.cow())
    }

    /// A value kept raw: `null` reads as absent, as serde reads an optional raw value.
    fn opt_raw(&mut self) -> Option<Option<Raw<'a>>> {
        self.nullable(|c| c.value(0).map(Raw))
    }

    /// [`Cur::opt_raw`] owned: checked here, not again (see [`crate::raw_json::RawJson`]).
    fn opt_boxed(&mut self) -> Option<Option<crate::raw_json::RawJson>> {
        self.nullable(|c| c.value(0).map(crate::raw_json::RawJson::scanned))
    }
}

/// What a string's reader shows of it as it goes (see [`Cur::string_seen`]): nothing, for
/// most strings; its measure, for a tool's output.
trait Seen {
    fn run(&mut self, body: &str, from: usize, to: usize);
    fn escape(&mut self, esc: &[u8]);
}

impl Seen for () {
    #[inline]
    fn run(&mut self, _: &str, _: usize, _: usize) {}
    #[inline]
    fn escape(&mut self, _: &[u8]) {}
}

impl Seen for Tally {
    #[inline]
    fn run(&mut self, body: &str, from: usize, to: usize) {
        Tally::run(self, body, from, to);
    }
    #[inline]
    fn escape(&mut self, esc: &[u8]) {
        // A refused literal is unescaped instead; its measure is not used.
        let _ = Tally::escape(self, esc);
    }
}

/// Sets a field once: a field seen twice is given up on (serde refuses it).
fn once<T>(slot: &mut Option<T>, v: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(v);
    Some(())
}

/// Sets an optional field once (`null` counts as seen).
fn once_opt<T>(slot: &mut Option<Option<T>>, v: Option<T>) -> Option<()> {
    once(slot, v)
}

/// The envelope of a line, if this reader reads it the way serde_json would.
pub(super) fn envelope(line: &str) -> Option<HotEnvelope<'_>> {
    let mut c = Cur { s: line, i: 0 };
    let (mut method, mut id, mut params) = (None, None, None);
    c.object(|c, key| match key {
        "method" => {
            let m = c.opt_cow()?;
            // Not a session update: serde_json's reading decides.
            if m.as_deref() != Some("session/update") {
                return None;
            }
            once_opt(&mut method, m)
        }
        "id" => {
            let v = c.opt_raw()?;
            if v.is_some() {
                return None;
            }
            once_opt(&mut id, v)
        }
        "params" => once(&mut params, params_of(c)?),
        _ => c.value(0).map(drop),
    })?;
    if c.peek().is_some() {
        return None;
    }
    Some(HotEnvelope {
        method: method.flatten(),
        id: id.flatten(),
        params: params?,
    })
}

fn params_of<'a>(c: &mut Cur<'a>) -> Option<HotParams<'a>> {
    let (mut session_id, mut update) = (None, None);
    c.object(|c, key| match key {
        "sessionId" => once_opt(&mut session_id, c.opt_cow()?),
        "update" => once(&mut update, hot(c)?),
        _ => c.value(0).map(drop),
    })?;
    Some(HotParams {
        session_id: session_id.flatten(),
        update: update?,
    })
}

fn hot<'a>(c: &mut Cur<'a>) -> Option<Box<Hot<'a>>> {
    let mut session_update = None;
    let (mut tool_call_id, mut title, mut name, mut message_id) = (None, None, None, None);
    let (mut kind, mut status) = (None, None);
    let mut content = None;
    let (mut locations, mut meta) = (None, None);
    let (mut raw_input, mut raw_output) = (None, None);
    c.object(|c, key| match key {
        "sessionUpdate" => once(&mut session_update, c.string()?.cow()?),
        "toolCallId" => once_opt(&mut tool_call_id, c.opt_short()?),
        "title" => once_opt(&mut title, c.opt_string()?),
        "name" => once_opt(&mut name, c.opt_string()?),
        "messageId" => once_opt(&mut message_id, c.opt_string()?),
        "kind" => once_opt(&mut kind, c.opt_cow()?),
        "status" => once_opt(&mut status, c.opt_cow()?),
        "content" => once(&mut content, content_of(c)?),
        "locations" => once_opt(&mut locations, c.nullable(locations_of)?),
        "_meta" => once_opt(&mut meta, c.opt_raw()?),
        "rawInput" => once_opt(&mut raw_input, c.opt_boxed()?),
        "rawOutput" => once_opt(&mut raw_output, c.opt_boxed()?),
        _ => c.value(0).map(drop),
    })?;
    Some(Box::new(Hot {
        session_update: session_update?,
        tool_call_id: tool_call_id.flatten(),
        title: title.flatten(),
        kind: kind.flatten(),
        status: status.flatten(),
        content: content.unwrap_or_default(),
        locations: locations.flatten(),
        raw_input: raw_input.flatten(),
        raw_output: raw_output.flatten(),
        name: name.flatten(),
        message_id: message_id.flatten(),
        meta: meta.flatten(),
    }))
}

/// `locations`, read as the lenient list reader reads them (`parse_locations`): an item
/// that is no location is left out. Given up on: anything but an array of objects, and a
/// `line` that is a number other than plain digits (how serde_json reads `-0` or `1e2`
/// as a `u32` is its business).
fn locations_of<'a>(c: &mut Cur<'a>) -> Option<Locations<'a>> {
    let mut out = Vec::new();
    c.array(|c| {
        let (mut path, mut line, mut fits) = (None, None, true);
        c.object(|c, key| {
            match key {
                "path" => {
                    let p = if c.peek()? == b'"' {
                        c.string()?.string()
                    } else {
                        c.value(0)?;
                        None
                    };
                    // Not a string (or not one serde_json reads): no location.
                    fits &= p.is_some() && path.is_none();
                    path = p;
                }
                "line" => {
                    let l = match c.peek()? {
                        b'0'..=b'9' => {
                            let start = c.i;
                            c.number()?;
                            let digits = &c.s[start..c.i];
                            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                                return None;
                            }
                            // Past a u32: no location.
                            digits.parse::<u32>().ok().map(Some)
                        }
                        b'-' => return None,
                        b'n' => {
                            c.literal("null")?;
                            Some(None)
                        }
                        _ => {
                            c.value(0)?;
                            None
                        }
                    };
                    fits &= l.is_some() && line.is_none();
                    line = Some(l.flatten());
                }
                _ => {
                    c.value(0)?;
                }
            }
            Some(())
        })?;
        if let (true, Some(path)) = (fits, path) {
            out.push(Location {
                path,
                line: line.flatten(),
            });
        }
        Some(())
    })?;
    Some(Locations::Read(out))
}

/// `content`: null, an array of items, or a block (anything else: serde refuses it).
fn content_of<'a>(c: &mut Cur<'a>) -> Option<Content<'a>> {
    match c.peek()? {
        b'n' => {
            c.literal("null")?;
            Some(Content::Absent)
        }
        b'[' => {
            let mut items = Vec::with_capacity(1);
            c.array(|c| {
                items.push(item(c)?);
                Some(())
            })?;
            Some(Content::Items(items))
        }
        b'{' => block(c).map(Content::Block),
        _ => None,
    }
}

fn item<'a>(c: &mut Cur<'a>) -> Option<FastItem<'a>> {
    let mut ty = None;
    let mut content = None;
    let (mut path, mut old_text, mut new_text, mut terminal_id) = (None, None, None, None);
    c.object(|c, key| match key {
        "type" => once(&mut ty, c.string()?.cow()?),
        "content" => once_opt(&mut content, c.nullable(fast_block)?),
        "path" => once_opt(&mut path, c.opt_string()?),
        "oldText" => once_opt(&mut old_text, c.opt_string()?),
        "newText" => once_opt(&mut new_text, c.opt_string()?),
        "terminalId" => once_opt(&mut terminal_id, c.opt_string()?),
        _ => c.value(0).map(drop),
    })?;
    Some(FastItem {
        ty: ty?,
        content: content.flatten(),
        path: path.flatten(),
        old_text: old_text.flatten(),
        new_text: new_text.flatten(),
        terminal_id: terminal_id.flatten(),
    })
}

fn fast_block<'a>(c: &mut Cur<'a>) -> Option<FastBlock<'a>> {
    let (mut ty, mut text) = (None, None);
    let mut measured = None;
    c.object(|c, key| match key {
        "type" => once(&mut ty, c.string()?.cow()?),
        // A tool's output: measured as it is read.
        "text" if c.peek()? == b'"' => {
            let (s, m) = c.measured_string()?;
            measured = m;
            once_opt(&mut text, Some(Raw(s.raw)))
        }
        "text" => once_opt(&mut text, c.opt_raw()?),
        _ => c.value(0).map(drop),
    })?;
    Some(FastBlock {
        ty: ty?,
        text: text.flatten(),
        measured,
    })
}

fn block<'a>(c: &mut Cur<'a>) -> Option<HotBlock<'a>> {
    let (mut ty, mut text, mut uri, mut name) = (None, None, None, None);
    c.object(|c, key| match key {
        "type" => once(&mut ty, c.string()?.cow()?),
        "text" => once_opt(&mut text, c.opt_raw()?),
        "uri" => once_opt(&mut uri, c.opt_string()?),
        "name" => once_opt(&mut name, c.opt_string()?),
        _ => c.value(0).map(drop),
    })?;
    Some(HotBlock {
        ty: ty.unwrap_or_default(),
        text: text.flatten(),
        uri: uri.flatten(),
        name: name.flatten(),
    })
}

#[cfg(test)]
mod tests;

//! Finished calls out of memory (issue 11, part 5): the ledger hands chunks of
//! [`CHUNK`] calls, once all of them are finished, to a [`Cold`] store, which writes them
//! to a private spill file and keeps only where each chunk is and a compact index of
//! their ids; a call is decoded again (with its chunk, into a small cache) when a view, an
//! export or an extension asks for it. The texts of their output stay in the session log
//! (see [`crate::bulk`]): a frozen call holds only where they are.
//!
//! Invariants:
//! - A frozen call decodes equal to the call that was frozen (same fields, statuses,
//!   permissions, frames, revision); only where its output text is kept changes.
//! - The id index answers exactly: a key is a keyed hash of (subagent, id) with the
//!   position, and every candidate is checked against the decoded call, so a collision
//!   (or ids an agent crafted to collide) costs a decode, never a wrong answer.
//! - A chunk is frozen once per thaw; a thawed chunk's copy and its old entries in the
//!   index stay, readable as the chunk was (the ledger looks in its own map first and
//!   checks its own chunks; the mirror takes what changed since from events), until it
//!   freezes again and the new copy replaces it.
//!
//! Pure apart from the [`Spill`] it is given (the driver's is an unlinked temporary file).

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex};

mod encoding;
mod tally;
pub use encoding::Sealed;
use encoding::{FrozenCall, table, table_prefix, write_frozen};
pub use tally::Tally;

use crate::bulk::BulkSource;
use crate::tool_call::ToolCall;

/// Calls per chunk: the unit that is frozen, read back and cached.
pub const CHUNK: usize = 512;
/// Keys per run of the id index at most (2 MiB); a million calls make four such runs.
const MAX_RUN: usize = 1 << 18;
/// Calls read back alone kept.
const CACHED_SINGLE: usize = 64;
/// Decoded chunks kept (a frame draws from one or two; the inspector steps within one).
const CACHED: usize = 8;

/// Where frozen chunks go: append-only bytes, read back by place.
pub trait Spill: Send + Sync {
    /// Appends `bytes`; returns where they start.
    fn put(&self, bytes: &[u8]) -> std::io::Result<u64>;
    fn get(&self, at: u64, len: usize) -> std::io::Result<Vec<u8>>;
}

/// A spill kept in memory (for tests and benchmarks: it saves nothing).
#[derive(Default)]
pub struct MemorySpill(Mutex<Vec<u8>>);

impl Spill for MemorySpill {
    fn put(&self, bytes: &[u8]) -> std::io::Result<u64> {
        let mut v = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        v.extend_from_slice(bytes);
        Ok((v.len() - bytes.len()) as u64)
    }

    fn get(&self, at: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let v = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        usize::try_from(at)
            .ok()
            .and_then(|a| v.get(a..a.checked_add(len)?))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| std::io::Error::other("past the end of the spill"))
    }
}

/// One chunk read back: its calls and the frames that touched each.
#[derive(Debug)]
pub struct Thawed {
    pub calls: Vec<Arc<ToolCall>>,
    pub frames: Vec<Vec<u64>>,
}

/// A chunk's copy in the spill.
#[derive(Clone, Copy)]
struct Stored {
    at: u64,
    len: u32,
    tally: Tally,
    /// Frozen now; false once thawed (the copy stays readable, as it was, for those who
    /// read the frozen part and take what changed since from events: the mirror).
    live: bool,
}

#[derive(Default, Clone)]
struct Frozen {
    /// Per chunk number: its copy in the spill, if it has one.
    chunks: Vec<Option<Stored>>,
    /// The tally of every frozen chunk.
    tally: Tally,
    /// Sorted runs of `hash << 32 | position`, merged like a binary counter.
    runs: Vec<Vec<u64>>,
    /// The hashes of the runs: a call never frozen is told apart without a search.
    seen: crate::bloom::Bloom,
    frozen_calls: usize,
}

impl Frozen {
    fn live(&self, no: usize) -> bool {
        matches!(self.chunks.get(no), Some(Some(s)) if s.live)
    }
}

struct State {
    frozen: Frozen,
    cache: VecDeque<(usize, Arc<Thawed>)>,
    /// Calls read back one at a time, newest first.
    single: VecDeque<(usize, Arc<ToolCall>, Vec<u64>)>,
    /// Set when the spill could not be written or read (freezing stops; nothing is lost).
    failed: Option<String>,
}

/// The frozen part of one ledger, shared with what reads it from other threads (the
/// extensions' view of the session).
pub struct Cold {
    spill: Arc<dyn Spill>,
    sources: std::sync::RwLock<Sources>,
    keys: std::collections::hash_map::RandomState,
    state: Mutex<State>,
}

impl std::fmt::Debug for Cold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.lock();
        f.debug_struct("Cold")
            .field("frozen_calls", &st.frozen.frozen_calls)
            .field("failed", &st.failed)
            .finish()
    }
}

/// Where frozen calls' texts are read back: the log of the calls from each position on (a
/// resumed session's history is in the earlier session's log, its new calls in its own).
#[derive(Clone)]
struct Sources(Vec<(usize, Arc<dyn BulkSource>)>);

impl Sources {
    fn at(&self, position: usize) -> &Arc<dyn BulkSource> {
        let i = self.0.partition_point(|(from, _)| *from <= position);
        &self.0[i.saturating_sub(1)].1
    }
}

fn key_hash(keys: &impl BuildHasher, subagent: Option<&str>, id: &str) -> u64 {
    let mut h = keys.build_hasher();
    match subagent {
        None => h.write_u8(0),
        Some(s) => {
            h.write_u8(1);
            h.write(s.as_bytes());
            h.write_u8(0xff);
        }
    }
    h.write(id.as_bytes());
    h.finish() >> 32
}

impl Cold {
    /// A store writing to `spill`; frozen texts are read back through `bulk` (the session
    /// log the calls' frames are in).
    pub fn new(spill: Arc<dyn Spill>, bulk: Arc<dyn BulkSource>) -> Arc<Cold> {
        Arc::new(Cold {
            spill,
            sources: std::sync::RwLock::new(Sources(vec![(0, bulk)])),
            keys: std::collections::hash_map::RandomState::new(),
            state: Mutex::new(State {
                frozen: Frozen::default(),
                cache: VecDeque::new(),
                single: VecDeque::new(),
                failed: None,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn sources(&self) -> Sources {
        self.sources
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The texts of calls from `position` on are read back through `source`: a resumed
    /// session's new calls are in its own log, its history (frozen before, and still
    /// read back from the earlier log) in this store.
    pub fn continue_in(&self, position: usize, source: Arc<dyn BulkSource>) {
        let mut s = self
            .sources
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        s.0.retain(|(from, _)| *from < position);
        s.0.push((position, source));
    }

    /// A copy with the same frozen chunks (a cloned ledger freezes on its own).
    pub(crate) fn fork(&self) -> Arc<Cold> {
        let st = self.lock();
        Arc::new(Cold {
            spill: self.spill.clone(),
            sources: std::sync::RwLock::new(self.sources()),
            keys: self.keys.clone(),
            state: Mutex::new(State {
                frozen: st.frozen.clone(),
                cache: VecDeque::new(),
                single: VecDeque::new(),
                failed: st.failed.clone(),
            }),
        })
    }

    /// The tally of every frozen call (kept as chunks freeze and thaw).
    pub fn tally(&self) -> Tally {
        self.lock().frozen.tally
    }

    /// Calls frozen now, and why freezing stopped if it did.
    pub fn stats(&self) -> (usize, Option<String>) {
        let st = self.lock();
        (st.frozen.frozen_calls, st.failed.clone())
    }

    /// The numbers of the chunks with a copy in the spill, in order: those frozen, and
    /// those thawed since (their copy as it was: see [`Cold::is_frozen`]).
    pub fn frozen_chunks(&self) -> Vec<usize> {
        let st = self.lock();
        (0..st.frozen.chunks.len())
            .filter(|&n| st.frozen.chunks[n].is_some())
            .collect()
    }

    /// The tally of frozen chunk `no` (none if it is not frozen now).
    pub fn chunk_tally(&self, no: usize) -> Option<Tally> {
        let st = self.lock();
        match st.frozen.chunks.get(no) {
            Some(Some(s)) if s.live => Some(s.tally),
            _ => None,
        }
    }

    pub fn is_frozen(&self, position: usize) -> bool {
        let st = self.lock();
        st.frozen.live(position / CHUNK)
    }

    /// Keeps the items of `v` whose call (at the place `position` gives) is not frozen
    /// now: what a holder of snapshots lets go of, asked under one lock and per chunk.
    pub fn retain_unfrozen<T>(&self, v: &mut Vec<T>, position: impl Fn(&T) -> usize) {
        let st = self.lock();
        v.retain(|x| !st.frozen.live(position(x) / CHUNK));
    }

    pub(crate) fn can_freeze(&self) -> bool {
        self.lock().failed.is_none()
    }

    /// Writes chunk `no` out. `inline_below`: calls before this position keep their
    /// texts in the spill (their frames are in another log). False when it could not be
    /// written (the chunk stays in memory).
    /// `sealed`: calls written when they finished (see [`Sealed`]), used where still true.
    pub(crate) fn freeze(
        &self,
        no: usize,
        thawed: &Thawed,
        inline_below: usize,
        sealed: &[Option<Sealed>],
    ) -> bool {
        // A table of where each call's JSON starts (and where the last ends), then the
        // calls: one call is read back without the others.
        let n = thawed.calls.len();
        let table = 4 * (n + 1);
        // A call takes a few hundred bytes (its texts are places in the log): the chunk is
        // written without growing its buffer again and again.
        let mut bytes = Vec::with_capacity(table + 512 * n);
        bytes.resize(table, 0);
        let mut ends = Vec::with_capacity(n + 1);
        ends.push(table as u32);
        for (k, (c, f)) in thawed.calls.iter().zip(&thawed.frames).enumerate() {
            let inline = c.position < inline_below;
            match sealed.get(k).and_then(Option::as_ref) {
                Some(s) if s.fits(c, f, inline) => bytes.extend_from_slice(s.bytes()),
                _ => {
                    if let Err(e) = write_frozen(&mut bytes, c, f, inline) {
                        self.lock().failed = Some(e.to_string());
                        return false;
                    }
                }
            }
            ends.push(u32::try_from(bytes.len()).unwrap_or(u32::MAX));
        }
        for (k, e) in ends.iter().enumerate() {
            bytes[4 * k..4 * k + 4].copy_from_slice(&e.to_le_bytes());
        }
        let mut tally = Tally::default();
        for c in &thawed.calls {
            tally.add(c);
        }
        let at = match self.spill.put(&bytes) {
            Ok(at) => at,
            Err(e) => {
                self.lock().failed = Some(format!("spill write failed: {e}"));
                return false;
            }
        };
        let mut run: Vec<u64> = thawed
            .calls
            .iter()
            .map(|c| key_hash(&self.keys, c.subagent.as_deref(), &c.id) << 32 | c.position as u64)
            .collect();
        run.sort_unstable();
        let mut st = self.lock();
        // A chunk frozen again: its new copy replaces the old one, cached copies too.
        st.cache.retain(|(n, _)| *n != no);
        st.single.retain(|(p, ..)| *p / CHUNK != no);
        let fr = &mut st.frozen;
        if fr.chunks.len() <= no {
            fr.chunks.resize(no + 1, None);
        }
        fr.chunks[no] = Some(Stored {
            at,
            len: bytes.len() as u32,
            tally,
            live: true,
        });
        fr.tally.merge(&tally);
        fr.frozen_calls += thawed.calls.len();
        fr.runs.push(run);
        let Frozen { runs, seen, .. } = fr;
        for &k in runs.last().map(Vec::as_slice).unwrap_or_default() {
            seen.add((k >> 32) as u32, || {
                runs.iter().flatten().map(|k| (k >> 32) as u32)
            });
        }
        while fr.runs.len() >= 2 {
            let n = fr.runs.len();
            let (a, b) = (fr.runs[n - 2].len(), fr.runs[n - 1].len());
            // Runs stop growing at MAX_RUN keys: a merge copies both runs, and one of the
            // whole index would cost its size again in memory for a moment.
            if a > 2 * b || a + b > MAX_RUN {
                break;
            }
            let b = fr.runs.pop().unwrap_or_default();
            let a = fr.runs.pop().unwrap_or_default();
            fr.runs.push(merge(a, b));
        }
        true
    }

    /// Takes chunk `no` back out (to be changed): its calls, decoded.
    pub(crate) fn thaw(&self, no: usize) -> Option<Thawed> {
        let t = self.chunk(no)?;
        let mut st = self.lock();
        let fr = &mut st.frozen;
        if let Some(Some(s)) = fr.chunks.get_mut(no)
            && s.live
        {
            s.live = false;
            let tally = s.tally;
            fr.tally.remove(&tally);
            fr.frozen_calls -= t.calls.len();
        }
        drop(st);
        Some(Thawed {
            calls: t.calls.clone(),
            frames: t.frames.clone(),
        })
    }

    /// Chunk `no`, decoded (from the cache when it was read lately).
    pub fn chunk(&self, no: usize) -> Option<Arc<Thawed>> {
        let (at, len) = {
            let mut st = self.lock();
            if let Some(i) = st.cache.iter().position(|(n, _)| *n == no) {
                let hit = st.cache.remove(i)?;
                let t = hit.1.clone();
                st.cache.push_front(hit);
                return Some(t);
            }
            let s = (*st.frozen.chunks.get(no)?)?;
            (s.at, s.len)
        };
        let decoded = self
            .spill
            .get(at, len as usize)
            .map_err(|e| format!("spill read failed: {e}"))
            .and_then(|b| {
                let ends = table(&b)?;
                ends.windows(2)
                    .map(|w| {
                        serde_json::from_slice::<FrozenCall>(&b[w[0] as usize..w[1] as usize])
                            .map_err(|e| e.to_string())
                    })
                    .collect::<Result<Vec<_>, _>>()
            });
        let calls = match decoded {
            Ok(c) => c,
            Err(e) => {
                self.lock().failed = Some(e);
                return None;
            }
        };
        let mut t = Thawed {
            calls: Vec::with_capacity(calls.len()),
            frames: Vec::with_capacity(calls.len()),
        };
        let sources = self.sources();
        for c in calls {
            let source = sources.at(c.position());
            let (call, frames) = c.into_call(source);
            t.calls.push(Arc::new(call));
            t.frames.push(frames);
        }
        let t = Arc::new(t);
        let mut st = self.lock();
        st.cache.push_front((no, t.clone()));
        st.cache.truncate(CACHED);
        Some(t)
    }

    /// The frozen call at `position`: from a decoded chunk, or read and decoded alone
    /// (the inspector opening one call of a long session decodes one call, not 512).
    pub fn call(&self, position: usize) -> Option<Arc<ToolCall>> {
        self.one(position).map(|(c, _)| c)
    }

    /// The frames of the frozen call at `position`.
    pub fn frames(&self, position: usize) -> Option<Vec<u64>> {
        self.one(position).map(|(_, f)| f)
    }

    fn one(&self, position: usize) -> Option<(Arc<ToolCall>, Vec<u64>)> {
        let (no, k) = (position / CHUNK, position % CHUNK);
        let place = {
            let st = self.lock();
            if let Some(i) = st.cache.iter().position(|(n, _)| *n == no) {
                let t = st.cache[i].1.clone();
                return Some((t.calls.get(k)?.clone(), t.frames.get(k)?.clone()));
            }
            if let Some((_, c, f)) = st.single.iter().find(|(p, ..)| *p == position) {
                return Some((c.clone(), f.clone()));
            }
            // A scan (a view measuring calls it has not seen, one after another): the
            // whole chunk is decoded once and cached instead of each call alone.
            let scan = k > 0 && st.single.iter().any(|(p, ..)| *p == position - 1);
            if !scan {
                let s = (*st.frozen.chunks.get(no)?)?;
                Some((s.at, s.len))
            } else {
                None
            }
        };
        let Some((at, len)) = place else {
            let t = self.chunk(no)?;
            return Some((t.calls.get(k)?.clone(), t.frames.get(k)?.clone()));
        };
        let read = || -> Result<FrozenCall, String> {
            let head = self
                .spill
                .get(at, (4 * (k + 2)).min(len as usize))
                .map_err(|e| format!("spill read failed: {e}"))?;
            let ends = table_prefix(&head, k + 2)?;
            let (from, to) = (ends[k], ends[k + 1]);
            if from > to || to > len {
                return Err("spill chunk damaged".into());
            }
            let b = self
                .spill
                .get(at + u64::from(from), (to - from) as usize)
                .map_err(|e| format!("spill read failed: {e}"))?;
            serde_json::from_slice(&b).map_err(|e| e.to_string())
        };
        let frozen = match read() {
            Ok(c) => c,
            Err(e) => {
                self.lock().failed = Some(e);
                return None;
            }
        };
        let sources = self.sources();
        let source = sources.at(frozen.position());
        let (call, frames) = frozen.into_call(source);
        let call = Arc::new(call);
        let mut st = self.lock();
        st.single
            .push_front((position, call.clone(), frames.clone()));
        st.single.truncate(CACHED_SINGLE);
        Some((call, frames))
    }

    /// Whether the call frozen at `position` is call `id` of `subagent`, as far as the
    /// id index can tell without decoding it (its key is there; a collision would need
    /// the same 32-bit keyed hash at the same position).
    pub fn holds(&self, position: usize, subagent: Option<&str>, id: &str) -> bool {
        let key = key_hash(&self.keys, subagent, id) << 32 | position as u64;
        let st = self.lock();
        st.frozen.live(position / CHUNK)
            && st.frozen.seen.may_hold((key >> 32) as u32)
            && st.frozen.runs.iter().any(|r| r.binary_search(&key).is_ok())
    }

    /// Position of the frozen call `id` of `subagent` (none: the session's own).
    pub fn find(&self, subagent: Option<&str>, id: &str) -> Option<usize> {
        let h = key_hash(&self.keys, subagent, id);
        let candidates: Vec<usize> = {
            let st = self.lock();
            if !st.frozen.seen.may_hold(h as u32) {
                return None;
            }
            let mut out = Vec::new();
            for run in &st.frozen.runs {
                let from = run.partition_point(|&k| k < h << 32);
                for &k in run[from..].iter().take_while(|&&k| k >> 32 == h) {
                    let p = (k & 0xffff_ffff) as usize;
                    // A thawed chunk's copy answers too: the ledger looks in its own
                    // map first, and the mirror wants the call as it was.
                    if matches!(st.frozen.chunks.get(p / CHUNK), Some(Some(_))) {
                        out.push(p);
                    }
                }
            }
            out
        };
        // The newest of them: an id an agent used again after a reconnection names its
        // newest call (see `Ledger::reconnected`).
        candidates
            .into_iter()
            .filter(|&p| {
                self.call(p)
                    .is_some_and(|c| c.id == id && c.subagent.as_deref() == subagent)
            })
            .max()
    }
}

fn merge(a: Vec<u64>, b: Vec<u64>) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

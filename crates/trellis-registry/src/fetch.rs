//! Every download of the registry (its index, an agent's archive), bounded three ways and
//! saying which bound it hit: by time overall, by silence (no byte for a while), and by
//! progress (less than a floor of bytes in a window — a server that trickles a byte every
//! two seconds is not making progress). Redirects are followed by hand, each address
//! checked by [`crate::address`] as the first one was.
//!
//! The request runs on a thread of its own; the caller waits on it with the bounds and
//! gives up when one is passed (the thread ends by itself when the HTTP client's own
//! overall timeout, a little past the caller's, trips: nothing waits on it).

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::address::{self, Rule};

/// How a download is bounded.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// The whole download, from the first connection to the last byte.
    pub overall: Duration,
    /// Longest silence: no byte at all for this long.
    pub silence: Duration,
    /// Progress: at least `floor` bytes in every `window` (after the answer began).
    pub window: Duration,
    pub floor: u64,
    /// The most bytes taken.
    pub max: u64,
}

impl Bounds {
    /// The index: small, fetched before anything else is done.
    pub const INDEX: Bounds = Bounds {
        overall: Duration::from_secs(30),
        silence: Duration::from_secs(10),
        window: Duration::from_secs(10),
        floor: 1024,
        max: crate::index::MAX_INDEX as u64,
    };

    /// An agent's archive: large, on a slow line.
    pub const ARCHIVE: Bounds = Bounds {
        overall: Duration::from_secs(15 * 60),
        silence: Duration::from_secs(30),
        window: Duration::from_secs(30),
        floor: 16 * 1024,
        max: 512 << 20,
    };
}

/// A response's status and the validators a cache keeps.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub status: u16,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// Where a body goes as it comes.
pub trait Sink: Send + 'static {
    fn take(&mut self, chunk: &[u8]) -> Result<(), String>;
}

impl Sink for Vec<u8> {
    fn take(&mut self, chunk: &[u8]) -> Result<(), String> {
        self.extend_from_slice(chunk);
        Ok(())
    }
}

/// The most redirects followed.
const REDIRECTS: usize = 5;

fn agent(bounds: &Bounds) -> ureq::Agent {
    ureq::Agent::config_builder()
        // The caller's bounds come first; this one only ends the thread after them.
        .timeout_global(Some(bounds.overall + Duration::from_secs(5)))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into()
}

/// Fetches `url` (checked by `rule`, as is every redirect), sending `headers`; hands the
/// body to `sink` as it comes (a 200's only) and gives it back with the answer. Fails,
/// saying which bound, when one is passed.
pub fn get<S: Sink>(
    url: &str,
    rule: Rule,
    headers: &[(String, String)],
    bounds: Bounds,
    sink: S,
) -> Result<(Answer, S), String> {
    let first = address::check(url, rule).map_err(|why| format!("{url}: {why}"))?;
    let got = Arc::new(AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = {
        let got = got.clone();
        let headers = headers.to_vec();
        let url = url.to_string();
        move || {
            let r = run(first, &url, rule, &headers, bounds, sink, &got);
            let _ = tx.send(r);
        }
    };
    std::thread::Builder::new()
        .name("trellis-fetch".into())
        .spawn(worker)
        .map_err(|e| format!("{url}: cannot start the download: {e}"))?;
    let start = Instant::now();
    let mut last = (0u64, Instant::now());
    let mut window = (0u64, Instant::now());
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(r) => return r,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(format!("{url}: the download ended without an answer"));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        let n = got.load(Ordering::Relaxed);
        if n != last.0 {
            last = (n, now);
        }
        if now - start > bounds.overall {
            return Err(format!(
                "{url}: gave up after {} s in all ({n} bytes came)",
                bounds.overall.as_secs()
            ));
        }
        if now - last.1 > bounds.silence {
            return Err(format!(
                "{url}: gave up: no data for {} s ({n} bytes came)",
                bounds.silence.as_secs()
            ));
        }
        if now - window.1 >= bounds.window {
            if n > 0 && n - window.0 < bounds.floor {
                return Err(format!(
                    "{url}: gave up: too slow ({} bytes in the last {} s, fewer than {})",
                    n - window.0,
                    bounds.window.as_secs(),
                    bounds.floor
                ));
            }
            window = (n, now);
        }
    }
}

/// The request, its redirects, and the body into `sink`.
fn run<S: Sink>(
    first: ureq::http::Uri,
    url: &str,
    rule: Rule,
    headers: &[(String, String)],
    bounds: Bounds,
    mut sink: S,
    got: &AtomicU64,
) -> Result<(Answer, S), String> {
    let agent = agent(&bounds);
    let mut at = first;
    let mut resp = None;
    for _ in 0..=REDIRECTS {
        let mut req = agent.get(at.to_string());
        for (k, v) in headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let r = req.call().map_err(|e| format!("cannot reach {at}: {e}"))?;
        let status = r.status().as_u16();
        if (300..400).contains(&status) && status != 304 {
            let location = r
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| format!("{at} redirected without a location"))?
                .to_string();
            at =
                address::redirected(&at, &location, rule).map_err(|why| format!("{url}: {why}"))?;
            continue;
        }
        resp = Some(r);
        break;
    }
    let mut resp = resp.ok_or_else(|| format!("{url}: more than {REDIRECTS} redirects"))?;
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .filter(|v| v.len() <= 512)
            .map(str::to_string)
    };
    let answer = Answer {
        status: resp.status().as_u16(),
        etag: header("etag"),
        last_modified: header("last-modified"),
    };
    if answer.status != 200 {
        return Ok((answer, sink));
    }
    let mut body = resp.body_mut().with_config().limit(bounds.max).reader();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = body.read(&mut buf).map_err(|e| format!("{url}: {e}"))?;
        if n == 0 {
            break;
        }
        got.fetch_add(n as u64, Ordering::Relaxed);
        sink.take(&buf[..n])?;
    }
    Ok((answer, sink))
}

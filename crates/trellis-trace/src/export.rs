//! OTLP/HTTP export on a thread of its own. Sessions hand finished spans over without
//! waiting ([`Exporter::send`]: a bounded queue; when it is full the spans are dropped and
//! counted); the thread batches them and posts them to the collector. A collector that is
//! down or slow costs dropped spans, never a session's time. Configured by the standard
//! `OTEL_*` variables ([`Config::from_env`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::json::Resource;
use crate::span::Span;

/// Batches waiting for the thread; past this, spans are dropped.
const QUEUE: usize = 64;
/// Most spans in one request.
const BATCH: usize = 512;
/// Longest a span waits for its batch to fill.
const LINGER: Duration = Duration::from_secs(1);

/// Where and how spans go.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The full URL spans are posted to (`…/v1/traces`).
    pub endpoint: String,
    pub headers: Vec<(String, String)>,
    /// `http/json` instead of `http/protobuf`.
    pub json: bool,
    pub timeout: Duration,
    pub resource: Resource,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn headers(list: &str) -> Vec<(String, String)> {
    list.split(',')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), crate::percent_decode(v.trim())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

impl Config {
    /// From the standard variables: `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER`,
    /// `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`, `…_PROTOCOL` (`http/protobuf`,
    /// `http/json`), `…_HEADERS`, `…_TIMEOUT` (ms), `OTEL_SERVICE_NAME`,
    /// `OTEL_RESOURCE_ATTRIBUTES`. `None` when nothing asks for export; an error for what
    /// this build cannot do (gRPC, https).
    pub fn from_env() -> Result<Option<Config>, String> {
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let exporter = var("OTEL_TRACES_EXPORTER");
        if exporter
            .as_deref()
            .is_some_and(|e| !e.split(',').any(|x| x.trim() == "otlp"))
        {
            return Ok(None);
        }
        let endpoint = match (
            var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            var("OTEL_EXPORTER_OTLP_ENDPOINT"),
        ) {
            (Some(e), _) => e,
            (None, Some(base)) => format!("{}/v1/traces", base.trim_end_matches('/')),
            // Asked for by name only: the local collector's default address.
            (None, None) if exporter.is_some() => "http://localhost:4318/v1/traces".into(),
            (None, None) => return Ok(None),
        };
        if !endpoint.starts_with("http://") {
            return Err(format!(
                "OTLP endpoint {}: only http:// is sent to (no TLS in Trellis): export to a collector beside the run",
                shown(&endpoint)
            ));
        }
        let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .unwrap_or_else(|| "http/protobuf".into());
        let json = match protocol.as_str() {
            "http/protobuf" => false,
            "http/json" => true,
            other => {
                return Err(format!(
                    "OTLP protocol {other}: Trellis sends http/protobuf or http/json"
                ));
            }
        };
        let mut h = var("OTEL_EXPORTER_OTLP_HEADERS")
            .map(|l| headers(&l))
            .unwrap_or_default();
        for (k, v) in var("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .map(|l| headers(&l))
            .unwrap_or_default()
        {
            h.retain(|(x, _)| !x.eq_ignore_ascii_case(&k));
            h.push((k, v));
        }
        let timeout = var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT"))
            .and_then(|t| t.parse::<u64>().ok())
            .map_or(Duration::from_secs(10), Duration::from_millis);
        Ok(Some(Config {
            endpoint,
            headers: h,
            json,
            timeout,
            resource: crate::resource_from_env(),
        }))
    }
}

impl Config {
    /// The endpoint as Trellis shows it (errors, `/status`, the summary): without
    /// credentials in it or a query.
    pub fn shown_endpoint(&self) -> String {
        shown(&self.endpoint)
    }
}

fn shown(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}://{host}{path}")
}

/// What became of the spans handed over: every span made is, in the end, exported or
/// dropped — `exported + dropped == made` once [`Stats::settle`]d, whatever the collector
/// did.
#[derive(Debug, Default)]
pub struct Stats {
    counts: Mutex<Counts>,
    pub failed_requests: AtomicU64,
}

/// The spans made, exported and dropped, and the last error.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    pub made: u64,
    pub exported: u64,
    pub dropped: u64,
    pub error: Option<String>,
    /// Settled: what was still on its way counts as dropped, and nothing changes after.
    settled: bool,
}

impl Stats {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `n` spans were made and handed over.
    fn made(&self, n: u64) {
        let mut c = self.counts();
        c.made += n;
        if c.settled {
            // Made after the end: never sent.
            c.dropped += n;
        }
    }

    /// `n` spans reached the collector.
    fn went(&self, n: u64) {
        let mut c = self.counts();
        if !c.settled {
            c.exported += n;
        }
    }

    /// `n` spans were given up on, for `why` (none: the queue was full).
    fn lost(&self, n: u64, why: Option<String>) {
        let mut c = self.counts();
        if c.settled {
            return;
        }
        c.dropped += n;
        if why.is_some() {
            c.error = why;
        }
    }

    pub fn exported(&self) -> u64 {
        self.counts().exported
    }

    pub fn dropped(&self) -> u64 {
        self.counts().dropped
    }

    pub fn last_error(&self) -> Option<String> {
        self.counts().error.clone()
    }

    /// The end (the process is going): what is still on its way — queued, batched, or in
    /// a request the collector has not answered — counts as dropped, and says so. The
    /// counts as they stand then.
    pub fn settle(&self) -> Counts {
        let mut c = self.counts();
        if !c.settled {
            c.settled = true;
            let on_the_way = c.made.saturating_sub(c.exported + c.dropped);
            if on_the_way > 0 {
                c.dropped += on_the_way;
                let before = c
                    .error
                    .as_deref()
                    .map(|e| format!("; before that: {e}"))
                    .unwrap_or_default();
                c.error = Some(format!(
                    "{on_the_way} span(s) still on their way when Trellis ended (the collector had not answered): dropped{before}"
                ));
            }
        }
        c.clone()
    }
}

enum Msg {
    /// Spans as they are (JSON export).
    Spans(Vec<Span>),
    /// Spans encoded by their session (protobuf): span records, and how many.
    Encoded(Vec<u8>, u64),
    Flush(SyncSender<()>),
}

/// The exporter of this process (shared by its sessions).
#[derive(Debug)]
pub struct Exporter {
    tx: SyncSender<Msg>,
    stats: Arc<Stats>,
    pub config: Config,
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Msg::Spans(s) => write!(f, "Spans({})", s.len()),
            Msg::Encoded(_, n) => write!(f, "Encoded({n})"),
            Msg::Flush(_) => write!(f, "Flush"),
        }
    }
}

impl Exporter {
    /// Starts the exporter's thread.
    pub fn start(config: Config) -> std::io::Result<Arc<Exporter>> {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let stats = Arc::new(Stats::default());
        let (c, s) = (config.clone(), stats.clone());
        std::thread::Builder::new()
            .name("otlp-exporter".into())
            .spawn(move || run(&c, &s, &rx))?;
        Ok(Arc::new(Exporter { tx, stats, config }))
    }

    /// Hands spans over without waiting: when the queue is full they are dropped (and
    /// counted). For protobuf they are encoded here, with the session's `encoder`: on the
    /// thread that made them, while they are in its cache, and freed where they were
    /// made.
    pub fn send(&self, spans: Vec<Span>, encoder: &mut crate::proto::Encoder) {
        if spans.is_empty() {
            return;
        }
        let n = spans.len() as u64;
        self.stats.made(n);
        let msg = if self.config.json {
            Msg::Spans(spans)
        } else {
            let mut records = Vec::with_capacity(spans.len() * 384);
            encoder.spans_into(&spans, &mut records);
            Msg::Encoded(records, n)
        };
        match self.tx.try_send(msg) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.stats.lost(n, None),
            Err(TrySendError::Disconnected(_)) => {
                self.stats
                    .lost(n, Some("the exporter's thread is gone".into()));
            }
        }
    }

    /// Waits (at most `wait`) until what was handed over has been sent or given up on.
    pub fn flush(&self, wait: Duration) {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let deadline = Instant::now() + wait;
        // The queue may be full: keep trying until the deadline.
        let mut msg = Msg::Flush(tx);
        loop {
            match self.tx.try_send(msg) {
                Ok(()) => break,
                Err(TrySendError::Full(m)) if Instant::now() < deadline => {
                    msg = m;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(_) => return,
            }
        }
        let _ = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()));
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }
}

/// The thread: batches, posts, counts.
fn run(config: &Config, stats: &Stats, rx: &Receiver<Msg>) {
    let agent = agent(config);
    let mut batch = Batch::default();
    let mut encoder = crate::proto::Encoder::default();
    let mut since = Instant::now();
    let mut post = |batch: &mut Batch| batch.post(&agent, config, stats, &mut encoder);
    loop {
        let msg = if batch.is_empty() {
            match rx.recv() {
                Ok(m) => Some(m),
                Err(_) => return,
            }
        } else {
            match rx.recv_timeout(LINGER.saturating_sub(since.elapsed())) {
                Ok(m) => Some(m),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    post(&mut batch);
                    return;
                }
            }
        };
        match msg {
            Some(Msg::Flush(done)) => {
                post(&mut batch);
                let _ = done.try_send(());
            }
            Some(m) => {
                if batch.is_empty() {
                    since = Instant::now();
                }
                batch.add(m);
                if batch.len() >= BATCH {
                    post(&mut batch);
                }
            }
            None => post(&mut batch),
        }
    }
}

/// Spans waiting for their request: encoded records (protobuf) or spans (JSON).
#[derive(Default)]
struct Batch {
    spans: Vec<Span>,
    records: Vec<u8>,
    encoded: usize,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn len(&self) -> usize {
        self.spans.len() + self.encoded
    }

    fn add(&mut self, msg: Msg) {
        match msg {
            Msg::Spans(spans) => self.spans.extend(spans),
            Msg::Encoded(records, n) => {
                self.records.extend_from_slice(&records);
                self.encoded += n as usize;
            }
            Msg::Flush(_) => {}
        }
    }

    /// Posts what waits (spans in requests of at most [`BATCH`]), counting what went
    /// and what was given up on.
    fn post(
        &mut self,
        agent: &ureq::Agent,
        config: &Config,
        stats: &Stats,
        encoder: &mut crate::proto::Encoder,
    ) {
        let count = |n: usize, r: Result<(), String>| match r {
            Ok(()) => stats.went(n as u64),
            Err(e) => {
                stats.failed_requests.fetch_add(1, Ordering::Relaxed);
                stats.lost(n as u64, Some(e));
            }
        };
        if self.encoded > 0 {
            let body = encoder.envelope(&config.resource, &self.records);
            count(
                self.encoded,
                send(agent, config, body, "application/x-protobuf"),
            );
            self.records.clear();
            self.encoded = 0;
        }
        for chunk in self.spans.chunks(BATCH) {
            count(chunk.len(), post_with(agent, config, chunk, encoder));
        }
        self.spans.clear();
    }
}

/// Posts one request of `spans`.
pub fn post(agent: &ureq::Agent, config: &Config, spans: &[Span]) -> Result<(), String> {
    post_with(agent, config, spans, &mut crate::proto::Encoder::default())
}

/// Posts one request of `spans`, encoded with `encoder`'s buffers.
fn post_with(
    agent: &ureq::Agent,
    config: &Config,
    spans: &[Span],
    encoder: &mut crate::proto::Encoder,
) -> Result<(), String> {
    let json;
    let (body, content_type) = if config.json {
        json = crate::json::request(&config.resource, spans)
            .to_string()
            .into_bytes();
        (&json[..], "application/json")
    } else {
        (
            encoder.request(&config.resource, spans),
            "application/x-protobuf",
        )
    };
    send(agent, config, body, content_type)
}

/// Posts one request's body.
fn send(
    agent: &ureq::Agent,
    config: &Config,
    body: &[u8],
    content_type: &str,
) -> Result<(), String> {
    let mut req = agent
        .post(&config.endpoint)
        .header("Content-Type", content_type);
    for (k, v) in &config.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    match req.send(body) {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) => Err(format!("the collector answered {}", r.status())),
        // ureq's error names the address as it was given: the credentials go.
        Err(e) => Err(format!(
            "{}: {}",
            config.shown_endpoint(),
            e.to_string()
                .replace(&config.endpoint, &config.shown_endpoint())
        )),
    }
}

/// The HTTP client of an exporter (and of one-off exports, `trellis log export --otlp`).
/// `OTEL_EXPORTER_OTLP_TIMEOUT` bounds each phase of a request (connect, send, the answer)
/// rather than the whole: with an overall bound, ureq resolves the address on a new
/// thread at every request (to be able to give up on it), and a busy session's exporter
/// posted a request every 512 spans. The name is resolved by the system's resolver, off
/// every session's path (on the exporter's thread).
pub fn agent(config: &Config) -> ureq::Agent {
    let t = Some(config.timeout);
    ureq::Agent::config_builder()
        .timeout_connect(t)
        .timeout_send_request(t)
        .timeout_send_body(t)
        .timeout_recv_response(t)
        .timeout_recv_body(t)
        .http_status_as_error(false)
        .build()
        .into()
}

/// Spans made live from a session's events, handed to the exporter as they finish
/// (every 256, and at each turn's and the session's end).
#[derive(Debug)]
pub struct Live {
    tracer: crate::Tracer,
    exporter: Arc<Exporter>,
    encoder: crate::proto::Encoder,
}

impl Live {
    pub fn new(info: crate::TraceInfo, exporter: Arc<Exporter>) -> Live {
        Live {
            tracer: crate::Tracer::new(info),
            exporter,
            encoder: crate::proto::Encoder::default(),
        }
    }

    pub fn on_event(&mut self, ev: &trellis_core::event::Event) {
        use trellis_core::event::EventBody;
        self.tracer.on_event(ev);
        if matches!(ev.body, EventBody::TurnEnded { .. }) || self.tracer.ready() >= 256 {
            self.exporter.send(self.tracer.take(), &mut self.encoder);
        }
    }

    /// The session is over: its last spans go.
    pub fn close(&mut self) {
        self.tracer.finish();
        self.exporter.send(self.tracer.take(), &mut self.encoder);
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn at_the_end_what_is_on_its_way_is_dropped_and_every_span_is_counted_once() {
        let s = super::Stats::default();
        s.made(10);
        s.went(4);
        s.lost(2, Some("refused".into()));
        let c = s.settle();
        assert_eq!((c.made, c.exported, c.dropped), (10, 4, 6));
        let why = c.error.unwrap();
        assert!(why.starts_with("4 span(s) still on their way"), "{why}");
        assert!(why.ends_with("before that: refused"), "{why}");
        // A request that comes back late, or spans made after the end, change nothing
        // but what was made and dropped.
        s.went(4);
        s.made(1);
        let c = s.settle();
        assert_eq!((c.made, c.exported, c.dropped), (11, 4, 7));
    }

    #[test]
    fn an_endpoint_is_shown_without_credentials_or_query() {
        assert_eq!(
            super::shown("http://user:hunter2@collector:4318/v1/traces?token=x"),
            "http://collector:4318/v1/traces"
        );
        assert_eq!(
            super::shown("http://127.0.0.1:4318/v1/traces"),
            "http://127.0.0.1:4318/v1/traces"
        );
    }
}

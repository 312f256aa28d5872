//! Traces of this process's sessions (issue "Fleet-ready headless runs", items 8–10):
//! when the standard `OTEL_*` variables ask for export, every session's events go through
//! a [`trellis_trace::Tracer`] to the process's one exporter, the agent and its terminals
//! get `TRACEPARENT`, and every prompt carries `_meta.traceparent`. Credentials and
//! headers for the collector are never passed to agents.

use std::sync::OnceLock;

use trellis_trace::{TraceId, TraceInfo};

/// What the environment asked of the export, read once at start (see [`take_env`]).
#[cfg(feature = "otel")]
static ASKED: OnceLock<Result<Option<trellis_trace::export::Config>, String>> = OnceLock::new();
#[cfg(not(feature = "otel"))]
static ASKED: OnceLock<bool> = OnceLock::new();

/// Reads the export's settings from the `OTEL_*` variables, then removes the collector's
/// (`OTEL_EXPORTER_OTLP_*`: its address, headers, credentials) from this process's
/// environment, so that no agent, command, plugin or hook inherits them. First thing in
/// `main`, before any thread starts.
pub fn take_env() {
    #[cfg(feature = "otel")]
    let _ = ASKED.set(trellis_trace::export::Config::from_env());
    #[cfg(not(feature = "otel"))]
    let _ = ASKED.set(
        std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
            || std::env::var_os("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some(),
    );
    let _ = FORGOTTEN.set(trellis_os::env::forget(&["OTEL_EXPORTER_OTLP_"]));
}

/// The collector's variables [`take_env`] removed.
static FORGOTTEN: OnceLock<Vec<(std::ffi::OsString, std::ffi::OsString)>> = OnceLock::new();

/// Gives `cmd` — a Trellis of this one's own (a hub started in the background), never an
/// agent or anything else — the collector's variables back, so that it exports too.
pub fn hand_on(cmd: &mut std::process::Command) {
    for (k, v) in FORGOTTEN.get().into_iter().flatten() {
        cmd.env(k, v);
    }
}

/// The exporter of this process, if export is asked for (made once; a configuration it
/// cannot follow is said once on stderr and export stays off).
#[cfg(feature = "otel")]
pub fn exporter() -> Option<std::sync::Arc<trellis_trace::export::Exporter>> {
    static EXPORTER: OnceLock<Option<std::sync::Arc<trellis_trace::export::Exporter>>> =
        OnceLock::new();
    EXPORTER
        .get_or_init(|| {
            match ASKED
                .get_or_init(trellis_trace::export::Config::from_env)
                .clone()
            {
                Ok(Some(c)) => match trellis_trace::export::Exporter::start(c) {
                    Ok(e) => Some(e),
                    Err(e) => {
                        say!("trellis: traces are not exported: {e}");
                        None
                    }
                },
                Ok(None) => None,
                Err(e) => {
                    say!(
                        "trellis: traces are not exported: {}",
                        crate::output::safe(&e)
                    );
                    None
                }
            }
        })
        .clone()
}

#[cfg(not(feature = "otel"))]
pub fn exporter() -> Option<()> {
    static SAID: OnceLock<()> = OnceLock::new();
    let asked = *ASKED.get_or_init(|| {
        std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
            || std::env::var_os("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
    });
    if asked {
        SAID.get_or_init(|| {
            say!(
                "trellis: this build has no OTLP export (cargo feature `otel`): traces are not sent"
            );
        });
    }
    None
}

/// Tool arguments, outputs and prompts go into spans only when asked
/// (`TRELLIS_TRACE_CONTENT=1`).
pub fn content() -> bool {
    std::env::var("TRELLIS_TRACE_CONTENT").is_ok_and(|v| v == "1" || v == "true")
}

/// A session about to start: its wall-clock start and trace.
#[derive(Debug, Clone)]
pub struct Begun {
    pub started: f64,
    pub trace_id: TraceId,
    /// What live export names the session by (export is the cargo feature `otel`).
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub info: TraceInfo,
}

/// Before the agent starts: the session's start time and trace id; with export on, the
/// agent's `TRACEPARENT` (unless the user set one) and the context its prompts and
/// terminals carry.
pub fn begin(spec: &mut trellis_acp::AgentSpec, agent: &str) -> Begun {
    // In whole milliseconds: the log's header keeps it as a short decimal, which reads
    // back as exactly this number (a full-precision one may come back one unit off, and
    // the trace derived from it with it), so a log's export later matches the live one.
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64 / 1000.0)
        .unwrap_or_default();
    let cwd = spec.cwd.to_string_lossy().into_owned();
    let trace_id = trellis_trace::trace_id_of(started, agent, &cwd);
    if exporter().is_some() {
        let tp =
            trellis_trace::traceparent(&trace_id, &trellis_trace::project::session_span(&trace_id));
        if !spec.env.iter().any(|(k, _)| k == "TRACEPARENT")
            && std::env::var_os("TRACEPARENT").is_none()
        {
            spec.env.push(("TRACEPARENT".into(), tp.clone()));
        }
        spec.traceparent = Some(tp);
        // A command's own spans nest under its terminal's span, which nests under its
        // call once the agent names the terminal in it.
        let trace = trace_id;
        spec.terminal_trace = Some(trellis_acp::TerminalTrace(std::sync::Arc::new(
            move |terminal_id: &str| {
                trellis_trace::traceparent(
                    &trace,
                    &trellis_trace::project::terminal_span(&trace, terminal_id),
                )
            },
        )));
    }
    Begun {
        started,
        trace_id,
        info: TraceInfo {
            trace_id,
            started,
            agent: agent.to_string(),
            content: content(),
            server: spec.remote.as_ref().and_then(|r| server_of(&r.url)),
        },
    }
}

/// Where an agent dialed at `url` runs (host, port), for `server.*` attributes.
pub fn server_of(url: &str) -> Option<(String, u16)> {
    trellis_acp::remote::Target::of(url, true)
        .ok()
        .map(|t| (t.host, t.port))
}

/// A session's live spans, as the driver's observer.
#[cfg(feature = "otel")]
struct Observed(trellis_trace::export::Live);

#[cfg(feature = "otel")]
impl trellis_driver::Observer for Observed {
    fn event(&mut self, ev: &trellis_core::event::Event, _: &trellis_core::Session) {
        self.0.on_event(ev);
    }

    fn closed(&mut self) {
        self.0.close();
    }
}

/// With export on, the driver's events go to the exporter.
pub fn observe(driver: &mut trellis_driver::Driver, begun: &Begun) {
    #[cfg(feature = "otel")]
    if let Some(e) = exporter() {
        let live = trellis_trace::export::Live::new(begun.info.clone(), e);
        driver.observe(Box::new(Observed(live)));
    }
    #[cfg(not(feature = "otel"))]
    let _ = (driver, begun);
}

/// What became of a run's spans (`exported + dropped == made`), for the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    pub made: u64,
    pub exported: u64,
    pub dropped: u64,
    pub error: Option<String>,
}

/// At exit: what was handed over is sent (at most 3 s), and what is still on its way
/// then counts as dropped, with the reason; how it went, for the summary.
pub fn flush() -> Option<Exported> {
    #[cfg(feature = "otel")]
    {
        let e = exporter()?;
        e.flush(std::time::Duration::from_secs(3));
        let c = e.stats().settle();
        Some(Exported {
            made: c.made,
            exported: c.exported,
            dropped: c.dropped,
            error: c.error,
        })
    }
    #[cfg(not(feature = "otel"))]
    None
}

/// `/status`'s section on the export (none when traces are not exported): where spans go,
/// how many went and were dropped, the last error.
pub fn status_lines() -> Vec<String> {
    #[cfg(feature = "otel")]
    {
        let Some(e) = exporter() else {
            return Vec::new();
        };
        let s = e.stats();
        let mut out = vec![
            format!(
                "Traces: {} spans exported, {} dropped",
                s.exported(),
                s.dropped()
            ),
            format!("to {}", crate::output::safe(&e.config.shown_endpoint())),
        ];
        if let Some(err) = s.last_error() {
            out.push(format!("failed: {err}"));
        }
        out
    }
    #[cfg(not(feature = "otel"))]
    Vec::new()
}

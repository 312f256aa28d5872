//! `trellis log export LOG --otlp-json FILE | --otlp URL`: a session's spans made from its
//! log, offline (an air-gapped runner, a session that ran without a collector). The events
//! of the log go through the same projection the live exporter uses, so the spans, their
//! ids included, are those a live export of that session sent.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use trellis_core::Effect;
use trellis_trace::{TraceInfo, Tracer};

#[derive(clap::Args)]
pub struct ExportArgs {
    /// The session log.
    pub log: PathBuf,
    /// Write the spans as an OTLP JSON export request to FILE.
    #[arg(long, value_name = "FILE", required_unless_present = "otlp")]
    pub otlp_json: Option<PathBuf>,
    /// Send the spans over OTLP/HTTP (protobuf) to URL (`http://collector:4318/v1/traces`;
    /// headers from `OTEL_EXPORTER_OTLP_HEADERS`).
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
}

/// What the log's first record says about the session.
fn header(log: &Path) -> anyhow::Result<(f64, String, String, Option<String>)> {
    use std::io::{BufRead, Read};
    let f = trellis_store::open_log(log).with_context(|| format!("{}", log.display()))?;
    let mut first = String::new();
    std::io::BufReader::new(f.take(1 << 20)).read_line(&mut first)?;
    let v: serde_json::Value = serde_json::from_str(first.trim())
        .with_context(|| format!("{}: the first line is not a record", log.display()))?;
    let m = &v["msg"];
    anyhow::ensure!(
        m["type"] == "session_log",
        "{}: not a Trellis session log (its first record is not the session's header)",
        log.display()
    );
    Ok((
        m["started"].as_f64().unwrap_or_default(),
        m["agent"].as_str().unwrap_or_default().to_string(),
        m["cwd"].as_str().unwrap_or_default().to_string(),
        m["remote"].as_str().map(str::to_string),
    ))
}

/// The spans of the session in `log`.
pub fn spans_of(log: &Path) -> anyhow::Result<Vec<trellis_trace::Span>> {
    let (started, agent, cwd, remote) = header(log)?;
    let mut tracer = Tracer::new(TraceInfo {
        trace_id: trellis_trace::trace_id_of(started, &agent, &cwd),
        started,
        agent,
        content: crate::traces::content(),
        // An agent that was dialed: where it ran.
        server: remote.and_then(|r| crate::traces::server_of(&format!("ws://{r}/"))),
    });
    let rebuilt = trellis_driver::replay::rebuild_log(log, |fx| {
        if let Effect::Emit(ev) = fx {
            tracer.on_event(&ev);
        }
    })
    .with_context(|| format!("{}", log.display()))?;
    if rebuilt.unreadable > 0 {
        say!(
            "trellis: {}: {} unreadable lines left out",
            log.display(),
            rebuilt.unreadable
        );
    }
    tracer.finish();
    Ok(tracer.take())
}

pub fn main(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let spans = spans_of(&args.log)?;
    let resource = trellis_trace::resource_from_env();
    if let Some(file) = &args.otlp_json {
        let mut text = trellis_trace::json::request(&resource, &spans).to_string();
        text.push('\n');
        crate::sessions::write_new(file, text.as_bytes())?;
        say!(
            "trellis: {} spans written to {}",
            spans.len(),
            file.display()
        );
    }
    if let Some(url) = &args.otlp {
        send(url, &resource, &spans)?;
        say!(
            "trellis: {} spans sent to {}",
            spans.len(),
            crate::output::safe(url)
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "otel")]
fn send(
    url: &str,
    resource: &trellis_trace::Resource,
    spans: &[trellis_trace::Span],
) -> anyhow::Result<()> {
    anyhow::ensure!(
        url.starts_with("http://"),
        "--otlp {url}: only http:// (no TLS in Trellis): send to a collector beside you"
    );
    let config = trellis_trace::export::Config {
        endpoint: url.to_string(),
        headers: std::env::var("OTEL_EXPORTER_OTLP_HEADERS")
            .map(|h| {
                h.split(',')
                    .filter_map(|p| p.split_once('='))
                    .map(|(k, v)| (k.trim().into(), trellis_trace::percent_decode(v.trim())))
                    .collect()
            })
            .unwrap_or_default(),
        json: false,
        timeout: std::time::Duration::from_secs(30),
        resource: resource.clone(),
    };
    let agent = trellis_trace::export::agent(&config);
    for chunk in spans.chunks(512) {
        trellis_trace::export::post(&agent, &config, chunk).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

#[cfg(not(feature = "otel"))]
fn send(_: &str, _: &trellis_trace::Resource, _: &[trellis_trace::Span]) -> anyhow::Result<()> {
    anyhow::bail!("this build has no OTLP export (cargo feature `otel`): use --otlp-json")
}

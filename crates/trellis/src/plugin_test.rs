//! `trellis plugin test PATH --replay SESSION.jsonl`: a plugin against a recorded
//! session, with no agent. The recording is reduced record by record (its clock is the
//! log's); after each record the plugin gets the events and has handled them before the
//! next one, so what it does lands in a stable order. The result is a text snapshot of
//! everything it did: its timeline (notifications, call state, permission claims and
//! answers, prompts it sent, failures), its sections, status items and settings rows,
//! its card for every call it designs, its transforms, its store.
//!
//! Nothing is performed: a claimed request is not answered to anyone, a prompt is not
//! sent. Stores live in memory; the plugin's data directory is a temporary one.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use trellis_core::ext::Capability;
use trellis_core::{Effect, Policy, Session};
use trellis_ext_host::{Candidate, ExtConfig, ExtHost, HostOptions, Out};

/// Width cards are asked at.
const WIDTH: u16 = 80;

pub struct Outcome {
    pub snapshot: String,
    /// The plugin ended up disabled.
    pub failed: bool,
    /// The last lines the plugin wrote on its stderr (not in the snapshot: tracebacks
    /// carry paths and line numbers that move).
    pub stderr: Vec<String>,
}

fn clean(s: &str) -> String {
    trellis_text::one_line(s).into_owned()
}

/// Runs the plugin at `dir` against `log` and returns its snapshot.
pub fn run(dir: &Path, log: &Path, data: &Path) -> anyhow::Result<Outcome> {
    let package = trellis_plugin::Package::load(dir)
        .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    let text = trellis_store::paths::read_text(log, trellis_store::paths::LOG_CAP)
        .with_context(|| format!("cannot read {}", log.display()))?;
    let (name, mut host, mut rx) = start(&package, data)?;
    let replayed = replay(&mut host, &mut rx, &text);
    let session = &replayed.session;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# trellis plugin test: {} {} against {} ({} records, {} calls)",
        name,
        package.version,
        log.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        replayed.records,
        session.ledger.len()
    );
    out.push_str("\n## timeline\n");
    out.push_str(if replayed.timeline.is_empty() {
        "(nothing)\n"
    } else {
        &replayed.timeline
    });
    write_sections(&mut out, &host);
    write_status_items(&mut out, &host);
    write_settings(&mut out, &host);
    write_cards(&mut out, &mut host, session);
    write_transforms(&mut out, &mut host, session);
    write_store(&mut out, &host, &name);
    let failed = write_status(&mut out, &host, &name, &replayed.problems);
    let stderr = host
        .status()
        .extensions
        .iter()
        .find(|e| e.name == name)
        .map(|e| {
            e.extra
                .iter()
                .skip_while(|l| !l.trim_start().starts_with("stderr:"))
                .map(|l| clean(l))
                .collect()
        })
        .unwrap_or_default();
    host.shutdown(Duration::from_secs(5));
    Ok(Outcome {
        snapshot: out,
        failed,
        stderr,
    })
}

/// What a replay left: the session, what the plugin did, the log's problems.
struct Replayed {
    session: Session,
    timeline: String,
    records: usize,
    problems: Vec<String>,
}

type HostRx = tokio::sync::mpsc::UnboundedReceiver<trellis_ext_host::HostMsg>;

/// A host with the plugin alone, granted everything it asks for, its stores in memory.
fn start(
    package: &trellis_plugin::Package,
    data: &Path,
) -> anyhow::Result<(String, ExtHost, HostRx)> {
    let reg = trellis_plugin::registry::Registry::new(data.to_path_buf(), None);
    let mut spec = trellis_plugin::registry::spec_of(package, &reg, Some(trellis_os::reaper::own))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    spec.launch.log_file = None;
    let name = spec.manifest.name.clone();
    let grant: Vec<Capability> = spec.manifest.capabilities.clone();
    trellis_ext_host::install_panic_guard();
    let mut opts = HostOptions {
        permission_timeout: 5.0,
        ..HostOptions::default()
    };
    opts.config.insert(
        name.clone(),
        ExtConfig {
            enabled: Some(true),
            grant: Some(grant.clone()),
            options: serde_json::Value::Null,
        },
    );
    let (host, rx) = ExtHost::new(
        vec![Candidate {
            ext: Box::new(trellis_plugin::PluginExt::new(spec)),
            builtin: false,
        }],
        opts,
    );
    Ok((name, host, rx))
}

/// Until the plugin has handled everything and said all it had to say.
fn settle(host: &mut ExtHost, rx: &mut HostRx, outs: &mut Vec<Out>, t: f64) {
    for _ in 0..50 {
        host.flush(Duration::from_secs(10));
        let mut any = false;
        while let Ok(m) = rx.try_recv() {
            any = true;
            outs.extend(host.on_msg(m, t));
        }
        if !any {
            break;
        }
    }
}

/// The log reduced record by record, the plugin given each record's events and settled
/// before the next.
fn replay(host: &mut ExtHost, rx: &mut HostRx, text: &str) -> Replayed {
    let mut session = Session::new(Policy::Ask);
    let mut timeline = String::new();
    let mut t = 0.0;
    let mut records = 0usize;
    let mut problems = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry = match trellis_core::log::parse_record(line) {
            Ok(e) => e,
            Err(e) => {
                problems.push(format!("line {}: {e}", n + 1));
                continue;
            }
        };
        let Some(action) = entry.into_action(n as u64 + 1) else {
            continue;
        };
        records += 1;
        let fx = trellis_core::update(&mut session, action);
        if let Some(ev) = fx.iter().find_map(|f| match f {
            Effect::Emit(e) => Some(e.t),
            _ => None,
        }) {
            t = ev;
        }
        let mut outs = host.on_effects(&fx, t);
        host.deliver();
        settle(host, rx, &mut outs, t);
        // Claims that time out are handed on by the clock.
        if host.next_deadline().is_some() {
            std::thread::sleep(Duration::from_millis(50));
            outs.extend(host.tick(t + 3600.0));
            settle(host, rx, &mut outs, t);
        }
        for o in outs {
            describe(&mut timeline, t, &o, &session);
        }
    }
    Replayed {
        session,
        timeline,
        records,
        problems,
    }
}

/// What it shows in the sidebar.
fn write_sections(out: &mut String, host: &ExtHost) {
    out.push_str("\n## sections\n");
    let sections = host.ui.sections();
    if sections.is_empty() {
        out.push_str("(none)\n");
    }
    for s in sections {
        let _ = writeln!(
            out,
            "### {}{}",
            s.title,
            s.count.map(|c| format!(" ({c})")).unwrap_or_default()
        );
        for r in &s.rows {
            let _ = writeln!(
                out,
                "  {}{}",
                clean(&r.line.text()),
                r.id.as_ref()
                    .map(|i| format!("  [→ {}]", clean(i)))
                    .unwrap_or_default()
            );
        }
        if s.more > 0 {
            let _ = writeln!(out, "  … +{} more", s.more);
        }
        if s.error.is_some() {
            // (The UI points at `/status`; here the failures are in the timeline.)
            let _ = writeln!(out, "  (unavailable: the plugin failed, see the timeline)");
        }
    }
}

/// Its status-bar items.
fn write_status_items(out: &mut String, host: &ExtHost) {
    out.push_str("\n## status items\n");
    let items = host.ui.status_line_items(200);
    if items.is_empty() {
        out.push_str("(none)\n");
    }
    for l in items {
        let _ = writeln!(out, "  {}", clean(&l.text()));
    }
}

/// Its settings rows, the current choice marked.
fn write_settings(out: &mut String, host: &ExtHost) {
    out.push_str("\n## settings\n");
    let mut any_setting = false;
    for p in host.ui.settings() {
        if matches!(p.title.as_str(), "Sections" | "Cards") {
            continue;
        }
        for r in p.rows {
            any_setting = true;
            let choices: Vec<String> = r
                .choices
                .iter()
                .enumerate()
                .map(|(i, (_, l))| {
                    if i == r.current {
                        format!("[{l}]")
                    } else {
                        l.clone()
                    }
                })
                .collect();
            let _ = writeln!(out, "  {} › {}: {}", p.title, r.label, choices.join(" "));
        }
    }
    if !any_setting {
        out.push_str("(none)\n");
    }
}

/// Its cards, one design at a time, for every call each applies to.
fn write_cards(out: &mut String, host: &mut ExtHost, session: &Session) {
    out.push_str(&format!("\n## cards (width {WIDTH})\n"));
    let designs = host.ui.designs.clone();
    let mut any_card = false;
    for d in &designs {
        host.ui.apply(
            &trellis_ext_host::ui::RowTarget::Card(d.applies_to.key()),
            &d.key,
        );
        let calls: Vec<_> = session
            .ledger
            .calls()
            .filter(|c| trellis_core::ext::applies(&d.applies_to, c))
            .map(|c| (*c).clone())
            .collect();
        for _ in 0..3 {
            for c in &calls {
                host.ui.card(c, WIDTH as usize);
            }
            host.ui.send_requests();
            host.flush(Duration::from_secs(10));
        }
        for c in &calls {
            any_card = true;
            let _ = writeln!(
                out,
                "### {} — {} ({})",
                clean(&c.id),
                d.label,
                clean(&trellis_core::enrich::card_title(c))
            );
            match host.ui.card(c, WIDTH as usize) {
                Some(lines) => {
                    for l in &lines.call {
                        let _ = writeln!(out, "  {}", clean(&l.text()));
                    }
                    for l in &lines.result {
                        let _ = writeln!(out, "  │ {}", clean(&l.text()));
                    }
                }
                None => out.push_str("  (native card: no answer)\n"),
            }
        }
    }
    if !any_card {
        out.push_str("(none)\n");
    }
}

/// What its transforms make of every call's output.
fn write_transforms(out: &mut String, host: &mut ExtHost, session: &Session) {
    out.push_str("\n## transforms\n");
    let mut any_t = false;
    if !host.ui.transforms.is_empty() {
        let calls: Vec<_> = session.ledger.calls().map(|c| (*c).clone()).collect();
        let text_of = |c: &trellis_core::ToolCall| -> String {
            c.content
                .iter()
                .filter_map(|x| match x {
                    trellis_core::tool_call::ToolContent::Text { text } => {
                        Some(text.load().to_string())
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        for _ in 0..3 {
            for c in &calls {
                host.ui.transform(c, &text_of(c));
            }
            host.ui.send_requests();
            host.flush(Duration::from_secs(10));
        }
        for c in &calls {
            if let Some(t) = host.ui.transform(c, &text_of(c)) {
                any_t = true;
                let _ = writeln!(out, "### {}", clean(&c.id));
                for l in t.lines() {
                    let _ = writeln!(out, "  {}", clean(l));
                }
            }
        }
    }
    if !any_t {
        out.push_str("(none)\n");
    }
}

/// Its store.
fn write_store(out: &mut String, host: &ExtHost, name: &str) {
    out.push_str("\n## store\n");
    let store = host.store_dump(name);
    if store.is_empty() {
        out.push_str("(empty)\n");
    }
    for (k, v) in store {
        let _ = writeln!(out, "  {} = {}", clean(&k), clean(&v.to_string()));
    }
}

/// Its state in `/status`; returns whether it ended up disabled (or never loaded).
fn write_status(out: &mut String, host: &ExtHost, name: &str, problems: &[String]) -> bool {
    out.push_str("\n## status\n");
    let st = host.status();
    let mut failed = false;
    if let Some(e) = st.extensions.iter().find(|e| e.name == name) {
        let state = match &e.state {
            trellis_ext_host::ExtState::Ready => "ready".to_string(),
            trellis_ext_host::ExtState::Degraded(r) => format!("degraded — {}", clean(r)),
            trellis_ext_host::ExtState::Disabled(r) => {
                failed = true;
                format!("disabled — {}", clean(r))
            }
        };
        let _ = writeln!(out, "  state: {state}");
        let regs = if e.registrations.is_empty() {
            "none".to_string()
        } else {
            e.registrations.join(", ")
        };
        let _ = writeln!(out, "  registrations: {regs}");
        for f in &e.failures {
            let _ = writeln!(
                out,
                "  failed {} ×{}: {}",
                f.what,
                f.count,
                clean(&f.message)
            );
        }
        for (c, n) in &e.refused_calls {
            let _ = writeln!(out, "  refused call {c} ×{n} (capability not granted)");
        }
        for r in &e.rejections {
            let _ = writeln!(out, "  rejected {}: {:?} — {}", r.what, r.text, r.rule);
        }
        for n in &e.notes {
            let _ = writeln!(out, "  note: {}", clean(n));
        }
    } else {
        failed = true;
        for n in &st.notes {
            let _ = writeln!(out, "  {}", clean(n));
        }
    }
    for p in problems {
        let _ = writeln!(out, "  log: {}", clean(p));
    }
    failed
}

fn describe(out: &mut String, t: f64, o: &Out, session: &Session) {
    let title = |call_id: &str| {
        session
            .ledger
            .get(call_id)
            .map(|c| trellis_core::enrich::card_title(&c))
            .unwrap_or_default()
    };
    let request_title = |request_id: &str| {
        session
            .pending_permissions()
            .into_iter()
            .find(|(r, ..)| r == request_id)
            .map(|(_, c, _)| trellis_core::enrich::card_title(&session.ledger.at(c)))
            .or_else(|| {
                session.ledger.calls().find_map(|c| {
                    c.permissions
                        .iter()
                        .any(|p| p.request_id == request_id)
                        .then(|| trellis_core::enrich::card_title(&c))
                })
            })
            .unwrap_or_default()
    };
    let line = match o {
        Out::Decide {
            request_id,
            option_id,
            reason,
            ..
        } => format!(
            "permission {request_id} ({}): claimed, answered {option_id}{}",
            request_title(request_id),
            reason
                .as_deref()
                .map(|r| format!(" because: {r}"))
                .unwrap_or_default()
        ),
        Out::Dialog { request_id } => format!(
            "permission {request_id} ({}): not claimed (to the dialog)",
            request_title(request_id)
        ),
        Out::Elicit {
            request_id, answer, ..
        } => format!("question {request_id}: claimed, answered {answer:?}"),
        Out::Question { request_id } => {
            format!("question {request_id}: not claimed (to the dialog)")
        }
        Out::CallState { call_id, value, .. } => {
            format!("call state {call_id} ({}): {value}", title(call_id))
        }
        Out::Notify(text) => format!("notify: {text}"),
        Out::OpenInspector(c) => format!("open inspector: {c}"),
        Out::Notice(text) => format!("notice: {text}"),
        Out::Failure { text, .. } => format!("failure: {text}"),
        Out::Drive { action, .. } => format!(
            "drive: {}",
            serde_json::to_string(action).unwrap_or_default()
        ),
        Out::Repaint => return,
    };
    let _ = writeln!(out, "t={t:.3} {}", clean(&line));
}

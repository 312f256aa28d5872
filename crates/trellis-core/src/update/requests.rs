//! Requests and responses in both directions: turns, session setup and the client
//! services (fs, terminal) as seen on the wire. Permission requests are
//! [`super::permission`]'s.

use serde_json::value::RawValue;

use crate::action::Choice;
use crate::event::EventBody;
use crate::permission::{Decider, Outcome};
use crate::session::{AgentRequest, ClientRequest, Entry, MessageBlock};
use crate::tool_call::ToolKind;

use super::ctx::Ctx;
use super::permission::{permission_asked, permission_resolved};
use super::turn::end_turn;
use crate::wire::{self, ExitStatus, Message};

/// A request from the agent to the client.
pub(crate) fn agent_request(cx: &mut Ctx<'_>, seq: u64, msg: Message) {
    let (Some(id), Some(method)) = (msg.id.clone(), msg.method.as_deref()) else {
        return;
    };
    let req = match method {
        "session/request_permission" => match msg.params_as::<wire::PermissionParams>() {
            Ok(p) => permission_asked(cx, seq, &id, p),
            Err(e) => {
                malformed(cx, method, &e);
                AgentRequest::Other
            }
        },
        "fs/write_text_file" => match msg.params_as::<wire::WriteParams>() {
            Ok(p) => AgentRequest::Write {
                bytes: p.content.len(),
                // This machine's path (an agent elsewhere names shared files its way).
                path: cx.s.paths.to_local(&p.path).unwrap_or(p.path),
                content: p.content.into(),
                announced: false,
            },
            Err(_) => AgentRequest::Other,
        },
        "terminal/create" => match msg.params_as::<wire::TerminalCreateParams>() {
            Ok(p) => {
                let mut command = p.command;
                for a in p.args {
                    command.push(' ');
                    command.push_str(&a);
                }
                AgentRequest::TerminalCreate { command }
            }
            Err(_) => AgentRequest::Other,
        },
        "terminal/wait_for_exit" => match msg.params_as::<wire::TerminalIdParams>() {
            Ok(p) => AgentRequest::TerminalWait {
                terminal_id: p.terminal_id,
            },
            Err(_) => AgentRequest::Other,
        },
        "terminal/output" => match msg.params_as::<wire::TerminalIdParams>() {
            Ok(p) => AgentRequest::TerminalOutput {
                terminal_id: p.terminal_id,
            },
            Err(_) => AgentRequest::Other,
        },
        "elicitation/create" => super::elicit::asked(cx, &id, &msg),
        "terminal/release" => {
            if let Ok(p) = msg.params_as::<wire::TerminalIdParams>() {
                cx.s.terminals.entry(p.terminal_id).or_default().released = true;
            }
            AgentRequest::Other
        }
        _ => AgentRequest::Other,
    };
    cx.s.agent_requests.insert(id, req);
}

fn malformed(cx: &mut Ctx<'_>, what: &str, error: &str) {
    cx.malformed(what, format!("skipped a malformed {what}: {error}"));
}

/// The client's answer to an agent request.
pub(crate) fn client_response(cx: &mut Ctx<'_>, seq: u64, msg: Message) {
    let Some(id) = msg.id.as_deref() else { return };
    let Some(req) = cx.s.agent_requests.remove(id) else {
        cx.warn_once(
            format!("resp:{id}"),
            format!("client answered unknown agent request {id}"),
        );
        return;
    };
    let ok = msg.error.is_none();
    // A request Trellis refused (outside the roots, not a regular file, another session,
    // invalid params) or failed to serve: the user hears what the agent tried, once per
    // message. A file that does not exist (-32002) or a method Trellis lacks is routine.
    if let Some(e) = &msg.error
        && (e.code == -32602 || e.code == -32603)
        && !matches!(
            req,
            AgentRequest::Permission { .. } | AgentRequest::Elicitation { .. }
        )
    {
        cx.warn_once(
            format!("refused:{}", e.message),
            format!("refused the agent's request: {}", e.message),
        );
    }
    match req {
        AgentRequest::Permission { call, options, .. } => {
            let outcome = match (&msg.error, msg.result_as::<wire::PermissionResult>()) {
                (Some(e), _) => Outcome::Error {
                    message: e.message.clone(),
                },
                (None, Ok(r)) if r.outcome.outcome == "selected" => {
                    let option_id = r.outcome.option_id.unwrap_or_default();
                    let kind = options
                        .iter()
                        .find(|o| o.option_id == option_id)
                        .map(|o| o.kind);
                    Outcome::Selected { option_id, kind }
                }
                (None, Ok(_)) => Outcome::Cancelled,
                (None, Err(e)) => Outcome::Error {
                    message: format!("unreadable answer: {e}"),
                },
            };
            let decider = cx.s.deciders.remove(id).unwrap_or(Decider::Unrecorded);
            cx.s.ledger.push_frame(call, seq);
            permission_resolved(cx, id, call, outcome, decider);
        }
        AgentRequest::Elicitation { .. } => super::elicit::answered(cx, id, &msg),
        AgentRequest::Write {
            path,
            bytes,
            content,
            announced: false,
        } if ok => {
            // A recording without the client's `file_written` record: announce it now,
            // without the old content.
            let call_id = edit_call_for_path(cx, &path);
            cx.emit(EventBody::FileWritten {
                path,
                call_id,
                bytes,
                old: None,
                new: content,
            });
        }
        AgentRequest::TerminalCreate { command } if ok => {
            if let Ok(r) = msg.result_as::<wire::TerminalIdResult>() {
                let t = cx.t;
                let term = cx.s.terminals.entry(r.terminal_id.clone()).or_default();
                term.command = command;
                term.started = Some(t);
                let call = term.call;
                super::limit::terminal(cx, &r.terminal_id, call);
            }
        }
        AgentRequest::TerminalWait { terminal_id } if ok => {
            if let Ok(status) = msg.result_as::<ExitStatus>() {
                terminal_exited(cx, terminal_id, status);
            }
        }
        AgentRequest::TerminalOutput { terminal_id } if ok => {
            #[derive(serde::Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct Out {
                #[serde(default)]
                output: String,
                #[serde(default)]
                exit_status: Option<ExitStatus>,
            }
            if let Ok(out) = msg.result_as::<Out>() {
                let term = cx.s.terminals.entry(terminal_id.clone()).or_default();
                // Output recorded live is authoritative; a recording without it uses this.
                if term.output.len() < out.output.len() {
                    term.output = out.output;
                }
                if let Some(status) = out.exit_status {
                    terminal_exited(cx, terminal_id, status);
                }
            }
        }
        _ => {}
    }
}

/// The edit call a write belongs to: the latest edit call naming `path`, preferring one
/// that is still running.
pub(crate) fn edit_call_for_path(cx: &Ctx<'_>, path: &str) -> Option<String> {
    let names = |c: &&crate::tool_call::ToolCall| {
        c.kind == ToolKind::Edit && crate::enrich::paths_of(c).iter().any(|p| p == path)
    };
    // The calls in memory: every one still running, and the recent ones (a write for an
    // edit call that finished long ago and left memory is not attributed to it).
    cx.s.ledger
        .recent()
        .filter(names)
        .find(|c| !c.status.is_terminal())
        .or_else(|| cx.s.ledger.recent().find(names))
        .map(|c| c.id.clone())
}

/// Records a terminal's exit once and emits `terminal_exited`.
pub(crate) fn terminal_exited(cx: &mut Ctx<'_>, terminal_id: String, status: ExitStatus) {
    let term = cx.s.terminals.entry(terminal_id.clone()).or_default();
    if term.exit.is_some() {
        return;
    }
    term.exit = Some(status.clone());
    let (index, started) = (term.call, term.started);
    let call_id = index.map(|i| cx.s.ledger.at(i).id.clone());
    let body = EventBody::TerminalExited {
        terminal_id,
        call_id,
        started,
        status,
    };
    match index {
        Some(i) => cx.emit_about(i, body),
        None => cx.emit(body),
    }
}

/// A request from the client to the agent.
pub(crate) fn client_request(cx: &mut Ctx<'_>, msg: Message) {
    let (Some(id), Some(method)) = (msg.id.clone(), msg.method.as_deref()) else {
        return;
    };
    let req = match method {
        "initialize" => {
            let params = msg.params.as_deref().map_or("{}", |p| p.get());
            cx.s.elicitation_offered = Some(crate::elicitation::Offered::from_initialize(params));
            ClientRequest::Initialize
        }
        "session/new" => ClientRequest::NewSession {
            cwd: msg
                .params_as::<wire::NewSessionParams>()
                .ok()
                .and_then(|p| p.cwd),
        },
        "session/load" | "session/resume" => {
            let p = msg.params_as::<wire::NewSessionParams>().ok();
            ClientRequest::LoadSession {
                cwd: p.as_ref().and_then(|p| p.cwd.clone()),
                session_id: p.and_then(|p| p.session_id),
                resume: method == "session/resume",
            }
        }
        "session/set_mode" => ClientRequest::SetMode(
            msg.params_as::<wire::SetModeParams>()
                .map(|p| p.mode_id)
                .unwrap_or_default(),
        ),
        "session/set_config_option" => ClientRequest::SetConfigOption,
        "session/list" => {
            let p = msg.params_as::<serde_json::Value>().unwrap_or_default();
            ClientRequest::ListSessions {
                cwd: p.get("cwd").and_then(|c| c.as_str()).map(str::to_string),
                next_page: p.get("cursor").is_some_and(|c| c.is_string()),
            }
        }
        "session/prompt" => {
            let text = msg
                .params_as::<wire::PromptParams>()
                .map(|p| prompt_text(&p.prompt))
                .unwrap_or_default();
            cx.s.turn += 1;
            cx.s.turn_open = true;
            cx.s.turn_started.push(cx.t);
            let turn = cx.s.turn;
            cx.s.transcript.push(Entry::Message(Box::new(MessageBlock {
                role: crate::event::Role::User,
                message_id: None,
                text: text.clone(),
                turn,
            })));
            cx.emit(EventBody::TurnStarted { turn, prompt: text });
            ClientRequest::Prompt
        }
        _ => ClientRequest::Other,
    };
    cx.s.client_requests.insert(id, req);
}

/// Text of a prompt: text blocks joined, links and resources as `@name`.
fn prompt_text(blocks: &[Box<RawValue>]) -> String {
    let mut out = String::new();
    for b in blocks {
        if let Ok(tb) = serde_json::from_str::<wire::TextBlock>(b.get()) {
            let piece = match (tb.ty.as_str(), tb.text, tb.name, tb.uri) {
                ("text", Some(text), _, _) => text,
                (_, _, Some(name), _) => format!("@{name}"),
                (_, _, _, Some(uri)) => format!("@{uri}"),
                _ => continue,
            };
            // A link the text already names (`@path` typed by the user) is not repeated.
            if piece.starts_with('@')
                && out
                    .split_whitespace()
                    .any(|w| w.trim_end_matches([',', '.']) == piece)
            {
                continue;
            }
            if !out.is_empty() && !out.ends_with(char::is_whitespace) {
                out.push(' ');
            }
            out.push_str(&piece);
        }
    }
    out
}

/// The agent's answer to a client request.
pub(crate) fn agent_response(cx: &mut Ctx<'_>, msg: Message) {
    let Some(id) = msg.id.as_deref() else { return };
    let Some(req) = cx.s.client_requests.remove(id) else {
        cx.warn_once(
            format!("aresp:{id}"),
            format!("agent answered unknown request {id}"),
        );
        return;
    };
    let loaded = match &req {
        ClientRequest::LoadSession { session_id, .. } => session_id.clone(),
        _ => None,
    };
    if matches!(
        req,
        ClientRequest::SetMode(_) | ClientRequest::SetConfigOption
    ) {
        cx.s.settings_answered += 1;
        if msg.error.is_some() {
            cx.s.settings_refused += 1;
        }
    }
    if let Some(err) = &msg.error {
        let what = match req {
            ClientRequest::Initialize => "initialize",
            ClientRequest::NewSession { .. } => "session/new",
            ClientRequest::LoadSession { resume: false, .. } => "session/load",
            ClientRequest::LoadSession { resume: true, .. } => "session/resume",
            ClientRequest::Prompt => "session/prompt",
            ClientRequest::SetMode(_) => "session/set_mode",
            ClientRequest::SetConfigOption => "session/set_config_option",
            ClientRequest::ListSessions { .. } => "session/list",
            ClientRequest::Other => "request",
        };
        cx.emit(EventBody::Warning {
            message: format!("agent refused {what}: {err}"),
        });
        if req == ClientRequest::Prompt {
            end_turn(cx, "protocol_error".into());
        }
        return;
    }
    match req {
        ClientRequest::Initialize => {
            if let Ok(r) = msg.result_as::<wire::InitializeResult>() {
                cx.s.agent = r.agent_info.unwrap_or_default();
                cx.s.agent_capabilities = r.agent_capabilities;
                cx.s.auth_methods = r.auth_methods;
            }
        }
        ClientRequest::NewSession { cwd } | ClientRequest::LoadSession { cwd, .. } => {
            // The session's directory here (the agent was sent its own path for it).
            let cwd = cwd.map(|c| cx.s.paths.to_local(&c).unwrap_or(c));
            let r = msg
                .result_as::<wire::NewSessionResult>()
                .unwrap_or_default();
            if let Some(why) = cx.s.agent_exited.take() {
                // (An agent elsewhere dialed again: the connection's mark says so.)
                if cx.s.remote.is_none() {
                    cx.notice(format!("agent restarted (it had ended: {why})"));
                }
                cx.s.ledger.reconnected();
            }
            if let Some(id) = r.session_id.or(loaded) {
                cx.s.id = Some(id.into());
            }
            if cwd.is_some() {
                cx.s.cwd = cwd;
            }
            if let Some(modes) = r.modes {
                cx.s.mode = Some(modes.current_mode_id);
                cx.s.modes = crate::session_config::parse_modes(&modes.available_modes);
            }
            let options = r
                .config_options
                .as_ref()
                .map(crate::session_config::parse_options);
            let load_session =
                cx.s.agent_capabilities
                    .as_ref()
                    .and_then(|c| c.get("loadSession"))
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false);
            cx.emit(EventBody::SessionStarted {
                agent: cx.s.agent.clone(),
                cwd: cx.s.cwd.clone(),
                load_session,
                mode: cx.s.mode.clone(),
                remote: cx.s.remote.clone(),
            });
            if let Some(options) = options {
                set_config(cx, options);
            }
        }
        ClientRequest::SetMode(mode) => {
            if !mode.is_empty() && cx.s.mode.as_deref() != Some(mode.as_str()) {
                cx.s.settings_changed_at = cx.t;
                cx.s.mode = Some(mode.clone());
                cx.emit(EventBody::ModeChanged { mode });
            }
        }
        ClientRequest::SetConfigOption => {
            if let Ok(r) = msg.result_as::<wire::ConfigOptionsResult>()
                && let Some(v) = &r.config_options
            {
                set_config(cx, crate::session_config::parse_options(v));
            }
        }
        ClientRequest::Prompt => {
            let stop = msg
                .result_as::<wire::PromptResult>()
                .map(|r| r.stop_reason)
                .unwrap_or_default();
            let stop = if stop.is_empty() {
                "end_turn".to_string()
            } else {
                stop
            };
            end_turn(cx, stop);
        }
        ClientRequest::ListSessions { cwd, next_page } => {
            let page = msg
                .result_as::<serde_json::Value>()
                .map(|v| crate::agent_sessions::parse(&v))
                .unwrap_or_default();
            let listed = match (next_page, cx.s.agent_sessions.take()) {
                (true, Some(mut all)) => {
                    all.join(page);
                    all
                }
                _ => page,
            };
            // The next page, while the agent offers one and the bounds allow.
            if let Some(cursor) = listed.ask_next() {
                cx.fx.push(crate::Effect::ListSessions {
                    cwd,
                    cursor: cursor.to_string(),
                });
            }
            cx.emit(EventBody::AgentSessionsListed {
                count: listed.sessions.len(),
                more: listed.more,
            });
            cx.s.agent_sessions = Some(listed);
        }
        ClientRequest::Other => {}
    }
}

/// The client wrote the file of agent request `request_id` and has not answered yet:
/// `file_written` goes out now, before the response.
pub(crate) fn file_written(cx: &mut Ctx<'_>, request_id: &str, old: Option<String>) {
    let Some(AgentRequest::Write {
        path,
        bytes,
        content,
        announced,
    }) = cx.s.agent_requests.get_mut(request_id)
    else {
        return;
    };
    if *announced {
        return;
    }
    *announced = true;
    let (path, bytes, new) = (path.clone(), *bytes, content.clone());
    let call_id = edit_call_for_path(cx, &path);
    cx.emit(EventBody::FileWritten {
        path,
        call_id,
        bytes,
        old: old.map(Into::into),
        new,
    });
}

/// The agent's config options are now `options`: kept, and told when they changed.
pub(crate) fn set_config(cx: &mut Ctx<'_>, options: Vec<crate::session_config::ConfigOption>) {
    if cx.s.config != options {
        cx.s.settings_changed_at = cx.t;
        cx.s.config = options.clone();
        cx.emit(EventBody::ConfigChanged { options });
    }
}

/// `$/cancel_request` from the agent: it no longer wants the answer to one of its
/// requests. An open permission request is answered now with the `cancelled` outcome
/// (ACP's cancelled marker; the dialog, or the extension holding it, lets go); a request
/// already answered, or not Trellis's to cancel (a file or terminal request is served at
/// once), is left as it is.
pub(crate) fn agent_cancelled(cx: &mut Ctx<'_>, msg: &Message) {
    let id = msg
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok())
        .and_then(|v| v.get("requestId").map(serde_json::Value::to_string))
        .and_then(|raw| crate::wire::canonical_id(&raw).ok().flatten());
    let Some(id) = id else {
        cx.malformed(
            "$/cancel_request",
            "skipped a $/cancel_request without a request id".into(),
        );
        return;
    };
    if matches!(
        cx.s.agent_requests.get(&id),
        Some(AgentRequest::Permission { .. })
    ) {
        // Already being answered: that answer stands (answered exactly once).
        let _ = super::turn::decide(
            cx,
            &id,
            Choice::Cancelled,
            Decider::Client("the agent, which withdrew it".into()),
            None,
        );
    }
    if matches!(
        cx.s.agent_requests.get(&id),
        Some(AgentRequest::Elicitation { answering: false })
    ) {
        let _ = super::elicit::answer(
            cx,
            &id,
            crate::elicitation::ElicitAnswer::Cancel,
            Decider::Client("the agent, which withdrew it".into()),
        );
    }
}

//! `trellis ls`, `send`, `cancel`, `stop`, `approve`: the running UIs of this user, reached
//! through their sockets. Everything they print came from agents and is made harmless.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use trellis_hub::client::{Client, connect_all, list_all};
use trellis_hub::wire::{Body, Op, SessionInfo};

use crate::output::safe;

/// A session as these commands name it: `HUB:KEY`, or `KEY` when only one hub has it, or a
/// prefix of its ACP session id.
pub(crate) fn resolve(spec: &str) -> anyhow::Result<(String, u32)> {
    let dir = trellis_hub::place::runtime_dir()?;
    let all = list_all(&dir, "trellis");
    let mut hits: Vec<(String, u32)> = Vec::new();
    for (hub, sessions) in &all {
        for s in sessions.iter().flatten() {
            let named = format!("{hub}:{}", s.key);
            let by_key = spec.parse::<u32>().is_ok_and(|k| k == s.key);
            let by_acp =
                spec.len() >= 4 && s.acp_id.as_deref().is_some_and(|a| a.starts_with(spec));
            if spec == named || by_key || by_acp {
                hits.push((hub.clone(), s.key));
            }
        }
    }
    match hits.len() {
        0 => anyhow::bail!("no running session {spec} (see trellis ls)"),
        1 => Ok(hits.remove(0)),
        _ => anyhow::bail!(
            "{spec} names {} sessions: {}; use HUB:KEY",
            hits.len(),
            hits.iter()
                .map(|(h, k)| format!("{h}:{k}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub(crate) fn client(hub: &str, name: &str) -> anyhow::Result<Client> {
    let dir = trellis_hub::place::runtime_dir()?;
    let files = trellis_hub::place::HubFiles::new(&dir, hub);
    Ok(Client::connect(&files, name)?)
}

/// A random operation id, so a retry of this command is not carried out twice.
pub(crate) fn operation_id() -> String {
    let mut b = [0u8; 8];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn done(body: Body) -> anyhow::Result<ExitCode> {
    match body {
        Body::Done { said } => {
            out!("{}", safe(&said));
            Ok(ExitCode::SUCCESS)
        }
        Body::Error { code, message } => {
            say!("trellis: {}: {}", safe(&code), safe(&message));
            Ok(ExitCode::from(1))
        }
        _ => anyhow::bail!("the hub answered something else"),
    }
}

/// `trellis ls`: every session of every running Trellis of this user, those that need
/// you first.
pub fn ls(json: bool) -> anyhow::Result<ExitCode> {
    let dir = trellis_hub::place::runtime_dir()?;
    let mut rows: Vec<(String, SessionInfo)> = Vec::new();
    // A hub that could not be asked is said, and the exit status says the list is short.
    let mut unasked = 0;
    for (hub, r) in list_all(&dir, "trellis ls") {
        match r {
            Ok(sessions) => rows.extend(sessions.into_iter().map(|s| (hub.clone(), s))),
            Err(e) => {
                unasked += 1;
                say!("trellis: hub {}: {}", safe(&hub), safe(&e));
            }
        }
    }
    let status = if unasked == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    rows.sort_by_key(|(h, s)| (s.rank, std::cmp::Reverse(s.for_s), h.clone(), s.key));
    if json {
        for (hub, s) in &rows {
            let mut v = serde_json::to_value(s)?;
            v["hub"] = serde_json::json!(hub);
            out!("{v}");
        }
        return Ok(status);
    }
    if rows.is_empty() && unasked == 0 {
        out!("no running sessions");
    }
    for (hub, s) in &rows {
        let worktree = s
            .worktree
            .as_deref()
            .map(|w| format!(" · worktree {}", safe(w)))
            .unwrap_or_default();
        out!(
            "{:<16} {:<11} {:<10} {}  {}",
            format!("{hub}:{}", s.key),
            safe(&s.state),
            safe(&s.agent),
            safe(&trellis_text::clip(&s.title, 50)),
            safe(&s.cwd)
        );
        if !s.policy.is_empty() {
            out!(
                "{:<16} permission policy: {}{worktree}",
                "",
                safe(&s.policy)
            );
        }
        for p in &s.pending {
            let claimed = p
                .claimed_by
                .as_deref()
                .map(|who| format!(" ({} is answering it)", safe(who)))
                .unwrap_or_default();
            out!(
                "{:<16} waiting: {} — {}{claimed}",
                "",
                safe(&p.kind),
                safe(&p.subject)
            );
        }
    }
    Ok(status)
}

pub fn send(session: &str, text: &str) -> anyhow::Result<ExitCode> {
    let (hub, key) = resolve(session)?;
    let body = client(&hub, "trellis send")?.call(
        Op::Send {
            session: key,
            text: text.to_string(),
            files: Vec::new(),
        },
        Some(operation_id()),
    )?;
    done(body)
}

pub fn cancel(session: &str) -> anyhow::Result<ExitCode> {
    let (hub, key) = resolve(session)?;
    done(client(&hub, "trellis cancel")?.call(Op::Cancel { session: key }, Some(operation_id()))?)
}

pub fn stop(session: &str) -> anyhow::Result<ExitCode> {
    let (hub, key) = resolve(session)?;
    let answer = client(&hub, "trellis stop")?.call(
        Op::Stop {
            session: key,
            reason: None,
        },
        Some(operation_id()),
    );
    match answer {
        // Named as the user names it: HUB:KEY.
        Ok(Body::Done { .. }) => {
            out!("session {}:{key} stopped", safe(&hub));
            Ok(ExitCode::SUCCESS)
        }
        Ok(body) => done(body),
        // A UI whose last session this was ends with it, maybe before its answer is out:
        // the session being gone is the answer.
        Err(e) if gone(&hub, key) => {
            let _ = e;
            out!("session {}:{key} stopped", safe(&hub));
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether session `key` of hub `hub` is no longer running (its hub gone, or it is not
/// in the hub's list).
pub(crate) fn gone(hub: &str, key: u32) -> bool {
    let Ok(mut c) = client(hub, "trellis stop") else {
        return true;
    };
    match c.call(Op::List, None) {
        Ok(Body::Sessions { sessions, .. }) => sessions.iter().all(|s| s.key != key),
        _ => true,
    }
}

/// `trellis approve`: the pending permission requests of every running session, oldest
/// first, answered one at a time from this terminal (a number answers once, `s` skips,
/// `q` quits); with `--wait`, it waits for more until stopped.
pub fn approve(wait: bool) -> anyhow::Result<ExitCode> {
    let dir = trellis_hub::place::runtime_dir()?;
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut skipped: std::collections::HashSet<(String, u32, String)> = Default::default();
    loop {
        let mut pending = Vec::new();
        for mut c in connect_all(&dir, "trellis approve") {
            if let Ok(Body::Sessions { sessions, .. }) = c.call(Op::List, None) {
                for s in sessions {
                    for p in s.pending.iter().filter(|p| p.kind == "permission") {
                        let id = (c.files.name.clone(), s.key, p.request_id.clone());
                        if !skipped.contains(&id) {
                            pending.push((id, s.clone(), p.clone()));
                        }
                    }
                }
            }
        }
        let Some(((hub, key, request_id), s, p)) = pending.into_iter().next() else {
            if !wait {
                out!("nothing waits for an answer");
                return Ok(ExitCode::SUCCESS);
            }
            std::thread::sleep(std::time::Duration::from_secs(1));
            continue;
        };
        // While the human here looks at it, nobody else answers it: a claim, held on
        // this connection (it goes if this command dies) and renewed by the answer.
        let mut c = client(&hub, "trellis approve")?;
        let claim = match c.call(
            Op::Claim {
                session: key,
                request_id: request_id.clone(),
                lease_s: Some(300),
            },
            None,
        )? {
            Body::Claimed { claim, .. } => claim,
            Body::Error { message, .. } => {
                out!("{hub}:{key} {}", safe(&message));
                skipped.insert((hub, key, request_id));
                continue;
            }
            _ => anyhow::bail!("the hub answered a claim with something else"),
        };
        ask(&hub, key, &s, &p);
        std::io::stdout().flush()?;
        let Some(Ok(answer)) = lines.next() else {
            return Ok(ExitCode::SUCCESS);
        };
        match answer.trim() {
            "q" => return Ok(ExitCode::SUCCESS),
            "s" | "" => {
                release(&mut c, key, &request_id, claim);
                skipped.insert((hub, key, request_id));
            }
            "r" if p.reject_once.is_some() => {
                // One line the agent is told as the session's next message.
                let Some(reason) = ask_reason(&mut lines)? else {
                    return Ok(ExitCode::SUCCESS);
                };
                if reason.trim().is_empty() {
                    release(&mut c, key, &request_id, claim);
                    continue;
                }
                let body = c.call(
                    Op::Decide {
                        session: key,
                        request_id,
                        option_id: p.reject_once.clone().unwrap_or_default(),
                        claim: Some(claim),
                        always: None,
                        reason: Some(reason.trim().to_string()),
                    },
                    Some(operation_id()),
                )?;
                let _ = done(body)?;
            }
            n => match pick(n, &p) {
                Some((option_id, is_always)) => {
                    // "Always" saves a rule: where it goes is asked (Enter goes back).
                    let always = if is_always {
                        out_part!(
                            "  the rule goes to: s(ession) p(roject) g(lobal), or Enter to go back > "
                        );
                        std::io::stdout().flush()?;
                        let Some(Ok(place)) = lines.next() else {
                            return Ok(ExitCode::SUCCESS);
                        };
                        match place.trim() {
                            "s" | "session" => Some("session".to_string()),
                            "p" | "project" => Some("project".to_string()),
                            "g" | "global" => Some("global".to_string()),
                            _ => {
                                release(&mut c, key, &request_id, claim);
                                continue;
                            }
                        }
                    } else {
                        None
                    };
                    let body = c.call(
                        Op::Decide {
                            session: key,
                            request_id,
                            option_id,
                            claim: Some(claim),
                            always,
                            reason: None,
                        },
                        Some(operation_id()),
                    )?;
                    let _ = done(body)?;
                }
                None => out!(
                    "  a number from 1 to {}{}{}, s or q",
                    p.options.len(),
                    if p.always.is_empty() { "" } else { ", aN" },
                    if p.reject_once.is_some() { ", r" } else { "" }
                ),
            },
        }
    }
}

/// A pending request as `trellis approve` asks it: where, what, its one-time choices,
/// its "always" choices with their rules, and the reason key when it takes one.
fn ask(
    hub: &str,
    key: u32,
    s: &trellis_hub::wire::SessionInfo,
    p: &trellis_hub::wire::PendingInfo,
) {
    out!(
        "{hub}:{key} {} in {}: {}",
        safe(&s.agent),
        safe(&s.cwd),
        safe(&p.subject)
    );
    let choices: Vec<String> = p
        .options
        .iter()
        .enumerate()
        .map(|(i, (_, name))| format!("{} {}", i + 1, safe(name)))
        .collect();
    // "Always" saves a rule: shown with what it would match, taken as `aN`.
    for (i, a) in p.always.iter().enumerate() {
        out!(
            "  a{} {} — saves the rule `{}` (matches {} call(s) of this session so far)",
            i + 1,
            safe(&a.name),
            safe(&a.rule),
            a.matches
        );
    }
    let reasoned = if p.reject_once.is_some() {
        " · r reject with a reason"
    } else {
        ""
    };
    out_part!("  {}{reasoned} · s skip · q quit > ", choices.join("  "));
}

/// A reject's reason, read from `lines` (asked again while it is too long); none: the
/// input ended.
fn ask_reason(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
) -> anyhow::Result<Option<String>> {
    let limit = trellis_core::permission::REASON_LIMIT;
    loop {
        out_part!("  your reason (the agent reads it; Enter on nothing goes back) > ");
        std::io::stdout().flush()?;
        let Some(Ok(reason)) = lines.next() else {
            return Ok(None);
        };
        let n = reason.trim().chars().count();
        if n <= limit {
            return Ok(Some(reason));
        }
        out!("  at most {limit} characters (yours: {n}): shorter, please");
    }
}

/// The choice `answer` names: a one-time one by its number, an "always" one as `aN`
/// (true).
fn pick(answer: &str, p: &trellis_hub::wire::PendingInfo) -> Option<(String, bool)> {
    if let Some(n) = answer.strip_prefix('a') {
        let a = p.always.get(n.parse::<usize>().ok()?.wrapping_sub(1))?;
        return Some((a.option_id.clone(), true));
    }
    let (option_id, _) = p
        .options
        .get(answer.parse::<usize>().ok()?.wrapping_sub(1))?;
    Some((option_id.clone(), false))
}

/// Lets go of the claim on a request shown and not answered.
fn release(c: &mut Client, session: u32, request_id: &str, claim: String) {
    let _ = c.call(
        Op::Release {
            session,
            request_id: request_id.to_string(),
            claim,
        },
        None,
    );
}

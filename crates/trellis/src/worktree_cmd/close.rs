//! Before an ending that changes or removes a worktree's tree: the sessions running in it,
//! found through every hub this user runs, are closed as closing them there would, and the
//! ending waits (bounded) for them to let go; a busy one refuses the ending, naming it.

use crate::output::safe;

/// How long an ending waits for the sessions it closed to let go of the worktree.
const LET_GO: std::time::Duration = std::time::Duration::from_secs(15);

/// Before an ending that changes or removes the tree: the sessions running in the worktree
/// are closed through the Trellis that runs them (a UI or a hub), as closing them there
/// would; one that is working or waiting for an answer is not — the ending is refused,
/// naming it. A session no running Trellis answers for (a headless `trellis run`) refuses
/// the ending too, naming its process.
pub(super) fn close_sessions(found: &trellis_worktree::Found, action: &str) -> anyhow::Result<()> {
    // What would refuse refuses now, with every session still running.
    trellis_worktree::plan::ending(found, action)?;
    if trellis_worktree::lease::holders(found).is_empty() {
        return Ok(());
    }
    let tree = std::fs::canonicalize(&found.record.path).unwrap_or(found.record.path.clone());
    let client = format!("trellis worktree {action}");
    let dir = trellis_hub::place::runtime_dir()?;
    let mut inside = Vec::new();
    for (hub, sessions) in trellis_hub::client::list_all(&dir, &client) {
        for s in sessions.into_iter().flatten() {
            let cwd = std::fs::canonicalize(&s.cwd).unwrap_or_else(|_| s.cwd.clone().into());
            if cwd.starts_with(&tree) {
                inside.push((hub.clone(), s));
            }
        }
    }
    let busy: Vec<String> = inside
        .iter()
        .filter(|(_, s)| {
            matches!(
                s.state.as_str(),
                "working" | "starting" | "permission" | "question" | "login"
            )
        })
        .map(|(h, s)| format!("{h}:{} ({}, {})", s.key, s.agent, s.state))
        .collect();
    if !busy.is_empty() {
        // What the hubs said (agents' names, states) is text from outside.
        anyhow::bail!(
            "worktree {label}: {} runs in it and is busy: let its turn end (or stop it: trellis stop {}), then {action} again; nothing was changed",
            safe(&busy.join(", ")),
            inside
                .iter()
                .map(|(h, s)| format!("{h}:{}", s.key))
                .next()
                .unwrap_or_default(),
            label = safe(&found.record.label)
        );
    }
    for (hub, s) in &inside {
        let answer = crate::hub_cmd::client(hub, &client)?.call(
            trellis_hub::wire::Op::Stop {
                session: s.key,
                reason: Some(format!(
                    "worktree {} is being ended ({action})",
                    found.record.label
                )),
            },
            Some(crate::hub_cmd::operation_id()),
        );
        let body = match answer {
            Ok(body) => body,
            // A UI whose last session this was ends with it, maybe before its answer is
            // out: the session being gone is the answer.
            Err(_) if crate::hub_cmd::gone(hub, s.key) => trellis_hub::wire::Body::Done {
                said: String::new(),
            },
            Err(e) => return Err(e.into()),
        };
        match body {
            trellis_hub::wire::Body::Done { .. } => out!(
                "closed session {hub}:{} ({}), which ran in worktree {}",
                s.key,
                safe(&s.agent),
                safe(&found.record.label)
            ),
            trellis_hub::wire::Body::Error { message, .. } => anyhow::bail!(
                "session {hub}:{} runs in worktree {} and could not be closed: {}; nothing was changed",
                s.key,
                safe(&found.record.label),
                safe(&message)
            ),
            _ => anyhow::bail!("hub {hub} answered something else"),
        }
    }
    let until = std::time::Instant::now() + LET_GO;
    loop {
        let holders = trellis_worktree::lease::holders(found);
        if holders.is_empty() {
            return Ok(());
        }
        if std::time::Instant::now() > until || inside.is_empty() {
            return Err(trellis_worktree::Error::InUse {
                label: found.record.label.clone(),
                holders,
            }
            .into());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

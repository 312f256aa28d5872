//! `/fork` and `/agent` carried out: the new session opened by the deck's opener beside
//! the one it came from, brought to the front. A fork's history is the turns before it
//! and its agent gets them as a transcript; a hand-off's agent gets nothing until the user
//! sends the brief waiting in its prompt.

use crate::deck::{Deck, ForkFrom, NewSession};
use crate::fork::ForkAsk;

/// Opens what the session in front asked for; a failure is said in that session.
pub(super) fn open(deck: &mut Deck, ask: ForkAsk) {
    let i = deck.sessions.front;
    let app = &deck.sessions.slots[i].app;
    let Some(log) = app.log_path.clone() else {
        deck.sessions.slots[i].app.message = Some("this session has no log to fork from".into());
        return;
    };
    let Some(agent) = ask.agent.clone().or_else(|| app.agent_arg.clone()) else {
        deck.sessions.slots[i].app.message =
            Some("this session cannot start its agent again".into());
        return;
    };
    let brief = ask
        .handoff
        .then(|| trellis_view::handoff::brief(&app.driver.session, &app.agent));
    let req = NewSession {
        agent: agent.clone(),
        cwd: app.driver.session.cwd.clone().map(std::path::PathBuf::from),
        worktree: ask.worktree,
        worktree_label: None,
        launched_in: None,
        fork: Some(ForkFrom {
            session: log.to_string_lossy().into_owned(),
            at: ask.at,
            transcript: !ask.handoff,
        }),
    };
    let Some(opener) = deck.sessions.opener.as_mut() else {
        deck.sessions.slots[i].app.message = Some("this deck starts no sessions".into());
        return;
    };
    match opener(req) {
        Ok(mut opened) => {
            if let Some(text) = brief {
                // Shown for editing: nothing reaches the agent before Enter. The cursor at
                // its start, so that its first rows show (the prompt shows the rows around
                // the cursor).
                opened.app.prompt.cursor = 0;
                opened.app.prompt.text = text;
                let said =
                    "a brief of the session you left is in the prompt: edit it, Enter sends it";
                opened.app.message = Some(match opened.app.message.take() {
                    Some(m) => format!("{said} · {m}"),
                    None => said.into(),
                });
            }
            if let Some(said) = ask.said {
                opened.app.message = Some(match opened.app.message.take() {
                    Some(m) => format!("{said} · {m}"),
                    None => said,
                });
            }
            if let Some(text) = ask.prompt {
                // Held by the connection until the agent is set up.
                opened.app.driver.prompt(text, Vec::new());
            }
            deck.add(opened, agent);
            let keys = deck.keys.listed();
            let front = deck.sessions.front;
            deck.sessions.slots[front].app.session_keys = keys;
        }
        Err(e) => deck.sessions.slots[i].app.message = Some(format!("cannot fork: {e}")),
    }
}

//! The deck as the hub's socket sees it: its sessions listed, a permission request
//! answered once by someone attached.

use trellis_core::attention::Blocked;

use super::{Deck, NewSession, SessionKey, SessionNote};

impl Deck {
    /// Every session as a hub's client sees it.
    pub fn session_infos(&self) -> Vec<trellis_hub::wire::SessionInfo> {
        let pending = self.pending();
        self.slots
            .iter()
            .map(|s| {
                let session = &s.app.driver.session;
                trellis_hub::wire::SessionInfo {
                    key: s.key,
                    acp_id: session.id.as_deref().map(str::to_string),
                    agent: s.app.agent.clone(),
                    state: s.attention.word().into(),
                    rank: s.attention.rank(),
                    title: s.title(),
                    cwd: session.cwd.clone().unwrap_or_default(),
                    source: s.source.clone(),
                    branch: s.branch.clone(),
                    for_s: s.since.elapsed().as_secs(),
                    pending: pending
                        .iter()
                        .filter(|p| p.key == s.key)
                        .map(|p| trellis_hub::wire::PendingInfo {
                            request_id: p.request_id.clone(),
                            kind: match p.kind {
                                Blocked::Question => "question".into(),
                                _ => "permission".into(),
                            },
                            subject: p.subject.clone(),
                            options: p.options.clone(),
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// A permission request answered through the socket by `who`: once, one-time choices
    /// only; someone who comes second is told who answered.
    pub fn decide_attached(
        &mut self,
        key: SessionKey,
        request_id: &str,
        option_id: &str,
        who: String,
    ) -> Result<Vec<SessionNote>, (&'static str, String)> {
        use trellis_core::permission::record::OptionKind;
        let i = self
            .index_of(key)
            .ok_or(("not_found", format!("no session {key}")))?;
        let s = &self.slots[i].app.driver.session;
        let Some((_, _, options)) = s
            .pending_permissions()
            .into_iter()
            .find(|(r, ..)| r == request_id)
        else {
            return Err(match s.answered_by(request_id) {
                Some(by) => ("answered", format!("already answered by {by}")),
                None => ("not_found", format!("no pending request {request_id}")),
            });
        };
        match options.iter().find(|o| o.option_id == option_id) {
            None => Err(("bad_request", format!("no choice {option_id}"))),
            Some(o) if matches!(o.kind, OptionKind::AllowAlways | OptionKind::RejectAlways) => {
                Err((
                    "refused",
                    "\"always\" is chosen in the session's own dialog, where the rule's scope shows"
                        .into(),
                ))
            }
            Some(_) => {
                let slot = &mut self.slots[i];
                let mut notes = Vec::new();
                slot.app.driver.decide(
                    request_id.to_string(),
                    trellis_core::Choice::Option(option_id.to_string()),
                    trellis_core::Decider::Attached(who),
                    &mut notes,
                );
                let numbered = self.slots[i].number(notes);
                self.refresh(i);
                Ok(numbered)
            }
        }
    }

    /// An agent's question answered through the socket by `who`, once (the reducer
    /// checks the content against the question's form; refused content leaves it open).
    pub fn answer_attached(
        &mut self,
        key: SessionKey,
        request_id: &str,
        answer: trellis_hub::wire::Answer,
        who: String,
    ) -> Result<Vec<SessionNote>, (&'static str, String)> {
        use trellis_hub::wire::Answer;
        let i = self
            .index_of(key)
            .ok_or(("not_found", format!("no session {key}")))?;
        let s = &self.slots[i].app.driver.session;
        if !s.pending_elicitations().any(|e| e.request_id == request_id) {
            return Err(match s.answered_by(request_id) {
                Some(by) => ("answered", format!("already answered by {by}")),
                None => ("not_found", format!("no pending question {request_id}")),
            });
        }
        let answer = match answer {
            Answer::Accept { content } => trellis_core::ElicitAnswer::Accept(content),
            Answer::Decline => trellis_core::ElicitAnswer::Decline,
            Answer::Cancel => trellis_core::ElicitAnswer::Cancel,
        };
        let slot = &mut self.slots[i];
        let mut notes = Vec::new();
        slot.app.driver.elicit(
            request_id.to_string(),
            answer,
            trellis_core::Decider::Attached(who),
            &mut notes,
        );
        let numbered = self.slots[i].number(notes);
        self.refresh(i);
        Ok(numbered)
    }

    /// Starts a session asked for through the socket (`trellis new`, `run --detach`),
    /// sent `prompt` once its agent is ready. The session in front stays in front.
    pub fn open_remote(
        &mut self,
        agent: String,
        cwd: String,
        worktree: bool,
        prompt: Option<String>,
    ) -> Result<(SessionKey, Vec<String>), String> {
        let cwd = std::path::PathBuf::from(cwd);
        if !cwd.is_absolute() {
            return Err(format!("{}: not an absolute directory", cwd.display()));
        }
        let Some(open) = self.opener.as_mut() else {
            return Err("this hub starts no sessions".into());
        };
        let mut opened = open(NewSession {
            agent: agent.clone(),
            cwd,
            worktree,
        })?;
        let said: Vec<String> = opened.app.message.take().into_iter().collect();
        if let Some(p) = prompt.filter(|p| !p.trim().is_empty()) {
            opened.app.driver.prompt(p, Vec::new());
        }
        opened.app.session_keys = self.keys.listed();
        if self.headless {
            // Nobody looks at this process's terminal: the deck's `[notify]` command
            // is what tells the human.
            opened.app.alerts = crate::app::Alerts {
                bell: false,
                title: false,
                notify: false,
            };
        }
        let front = self.front;
        let empty = self.slots.is_empty();
        let key = self.add(opened, agent);
        if !empty {
            self.front = front;
        }
        Ok((key, said))
    }
}

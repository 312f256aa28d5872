//! The deck as the hub's socket sees it: its sessions listed, a permission request
//! answered once by someone attached.

use trellis_core::attention::Blocked;

use super::{Deck, SessionKey, SessionNote};

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
}

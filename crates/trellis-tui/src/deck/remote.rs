//! The deck as the hub's socket sees it: its sessions listed, a permission request
//! answered once by someone attached.

use trellis_core::attention::Blocked;

use std::time::{Duration, Instant};

use super::{Deck, NewSession, SessionKey, SessionNote};

/// A claim on a pending request: who holds it, with what token, until when, on which
/// connection.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    token: String,
    who: String,
    until: Instant,
    conn: u64,
}

/// How long a claim holds unless the claimant says.
const LEASE: Duration = Duration::from_secs(30);

type Refusal = (&'static str, String);

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
                            claimed_by: self.claimant(s.key, &p.request_id),
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

    /// Who holds a live claim on request `request_id` of session `key`.
    fn claimant(&self, key: SessionKey, request_id: &str) -> Option<String> {
        self.claims
            .get(&(key, request_id.to_string()))
            .filter(|c| c.until > Instant::now())
            .map(|c| c.who.clone())
    }

    /// Whether request `request_id` of session `key` waits for someone (permission or
    /// question).
    fn waits(&self, key: SessionKey, request_id: &str) -> Result<(), Refusal> {
        let i = self
            .index_of(key)
            .ok_or(("not_found", format!("no session {key}")))?;
        let s = &self.slots[i].app.driver.session;
        let open = s
            .pending_permissions()
            .iter()
            .any(|(r, ..)| r == request_id)
            || s.pending_elicitations().any(|e| e.request_id == request_id);
        if open {
            return Ok(());
        }
        Err(match s.answered_by(request_id) {
            Some(by) => ("answered", format!("already answered by {by}")),
            None => ("not_found", format!("no pending request {request_id}")),
        })
    }

    /// Claims request `request_id` of session `key` for `who` on connection `conn`: the
    /// claim's token and how long it holds. A live claim of someone else's is refused
    /// naming them; one's own is renewed.
    pub fn claim(
        &mut self,
        key: SessionKey,
        request_id: &str,
        lease: Option<u64>,
        who: &str,
        conn: u64,
    ) -> Result<(String, u64), Refusal> {
        self.waits(key, request_id)?;
        let now = Instant::now();
        self.claims.retain(|_, c| c.until > now);
        let lease = lease.map_or(LEASE, |s| Duration::from_secs(s.clamp(5, 300)));
        let slot = (key, request_id.to_string());
        if let Some(c) = self.claims.get_mut(&slot) {
            // The same claimant (its connection, or its name, which has its pid) renews.
            if (c.conn != conn || conn == 0) && c.who != who {
                let left = c.until.saturating_duration_since(now).as_secs();
                return Err((
                    "claimed",
                    format!("{} is answering it ({left} s left on their claim)", c.who),
                ));
            }
            c.until = now + lease;
            c.conn = conn;
            return Ok((c.token.clone(), lease.as_secs()));
        }
        let token: String = trellis_hub::tokens::random(12)
            .map_err(|e| ("busy", e.to_string()))?
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.claims.insert(
            slot,
            Claim {
                token: token.clone(),
                who: who.to_string(),
                until: now + lease,
                conn,
            },
        );
        Ok((token, lease.as_secs()))
    }

    /// Lets go of a claim (with its token).
    pub fn release(&mut self, key: SessionKey, request_id: &str, token: &str) -> bool {
        let slot = (key, request_id.to_string());
        if self.claims.get(&slot).is_some_and(|c| c.token == token) {
            self.claims.remove(&slot);
            return true;
        }
        false
    }

    /// A connection ended: its claims go.
    pub fn hangup(&mut self, conn: u64) {
        self.claims.retain(|_, c| c.conn != conn);
    }

    /// An answer from elsewhere to request `request_id` of session `key`, with `token`
    /// or without: refused while someone else holds a live claim (compare-and-set on the
    /// claim); the claim goes once the answer is taken.
    pub fn check_claim(
        &mut self,
        key: SessionKey,
        request_id: &str,
        token: Option<&str>,
    ) -> Result<(), Refusal> {
        let slot = (key, request_id.to_string());
        let now = Instant::now();
        match self.claims.get(&slot) {
            Some(c) if c.until > now && token != Some(c.token.as_str()) => Err((
                "claimed",
                format!(
                    "{} is answering it ({} s left on their claim)",
                    c.who,
                    c.until.saturating_duration_since(now).as_secs()
                ),
            )),
            Some(c) if c.until <= now && token.is_some_and(|t| t == c.token) => {
                Err(("expired", "your claim expired: claim it again".to_string()))
            }
            _ => Ok(()),
        }
    }

    /// The claim on a request that was just answered goes.
    pub fn answered(&mut self, key: SessionKey, request_id: &str) {
        self.claims.remove(&(key, request_id.to_string()));
    }
}

//! The deck as the hub's socket sees it: its sessions listed, a permission request
//! answered once by someone attached.

use super::{Front, NewSession, SessionKey, SessionNote, Sessions};
use trellis_driver::claims::Refusal;
use trellis_driver::rules::{Hits, RulePreview, Scope};

impl<F: Front> Sessions<F> {
    /// Every session as a hub's client sees it.
    pub fn session_infos(&self) -> Vec<trellis_hub::wire::SessionInfo> {
        self.slots
            .iter()
            .map(|s| {
                let session = &s.app.driver().session;
                // Session seconds now, for how long each request has waited.
                let now = s.app.driver().connection().map(|h| h.recorder().origin().t);
                trellis_hub::wire::SessionInfo {
                    key: s.key,
                    acp_id: session.id.as_deref().map(str::to_string),
                    agent: s.agent_name(),
                    state: s.attention.word().into(),
                    rank: s.attention.rank(),
                    title: s.title(),
                    cwd: session.cwd.clone().unwrap_or_default(),
                    source: s.source.clone(),
                    // The git branch itself (the rail shows a worktree's label).
                    branch: session
                        .worktree
                        .as_ref()
                        .map(|w| w.branch.clone())
                        .or_else(|| s.branch.clone()),
                    for_s: s.since.elapsed().as_secs(),
                    policy: session.policy.describe(),
                    worktree: session.worktree.as_ref().map(|w| w.label.clone()),
                    pending: trellis_driver::claims::waiting_in_full(session)
                        .into_iter()
                        .map(|w| trellis_hub::wire::PendingInfo {
                            waited_s: w
                                .asked_at
                                .zip(now)
                                .map(|(asked, now)| (now - asked).max(0.0) as u64),
                            diff: w.diff,
                            input: w.input,
                            kind: if w.question { "question" } else { "permission" }.into(),
                            subject: w.subject,
                            options: w.options,
                            claimed_by: self.claimant(s.key, &w.request_id),
                            always: always_infos(session, &w.request_id, &w.always),
                            reject_once: w.reject_once,
                            request_id: w.request_id,
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// A permission request answered through the socket by `who` (with their claim's
    /// token, if they hold one): once; someone who comes second is told who answered. An
    /// "always" choice is taken only with `always` naming where its rule goes: the rule is
    /// the session's own dialog's (shown with its reach in [`Sessions::session_infos`]), saved
    /// there first, then the request is answered. A reject's `reason` is told to the
    /// agent as the session's next message.
    pub fn decide_attached(
        &mut self,
        key: SessionKey,
        (request_id, option_id): (&str, &str),
        claim: Option<&str>,
        always: Option<&str>,
        reason: Option<String>,
        who: String,
    ) -> Result<(Vec<SessionNote>, Option<String>), Refusal> {
        let i = self
            .index_of(key)
            .ok_or(("not_found", format!("no session {key}")))?;
        let slot = &mut self.slots[i];
        // A reason that cannot go is refused before any rule is saved.
        if let Some(r) = &reason {
            let (kind, _) = trellis_driver::claims::option_of(
                &slot.app.driver().session,
                request_id,
                option_id,
            )?;
            trellis_driver::claims::check_reason(kind, r)?;
        }
        let mut saved = None;
        if let Some(place) = always {
            slot.claims.check_claim(request_id, claim)?;
            let (kind, call) = trellis_driver::claims::option_of(
                &slot.app.driver().session,
                request_id,
                option_id,
            )?;
            let scope = Scope::named(place).ok_or((
                "bad_request",
                format!("always: {place}: session, project or global"),
            ))?;
            if !matches!(
                kind,
                trellis_core::permission::OptionKind::AllowAlways
                    | trellis_core::permission::OptionKind::RejectAlways
            ) {
                return Err(("bad_request", format!("{option_id} is a one-time choice")));
            }
            let mut p = RulePreview::new(
                request_id.to_string(),
                option_id.to_string(),
                kind,
                &slot.app.driver().session.ledger.at(call),
            );
            p.scope = scope;
            let rule = p.rule().describe();
            let place = slot
                .app
                .driver_mut()
                .save_rule(&p)
                .map_err(|e| ("refused", format!("cannot save the rule: {e}")))?;
            slot.app
                .tell(format!("rule saved by {who} ({place}): {rule}"));
            saved = Some(format!("{rule} ({place})"));
        }
        let mut notes = Vec::new();
        slot.claims.decide(
            slot.app.driver_mut(),
            request_id,
            option_id,
            claim,
            who,
            always.is_some(),
            reason,
            &mut notes,
        )?;
        let numbered = slot.number(notes);
        self.refresh(i);
        Ok((numbered, saved))
    }

    /// An agent's question answered through the socket by `who`, once (the reducer
    /// checks the content against the question's form; refused content leaves it open).
    pub fn answer_attached(
        &mut self,
        key: SessionKey,
        request_id: &str,
        answer: trellis_hub::wire::Answer,
        claim: Option<&str>,
        who: String,
    ) -> Result<Vec<SessionNote>, Refusal> {
        let i = self
            .index_of(key)
            .ok_or(("not_found", format!("no session {key}")))?;
        let slot = &mut self.slots[i];
        let mut notes = Vec::new();
        slot.claims.answer(
            slot.app.driver_mut(),
            request_id,
            elicit_answer(answer),
            claim,
            who,
            &mut notes,
        )?;
        let numbered = slot.number(notes);
        self.refresh(i);
        Ok(numbered)
    }

    /// Starts a session asked for through the socket (`trellis new`, `run --detach`),
    /// sent `prompt` once its agent is ready. The session in front stays in front.
    pub fn open_remote(
        &mut self,
        new: NewSession,
        prompt: Option<String>,
    ) -> Result<(SessionKey, Vec<String>), String> {
        for d in [&new.cwd, &new.launched_in].into_iter().flatten() {
            if !d.is_absolute() {
                return Err(format!("{}: not an absolute directory", d.display()));
            }
        }
        let Some(open) = self.opener.as_mut() else {
            return Err("this hub starts no sessions".into());
        };
        let agent = new.agent.clone();
        let mut opened = open(new)?;
        let said: Vec<String> = opened.app.take_told().into_iter().collect();
        if let Some(p) = prompt.filter(|p| !p.trim().is_empty()) {
            opened.app.driver_mut().prompt(p, Vec::new());
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
        let i = self.index_of(key)?;
        self.slots[i].claims.claimant(request_id)
    }

    /// Claims request `request_id` of session `key` for `who` on connection `conn`: the
    /// claim's token and how long it holds (see [`trellis_driver::claims::Claims::claim`]).
    pub fn claim(
        &mut self,
        key: SessionKey,
        request_id: &str,
        lease: Option<u64>,
        who: &str,
        conn: u64,
    ) -> Result<(String, u64), Refusal> {
        let i = self
            .index_of(key)
            .ok_or(("not_found", format!("no session {key}")))?;
        let slot = &mut self.slots[i];
        slot.claims
            .claim(&slot.app.driver().session, request_id, lease, who, conn)
    }

    /// Lets go of a claim (with its token).
    pub fn release(&mut self, key: SessionKey, request_id: &str, token: &str) -> bool {
        self.index_of(key)
            .is_some_and(|i| self.slots[i].claims.release(request_id, token))
    }

    /// A connection ended: its claims go.
    pub fn hangup(&mut self, conn: u64) {
        for slot in &mut self.slots {
            slot.claims.hangup(conn);
        }
    }
}

/// The "always" choices of request `request_id`: the rule each would save (as the
/// session's own dialog makes it) and how many of the session's calls it matches already.
fn always_infos(
    session: &trellis_core::Session,
    request_id: &str,
    always: &[(String, String)],
) -> Vec<trellis_hub::wire::AlwaysInfo> {
    always
        .iter()
        .filter_map(|(option_id, name)| {
            let (kind, call) =
                trellis_driver::claims::option_of(session, request_id, option_id).ok()?;
            let mut p = RulePreview::new(
                request_id.to_string(),
                option_id.clone(),
                kind,
                &session.ledger.at(call),
            );
            p.advance(session, Hits::BUDGET);
            Some(trellis_hub::wire::AlwaysInfo {
                option_id: option_id.clone(),
                name: name.clone(),
                rule: p.rule().describe(),
                matches: p.hits.count,
            })
        })
        .collect()
}

/// An answer from the wire as the reducer takes it.
pub fn elicit_answer(answer: trellis_hub::wire::Answer) -> trellis_core::ElicitAnswer {
    use trellis_hub::wire::Answer;
    match answer {
        Answer::Accept { content } => trellis_core::ElicitAnswer::Accept(content),
        Answer::Decline => trellis_core::ElicitAnswer::Decline,
        Answer::Cancel => trellis_core::ElicitAnswer::Cancel,
    }
}

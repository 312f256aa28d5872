//! What a headless run does with what asks for a human: a permission request at the end
//! of the chain (the policy, the run's hub with `--approve-via hub`, or `--on-ask`), the
//! agent's questions (`--answers`, the hub, or declined), and requests whose wait through
//! the hub ended.

use trellis_core::Choice;
use trellis_core::permission::Verdict;
use trellis_driver::Note;

use super::Headless;
use crate::budgets::{Breach, OnAsk};
use crate::output::safe;

impl<W: std::io::Write + Send + 'static> Headless<'_, W> {
    /// A permission request reached the end of the chain: the headless policy answers it
    /// (or leaves it to the agent's cancel when the policy says ask).
    pub(super) fn dialog(&mut self, request_id: String, notes: &mut Vec<Note>) {
        let session = &self.driver.session;
        let Some(call) = session
            .pending_permissions()
            .into_iter()
            .find(|(r, ..)| *r == request_id)
            .map(|(_, call, _)| session.ledger.at(call).clone())
        else {
            return;
        };
        let (verdict, decider) = self.rules.fallback.decide(&call, session.cwd.as_deref());
        // Nobody decided: no policy was chosen (the default reject), or a rule says ask.
        let unanswered = verdict == Verdict::Ask || !self.rules.budgets.explicit_policy;
        if !unanswered {
            self.driver
                .decide(request_id, Choice::Verdict(verdict), decider, notes);
            return;
        }
        if let Some(hub) = &mut self.hub {
            if let Some(w) = trellis_driver::claims::waiting(&self.driver.session)
                .into_iter()
                .find(|w| w.request_id == request_id)
            {
                hub.ask(w);
            }
            return;
        }
        let said = if verdict == Verdict::Ask {
            None
        } else {
            Some(decider)
        };
        self.on_ask(request_id, &call, said, notes);
    }

    /// `--on-ask` answers a permission request nobody decided: deny it, or deny it and
    /// stop the run. The record names `--on-ask` unless `decider` (the default reject
    /// policy) decided.
    pub(super) fn on_ask(
        &mut self,
        request_id: String,
        call: &trellis_core::ToolCall,
        decider: Option<trellis_core::Decider>,
        notes: &mut Vec<Note>,
    ) {
        let reject = Choice::Verdict(Verdict::Reject);
        match self.rules.budgets.on_ask {
            OnAsk::Deny => {
                let decider = decider
                    .unwrap_or_else(|| trellis_core::Decider::Policy("--on-ask deny".into()));
                self.driver.decide(request_id, reject, decider, notes);
            }
            OnAsk::Fail => {
                let title = trellis_core::enrich::card_title(call);
                self.driver.decide(
                    request_id,
                    reject,
                    trellis_core::Decider::Policy("--on-ask fail".into()),
                    notes,
                );
                self.breach(Breach::Denied(title), notes);
            }
        }
    }

    /// An agent's question no extension took: answered from `--answers` (or declined);
    /// with `--approve-via hub` and no `--answers`, it waits for an answer there first.
    pub(super) fn question(&mut self, request_id: &str, notes: &mut Vec<Note>) {
        if let Some(hub) = &mut self.hub
            && !self.rules.answers.given()
        {
            if let Some(w) = trellis_driver::claims::waiting(&self.driver.session)
                .into_iter()
                .find(|w| w.request_id == request_id)
            {
                hub.ask(w);
            }
            return;
        }
        answer_question(&mut self.driver, self.rules.answers, request_id, notes);
    }

    /// Requests whose wait for an answer through the hub has ended: `--on-ask` answers
    /// the permission requests still open, questions are declined.
    pub(super) fn asks_expired(&mut self, notes: &mut Vec<Note>) {
        let Some(hub) = &mut self.hub else { return };
        let waited = hub.ask_timeout.as_secs_f64();
        let name = hub.name().to_string();
        for w in hub.expired(&self.driver) {
            say!(
                "trellis: nobody answered through hub {name} within {waited} s: {}",
                safe(&w.subject)
            );
            if w.question {
                answer_question(&mut self.driver, self.rules.answers, &w.request_id, notes);
                continue;
            }
            let session = &self.driver.session;
            let call = session
                .pending_permissions()
                .into_iter()
                .find(|(r, ..)| *r == w.request_id)
                .map(|(_, call, _)| session.ledger.at(call).clone());
            if let Some(call) = call {
                let by = format!("--on-ask deny: nobody answered through hub {name} in {waited} s");
                let by = trellis_core::Decider::Policy(by);
                self.on_ask(w.request_id, &call, Some(by), notes);
            }
        }
    }
}

/// Answers the agent's question `request_id`, if still open, from `--answers` (or declines
/// it), saying what was sent.
fn answer_question(
    driver: &mut trellis_driver::Driver,
    answers: &crate::answers::Answers,
    request_id: &str,
    notes: &mut Vec<Note>,
) {
    let open = driver
        .session
        .pending_elicitations()
        .find(|e| e.request_id == request_id)
        .cloned();
    let Some(elicitation) = open else { return };
    let (answer, said) = answers.answer(&elicitation);
    say!("trellis: {}", safe(&said));
    driver.elicit(request_id.to_string(), answer, answers.decider(), notes);
}

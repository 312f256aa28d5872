//! The runtime side of the permission chain's extension step: offering requests (and the
//! agent's questions) to claimants through their queues, handling their replies and
//! deadlines, and turning the arbiter's steps into [`Out`]s. The decisions themselves are
//! `trellis_core`'s (`ext/arbiter.rs`).

use trellis_core::ext::Capability;
use trellis_core::ext::arbiter::Step;

use crate::slot::Job;
use crate::{ExtHost, HostMsg, Out};

impl ExtHost {
    /// Whether any extension may claim permission requests (no allocation).
    pub fn has_claimants(&self) -> bool {
        self.slots
            .iter()
            .any(|s| s.has(Capability::InterceptPermissions) && !s.is_disabled())
    }

    /// Extensions that may claim permission requests, in declared order.
    pub fn claimants(&self) -> Vec<String> {
        self.slots
            .iter()
            .filter(|s| s.has(Capability::InterceptPermissions) && !s.is_disabled())
            .map(|s| s.name.clone())
            .collect()
    }

    /// Whether any extension may claim the agent's questions (no allocation).
    pub fn has_question_claimants(&self) -> bool {
        self.slots
            .iter()
            .any(|s| s.has(Capability::AnswerQuestions) && !s.is_disabled())
    }

    /// Extensions that may claim the agent's questions, in declared order.
    pub fn question_claimants(&self) -> Vec<String> {
        self.slots
            .iter()
            .filter(|s| s.has(Capability::AnswerQuestions) && !s.is_disabled())
            .map(|s| s.name.clone())
            .collect()
    }

    /// The extension holding a request or a question (the dialog must not show it
    /// meanwhile).
    pub fn holder(&self, request_id: &str) -> Option<&str> {
        self.arbiter.holder(request_id)
    }

    pub(crate) fn step(&mut self, request_id: &str, mut step: Step, now: f64, out: &mut Vec<Out>) {
        loop {
            match step {
                Step::Offer(ext) => {
                    // The extension sees the events so far before the offer.
                    self.deliver();
                    let slot = self.slots.iter().find(|s| s.name == ext).cloned();
                    let job = match self.asks.get(request_id) {
                        Some(ask) => Some(Job::Permission(ask.clone())),
                        None => self.questions.get(request_id).cloned().map(Job::Question),
                    };
                    let sent = match (&slot, job) {
                        (Some(slot), Some(job)) => slot.send(job, &self.shared),
                        _ => false,
                    };
                    if sent {
                        return;
                    }
                    // Cannot be offered (disabled, queue full): on to the next step.
                    match self.arbiter.failed(request_id, &ext, "it is disabled", now) {
                        Some(next) => step = next,
                        None => return,
                    }
                }
                Step::Dialog => {
                    let request_id = request_id.to_string();
                    if self.questions.remove(&request_id).is_some() {
                        out.push(Out::Question { request_id });
                    } else {
                        self.asks.remove(&request_id);
                        out.push(Out::Dialog { request_id });
                    }
                    return;
                }
                // Carried out where the answer is at hand (`HostMsg::Answer`).
                Step::Elicit { .. } => return,
                Step::Answer { option_id, by } => {
                    self.asks.remove(request_id);
                    out.push(Out::Decide {
                        request_id: request_id.to_string(),
                        option_id,
                        extension: by,
                        reason: self.reasons.remove(request_id),
                    });
                    return;
                }
            }
        }
    }

    /// Requests that went past their holder: a failure of it, counted once and said where
    /// the user looks the first time (a callback that failed was counted when it did).
    fn drain_hand_ons(&mut self, _out: &mut [Out]) {
        for h in std::mem::take(&mut self.arbiter.hand_ons) {
            if self.counted.remove(&h.request_id) {
                continue;
            }
            let what = if h.question {
                "question"
            } else {
                "permission request"
            };
            if let Some(slot) = self.slots.iter().find(|s| s.name == h.extension) {
                slot.failed(
                    what,
                    &format!("{}; it went on to the next step", h.reason),
                    &self.shared,
                );
            }
        }
    }

    /// Handles a message from a worker or a host function.
    pub fn on_msg(&mut self, msg: HostMsg, now: f64) -> Vec<Out> {
        let mut out = Vec::new();
        match msg {
            HostMsg::Claim {
                extension,
                request_id,
                result,
            } => match result {
                Ok(true) => self.arbiter.claimed(&request_id, &extension),
                Ok(false) => {
                    if let Some(step) = self.arbiter.passed(&request_id, &extension, now) {
                        self.step(&request_id, step, now, &mut out);
                    }
                }
                Err(why) => {
                    if why.counted {
                        self.counted.insert(request_id.clone());
                    }
                    let why = why.reason;
                    if let Some(step) = self.arbiter.failed(&request_id, &extension, &why, now) {
                        self.step(&request_id, step, now, &mut out);
                    }
                }
            },
            HostMsg::Respond {
                extension,
                request_id,
                option_id,
                reason,
            } => {
                // Kept for the answer this may be (a refused one forgets it below).
                if let Some(r) = reason.filter(|r| !r.trim().is_empty()) {
                    self.reasons.insert(request_id.clone(), r);
                }
                match self
                    .arbiter
                    .respond(&request_id, &extension, &option_id, now)
                {
                    Ok(step) => self.step(&request_id, step, now, &mut out),
                    Err(why) => {
                        self.reasons.remove(&request_id);
                        if let Some(slot) = self.slots.iter().find(|s| s.name == extension) {
                            slot.failed("respond_permission", &why, &self.shared);
                        }
                    }
                }
            }
            HostMsg::Answer {
                extension,
                request_id,
                answer,
            } => match self.arbiter.respond_question(&request_id, &extension) {
                Ok(_) => {
                    self.questions.remove(&request_id);
                    out.push(Out::Elicit {
                        request_id,
                        answer,
                        extension,
                    });
                }
                Err(why) => {
                    if let Some(slot) = self.slots.iter().find(|s| s.name == extension) {
                        slot.failed("respond_question", &why, &self.shared);
                    }
                }
            },
            HostMsg::CallState {
                extension,
                call_id,
                value,
            } => out.push(Out::CallState {
                extension,
                call_id,
                value,
            }),
            HostMsg::Notify { extension, text } => {
                out.push(Out::Notify(format!("{extension}: {text}")))
            }
            HostMsg::OpenInspector { call_id } => out.push(Out::OpenInspector(call_id)),
            HostMsg::Repaint => {
                self.shared.repaint_taken();
                out.push(Out::Repaint)
            }
            HostMsg::Drive { extension, action } => out.push(Out::Drive { extension, action }),
            HostMsg::Failing {
                extension,
                what,
                message,
            } => out.push(Out::Failure {
                text: format!("extension {extension}: {what} failed: {message}"),
                stopped: false,
            }),
            HostMsg::Revived { extension, result } => {
                self.shared
                    .epoch
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                out.push(match result {
                    Ok(()) => Out::Notice(format!(
                        "extension {extension} runs again with its changed files"
                    )),
                    Err(why) => Out::Failure {
                        text: format!("extension {extension} changed, but {why}"),
                        stopped: true,
                    },
                });
                out.push(Out::Repaint);
            }
            HostMsg::Disabled { extension, reason } => {
                // Its cards fall back to the native ones.
                self.shared
                    .epoch
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                out.push(Out::Failure {
                    text: format!("extension {extension} disabled: {reason}"),
                    stopped: true,
                });
                out.push(Out::Repaint);
            }
        }
        self.drain_hand_ons(&mut out);
        out
    }

    /// Hands on requests whose holder ran out of time.
    pub fn tick(&mut self, now: f64) -> Vec<Out> {
        let mut out = Vec::new();
        for (id, step) in self.arbiter.expire(now) {
            self.step(&id, step, now, &mut out);
        }
        self.drain_hand_ons(&mut out);
        out
    }

    /// When the runtime must call [`ExtHost::tick`] next (session seconds).
    pub fn next_deadline(&self) -> Option<f64> {
        self.arbiter.next_deadline()
    }
}

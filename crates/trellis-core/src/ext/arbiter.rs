//! The extension step of the permission chain: user rules → extensions holding
//! `intercept-permissions`, in declared order → the dialog. The agent's questions
//! (`elicitation/create`) go the same way: extensions holding `answer-questions`, in
//! declared order → the dialog (or, headless, `--answers` and the default decline).
//!
//! Pure: the runtime feeds it what happened (asked, claimed, passed, failed, answered,
//! time passed) and performs the [`Step`]s it returns. Invariants:
//! - a request is held by at most one extension at a time, and only until its deadline;
//! - a timeout, a fault or an option the agent did not offer hands the request on — a
//!   fault never approves anything;
//! - an answer is accepted only from the current holder, once.

use crate::permission::PermissionOption;
use rustc_hash::FxHashMap;

/// What the runtime must do next for a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Offer the request to this extension (its deadline runs from now).
    Offer(String),
    /// Nobody took it: show the dialog (or apply the headless fallback).
    Dialog,
    /// Answer the agent with this option; the decider is the extension.
    Answer { option_id: String, by: String },
    /// The holder answered a question: send its answer; the decider is the extension.
    Elicit { by: String },
}

/// Why a request moved past an extension.
#[derive(Debug, Clone, PartialEq)]
pub struct HandOn {
    pub request_id: String,
    pub extension: String,
    pub reason: String,
    /// It is a question, not a permission request.
    pub question: bool,
}

#[derive(Debug, Clone)]
struct Open {
    /// The options a permission request offers; `None` for a question (any answer goes
    /// to the reducer, which checks it against the form).
    options: Option<Vec<PermissionOption>>,
    claimants: Vec<String>,
    at: usize,
    claimed: bool,
    deadline: f64,
}

#[derive(Debug, Clone)]
pub struct Arbiter {
    /// Seconds a claimant has, from the offer, to answer.
    pub timeout: f64,
    open: FxHashMap<String, Open>,
    /// Requests handed on, and why (drained by the runtime for diagnostics).
    pub hand_ons: Vec<HandOn>,
}

impl Arbiter {
    pub fn new(timeout: f64) -> Arbiter {
        Arbiter {
            timeout,
            open: FxHashMap::default(),
            hand_ons: Vec::new(),
        }
    }

    /// A request the rules left to ask about. `claimants`: extensions holding
    /// `intercept-permissions`, in declared order.
    pub fn start(
        &mut self,
        request_id: &str,
        options: Vec<PermissionOption>,
        claimants: Vec<String>,
        now: f64,
    ) -> Step {
        self.begin(request_id, Some(options), claimants, now)
    }

    /// A question of the agent's. `claimants`: extensions holding `answer-questions`, in
    /// declared order.
    pub fn start_question(&mut self, request_id: &str, claimants: Vec<String>, now: f64) -> Step {
        self.begin(request_id, None, claimants, now)
    }

    fn begin(
        &mut self,
        request_id: &str,
        options: Option<Vec<PermissionOption>>,
        claimants: Vec<String>,
        now: f64,
    ) -> Step {
        if claimants.is_empty() {
            return Step::Dialog;
        }
        let first = claimants[0].clone();
        self.open.insert(
            request_id.to_string(),
            Open {
                options,
                claimants,
                at: 0,
                claimed: false,
                deadline: now + self.timeout,
            },
        );
        Step::Offer(first)
    }

    /// The extension holding the request, if one does (the dialog must not show it).
    pub fn holder(&self, request_id: &str) -> Option<&str> {
        self.open
            .get(request_id)
            .map(|o| o.claimants[o.at].as_str())
    }

    /// Whether the holder has claimed it (versus still being asked).
    pub fn is_claimed(&self, request_id: &str) -> bool {
        self.open.get(request_id).is_some_and(|o| o.claimed)
    }

    fn is_current(&self, request_id: &str, ext: &str) -> bool {
        self.holder(request_id) == Some(ext)
    }

    /// The offered extension took the request.
    pub fn claimed(&mut self, request_id: &str, ext: &str) {
        if self.is_current(request_id, ext)
            && let Some(o) = self.open.get_mut(request_id)
        {
            o.claimed = true;
        }
    }

    /// The offered extension passed; the request goes on.
    pub fn passed(&mut self, request_id: &str, ext: &str, now: f64) -> Option<Step> {
        if !self.is_current(request_id, ext) {
            return None;
        }
        Some(self.advance(request_id, now))
    }

    /// The holder failed (error or panic) while deciding; the request goes on.
    pub fn failed(&mut self, request_id: &str, ext: &str, why: &str, now: f64) -> Option<Step> {
        if !self.is_current(request_id, ext) {
            return None;
        }
        self.hand_on(request_id, ext, format!("failed: {why}"));
        Some(self.advance(request_id, now))
    }

    /// The holder answered. An option the agent did not offer hands the request on.
    /// Answers from anyone but the holder are refused (`Err` says why).
    pub fn respond(
        &mut self,
        request_id: &str,
        ext: &str,
        option_id: &str,
        now: f64,
    ) -> Result<Step, String> {
        let Some(o) = self.open.get(request_id) else {
            return Err(format!("permission request {request_id} is not open"));
        };
        if o.claimants[o.at] != ext {
            return Err(format!(
                "permission request {request_id} is held by {}, not {ext}",
                o.claimants[o.at]
            ));
        }
        let Some(options) = &o.options else {
            return Err(format!(
                "{request_id} is a question, not a permission request"
            ));
        };
        if !options.iter().any(|x| x.option_id == option_id) {
            self.hand_on(
                request_id,
                ext,
                format!("answered option {option_id:?}, which the agent did not offer"),
            );
            return Ok(self.advance(request_id, now));
        }
        self.open.remove(request_id);
        Ok(Step::Answer {
            option_id: option_id.to_string(),
            by: ext.to_string(),
        })
    }

    /// The holder answered a question. Answers from anyone but the holder are refused.
    pub fn respond_question(&mut self, request_id: &str, ext: &str) -> Result<Step, String> {
        let Some(o) = self.open.get(request_id) else {
            return Err(format!("question {request_id} is not open"));
        };
        if o.options.is_some() {
            return Err(format!(
                "{request_id} is a permission request, not a question"
            ));
        }
        if o.claimants[o.at] != ext {
            return Err(format!(
                "question {request_id} is held by {}, not {ext}",
                o.claimants[o.at]
            ));
        }
        self.open.remove(request_id);
        Ok(Step::Elicit {
            by: ext.to_string(),
        })
    }

    /// Requests whose holder ran out of time, with their next step.
    pub fn expire(&mut self, now: f64) -> Vec<(String, Step)> {
        let mut due: Vec<String> = self
            .open
            .iter()
            .filter(|(_, o)| o.deadline <= now)
            .map(|(id, _)| id.clone())
            .collect();
        due.sort();
        due.into_iter()
            .map(|id| {
                let who = self.holder(&id).unwrap_or_default().to_string();
                let secs = self.timeout;
                self.hand_on(&id, &who, format!("did not answer within {secs} s"));
                let step = self.advance(&id, now);
                (id, step)
            })
            .collect()
    }

    /// The earliest deadline, for the runtime's timer.
    pub fn next_deadline(&self) -> Option<f64> {
        self.open.values().map(|o| o.deadline).reduce(f64::min)
    }

    /// The request was answered or cancelled elsewhere (e.g. the turn was cancelled).
    pub fn forget(&mut self, request_id: &str) {
        self.open.remove(request_id);
    }

    fn hand_on(&mut self, request_id: &str, ext: &str, reason: String) {
        let question = self
            .open
            .get(request_id)
            .is_some_and(|o| o.options.is_none());
        self.hand_ons.push(HandOn {
            request_id: request_id.to_string(),
            extension: ext.to_string(),
            reason,
            question,
        });
    }

    fn advance(&mut self, request_id: &str, now: f64) -> Step {
        let Some(o) = self.open.get_mut(request_id) else {
            return Step::Dialog;
        };
        o.at += 1;
        o.claimed = false;
        o.deadline = now + self.timeout;
        if o.at >= o.claimants.len() {
            self.open.remove(request_id);
            return Step::Dialog;
        }
        Step::Offer(o.claimants[o.at].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::OptionKind;

    fn opts() -> Vec<PermissionOption> {
        vec![
            PermissionOption {
                option_id: "yes".into(),
                name: "Allow".into(),
                kind: OptionKind::AllowOnce,
            },
            PermissionOption {
                option_id: "no".into(),
                name: "Reject".into(),
                kind: OptionKind::RejectOnce,
            },
        ]
    }

    fn two() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    #[test]
    fn first_claimant_in_declared_order_decides() {
        let mut a = Arbiter::new(30.0);
        assert_eq!(a.start("1", opts(), two(), 0.0), Step::Offer("a".into()));
        a.claimed("1", "a");
        // b is not holding it: refused.
        assert!(a.respond("1", "b", "yes", 1.0).is_err());
        assert_eq!(
            a.respond("1", "a", "yes", 1.0),
            Ok(Step::Answer {
                option_id: "yes".into(),
                by: "a".into()
            })
        );
        assert_eq!(a.holder("1"), None);
    }

    #[test]
    fn pass_timeout_fault_and_invalid_option_hand_on() {
        let mut a = Arbiter::new(30.0);
        a.start("1", opts(), two(), 0.0);
        assert_eq!(a.passed("1", "a", 1.0), Some(Step::Offer("b".into())));
        a.claimed("1", "b");
        assert!(
            a.expire(30.0).is_empty(),
            "b's deadline runs from its offer"
        );
        assert_eq!(a.expire(31.0), vec![("1".into(), Step::Dialog)]);
        assert!(a.hand_ons[0].reason.contains("within 30 s"));

        a.start("2", opts(), two(), 0.0);
        assert_eq!(
            a.failed("2", "a", "boom", 0.0),
            Some(Step::Offer("b".into()))
        );
        a.claimed("2", "b");
        assert_eq!(a.respond("2", "b", "always", 0.0), Ok(Step::Dialog));
        assert!(
            a.hand_ons
                .iter()
                .any(|h| h.reason.contains("did not offer"))
        );
        assert!(a.next_deadline().is_none());
    }

    #[test]
    fn questions_go_through_claimants_in_order_and_are_answered_by_the_holder_only() {
        let mut a = Arbiter::new(30.0);
        assert_eq!(a.start_question("q", two(), 0.0), Step::Offer("a".into()));
        // A question is not answered with an option, nor a permission request with an
        // answer.
        assert!(a.respond("q", "a", "yes", 0.5).is_err());
        a.start("p", opts(), two(), 0.0);
        assert!(a.respond_question("p", "a").is_err());
        assert_eq!(a.passed("q", "a", 1.0), Some(Step::Offer("b".into())));
        a.claimed("q", "b");
        assert!(a.respond_question("q", "a").is_err(), "a let go of it");
        assert_eq!(
            a.respond_question("q", "b"),
            Ok(Step::Elicit { by: "b".into() })
        );
        assert!(a.respond_question("q", "b").is_err(), "answered once");
        // A holder that stays silent hands it on, to the dialog at last; the hand-on
        // says it was a question.
        a.start_question("q2", vec!["a".into()], 0.0);
        a.claimed("q2", "a");
        assert_eq!(
            a.expire(31.0),
            vec![
                ("p".into(), Step::Offer("b".into())),
                ("q2".into(), Step::Dialog)
            ]
        );
        assert!(
            a.hand_ons
                .iter()
                .any(|h| h.request_id == "q2" && h.question)
        );
        assert!(
            a.hand_ons
                .iter()
                .any(|h| h.request_id == "p" && !h.question)
        );
        assert_eq!(a.start_question("q3", vec![], 0.0), Step::Dialog);
    }

    #[test]
    fn no_claimants_go_straight_to_the_dialog() {
        let mut a = Arbiter::new(30.0);
        assert_eq!(a.start("1", opts(), vec![], 0.0), Step::Dialog);
    }
}

//! What a session takes from elsewhere (a hub's clients): its pending requests as they are
//! offered there, claims on them with leases, and answers carried out once — compare-and-set
//! on the claim, and whoever comes second is told who answered. One `Claims` per session: the
//! deck keeps one in each of its sessions, a headless run answered through a hub
//! (`trellis run --approve-via hub`) its own.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use trellis_core::permission::record::OptionKind;
use trellis_core::{Choice, Decider, ElicitAnswer, Session};

use crate::{Driver, Note};

/// Why a request from elsewhere was not carried out: a code for the wire (`not_found`,
/// `answered`, `claimed`, `expired`, `bad_request`, `refused`, `busy`) and words.
pub type Refusal = (&'static str, String);

/// How long a claim holds unless the claimant says.
const LEASE: Duration = Duration::from_secs(30);

/// A pending request as it is offered elsewhere.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub request_id: String,
    /// An agent's question (else a permission request).
    pub question: bool,
    /// What it is about: the call's title and its diffstat, or the question.
    pub subject: String,
    /// The one-time choices: (option id, name).
    pub options: Vec<(String, String)>,
    /// The "always" choices (option id, name): each saves a rule, so they are taken only
    /// from someone who saw the rule's reach and may make rules (see [`Claims::decide`]).
    pub always: Vec<(String, String)>,
    /// The one-time reject, which takes a reason the agent is told (`None`: the agent
    /// offered none).
    pub reject_once: Option<String>,
    /// When it was asked (session seconds).
    pub asked_at: Option<f64>,
    /// What an edit would change: its unified diff (bounded, see [`DIFF_LIMIT`]).
    pub diff: Option<String>,
    /// The call's input as the agent sent it, pretty (bounded, see [`INPUT_LIMIT`]).
    pub input: Option<String>,
}

/// At most this much of a pending edit's diff is offered elsewhere.
pub const DIFF_LIMIT: usize = 64 * 1024;
/// At most this much of a pending call's input is offered elsewhere.
pub const INPUT_LIMIT: usize = 8 * 1024;

/// `text` cut to `limit` bytes at a line end (else a character), saying what was cut.
fn bounded(mut text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let total = text.lines().count();
    let mut cut = limit;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    if let Some(nl) = text[..cut].rfind('\n') {
        cut = nl + 1;
    }
    text.truncate(cut);
    let kept = text.lines().count();
    text.push_str(&format!("… {} more lines\n", total.saturating_sub(kept)));
    text
}

/// The unified diff of a call's diff content, every file of it, its paths named as git
/// names them: relative to the session's directory when below it (`a/src/lib.rs`).
fn diff_of(c: &trellis_core::ToolCall, cwd: Option<&str>) -> Option<String> {
    let mut out = String::new();
    for item in &c.content {
        if let trellis_core::tool_call::ToolContent::Diff {
            path,
            old_text,
            new_text,
        } = item
        {
            let below = cwd
                .and_then(|d| std::path::Path::new(path).strip_prefix(d).ok())
                .map(|p| p.to_string_lossy().into_owned());
            out.push_str(&trellis_core::diff::unified(
                below.as_deref().unwrap_or(path.trim_start_matches('/')),
                old_text.as_deref().unwrap_or(""),
                new_text,
            ));
            if out.len() > DIFF_LIMIT {
                break;
            }
        }
    }
    (!out.is_empty()).then(|| bounded(out, DIFF_LIMIT))
}

/// A call's input, pretty.
fn input_of(c: &trellis_core::ToolCall) -> Option<String> {
    let raw = c.raw_input.as_ref()?;
    let v: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    if v.as_object().is_some_and(|o| o.is_empty()) || v.is_null() {
        return None;
    }
    let text = serde_json::to_string_pretty(&v).ok()?;
    Some(bounded(text, INPUT_LIMIT))
}

/// Every pending request of `session`: permission requests first (in the order they came),
/// then questions. Light (for frames): no diff, no input.
pub fn waiting(session: &Session) -> Vec<Waiting> {
    collect(session, false)
}

/// [`waiting`], with each edit's diff and each call's input (for those who answer
/// elsewhere and must not answer blind).
pub fn waiting_in_full(session: &Session) -> Vec<Waiting> {
    collect(session, true)
}

fn collect(session: &Session, full: bool) -> Vec<Waiting> {
    let mut out = Vec::new();
    for (request_id, call, options) in session.pending_permissions() {
        let c = session.ledger.at(call);
        let mut subject = trellis_core::enrich::card_title(&c);
        if let Some((a, d)) = trellis_core::enrich::diff_stat(&c) {
            subject.push_str(&format!(" (+{a} −{d})"));
        }
        let asked_at = c
            .permissions
            .iter()
            .rev()
            .find(|p| p.request_id == request_id)
            .map(|p| p.asked_at);
        out.push(Waiting {
            asked_at,
            diff: full.then(|| diff_of(&c, session.cwd.as_deref())).flatten(),
            input: full.then(|| input_of(&c)).flatten(),
            request_id,
            question: false,
            subject,
            options: options
                .iter()
                .filter(|o| !always(o.kind))
                .map(|o| (o.option_id.clone(), o.name.clone()))
                .collect(),
            always: options
                .iter()
                .filter(|o| always(o.kind))
                .map(|o| (o.option_id.clone(), o.name.clone()))
                .collect(),
            reject_once: options
                .iter()
                .find(|o| o.kind == OptionKind::RejectOnce)
                .map(|o| o.option_id.clone()),
        });
    }
    for e in session.pending_elicitations() {
        out.push(Waiting {
            request_id: e.request_id.clone(),
            question: true,
            subject: e.message.clone(),
            options: Vec::new(),
            always: Vec::new(),
            reject_once: None,
            asked_at: None,
            diff: None,
            input: None,
        });
    }
    out
}

/// What is said once a reject's reason is taken.
pub const REASON_SENT: &str =
    "the reason goes to the agent as your next message, when its turn ends";

/// Whether `reason` may go with an answer of `kind`: only a reject says why, and the
/// agent reads at most [`trellis_core::permission::REASON_LIMIT`] characters of it.
pub fn check_reason(kind: OptionKind, reason: &str) -> Result<(), Refusal> {
    if !matches!(kind, OptionKind::RejectOnce | OptionKind::RejectAlways) {
        return Err((
            "bad_request",
            "a reason goes only with a reject (the agent is told it as your next message)".into(),
        ));
    }
    if reason.trim().is_empty() {
        return Err(("bad_request", "the reason is empty".into()));
    }
    let limit = trellis_core::permission::REASON_LIMIT;
    if reason.chars().count() > limit {
        return Err((
            "bad_request",
            format!("a reason is at most {limit} characters"),
        ));
    }
    Ok(())
}

fn always(kind: OptionKind) -> bool {
    matches!(kind, OptionKind::AllowAlways | OptionKind::RejectAlways)
}

/// A claim on a pending request: who holds it, with what token, until when, on which
/// connection.
#[derive(Debug, Clone)]
struct Claim {
    token: String,
    who: String,
    until: Instant,
    conn: u64,
}

/// The claims on one session's pending requests.
#[derive(Debug, Default)]
pub struct Claims {
    claims: HashMap<String, Claim>,
}

impl Claims {
    /// Who holds a live claim on `request_id` now.
    pub fn claimant(&self, request_id: &str) -> Option<String> {
        self.claims
            .get(request_id)
            .filter(|c| c.until > Instant::now())
            .map(|c| c.who.clone())
    }

    /// Claims `request_id` for `who` on connection `conn` (0: a call that has none): the
    /// claim's token and how long it holds (`lease` seconds, 5–300, 30 unless said). A live
    /// claim of someone else's is refused naming them; one's own is renewed.
    pub fn claim(
        &mut self,
        session: &Session,
        request_id: &str,
        lease: Option<u64>,
        who: &str,
        conn: u64,
    ) -> Result<(String, u64), Refusal> {
        open(session, request_id)?;
        let now = Instant::now();
        self.claims.retain(|_, c| c.until > now);
        let lease = lease.map_or(LEASE, |s| Duration::from_secs(s.clamp(5, 300)));
        if let Some(c) = self.claims.get_mut(request_id) {
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
        let mut bytes = [0u8; 12];
        getrandom::fill(&mut bytes).map_err(|e| ("busy", e.to_string()))?;
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        self.claims.insert(
            request_id.to_string(),
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
    pub fn release(&mut self, request_id: &str, token: &str) -> bool {
        if self
            .claims
            .get(request_id)
            .is_some_and(|c| c.token == token)
        {
            self.claims.remove(request_id);
            return true;
        }
        false
    }

    /// A connection ended: its claims go.
    pub fn hangup(&mut self, conn: u64) {
        self.claims.retain(|_, c| c.conn != conn);
    }

    /// An answer to `request_id` with `token` or without: refused while someone else holds
    /// a live claim on it (compare-and-set on the claim), or when the caller's own claim
    /// ran out.
    pub fn check_claim(&self, request_id: &str, token: Option<&str>) -> Result<(), Refusal> {
        let now = Instant::now();
        match self.claims.get(request_id) {
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

    /// Permission request `request_id` answered from elsewhere by `who`, once; the claim
    /// on it goes with the answer. One-time choices only, unless `rule_made`: the caller
    /// saved the rule an "always" choice stands for (see [`option_of`]).
    #[allow(clippy::too_many_arguments)]
    pub fn decide(
        &mut self,
        driver: &mut Driver,
        request_id: &str,
        option_id: &str,
        token: Option<&str>,
        who: String,
        rule_made: bool,
        reason: Option<String>,
        notes: &mut Vec<Note>,
    ) -> Result<(), Refusal> {
        self.check_claim(request_id, token)?;
        let kind = option_of(&driver.session, request_id, option_id)?.0;
        if let Some(r) = &reason {
            check_reason(kind, r)?;
        }
        if always(kind) && !rule_made {
            return Err((
                "refused",
                "\"always\" saves a rule: choose it with the rule's place (always: session, project or global) once you saw its reach"
                    .into(),
            ));
        }
        driver.decide_because(
            request_id.to_string(),
            Choice::Option(option_id.to_string()),
            Decider::Attached(who),
            reason,
            notes,
        );
        self.claims.remove(request_id);
        Ok(())
    }

    /// An agent's question answered from elsewhere by `who`, once (the reducer checks the
    /// content against the question's form; refused content leaves it open).
    pub fn answer(
        &mut self,
        driver: &mut Driver,
        request_id: &str,
        answer: ElicitAnswer,
        token: Option<&str>,
        who: String,
        notes: &mut Vec<Note>,
    ) -> Result<(), Refusal> {
        self.check_claim(request_id, token)?;
        let s = &driver.session;
        if !s.pending_elicitations().any(|e| e.request_id == request_id) {
            return Err(gone(s, request_id, "question"));
        }
        driver.elicit(
            request_id.to_string(),
            answer,
            Decider::Attached(who),
            notes,
        );
        self.claims.remove(request_id);
        Ok(())
    }
}

/// The kind of choice `option_id` of pending permission request `request_id`, and the
/// ledger place of its call.
pub fn option_of(
    session: &Session,
    request_id: &str,
    option_id: &str,
) -> Result<(OptionKind, usize), Refusal> {
    let Some((_, call, options)) = session
        .pending_permissions()
        .into_iter()
        .find(|(r, ..)| r == request_id)
    else {
        return Err(gone(session, request_id, "request"));
    };
    options
        .iter()
        .find(|o| o.option_id == option_id)
        .map(|o| (o.kind, call))
        .ok_or(("bad_request", format!("no choice {option_id}")))
}

/// Whether `request_id` waits for someone (a permission request or a question).
fn open(session: &Session, request_id: &str) -> Result<(), Refusal> {
    let waits = session
        .pending_permissions()
        .iter()
        .any(|(r, ..)| r == request_id)
        || session
            .pending_elicitations()
            .any(|e| e.request_id == request_id);
    if waits {
        Ok(())
    } else {
        Err(gone(session, request_id, "request"))
    }
}

/// Why `request_id` cannot be answered: someone did (named), or there is no such request.
fn gone(session: &Session, request_id: &str, what: &str) -> Refusal {
    match session.answered_by(request_id) {
        Some(by) => ("answered", format!("already answered by {by}")),
        None => ("not_found", format!("no pending {what} {request_id}")),
    }
}

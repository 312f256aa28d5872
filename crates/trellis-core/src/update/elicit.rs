//! The reducer's part of elicitations: asked (`elicitation/create`), answered (the client's
//! response frame, after an `Effect::Elicit`), completed (`elicitation/complete`), and closed
//! when nobody is left to answer.
//!
//! Invariants: an elicitation gets at most one `Effect::Elicit` (`answering` is set when it is
//! issued); a request the client refuses (another session's, an unknown mode, undecodable)
//! is never shown, and the client answers it with an error (see the connection's services);
//! an accepted form's content was checked against the form (`Form::check`).

use std::sync::Arc;

use crate::action::Effect;
use crate::elicitation::{ElicitAnswer, ElicitMode, Refusal};
use crate::event::EventBody;
use crate::permission::Decider;
use crate::session::{AgentRequest, Entry};

use super::ctx::Ctx;
use crate::wire::Message;

/// `elicitation/create` from the agent.
pub(crate) fn asked(cx: &mut Ctx<'_>, id: &str, msg: &Message) -> AgentRequest {
    let params = msg.params.as_deref().map_or("{}", |p| p.get());
    let (scope, e) = match crate::elicitation::parse(id, params) {
        Ok(v) => v,
        Err(r) => {
            let key = match &r {
                Refusal::Malformed(_) => "elicitation/create",
                Refusal::UnknownMode(_) => "elicitation mode",
            };
            cx.malformed(key, format!("refused elicitation {id}: {r}"));
            return AgentRequest::Other;
        }
    };
    // Tied to another session: not this session's to ask (the client refuses it). A
    // subagent's question is this session's, attributed to the child.
    let mut e = e;
    if let Some(theirs) = scope.session_id.as_deref() {
        match super::subagents::route(cx, theirs) {
            None => {
                cx.emit(EventBody::Warning {
                    message: format!(
                        "refused elicitation {id} for {theirs}: it is not this session's"
                    ),
                });
                return AgentRequest::Other;
            }
            Some(Some(_)) => e.subagent = Some(theirs.to_string()),
            Some(None) => {}
        }
    }
    // A mode the client did not advertise: the client refuses it.
    if let Some(offered) = cx.s.elicitation_offered
        && !offered.allows(&e.mode)
    {
        cx.emit(EventBody::Warning {
            message: format!(
                "refused elicitation {id}: the agent asked in a mode this client did not offer"
            ),
        });
        return AgentRequest::Other;
    }
    let e = Arc::new(e);
    cx.s.elicitations.push(e.clone());
    cx.emit(EventBody::ElicitationRequested { elicitation: e });
    AgentRequest::Elicitation { answering: false }
}

/// Issues the answer to open elicitation `request_id`.
pub(crate) fn answer(
    cx: &mut Ctx<'_>,
    request_id: &str,
    answer: ElicitAnswer,
    decider: Decider,
) -> Result<(), String> {
    let Some(AgentRequest::Elicitation { answering }) = cx.s.agent_requests.get_mut(request_id)
    else {
        return Err(format!("no open elicitation {request_id}"));
    };
    if *answering {
        return Err(format!("elicitation {request_id} was already answered"));
    }
    let answer = match answer {
        ElicitAnswer::Accept(content) => {
            let e =
                cx.s.elicitations
                    .iter()
                    .find(|e| e.request_id == request_id);
            match e.map(|e| &e.mode) {
                Some(ElicitMode::Form(form)) => match form.check(&content) {
                    Ok(content) => ElicitAnswer::Accept(content),
                    Err(problems) => {
                        let list: Vec<_> = problems.into_iter().map(|p| p.1).collect();
                        return Err(format!(
                            "answer to elicitation {request_id} refused: {}",
                            list.join("; ")
                        ));
                    }
                },
                // A link: accepting sends no content.
                _ => ElicitAnswer::Accept(Default::default()),
            }
        }
        other => other,
    };
    if let Some(AgentRequest::Elicitation { answering }) = cx.s.agent_requests.get_mut(request_id) {
        *answering = true;
    }
    // As for permissions: who answered is known before its record comes back.
    cx.s.deciders
        .insert(request_id.to_string(), decider.clone());
    cx.fx.push(Effect::Elicit {
        request_id: request_id.to_string(),
        answer,
        decider,
    });
    Ok(())
}

/// The client's response to elicitation `id` went out.
pub(crate) fn answered(cx: &mut Ctx<'_>, id: &str, msg: &Message) {
    #[derive(serde::Deserialize)]
    struct Result {
        #[serde(default)]
        action: String,
        #[serde(default)]
        content: Option<serde_json::Map<String, serde_json::Value>>,
    }
    let (action, content) = match (&msg.error, msg.result_as::<Result>()) {
        (Some(_), _) => ("error".to_string(), None),
        (None, Ok(r)) => (r.action, r.content),
        (None, Err(_)) => ("error".to_string(), None),
    };
    let decider = cx.s.deciders.remove(id).unwrap_or(Decider::Unrecorded);
    resolved(cx, id, action, content, decider);
}

fn resolved(
    cx: &mut Ctx<'_>,
    id: &str,
    action: String,
    content: Option<serde_json::Map<String, serde_json::Value>>,
    decider: Decider,
) {
    let Some(i) = cx.s.elicitations.iter().position(|e| e.request_id == id) else {
        return;
    };
    let e = cx.s.elicitations.remove(i);
    let what = match &e.mode {
        ElicitMode::Form(f) => match &f.title {
            Some(t) => format!("form {t:?}"),
            None => "form".to_string(),
        },
        ElicitMode::Url { .. } => "link".to_string(),
    };
    let how = match action.as_str() {
        "accept" => "accepted",
        "decline" => "declined",
        "cancel" => "cancelled",
        _ => "failed",
    };
    cx.s.transcript.push(Entry::Notice {
        text: Box::new(format!("agent's {what} {how} ({decider})")),
    });
    cx.emit(EventBody::ElicitationResolved {
        request_id: id.to_string(),
        action,
        content,
        decider,
    });
}

/// `elicitation/complete`: the step behind a link is done.
pub(crate) fn completed(cx: &mut Ctx<'_>, msg: &Message) {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Params {
        elicitation_id: String,
    }
    match msg.params_as::<Params>() {
        Ok(p) => {
            cx.s.transcript.push(Entry::Notice {
                text: Box::new("the agent says the linked step is done".into()),
            });
            cx.emit(EventBody::ElicitationCompleted {
                elicitation_id: p.elicitation_id,
            });
        }
        Err(e) => cx.malformed(
            "elicitation/complete",
            format!("skipped a malformed elicitation/complete: {e}"),
        ),
    }
}

/// Answers every elicitation nobody is answering yet with `cancel` (the turn was cancelled).
pub(crate) fn cancel_pending(cx: &mut Ctx<'_>, decider: Decider) {
    let open: Vec<String> =
        cx.s.pending_elicitations()
            .map(|e| e.request_id.clone())
            .collect();
    for id in open {
        let _ = answer(cx, &id, ElicitAnswer::Cancel, decider.clone());
    }
}

/// The agent is gone: every elicitation still open is closed as `cancel`, decided by what
/// the client recorded or `why`.
pub(crate) fn close_open(cx: &mut Ctx<'_>, why: &str) {
    let open: Vec<String> =
        cx.s.elicitations
            .iter()
            .map(|e| e.request_id.clone())
            .collect();
    for id in open {
        cx.s.agent_requests.remove(&id);
        let decider =
            cx.s.deciders
                .remove(&id)
                .unwrap_or_else(|| Decider::Client(why.into()));
        resolved(cx, &id, "cancel".into(), None, decider);
    }
}

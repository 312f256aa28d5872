//! The host's side of the `trellis-plugin` protocol: the wire contract itself is
//! `trellis-plugin-protocol` (re-exported here); what is added here writes the host's
//! requests from the session model without copying it (borrowed calls and questions) and
//! turns the plugin's answers into the model's types. The tests check that what the host
//! writes is what the contract's owned types (the SDK's) read.

use serde::Serialize;
pub use trellis_plugin_protocol::wire::*;

/// What the host derives from a call (the same facts the native cards use).
pub fn facts_of(call: &trellis_core::ToolCall) -> CallFacts {
    use trellis_core::enrich;
    CallFacts {
        title: enrich::card_title(call),
        command: enrich::command_of(call),
        paths: enrich::paths_of(call),
        duration: enrich::duration_of(call),
        exit_code: enrich::exit_code_of(call),
        added: enrich::diff_stat(call).map(|(a, _)| a),
        removed: enrich::diff_stat(call).map(|(_, d)| d),
    }
}

/// `permission/offer` params: a permission request nobody's rules decided.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OfferParams<'a> {
    pub request_id: &'a str,
    pub session: Option<&'a str>,
    pub call: &'a trellis_core::ToolCall,
    pub facts: CallFacts,
    pub options: &'a [trellis_core::permission::PermissionOption],
    /// Milliseconds a claimant has to answer with `permission/respond` before the
    /// request is handed on.
    pub deadline_ms: u64,
    /// The verbatim ACP request, when the plugin asked for ACP payloads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acp: Option<&'a str>,
}

/// `question/offer` params: a question of the agent's (`elicitation/create`: a form or
/// a link) nobody answered yet.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct QuestionOfferParams<'a> {
    pub session: Option<&'a str>,
    /// The question as the `elicitation_requested` event gives it (`request_id`, `mode`,
    /// the form's typed `fields` or the link).
    pub question: &'a trellis_core::Elicitation,
    /// Milliseconds a claimant has to answer with `question/respond` before the question
    /// is handed on.
    pub deadline_ms: u64,
    /// The verbatim ACP request, when the plugin asked for ACP payloads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acp: Option<&'a str>,
}

/// `render/card` params.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CardParams<'a> {
    pub design: &'a str,
    pub call: &'a trellis_core::ToolCall,
    pub facts: CallFacts,
    pub width: u16,
}

/// `render/transform` params.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TransformParams<'a> {
    pub id: &'a str,
    pub call: &'a trellis_core::ToolCall,
    pub facts: CallFacts,
    pub text: &'a str,
}

/// The answer a `question/respond` gives.
pub fn answer_of(p: QuestionRespondParams) -> Result<trellis_core::ElicitAnswer, String> {
    use trellis_core::ElicitAnswer as A;
    match p.action.as_str() {
        "accept" => Ok(A::Accept(p.content.unwrap_or_default())),
        "decline" => Ok(A::Decline),
        "cancel" => Ok(A::Cancel),
        other => Err(format!(
            "unknown action {other:?} (accept, decline or cancel)"
        )),
    }
}

/// The error for a host error.
pub fn rpc_error_of(e: &trellis_core::ext::HostError) -> RpcError {
    use trellis_core::ext::HostError as H;
    match e {
        // What to do about it, where the author reads it (their traceback).
        H::NotGranted(c) => RpcError {
            code: code::NOT_GRANTED,
            message: format!(
                "{e}: list \"{}\" in plugin.json's \"capabilities\" (trying a plugin grants what it lists; an installed one, what the config grants)",
                c.as_str()
            ),
            data: Some(serde_json::json!({ "capability": c.as_str() })),
        },
        H::Invalid(_) => RpcError::new(code::INVALID, e.to_string()),
        H::Store(_) => RpcError::new(code::STORE, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    //! What the host writes, the contract's owned types (the Rust SDK's) read back whole.
    use super::*;
    use trellis_core::ToolCall;
    use trellis_plugin_protocol::{OptionKind, PermissionOption};

    fn call() -> ToolCall {
        let mut c = ToolCall::placeholder("c1".into(), 1.0, 1);
        c.title = "Run `cargo test`".into();
        c.kind = trellis_core::ToolKind::Execute;
        c
    }

    fn through<T: serde::de::DeserializeOwned>(v: &impl Serialize) -> T {
        serde_json::from_value(serde_json::to_value(v).unwrap()).unwrap()
    }

    #[test]
    fn every_request_the_host_writes_reads_as_the_contract_says() {
        let c = call();
        let options = [PermissionOption {
            option_id: "ok".into(),
            name: "Allow".into(),
            kind: OptionKind::AllowOnce,
        }];
        let offer: PermissionOffer = through(&OfferParams {
            request_id: "r1",
            session: Some("s1"),
            call: &c,
            facts: facts_of(&c),
            options: &options,
            deadline_ms: 500,
            acp: Some("{}"),
        });
        assert_eq!(offer.request_id, "r1");
        assert_eq!(offer.session.as_deref(), Some("s1"));
        assert_eq!(offer.call["id"], "c1");
        assert_eq!(offer.call["kind"], "execute");
        assert_eq!(offer.facts, facts_of(&c));
        assert_eq!(offer.options, options);
        assert_eq!((offer.deadline_ms, offer.acp.as_deref()), (500, Some("{}")));

        let card: CardRequest = through(&CardParams {
            design: "d",
            call: &c,
            facts: facts_of(&c),
            width: 72,
        });
        assert_eq!((card.design.as_str(), card.width), ("d", 72));
        assert_eq!(card.call["title"], "Run `cargo test`");

        let t: TransformRequest = through(&TransformParams {
            id: "t",
            call: &c,
            facts: facts_of(&c),
            text: "out",
        });
        assert_eq!((t.id.as_str(), t.text.as_str()), ("t", "out"));

        let question = trellis_core::Elicitation {
            request_id: "7".into(),
            call_id: None,
            subagent: None,
            message: "Sign in".into(),
            mode: trellis_core::elicitation::ElicitMode::Url {
                elicitation_id: "e1".into(),
                url: "https://example.com/in".into(),
            },
        };
        let q: QuestionOffer = through(&QuestionOfferParams {
            session: Some("s1"),
            question: &question,
            deadline_ms: 250,
            acp: None,
        });
        assert_eq!(q.request_id(), "7");
        assert_eq!(q.session.as_deref(), Some("s1"));
        assert_eq!(
            (q.question["mode"].as_str(), q.deadline_ms),
            (Some("url"), 250)
        );
        assert_eq!(q.question["url"], "https://example.com/in");
        assert_eq!(q.acp, None);
    }
}

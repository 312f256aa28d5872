//! Requests of the agent's that wait for the driver's answer (permissions and questions),
//! parked with the SDK's responder by canonical JSON-RPC id, and answers that arrive
//! before their request was parked.

use std::collections::HashMap;

use agent_client_protocol::{Responder, V1};
use serde_json::{Value, json};

/// Permission and elicitation responders waiting for the driver's answer (or answers waiting for their
/// responder: the tap sees a request before its handler runs).
#[derive(Default)]
pub(crate) struct Responders {
    /// Requests waiting for the driver's answer, by canonical id.
    pub(crate) waiting: HashMap<String, (Parked, Responder<Value, V1>)>,
    /// Answers that came before their request was parked.
    pub(crate) answers: HashMap<String, Value>,
}

/// What kind of request waits for an answer: it says how the request is closed when
/// nobody is left to answer it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parked {
    Permission,
    Elicitation,
}

impl Parked {
    /// The answer when the connection closes with the request open.
    pub(crate) fn closed(self) -> Value {
        match self {
            Parked::Permission => json!({"outcome": {"outcome": "cancelled"}}),
            Parked::Elicitation => json!({"action": "cancel"}),
        }
    }

    /// The record of who closed it.
    pub(crate) fn decided(
        self,
        request_id: String,
        decider: trellis_core::Decider,
    ) -> trellis_core::LocalRecord {
        match self {
            Parked::Permission => trellis_core::LocalRecord::PermissionDecided {
                request_id,
                decider,
                reason: None,
            },
            Parked::Elicitation => trellis_core::LocalRecord::ElicitationDecided {
                request_id,
                decider,
            },
        }
    }
}

/// The canonical form of a responder's JSON-RPC id (the key of [`Responders`]).
pub(crate) fn id_key(responder: &Responder<Value, V1>) -> String {
    serde_json::to_string(responder.raw_id()).unwrap_or_default()
}

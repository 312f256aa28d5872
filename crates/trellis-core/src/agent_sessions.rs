//! The agent's own list of its sessions (`session/list`, for agents that advertise
//! `sessionCapabilities.list`): read leniently and kept for the sessions picker, which
//! merges it with the local history (a session only the agent knows can be resumed).

use serde::Serialize;
use serde_json::Value;

/// Sessions kept from one answer at most (an agent's page is usually 50 or so).
const MAX: usize = 1000;

/// One session as the agent lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentSession {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// As the agent wrote it (ISO 8601 by the protocol).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// The agent's last answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentSessions {
    pub sessions: Vec<AgentSession>,
    /// The agent has more (`nextCursor`): only the first page is asked for.
    pub more: bool,
}

/// Reads a `session/list` result; entries without a string `sessionId` are skipped.
pub fn parse(result: &Value) -> AgentSessions {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let sessions = result
        .get("sessions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| {
                    Some(AgentSession {
                        id: text(s, "sessionId").filter(|id| !id.is_empty())?,
                        cwd: text(s, "cwd"),
                        title: text(s, "title"),
                        updated_at: text(s, "updatedAt"),
                    })
                })
                .take(MAX)
                .collect()
        })
        .unwrap_or_default();
    AgentSessions {
        sessions,
        more: result
            .get("nextCursor")
            .is_some_and(|c| c.as_str().is_some_and(|c| !c.is_empty())),
    }
}

/// Whether capabilities (`agentCapabilities`) advertise `session/list`.
pub fn advertised(caps: Option<&Value>) -> bool {
    caps.and_then(|c| c.get("sessionCapabilities"))
        .and_then(|s| s.get("list"))
        .is_some_and(Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lenient_and_bounded() {
        let r = parse(&json!({"sessions": [
            {"sessionId": "a", "cwd": "/p", "title": "Fix it", "updatedAt": "2026-11-30T10:00:00Z"},
            {"sessionId": 7}, {"title": "no id"}, {"sessionId": ""}, "garbage",
            {"sessionId": "b"}], "nextCursor": "c2"}));
        assert_eq!(r.sessions.len(), 2);
        assert_eq!(r.sessions[0].title.as_deref(), Some("Fix it"));
        assert!(r.more);
        assert_eq!(parse(&json!({"sessions": "no"})), AgentSessions::default());
        assert!(advertised(Some(
            &json!({"sessionCapabilities": {"list": {}}})
        )));
        assert!(!advertised(Some(
            &json!({"sessionCapabilities": {"list": null}})
        )));
        assert!(!advertised(None));
    }
}

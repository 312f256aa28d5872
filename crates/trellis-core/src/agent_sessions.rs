//! The agent's own list of its sessions (`session/list`, for agents that advertise
//! `sessionCapabilities.list`): read leniently and kept for the sessions picker, which
//! merges it with the local history (a session only the agent knows can be resumed).
//! The pages the agent offers (`nextCursor`) are asked for one after another, up to
//! [`MAX`] sessions or [`MAX_PAGES`] pages, whichever comes first (an agent that keeps
//! offering a next page, or the same one, cannot keep the client asking).

use serde::Serialize;
use serde_json::Value;

/// Sessions kept at most, over all pages (an agent's page is usually 50 or so).
pub const MAX: usize = 1000;

/// Pages asked for at most, the first included.
pub const MAX_PAGES: u32 = 20;

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

/// The agent's answers to the last listing, its pages joined.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentSessions {
    pub sessions: Vec<AgentSession>,
    /// The agent offers more (`nextCursor`): asked for next, or left when a bound was
    /// reached.
    pub more: bool,
    /// The cursor of the next page, when the agent offered one.
    pub next: Option<String>,
    /// Pages joined so far.
    pub pages: u32,
}

impl AgentSessions {
    /// Joins the next page: sessions already listed are not listed twice.
    pub fn join(&mut self, page: AgentSessions) {
        for s in page.sessions {
            if self.sessions.len() >= MAX {
                break;
            }
            if !self.sessions.iter().any(|k| k.id == s.id) {
                self.sessions.push(s);
            }
        }
        self.more = page.more;
        self.next = page.next;
        self.pages += page.pages;
    }

    /// The cursor to ask with next, if the agent offers one and no bound is reached.
    pub fn ask_next(&self) -> Option<&str> {
        if self.pages >= MAX_PAGES || self.sessions.len() >= MAX {
            return None;
        }
        self.next.as_deref()
    }
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
    let next = result
        .get("nextCursor")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    AgentSessions {
        sessions,
        more: next.is_some(),
        next,
        pages: 1,
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
        assert_eq!(r.next.as_deref(), Some("c2"));
        assert_eq!(
            parse(&json!({"sessions": "no"})),
            AgentSessions {
                pages: 1,
                ..AgentSessions::default()
            }
        );
        assert!(advertised(Some(
            &json!({"sessionCapabilities": {"list": {}}})
        )));
        assert!(!advertised(Some(
            &json!({"sessionCapabilities": {"list": null}})
        )));
        assert!(!advertised(None));
    }

    #[test]
    fn pages_are_joined_without_repeats_and_within_bounds() {
        let page = |ids: &[&str], next: Option<&str>| {
            let sessions: Vec<_> = ids.iter().map(|i| json!({"sessionId": i})).collect();
            parse(&json!({"sessions": sessions, "nextCursor": next}))
        };
        let mut all = page(&["a", "b"], Some("p2"));
        assert_eq!(all.ask_next(), Some("p2"));
        all.join(page(&["b", "c"], None));
        let ids: Vec<_> = all.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert!(!all.more);
        assert_eq!(all.ask_next(), None, "no next page offered");
        // An agent that always offers a next page is asked MAX_PAGES times in all.
        let mut looping = page(&["x"], Some("again"));
        let mut asked = 1;
        while looping.ask_next().is_some() {
            looping.join(page(&["x"], Some("again")));
            asked += 1;
        }
        assert_eq!(asked, MAX_PAGES);
        assert!(looping.more, "it still offers more");
        assert_eq!(looping.sessions.len(), 1);
    }
}

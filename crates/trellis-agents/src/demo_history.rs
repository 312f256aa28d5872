//! The demo agent's memory of earlier sessions, for `session/list` (advertised with
//! `--load-session` or `--resume-session`): two sessions in the directory asked about,
//! which it can load (replaying a short history) or resume.

use serde_json::{Value, json};

/// The answer to `session/list` for `params` (`cwd` filters, as the protocol says), one
/// session a page (`cursor` names the next), so that clients follow pages.
pub fn listed(params: &Value) -> Value {
    let cwd = params["cwd"].as_str().unwrap_or("/");
    match params["cursor"].as_str() {
        None => json!({"sessions": [
            {"sessionId": "demo-earlier-2", "cwd": cwd, "title": "Earlier: add a changelog",
             "updatedAt": "2026-11-30T16:40:00Z"}], "nextCursor": "page-2"}),
        Some("page-2") => json!({"sessions": [
            {"sessionId": "demo-earlier-1", "cwd": cwd, "title": "Earlier: make add check for overflow",
             "updatedAt": "2026-11-29T09:15:00Z"}]}),
        Some(_) => json!({"sessions": []}),
    }
}

//! The demo agent's questions (`elicitation/create`): `/elicit` asks for a release form with
//! a field of every kind the protocol allows; `/elicit-url` sends the user to a page and
//! says `elicitation/complete` once they agreed. Either scene then says what it got, so a
//! test (or a person) sees the answer travel both ways.

use serde_json::{Value, json};

use crate::peer::{Peer, PeerError};

/// The release form: text with a pattern, a bounded text, a titled choice, an integer
/// with bounds and a default, a boolean, a multi-select, an e-mail.
pub fn release_form() -> Value {
    json!({
        "type": "object",
        "title": "Release",
        "description": "What to publish",
        "properties": {
            "version": {"type": "string", "title": "Version", "pattern": "^[0-9]+\\.[0-9]+\\.[0-9]+$",
                "description": "semver, e.g. 1.4.0"},
            "channel": {"type": "string", "title": "Channel", "oneOf": [
                {"const": "stable", "title": "Stable"}, {"const": "beta", "title": "Beta"}],
                "default": "beta"},
            "targets": {"type": "array", "title": "Targets", "minItems": 1,
                "items": {"enum": ["linux", "macos", "windows"]}, "default": ["linux"]},
            "shards": {"type": "integer", "title": "Shards", "minimum": 1, "maximum": 8, "default": 2},
            "dry_run": {"type": "boolean", "title": "Dry run", "default": true},
            "notes": {"type": "string", "title": "Notes", "maxLength": 120},
            "contact": {"type": "string", "title": "Contact", "format": "email"}
        },
        "required": ["version", "channel", "targets"]
    })
}

/// Asks `/elicit`'s form; returns what to tell the user.
pub fn form(peer: &mut Peer, session_id: &str, form_cap: bool) -> Result<String, PeerError> {
    if !form_cap {
        return Ok(
            "This client does not take forms (no `elicitation.form` capability), so I cannot ask."
                .into(),
        );
    }
    let asked = peer.request(
        "elicitation/create",
        json!({"sessionId": session_id, "mode": "form",
            "message": "Which release should I cut?", "requestedSchema": release_form()}),
    );
    Ok(match asked {
        Ok(r) => match r["action"].as_str() {
            Some("accept") => format!(
                "Thanks: I got {}.",
                serde_json::to_string(&r["content"]).unwrap_or_default()
            ),
            Some("decline") => "You declined the form; I will not cut a release.".into(),
            Some("cancel") => "The form was dismissed.".into(),
            _ => "The client's answer made no sense to me.".into(),
        },
        Err(PeerError::Rpc(e)) => format!("The client refused the form: {e}"),
        Err(e) => return Err(e),
    })
}

/// Sends `/elicit-url`'s link, then `elicitation/complete` when the user agreed.
pub fn link(
    peer: &mut Peer,
    session_id: &str,
    url_cap: bool,
    n: usize,
) -> Result<String, PeerError> {
    if !url_cap {
        return Ok(
            "This client does not open links (no `elicitation.url` capability), so I cannot ask."
                .into(),
        );
    }
    let elicitation_id = format!("demo-link-{n}");
    let asked = peer.request(
        "elicitation/create",
        json!({"sessionId": session_id, "mode": "url", "elicitationId": elicitation_id,
            "url": format!("https://example.com/trellis-demo/sign-in?step={n}"),
            "message": "Sign in to the demo service"}),
    );
    Ok(match asked {
        Ok(r) if r["action"] == "accept" => {
            peer.notify(
                "elicitation/complete",
                json!({"elicitationId": elicitation_id}),
            )?;
            "You signed in; I am going on.".into()
        }
        Ok(r) => format!(
            "No sign-in ({}).",
            r["action"].as_str().unwrap_or("no answer")
        ),
        Err(PeerError::Rpc(e)) => format!("The client refused the link: {e}"),
        Err(e) => return Err(e),
    })
}

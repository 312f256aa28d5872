//! Where an agent elsewhere is dialed, checked before anything is: the URL's scheme
//! (WebSocket or streamable HTTP, plain or TLS), host and port, no credentials in it, and
//! no plain connection to another machine unless the user said so.

use tokio_tungstenite::tungstenite::http;

/// Where a URL points, checked before anything is dialed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub tls: bool,
    /// Streamable HTTP (`http://`, `https://`), not WebSocket.
    pub http: bool,
    /// The host as written (no brackets around an IPv6 address).
    pub host: String,
    pub port: u16,
    /// `host:port`, as shown to the user (a URL's credentials, path and query left out).
    pub shown: String,
}

impl Target {
    /// Reads `url`: a WebSocket or HTTP URL whose plain form reaches only this machine
    /// unless `plaintext`.
    pub fn of(url: &str, plaintext: bool) -> Result<Target, String> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("{}: not a URL ({e})", shown_url(url)))?;
        let (tls, http) = match uri.scheme_str() {
            Some("wss") => (true, false),
            Some("ws") => (false, false),
            Some("https") => (true, true),
            Some("http") => (false, true),
            _ => {
                return Err(format!(
                    "{}: not a ws://, wss://, http:// or https:// URL",
                    shown_url(url)
                ));
            }
        };
        if let Some(q) = uri.query()
            && credential_in(q)
        {
            return Err(format!(
                "{}: a credential in a URL's query ends up in logs and process lists; give it as the token of an entry [agents.NAME] with this url (token = {{ env = \"…\" }})",
                shown_url(url)
            ));
        }
        if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            return Err(format!(
                "{}: credentials in a URL end up in logs and process lists; give them as the token of an entry [agents.NAME] with this url (token = {{ env = \"…\" }})",
                shown_url(url)
            ));
        }
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("{}: no host", shown_url(url)))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let shown = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        if !tls && !plaintext && !is_loopback(&host) {
            let (plain, secure) = if http {
                ("http", "https")
            } else {
                ("ws", "wss")
            };
            return Err(format!(
                "{}: plain {plain}:// to another machine sends the session, and any token, unencrypted; use {secure}://, or set plaintext = true for this agent if the network is yours",
                shown_url(url)
            ));
        }
        Ok(Target {
            tls,
            http,
            host,
            port,
            shown,
        })
    }
}

/// Whether a URL's query holds what looks like a credential: a parameter named like one,
/// or a Trellis token under any name.
fn credential_in(query: &str) -> bool {
    query.split('&').any(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        named_like_credential(name) || value.starts_with("trl_")
    })
}

/// Whether a name (a query parameter's, a header's) says its value is a credential: it
/// holds token, key, secret, password, auth, credential or sig, in any case.
pub fn named_like_credential(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "token",
        "key",
        "secret",
        "password",
        "auth",
        "credential",
        "sig",
    ]
    .iter()
    .any(|w| name.contains(w))
}

/// Whether `host` is this machine by name or address (what needs no encryption).
pub fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A URL as it may be shown: scheme, host and path, never credentials or a query.
pub fn shown_url(url: &str) -> String {
    let cut = url.split(['?', '#']).next().unwrap_or("");
    let (scheme, rest) = cut.split_once("://").unwrap_or(("", cut));
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let shown = if scheme.is_empty() {
        rest.to_string()
    } else {
        format!("{scheme}://{rest}")
    };
    one_line(&shown)
}

/// `s` on one line with no control characters (it came from the network).
pub(crate) fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_websocket_reaches_only_this_machine_unless_the_user_says_so() {
        assert!(Target::of("ws://127.0.0.1:9000/acp", false).is_ok());
        assert!(Target::of("ws://localhost:9000/acp", false).is_ok());
        assert!(Target::of("ws://[::1]:9000/acp", false).is_ok());
        let e = Target::of("ws://10.0.0.5:9000/acp", false).unwrap_err();
        assert!(e.contains("unencrypted"), "{e}");
        assert!(Target::of("ws://10.0.0.5:9000/acp", true).is_ok());
        let t = Target::of("wss://agents.example/acp", false).unwrap();
        assert_eq!(
            (t.tls, t.port, t.shown.as_str()),
            (true, 443, "agents.example:443")
        );
    }

    #[test]
    fn credentials_and_queries_are_never_shown() {
        let e = Target::of("wss://user:secret@agents.example/acp", false).unwrap_err();
        assert!(!e.contains("secret"), "{e}");
        assert_eq!(
            shown_url("wss://u:p@h.example/acp?token=abc"),
            "wss://h.example/acp"
        );
        let e = Target::of("ws://127.0.0.1:9/acp?access_token=abc", false).unwrap_err();
        assert!(e.contains("query") && !e.contains("abc"), "{e}");
        assert!(Target::of("ws://127.0.0.1:9/acp?x=trl_abc", false).is_err());
        assert!(Target::of("ws://127.0.0.1:9/acp?session=1", false).is_ok());
        let e = Target::of("ftp://h.example/acp", false).unwrap_err();
        assert!(e.contains("not a ws://"), "{e}");
        // Streamable HTTP: the same rules.
        let t = Target::of("https://h.example/acp", false).unwrap();
        assert!(t.http && t.tls && t.port == 443, "{t:?}");
        let e = Target::of("http://10.0.0.5:9000/acp", false).unwrap_err();
        assert!(e.contains("plain http://") && e.contains("https://"), "{e}");
        assert!(Target::of("http://localhost:9000/acp", false).is_ok());
        assert!(Target::of("https://u:p@h.example/acp", false).is_err());
    }
}

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
        named_like_credential(name).is_some() || credential_value(value).is_some()
    })
}

/// The words that make a name (a query parameter's, a header's) a credential's.
const CREDENTIAL_WORDS: [&str; 12] = [
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "auth",
    "authorization",
    "credential",
    "credentials",
    "sig",
    "signature",
    "cookie",
];

/// The word that says a name's value is a credential, if one does: a word of the name
/// (split at `-`, `_` and `.`, any case) that is one of [`CREDENTIAL_WORDS`] or ends with
/// one (`X-Api-Key`, `access_token`, `apikey`, `Proxy-Authorization`, but not
/// `X-Keyboard`, `X-Design` or `X-Author`).
pub fn named_like_credential(name: &str) -> Option<&'static str> {
    let name = name.to_ascii_lowercase();
    name.split(['-', '_', '.']).find_map(|word| {
        CREDENTIAL_WORDS
            .iter()
            .copied()
            .find(|w| word == *w || (word.len() > w.len() && word.ends_with(w)))
    })
}

/// What a value is, when it is plainly a credential: a bearer or basic credential, a
/// Trellis token anywhere in it, or a key in a well-known vendor's format.
pub fn credential_value(value: &str) -> Option<&'static str> {
    let v = value.trim().to_ascii_lowercase();
    let starts = |p: &str| v.starts_with(p);
    if starts("bearer ") || starts("bearer%20") || starts("bearer+") {
        Some("a bearer credential")
    } else if starts("basic ") || starts("basic%20") || starts("basic+") {
        Some("a basic credential")
    } else if holds_trellis_token(&v) {
        Some("a Trellis token")
    } else if [
        "sk-",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
    ]
    .iter()
    .any(|p| starts(p))
        // A key is long and of one piece (`sk-SK`, a locale, is none).
        && v.len() >= 20
        && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        Some("an API key")
    } else {
        None
    }
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

/// Whether `s` holds a Trellis token (`trl_…`, not inside another word: `ctrl_x` is none).
pub fn holds_trellis_token(s: &str) -> bool {
    s.match_indices("trl_")
        .any(|(i, _)| i == 0 || !s.as_bytes()[i - 1].is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_is_known_by_a_word_of_its_name_or_by_its_value() {
        for name in [
            "X-Api-Key",
            "access_token",
            "apikey",
            "Proxy-Authorization",
            "X-Auth-Token",
            "X-Amz-Signature",
            "Cookie",
            "sig",
        ] {
            assert!(named_like_credential(name).is_some(), "{name}");
        }
        for name in [
            "X-Keyboard",
            "X-Design",
            "X-Author",
            "X-Team",
            "keyword",
            "q",
        ] {
            assert_eq!(named_like_credential(name), None, "{name}");
        }
        for value in [
            "Bearer abc",
            " bearer abc",
            "Basic dXNlcg==",
            "x trl_abc",
            "x=trl_abc",
        ] {
            assert!(credential_value(value).is_some(), "{value}");
        }
        assert!(credential_value("sk-ant-api03-abcdefghijklmnop").is_some());
        assert_eq!(credential_value("sk-SK"), None);
        for value in ["core", "ctrl_x", "a bearer of news", "trellis"] {
            assert_eq!(credential_value(value), None, "{value}");
        }
        // A query too: `?q=Bearer%20…` is refused before dialing.
        let e = Target::of("wss://h.example/acp?q=Bearer%20abc", false).unwrap_err();
        assert!(e.contains("credential"), "{e}");
        assert!(Target::of("wss://h.example/acp?keyword=x", false).is_ok());
    }

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

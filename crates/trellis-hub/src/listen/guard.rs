//! Who the listener answers: requests to a loopback name (or one the user allowed), with
//! a bearer token in the `Authorization` header and nowhere else.
//!
//! Failed checks are counted per credential tried: one that keeps failing is refused
//! without being looked up, and nobody else pays for it — a credential that checks is
//! never refused, whatever others sent. Every client of a loopback listener has the
//! same address, so the credential is what tells them apart; tokens and pairing codes
//! carry 128 random bits, so counting guesses in all would slow nobody but the owner.
//! What is refused by design (a token in a URL, none at all) costs nothing.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::{Request, StatusCode};

use super::{Pairing, Problem, fail, hash};
use crate::tokens::{Refused, Scope, Token};

/// Failed checks of one credential allowed per minute; then it is refused unchecked.
const FAILURES_PER_MINUTE: usize = 10;
/// Credentials whose failures are remembered (the oldest forgotten first).
const REMEMBERED: usize = 4096;
const MINUTE: Duration = Duration::from_secs(60);

/// Failed checks, per credential tried (its SHA-256).
#[derive(Debug, Default)]
pub(super) struct Failures {
    by: Mutex<HashMap<String, VecDeque<Instant>>>,
    /// Requests refused for a token in their URL (said now and then, not each time).
    in_url: AtomicU64,
}

impl Failures {
    /// Whether `credential` failed too often this minute to be checked again.
    fn locked(&self, credential: &str) -> bool {
        let mut by = self.by.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let Some(f) = by.get_mut(&hash(credential)) else {
            return false;
        };
        while f.front().is_some_and(|t| now.duration_since(*t) > MINUTE) {
            f.pop_front();
        }
        f.len() >= FAILURES_PER_MINUTE
    }

    /// `credential` failed a check.
    fn failed(&self, credential: &str) {
        let mut by = self.by.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if by.len() >= REMEMBERED {
            by.retain(|_, f| f.back().is_some_and(|t| now.duration_since(*t) <= MINUTE));
        }
        if by.len() >= REMEMBERED {
            // Still full: the credential failed longest ago is forgotten.
            let oldest = by
                .iter()
                .min_by_key(|(_, f)| f.back().copied())
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                by.remove(&k);
            }
        }
        let f = by.entry(hash(credential)).or_default();
        f.push_back(now);
        if f.len() > FAILURES_PER_MINUTE {
            f.pop_front();
        }
    }

    /// A request carried a credential in its URL: whether to say so (the first time,
    /// then at every power of two, so a page that sends thousands cannot flood the log).
    fn say_in_url(&self) -> bool {
        (self.in_url.fetch_add(1, Ordering::Relaxed) + 1).is_power_of_two()
    }
}

fn locked() -> Problem {
    fail(
        StatusCode::TOO_MANY_REQUESTS,
        "locked",
        "this credential failed too often: try again in a minute",
    )
}

/// Whether the request's `Host` names this listener: a loopback address, `localhost`, or
/// a name in `allowed` (a page of another site that made its name resolve here, to
/// rebind DNS, names itself).
pub(super) fn host_allowed(req: &Request<Incoming>, allowed: &[String]) -> Result<(), Problem> {
    let ok = |host: &str| {
        host_name(host).is_some_and(|name| {
            let loopback = name == "localhost"
                || name
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            loopback || allowed.contains(&name)
        })
    };
    let mut hosts = req.headers().get_all(hyper::header::HOST).iter();
    let host = hosts.next().and_then(|h| h.to_str().ok());
    // Exactly one Host, and a request line naming a host (absolute form) names the same.
    let one = hosts.next().is_none();
    let line = req.uri().authority().map(|a| a.as_str());
    if one && host.is_some_and(ok) && line.is_none_or(|a| Some(a) == host) {
        return Ok(());
    }
    Err(fail(
        StatusCode::MISDIRECTED_REQUEST,
        "host",
        "this listener answers requests to 127.0.0.1, [::1] and localhost only, and to the names given with trellis serve --allow-host",
    ))
}

/// The name in a `Host` header, without its port (`[v6]` keeps its brackets), lowercased,
/// one final dot dropped; `None` when it is not `NAME`, `NAME:PORT`, `[V6]` or
/// `[V6]:PORT` (a port being 1 to 65535).
pub fn host_name(host: &str) -> Option<String> {
    let port_ok = |p: &str| {
        !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u16>().is_ok_and(|n| n > 0)
    };
    let name = if let Some(rest) = host.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(port_ok)) {
            return None;
        }
        v6.parse::<std::net::Ipv6Addr>().ok()?;
        format!("[{v6}]")
    } else {
        let name = match host.split_once(':') {
            Some((h, port)) if port_ok(port) => h,
            Some(_) => return None,
            None => host,
        };
        let name = name.strip_suffix('.').unwrap_or(name);
        if name.is_empty() || name.ends_with('.') || name.contains("..") {
            return None;
        }
        name.to_string()
    };
    Some(name.to_ascii_lowercase())
}

/// Whether `name` may be given to `--allow-host`: a DNS name (letters, digits, `-`, `.`),
/// not an address — loopback ones are answered anyway, and an unspecified one
/// (`0.0.0.0`) is what a page reaches this machine through.
pub fn valid_host_name(name: &str) -> bool {
    name.parse::<std::net::IpAddr>().is_err()
        && !name.is_empty()
        && name.len() <= 253
        && name
            .split('.')
            .all(|l| !l.is_empty() && l.len() <= 63 && !l.starts_with('-') && !l.ends_with('-'))
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
}

/// A request whose URL carries what looks like a credential: refused (it ends up in
/// histories, logs and screenshots), and said in the hub's messages; never counted
/// against anyone.
pub(super) fn credential_in_url(p: &Pairing, req: &Request<Incoming>) -> Result<(), Problem> {
    let Some(q) = req.uri().query() else {
        return Ok(());
    };
    let q = q.to_ascii_lowercase();
    // By name, or by value: a token is recognised by its prefix wherever it is put.
    let named = ["token", "auth", "bearer", "key", "code", "pair"]
        .iter()
        .any(|w| q.contains(w));
    if !named && !q.contains("trl_") && !q.contains("trl%5f") {
        return Ok(());
    }
    if p.failures.say_in_url() {
        crate::notices::say(format!(
            "refused a request to {} carrying a credential in its URL ({} so far)",
            trellis_text::one_line(req.uri().path()),
            p.failures.in_url.load(Ordering::Relaxed)
        ));
    }
    Err(fail(
        StatusCode::BAD_REQUEST,
        "token_in_url",
        "a token goes in the Authorization header, never in a URL",
    ))
}

/// A POST's `Origin`, when the browser sends one, names this listener (the `Host`).
pub(super) fn same_origin(req: &Request<Incoming>) -> bool {
    let Some(origin) = req.headers().get("origin").and_then(|o| o.to_str().ok()) else {
        return true;
    };
    let host = req
        .headers()
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    origin
        .strip_prefix("http://")
        .is_some_and(|o| !host.is_empty() && o == host)
}

/// The bearer token of a request, checked for `scope`.
pub(super) fn authorize(
    p: &Pairing,
    req: &Request<Incoming>,
    scope: Scope,
) -> Result<Token, Problem> {
    let Some(secret) = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            // The scheme's name is case-insensitive (RFC 9110).
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        })
    else {
        return Err(fail(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a token is needed (Authorization: Bearer …; trellis pair or trellis token new)",
        ));
    };
    if p.failures.locked(secret) {
        return Err(locked());
    }
    let token = match p.store.check(secret) {
        Ok(Ok(t)) => t,
        Ok(Err(why)) => {
            p.failures.failed(secret);
            let message = match why {
                Refused::Unknown => "an unknown or revoked token",
                Refused::Expired => "an expired token",
            };
            return Err(fail(StatusCode::UNAUTHORIZED, "unauthorized", message));
        }
        Err(e) => {
            return Err(fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "store",
                &format!("the token store cannot be read: {e}"),
            ));
        }
    };
    if !token.grants(scope) {
        return Err(fail(
            StatusCode::FORBIDDEN,
            "scope",
            &format!(
                "this token may not {} (scope {})",
                match scope {
                    Scope::Read => "read",
                    Scope::Prompt => "send prompts",
                    Scope::Approve => "answer requests",
                    Scope::Admin => "administer",
                    Scope::Agent => "reach a served agent",
                },
                scope.name()
            ),
        ));
    }
    Ok(token)
}

/// Uses up pairing code `code` if it is live; counted as a failure of that code if not.
pub(super) fn take_code(p: &Pairing, code: &str) -> Result<(), Problem> {
    let code = code.trim();
    if p.failures.locked(code) {
        return Err(locked());
    }
    if p.take_code(code) {
        return Ok(());
    }
    p.failures.failed(code);
    Err(fail(
        StatusCode::UNAUTHORIZED,
        "bad_code",
        "an unknown, used or expired pairing code (trellis pair makes a new one)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_credential_failing_locks_only_itself() {
        let f = Failures::default();
        for _ in 0..FAILURES_PER_MINUTE {
            assert!(!f.locked("guess"));
            f.failed("guess");
        }
        assert!(f.locked("guess"));
        assert!(!f.locked("the owner's token"), "nobody else pays");
    }

    #[test]
    fn what_is_remembered_is_bounded() {
        let f = Failures::default();
        for i in 0..REMEMBERED + 50 {
            f.failed(&format!("guess {i}"));
        }
        assert!(f.by.lock().unwrap().len() <= REMEMBERED);
    }

    #[test]
    fn host_names_are_compared_whole() {
        let name = |h: &str| host_name(h);
        assert_eq!(name("127.0.0.1:8080").as_deref(), Some("127.0.0.1"));
        assert_eq!(name("[::1]:8080").as_deref(), Some("[::1]"));
        assert_eq!(name("LocalHost.").as_deref(), Some("localhost"));
        assert_eq!(
            name("127.0.0.1.nip.io:80").as_deref(),
            Some("127.0.0.1.nip.io")
        );
        for bad in [
            "[::1]evil",
            "[::1]:80:81",
            "localhost..",
            "localhost:99999",
            "localhost:0",
            "a:b",
            "",
            "[nope]",
            ":80",
        ] {
            assert_eq!(name(bad), None, "{bad}");
        }
        assert!(!valid_host_name("0.0.0.0"));
        assert!(!valid_host_name("::"));
        assert!(valid_host_name("phone.example.net"));
        assert!(!valid_host_name("evil.example/x"));
        assert!(!valid_host_name("a..b"));
        assert!(!valid_host_name(""));
    }
}

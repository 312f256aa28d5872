//! Which addresses Trellis fetches from, checked as parsed addresses — never by comparing
//! text prefixes (`http://localhost.evil.example/` is not this machine): https anywhere;
//! plain http only to this machine (the host `localhost`, or a loopback IP address),
//! unless the user accepts, in the config, an index anyone on the way can change
//! (`[registry] unverified_http`). No credentials in an address. The same rule holds for
//! every address a redirect leads to.

use ureq::http::Uri;

/// Whether `host` (as an address gives it: `[::1]` with brackets) is this machine.
pub fn loopback(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// What an address may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// https, or http to this machine.
    Secure,
    /// Also plain http elsewhere (the user accepted it for the index).
    AnyHttp,
}

/// `url` parsed and checked against `rule`; why not, in words.
pub fn check(url: &str, rule: Rule) -> Result<Uri, String> {
    if url.len() > 2048 || url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("not an address (too long, or blanks or control characters in it)".into());
    }
    let uri: Uri = url.parse().map_err(|e| format!("not an address: {e}"))?;
    let Some(authority) = uri.authority() else {
        return Err("no host".into());
    };
    if authority.as_str().contains('@') {
        return Err("credentials in the address".into());
    }
    let host = uri.host().unwrap_or_default();
    // The authority must be exactly the host and, maybe, a port: a parser that reads
    // `[::1].evil` as `[::1]` must not decide where the request goes.
    let whole = match authority.port() {
        Some(p) => format!("{host}:{}", p.as_str()),
        None => host.to_string(),
    };
    if host.is_empty() || !authority.as_str().eq_ignore_ascii_case(&whole) {
        return Err(format!("`{}` is not a host", authority.as_str()));
    }
    match uri.scheme_str() {
        Some("https") => Ok(uri),
        Some("http") if loopback(host) || rule == Rule::AnyHttp => Ok(uri),
        Some("http") => Err(format!(
            "plain http to {host}, which is not this machine: anyone on the way could change what comes back"
        )),
        _ => Err("neither https nor http".into()),
    }
}

/// Where a redirect from `from` to `location` leads (an absolute address, or a path on
/// the same host), checked against `rule`.
pub fn redirected(from: &Uri, location: &str, rule: Rule) -> Result<Uri, String> {
    let next = if location.starts_with('/') && !location.starts_with("//") {
        format!(
            "{}://{}{location}",
            from.scheme_str().unwrap_or("https"),
            from.authority().map(|a| a.as_str()).unwrap_or_default()
        )
    } else {
        location.to_string()
    };
    check(&next, rule).map_err(|why| format!("a redirect to {next}: {why}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn loopback_is_a_whole_host() {
        for ok in [
            "http://localhost/r.json",
            "http://LOCALHOST:8080/r.json",
            "http://127.0.0.1:1/a",
            "http://127.5.6.7/a",
            "http://[::1]:9/a",
            "https://anything.example/a",
        ] {
            assert!(check(ok, Rule::Secure).is_ok(), "{ok}");
        }
        for bad in [
            "http://localhost.evil.example/a",
            "http://127.0.0.1.evil.example/a",
            "http://127.0.0.1@evil.example/a",
            "http://user:pw@localhost/a",
            "http://[::1].evil/a",
            "http://10.0.0.1/a",
            "ftp://localhost/a",
            "http:///a",
            "http://local host/a",
        ] {
            assert!(check(bad, Rule::Secure).is_err(), "{bad}");
        }
        assert!(check("http://mirror.example/r.json", Rule::AnyHttp).is_ok());
    }

    #[test]
    fn redirects_obey_the_same_rule() {
        let from: Uri = "https://cdn.example/a.tgz".parse().unwrap();
        assert_eq!(
            redirected(&from, "/b.tgz", Rule::Secure)
                .unwrap()
                .to_string(),
            "https://cdn.example/b.tgz"
        );
        assert!(redirected(&from, "http://10.1.2.3/x", Rule::Secure).is_err());
        assert!(redirected(&from, "//evil.example/x", Rule::Secure).is_err());
        let local: Uri = "http://127.0.0.1:8000/a".parse().unwrap();
        assert!(redirected(&local, "/b", Rule::Secure).is_ok());
    }
}

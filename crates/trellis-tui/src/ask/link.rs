//! A link the agent asks the user to visit, as the question dialog presents it: the site
//! it really leads to, the whole address, and what is odd about it. Read by hand rather than
//! with a URL crate: only the authority matters here, and a full parser (with IDNA) would
//! pull Unicode tables into the client for one line of text.

use ratatui::text::{Line, Span};
use trellis_text::sanitize::one_line;
use trellis_view::Theme;

use super::wrapped;

/// What a link dialog shows under the question: the site, the whole address, what is odd
/// about it; returns its title, key line, and the rows of `body` that hold the address.
pub(super) fn link_lines(
    url: &str,
    width: usize,
    theme: &Theme,
    body: &mut Vec<Line<'static>>,
) -> (String, Vec<Line<'static>>, std::ops::Range<usize>) {
    let link = Link::parse(url);
    body.push(Line::default());
    body.push(Line::from(vec![
        Span::styled("site  ", theme.dim),
        Span::styled(one_line(&link.host).into_owned(), theme.title),
    ]));
    // The address on lines of its own (a hyperlink where it is safe to make one; a
    // terminal that finds links in text finds it too).
    let clean = one_line(url).into_owned();
    let start = body.len();
    body.extend(wrapped(&clean, width, theme.text));
    let rows = start..body.len();
    for w in &link.warnings {
        body.extend(wrapped(&format!("⚠ {w}"), width, theme.failed));
    }
    let keys = if openable(url) {
        "Enter open in the browser · c copy · y go on · d decline · Esc dismiss"
    } else {
        body.extend(wrapped(
            "Trellis opens only plain http and https addresses: copy it if you trust it",
            width,
            theme.dim,
        ));
        "c copy · y go on · d decline · Esc dismiss"
    };
    let keys = wrapped(keys, width, theme.dim);
    ("The agent asks you to visit a link".into(), keys, rows)
}

/// Whether Trellis hands `url` to a browser (and makes it a hyperlink): an http or https
/// address of printable ASCII only (no spaces, no control or look-alike characters; an
/// OSC 8 sequence cannot be cut short by it).
pub fn openable(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://"))
        && url.len() > lower.find("//").map_or(0, |i| i + 2)
        && url.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// A link as the dialog presents it: the site it leads to and what is odd about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub host: String,
    pub warnings: Vec<String>,
}

impl Link {
    /// Reads the parts of `url` a user must see before visiting it. Not a full URL parser:
    /// it finds the authority (`scheme://[user@]host[:port]`) the way browsers do.
    pub fn parse(url: &str) -> Link {
        let mut warnings = Vec::new();
        let (scheme, rest) = match url.split_once("://") {
            Some((s, r))
                if !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
            {
                (s.to_ascii_lowercase(), r)
            }
            _ => {
                return Link {
                    host: "(not a web address)".into(),
                    warnings: vec!["this is not a web address: do not open it".into()],
                };
            }
        };
        if scheme != "https" {
            warnings.push(if scheme == "http" {
                "not encrypted (http)".to_string()
            } else {
                format!("not a web page ({scheme}:): opening it may start a program")
            });
        }
        let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or_default();
        let host_port = match authority.rsplit_once('@') {
            Some((user, h)) => {
                warnings.push(format!(
                    "the address starts with {:?} before an @: the site is what follows it",
                    one_line(user)
                ));
                h
            }
            None => authority,
        };
        let host = if host_port.starts_with('[') {
            host_port
                .split(']')
                .next()
                .map(|h| format!("{h}]"))
                .unwrap_or_default()
        } else {
            host_port.split(':').next().unwrap_or_default().to_string()
        };
        if !host.is_ascii() || host.contains("xn--") {
            warnings
                .push("the site's name has non-Latin letters: it may imitate another site".into());
        }
        if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
            warnings.push("the address holds spaces or control characters".into());
        }
        Link {
            host: if host.is_empty() {
                "(none)".into()
            } else {
                host.to_lowercase()
            },
            warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_name_their_real_site_and_their_tricks() {
        let l = Link::parse("https://accounts.example.com/login?next=/x");
        assert_eq!(l.host, "accounts.example.com");
        assert!(l.warnings.is_empty());
        let l = Link::parse("https://github.com@evil.example:8443/login");
        assert_eq!(l.host, "evil.example");
        assert!(l.warnings[0].contains("github.com"), "{:?}", l.warnings);
        let l = Link::parse("http://xn--pple-43d.com/");
        assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings);
        assert!(Link::parse("javascript:alert(1)").warnings[0].contains("not a web address"));
        assert!(Link::parse("file:///etc/passwd").warnings[0].contains("may start a program"));
        assert_eq!(Link::parse("https://[::1]:80/").host, "[::1]");
    }

    #[test]
    fn only_plain_web_addresses_are_opened() {
        assert!(openable("https://example.com/a?b=c#d"));
        assert!(openable("HTTP://example.com"));
        for u in [
            "https://",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "https://exa mple.com",
            "https://example.com/\u{1b}]8;;x",
            "https://bücher.example/",
            "ssh://host",
        ] {
            assert!(!openable(u), "{u}");
        }
    }
}

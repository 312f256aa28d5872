//! The listener's credentials from the command line: `trellis token new|list|revoke`
//! (the tokens a hub's listener accepts) and `trellis pair` (a single-use code for a
//! phone, from the hub of yours that listens).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use trellis_hub::place::runtime_dir;

use crate::output::safe;
use crate::serve::{DEFAULT_HUB, token_store};

#[derive(clap::Subcommand)]
pub enum TokenCmd {
    /// Make a token (shown once): `--scope` read, prompt, approve or admin for a hub's
    /// listener, agent for `trellis agent serve` (may repeat).
    New {
        #[arg(long)]
        label: String,
        #[arg(long = "scope", value_name = "SCOPE", default_value = "approve")]
        scopes: Vec<String>,
        /// How long it lives (`30d`, `12h`, `90m`; `never`).
        #[arg(long, default_value = "30d")]
        ttl: String,
    },
    /// The tokens there are (never the tokens themselves).
    List,
    /// Revoke a token by id or label: refused from the next request on.
    Revoke { id_or_label: String },
}

fn ttl_of(s: &str) -> anyhow::Result<Option<Duration>> {
    if s == "never" {
        return Ok(None);
    }
    let (n, unit) = s.split_at(s.trim_end_matches(char::is_alphabetic).len());
    let n: u64 = n
        .parse()
        .map_err(|_| anyhow::anyhow!("--ttl {s}: a number and d, h or m (or never)"))?;
    let secs = match unit {
        "d" => n * 86_400,
        "h" => n * 3_600,
        "m" => n * 60,
        _ => anyhow::bail!("--ttl {s}: a number and d, h or m (or never)"),
    };
    Ok(Some(Duration::from_secs(secs)))
}

/// `trellis token new|list|revoke`.
pub fn token(cmd: TokenCmd) -> anyhow::Result<ExitCode> {
    use trellis_hub::tokens::Scope;
    let store = token_store();
    match cmd {
        TokenCmd::New { label, scopes, ttl } => {
            let label = trellis_text::one_line(&label).trim().to_string();
            if label.is_empty() || label.len() > 64 {
                anyhow::bail!("--label: one line of 1 to 64 characters");
            }
            let scopes = scopes
                .iter()
                .map(|s| {
                    Scope::parse(s).ok_or_else(|| {
                        anyhow::anyhow!("--scope {s}: one of read, prompt, approve, admin, agent")
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let (t, secret) = store.mint(&label, &scopes, ttl_of(&ttl)?)?;
            out!("{secret}");
            say!(
                "trellis: token {} ({}) made; it is shown only now. Send it as Authorization: Bearer …, never in a URL.",
                t.id,
                t.label
            );
        }
        TokenCmd::List => {
            let now = trellis_hub::tokens::now();
            for t in store.list()? {
                let scopes: Vec<&str> = t.scopes.iter().map(|s| s.name()).collect();
                let life = match t.expires {
                    None => "never expires".to_string(),
                    Some(e) if e <= now => "expired".to_string(),
                    Some(e) => format!("expires in {}h", (e - now) / 3600),
                };
                out!(
                    "{}  {:<24} {:<20} {life}",
                    t.id,
                    safe(&t.label),
                    scopes.join(",")
                );
            }
        }
        TokenCmd::Revoke { id_or_label } => match store.revoke(&id_or_label)? {
            0 => anyhow::bail!("no token {}", safe(&id_or_label)),
            n => out!("revoked {n} token(s)"),
        },
    }
    Ok(ExitCode::SUCCESS)
}

/// `trellis pair`: a single-use code from a hub's listener, as an address and a QR code
/// to open on a phone. Without `--hub`: the hub of this user that listens (the default
/// one when several do).
pub fn pair(hub: Option<&str>) -> anyhow::Result<ExitCode> {
    let hub = match hub {
        Some(h) => h.to_string(),
        None => listening_hub()?,
    };
    let mut c = crate::hub_cmd::client(&hub, "trellis pair")
        .with_context(|| format!("no hub {hub} (trellis serve --listen 127.0.0.1:0)"))?;
    match c.call(trellis_hub::wire::Op::Pair, None)? {
        trellis_hub::wire::Body::Paired { url, expires_s } => {
            let qr = qrcode::QrCode::new(url.as_bytes())?;
            let art = qr
                .render::<qrcode::render::unicode::Dense1x2>()
                .quiet_zone(true)
                .build();
            out!("{art}");
            out!("{url}");
            say!(
                "trellis: hub {hub}: open it on the phone within {} minutes (once); the address is this machine's loopback: reach it through ssh -L or a tunnel you run",
                expires_s / 60
            );
            Ok(ExitCode::SUCCESS)
        }
        trellis_hub::wire::Body::Error { code, message } => {
            say!("trellis: hub {hub}: {}: {}", safe(&code), safe(&message));
            Ok(ExitCode::from(1))
        }
        _ => anyhow::bail!("the hub answered something else"),
    }
}

/// The hub of this user whose listener pairing codes come from: the one that listens
/// (the default hub first), else what to do about it.
fn listening_hub() -> anyhow::Result<String> {
    let dir = runtime_dir()?;
    let mut listening = Vec::new();
    let mut serving = Vec::new();
    for mut c in trellis_hub::client::connect_all(&dir, "trellis pair") {
        if let Ok(trellis_hub::wire::Body::Sessions { hub, .. }) =
            c.call(trellis_hub::wire::Op::List, None)
        {
            if hub.listening.is_some() {
                listening.push(hub.name.clone());
            }
            if hub.kind == "serve" {
                serving.push(hub.name);
            }
        }
    }
    if let Some(h) = listening.iter().find(|h| *h == DEFAULT_HUB) {
        return Ok(h.clone());
    }
    match listening.as_slice() {
        [one] => Ok(one.clone()),
        [] if serving.is_empty() => anyhow::bail!(
            "no hub of yours listens: start one with `trellis serve --detach --listen 127.0.0.1:0`, then pair again"
        ),
        [] => anyhow::bail!(
            "no hub of yours listens: give {} one with `trellis serve{} --listen 127.0.0.1:0` (it takes it while it runs), then pair again",
            serving[0],
            if serving[0] == DEFAULT_HUB {
                String::new()
            } else {
                format!(" --name {}", serving[0])
            }
        ),
        several => anyhow::bail!("hubs {} listen: name one with --hub", several.join(", ")),
    }
}

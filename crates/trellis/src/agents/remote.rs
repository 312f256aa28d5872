//! Agents that run elsewhere, as the command line (`--agent wss://…`) or the config
//! (`[agents.X]` with a `url`) names them: checked before anything is dialed, each mistake
//! of an entry pointing at its file and line.

use std::path::PathBuf;

use trellis_acp::Caps;
use trellis_store::Config;

use super::{Program, Remote, caps_of};

/// The agent `agent` when it runs elsewhere: a URL (`--agent wss://…` or `https://…`), or
/// `[agents.X]` with a `url`.
pub(super) fn program(agent: &str, config: &Config) -> anyhow::Result<Option<Program>> {
    let (name, preset) = if ["ws://", "wss://", "http://", "https://"]
        .iter()
        .any(|scheme| agent.starts_with(scheme))
    {
        let preset = trellis_store::AgentPreset {
            url: Some(agent.to_string()),
            ..Default::default()
        };
        ("remote".to_string(), preset)
    } else {
        match config.agents.get(agent) {
            Some(p) if p.url.is_some() => (agent.to_string(), p.clone()),
            _ => return Ok(None),
        }
    };
    // What the user wrote: an entry of the config (its errors point at the file and
    // line), or a URL on the command line.
    let given_alone = preset.url.as_deref() == Some(agent);
    let table = format!("agents.{name}");
    let fault = |key: &str, why: String| -> anyhow::Error {
        if given_alone {
            // Only the URL can be wrong, and its errors name it.
            anyhow::anyhow!("--agent: {why}")
        } else {
            config.invalid(&table, key, why).into()
        }
    };
    let url = preset.url.clone().unwrap_or_default();
    if !preset.command.is_empty() {
        return Err(fault(
            "url",
            "an agent has a command or a url, not both".into(),
        ));
    }
    let target = trellis_acp::remote::Target::of(&url, preset.plaintext).map_err(|e| {
        // A URL given alone has no entry to set anything in: say how to make one.
        if given_alone && e.contains("plaintext = true") {
            anyhow::anyhow!(
                "{e} (a URL given alone has no entry: make one, [agents.NAME] with url = \"…\" and plaintext = true, and dial it by name)"
            )
        } else {
            fault("url", e)
        }
    })?;
    if preset.token.is_some()
        && preset
            .headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"))
    {
        return Err(fault(
            "token",
            "a token and an Authorization header: give one of them".into(),
        ));
    }
    if let Some(cwd) = &preset.cwd
        && !cwd.starts_with('/')
    {
        return Err(fault(
            "cwd",
            format!("{cwd:?}: the agent's directory is an absolute path on its machine"),
        ));
    }
    if let Some((key, what)) = written_secret(&preset) {
        return Err(fault(
            &key,
            format!(
                "{what}, written in the config: whoever reads the file has it, and it goes wherever the file is copied; give {{ env = \"NAME\" }} or {{ file = \"PATH\" }}"
            ),
        ));
    }
    let mut headers = Vec::new();
    if let Some(t) = &preset.token {
        let v = t.value().map_err(|e| fault("token", e.to_string()))?;
        headers.push(("Authorization".to_string(), format!("Bearer {v}")));
    }
    for (k, v) in &preset.headers {
        let v = v.value().map_err(|e| fault(&format!("headers.{k}"), e))?;
        headers.push((k.clone(), v));
    }
    trellis_acp::remote::header_pairs(&headers).map_err(|e| fault("headers", e.to_string()))?;
    let shared = match preset.files.as_deref() {
        None | Some("its own") => false,
        Some("shared") => true,
        Some(other) => {
            return Err(fault(
                "files",
                format!("{other:?}: \"its own\" or \"shared\""),
            ));
        }
    };
    let paths = shared_paths(&preset, shared).map_err(|e| fault("paths", e))?;
    let ca: Vec<PathBuf> = preset
        .ca
        .iter()
        .map(|p| trellis_store::config::expand_home(p))
        .collect();
    for path in &ca {
        if !path.is_file() {
            return Err(fault("ca", format!("{} is not a file", path.display())));
        }
    }
    Ok(Some(Program {
        // Where it runs is part of its name: the rail, the status line, `trellis ls`
        // and the log all say it.
        name: format!("{name}@{}", target.shown),
        command: trellis_acp::remote::shown_url(&url),
        args: Vec::new(),
        env: Vec::new(),
        caps: if shared {
            caps_of(&preset.capabilities)
        } else {
            // Its files are its own: nothing here is offered.
            Caps {
                read_text_file: false,
                write_text_file: false,
                terminal: false,
                ..Caps::default()
            }
        },
        auth: preset.auth_method.clone(),
        scratch: false,
        command_line: false,
        remote: Some(Remote {
            spec: trellis_acp::remote::RemoteSpec {
                url,
                headers,
                plaintext: preset.plaintext,
                ca,
                cwd: preset.cwd.clone(),
                shared_files: shared,
                paths,
                redial: true,
                refused: Default::default(),
            },
            shared,
        }),
    }))
}

/// The shared directories of an agent elsewhere (`paths = { "/workspace" = "~/proj" }`):
/// its paths and this machine's (`~` expanded; each a directory here, taken as its real
/// path, as the session's directory is).
fn shared_paths(
    preset: &trellis_store::AgentPreset,
    shared: bool,
) -> Result<trellis_core::path_map::PathMap, String> {
    if preset.paths.is_empty() {
        return Ok(Default::default());
    }
    if !shared {
        return Err(
            "they say where shared files are; set files = \"shared\" too (else the agent is offered no files of this machine)".into()
        );
    }
    let mut pairs = Vec::new();
    for (remote, local) in &preset.paths {
        let local = trellis_store::config::expand_home(std::path::Path::new(local));
        // Its files are served from here: a directory that is not here serves none.
        if local.is_absolute() && !local.is_dir() {
            return Err(format!(
                "{}: not a directory of this machine",
                local.display()
            ));
        }
        let local = std::fs::canonicalize(&local).unwrap_or(local);
        pairs.push((remote.clone(), local.display().to_string()));
    }
    trellis_core::path_map::PathMap::new(pairs).map_err(|e| e.to_string())
}

/// Says once per process, on stderr, each entry of agents elsewhere other than `used`
/// that holds a secret written in the config: it is refused when that entry is used, but
/// the file holds it already, whatever agent runs now.
pub(super) fn warn_written_secrets(config: &Config, used: &str) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        for (name, preset) in &config.agents {
            if name == used || preset.url.is_none() {
                continue;
            }
            if let Some((key, what)) = written_secret(preset) {
                let e = config.invalid(
                    &format!("agents.{name}"),
                    &key,
                    format!(
                        "{what}, written in the config: whoever reads the file has it; give {{ env = \"NAME\" }} or {{ file = \"PATH\" }} (this entry is refused when used)"
                    ),
                );
                say!("trellis: warning: {e}");
            }
        }
    });
}

/// A secret written in the config itself, if any: its key and what makes it one (a
/// `token`; a header whose name says it is a credential, or whose value plainly is one).
/// The config's text is for what is no secret (`docs/agents.md`).
fn written_secret(preset: &trellis_store::config::AgentPreset) -> Option<(String, String)> {
    use trellis_acp::remote::{credential_value, named_like_credential};
    use trellis_store::config::Secret;
    if let Some(Secret::Text(_)) = &preset.token {
        return Some(("token".into(), "a token".into()));
    }
    preset.headers.iter().find_map(|(name, v)| {
        let Secret::Text(t) = v else {
            return None;
        };
        let what = match (named_like_credential(name), credential_value(t)) {
            (_, Some(value)) => format!("its value is {value}"),
            (Some(word), None) => format!("its name says it is a credential (\"{word}\")"),
            (None, None) => return None,
        };
        // A name is said only when it is one (a pasted `Name: value` or a token is not).
        let said = !name.is_empty()
            && trellis_acp::remote::name_prefix(name) == name
            && !trellis_acp::remote::holds_trellis_token(name);
        Some((
            if said {
                format!("headers.{name}")
            } else {
                "headers".into()
            },
            what,
        ))
    })
}

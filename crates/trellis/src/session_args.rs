//! What starts a session, as the command line gives it: the agent, directory, policy and
//! plugins, worktree. Shared by every command that starts one (the UI, `run`, `fan`,
//! `sessions resume`, `plugin try`, `serve`), below all of them.

use std::path::PathBuf;

/// How a session's permission requests are decided and which plugins it runs besides
/// the enabled ones: a session's own, or a hub's for every session started in it.
#[derive(clap::Args, Clone, Default)]
pub struct PolicyArgs {
    /// Decide permission requests without asking: allow-once, allow-reads, reject or a
    /// rules file (default: ask in the dialog).
    #[arg(long)]
    pub permission: Option<String>,
    /// Also run the plugin package at PATH, for this session only, granted what it asks
    /// for; its process restarts when its files change (`trellis plugin try`).
    #[arg(long = "plugin", value_name = "PATH")]
    pub plugin: Vec<PathBuf>,
    /// Grant `drive` (sending prompts, cancelling turns) to the `--plugin` packages that ask
    /// for it; without it they run without.
    #[arg(long)]
    pub allow_drive: bool,
}

/// What starts a session: its agent, directory, policy and plugins, worktree. Taken by
/// the commands that start one (`trellis`, `demo`, `run`, `fan`, `sessions resume`,
/// `plugin try`), and only by them.
#[derive(clap::Args, Clone, Default)]
pub struct UiArgs {
    /// Agent preset or command line (default: the configured default, else the demo);
    /// `trellis fan` takes it several times.
    #[arg(long, action = clap::ArgAction::Append)]
    pub agent: Vec<String>,
    /// Session working directory (default: the current directory; a scratch one for demo).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Continue the agent's session SESSION_ID (`session/resume` or `session/load`), one
    /// the local history may not have (the sessions picker resumes the agent's own
    /// sessions with it).
    #[arg(long, value_name = "SESSION_ID")]
    pub load: Option<String>,
    /// Run the session in a git worktree of its own, made now: `--worktree` (a made-up
    /// label), `--worktree=LABEL`, `--worktree=required` or `required:LABEL` (no
    /// worktree, no session). Branch `trellis/<label>` from HEAD, the tree under
    /// Trellis's data directory; end it with `trellis worktree land|apply|keep|discard`.
    #[arg(long, value_name = "LABEL", num_args = 0..=1, require_equals = true,
          default_missing_value = "", value_parser = parse_ask)]
    pub worktree: Option<Ask>,
    /// Quit after the first frame (for the startup benchmark).
    #[arg(long, hide = true)]
    pub exit_after_first_frame: bool,
}

impl UiArgs {
    /// The one `--agent` of a command that runs one session.
    pub fn one_agent(&self) -> anyhow::Result<Option<String>> {
        match self.agent.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one.clone())),
            _ => anyhow::bail!(
                "--agent given {} times: one session runs one agent (several at once: trellis fan)",
                self.agent.len()
            ),
        }
    }
}

/// What `--worktree` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub label: Option<String>,
    /// Without a worktree the session does not start.
    pub required: bool,
}

/// `--worktree` (a made-up label), `--worktree=LABEL`, `--worktree=required`,
/// `--worktree=required:LABEL`.
pub fn parse_ask(v: &str) -> Result<Ask, String> {
    let (required, label) = match v {
        "" => (false, None),
        "required" => (true, None),
        v => match v.strip_prefix("required:") {
            Some(l) => (true, Some(l)),
            None => (false, Some(v)),
        },
    };
    let label = label.map(trellis_worktree::label::check).transpose()?;
    Ok(Ask { label, required })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktree_values() {
        assert_eq!(
            parse_ask("").unwrap(),
            Ask {
                label: None,
                required: false
            }
        );
        assert_eq!(
            parse_ask("required").unwrap(),
            Ask {
                label: None,
                required: true
            }
        );
        assert_eq!(
            parse_ask("required:fix-1").unwrap(),
            Ask {
                label: Some("fix-1".into()),
                required: true
            }
        );
        assert_eq!(parse_ask("fix").unwrap().label.as_deref(), Some("fix"));
        assert!(parse_ask("../x").is_err());
        assert!(parse_ask("required:Bad").is_err());
    }
}

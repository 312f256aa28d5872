//! `trellis sessions fork` and the conversation's part of `trellis sessions rewind`: a
//! new session from an earlier one's turn, started in a hub (in the background when none
//! serves) beside the sessions there, named as `HUB:KEY`.
//!
//! ACP cannot cut a conversation short: the new session gets the earlier one's turns
//! before the fork as history (shown above a divider) and as a transcript with its first
//! prompt. Forked after the last turn, an agent that offers `session/fork` forks its own
//! copy instead. The new log names the old one and the turn (`continues`, `continues_at`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

/// Whether this `sessions` command starts a session (through a hub, with the config):
/// a fork, or a rewind of the conversation.
pub fn starts_a_session(command: &crate::sessions::SessionsCmd) -> bool {
    use crate::sessions::SessionsCmd;
    match command {
        SessionsCmd::Fork(_) => true,
        SessionsCmd::Rewind {
            to: Some(_),
            conversation,
            both,
            ..
        } => *conversation || *both,
        _ => false,
    }
}

/// Runs a command [`starts_a_session`] said yes to.
pub fn main(
    command: crate::sessions::SessionsCmd,
    config: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    use crate::sessions::SessionsCmd;
    match command {
        SessionsCmd::Fork(args) => fork(args, config),
        SessionsCmd::Rewind {
            id,
            to: Some(to),
            both,
            force,
            ..
        } => rewind(&id, to, both.then_some(force), config),
        _ => anyhow::bail!("not a command that starts a session"),
    }
}

/// Starts the fork in the hub and says its name on standard output.
pub fn fork(
    args: crate::sessions::ForkArgs,
    config: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let (index, _) = crate::sessions::open_index()?;
    let row = index.session(&args.id)?;
    let turns = trellis_driver::replay::turn_starts(std::path::Path::new(&row.path))
        .with_context(|| format!("the session's log {}", row.path))?
        .len();
    let turns = u32::try_from(turns).unwrap_or(u32::MAX);
    if let Some(n) = args.at
        && !(1..=turns.saturating_add(1)).contains(&n)
    {
        anyhow::bail!(
            "session {} has {turns} turn(s): turn {n} is not one of them (a fork starts before turn 1 to {turns}, or after the last)",
            row.id
        );
    }
    let cwd = row
        .cwd
        .as_deref()
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .with_context(|| {
            format!(
                "where session {} ran ({}) is gone: a fork runs there",
                row.id,
                row.cwd.as_deref().unwrap_or("not recorded")
            )
        })?;
    let agent = args
        .agent
        .or_else(|| row.command.clone())
        .or_else(|| row.agent.clone())
        .unwrap_or_else(|| "demo".into());
    let point = match args.at {
        Some(n) if n <= turns => format!("before its turn {n} (of {turns})"),
        _ => format!("after its last turn ({turns})"),
    };
    say!(
        "trellis: forking session {} {point}{}",
        row.id,
        if args.worktree.is_some() {
            ", in a worktree of its own"
        } else {
            ", in its directory (its files as they are now)"
        }
    );
    crate::serve::run_detached(
        crate::serve::Detached {
            hub: args.hub.unwrap_or_else(|| crate::serve::DEFAULT_HUB.into()),
            agent,
            cwd: Some(cwd),
            worktree: args.worktree.is_some(),
            worktree_label: args.worktree.and_then(|w| w.label),
            prompt: args.prompt,
            fork: Some((row.id.clone(), args.at)),
        },
        config,
    )
}

/// `trellis sessions rewind ID --to N --conversation|--both`: the code first when asked
/// (as `--code` does), then the conversation as a fork before turn N in the session's
/// directory.
pub fn rewind(
    id: &str,
    to: u32,
    code: Option<bool>,
    config: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    if let Some(force) = code {
        let (index, _) = crate::sessions::open_index()?;
        let row = index.session(id)?;
        crate::checkpoints::warn_if_running(&row);
        let mut out = String::new();
        crate::checkpoints::rewind(&row, Some(to), force, false, &mut out)?;
        say_part!("{out}");
    }
    say!(
        "trellis: the conversation is rewound as a new session: ACP cannot cut one short, so the agent is told the turns before {to} as a transcript"
    );
    fork(
        crate::sessions::ForkArgs {
            id: id.to_string(),
            at: Some(to),
            worktree: None,
            prompt: None,
            agent: None,
            hub: None,
        },
        config,
    )
}

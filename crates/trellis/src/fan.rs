//! `trellis fan N PROMPT`: the same work given to N sessions at once, each in a fresh
//! worktree, compared side by side in the UI (Alt-c), one kept.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct FanArgs {
    /// How many sessions (2 to 9: the rail's numbers).
    #[arg(value_parser = clap::value_parser!(u8).range(2..=9))]
    n: u8,
    /// The prompt each session is sent once its agent is ready.
    prompt: String,
    #[command(flatten)]
    session: crate::session_args::UiArgs,
}

/// The agents of the `n` sessions: one `--agent` for all, or as many as sessions, or a
/// few taken in turn.
pub fn agents(given: &[String], default: &str, n: usize) -> Vec<String> {
    if given.is_empty() {
        return vec![default.to_string(); n];
    }
    (0..n).map(|i| given[i % given.len()].clone()).collect()
}

pub fn main(args: FanArgs, config_path: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let ui = &args.session;
    let config = crate::ui::load_config(config_path)?;
    let default = config
        .default_agent
        .clone()
        .unwrap_or_else(|| "demo".into());
    let n = usize::from(args.n);
    if ui.load.is_some() {
        anyhow::bail!(
            "fan starts {n} new sessions: --load is not taken (load one with trellis --load)"
        );
    }
    let agents = agents(&ui.agent, &default, n);
    // Every agent is known to start before any worktree is made for it.
    for a in &agents {
        crate::agents::check(a, &config)?;
    }
    let cwd = match &ui.cwd {
        Some(c) => c.clone(),
        None => std::env::current_dir()?,
    };
    // Every session in a worktree of its own: without one they would share one tree.
    let label = ui.worktree.as_ref().and_then(|a| a.label.clone());
    let requests = agents
        .into_iter()
        .enumerate()
        .map(|(i, agent)| crate::launch::Request {
            agent,
            cwd: Some(cwd.clone()),
            worktree: Some(crate::session_args::Ask {
                label: label.as_ref().map(|l| format!("{l}-{}", i + 1)),
                required: true,
            }),
            carry: false,
            resume: None,
            load: None,
            launched_in: None,
        })
        .collect();
    crate::ui::start(ui, config, requests, Some(args.prompt.clone()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn agents_for_the_sessions() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(super::agents(&[], "demo", 3), s(&["demo", "demo", "demo"]));
        assert_eq!(super::agents(&s(&["a"]), "demo", 2), s(&["a", "a"]));
        assert_eq!(
            super::agents(&s(&["a", "b", "c"]), "demo", 3),
            s(&["a", "b", "c"])
        );
        assert_eq!(
            super::agents(&s(&["a", "b"]), "demo", 3),
            s(&["a", "b", "a"])
        );
    }
}

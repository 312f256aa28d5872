//! `trellis run`'s flags, what `--detach` hands to a hub, and the parsers of its values.

use std::path::PathBuf;

use crate::output::Format;

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub session: crate::session_args::UiArgs,
    /// The prompt to send. Repeat it for consecutive turns: each is sent when the
    /// previous turn ended normally (`end_turn`); any other end stops the run there.
    #[arg(long, required = true)]
    pub(super) prompt: Vec<String>,
    /// Output: jsonl (normalized events) or text (the default).
    #[arg(long, value_enum)]
    pub(super) format: Option<Format>,
    /// Write the session log here instead of the data directory.
    #[arg(long)]
    pub(super) log: Option<PathBuf>,
    /// Continue an earlier session (an id from `trellis sessions`, a prefix of one, or its
    /// log): its agent and directory unless given, `session/load` when the agent
    /// advertises it; the new log names the old one.
    #[arg(long, value_name = "ID", conflicts_with = "load")]
    pub(super) resume: Option<String>,
    /// Continue a fork of an earlier session (an id, a prefix of one, or its log): its
    /// turns before `--at` as history, given to the agent as a transcript with the first
    /// prompt (after its last turn, an agent that offers `session/fork` forks its own
    /// copy instead). Its agent and directory unless given; the new log names the old
    /// one and the turn.
    #[arg(long, value_name = "ID", conflicts_with_all = ["load", "resume"])]
    pub(super) fork: Option<String>,
    /// With --fork: the turn to fork before (1 = before the first prompt); without it,
    /// after the last turn.
    #[arg(long, value_name = "TURN", requires = "fork")]
    pub(super) at: Option<u32>,
    /// With --resume: send the earlier session (as Markdown) with the first prompt, for an
    /// agent that cannot load it. With --worktree: copy the uncommitted work of the
    /// source (changes to tracked files, untracked files) into the new worktree.
    #[arg(long)]
    pub(super) carry: bool,
    /// Set one of the agent's options before the first prompt: KEY is an option's id,
    /// category (model, mode, thought_level…) or name, VALUE a choice's value or name
    /// (on/off for a switch); may repeat. An unknown option or value, or one the agent
    /// refuses, ends the run before any prompt (exit 2).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = key_value)]
    pub(super) set: Vec<(String, String)>,
    /// Attach a file to the (first) prompt (as a resource link); may repeat.
    #[arg(long = "file")]
    pub(super) files: Vec<PathBuf>,
    /// Exit with 9 when the turn ended normally but a call failed or a permission request
    /// was refused (for scripts and CI).
    #[arg(long)]
    pub(super) strict: bool,
    /// Answer the agent's forms (`elicitation/create`) from this JSON object (field name
    /// → value; a form takes the values of its own fields, its defaults for the rest).
    /// A form it does not fill in correctly is declined, saying why; without it every
    /// form is declined.
    #[arg(long, value_name = "FILE")]
    pub(super) answers: Option<PathBuf>,
    /// Write the agent's last message to FILE when the run ends, however it ends (empty
    /// when the agent wrote none): what a CI step or a script passes on.
    #[arg(long, value_name = "FILE")]
    pub(super) output_file: Option<PathBuf>,
    /// Stop the run after this long, wall clock (`90s`, `15m`, `1h30m`; seconds when bare):
    /// the turn is cancelled, then the agent stopped. Exit 10.
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub(super) timeout: Option<std::time::Duration>,
    /// Stop when the agent has sent nothing for this long. Exit 11.
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub(super) idle_timeout: Option<std::time::Duration>,
    /// Stop when the cost the agent reports passes AMOUNT (in the agent's currency); said
    /// at the end when the agent reported none. Exit 12.
    #[arg(long, value_name = "AMOUNT")]
    pub(super) max_cost: Option<f64>,
    /// Stop when the agent starts more than N tool calls. Exit 12.
    #[arg(long, value_name = "N")]
    pub(super) max_tool_calls: Option<usize>,
    /// At most N turns (prompts sent, the repeated --prompt and an extension's included);
    /// a prompt beyond them is not sent. Exit 12.
    #[arg(long, value_name = "N")]
    pub(super) max_turns: Option<u32>,
    /// How long a turn cancelled by a budget has to end before the agent is stopped
    /// (10s unless said).
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub(super) grace: Option<std::time::Duration>,
    /// A permission request nothing decided (no --permission, or a rule that says ask):
    /// deny it, on the record (the default); or fail: deny it and stop the run (exit 13).
    #[arg(long, value_enum)]
    pub(super) on_ask: Option<crate::budgets::OnAsk>,
    /// Where a permission request or a question nothing decided goes: `policy` (--on-ask
    /// answers it at once), or `hub`: the run serves its session on a hub socket of its
    /// own (`trellis ls`, `trellis approve`, `trellis attach`) and the request waits there
    /// for an answer for --ask-timeout, then --on-ask answers it.
    #[arg(long, value_enum, default_value = "policy")]
    pub(super) approve_via: ApproveVia,
    /// With --approve-via hub: how long a request waits for an answer (10m unless said).
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub(super) ask_timeout: Option<std::time::Duration>,
    /// Write a JSON summary of the run to FILE when it ends, however it ends: exit code and
    /// reason, stop reason, duration, turns, tool calls by kind and status, permission
    /// denials and who decided them, files written, tokens and cost, the worktree.
    #[arg(long, value_name = "FILE")]
    pub(super) summary: Option<PathBuf>,
    /// The same summary in Markdown (for a CI job's summary page).
    #[arg(long, value_name = "FILE")]
    pub(super) summary_md: Option<PathBuf>,
    /// Write what the session changed as a patch: from git when its directory is in a
    /// repository (since the commit it was at when the run started, committed or not),
    /// else from the edits the agent reported.
    #[arg(long, value_name = "FILE")]
    pub(super) patch: Option<PathBuf>,
    /// Print resource usage as JSON on stderr at exit (for benchmarks).
    #[arg(long, hide = true)]
    pub(super) stats: bool,
    /// Start the session in a hub (`trellis serve`; started in the background when none
    /// serves) and return at once, printing HUB:KEY: the session outlives this terminal,
    /// its requests wait for `trellis approve` or `trellis attach`.
    #[arg(long)]
    pub detach: bool,
    /// The hub's name: with --detach, the hub the session starts in (`default` unless
    /// said); with --approve-via hub, the name the run serves (`run-PID` unless said).
    #[arg(long, value_name = "NAME")]
    pub(super) hub: Option<String>,
}

/// Where a request nothing decided goes (`--approve-via`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ApproveVia {
    /// `--on-ask` answers it at once.
    Policy,
    /// It waits for an answer through the run's hub, for `--ask-timeout`.
    Hub,
}

/// How long a request waits for an answer through the hub unless `--ask-timeout` says.
pub(super) const ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

impl RunArgs {
    pub(super) fn format(&self) -> Format {
        self.format.unwrap_or(Format::Text)
    }

    pub(super) fn grace(&self) -> std::time::Duration {
        self.grace.unwrap_or(std::time::Duration::from_secs(10))
    }

    pub(super) fn on_ask(&self) -> crate::budgets::OnAsk {
        self.on_ask.unwrap_or(crate::budgets::OnAsk::Deny)
    }

    /// `--hub` and `--ask-timeout` mean something only with `--detach` or `--approve-via
    /// hub`.
    pub(super) fn check_hub_flags(&self) -> anyhow::Result<()> {
        if self.approve_via == ApproveVia::Policy && !self.detach {
            if self.hub.is_some() {
                anyhow::bail!("--hub names the hub of --detach or --approve-via hub");
            }
            if self.ask_timeout.is_some() {
                anyhow::bail!("--ask-timeout is how long a request waits with --approve-via hub");
            }
        }
        Ok(())
    }

    /// `--detach`: what the hub is asked to start; the options that only mean something
    /// to a run that stays (output, budgets, artifacts, answers) are refused by name.
    pub fn detached(
        &self,
        ui: &crate::session_args::UiArgs,
        default_agent: &str,
    ) -> anyhow::Result<crate::serve::Detached> {
        let stays = [
            ("--format", self.format.is_some()),
            ("--log", self.log.is_some()),
            ("--load", ui.load.is_some()),
            ("--resume", self.resume.is_some()),
            (
                "--fork (trellis sessions fork starts one in a hub)",
                self.fork.is_some(),
            ),
            ("--set", !self.set.is_empty()),
            ("--file", !self.files.is_empty()),
            ("--strict", self.strict),
            ("--answers", self.answers.is_some()),
            ("--output-file", self.output_file.is_some()),
            ("--timeout", self.timeout.is_some()),
            ("--idle-timeout", self.idle_timeout.is_some()),
            ("--max-cost", self.max_cost.is_some()),
            ("--max-tool-calls", self.max_tool_calls.is_some()),
            ("--max-turns", self.max_turns.is_some()),
            ("--grace", self.grace.is_some()),
            ("--on-ask", self.on_ask.is_some()),
            ("--stats", self.stats),
            ("--summary", self.summary.is_some()),
            ("--summary-md", self.summary_md.is_some()),
            ("--patch", self.patch.is_some()),
            ("--approve-via", self.approve_via == ApproveVia::Hub),
            ("--ask-timeout", self.ask_timeout.is_some()),
        ];
        let refused = crate::serve::given(&stays);
        if !refused.is_empty() {
            let (verb, taken) = if refused.len() == 1 {
                ("belongs", "it was")
            } else {
                ("belong", "they were")
            };
            anyhow::bail!(
                "--detach starts the session in a hub and returns at once: {} {verb} to a run that stays, so {taken} not taken (run without --detach)",
                refused.join(", ")
            );
        }
        if self.carry {
            anyhow::bail!(
                "--carry is not taken with --detach: the hub makes the worktree from what is committed here; to carry your uncommitted work into one, run without --detach"
            );
        }
        // What the hub decides for every session it runs: given to the hub itself.
        let hubs = crate::serve::given(&[
            ("--permission", ui.policy.permission.is_some()),
            ("--plugin", !ui.policy.plugin.is_empty()),
            ("--allow-drive", ui.policy.allow_drive),
        ]);
        if !hubs.is_empty() {
            anyhow::bail!(
                "--detach starts the session in a hub, which decides with its own settings: {} not taken (start the hub with them — trellis serve --detach and the same flags — or run without --detach)",
                hubs.join(", ")
            );
        }
        let [prompt] = self.prompt.as_slice() else {
            anyhow::bail!("--detach takes one --prompt (send more with trellis send)");
        };
        let label = ui.worktree.is_some();
        let agent = ui.one_agent()?.unwrap_or_else(|| default_agent.to_string());
        // The demo without --cwd plays in a scratch workspace of its own, as it does
        // without --detach (with --worktree, in a worktree of this directory); any other
        // agent works here.
        let cwd = match &ui.cwd {
            None if agent == "demo" && !label => None,
            c => Some(c.clone().unwrap_or_else(|| PathBuf::from("."))),
        };
        Ok(crate::serve::Detached {
            hub: self
                .hub
                .clone()
                .unwrap_or_else(|| crate::serve::DEFAULT_HUB.into()),
            agent,
            cwd,
            worktree: label,
            worktree_label: ui.worktree.as_ref().and_then(|a| a.label.clone()),
            prompt: Some(prompt.clone()),
            fork: None,
        })
    }
}

/// `90s`, `15m`, `1h30m`, `2h 5m`, ISO 8601 (`PT15M`), or bare seconds.
pub(crate) fn duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        return std::time::Duration::try_from_secs_f64(secs)
            .map_err(|_| format!("`{s}`: not a duration"));
    }
    let d: jiff::SignedDuration = t
        .parse()
        .map_err(|e| format!("`{s}`: not a duration like 90s, 15m or 1h30m ({e})"))?;
    std::time::Duration::try_from(d).map_err(|_| format!("`{s}`: a duration must not be negative"))
}

fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("`{s}`: expected KEY=VALUE")),
    }
}

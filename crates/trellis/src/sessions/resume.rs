//! Resuming an earlier session: where its history is, and how its agent starts again.

use std::path::{Path, PathBuf};

use anyhow::Context;
use trellis_index::SessionRow;

use super::{ExportFormat, export_until, open_index, when};

/// What resuming an earlier session brings: where its history is, and how to start its
/// agent again.
pub struct Resume {
    pub row: SessionRow,
    /// The agent to start: the earlier session's, as the user named it.
    pub agent: Option<String>,
    pub cwd: Option<PathBuf>,
    /// The earlier session as Markdown, for the first prompt (`--carry`).
    pub carry: Option<trellis_acp::Embedded>,
    /// A fork: where its history stops (none: a resume, all of it).
    pub fork: Option<Fork>,
    /// A hand-off to another agent (`/agent NAME`): a brief, no transcript.
    pub handed_over: bool,
}

/// Where a fork's history stops: before turn `at` of the earlier session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fork {
    /// The turn it is forked before (none: after the last one).
    pub at: Option<u32>,
    /// The earlier session's turns.
    pub turns: u32,
    /// The byte of its log where the history stops.
    until: u64,
}

impl Fork {
    /// The turn the fork is before, as its log's header says (after the last: one more
    /// than there were).
    pub fn before(&self) -> u32 {
        self.at.unwrap_or(self.turns + 1)
    }
}

impl Resume {
    /// Finds session `id` (an id, a prefix of one, or a log) whose log can be read.
    pub fn find(id: &str, carry: bool) -> anyhow::Result<Resume> {
        let (index, _) = open_index()?;
        let row = index.session(id)?;
        trellis_store::open_log(Path::new(&row.path))
            .with_context(|| format!("the session's log {}", row.path))?;
        let carry = if carry {
            Some(trellis_acp::Embedded {
                uri: format!("trellis://session/{}.md", row.id),
                mime: "text/markdown".into(),
                text: export_until(&row, ExportFormat::Md, true, u64::MAX)?,
            })
        } else {
            None
        };
        Ok(Resume {
            agent: row.command.clone().or(row.agent.clone()),
            cwd: row.cwd.as_ref().map(PathBuf::from).filter(|p| p.is_dir()),
            row,
            carry,
            fork: None,
            handed_over: false,
        })
    }

    /// A fork of session `id` before its turn `at` (none: after its last turn): the
    /// history is the turns before it, and the transcript of those turns goes with the
    /// first prompt — unless the agent forks its own session (only a fork after the
    /// last turn asks it: ACP's `session/fork` copies a whole conversation).
    pub fn fork(id: &str, at: Option<u32>) -> anyhow::Result<Resume> {
        let (index, _) = open_index()?;
        let row = index.session(id)?;
        let starts = trellis_driver::replay::turn_starts(Path::new(&row.path))
            .with_context(|| format!("the session's log {}", row.path))?;
        let turns = u32::try_from(starts.len()).unwrap_or(u32::MAX);
        let at = at.filter(|n| *n != turns.saturating_add(1));
        let until = match at {
            None => u64::MAX,
            Some(n) if (1..=turns).contains(&n) => starts[n as usize - 1],
            Some(n) => anyhow::bail!(
                "session {} has {turns} turn(s): turn {n} is not one of them (a fork starts before turn 1 to {turns}, or after the last)",
                row.id
            ),
        };
        let kept = match at {
            Some(1) => "none of its turns".to_string(),
            Some(2) => "its turn 1".to_string(),
            Some(n) => format!("its turns 1 to {}", n - 1),
            None => "all its turns".to_string(),
        };
        let text = format!(
            "This session is a fork of an earlier one (session {}); here is the conversation up to where it was forked ({kept}), for context. The files may have changed since.\n\n{}",
            row.id,
            export_until(&row, ExportFormat::Md, true, until)?
        );
        Ok(Resume {
            agent: row.command.clone().or(row.agent.clone()),
            cwd: row.cwd.as_ref().map(PathBuf::from).filter(|p| p.is_dir()),
            carry: Some(trellis_acp::Embedded {
                uri: format!("trellis://session/{}.md", row.id),
                mime: "text/markdown".into(),
                text,
            }),
            fork: Some(Fork { at, turns, until }),
            row,
            handed_over: false,
        })
    }

    /// The agent's own session to fork with `session/fork`: a fork after the last turn
    /// of a session whose agent id is known, by the same agent (`agent`, as the user
    /// named it), given the transcript otherwise (not a hand-off).
    pub fn agent_fork(&self, agent: &str) -> Option<String> {
        match self.fork {
            Some(Fork { at: None, .. })
                if self.carry.is_some() && self.agent.as_deref() == Some(agent) =>
            {
                self.row.acp_id.clone()
            }
            _ => None,
        }
    }

    /// The session runs in `cwd` (a worktree of its own): the transcript says where the
    /// paths it names are now, so that an agent does not edit the session's old checkout.
    pub fn moved_to(&mut self, cwd: &Path) {
        let (Some(carry), Some(old)) = (self.carry.as_mut(), self.row.cwd.as_deref()) else {
            return;
        };
        if Path::new(old) == cwd {
            return;
        }
        carry.text = format!(
            "Note: you work in {}, a worktree of its own; the paths under {old} in the conversation below are the same files there. Change only the files in {}.\n\n{}",
            cwd.display(),
            cwd.display(),
            carry.text
        );
    }

    /// The agent's own session to load (`session/load` or `resume`): a resume's only.
    pub fn agent_load(&self) -> Option<String> {
        match self.fork {
            None => self.row.acp_id.clone(),
            Some(_) => None,
        }
    }

    /// What the new log's header says it continues: the earlier log, and for a fork the
    /// turn it was forked before.
    pub fn continues(&self) -> (String, Option<u32>, bool) {
        (
            self.row.path.clone(),
            self.fork.map(|f| f.before()),
            self.handed_over,
        )
    }

    /// The divider under the history.
    fn notice(&self) -> String {
        self.said(true)
    }

    /// What a headless run says first: whose history it continues, and how the agent
    /// gets it.
    pub fn headless_notice(&self) -> String {
        self.said(false)
    }

    fn said(&self, shown: bool) -> String {
        let above = if shown {
            "the turns above are from its log; "
        } else {
            ""
        };
        if let Some(f) = &self.fork {
            if self.carry.is_none() {
                return format!(
                    "handed off from session {} ({}): {above}the agent is given none of them, only the brief you send",
                    self.row.id,
                    self.agent.as_deref().unwrap_or("its agent")
                );
            }
            return match f.at {
                Some(n) => format!(
                    "forked from session {} before its turn {n} (of {}): {above}the agent is given the turns before it as a transcript with the first prompt (ACP cannot fork a conversation partway)",
                    self.row.id, f.turns
                ),
                None => format!(
                    "forked from session {} after its last turn ({}): {above}the agent forks its own copy where it offers session/fork, else it is given the turns as a transcript with the first prompt",
                    self.row.id, f.turns
                ),
            };
        }
        if !shown {
            return format!(
                "resumed session {} ({}){}",
                self.row.id,
                when(self.row.started),
                if self.carry.is_some() {
                    ": the first prompt carries its turns to the agent"
                } else {
                    ""
                }
            );
        }
        format!(
            "resumed session {} ({}): the turns above are from its log{}",
            self.row.id,
            when(self.row.started),
            if self.carry.is_some() {
                "; the first prompt carries them to the agent"
            } else {
                ""
            }
        )
    }

    /// The new session (the earlier history, then a divider), and what to send with the
    /// first prompt. The history is read a line at a time, finished chunks of calls out
    /// of memory as they come (into a store the new session goes on with): a resumed
    /// session costs what running it did, not its log's size.
    pub fn session(
        self,
        policy: trellis_core::Policy,
    ) -> anyhow::Result<(trellis_core::Session, Option<trellis_acp::Embedded>)> {
        let notice = self.notice();
        let until = self.fork.map_or(u64::MAX, |f| f.until);
        let prev = trellis_driver::replay::Replay::open(Path::new(&self.row.path))
            .and_then(|r| r.until(until).run(|_| {}))
            .with_context(|| format!("the session's log {}", self.row.path))?
            .session;
        Ok((
            trellis_core::Session::continuing(prev, policy, notice),
            self.carry,
        ))
    }

    /// [`Resume::session`] for a front end that shows the history as it is read: the
    /// session to show at once, the feed that reads the history into it, and what it
    /// becomes then (its new log is `log`); see `Driver::resume`.
    pub fn shown(self, policy: trellis_core::Policy, log: PathBuf) -> anyhow::Result<Shown> {
        let notice = self.notice();
        let until = self.fork.map_or(u64::MAX, |f| f.until);
        let (session, spill_error, feed) =
            trellis_driver::replay::Feed::start_until(Path::new(&self.row.path), until)
                .with_context(|| format!("the session's log {}", self.row.path))?;
        Ok(Shown {
            session,
            feed,
            then: trellis_driver::Resumed {
                policy,
                notice,
                log,
            },
            carry: self.carry,
            spill_error,
        })
    }
}

/// A resumed session as a front end opens it (see [`Resume::shown`]).
pub struct Shown {
    pub session: trellis_core::Session,
    pub feed: trellis_driver::replay::Feed,
    pub then: trellis_driver::Resumed,
    pub carry: Option<trellis_acp::Embedded>,
    /// Why every call of the history stays in memory, if it does.
    pub spill_error: Option<String>,
}

/// What to fork, and where the new session runs (`trellis sessions fork`).
#[derive(clap::Args, Debug)]
pub struct ForkArgs {
    pub id: String,
    /// The turn to fork before (1: before the first prompt).
    #[arg(long, value_name = "TURN")]
    pub at: Option<u32>,
    /// In a worktree of its own (`--worktree=LABEL` names it), holding the files of
    /// that turn's checkpoint (the files as they are now, forked after the last turn).
    #[arg(long, value_name = "LABEL", num_args = 0..=1, require_equals = true,
          default_missing_value = "", value_parser = crate::session_args::parse_ask)]
    pub worktree: Option<crate::session_args::Ask>,
    /// Sent once the agent is ready (else the session waits for one).
    #[arg(long)]
    pub prompt: Option<String>,
    /// Another agent than the earlier session's (a preset, `demo`, a command line).
    #[arg(long)]
    pub agent: Option<String>,
    /// The hub to start it in (default: `default`).
    #[arg(long)]
    pub hub: Option<String>,
}

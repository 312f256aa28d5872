//! Resuming an earlier session: where its history is, and how its agent starts again.

use std::path::{Path, PathBuf};

use anyhow::Context;
use trellis_index::SessionRow;

use super::{ExportFormat, export, open_index, when};

/// What resuming an earlier session brings: where its history is, and how to start its
/// agent again.
pub struct Resume {
    pub row: SessionRow,
    /// The agent to start: the earlier session's, as the user named it.
    pub agent: Option<String>,
    pub cwd: Option<PathBuf>,
    /// The earlier session as Markdown, for the first prompt (`--carry`).
    pub carry: Option<trellis_acp::Embedded>,
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
                text: export(&row, ExportFormat::Md, true)?,
            })
        } else {
            None
        };
        Ok(Resume {
            agent: row.command.clone().or(row.agent.clone()),
            cwd: row.cwd.as_ref().map(PathBuf::from).filter(|p| p.is_dir()),
            row,
            carry,
        })
    }

    /// The divider under the history.
    fn notice(&self) -> String {
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
        let prev = trellis_driver::replay::rebuild_log(Path::new(&self.row.path), |_| {})
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
        let (session, spill_error, feed) =
            trellis_driver::replay::Feed::start(Path::new(&self.row.path))
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

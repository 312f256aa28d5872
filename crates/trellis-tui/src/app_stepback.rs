//! The App's side of stepping back: the rewind list and its keys, `e` (edit and resend),
//! `/fork` and `/agent`, and the user's command output that goes with the next prompt
//! (`!!cmd`, `s` on a card).

use crossterm::event::KeyEvent;

use crate::app::{App, Focus, Intent};
use crate::extui::Overlay;

impl App {
    /// Esc Esc on an empty prompt, `/rewind`: the session's turns to go back to.
    pub(crate) fn open_rewind(&mut self) {
        if self.replay {
            return;
        }
        self.focus = Focus::Prompt;
        self.overlay = Some(Overlay::Rewind(crate::rewind::RewindList::of(
            &self.driver.session,
            self.driver.now(),
        )));
    }

    /// A key in the rewind list: the code put back here (the list stays, saying what
    /// was done), the conversation forked beside this session.
    pub(crate) fn rewind_key(&mut self, mut r: crate::rewind::RewindList, key: KeyEvent) {
        use crate::rewind::RewindKey;
        let (code, fork, force) = match r.key(key) {
            RewindKey::Close => return,
            RewindKey::Stay => (None, None, false),
            RewindKey::Code(t) => (Some(t), None, false),
            RewindKey::CodeForce(t) => (Some(t), None, true),
            RewindKey::Conversation(t) => (None, Some(t), false),
            RewindKey::Both(t) => (Some(t), Some(t), false),
        };
        if (code.is_some() || fork.is_some()) && self.driver.session.turn_open {
            r.said = vec!["a turn is running: wait for its end (or Esc cancels it)".into()];
            self.overlay = Some(Overlay::Rewind(r));
            return;
        }
        if let Some(turn) = code {
            r.said = match (self.rewinder.as_mut(), self.log_path.as_deref()) {
                (Some(rewind), Some(log)) => match rewind(log, turn, force) {
                    Ok(lines) => lines,
                    Err(e) => vec![format!("cannot rewind the code: {e}")],
                },
                _ => vec!["this session cannot rewind its code (no log, or no git here)".into()],
            };
            self.rewound_on_the_record(turn, &r.said);
            if fork.is_some() && r.said.iter().any(|l| l.starts_with("cannot")) {
                // The conversation is not forked from code that did not go back.
                self.overlay = Some(Overlay::Rewind(r));
                return;
            }
        }
        if let Some(turn) = fork {
            self.message = Some(format!("forking from before turn {turn}…"));
            // What the code's rewind did, said in the fork that takes the screen.
            let said = code.map(|_| crate::rewind::summary(&r.said));
            self.fork_request = Some(crate::fork::ForkAsk {
                at: Some(turn),
                said,
                ..Default::default()
            });
            return;
        }
        self.overlay = Some(Overlay::Rewind(r));
    }

    /// `text` with the output of the commands run with `!!` since the last prompt.
    pub(crate) fn with_outputs(&mut self, mut text: String) -> String {
        use trellis_core::update::user_command::{output_for_agent, terminal_output_for_agent};
        let s = &self.driver.session;
        for a in std::mem::take(&mut self.attach_output) {
            let out = match &a {
                crate::app::Attached::Newest(command) => {
                    output_for_agent(s, command, crate::ATTACHED_OUTPUT)
                }
                crate::app::Attached::Terminal { id, .. } => {
                    terminal_output_for_agent(s, id, crate::ATTACHED_OUTPUT)
                }
            };
            // `!!cmd` and `s` on the same run send it once.
            if let Some(out) = out.filter(|o| !text.contains(o.as_str())) {
                text.push_str("\n\n");
                text.push_str(&out);
            }
        }
        text
    }

    /// `s` on the card of one of the user's commands (or in its inspector): its output
    /// goes with the next prompt; again, it does not.
    pub(crate) fn toggle_send_output(&mut self, call: Option<usize>) {
        use trellis_core::tool_call::{USER_CALL, is_users};
        let call = match call {
            Some(c) => Ok(c),
            None => self.card_at_cursor(),
        };
        let s = &self.driver.session;
        let Some(c) = call.ok().map(|i| s.ledger.at(i)) else {
            self.message = Some("s sends your command's output: put the cursor on its card".into());
            return;
        };
        let Some(id) = c.id.strip_prefix(USER_CALL).filter(|_| is_users(&c.id)) else {
            self.message = Some(
                "s sends the output of your own commands (!cmd): the agent has its calls' output already"
                    .into(),
            );
            return;
        };
        let id = id.to_string();
        let command = s
            .terminals
            .get(&id)
            .map(|t| t.command.clone())
            .unwrap_or_default();
        let shown = trellis_text::clip(&trellis_text::one_line(&command), 40).to_string();
        // This run, by its terminal or as the newest run of a `!!cmd`.
        let newest = trellis_core::update::user_command::newest_run(s, &command) == Some(&id);
        let this = |a: &crate::app::Attached| match a {
            crate::app::Attached::Terminal { id: t, .. } => *t == id,
            crate::app::Attached::Newest(c) => newest && *c == command,
        };
        if self.attach_output.iter().any(this) {
            self.attach_output.retain(|a| !this(a));
            self.message = Some(format!(
                "the output of `{shown}` stays out of your next prompt"
            ));
            return;
        }
        self.attach_output
            .push(crate::app::Attached::Terminal { id, command });
        self.message = Some(format!(
            "the output of `{shown}` goes with your next prompt (its last {} KB at most) · s again: not",
            crate::ATTACHED_OUTPUT / 1024
        ));
    }

    /// `e` on one of the user's prompts in the transcript: it goes into the prompt to be
    /// edited; sent, it goes back to before its turn (code and conversation).
    pub(crate) fn edit_past_prompt(&mut self) {
        let s = &self.driver.session;
        let found = self.cursor.and_then(|c| match s.transcript.get(c) {
            Some(trellis_core::transcript::Entry::Message(m))
                if m.role == trellis_core::transcript::Role::User =>
            {
                Some((m.turn, m.text.clone()))
            }
            _ => None,
        });
        match found {
            Some((turn, _)) if turn <= s.turns_before => {
                self.message =
                    Some("that prompt is from an earlier session's log: resume it there".into())
            }
            Some((turn, text)) => {
                let own = turn - s.turns_before;
                self.prompt.set(text);
                self.resend = Some(own);
                self.focus = Focus::Prompt;
                self.message = Some(format!(
                    "editing the prompt of turn {own}: Enter goes back to before it (code and conversation) and sends it · Esc keeps it as a new prompt"
                ));
            }
            None => self.message = Some("e edits one of your prompts: put the cursor on it".into()),
        }
    }

    /// Enter on an edited past prompt: its turn's code put back, then a fork from before
    /// it sends the edited prompt.
    pub(crate) fn resend_edited(&mut self) -> Vec<Intent> {
        let Some(turn) = self.resend else {
            return Vec::new();
        };
        if self.driver.session.turn_open {
            self.message = Some("a turn is running: wait for its end (Esc cancels it)".into());
            return Vec::new();
        }
        let text = self.prompt.text.trim().to_string();
        if text.is_empty() {
            return Vec::new();
        }
        let mut said = None;
        if let (Some(rewind), Some(log)) = (self.rewinder.as_mut(), self.log_path.clone()) {
            match rewind(&log, turn, false) {
                Ok(lines) => {
                    self.rewound_on_the_record(turn, &lines);
                    said = Some(kept_said(&lines));
                }
                Err(e) => {
                    self.message = Some(format!("cannot put the code back: {e}"));
                    return Vec::new();
                }
            }
        }
        self.resend = None;
        self.prompt.take();
        self.message = Some(format!("going back to before turn {turn} with your edit…"));
        self.fork_request = Some(crate::fork::ForkAsk {
            at: Some(turn),
            prompt: Some(text),
            said,
            ..Default::default()
        });
        Vec::new()
    }

    /// A rewind of the code from here, in the session's log (a mark): what it did in a
    /// line, and each file it kept.
    fn rewound_on_the_record(&self, turn: u32, said: &[String]) {
        let Some(h) = self.driver.connection() else {
            return;
        };
        let mut text = format!(
            "{} {turn} from the UI: {}",
            trellis_view::handoff::REWOUND,
            crate::rewind::summary(said)
        );
        for l in said.iter().filter(|l| l.trim_start().starts_with("kept")) {
            text.push_str(" · ");
            text.push_str(l.trim());
        }
        h.recorder().local(trellis_core::LocalRecord::Mark { text });
    }

    /// `/fork [TURN] [worktree]`: a new session from before that turn (after the last
    /// without one), beside this one.
    pub(crate) fn ask_fork(&mut self, args: &str) {
        let mut ask = crate::fork::ForkAsk::default();
        for word in args.split_whitespace() {
            match word {
                "worktree" | "--worktree" => ask.worktree = true,
                n => match n.parse::<u32>() {
                    Ok(n) if n >= 1 => ask.at = Some(n),
                    _ => {
                        self.message =
                            Some("/fork [TURN] [worktree]: TURN is the turn to fork before".into());
                        return;
                    }
                },
            }
        }
        if ask.at.is_none() && self.driver.session.turn_open {
            self.message = Some(
                "a turn is running: wait for its end, or /fork TURN to fork before a turn".into(),
            );
            return;
        }
        self.message = Some("forking…".into());
        self.fork_request = Some(ask);
    }

    /// `/agent NAME`: a session of another agent here, with a brief of this one for you
    /// to edit and send.
    pub(crate) fn ask_handoff(&mut self, agent: &str) {
        if agent.is_empty() {
            self.message = Some("/agent NAME: the agent to hand this session to".into());
            return;
        }
        self.message = Some(format!("handing off to {}…", trellis_text::one_line(agent)));
        self.fork_request = Some(crate::fork::ForkAsk {
            agent: Some(agent.to_string()),
            handoff: true,
            ..Default::default()
        });
    }
}

/// What a code rewind did, in one line, naming the files it kept (they stay as they are:
/// `sessions rewind --force`, or `C` in the rewind list, puts them back).
fn kept_said(said: &[String]) -> String {
    let kept: Vec<&str> = said
        .iter()
        .filter_map(|l| l.trim_start().strip_prefix("kept"))
        .map(str::trim)
        .collect();
    let mut line = crate::rewind::summary(said);
    if !kept.is_empty() {
        line.push_str(&format!(
            " — kept: {} (C in the rewind list puts them back)",
            kept.join("; ")
        ));
    }
    line
}

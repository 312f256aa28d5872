//! What a front end asks of the session (its intents): answers to permission requests
//! and questions, cancels, prompts, the agent's sessions and login. A session that runs
//! in a hub elsewhere sends them there instead (`attached`).

use std::path::PathBuf;

use trellis_acp::Command;
use trellis_core::session::LocalRecord;
use trellis_core::{Action, Choice, Decider};

use crate::{Driver, Note, attached};

impl Driver {
    /// Answers permission request `request_id`.
    pub fn decide(
        &mut self,
        request_id: String,
        choice: Choice,
        decider: Decider,
        notes: &mut Vec<Note>,
    ) {
        self.decide_because(request_id, choice, decider, None, notes);
    }

    /// [`Driver::decide`], with why in the decider's words (kept on the record, said on
    /// the card and in the event).
    pub fn decide_because(
        &mut self,
        request_id: String,
        choice: Choice,
        decider: Decider,
        reason: Option<String>,
        notes: &mut Vec<Note>,
    ) {
        // Words from elsewhere (a phone, a script, a hook) reach the agent and the log
        // without control characters, as a prompt sent from outside does.
        let reason = reason.map(|r| {
            r.chars()
                .filter(|c| *c == '\n' || *c == '\t' || !c.is_control())
                .collect::<String>()
        });
        if self.to_hub(|| attached::Remote::Decide {
            request_id: request_id.clone(),
            choice: choice.clone(),
            reason: reason.clone(),
        }) {
            return;
        }
        let t = self.now();
        self.apply(
            Action::Decide {
                t,
                request_id,
                choice,
                decider,
                reason,
            },
            notes,
        );
    }

    /// Answers the agent's elicitation `request_id` (`elicitation/create`): the form's
    /// content, a decline or a cancel. A form answer the form refuses is not sent (the
    /// reducer warns); the request stays open.
    pub fn elicit(
        &mut self,
        request_id: String,
        answer: trellis_core::ElicitAnswer,
        decider: Decider,
        notes: &mut Vec<Note>,
    ) {
        if self.to_hub(|| attached::Remote::Elicit {
            request_id: request_id.clone(),
            answer: answer.clone(),
        }) {
            return;
        }
        let t = self.now();
        self.apply(
            Action::Elicit {
                t,
                request_id,
                answer,
                decider,
            },
            notes,
        );
    }

    /// Cancels the work of subagent `session_id` (when the agent lets the client): its
    /// open calls and permission requests end `cancelled`; the session's turn goes on.
    pub fn cancel_subagent(&mut self, session_id: String, notes: &mut Vec<Note>) {
        if self.to_hub(|| attached::Remote::CancelSubagent(session_id.clone())) {
            return;
        }
        let t = self.now();
        self.apply(Action::CancelSubagent { t, session_id }, notes);
    }

    /// Cancels the running turn (open permission requests are answered `cancelled`).
    pub fn cancel(&mut self, notes: &mut Vec<Note>) {
        if self.to_hub(|| attached::Remote::Cancel) {
            return;
        }
        let t = self.now();
        self.apply(Action::Cancel { t }, notes);
    }

    /// Asks the agent for its sessions in the session's directory, if it lists them
    /// (`sessionCapabilities.list`); the answer lands in `session.agent_sessions` with an
    /// `agent_sessions_listed` event. Returns whether it was asked.
    pub fn list_agent_sessions(&mut self) -> bool {
        let s = &self.session;
        if !trellis_core::agent_sessions::advertised(s.agent_capabilities.as_ref()) || self.closed {
            return false;
        }
        let Some(c) = &self.conn else { return false };
        c.handle.send(Command::ListSessions {
            cwd: s.cwd.as_ref().map(PathBuf::from),
            cursor: None,
        });
        true
    }

    /// The login asked for by [`Note::Login`] is over (`ok`: it exited with status 0, a
    /// login by ACP's terminal auth: setup is tried again; else setup fails saying so).
    pub fn login_done(&mut self, ok: bool) {
        if let Some(c) = &self.conn {
            c.handle.send(Command::LoginDone { ok });
        }
    }

    /// Runs the user's own command line (`!cmd`) in the session's directory, in a
    /// terminal of Trellis's: a card on the record beside the agent's calls, marked as the
    /// user's. Nothing of it reaches the agent unless the front end sends it.
    pub fn user_command(&mut self, command: String) -> Result<(), String> {
        if self.remote.is_some() {
            return Err("this session runs in a hub elsewhere: run commands there".into());
        }
        let Some(c) = &self.conn else {
            return Err("this session has no connection: nowhere to run it".into());
        };
        let Some(cwd) = self.session.cwd.clone() else {
            return Err("the session's directory is not known yet: try again in a moment".into());
        };
        c.handle.send(Command::UserCommand {
            command,
            cwd: PathBuf::from(cwd),
        });
        Ok(())
    }

    /// Stops the user's own commands still running (`/stop`): how many were asked to.
    pub fn stop_user_commands(&mut self) -> usize {
        let Some(c) = &self.conn else {
            return 0;
        };
        let prefix = trellis_core::tool_call::USER_CALL;
        let mut n = 0;
        for i in self.session.ledger.open() {
            let id = self.session.ledger.at(i).id.clone();
            if let Some(terminal_id) = id.strip_prefix(prefix) {
                c.handle.send(Command::KillTerminal {
                    terminal_id: terminal_id.to_string(),
                });
                n += 1;
            }
        }
        n
    }

    /// Prompts handed to the agent's connection whose turns have not started yet.
    pub fn waiting_prompts(&self) -> u32 {
        self.prompted.saturating_sub(self.session.turn)
    }

    /// Sends a prompt. Before the agent is set up the connection holds it (and the log
    /// says so) and sends it once the session exists.
    pub fn prompt(&mut self, text: String, files: Vec<PathBuf>) {
        if let Some(r) = &self.remote {
            let _ = r.send(attached::Remote::Prompt { text, files });
            return;
        }
        if let Some(c) = &self.conn {
            self.prompted += 1;
            if !self.ready && !self.closed {
                c.handle.recorder().local(LocalRecord::Mark {
                    text: "prompt queued: it is sent once the agent has set up its session".into(),
                });
            }
            let embedded = self.carry.take().into_iter().collect();
            c.handle.send(Command::Prompt {
                text,
                files,
                embedded,
            });
        }
    }
}

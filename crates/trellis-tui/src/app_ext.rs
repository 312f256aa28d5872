//! The App's side of extensions: installing the host, the overlays it owns (Settings,
//! `/status`, the "always" rule preview) and their keys, `/commands` and extension keys.

use crossterm::event::{KeyCode, KeyEvent};
use trellis_view::inspector::InspectorView;

use crate::app::{App, Focus, Inspector, Intent};
use crate::extui::{Overlay, RulePreview, Scope, SettingsKey, SettingsState};
use crate::keymap::Key;

impl App {
    /// Installs the extension host: its designs and transforms draw the transcript.
    pub fn set_ext(
        &mut self,
        host: trellis_ext_host::ExtHost,
        rx: tokio::sync::mpsc::UnboundedReceiver<trellis_ext_host::HostMsg>,
    ) {
        let mut host = host;
        // Contributed keys: single keys Trellis does not use itself, else rejected.
        if let Some(ui) = std::sync::Arc::get_mut(&mut host.ui) {
            let mut i = 0;
            while i < ui.keys.len() {
                let why = match crate::keymap::parse_keys(&ui.keys[i].keys) {
                    Err(e) => Some(e.0),
                    Ok(ks) if ks.len() != 1 => Some("a contributed key is one key".to_string()),
                    Ok(ks) => self
                        .keys
                        .claims(&ks)
                        .map(|a| format!("the key is bound to Trellis's {} action", a.name())),
                };
                match why {
                    Some(rule) => ui.reject_key(i, &rule),
                    None => i += 1,
                }
            }
        }
        self.view.decor = Some(std::sync::Arc::new(crate::extui::ExtDecor(host.ui.clone())));
        self.driver.set_host(host, rx);
    }

    /// Opens the Settings menu.
    pub fn open_settings(&mut self) {
        self.plugin_rows = crate::plugins_page::rows(self.plugins.as_ref());
        self.overlay = Some(Overlay::Settings(SettingsState::default()));
    }

    /// Opens the sessions picker (when this front end keeps a history).
    pub fn open_sessions(&mut self) {
        match self.history.as_deref() {
            Some(h) => {
                let mut p = crate::history::Picker::new(h);
                // The agent's own list joins when it answers (an `agent_sessions_listed`
                // event); the last answer is shown meanwhile.
                if let Some(listed) = &self.driver.session.agent_sessions {
                    p.merge_agent(
                        listed,
                        self.driver.session.id.as_deref(),
                        self.driver.session.cwd.as_deref(),
                        h,
                    );
                }
                self.driver.list_agent_sessions();
                self.overlay = Some(Overlay::Sessions(p));
            }
            None => self.message = Some("no session history here".into()),
        }
    }

    /// The agent answered `session/list`: an open sessions picker shows its sessions.
    pub(crate) fn agent_sessions_listed(&mut self) {
        let (Some(Overlay::Sessions(p)), Some(h), Some(listed)) = (
            self.overlay.as_mut(),
            self.history.as_deref(),
            self.driver.session.agent_sessions.as_ref(),
        ) else {
            return;
        };
        p.merge_agent(
            listed,
            self.driver.session.id.as_deref(),
            self.driver.session.cwd.as_deref(),
            h,
        );
    }

    /// The agent's options: the list (`M`, `/config`), or one option's choices (`/model`,
    /// `/mode`, `/config NAME`).
    pub fn open_options(&mut self, on: Option<&str>) {
        let s = &self.driver.session;
        match on.map(str::trim).filter(|k| !k.is_empty()) {
            None => self.overlay = Some(Overlay::Options(crate::agent_options::Picker::new())),
            Some(k) => match crate::agent_options::Picker::on(s, k) {
                Some(p) => self.overlay = Some(Overlay::Options(p)),
                None => {
                    self.message = Some(if s.config.is_empty() && s.modes.is_empty() {
                        "the agent offers no options to set".into()
                    } else {
                        format!("the agent offers no option {}", trellis_text::one_line(k))
                    })
                }
            },
        }
    }

    /// `/export md|html`: this session's log as a document beside the session.
    fn export(&mut self, format: &str) {
        let format = if format.is_empty() { "md" } else { format };
        self.message = Some(match (&self.history, &self.log_path) {
            (Some(h), Some(log)) if matches!(format, "md" | "html") => {
                match h.export(log, format) {
                    Ok(p) => format!("exported to {}", p.display()),
                    Err(e) => format!("cannot export: {e}"),
                }
            }
            (Some(_), Some(_)) => format!("/export md or /export html, not {format:?}"),
            _ => "nothing to export here".into(),
        });
    }

    pub(crate) fn overlay_key(&mut self, overlay: Overlay, key: KeyEvent) -> Vec<Intent> {
        match overlay {
            Overlay::Settings(mut st) => {
                let pages = self.settings_pages();
                match st.key(key, &pages) {
                    SettingsKey::Close => return Vec::new(),
                    SettingsKey::None => {}
                    SettingsKey::Apply(trellis_ext_host::ui::RowTarget::Rule(i), choice) => {
                        if choice == "delete" {
                            self.delete_rule(i);
                            st.row = st.row.min(self.saved_rules.len().saturating_sub(1));
                        }
                    }
                    SettingsKey::Apply(trellis_ext_host::ui::RowTarget::Plugin(name), choice) => {
                        self.message = Some(crate::plugins_page::apply(
                            self.plugins.as_ref(),
                            &name,
                            &choice,
                        ));
                        self.plugin_rows = crate::plugins_page::rows(self.plugins.as_ref());
                    }
                    SettingsKey::Apply(target, choice) => {
                        if let Some(h) = &self.driver.host {
                            h.ui.apply(&target, &choice);
                        }
                    }
                }
                self.overlay = Some(Overlay::Settings(st));
            }
            Overlay::Status { scroll } => {
                if let Some(scroll) = scrolled(scroll, &key, self.overlay_page) {
                    self.overlay = Some(Overlay::Status { scroll });
                }
            }
            Overlay::Help { scroll } => {
                let closes = matches!(key.code, KeyCode::F(1) | KeyCode::Char('?'));
                if let Some(scroll) = scrolled(scroll, &key, self.overlay_page).filter(|_| !closes)
                {
                    self.overlay = Some(Overlay::Help { scroll });
                }
            }
            Overlay::Sessions(mut p) => {
                let Some(h) = self.history.as_deref() else {
                    return Vec::new();
                };
                match p.key(&key, h) {
                    crate::history::PickerKey::Stay => self.overlay = Some(Overlay::Sessions(p)),
                    crate::history::PickerKey::Close => {}
                    crate::history::PickerKey::Open(r) if r.agent_only => {
                        self.overlay = Some(Overlay::Sessions(p));
                        self.message = Some(
                            "only the agent has this session: Ctrl-R resumes it (no log here to open)"
                                .into(),
                        );
                    }
                    crate::history::PickerKey::Open(r) => {
                        self.overlay = Some(Overlay::Sessions(p));
                        return vec![Intent::Open {
                            log: r.log,
                            call: r.call_id,
                        }];
                    }
                    crate::history::PickerKey::Resume(r) if r.agent_only => {
                        let Some(agent) = self.agent_arg.clone() else {
                            self.overlay = Some(Overlay::Sessions(p));
                            self.message = Some("this session cannot start its agent again".into());
                            return Vec::new();
                        };
                        // In the directory the agent gave, else this session's.
                        let s = &self.driver.session;
                        let cwd = s
                            .agent_sessions
                            .as_ref()
                            .and_then(|l| l.sessions.iter().find(|x| x.id == r.id))
                            .and_then(|x| x.cwd.clone())
                            .or_else(|| s.cwd.clone());
                        let mut args = vec!["--agent".into(), agent];
                        if let Some(cwd) = cwd {
                            args.extend(["--cwd".into(), cwd]);
                        }
                        // One argument: an id that starts with `-` is still the value.
                        args.push(format!("--load={}", r.id));
                        self.then_run = Some(args);
                        self.stop_reason = Some("resuming another session".into());
                        self.quit = true;
                        return vec![Intent::Quit];
                    }
                    crate::history::PickerKey::Resume(r) => {
                        self.then_run = Some(vec!["sessions".into(), "resume".into(), r.id]);
                        self.stop_reason = Some("resuming another session".into());
                        self.quit = true;
                        return vec![Intent::Quit];
                    }
                }
            }
            Overlay::Options(mut p) => match p.key(&key, &self.driver.session) {
                crate::agent_options::PickerKey::Stay => self.overlay = Some(Overlay::Options(p)),
                crate::agent_options::PickerKey::Close => {}
                crate::agent_options::PickerKey::Set { setting, close } => {
                    self.message = Some(format!(
                        "asked the agent for {}",
                        trellis_text::one_line(&setting.to_string())
                    ));
                    self.driver.send_setting(setting);
                    if !close {
                        self.overlay = Some(Overlay::Options(p));
                    }
                }
            },
            Overlay::Reason(r) => return self.reason_key(r, key),
            Overlay::Rewind(r) => self.rewind_key(r, key),
            Overlay::Rule(mut p) => match p.key(key) {
                None => self.overlay = Some(Overlay::Rule(p)),
                Some(false) => {
                    self.message = Some("rule not saved; the question is still open".into())
                }
                Some(true) => match self.save_rule(&p) {
                    Ok(where_) => {
                        self.message = Some(format!("rule saved ({where_})"));
                        return vec![Intent::Decide {
                            request_id: p.request_id,
                            option_id: p.option_id,
                            reason: None,
                        }];
                    }
                    Err(e) => {
                        self.message = Some(format!("cannot save the rule: {e}"));
                        self.overlay = Some(Overlay::Rule(p));
                    }
                },
            },
        }
        Vec::new()
    }

    /// A key while a reject's reason is written: Enter sends the reject with it, unless
    /// the request was answered meanwhile.
    fn reason_key(&mut self, mut r: crate::reason::ReasonInput, key: KeyEvent) -> Vec<Intent> {
        match r.key(key) {
            crate::reason::ReasonKey::Stay => self.overlay = Some(Overlay::Reason(r)),
            crate::reason::ReasonKey::Back => {}
            crate::reason::ReasonKey::Send(reason) => {
                if !self
                    .driver
                    .session
                    .pending_permissions()
                    .into_iter()
                    .any(|(id, _, _)| id == r.request_id)
                {
                    self.message = Some("that request was answered meanwhile: nothing sent".into());
                    return Vec::new();
                }
                self.message = Some(trellis_driver::claims::REASON_SENT.into());
                return vec![Intent::Decide {
                    request_id: r.request_id,
                    option_id: r.option_id,
                    reason: Some(reason),
                }];
            }
        }
        Vec::new()
    }

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
    fn rewind_key(&mut self, mut r: crate::rewind::RewindList, key: KeyEvent) {
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

    /// A paste (bracketed: it arrives whole, so a newline in it sends nothing): into a
    /// reject's reason (one line: its newlines become spaces), or into the prompt; never
    /// an answer to a question, whatever it holds.
    pub fn on_paste(&mut self, text: &str) {
        match self.overlay.as_mut() {
            Some(Overlay::Reason(r)) => {
                let room = trellis_core::permission::REASON_LIMIT
                    .saturating_sub(r.text.text.chars().count());
                let flat: String = text
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .take(room)
                    .collect();
                r.text.insert(&flat);
            }
            Some(_) => {}
            None if self.inspector.is_some() || self.replay => {}
            None => {
                // Terminals paste lines ended by CR (or CR LF): they stay lines.
                let clean: String = text
                    .replace("\r\n", "\n")
                    .replace('\r', "\n")
                    .chars()
                    .filter(|c| *c == '\n' || *c == '\t' || !c.is_control())
                    .collect();
                self.focus = Focus::Prompt;
                self.prompt.insert(&clean);
            }
        }
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
        use trellis_core::update::user_command::{USER_CALL, is_users};
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
    fn ask_fork(&mut self, args: &str) {
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
    fn ask_handoff(&mut self, agent: &str) {
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

    /// `r` in the permission dialog: the reason's line opens, for the agent's one-time
    /// reject (an "always" reject would also be the agent's rule: not taken with words).
    pub(crate) fn reason_for(
        &mut self,
        request_id: String,
        call: usize,
        options: &[trellis_core::permission::PermissionOption],
    ) {
        use trellis_core::permission::OptionKind;
        match options.iter().find(|o| o.kind == OptionKind::RejectOnce) {
            Some(o) => {
                let subject =
                    trellis_core::enrich::card_title(&self.driver.session.ledger.at(call));
                self.overlay = Some(Overlay::Reason(crate::reason::ReasonInput::new(
                    request_id,
                    o.option_id.clone(),
                    subject,
                )));
            }
            None => {
                self.message = Some(
                    "the agent offered no one-time reject: nothing to give a reason with".into(),
                )
            }
        }
    }

    /// Saves the previewed rule in its scope and adds it to the rules in force.
    pub(crate) fn save_rule(&mut self, p: &RulePreview) -> Result<String, String> {
        let rule = p.rule();
        self.saved_rules.insert(
            0,
            crate::rules::SavedRule {
                scope: p.scope,
                rule: rule.clone(),
            },
        );
        if p.scope != Scope::Session {
            let stored = match &self.driver.host {
                Some(host) => {
                    let cwd = self.driver.session.cwd.clone().unwrap_or_default();
                    crate::rules::store(host, &cwd, &self.saved_rules)
                }
                None => Err("no store in this session (only session rules)".into()),
            };
            if let Err(e) = stored {
                self.saved_rules.remove(0);
                return Err(e);
            }
        }
        crate::rules::enforce(&mut self.driver.session.policy, rule);
        Ok(p.scope.name().to_string())
    }

    /// Deletes saved rule `i` (Settings → Rules): out of force, and out of the store.
    fn delete_rule(&mut self, i: usize) {
        if i >= self.saved_rules.len() {
            return;
        }
        let gone = self.saved_rules.remove(i);
        crate::rules::retract(&mut self.driver.session.policy, &gone.rule);
        let mut msg = format!("rule deleted: {}", gone.rule.describe());
        if gone.scope != Scope::Session
            && let Some(host) = &self.driver.host
        {
            let cwd = self.driver.session.cwd.clone().unwrap_or_default();
            if let Err(e) = crate::rules::store(host, &cwd, &self.saved_rules) {
                msg = format!("rule no longer applies, but the store was not updated: {e}");
            }
        }
        self.message = Some(msg);
    }

    /// The Settings pages: the host's and extensions' pages, then `Rules` (saved rules,
    /// each can be deleted) when there are any.
    pub fn settings_pages(&self) -> Vec<trellis_ext_host::ui::SettingsPage> {
        use trellis_ext_host::ui::{RowTarget, RowView, SettingsPage};
        let mut pages = self
            .driver
            .host
            .as_ref()
            .map(|h| h.ui.settings())
            .unwrap_or_default();
        if !self.plugin_rows.is_empty() {
            pages.push(crate::plugins_page::page(&self.plugin_rows));
        }
        if !self.saved_rules.is_empty() {
            let rows = self
                .saved_rules
                .iter()
                .enumerate()
                .map(|(i, r)| RowView {
                    target: RowTarget::Rule(i),
                    label: format!("Rule {}", i + 1),
                    choices: vec![
                        (
                            "keep".into(),
                            // The scope first: a long rule is clipped at its end.
                            format!("{}: {}", r.scope.name(), r.rule.describe()),
                        ),
                        ("delete".into(), "delete".into()),
                    ],
                    current: 0,
                })
                .collect();
            pages.push(SettingsPage {
                title: "Rules".into(),
                rows,
            });
        }
        pages
    }

    /// Runs `/settings`, `/status` or an extension's command; false: not ours.
    pub(crate) fn host_command(&mut self, text: &str) -> bool {
        let Some(rest) = text.trim().strip_prefix('/') else {
            return false;
        };
        let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        match name {
            "settings" => self.open_settings(),
            "sessions" => self.open_sessions(),
            "config" => self.open_options(Some(args)),
            "model" | "mode" => self.open_options(Some(name)),
            "export" => self.export(args.trim()),
            "fork" => self.ask_fork(args),
            "rewind" => self.open_rewind(),
            "stop" => {
                let n = self.driver.stop_user_commands();
                self.message = Some(match n {
                    0 => "none of your commands is running".into(),
                    n => format!("stopping {n} command(s) of yours"),
                });
            }
            "agent" => self.ask_handoff(args.trim()),
            "worktree" => {
                let action = args.trim();
                self.message = Some(match (&self.driver.session.worktree, action) {
                    (None, _) => "this session runs in no worktree of Trellis's".into(),
                    (Some(w), "land" | "apply" | "keep" | "discard") => {
                        self.worktree_end = Some(action.to_string());
                        format!("{action} worktree {}…", w.label)
                    }
                    (Some(w), _) => format!(
                        "/worktree land|apply|keep|discard (this session's worktree: {})",
                        w.label
                    ),
                });
            }
            "status" => {
                // Read when the page opens (files and git), never while it is drawn.
                self.status_sections = self
                    .status_reports
                    .iter()
                    .map(|r| r())
                    .filter(|s| !s.is_empty())
                    .collect();
                self.overlay = Some(Overlay::Status { scroll: 0 });
            }
            _ => {
                return self
                    .driver
                    .host
                    .as_ref()
                    .is_some_and(|h| h.ui.run_command(name, args.trim()));
            }
        }
        true
    }

    /// An extension's key in the transcript.
    pub(crate) fn ext_key(&mut self, key: &KeyEvent) -> bool {
        let Some(h) = &self.driver.host else {
            return false;
        };
        let k = Key::from_event(key);
        let hit = h.ui.keys.iter().position(|e| {
            crate::keymap::parse_keys(&e.keys).is_ok_and(|ks| ks.len() == 1 && ks[0] == k)
        });
        if let Some(i) = hit {
            h.ui.press(i);
            return true;
        }
        false
    }

    /// Opens the inspector on a call by id (an extension asked).
    /// Opens the inspector on `call_id` once the recording being read in has it (at once
    /// when it is whole).
    pub fn inspect_once_read(&mut self, call_id: &str) {
        self.inspect_pending = Some(call_id.to_string());
        self.inspect_when_loaded();
    }

    /// The call asked for by [`App::inspect_once_read`], if it has come.
    pub(crate) fn inspect_when_loaded(&mut self) {
        let Some(id) = self.inspect_pending.take() else {
            return;
        };
        if self.driver.session.ledger.position(&id).is_some() {
            self.inspect_call(&id);
        } else if self.driver.loading().is_some() {
            self.inspect_pending = Some(id);
        } else {
            self.message = Some(format!(
                "no call {} in this recording",
                trellis_text::one_line(&id)
            ));
        }
    }

    pub fn inspect_call(&mut self, call_id: &str) {
        if let Some(call) = self.driver.session.ledger.position(call_id) {
            self.overlay = None;
            self.focus = Focus::Transcript;
            self.inspector = Some(Inspector {
                call,
                view: InspectorView::Result,
                scroll: 0,
                original: false,
            });
        }
    }
}

/// A scrolling overlay's key: the new offset, or `None` when the key closes it.
/// A scrolled overlay's new position after `key`; `page`: the lines it shows (a page
/// moves by all but one of them, as a pager does).
fn scrolled(scroll: usize, key: &KeyEvent, page: usize) -> Option<usize> {
    let page = page.saturating_sub(1).max(1);
    Some(match key.code {
        KeyCode::Down | KeyCode::Char('j') => scroll + 1,
        KeyCode::Up | KeyCode::Char('k') => scroll.saturating_sub(1),
        KeyCode::PageDown | KeyCode::Char(' ') => scroll + page,
        KeyCode::PageUp => scroll.saturating_sub(page),
        KeyCode::Home | KeyCode::Char('g') => 0,
        // As far as it goes (the frame stops it at the last page).
        KeyCode::End | KeyCode::Char('G') => usize::MAX,
        KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter => return None,
        _ => scroll,
    })
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

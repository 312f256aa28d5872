//! The App's side of extensions: installing the host, the overlays it owns (Settings,
//! `/status`, the "always" rule preview) and their keys, `/commands` and extension keys.

use crossterm::event::{KeyCode, KeyEvent};
use trellis_view::inspector::InspectorView;

use crate::app::{App, Focus, Inspector, Intent};
use crate::extui::{Overlay, SettingsKey, SettingsState};
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
                            st.row = st.row.min(self.driver.saved_rules.len().saturating_sub(1));
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
                Some(true) => match self.driver.save_rule(&p.preview) {
                    Ok(where_) => {
                        self.message = Some(format!("rule saved ({where_})"));
                        return vec![Intent::Decide {
                            request_id: p.preview.request_id,
                            option_id: p.preview.option_id,
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
                // A paste is typing: a question's keys wait for a pause after it.
                self.typed_now();
            }
        }
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

    /// Deletes saved rule `i` (Settings → Rules): out of force, and out of the store.
    fn delete_rule(&mut self, i: usize) {
        if let Some(said) = self.driver.delete_rule(i) {
            self.message = Some(said);
        }
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
        if !self.driver.saved_rules.is_empty() {
            let rows = self
                .driver
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

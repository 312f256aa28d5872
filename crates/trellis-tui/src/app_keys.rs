//! What keys do in each place: the inspector, the transcript and the prompt (with
//! completion). `App::on_key` routes a key here after overlays and the dialog.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use trellis_view::inspector::InspectorView;

use crate::app::{App, DIALOG_ARM, Focus, Intent};
use crate::extui::{Overlay, RulePreview};
use crate::keymap::{Key, KeyAction, Resolved};

/// How soon a second Esc after the one that left an empty prompt opens the rewind list.
const ESC_ESC: std::time::Duration = std::time::Duration::from_millis(600);

impl App {
    pub(crate) fn inspector_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        let Some(mut ins) = self.inspector else {
            return Vec::new();
        };
        match self.keys.feed(Key::from_event(&key)) {
            Resolved::Action(a) => match a {
                KeyAction::Close => {
                    self.close_inspector();
                    return Vec::new();
                }
                KeyAction::ToggleCall => ins.view = ins.view.toggled(),
                KeyAction::DiffView => ins.view = InspectorView::Diff,
                KeyAction::PermissionView => ins.view = InspectorView::Permissions,
                KeyAction::RawView => ins.view = InspectorView::Raw,
                KeyAction::Copy => {
                    self.message = Some("copied the view to the clipboard (OSC 52)".into());
                    return self
                        .inspector_text()
                        .map(Intent::Copy)
                        .into_iter()
                        .collect();
                }
                KeyAction::Pager => {
                    return self
                        .inspector_text()
                        .map(Intent::Page)
                        .into_iter()
                        .collect();
                }
                KeyAction::SendOutput if !self.replay => self.toggle_send_output(Some(ins.call)),
                KeyAction::Inspect => {
                    // In the float: close it and put the transcript cursor on the card.
                    self.inspector = None;
                    self.return_focus = None;
                    self.focus = Focus::Transcript;
                    if let Some(e) = self.entry_of_call(ins.call) {
                        self.cursor = Some(e);
                        self.reveal(e);
                    }
                    return Vec::new();
                }
                KeyAction::NextCall
                | KeyAction::PrevCall
                | KeyAction::NextFailed
                | KeyAction::PrevFailed => {
                    let forward = matches!(a, KeyAction::NextCall | KeyAction::NextFailed);
                    let failed = matches!(a, KeyAction::NextFailed | KeyAction::PrevFailed);
                    self.step_inspector(forward, failed);
                    return Vec::new();
                }
                KeyAction::StepIn | KeyAction::StepOut => {
                    self.step_subagent(a == KeyAction::StepIn);
                    return Vec::new();
                }
                KeyAction::CancelSubagent => {
                    return self
                        .subagent_to_cancel()
                        .map(Intent::CancelSubagent)
                        .into_iter()
                        .collect();
                }
                KeyAction::Down => ins.scroll += 1,
                KeyAction::Up => ins.scroll = ins.scroll.saturating_sub(1),
                KeyAction::Bottom => ins.scroll = usize::MAX / 2,
                KeyAction::Original => {
                    ins.original = !ins.original;
                    self.message = Some(if ins.original {
                        "showing the original output (no display transforms)".into()
                    } else {
                        "showing output with display transforms".into()
                    });
                }
                KeyAction::Help => {
                    self.overlay = Some(crate::extui::Overlay::Help { scroll: 0 });
                    return Vec::new();
                }
                KeyAction::FoldThoughts
                | KeyAction::Settings
                | KeyAction::Sidebar
                | KeyAction::Sessions
                | KeyAction::SendOutput
                | KeyAction::Options => {}
            },
            Resolved::Pending => {}
            Resolved::Unbound => match key.code {
                KeyCode::Esc => {
                    self.close_inspector();
                    return Vec::new();
                }
                KeyCode::Down => ins.scroll += 1,
                KeyCode::Up => ins.scroll = ins.scroll.saturating_sub(1),
                KeyCode::PageDown => ins.scroll += 10,
                KeyCode::PageUp => ins.scroll = ins.scroll.saturating_sub(10),
                _ => {}
            },
        }
        self.inspector = Some(ins);
        Vec::new()
    }

    /// Closes the inspector; focus goes back where the inspector was opened from.
    pub(crate) fn close_inspector(&mut self) {
        self.inspector = None;
        if let Some(f) = self.return_focus.take() {
            self.focus = f;
        }
    }

    /// Moves the transcript cursor over entries (messages and cards).
    pub(crate) fn move_entry(&mut self, delta: isize) {
        let n = self.driver.session.transcript.len();
        if n == 0 {
            return;
        }
        let next = match self.cursor {
            Some(c) => (c as isize + delta).clamp(0, n as isize - 1) as usize,
            None => n - 1,
        };
        self.cursor = Some(next);
        self.reveal(next);
    }

    pub(crate) fn transcript_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        match self.keys.feed(Key::from_event(&key)) {
            Resolved::Action(KeyAction::Inspect) => self.open_inspector(),
            Resolved::Action(KeyAction::SendOutput) if !self.replay => {
                self.toggle_send_output(None)
            }
            Resolved::Action(KeyAction::Down) => self.move_entry(1),
            Resolved::Action(KeyAction::Up) => self.move_entry(-1),
            Resolved::Action(KeyAction::NextCall) => self.move_cursor(1),
            Resolved::Action(KeyAction::PrevCall) => self.move_cursor(-1),
            Resolved::Action(KeyAction::Bottom) => self.top = None,
            Resolved::Action(KeyAction::FoldThoughts) => {
                self.view.thoughts_folded = !self.view.thoughts_folded;
                self.view.invalidate_thoughts();
            }
            Resolved::Action(KeyAction::Close) if self.replay => {
                self.quit = true;
                return vec![Intent::Quit];
            }
            Resolved::Action(KeyAction::Settings) => self.open_settings(),
            Resolved::Action(KeyAction::Sessions) => self.open_sessions(),
            Resolved::Action(KeyAction::Options) => self.open_options(None),
            Resolved::Action(KeyAction::Sidebar) => self.sidebar = !self.sidebar,
            Resolved::Action(KeyAction::Help) => {
                self.overlay = Some(crate::extui::Overlay::Help { scroll: 0 })
            }
            Resolved::Action(_) | Resolved::Pending => {}
            Resolved::Unbound if self.ext_key(&key) => {}
            Resolved::Unbound => match key.code {
                KeyCode::Down => self.move_entry(1),
                KeyCode::Up => self.move_entry(-1),
                KeyCode::End => self.top = None,
                KeyCode::Char('i') | KeyCode::Enter if !self.replay => self.focus = Focus::Prompt,
                KeyCode::Char('e') if !self.replay => self.edit_past_prompt(),
                KeyCode::Esc if self.driver.session.turn_open && !self.replay => {
                    return vec![Intent::Cancel];
                }
                // Esc Esc on an empty prompt: the rewind list.
                KeyCode::Esc
                    if !self.replay
                        && self
                            .esc_left_prompt
                            .take()
                            .is_some_and(|t| t.elapsed() < ESC_ESC) =>
                {
                    self.open_rewind();
                }
                KeyCode::Esc if !self.replay => self.focus = Focus::Prompt,
                _ => {}
            },
        }
        Vec::new()
    }

    /// Tab in the prompt: complete `@path` or `/command`; again to cycle the candidates.
    pub(crate) fn complete(&mut self) {
        let (start, _) = crate::complete::word_at(&self.prompt.text, self.prompt.cursor);
        if let Some((cands, i, s)) = self.prompt.completion.take() {
            let next = (i + 1) % cands.len();
            self.prompt.replace_word(s, &cands[next]);
            self.prompt.popup = Some((cands.clone(), Some(next)));
            self.prompt.completion = Some((cands, next, s));
            return;
        }
        let cwd = self.driver.session.cwd.as_deref().map(std::path::Path::new);
        let mut commands: Vec<String> = self
            .driver
            .session
            .commands
            .iter()
            .map(|c| c.name.clone())
            .collect();
        commands.extend(
            trellis_ext_host::ui::HOST_COMMANDS
                .iter()
                .map(|c| c.to_string()),
        );
        if let Some(h) = &self.driver.host {
            commands.extend(h.ui.commands.iter().map(|c| c.name.clone()));
        }
        let cands =
            crate::complete::candidates(&self.prompt.text, self.prompt.cursor, cwd, &commands);
        match cands.len() {
            0 => self.message = Some("no completion".into()),
            1 => {
                let with = format!("{} ", cands[0]);
                self.prompt.replace_word(start, &with);
            }
            _ => {
                let common = crate::complete::common_prefix(&cands);
                let (_, word) = crate::complete::word_at(&self.prompt.text, self.prompt.cursor);
                // The candidates show in a popup above the prompt (never picked silently).
                if common.len() > word.len() {
                    self.prompt.replace_word(start, &common);
                    self.prompt.popup = Some((cands, None));
                } else {
                    self.prompt.replace_word(start, &cands[0]);
                    self.prompt.popup = Some((cands.clone(), Some(0)));
                    self.prompt.completion = Some((cands, 0, start));
                }
            }
        }
    }

    pub(crate) fn prompt_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        // Esc with the completions showing closes them and does nothing else (it left the
        // prompt, or cancelled the running turn); Enter takes the one in the prompt and
        // closes them (it sent the prompt with a candidate the user had not chosen yet).
        let plain_enter = key.code == KeyCode::Enter && key.modifiers.is_empty();
        if (key.code == KeyCode::Esc || plain_enter) && self.prompt.popup.is_some() {
            self.prompt.completion = None;
            self.prompt.popup = None;
            return Vec::new();
        }
        if key.code != KeyCode::Tab {
            self.prompt.completion = None;
            self.prompt.popup = None;
        }
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        // Every key that edits the prompt is typing (a question's keys wait for a pause
        // after it): a character, a new line, a deletion, the cursor moved.
        let editing = match key.code {
            KeyCode::Enter => alt || shift,
            KeyCode::Char(_)
            | KeyCode::Backspace
            | KeyCode::Delete
            | KeyCode::Left
            | KeyCode::Right
            | KeyCode::Up
            | KeyCode::Down
            | KeyCode::Home
            | KeyCode::End
            | KeyCode::Tab => true,
            _ => false,
        };
        if editing {
            self.typed_now();
        }
        match key.code {
            KeyCode::Enter if alt || shift => self.prompt.insert("\n"),
            KeyCode::Enter if self.resend.is_some() => return self.resend_edited(),
            KeyCode::Esc if self.resend.take().is_some() => {
                self.message = Some("no longer a resend: Enter sends it as a new prompt".into());
            }
            KeyCode::Enter => {
                if self.prompt.text.trim().is_empty() {
                    if self.queued.is_empty() {
                        return Vec::new();
                    }
                    // Enter on an empty prompt with prompts queued: send now (steer) —
                    // the running turn is cancelled first.
                    if self.driver.session.turn_open {
                        self.steering = true;
                        self.message =
                            Some("cancelling the turn to send the queued prompt now".into());
                        return vec![Intent::Cancel];
                    }
                    self.send_queued();
                    return Vec::new();
                }
                if self.host_command(&self.prompt.text.clone()) {
                    self.prompt.take();
                    return Vec::new();
                }
                // `!cmd` runs cmd here; `!!cmd` also sends its output next.
                if let Some(rest) = self.prompt.text.trim_start().strip_prefix('!') {
                    let (attach, command) = match rest.strip_prefix('!') {
                        Some(r) => (true, r.trim()),
                        None => (false, rest.trim()),
                    };
                    if command.is_empty() {
                        self.message = Some(
                            "!cmd runs cmd in the session's directory; !!cmd also sends its output with your next prompt".into(),
                        );
                        return Vec::new();
                    }
                    let command = command.to_string();
                    self.prompt.take();
                    self.last_typed = None;
                    return vec![Intent::UserCommand { command, attach }];
                }
                let text = self.prompt.take();
                let text = self.with_outputs(text);
                self.last_typed = None;
                self.top = None;
                let cwd = self.driver.session.cwd.as_deref().map(std::path::Path::new);
                let files = crate::complete::mentioned_files(&text, cwd);
                if self.driver.session.turn_open || !self.queued.is_empty() {
                    // The agent is working: queued, sent when the turn ends.
                    self.queued.push_back((text, files));
                    self.message = Some(
                        "queued: sent when the turn ends · Enter on an empty prompt sends it now · ↑ takes it back"
                            .into(),
                    );
                    return Vec::new();
                }
                return vec![Intent::Prompt { text, files }];
            }
            // ↑ on an empty prompt takes the last queued prompt back to edit (or drop).
            KeyCode::Up if self.prompt.text.is_empty() && !self.queued.is_empty() => {
                if let Some((text, _)) = self.queued.pop_back() {
                    self.prompt.set(text);
                }
            }
            KeyCode::Esc if self.driver.session.turn_open => return vec![Intent::Cancel],
            // Esc Esc arriving in one read reads as Alt-Esc: the same on an empty prompt.
            KeyCode::Esc if alt && self.prompt.text.is_empty() && !self.replay => {
                self.open_rewind();
            }
            KeyCode::Esc => {
                if self.prompt.text.is_empty() {
                    self.esc_left_prompt = Some(std::time::Instant::now());
                }
                self.focus = Focus::Transcript;
                self.move_cursor(0);
            }
            KeyCode::Up if ctrl => {
                self.focus = Focus::Transcript;
                self.move_cursor(0);
            }
            // Readline's editing keys, as in every shell.
            KeyCode::Char('a') if ctrl => self.prompt.home(),
            KeyCode::Char('e') if ctrl => self.prompt.end(),
            KeyCode::Char('u') if ctrl => self.prompt.kill_to_start(),
            KeyCode::Char('k') if ctrl => self.prompt.kill_to_end(),
            KeyCode::Char('w') if ctrl => self.prompt.kill_word(),
            KeyCode::Char('b') if alt => self.prompt.word_left(),
            KeyCode::Char('f') if alt => self.prompt.word_right(),
            KeyCode::Char('g') if ctrl => return vec![Intent::Edit(self.prompt.text.clone())],
            KeyCode::Char(c) if !ctrl && !alt => {
                self.prompt.insert(c.encode_utf8(&mut [0; 4]));
            }
            KeyCode::Backspace if alt || ctrl => self.prompt.kill_word(),
            KeyCode::Backspace => self.prompt.backspace(),
            KeyCode::Delete => self.prompt.delete(),
            KeyCode::Home => self.prompt.home(),
            KeyCode::End => self.prompt.end(),
            KeyCode::Left if ctrl || alt => self.prompt.word_left(),
            KeyCode::Right if ctrl || alt => self.prompt.word_right(),
            KeyCode::Left => self.prompt.left(),
            KeyCode::Right => self.prompt.right(),
            // A line up or down; from the first line up (the last down), the history.
            KeyCode::Up => self.prompt.vertical(true, self.prompt_width()),
            KeyCode::Down => self.prompt.vertical(false, self.prompt_width()),
            KeyCode::Tab => self.complete(),
            _ => {}
        }
        Vec::new()
    }

    /// A key while the permission dialog shows request `req` (of the call at ledger place
    /// `call`): an answer, `r` (answer with a reason), Esc (cancel the turn) or a scroll of
    /// the question. `None`: the key is not the dialog's.
    pub(crate) fn dialog_key(
        &mut self,
        key: KeyEvent,
        req: String,
        call: usize,
        options: &[trellis_core::permission::PermissionOption],
    ) -> Option<Vec<Intent>> {
        // Esc with the completions showing closes them only (it cancelled the turn).
        if key.code == KeyCode::Esc && self.prompt.popup.is_some() {
            return Some(self.prompt_key(key));
        }
        // A letter with Ctrl or Alt is the prompt's (Ctrl-A is the line's start, not
        // "always"), never an answer.
        if matches!(key.code, KeyCode::Char(_))
            && key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            return None;
        }
        let answers = matches!(key.code, KeyCode::Char(c)
            if c == 'r' || trellis_view::dialog::option_for_key(options, c).is_some());
        // Right after typing, ↑ and ↓ move in the prompt too (they scroll the question
        // after a pause).
        let moving = matches!(key.code, KeyCode::Up | KeyCode::Down);
        if moving && self.typing_over(&req).is_some() {
            return None;
        }
        if answers && let Some(opened) = self.typing_over(&req) {
            self.message = Some(if opened {
                "a permission question just opened: that key went to the prompt; answer in a moment"
            } else {
                "that key went to the prompt you are typing in; pause, then answer the question"
            }.into());
            return Some(self.prompt_key(key));
        }
        if let KeyCode::Char(c) = key.code
            && let Some(o) = trellis_view::dialog::option_for_key(options, c)
        {
            use trellis_core::permission::OptionKind;
            let always = matches!(o.kind, OptionKind::AllowAlways | OptionKind::RejectAlways);
            if always && self.driver.attached() {
                // The rules in force are the hub's: they are made where it runs.
                self.message = Some(
                    "\"always\" rules are the hub's own (its config or --permission): answer once here"
                        .into(),
                );
                return Some(Vec::new());
            }
            if always {
                // "Always" saves a rule: show what it will match first.
                let call = self.driver.session.ledger.at(call);
                self.overlay = Some(Overlay::Rule(crate::extui::RuleEdit::new(
                    RulePreview::new(req, o.option_id.clone(), o.kind, &call),
                )));
                self.opened_by(c);
                return Some(Vec::new());
            }
            return Some(vec![Intent::Decide {
                request_id: req,
                option_id: o.option_id.clone(),
                reason: None,
            }]);
        }
        if key.code == KeyCode::Char('r') {
            self.reason_for(req, call, options);
            self.opened_by('r');
            return Some(Vec::new());
        }
        if key.code == KeyCode::Esc {
            return Some(vec![Intent::Cancel]);
        }
        // The question scrolls (the answer keys stay in view); the drawing clamps.
        let step: isize = match key.code {
            KeyCode::Down => 1,
            KeyCode::Up => -1,
            KeyCode::PageDown => self.page as isize / 2,
            KeyCode::PageUp => -(self.page as isize / 2),
            _ => 0,
        };
        if step != 0 {
            if self.dialog_scroll.0 != req {
                self.dialog_scroll = (req, 0);
            }
            self.dialog_scroll.1 = self.dialog_scroll.1.saturating_add_signed(step);
            return Some(Vec::new());
        }
        None
    }

    /// The question's key `c` opened a rule to save or a reason: while the prompt holds
    /// words being written, a letter right after it makes it the start of a word instead
    /// (see `App::on_key`). With an empty prompt, a reason typed at once is the reason.
    fn opened_by(&mut self, c: char) {
        self.opened_by_key =
            (!self.prompt.text.trim().is_empty()).then(|| (c, std::time::Instant::now()));
    }

    /// A key edited the prompt now: the run of typing goes on, or begins after a pause.
    pub(crate) fn typed_now(&mut self) {
        let now = std::time::Instant::now();
        if self
            .last_typed
            .is_none_or(|t| now.duration_since(t) >= DIALOG_ARM)
        {
            self.typing_since = Some(now);
        }
        self.last_typed = Some(now);
    }

    /// The width the prompt is drawn in (before the first frame, as if without limit:
    /// a row per line).
    fn prompt_width(&self) -> usize {
        match self.prompt_drawn_width {
            0 => usize::MAX / 4,
            w => usize::from(w),
        }
    }

    /// Whether a key now is the user still typing into the prompt over question `req`:
    /// any key within [`DIALOG_ARM`] of the last one typed goes on into the prompt — the
    /// `n` of "line" never rejects, whether the run of keys began before the question
    /// showed or after it — and only a key after a pause answers. `Some(true)` when the
    /// run began before the question showed (it just opened).
    fn typing_over(&self, req: &str) -> Option<bool> {
        let (Some(typed), Some(began)) = (self.last_typed, self.typing_since) else {
            return None;
        };
        if typed.elapsed() >= DIALOG_ARM {
            return None;
        }
        Some(match &self.dialog_shown {
            Some((r, at)) if r == req => began < *at,
            // Not drawn yet: new to the user too.
            _ => true,
        })
    }
}

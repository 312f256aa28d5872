//! UI state and what keys do to it. Pure: keys in, intents out; the loop performs the
//! intents (prompt, cancel, permission answers) and feeds the session.
//!
//! Invariants: the permission dialog shows the oldest pending request; one keypress
//! answers at most one request; the transcript follows the bottom until the user scrolls
//! away, and follows again once they scroll back to the bottom.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use trellis_core::Session;
use trellis_core::session::Entry;
use trellis_view::inspector::InspectorView;

use crate::extui::Overlay;
use crate::keymap::{Key, KeyAction, Keymap, Resolved};
pub use crate::prompt::Prompt;
use trellis_view::{Theme, TranscriptView};

pub use crate::intent::Intent;

/// One of the user's commands whose output goes with the next prompt.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Attached {
    /// `!!cmd`: the newest run of that command line (its terminal is not known yet).
    Newest(String),
    /// `s` on a card: that run, by its terminal (and its command line, to show).
    Terminal { id: String, command: String },
}

impl Attached {
    pub(crate) fn command(&self) -> &str {
        match self {
            Attached::Newest(c) | Attached::Terminal { command: c, .. } => c,
        }
    }
}

/// What the user is alerted to when the terminal is not focused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Alert {
    /// A permission request reached the dialog: the requesting call's title.
    Permission { title: String },
    /// A question reached the dialog: its message.
    Question { message: String },
    /// A request was answered (the title's marker goes once none is left).
    Answered,
}

/// Alerts for a permission request while the terminal does not have focus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alerts {
    pub bell: bool,
    /// A mark in the terminal title until the request is answered.
    pub title: bool,
    /// A desktop notification (OSC 9).
    pub notify: bool,
}

impl Default for Alerts {
    fn default() -> Self {
        Alerts {
            bell: true,
            title: true,
            notify: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Prompt,
    Transcript,
}

/// The floating inspector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inspector {
    /// Ledger index of the call shown.
    pub call: usize,
    pub view: InspectorView,
    pub scroll: usize,
    /// Show output as recorded, without display transforms.
    pub original: bool,
}

/// How long a permission question is on screen before its keys answer it: a key typed
/// sooner was meant for the prompt.
pub const DIALOG_ARM: std::time::Duration = std::time::Duration::from_millis(500);

/// What a sidebar line is, for clicks.
#[derive(Debug, Clone, PartialEq)]
pub enum SidebarHit {
    Header(String),
    Row { section: String, row: String },
}

pub struct App {
    /// The session's driver: the session state, the extension host, the connection.
    pub driver: trellis_driver::Driver,
    pub agent: String,
    pub theme: Theme,
    pub view: TranscriptView,
    /// First transcript line shown; `None` follows the bottom.
    pub top: Option<usize>,
    /// Height of the transcript area at the last draw.
    pub page: usize,
    /// Selected transcript entry (a card).
    pub cursor: Option<usize>,
    pub focus: Focus,
    /// Where focus goes back when the inspector closes (it was opened from there).
    pub(crate) return_focus: Option<Focus>,
    pub inspector: Option<Inspector>,
    pub prompt: Prompt,
    /// Prompts typed while a turn ran, sent in order as turns end (with the files they
    /// mention).
    pub queued: std::collections::VecDeque<(String, Vec<std::path::PathBuf>)>,
    /// The running turn is being cancelled to send the queue now (steer).
    pub(crate) steering: bool,
    /// Replaying a recording: no agent, no prompt.
    pub replay: bool,
    /// The home directory, shown as `~` in the status bar (read once, not per frame).
    pub(crate) home: Option<String>,
    /// The session log (for the Raw view).
    pub log_path: Option<std::path::PathBuf>,
    /// Where each line of the session log starts (the Raw view reads only its frames).
    pub(crate) line_offsets: std::cell::RefCell<Option<trellis_store::LineOffsets>>,
    /// First line and height of the transcript area, and its first shown line, at the
    /// last draw (for mouse clicks).
    pub transcript_area: (u16, u16),
    pub shown_top: usize,
    pub message: Option<String>,
    /// Failures said since the last key, all shown with the message (several plugins can
    /// fail at start at once: the last must not hide the others).
    pub failures: Vec<String>,
    ctrl_c: bool,
    pub keys: Keymap,
    pub cursor_mode: CursorMode,
    /// Show key hints in the inspector's border.
    pub key_hints: bool,
    /// Quit right after drawing the first frame (startup benchmarks).
    pub exit_after_first_frame: bool,
    /// A call to inspect once the recording being read in has it.
    pub(crate) inspect_pending: Option<String>,
    /// The screen was taken over (the pager): the next frame is drawn in full.
    pub(crate) full_redraw: bool,
    /// A login the agent asked for, run by the loop once no key reader holds the terminal.
    pub(crate) login: Option<trellis_acp::Login>,
    /// Whether the terminal has focus (focus events; assumed until told otherwise).
    pub focused: bool,
    /// How a permission request reaches a user who is elsewhere.
    pub alerts: Alerts,
    /// The terminal title currently carries the "permission needed" mark.
    pub title_marked: bool,
    pub quit: bool,
    /// Why the UI is stopping, when it is not the user's quit (a signal).
    pub stop_reason: Option<String>,
    /// A host overlay (Settings, /status, a rule preview) over everything else.
    pub overlay: Option<Overlay>,
    /// Show the sidebar when there is room and something to show.
    pub sidebar: bool,
    /// Sidebar lines at the last draw: (screen row, first column, what it is).
    pub sidebar_hits: Vec<(u16, u16, SidebarHit)>,
    /// Screen row the mouse hovers in the sidebar.
    pub hover: Option<u16>,
    /// Rules the user saved from "always" answers (Settings → Rules).
    /// Where this session's plugins are found and enabled (Settings → Plugins); `None`
    /// in replays and tests.
    pub plugins: Option<trellis_plugin::registry::Registry>,
    /// Past sessions (the sessions picker, `/export`); `None` in replays and tests.
    pub history: Option<Box<dyn crate::history::History>>,
    /// Once this session is closed, run Trellis again with these arguments (resuming
    /// another session from the picker).
    pub then_run: Option<Vec<String>>,
    /// The agent as Trellis was told it (`--agent`, a preset or a command line): resuming
    /// a session only the agent has starts Trellis again with it.
    pub agent_arg: Option<String>,
    /// The agent was given as a command line: once it says its name (`agentInfo`),
    /// [`App::agent`] becomes that name (until then, its program's).
    pub name_from_agent: bool,
    /// MCP servers of the config or of plugin packages that could not be offered.
    pub mcp_problems: Vec<String>,
    /// Sections the front end adds to `/status`, read when it opens (never while it is
    /// drawn): each a heading line, then its lines (Trellis's worktrees that need a look,
    /// the trace export's counts). An empty section is left out.
    pub status_reports: Vec<Box<dyn Fn() -> Vec<String>>>,
    pub status_sections: Vec<Vec<String>>,
    /// What must live as long as this session's front end (the demo's scratch workspace).
    kept: Vec<Box<dyn std::any::Any>>,
    /// `/worktree land|apply|keep|discard`: the ending asked for this session's worktree,
    /// carried out by the deck (which closes the session first when the tree goes).
    pub worktree_end: Option<String>,
    /// `/fork` or `/agent`: a new session from this one, opened by the deck beside it.
    pub fork_request: Option<crate::fork::ForkAsk>,
    /// Puts back the files of a turn (the front end's: the UI runs no git).
    pub rewinder: Option<crate::rewind::Rewinder>,
    /// When Esc left an empty prompt: a second Esc soon after opens the rewind list.
    pub(crate) esc_left_prompt: Option<std::time::Instant>,
    /// The permission question on screen and when it first showed: an answer key that
    /// comes sooner than [`DIALOG_ARM`] after is the end of what was being typed, and goes
    /// to the prompt.
    pub(crate) dialog_shown: Option<(String, std::time::Instant)>,
    /// When a character was last typed into the prompt (none since it was sent), and
    /// when that run of typing began.
    pub(crate) last_typed: Option<std::time::Instant>,
    pub(crate) typing_since: Option<std::time::Instant>,
    /// The question's key that opened a rule to save or a reason to write, and when.
    pub(crate) opened_by_key: Option<(char, std::time::Instant)>,
    /// The width the prompt was last drawn in: ↑ and ↓ move by the rows drawn.
    pub(crate) prompt_drawn_width: u16,
    /// The prompt's last layout, made again only when it changed.
    pub(crate) prompt_layout: crate::prompt_view::Cached,
    /// The user's commands whose output goes with the next prompt (`!!cmd`, `s` on a
    /// card).
    pub(crate) attach_output: Vec<Attached>,
    /// A past prompt being edited (`e` on it): the turn it started (the log's numbering),
    /// to go back to before when it is sent.
    pub(crate) resend: Option<u32>,
    /// The session keys in force (the deck's), for the help screen.
    pub session_keys: Vec<(String, &'static str)>,
    /// The keys of several sessions, shown at the rail's foot while several run (set by
    /// the deck; none for one session).
    pub deck_hint: Option<String>,
    /// The lines the scrolled overlay (help, status) showed at its last frame: a page.
    pub(crate) overlay_page: usize,
    /// The Plugins page, built when Settings opens (reading packages and hashing them is
    /// not done per frame).
    pub(crate) plugin_rows: Vec<crate::plugins_page::PluginRow>,
    /// The last float body built (inspector or dialog), by what it was built from.
    float_cache: std::cell::RefCell<Option<FloatCache>>,
    float_builds: std::cell::Cell<u64>,
    /// The permission dialog, built once per question, call revision and width.
    dialog_cache:
        std::cell::RefCell<Option<(String, std::sync::Arc<trellis_view::dialog::Dialog>)>>,
    /// How far the dialog's question is scrolled, for which request.
    pub(crate) dialog_scroll: (String, usize),
    /// What the user entered in the agent's open question.
    pub asking: Option<crate::ask::Asking>,
    /// Browser openers started for the agent's links (stopped when the app goes).
    pub openers: crate::opener::Openers,
}

/// A built float: its key, title and lines.
type FloatCache = (
    String,
    std::sync::Arc<(String, Vec<ratatui::text::Line<'static>>)>,
);

/// How the inspector finds "the card at the cursor" when the cursor is not on a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CursorMode {
    #[default]
    Exact,
    Nearest,
    Above,
    Below,
}

impl CursorMode {
    pub fn parse(s: &str) -> Option<CursorMode> {
        Some(match s {
            "exact" => CursorMode::Exact,
            "nearest" => CursorMode::Nearest,
            "above" => CursorMode::Above,
            "below" => CursorMode::Below,
            _ => return None,
        })
    }
}

impl App {
    /// Keeps `thing` until this front end goes.
    pub fn keep_alive(&mut self, thing: Box<dyn std::any::Any>) {
        self.kept.push(thing);
    }

    pub fn new(session: Session, agent: String, replay: bool) -> App {
        App {
            driver: trellis_driver::Driver::offline(session),
            agent,
            theme: Theme::default(),
            view: TranscriptView::new(),
            top: None,
            page: 20,
            cursor: None,
            focus: if replay {
                Focus::Transcript
            } else {
                Focus::Prompt
            },
            inspector: None,
            prompt: Prompt::default(),
            queued: std::collections::VecDeque::new(),
            steering: false,
            replay,
            log_path: None,
            line_offsets: std::cell::RefCell::new(None),
            home: std::env::var("HOME").ok(),
            transcript_area: (0, 0),
            shown_top: 0,
            message: None,
            failures: Vec::new(),
            ctrl_c: false,
            keys: Keymap::default(),
            cursor_mode: CursorMode::Exact,
            key_hints: true,
            exit_after_first_frame: false,
            inspect_pending: None,
            focused: true,
            alerts: Alerts::default(),
            title_marked: false,
            quit: false,
            stop_reason: None,
            overlay: None,
            sidebar: true,
            sidebar_hits: Vec::new(),
            hover: None,
            plugins: None,
            history: None,
            then_run: None,
            agent_arg: None,
            name_from_agent: false,
            deck_hint: None,
            overlay_page: 10,
            mcp_problems: Vec::new(),
            status_reports: Vec::new(),
            status_sections: Vec::new(),
            session_keys: Vec::new(),
            worktree_end: None,
            fork_request: None,
            rewinder: None,
            esc_left_prompt: None,
            resend: None,
            attach_output: Vec::new(),
            dialog_shown: None,
            last_typed: None,
            typing_since: None,
            opened_by_key: None,
            prompt_drawn_width: 0,
            prompt_layout: Default::default(),
            kept: Vec::new(),
            return_focus: None,
            full_redraw: false,
            login: None,
            plugin_rows: Vec::new(),
            float_cache: std::cell::RefCell::new(None),
            float_builds: std::cell::Cell::new(0),
            dialog_cache: std::cell::RefCell::new(None),
            dialog_scroll: (String::new(), 0),
            asking: None,
            openers: Default::default(),
        }
    }

    /// The float body for `key`, built by `build` only when the key changed since the
    /// last frame.
    pub(crate) fn cached(
        &self,
        key: String,
        build: impl FnOnce() -> (String, Vec<ratatui::text::Line<'static>>),
    ) -> std::sync::Arc<(String, Vec<ratatui::text::Line<'static>>)> {
        let mut c = self.float_cache.borrow_mut();
        if let Some((k, v)) = c.as_ref()
            && *k == key
        {
            return v.clone();
        }
        self.float_builds.set(self.float_builds.get() + 1);
        let v = std::sync::Arc::new(build());
        *c = Some((key, v.clone()));
        v
    }

    /// A turn ended: the next queued prompt goes out when it ended normally, or was
    /// cancelled to steer; otherwise the queue is held (Enter on an empty prompt sends).
    pub fn turn_ended(&mut self, stop_reason: &str) {
        let steered = std::mem::take(&mut self.steering);
        if self.queued.is_empty() {
            return;
        }
        if stop_reason == "end_turn" || steered {
            self.send_queued();
        } else {
            self.message = Some(format!(
                "the turn ended with {stop_reason}: {} queued prompt(s) held (Enter on an empty prompt sends)",
                self.queued.len()
            ));
        }
    }

    /// Sends the first queued prompt.
    pub(crate) fn send_queued(&mut self) {
        if let Some((text, files)) = self.queued.pop_front() {
            self.top = None;
            self.driver.prompt(text, files);
        }
    }

    /// How many times a float's content (the inspector's view) was built: once per call
    /// revision, view, width and decor, not per frame.
    pub fn float_builds(&self) -> u64 {
        self.float_builds.get()
    }

    pub(crate) fn ledger_index(&self, entry: usize) -> Option<usize> {
        match self.driver.session.transcript.get(entry)? {
            Entry::ToolCall { index } => Some(*index),
            _ => None,
        }
    }

    /// The transcript entry that shows ledger call `call` (for a subagent's call, the card
    /// of the call that started the subagent).
    pub(crate) fn entry_of_call(&self, call: usize) -> Option<usize> {
        let shown = self.driver.session.shown_call(call)?;
        self.view.entry_of_call(shown)
    }

    /// The dialog for `key`, built by `build` when the key changed.
    pub(crate) fn dialog_built(
        &self,
        key: String,
        build: impl FnOnce() -> trellis_view::dialog::Dialog,
    ) -> std::sync::Arc<trellis_view::dialog::Dialog> {
        let mut c = self.dialog_cache.borrow_mut();
        if let Some((k, v)) = c.as_ref()
            && *k == key
        {
            return v.clone();
        }
        let v = std::sync::Arc::new(build());
        *c = Some((key, v.clone()));
        v
    }

    /// The request the dialog shows: (request id, call index, options, position, total).
    pub fn dialog(
        &self,
    ) -> Option<(
        String,
        usize,
        Vec<trellis_core::permission::PermissionOption>,
        usize,
        usize,
    )> {
        let mut pending = self.driver.session.pending_permissions();
        if let Some(h) = &self.driver.host {
            // Requests an extension holds are not the user's question (yet).
            pending.retain(|(req, ..)| h.holder(req).is_none());
        }
        let total = pending.len();
        let (req, call, options) = pending.into_iter().next()?;
        Some((req, call, options, 1, total))
    }

    /// The agent's question the dialog shows (the oldest open one), once no permission
    /// request waits.
    pub fn question(&self) -> Option<std::sync::Arc<trellis_core::Elicitation>> {
        if self.replay {
            return None;
        }
        // A question an extension holds is not the user's (yet).
        let held = |id: &str| {
            self.driver
                .host
                .as_ref()
                .is_some_and(|h| h.holder(id).is_some())
        };
        self.driver
            .session
            .pending_elicitations()
            .find(|e| !held(&e.request_id))
            .cloned()
    }

    /// Whether frames still have bounded work to finish (stale layout after a resize,
    /// a rule preview counting its matches): the UI keeps drawing until they are done.
    pub(crate) fn catching_up(&self) -> bool {
        self.view.settling()
            || matches!(&self.overlay, Some(crate::extui::Overlay::Rule(p))
                if !p.preview.hits.complete(&self.driver.session))
    }

    /// Handles a key; returns what the loop must do.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Intent> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            if self.ctrl_c || self.replay {
                self.quit = true;
                return vec![Intent::Quit];
            }
            self.ctrl_c = true;
            self.message = Some("press Ctrl-C again to quit".into());
            return Vec::new();
        }
        self.ctrl_c = false;
        self.message = None;
        self.failures.clear();
        if ctrl
            && key.code == KeyCode::Char('r')
            && self.driver.session.agent_exited.is_some()
            && !self.replay
        {
            self.message = Some(if self.driver.session.remote.is_some() {
                "dialing the agent again…".into()
            } else {
                "restarting the agent…".into()
            });
            return vec![Intent::Restart];
        }
        // F1 anywhere: the help screen (again: closes it).
        if key.code == KeyCode::F(1) {
            self.overlay = match self.overlay.take() {
                Some(Overlay::Help { .. }) => None,
                _ => Some(Overlay::Help { scroll: 0 }),
            };
            return Vec::new();
        }
        if let Some(ov) = self.overlay.take() {
            // A question's key that opened a rule to save or a reason, followed at once by
            // another letter, was the start of a word (`a` of "ase fix", `r` of "run"):
            // the rest went into the rule's path and Enter saved it. The question stays
            // open, unanswered, and both keys go to the prompt.
            if let Some((first, at)) = self.opened_by_key.take()
                && at.elapsed() < DIALOG_ARM
                && matches!(ov, Overlay::Rule(_) | Overlay::Reason(_))
                && let KeyCode::Char(next) = key.code
                && !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            {
                self.focus = Focus::Prompt;
                for c in [first, next] {
                    self.prompt.insert(c.encode_utf8(&mut [0; 4]));
                }
                self.typed_now();
                self.message = Some(
                    "that was typing: the question is still open, unanswered; pause, then answer"
                        .into(),
                );
                return Vec::new();
            }
            return self.overlay_key(ov, key);
        }
        // Ctrl-T in every place (the prompt, the transcript, a replay, the inspector, over
        // a dialog): the inspector on the latest call.
        if ctrl && key.code == KeyCode::Char('t') {
            self.inspect_latest();
            return Vec::new();
        }
        if matches!(key.code, KeyCode::F(_))
            && self.keys.feed(Key::from_event(&key)) == Resolved::Action(KeyAction::Settings)
        {
            self.open_settings();
            return Vec::new();
        }
        if self.inspector.is_some() {
            return self.inspector_key(key);
        }
        if let Some((req, call, options, _, _)) = self.dialog()
            && let Some(done) = self.dialog_key(key, req, call, &options)
        {
            return done;
        }
        if let Some(e) = self.question() {
            let asking = crate::ask::state_for(&mut self.asking, &e);
            return asking.key(&e, key).into_iter().collect();
        }
        match key.code {
            KeyCode::PageUp => return self.scrolled(-(self.page as isize - 1)),
            KeyCode::PageDown => return self.scrolled(self.page as isize - 1),
            _ => {}
        }
        match self.focus {
            Focus::Prompt => self.prompt_key(key),
            Focus::Transcript => self.transcript_key(key),
        }
    }
}

//! A session as a document to share (SPEC H4): Markdown, or one self-contained HTML
//! file. Both are made from one model of the session ([`Doc`]): the transcript in order,
//! each tool call with its arguments, result, diffs and permission decisions. Redaction
//! (a function the caller passes, the built-in's patterns) applies to every text that
//! came from the agent or its tools.

mod html;
mod md;

use trellis_core::permission::Decider;
use trellis_core::session::Entry;
use trellis_core::summary::{size_summary, status_glyph};
use trellis_core::tool_call::{ToolCall, ToolContent};
use trellis_core::{Session, event::Role};

use crate::inspector::{ArgBlock, call_args};

pub use html::html;
pub use md::markdown;

/// What the document says about the session besides its transcript.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    pub id: Option<String>,
    pub title: Option<String>,
    pub agent: Option<String>,
    pub cwd: Option<String>,
    /// Seconds since the Unix epoch.
    pub started: Option<f64>,
}

/// Replaces the secrets in a text; `None` when there is nothing to replace.
pub type Redactor<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Export options.
#[derive(Default)]
pub struct Options<'a> {
    pub meta: Meta,
    /// Replaces secrets in a text (`None`: nothing to replace).
    pub redact: Option<Redactor<'a>>,
}

impl std::fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("meta", &self.meta)
            .field("redact", &self.redact.is_some())
            .finish()
    }
}

/// The session as the exports see it.
#[derive(Debug, Clone)]
pub struct Doc {
    pub title: String,
    pub facts: Vec<(&'static str, String)>,
    pub items: Vec<Item>,
}

#[derive(Debug, Clone)]
pub enum Item {
    /// A turn begins (its number).
    Turn(u32),
    User(String),
    Agent(String),
    Thought(String),
    Notice(String),
    /// The agent compacted its context: what happened, and its summary.
    Compaction {
        line: String,
        summary: String,
    },
    Call(Box<CallDoc>),
}

#[derive(Debug, Clone)]
pub struct CallDoc {
    pub id: String,
    pub glyph: &'static str,
    /// `completed`, `failed`…
    pub status: &'static str,
    pub kind: &'static str,
    pub title: String,
    /// `exit 1`, `+3 −1`, `42 lines`.
    pub size: Option<String>,
    pub args: Vec<ArgBlock>,
    /// Text output and terminal output.
    pub output: String,
    pub diffs: Vec<DiffDoc>,
    /// One line per permission request: what was asked, the answer and who gave it.
    pub permissions: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct DiffDoc {
    pub path: String,
    /// (`' '`, `'-'` or `'+'`, line).
    pub lines: Vec<(char, String)>,
}

/// Unchanged lines kept around each change in an exported diff.
const CONTEXT: usize = 3;

impl Doc {
    pub fn of(session: &Session, opts: &Options<'_>) -> Doc {
        // Secrets redacted; no control character left (a Markdown file is read with
        // `cat` too).
        let clean = |s: &str| -> String {
            let s = trellis_text::sanitize(s);
            match opts.redact.and_then(|r| r(&s)) {
                Some(r) => r,
                None => s.into_owned(),
            }
        };
        let m = &opts.meta;
        let title = m
            .title
            .clone()
            .or_else(|| session.title.clone())
            .unwrap_or_else(|| "Trellis session".into());
        let mut facts = Vec::new();
        if let Some(a) = m
            .agent
            .clone()
            .or_else(|| Some(session.agent.name.clone()).filter(|n| !n.is_empty()))
        {
            facts.push(("Agent", a));
        }
        if let Some(c) = m.cwd.clone().or_else(|| session.cwd.clone()) {
            facts.push(("Directory", c));
        }
        if let Some(t) = m.started {
            facts.push(("Started", trellis_core::civil::utc_minutes(t)));
        }
        let calls = session.ledger.calls();
        facts.push((
            "Turns",
            format!("{} · {} tool calls", session.turn, calls.len()),
        ));
        if let Some(id) = &m.id {
            facts.push(("Session", id.clone()));
        }
        let mut items = Vec::new();
        let mut turn = 0;
        for entry in &session.transcript {
            match entry {
                Entry::Message(b) => {
                    if b.role == Role::User && b.turn != turn {
                        turn = b.turn;
                        items.push(Item::Turn(turn));
                    }
                    let text = clean(b.text.trim_end());
                    items.push(match b.role {
                        Role::User => Item::User(text),
                        Role::Agent => Item::Agent(text),
                        Role::Thought => Item::Thought(text),
                    });
                }
                Entry::ToolCall { index } => {
                    let call = session.ledger.at(*index);
                    items.push(Item::Call(Box::new(call_doc(&call, session, &clean))));
                }
                Entry::Notice { text } => items.push(Item::Notice(clean(text))),
                Entry::AgentNotice(n) => {
                    let (severity, title, description) = (&n.severity, &n.title, &n.description);
                    let mut t = format!("{severity}: {title}");
                    if let Some(d) = description {
                        t.push_str(" — ");
                        t.push_str(d);
                    }
                    items.push(Item::Notice(clean(&t)));
                }
                Entry::Compaction(c) => items.push(Item::Compaction {
                    line: clean(&c.line()),
                    summary: clean(&c.summary),
                }),
                // Under the call that started it, once one names it.
                Entry::Subagent { index } => {
                    if session.subagents.list[*index].call_id.is_none() {
                        let story = trellis_core::summary::subagent_story(session, *index);
                        items.push(Item::Notice(clean(story.trim_end())));
                    }
                }
            }
        }
        Doc {
            title: clean(&title),
            facts,
            items,
        }
    }
}

fn call_doc(call: &ToolCall, session: &Session, clean: &dyn Fn(&str) -> String) -> CallDoc {
    let args = call_args(call)
        .unwrap_or_default()
        .into_iter()
        .map(|mut b| {
            b.body = clean(&b.body);
            b
        })
        .collect();
    let mut output = String::new();
    let mut diffs = Vec::new();
    for c in &call.content {
        match c {
            ToolContent::Text { text } => push_line(&mut output, &text.load()),
            ToolContent::Terminal { terminal_id } => {
                if let Some(t) = session.terminals.get(terminal_id) {
                    // Colours dropped, not shown as escape sequences.
                    let lines = trellis_text::ansi::ansi_lines(&t.output);
                    push_line(&mut output, &trellis_text::plain_text(&lines));
                }
            }
            ToolContent::Block { block } => push_line(&mut output, block.get()),
            // The subagent's story follows the call's own output.
            ToolContent::Session { .. } => {}
            ToolContent::Diff {
                path,
                old_text,
                new_text,
            } => {
                let old = old_text.as_deref().unwrap_or("");
                diffs.push(DiffDoc {
                    path: path.clone(),
                    lines: hunks(old, new_text)
                        .into_iter()
                        .map(|(c, l)| (c, clean(&l)))
                        .collect(),
                });
            }
        }
    }
    if let Some(child) = session
        .subagents
        .for_call(call)
        .and_then(|c| session.subagents.position(&c.session_id))
    {
        push_line(
            &mut output,
            &clean(&trellis_core::summary::subagent_story(session, child)),
        );
    }
    let permissions = call
        .permissions
        .iter()
        .map(|p| {
            let asked: Vec<&str> = p.options.iter().map(|o| o.name.as_str()).collect();
            let answer = match (&p.outcome, &p.decider) {
                (Some(o), Some(Decider::Unrecorded) | None) => o.label(),
                (Some(o), Some(d)) => format!("{} by {d}", o.label()),
                (None, _) => "never answered".into(),
            };
            format!("asked ({}): {answer}", asked.join(" / "))
        })
        .collect();
    CallDoc {
        id: call.id.clone(),
        glyph: status_glyph(call.status),
        status: call.status.as_str(),
        kind: call.kind.as_str(),
        title: clean(&trellis_core::enrich::card_title(call)),
        size: size_summary(call, session),
        args,
        output: clean(&output),
        diffs,
        permissions,
    }
}

fn push_line(out: &mut String, text: &str) {
    out.push_str(text);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

/// The diff of `old` and `new` with [`CONTEXT`] lines around each change (a `…` line
/// where unchanged lines are left out).
fn hunks(old: &str, new: &str) -> Vec<(char, String)> {
    use trellis_core::diff::{Op, near_changes, ops};
    let all = ops(old, new);
    let shown = near_changes(&all, CONTEXT);
    let mut out = Vec::new();
    let mut skipped = false;
    for (i, op) in all.iter().enumerate() {
        if !shown[i] {
            skipped = true;
            continue;
        }
        if skipped {
            out.push((' ', "…".to_string()));
            skipped = false;
        }
        out.push(match op {
            Op::Same(l) => (' ', l.to_string()),
            Op::Del(l) => ('-', l.to_string()),
            Op::Add(l) => ('+', l.to_string()),
        });
    }
    out
}

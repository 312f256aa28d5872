//! Agent Markdown to styled lines at a width: headings, emphasis, inline code, links,
//! lists (nested, ordered), block quotes, rules and fenced code blocks (kept verbatim,
//! framed, with the language shown). Pure; callers cache by text revision and width.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui_core::style::{Color, Modifier, Style};
use ratatui_core::text::{Line, Span};

use crate::width::display_width;
use crate::wrap::wrap_line;

/// Styles used for Markdown (a theme supplies them).
#[derive(Debug, Clone, Copy)]
pub struct MdTheme {
    pub heading: Style,
    pub code: Style,
    pub code_block: Style,
    pub link: Style,
    pub quote: Style,
    pub marker: Style,
    /// Highlight fenced code by its language.
    pub syntax: bool,
}

impl Default for MdTheme {
    fn default() -> Self {
        MdTheme {
            heading: Style::default()
                .add_modifier(Modifier::BOLD)
                .fg(Color::LightBlue),
            code: Style::default().fg(Color::LightYellow),
            code_block: Style::default().fg(Color::Gray),
            link: Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::UNDERLINED),
            quote: Style::default().fg(Color::DarkGray),
            marker: Style::default().fg(Color::DarkGray),
            syntax: true,
        }
    }
}

struct Renderer {
    width: usize,
    theme: MdTheme,
    out: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Prefix for the first line of the current block and for its continuation lines.
    prefixes: Vec<(String, String)>,
    lists: Vec<Option<u64>>,
    code: Option<(String, String)>,
    pending_first: Option<String>,
    link: Option<String>,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_text(&mut self, text: &str, style: Style) {
        if !text.is_empty() {
            self.spans.push(Span::styled(text.to_string(), style));
        }
    }

    fn blank(&mut self) {
        if self.out.last().is_some_and(|l| l.width() > 0) && self.prefixes.is_empty() {
            self.out.push(Line::default());
        }
    }

    /// Ends the current line of text: wraps it under the current prefixes.
    fn flush(&mut self) {
        if self.spans.is_empty() && self.pending_first.is_none() {
            return;
        }
        let cont: String = self.prefixes.iter().map(|(_, c)| c.as_str()).collect();
        let first: String = match self.pending_first.take() {
            Some(f) => {
                let outer: String = self.prefixes[..self.prefixes.len().saturating_sub(1)]
                    .iter()
                    .map(|(_, c)| c.as_str())
                    .collect();
                outer + &f
            }
            None => cont.clone(),
        };
        let avail = self.width.saturating_sub(display_width(&cont)).max(8);
        let line = Line::from(std::mem::take(&mut self.spans));
        for (i, l) in wrap_line(&line, avail).into_iter().enumerate() {
            let prefix = if i == 0 { first.clone() } else { cont.clone() };
            let mut spans = vec![Span::styled(prefix, self.theme.marker)];
            spans.extend(l.spans);
            self.out.push(Line::from(spans));
        }
    }

    fn event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => match &mut self.code {
                Some((_, buf)) => buf.push_str(&t),
                None => {
                    let s = self.style();
                    self.push_text(&t, s);
                }
            },
            Event::Code(t) => self.push_text(&t, self.theme.code),
            Event::SoftBreak => {
                let s = self.style();
                self.push_text(" ", s);
            }
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                self.blank();
                self.out.push(Line::styled(
                    "─".repeat(self.width.min(80)),
                    self.theme.marker,
                ));
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                let s = self.style();
                self.push_text(&t, s);
            }
            Event::TaskListMarker(done) => {
                self.push_text(if done { "[x] " } else { "[ ] " }, self.theme.marker)
            }
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph if self.lists.is_empty() => self.blank(),
            Tag::Heading { level, .. } => {
                self.blank();
                let hashes = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    HeadingLevel::H3 => "### ",
                    _ => "#### ",
                };
                self.push_text(hashes, self.theme.marker);
                self.styles.push(self.theme.heading);
            }
            Tag::BlockQuote(_) => {
                self.blank();
                self.prefixes.push(("▎ ".into(), "▎ ".into()));
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.blank();
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => {
                        l.split([' ', ',']).next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let depth = self.lists.len();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => {
                        if depth % 2 == 1 {
                            "• ".to_string()
                        } else {
                            "◦ ".to_string()
                        }
                    }
                };
                let indent = " ".repeat(display_width(&marker));
                self.prefixes.push((marker.clone(), indent));
                self.pending_first = Some(marker);
            }
            Tag::Emphasis => self
                .styles
                .push(self.style().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(self.style().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(self.style().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                self.styles.push(self.theme.link);
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush(),
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.prefixes.pop();
            }
            TagEnd::CodeBlock => {
                if let Some((lang, body)) = self.code.take() {
                    self.code_block(&lang, &body);
                }
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
            }
            TagEnd::Item => {
                self.flush();
                self.prefixes.pop();
                self.pending_first = None;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    let shown: String = self.spans.iter().map(|s| s.content.as_ref()).collect();
                    if !shown.ends_with(&url) {
                        self.push_text(&format!(" ({url})"), self.theme.marker);
                    }
                }
            }
            _ => {}
        }
    }

    fn code_block(&mut self, lang: &str, body: &str) {
        let prefix: String = self.prefixes.iter().map(|(_, c)| c.as_str()).collect();
        let label = if lang.is_empty() {
            String::new()
        } else {
            format!(" {lang} ")
        };
        self.out.push(Line::from(vec![
            Span::styled(prefix.clone(), self.theme.marker),
            Span::styled(format!("╭─{label}"), self.theme.marker),
        ]));
        let avail = self.width.saturating_sub(display_width(&prefix) + 2).max(1);
        let body = body.trim_end_matches('\n');
        let highlighted = if self.theme.syntax {
            crate::highlight::highlight(body, lang)
        } else {
            None
        };
        let lines: Vec<Line<'static>> = match highlighted {
            Some(lines) => lines,
            None => body
                .split('\n')
                .map(|raw| {
                    let line = crate::ansi::ansi_line(raw, &mut Style::default());
                    Line::from(
                        line.spans
                            .into_iter()
                            .map(|s| Span::styled(s.content, self.theme.code_block))
                            .collect::<Vec<_>>(),
                    )
                })
                .collect(),
        };
        for line in lines {
            for l in wrap_line(&line, avail) {
                let mut spans = vec![Span::styled(format!("{prefix}│ "), self.theme.marker)];
                spans.extend(l.spans);
                self.out.push(Line::from(spans));
            }
        }
        self.out
            .push(Line::styled(format!("{prefix}╰─"), self.theme.marker));
    }
}

/// Renders Markdown `text` to lines of at most `width` columns.
pub fn render(text: &str, width: usize, theme: MdTheme) -> Vec<Line<'static>> {
    let mut r = Renderer {
        width: width.max(8),
        theme,
        out: Vec::new(),
        spans: Vec::new(),
        styles: Vec::new(),
        prefixes: Vec::new(),
        lists: Vec::new(),
        code: None,
        pending_first: None,
        link: None,
    };
    let opts = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for ev in Parser::new_ext(text, opts) {
        r.event(ev);
    }
    // An unterminated fence while streaming: show what has arrived.
    if let Some((lang, body)) = r.code.take() {
        r.code_block(&lang, &body);
    }
    r.flush();
    r.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> String {
        crate::plain_text(lines)
    }

    #[test]
    fn renders_blocks() {
        let md = "# Title\n\nSome *emphasis*, **strong** and `code` with a [link](https://x.y).\n\n- one\n- two\n  1. nested\n\n> quoted\n\n```rust\nfn main() {}\n```\n\n---\n";
        insta::assert_snapshot!(plain(&render(md, 40, MdTheme::default())));
    }

    #[test]
    fn wraps_to_width() {
        let lines = render("word ".repeat(30).as_str(), 20, MdTheme::default());
        assert!(lines.iter().all(|l| l.width() <= 20));
        assert!(lines.len() > 5);
    }
}

//! Syntax highlighting of code (fenced blocks, file contents) to styled lines, with
//! syntect's bundled grammars and a dark theme. The grammar set loads once, on the first
//! code that needs it; unknown languages and over-long inputs come back plain.

use std::sync::OnceLock;

use ratatui_core::style::{Color, Modifier, Style};
use ratatui_core::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::{SyntaxReference, SyntaxSet};

/// Code longer than this is shown plain (highlighting is for reading, not for logs).
const MAX_BYTES: usize = 256 * 1024;

fn assets() -> &'static (SyntaxSet, Theme) {
    static ASSETS: OnceLock<(SyntaxSet, Theme)> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let mut themes = ThemeSet::load_defaults();
        let theme = themes
            .themes
            .remove("base16-ocean.dark")
            .unwrap_or_default();
        (syntaxes, theme)
    })
}

fn syntax_for<'a>(set: &'a SyntaxSet, lang: &str) -> Option<&'a SyntaxReference> {
    let lang = lang.trim().trim_start_matches('.');
    if lang.is_empty() {
        return None;
    }
    set.find_syntax_by_token(lang)
        .or_else(|| set.find_syntax_by_extension(lang))
        .or_else(|| {
            let ext = std::path::Path::new(lang).extension()?.to_str()?;
            set.find_syntax_by_extension(ext)
        })
}

/// Whether `lang` (a fence label, an extension or a file name) has a grammar.
pub fn known(lang: &str) -> bool {
    syntax_for(&assets().0, lang).is_some()
}

/// `code` highlighted as `lang` (a fence label like `rust`, an extension, or a path);
/// `None` when the language is unknown or the code too long.
pub fn highlight(code: &str, lang: &str) -> Option<Vec<Line<'static>>> {
    if code.len() > MAX_BYTES {
        return None;
    }
    let (set, theme) = assets();
    let syntax = syntax_for(set, lang)?;
    let mut h = HighlightLines::new(syntax, theme);
    let mut out = Vec::new();
    for line in syntect::util::LinesWithEndings::from(code) {
        let ranges = h.highlight_line(line, set).ok()?;
        let spans: Vec<Span<'static>> = ranges
            .into_iter()
            .map(|(st, text)| {
                let mut style = Style::default().fg(Color::Rgb(
                    st.foreground.r,
                    st.foreground.g,
                    st.foreground.b,
                ));
                if st.font_style.contains(FontStyle::BOLD) {
                    style = style.add_modifier(Modifier::BOLD);
                }
                if st.font_style.contains(FontStyle::ITALIC) {
                    style = style.add_modifier(Modifier::ITALIC);
                }
                Span::styled(
                    text.trim_end_matches(['\n', '\r']).replace('\t', "    "),
                    style,
                )
            })
            .filter(|s| !s.content.is_empty())
            .collect();
        out.push(Line::from(spans));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highlights_known_languages_only() {
        let lines = highlight("fn main() {\n    let x = 1;\n}\n", "rust").unwrap();
        assert_eq!(lines.len(), 3);
        let styles: std::collections::HashSet<_> = lines[0].spans.iter().map(|s| s.style).collect();
        assert!(styles.len() > 1, "keywords and names get different colours");
        assert!(highlight("x", "no-such-language").is_none());
        assert!(known("src/lib.rs") && known("py") && !known(""));
    }
}

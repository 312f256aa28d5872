//! The prompt editor's text buffer: multi-line text, a cursor, history, and the Tab
//! completion being cycled.

use unicode_segmentation::UnicodeSegmentation;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Prompt {
    /// Completion candidates being cycled with Tab, and the one shown.
    pub(crate) completion: Option<(Vec<String>, usize, usize)>,
    /// Candidates shown in the popup above the prompt, and the one in the prompt now.
    pub popup: Option<(Vec<String>, Option<usize>)>,
    pub text: String,
    /// Byte offset of the cursor.
    pub cursor: usize,
    pub history: Vec<String>,
    hist_pos: Option<usize>,
    /// What was in the prompt when ↑ went into the history: back past the newest entry.
    draft: Option<String>,
    /// The column ↑ or ↓ aimed at, and where they left the cursor: the next move aims at
    /// it again while the cursor is still there.
    goal: Option<(usize, usize)>,
}

impl Prompt {
    /// Replaces the word that starts at byte `start` (up to the cursor) with `with`.
    pub(crate) fn replace_word(&mut self, start: usize, with: &str) {
        self.text.replace_range(start..self.cursor, with);
        self.cursor = start + with.len();
    }

    pub(crate) fn insert(&mut self, s: &str) {
        self.completion = None;
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
    }

    /// Bytes of the character before the cursor, as the user sees one (an accented letter
    /// written as two code points, a flag, an emoji with its skin tone: one grapheme).
    fn before(&self) -> usize {
        self.text[..self.cursor]
            .graphemes(true)
            .next_back()
            .map_or(0, str::len)
    }

    /// Bytes of the character after the cursor (one grapheme).
    fn after(&self) -> usize {
        self.text[self.cursor..]
            .graphemes(true)
            .next()
            .map_or(0, str::len)
    }

    pub(crate) fn backspace(&mut self) {
        let n = self.before();
        self.text.replace_range(self.cursor - n..self.cursor, "");
        self.cursor -= n;
    }

    pub(crate) fn left(&mut self) {
        self.cursor -= self.before();
    }

    pub(crate) fn right(&mut self) {
        self.cursor += self.after();
    }

    /// Deletes the character after the cursor (Delete).
    pub(crate) fn delete(&mut self) {
        let n = self.after();
        self.text.replace_range(self.cursor..self.cursor + n, "");
    }

    /// Byte offset where the cursor's line starts.
    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    /// Byte offset where the cursor's line ends (before its newline).
    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// To the start of the line (Ctrl-A, Home).
    pub(crate) fn home(&mut self) {
        self.cursor = self.line_start();
    }

    /// To the end of the line (Ctrl-E, End).
    pub(crate) fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Byte offset of the start of the word before the cursor (spaces skipped first).
    fn word_back(&self) -> usize {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(|c: char| !is_word(c));
        trimmed
            .char_indices()
            .rev()
            .find(|(_, c)| !is_word(*c))
            .map_or(0, |(i, c)| i + c.len_utf8())
    }

    /// Byte offset of the end of the word after the cursor (spaces skipped first).
    fn word_forward(&self) -> usize {
        let after = &self.text[self.cursor..];
        let skip = after.len() - after.trim_start_matches(|c: char| !is_word(c)).len();
        let rest = &after[skip..];
        let word = rest.find(|c: char| !is_word(c)).unwrap_or(rest.len());
        self.cursor + skip + word
    }

    /// One word left (Alt-B, Ctrl-Left).
    pub(crate) fn word_left(&mut self) {
        self.cursor = self.word_back();
    }

    /// One word right (Alt-F, Ctrl-Right).
    pub(crate) fn word_right(&mut self) {
        self.cursor = self.word_forward();
    }

    /// Deletes from the start of the line to the cursor (Ctrl-U).
    pub(crate) fn kill_to_start(&mut self) {
        let start = self.line_start();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Deletes from the cursor to the end of the line (Ctrl-K).
    pub(crate) fn kill_to_end(&mut self) {
        let end = self.line_end();
        self.text.replace_range(self.cursor..end, "");
    }

    /// One row up or down (↑, ↓) as the prompt is drawn `width` cells wide (a wrapped
    /// line is rows too), at the cursor's column as far as that row reaches; from the
    /// first row up (the last row down), through the history, as a shell does.
    pub(crate) fn vertical(&mut self, up: bool, width: usize) {
        self.completion = None;
        let goal = self
            .goal
            .filter(|(at, _)| *at == self.cursor)
            .map(|(_, col)| col);
        match crate::prompt_view::vertical(&self.text, self.cursor, width, up, goal) {
            Some((at, col)) => {
                self.cursor = at;
                self.goal = Some((at, col));
            }
            None => self.history(up),
        }
    }

    /// Deletes the word before the cursor (Ctrl-W, Alt-Backspace).
    pub(crate) fn kill_word(&mut self) {
        let start = self.word_back();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Replaces the whole text (what the external editor gave back), cursor at the end.
    pub(crate) fn set(&mut self, text: String) {
        self.completion = None;
        self.hist_pos = None;
        self.draft = None;
        self.cursor = text.len();
        self.text = text;
    }

    /// An older (`back`) or newer entry of the history. Going in keeps what was typed,
    /// which comes back past the newest entry: ↑ never loses a draft.
    pub(crate) fn history(&mut self, back: bool) {
        if self.history.is_empty() {
            return;
        }
        let pos = match (self.hist_pos, back) {
            (None, true) => {
                self.draft = Some(std::mem::take(&mut self.text));
                self.history.len() - 1
            }
            (None, false) => return,
            (Some(p), true) => p.saturating_sub(1),
            (Some(p), false) if p + 1 < self.history.len() => p + 1,
            (Some(_), false) => {
                self.hist_pos = None;
                self.text = self.draft.take().unwrap_or_default();
                self.cursor = self.text.len();
                return;
            }
        };
        self.hist_pos = Some(pos);
        self.text = self.history[pos].clone();
        self.cursor = self.text.len();
    }

    pub(crate) fn take(&mut self) -> String {
        self.hist_pos = None;
        self.draft = None;
        self.cursor = 0;
        let text = std::mem::take(&mut self.text);
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Prompt {
        // `|` marks the cursor.
        let cursor = text.find('|').expect("a cursor");
        Prompt {
            text: text.replacen('|', "", 1),
            cursor,
            ..Prompt::default()
        }
    }

    fn shown(p: &Prompt) -> String {
        let mut t = p.text.clone();
        t.insert(p.cursor, '|');
        t
    }

    type Case = (&'static str, fn(&mut Prompt), &'static str);

    #[test]
    fn up_and_down_move_between_lines_at_the_same_column() {
        let cases: [(&str, bool, &str); 5] = [
            ("first\nsec|ond", true, "fir|st\nsecond"),
            ("fir|st\nsecond", false, "first\nsec|ond"),
            ("a\nlonger li|ne", true, "a|\nlonger line"),
            // By columns, not bytes: a wide character takes two.
            ("日本|\nabcdef", false, "日本\nabcd|ef"),
            ("ab|cd\n日本語", false, "abcd\n日|本語"),
        ];
        for (before, up, after) in cases {
            let mut p = at(before);
            p.vertical(up, 1000);
            assert_eq!(shown(&p), after, "{before:?} up={up}");
        }
    }

    #[test]
    fn the_history_keeps_the_draft_and_is_reached_from_the_first_and_last_lines() {
        let mut p = Prompt {
            history: vec!["older\ntwo lines".into(), "newer".into()],
            ..at("my dra|ft")
        };
        p.vertical(true, 1000);
        assert_eq!(shown(&p), "newer|");
        p.vertical(true, 1000);
        assert_eq!(shown(&p), "older\ntwo lines|");
        // Inside an entry of two lines, ↑ moves up a line first; from its first line, on.
        p.vertical(true, 1000);
        assert_eq!(shown(&p), "older|\ntwo lines");
        // ↓ from its last line leaves it for the newer one, then the draft, unchanged.
        p.vertical(false, 1000);
        p.vertical(false, 1000);
        assert_eq!(shown(&p), "newer|");
        p.vertical(false, 1000);
        assert_eq!(shown(&p), "my draft|");
        p.vertical(false, 1000);
        assert_eq!(shown(&p), "my draft|");
    }

    #[test]
    fn the_cursor_moves_and_deletes_by_the_character_seen() {
        // `e` and a combining accent, a thumb with a skin tone, a flag.
        let text = "ae\u{301}b👍🏽c🇫🇷";
        let mut p = at(&format!("{text}|"));
        p.backspace();
        assert_eq!(p.text, "ae\u{301}b👍🏽c");
        p.left();
        p.left();
        assert_eq!(shown(&p), "ae\u{301}b|👍🏽c");
        p.delete();
        assert_eq!(p.text, "ae\u{301}bc");
        p.left();
        p.left();
        assert_eq!(shown(&p), "a|e\u{301}bc");
        p.right();
        assert_eq!(shown(&p), "ae\u{301}|bc");
    }

    #[test]
    fn editing_keys_act_on_the_line_and_the_word() {
        let cases: [Case; 14] = [
            ("first\nsec|ond", Prompt::home, "first\n|second"),
            ("fi|rst\nsecond", Prompt::end, "first|\nsecond"),
            ("one two| three", Prompt::word_left, "one |two three"),
            ("one two  |three", Prompt::word_left, "one |two  three"),
            ("|one two", Prompt::word_left, "|one two"),
            ("one| two three", Prompt::word_right, "one two| three"),
            ("one two|", Prompt::word_right, "one two|"),
            ("a\nkeep th|is", Prompt::kill_to_start, "a\n|is"),
            ("keep th|is\nb", Prompt::kill_to_end, "keep th|\nb"),
            ("fix the tests  |", Prompt::kill_word, "fix the |"),
            ("fix the/path|", Prompt::kill_word, "fix the/|"),
            ("ab|c", Prompt::delete, "ab|"),
            ("abc|", Prompt::delete, "abc|"),
            ("é|ü", Prompt::delete, "é|"),
        ];
        for (before, op, after) in cases {
            let mut p = at(before);
            op(&mut p);
            assert_eq!(shown(&p), after, "from {before:?}");
        }
    }

    #[test]
    fn word_moves_step_over_multibyte_letters() {
        let mut p = at("grüße weiß|");
        p.word_left();
        assert_eq!(shown(&p), "grüße |weiß");
        p.word_left();
        assert_eq!(shown(&p), "|grüße weiß");
        p.word_right();
        assert_eq!(shown(&p), "grüße| weiß");
    }
}

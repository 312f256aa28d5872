//! The prompt editor's text buffer: multi-line text, a cursor, history, and the Tab
//! completion being cycled.

#[derive(Debug, Default)]
pub struct Prompt {
    /// Completion candidates being cycled with Tab, and the one shown.
    pub(crate) completion: Option<(Vec<String>, usize, usize)>,
    pub text: String,
    /// Byte offset of the cursor.
    pub cursor: usize,
    pub history: Vec<String>,
    hist_pos: Option<usize>,
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

    pub(crate) fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    pub(crate) fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    pub(crate) fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    pub(crate) fn history(&mut self, back: bool) {
        if self.history.is_empty() {
            return;
        }
        let pos = match (self.hist_pos, back) {
            (None, true) => self.history.len() - 1,
            (None, false) => return,
            (Some(p), true) => p.saturating_sub(1),
            (Some(p), false) if p + 1 < self.history.len() => p + 1,
            (Some(_), false) => {
                self.hist_pos = None;
                self.text.clear();
                self.cursor = 0;
                return;
            }
        };
        self.hist_pos = Some(pos);
        self.text = self.history[pos].clone();
        self.cursor = self.text.len();
    }

    pub(crate) fn take(&mut self) -> String {
        self.hist_pos = None;
        self.cursor = 0;
        let text = std::mem::take(&mut self.text);
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }
}

//! The prompt as drawn: each of its lines wrapped at the width the editor has (between
//! words where it can), behind a two-cell lead (`› ` on a line's first row, two spaces on
//! the rows it wraps onto), and the rows that show the cursor when there are more than
//! fit. A long prompt used to be cut at the right edge: its end, and the cursor typing
//! it, were out of sight.

use trellis_text::width::{Piece, TAB_STOP, pieces};

/// Rows the prompt shows at most; a longer one scrolls to keep the cursor in sight (and
/// fewer on a short terminal: see [`layout`]).
pub const MAX_ROWS: usize = 6;

/// Cells before the text on every row.
const LEAD: usize = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptView {
    /// The rows that show (at most [`MAX_ROWS`]), lead included, tabs as spaces.
    pub rows: Vec<String>,
    /// The cursor: its row among `rows`, its column (lead included).
    pub cursor: (usize, usize),
    /// Rows out of sight above and below the ones shown.
    pub above: usize,
    pub below: usize,
}

/// The last layout and what it was made from: a frame whose prompt did not change (most
/// of them, while an agent streams) does not walk the prompt's text again. The text is
/// known by a hash, so no copy of a large draft is kept.
#[derive(Debug, Default)]
pub struct Cached {
    from: Option<(u64, usize, usize, usize)>,
    view: Option<PromptView>,
}

impl Cached {
    /// [`layout`] of these, made again only when one of them changed.
    pub fn layout(
        &mut self,
        text: &str,
        cursor: usize,
        width: usize,
        max_rows: usize,
    ) -> PromptView {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        let from = (h.finish(), cursor, width, max_rows);
        match &self.view {
            Some(v) if self.from == Some(from) => v.clone(),
            _ => {
                let v = layout(text, cursor, width, max_rows);
                self.from = Some(from);
                self.view = Some(v.clone());
                v
            }
        }
    }
}

/// One row as drawn: its text (lead included) and the places a cursor can be on it, as
/// (byte offset in the prompt, column after the lead), in order. A row a line wraps from
/// has no place after its last character: that place is the next row's first.
struct Row {
    text: String,
    stops: Vec<(usize, usize)>,
}

/// A place a row may break at: after a space or a tab (the row's stops and text up to
/// there, and the column there).
struct Gap {
    stop: usize,
    text: usize,
    col: usize,
}

/// The rows of `text` in `width` cells: a line breaks between words where it can, and
/// inside a word only when the word is longer than a row (a word cut at the edge read as
/// two words).
fn rows_of(text: &str, width: usize) -> Vec<Row> {
    let room = width.saturating_sub(LEAD).max(1);
    let tab = |col: usize| (col / TAB_STOP + 1) * TAB_STOP - col;
    let mut rows: Vec<Row> = Vec::new();
    let mut offset = 0;
    let last = text.split('\n').count() - 1;
    for (n, line) in text.split('\n').enumerate() {
        let lead = if n == 0 { "› " } else { "  " };
        let mut row = Row {
            text: lead.into(),
            stops: Vec::new(),
        };
        let mut col = 0;
        let mut at = offset;
        // Where the row may break between words: after its last space or tab (the stop
        // and text length that follow it, and its column).
        let mut gap: Option<Gap> = None;
        for p in pieces(line) {
            let (mut cells, len) = match p {
                // An escape would draw as text it is not: shown as nothing (the prompt
                // holds none unless pasted, and it is sent as typed).
                Piece::Escape(e) => (0, e.len()),
                Piece::Tab => (tab(col), 1),
                Piece::Grapheme(g, w) => (w, g.len()),
            };
            if col > 0 && col + cells > room {
                let next = Row {
                    text: "  ".into(),
                    stops: Vec::new(),
                };
                match gap.take() {
                    // The word being written goes to the next row (a word longer than a
                    // row is then cut where that row ends).
                    Some(g) if col - g.col + cells <= room => {
                        let mut next = next;
                        next.text.push_str(&row.text.split_off(g.text));
                        next.stops = row.stops.split_off(g.stop);
                        for s in &mut next.stops {
                            s.1 -= g.col;
                        }
                        col -= g.col;
                        rows.push(std::mem::replace(&mut row, next));
                    }
                    _ => {
                        rows.push(std::mem::replace(&mut row, next));
                        col = 0;
                    }
                }
                if matches!(p, Piece::Tab) {
                    cells = tab(col).min(room);
                }
            }
            row.stops.push((at, col));
            match p {
                Piece::Grapheme(g, _) => row.text.push_str(g),
                Piece::Tab => row.text.extend(std::iter::repeat_n(' ', cells)),
                Piece::Escape(_) => {}
            }
            col += cells;
            at += len;
            if matches!(p, Piece::Tab | Piece::Grapheme(" ", _)) {
                gap = Some(Gap {
                    stop: row.stops.len(),
                    text: row.text.len(),
                    col,
                });
            }
        }
        if col >= room && n == last {
            // The prompt's last line fills its row: the place after it is the next row
            // (always, not only with the cursor there, so the box keeps its height as the
            // cursor moves). After a line further up, the cursor stays on the row's last
            // cell: an empty row there would read as an empty line.
            let next = Row {
                text: "  ".into(),
                stops: Vec::new(),
            };
            rows.push(std::mem::replace(&mut row, next));
            col = 0;
        }
        row.stops.push((at, col));
        rows.push(row);
        offset = at + 1;
    }
    rows
}

/// The row and column (after the lead) of the byte `cursor`: the last place at or before
/// it (inside a character, which the editor never leaves it, is before that character).
fn place_of(rows: &[Row], cursor: usize) -> (usize, usize) {
    let mut found = (0, 0);
    for (r, row) in rows.iter().enumerate() {
        for &(at, col) in &row.stops {
            if at > cursor {
                return found;
            }
            found = (r, col);
        }
    }
    found
}

/// Lays `text` out in `width` cells, the cursor at byte `cursor`, showing at most
/// `max_rows` rows (at least one, at most [`MAX_ROWS`]).
pub fn layout(text: &str, cursor: usize, width: usize, max_rows: usize) -> PromptView {
    let max_rows = max_rows.clamp(1, MAX_ROWS);
    let rows = rows_of(text, width);
    let (row, col) = place_of(&rows, cursor);
    // The rows around the cursor: as many as fit, the cursor's last.
    let first = (row + 1).saturating_sub(max_rows);
    let total = rows.len();
    let shown: Vec<String> = rows
        .into_iter()
        .skip(first)
        .take(max_rows)
        .map(|r| r.text)
        .collect();
    PromptView {
        above: first,
        below: total - first - shown.len(),
        rows: shown,
        cursor: (row - first, (LEAD + col).min(width.saturating_sub(1))),
    }
}

/// Where the cursor goes one row up or down from byte `cursor` as the prompt is drawn in
/// `width` cells: the place of that row at or before column `goal` (the cursor's own when
/// `None`; its last place when the row is shorter). Returns it and the column aimed at,
/// kept for the next move (through a short row, back to the column it left). `None` on
/// the first row up or the last row down.
pub fn vertical(
    text: &str,
    cursor: usize,
    width: usize,
    up: bool,
    goal: Option<usize>,
) -> Option<(usize, usize)> {
    let rows = rows_of(text, width);
    let (row, col) = place_of(&rows, cursor);
    let col = goal.unwrap_or(col);
    let target = if up { row.checked_sub(1)? } else { row + 1 };
    let stops = &rows.get(target)?.stops;
    let pick = stops
        .iter()
        .rev()
        .find(|(_, c)| *c <= col)
        .or(stops.first())?;
    Some((pick.0, col))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str, cursor: usize, width: usize) -> (Vec<String>, (usize, usize)) {
        let v = layout(text, cursor, width, MAX_ROWS);
        (v.rows, v.cursor)
    }

    #[test]
    fn a_short_prompt_is_one_row_with_the_cursor_after_it() {
        assert_eq!(rows("abc", 3, 20), (vec!["› abc".into()], (0, 5)));
        assert_eq!(rows("", 0, 20), (vec!["› ".into()], (0, 2)));
    }

    #[test]
    fn a_long_line_wraps_and_the_cursor_follows_its_end() {
        let text = "abcdefghij";
        let (r, c) = rows(text, text.len(), 6);
        assert_eq!(r, vec!["› abcd", "  efgh", "  ij"]);
        assert_eq!(c, (2, 4));
        // In the middle: the cursor on the 'f'.
        assert_eq!(rows(text, 5, 6).1, (1, 3));
    }

    #[test]
    fn a_line_breaks_between_words_and_inside_one_only_when_it_is_longer_than_a_row() {
        // Room for 8 cells after the lead.
        let text = "fix the tests please";
        let (r, c) = rows(text, text.len(), 10);
        assert_eq!(r, vec!["› fix the ", "  tests ", "  please"]);
        assert_eq!(c, (2, 8));
        // The cursor on the 't' of "tests": the start of the second row, not the end of
        // the first (the place after the space is the next row's first).
        assert_eq!(rows(text, text.find("tests").unwrap(), 10).1, (1, 2));
        // Up and down keep to the rows drawn.
        let down = vertical(text, 1, 10, false, None).unwrap().0;
        assert_eq!(&text[down..down + 2], "es");
        // A word longer than a row starts a row and is cut at its edge.
        let (r, _) = rows("a verylongword", 14, 10);
        assert_eq!(r, vec!["› a ", "  verylong", "  word"]);
        // A tab is a place to break too.
        let (r, _) = rows("abcd\tefghij", 11, 12);
        assert_eq!(r, vec!["› abcd    ", "  efghij"]);
    }

    #[test]
    fn a_row_filled_to_the_edge_puts_the_cursor_on_the_next() {
        let (r, c) = rows("abcd", 4, 6);
        assert_eq!(r, vec!["› abcd", "  "]);
        assert_eq!(c, (1, 2));
        // Wherever the cursor is: the box keeps its height as the cursor moves.
        let (r, c) = rows("abcd", 2, 6);
        assert_eq!(r, vec!["› abcd", "  "]);
        assert_eq!(c, (0, 4));
    }

    #[test]
    fn the_cached_layout_is_made_again_when_the_text_cursor_or_width_change() {
        let mut c = Cached::default();
        assert_eq!(c.layout("abc", 3, 20, 6), layout("abc", 3, 20, 6));
        assert_eq!(c.layout("abc", 3, 20, 6), layout("abc", 3, 20, 6));
        assert_eq!(c.layout("abd", 3, 20, 6).rows, vec!["› abd"]);
        assert_eq!(c.layout("abd", 1, 20, 6).cursor, (0, 3));
        assert_eq!(c.layout("abd", 1, 4, 6).rows.len(), 2);
    }

    #[test]
    fn a_full_line_above_another_gets_no_empty_row() {
        let (r, c) = rows("abcd\nxy", 4, 6);
        assert_eq!(r, vec!["› abcd", "  xy"]);
        assert_eq!(c, (0, 5));
    }

    #[test]
    fn a_cursor_inside_a_character_is_drawn_before_it() {
        // Byte 2 is inside `é` (two bytes): never drawn at the row's start by mistake.
        assert_eq!(rows("aéb", 2, 20).1, (0, 3));
    }

    #[test]
    fn a_short_terminal_shows_fewer_rows_the_cursors_among_them_and_says_how_many_are_not() {
        let text: String = (0..10).map(|i| format!("line {i}\n")).collect();
        let text = text.trim_end();
        let at = text.find("line 4").unwrap();
        let v = layout(text, at, 40, 3);
        assert_eq!(v.rows, vec!["  line 2", "  line 3", "  line 4"]);
        assert_eq!(v.cursor, (2, 2));
        assert_eq!((v.above, v.below), (2, 5));
        assert_eq!(layout(text, 0, 40, 0).rows.len(), 1);
    }

    #[test]
    fn wide_characters_never_straddle_the_edge() {
        // Each takes two cells; four cells of room hold two.
        let (r, c) = rows("日本語", "日本語".len(), 6);
        assert_eq!(r, vec!["› 日本", "  語"]);
        assert_eq!(c, (1, 4));
    }

    #[test]
    fn more_rows_than_fit_show_those_ending_at_the_cursor() {
        let text: String = (0..10).map(|i| format!("line {i}\n")).collect();
        let text = text.trim_end();
        let (r, c) = rows(text, text.len(), 40);
        assert_eq!(r.len(), MAX_ROWS);
        assert_eq!(r[MAX_ROWS - 1], "  line 9");
        assert_eq!(c, (MAX_ROWS - 1, 8));
        // At the start: the first rows.
        let (r, c) = rows(text, 0, 40);
        assert_eq!(r[0], "› line 0");
        assert_eq!(c, (0, 2));
    }

    #[test]
    fn tabs_are_drawn_as_the_spaces_they_take() {
        let (r, c) = rows("a\tb", 3, 40);
        assert_eq!(r, vec![format!("› a{}b", " ".repeat(TAB_STOP - 1))]);
        assert_eq!(c, (0, 2 + TAB_STOP + 1));
        // A tab that does not fit the row is a whole stop on the next one.
        let (r, _) = rows("abcdefghij\tk", 0, 14);
        assert_eq!(
            r,
            vec![
                "› abcdefghij".to_string(),
                format!("  {}k", " ".repeat(TAB_STOP))
            ]
        );
    }

    fn v(text: &str, cursor: usize, width: usize, up: bool) -> Option<usize> {
        vertical(text, cursor, width, up, None).map(|(at, _)| at)
    }

    #[test]
    fn through_a_short_row_the_column_aimed_at_is_kept() {
        let text = "abcdef\nx\nabcdef";
        let (at, goal) = vertical(text, 5, 80, false, None).unwrap();
        assert_eq!((at, goal), (text.find('x').unwrap() + 1, 5));
        let (at, _) = vertical(text, at, 80, false, Some(goal)).unwrap();
        assert_eq!(&text[at..], "f");
    }

    #[test]
    fn up_and_down_move_by_the_rows_drawn_and_stop_at_the_first_and_last() {
        // "abcdefghij" in rows of four: `abcd`, `efgh`, `ij`; then a second line.
        let text = "abcdefghij\nxy";
        let at = |c: char| text.find(c).unwrap();
        assert_eq!(v(text, at('f'), 6, true), Some(at('b')));
        assert_eq!(v(text, at('b'), 6, false), Some(at('f')));
        // To a shorter row: its last place (after `j`, the end of the line).
        assert_eq!(v(text, at('h'), 6, false), Some(at('j') + 1));
        // From the line's last row to the next line, at the same column.
        assert_eq!(v(text, at('j'), 6, false), Some(at('y')));
        assert_eq!(v(text, at('y'), 6, true), Some(at('j')));
        assert_eq!(v(text, at('c'), 6, true), None);
        assert_eq!(v(text, text.len(), 6, false), None);
        // Up from the end of `ij` (column 2): `g`, at the same column.
        assert_eq!(v(text, at('j') + 1, 6, true), Some(at('g')));
        // A row a line wraps from has no place after its last character: down from the
        // end of `abcd` would be `e`'s place, the next row's first; from `d`, `h`.
        assert_eq!(v(text, at('d'), 6, false), Some(at('h')));
    }

    #[test]
    fn a_terminal_too_narrow_still_shows_one_cell_per_row() {
        let (r, c) = rows("ab", 2, 2);
        assert_eq!(r, vec!["› a", "  b", "  "]);
        assert_eq!(c, (2, 1));
    }
}

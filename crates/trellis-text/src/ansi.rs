//! ANSI-coloured output (SGR) to styled lines; every other escape is dropped, tabs are
//! expanded so that the line draws as the terminal would have drawn it.

use ratatui_core::style::{Color, Modifier, Style};
use ratatui_core::text::{Line, Span};

use crate::width::{Piece, TAB_STOP, pieces};

fn basic(n: u16) -> Color {
    match n {
        0 => Color::Black,
        1 => Color::Red,
        2 => Color::Green,
        3 => Color::Yellow,
        4 => Color::Blue,
        5 => Color::Magenta,
        6 => Color::Cyan,
        7 => Color::Gray,
        8 => Color::DarkGray,
        9 => Color::LightRed,
        10 => Color::LightGreen,
        11 => Color::LightYellow,
        12 => Color::LightBlue,
        13 => Color::LightMagenta,
        14 => Color::LightCyan,
        _ => Color::White,
    }
}

/// Applies SGR parameters (`1;31`, `38;5;208`, …) to `style`.
pub fn apply_sgr(style: Style, params: &str) -> Style {
    let nums: Vec<u16> = params
        .split([';', ':'])
        .map(|p| p.parse().unwrap_or(0))
        .collect();
    let nums = if nums.is_empty() { vec![0] } else { nums };
    let mut s = style;
    let mut i = 0;
    while i < nums.len() {
        let n = nums[i];
        match n {
            0 => s = Style::default(),
            1 => s = s.add_modifier(Modifier::BOLD),
            2 => s = s.add_modifier(Modifier::DIM),
            3 => s = s.add_modifier(Modifier::ITALIC),
            4 => s = s.add_modifier(Modifier::UNDERLINED),
            7 => s = s.add_modifier(Modifier::REVERSED),
            9 => s = s.add_modifier(Modifier::CROSSED_OUT),
            22 => s = s.remove_modifier(Modifier::BOLD | Modifier::DIM),
            23 => s = s.remove_modifier(Modifier::ITALIC),
            24 => s = s.remove_modifier(Modifier::UNDERLINED),
            27 => s = s.remove_modifier(Modifier::REVERSED),
            29 => s = s.remove_modifier(Modifier::CROSSED_OUT),
            30..=37 => s = s.fg(basic(n - 30)),
            90..=97 => s = s.fg(basic(n - 90 + 8)),
            40..=47 => s = s.bg(basic(n - 40)),
            100..=107 => s = s.bg(basic(n - 100 + 8)),
            39 => s.fg = None,
            49 => s.bg = None,
            38 | 48 => {
                let color = match nums.get(i + 1) {
                    Some(5) => {
                        i += 2;
                        nums.get(i).map(|&c| Color::Indexed(c as u8))
                    }
                    Some(2) => {
                        i += 4;
                        match (nums.get(i - 2), nums.get(i - 1), nums.get(i)) {
                            (Some(&r), Some(&g), Some(&b)) => {
                                Some(Color::Rgb(r as u8, g as u8, b as u8))
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                };
                if let Some(c) = color {
                    s = if n == 38 { s.fg(c) } else { s.bg(c) };
                }
            }
            _ => {}
        }
        i += 1;
    }
    s
}

/// One line of terminal output (no newline) as a styled line. `carry` is the style in
/// force at the start and is updated to the style at the end (colours span lines).
pub fn ansi_line(text: &str, carry: &mut Style) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut cur = String::new();
    let mut col = 0usize;
    let flush = |cur: &mut String, spans: &mut Vec<Span<'static>>, style: Style| {
        if !cur.is_empty() {
            spans.push(Span::styled(std::mem::take(cur), style));
        }
    };
    for p in pieces(text) {
        match p {
            Piece::Escape(esc) => {
                if let Some(params) = esc.strip_prefix("\x1b[").and_then(|r| r.strip_suffix('m')) {
                    flush(&mut cur, &mut spans, *carry);
                    *carry = apply_sgr(*carry, params);
                }
            }
            Piece::Tab => {
                let next = (col / TAB_STOP + 1) * TAB_STOP;
                cur.extend(std::iter::repeat_n(' ', next - col));
                col = next;
            }
            Piece::Grapheme(g, w) => {
                if w > 0 || !g.chars().all(char::is_control) {
                    cur.push_str(g);
                }
                col += w;
            }
        }
    }
    flush(&mut cur, &mut spans, *carry);
    Line::from(spans)
}

/// Terminal output (many lines) as styled lines.
pub fn ansi_lines(text: &str) -> Vec<Line<'static>> {
    let mut style = Style::default();
    text.lines().map(|l| ansi_line(l, &mut style)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_carry_and_reset() {
        let lines = ansi_lines("\x1b[1;32mok\x1b[0m done\n\x1b[38;5;208mor\nange\x1b[39m\tx");
        assert_eq!(lines[0].spans[0].content, "ok");
        assert_eq!(
            lines[0].spans[0].style,
            Style::default()
                .fg(Color::Green)
                .add_modifier(Modifier::BOLD)
        );
        assert_eq!(lines[0].spans[1].style, Style::default());
        assert_eq!(
            lines[2].spans[0].style.fg,
            Some(Color::Indexed(208)),
            "colour spans lines"
        );
        assert_eq!(
            lines[2].spans[1].content, "    x",
            "tab expanded from column 4"
        );
    }
}

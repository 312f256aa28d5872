//! Terminal text: how many columns a string takes, how to cut it without breaking the
//! layout, and how ANSI-coloured output and Markdown become styled lines.
//!
//! Invariants: widths are measured like a terminal draws — grapheme clusters, East Asian
//! wide characters and emoji sequences as two columns, tabs to the next stop of 8, escape
//! sequences (CSI, OSC) as zero columns. Clipping never leaves an SGR style or an OSC 8
//! hyperlink open, and returns the input unchanged when it fits.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod ansi;
pub mod clip;
pub mod highlight;
pub mod markdown;
pub mod sanitize;
pub mod width;
pub mod wrap;

pub use clip::{clip, clip_pieces};
pub use sanitize::{for_display, one_line, sanitize, squeezed};

/// The text of styled lines, styles dropped, one `\n` between lines.
pub fn plain_text(lines: &[ratatui_core::text::Line<'_>]) -> String {
    lines
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
pub use width::{TAB_STOP, display_width};

//! The tool inspector drawn over the transcript: one call's result, arguments, diff,
//! permission history or raw frames, with the keys in force on its border.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use trellis_view::inspector::{inspector_title, view_lines_with};

use crate::app::App;

pub(crate) fn draw_inspector(
    f: &mut Frame<'_>,
    app: &mut App,
    ins: crate::app::Inspector,
    main: Rect,
) {
    let theme = app.theme.clone();
    let r = Rect {
        x: main.x + 1,
        y: main.y,
        width: main.width.saturating_sub(2),
        height: main.height,
    };
    if r.width < 4 || r.height < 3 {
        return;
    }
    // The inspector floats over the transcript: nothing of it shows beside the frame.
    f.render_widget(Clear, main);
    let call = app.driver.session.ledger.at(ins.call);
    // Stepping goes through the calls of one session (this one's, or a subagent's).
    let (i, n) = app.sibling_place(ins.call);
    let mut title = inspector_title(&call, ins.view, i, n);
    if let Some(child) = call.subagent.as_deref() {
        let label = app
            .driver
            .session
            .subagents
            .get(child)
            .map_or(child, |s| s.label());
        title = format!("⤷ {} › {title}", trellis_text::one_line(label));
    }
    if ins.original {
        title.push_str(" (original)");
    }
    let raw = ins.view == trellis_view::inspector::InspectorView::Raw;
    // The Raw view: how many of the call's frames are in the log (cheap: the log's index
    // only reads what was appended); the frames are read when the view is built.
    let in_log = if raw {
        app.frames_in_log(ins.call)
    } else {
        None
    };
    let decor = if ins.original {
        None
    } else {
        app.view.decor.clone()
    };
    // Built once per call revision, view, width and decor (a diff, highlighting and
    // transforms are not redone every frame); the Raw view follows the call's frames.
    // Live terminal output changes the Result view without a new call revision.
    let terminal: usize = call
        .content
        .iter()
        .filter_map(|c| match c {
            trellis_core::tool_call::ToolContent::Terminal { terminal_id } => {
                app.driver.session.terminals.get(terminal_id.as_str())
            }
            _ => None,
        })
        .map(|t| t.output.len() + t.dropped + usize::from(t.exit.is_some()))
        .sum();
    // The story of a subagent the call started changes without the call.
    let tree = {
        let s = &app.driver.session;
        s.subagents
            .for_call(&call)
            .and_then(|c| s.subagents.position(&c.session_id))
            .map_or(0, |c| trellis_view::subagent::tree_key(s, c))
    };
    let key = format!(
        "inspector {} {} {} {tree} {terminal} {:?} {} {} {:?} {:?}",
        ins.call,
        call.id,
        call.rev,
        ins.view,
        r.width,
        ins.original,
        in_log,
        decor.as_ref().map(|d| (
            std::sync::Arc::as_ptr(d) as *const () as usize,
            d.epoch(),
            d.generation()
        )),
    );
    let built = app.cached(key, || {
        let frames = if raw { app.call_frames(ins.call) } else { None };
        let body = view_lines_with(
            &call,
            &app.driver.session,
            ins.view,
            r.width.saturating_sub(2) as usize,
            &theme,
            frames.as_ref(),
            decor.as_deref(),
        );
        if let Some(d) = &decor {
            // Per-call transforms asked for while building: to their extensions.
            d.flush();
        }
        (String::new(), body)
    });
    let body = &built.1;
    let inner_h = r.height.saturating_sub(2) as usize;
    let max_scroll = body.len().saturating_sub(inner_h);
    let scroll = ins.scroll.min(max_scroll);
    if let Some(i) = app.inspector.as_mut() {
        i.scroll = scroll;
    }
    let visible: Vec<Line<'static>> = body.iter().skip(scroll).take(inner_h).cloned().collect();
    let hints = if app.key_hints {
        inspector_hints(app)
    } else {
        String::new()
    };
    let hints = Line::from(vec![Span::styled(
        trellis_text::clip(&hints, r.width.saturating_sub(4) as usize).into_owned(),
        theme.dim,
    )]);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(
            " {} ",
            trellis_text::clip(&title, r.width.saturating_sub(4) as usize)
        ))
        .title_bottom(hints)
        .border_style(theme.running);
    f.render_widget(Clear, r);
    f.render_widget(Paragraph::new(visible).block(block), r);
}

/// Key hints for the inspector's border, from the bindings in force.
fn inspector_hints(app: &App) -> String {
    use crate::keymap::KeyAction as A;
    let parts: Vec<String> = [
        (A::ToggleCall, "call/result"),
        (A::DiffView, "diff"),
        (A::PermissionView, "permissions"),
        (A::RawView, "raw"),
        (A::NextCall, "next"),
        (A::NextFailed, "failed"),
        (A::Copy, "copy"),
        (A::Pager, "pager"),
        (A::Inspect, "jump"),
        (A::Close, "close"),
    ]
    .iter()
    .filter_map(|(a, what)| app.keys.spec(*a).map(|k| format!("{k} {what}")))
    .collect();
    format!(" {} ", parts.join(" · "))
}

//! What the agent says beside the conversation (issue 12, item 6): notices by severity
//! and a compaction updated in place, its summary's first lines shown — the agent's text
//! made harmless.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use trellis_tui::App;

mod common;
use common::{frame_text, new_session, session_of, update};

#[test]
fn notices_and_a_compaction_in_the_transcript() {
    let mut frames = new_session(vec![
        update(json!({"sessionUpdate":"notice","severity":"info","title":"Indexed 1 204 files"})),
        update(
            json!({"sessionUpdate":"notice","severity":"warning","title":"Rate limited",
            "description":"Retrying in 20 s.\nThe turn goes on."}),
        ),
        update(
            json!({"sessionUpdate":"notice","severity":"error","title":"Bad \u{1b}]0;pwned\u{7} key"}),
        ),
        update(json!({"sessionUpdate":"notice","severity":"info","title":"  "})),
        update(
            json!({"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress"}),
        ),
    ]);
    for i in 0..9 {
        frames.push(update(
            json!({"sessionUpdate":"compaction_summary_chunk","compactionId":"c1",
            "content":{"type":"text","text":format!("summary line {i}\n")}}),
        ));
    }
    frames.push(update(
        json!({"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed"}),
    ));
    frames.push(update(
        json!({"sessionUpdate":"compaction_update","compactionId":"c2",
        "status":"failed","error":"the model refused"}),
    ));
    let s = session_of(frames);
    assert_eq!(
        s.counters.unknown_updates.len(),
        0,
        "{:?}",
        s.counters.unknown_updates
    );
    let mut app = App::new(s, "agent".into(), false);
    app.theme = trellis_view::Theme::plain();
    for (w, h) in [(80u16, 30u16), (120, 30)] {
        let f = frame_text(&mut app, w, h);
        assert!(!f.contains('\u{1b}') && !f.contains('\u{7}'), "{f}");
        assert!(!f.contains("ⓘ   "), "a notice without a title is skipped");
        insta::assert_snapshot!(format!("notices_{w}x{h}"), f);
    }
}

//! A call written to the spill reads back as the same call.

use std::sync::Arc;

use proptest::prelude::*;

use super::{FrozenCall, write_frozen};
use crate::bulk::{BulkSource, Text};
use crate::tool_call::ToolContent;

/// The log a logged text is read back from: every item of every frame says `frame:item`.
struct Log;

impl BulkSource for Log {
    fn text(&self, seq: u64, item: usize) -> Option<String> {
        Some(format!("{seq}:{item}"))
    }
}

proptest! {
    #[test]
    fn a_frozen_call_reads_back_as_it_was(
        mut call in crate::arbitrary::call(),
        frames in prop::collection::vec(any::<u64>(), 0..4),
        logged in any::<bool>(),
        inline in any::<bool>(),
        rev in any::<u32>(),
        position in 0usize..1 << 40,
    ) {
        // Times are the session clock's (finite); positions and revisions are the ledger's.
        for h in &mut call.status_history {
            if !h.t.is_finite() {
                h.t = 1.5;
            }
        }
        call.rev = rev;
        call.position = position;
        if logged {
            // Texts that came from frames 7, 8…: read back from the log unless inline.
            for (k, c) in call.content.iter_mut().enumerate() {
                if let ToolContent::Text { text } = c {
                    let t = Text::new(format!("{}:{k}", 7 + k));
                    t.set_origin(7 + k as u64, k);
                    *text = t;
                }
            }
        }
        let mut bytes = b"head".to_vec();
        write_frozen(&mut bytes, &call, &frames, inline).unwrap();
        let frozen: FrozenCall = serde_json::from_slice(&bytes[4..]).unwrap();
        let log: Arc<dyn BulkSource> = Arc::new(Log);
        let (back, back_frames) = frozen.into_call(&log);
        prop_assert_eq!(&back, &call);
        prop_assert_eq!(back.rev, call.rev);
        prop_assert_eq!(back.position, call.position);
        prop_assert_eq!(back_frames, frames);
        for (a, b) in back.content.iter().zip(&call.content) {
            if let (ToolContent::Text { text: a }, ToolContent::Text { text: b }) = (a, b) {
                prop_assert_eq!(a.is_held(), inline || !logged, "held where it should be");
                prop_assert_eq!(a.output_lines(), b.output_lines());
            }
        }
    }
}

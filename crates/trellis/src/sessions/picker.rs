//! The sessions picker's view of the index (`H` / `/sessions` in the UI).

use std::path::{Path, PathBuf};

use trellis_index::{Index, ListFilter, SessionRow};

use super::{ExportFormat, export, list::display_titles, open_index, when, write_new};

/// The sessions picker's view of the index (the UI crate knows no database).
pub struct IndexHistory {
    /// The directory of the running session and the one Trellis was started in (they
    /// differ for the demo's scratch workspace or `--cwd`): sessions of either come first.
    dirs: Vec<String>,
    /// Where exports are written: the running session's directory.
    cwd: String,
    /// Opened and brought up to date when the picker opens; searched as the user types.
    index: std::sync::Mutex<Option<Index>>,
}

impl IndexHistory {
    pub fn new(cwd: String) -> IndexHistory {
        let mut dirs = vec![cwd.clone()];
        dirs.extend(
            std::env::current_dir()
                .ok()
                .map(|d| d.display().to_string())
                .filter(|d| *d != cwd),
        );
        IndexHistory {
            dirs,
            cwd,
            index: std::sync::Mutex::new(None),
        }
    }

    /// Runs `f` on the index; `fresh`: bring it up to date with the logs first.
    fn with<T>(
        &self,
        fresh: bool,
        f: impl FnOnce(&Index) -> trellis_index::Result<T>,
    ) -> Result<T, String> {
        let mut slot = self
            .index
            .lock()
            .map_err(|_| "the index is poisoned".to_string())?;
        match slot.as_mut() {
            Some(ix) if fresh => {
                let paths = trellis_store::Paths::from_env().ok_or("no data directory")?;
                ix.refresh(&paths.sessions_dir())
                    .map_err(|e| e.to_string())?;
            }
            Some(_) => {}
            None => *slot = Some(open_index().map_err(|e| format!("{e:#}"))?.0),
        }
        match slot.as_ref() {
            Some(ix) => f(ix).map_err(|e| e.to_string()),
            None => Err("no index".into()),
        }
    }

    /// Whether a session ran in (or was started from) one of the picker's directories.
    fn here(&self, dirs: &[Option<&str>]) -> bool {
        dirs.iter()
            .flatten()
            .any(|d| self.dirs.iter().any(|h| h == d))
    }

    fn row(&self, r: &SessionRow, name: String) -> trellis_tui::history::PickRow {
        trellis_tui::history::PickRow {
            id: r.id.clone(),
            log: PathBuf::from(&r.path),
            when: when(r.started),
            title: trellis_text::squeezed(&name, 120),
            here: self.here(&[r.cwd.as_deref(), r.launched_in.as_deref()]),
            place: None,
            call_id: None,
            snippet: None,
            acp_id: r.acp_id.clone(),
            agent_only: false,
        }
    }
}

impl trellis_tui::history::History for IndexHistory {
    fn recent(&self) -> Result<Vec<trellis_tui::history::PickRow>, String> {
        let rows = self.with(true, |ix| {
            ix.list(&ListFilter {
                limit: Some(500),
                ..ListFilter::default()
            })
        })?;
        let names = display_titles(&rows);
        let mut out: Vec<_> = rows
            .iter()
            .zip(names)
            .map(|(r, name)| self.row(r, name))
            .collect();
        // This directory's sessions first (stable: newest first within each group).
        out.sort_by_key(|r| !r.here);
        Ok(out)
    }

    fn search(&self, query: &str) -> Result<Vec<trellis_tui::history::PickRow>, String> {
        let hits = self.with(false, |ix| ix.search(query, None, None, true, 100))?;
        Ok(hits
            .into_iter()
            .map(|h| trellis_tui::history::PickRow {
                id: h.session,
                log: PathBuf::from(&h.path),
                when: when(h.started),
                title: trellis_text::squeezed(h.title.as_deref().unwrap_or(""), 120),
                here: self.here(&[h.cwd.as_deref()]),
                place: Some(match &h.call_id {
                    Some(c) => format!("turn {} · {} of {c}", h.turn, h.kind),
                    None => format!("turn {} · {}", h.turn, h.kind),
                }),
                call_id: h.call_id,
                snippet: Some(h.snippet),
                acp_id: None,
                agent_only: false,
            })
            .collect())
    }

    fn export(&self, log: &Path, format: &str) -> Result<PathBuf, String> {
        let row = self.with(true, |ix| ix.session(&log.to_string_lossy()))?;
        let (fmt, ext) = match format {
            "html" => (ExportFormat::Html, "html"),
            _ => (ExportFormat::Md, "md"),
        };
        let text = export(&row, fmt, true).map_err(|e| format!("{e:#}"))?;
        let path = Path::new(&self.cwd).join(format!("trellis-session-{}.{ext}", row.id));
        write_new(&path, text.as_bytes()).map_err(|e| format!("{e:#}"))?;
        Ok(path)
    }
}

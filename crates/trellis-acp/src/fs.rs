//! `fs/read_text_file` and `fs/write_text_file` on the local disk.
//!
//! Invariants: reads honour `line` (1-based) and `limit`; writes create parent directories
//! and replace the file atomically (write a sibling temp file, then rename), so a reader
//! never sees half a file.

use std::io::Write;
use std::path::Path;

/// Reads `path`, optionally from 1-based `line` for `limit` lines.
pub fn read_text(path: &Path, line: Option<u32>, limit: Option<u32>) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    if line.is_none() && limit.is_none() {
        return Ok(text);
    }
    let skip = line.map(|l| l.saturating_sub(1) as usize).unwrap_or(0);
    let take = limit.map(|l| l as usize).unwrap_or(usize::MAX);
    Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
}

/// Writes `content` to `path` atomically; returns the previous content if there was one.
pub fn write_text(path: &Path, content: &str) -> std::io::Result<Option<String>> {
    let old = std::fs::read_to_string(path).ok();
    let parent = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(parent)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.trellis-{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(content.as_bytes())?;
        f.sync_data()?;
        if let Ok(meta) = std::fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map(|_| old)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_lines_and_write_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/c.txt");
        assert_eq!(write_text(&p, "1\n2\n3\n4\n").unwrap(), None);
        assert_eq!(read_text(&p, Some(2), Some(2)).unwrap(), "2\n3\n");
        assert_eq!(read_text(&p, None, Some(1)).unwrap(), "1\n");
        assert_eq!(
            write_text(&p, "new").unwrap().as_deref(),
            Some("1\n2\n3\n4\n")
        );
        assert_eq!(read_text(&p, None, None).unwrap(), "new");
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }
}

//! `trellis plugin new` and `trellis plugin test`: what a plugin author runs while
//! writing one — a scaffold with its replay test recorded, and the replay test with a
//! unified diff against the snapshot.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::output::safe;

pub(super) fn test(
    path: &Path,
    replay: &Path,
    snapshot: Option<&Path>,
    update: bool,
) -> anyhow::Result<ExitCode> {
    let data = tempfile::tempdir()?;
    let outcome = crate::plugin_test::run(path, replay, data.path())?;
    // What the plugin said on stderr (a traceback, its log lines), beside the snapshot.
    if !outcome.stderr.is_empty() {
        // Its first line is the status's own heading (`stderr: N lines …; last K:`).
        for (i, l) in outcome.stderr.iter().enumerate() {
            let l = safe(l);
            match i {
                0 => say!("plugin {}", l.trim_start()),
                _ => say!("  {l}"),
            }
        }
    }
    match snapshot {
        None => {
            out_part!("{}", outcome.snapshot);
            Ok(if outcome.failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        // A snapshot of a plugin that was disabled would pass from then on: not taken.
        Some(file) if update && outcome.failed => {
            out!(
                "✗ {} was disabled in the replay (why: its stderr above, and `trellis plugin test {}` without --snapshot); {} is left as it was",
                safe(&path.display().to_string()),
                safe(&path.display().to_string()),
                safe(&file.display().to_string())
            );
            Ok(ExitCode::from(1))
        }
        Some(file) if update => {
            // Whole or not at all (a new file beside it, renamed over it).
            let dir = file
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let mut tmp = tempfile::NamedTempFile::new_in(dir)
                .with_context(|| format!("cannot write beside {}", file.display()))?;
            std::io::Write::write_all(&mut tmp, outcome.snapshot.as_bytes())
                .and_then(|()| tmp.as_file().sync_all())
                .with_context(|| format!("cannot write {}", file.display()))?;
            tmp.persist(file)
                .with_context(|| format!("cannot write {}", file.display()))?;
            out!("wrote {}", file.display());
            Ok(ExitCode::SUCCESS)
        }
        Some(file) => {
            let want = trellis_store::paths::read_text(file, trellis_store::paths::LOG_CAP)
                .with_context(|| {
                    format!("cannot read {} (create it with --update)", file.display())
                })?;
            if want == outcome.snapshot {
                out!("✓ {} matches {}", path.display(), file.display());
                Ok(ExitCode::SUCCESS)
            } else {
                out!("✗ {} differs from {}:", path.display(), file.display());
                out_part!("{}", safe(&snapshot_diff(file, &want, &outcome.snapshot)));
                if outcome.failed {
                    out!(
                        "The plugin was disabled in the replay: fix it first (its stderr is above)."
                    );
                } else {
                    out!(
                        "If the change is what you meant, accept it: trellis plugin test {} --replay {} --snapshot {} --update",
                        safe(&path.display().to_string()),
                        safe(&replay.display().to_string()),
                        safe(&file.display().to_string())
                    );
                }
                Ok(ExitCode::from(1))
            }
        }
    }
}

/// A unified diff of the snapshot `file` (`want`) against what the plugin did now (`got`),
/// three lines of context around each change.
fn snapshot_diff(file: &Path, want: &str, got: &str) -> String {
    let d = trellis_core::diff::unified("", want, got);
    // Its own header names a path; this one says which side is which.
    let body = d.splitn(3, '\n').nth(2).unwrap_or("");
    format!(
        "--- {} (the snapshot)\n+++ what the plugin did now\n{body}",
        file.display()
    )
}

pub(super) fn new(name: &str, lang: &str) -> anyhow::Result<ExitCode> {
    if !trellis_core::ext::name_ok(name) {
        bail!("{name:?}: a plugin name is 1-64 lowercase letters, digits, '-' or '.'");
    }
    let dir = PathBuf::from(name);
    if dir.exists() {
        bail!("{} exists already", dir.display());
    }
    let files = crate::scaffold::files(name, lang)?;
    for (rel, text) in &files {
        let path = dir.join(rel);
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(path, text)?;
    }
    out!("Created {}/ ({lang}):", dir.display());
    for (rel, _) in &files {
        out!("  {rel}");
    }
    let test_line = format!(
        "trellis plugin test {name} --replay {name}/tests/session.jsonl --snapshot {name}/tests/snapshot.txt"
    );
    if matches!(lang, "rust" | "rs") {
        // A Rust plugin runs once built; its snapshot is recorded then.
        out!("\nBuild it:  (cd {name} && cargo build --release)");
        out!("Record its replay test:  {test_line} --update");
        out!("Then test it with:       {test_line}");
        return Ok(ExitCode::SUCCESS);
    }
    // The scaffold's replay test passes from the start.
    let snap = dir.join("tests/snapshot.txt");
    let data = tempfile::tempdir()?;
    let outcome = crate::plugin_test::run(&dir, &dir.join("tests/session.jsonl"), data.path())?;
    std::fs::write(&snap, &outcome.snapshot)?;
    out!("  tests/snapshot.txt");
    out!("\nTry it:   trellis plugin try {name}");
    out!("Test it:  {test_line}");
    if outcome.failed {
        out!("\n! the plugin did not start here; see tests/snapshot.txt");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::snapshot_diff;

    /// Unchanged lines between two changes are context, never "removed and added".
    #[test]
    fn a_snapshot_diff_is_unified_with_context() {
        let want: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let got = want
            .replace("line 3\n", "line three\n")
            .replace("line 17\n", "line seventeen\n");
        let d = snapshot_diff(std::path::Path::new("tests/snapshot.txt"), &want, &got);
        assert!(
            d.starts_with("--- tests/snapshot.txt (the snapshot)\n+++ what the plugin did now\n"),
            "{d}"
        );
        assert!(d.contains("-line 3\n+line three\n"), "{d}");
        assert!(d.contains(" line 6\n"), "context: {d}");
        // Between the two changes, lines far from both are left out, none shown as changed.
        assert!(!d.contains("line 10"), "{d}");
        assert!(!d.lines().any(|l| l == "-line 9" || l == "+line 9"), "{d}");
        assert_eq!(d.matches("@@ ").count(), 2, "two hunks: {d}");
    }
}

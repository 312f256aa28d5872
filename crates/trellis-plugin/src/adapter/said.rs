//! What a plugin's stderr says of why it failed to start, in one line that points at the
//! author's file — never the SDK's: the error (a Python traceback's last line, the error
//! Node printed) and, when that names no place of its own, the frame of the author's code
//! nearest the error (`plugin.py:6`).

/// The SDKs' own files: a frame in them is never the author's line.
const SDK_FILES: &[&str] = &[
    "trellis_plugin.py",
    "trellis-plugin.mjs",
    "trellis-plugin.js",
];

/// The one-line reason in `lines` (a plugin's last stderr lines), if they hold one.
pub(super) fn start_error(lines: &[String]) -> Option<String> {
    let lines: Vec<&str> = lines
        .iter()
        .map(|l| l.trim_end())
        .filter(|l| !l.trim().is_empty())
        // Node's closing line, after the error.
        .filter(|l| !l.starts_with("Node.js v"))
        .collect();
    let at = lines.iter().rposition(|l| is_error_line(l))?;
    let error = strip_module(lines[at].trim());
    if has_place(error) {
        return Some(error.to_string());
    }
    let place = author_place(&lines[..at], &lines[at + 1..]);
    Some(match place {
        Some(p) => format!("{error} ({p})"),
        None => error.to_string(),
    })
}

/// A line that states an error: not indented (frames and quoted code are), not a frame,
/// not a caret line, not a place header (`file:///…:5`).
fn is_error_line(l: &str) -> bool {
    let t = l.trim();
    !l.starts_with([' ', '\t'])
        && !t.starts_with("at ")
        && !t.starts_with("Traceback (")
        && !t.starts_with("file://")
        && !t.chars().all(|c| matches!(c, '^' | '~' | ' '))
        && t.contains(':')
}

/// `trellis_plugin.PluginDefinitionError: …` → `PluginDefinitionError: …`.
fn strip_module(l: &str) -> &str {
    let head = l.split(':').next().unwrap_or("");
    if !head.contains(' ')
        && let Some(dot) = head.rfind('.')
    {
        return &l[dot + 1..];
    }
    l
}

/// Whether `s` names a place in a source file (`plugin.py:5`, `plugin.mjs:21`).
fn has_place(s: &str) -> bool {
    [".py:", ".mjs:", ".js:", ".mts:", ".ts:", ".cjs:"]
        .iter()
        .any(|ext| {
            s.match_indices(ext).any(|(i, m)| {
                s[i + m.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
            })
        })
}

/// The author's frame nearest the error: Python's innermost (last) `File "…", line N`
/// above the error, outside the SDK; Node's innermost (first) place outside the SDK —
/// the `file:///…:N` header above the error, then the `at … file:///…:N:C` frames below.
fn author_place(before: &[&str], after: &[&str]) -> Option<String> {
    let python: Vec<(String, u64)> = before.iter().filter_map(|l| python_frame(l)).collect();
    let mut found: Vec<(String, u64)> = if python.is_empty() {
        before
            .iter()
            .chain(after)
            .filter_map(|l| node_frame(l))
            .collect()
    } else {
        python.into_iter().rev().collect()
    };
    found.retain(|(file, _)| !SDK_FILES.contains(&file.as_str()));
    found
        .into_iter()
        .next()
        .map(|(file, line)| format!("{file}:{line}"))
}

/// `  File "/p/plugin.py", line 6, in <module>` → (`plugin.py`, 6).
fn python_frame(l: &str) -> Option<(String, u64)> {
    let rest = l.trim_start().strip_prefix("File \"")?;
    let (path, rest) = rest.split_once('"')?;
    let n = rest.strip_prefix(", line ")?;
    let n: u64 = n
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    Some((basename(path), n))
}

/// `file:///p/plugin.mjs:21` or `    at f (file:///p/plugin.mjs:21:8)` → (`plugin.mjs`, 21).
fn node_frame(l: &str) -> Option<(String, u64)> {
    let i = l.find("file://")?;
    let place = l[i + "file://".len()..].trim_end_matches(')');
    // PATH:LINE or PATH:LINE:COLUMN.
    let mut parts = place.rsplitn(3, ':');
    let (a, b) = (parts.next()?, parts.next()?);
    let (path, line) = match parts.next() {
        Some(p) if b.parse::<u64>().is_ok() => (p, b),
        _ => (b, a),
    };
    Some((basename(path), line.parse().ok()?))
}

fn basename(path: &str) -> String {
    path.rsplit(['/', '\\']).next().unwrap_or(path).to_string()
}

#[cfg(test)]
mod tests {
    use super::start_error;

    fn said(text: &str) -> Option<String> {
        start_error(&text.lines().map(str::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn a_python_syntax_error_names_the_authors_line() {
        let e = "  File \"/tmp/p/plugin.py\", line 6\n    def on_call(event, host)\n                            ^\nSyntaxError: expected ':'\n";
        assert_eq!(said(e).unwrap(), "SyntaxError: expected ':' (plugin.py:6)");
    }

    #[test]
    fn an_sdk_error_that_names_a_place_is_said_as_it_is_without_the_sdk() {
        let e = "Traceback (most recent call last):\n  File \"/tmp/p/plugin.py\", line 5, in <module>\n    @plugin.on(\"tool_call_udpated\")\n  File \"/data/sdk/python/trellis_plugin.py\", line 145, in _check_event_types\n    raise _definition_error(f\"...\")\ntrellis_plugin.PluginDefinitionError: plugin.py:5: @plugin.on: 'tool_call_udpated' is not an event type; did you mean 'tool_call_updated'?\n";
        assert_eq!(
            said(e).unwrap(),
            "PluginDefinitionError: plugin.py:5: @plugin.on: 'tool_call_udpated' is not an event type; did you mean 'tool_call_updated'?"
        );
    }

    #[test]
    fn a_missing_module_points_at_the_import_not_at_python() {
        let e = "Traceback (most recent call last):\n  File \"/tmp/p/plugin.py\", line 2, in <module>\n    import nosuch\nModuleNotFoundError: No module named 'nosuch'\n";
        assert_eq!(
            said(e).unwrap(),
            "ModuleNotFoundError: No module named 'nosuch' (plugin.py:2)"
        );
    }

    #[test]
    fn node_errors_name_the_authors_file_not_the_sdks() {
        let e = "file:///tmp/p/plugin.mjs:5\n  foo(\n     ^\n\nSyntaxError: missing ) after argument list\n    at ModuleLoader.moduleStrategy (node:internal/modules/esm/translators:152:18)\n\nNode.js v20.20.2\n";
        assert_eq!(
            said(e).unwrap(),
            "SyntaxError: missing ) after argument list (plugin.mjs:5)"
        );
        let e = "file:///data/sdk/typescript/trellis-plugin.mjs:88\n    throw new Error(\"x\");\n    ^\n\nError: boom\n    at check (file:///data/sdk/typescript/trellis-plugin.mjs:88:11)\n    at file:///tmp/p/plugin.mjs:21:8\n\nNode.js v20.20.2\n";
        assert_eq!(said(e).unwrap(), "Error: boom (plugin.mjs:21)");
    }

    #[test]
    fn stderr_without_an_error_says_nothing() {
        assert_eq!(said("starting\n\n"), None);
        assert_eq!(said(""), None);
    }
}

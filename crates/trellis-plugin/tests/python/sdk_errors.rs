//! The SDKs' own checks, where the author looks: definition errors that name the wrong
//! name, a host error or an exception reported at the author's line, every event type
//! and public name known (and in the docs), `print` kept in the plugin's log.

use super::*;

/// Runs `code` with the SDK importable; its exit status and stderr.
fn python_snippet(code: &str) -> (bool, String) {
    let out = std::process::Command::new("python3")
        .args(["-c", code])
        .env("PYTHONPATH", sdk())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_sdk_knows_every_event_type_and_no_other() {
    if !python() {
        return;
    }
    let (ok, err) = python_snippet(
        "import trellis_plugin as t, sys; sys.stderr.write(' '.join(sorted(t.EVENT_TYPES)))",
    );
    assert!(ok, "{err}");
    let mut ours: Vec<&str> = trellis_core::event::EVENT_KINDS.to_vec();
    ours.sort();
    assert_eq!(err, ours.join(" "));
}

#[test]
fn decorators_used_wrongly_fail_at_start_and_a_bare_on_takes_every_event() {
    if !python() {
        return;
    }
    let (ok, err) = python_snippet(
        "import trellis_plugin as t\np = t.Plugin()\n@p.on\ndef f(e, h): pass\nassert p._events['*'] == [f]",
    );
    assert!(ok, "a bare @plugin.on: {err}");
    for (code, wants) in [
        (
            "@p.on('tool_call_udpated')\ndef f(e, h): pass",
            "not an event type",
        ),
        ("@p.on(3)\ndef f(e, h): pass", "not an event type"),
        ("@p.on_start('x')\ndef f(h): pass", "decorates a function"),
        ("@p.on_idle()\ndef f(h): pass", "without parentheses"),
        ("@p.setting\ndef f(c, h): pass", "takes arguments"),
        ("@p.command\ndef f(a, h): pass", "takes arguments"),
    ] {
        let (ok, err) = python_snippet(&format!(
            "import trellis_plugin as t\np = t.Plugin()\n{code}"
        ));
        assert!(!ok, "{code}");
        assert!(err.contains(wants), "{code}: {err}");
    }
}

/// Every mistake in declaring a plugin is a `PluginDefinitionError` (never a bare
/// `TypeError`) on one line that starts at the author's line, names the one name that is
/// wrong and, for a misspelling, the name meant.
#[test]
fn declaration_mistakes_are_definition_errors_that_name_the_wrong_name() {
    if !python() {
        return;
    }
    let (ok, err) = python_snippet(
        "import trellis_plugin as t\np = t.Plugin()\n@p.on(['tool_call_updated', 'turn_ended'])\ndef f(e, h): pass\nassert p._events['turn_ended'] == [f]",
    );
    assert!(ok, "a list of event types: {err}");
    for (code, wants) in [
        (
            "@p.design\ndef f(c, fa, w, h): pass",
            "<string>:3: @plugin.design takes arguments: @plugin.design(id, label, kind=None, name=None)",
        ),
        (
            "@p.command\ndef f(a, h): pass",
            "<string>:3: @plugin.command takes arguments: @plugin.command(name, description)",
        ),
        (
            "@p.key\ndef f(h): pass",
            "<string>:3: @plugin.key takes arguments: @plugin.key(id, keys, label)",
        ),
        (
            "@p.section\ndef f(r, h): pass",
            "@plugin.section takes arguments",
        ),
        (
            "@p.transform\ndef f(c, x, h): pass",
            "@plugin.transform takes arguments",
        ),
        (
            "@p.on_permission()\ndef f(o, h): pass",
            "<string>:3: @plugin.on_permission takes no arguments: write @plugin.on_permission without parentheses",
        ),
        (
            "@p.design('x', label='X')\ndef f(c, fa, w, h): pass",
            "@plugin.design('x', ...) applies to nothing: give kind=",
        ),
        (
            "@p.design('x', lable='X', kind='edit')\ndef f(c, fa, w, h): pass",
            "@plugin.design has no argument 'lable'; did you mean 'label'?",
        ),
        (
            "@p.design('x')\ndef f(c, fa, w, h): pass",
            "@plugin.design needs label: @plugin.design(id, label, kind=None, name=None)",
        ),
        (
            "p.status_item('n')",
            "<string>:3: plugin.status_item needs label: plugin.status_item(id, label)",
        ),
        (
            "@p.on(['tool_call_updated', 'tool_call_udpated'])\ndef f(e, h): pass",
            "<string>:3: @plugin.on: 'tool_call_udpated' is not an event type; did you mean 'tool_call_updated'?",
        ),
        (
            "t.Plugin(subscriptions=['turn_endd'])",
            "<string>:3: Plugin(subscriptions=...): 'turn_endd' is not an event type; did you mean 'turn_ended'?",
        ),
    ] {
        let (ok, err) = python_snippet(&format!(
            "import trellis_plugin as t\np = t.Plugin()\n{code}"
        ));
        assert!(!ok, "{code}");
        let line = err
            .lines()
            .find(|l| l.contains("PluginDefinitionError: "))
            .unwrap_or_else(|| panic!("{code}: not a PluginDefinitionError: {err}"));
        assert!(line.contains(wants), "{code}: {line}");
    }
    // A name like none of them: the message lists them all, to the last.
    let (_, err) = python_snippet(
        "import trellis_plugin as t\np = t.Plugin()\n@p.on('nonsense')\ndef f(e, h): pass",
    );
    let line = err
        .lines()
        .find(|l| l.contains("PluginDefinitionError: "))
        .unwrap_or_else(|| panic!("{err}"));
    for kind in trellis_core::event::EVENT_KINDS {
        assert!(line.contains(&format!("'{kind}'")), "{kind}: {line}");
    }
}

/// `from trellis_plugin import *` gives every public name of the module, and nothing else.
#[test]
fn the_python_sdks_all_holds_every_public_name() {
    if !python() {
        return;
    }
    let code = r#"
import ast, sys
import trellis_plugin as t
tree = ast.parse(open(t.__file__).read())
public = set()
for node in tree.body:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        public.add(node.name)
    elif isinstance(node, ast.Assign):
        public |= {x.id for x in node.targets if isinstance(x, ast.Name)}
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        public.add(node.target.id)
public = {n for n in public if not n.startswith("_")}
missing = sorted(public - set(t.__all__))
extra = sorted(set(t.__all__) - public)
assert not missing and not extra, f"__all__ lacks {missing}, has unknown {extra}"
ns = {}
exec("from trellis_plugin import *", ns)
assert {"data_dir", "text_of", "PluginDefinitionError", "EVENT_TYPES"} <= set(ns), sorted(ns)
"#;
    let (ok, err) = python_snippet(code);
    assert!(ok, "{err}");
}

/// Runs `code` as `plugin.mjs` (with `Plugin` and `EVENT_TYPES` imported from the
/// TypeScript SDK); its exit status and stderr.
fn node_snippet(code: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let sdk = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../sdk/typescript/trellis-plugin.mjs")
        .canonicalize()
        .unwrap();
    let file = dir.path().join("plugin.mjs");
    std::fs::write(
        &file,
        format!(
            "import {{ Plugin, EVENT_TYPES }} from {:?};\n{code}\n",
            format!("file://{}", sdk.display())
        ),
    )
    .unwrap();
    let out = std::process::Command::new("node")
        .arg(&file)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The TypeScript SDK checks its registrations as the Python one checks its decorators:
/// a `PluginDefinitionError` at start, on one line that starts at the author's line and
/// names the one name that is wrong.
#[test]
fn typescript_registrations_used_wrongly_are_definition_errors() {
    if !node() {
        return;
    }
    let (ok, err) = node_snippet(
        "const p = new Plugin();\np.on([\"tool_call_updated\", \"turn_ended\"], () => {});\np.on(null, () => {});\nprocess.stderr.write([...EVENT_TYPES].sort().join(\" \"));",
    );
    assert!(ok, "{err}");
    let mut ours: Vec<&str> = trellis_core::event::EVENT_KINDS.to_vec();
    ours.sort();
    assert_eq!(err, ours.join(" "), "EVENT_TYPES is Trellis's event types");
    for (code, wants) in [
        (
            "p.on(\"tool_call_udpated\", () => {});",
            "plugin.mjs:3: plugin.on: \"tool_call_udpated\" is not an event type; did you mean \"tool_call_updated\"?",
        ),
        (
            "p.on([\"tool_call_updated\", \"tool_call_udpated\"], () => {});",
            "plugin.mjs:3: plugin.on: \"tool_call_udpated\" is not an event type; did you mean \"tool_call_updated\"?",
        ),
        (
            "p.on(\"tool_call_updated\");",
            "plugin.mjs:3: plugin.on(types, fn): fn is undefined, not a function",
        ),
        (
            "new Plugin({ subscriptions: [\"turn_endd\"] });",
            "plugin.mjs:3: new Plugin({ subscriptions }): \"turn_endd\" is not an event type; did you mean \"turn_ended\"?",
        ),
        (
            "new Plugin({ subscription: [] });",
            "plugin.mjs:3: new Plugin(options): no option \"subscription\"; did you mean \"subscriptions\"?",
        ),
        (
            "p.command(\"hello\", async (args, host) => {});",
            "plugin.mjs:3: plugin.command(name, description, fn): description is a function, not a string",
        ),
        (
            "p.design(\"x\", \"X\", { knd: \"edit\" }, () => ({ call: [] }));",
            "plugin.mjs:3: plugin.design(id, label, appliesTo, fn): appliesTo has no field \"knd\"; did you mean \"kind\"?",
        ),
        (
            "p.key(\"k\", \"T\", () => {});",
            "plugin.mjs:3: plugin.key(id, keys, label, fn): label is a function, not a string",
        ),
        (
            "p.onPermission();",
            "plugin.mjs:3: plugin.onPermission(fn): fn is undefined, not a function",
        ),
    ] {
        let (ok, err) = node_snippet(&format!("const p = new Plugin();\n{code}"));
        assert!(!ok, "{code}");
        let line = err
            .lines()
            .find(|l| l.starts_with("PluginDefinitionError: "))
            .unwrap_or_else(|| panic!("{code}: not a PluginDefinitionError: {err}"));
        assert!(line.contains(wants), "{code}: {line}");
    }
}

#[test]
fn an_exception_in_an_event_handler_is_a_counted_failure_with_its_place() {
    if !python() {
        return;
    }
    let (mut h, mut rx) = observing("raises");
    let mut s = S::new();
    let fx = calls_created(&mut s, 0..3);
    pump(&mut h, &mut rx, &fx, |_, h| {
        status(h).contains("KeyError") && status(h).contains("×3")
    });
    let st = status(&h);
    assert!(
        st.contains(
            "failed event tool_call_created ×3: KeyError: 'no such key' (raises.py:9 in on_call)"
        ),
        "{st}"
    );
    assert!(
        !matches!(state(&h, "raises"), ExtState::Ready),
        "a failing plugin is not ready: {st}"
    );
    healthy_intact(&h);
}

/// A host function that refuses (`notify` without `ui`) fails the handler that called it:
/// the failure names the author's line and function, never the SDK's, and the traceback's
/// last lines on stderr (what `/status` keeps) are the author's too.
#[test]
fn a_host_error_is_reported_at_the_authors_line_not_the_sdks() {
    if !python() {
        return;
    }
    let (mut h, mut rx) = observing("notifies");
    let mut s = S::new();
    let fx = calls_created(&mut s, 0..2);
    // Both failures counted (the refused calls' count can reach ×2 first).
    // The traceback too: stderr is a pipe of its own, read on its own thread, so its
    // lines can come in after the failure the plugin sent on stdout.
    pump(&mut h, &mut rx, &fx, |_, h| {
        let st = status(h);
        st.contains("failed event tool_call_created ×2") && st.contains("host.notify(")
    });
    let st = status(&h);
    assert!(
        st.contains("failed event tool_call_created ×2: HostError: ")
            && st.contains("(notifies.py:9 in on_call)"),
        "{st}"
    );
    assert!(!st.contains("trellis_plugin.py"), "{st}");
    assert!(st.contains("│     host.notify(\"a call\")"), "{st}");
}

fn node() -> bool {
    let ok = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "node is missing: run the suite with scripts/test, which installs it"
    );
    ok
}

/// The same in the TypeScript SDK: the refusal arrives on its own, later, yet the failure
/// names the author's call of `host.notify`.
#[test]
fn a_host_error_in_a_typescript_plugin_is_reported_at_the_authors_line() {
    if !node() {
        return;
    }
    let caps = [Capability::Observe];
    let (mut h, mut rx) = host(vec![(
        spec(
            "notifies-ts",
            &["node", "./notifies.mjs"],
            &caps,
            Limits::default(),
        ),
        caps.to_vec(),
    )]);
    let mut s = S::new();
    let fx = calls_created(&mut s, 0..2);
    // Both failures counted (the refused calls' count can reach ×2 first).
    pump(&mut h, &mut rx, &fx, |_, h| {
        status(h).contains("failed event tool_call_created ×2")
    });
    let st = status(&h);
    assert!(
        st.contains("failed event tool_call_created ×2: HostError: ")
            && st.contains("(notifies.mjs:6 in onCall)"),
        "{st}"
    );
}

#[test]
fn print_goes_to_the_plugins_log_and_the_connection_stays() {
    if !python() {
        return;
    }
    let (mut h, mut rx) = observing("prints");
    let mut s = S::new();
    let fx = calls_created(&mut s, 0..3);
    pump(&mut h, &mut rx, &fx, |_, h| {
        status(h).contains("starting up")
    });
    // Its stderr lines in /status are refreshed as it is handed more.
    let mut seen = String::new();
    for i in 3..40 {
        let more = calls_created(&mut s, i..i + 1);
        pump(&mut h, &mut rx, &more, |_, _| true);
        std::thread::sleep(Duration::from_millis(50));
        seen = status(&h);
        if seen.contains("saw c0") {
            break;
        }
    }
    let st = seen;
    assert!(
        st.contains("│ starting up") && st.contains("│ saw c0"),
        "{st}"
    );
    assert!(matches!(state(&h, "prints"), ExtState::Ready), "{st}");
    assert!(!st.contains("disconnected"), "{st}");
}

#[test]
fn every_public_name_of_the_python_sdk_is_in_the_docs() {
    if !python() {
        return;
    }
    let code = r#"
import inspect, sys
import trellis_plugin as t
names = set()
for cls in (t.Plugin, t.Host):
    names |= {n for n, _ in inspect.getmembers(cls) if not n.startswith("_")}
names |= {n for n in vars(t.Plugin()) if not n.startswith("_")}
names |= {n for n in dir(t) if not n.startswith("_")
          and (getattr(getattr(t, n), "__module__", None) == "trellis_plugin" or n.isupper())}
sys.stderr.write(" ".join(sorted(names)))
"#;
    let (ok, names) = python_snippet(code);
    assert!(ok, "{names}");
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/plugins.md"),
    )
    .unwrap();
    let word = |n: &str| {
        doc.match_indices(n).any(|(i, _)| {
            let before = doc[..i].chars().next_back();
            let after = doc[i + n.len()..].chars().next();
            let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !part(before) && !part(after)
        })
    };
    let missing: Vec<&str> = names.split(' ').filter(|n| !word(n)).collect();
    assert!(missing.is_empty(), "undocumented SDK names: {missing:?}");
}

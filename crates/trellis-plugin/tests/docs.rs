//! The published protocol stays true: the checked-in schema is the one generated from the
//! types, `docs/plugin-protocol.md` shows every method, and each example there has only
//! the fields the schema knows and every field it requires.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_checked_in_schema_is_the_generated_one() {
    let file = std::fs::read_to_string(repo().join("docs/plugin-protocol.schema.json")).unwrap();
    assert!(
        file == trellis_plugin::schema::text(),
        "docs/plugin-protocol.schema.json is stale: run `trellis plugin schema > docs/plugin-protocol.schema.json`"
    );
}

fn resolve<'a>(s: &'a Value, defs: &'a Value) -> &'a Value {
    match s.get("$ref").and_then(Value::as_str) {
        Some(r) => resolve(&defs[r.trim_start_matches("#/$defs/")], defs),
        None => s,
    }
}

/// Every part of a schema that an object may match (the schema, its allOf, anyOf, oneOf).
fn parts<'a>(s: &'a Value, defs: &'a Value, out: &mut Vec<&'a Value>) {
    let s = resolve(s, defs);
    out.push(s);
    for k in ["allOf", "anyOf", "oneOf"] {
        if let Some(a) = s.get(k).and_then(Value::as_array) {
            for x in a {
                parts(x, defs, out);
            }
        }
    }
}

fn type_ok(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => true,
    }
}

/// A structural check: types where the schema states them, known keys, required keys.
fn check(v: &Value, s: &Value, defs: &Value, at: &str) -> Result<(), String> {
    let mut ps = Vec::new();
    parts(s, defs, &mut ps);
    // Alternatives: one of them must fit.
    let s = resolve(s, defs);
    for k in ["anyOf", "oneOf"] {
        if let Some(alts) = s.get(k).and_then(Value::as_array)
            && s.get("properties").is_none()
        {
            let errs: Vec<String> = alts
                .iter()
                .filter_map(|a| check(v, a, defs, at).err())
                .collect();
            if errs.len() == alts.len() {
                return Err(format!("{at}: fits no alternative: {}", errs.join(" | ")));
            }
            return Ok(());
        }
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(v, t),
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(|t| type_ok(v, t)),
            _ => true,
        };
        if !ok {
            return Err(format!("{at}: {v} is not {t}"));
        }
    }
    if let (Value::Object(o), true) = (v, ps.iter().any(|p| p.get("properties").is_some())) {
        let mut known = BTreeSet::new();
        for p in &ps {
            if let Some(props) = p.get("properties").and_then(Value::as_object) {
                known.extend(props.keys().cloned());
            }
        }
        for (k, x) in o {
            if !known.contains(k) {
                return Err(format!("{at}: unknown field {k:?} (known: {known:?})"));
            }
            if let Some(ps2) = ps.iter().find_map(|p| p.get("properties")?.get(k)) {
                check(x, ps2, defs, &format!("{at}.{k}"))?;
            }
        }
        if let Some(req) = s.get("required").and_then(Value::as_array) {
            for r in req.iter().filter_map(Value::as_str) {
                if !o.contains_key(r) {
                    return Err(format!("{at}: missing required field {r:?}"));
                }
            }
        }
    }
    if let (Value::Array(a), Some(items)) = (v, s.get("items")) {
        for (i, x) in a.iter().enumerate() {
            check(x, items, defs, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

#[test]
fn every_method_is_documented_with_an_example_that_fits_the_schema() {
    let md = std::fs::read_to_string(repo().join("docs/plugin-protocol.md")).unwrap();
    let schema = trellis_plugin::schema::document();
    let defs = &schema["$defs"];
    for (name, _) in trellis_plugin::protocol::METHODS {
        let heading = format!("### `{name}`");
        let at = md
            .find(&heading)
            .unwrap_or_else(|| panic!("docs/plugin-protocol.md has no section {heading}"));
        let rest = &md[at + heading.len()..];
        let end = rest
            .find("\n### ")
            .or_else(|| rest.find("\n## "))
            .unwrap_or(rest.len());
        let section = &rest[..end];
        let blocks: Vec<Value> = section
            .split("```json")
            .skip(1)
            .map(|b| {
                let body = &b[..b.find("```").unwrap()];
                serde_json::from_str(body)
                    .unwrap_or_else(|e| panic!("{name}: an example is not JSON ({e}): {body}"))
            })
            .collect();
        let m = &schema["methods"][*name];
        let call = blocks
            .iter()
            .find(|b| b["method"] == *name)
            .unwrap_or_else(|| panic!("{name}: no example message"));
        assert_eq!(call["jsonrpc"], "2.0", "{name}");
        let mut params = call["params"].clone();
        if *name == "event"
            && let Some(o) = params.as_object_mut()
        {
            o.remove("acp");
        }
        check(&params, &m["params"], defs, name).unwrap_or_else(|e| panic!("{e}"));
        if m["direction"] == "host → plugin" {
            assert_eq!(
                call.get("id").is_some(),
                m["kind"] == "request",
                "{name}: a request has an id, a notification none"
            );
        }
        if let Some(answer) = blocks.iter().find(|b| b.get("result").is_some()) {
            check(
                &answer["result"],
                &m["result"],
                defs,
                &format!("{name} result"),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn the_error_codes_are_the_protocols() {
    let md = std::fs::read_to_string(repo().join("docs/plugin-protocol.md")).unwrap();
    for code in ["-32601", "-32602", "-32001", "-32002", "-32003"] {
        assert!(md.contains(code), "{code}");
    }
}

/// Every name the TypeScript SDK's types export, and every member of its `Host` and
/// `Plugin`, is in `docs/plugins.md`.
#[test]
fn every_public_name_of_the_typescript_sdk_is_in_the_docs() {
    let types =
        std::fs::read_to_string(repo().join("sdk/typescript/trellis-plugin.d.mts")).unwrap();
    let doc = std::fs::read_to_string(repo().join("docs/plugins.md")).unwrap();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = Vec::new();
    let mut class = false;
    for line in types.lines() {
        if let Some(rest) = line.strip_prefix("export ") {
            let rest = rest.trim_start_matches("declare ");
            let word = rest.split_whitespace().nth(1).unwrap_or("");
            names.push(ident(word));
            class = rest.starts_with("class Host") || rest.starts_with("class Plugin");
            continue;
        }
        if line.starts_with('}') {
            class = false;
        }
        if class
            && let Some(member) = line.strip_prefix("  ")
            && !member.starts_with(' ')
            && !member.starts_with('/')
            && !member.starts_with("constructor")
        {
            let n = ident(member);
            if !n.is_empty() {
                names.push(n);
            }
        }
    }
    assert!(names.len() > 50, "{names:?}");
    let word = |n: &str| {
        doc.match_indices(n).any(|(i, _)| {
            let before = doc[..i].chars().next_back();
            let after = doc[i + n.len()..].chars().next();
            let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !part(before) && !part(after)
        })
    };
    let missing: Vec<&String> = names.iter().filter(|n| !word(n)).collect();
    assert!(missing.is_empty(), "undocumented SDK names: {missing:?}");
}

/// The protocol schema's definitions.
fn schema_defs() -> Value {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("docs/plugin-protocol.schema.json")).unwrap(),
    )
    .unwrap();
    schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .unwrap()
        .clone()
}

/// An SDK shape has exactly the fields of schema definition `def`, but the fields a side
/// may lack (`missing_ok`) or add (`extra_ok`).
fn same_fields(shape: &str, def: &str, have: &[String], missing_ok: &[&str], extra_ok: &[&str]) {
    let props: Vec<String> = schema_defs()[def]["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("{def} has no properties"))
        .keys()
        .cloned()
        .collect();
    let missing: Vec<&String> = props
        .iter()
        .filter(|p| !have.contains(p) && !missing_ok.contains(&p.as_str()))
        .collect();
    assert!(missing.is_empty(), "{shape} lacks {missing:?} of {def}");
    let extra: Vec<&String> = have
        .iter()
        .filter(|f| !props.contains(f) && !extra_ok.contains(&f.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "{shape} has {extra:?}, which {def} does not"
    );
}

/// The TypeScript SDK's shapes are the protocol's: every field the schema gives a shape is
/// in its TypeScript interface, and the interface has nothing the schema does not (but
/// what the host adds on the wire beside it: `acp`).
#[test]
fn the_typescript_types_are_the_protocol_schemas() {
    let types =
        std::fs::read_to_string(repo().join("sdk/typescript/trellis-plugin.d.mts")).unwrap();
    // The fields of `export interface NAME { … }`.
    let fields = |name: &str| -> Vec<String> {
        let start = types
            .find(&format!("export interface {name} {{"))
            .unwrap_or_else(|| panic!("no interface {name}"));
        types[start..]
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with('}'))
            .filter_map(|l| {
                let l = l.trim_start();
                let n: String = l
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                (!n.is_empty() && l[n.len()..].trim_start().starts_with(['?', ':'])).then_some(n)
            })
            .collect()
    };
    for (ts, def) in [
        ("Facts", "CallFacts"),
        ("CardLines", "CardLines"),
        ("PermissionOption", "PermissionOption"),
        ("SettingsRow", "SettingsRow"),
        ("Rewrite", "Rewrite"),
        ("ToolCall", "ToolCall"),
        ("Offer", "OfferParams"),
        ("QuestionOffer", "QuestionOfferParams"),
    ] {
        same_fields(ts, def, &fields(ts), &[], &["acp"]);
    }
}

/// The Python SDK's shapes (`TypedDict`s) are the protocol's too.
#[test]
fn the_python_types_are_the_protocol_schemas() {
    let code = std::fs::read_to_string(repo().join("sdk/python/trellis_plugin.py")).unwrap();
    let fields = |name: &str| -> Vec<String> {
        let start = code
            .find(&format!("class {name}(TypedDict"))
            .unwrap_or_else(|| panic!("no TypedDict {name}"));
        code[start..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("    ") || l.trim().is_empty())
            .filter_map(|l| {
                let l = l.trim();
                let (n, _) = l.split_once(':')?;
                (!n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_'))
                    .then(|| n.to_string())
            })
            .collect()
    };
    for (py, def) in [
        ("Facts", "CallFacts"),
        ("ToolCall", "ToolCall"),
        ("Offer", "OfferParams"),
    ] {
        same_fields(py, def, &fields(py), &["acp"], &[]);
    }
}

/// The names a JavaScript module exports as values (`export const|function|class NAME`).
fn value_exports(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|rest| {
            let rest = rest.trim_start_matches("declare ");
            let (kind, name) = rest.split_once(' ')?;
            ["const", "function", "class"].contains(&kind).then(|| {
                name.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect()
            })
        })
        .collect()
}

/// What the TypeScript SDK exports is what its types declare, and every one is in the
/// docs' reference (the types' names are checked by the test above).
#[test]
fn the_typescript_sdks_exports_are_its_declared_ones() {
    let code = std::fs::read_to_string(repo().join("sdk/typescript/trellis-plugin.mjs")).unwrap();
    let types =
        std::fs::read_to_string(repo().join("sdk/typescript/trellis-plugin.d.mts")).unwrap();
    let (js, ts) = (value_exports(&code), value_exports(&types));
    assert!(
        js.contains("PluginDefinitionError") && js.contains("EVENT_TYPES"),
        "{js:?}"
    );
    assert_eq!(
        js, ts,
        "trellis-plugin.mjs exports ≠ trellis-plugin.d.mts declares"
    );
    let doc = std::fs::read_to_string(repo().join("docs/plugins.md")).unwrap();
    let reference = &doc[doc
        .find("### Reference: every name of the TypeScript SDK")
        .unwrap()..];
    for n in &js {
        assert!(
            reference.contains(&format!("`{n}")),
            "{n} is missing from the TypeScript SDK's reference in docs/plugins.md"
        );
    }
}

/// One command builds a TypeScript plugin, and everything says the same one: the
/// scaffold's `package.json` runs the compiler it pins (no `npm install` needed), its
/// source's comment, docs/plugins.md and the stale-build error say `npm run build`; none
/// says `npx tsc` (an unrelated package) or another way.
#[test]
fn one_command_builds_a_typescript_plugin_and_everything_says_it() {
    let scaffold = std::fs::read_to_string(repo().join("crates/trellis/src/scaffold.rs")).unwrap();
    assert!(
        scaffold.contains(r#""build": "npx --yes --package typescript@{TYPESCRIPT} tsc -p .""#),
        "the scaffold's build script"
    );
    for f in [
        "crates/trellis/templates/typescript/plugin.mts",
        "crates/trellis/templates/typescript/plugin.mjs",
    ] {
        let t = std::fs::read_to_string(repo().join(f)).unwrap();
        assert!(t.contains("build it: `npm run build`"), "{f}");
    }
    let docs = std::fs::read_to_string(repo().join("docs/plugins.md")).unwrap();
    let readme = std::fs::read_to_string(repo().join("sdk/typescript/README.md")).unwrap();
    // (the message itself is checked by the registry's own test)
    let registry =
        std::fs::read_to_string(repo().join("crates/trellis-plugin/src/registry.rs")).unwrap();
    let start = registry.find("pub fn build_command").unwrap();
    let registry = registry[start..start + registry[start..].find("\n}\n").unwrap()].to_string();
    for (name, text) in [
        ("docs/plugins.md", &docs),
        ("sdk/typescript/README.md", &readme),
        ("the stale-build error", &registry),
        ("the scaffold", &scaffold),
    ] {
        assert!(text.contains("npm run build"), "{name}");
        for other in ["npx tsc", "npx -p typescript", "npm install` once"] {
            assert!(!text.contains(other), "{name} says {other}");
        }
    }
}

/// Each SDK has a README that says what it is, shows the docs' own first example, says how
/// errors are reported, and points at docs/plugins.md.
#[test]
fn each_sdk_has_a_readme_consistent_with_the_docs() {
    let docs = std::fs::read_to_string(repo().join("docs/plugins.md")).unwrap();
    let block = |lang: &str| -> String {
        let start = docs.find(&format!("```{lang}\n")).unwrap() + lang.len() + 4;
        docs[start..start + docs[start..].find("```").unwrap()].to_string()
    };
    for (dir, lang) in [("python", "python"), ("typescript", "ts")] {
        let readme = std::fs::read_to_string(repo().join("sdk").join(dir).join("README.md"))
            .unwrap_or_else(|e| panic!("sdk/{dir}/README.md: {e}"));
        assert!(readme.contains("docs/plugins.md"), "sdk/{dir}/README.md");
        assert!(
            readme.contains(&block(lang)),
            "sdk/{dir}/README.md does not show the docs' first {lang} example"
        );
        for word in ["PluginDefinitionError", "HostError", "/status"] {
            assert!(
                readme.contains(word),
                "sdk/{dir}/README.md says nothing of {word}"
            );
        }
    }
}

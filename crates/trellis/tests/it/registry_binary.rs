//! A binary distribution (issue 28): an archive the test builds around a small agent
//! program, served on loopback — downloaded, its SHA-256 checked against the entry's and
//! recorded, unpacked, started by id; the program checked again before each start; the
//! same version with another archive refused; archives that climb out or hold links
//! refused with nothing written outside.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::registry_kit::{Home, serve, text};

use sha2::Digest;

const AGENT: &str = r#"#!/usr/bin/env python3
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    send = lambda r: (sys.stdout.write(json.dumps(r) + "\n"), sys.stdout.flush())
    if m.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
    elif m.get("method") == "session/new":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s-1"}})
    elif m.get("method") == "session/prompt":
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hello from the binary"}}}})
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"stopReason": "end_turn"}})
    elif "id" in m and "method" in m:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
"#;

/// A tar.gz (or, named `.tar.bz2`, a tar.bz2) made by Python's tarfile: `files` (name,
/// text, mode) and `links` (name, target).
fn archive(dir: &Path, name: &str, files: &[(&str, &str, u32)], links: &[(&str, &str)]) -> Vec<u8> {
    let spec = serde_json::json!({"files": files.iter().map(|(n, t, m)| (n, t, m)).collect::<Vec<_>>(),
        "links": links});
    let out = dir.join(name);
    let script = r#"
import io, json, sys, tarfile
spec = json.loads(sys.argv[2])
with tarfile.open(sys.argv[1], "w:bz2" if sys.argv[1].endswith(".bz2") else "w:gz") as t:
    for name, text, mode in spec["files"]:
        data = text.encode()
        info = tarfile.TarInfo(name); info.size = len(data); info.mode = mode
        t.addfile(info, io.BytesIO(data))
    for name, target in spec["links"]:
        info = tarfile.TarInfo(name); info.type = tarfile.SYMTYPE; info.linkname = target
        t.addfile(info)
"#;
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(&out)
        .arg(spec.to_string())
        .status()
        .unwrap_or_else(|_| panic!("python3 is needed"));
    assert!(status.success());
    std::fs::read(out).unwrap()
}

/// A zip made by Python's zipfile: `files` (name, text, mode).
fn zip(dir: &Path, name: &str, files: &[(&str, &str, u32)]) -> Vec<u8> {
    let out = dir.join(name);
    let script = r#"
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for name, text, mode in json.loads(sys.argv[2]):
        info = zipfile.ZipInfo(name)
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, text)
"#;
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(&out)
        .arg(serde_json::json!(files).to_string())
        .status()
        .unwrap_or_else(|_| panic!("python3 is needed"));
    assert!(status.success());
    std::fs::read(out).unwrap()
}

/// This machine as the registry names platforms.
fn platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        os => os,
    };
    format!("{os}-{}", std::env::consts::ARCH)
}

fn hex(b: &[u8]) -> String {
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// The index: each (id, archive address, its sha256) a binary for this machine.
fn index(home: &Home, entries: &[(&str, String, String)]) {
    let agents: Vec<_> = entries
        .iter()
        .map(|(id, url, sha)| {
            serde_json::json!({"id": id, "name": id, "version": "1.0.0", "description": "a binary agent",
                "distribution": {"binary": {platform(): {"archive": url, "cmd": "./bin/agent", "sha256": sha}}}})
        })
        .collect();
    home.registry(serde_json::json!(agents));
}

#[test]
fn a_binary_agent_is_checked_unpacked_run_and_checked_again() {
    let home = Home::new();
    let dir = home.path().to_path_buf();
    let good = archive(
        &dir,
        "good.tgz",
        &[("bin/agent", AGENT, 0o755), ("README", "hi", 0o644)],
        &[],
    );
    let other = archive(
        &dir,
        "other.tgz",
        &[("bin/agent", &format!("{AGENT}\n# another\n"), 0o755)],
        &[],
    );
    let climb = archive(
        &dir,
        "climb.tgz",
        &[("../../escaped", "x", 0o644), ("bin/agent", AGENT, 0o755)],
        &[],
    );
    let link = archive(
        &dir,
        "link.tgz",
        &[("bin/x", "x", 0o644)],
        &[("bin/agent", "/bin/sh")],
    );
    let zipped = zip(&dir, "good.zip", &[("bin/agent", AGENT, 0o755)]);
    let bz = archive(&dir, "good.tar.bz2", &[("bin/agent", AGENT, 0o755)], &[]);
    let zip_climb = zip(
        &dir,
        "climb.zip",
        &[
            ("../../zipped-out", "x", 0o644),
            ("bin/agent", AGENT, 0o755),
        ],
    );
    let base = serve(
        [
            ("/good.tgz", &good),
            ("/other.tgz", &other),
            ("/climb.tgz", &climb),
            ("/link.tgz", &link),
            ("/good.zip", &zipped),
            ("/good.tar.bz2", &bz),
            ("/climb.zip", &zip_climb),
        ]
        .into_iter()
        .map(|(p, b)| (p.to_string(), b.clone()))
        .collect(),
    );
    index(
        &home,
        &[
            ("bin-agent", format!("{base}/good.tgz"), hex(&good)),
            ("liar", format!("{base}/good.tgz"), hex(b"something else")),
            ("climber", format!("{base}/climb.tgz"), hex(&climb)),
            ("linker", format!("{base}/link.tgz"), hex(&link)),
            ("zipped", format!("{base}/good.zip"), hex(&zipped)),
            ("bzipped", format!("{base}/good.tar.bz2"), hex(&bz)),
            ("zip-climber", format!("{base}/climb.zip"), hex(&zip_climb)),
        ],
    );
    let o = home.trellis(&["agents", "add", "bin-agent"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("SHA-256 {}", hex(&good))),
        "{}",
        text(&o)
    );
    let o = home.trellis(&["run", "--agent", "bin-agent", "--prompt", "hi"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("hello from the binary"), "{}", text(&o));
    // The registry's checksum does not match what is downloaded: refused, nothing kept.
    let o = home.trellis(&["agents", "add", "liar"]);
    assert!(
        !o.status.success() && text(&o).contains("the registry says"),
        "{}",
        text(&o)
    );
    assert!(!dir.join("data/trellis/agents/liar/1.0.0").exists());
    // Archives that climb out or hold links: refused, nothing written outside.
    // A zip, as most macOS builds come, and a tar.bz2.
    for id in ["zipped", "bzipped"] {
        let o = home.trellis(&["agents", "add", id]);
        assert!(o.status.success(), "{id}: {}", text(&o));
        let o = home.trellis(&["run", "--agent", id, "--prompt", "hi"]);
        assert!(
            text(&o).contains("hello from the binary"),
            "{id}: {}",
            text(&o)
        );
    }
    for id in ["climber", "linker", "zip-climber"] {
        let o = home.trellis(&["agents", "add", id]);
        assert!(!o.status.success(), "{id}: {}", text(&o));
        assert!(
            text(&o).contains("not inside it") || text(&o).contains("does not unpack"),
            "{id}: {}",
            text(&o)
        );
    }
    for up in [
        dir.join("escaped"),
        dir.join("data/escaped"),
        dir.join("data/trellis/escaped"),
    ] {
        assert!(!up.exists(), "{}", up.display());
    }
    // The same version with another archive: refused.
    index(
        &home,
        &[("bin-agent", format!("{base}/other.tgz"), hex(&other))],
    );
    let o = home.trellis(&["agents", "update", "bin-agent"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("another archive for the same version"),
        "{}",
        text(&o)
    );
    let o = home.trellis(&["agents", "add", "bin-agent"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("another archive for the same version"),
        "{}",
        text(&o)
    );
    // Changed after install: not started.
    let program = dir.join("data/trellis/agents/bin-agent/1.0.0/bin/agent");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&program)
        .unwrap()
        .write_all(b"\n# changed\n")
        .unwrap();
    let o = home.trellis(&["run", "--agent", "bin-agent", "--prompt", "hi"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("changed since it was installed"),
        "{}",
        text(&o)
    );
}

//! A `uvx` registry agent (issue 28): installed with uv (the pinned one `scripts/test`
//! puts under `.ci/uv`, or the user's) from a Python package index the test serves on
//! loopback with a wheel it builds around a small agent, then started by id for a turn.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::registry_kit::{Home, serve, text};

use sha2::Digest;

const MODULE: &str = r#"import json, sys

def main():
    for line in sys.stdin:
        try:
            m = json.loads(line)
        except ValueError:
            continue
        def send(r):
            sys.stdout.write(json.dumps(r) + "\n")
            sys.stdout.flush()
        if m.get("method") == "initialize":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
        elif m.get("method") == "session/new":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s-1"}})
        elif m.get("method") == "session/prompt":
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hello from the wheel"}}}})
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"stopReason": "end_turn"}})
        elif "id" in m and "method" in m:
            send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
"#;

/// A wheel of `trellis-test-agent-py` 1.0.0 (built by Python's zipfile, with its RECORD).
fn wheel(dir: &Path) -> Vec<u8> {
    let script = r#"
import base64, hashlib, sys, zipfile
out, body = sys.argv[1], sys.argv[2]
name, version = "trellis_test_agent_py", "1.0.0"
di = f"{name}-{version}.dist-info"
files = {
    f"{name}/__init__.py": body,
    f"{di}/METADATA": f"Metadata-Version: 2.1\nName: trellis-test-agent-py\nVersion: {version}\n",
    f"{di}/WHEEL": "Wheel-Version: 1.0\nGenerator: trellis-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    f"{di}/entry_points.txt": "[console_scripts]\ntrellis-test-agent-py = trellis_test_agent_py:main\n",
}
record = []
with zipfile.ZipFile(out, "w") as z:
    for path, text in files.items():
        data = text.encode()
        z.writestr(path, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{di}/RECORD,,")
    z.writestr(f"{di}/RECORD", "\n".join(record) + "\n")
"#;
    let out = dir.join("trellis_test_agent_py-1.0.0-py3-none-any.whl");
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(&out)
        .arg(MODULE)
        .status()
        .unwrap_or_else(|_| panic!("python3 is needed"));
    assert!(status.success());
    std::fs::read(out).unwrap()
}

/// A package index ("simple" API) on loopback serving the wheel; its address.
fn index(whl: Vec<u8>) -> String {
    let name = "trellis_test_agent_py-1.0.0-py3-none-any.whl";
    let sha: String = sha2::Sha256::digest(&whl)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let page =
        format!("<html><body><a href=\"/files/{name}#sha256={sha}\">{name}</a></body></html>");
    let base = serve(
        [
            (
                "/simple/trellis-test-agent-py".to_string(),
                page.into_bytes(),
            ),
            (format!("/files/{name}"), whl),
        ]
        .into_iter()
        .collect(),
    );
    format!("{base}/simple")
}

/// The directory of uv: the pinned one of `scripts/test`, or the user's.
fn uv_dir() -> Option<PathBuf> {
    let pinned = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/uv/bin");
    if pinned.join("uv").is_file() {
        return Some(pinned);
    }
    std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).find(|d| d.join("uv").is_file()))
}

#[test]
fn a_uvx_agent_is_installed_with_uv_and_run_by_its_id() {
    let Some(uv) = uv_dir() else {
        crate::missing_tool(
            "uv is not installed (scripts/test installs a pinned one under .ci/uv)",
        );
        return;
    };
    let mut home = Home::new();
    let simple = index(wheel(home.path()));
    home.registry(serde_json::json!([
        {"id": "py-agent", "name": "A Python agent", "version": "1.0.0", "description": "answers from a wheel",
         "distribution": {"uvx": {"package": "trellis-test-agent-py==1.0.0", "cmd": "trellis-test-agent-py"}}}]));
    let path = std::env::join_paths(std::iter::once(uv).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    home.env = vec![
        ("PATH".into(), path.to_string_lossy().into_owned()),
        ("UV_INDEX_URL".into(), simple),
        (
            "UV_CACHE_DIR".into(),
            home.path().join("uv-cache").display().to_string(),
        ),
        ("UV_PYTHON_DOWNLOADS".into(), "never".into()),
        ("UV_NO_CONFIG".into(), "1".into()),
    ];
    let trellis = |args: &[&str]| {
        let o = home.trellis(args);
        (o.status.success(), text(&o))
    };
    let (ok, out) = trellis(&["agents", "add", "py-agent"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("uv pip install trellis-test-agent-py==1.0.0"),
        "{out}"
    );
    assert!(out.contains("py-agent 1.0.0 installed"), "{out}");
    let (ok, out) = trellis(&["run", "--agent", "py-agent", "--prompt", "hi"]);
    assert!(ok, "{out}");
    assert!(out.contains("hello from the wheel"), "{out}");
}

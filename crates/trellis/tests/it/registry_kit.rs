//! What the registry tests share: files served on loopback (GET and HEAD, as npm, uv and
//! Trellis ask), and a home whose config points `[registry] url` at an index it writes.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Serves `files` (path → bytes; a path asked for with a trailing `/` finds it too) on
/// loopback; the base address.
pub(crate) fn serve(files: HashMap<String, Vec<u8>>) -> String {
    serve_with(|_| files)
}

/// [`serve`] of the files `make` makes knowing the base address (documents that link to
/// other files).
pub(crate) fn serve_with(make: impl FnOnce(&str) -> HashMap<String, Vec<u8>>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let files = make(&base);
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut w = s;
            let Some(Asked { method, path, .. }) = read_request(&mut r) else {
                continue;
            };
            let found = files
                .get(&path)
                .or_else(|| files.get(path.trim_end_matches('/')));
            let (status, body) = match found {
                Some(b) => ("200 OK", b.as_slice()),
                None => ("404 Not Found", &[][..]),
            };
            // A page, a JSON document, or a file (uv wants to be told).
            let kind = match body.first() {
                Some(b'<') => "text/html",
                Some(b'{') => "application/json",
                _ => "application/octet-stream",
            };
            let _ = w.write_all(
                format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .as_bytes(),
            );
            if method != "HEAD" {
                let _ = w.write_all(body);
            }
            let _ = r
                .get_mut()
                .set_read_timeout(Some(std::time::Duration::from_millis(50)));
            let _ = r.read_to_end(&mut Vec::new());
        }
    });
    base
}

/// A request as a test server reads it: its method, path, and headers (names lowercase).
pub(crate) struct Asked {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
}

/// Reads one request's line and headers (none when the connection ended first).
pub(crate) fn read_request(r: &mut BufReader<std::net::TcpStream>) -> Option<Asked> {
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.push((k.to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut parts = line.split_whitespace();
    Some(Asked {
        method: parts.next().unwrap_or_default().to_string(),
        path: parts.next().unwrap_or("/").to_string(),
        headers,
    })
}

/// A home for Trellis: its config, data, and the registry index it is pointed at.
pub(crate) struct Home {
    pub(crate) dir: tempfile::TempDir,
    /// Environment each run gets besides the homes (a package registry's address…).
    pub(crate) env: Vec<(String, String)>,
}

impl Home {
    pub(crate) fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
            env: Vec::new(),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The registry's index is `agents` (written to a file the config names).
    pub(crate) fn registry(&self, agents: serde_json::Value) {
        let index = serde_json::json!({"version": "1.0.0", "agents": agents});
        std::fs::write(self.path().join("registry.json"), index.to_string()).unwrap();
        let config = self.path().join("config/trellis");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            format!(
                "[registry]\nurl = {:?}\n",
                self.path().join("registry.json")
            ),
        )
        .unwrap();
    }

    pub(crate) fn trellis(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(args)
            .current_dir(self.path())
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env("XDG_DATA_HOME", self.path().join("data"))
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

pub(crate) use crate::hubkit::text;

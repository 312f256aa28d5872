//! The demo agent's login (`trellis agent demo --login-file FILE`): it needs one before
//! `session/new`, and is logged in once FILE exists. A client that lends its terminal
//! (`clientCapabilities.auth.terminal`) is offered a `terminal` method — the demo run again
//! with `--login`, which asks on the terminal — and every client an `agent` method that
//! `authenticate` completes at once.

use std::io::{BufRead, Write};
use std::path::Path;

use serde_json::{Value, json};

/// The id of the terminal method and of the one `authenticate` takes.
pub const TERMINAL_METHOD: &str = "demo-terminal-login";
pub const AGENT_METHOD: &str = "demo-key";

/// `authMethods` for `initialize`.
pub fn methods(file: Option<&Path>, client_has_terminal: bool) -> Value {
    if file.is_none() {
        return json!([]);
    }
    let mut m = Vec::new();
    if client_has_terminal {
        m.push(
            json!({"type": "terminal", "id": TERMINAL_METHOD, "name": "Log in to the demo",
            "description": "Answers one question in your terminal", "args": ["--login"],
            "env": {"TRELLIS_DEMO_LOGIN": "1"}}),
        );
    }
    m.push(json!({"id": AGENT_METHOD, "name": "Demo key",
        "description": "Logged in by authenticate, no questions asked"}));
    Value::Array(m)
}

pub fn logged_in(file: Option<&Path>) -> bool {
    file.is_none_or(|f| f.exists())
}

/// Marks the login done: FILE made, never written through (it is new or already there).
pub fn mark(file: &Path) -> std::io::Result<()> {
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(file)
    {
        Ok(mut f) => f.write_all(b"logged in\n"),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// `--login`: asks on the terminal; `Ok(true)` when the person logged in.
pub fn interactive(file: &Path) -> std::io::Result<bool> {
    let launched_as_method = std::env::var("TRELLIS_DEMO_LOGIN").is_ok_and(|v| v == "1");
    let mut out = std::io::stdout();
    writeln!(
        out,
        "Demo agent login{}.",
        if launched_as_method {
            " (started by the client for its terminal method)"
        } else {
            ""
        }
    )?;
    write!(out, "Type yes to log in: ")?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    if line.trim() != "yes" {
        writeln!(out, "Not logged in.")?;
        return Ok(false);
    }
    mark(file)?;
    writeln!(out, "Logged in.")?;
    Ok(true)
}

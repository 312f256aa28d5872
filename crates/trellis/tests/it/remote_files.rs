//! An agent elsewhere that shares this machine's files through a mount (issue 49, item
//! 2): the project at `/workspace` for the agent is `~/proj` here. Its paths become this
//! machine's in the ledger (locations, diffs, written files), its file requests are served
//! from here, the session's directory is sent as its path, and a rewind finds what it
//! changed. The mount is a symbolic link, so the agent (the demo, served on loopback)
//! sees the same files by another path.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::hubkit::{Dirs, text};
use crate::remote::{Served, bounded, config, token};

/// `trellis` in `dir` with `d`'s directories and the agent's token, bounded.
fn trellis_in(d: &Dirs, dir: &Path, secret: &str, args: &[&str]) -> std::process::Output {
    trellis_env(d, dir, &[("BOX_TOKEN", secret)], args)
}

/// [`trellis_in`] with the environment `env` besides `d`'s directories.
fn trellis_env(d: &Dirs, dir: &Path, env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(args)
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", &d.runtime)
        .env("XDG_DATA_HOME", &d.data)
        .env("XDG_CONFIG_HOME", &d.config)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    bounded(&mut child, Duration::from_secs(60))
}

#[test]
fn a_shared_mount_shows_and_serves_this_machines_paths() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let proj = d.work.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let proj = std::fs::canonicalize(&proj).unwrap();
    let mount = d.work.join("mnt");
    std::os::unix::fs::symlink(&proj, &mount).unwrap();
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &["trellis", "agent", "demo"],
    );
    let (proj_s, mount_s) = (proj.to_str().unwrap(), mount.to_str().unwrap());
    config(
        &d,
        &format!(
            "[agents.box]\nurl = \"ws://{}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\nfiles = \"shared\"\npaths = {{ \"{mount_s}\" = \"{proj_s}\" }}\n",
            served.addr
        ),
    );
    let o = trellis_in(
        &d,
        &proj,
        &secret,
        &[
            "run",
            "--format",
            "jsonl",
            "--agent",
            "box",
            "--prompt",
            "fix the TODO",
            "--permission",
            "allow-once",
        ],
    );
    assert!(o.status.success(), "{}\n{}", text(&o), served.said());
    assert!(
        text(&o).contains("shares this machine's files"),
        "{}",
        text(&o)
    );
    let log = d.log();
    // The agent was given its own path for the session's directory, and asked for files
    // by its paths.
    let new = crate::sent(&log, "session/new");
    assert_eq!(new[0]["cwd"], mount_s, "{new:?}");
    assert!(
        log.contains(&format!("\"path\":\"{mount_s}/demo-workspace")),
        "{log}"
    );
    // They were served from here.
    let lib = proj.join("demo-workspace/src/lib.rs");
    assert!(
        std::fs::read_to_string(&lib)
            .unwrap()
            .contains("checked_add")
    );
    // What the user is shown is this machine's: the session's directory, every call's
    // locations and diffs, the files written.
    let events = crate::jsonl(&String::from_utf8_lossy(&o.stdout));
    let started = events
        .iter()
        .find(|e| e["type"] == "session_started")
        .unwrap();
    assert_eq!(started["cwd"], proj_s, "{started}");
    let mut located = 0;
    for e in &events {
        let call = &e["call"];
        for l in call["locations"].as_array().into_iter().flatten() {
            located += 1;
            assert!(l["path"].as_str().unwrap().starts_with(proj_s), "{e}");
        }
        for c in call["content"].as_array().into_iter().flatten() {
            if c["type"] == "diff" {
                assert!(c["path"].as_str().unwrap().starts_with(proj_s), "{e}");
            }
        }
        if e["type"] == "file_written" {
            assert_eq!(e["path"], lib.to_str().unwrap(), "{e}");
        }
    }
    assert!(located > 0, "{}", text(&o));
    assert!(events.iter().any(|e| e["type"] == "file_written"));
    // A rewind finds what the agent changed, by this machine's paths.
    let listed = String::from_utf8_lossy(
        &trellis_in(&d, &proj, &secret, &["sessions", "list", "--all", "--json"]).stdout,
    )
    .into_owned();
    let rows: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let id = rows[0]["id"].as_str().unwrap().to_string();
    let o = trellis_in(
        &d,
        &proj,
        &secret,
        &["sessions", "rewind", &id, "--to", "1", "--code"],
    );
    assert!(o.status.success(), "{}", text(&o));
    // By this machine's path (the agent's would reach the same file here, through the
    // link, but not on a real mount).
    assert!(
        text(&o).contains(&format!("restored  {}", lib.display())),
        "{}",
        text(&o)
    );
    assert!(
        std::fs::read_to_string(&lib)
            .unwrap()
            .contains("// TODO: check for overflow"),
        "{}",
        text(&o)
    );
}

/// Shared directories are checked before dialing: they need `files = "shared"`, absolute
/// paths, and the session's directory in one of them.
#[test]
fn shared_directories_are_checked_before_dialing() {
    let d = Dirs::new();
    let elsewhere = d.work.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    // A directory of this machine that is not where Trellis runs.
    let near = d.work.join("near");
    std::fs::create_dir_all(&near).unwrap();
    let near_only = format!(
        "files = \"shared\"\npaths = {{ \"/workspace\" = \"{}\" }}\n",
        near.display()
    );
    let near_cwd = format!("{near_only}cwd = \"/workspace\"\n");
    for (entry, said, at) in [
        (
            "paths = { \"/workspace\" = \"/tmp\" }\n",
            "set files = \"shared\" too",
            Some("config.toml:4: agents.box.paths: "),
        ),
        (
            "files = \"shared\"\npaths = { \"workspace\" = \"/tmp\" }\n",
            "must be absolute",
            Some("config.toml:5: agents.box.paths: "),
        ),
        (
            "files = \"shared\"\npaths = { \"/workspace\" = \"/nowhere/near\" }\n",
            "/nowhere/near: not a directory of this machine",
            Some("config.toml:5: agents.box.paths: "),
        ),
        (
            near_only.as_str(),
            "is not in a directory shared with agent box",
            None,
        ),
        (near_cwd.as_str(), "or give it with --cwd", None),
        (
            "headers = { \"Bad Header\" = \"x\" }\n",
            "not a header name",
            Some("config.toml:4: agents.box.headers: "),
        ),
    ] {
        config(
            &d,
            &format!(
                "[agents.box]\nurl = \"ws://127.0.0.1:9/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\n{entry}"
            ),
        );
        let o = trellis_in(
            &d,
            &elsewhere,
            "x",
            &["run", "--agent", "box", "--prompt", "hi"],
        );
        assert!(!o.status.success());
        assert!(text(&o).contains(said), "{entry}: {}", text(&o));
        assert!(!text(&o).contains("cannot reach"), "{}", text(&o));
        // A mistake in the entry points at its line.
        if let Some(at) = at {
            assert!(text(&o).contains(at), "{entry}: {}", text(&o));
        }
    }
}

/// A secret written in the config itself (a `token`, a header whose name says it is a
/// credential or whose value plainly is one) is refused at its line — in an inline table,
/// a `[….headers]` section or a dotted key — before anything is dialed, and never printed;
/// so are a header name that holds a token, a header given twice or one the connection
/// sets. A header that is no secret may be written there, whatever its name holds.
#[test]
fn secrets_written_in_the_config_are_refused_at_their_line() {
    let d = Dirs::new();
    let empty_first = d.work.join("blank-first");
    std::fs::write(&empty_first, "\ntrl_second_line\n").unwrap();
    let env = "token = { env = \"BOX_TOKEN\" }\n";
    let cases: Vec<(String, Option<&str>, &str)> = vec![
        (
            "token = \"trl_abc\"\n".into(),
            Some("config.toml:3: agents.box.token: "),
            "a token, written in the config",
        ),
        (
            format!("{env}headers = {{ X-Api-Key = \"abc\" }}\n"),
            Some("config.toml:4: agents.box.headers.X-Api-Key: "),
            "its name says it is a credential (\"key\")",
        ),
        (
            format!("{env}[agents.box.headers]\nX-Team = \"core\"\nX-Auth-Token = \"abc\"\n"),
            Some("config.toml:6: agents.box.headers.X-Auth-Token: "),
            "(\"auth\")",
        ),
        (
            format!("{env}headers.\"X-Secret\" = \"abc\"\n"),
            Some("config.toml:4: agents.box.headers.X-Secret: "),
            "(\"secret\")",
        ),
        (
            "headers = { Authorization = \"Bearer abc\" }\n".into(),
            Some("config.toml:3: agents.box.headers.Authorization: "),
            "its value is a bearer credential",
        ),
        (
            format!("{env}headers = {{ X-Via = \"x trl_abc\" }}\n"),
            Some("config.toml:4: agents.box.headers.X-Via: "),
            "its value is a Trellis token",
        ),
        (
            format!("{env}headers = {{ \"X-Team: trl_abc\" = {{ env = \"BOX_TOKEN\" }} }}\n"),
            Some("config.toml:4: agents.box.headers: "),
            "a header's name holds a Trellis token",
        ),
        (
            format!("{env}headers = {{ \"X-Team: abc\" = \"x\" }}\n"),
            Some("config.toml:4: agents.box.headers: "),
            "header name \"X-Team…\": not a header name",
        ),
        (
            format!("{env}headers = {{ X-Team = \"a\", x-team = \"b\" }}\n"),
            Some("config.toml:4: agents.box.headers: "),
            "given twice",
        ),
        (
            format!("{env}headers = {{ Host = \"elsewhere\" }}\n"),
            Some("config.toml:4: agents.box.headers: "),
            "Trellis sets it for the connection itself",
        ),
        (
            "token = { env = \"BOX_TOKEN\", file = \"/etc/hostname\" }\n".into(),
            Some("config.toml:3"),
            "{ env } and { file } together: give one of them",
        ),
        (
            "token = { envv = \"BOX_TOKEN\" }\n".into(),
            Some("config.toml:3"),
            "{ envv }: a value is { env = \"NAME\" }, { file = \"PATH\" } or text",
        ),
        (
            "token = { env = \"EMPTY_TOKEN\" }\n".into(),
            Some("config.toml:3: agents.box.token: "),
            "the environment variable EMPTY_TOKEN is set but empty",
        ),
        (
            format!("token = {{ file = \"{}\" }}\n", empty_first.display()),
            Some("config.toml:3: agents.box.token: "),
            "its first line is blank",
        ),
        // No secret: words that only end a name's word in part, a plain value.
        (
            format!(
                "{env}headers = {{ X-Keyboard = \"qwerty\", X-Design = \"blue\", X-Author = \"me\" }}\n"
            ),
            None,
            "cannot reach 127.0.0.1:9",
        ),
    ];
    for (entry, at, said) in cases {
        config(
            &d,
            &format!("[agents.box]\nurl = \"ws://127.0.0.1:9/acp\"\n{entry}"),
        );
        let o = trellis_env(
            &d,
            &d.work,
            &[("BOX_TOKEN", "x"), ("EMPTY_TOKEN", " ")],
            &["run", "--agent", "box", "--prompt", "hi"],
        );
        assert!(!o.status.success());
        let out = text(&o);
        assert!(out.contains(said), "{entry}: {out}");
        for secret in ["trl_abc", "Bearer abc", "trl_second_line", "X-Team: abc"] {
            assert!(
                !out.contains(secret),
                "{entry}: the secret was printed: {out}"
            );
        }
        match at {
            Some(at) => {
                assert!(out.contains(at), "{entry}: {out}");
                assert!(!out.contains("cannot reach"), "{entry}: {out}");
                assert_eq!(o.status.code(), Some(2), "{entry}: {out}");
            }
            // Port 9 on this machine: nothing listens, the dial itself fails.
            None => assert!(!out.contains("config.toml"), "{entry}: {out}"),
        }
    }
}

/// A secret written in another entry than the agent in use is warned about, at its
/// line, once: the run goes on (that entry is refused only when used), the secret is
/// never printed.
#[test]
fn a_secret_in_an_entry_not_in_use_is_warned_about_once() {
    let d = Dirs::new();
    config(
        &d,
        "[agents.box]\nurl = \"ws://127.0.0.1:9/acp\"\ntoken = \"trl_abc\"\n",
    );
    let o = trellis_env(
        &d,
        &d.work,
        &[],
        &[
            "run",
            "--agent",
            "demo",
            "--prompt",
            "hi",
            "--permission",
            "allow-once",
        ],
    );
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let warned: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("warning: ") && l.contains("config.toml:3: agents.box.token: "))
        .collect();
    assert_eq!(warned.len(), 1, "{out}");
    assert!(!out.contains("trl_abc"), "{out}");
}

/// The secrets an agent elsewhere takes from the environment (`token`, `headers` of
/// `{ env = … }`) are read once and taken out of it: no process Trellis starts inherits
/// them — a hook, the commands of an agent offered this machine's terminals — while the
/// agent is still dialed with them.
#[test]
fn secrets_from_the_environment_reach_no_process() {
    let d = Dirs::new();
    let secret = token(&d, "agent");
    let served = Served::start(
        &d,
        &["--listen", "127.0.0.1:0"],
        &["trellis", "agent", "demo"],
    );
    let proj = d.work.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let seen = d.work.join("hook-env.txt");
    config(
        &d,
        &format!(
            "[agents.box]\nurl = \"ws://{}/acp\"\ntoken = {{ env = \"BOX_TOKEN\" }}\nheaders = {{ X-Key = {{ env = \"BOX_KEY\" }} }}\nfiles = \"shared\"\n\n[[hooks]]\non = \"turn_ended\"\nrun = \"env > '{}'\"\n",
            served.addr,
            seen.display()
        ),
    );
    let o = trellis_env(
        &d,
        &proj,
        &[("BOX_TOKEN", &secret), ("BOX_KEY", "key-s3cret-value")],
        &[
            "run",
            "--format",
            "jsonl",
            "--agent",
            "box",
            "--prompt",
            "fix the TODO",
            "--permission",
            "allow-once",
        ],
    );
    assert!(o.status.success(), "{}\n{}", text(&o), served.said());
    // The agent ran its tests in this machine's terminal, and the hook ran: neither saw
    // the secrets.
    let env = std::fs::read_to_string(&seen).unwrap();
    assert!(env.contains("XDG_DATA_HOME"), "{env}");
    for leak in [secret.as_str(), "key-s3cret-value", "BOX_TOKEN", "BOX_KEY"] {
        assert!(!env.contains(leak), "the hook inherited {leak}");
    }
    let log = d.log();
    assert!(crate::sent(&log, "terminal/create").is_empty() || !log.contains(&secret));
    assert!(!log.contains("key-s3cret-value"));
}

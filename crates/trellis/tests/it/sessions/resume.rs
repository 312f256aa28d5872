//! Taking a past session up again: rebuilt here, reloaded or resumed by the agent, its
//! history shown once above a divider; the picker; the session's own config sent on.

use super::*;

#[test]
fn resume_rebuilds_locally_and_carries_the_earlier_session() {
    let home = Home::new();
    let a = home.project("alpha");
    let first = home.first_session(&a);
    let (id, old_log) = (first.str("id"), first.str("path"));
    // Elsewhere, with no --agent nor --cwd: the earlier session's agent and directory.
    let out = home.resume(home.path(), &id[..4], &["--carry"]);
    let ev = events(&out);
    let started = ev.iter().find(|e| e["type"] == "session_started").unwrap();
    assert_eq!(started["cwd"], a.to_str().unwrap());
    assert_eq!(started["load_session"], false);
    // The turns continue the earlier ones; calls that reuse the earlier ids are new calls.
    let turn = ev.iter().find(|e| e["type"] == "turn_started").unwrap();
    assert_eq!(turn["turn"], 2);
    assert_eq!(
        ev.iter()
            .filter(|e| e["type"] == "tool_call_created")
            .count(),
        5
    );

    // The new log names the old one, and the index links them.
    let new = home.other_than(&a, &id);
    assert_eq!(new["continues"], old_log.as_str());
    let show = home.ok(&["sessions", "show", &id], &a);
    assert!(
        show.contains(&format!("continued  in {}", new["id"].as_str().unwrap())),
        "{show}"
    );
    // The first prompt carried the earlier session as an embedded Markdown resource.
    let log = std::fs::read_to_string(new["path"].as_str().unwrap()).unwrap();
    let prompt = log
        .lines()
        .find(|l| l.contains("\"session/prompt\""))
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(prompt).unwrap();
    let blocks = v["msg"]["params"]["prompt"].as_array().unwrap();
    assert_eq!(blocks[0]["text"], "go on");
    assert_eq!(blocks[1]["type"], "resource");
    assert_eq!(blocks[1]["resource"]["mimeType"], "text/markdown");
    let md = blocks[1]["resource"]["text"].as_str().unwrap();
    assert!(md.contains("> the first prompt"), "{md}");
    assert!(md.contains("<summary>✓ read · Read README.md"), "{md}");
}

#[test]
fn resume_reloads_an_agent_that_can_and_does_not_show_its_replay_twice() {
    let home = Home::new();
    let a = home.project("alpha");
    let first = home.first_session(&a);
    let (id, acp) = (first.str("id"), first.str("acp_id"));
    let out = home.resume(&a, &id, &["--agent", "trellis agent demo --load-session"]);
    let ev = events(&out);
    let started = ev.iter().find(|e| e["type"] == "session_started").unwrap();
    assert_eq!(started["load_session"], true);
    assert_eq!(started["session"], acp.as_str(), "the same ACP session");
    // The history the agent replayed is in the log, not shown again (nor indexed again).
    assert!(!out.contains("(replayed)"), "{out}");
    let new = home.other_than(&a, &id);
    let log = std::fs::read_to_string(new["path"].as_str().unwrap()).unwrap();
    assert_eq!(log.matches("(replayed)").count(), 2);
    assert!(
        home.json(&["sessions", "search", "replayed", "--json"], &a)
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(log.contains("\"method\":\"session/load\""));
}

#[test]
fn resume_prefers_session_resume_when_the_agent_advertises_it() {
    let home = Home::new();
    let a = home.project("alpha");
    let first = home.first_session(&a);
    let (id, acp) = (first.str("id"), first.str("acp_id"));
    let out = home.resume(
        &a,
        &id,
        &[
            "--agent",
            "trellis agent demo --load-session --resume-session",
        ],
    );
    let ev = events(&out);
    let started = ev.iter().find(|e| e["type"] == "session_started").unwrap();
    assert_eq!(started["session"], acp.as_str(), "the same ACP session");
    let new = home.other_than(&a, &id);
    let log = std::fs::read_to_string(new["path"].as_str().unwrap()).unwrap();
    assert!(log.contains("\"method\":\"session/resume\""), "{log}");
    assert!(!log.contains("\"method\":\"session/load\""));
    assert_eq!(ev.iter().filter(|e| e["type"] == "turn_ended").count(), 1);
}

/// `trellis sessions resume ID` in the UI: the earlier transcript above a divider, then
/// new turns below it.
#[test]
fn resume_in_the_ui_shows_the_history_above_a_divider() {
    let home = Home::new();
    let a = home.project("alpha");
    let id = home.first_session(&a).str("id");
    let data = format!("XDG_DATA_HOME={}", home.path().join("data").display());
    let config = format!("XDG_CONFIG_HOME={}", home.path().join("config").display());
    let Some(t) = crate::tui::Tmux::start_env(
        &[&data, &config],
        &["sessions", "resume", &id, "--permission", "allow-once"],
        150,
        80,
    ) else {
        return;
    };
    let s = t.wait_for(&format!("resumed session {id}"));
    assert!(s.contains("the first prompt"), "{s}");
    assert!(s.contains("Done: the TODO is fixed"), "{s}");
    let divider = s.find(&format!("resumed session {id}")).unwrap();
    assert!(s.find("Done: the TODO is fixed").unwrap() < divider, "{s}");
    t.wait_for("Enter send");
    t.send(&["and once more", "Enter"]);
    let s = t.wait("the new turn", |s| {
        s.matches("Done: the TODO is fixed").count() == 2
    });
    let divider = s.find(&format!("resumed session {id}")).unwrap();
    assert!(s.find("and once more").unwrap() > divider, "{s}");
}

/// The sessions picker in the real binary: `/sessions`, a word only in tool output,
/// Enter opens that session read-only on the call, `q` comes back; `/export html`.
#[test]
fn the_picker_finds_a_call_opens_it_and_the_session_exports_itself() {
    let home = Home::new();
    let a = home.project("alpha");
    home.demo(&a, "the first prompt");
    let data = format!("XDG_DATA_HOME={}", home.path().join("data").display());
    let config = format!("XDG_CONFIG_HOME={}", home.path().join("config").display());
    let Some(t) = crate::tui::Tmux::start_env(
        &[&data, &config],
        &[
            "demo",
            "--permission",
            "allow-once",
            "--cwd",
            a.to_str().unwrap(),
        ],
        140,
        45,
    ) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["/sessions", "Enter"]);
    t.wait_for("search ›");
    t.send(&["scratch"]);
    t.wait_for("turn 1 · output of read-1");
    t.send(&["Enter"]);
    let s = t.wait_for("Tool Result: Read README.md");
    assert!(s.contains("A scratch project"), "{s}");
    t.send(&["q"]);
    t.send(&["q"]);
    t.wait_for("search › scratch");
    t.send(&["Escape"]);
    t.send(&["fix it", "Enter"]);
    t.wait_for("Done: the TODO is fixed");
    t.send(&["/export html", "Enter"]);
    let s = t.wait_for("exported to");
    let file = std::fs::read_dir(&a)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "html"))
        .unwrap_or_else(|| panic!("no export in {}: {s}", a.display()));
    let html = std::fs::read_to_string(file).unwrap();
    assert!(
        html.contains("> fix it") || html.contains("fix it"),
        "{html}"
    );
    assert_eq!(html.matches("<details class=\"call").count(), 5);
}

/// `[session] system_prompt` and `additional_directories` reach the agent's
/// `session/new` when it advertises them (issue 12, item 6, in part), and the extra
/// directory is also one the agent may use through Trellis.
#[test]
fn session_config_sends_a_system_prompt_and_additional_directories() {
    let home = Home::new();
    let a = home.project("alpha");
    let extra = home.project("library");
    let conf = home.path().join("config/trellis/config.toml");
    std::fs::create_dir_all(conf.parent().unwrap()).unwrap();
    std::fs::write(
        &conf,
        "[session]\nsystem_prompt = \"Answer in French.\"\nsystem_prompt_mode = \"override\"\nadditional_directories = [\"../library\"]\n",
    )
    .unwrap();
    let o = home.trellis(
        &[
            "run",
            "--prompt",
            "hi",
            "--permission",
            "allow-once",
            "--cwd",
            a.to_str().unwrap(),
        ],
        &a,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = home.json(&["sessions", "list", "--json"], &a);
    let log = std::fs::read_to_string(rows[0]["path"].as_str().unwrap()).unwrap();
    let new = log.lines().find(|l| l.contains("\"session/new\"")).unwrap();
    let v: serde_json::Value = serde_json::from_str(new).unwrap();
    let params = &v["msg"]["params"];
    assert_eq!(
        params["additionalDirectories"],
        serde_json::json!([extra.to_str().unwrap()])
    );
    assert_eq!(params["systemPrompt"]["mode"], "override");
    assert_eq!(
        params["systemPrompt"]["content"][0]["text"],
        "Answer in French."
    );

    // An agent that does not take them: not sent, and said so.
    let o = home.trellis(
        &[
            "run",
            "--prompt",
            "hi",
            "--agent",
            "trellis agent hostile blank-lines",
            "--permission",
            "allow-once",
            "--cwd",
            a.to_str().unwrap(),
        ],
        &a,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("does not take a system prompt"), "{err}");
    assert!(
        err.contains("does not take additional directories"),
        "{err}"
    );
    // A directory that does not exist is a config error.
    std::fs::write(
        &conf,
        "[session]\nadditional_directories = [\"../missing\"]\n",
    )
    .unwrap();
    let o = home.trellis(&["run", "--prompt", "hi"], &a);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("[session] additional_directories"));
}

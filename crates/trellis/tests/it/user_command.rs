//! The user's own commands at the prompt (issue 48, item 10) in the real UI: `!cmd` runs
//! in the session's directory through Trellis's terminal, a card on the record marked as
//! the user's, in the log and the events; only `!!cmd` sends its output to the agent, with
//! the next prompt, bounded.

use crate::tui::Tmux;

/// The session's log once its first prompt went, and that prompt's line.
fn first_prompt(t: &Tmux) -> (String, String) {
    let sent = "\"method\":\"session/prompt\"";
    t.wait("the prompt sent", |_| t.log().contains(sent));
    let log = t.log();
    let prompt = log.lines().find(|l| l.contains(sent)).unwrap().to_string();
    (log, prompt)
}

#[test]
fn bang_runs_a_command_as_the_users_card_and_bang_bang_sends_its_output_next() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start_allowing(dir.path(), &["--agent", "demo"], 120, 40) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["!echo hello-from-me; ls /nonexistent-dir", "Enter"]);
    let s = t.wait_for("hello-from-me");
    assert!(
        s.contains("✗ » ! echo hello-from-me; ls /nonexistent-dir"),
        "a failed command's card, the user's: {s}"
    );
    // Nothing went to the agent.
    assert!(!t.log().contains("\"method\":\"session/prompt\""), "{s}");
    // In the session's directory.
    t.send(&["!pwd > where.txt", "Enter"]);
    t.wait("the file", |_| dir.path().join("where.txt").exists());
    t.send(&["!!printf 'one\\ntwo\\n'", "Enter"]);
    t.wait_for("its output goes with your next prompt");
    t.send(&["what did it print", "Enter"]);
    let (log, prompt) = first_prompt(&t);
    assert!(
        prompt.contains(
            r#"what did it print\n\nOutput of my command `printf 'one\\ntwo\\n'` (exit 0):\n```\none\ntwo\n```"#
        ),
        "{prompt}"
    );
    assert!(
        !prompt.contains("hello-from-me"),
        "only what !! sent: {prompt}"
    );
    // On the record: the user's card and its terminal.
    assert!(log.contains("\"type\":\"user_command\""), "{log}");
}

/// A command that never ends stops with `/stop` (its card says how it ended), and every
/// one stops with the session.
#[test]
fn stop_ends_the_users_commands_still_running() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start_allowing(dir.path(), &["--agent", "demo"], 120, 40) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["!sleep 1000", "Enter"]);
    t.wait_for("! sleep 1000");
    t.send(&["/stop", "Enter"]);
    t.wait_for("stopping 1 command(s) of yours");
    t.wait("its card to end", |s| s.contains("✗ » ! sleep 1000"));
    t.send(&["/stop", "Enter"]);
    t.wait_for("none of your commands is running");
}

/// Decided later (issue 48, item 10): `s` on the card of a command of the user's sends
/// that run's output with the next prompt, named under the prompt until then; `s` again
/// takes it back.
#[test]
fn s_on_the_users_card_sends_its_output_with_the_next_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start_allowing(dir.path(), &["--agent", "demo"], 120, 40) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["!echo alpha-out", "Enter"]);
    t.wait("its card to end", |s| s.contains("✓ » ! echo alpha-out"));
    // To the transcript: the cursor starts on the newest card, the user's.
    t.send(&["Escape"]);
    t.wait_for("transcript · j/k move");
    t.send(&["s"]);
    t.wait_for("with your next prompt, the output of `echo alpha-out`");
    t.send(&["s"]);
    t.wait_for("stays out of your next prompt");
    assert!(
        !t.screen().contains("with your next prompt, the output of"),
        "{}",
        t.screen()
    );
    t.send(&["s"]);
    t.wait_for("with your next prompt, the output of `echo alpha-out`");
    t.send(&["i"]);
    t.send(&["what did it say", "Enter"]);
    let (_, prompt) = first_prompt(&t);
    assert!(
        prompt.contains(
            r#"what did it say\n\nOutput of my command `echo alpha-out` (exit 0):\n```\nalpha-out\n```"#
        ),
        "{prompt}"
    );
    // Sent once: the prompt's line is gone from under the prompt.
    t.wait("the line under the prompt to go", |s| {
        !s.contains("with your next prompt, the output of")
    });
}

/// `!!cmd` is taken back by `s` on its card, and `s` never names it twice (a trial saw a
/// `!!` command listed twice under the prompt, and `s` unable to keep it out).
#[test]
fn s_takes_back_what_bang_bang_attached() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start_allowing(dir.path(), &["--agent", "demo"], 120, 40) else {
        return;
    };
    t.wait_for("Enter send");
    t.send(&["!!echo beta-out", "Enter"]);
    t.wait("its card to end", |s| s.contains("✓ » ! echo beta-out"));
    let s = t.wait_for("with your next prompt, the output of `echo beta-out` ");
    assert_eq!(s.matches("beta-out`").count(), 1, "{s}");
    t.send(&["Escape"]);
    t.wait_for("transcript · j/k move");
    t.send(&["s"]);
    t.wait_for("stays out of your next prompt");
    assert!(!t.screen().contains("with your next prompt, the output of"));
    t.send(&["i"]);
    t.send(&["nothing attached", "Enter"]);
    let (_, prompt) = first_prompt(&t);
    assert!(prompt.contains("nothing attached"), "{prompt}");
    assert!(!prompt.contains("beta-out"), "taken back: {prompt}");
}

//! `trellis completions SHELL` and `trellis man`: generated from the clap definitions, so
//! they name every command and option the binary takes.

use std::process::Command;

fn out(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn completion_scripts_name_the_commands_and_options() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let s = out(&["completions", shell]);
        for word in ["replay", "plugin", "validate", "strict", "permission"] {
            assert!(s.contains(word), "{shell} lacks {word}");
        }
    }
    // The bash script is valid bash.
    let script = out(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trellis.bash");
    std::fs::write(&path, script).unwrap();
    let check = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn the_man_page_has_every_command_with_its_options() {
    let page = out(&["man"]);
    assert!(page.contains(".TH trellis 1"), "{page}");
    for section in [
        "TRELLIS RUN",
        "TRELLIS PLUGIN",
        "TRELLIS REPLAY",
        "TRELLIS MAN",
    ] {
        assert!(page.contains(&format!(".SH \"{section}\"")), "no {section}");
    }
    assert!(page.contains(r"\-\-strict"), "run's options are in it");
}

/// The options that start a session are offered by the commands that start one, and only
/// there: not in `approve`, `token new`, `worktree land`…; so clap never suggests one of
/// them for a mistyped flag elsewhere.
#[test]
fn session_options_belong_to_the_commands_that_start_sessions() {
    for cmd in [
        &["approve", "--help"][..],
        &["token", "new", "--help"],
        &["worktree", "land", "--help"],
        &["agent", "demo", "--help"],
        &["ls", "--help"],
    ] {
        let help = out(cmd);
        for opt in [
            "--agent",
            "--cwd",
            "--worktree",
            "--permission",
            "--plugin",
            "--allow-drive",
        ] {
            assert!(!help.contains(opt), "{cmd:?} offers {opt}: {help}");
        }
    }
    for cmd in [
        &["run", "--help"][..],
        &["fan", "--help"],
        &["demo", "--help"],
        &["sessions", "resume", "--help"],
        &["plugin", "try", "--help"],
    ] {
        let help = out(cmd);
        for opt in ["--agent", "--cwd", "--permission", "--plugin"] {
            assert!(help.contains(opt), "{cmd:?} lacks {opt}: {help}");
        }
    }
    let serve = out(&["serve", "--help"]);
    assert!(
        serve.contains("--permission") && !serve.contains("--agent"),
        "{serve}"
    );
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["stop", "--all"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("--allow-drive"), "{err}");
}

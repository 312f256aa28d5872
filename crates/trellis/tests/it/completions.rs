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

//! A plugin process cannot outlive a Trellis that is killed outright (SIGKILL: no code of
//! Trellis runs to stop it), even a plugin that ignores the end of its stdin.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::hostile::processes_with;
use crate::plugins::python;

#[test]
fn a_plugin_dies_with_a_killed_trellis() {
    if !python() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let marker = format!("trellis-stubborn-{}", std::process::id());
    let pkg = home.path().join("stubborn");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("plugin.json"),
        format!(
            r#"{{"$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json", "name": "stubborn",
            "extensions": {{"dev.trellis": {{"command": ["python3", "./plugin.py", "{marker}"], "capabilities": ["observe"]}}}}}}"#
        ),
    )
    .unwrap();
    // A non-daemon thread that never ends: the interpreter stays after stdin's end.
    let started = home.path().join("started");
    std::fs::write(
        pkg.join("plugin.py"),
        format!(
            "import threading, time\n\
             threading.Thread(target=lambda: time.sleep(3600)).start()\n\
             open({:?}, 'w').close()\n\
             from trellis_plugin import Plugin\nPlugin().run()\n",
            started.to_str().unwrap()
        ),
    )
    .unwrap();
    let exe = env!("CARGO_BIN_EXE_trellis");
    let agent = format!("{exe} agent demo --calls 2000000 --lines 1");
    let mut trellis = Command::new(exe)
        .args(["run", "--prompt", "load", "--permission", "allow-once"])
        .args(["--agent", &agent, "--plugin", pkg.to_str().unwrap()])
        .arg("--cwd")
        .arg(home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !started.exists() || processes_with(&marker).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the plugin never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    trellis.kill().unwrap();
    trellis.wait().unwrap();
    let start = Instant::now();
    while !processes_with(&marker).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "outlived Trellis: {:?}",
            processes_with(&marker)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

//! What a stalled attachment costs a session: a hub (`trellis serve`) runs the demo's
//! 200 000-call load, alone or followed by an attachment that asks to watch it and then
//! never reads, alternating, in one sitting. The figure is the time from starting the
//! session to its turn's end (seen through `trellis ls`); the hub must not wait for the
//! follower (it pushes the latest progress only, and drops one that stops reading).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CALLS: usize = 200_000;

struct Hub {
    child: Child,
    dirs: tempfile::TempDir,
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

impl Hub {
    fn start() -> Hub {
        let dirs = tempfile::tempdir().unwrap();
        for d in ["run", "data", "w"] {
            std::fs::create_dir_all(dirs.path().join(d)).unwrap();
        }
        let mut hub = Hub {
            child: Command::new(env!("CARGO_BIN_EXE_trellis"))
                .args(["serve", "--name", "bench"])
                .envs(Hub::env_of(dirs.path()))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
            dirs,
        };
        let until = Instant::now() + Duration::from_secs(10);
        while !hub.dirs.path().join("run/trellis/bench.sock").exists() {
            assert!(Instant::now() < until, "the hub did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        hub.child.try_wait().unwrap();
        hub
    }

    fn env_of(root: &std::path::Path) -> Vec<(String, String)> {
        vec![
            (
                "XDG_RUNTIME_DIR".into(),
                root.join("run").display().to_string(),
            ),
            (
                "XDG_DATA_HOME".into(),
                root.join("data").display().to_string(),
            ),
            (
                "XDG_CONFIG_HOME".into(),
                root.join("config").display().to_string(),
            ),
        ]
    }

    fn trellis(&self, args: &[&str]) -> String {
        let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(args)
            .envs(Hub::env_of(self.dirs.path()))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// One session of the load: seconds from its start to its turn's end.
    fn one(&self, stalled: bool) -> f64 {
        let exe = env!("CARGO_BIN_EXE_trellis");
        let agent = format!("{exe} agent demo --calls {CALLS} --lines 20");
        let work = self.dirs.path().join("w");
        let start = Instant::now();
        let key = self.trellis(&[
            "run",
            "--detach",
            "--hub",
            "bench",
            "--agent",
            &agent,
            "--cwd",
            work.to_str().unwrap(),
            "--prompt",
            "load",
        ]);
        let key: u32 = key.trim().rsplit(':').next().unwrap().parse().unwrap();
        // A follower that asks and then never reads a byte.
        let _stalled = stalled.then(|| {
            let mut s = std::os::unix::net::UnixStream::connect(
                self.dirs.path().join("run/trellis/bench.sock"),
            )
            .unwrap();
            writeln!(
                s,
                r#"{{"id":1,"op":"watch","session":{key},"observe":true}}"#
            )
            .unwrap();
            s
        });
        loop {
            let rows = self.trellis(&["ls", "--json"]);
            let done = rows.lines().any(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["key"] == key && v["state"] == "done"
            });
            if done {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(120));
            std::thread::sleep(Duration::from_millis(20));
        }
        let took = start.elapsed().as_secs_f64();
        self.trellis(&["stop", &format!("bench:{key}")]);
        took
    }
}

fn main() {
    let hub = Hub::start();
    let (mut alone, mut followed) = (Vec::new(), Vec::new());
    for _ in 0..8 {
        alone.push(hub.one(false));
        followed.push(hub.one(true));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (a, f) = (median(&mut alone), median(&mut followed));
    eprintln!(
        "attach: a {CALLS}-call session in a hub, start to turn end: alone {a:.2} s, with a stalled follower {f:.2} s ({:.3}×); runs alone {alone:.2?}, followed {followed:.2?}",
        f / a
    );
}

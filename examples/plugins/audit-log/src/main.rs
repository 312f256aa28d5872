//! The audit logger: every tool call of the session, once it has ended (or its turn has),
//! with the per-call state extensions kept about it, appended as one JSON line to
//! `$PLUGIN_DATA/audit.jsonl` (or `[extensions.audit-log.options] path = "…"`).
//!
//! Build it (`cargo build --release -p audit-log`) and put the binary next to
//! `plugin.json` in the package (`command: ["./audit-log"]`).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use trellis_plugin_sdk::{Host, Init, Plugin, Registration, Value, json, run};

#[derive(Default)]
struct Audit {
    path: Option<std::path::PathBuf>,
    file: Option<std::fs::File>,
    /// The latest snapshot of every call not written yet.
    open: HashMap<String, Value>,
    /// Per call: extension → its state.
    state: HashMap<String, BTreeMap<String, Value>>,
}

fn terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

impl Audit {
    fn write(&mut self, t: f64, session: &Value, call: &Value) -> Result<(), String> {
        let id = call["id"].as_str().unwrap_or_default().to_string();
        let state = self.state.remove(&id).unwrap_or_default();
        let line = json!({
            "t": t,
            "session": session,
            "id": id,
            "title": call["title"],
            "kind": call["kind"],
            "status": call["status"],
            "input": call.get("raw_input").cloned().unwrap_or(Value::Null),
            "locations": call["locations"],
            "status_history": call["status_history"],
            "state": state,
        });
        let Some(f) = self.file.as_mut() else {
            return Err("the audit log is not open".into());
        };
        writeln!(f, "{line}").map_err(|e| format!("cannot write the audit log: {e}"))
    }
}

impl Plugin for Audit {
    fn registration(&mut self, init: &Init) -> Registration {
        self.path = init
            .options
            .get("path")
            .and_then(Value::as_str)
            .map(std::path::PathBuf::from)
            .or_else(|| {
                std::env::var_os("PLUGIN_DATA")
                    .map(|d| std::path::Path::new(&d).join("audit.jsonl"))
            });
        Registration {
            subscriptions: Some(
                [
                    "tool_call_created",
                    "tool_call_updated",
                    "call_state",
                    "turn_ended",
                ]
                .map(String::from)
                .to_vec(),
            ),
            ..Registration::default()
        }
    }

    fn on_start(&mut self, host: &mut Host) -> Result<(), String> {
        let Some(path) = &self.path else {
            let _ = host.report(
                "path",
                "no PLUGIN_DATA and no path option: nothing is logged",
            );
            return Ok(());
        };
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            Ok(f) => self.file = Some(f),
            Err(e) => {
                let _ = host.report("path", &format!("{}: {e}", path.display()));
            }
        }
        Ok(())
    }

    fn on_event(&mut self, event: &Value, _host: &mut Host) -> Result<(), String> {
        let t = event["t"].as_f64().unwrap_or_default();
        match event["type"].as_str().unwrap_or_default() {
            "tool_call_created" | "tool_call_updated" => {
                let call = &event["call"];
                let id = call["id"].as_str().unwrap_or_default().to_string();
                if terminal(call["status"].as_str().unwrap_or_default()) {
                    self.open.remove(&id);
                    self.write(t, &event["session"], call)?;
                } else {
                    self.open.insert(id, call.clone());
                }
            }
            "call_state" => {
                let id = event["call_id"].as_str().unwrap_or_default().to_string();
                let ext = event["extension"].as_str().unwrap_or_default().to_string();
                self.state
                    .entry(id)
                    .or_default()
                    .insert(ext, event["value"].clone());
            }
            "turn_ended" => {
                // Calls the turn left open are logged as they stand.
                let open: Vec<Value> = self.open.drain().map(|(_, c)| c).collect();
                for c in open {
                    self.write(t, &event["session"], &c)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

fn main() -> std::io::Result<()> {
    run(Audit::default())
}

//! What the demo asks of the client, or does itself where the client offers nothing: a
//! file read or written (`fs/…`), a command run in a terminal (`terminal/…`).

use serde_json::json;

use super::Demo;
use crate::peer::PeerError;

impl Demo {
    pub(super) fn read_file(&mut self, path: &str) -> Result<String, PeerError> {
        if self.caps.read {
            let sid = self.session_id.clone();
            let r = self
                .peer
                .request("fs/read_text_file", json!({"sessionId": sid, "path": path}))?;
            Ok(r["content"].as_str().unwrap_or_default().to_string())
        } else {
            Ok(std::fs::read_to_string(path).unwrap_or_default())
        }
    }

    pub(super) fn write_file(&mut self, path: &str, content: &str) -> Result<(), PeerError> {
        if self.caps.write {
            let sid = self.session_id.clone();
            self.peer.request(
                "fs/write_text_file",
                json!({"sessionId": sid, "path": path, "content": content}),
            )?;
        } else {
            std::fs::write(path, content).map_err(PeerError::Io)?;
        }
        Ok(())
    }

    /// Runs `command` through the client's terminal (or locally); returns (output, exit code).
    pub(super) fn run_command(
        &mut self,
        call_id: &str,
        command: &str,
    ) -> Result<(String, i64), PeerError> {
        let cwd = self.workspace.to_string_lossy().into_owned();
        if !self.caps.terminal {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(command)
                .current_dir(&cwd)
                .output()
                .map_err(PeerError::Io)?;
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            return Ok((text, out.status.code().unwrap_or(-1) as i64));
        }
        let sid = self.session_id.clone();
        let created = self.peer.request(
            "terminal/create",
            json!({"sessionId": sid, "command": command, "cwd": cwd, "outputByteLimit": 65536}),
        )?;
        let tid = created["terminalId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        self.call_update(
            call_id,
            json!({"status": "in_progress", "content": [{"type": "terminal", "terminalId": tid}]}),
        )?;
        let exit = self.peer.request(
            "terminal/wait_for_exit",
            json!({"sessionId": sid, "terminalId": tid}),
        )?;
        let out = self.peer.request(
            "terminal/output",
            json!({"sessionId": sid, "terminalId": tid}),
        )?;
        self.peer.request(
            "terminal/release",
            json!({"sessionId": sid, "terminalId": tid}),
        )?;
        let code = exit["exitCode"].as_i64().unwrap_or(-1);
        Ok((out["output"].as_str().unwrap_or_default().to_string(), code))
    }
}

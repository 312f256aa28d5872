//! What the headless run and the UI share: the log sink and the permission policy.

use std::path::PathBuf;

use anyhow::Context;
use trellis_acp::LogSink;
use trellis_core::permission::{Policy, Verdict};
use trellis_store::{Config, LogWriter};

pub struct FileSink(pub LogWriter);

impl LogSink for FileSink {
    fn append(&mut self, line: &str) -> std::io::Result<()> {
        self.0.append(line)
    }
    fn sync(&mut self) -> std::io::Result<()> {
        self.0.sync()
    }
}

/// The policy named by `--permission` (or the config); the flag says whether one was given.
pub fn policy_from(arg: Option<&str>, config: &Config) -> anyhow::Result<(Policy, bool)> {
    let from_config = config.permissions.policy.as_deref();
    let name = arg.or(from_config);
    let explicit = name.is_some();
    let policy = match name.unwrap_or("reject") {
        "reject" => Policy::Reject,
        "allow-once" => Policy::AllowOnce,
        "allow-reads" => Policy::AllowReads,
        "rules" if arg.is_none() => Policy::Rules {
            rules: config.permissions.rules.clone(),
            fallback: config.permissions.fallback.unwrap_or(Verdict::Reject),
        },
        path => {
            let path = PathBuf::from(path);
            let text = std::fs::read_to_string(&path).with_context(|| {
                format!("--permission {}: not a policy (reject, allow-once, allow-reads) nor a readable rules file", path.display())
            })?;
            let file: trellis_store::config::RulesFile =
                trellis_store::config::parse_toml(&text, &path)?;
            Policy::Rules {
                rules: file.rules,
                fallback: file.fallback.unwrap_or(Verdict::Reject),
            }
        }
    };
    Ok((policy, explicit))
}

/// The first record of a session log: who, where, which Trellis, when.
pub fn record_header(handle: &trellis_acp::Handle, agent: &str, cwd: &str) {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default();
    handle
        .recorder()
        .local(trellis_core::LocalRecord::SessionLog {
            schema: trellis_core::SCHEMA_VERSION,
            agent: agent.to_string(),
            cwd: cwd.to_string(),
            trellis: env!("CARGO_PKG_VERSION").into(),
            started,
        });
}

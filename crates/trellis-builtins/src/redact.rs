//! G4 — redaction: a display transform that hides common secret shapes in tool output
//! (API keys, bearer tokens, private key blocks, `password=…` assignments). Display only:
//! the ledger, the log and the inspector's "original" toggle keep the real text. The
//! transform is declarative (rewrites the host runs at frame time); [`Redact::redact`]
//! applies the same shapes in-process for exports and tests.

use regex::Regex;
use trellis_core::ext::{
    Capability, ExtError, Extension, Host, Manifest, Registration, Rewrite, SettingsRow,
    TransformDecl, UiAction,
};

/// What replaces a secret.
pub const MASK: &str = "‹redacted›";

pub struct Redact {
    patterns: Vec<Regex>,
    /// Every pattern's source, built-in then from the options (the host runs them).
    sources: Vec<String>,
    on: bool,
}

impl std::fmt::Debug for Redact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redact").field("on", &self.on).finish()
    }
}

/// The shapes recognised, most specific first. A pattern's first group, when it has
/// one, is kept (so `Authorization: Bearer` stays readable and only the token goes).
const PATTERNS: &[&str] = &[
    r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
    r"(?i)(bearer\s+)[A-Za-z0-9\-._~+/]{16,}=*",
    r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}",
    r"\bgh[pousr]_[A-Za-z0-9]{36,}",
    r"\bgithub_pat_[A-Za-z0-9_]{40,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bAIza[0-9A-Za-z_\-]{35}",
    r"\bxox[baprs]-[A-Za-z0-9\-]{10,}",
    r"\bglpat-[A-Za-z0-9_\-]{20,}",
    r#"(?i)((?:api[_-]?key|secret|token|passw(?:or)?d)["']?\s*[:=]\s*["']?)[^\s"']{8,}"#,
];

impl Default for Redact {
    fn default() -> Redact {
        Redact {
            patterns: PATTERNS.iter().filter_map(|p| Regex::new(p).ok()).collect(),
            sources: PATTERNS.iter().map(|p| p.to_string()).collect(),
            on: true,
        }
    }
}

impl Redact {
    /// `text` with every secret shape replaced; `None` when nothing matched.
    pub fn redact(&self, text: &str) -> Option<String> {
        let mut cur: Option<String> = None;
        for re in &self.patterns {
            let src = cur.as_deref().unwrap_or(text);
            if !re.is_match(src) {
                continue;
            }
            let next = re
                .replace_all(src, |c: &regex::Captures<'_>| match c.get(1) {
                    Some(keep) => format!("{}{MASK}", keep.as_str()),
                    None => MASK.to_string(),
                })
                .into_owned();
            cur = Some(next);
        }
        cur
    }
}

impl Extension for Redact {
    fn manifest(&self) -> Manifest {
        Manifest {
            name: "redact".into(),
            version: crate::version(),
            description: "Hides API keys, bearer tokens and private keys in displayed output."
                .into(),
            capabilities: vec![Capability::Ui, Capability::Store],
            ui_only: true,
        }
    }

    fn register(&mut self, host: &mut dyn Host) -> Result<Registration, ExtError> {
        if let Ok(Some(v)) = host.store_get("enabled") {
            self.on = v.as_bool().unwrap_or(true);
        }
        // Extra shapes from the config: `[extensions.redact.options] patterns = ["…"]`.
        if let Some(list) = host.options().get("patterns") {
            let items = list.as_array().cloned().unwrap_or_default();
            if !list.is_array() {
                host.report("option patterns", "must be a list of regular expressions");
            }
            for p in items {
                match p.as_str().map(|s| (s, Regex::new(s))) {
                    Some((src, Ok(re))) => {
                        self.patterns.push(re);
                        self.sources.push(src.to_string());
                    }
                    Some((_, Err(e))) => host.report("option patterns", &format!("{p}: {e}")),
                    None => host.report("option patterns", &format!("{p} is not a string")),
                }
            }
        }
        host.set_settings(self.settings())?;
        Ok(Registration {
            subscriptions: Some(Vec::new()),
            transforms: vec![TransformDecl {
                id: "secrets".into(),
                label: "Redact secrets".into(),
                rewrites: Some(self.rewrites()),
            }],
            ..Registration::default()
        })
    }

    fn on_action(&mut self, action: &UiAction, host: &mut dyn Host) -> Result<(), ExtError> {
        if let UiAction::Setting { row, choice } = action
            && row == "enabled"
        {
            self.on = choice == "on";
            host.store_put("enabled", Some(self.on.into()))?;
            host.set_transform("secrets", self.rewrites())?;
            host.set_settings(self.settings())?;
        }
        Ok(())
    }
}

impl Redact {
    /// The transform as the host runs it: each shape becomes the mask, keeping the
    /// pattern's first group when it has one (`${1}` is empty otherwise).
    fn rewrites(&self) -> Vec<Rewrite> {
        if !self.on {
            return Vec::new();
        }
        self.sources
            .iter()
            .map(|p| Rewrite::new(p.clone(), format!("${{1}}{MASK}")))
            .collect()
    }

    fn settings(&self) -> Vec<SettingsRow> {
        vec![SettingsRow {
            page: "Redaction".into(),
            id: "enabled".into(),
            label: "Hide secrets".into(),
            choices: vec![("on".into(), "on".into()), ("off".into(), "off".into())],
            current: if self.on { "on" } else { "off" }.into(),
        }]
    }
}

#[cfg(test)]
mod tests {
    /// Every shape compiles with the features this build has (a case-insensitive one
    /// needs `unicode-case`: without it two shapes were dropped, silently, when the crate
    /// was built alone).
    #[test]
    fn every_shape_compiles() {
        assert_eq!(
            super::Redact::default().patterns.len(),
            super::PATTERNS.len()
        );
    }

    use super::*;

    #[test]
    fn hides_common_secret_shapes_and_keeps_the_rest() {
        let r = Redact::default();
        let text = "ok\nOPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx\n\
                    Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig\n\
                    aws AKIAABCDEFGHIJKLMNOP done\n\
                    -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n\
                    password: hunter2hunter2\n";
        let out = r.redact(text).unwrap();
        for secret in [
            "sk-proj-abc",
            "eyJhbGci",
            "AKIAABCD",
            "b3BlbnNzaC1rZXk",
            "hunter2",
        ] {
            assert!(!out.contains(secret), "{secret} leaked in {out}");
        }
        assert!(out.contains("Authorization: Bearer ‹redacted›"), "{out}");
        assert!(out.starts_with("ok\n"));
        assert_eq!(r.redact("nothing to see here"), None);
    }
}

//! Tokens for the hub's loopback listener (`trellis token new|list|revoke`, `trellis
//! pair`): 256 random bits each, shown once and stored only as their SHA-256, with a
//! label, scopes and an expiry. The store is one JSON file of this user's (0600), changed
//! under a lock and replaced whole (a file created exclusively, then renamed), so several
//! Trellis processes never corrupt it; a hub reads it on every request, so a revocation
//! takes effect at once.

use std::io;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::Digest;
use subtle::ConstantTimeEq;

/// What a token may do. `admin` may do everything; `approve` and `prompt` may read;
/// `agent` may open a connection to an agent `trellis agent serve` serves (and nothing
/// of a hub's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Read,
    Prompt,
    Approve,
    Admin,
    Agent,
}

impl Scope {
    pub fn parse(s: &str) -> Option<Scope> {
        Some(match s {
            "read" => Scope::Read,
            "prompt" => Scope::Prompt,
            "approve" => Scope::Approve,
            "admin" => Scope::Admin,
            "agent" => Scope::Agent,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Prompt => "prompt",
            Scope::Approve => "approve",
            Scope::Admin => "admin",
            Scope::Agent => "agent",
        }
    }
}

/// A stored token (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token {
    /// A short public id (to revoke it by).
    pub id: String,
    pub label: String,
    /// SHA-256 of the secret, hex.
    pub hash: String,
    pub scopes: Vec<Scope>,
    /// Unix seconds.
    pub created: u64,
    /// Unix seconds; `None`: until revoked.
    pub expires: Option<u64>,
}

impl Token {
    /// Whether it grants `want`.
    pub fn grants(&self, want: Scope) -> bool {
        self.scopes.iter().any(|&s| {
            s == want
                || s == Scope::Admin
                || (want == Scope::Read && matches!(s, Scope::Approve | Scope::Prompt))
        })
    }
}

/// Why a presented token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    Unknown,
    Expired,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    tokens: Vec<Token>,
}

/// Longest store read (a store is a few hundred bytes per token).
const STORE_LIMIT: u64 = 1 << 20;

/// The token store at a path (usually `$XDG_DATA_HOME/trellis/tokens.json`).
#[derive(Debug, Clone)]
pub struct Store {
    path: PathBuf,
}

pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `n` random bytes from the system's source.
pub fn random(n: usize) -> io::Result<Vec<u8>> {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).map_err(|e| io::Error::other(format!("no random source: {e}")))?;
    Ok(b)
}

fn sha256_hex(s: &str) -> String {
    sha2::Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Store {
    pub fn new(path: PathBuf) -> Store {
        Store { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> io::Result<File> {
        use std::io::Read;
        let f = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags_nofollow()
            .open(&self.path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(File::default()),
            Err(e) => return Err(e),
        };
        if !f.metadata()?.is_file() {
            return Err(io::Error::other(format!(
                "{}: not a regular file",
                self.path.display()
            )));
        }
        let mut text = String::new();
        f.take(STORE_LIMIT).read_to_string(&mut text)?;
        serde_json::from_str(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", self.path.display()),
            )
        })
    }

    /// Changes the store under its lock, replacing the file whole.
    fn change<T>(&self, f: impl FnOnce(&mut File) -> T) -> io::Result<T> {
        let dir = self
            .path
            .parent()
            .ok_or_else(|| io::Error::other("a token store needs a directory"))?;
        std::fs::create_dir_all(dir)?;
        let lock = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags_nofollow()
            .open(self.path.with_extension("lock"))?;
        lock.lock()?;
        let mut file = self.read()?;
        let out = f(&mut file);
        let mut tmp = tempfile::Builder::new()
            .prefix(".tokens")
            .tempfile_in(dir)?;
        serde_json::to_writer_pretty(tmp.as_file_mut(), &file)?;
        tmp.as_file().sync_all()?;
        tmp.persist(&self.path).map_err(|e| e.error)?;
        Ok(out)
    }

    /// Makes a token: the record, and the secret (shown once, stored nowhere).
    pub fn mint(
        &self,
        label: &str,
        scopes: &[Scope],
        ttl: Option<std::time::Duration>,
    ) -> io::Result<(Token, String)> {
        let secret = format!(
            "trl_{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random(32)?)
        );
        let id: String = random(4)?.iter().map(|b| format!("{b:02x}")).collect();
        let created = now();
        let token = Token {
            id,
            label: label.to_string(),
            hash: sha256_hex(&secret),
            scopes: scopes.to_vec(),
            created,
            expires: ttl.map(|t| created + t.as_secs()),
        };
        let record = token.clone();
        self.change(|f| {
            // Expired tokens leave the store as new ones come.
            f.tokens.retain(|t| t.expires.is_none_or(|e| e > created));
            f.tokens.push(record);
        })?;
        Ok((token, secret))
    }

    pub fn list(&self) -> io::Result<Vec<Token>> {
        Ok(self.read()?.tokens)
    }

    /// Removes the tokens with this id or label; how many went.
    pub fn revoke(&self, id_or_label: &str) -> io::Result<usize> {
        self.change(|f| {
            let before = f.tokens.len();
            f.tokens
                .retain(|t| t.id != id_or_label && t.label != id_or_label);
            before - f.tokens.len()
        })
    }

    /// The token `secret` is, if it is a live one. Every stored hash is compared, each in
    /// constant time, so the time taken says nothing about which one nearly matched.
    pub fn check(&self, secret: &str) -> io::Result<Result<Token, Refused>> {
        let hash = sha256_hex(secret.trim());
        let mut found = None;
        for t in self.read()?.tokens {
            if bool::from(t.hash.as_bytes().ct_eq(hash.as_bytes())) {
                found = Some(t);
            }
        }
        Ok(match found {
            None => Err(Refused::Unknown),
            Some(t) if t.expires.is_some_and(|e| e <= now()) => Err(Refused::Expired),
            Some(t) => Ok(t),
        })
    }
}

/// Opening without following a link at the last component.
trait NoFollow {
    fn custom_flags_nofollow(&mut self) -> &mut Self;
}

impl NoFollow for std::fs::OpenOptions {
    fn custom_flags_nofollow(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(0o600)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_token_is_shown_once_stored_hashed_checked_and_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("tokens.json"));
        let (t, secret) = store
            .mint(
                "phone",
                &[Scope::Approve],
                Some(std::time::Duration::from_secs(60)),
            )
            .unwrap();
        let stored = std::fs::read_to_string(store.path()).unwrap();
        assert!(!stored.contains(&secret[4..]), "the secret is not stored");
        assert!(stored.contains(&t.hash));
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0);
        }
        let got = store.check(&secret).unwrap().unwrap();
        assert!(got.grants(Scope::Approve) && got.grants(Scope::Read));
        assert!(!got.grants(Scope::Prompt) && !got.grants(Scope::Admin));
        assert_eq!(store.check("trl_wrong").unwrap(), Err(Refused::Unknown));
        let (_, old) = store
            .mint("old", &[Scope::Read], Some(std::time::Duration::ZERO))
            .unwrap();
        assert_eq!(store.check(&old).unwrap(), Err(Refused::Expired));
        assert_eq!(store.revoke("phone").unwrap(), 1);
        assert_eq!(store.check(&secret).unwrap(), Err(Refused::Unknown));
        // A link planted where the store is, is not followed.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "{\"tokens\": []}").unwrap();
        let linked = Store::new(dir.path().join("linked.json"));
        std::os::unix::fs::symlink(&elsewhere, linked.path()).unwrap();
        assert!(linked.list().is_err());
    }
}

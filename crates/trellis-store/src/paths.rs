//! Where Trellis keeps its files (XDG base directories on Linux).

use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct Paths {
    pub config_dir: PathBuf,
    pub data_dir: PathBuf,
}

impl Paths {
    /// The user's directories (`$XDG_CONFIG_HOME/trellis`, `$XDG_DATA_HOME/trellis`).
    pub fn from_env() -> Option<Paths> {
        let dirs = directories::ProjectDirs::from("", "", "trellis")?;
        Some(Paths {
            config_dir: dirs.config_dir().to_path_buf(),
            data_dir: dirs.data_dir().to_path_buf(),
        })
    }

    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("config.toml")
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.data_dir.join("sessions")
    }
}

/// `~/…` from the home directory.
pub fn expand_home(path: &std::path::Path) -> std::path::PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => std::path::PathBuf::from(home).join(rest),
        _ => path.to_path_buf(),
    }
}

/// At most `cap` bytes from the start of the regular file at `path`, and whether the file
/// held more. A FIFO or a device where a file is expected (named by mistake, or put there)
/// is refused at once rather than waited on or read without end.
pub fn read_regular(path: &std::path::Path, cap: u64) -> std::io::Result<(Vec<u8>, bool)> {
    use std::io::Read;
    let Some(file) = trellis_os::fd::open_regular(path)? else {
        return Err(std::io::Error::other("not a regular file"));
    };
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    let more = bytes.len() as u64 > cap;
    bytes.truncate(usize::try_from(cap).unwrap_or(usize::MAX).min(bytes.len()));
    Ok((bytes, more))
}

/// The regular file at `path` as text: refused when it holds more than `cap` bytes (what
/// such a file never does: a config, a rules file, a log to replay) or is not UTF-8 text.
pub fn read_text(path: &std::path::Path, cap: u64) -> std::io::Result<String> {
    let (bytes, more) = read_regular(path, cap)?;
    if more {
        let size = match cap {
            c if c >= 1 << 20 => format!("{} MiB", c >> 20),
            c if c >= 1 << 10 => format!("{} KiB", c >> 10),
            c => format!("{c} bytes"),
        };
        return Err(std::io::Error::other(format!("larger than {size}")));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not UTF-8 text"))
}

/// The most of a log or a recorded session read whole (to replay it): far more than a
/// session's log, and a bound.
pub const LOG_CAP: u64 = 4 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_file_is_read_within_its_bound_and_anything_else_refused_at_once() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("rules.toml");
        std::fs::write(&f, "x = 1\n").unwrap();
        assert_eq!(read_text(&f, 6).unwrap(), "x = 1\n");
        assert_eq!(
            read_text(&f, 5).unwrap_err().to_string(),
            "larger than 5 bytes"
        );
        std::fs::write(&f, b"\xff\xfe").unwrap();
        assert_eq!(
            read_text(&f, 1 << 20).unwrap_err().to_string(),
            "not UTF-8 text"
        );
        // A FIFO (named by mistake, or put there) is refused, not waited on.
        let fifo = d.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert_eq!(
            read_text(&fifo, 1 << 20).unwrap_err().to_string(),
            "not a regular file"
        );
        assert_eq!(
            read_text(d.path(), 1 << 20).unwrap_err().to_string(),
            "not a regular file"
        );
    }
}

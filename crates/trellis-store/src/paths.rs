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

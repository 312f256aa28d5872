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

//! `fs/read_text_file` and `fs/write_text_file` on the local disk, confined to the
//! session's roots and safe against a hostile workspace.
//!
//! Invariants:
//! - Only regular files are read or replaced: a FIFO, device, socket or directory is
//!   refused without blocking (opened with `O_NONBLOCK`, checked with `fstat`).
//! - Nothing is opened through a symlink (`O_NOFOLLOW` on the resolved path), and every
//!   file opened or created is checked again, by its descriptor, to lie inside a root, so
//!   a link planted between the check and the open cannot redirect the access.
//! - Writes go to a temporary file created exclusively (`O_EXCL`, unpredictable name) in
//!   the target's directory, then renamed over the target: a reader never sees half a file
//!   and no pre-planted name is ever written through.
//! - Reads are bounded: at most [`READ_CAP`] bytes are served.

use std::io::{BufRead, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::roots::Roots;

/// Most bytes a read serves (a whole file or a line range).
pub const READ_CAP: u64 = 16 << 20;
/// Largest previous content read back to report in `file_written`.
const OLD_CAP: u64 = 1 << 20;

/// Why a file service failed, with the JSON-RPC code to answer.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error("file not found: {0}")]
    NotFound(String),
    #[error("{path} is not a regular file ({what}); only regular files are read or written")]
    NotRegular { path: String, what: &'static str },
    #[error("{path} is {size} bytes, more than the {} MiB a read serves; ask for a line range", READ_CAP >> 20)]
    TooLarge { path: String, size: u64 },
    #[error("{0} is not UTF-8 text")]
    NotText(String),
    #[error("{0}")]
    Outside(#[from] crate::roots::RootsError),
    #[error("{path} moved outside the session roots while it was being opened")]
    Raced { path: String },
    /// This system cannot tell where an open file is: refused rather than served
    /// unchecked.
    #[error("cannot verify that {path} is inside the session roots: {why}")]
    Unverified { path: String, why: String },
    #[error("cannot access {path}: {error}")]
    Io { path: String, error: std::io::Error },
}

impl FsError {
    /// The JSON-RPC error code for this failure.
    pub fn code(&self) -> i32 {
        match self {
            FsError::NotFound(_) => -32002,
            FsError::Outside(_)
            | FsError::NotRegular { .. }
            | FsError::Raced { .. }
            | FsError::Unverified { .. } => -32602,
            _ => -32603,
        }
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> FsError + '_ {
    move |error| match error.kind() {
        std::io::ErrorKind::NotFound => FsError::NotFound(path.display().to_string()),
        _ => FsError::Io {
            path: path.display().to_string(),
            error,
        },
    }
}

fn kind_of(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "not a file"
    }
}

/// Opens the regular file at `real` (already resolved and confined) without following a
/// link and without blocking, and checks by descriptor that it is still inside `roots`.
fn open_regular(roots: &Roots, shown: &Path, real: &Path) -> Result<std::fs::File, FsError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(real)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => FsError::NotRegular {
                path: shown.display().to_string(),
                what: "a symbolic link",
            },
            _ => io(shown)(e),
        })?;
    let meta = file.metadata().map_err(io(shown))?;
    if !meta.is_file() {
        return Err(FsError::NotRegular {
            path: shown.display().to_string(),
            what: kind_of(meta.file_type()),
        });
    }
    confined_fd(roots, shown, &file)?;
    Ok(file)
}

/// Checks where an open descriptor really points ([`trellis_os::fd::path_of`]). A system
/// that cannot say fails the check: the file is refused, never served unchecked.
fn confined_fd(roots: &Roots, shown: &Path, file: &std::fs::File) -> Result<(), FsError> {
    match trellis_os::fd::path_of(file) {
        Ok(at) if roots.contains(&at) => Ok(()),
        Ok(_) => Err(FsError::Raced {
            path: shown.display().to_string(),
        }),
        Err(e) => Err(FsError::Unverified {
            path: shown.display().to_string(),
            why: e.to_string(),
        }),
    }
}

/// Reads `path`, optionally from 1-based `line` for `limit` lines, at most [`READ_CAP`]
/// bytes.
pub fn read_text(
    roots: &Roots,
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<String, FsError> {
    let real = roots.check(path)?;
    let file = open_regular(roots, path, &real)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if line.is_none() && limit.is_none() {
        if size > READ_CAP {
            return Err(FsError::TooLarge {
                path: path.display().to_string(),
                size,
            });
        }
        let mut bytes = Vec::with_capacity(size as usize);
        file.take(READ_CAP + 1)
            .read_to_end(&mut bytes)
            .map_err(io(path))?;
        if bytes.len() as u64 > READ_CAP {
            return Err(FsError::TooLarge {
                path: path.display().to_string(),
                size: bytes.len() as u64,
            });
        }
        return String::from_utf8(bytes).map_err(|_| FsError::NotText(path.display().to_string()));
    }
    let skip = line.map(|l| l.saturating_sub(1) as usize).unwrap_or(0);
    let take = limit.map(|l| l as usize).unwrap_or(usize::MAX);
    let mut reader = std::io::BufReader::new(file);
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut n = 0usize;
    while n < skip.saturating_add(take) {
        buf.clear();
        let got = reader
            .by_ref()
            .take(READ_CAP + 1)
            .read_until(b'\n', &mut buf)
            .map_err(io(path))?;
        if got == 0 {
            break;
        }
        if n >= skip {
            out.extend_from_slice(&buf);
            if out.len() as u64 > READ_CAP {
                return Err(FsError::TooLarge {
                    path: path.display().to_string(),
                    size,
                });
            }
        }
        n += 1;
    }
    String::from_utf8(out).map_err(|_| FsError::NotText(path.display().to_string()))
}

/// Writes `content` to `path` atomically; returns the previous content if there was one
/// (and it was small enough to keep and text).
pub fn write_text(roots: &Roots, path: &Path, content: &str) -> Result<Option<String>, FsError> {
    write_text_said(roots, path, content).map(|(old, _)| old)
}

/// [`write_text`], also saying whether the file was there before (a rewind without git
/// removes a file the agent made, and leaves alone one whose old text was not kept).
pub fn write_text_said(
    roots: &Roots,
    path: &Path,
    content: &str,
) -> Result<(Option<String>, bool), FsError> {
    let real = roots.check(path)?;
    let old = match std::fs::symlink_metadata(&real) {
        Ok(meta) if meta.is_file() => {
            let file = open_regular(roots, path, &real)?;
            let mut bytes = Vec::new();
            let _ = file.take(OLD_CAP + 1).read_to_end(&mut bytes);
            Some((
                meta.permissions(),
                (bytes.len() as u64 <= OLD_CAP)
                    .then(|| String::from_utf8(bytes).ok())
                    .flatten(),
            ))
        }
        Ok(meta) => {
            return Err(FsError::NotRegular {
                path: path.display().to_string(),
                what: kind_of(meta.file_type()),
            });
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(path)(e)),
    };
    let parent = real.parent().unwrap_or(Path::new("/")).to_path_buf();
    std::fs::create_dir_all(&parent).map_err(io(path))?;
    // A directory created above may have been swapped for a link meanwhile: check again.
    let parent = confined_dir(roots, path, &parent)?;
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".trellis.tmp")
        .tempfile_in(&parent)
        .map_err(io(path))?;
    confined_fd(roots, path, tmp.as_file())?;
    tmp.write_all(content.as_bytes()).map_err(io(path))?;
    tmp.as_file().sync_data().map_err(io(path))?;
    if let Some((perms, _)) = &old {
        tmp.as_file()
            .set_permissions(perms.clone())
            .map_err(io(path))?;
    }
    tmp.persist(parent.join(&name))
        .map_err(|e| io(path)(e.error))?;
    let existed = old.is_some();
    Ok((old.and_then(|(_, text)| text), existed))
}

fn confined_dir(roots: &Roots, shown: &Path, dir: &Path) -> Result<PathBuf, FsError> {
    let real = std::fs::canonicalize(dir).map_err(io(shown))?;
    if roots.contains(&real) {
        Ok(real)
    } else {
        Err(FsError::Raced {
            path: shown.display().to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf, Roots) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let roots = Roots::new([root.clone()]);
        (dir, root, roots)
    }

    #[test]
    fn read_lines_and_write_atomically() {
        let (_d, root, roots) = setup();
        let p = root.join("a/b/c.txt");
        assert_eq!(write_text(&roots, &p, "1\n2\n3\n4\n").unwrap(), None);
        assert_eq!(read_text(&roots, &p, Some(2), Some(2)).unwrap(), "2\n3\n");
        assert_eq!(read_text(&roots, &p, None, Some(1)).unwrap(), "1\n");
        assert_eq!(
            write_text(&roots, &p, "new").unwrap().as_deref(),
            Some("1\n2\n3\n4\n")
        );
        assert_eq!(read_text(&roots, &p, None, None).unwrap(), "new");
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn fifos_devices_and_directories_are_refused_without_blocking() {
        let (_d, root, roots) = setup();
        let fifo = root.join("pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let e = read_text(&roots, &fifo, None, None).unwrap_err();
        assert!(
            matches!(e, FsError::NotRegular { what: "a FIFO", .. }),
            "{e}"
        );
        let e = write_text(&roots, &fifo, "x").unwrap_err();
        assert!(
            matches!(e, FsError::NotRegular { what: "a FIFO", .. }),
            "{e}"
        );
        let e = read_text(&roots, &root, None, None).unwrap_err();
        assert!(matches!(e, FsError::NotRegular { .. }), "{e}");
    }

    #[test]
    fn planted_temporary_names_are_never_written_through() {
        let (d, root, roots) = setup();
        let outside = d.path().join("outside.txt");
        std::fs::write(&outside, "untouched").unwrap();
        // The names an older Trellis used, planted for every pid.
        for pid in [std::process::id(), 1, 2] {
            std::os::unix::fs::symlink(&outside, root.join(format!(".f.txt.trellis-{pid}.tmp")))
                .unwrap();
        }
        write_text(&roots, &root.join("f.txt"), "content").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "untouched");
        let meta = std::fs::symlink_metadata(root.join("f.txt")).unwrap();
        assert!(meta.is_file());
        assert_eq!(
            std::fs::read_to_string(root.join("f.txt")).unwrap(),
            "content"
        );
    }

    #[test]
    fn reads_are_bounded() {
        let (_d, root, roots) = setup();
        let p = root.join("big.txt");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(READ_CAP + 10).unwrap();
        let e = read_text(&roots, &p, None, None).unwrap_err();
        assert!(matches!(e, FsError::TooLarge { .. }), "{e}");
    }
}

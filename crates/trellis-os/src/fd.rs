//! Where an open file really is, asked of its descriptor: a path checked before opening
//! may have been swapped for a link by the time it is opened.

use std::fs::File;
use std::io;
use std::path::PathBuf;

/// The path the kernel has for `file`. Linux: `/proc/self/fd`; macOS: `fcntl(F_GETPATH)`.
/// Elsewhere, or when the system cannot say (no `/proc` mounted), an error: a caller
/// checking containment must refuse the file, never skip the check.
pub fn path_of(file: &File) -> io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
    }
    #[cfg(target_vendor = "apple")]
    {
        use nix::fcntl::{FcntlArg, fcntl};
        let mut path = PathBuf::new();
        fcntl(file, FcntlArg::F_GETPATH(&mut path)).map_err(io::Error::from)?;
        Ok(path)
    }
    #[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
    {
        let _ = file;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this system cannot tell where an open file is",
        ))
    }
}

/// Opens `path` for reading if it is a regular file: `None` for anything else. A FIFO or
/// a device put where a file was expected is never waited on (opened without blocking,
/// then refused).
pub fn open_regular(path: &std::path::Path) -> io::Result<Option<File>> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = opts.open(path)?;
    Ok(file.metadata()?.is_file().then_some(file))
}

/// Which file `meta` is (device and inode on Unix; `(0, 0)` elsewhere): a file put in
/// another's place under the same name (an editor's save, `sed -i`) is another file.
pub fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0)
    }
}

/// Waits until `fd` can be read without blocking (data, end of file or an error to
/// report), at most `timeout` (whole milliseconds, at most 65 s): whether it can.
pub fn wait_readable(
    fd: std::os::fd::BorrowedFd<'_>,
    timeout: std::time::Duration,
) -> io::Result<bool> {
    use nix::poll::{PollFd, PollFlags, poll};
    let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    match poll(&mut fds, ms) {
        Ok(n) => Ok(n > 0),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// Asks for the pipe `fd` to hold `bytes` (Linux: `F_SETPIPE_SZ`, which rounds up to a
/// power of two of pages and refuses past `/proc/sys/fs/pipe-max-size` for an unprivileged
/// process): the size it holds now, or `None` where the system has no such setting or
/// refused it (the pipe then stays as it was; nothing depends on it but speed).
pub fn grow_pipe(fd: std::os::fd::BorrowedFd<'_>, bytes: usize) -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        use nix::fcntl::{FcntlArg, fcntl};
        let want = nix::libc::c_int::try_from(bytes).ok()?;
        fcntl(fd, FcntlArg::F_SETPIPE_SZ(want))
            .ok()
            .and_then(|n| usize::try_from(n).ok())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (fd, bytes);
        None
    }
}

/// The user on the other end of a connected Unix socket (Linux: `SO_PEERCRED`; macOS and
/// the BSDs: `getpeereid`). An error where the system cannot say: a caller checking who
/// it talks to must refuse the peer, never skip the check.
pub fn peer_uid(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<u32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
        Ok(getsockopt(&fd, PeerCredentials)
            .map_err(io::Error::from)?
            .uid())
    }
    #[cfg(any(
        target_vendor = "apple",
        target_os = "freebsd",
        target_os = "openbsd",
        target_os = "netbsd",
        target_os = "dragonfly"
    ))]
    {
        let (uid, _) = nix::unistd::getpeereid(fd).map_err(io::Error::from)?;
        Ok(uid.as_raw())
    }
    #[cfg(not(any(
        target_os = "linux",
        target_os = "android",
        target_vendor = "apple",
        target_os = "freebsd",
        target_os = "openbsd",
        target_os = "netbsd",
        target_os = "dragonfly"
    )))]
    {
        let _ = fd;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this system cannot tell who is on the other end of a socket",
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    #[test]
    fn a_pipe_grows_where_the_system_allows() {
        let (r, _w) = nix::unistd::pipe().unwrap();
        use std::os::fd::AsFd;
        let got = super::grow_pipe(r.as_fd(), 256 << 10);
        if cfg!(target_os = "linux") {
            // Within the default limit for anyone (1 MiB); rounded up to pages.
            assert!(got.is_some_and(|n| n >= 256 << 10), "{got:?}");
        } else {
            assert_eq!(got, None);
        }
        // Past any limit: refused, and the pipe stays as it was.
        assert_eq!(super::grow_pipe(r.as_fd(), usize::MAX), None);
    }

    #[test]
    fn a_descriptor_knows_its_real_path() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        std::fs::write(&real, "x").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let f = std::fs::File::open(&link).unwrap();
        assert_eq!(
            super::path_of(&f).unwrap(),
            std::fs::canonicalize(&real).unwrap()
        );
    }
}

//! TCP connections that notice a peer gone without a word (a machine switched off, a
//! network cut, a container removed): keepalive probes after a while of silence. Without
//! them a connection to an agent elsewhere whose host vanished stays open as long as the
//! agent has nothing to say, which is forever.

use std::os::fd::AsFd;
use std::time::Duration;

use nix::sys::socket::{setsockopt, sockopt};

/// Silence before the first probe, and between probes; probes unanswered before the
/// connection is given up: a peer gone is noticed within about a minute.
pub const IDLE: Duration = Duration::from_secs(30);
pub const EVERY: Duration = Duration::from_secs(10);
pub const PROBES: u32 = 3;

/// Turns keepalive probes on for the TCP connection `socket` ([`IDLE`], [`EVERY`],
/// [`PROBES`]; where the system does not let their timing be set, its own).
pub fn keepalive<F: AsFd>(socket: &F) -> std::io::Result<()> {
    setsockopt(socket, sockopt::KeepAlive, &true)?;
    let secs = |d: Duration| u32::try_from(d.as_secs()).unwrap_or(u32::MAX);
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    setsockopt(socket, sockopt::TcpKeepIdle, &secs(IDLE))?;
    #[cfg(target_vendor = "apple")]
    setsockopt(socket, sockopt::TcpKeepAlive, &secs(IDLE))?;
    #[cfg(any(
        target_os = "linux",
        target_os = "android",
        target_os = "freebsd",
        target_vendor = "apple"
    ))]
    {
        setsockopt(socket, sockopt::TcpKeepInterval, &secs(EVERY))?;
        setsockopt(socket, sockopt::TcpKeepCount, &PROBES)?;
    }
    let _ = secs;
    Ok(())
}

#[cfg(test)]
mod tests {
    use nix::sys::socket::{getsockopt, sockopt};

    #[test]
    fn probes_are_on_with_their_timing() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        assert!(!getsockopt(&stream, sockopt::KeepAlive).unwrap());
        super::keepalive(&stream).unwrap();
        assert!(getsockopt(&stream, sockopt::KeepAlive).unwrap());
        #[cfg(target_os = "linux")]
        {
            assert_eq!(getsockopt(&stream, sockopt::TcpKeepIdle).unwrap(), 30);
            assert_eq!(getsockopt(&stream, sockopt::TcpKeepInterval).unwrap(), 10);
            assert_eq!(getsockopt(&stream, sockopt::TcpKeepCount).unwrap(), 3);
        }
    }
}

//! The termination signals Trellis handles like a user's quit: SIGTERM and SIGHUP (and, in
//! the UI, whose raw mode turns Ctrl-C into a key, SIGINT from `kill`).

/// A stream of termination signals.
pub struct Signals {
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    int: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// SIGTERM and SIGHUP, and SIGINT too when `int` (headless runs count Ctrl-C apart).
    pub fn new(int: bool) -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            int: if int {
                Some(signal(SignalKind::interrupt())?)
            } else {
                None
            },
        })
    }

    /// The next signal's name.
    pub async fn recv(&mut self) -> &'static str {
        let int = async {
            match self.int.as_mut() {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.hup.recv() => "SIGHUP",
            _ = int => "SIGINT",
        }
    }
}

/// The next Ctrl-C (SIGINT) of a headless run, which counts them: the first cancels the
/// turn, the second ends the run.
pub async fn interrupt() -> std::io::Result<()> {
    tokio::signal::ctrl_c().await
}

/// Lets SIGPIPE end this process, as it ends any Unix tool whose reader went away
/// (`trellis ls | head`): for the commands that only print, and write to no pipe of a
/// process they started. Rust ignores it by default, so a closed stdout made `println!`
/// panic.
#[allow(unsafe_code)]
pub fn end_on_sigpipe() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: setting the default disposition installs no handler of ours; it is done
    // before any thread of this process starts.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
}

//! The client side: every running hub of this user, asked over its socket (blocking: the
//! commands that use it are short-lived). Hubs that died are cleared on the way.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::place::{HubFiles, clear_if_stale, hubs};
use crate::wire::{Body, Op, Progress, Request, Response, SessionInfo};

/// How long a hub has to answer.
const WAIT: Duration = Duration::from_secs(10);

/// A connection to one hub.
pub struct Client {
    pub files: HubFiles,
    stream: BufReader<UnixStream>,
    name: String,
    next: u64,
    /// The attachment this client's requests come from (see `Request::attachment`).
    pub attachment: Option<String>,
}

/// Connects to the hub socket at `path` only if it is a socket of this user's (a link is
/// never followed) and the process on the other end runs as this user: another user's
/// socket, planted or linked there, is never spoken to.
fn connect_checked(path: &std::path::Path) -> std::io::Result<UnixStream> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let refused = |why: &str| {
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} {why}: not spoken to", path.display()),
        )
    };
    let me = trellis_os::uid();
    let m = std::fs::symlink_metadata(path)?;
    if m.file_type().is_symlink() {
        return Err(refused("is a link"));
    }
    if !m.file_type().is_socket() {
        return Err(refused("is not a socket"));
    }
    if m.uid() != me {
        return Err(refused("belongs to another user"));
    }
    let s = UnixStream::connect(path)?;
    if trellis_os::fd::peer_uid(s.as_fd())? != me {
        return Err(refused("is served by another user's process"));
    }
    Ok(s)
}

impl Client {
    pub fn connect(files: &HubFiles, client_name: &str) -> std::io::Result<Client> {
        let s = connect_checked(&files.sock)?;
        s.set_read_timeout(Some(WAIT))?;
        s.set_write_timeout(Some(WAIT))?;
        Ok(Client {
            files: files.clone(),
            stream: BufReader::new(s),
            name: client_name.to_string(),
            next: 1,
            attachment: None,
        })
    }

    /// Sends `op` and waits for its answer.
    pub fn call(&mut self, op: Op, operation_id: Option<String>) -> std::io::Result<Body> {
        let id = self.next;
        self.next += 1;
        let req = Request {
            id,
            op,
            client: self.name.clone(),
            operation_id,
            attachment: self.attachment.clone(),
        };
        let mut line = serde_json::to_vec(&req)?;
        line.push(b'\n');
        self.stream.get_mut().write_all(&line)?;
        let mut answer = String::new();
        // Bounded: a hub's answer is one line, however many sessions it lists.
        let n = Read::take(&mut self.stream, 64 << 20)
            .read_line(&mut answer)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                    std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("the hub did not answer within {} s", WAIT.as_secs()),
                    )
                }
                _ => e,
            })?;
        if n == 0 {
            return Err(std::io::Error::other("the hub closed the connection"));
        }
        let r: Response = serde_json::from_str(&answer)
            .map_err(|e| std::io::Error::other(format!("not a hub's answer: {e}")))?;
        Ok(r.body)
    }
}

/// Longest progress line a follower reads.
const PROGRESS_LIMIT: u64 = 64 * 1024;

/// A session followed (`Op::Watch`): where its log is, and its progress as it comes.
pub struct Following {
    pub log: std::path::PathBuf,
    pub agent: String,
    pub controller: bool,
    /// How the hub names this attachment.
    pub you: String,
    /// Its id, for the requests made on its behalf.
    pub attachment: String,
    stream: BufReader<UnixStream>,
}

impl Following {
    /// Attaches to session `session` of the hub at `files`. The hub's refusal comes back
    /// as `Ok(Err((code, message)))`.
    pub fn start(
        files: &HubFiles,
        client_name: &str,
        session: u32,
        observe: bool,
        take: bool,
    ) -> std::io::Result<Result<Following, (String, String)>> {
        let mut c = Client::connect(files, client_name)?;
        let body = c.call(
            Op::Watch {
                session,
                observe,
                take,
            },
            None,
        )?;
        match body {
            Body::Watching {
                log,
                agent,
                controller,
                you,
                attachment,
            } => {
                // Progress may be quiet for hours: only writes keep a bound.
                c.stream.get_ref().set_read_timeout(None)?;
                Ok(Ok(Following {
                    log: log.into(),
                    agent,
                    controller,
                    you,
                    attachment,
                    stream: c.stream,
                }))
            }
            Body::Error { code, message } => Ok(Err((code, message))),
            _ => Err(std::io::Error::other(
                "the hub answered a watch with something else",
            )),
        }
    }

    /// The next progress (blocking); `None` once the hub closed the connection.
    pub fn progress(&mut self) -> std::io::Result<Option<Progress>> {
        loop {
            let mut line = String::new();
            let n = Read::take(&mut self.stream, PROGRESS_LIMIT).read_line(&mut line)?;
            if n == 0 {
                return Ok(None);
            }
            if let Ok(Response {
                body: Body::Progress(p),
                ..
            }) = serde_json::from_str(&line)
            {
                return Ok(Some(p));
            }
        }
    }
}

/// Every live hub in `dir`, by name: connected, or why not. Dead hubs' files are
/// removed.
pub fn connect_each(
    dir: &std::path::Path,
    client_name: &str,
) -> Vec<(String, std::io::Result<Client>)> {
    hubs(dir)
        .into_iter()
        .filter(|f| !clear_if_stale(f))
        .map(|f| (f.name.clone(), Client::connect(&f, client_name)))
        .collect()
}

/// Every live hub in `dir` that could be connected to.
pub fn connect_all(dir: &std::path::Path, client_name: &str) -> Vec<Client> {
    connect_each(dir, client_name)
        .into_iter()
        .filter_map(|(_, c)| c.ok())
        .collect()
}

/// Every session of every live hub: (hub name, sessions), or what went wrong per hub.
pub fn list_all(
    dir: &std::path::Path,
    client_name: &str,
) -> Vec<(String, Result<Vec<SessionInfo>, String>)> {
    connect_each(dir, client_name)
        .into_iter()
        .map(|(name, c)| {
            let mut c = match c {
                Ok(c) => c,
                Err(e) => return (name, Err(format!("cannot be reached: {e}"))),
            };
            let r = match c.call(Op::List, None) {
                Ok(Body::Sessions { sessions, .. }) => Ok(sessions),
                Ok(Body::Error { message, .. }) => Err(message),
                Ok(_) => Err("an answer that is not a list".into()),
                Err(e) => Err(e.to_string()),
            };
            (name, r)
        })
        .collect()
}

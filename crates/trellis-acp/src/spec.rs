//! What a connection is started with: the agent's command line and environment, the
//! session's directories and options, what Trellis advertises, and documents sent with a
//! prompt.

use std::path::PathBuf;

/// Client capabilities to advertise.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub read_text_file: bool,
    pub write_text_file: bool,
    pub terminal: bool,
    /// The front end can run an agent's login in the user's terminal (`authMethods` of
    /// type `terminal`): the UI can, a headless run cannot (it says what to run).
    pub terminal_login: bool,
    /// Elicitation forms are answered: by the user in the UI, from `--answers` (or
    /// declined) in a headless run.
    pub elicitation_form: bool,
    /// Elicitation links are shown and opened: only where someone can visit them (the UI).
    pub elicitation_url: bool,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            read_text_file: true,
            write_text_file: true,
            terminal: true,
            terminal_login: false,
            elicitation_form: true,
            elicitation_url: false,
        }
    }
}

/// How to start and talk to one agent.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub caps: Caps,
    /// Method to use if the agent requires authentication (default: its first).
    pub auth_method: Option<String>,
    /// Session working directory (absolute).
    pub cwd: PathBuf,
    /// Directories besides `cwd` the agent may read and write.
    pub extra_roots: Vec<PathBuf>,
    /// `additionalDirectories` for agents that advertise them (also in `extra_roots`).
    pub additional_directories: Vec<PathBuf>,
    /// `systemPrompt` (text, and `true` to override the agent's own) for agents that
    /// advertise it.
    pub system_prompt: Option<(String, bool)>,
    /// Resume this ACP session with `session/load` (when the agent advertises it).
    pub load_session: Option<String>,
    /// Fork this ACP session with `session/fork` when the agent advertises it (a draft
    /// of the protocol: the new session remembers the whole conversation); else a new
    /// session starts, and the warning says so.
    pub fork_session: Option<String>,
    /// Keep each frame's verbatim line with its message (an extension asked for ACP
    /// payloads).
    pub keep_lines: bool,
    /// No one types while the agent streams (a headless run): its output is read in
    /// larger pieces from a roomier pipe (`lines::Coalesce::for_pipe`), a fifth less CPU
    /// for a streamed line up to 2 ms later. A UI keeps the small pieces: a big piece is
    /// reduced in one go, and a key typed meanwhile waited over a frame for its echo.
    pub bulk_reads: bool,
    /// How long the agent has to answer `initialize` and set up its session.
    pub setup_timeout: std::time::Duration,
    /// Bytes of terminal output kept when the agent asks for no limit.
    pub terminal_output_limit: usize,
    /// MCP servers to offer the agent (those its capabilities allow).
    pub mcp_servers: Vec<crate::mcp::McpServerSpec>,
    /// A W3C trace context for the session (traces are exported): sent as
    /// `_meta.traceparent` on every prompt, and as `TRACEPARENT` to every terminal unless
    /// `terminal_trace` names one of its own.
    pub traceparent: Option<String>,
    /// The trace context of each terminal's own span (from its terminal id), so what a
    /// command traces nests under it, and it under its tool call.
    pub terminal_trace: Option<TerminalTrace>,
    /// Called right before each prompt is sent (on a blocking thread; the prompt waits
    /// for it), with the turn's number: what it returns is recorded as a mark. Trellis
    /// takes its checkpoint of the working tree here.
    pub before_turn: Option<BeforeTurn>,
    /// The agent runs elsewhere and is dialed (see [`crate::remote`]); `command` and
    /// `args` are then unused.
    pub remote: Option<crate::remote::RemoteSpec>,
}

impl AgentSpec {
    /// The session's directory as the agent sees it: its own for an agent elsewhere
    /// (when the config names it, or through the shared directories), else this
    /// machine's.
    pub fn agent_cwd(&self) -> PathBuf {
        self.agent_path(&self.cwd)
    }

    /// This machine's directory `dir` as the agent sees it (the session's, or one of
    /// its additional directories).
    pub fn agent_path(&self, dir: &std::path::Path) -> PathBuf {
        let Some(r) = &self.remote else {
            return dir.to_path_buf();
        };
        if dir == self.cwd
            && let Some(own) = &r.cwd
        {
            return PathBuf::from(own);
        }
        dir.to_str()
            .and_then(|d| r.paths.to_remote(d))
            .map_or_else(|| dir.to_path_buf(), PathBuf::from)
    }
}

/// A terminal id → the `traceparent` its command runs with.
#[derive(Clone)]
pub struct TerminalTrace(pub std::sync::Arc<dyn Fn(&str) -> String + Send + Sync>);

impl std::fmt::Debug for TerminalTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TerminalTrace")
    }
}

/// See [`AgentSpec::before_turn`]: the turn's number (1 for the session's first prompt),
/// and a flag set once the prompt stopped waiting for it ([`BEFORE_TURN_LIMIT`]: what it
/// records after that would no longer be the tree before the turn) → a mark for the log.
#[derive(Clone)]
pub struct BeforeTurn(pub std::sync::Arc<BeforeTurnFn>);

/// The function of a [`BeforeTurn`].
pub type BeforeTurnFn = dyn Fn(u32, &std::sync::atomic::AtomicBool) -> Option<String> + Send + Sync;

/// How long a prompt waits for [`AgentSpec::before_turn`].
pub const BEFORE_TURN_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

impl std::fmt::Debug for BeforeTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeTurn")
    }
}

/// Default of [`AgentSpec::setup_timeout`], in seconds: generous, since the first `npx`
/// run of an agent downloads it.
pub const DEFAULT_SETUP_TIMEOUT_S: f64 = 300.0;

/// A text document sent with a prompt (e.g. an earlier session carried into a resumed
/// one): an embedded resource when the agent takes them (`embeddedContext`), else a
/// text block of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    pub uri: String,
    pub mime: String,
    pub text: String,
}

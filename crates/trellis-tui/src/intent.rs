//! What a key asks the loop to do (a prompt, a cancel, an answer): below the app's state
//! and every part that turns keys into intents.

/// Something the loop must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Intent {
    /// Send a prompt, with the files it names as `@path` (resource links).
    Prompt {
        text: String,
        files: Vec<std::path::PathBuf>,
    },
    Cancel,
    /// Cancel a subagent's work (the child session id).
    CancelSubagent(String),
    /// Answer permission request `request_id` with the option `option_id` (and, with a
    /// reject, the reason the agent is told).
    Decide {
        request_id: String,
        option_id: String,
        reason: Option<String>,
    },
    /// Run the user's own command line in the session's directory (`!cmd`); `attach`:
    /// its output goes with the next prompt (`!!cmd`).
    UserCommand {
        command: String,
        attach: bool,
    },
    /// Answer the agent's question `request_id` (`elicitation/create`).
    Elicit {
        request_id: String,
        answer: trellis_core::ElicitAnswer,
    },
    /// The user goes to the link of question `request_id`: open it in the browser (copy
    /// it when that fails), and accept.
    Visit {
        request_id: String,
        url: String,
    },
    /// Put the text on the clipboard (OSC 52).
    Copy(String),
    /// Show the text in `$PAGER`.
    Page(String),
    /// Edit the prompt's text in `$VISUAL`/`$EDITOR` (Ctrl-G); the prompt becomes what
    /// the editor saved.
    Edit(String),
    /// Start the agent again after it ended (the transcript stays).
    Restart,
    /// Open a past session read-only on a call (a replay outside the full screen).
    Open {
        log: std::path::PathBuf,
        call: Option<String>,
    },
    Quit,
}

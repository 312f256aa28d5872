//! Setting a session up with the agent: `initialize` with what Trellis can do, a login
//! when the agent requires one, then a new session (or one loaded or resumed), with the
//! MCP servers, directories and system prompt the agent takes.

use std::sync::Mutex;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AuthCapabilities, AuthMethod, AuthenticateRequest, BooleanConfigOptionCapabilities,
    ClientCapabilities, ClientSessionCapabilities, CompactionCapabilities, ContentBlock,
    ElicitationCapabilities, ElicitationFormCapabilities, ElicitationUrlCapabilities,
    FileSystemCapabilities, ForkSessionRequest, Implementation, InitializeRequest,
    LoadSessionRequest, NewSessionRequest, NoticeCapabilities, PlanCapabilities,
    ResumeSessionRequest, SessionConfigOptionsCapabilities, SessionId, SubagentCapabilities,
    SystemPrompt, SystemPromptMode, TextContent,
};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::inputs::Input;
use crate::lock;
use crate::login::{Chosen, chosen_method};
use crate::spec::{AgentSpec, Caps};

/// The connection to the agent, as the SDK hands it to Trellis.
pub(crate) type Conn = agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>;

/// What Trellis tells the agent it can do (`initialize`).
fn client_capabilities(caps: &Caps) -> ClientCapabilities {
    ClientCapabilities::new()
        .fs(FileSystemCapabilities::new()
            .read_text_file(caps.read_text_file)
            .write_text_file(caps.write_text_file))
        .terminal(caps.terminal)
        // Only where a login can run in the user's terminal (the UI).
        .auth(AuthCapabilities::new().terminal(caps.terminal_login))
        .elicitation(elicitation_caps(caps))
        // Config options of type boolean are shown and set like the others;
        // notices and compaction go to the transcript.
        .session(
            ClientSessionCapabilities::new()
                .config_options(
                    SessionConfigOptionsCapabilities::new()
                        .boolean(BooleanConfigOptionCapabilities::new()),
                )
                .notices(NoticeCapabilities::new())
                .compaction(CompactionCapabilities::new()),
        )
        // Several plans by id (plan_update, plan_removed) are shown.
        .plan(PlanCapabilities::new())
        // Child sessions are followed as a tree under the calls that start them;
        // their permission requests and questions are attributed and answered.
        .subagents(SubagentCapabilities::new())
        // Command output in a call's `_meta` (Codex) is shown as it streams.
        .meta(
            [("terminal_output_delta".to_string(), Value::Bool(true))]
                .into_iter()
                .collect::<serde_json::Map<_, _>>(),
        )
}

/// The elicitation modes advertised (none: the field is left out).
fn elicitation_caps(caps: &Caps) -> Option<ElicitationCapabilities> {
    if !caps.elicitation_form && !caps.elicitation_url {
        return None;
    }
    let mut c = ElicitationCapabilities::new();
    if caps.elicitation_form {
        c = c.form(ElicitationFormCapabilities::new());
    }
    if caps.elicitation_url {
        c = c.url(ElicitationUrlCapabilities::new());
    }
    Some(c)
}

/// `initialize`, then a new, loaded or resumed session (logging in once when the agent
/// requires it): the session's id, whether prompts may embed file contents, whether it
/// is a fork, and whether the agent can take the session up again (`session/resume` or
/// `session/load`).
pub(crate) async fn set_up(
    cx: &Conn,
    spec: &AgentSpec,
    tx: &crate::inputs::Sender,
    deadline: &Mutex<Option<std::time::Instant>>,
    login_rx: &mut UnboundedReceiver<bool>,
) -> Result<(SessionId, bool, bool, bool), agent_client_protocol::Error> {
    let init = cx
        .send_request(
            InitializeRequest::new(ProtocolVersion::V1)
                .client_capabilities(client_capabilities(&spec.caps))
                .client_info(Implementation::new("trellis", env!("CARGO_PKG_VERSION"))),
        )
        .block_task()
        .await?;
    // `session/load` when asked for and advertised; authenticate once if required.
    // An earlier session: `session/resume` when advertised (no history is
    // replayed), else `session/load`, else a new session.
    let resume = spec.load_session.clone().filter(|_| {
        init.agent_capabilities
            .session_capabilities
            .resume
            .is_some()
    });
    let load = spec
        .load_session
        .clone()
        .filter(|_| resume.is_none() && init.agent_capabilities.load_session);
    let fork = spec
        .fork_session
        .clone()
        .filter(|_| init.agent_capabilities.session_capabilities.fork.is_some());
    if let (Some(id), None) = (&spec.fork_session, &fork) {
        let _ = tx.send(Input::Warning(format!(
            "the agent does not offer session/fork: a new session starts instead of a fork of {id}, and the first prompt carries the transcript"
        )));
    }
    if let (Some(id), None, None) = (&spec.load_session, &load, &resume) {
        let _ = tx.send(Input::Warning(format!(
            "the agent does not advertise session/load: a new session starts instead of {id}, without the agent's memory of it"
        )));
    }
    // Additional directories and a system prompt go only to agents that take them.
    let session_caps = &init.agent_capabilities.session_capabilities;
    let dirs = if session_caps.additional_directories.is_some() {
        // As the agent sees them (an agent elsewhere, through its shared directories).
        spec.additional_directories
            .iter()
            .map(|d| spec.agent_path(d))
            .collect::<Vec<_>>()
    } else {
        if !spec.additional_directories.is_empty() {
            let _ = tx.send(Input::Warning(
                "the agent does not take additional directories ([session] additional_directories): not sent".into(),
            ));
        }
        Vec::new()
    };
    let system = match (&spec.system_prompt, session_caps.system_prompt.is_some()) {
        (Some((text, replace)), true) => Some(
            SystemPrompt::new(vec![ContentBlock::Text(TextContent::new(text.clone()))]).mode(
                if *replace {
                    SystemPromptMode::Override
                } else {
                    SystemPromptMode::Append
                },
            ),
        ),
        (Some(_), false) => {
            let _ = tx.send(Input::Warning(
                "the agent does not take a system prompt ([session] system_prompt): not sent"
                    .into(),
            ));
            None
        }
        (None, _) => None,
    };
    let (mcp, offers) =
        crate::mcp::offer(&spec.mcp_servers, &init.agent_capabilities.mcp_capabilities);
    if !offers.is_empty() {
        let _ = tx.send(Input::Mcp(offers));
    }
    let mut authenticated = false;
    // What every setup request carries (three request types, one set of fields).
    macro_rules! setup {
        ($req:expr) => {
            $req.mcp_servers(mcp.clone())
                .additional_directories(dirs.clone())
                .system_prompt(system.clone())
        };
    }
    let session_id: SessionId = loop {
        let attempt = match (&resume, &load) {
            _ if fork.is_some() => cx
                .send_request(setup!(ForkSessionRequest::new(
                    fork.clone().unwrap_or_default(),
                    spec.agent_cwd()
                )))
                .block_task()
                .await
                .map(|s| s.session_id),
            (Some(id), _) => cx
                .send_request(setup!(ResumeSessionRequest::new(
                    id.clone(),
                    spec.agent_cwd()
                )))
                .block_task()
                .await
                .map(|_| SessionId::from(id.clone())),
            (None, Some(id)) => cx
                .send_request(setup!(LoadSessionRequest::new(
                    id.clone(),
                    spec.agent_cwd()
                )))
                .block_task()
                .await
                .map(|_| SessionId::from(id.clone())),
            (None, None) => cx
                .send_request(setup!(NewSessionRequest::new(spec.agent_cwd())))
                .block_task()
                .await
                .map(|s| s.session_id),
        };
        match attempt {
            Ok(id) => break id,
            Err(e)
                if !authenticated
                    && i32::from(e.code) == -32000
                    && !init.auth_methods.is_empty() =>
            {
                log_in(cx, spec, tx, deadline, login_rx, &init.auth_methods).await?;
                authenticated = true;
            }
            Err(e) => return Err(e),
        }
    };
    let embed = init.agent_capabilities.prompt_capabilities.embedded_context;
    // Said before `Ready`: a prompt sent once the session is ready carries no transcript.
    if fork.is_some() {
        let _ = tx.send(Input::Forked);
    }
    let resumable = init.agent_capabilities.load_session
        || init
            .agent_capabilities
            .session_capabilities
            .resume
            .is_some();
    Ok((session_id, embed, fork.is_some(), resumable))
}

/// The agent requires a login before a session: by its own method, or by a command run
/// in the user's terminal (the UI only; headless, the error says what to run). The setup
/// timeout stops while the user logs in.
async fn log_in(
    cx: &Conn,
    spec: &AgentSpec,
    tx: &crate::inputs::Sender,
    deadline: &Mutex<Option<std::time::Instant>>,
    login_rx: &mut UnboundedReceiver<bool>,
    methods: &[AuthMethod],
) -> Result<(), agent_client_protocol::Error> {
    let how = chosen_method(
        methods,
        spec.auth_method.as_deref(),
        &spec.command,
        &spec.args,
        &spec.env,
    );
    match how {
        Chosen::Agent(method) => {
            cx.send_request(AuthenticateRequest::new(method))
                .block_task()
                .await?;
        }
        // An agent elsewhere logs in where it runs: nothing it names runs here.
        Chosen::Terminal(login) if spec.remote.is_some() => {
            return Err(agent_client_protocol::Error::new(
                -32000,
                format!(
                    "the agent asks you to log in ({}) in a terminal where it runs; Trellis runs nothing an agent elsewhere names on this machine: log in there, then start again",
                    login.name
                ),
            ));
        }
        Chosen::Terminal(login) if !spec.caps.terminal_login => {
            return Err(agent_client_protocol::Error::new(
                -32000,
                format!(
                    "the agent asks you to log in ({}): run `{}` in a terminal, then start again",
                    login.name,
                    login.command_line()
                ),
            ));
        }
        Chosen::Terminal(login) => {
            *lock(deadline) = None;
            let _ = tx.send(Input::Login(login));
            let ok = login_rx.recv().await.unwrap_or(false);
            *lock(deadline) = Some(std::time::Instant::now() + spec.setup_timeout);
            if !ok {
                return Err(agent_client_protocol::Error::new(
                    -32000,
                    "the agent asks you to log in, and the login did not succeed",
                ));
            }
        }
    }
    Ok(())
}

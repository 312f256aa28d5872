//! What the deck needs of a session's front end: its driver, what it calls its agent,
//! where its log is, and a place to tell its human something. The UI's `App` is one;
//! [`Headless`] is the one of a hub without a screen (`trellis serve`).

use std::path::{Path, PathBuf};

use trellis_driver::{Driver, Note};

/// Lines of `/status` that come from outside the session (the hub-wide plugins).
pub type StatusReport = Box<dyn Fn() -> Vec<String>>;

/// A session's front end, as the deck sees it.
pub trait Front {
    fn driver(&self) -> &Driver;
    fn driver_mut(&mut self) -> &mut Driver;
    /// The session's agent as the human knows it.
    fn agent(&self) -> &str;
    /// The session's log (none: a session that keeps none).
    fn log_path(&self) -> Option<&Path>;
    /// The agent waits for a login in a terminal.
    fn login_waits(&self) -> bool;
    /// Something to tell the session's human (the UI's message line); one line.
    fn tell(&mut self, line: String);
    /// What the session had to say as it started (said once: taken).
    fn take_told(&mut self) -> Option<String>;
    /// A batch of what the session's driver reported, as this front end shows it.
    fn show(&mut self, notes: Vec<Note>);
    /// `/status` lists `report`'s lines too.
    fn add_status(&mut self, report: StatusReport);
    /// Drawn again in full at the next frame (nothing to do without a screen).
    fn redraw(&mut self) {}
}

/// The front end of a session in a hub without a screen: nothing is drawn; the human is
/// reached through the hub's socket and `[notify]`.
pub struct Headless {
    pub driver: Driver,
    pub agent: String,
    pub log_path: Option<PathBuf>,
    /// A login the agent asked for (it cannot run here: the session says so in its state
    /// until it is stopped).
    pub login: Option<trellis_acp::Login>,
    /// The agent's own name replaces `agent` once it is ready (an agent given as a
    /// command line).
    pub name_from_agent: bool,
    /// The last thing said to the session's human (a client of the hub reads the log).
    pub told: Option<String>,
    status: Vec<StatusReport>,
    /// What lives as long as the session (its scratch directory, its worktree's lease).
    kept: Vec<Box<dyn std::any::Any>>,
}

impl Headless {
    pub fn new(driver: Driver, agent: String) -> Headless {
        Headless {
            driver,
            agent,
            log_path: None,
            login: None,
            name_from_agent: false,
            told: None,
            status: Vec::new(),
            kept: Vec::new(),
        }
    }

    /// Keeps `thing` as long as the session lives.
    pub fn keep_alive(&mut self, thing: Box<dyn std::any::Any>) {
        self.kept.push(thing);
    }

    /// The lines the status reports give now.
    pub fn status_lines(&self) -> Vec<String> {
        self.status.iter().flat_map(|r| r()).collect()
    }
}

impl Front for Headless {
    fn driver(&self) -> &Driver {
        &self.driver
    }

    fn driver_mut(&mut self) -> &mut Driver {
        &mut self.driver
    }

    fn agent(&self) -> &str {
        &self.agent
    }

    fn log_path(&self) -> Option<&Path> {
        self.log_path.as_deref()
    }

    fn login_waits(&self) -> bool {
        self.login.is_some()
    }

    fn tell(&mut self, line: String) {
        self.told = Some(line);
    }

    fn take_told(&mut self) -> Option<String> {
        self.told.take()
    }

    fn show(&mut self, notes: Vec<Note>) {
        for note in notes {
            match note {
                Note::Login(login) => self.login = Some(login),
                Note::Ready => {
                    let own = &self.driver.session.agent.name;
                    let own = own.rsplit('/').next().unwrap_or(own).trim();
                    if self.name_from_agent && !own.is_empty() {
                        self.agent = trellis_text::one_line(own).into_owned();
                    }
                }
                Note::Message(text) | Note::Failure { text, .. } => {
                    self.told = Some(trellis_text::one_line(&text).into_owned());
                }
                _ => {}
            }
        }
    }

    fn add_status(&mut self, report: StatusReport) {
        self.status.push(report);
    }
}

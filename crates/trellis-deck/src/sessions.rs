//! The deck's sessions: added, named after the hub, their notes handled and their
//! states derived again, the hub-wide plugins fed, commands carried out.

use std::time::Instant;

use trellis_core::attention::{Attention, Blocked};

use crate::{
    Announcement, Command, Front, HubSettings, Notify, Opened, Opener, Pending, SessionKey,
    SessionNote, Slot, Worktrees,
};

/// Several sessions, one of them in front of the human (none without a screen).
pub struct Sessions<F> {
    pub slots: Vec<Slot<F>>,
    /// The slot in front (meaningless without a screen: see `headless`).
    pub front: usize,
    pub opener: Option<Opener<F>>,
    next_key: SessionKey,
    /// Announcements waiting for the loop to write them (bell, title, OSC 9/777) or to
    /// run `[notify] command` for.
    pub announce: Vec<Announcement>,
    pub notify: Notify,
    /// Sessions started together for the same prompt (`trellis fan`).
    pub fan: Vec<SessionKey>,
    /// The worktrees of fan-out members whose sessions closed (a land of another member
    /// discards them too, and says so).
    pub fan_closed: Vec<String>,
    pub worktrees: Option<std::sync::Arc<dyn Worktrees>>,
    /// The hub's socket (`trellis ls`, `send`, `approve`…), while it is served.
    pub hub: Option<trellis_hub::serve::Served>,
    /// Answers to the last mutations by operation id: a retry gets the first outcome.
    pub(crate) done_ops: trellis_hub::serve::Outcomes,
    /// A hub without a terminal (`trellis serve`): no session is in front, so every
    /// session's changes are announced, and nothing is written to the screen.
    pub headless: bool,
    /// The host of the plugins of `"scope": "hub"`: every session's events go to it.
    hub_wide: Option<HubWide>,
    /// What the deck's new sessions run under, as `trellis ls` reports it.
    pub settings: HubSettings,
    /// `trellis serve --stop` asked the hub to end (a hub of its own only).
    pub shutdown: Option<String>,
}

/// Hands a session's events to the hub-wide host as the driver emits them.
struct HubTap(std::sync::Arc<trellis_ext_host::ExtHost>);

impl trellis_driver::Observer for HubTap {
    fn event(&mut self, ev: &trellis_core::Event, _: &trellis_core::Session) {
        self.0.dispatch(ev);
        self.0.deliver();
    }

    fn closed(&mut self) {}
}

/// The extension host of a hub's plugins that see every session (`"scope": "hub"`), and
/// its messages.
struct HubWide {
    /// Shared with every session's `/status`, which lists its plugins.
    host: std::sync::Arc<trellis_ext_host::ExtHost>,
    rx: tokio::sync::mpsc::UnboundedReceiver<trellis_ext_host::HostMsg>,
}

impl<F: Front> Default for Sessions<F> {
    fn default() -> Self {
        Sessions::empty()
    }
}

impl<F: Front> Sessions<F> {
    /// A deck with no session yet (a hub's, `trellis serve`).
    pub fn empty() -> Sessions<F> {
        Sessions {
            slots: Vec::new(),
            front: 0,
            opener: None,
            next_key: 1,
            announce: Vec::new(),
            notify: Notify::default(),
            fan: Vec::new(),
            fan_closed: Vec::new(),
            worktrees: None,
            hub: None,
            done_ops: Default::default(),
            headless: false,
            hub_wide: None,
            settings: HubSettings::default(),
            shutdown: None,
        }
    }

    /// Adds a session (at the end of the rail) and brings it to the front.
    pub fn add(&mut self, opened: Opened<F>, agent_arg: String) -> SessionKey {
        let key = self.next_key;
        self.next_key += 1;
        self.slots.push(Slot::new(key, opened, agent_arg));
        self.front = self.slots.len() - 1;
        self.name(self.front);
        self.join_hub_wide(self.front);
        key
    }

    /// Serves the deck on `served` (its socket, and a listener if asked): its sessions
    /// are named after it from now on.
    pub fn set_hub(&mut self, served: trellis_hub::serve::Served) {
        self.hub = Some(served);
        for i in 0..self.slots.len() {
            self.name(i);
        }
    }

    /// Names slot `i`'s session after the hub (`HUB:KEY`, as `trellis ls` shows it): its
    /// events, and what its extensions read, carry the name.
    fn name(&mut self, i: usize) {
        let Some(hub) = &self.hub else {
            return;
        };
        let slot = &mut self.slots[i];
        let name = format!("{}:{}", hub.files.name, slot.key);
        slot.app.driver_mut().session.hub_session = Some(name.into());
    }

    pub fn index_of(&self, key: SessionKey) -> Option<usize> {
        self.slots.iter().position(|s| s.key == key)
    }

    /// Handles what one session's driver reported: the same as for a single session,
    /// then its state derived again (and announced when it asks for the human).
    pub fn handle(&mut self, i: usize, incoming: trellis_driver::Incoming) -> Vec<SessionNote> {
        let slot = &mut self.slots[i];
        let mut notes = Vec::new();
        slot.app.driver_mut().handle(incoming, &mut notes);
        let numbered = slot.number(notes);
        slot.observe(&numbered);
        self.hear_hub_wide();
        numbered
    }

    /// Runs the plugins of `"scope": "hub"` in `host` (see [`Sessions::handle`]).
    pub fn set_hub_wide(
        &mut self,
        host: trellis_ext_host::ExtHost,
        rx: tokio::sync::mpsc::UnboundedReceiver<trellis_ext_host::HostMsg>,
    ) {
        self.hub_wide = Some(HubWide {
            host: std::sync::Arc::new(host),
            rx,
        });
        for i in 0..self.slots.len() {
            self.join_hub_wide(i);
        }
    }

    /// Slot `i`'s events go to the hub-wide plugins too (each named by its
    /// `hub_session`), as its driver emits them; its `/status` lists them.
    fn join_hub_wide(&mut self, i: usize) {
        let Some(h) = &self.hub_wide else {
            return;
        };
        let app = &mut self.slots[i].app;
        app.driver_mut().observe(Box::new(HubTap(h.host.clone())));
        let host = h.host.clone();
        app.add_status(Box::new(move || {
            let mut lines = vec!["Hub-wide plugins (every session's events):".to_string()];
            lines.extend(host.status().lines().into_iter().skip(1));
            lines
        }));
    }

    /// What the hub-wide plugins have to say (one stopped, say) is said in front.
    fn hear_hub_wide(&mut self) {
        let Some(h) = &mut self.hub_wide else {
            return;
        };
        let mut said = Vec::new();
        while let Ok(msg) = h.rx.try_recv() {
            match msg {
                trellis_ext_host::HostMsg::Disabled { extension, reason } => {
                    said.push(format!("hub-wide plugin {extension} stopped: {reason}"));
                }
                trellis_ext_host::HostMsg::Failing {
                    extension,
                    what,
                    message,
                } => said.push(format!(
                    "hub-wide plugin {extension}: {what} failed: {message} · /status shows more"
                )),
                _ => {}
            }
        }
        let front = self.front;
        if let Some(last) = said.pop()
            && let Some(slot) = self.slots.get_mut(front)
        {
            slot.app.tell(trellis_text::one_line(&last).into_owned());
        }
    }

    /// Derives slot `i`'s state again; a change into Blocked or Error, or into Done for a
    /// session in the background, is announced (Done only when nothing else waits).
    pub fn refresh(&mut self, i: usize) {
        let now = self.slots[i].derive();
        let was = self.slots[i].attention;
        if now == was {
            self.slots[i].publish(false);
            return;
        }
        let slot = &mut self.slots[i];
        slot.attention = now;
        slot.since = Instant::now();
        slot.publish(false);
        let background = i != self.front || self.headless;
        let others_wait = self
            .slots
            .iter()
            .enumerate()
            .any(|(j, s)| j != i && s.attention.wants_human());
        let n = &self.notify;
        let tell = n.enabled
            && background
            && match now {
                Attention::Blocked(_) => n.blocked,
                Attention::Error => n.error,
                Attention::Done => n.done && !others_wait,
                _ => false,
            };
        if tell {
            let slot = &self.slots[i];
            self.announce.push(Announcement {
                key: slot.key,
                attention: now,
                agent: slot.agent_name(),
                session_id: slot.app.driver().session.id.as_deref().map(str::to_string),
            });
        }
    }

    /// The session that needs the human most: the oldest Blocked, then Error, then Done.
    pub fn wanted(&self) -> Option<usize> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.attention.wants_human())
            .min_by_key(|(_, s)| (s.attention.rank(), s.since))
            .map(|(i, _)| i)
    }

    /// Every pending request of every session, oldest first.
    pub fn pending(&self) -> Vec<Pending> {
        let mut out = Vec::new();
        for (index, slot) in self.slots.iter().enumerate() {
            for w in trellis_driver::claims::waiting(&slot.app.driver().session) {
                out.push(Pending {
                    key: slot.key,
                    index,
                    agent: slot.agent_name(),
                    source: slot.source.clone(),
                    branch: slot.branch.clone(),
                    kind: if w.question {
                        Blocked::Question
                    } else {
                        Blocked::Permission
                    },
                    request_id: w.request_id,
                    subject: w.subject,
                    options: w.options,
                    always: w.always,
                    since: slot.since,
                });
            }
        }
        out.sort_by_key(|p| p.since);
        out
    }

    /// Carries out a command for session `key`; what it reported, numbered.
    pub fn command(&mut self, key: SessionKey, cmd: Command) -> Vec<SessionNote> {
        let Some(i) = self.index_of(key) else {
            return Vec::new();
        };
        let slot = &mut self.slots[i];
        let mut notes = Vec::new();
        let driver = slot.app.driver_mut();
        match cmd {
            Command::Prompt { text, files } => driver.prompt(text, files),
            Command::Cancel => driver.cancel(&mut notes),
            Command::Decide {
                request_id,
                option_id,
            } => driver.decide(
                request_id,
                trellis_core::Choice::Option(option_id),
                trellis_core::Decider::Inbox,
                &mut notes,
            ),
            Command::Seen => {
                let turn = driver.session.turn;
                slot.seen_turn = turn;
            }
        }
        let numbered = self.slots[i].number(notes);
        self.refresh(i);
        numbered
    }

    /// Hands every session's extensions what its driver queued for them.
    pub fn deliver(&mut self) {
        for s in &mut self.slots {
            s.app.driver_mut().deliver();
        }
    }

    /// Shows a batch of slot `i`'s notes in its front end, and derives its state again.
    pub fn show_notes(&mut self, i: usize, notes: Vec<SessionNote>) {
        if let Some(slot) = self.slots.get_mut(i) {
            slot.app.show(notes.into_iter().map(|n| n.note).collect());
            self.refresh(i);
        }
    }
}

/// Waits for the next thing any session's driver has to handle (forever, without a
/// session). Cancel-safe (each driver's `recv` is).
pub async fn recv_any<F: Front>(slots: &mut [Slot<F>]) -> (usize, trellis_driver::Incoming) {
    if slots.is_empty() {
        return std::future::pending().await;
    }
    let futs = slots
        .iter_mut()
        .enumerate()
        .map(|(i, s)| Box::pin(async move { (i, s.app.driver_mut().recv().await) }));
    futures::future::select_all(futs).await.0
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::Headless;
    use trellis_driver::Note;

    pub(crate) fn opened(name: &str) -> Opened<Headless> {
        Opened {
            app: Headless::new(
                trellis_driver::Driver::offline(trellis_core::Session::new(
                    trellis_core::permission::Policy::Ask,
                )),
                name.into(),
            ),
            restart: None,
            source: "/src/repo".into(),
            branch: None,
            from: None,
        }
    }

    fn deck(names: &[&str]) -> Sessions<Headless> {
        let mut d = Sessions::empty();
        for n in names {
            d.add(opened(n), "demo".into());
        }
        d
    }

    #[test]
    fn a_background_change_is_announced_once_per_change_and_per_kind() {
        let mut d = deck(&["a", "b"]);
        d.front = 0;
        d.announce.clear();
        let login = || trellis_acp::Login {
            method: "m".into(),
            name: "log in".into(),
            description: None,
            program: "true".into(),
            args: Vec::new(),
            env: Vec::new(),
        };
        d.slots[1].app.show(vec![Note::Login(login())]);
        d.refresh(1);
        d.refresh(1);
        assert_eq!(d.announce.len(), 1, "once per change");
        assert_eq!(d.announce[0].attention, Attention::Blocked(Blocked::Login));
        assert_eq!(d.announce[0].key, d.slots[1].key);
        // The session in front is never announced by the deck (it alerts on its own).
        d.slots[0].app.show(vec![Note::Login(login())]);
        d.refresh(0);
        assert_eq!(d.announce.len(), 1);
        // An agent that died: Error, announced; switched off per kind, not announced.
        d.slots[1].app.login = None;
        d.slots[1].app.driver.session.agent_exited = Some("killed".into());
        d.refresh(1);
        assert_eq!(d.announce.len(), 2);
        assert_eq!(d.announce[1].attention, Attention::Error);
        d.notify.blocked = false;
        d.slots[1].app.driver.session.agent_exited = None;
        d.slots[1].app.show(vec![Note::Login(login())]);
        d.refresh(1);
        assert_eq!(d.announce.len(), 2, "blocked announcements switched off");
        d.notify = Notify {
            enabled: false,
            ..Notify::default()
        };
        d.slots[1].app.driver.session.agent_exited = Some("again".into());
        d.refresh(1);
        assert_eq!(d.announce.len(), 2, "the off switch");
    }

    /// Without a screen no session is in front: every change is announced.
    #[test]
    fn a_hub_without_a_screen_announces_every_session() {
        let mut d = deck(&["a"]);
        d.headless = true;
        d.announce.clear();
        d.slots[0].app.driver.session.agent_exited = Some("killed".into());
        d.refresh(0);
        assert_eq!(d.announce.len(), 1);
        assert_eq!(d.announce[0].attention, Attention::Error);
    }

    #[test]
    fn the_wanted_session_is_the_oldest_most_urgent() {
        let mut d = deck(&["a", "b", "c"]);
        let t0 = Instant::now();
        d.slots[0].attention = Attention::Done;
        d.slots[0].since = t0;
        d.slots[1].attention = Attention::Blocked(Blocked::Permission);
        d.slots[1].since = t0 + std::time::Duration::from_secs(2);
        d.slots[2].attention = Attention::Blocked(Blocked::Question);
        d.slots[2].since = t0 + std::time::Duration::from_secs(1);
        assert_eq!(d.wanted(), Some(2), "the older blocked one first");
        d.slots[2].attention = Attention::Idle;
        assert_eq!(d.wanted(), Some(1));
        d.slots[1].attention = Attention::Working;
        assert_eq!(d.wanted(), Some(0));
        d.slots[0].attention = Attention::Idle;
        assert_eq!(d.wanted(), None);
    }
}

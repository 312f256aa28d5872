//! Events for extensions whose events may wait (plugin adapters): held during a storm,
//! handed over when it pauses or has lasted too long, in order, before anything that
//! needs the extension's answer, and never counted as the extension falling behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use trellis_core::event::{Event, EventBody, Role};
use trellis_core::ext::{
    Capability, CommandDecl, ExtError, Extension, Host, Manifest, Registration, UiAction,
};
use trellis_ext_host::{Candidate, ExtHost, ExtState, HostMsg, HostOptions};

/// Records the chunks it sees and the commands it is sent.
struct Rec {
    name: &'static str,
    waits: bool,
    seen: Arc<Mutex<Vec<String>>>,
}

/// A test extension's manifest: it observes, and has a command `NAME-cmd`.
fn manifest_of(name: &str) -> Manifest {
    Manifest {
        name: name.into(),
        version: "1.0.0".into(),
        description: "test".into(),
        capabilities: vec![Capability::Observe, Capability::Ui],
        ui_only: false,
    }
}

fn registration_of(name: &str) -> Result<Registration, ExtError> {
    Ok(Registration {
        commands: vec![CommandDecl {
            name: format!("{name}-cmd"),
            description: "test".into(),
        }],
        ..Registration::default()
    })
}

impl Extension for Rec {
    fn manifest(&self) -> Manifest {
        manifest_of(self.name)
    }
    fn register(&mut self, _h: &mut dyn Host) -> Result<Registration, ExtError> {
        registration_of(self.name)
    }
    fn events_may_wait(&self) -> bool {
        self.waits
    }
    fn on_event(&mut self, e: &Event, _h: &mut dyn Host) -> Result<(), ExtError> {
        if let EventBody::MessageChunk { text, .. } = &e.body {
            self.seen.lock().unwrap().push(text.clone());
        }
        Ok(())
    }
    fn on_action(&mut self, a: &UiAction, _h: &mut dyn Host) -> Result<(), ExtError> {
        if let UiAction::Command { name, .. } = a {
            self.seen.lock().unwrap().push(format!("/{name}"));
        }
        Ok(())
    }
}

type Seen = Arc<Mutex<Vec<String>>>;

/// A host running `exts` as built-ins, with a queue bound of `queue` events.
fn host_of(
    exts: Vec<Box<dyn Extension>>,
    queue: usize,
) -> (ExtHost, tokio::sync::mpsc::UnboundedReceiver<HostMsg>) {
    ExtHost::new(
        exts.into_iter()
            .map(|ext| Candidate { ext, builtin: true })
            .collect(),
        HostOptions {
            queue,
            ..HostOptions::default()
        },
    )
}

/// A host with a live extension and one whose events may wait.
fn host(
    queue: usize,
) -> (
    ExtHost,
    tokio::sync::mpsc::UnboundedReceiver<HostMsg>,
    Seen,
    Seen,
) {
    trellis_ext_host::install_panic_guard();
    let (live, waiting) = (Seen::default(), Seen::default());
    let exts: Vec<Box<dyn Extension>> = vec![
        Box::new(Rec {
            name: "live",
            waits: false,
            seen: live.clone(),
        }),
        Box::new(Rec {
            name: "waiting",
            waits: true,
            seen: waiting.clone(),
        }),
    ];
    let (h, rx) = host_of(exts, queue);
    (h, rx, live, waiting)
}

fn chunk(i: usize) -> Event {
    Event {
        schema: 1,
        t: i as f64,
        session: None,
        hub_session: None,
        body: EventBody::MessageChunk {
            role: Role::Agent,
            message_id: None,
            text: i.to_string(),
            subagent: None,
        },
        acp: None,
        wire: Default::default(),
        position: None,
    }
}

/// Waits until `seen` holds `n` entries (the workers run on their own threads).
fn wait_for<T: Clone>(seen: &Arc<Mutex<Vec<T>>>, n: usize) -> Vec<T> {
    let start = Instant::now();
    loop {
        let v = seen.lock().unwrap().clone();
        if v.len() >= n || start.elapsed() > Duration::from_secs(10) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn numbers(r: std::ops::RangeInclusive<usize>) -> Vec<String> {
    r.map(|i| i.to_string()).collect()
}

const MS: Duration = Duration::from_millis(1);

/// The first event after a quiet spell, then a storm of 100 more, one per input batch,
/// 0.1 ms apart; returns the clock after the last.
fn storm(h: &ExtHost, t0: Instant, live: &Seen, waiting: &Seen) -> Instant {
    h.dispatch(&chunk(0));
    h.deliver_paced_at(t0);
    assert_eq!(wait_for(waiting, 1), ["0"], "at rest an event goes at once");
    let mut now = t0;
    for i in 1..=100 {
        now = t0 + MS * 10 + Duration::from_micros(100) * i as u32;
        h.dispatch(&chunk(i));
        h.deliver_paced_at(now);
        // The live one gets each at once (and keeps up, even with a small queue).
        assert_eq!(wait_for(live, i + 1).len(), i + 1);
    }
    assert_eq!(*live.lock().unwrap(), numbers(0..=100));
    now
}

#[test]
fn events_that_may_wait_are_held_during_a_storm_and_handed_over_when_it_pauses() {
    let (h, _rx, live, waiting) = host(16384);
    let t0 = Instant::now();
    let now = storm(&h, t0, &live, &waiting);
    // What came before the storm arrives; the storm is held by the host (its own state,
    // not a guess after a sleep: what it holds no worker can have).
    assert_eq!(wait_for(&waiting, 1), ["0"]);
    assert!(h.held_for_at(now).is_some(), "held during the storm");
    // The runtime is told when to come back: once the storm has been quiet long enough.
    let wait = h.held_for_at(now).expect("events are held");
    assert!(
        wait > Duration::ZERO && wait <= Duration::from_millis(15),
        "{wait:?}"
    );
    h.deliver_paced_at(now + wait / 2);
    assert!(
        h.held_for_at(now + wait / 2).is_some(),
        "not before the pause"
    );
    assert_eq!(waiting.lock().unwrap().len(), 1, "not before the pause");
    h.deliver_paced_at(now + wait);
    assert_eq!(
        wait_for(&waiting, 101),
        numbers(0..=100),
        "all of them, in order"
    );
    assert_eq!(h.held_for_at(now + wait), None, "nothing held any more");
}

#[test]
fn a_storm_that_goes_on_hands_its_events_over_every_few_hundred_milliseconds() {
    let (h, _rx, live, waiting) = host(16384);
    let t0 = Instant::now();
    h.dispatch(&chunk(0));
    h.deliver_paced_at(t0);
    let mut handed = Vec::new();
    for i in 1..=1000 {
        // One event a millisecond for a second: never a pause.
        let now = t0 + MS * i as u32;
        h.dispatch(&chunk(i));
        h.deliver_paced_at(now);
        let n = wait_for(&live, i + 1).len();
        assert_eq!(n, i + 1);
        // Nothing held right after a call: that call handed everything over.
        if h.held_for_at(now).is_none() {
            handed.push(i);
        }
    }
    // The first event went at once; then 400 ms after the first one held each time.
    assert_eq!(handed, [401, 802]);
    assert_eq!(wait_for(&waiting, 803), numbers(0..=802), "in order");
    h.deliver();
    assert_eq!(wait_for(&waiting, 1001), numbers(0..=1000));
}

#[test]
fn a_user_action_brings_the_held_events_first() {
    let (h, _rx, live, waiting) = host(16384);
    storm(&h, Instant::now(), &live, &waiting);
    assert!(h.ui.run_command("waiting-cmd", ""));
    let mut expected = numbers(0..=100);
    expected.push("/waiting-cmd".into());
    assert_eq!(wait_for(&waiting, 102), expected);
}

#[test]
fn held_events_beyond_the_queue_bound_are_not_the_extension_falling_behind() {
    // A queue of 64 events; the storm holds 100 and hands them over at once.
    let (h, _rx, live, waiting) = host(64);
    let t0 = Instant::now();
    let now = storm(&h, t0, &live, &waiting);
    h.deliver_paced_at(now + Duration::from_secs(1));
    assert_eq!(wait_for(&waiting, 101), numbers(0..=100));
    let st = h.status();
    for e in &st.extensions {
        assert!(
            matches!(e.state, ExtState::Ready),
            "{}: {:?}",
            e.name,
            e.state
        );
    }
}

#[test]
fn a_forced_delivery_hands_everything_over() {
    let (h, _rx, live, waiting) = host(16384);
    storm(&h, Instant::now(), &live, &waiting);
    assert!(h.flush(Duration::from_secs(10)));
    assert_eq!(*waiting.lock().unwrap(), numbers(0..=100));
}

/// Records every event it is handed as the host's shared copy.
struct Keep {
    name: String,
    waits: bool,
    got: Arc<Mutex<Vec<Arc<Event>>>>,
}

impl Extension for Keep {
    fn manifest(&self) -> Manifest {
        manifest_of(&self.name)
    }
    fn register(&mut self, _h: &mut dyn Host) -> Result<Registration, ExtError> {
        registration_of(&self.name)
    }
    fn events_may_wait(&self) -> bool {
        self.waits
    }
    fn on_event(&mut self, _e: &Event, _h: &mut dyn Host) -> Result<(), ExtError> {
        unreachable!("the host hands over its shared copy")
    }
    fn on_shared_event(&mut self, e: &Arc<Event>, _h: &mut dyn Host) -> Result<(), ExtError> {
        self.got.lock().unwrap().push(e.clone());
        Ok(())
    }
}

type Got = Arc<Mutex<Vec<Arc<Event>>>>;

fn keeping(waiting: usize) -> (ExtHost, Got, Vec<Got>) {
    trellis_ext_host::install_panic_guard();
    let live = Got::default();
    let held: Vec<Got> = (0..waiting).map(|_| Got::default()).collect();
    let mut exts: Vec<Box<dyn Extension>> = vec![Box::new(Keep {
        name: "live".into(),
        waits: false,
        got: live.clone(),
    })];
    for (i, got) in held.iter().enumerate() {
        exts.push(Box::new(Keep {
            name: format!("waiting{i}"),
            waits: true,
            got: got.clone(),
        }));
    }
    let (h, _rx) = host_of(exts, HostOptions::default().queue);
    (h, live, held)
}

/// A storm of tool-call events (the two snapshots of each call), chunks and an event
/// carrying its ACP line, as the reducer makes them.
fn call_storm(n: usize) -> Vec<Event> {
    use trellis_core::{ToolCall, ToolStatus};
    let session: Option<Arc<str>> = Some("s-1".into());
    let mut out = Vec::new();
    for i in 0..n {
        let mut c = ToolCall::placeholder(format!("call-{i}"), i as f64, 1);
        c.title = format!("Run {i}");
        c.status = ToolStatus::InProgress;
        let created = Arc::new(c.clone());
        c.status = ToolStatus::Completed;
        let done = Arc::new(c);
        let ev = |t: f64, body| Event {
            schema: 1,
            t,
            session: session.clone(),
            hub_session: None,
            body,
            acp: None,
            wire: Default::default(),
            position: None,
        };
        out.push(ev(i as f64, EventBody::ToolCallCreated { call: created }));
        let mut update = ev(
            i as f64 + 0.5,
            EventBody::ToolCallUpdated {
                previous_status: Some(ToolStatus::InProgress),
                status: ToolStatus::Completed,
                call: done,
            },
        );
        if i % 7 == 3 {
            update.acp = Some(format!("{{\"line\":{i}}}").into());
        }
        out.push(update);
        if i % 5 == 0 {
            out.push(chunk(i));
        }
    }
    out
}

/// What an event says, with the call snapshot it carries by identity.
fn said(e: &Event) -> String {
    let call = match &e.body {
        EventBody::ToolCallCreated { call } | EventBody::ToolCallUpdated { call, .. } => {
            format!("{:p}", Arc::as_ptr(call))
        }
        _ => String::new(),
    };
    let mut json = serde_json::to_value(e).unwrap();
    json["call_ptr"] = call.into();
    json["acp"] = e.acp.as_deref().into();
    json.to_string()
}

#[test]
fn held_call_events_are_handed_over_exactly_as_dispatched_and_shared_by_all_that_wait() {
    let (h, live, held) = keeping(3);
    let events = call_storm(300);
    let t0 = Instant::now();
    let mut now = t0;
    for (i, e) in events.iter().enumerate() {
        now = t0 + MS * 10 + Duration::from_micros(100) * i as u32;
        h.dispatch(e);
        h.deliver_paced_at(now);
    }
    let expected: Vec<String> = events.iter().map(said).collect();
    assert_eq!(
        wait_for(&live, events.len())
            .iter()
            .map(|e| said(e))
            .collect::<Vec<_>>(),
        expected
    );
    // An action to one of them brings it everything held; the others still wait.
    assert!(h.ui.run_command("waiting1-cmd", ""));
    let first = wait_for(&held[1], events.len());
    // The host still holds the others' events: none of their workers can have them.
    assert!(h.held_for_at(now).is_some(), "the others still wait");
    assert!(held[0].lock().unwrap().len() < 3, "the others still wait");
    h.deliver_paced_at(now + Duration::from_secs(1));
    let (zero, two) = (
        wait_for(&held[0], events.len()),
        wait_for(&held[2], events.len()),
    );
    for got in [&first, &zero, &two] {
        // The same events in the same order, each call with the snapshot it had then
        // (not the call's latest), the ACP line kept where there was one.
        assert_eq!(got.iter().map(|e| said(e)).collect::<Vec<_>>(), expected);
    }
    // Handed over together, the extensions share one copy of each event (a plugin's
    // JSON is made once); the one handed over earlier has its own.
    let shared = zero
        .iter()
        .zip(&two)
        .filter(|(a, b)| Arc::ptr_eq(a, b))
        .count();
    assert_eq!(shared, events.len());
}

#[test]
fn waiting_extensions_past_the_held_limit_get_their_events_at_each_batch() {
    // 64 waiting extensions have their events held; the 65th gets them like a built-in.
    let (h, _live, held) = keeping(65);
    let t0 = Instant::now();
    h.dispatch(&chunk(0));
    h.deliver_paced_at(t0);
    for i in 1..=20 {
        h.dispatch(&chunk(i));
        h.deliver_paced_at(t0 + MS * 10 + Duration::from_micros(100) * i as u32);
    }
    assert_eq!(wait_for(&held[64], 21).len(), 21, "not held");
    assert!(h.held_for_at(t0 + MS * 12).is_some(), "held");
    assert_eq!(held[63].lock().unwrap().len(), 1, "held");
    h.deliver();
    assert_eq!(wait_for(&held[63], 21).len(), 21);
}

//! Loading extensions: which candidates the config lets run and with what grants, one
//! worker each that registers its extension (all at once), and what each registration
//! means for the events it is given.

use std::sync::Arc;

use trellis_core::event::EVENT_KINDS;
use trellis_core::ext::Capability;

use crate::shared::Shared;
use crate::slot::{Job, Slot};
use crate::worker::worker;
use crate::{Candidate, HostOptions, kind_bit, kind_of_call_bit};

/// The candidates the config lets run, in order, each with the capabilities it is
/// granted (built-ins: what they declare, unless the config says otherwise; plugins:
/// only what the config grants); why any other is not loaded goes to `notes`.
pub(crate) fn admit(
    candidates: Vec<Candidate>,
    opts: &HostOptions,
    notes: &mut Vec<String>,
) -> Vec<Arc<Slot>> {
    let mut slots: Vec<Arc<Slot>> = Vec::new();
    let known: Vec<String> = candidates.iter().map(|c| c.ext.manifest().name).collect();
    for name in opts.config.keys() {
        if !known.contains(name) {
            notes.push(format!(
                "config names extension {name:?}, which is not installed (known: {})",
                known.join(", ")
            ));
        }
    }
    for c in candidates {
        let manifest = c.ext.manifest();
        if let Err(e) = manifest.check() {
            notes.push(format!("not loaded: {e}"));
            continue;
        }
        if manifest.name == crate::ui::HOST_NS {
            notes.push(format!(
                "not loaded: the name {:?} is reserved",
                manifest.name
            ));
            continue;
        }
        if slots.iter().any(|s| s.name == manifest.name) {
            notes.push(format!(
                "not loaded: a second extension named {:?}",
                manifest.name
            ));
            continue;
        }
        let cfg = opts.config.get(&manifest.name).cloned().unwrap_or_default();
        if !cfg.enabled.unwrap_or(c.builtin) {
            notes.push(format!(
                "{} is disabled by the config{}",
                manifest.name,
                if c.builtin {
                    ""
                } else {
                    " (plugins are off until enabled)"
                }
            ));
            continue;
        }
        if opts.headless && manifest.ui_only {
            notes.push(format!(
                "{} is not started in headless runs (everything it does is UI)",
                manifest.name
            ));
            continue;
        }
        let allowed = cfg.grant.clone().unwrap_or_else(|| {
            if c.builtin {
                manifest.capabilities.clone()
            } else {
                Vec::new()
            }
        });
        let mut granted = Vec::new();
        let mut refused = Vec::new();
        for cap in &manifest.capabilities {
            if allowed.contains(cap) {
                granted.push(*cap);
            } else {
                refused.push(*cap);
            }
        }
        let slot = Arc::new(Slot::new(
            slots.len(),
            c.ext,
            manifest,
            c.builtin,
            granted,
            refused,
            opts.failure_limit,
            opts.queue,
        ));
        let _ = slot.options.set(cfg.options.clone());
        let _ = slot.me.set(Arc::downgrade(&slot));
        slots.push(slot);
    }
    slots
}

/// One worker per extension, which registers it first: the extensions register at the
/// same time (a plugin process takes its interpreter's start-up time; three in a row
/// tripled it), each on the thread that then runs it for the session (a plugin's
/// parent-death signal follows the thread that started it). Returns where each
/// registration arrives (none: its worker did not start, and it is disabled).
pub(crate) fn start_workers(
    slots: &[Arc<Slot>],
    shared: &Arc<Shared>,
) -> Vec<Option<std::sync::mpsc::Receiver<trellis_core::ext::Registration>>> {
    let mut registering = Vec::with_capacity(slots.len());
    for slot in slots {
        let (jtx, jrx) = std::sync::mpsc::channel();
        let _ = slot.tx.set(jtx);
        let (rtx, rrx) = std::sync::mpsc::channel::<trellis_core::ext::Registration>();
        let (s, sh) = (slot.clone(), shared.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("ext-{}", slot.name))
            .spawn(move || {
                let reg = s
                    .call(&sh, "start", |e, cx| e.register(cx))
                    .unwrap_or_default();
                let _ = rtx.send(reg);
                worker(s, sh, jrx)
            });
        match spawned {
            Ok(_) => registering.push(Some(rrx)),
            Err(e) => {
                slot.disable(format!("could not start its worker thread: {e}"), shared);
                registering.push(None);
            }
        }
    }
    registering
}

/// What an extension registered takes effect: its subscriptions (unknown event types
/// rejected, none without `observe`), the kinds of calls it wants, and its first push.
pub(crate) fn registered(
    slot: &Arc<Slot>,
    reg: trellis_core::ext::Registration,
    shared: &Arc<Shared>,
) {
    let mask = match &reg.subscriptions {
        None => u64::MAX,
        Some(kinds) => {
            let mut m = 0;
            for k in kinds {
                let bit = kind_bit(k);
                if bit == 0 {
                    slot.diag().reject(
                        "subscription",
                        &format!("not an event type (known: {})", EVENT_KINDS.join(", ")),
                        k,
                    );
                }
                m |= bit;
            }
            m
        }
    };
    {
        let mut d = slot.diag();
        d.subscriptions = if slot.is_disabled() {
            vec!["none (it did not start)".into()]
        } else if !slot.has(Capability::Observe) {
            vec!["none (observe not granted)".into()]
        } else {
            let mut subs = match &reg.subscriptions {
                None => vec!["all events".into()],
                Some(k) => k.clone(),
            };
            if let Some(kinds) = &reg.call_kinds {
                let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
                subs.push(format!("tool calls of kind {} only", names.join(", ")));
            }
            subs
        };
    }
    let _ = slot.mask.set(if slot.has(Capability::Observe) {
        mask
    } else {
        0
    });
    let kinds = match &reg.call_kinds {
        None => u16::MAX,
        Some(k) => k.iter().fold(0u16, |m, k| m | kind_of_call_bit(*k)),
    };
    let _ = slot.call_kinds.set(kinds);
    let _ = slot.reg.set(reg);
    // Its first push: what it shows before any event.
    slot.send(Job::Idle, shared);
}

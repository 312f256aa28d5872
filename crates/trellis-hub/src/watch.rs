//! Attachments to one session of a hub: the latest [`Progress`] for whoever follows it
//! (a `tokio::sync::watch`: the hub overwrites, a slow follower skips to the newest and
//! never holds the session back), and who controls it.
//!
//! Control is a lease held by one attachment at a time: it goes when that attachment's
//! connection ends (its [`Lease`] is dropped), or when another one takes it (`take`), and
//! the next progress says who holds it now.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::wire::Progress;

#[derive(Debug, Default)]
struct Control {
    next: u64,
    holder: Option<(u64, String)>,
    /// The attachments still connected, by id: (lease number, or 0 for an observer).
    attached: std::collections::HashMap<String, u64>,
}

/// A session's followers, on the hub's side.
#[derive(Debug)]
pub struct Watched {
    tx: watch::Sender<Progress>,
    control: Arc<Mutex<Control>>,
}

/// Control of a session, held by one attachment; released when dropped.
#[derive(Debug)]
pub struct Lease {
    id: u64,
    control: Arc<Mutex<Control>>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut c = self.control.lock().unwrap_or_else(|e| e.into_inner());
        if c.holder.as_ref().is_some_and(|(id, _)| *id == self.id) {
            c.holder = None;
        }
    }
}

/// An attachment while its connection lasts (its id is forgotten when dropped).
#[derive(Debug)]
pub struct Attachment {
    pub id: String,
    control: Arc<Mutex<Control>>,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        let mut c = self.control.lock().unwrap_or_else(|e| e.into_inner());
        c.attached.remove(&self.id);
    }
}

/// What attaching gave: the progress to follow, the lease when it controls, and the
/// attachment's id for its requests.
#[derive(Debug)]
pub struct Follow {
    pub progress: watch::Receiver<Progress>,
    pub lease: Option<Lease>,
    pub attachment: Attachment,
}

impl Default for Watched {
    fn default() -> Self {
        Watched {
            tx: watch::channel(Progress::default()).0,
            control: Arc::default(),
        }
    }
}

impl Watched {
    /// Attaches `who`: as an observer, or as the controller when nobody controls the
    /// session (or `take`, which takes it from whoever does). A controller already there
    /// is named in the refusal.
    pub fn attach(&self, who: &str, observe: bool, take: bool) -> Result<Follow, String> {
        let token: String = crate::tokens::random(12)
            .map_err(|e| e.to_string())?
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let lease = if observe {
            None
        } else {
            let mut c = self.control.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, holder)) = &c.holder
                && !take
            {
                return Err(format!(
                    "{holder} controls this session (--observe to follow it, --take to take control)"
                ));
            }
            c.next += 1;
            let id = c.next;
            c.holder = Some((id, who.to_string()));
            Some(Lease {
                id,
                control: self.control.clone(),
            })
        };
        {
            let mut c = self.control.lock().unwrap_or_else(|e| e.into_inner());
            let n = lease.as_ref().map_or(0, |l| l.id);
            c.attached.insert(token.clone(), n);
        }
        let controller = self.controller();
        self.tx.send_modify(|p| p.controller = controller);
        Ok(Follow {
            progress: self.tx.subscribe(),
            lease,
            attachment: Attachment {
                id: token,
                control: self.control.clone(),
            },
        })
    }

    /// Whether the attachment `id` may act on the session: it is connected and holds the
    /// control (an observer's, or one whose control was taken, may not).
    pub fn may_act(&self, id: &str) -> Result<(), String> {
        let c = self.control.lock().unwrap_or_else(|e| e.into_inner());
        match (c.attached.get(id), &c.holder) {
            (None, _) => Err("this attachment has ended: attach again".into()),
            (Some(n), Some((holder, _))) if n == holder && *n != 0 => Ok(()),
            (Some(_), Some((_, who))) => Err(format!(
                "observing: {who} controls this session (trellis attach --take to take control)"
            )),
            (Some(_), None) => Err(
                "observing: nobody controls this session (trellis attach --take to take control)"
                    .into(),
            ),
        }
    }

    /// Whether anybody follows (else publishing costs nothing).
    pub fn followed(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    /// Who controls the session now.
    pub fn controller(&self) -> Option<String> {
        let c = self.control.lock().unwrap_or_else(|e| e.into_inner());
        c.holder.as_ref().map(|(_, who)| who.clone())
    }

    /// The session moved on: followers are woken when anything they see changed.
    pub fn publish(&self, log_len: u64, state: &str, ended: bool) {
        let controller = self.controller();
        self.tx.send_if_modified(|p| {
            let next = Progress {
                log_len,
                state: state.to_string(),
                controller,
                ended,
            };
            let changed = *p != next;
            *p = next;
            changed
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_controller_at_a_time_and_the_lease_goes_with_its_holder() {
        let w = Watched::default();
        let a = w.attach("a", false, false).unwrap();
        assert_eq!(w.controller().as_deref(), Some("a"));
        let e = w.attach("b", false, false).unwrap_err();
        assert!(e.starts_with("a controls"), "{e}");
        let o = w.attach("o", true, false).unwrap();
        assert!(o.lease.is_none());
        assert!(w.may_act(&a.attachment.id).is_ok());
        assert!(
            w.may_act(&o.attachment.id)
                .unwrap_err()
                .starts_with("observing")
        );
        let b = w.attach("b", false, true).unwrap();
        assert_eq!(w.controller().as_deref(), Some("b"));
        // The one whose control was taken observes now.
        assert!(w.may_act(&a.attachment.id).is_err());
        assert!(w.may_act(&b.attachment.id).is_ok());
        // The one whose control was taken lets go of nothing it no longer holds.
        drop(a);
        assert_eq!(w.controller().as_deref(), Some("b"));
        let gone = b.attachment.id.clone();
        drop(b);
        assert_eq!(w.controller(), None);
        assert!(w.may_act(&gone).unwrap_err().contains("ended"));
        assert!(w.followed());
        drop(o);
    }

    #[test]
    fn a_follower_sees_the_latest_progress_only() {
        let w = Watched::default();
        let mut f = w.attach("a", true, false).unwrap();
        for n in 1..=100 {
            w.publish(n * 10, "working", false);
        }
        assert!(f.progress.has_changed().unwrap());
        assert_eq!(f.progress.borrow_and_update().log_len, 1000);
        w.publish(1000, "working", false);
        assert!(!f.progress.has_changed().unwrap(), "nothing changed");
        drop(w);
        assert!(f.progress.has_changed().is_err(), "the session is gone");
    }
}

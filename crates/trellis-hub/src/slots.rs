//! The connections a server holds at once (the hub's socket, the listener): a bound in
//! all and per peer, and room made for a newcomer by letting the longest-idle connection
//! go — one waiting for its next request, never one at work. So idle connections can
//! neither hold every place nor delay a new client by more than the moment it takes
//! one of them to close.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The places of one server.
#[derive(Debug)]
pub struct Slots {
    state: Mutex<State>,
    /// A place was given back, or a connection stopped working.
    freed: Notify,
    all: usize,
    per_peer: usize,
    /// How long a connection just let in (or just back from work) keeps its place: long
    /// enough to send the request it came with, which a newcomer's kick would otherwise
    /// cut off unread (the client sees its connection reset).
    grace: Duration,
}

/// A fresh connection's time to begin its request before it may be let go.
pub const GRACE: Duration = Duration::from_millis(750);

/// How often a newcomer looks again while every candidate is in its grace.
const LOOK_AGAIN: Duration = Duration::from_millis(100);

#[derive(Debug, Default)]
struct State {
    next: u64,
    held: HashMap<u64, Entry>,
    /// Newcomers waiting for a place.
    waiting: usize,
}

#[derive(Debug)]
struct Entry {
    peer: u64,
    busy: usize,
    idle_since: Instant,
    kicked: bool,
    kick: Arc<Notify>,
}

/// One connection's place (given back when dropped).
#[derive(Debug)]
pub struct Slot {
    slots: Arc<Slots>,
    id: u64,
    kick: Arc<Notify>,
}

/// A connection at work (a request being answered, a stream being written): while one
/// is held it is never let go for a newcomer.
#[derive(Debug)]
pub struct Busy {
    slots: Arc<Slots>,
    id: u64,
}

impl Slots {
    pub fn new(all: usize, per_peer: usize) -> Arc<Slots> {
        Slots::with_grace(all, per_peer, GRACE)
    }

    /// [`Slots::new`] with another grace for fresh connections.
    pub fn with_grace(all: usize, per_peer: usize, grace: Duration) -> Arc<Slots> {
        Arc::new(Slots {
            grace,
            state: Mutex::new(State::default()),
            freed: Notify::new(),
            all: all.max(1),
            per_peer: per_peer.clamp(1, all.max(1)),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for a new connection from `peer`. When `peer` holds its share, or the
    /// server all it holds, the longest-idle connection (of `peer`, in the first case) is
    /// let go for it; `None` when every candidate stays at work for `wait`, or too many
    /// newcomers wait already.
    pub async fn admit(self: &Arc<Self>, peer: u64, wait: Duration) -> Option<Slot> {
        {
            let mut s = self.state();
            if s.waiting >= self.all {
                return None;
            }
            s.waiting += 1;
        }
        let deadline = tokio::time::Instant::now() + wait;
        let slot = loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(slot) = self.try_admit(peer) {
                break Some(slot);
            }
            // Woken when a place is freed; or, when every candidate was in its grace,
            // soon, to look again.
            let look = (tokio::time::Instant::now() + LOOK_AGAIN).min(deadline);
            if tokio::time::timeout_at(look, freed).await.is_err()
                && tokio::time::Instant::now() >= deadline
            {
                break None;
            }
        };
        self.state().waiting -= 1;
        slot
    }

    fn try_admit(self: &Arc<Self>, peer: u64) -> Option<Slot> {
        let mut s = self.state();
        let mine = s.held.values().filter(|e| e.peer == peer).count();
        if mine < self.per_peer && s.held.len() < self.all {
            s.next += 1;
            let id = s.next;
            let kick = Arc::new(Notify::new());
            s.held.insert(
                id,
                Entry {
                    peer,
                    busy: 0,
                    idle_since: Instant::now(),
                    kicked: false,
                    kick: kick.clone(),
                },
            );
            return Some(Slot {
                slots: self.clone(),
                id,
                kick,
            });
        }
        // Whose place is to be made room in: this peer's, or anyone's.
        let own = mine >= self.per_peer;
        let mut candidates = s.held.values_mut().filter(|e| !own || e.peer == peer);
        let mut idlest: Option<&mut Entry> = None;
        for e in &mut candidates {
            if e.kicked {
                // One is leaving already: its place is coming.
                return None;
            }
            let settled = e.idle_since.elapsed() >= self.grace;
            if e.busy == 0 && settled && idlest.as_ref().is_none_or(|i| e.idle_since < i.idle_since)
            {
                idlest = Some(e);
            }
        }
        if let Some(e) = idlest {
            e.kicked = true;
            e.kick.notify_one();
        }
        None
    }

    /// How many places are held (for tests and `/status`).
    pub fn held(&self) -> usize {
        self.state().held.len()
    }
}

impl Slot {
    /// This connection is at work until the guard is dropped.
    pub fn busy(&self) -> Busy {
        if let Some(e) = self.slots.state().held.get_mut(&self.id) {
            e.busy += 1;
        }
        Busy {
            slots: self.slots.clone(),
            id: self.id,
        }
    }

    /// Whether a request of this connection is being answered now.
    pub fn working(&self) -> bool {
        self.slots
            .state()
            .held
            .get(&self.id)
            .is_some_and(|e| e.busy > 0)
    }

    /// Resolves when this connection is to make room for a newcomer.
    pub async fn kicked(&self) {
        self.kick.notified().await;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.state().held.remove(&self.id);
        self.slots.freed.notify_waiters();
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(e) = self.slots.state().held.get_mut(&self.id) {
            e.busy = e.busy.saturating_sub(1);
            if e.busy == 0 {
                e.idle_since = Instant::now();
            }
        }
        self.slots.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_millis(300);

    /// A connection just let in keeps its place for its grace (it is sending the request
    /// it came with); then it makes room like any idle one.
    #[tokio::test]
    async fn a_fresh_connection_keeps_its_place_for_its_grace() {
        let grace = Duration::from_millis(400);
        let slots = Slots::with_grace(1, 1, grace);
        let fresh = slots.admit(1, WAIT).await.unwrap();
        let start = std::time::Instant::now();
        let kicked = tokio::spawn(async move {
            fresh.kicked().await;
            std::time::Instant::now()
        });
        let newcomer = slots.admit(2, Duration::from_secs(3)).await;
        assert!(newcomer.is_some(), "room made once the grace was over");
        let at = kicked.await.unwrap();
        assert!(
            at.duration_since(start) >= grace - Duration::from_millis(20),
            "not let go during its grace"
        );
    }

    #[tokio::test]
    async fn a_newcomer_takes_the_place_of_the_longest_idle() {
        let slots = Slots::with_grace(2, 2, Duration::ZERO);
        let old = slots.admit(1, WAIT).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let young = slots.admit(2, WAIT).await.unwrap();
        let gone = tokio::spawn(async move {
            old.kicked().await;
            // The connection closes: its place is given back.
        });
        let newcomer = slots.admit(3, WAIT).await;
        assert!(newcomer.is_some(), "room made for the newcomer");
        gone.await.unwrap();
        assert_eq!(slots.held(), 2);
        drop(young);
    }

    #[tokio::test]
    async fn connections_at_work_are_never_let_go() {
        let slots = Slots::with_grace(1, 1, Duration::ZERO);
        let a = slots.admit(1, WAIT).await.unwrap();
        let work = a.busy();
        assert!(slots.admit(2, WAIT).await.is_none(), "every place at work");
        // Once it stops working it is the one to go.
        drop(work);
        let kicked = tokio::spawn(async move {
            a.kicked().await;
        });
        assert!(slots.admit(2, WAIT).await.is_some());
        kicked.await.unwrap();
    }

    #[tokio::test]
    async fn a_peer_at_its_share_makes_room_among_its_own() {
        let slots = Slots::with_grace(4, 2, Duration::ZERO);
        let other = slots.admit(9, WAIT).await.unwrap();
        let first = slots.admit(1, WAIT).await.unwrap();
        let second = slots.admit(1, WAIT).await.unwrap();
        let _work = second.busy();
        let kicked = tokio::spawn(async move { first.kicked().await });
        let third = slots.admit(1, WAIT).await;
        assert!(third.is_some());
        kicked.await.unwrap();
        // The other peer's idle connection was never touched.
        assert!(
            tokio::time::timeout(Duration::from_millis(10), other.kicked())
                .await
                .is_err()
        );
    }
}

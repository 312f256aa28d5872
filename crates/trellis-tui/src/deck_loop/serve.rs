//! A hub without a terminal (`trellis serve`): the deck's sessions run, every request of
//! the socket is carried out, and nothing is drawn. The human is reached through the
//! socket (`trellis ls`, `approve`, `attach`) and the `[notify]` command.

use super::remote::{next_call, remote};
use super::{recv_any, run_hook};
use crate::deck::Deck;
use crate::show_notes;

/// Runs until a signal asks it to stop; returns that signal's name.
pub(crate) async fn serve_loop(
    deck: &mut Deck,
    signals: &mut trellis_os::signals::Signals,
    said: &mut Vec<String>,
) -> &'static str {
    loop {
        for s in deck.slots.iter_mut() {
            s.app.driver.deliver();
        }
        tokio::select! {
            (i, incoming) = recv_any(&mut deck.slots) => {
                let notes = deck.handle(i, incoming);
                let app = &mut deck.slots[i].app;
                show_notes(app, notes.into_iter().map(|n| n.note).collect());
                // A login in the terminal cannot happen here: the session says so in its
                // state (blocked on a login) until it is stopped.
                deck.refresh(i);
            }
            call = next_call(&mut deck.hub) => remote(deck, call, said).await,
            sig = signals.recv() => return sig,
        }
        hooks(deck);
        if let Some(who) = deck.shutdown.take() {
            said.push(format!("stopped by {who}"));
            return "trellis serve --stop";
        }
    }
}

/// Runs `[notify] command` for what the deck announces (there is no screen to ring).
fn hooks(deck: &mut Deck) {
    for a in std::mem::take(&mut deck.announce) {
        if deck.notify.enabled
            && let Some(cmd) = &deck.notify.command
        {
            run_hook(cmd, &a);
        }
    }
}

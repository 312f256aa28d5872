//! A hub without a terminal (`trellis serve`): the deck's sessions run, every request of
//! the socket is carried out, and nothing is drawn. The human is reached through the
//! socket (`trellis ls`, `approve`, `attach`) and the `[notify]` command.

use crate::{Front, Sessions, next_call, recv_any, remote, run_hook};

/// Runs `deck` without a screen until a signal (or `trellis serve --stop`) asks it to
/// stop, then closes every session the way quitting the UI does. Returns what closing
/// them had to say.
pub async fn serve<F: Front>(mut deck: Sessions<F>) -> std::io::Result<Vec<String>> {
    deck.headless = true;
    trellis_ext_host::install_panic_guard();
    let mut signals = trellis_os::signals::Signals::new(true)?;
    let mut said = Vec::new();
    let sig = serve_loop(&mut deck, &mut signals, &mut said).await;
    let reason = format!("the hub stopped ({sig})");
    deck.close_all(&reason, &mut said).await;
    Ok(said)
}

/// Runs until a signal asks it to stop; returns that signal's name.
async fn serve_loop<F: Front>(
    deck: &mut Sessions<F>,
    signals: &mut trellis_os::signals::Signals,
    said: &mut Vec<String>,
) -> &'static str {
    loop {
        deck.deliver();
        tokio::select! {
            (i, incoming) = recv_any(&mut deck.slots) => {
                let notes = deck.handle(i, incoming);
                // A login in the terminal cannot happen here: the session says so in its
                // state (blocked on a login) until it is stopped.
                deck.show_notes(i, notes);
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
fn hooks<F>(deck: &mut Sessions<F>) {
    for a in std::mem::take(&mut deck.announce) {
        if deck.notify.enabled
            && let Some(cmd) = &deck.notify.command
        {
            run_hook(cmd, &a);
        }
    }
}

//! Applying client-side log records.

use super::ctx::Ctx;
use super::turn::end_turn;
use crate::event::EventBody;
use crate::session::LocalRecord;

pub(crate) fn apply(cx: &mut Ctx<'_>, record: LocalRecord) {
    match record {
        LocalRecord::SessionLog {
            cwd,
            worktree,
            remote,
            paths,
            ..
        } => {
            if cx.s.cwd.is_none() {
                cx.s.cwd = Some(cwd);
                cx.s.worktree = worktree;
                cx.s.remote = remote;
                cx.s.paths = paths;
            }
        }
        LocalRecord::PermissionDecided {
            request_id,
            decider,
            reason,
        } => {
            if let Some(r) = reason {
                cx.s.reasons.insert(request_id.clone(), r);
            }
            cx.s.deciders.insert(request_id, decider);
        }
        LocalRecord::ElicitationDecided {
            request_id,
            decider,
        } => {
            cx.s.deciders.insert(request_id, decider);
        }
        LocalRecord::TerminalOutput { terminal_id, data } => {
            let term = cx.s.terminals.entry(terminal_id).or_default();
            super::terminal_meta::append(term, &data);
        }
        LocalRecord::TerminalExited {
            terminal_id,
            status,
        } => {
            let ok = status.exit_code == Some(0);
            super::requests::terminal_exited(cx, terminal_id.clone(), status);
            super::user_command::ended(cx, &terminal_id, ok);
        }
        LocalRecord::UserCommand {
            terminal_id,
            command,
            cwd,
        } => super::user_command::started(cx, terminal_id, command, cwd),
        LocalRecord::AgentExited { code, message } => {
            cx.s.agent_exited = Some(message.clone());
            // An agent elsewhere did not exit: its connection ended (it may run on).
            cx.notice(if cx.s.remote.is_some() {
                crate::session::connection_ended(&message)
            } else {
                format!("agent exited: {message}")
            });
            cx.emit(EventBody::AgentExited { code, message });
            end_turn(cx, "agent_exited".into());
            // Nobody is left to answer: open requests are closed on our side.
            super::permission::close_open_permissions(cx, "agent exited");
            super::elicit::close_open(cx, "agent exited");
        }
        LocalRecord::SessionEnded { reason } => {
            end_turn(cx, "cancelled".into());
            cx.s.ended = Some(reason.clone());
            cx.emit(EventBody::SessionEnded { reason });
        }
        LocalRecord::ConnectionClosed => {
            super::permission::close_open_permissions(cx, "connection closed");
            super::elicit::close_open(cx, "connection closed");
        }
        LocalRecord::Mark { text } => cx.notice(text),
        LocalRecord::Driven { extension, action } => cx.notice(match action {
            crate::ext::DriveAction::Prompt { .. } => format!("prompt from extension {extension}"),
            crate::ext::DriveAction::Cancel => format!("turn cancelled by extension {extension}"),
            crate::ext::DriveAction::SetMode { mode } => {
                format!("mode {mode} asked for by extension {extension}")
            }
            crate::ext::DriveAction::SetConfigOption { id, value } => {
                format!("{id} = {value} asked for by extension {extension}")
            }
        }),
        LocalRecord::StderrElided { lines, bytes } => cx.emit(EventBody::Warning {
            message: format!(
                "the agent wrote more on stderr than the log keeps: {lines} lines ({bytes} bytes) left out"
            ),
        }),
        LocalRecord::FileWritten {
            request_id, old, ..
        } => {
            super::requests::file_written(cx, &request_id, old)
        }
        LocalRecord::CallState {
            extension,
            call_id,
            value,
        } => {
            cx.s.call_state
                .insert((extension.clone(), call_id.clone()), value.clone());
            cx.emit(EventBody::CallState {
                call_id,
                extension,
                value,
            });
        }
    }
}

//! The host functions extensions call ([`HostCtx`] implements [`Host`]) and the state they
//! share: the session's mirror (`crate::mirror`), stores, the board, the user's choices.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::Value;
use trellis_core::ToolCall;
use trellis_core::ext::{
    Capability, DriveAction, Host, HostError, Rewrite, SectionBody, SectionPatch, SessionInfo,
    SettingsRow, StyledLine, Waker,
};

use crate::HostMsg;
use crate::board::{self};
use crate::shared::{Shared, StoreBox};
use crate::slot::Slot;

/// RFC 7386 merge of `patch` into `target`.
pub fn merge_patch(target: &mut Value, patch: Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Default::default());
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(&k);
                    } else {
                        merge_patch(t.entry(k).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other,
    }
}

/// The host as one extension sees it during one call.
pub struct HostCtx<'a> {
    slot: &'a Slot,
    shared: &'a Shared,
}

impl<'a> HostCtx<'a> {
    pub(crate) fn new(slot: &'a Slot, shared: &'a Shared) -> HostCtx<'a> {
        HostCtx { slot, shared }
    }

    fn need(&self, c: Capability, call: &str) -> Result<(), HostError> {
        if self.slot.has(c) {
            Ok(())
        } else {
            self.slot.diag().refuse(call);
            Err(HostError::NotGranted(c))
        }
    }

    /// Checks `ui` and that `id` is one of the extension's declared `what`s (ids are
    /// known once `register` has returned; pushes made from `register` itself are kept
    /// and checked when drawn).
    fn need_ui(
        &self,
        call: &str,
        declared: impl Fn(&trellis_core::ext::Registration) -> bool,
    ) -> Result<(), HostError> {
        self.need(Capability::Ui, call)?;
        match self.slot.registration() {
            Some(reg) if !declared(reg) => {
                let e = format!("{call}: not declared in the registration");
                self.slot.diag().refuse(call);
                Err(HostError::Invalid(e))
            }
            _ => Ok(()),
        }
    }

    fn report_problem(&self, what: &str, problem: Option<String>) {
        if let Some(p) = problem {
            let note = format!("{what}: {p}");
            let mut d = self.slot.diag();
            if !d.notes.contains(&note) {
                d.notes.push(note);
            }
        }
    }

    fn store_problem(&self, p: Option<String>) {
        if let Some(p) = p {
            self.slot.diag().notes.push(format!("store: {p}"));
        }
    }
}

impl Host for HostCtx<'_> {
    fn me(&self) -> &str {
        &self.slot.name
    }

    fn granted(&self) -> Vec<Capability> {
        self.slot.granted.clone()
    }

    fn options(&self) -> Value {
        self.slot.options.get().cloned().unwrap_or(Value::Null)
    }

    fn report(&mut self, what: &str, message: &str) {
        {
            let mut d = self.slot.diag();
            if d.state == crate::diag::ExtState::Ready {
                d.state = crate::diag::ExtState::Degraded(format!("{what}: {message}"));
            }
            // Counted as a failure (in `/status` and the status event, listed once with
            // its count, not also as a note), never toward disabling the extension: it
            // reports one part of itself failing.
            d.fail(what, message);
        }
        self.slot.say_failing(what, message, self.shared);
    }

    fn failed(&mut self, what: &str, message: &str) {
        self.slot.failed(what, message, self.shared);
    }

    fn session(&self) -> SessionInfo {
        self.shared.mirror().info.clone()
    }

    fn calls(&self) -> Vec<Arc<ToolCall>> {
        if self.need(Capability::Observe, "calls").is_err() {
            return Vec::new();
        }
        self.shared.mirror().calls()
    }

    fn call(&self, call_id: &str) -> Option<Arc<ToolCall>> {
        if self.need(Capability::Observe, "call").is_err() {
            return None;
        }
        self.shared.mirror().call(None, call_id)
    }

    fn call_state(&self, call_id: &str) -> Option<Value> {
        self.need(Capability::CallState, "call_state").ok()?;
        self.shared
            .mirror()
            .call_state
            .get(&(self.slot.name.clone(), call_id.to_string()))
            .cloned()
    }

    fn put_call_state(
        &mut self,
        call_id: &str,
        value: Value,
        merge: bool,
    ) -> Result<(), HostError> {
        self.need(Capability::CallState, "put_call_state")?;
        if call_id.is_empty() {
            return Err(HostError::Invalid("put_call_state needs a call id".into()));
        }
        let key = (self.slot.name.clone(), call_id.to_string());
        let whole = {
            let mut m = self.shared.mirror_mut();
            let slot = m.call_state.entry(key).or_insert(Value::Null);
            if merge {
                merge_patch(slot, value);
            } else {
                *slot = value;
            }
            slot.clone()
        };
        self.shared.send(HostMsg::CallState {
            extension: self.slot.name.clone(),
            call_id: call_id.to_string(),
            value: whole,
        });
        Ok(())
    }

    fn resolve_path(&self, path: &str) -> String {
        self.shared.resolve(path)
    }

    fn notify(&mut self, text: &str) -> Result<(), HostError> {
        self.need(Capability::Ui, "notify")?;
        let one_line: String = text
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        self.shared.send(HostMsg::Notify {
            extension: self.slot.name.clone(),
            text: one_line,
        });
        Ok(())
    }

    fn open_inspector(&mut self, call_id: &str) -> Result<(), HostError> {
        self.need(Capability::Ui, "open_inspector")?;
        self.shared.send(HostMsg::OpenInspector {
            call_id: call_id.to_string(),
        });
        Ok(())
    }

    fn respond_permission(&mut self, request_id: &str, option_id: &str) -> Result<(), HostError> {
        self.respond_permission_because(request_id, option_id, "")
    }

    fn respond_permission_because(
        &mut self,
        request_id: &str,
        option_id: &str,
        reason: &str,
    ) -> Result<(), HostError> {
        self.need(Capability::InterceptPermissions, "respond_permission")?;
        // Bounded and made harmless before it reaches the record or a screen.
        let reason = trellis_text::one_line(reason.trim());
        let reason = trellis_text::clip(&reason, 300).into_owned();
        self.shared.send(HostMsg::Respond {
            extension: self.slot.name.clone(),
            request_id: request_id.to_string(),
            option_id: option_id.to_string(),
            reason: (!reason.is_empty()).then_some(reason),
        });
        Ok(())
    }

    fn respond_question(
        &mut self,
        request_id: &str,
        answer: trellis_core::ElicitAnswer,
    ) -> Result<(), HostError> {
        self.need(Capability::AnswerQuestions, "respond_question")?;
        self.shared.send(HostMsg::Answer {
            extension: self.slot.name.clone(),
            request_id: request_id.to_string(),
            answer,
        });
        Ok(())
    }

    fn store_get(&self, key: &str) -> Result<Option<Value>, HostError> {
        self.need(Capability::Store, "store_get")?;
        let (v, p) = self.shared.with_store(&self.slot.name, |s| match s {
            StoreBox::Disk(d) => d.get(key).cloned(),
            StoreBox::Memory(m) => m.get(key).cloned(),
        });
        self.store_problem(p);
        Ok(v)
    }

    fn store_put(&mut self, key: &str, value: Option<Value>) -> Result<(), HostError> {
        self.need(Capability::Store, "store_put")?;
        let (r, p) = self.shared.with_store(&self.slot.name, |s| match s {
            StoreBox::Disk(d) => d
                .put(key, value)
                .map_err(|e| HostError::Store(e.to_string())),
            StoreBox::Memory(m) => {
                match value {
                    Some(v) => m.insert(key.to_string(), v),
                    None => m.remove(key),
                };
                Ok(())
            }
        });
        self.store_problem(p);
        r
    }

    fn repaint(&mut self) {
        self.shared.ask_repaint();
    }

    fn set_diagnostics(&mut self, lines: Vec<String>) {
        let lines = lines
            .into_iter()
            .take(100)
            .map(|l| trellis_text::clip(&trellis_text::one_line(&l), 300).into_owned())
            .collect();
        self.slot.diag().extra = lines;
    }

    fn section_shown(&self, id: &str) -> bool {
        let Some(d) = self
            .slot
            .registration()
            .and_then(|r| r.sections.iter().find(|s| s.id == id))
        else {
            return false;
        };
        self.slot.has(Capability::Ui)
            && self
                .shared
                .shown(&format!("{}/{}", self.slot.name, id), d.collapsed)
    }

    fn set_section(&mut self, id: &str, body: SectionBody) -> Result<(), HostError> {
        self.need_ui("set_section", |r| r.sections.iter().any(|s| s.id == id))?;
        let (stored, problem) = board::stored(body);
        self.report_problem("set_section", problem);
        let changed = {
            let mut b = self.shared.board();
            let key = (self.slot.index, id.to_string());
            if b.sections.get(&key) == Some(&stored) {
                false
            } else {
                b.sections.insert(key, stored);
                true
            }
        };
        if changed {
            self.shared.ask_repaint();
        }
        Ok(())
    }

    fn patch_section(&mut self, id: &str, patch: Vec<SectionPatch>) -> Result<(), HostError> {
        self.need_ui("patch_section", |r| r.sections.iter().any(|s| s.id == id))?;
        let problem = self
            .shared
            .board()
            .patch((self.slot.index, id.to_string()), patch);
        self.report_problem("patch_section", problem);
        self.shared.ask_repaint();
        Ok(())
    }

    fn set_status_item(&mut self, id: &str, line: Option<StyledLine>) -> Result<(), HostError> {
        self.need_ui("set_status_item", |r| {
            r.status_items.iter().any(|s| s.id == id)
        })?;
        let key = (self.slot.index, id.to_string());
        let line = line.map(|l| board::clean_line(l, board::MAX_LINE_COLUMNS));
        let changed = {
            let mut b = self.shared.board();
            let old = b.status.get(&key);
            if old == line.as_ref() {
                false
            } else {
                match line {
                    Some(l) => b.status.insert(key, l),
                    None => b.status.remove(&key),
                };
                true
            }
        };
        if changed {
            self.shared.ask_repaint();
        }
        Ok(())
    }

    fn set_settings(&mut self, rows: Vec<SettingsRow>) -> Result<(), HostError> {
        self.need(Capability::Ui, "set_settings")?;
        if rows.len() > 200 {
            return Err(HostError::Invalid(format!(
                "{} settings rows; at most 200",
                rows.len()
            )));
        }
        self.shared.board().settings.insert(self.slot.index, rows);
        self.shared.ask_repaint();
        Ok(())
    }

    fn set_transform(&mut self, id: &str, rewrites: Vec<Rewrite>) -> Result<(), HostError> {
        self.need_ui("set_transform", |r| {
            r.transforms
                .iter()
                .any(|t| t.id == id && t.rewrites.is_some())
        })?;
        let rules = board::compile(&rewrites).map_err(HostError::Invalid)?;
        self.shared
            .board()
            .rewrites
            .insert((self.slot.index, id.to_string()), Arc::new(rules));
        // Every text drawn through it changes.
        self.shared.epoch.fetch_add(1, Ordering::Relaxed);
        self.shared.ask_repaint();
        Ok(())
    }

    fn drive(&mut self, action: DriveAction) -> Result<(), HostError> {
        self.need(Capability::Drive, "drive")?;
        if let DriveAction::Prompt { text } = &action {
            let asked = trellis_text::clip(&trellis_text::one_line(text), 60).into_owned();
            if text.trim().is_empty() {
                return Err(HostError::Invalid("an empty prompt".into()));
            }
            // A budget of prompts per minute, per extension.
            let limit = self.shared.drive_per_minute as usize;
            let now = std::time::Instant::now();
            let mut sent = crate::lock(&self.slot.prompts_sent);
            while sent
                .front()
                .is_some_and(|t| now.duration_since(*t) >= std::time::Duration::from_secs(60))
            {
                sent.pop_front();
            }
            if sent.len() >= limit {
                let why = format!(
                    "drive budget: {limit} prompt(s) a minute ([extensions] drive_per_minute); this one is refused"
                );
                drop(sent);
                self.slot.diag().reject(
                    "drive prompt",
                    &format!("at most {limit} a minute ([extensions] drive_per_minute)"),
                    &asked,
                );
                return Err(HostError::Invalid(why));
            }
            sent.push_back(now);
        }
        self.shared.send(HostMsg::Drive {
            extension: self.slot.name.clone(),
            action,
        });
        Ok(())
    }

    fn waker(&self) -> Option<Waker> {
        let slot = self.slot.me.get()?.upgrade()?;
        let shared = self.shared.me.get()?.upgrade()?;
        let (slot, shared) = (
            std::sync::Arc::downgrade(&slot),
            std::sync::Arc::downgrade(&shared),
        );
        Some(Waker::new(move || {
            if let (Some(slot), Some(shared)) = (slot.upgrade(), shared.upgrade()) {
                slot.wake(&shared);
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut t = serde_json::json!({"a": 1, "b": {"c": 2, "d": 3}});
        merge_patch(
            &mut t,
            serde_json::json!({"b": {"c": null, "e": 4}, "f": 5}),
        );
        assert_eq!(
            t,
            serde_json::json!({"a": 1, "b": {"d": 3, "e": 4}, "f": 5})
        );
    }

    #[test]
    fn path_mappings_take_the_longest_prefix_on_component_boundaries() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let s = Shared::new(
            tx,
            vec![
                ("/workspace".into(), "/home/me/proj".into()),
                ("/workspace/vendor".into(), "/opt/vendor".into()),
            ],
            None,
        );
        assert_eq!(s.resolve("/workspace/src/a.rs"), "/home/me/proj/src/a.rs");
        assert_eq!(s.resolve("/workspace/vendor/x"), "/opt/vendor/x");
        assert_eq!(s.resolve("/workspaces/x"), "/workspaces/x");
        assert_eq!(s.resolve("rel/x"), "rel/x");
    }
}

//! `plan_update` and `plan_removed` (the plans are [`crate::plans`]).

use serde_json::Value;

use crate::event::EventBody;
use crate::plans::{NamedPlan, PlanBody};
use crate::wire::PlanEntry;

use super::ctx::Ctx;

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// `plan_update`: `plan` is {type: items|markdown|file, planId, entries|content|uri}.
pub(crate) fn update(cx: &mut Ctx<'_>, raw: &str) -> Result<(), serde_json::Error> {
    let v: Value = serde_json::from_str(raw)?;
    let p = v.get("plan").unwrap_or(&Value::Null);
    let Some(id) = text(p, "planId").filter(|i| !i.is_empty()) else {
        cx.malformed(
            "plan_update",
            "skipped a plan update without a plan id".into(),
        );
        return Ok(());
    };
    let body = match p.get("type").and_then(Value::as_str) {
        Some("items") => PlanBody::Items {
            entries: p
                .get("entries")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|e| serde_json::from_value::<PlanEntry>(e.clone()).ok())
                        // An entry is its text: one without is not an entry.
                        .filter(|e| !e.content.trim().is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        },
        Some("markdown") => PlanBody::Markdown {
            content: text(p, "content").unwrap_or_default(),
        },
        Some("file") => PlanBody::File {
            uri: text(p, "uri").unwrap_or_default(),
        },
        other => {
            let kind = other.unwrap_or("none").to_string();
            cx.malformed(
                &format!("plan_update:{kind}"),
                format!("skipped a plan update of a kind Trellis does not know ({kind})"),
            );
            return Ok(());
        }
    };
    let plan = NamedPlan { id, body };
    match cx.s.plans.iter_mut().find(|x| x.id == plan.id) {
        Some(x) => *x = plan.clone(),
        None => cx.s.plans.push(plan.clone()),
    }
    cx.emit(EventBody::PlanUpdated { plan });
    Ok(())
}

/// `plan_removed`: the plan `planId` is gone.
pub(crate) fn removed(cx: &mut Ctx<'_>, raw: &str) -> Result<(), serde_json::Error> {
    let v: Value = serde_json::from_str(raw)?;
    let Some(id) = text(&v, "planId") else {
        cx.malformed(
            "plan_removed",
            "skipped a plan removal without a plan id".into(),
        );
        return Ok(());
    };
    let before = cx.s.plans.len();
    cx.s.plans.retain(|p| p.id != id);
    if cx.s.plans.len() != before {
        cx.emit(EventBody::PlanRemoved { plan_id: id });
    }
    Ok(())
}

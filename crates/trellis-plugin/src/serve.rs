//! The host functions as a plugin calls them: one JSON-RPC method each, mapped onto the
//! extension API's [`Host`]. Grants are checked by the host itself (a refused call is
//! counted in `/status` and answered with [`code::NOT_GRANTED`]).

use serde::de::DeserializeOwned;
use serde_json::Value;
use trellis_core::ext::{Capability, DriveAction, Host, HostError};

use crate::protocol::{
    CallId, IdParam, KeyParam, PatchSection, PathParam, PutCallState, QuestionRespondParams,
    ReportParams, RespondParams, RpcError, SetSection, SetSettings, SetStatusItem, SetTransform,
    StorePut, TextParam, code,
};

fn params<T: DeserializeOwned>(method: &str, p: Value) -> Result<T, RpcError> {
    // Methods without parameters accept `null` or `{}`.
    let p = if p.is_null() {
        Value::Object(Default::default())
    } else {
        p
    };
    serde_json::from_value(p)
        .map_err(|e| RpcError::new(code::INVALID_PARAMS, format!("{method}: {e}")))
}

fn host_err(e: HostError) -> RpcError {
    crate::protocol::rpc_error_of(&e)
}

fn json(v: impl serde::Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(v).map_err(|e| RpcError::new(code::INVALID, e.to_string()))
}

/// A read the host answers with nothing when `cap` is not granted (counting the refusal
/// for `/status`): the plugin gets the specific error instead of an empty answer.
fn read<T: serde::Serialize>(
    host: &mut dyn Host,
    cap: Capability,
    f: impl FnOnce(&mut dyn Host) -> T,
) -> Result<Value, RpcError> {
    let granted = host.granted().contains(&cap);
    let v = f(host);
    if granted {
        json(v)
    } else {
        Err(host_err(HostError::NotGranted(cap)))
    }
}

/// Serves one host function; `Ok(value)` is the JSON-RPC result.
pub fn serve(host: &mut dyn Host, method: &str, p: Value) -> Result<Value, RpcError> {
    match method {
        "host/session" => json(host.session()),
        "host/calls" => read(host, Capability::Observe, |h| h.calls()),
        "host/call" => {
            let a: CallId = params(method, p)?;
            read(host, Capability::Observe, |h| h.call(&a.call_id))
        }
        "host/call_state" => {
            let a: CallId = params(method, p)?;
            read(host, Capability::CallState, |h| h.call_state(&a.call_id))
        }
        "host/put_call_state" => {
            let a: PutCallState = params(method, p)?;
            host.put_call_state(&a.call_id, a.value, a.merge)
                .map_err(host_err)?;
            Ok(Value::Null)
        }
        "host/resolve_path" => {
            let a: PathParam = params(method, p)?;
            Ok(Value::String(host.resolve_path(&a.path)))
        }
        "host/notify" => {
            let a: TextParam = params(method, p)?;
            host.notify(&a.text).map_err(host_err)?;
            Ok(Value::Null)
        }
        "host/open_inspector" => {
            let a: CallId = params(method, p)?;
            host.open_inspector(&a.call_id).map_err(host_err)?;
            Ok(Value::Null)
        }
        "host/options" => Ok(host.options()),
        "host/report" => {
            let a: ReportParams = params(method, p)?;
            host.report(&a.what, &a.message);
            Ok(Value::Null)
        }
        "host/failed" => {
            let a: ReportParams = params(method, p)?;
            host.failed(&a.what, &a.message);
            Ok(Value::Null)
        }
        "host/repaint" => {
            host.repaint();
            Ok(Value::Null)
        }
        "permission/respond" => {
            let a: RespondParams = params(method, p)?;
            host.respond_permission_because(
                &a.request_id,
                &a.option_id,
                a.reason.as_deref().unwrap_or_default(),
            )
            .map_err(host_err)?;
            Ok(Value::Null)
        }
        "question/respond" => {
            let a: QuestionRespondParams = params(method, p)?;
            let id = a.request_id.clone();
            let answer = crate::protocol::answer_of(a)
                .map_err(|m| RpcError::new(code::INVALID_PARAMS, format!("{method}: {m}")))?;
            host.respond_question(&id, answer).map_err(host_err)?;
            Ok(Value::Null)
        }
        "store/get" => {
            let a: KeyParam = params(method, p)?;
            Ok(host
                .store_get(&a.key)
                .map_err(host_err)?
                .unwrap_or(Value::Null))
        }
        "store/put" => {
            let a: StorePut = params(method, p)?;
            host.store_put(&a.key, a.value.filter(|v| !v.is_null()))
                .map_err(host_err)?;
            Ok(Value::Null)
        }
        "ui/section_shown" => {
            let a: IdParam = params(method, p)?;
            Ok(Value::Bool(host.section_shown(&a.id)))
        }
        "ui/set_section" => {
            let a: SetSection = params(method, p)?;
            host.set_section(&a.id, a.body).map_err(host_err)?;
            Ok(Value::Null)
        }
        "ui/patch_section" => {
            let a: PatchSection = params(method, p)?;
            host.patch_section(&a.id, a.patch).map_err(host_err)?;
            Ok(Value::Null)
        }
        "ui/set_status_item" => {
            let a: SetStatusItem = params(method, p)?;
            host.set_status_item(&a.id, a.line).map_err(host_err)?;
            Ok(Value::Null)
        }
        "ui/set_settings" => {
            let a: SetSettings = params(method, p)?;
            host.set_settings(a.rows).map_err(host_err)?;
            Ok(Value::Null)
        }
        "ui/set_transform" => {
            let a: SetTransform = params(method, p)?;
            host.set_transform(&a.id, a.rewrites).map_err(host_err)?;
            Ok(Value::Null)
        }
        "session/drive" => {
            let a: DriveAction = params(method, p)?;
            host.drive(a).map_err(host_err)?;
            Ok(Value::Null)
        }
        _ => Err(RpcError::new(
            code::METHOD_NOT_FOUND,
            format!("no host function {method:?} in trellis-plugin v1"),
        )),
    }
}

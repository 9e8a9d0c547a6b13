//! The block planner's export, `planBlockSummary`: synchronous, on the JS thread, conversion only.
//! Every rule is in `fold_core::blocks`; every bad argument is an `INVALID_ARGUMENT` that names it.

use fold_core::blocks::{self, Plan};
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::convert::{self, cast, describe, throw, CoreResult};

/// Largest `requestSeq` accepted (seqs are 32-bit in the snapshot format).
const MAX_REQUEST_SEQ: f64 = u32::MAX as f64 - 1.0;

/// What a summary of `closed` replaces right now.
#[napi(object)]
pub struct BlockCommitPlan {
    /// Seq of the first replaced surface node (the replace op's `start`).
    pub start: u32,
    /// Seq of the last replaced surface node (the replace op's `end`).
    pub end: u32,
    /// The replaced nodes' seqs in model order (the shadowed seqs).
    pub seqs: Uint32Array,
    /// The ids the summary carries on: the range's ids minus the targets, in order of first appearance.
    pub remaining: Vec<String>,
    /// The targets, in request order.
    pub closed: Vec<String>,
}

/// Reads an array of strings; `name` names the argument in errors (`targets`, `snapshot.ids`).
fn strings(v: &Unknown<'_>, name: &str) -> napi::Result<CoreResult<Vec<String>>> {
    if v.get_type()? != ValueType::Object || !v.is_array()? {
        return Ok(Err(FoldError::invalid(format!(
            "{name} must be an array of strings, got {}",
            describe(v)?
        ))));
    }
    let array = cast::<Object>(v)?;
    let len = array.get_array_length()?;
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..len {
        let item: Unknown = array.get_element(i)?;
        if item.get_type()? != ValueType::String {
            return Ok(Err(FoldError::invalid(format!(
                "{name}[{i}] must be a string, got {}",
                describe(&item)?
            ))));
        }
        out.push(cast::<String>(&item)?);
    }
    Ok(Ok(out))
}

/// Reads `{words: Uint32Array, ids: string[]}`.
fn snapshot(v: &Unknown<'_>) -> napi::Result<CoreResult<(Vec<u32>, Vec<String>)>> {
    if v.get_type()? != ValueType::Object || v.is_array()? || v.is_typedarray()? {
        return Ok(Err(FoldError::invalid(format!(
            "snapshot must be a block snapshot {{words: Uint32Array, ids: string[]}} (blockSnapshot(session)), got {}",
            describe(v)?
        ))));
    }
    let obj = cast::<Object>(v)?;
    let words: Unknown = obj.get_named_property("words")?;
    let words = match convert::snapshot(&words)? {
        Ok(w) => w,
        Err(_) => {
            return Ok(Err(FoldError::invalid(format!(
                "snapshot.words must be a Uint32Array, got {}",
                describe(&words)?
            ))))
        }
    };
    let ids: Unknown = obj.get_named_property("ids")?;
    Ok(strings(&ids, "snapshot.ids")?.map(|ids| (words, ids)))
}

/// Unwraps a conversion result or throws its coded error.
macro_rules! arg {
    ($env:expr, $conv:expr) => {
        match $conv? {
            Ok(v) => v,
            Err(e) => return Err(throw($env, &e)),
        }
    };
}

/// Plans a block summary of `targets` requested at log length `requestSeq`: what it replaces now,
/// or why it must wait. Pure and synchronous; writes nothing.
#[napi(
    ts_args_type = "sessionId: string, snapshot: BlockSnapshot, targets: string[], requestSeq: number",
    ts_return_type = "BlockPlan"
)]
pub fn plan_block_summary<'e>(
    env: &'e Env,
    session_id: Unknown<'e>,
    snapshot: Unknown<'e>,
    targets: Unknown<'e>,
    request_seq: Unknown<'e>,
) -> napi::Result<Object<'e>> {
    let session_id = arg!(env, convert::string(&session_id, "sessionId"));
    let (words, ids) = arg!(env, self::snapshot(&snapshot));
    let targets = arg!(env, strings(&targets, "targets"));
    let request_seq = arg!(env, convert::integer(&request_seq, "requestSeq", MAX_REQUEST_SEQ));
    let plan = blocks::plan_session(&session_id, &words, ids, &targets, request_seq).map_err(|e| throw(env, &e))?;

    let mut out = Object::new(env)?;
    match plan {
        Plan::Commit(c) => {
            out.set("status", "commit")?;
            out.set(
                "plan",
                BlockCommitPlan {
                    start: c.start(),
                    end: c.end(),
                    seqs: Uint32Array::new(c.seqs),
                    remaining: c.remaining,
                    closed: c.closed,
                },
            )?;
        }
        Plan::Pending(p) => {
            out.set("status", "pending")?;
            out.set("waitFor", p.wait.as_str())?;
            out.set("reason", p.reason)?;
        }
    }
    Ok(out)
}

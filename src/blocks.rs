//! The block planner's export, `planBlockSummary`: synchronous, on the JS thread, conversion only.
//! It reads the session's mirror and nothing else; every rule is in `fold_core::blocks`; every
//! bad argument is an `INVALID_ARGUMENT` that names it.

use fold_core::blocks::{self, Plan};
use fold_core::surface::BlockId;
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::convert::{self, cast, describe, throw, CoreResult};

/// Most block ids one summary may close (the core's `blocks::MAX_TARGETS`), for the plugin's
/// own argument check.
#[napi]
pub const MAX_BLOCK_TARGETS: u32 = blocks::MAX_TARGETS as u32;

/// Longest block id in UTF-16 units, a JS string's `length` (the core's `blocks::MAX_ID_UNITS`).
#[napi]
pub const MAX_BLOCK_ID_LENGTH: u32 = blocks::MAX_ID_UNITS as u32;

/// Largest `requestSeq` accepted (seqs are 32-bit in the mirror's records).
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
    #[napi(ts_type = "string[]")]
    pub remaining: Vec<Utf16String>,
    /// The targets, in request order.
    #[napi(ts_type = "string[]")]
    pub closed: Vec<Utf16String>,
    /// The replaced nodes' model-visible chars.
    pub chars: f64,
    /// When a token meter priced the mirror's nodes: the replaced nodes' token price (the
    /// commit's shadow price).
    pub tokens: Option<f64>,
}

/// Ids leave as the exact UTF-16 they arrived in (lone surrogates included).
fn to_js(ids: Vec<BlockId>) -> Vec<Utf16String> {
    ids.into_iter().map(|id| Utf16String::from(id.0)).collect()
}

/// Reads `targets`: an array of strings, kept as exact UTF-16.
fn targets(v: &Unknown<'_>) -> napi::Result<CoreResult<Vec<BlockId>>> {
    if v.get_type()? != ValueType::Object || !v.is_array()? {
        return Ok(Err(FoldError::invalid(format!(
            "targets must be an array of block id strings, got {}",
            describe(v)?
        ))));
    }
    let array = cast::<Object>(v)?;
    let len = array.get_array_length()?;
    // Refused by its length alone: 200,000 ids are never read one by one on the JS thread.
    if let Err(e) = blocks::check_target_count(len as usize) {
        return Ok(Err(e));
    }
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..len {
        let item: Unknown = array.get_element(i)?;
        if item.get_type()? != ValueType::String {
            return Ok(Err(FoldError::invalid(format!(
                "targets[{i}] must be a string, got {}",
                describe(&item)?
            ))));
        }
        out.push(BlockId(cast::<Utf16String>(&item)?.to_vec()));
    }
    Ok(Ok(out))
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
    ts_args_type = "sessionId: string, mirror: SessionMirror, targets: string[], requestSeq: number",
    ts_return_type = "BlockPlan"
)]
pub fn plan_block_summary<'e>(
    env: &'e Env,
    session_id: Unknown<'e>,
    mirror: Unknown<'e>,
    targets: Unknown<'e>,
    request_seq: Unknown<'e>,
) -> napi::Result<Object<'e>> {
    crate::guard::throwing(env, "planBlockSummary", || {
        plan_checked(env, session_id, mirror, targets, request_seq)
    })
}

fn plan_checked<'e>(
    env: &'e Env,
    session_id: Unknown<'e>,
    mirror: Unknown<'e>,
    targets: Unknown<'e>,
    request_seq: Unknown<'e>,
) -> napi::Result<Object<'e>> {
    let session_id = arg!(env, convert::string(&session_id, "sessionId"));
    let Some(m) = crate::mirror::of(env, &mirror)? else {
        return Err(throw(env, &crate::mirror::expected(&mirror)?));
    };
    let targets = arg!(env, self::targets(&targets));
    let request_seq = arg!(env, convert::integer(&request_seq, "requestSeq", MAX_REQUEST_SEQ));
    let mirror = &m.mirror;
    let plan = blocks::plan_session(&session_id, mirror, &targets, request_seq).map_err(|e| throw(env, &e))?;

    let mut out = Object::new(env)?;
    match plan {
        Plan::Commit(c) => {
            out.set("status", "commit")?;
            out.set(
                "plan",
                BlockCommitPlan {
                    start: c.start(),
                    end: c.end(),
                    chars: mirror.chars_of(&c.seqs) as f64,
                    tokens: mirror.tokens_of(&c.seqs).map(|t| t as f64),
                    seqs: Uint32Array::new(c.seqs),
                    remaining: to_js(c.remaining),
                    closed: to_js(c.closed),
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

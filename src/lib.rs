//! Node-API exports of dsh-fold: module lines and the `#[napi]` exports, each converting its
//! arguments, calling the core and mapping the result; every rule lives in `crates/fold-core`.
//! Errors are JS `Error`s with a stable `code` (see `FoldError::code`), rejected or thrown on the
//! JS thread. The JS shapes are in `types.rs`; `rewind` (the fold, driven from the JS thread) is
//! in `rewind.rs`; the extractive report in `report.rs`; zstd in `zstd.rs`.

mod abort;
mod convert;
mod host;
mod report;
mod rewind;
mod types;
mod zstd;

use fold_core::fold;
use fold_core::region;
use fold_core::surface::Surface;
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::convert::{arg_or_reject, arg_or_throw, promise, throw};
pub use crate::report::{extractive_report, ReportOptions};
pub use crate::rewind::rewind;
pub use crate::types::*;
pub use crate::zstd::decode_zstd;

/// Largest log length / anchor accepted (seqs are 32-bit in the snapshot format).
const MAX_LOG_LENGTH: f64 = u32::MAX as f64 - 1.0;
/// Largest mark id accepted from JS.
const MAX_MARK_ID: f64 = 9_007_199_254_740_991.0;

/// Records a durable checkpoint mark for `sessionId` at log length `logLength`.
#[napi(
    ts_args_type = "store: StoreRef, sessionId: string, logLength: number, objective?: string | null",
    ts_return_type = "Promise<NewMark>"
)]
pub fn mark<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Unknown<'e>,
    log_length: Unknown<'e>,
    objective: Option<Unknown<'e>>,
) -> Result<PromiseRaw<'e, NewMark>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let session_id = arg_or_reject!(env, convert::string(&session_id, "sessionId"));
    let log_length = arg_or_reject!(env, convert::integer(&log_length, "logLength", MAX_LOG_LENGTH));
    let objective = arg_or_reject!(env, convert::opt_string(objective.as_ref(), "objective"));
    promise(
        env,
        async move { fold::mark(&store, &session_id, log_length, objective).await },
        |_, m| {
            Ok(NewMark {
                id: m.id as i64,
                log_length: m.log_length as i64,
            })
        },
    )
}

/// The session's newest mark (folded or not), or `null`.
#[napi(
    ts_args_type = "store: StoreRef, sessionId: string",
    ts_return_type = "Promise<MarkRecord | null>"
)]
pub fn latest_mark<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Unknown<'e>,
) -> Result<PromiseRaw<'e, Option<MarkRecord>>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let session_id = arg_or_reject!(env, convert::string(&session_id, "sessionId"));
    // Once the file is in memory the answer is known here: settle now, without the async
    // runtime's thread hops (the turn guard asks at every turn end; bench/has-active.mjs).
    if let Some(answer) = store.latest_in_memory(&session_id) {
        return convert::settled(env, answer.map(|m| m.map(MarkRecord::from)));
    }
    promise(
        env,
        async move { fold::latest_mark(&store, &session_id).await },
        |_, m| Ok(m.map(MarkRecord::from)),
    )
}

/// Whether the session's newest mark exists and is not folded (from memory after the first load).
#[napi(
    ts_args_type = "store: StoreRef, sessionId: string",
    ts_return_type = "Promise<boolean>"
)]
pub fn has_active<'e>(env: &'e Env, store: Unknown<'e>, session_id: Unknown<'e>) -> Result<PromiseRaw<'e, bool>> {
    // The answer is already known here (from memory, on the JS thread): settle the promise now
    // rather than through the async runtime, which costs a thread hop there and back (~25 µs
    // instead of ~2 µs; bench/has-active.mjs).
    convert::settled(env, convert::has_active(&store, &session_id)?)
}

/// `hasActive` without the promise, for hot paths (the turn guard runs it at every turn end).
#[napi(ts_args_type = "store: StoreRef, sessionId: string")]
pub fn has_active_sync(env: &Env, store: Unknown<'_>, session_id: Unknown<'_>) -> Result<bool> {
    convert::has_active(&store, &session_id)?.map_err(|e| throw(env, &e))
}

/// Stamps `markId` folded when it is the session's latest active mark; `false` changes nothing.
#[napi(
    ts_args_type = "store: StoreRef, sessionId: string, markId: number",
    ts_return_type = "Promise<boolean>"
)]
pub fn complete_fold<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Unknown<'e>,
    mark_id: Unknown<'e>,
) -> Result<PromiseRaw<'e, bool>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let session_id = arg_or_reject!(env, convert::string(&session_id, "sessionId"));
    let mark_id = arg_or_reject!(env, convert::integer(&mark_id, "markId", MAX_MARK_ID));
    promise(
        env,
        async move { fold::complete_fold(&store, &session_id, mark_id).await },
        |_, b| Ok(b),
    )
}

/// Every mark of the store (or of one session), newest first; re-reads what other processes wrote.
#[napi(
    ts_args_type = "store: StoreRef, sessionId?: string | null",
    ts_return_type = "Promise<MarkRecord[]>"
)]
pub fn list_marks<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Option<Unknown<'e>>,
) -> Result<PromiseRaw<'e, Vec<MarkRecord>>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let session_id = arg_or_reject!(env, convert::opt_string(session_id.as_ref(), "sessionId"));
    promise(
        env,
        async move {
            tokio::task::spawn_blocking(move || store.list(session_id.as_deref()))
                .await
                .map_err(|e| FoldError::StoreIo(format!("checkpoint store worker failed: {e}")))?
        },
        |_, marks| Ok(marks.into_iter().map(MarkRecord::from).collect()),
    )
}

/// Region selection alone, synchronously: what a fold at `anchor` would replace right now.
#[napi(ts_args_type = "snapshot: Uint32Array, anchor: number")]
pub fn select_region(env: &Env, snapshot: Unknown<'_>, anchor: Unknown<'_>) -> Result<FoldRegion> {
    let words = arg_or_throw!(env, convert::snapshot(&snapshot));
    let anchor = arg_or_throw!(env, convert::integer(&anchor, "anchor", MAX_LOG_LENGTH));
    let region = Surface::decode(&words)
        .and_then(|s| region::select(&s, anchor))
        .map_err(|e| throw(env, &e))?;
    Ok(FoldRegion::from(&fold::FoldRequest {
        mark_id: 0,
        anchor,
        region,
    }))
}

/// The commit-time check: does `snapshot` still select exactly `plan`'s region?
#[napi(ts_args_type = "plan: FoldPlan | FoldRegion, snapshot: Uint32Array")]
pub fn plan_matches(env: &Env, plan: Unknown<'_>, snapshot: Unknown<'_>) -> Result<bool> {
    let words = arg_or_throw!(env, convert::snapshot(&snapshot));
    if plan.get_type()? != ValueType::Object {
        return Err(throw(
            env,
            &FoldError::invalid(format!(
                "plan must be a FoldPlan or FoldRegion, got {}",
                convert::describe(&plan)?
            )),
        ));
    }
    let plan = convert::cast::<Object>(&plan)?;
    let anchor: Unknown = plan.get_named_property("anchor")?;
    let anchor = arg_or_throw!(env, convert::integer(&anchor, "plan.anchor", MAX_LOG_LENGTH));
    let seqs: Unknown = plan.get_named_property("seqs")?;
    let seqs = arg_or_throw!(
        env,
        convert::snapshot(&seqs).map(|r| r.map_err(|_| FoldError::invalid("plan.seqs must be a Uint32Array")))
    );
    let surface = Surface::decode(&words).map_err(|e| throw(env, &e))?;
    Ok(region::still_matches(&surface, anchor, &seqs))
}

/// Whether `value` is an error raised by dsh-fold (an `Error` whose `code` is one of ours).
#[napi]
pub fn is_fold_error(value: Unknown<'_>) -> Result<bool> {
    if value.get_type()? != ValueType::Object {
        return Ok(false);
    }
    let obj = convert::cast::<Object>(&value)?;
    let code: Unknown = obj.get_named_property("code")?;
    if code.get_type()? != ValueType::String {
        return Ok(false);
    }
    let code = convert::cast::<String>(&code)?;
    Ok(FoldError::CODES.contains(&code.as_str()) && obj.is_error()?)
}

/// Every error code dsh-fold can produce.
#[napi]
pub fn fold_error_codes() -> Vec<&'static str> {
    FoldError::CODES.to_vec()
}

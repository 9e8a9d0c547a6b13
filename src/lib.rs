//! Node-API exports of dsh-fold: module lines and the `#[napi]` exports, each converting its
//! arguments, calling the core and mapping the result; every rule lives in `crates/fold-core`.
//! Errors are JS `Error`s with a stable `code` (see `FoldError::code`), rejected or thrown on the
//! JS thread. Here: the fold's rules alone (`selectRegion`, `planMatches`) and the error helpers.
//! The JS shapes are in `types.rs`; the store's exports in `store.rs`; `rewind` (the fold, driven
//! from the JS thread) in `rewind.rs`; block mode's planner in `blocks.rs`; the compaction policy's
//! planner in `compaction.rs`; recall's matcher in `recall.rs`; the extractive report in
//! `report.rs`; zstd in `zstd.rs`; the session mirror's class in `mirror.rs`; a fold's durable
//! stamp, after the fold, in `stamp.rs`. No panic leaves an export (`guard.rs`), and none is
//! written: `unwrap`/`expect` are denied outside tests.

#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod abort;
mod blocks;
mod compaction;
mod convert;
mod guard;
mod host;
mod mirror;
mod recall;
mod report;
mod rewind;
mod stamp;
mod store;
mod types;
mod zstd;

use fold_core::fold;
use fold_core::region;
use fold_core::surface::Surface;
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

pub use crate::blocks::{plan_block_summary, BlockCommitPlan, MAX_BLOCK_ID_LENGTH, MAX_BLOCK_TARGETS};
pub use crate::compaction::{
    fold_in_progress, plan_compaction, plan_compaction_range, CompactionItem, CompactionPlan, CompactionSplits,
    CompactionThought,
};
use crate::convert::{arg_or_throw, throw};
pub use crate::mirror::{MirrorReplacement, NodesPrice, ReportOf, SessionMirror};
pub use crate::recall::{recall_search, RecallSearch};
pub use crate::report::{
    extractive_report, extractive_report_of, report_facts, train_of_thought_of, ReportFacts, ReportOptions,
    ThoughtOptions,
};
pub use crate::rewind::rewind;
pub use crate::store::{
    close_store, compact_store, complete_fold, find_mark, has_active, has_active_sync, latest_mark, list_marks, mark,
    open_store,
};
pub use crate::types::*;
pub use crate::zstd::{decode_zstd, decode_zstd_log};

/// Largest log length / anchor accepted (seqs are 32-bit in the mirror's records).
const MAX_LOG_LENGTH: f64 = u32::MAX as f64 - 1.0;

/// Region selection alone, synchronously: what a fold at `anchor` would replace right now, read
/// off the session's mirror. `current` is the seq of the assistant node carrying the rewind call
/// (absent: inferred, the last assistant node when it has no call or an unanswered one).
#[napi(ts_args_type = "mirror: SessionMirror, anchor: number, current?: number | null")]
pub fn select_region(
    env: &Env,
    mirror: Unknown<'_>,
    anchor: Unknown<'_>,
    current: Option<Unknown<'_>>,
) -> Result<FoldRegion> {
    guard::throwing(env, "selectRegion", || {
        select_region_checked(env, mirror, anchor, current)
    })
}

fn select_region_checked(
    env: &Env,
    mirror: Unknown<'_>,
    anchor: Unknown<'_>,
    current: Option<Unknown<'_>>,
) -> Result<FoldRegion> {
    let anchor = arg_or_throw!(env, convert::integer(&anchor, "anchor", MAX_LOG_LENGTH));
    let surface = arg_or_throw!(env, rewind_surface(env, &mirror, anchor, current.as_ref()));
    let region = region::select(&surface, anchor).map_err(|e| throw(env, &e))?;
    Ok(FoldRegion::from(&fold::FoldRequest {
        mark_id: 0,
        anchor,
        region,
    }))
}

/// The commit-time check: does the session's mirror (with the same `current` as the selection)
/// still select exactly `plan`'s region?
#[napi(ts_args_type = "plan: FoldPlan | FoldRegion, mirror: SessionMirror, current?: number | null")]
pub fn plan_matches(env: &Env, plan: Unknown<'_>, mirror: Unknown<'_>, current: Option<Unknown<'_>>) -> Result<bool> {
    guard::throwing(env, "planMatches", || plan_matches_checked(env, plan, mirror, current))
}

fn plan_matches_checked(
    env: &Env,
    plan: Unknown<'_>,
    mirror: Unknown<'_>,
    current: Option<Unknown<'_>>,
) -> Result<bool> {
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
        convert::words(&seqs).map(|r| r.map_err(|_| FoldError::invalid("plan.seqs must be a Uint32Array")))
    );
    let surface = arg_or_throw!(env, rewind_surface(env, &mirror, anchor, current.as_ref()));
    Ok(region::still_matches(&surface, anchor, &seqs))
}

/// The surface a fold from `anchor` reads, off the session's mirror.
fn rewind_surface(
    env: &Env,
    v: &Unknown<'_>,
    anchor: u64,
    current: Option<&Unknown<'_>>,
) -> Result<convert::CoreResult<Surface>> {
    let Some(m) = mirror::of(env, v)? else {
        return Ok(Err(mirror::expected(v)?));
    };
    let current = match current.filter(|c| !matches!(c.get_type(), Ok(ValueType::Undefined | ValueType::Null))) {
        None => None,
        Some(c) => match convert::integer(c, "current", MAX_LOG_LENGTH)? {
            Ok(c) => Some(c as u32),
            Err(e) => return Ok(Err(e)),
        },
    };
    Ok(m.mirror.rewind_surface(anchor, current))
}

/// Whether `value` is an error raised by dsh-fold (an `Error` whose `code` is one of ours).
#[napi]
pub fn is_fold_error(env: &Env, value: Unknown<'_>) -> Result<bool> {
    guard::throwing(env, "isFoldError", || is_fold_error_checked(value))
}

fn is_fold_error_checked(value: Unknown<'_>) -> Result<bool> {
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
pub fn fold_error_codes(env: &Env) -> Result<Vec<&'static str>> {
    guard::throwing(env, "foldErrorCodes", || Ok(FoldError::CODES.to_vec()))
}

//! Node-API exports of dsh-fold. Each export converts its arguments, calls the core and maps
//! the result; every rule lives in `crates/fold-core`. Errors are JS `Error`s with a stable
//! `code` (see `FoldError::code`), rejected or thrown on the JS thread.

mod abort;
mod blocks;
mod convert;
mod host;
mod recall;
mod report;
mod zstd;
pub use crate::zstd::decode_zstd;

use std::sync::{Arc, Mutex};

use fold_core::fold::{self, Abort, RewindOptions};
use fold_core::region;
use fold_core::store::MarkRecord as CoreMark;
use fold_core::surface::Surface;
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::abort::SignalListener;
pub use crate::blocks::{plan_block_summary, BlockCommitPlan};
use crate::convert::{promise, rejected, throw, CoreResult};
pub use crate::host::{FoldPlan, FoldRegion, SummaryReply, SummaryUsage, TokenPrices};
pub use crate::recall::{recall_search, RecallSearch};
pub use crate::report::{extractive_report, ReportOptions};

/// Largest log length / anchor accepted (seqs are 32-bit in the snapshot format).
const MAX_LOG_LENGTH: f64 = u32::MAX as f64 - 1.0;
/// Largest mark id accepted from JS.
const MAX_MARK_ID: f64 = 9_007_199_254_740_991.0;

/// A mark as `mark` returns it: the id to fold to and the anchor.
#[napi(object)]
pub struct NewMark {
    pub id: i64,
    pub log_length: i64,
}

/// A stored mark.
#[napi(object)]
pub struct MarkRecord {
    pub id: i64,
    pub session_id: String,
    pub log_length: i64,
    pub objective: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Milliseconds since the Unix epoch; `null` while the mark is active.
    pub folded_at: Either<i64, Null>,
}

impl From<CoreMark> for MarkRecord {
    fn from(m: CoreMark) -> Self {
        Self {
            id: m.id as i64,
            session_id: m.session_id,
            log_length: m.log_length as i64,
            objective: m.objective,
            created_at: m.created_at as i64,
            folded_at: m.folded_at.map_or(Either::B(Null), |t| Either::A(t as i64)),
        }
    }
}

/// The result of a fold.
#[napi(object)]
pub struct RewindResult {
    pub mark_id: i64,
    pub folded_nodes: u32,
    pub start: u32,
    pub end: u32,
    pub folded_chars: i64,
    pub report_chars: i64,
    /// Region tokens minus report tokens; present only when `summarize` priced both (`tokens`).
    pub tokens_freed: Option<i64>,
    /// Present only when the report was committed but the mark could not be stamped folded: the
    /// fold happened, the mark still reads active, and the next `rewind` finishes the stamp.
    pub stamp_error: Option<String>,
}

/// Unwraps a conversion result or returns a promise rejected with its error.
macro_rules! arg_or_reject {
    ($env:expr, $conv:expr) => {
        match $conv? {
            Ok(v) => v,
            Err(e) => return rejected($env, e),
        }
    };
}

/// Unwraps a conversion result or throws its error.
macro_rules! arg_or_throw {
    ($env:expr, $conv:expr) => {
        match $conv? {
            Ok(v) => v,
            Err(e) => return Err(throw($env, &e)),
        }
    };
}

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

fn has_active_impl(store: &Unknown<'_>, session_id: &Unknown<'_>) -> Result<CoreResult<bool>> {
    let store = match convert::store(store)? {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    Ok(convert::string(session_id, "sessionId")?.and_then(|s| store.has_active(&s)))
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
    convert::settled(env, has_active_impl(&store, &session_id)?)
}

/// `hasActive` without the promise, for hot paths (the turn guard runs it at every turn end).
#[napi(ts_args_type = "store: StoreRef, sessionId: string")]
pub fn has_active_sync(env: &Env, store: Unknown<'_>, session_id: Unknown<'_>) -> Result<bool> {
    has_active_impl(&store, &session_id)?.map_err(|e| throw(env, &e))
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
    Ok(host::region_of(&fold::FoldRequest {
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

/// Options of `rewind`.
#[napi(object)]
pub struct RewindOptionsJs {
    /// Empty completions retried before failing. @default 2 (0..8)
    pub max_summarization_retries: Option<f64>,
    /// Aborts the fold until its commit starts; the rejection's `cause` is the signal's reason.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Object<'static>>,
}

/// Folds everything since the session's latest mark into the host's report.
#[napi(
    ts_args_type = "store: StoreRef, sessionId: string, host: RewindHost, options?: { maxSummarizationRetries?: number; signal?: AbortSignal }",
    ts_return_type = "Promise<RewindResult>"
)]
pub fn rewind<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Unknown<'e>,
    host: Unknown<'e>,
    options: Option<Unknown<'e>>,
) -> Result<PromiseRaw<'e, RewindResult>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let session_id = arg_or_reject!(env, convert::string(&session_id, "sessionId"));
    if host.get_type()? != ValueType::Object {
        return rejected(
            env,
            FoldError::invalid("host must be an object with snapshot, summarize and commit functions"),
        );
    }
    let host = convert::cast::<Object>(&host)?;
    let mut functions = Vec::new();
    for name in ["snapshot", "summarize", "commit"] {
        let f: Unknown = host.get_named_property(name)?;
        if f.get_type()? != ValueType::Function {
            return rejected(env, FoldError::invalid(format!("host.{name} must be a function")));
        }
        functions.push(f);
    }

    let mut retries = 2;
    let mut signal: Option<Object> = None;
    if let Some(options) = options.filter(|o| !matches!(o.get_type(), Ok(ValueType::Undefined | ValueType::Null))) {
        if options.get_type()? != ValueType::Object {
            return rejected(env, FoldError::invalid("options must be an object"));
        }
        let options = convert::cast::<Object>(&options)?;
        let r: Unknown = options.get_named_property("maxSummarizationRetries")?;
        if !matches!(r.get_type()?, ValueType::Undefined) {
            retries = arg_or_reject!(
                env,
                convert::integer(
                    &r,
                    "maxSummarizationRetries",
                    f64::from(fold::MAX_SUMMARIZATION_RETRIES)
                )
            ) as u32;
        }
        let s: Unknown = options.get_named_property("signal")?;
        match s.get_type()? {
            ValueType::Undefined | ValueType::Null => {}
            ValueType::Object => signal = Some(convert::cast::<Object>(&s)?),
            _ => return rejected(env, FoldError::invalid("options.signal must be an AbortSignal")),
        }
    }

    // The signal is checked now; its listener is added only once the snapshot is taken, so a
    // rejection before the fold starts leaves nothing attached to a long-lived signal.
    if let Some(signal) = &signal {
        if let Err(e) = abort::check(signal)? {
            return rejected(env, e);
        }
    }

    // The snapshot is taken now, on the JS thread, before anything can change the surface.
    // Whatever the callback throws (an Error, a string, a Symbol...) becomes this promise's coded
    // rejection with the thrown value as `cause`, never an exception escaping `rewind`.
    let snapshot = match convert::call_catching(env, &host, &functions[0])? {
        Ok(v) => match convert::snapshot(&v)? {
            Ok(words) => words,
            Err(e) => {
                return rejected(
                    env,
                    FoldError::HostFailed(format!("host.snapshot() returned garbage: {e}")),
                )
            }
        },
        Err(thrown) => {
            let e = napi::Error::from_unknown_without_coercion(thrown);
            let message = format!(
                "host.snapshot() threw: {}",
                if e.reason.is_empty() {
                    "a value that is not an Error (see cause)"
                } else {
                    &e.reason
                }
            );
            return convert::settle(
                env,
                async move { Err::<RewindResult, _>(FoldError::HostFailed(message)) },
                move |env, out| {
                    let err = out.err().expect("rejected");
                    Err(convert::reject(env, &err, Some(convert::thrown_value(env, e)?)))
                },
            );
        }
    };

    let abort = Abort::default();
    let listener = signal
        .as_ref()
        .map(|s| SignalListener::attach(env, s, &abort))
        .transpose()?;

    let cause = Arc::new(Mutex::new(None));
    let mut js_host = host::JsHost {
        snapshot: Some(snapshot),
        summarize: convert::cast::<Function<FnArgs<(FoldRegion, u32)>, host::SummaryReturn>>(&functions[1])?
            .build_threadsafe_function()
            .build()?,
        commit: convert::cast::<Function<FoldPlan, host::CommitReturn>>(&functions[2])?
            .build_threadsafe_function()
            .build()?,
        cause: cause.clone(),
    };
    let options = RewindOptions {
        max_summarization_retries: retries,
    };
    convert::settle(
        env,
        async move { fold::rewind(&store, &session_id, &mut js_host, options, &abort).await },
        move |env, out| {
            // Detach from the signal whatever happened.
            let reason = listener.map(|l| l.detach(env)).transpose()?;
            let err = match out {
                Ok(r) => {
                    return Ok(RewindResult {
                        mark_id: r.mark_id as i64,
                        folded_nodes: r.folded_nodes,
                        start: r.start,
                        end: r.end,
                        folded_chars: r.folded_chars as i64,
                        report_chars: r.report_chars as i64,
                        tokens_freed: r.tokens_freed.map(|t| t as i64),
                        stamp_error: r.stamp_error,
                    })
                }
                Err(err) => err,
            };
            let cause = match &err {
                FoldError::Aborted(_) => reason,
                FoldError::SummarizeFailed(_) | FoldError::HostFailed(_) => cause
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
                    .map(|e| convert::thrown_value(env, e))
                    .transpose()?,
                _ => None,
            };
            Err(convert::reject(env, &err, cause))
        },
    )
}

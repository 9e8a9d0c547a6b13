//! Node-API exports of dsh-fold. Each export converts its arguments, calls the core and maps
//! the result; every rule lives in `crates/fold-core`. Errors are JS `Error`s with a stable
//! `code` (see `FoldError::code`), rejected or thrown on the JS thread.

mod abort;
mod blocks;
mod convert;
mod host;
mod report;
mod store;
mod zstd;
pub use crate::store::{
    compact_store, complete_fold, has_active, has_active_sync, latest_mark, list_marks, mark, open_store,
};
pub use crate::zstd::decode_zstd;

use std::sync::{Arc, Mutex};

use fold_core::fold::{self, Abort, RewindOptions};
use fold_core::region;
use fold_core::surface::Surface;
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::abort::SignalListener;
pub use crate::blocks::{plan_block_summary, BlockCommitPlan};
use crate::convert::{rejected, throw};
pub use crate::host::{FoldPlan, FoldRegion, SummaryReply, SummaryUsage};
pub use crate::report::{extractive_report, ReportOptions};

/// Largest log length / anchor accepted (seqs are 32-bit in the snapshot format).
const MAX_LOG_LENGTH: f64 = u32::MAX as f64 - 1.0;

/// The result of a fold.
#[napi(object)]
pub struct RewindResult {
    pub mark_id: i64,
    pub folded_nodes: u32,
    pub start: u32,
    pub end: u32,
    pub folded_chars: i64,
    pub report_chars: i64,
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

//! The fold host implemented with JS callbacks.
//!
//! | Rust (`FoldHost`)   | JS (`RewindHost`)                                              |
//! |---------------------|----------------------------------------------------------------|
//! | `snapshot()`        | `snapshot(): Uint32Array` — called once, synchronously, by `rewind` itself |
//! | `summarize(r, n)`   | `summarize(region, attempt): Promise<string \| {text, finish?, usage?}>` |
//! | `commit(plan)`      | `commit(plan): 'committed' \| 'changed'` — synchronous         |
//!
//! Callbacks run through threadsafe functions with `call_async_catch`, so a synchronous throw
//! is an error value here rather than a process abort. Whatever a callback throws or rejects
//! with is kept (`cause`) so the caller sees its own error inside the coded one.

use std::sync::{Arc, Mutex};

use fold_core::fold::{Commit, FoldHost, FoldPlan as CorePlan, FoldRequest, Summary};
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunction;
use napi_derive::napi;

/// The region handed to `summarize`.
#[napi(object)]
pub struct FoldRegion {
    pub mark_id: i64,
    /// The mark's log length (the fold anchor).
    pub anchor: i64,
    /// Seq of the first and last folded node.
    pub start: u32,
    pub end: u32,
    /// The folded nodes' seqs in model order; also the replacement's `sourceEventSeqs`.
    pub seqs: Uint32Array,
    pub folded_nodes: u32,
    /// Model-visible text the region holds (UTF-16 units).
    pub folded_chars: i64,
}

/// What `commit` must append: a `user/message` with `surfaceOp: {op:'replace', start, end}`
/// and `sourceEventSeqs: seqs`, carrying `report`, if `planMatches(plan, snapshot)` still holds.
#[napi(object)]
pub struct FoldPlan {
    pub mark_id: i64,
    pub anchor: i64,
    pub start: u32,
    pub end: u32,
    pub seqs: Uint32Array,
    pub folded_nodes: u32,
    pub folded_chars: i64,
    pub report: String,
    pub report_chars: i64,
}

/// Token usage a summarizer may report; used in the message when every attempt was empty.
#[napi(object)]
pub struct SummaryUsage {
    pub output_tokens: Option<f64>,
    pub reasoning_tokens: Option<f64>,
}

/// Token prices of a fold, from the host's token meter (DSH's `ctx.tokenMeter`).
#[napi(object)]
pub struct TokenPrices {
    /// The folded region's nodes, as the meter prices them.
    pub region: f64,
    /// The replacement message carrying the report.
    pub report: f64,
}

/// What `summarize` resolves to (or just the report string).
#[napi(object)]
pub struct SummaryReply {
    pub text: String,
    /// The completion's finish reason, e.g. `stop` or `length`.
    pub finish: Option<String>,
    pub usage: Option<SummaryUsage>,
    /// With a token meter: the shrink check compares these instead of chars, and the result
    /// gains `tokensFreed`.
    pub tokens: Option<TokenPrices>,
}

impl TokenPrices {
    /// The core's prices, when both are integers a JS number holds exactly.
    fn to_core(&self) -> Option<fold_core::fold::TokenPrices> {
        let whole = |v: f64| (v.fract() == 0.0 && (0.0..=9_007_199_254_740_991.0).contains(&v)).then_some(v as u64);
        Some(fold_core::fold::TokenPrices {
            region: whole(self.region)?,
            report: whole(self.report)?,
        })
    }
}

pub fn region_of(request: &FoldRequest) -> FoldRegion {
    let r = &request.region;
    FoldRegion {
        mark_id: request.mark_id as i64,
        anchor: request.anchor as i64,
        start: r.start(),
        end: r.end(),
        seqs: Uint32Array::new(r.seqs.clone()),
        folded_nodes: r.seqs.len() as u32,
        folded_chars: r.folded_chars as i64,
    }
}

/// The type of what the callback `name` returned, read without converting it.
///
/// # Safety
/// `env` and `value` are the live handles napi passes to `from_napi_value`.
#[allow(unsafe_code, reason = "napi_typeof only inspects the value")]
unsafe fn type_of(env: napi::sys::napi_env, value: napi::sys::napi_value, name: &str) -> Result<ValueType> {
    let mut kind = 0;
    napi::check_status!(
        unsafe { napi::sys::napi_typeof(env, value, &mut kind) },
        "failed to read the type of what {} returned",
        name
    )?;
    Ok(ValueType::from(kind))
}

/// What `summarize` returned. Only a native `Promise` is awaited: napi's `Promise` conversion
/// calls `.then` and `.catch` on whatever it is given, and on `undefined`, `null` or a thenable
/// whose `then` returns nothing that throws inside the threadsafe call, where nothing catches
/// it: an uncaught exception (a deprecation warning today, fatal under Node's strict N-API
/// exception policy). Anything else is refused without being touched, as `SUMMARIZE_FAILED`.
pub enum SummaryReturn {
    Pending(Promise<Either<String, SummaryReply>>),
    NotAPromise(ValueType),
}

impl FromNapiValue for SummaryReturn {
    #[allow(
        unsafe_code,
        reason = "napi_is_promise and napi_typeof only inspect the value; Promise's own conversion runs only on a native promise"
    )]
    unsafe fn from_napi_value(env: napi::sys::napi_env, value: napi::sys::napi_value) -> Result<Self> {
        let mut is_promise = false;
        napi::check_status!(
            unsafe { napi::sys::napi_is_promise(env, value, &mut is_promise) },
            "failed to check whether summarize returned a promise"
        )?;
        if is_promise {
            return Ok(Self::Pending(unsafe { Promise::from_napi_value(env, value) }?));
        }
        Ok(Self::NotAPromise(unsafe { type_of(env, value, "summarize") }?))
    }
}

pub type SummarizeFn =
    ThreadsafeFunction<FnArgs<(FoldRegion, u32)>, SummaryReturn, FnArgs<(FoldRegion, u32)>, Status, false>;

/// What `commit` returned: its answer, or the type of whatever else it returned (a Promise, from
/// an `async` commit, is the likely mistake: the append may have run, the answer is unknown).
pub enum CommitReturn {
    Answer(String),
    NotAString(ValueType),
}

impl FromNapiValue for CommitReturn {
    #[allow(
        unsafe_code,
        reason = "napi_typeof only inspects the value; String's conversion runs only on a string"
    )]
    unsafe fn from_napi_value(env: napi::sys::napi_env, value: napi::sys::napi_value) -> Result<Self> {
        match unsafe { type_of(env, value, "commit") }? {
            ValueType::String => Ok(Self::Answer(unsafe { String::from_napi_value(env, value) }?)),
            other => Ok(Self::NotAString(other)),
        }
    }
}

pub type CommitFn = ThreadsafeFunction<FoldPlan, CommitReturn, FoldPlan, Status, false>;

/// The JS value a callback failed with, kept for the rejection's `cause`.
pub type Cause = Arc<Mutex<Option<napi::Error>>>;

pub struct JsHost {
    pub snapshot: Option<Vec<u32>>,
    pub summarize: SummarizeFn,
    pub commit: CommitFn,
    pub cause: Cause,
}

impl JsHost {
    fn keep(&self, err: napi::Error) {
        *self.cause.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(err);
    }
}

impl FoldHost for JsHost {
    async fn snapshot(&mut self) -> std::result::Result<Vec<u32>, FoldError> {
        self.snapshot
            .take()
            .ok_or_else(|| FoldError::HostFailed("the surface snapshot was already consumed".into()))
    }

    async fn summarize(&mut self, request: &FoldRequest, attempt: u32) -> std::result::Result<Summary, FoldError> {
        let args = FnArgs::from((region_of(request), attempt));
        let outcome = match self.summarize.call_async_catch(args).await {
            Ok(SummaryReturn::Pending(promise)) => promise.await,
            Ok(SummaryReturn::NotAPromise(kind)) => {
                return Err(FoldError::SummarizeFailed(format!(
                    "summarization failed: summarize must return a Promise of a string or {{text}}, \
                     got {}; nothing was folded and the mark is still active",
                    format!("{kind}").to_lowercase()
                )))
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok(Either::A(text)) => Ok(Summary {
                text,
                ..Summary::default()
            }),
            Ok(Either::B(reply)) => {
                let tokens = match &reply.tokens {
                    None => None,
                    Some(t) => Some(TokenPrices::to_core(t).ok_or_else(|| {
                        FoldError::SummarizeFailed(
                            "summarization failed: tokens.region and tokens.report must be integers from 0 to 2^53 - 1; \
                             nothing was folded and the mark is still active"
                                .into(),
                        )
                    })?),
                };
                Ok(Summary {
                    text: reply.text,
                    finish: reply.finish,
                    output_tokens: reply.usage.as_ref().and_then(|u| u.output_tokens).map(|t| t as u64),
                    reasoning_tokens: reply.usage.as_ref().and_then(|u| u.reasoning_tokens).map(|t| t as u64),
                    tokens,
                })
            }
            Err(e) => {
                let message = format!(
                    "summarization failed: {}; nothing was folded and the mark is still active",
                    if e.reason.is_empty() {
                        "the summarizer threw or rejected a value that is not an Error (see cause)"
                    } else {
                        &e.reason
                    }
                );
                self.keep(e);
                Err(FoldError::SummarizeFailed(message))
            }
        }
    }

    async fn commit(&mut self, plan: &CorePlan) -> std::result::Result<Commit, FoldError> {
        let region = region_of(&plan.request);
        let js_plan = FoldPlan {
            mark_id: region.mark_id,
            anchor: region.anchor,
            start: region.start,
            end: region.end,
            seqs: region.seqs,
            folded_nodes: region.folded_nodes,
            folded_chars: region.folded_chars,
            report: plan.report.clone(),
            report_chars: plan.report_chars as i64,
        };
        match self.commit.call_async_catch(js_plan).await {
            Ok(CommitReturn::Answer(answer)) if answer == "committed" => Ok(Commit::Committed),
            Ok(CommitReturn::Answer(answer)) if answer == "changed" => Ok(Commit::Changed),
            Ok(CommitReturn::Answer(answer)) => Err(FoldError::HostFailed(format!(
                "commit must return 'committed' or 'changed', got {answer:?}; the fold state is unknown"
            ))),
            Ok(CommitReturn::NotAString(kind)) => Err(FoldError::HostFailed(format!(
                "commit must synchronously return 'committed' or 'changed', got {}; the fold state is unknown \
                 (if the report was appended, the next rewind finishes the fold)",
                format!("{kind}").to_lowercase()
            ))),
            Err(e) => {
                let message = format!(
                    "commit failed: {}",
                    if e.reason.is_empty() {
                        "it threw a value that is not an Error (see cause)"
                    } else {
                        &e.reason
                    }
                );
                self.keep(e);
                Err(FoldError::HostFailed(message))
            }
        }
    }
}

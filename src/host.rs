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

/// What `summarize` resolves to (or just the report string).
#[napi(object)]
pub struct SummaryReply {
    pub text: String,
    /// The completion's finish reason, e.g. `stop` or `length`.
    pub finish: Option<String>,
    pub usage: Option<SummaryUsage>,
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

pub type SummarizeFn = ThreadsafeFunction<
    FnArgs<(FoldRegion, u32)>,
    Promise<Either<String, SummaryReply>>,
    FnArgs<(FoldRegion, u32)>,
    Status,
    false,
>;
pub type CommitFn = ThreadsafeFunction<FoldPlan, String, FoldPlan, Status, false>;

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
            Ok(promise) => promise.await,
            Err(e) => Err(e),
        };
        match outcome {
            Ok(Either::A(text)) => Ok(Summary {
                text,
                ..Summary::default()
            }),
            Ok(Either::B(reply)) => Ok(Summary {
                text: reply.text,
                finish: reply.finish,
                output_tokens: reply.usage.as_ref().and_then(|u| u.output_tokens).map(|t| t as u64),
                reasoning_tokens: reply.usage.as_ref().and_then(|u| u.reasoning_tokens).map(|t| t as u64),
            }),
            Err(e) => {
                let message = format!(
                    "summarization failed: {}; nothing was folded and the mark is still active",
                    if e.reason.is_empty() {
                        "the summarizer threw or rejected"
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
            Ok(answer) if answer == "committed" => Ok(Commit::Committed),
            Ok(answer) if answer == "changed" => Ok(Commit::Changed),
            Ok(answer) => Err(FoldError::HostFailed(format!(
                "commit must return 'committed' or 'changed', got {answer:?}; the fold state is unknown"
            ))),
            Err(e) => {
                let message = format!("commit failed: {}", e.reason);
                self.keep(e);
                Err(FoldError::HostFailed(message))
            }
        }
    }
}

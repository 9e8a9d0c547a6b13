//! The JS shapes of the addon's values (`#[napi(object)]`), documented for `index.d.ts`.

use fold_core::fold::{FoldRequest, FoldResult};
use fold_core::store::MarkRecord as CoreMark;
use napi::bindgen_prelude::*;
use napi_derive::napi;

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

/// The result of a fold. Exactly the reference's `{markId, foldedNodes, start, end,
/// foldedChars, reportChars}` unless one of the optional keys below applies.
#[napi(object)]
pub struct RewindResult {
    pub mark_id: i64,
    pub folded_nodes: u32,
    /// Seq of the first and last folded node (the replace op's range).
    pub start: u32,
    pub end: u32,
    /// Model-visible text the region held (UTF-16 units).
    pub folded_chars: i64,
    pub report_chars: i64,
    /// Region tokens minus report tokens; present only when `summarize` priced both (`tokens`).
    pub tokens_freed: Option<i64>,
}

impl From<FoldResult> for RewindResult {
    fn from(r: FoldResult) -> Self {
        Self {
            mark_id: r.mark_id as i64,
            folded_nodes: r.folded_nodes,
            start: r.start,
            end: r.end,
            folded_chars: r.folded_chars as i64,
            report_chars: r.report_chars as i64,
            tokens_freed: r.tokens_freed.map(|t| t as i64),
        }
    }
}

/// Options of `rewind`.
#[napi(object, object_to_js = false)]
pub struct RewindOptions {
    /// Empty completions retried before failing (0 to 8).
    /// @default 2
    pub max_summarization_retries: Option<f64>,
    /// Cancels the fold until its commit starts: the promise rejects `ABORTED` with the signal's
    /// reason as `cause`, and nothing is written.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Object<'static>>,
    /// Told when the mark's durable stamp keeps failing after the fold's result was given (the
    /// fold happened; the mark still reads active, and the next `rewind` finishes the stamp): an
    /// `Error` whose `code` is the store's (`STORE_IO`, ...). Without it the error is emitted as
    /// a process warning.
    #[napi(ts_type = "(error: Error & { code: string }) => void")]
    pub on_stamp_error: Option<Object<'static>>,
}

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

impl From<&FoldRequest> for FoldRegion {
    fn from(request: &FoldRequest) -> Self {
        let r = &request.region;
        Self {
            mark_id: request.mark_id as i64,
            anchor: request.anchor as i64,
            start: r.start(),
            end: r.end(),
            seqs: Uint32Array::new(r.seqs.clone()),
            folded_nodes: r.seqs.len() as u32,
            folded_chars: r.folded_chars as i64,
        }
    }
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

impl From<&fold_core::fold::FoldPlan> for FoldPlan {
    fn from(plan: &fold_core::fold::FoldPlan) -> Self {
        let region = FoldRegion::from(&plan.request);
        Self {
            mark_id: region.mark_id,
            anchor: region.anchor,
            start: region.start,
            end: region.end,
            seqs: region.seqs,
            folded_nodes: region.folded_nodes,
            folded_chars: region.folded_chars,
            report: plan.report.clone(),
            report_chars: plan.report_chars as i64,
        }
    }
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

/// A decoded `session.jsonl.zstd` (`decodeZstdLog`): the complete frames' text, then what a torn
/// final frame still decodes to.
#[napi(object)]
pub struct DecodedZstdLog {
    /// The decoded bytes: every complete frame's text, then the torn frame's recovered prefix.
    pub text: Buffer,
    /// Where each complete frame's text ends in `text` (one entry per complete frame).
    pub frame_ends: Vec<u32>,
    /// The index of the torn final frame, or null when the data ends at a frame boundary.
    pub torn_frame: Option<u32>,
    /// The byte offset (in the input) where the torn final frame starts, or null.
    pub torn_byte: Option<u32>,
}

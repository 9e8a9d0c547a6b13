//! The rewind transaction: fold everything since a session's latest mark into a report.
//!
//! The host owns the session and the LLM; the core owns the rules, the lock and the store:
//!
//! 1. latest mark of the session: none → `NO_CHECKPOINT`; already folded → `EMPTY_REGION`;
//! 2. the session's fold lock, without waiting: held → `FOLD_IN_PROGRESS`;
//! 3. snapshot the surface; if a report of this very mark is already on it (a crash between
//!    commit and stamp: a report naming the mark's id, appended after the mark was taken),
//!    finish the stamp and return that fold's result — never fold it again;
//!    else select the region ([`crate::region`]);
//! 4. summarize; an empty report is retried up to `max_summarization_retries` times, then
//!    `SUMMARIZE_FAILED` with the last finish reason and token usage;
//! 5. the report must be smaller than the region — in tokens when the host's meter priced both,
//!    else in model-visible chars — or `SHRINK` (skipped for a region that weighs nothing);
//! 6. commit: the host re-selects from a fresh snapshot and appends the replacement in one
//!    synchronous step, or answers "changed" → `CHANGED`;
//! 7. stamp the mark folded (durable), release the lock, return the [`FoldResult`].
//!
//! Any failure before 6 writes nothing: the region is intact, the mark active, the fold
//! retryable. An abort is honoured until the commit starts, even while the summarizer hangs.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

use crate::error::{FoldError, Result};
use crate::locks::session_locks;
use crate::region::{self, Region};
use crate::store::{check_session_id, MarkRecord, Store};
use crate::surface::Surface;

/// The retry budget's upper bound (the plugin's schema enforces the same range).
pub const MAX_SUMMARIZATION_RETRIES: u32 = 8;

/// What the summarizer is asked to condense.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldRequest {
    pub mark_id: u64,
    pub anchor: u64,
    pub region: Region,
}

/// One summarizer answer. An empty (or all-whitespace) `text` is an empty completion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub text: String,
    pub finish: Option<String>,
    pub output_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    /// The host's token prices of the region and of the report, when it has a token meter: the
    /// shrink check then compares them instead of chars, and the result reports `tokens_freed`.
    pub tokens: Option<TokenPrices>,
}

/// Token prices measured by the host's meter (DSH's `ctx.tokenMeter`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenPrices {
    /// The folded region's nodes.
    pub region: u64,
    /// The replacement message carrying the report.
    pub report: u64,
}

/// What the host must append, if the surface still selects the same region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldPlan {
    pub request: FoldRequest,
    pub report: String,
    pub report_chars: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    Committed,
    Changed,
}

/// The result every successful rewind returns (and a repaired one reconstructs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldResult {
    pub mark_id: u64,
    pub folded_nodes: u32,
    pub start: u32,
    pub end: u32,
    pub folded_chars: u64,
    pub report_chars: u64,
    /// Region tokens minus report tokens, when the host priced both ([`Summary::tokens`]).
    pub tokens_freed: Option<u64>,
    /// Why the mark could not be stamped folded after the report was committed, when it could
    /// not (after [`STAMP_ATTEMPTS`] tries). The fold happened; the next rewind repairs the stamp.
    pub stamp_error: Option<String>,
}

/// Tries of the durable stamp once the report is committed.
pub const STAMP_ATTEMPTS: u32 = 3;

/// The session side of a fold.
pub trait FoldHost {
    /// The surface now, in the [`crate::surface`] format.
    fn snapshot(&mut self) -> impl Future<Output = Result<Vec<u32>>> + Send;
    /// Writes the report for `request`; `attempt` counts from 0.
    fn summarize(&mut self, request: &FoldRequest, attempt: u32) -> impl Future<Output = Result<Summary>> + Send;
    /// In one step that nothing else can interleave with: re-select on a fresh snapshot, and
    /// append the replacement only if the region is unchanged ([`region::still_matches`]).
    fn commit(&mut self, plan: &FoldPlan) -> impl Future<Output = Result<Commit>> + Send;
}

/// A one-shot cancellation flag that async code can wait on.
#[derive(Debug, Default, Clone)]
pub struct Abort(Arc<(AtomicBool, Notify)>);

impl Abort {
    pub fn fire(&self) {
        self.0 .0.store(true, Ordering::SeqCst);
        self.0 .1.notify_waiters();
    }

    pub fn fired(&self) -> bool {
        self.0 .0.load(Ordering::SeqCst)
    }

    /// Resolves once fired.
    pub async fn wait(&self) {
        loop {
            let notified = self.0 .1.notified();
            if self.fired() {
                return;
            }
            notified.await;
        }
    }

    fn check(&self) -> Result<()> {
        if self.fired() {
            Err(FoldError::Aborted(
                "the rewind was aborted; nothing was written and the mark is still active".into(),
            ))
        } else {
            Ok(())
        }
    }

    /// Runs `fut` unless the abort fires first.
    async fn race<T>(&self, fut: impl Future<Output = Result<T>>) -> Result<T> {
        self.check()?;
        tokio::select! {
            biased;
            () = self.wait() => self.check().map(|()| unreachable!("fired")),
            out = fut => out,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct RewindOptions {
    pub max_summarization_retries: u32,
}

impl Default for RewindOptions {
    fn default() -> Self {
        Self {
            max_summarization_retries: 2,
        }
    }
}

/// The length JS would report for `text` (UTF-16 code units), so every size we compare or
/// return is in the host's unit.
pub fn js_len(text: &str) -> u64 {
    text.encode_utf16().count() as u64
}

/// Runs blocking store I/O (a durable write) without stalling the async runtime. On a
/// multi-threaded runtime (napi's) it runs right here, after handing this worker's other tasks
/// to its peers: a hop to the blocking pool and back costs 150–300 µs on a parked VM, more than
/// the write on tmpfs. A current-thread runtime cannot do that, so it hops.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread) {
        return tokio::task::block_in_place(f);
    }
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| FoldError::StoreIo(format!("checkpoint store worker failed: {e}")))?
}

/// The session's latest mark, from memory (the file is read on first use, off the async thread).
pub async fn latest_mark(store: &Arc<Store>, session_id: &str) -> Result<Option<MarkRecord>> {
    // In memory already: answer here, without two hops through the blocking pool (~150 µs of a
    // fold on an idle 2-core VM; bench/fold.mjs).
    if let Some(answer) = store.latest_in_memory(session_id) {
        return answer;
    }
    let (store, session) = (store.clone(), session_id.to_owned());
    blocking(move || store.latest(&session)).await
}

/// Records a mark once any running fold of the session is done (see [`crate::locks`]).
pub async fn mark(
    store: &Arc<Store>,
    session_id: &str,
    log_length: u64,
    objective: Option<String>,
) -> Result<MarkRecord> {
    check_session_id(session_id)?;
    let _guard = session_locks().lock(&store.path().to_string_lossy(), session_id).await;
    let (store, session) = (store.clone(), session_id.to_owned());
    blocking(move || store.mark(&session, log_length, objective.as_deref())).await
}

/// Stamps the mark folded (durable); see [`Store::complete_fold`].
pub async fn complete_fold(store: &Arc<Store>, session_id: &str, mark_id: u64) -> Result<bool> {
    let (store, session) = (store.clone(), session_id.to_owned());
    blocking(move || store.complete_fold(&session, mark_id)).await
}

/// Runs the whole transaction described in the module docs.
///
/// # Errors
/// Every code of [`FoldError`] that a fold can produce; the host's own errors pass through.
pub async fn rewind<H: FoldHost>(
    store: &Arc<Store>,
    session_id: &str,
    host: &mut H,
    options: RewindOptions,
    abort: &Abort,
) -> Result<FoldResult> {
    check_session_id(session_id)?;
    if options.max_summarization_retries > MAX_SUMMARIZATION_RETRIES {
        return Err(FoldError::invalid(format!(
            "maxSummarizationRetries must be from 0 to {MAX_SUMMARIZATION_RETRIES}, got {}",
            options.max_summarization_retries
        )));
    }
    abort.check()?;

    // 1. the mark.
    let Some(mark) = latest_mark(store, session_id).await? else {
        return Err(FoldError::NoCheckpoint(
            "no checkpoint mark for this session: call `checkpoint` before an exploration, then `rewind` when it is done"
                .into(),
        ));
    };
    if mark.folded_at.is_some() {
        return Err(FoldError::EmptyRegion(format!(
            "checkpoint mark {} was already folded; call `checkpoint` to start a new exploration",
            mark.id
        )));
    }

    // 2. the lock.
    let Some(_guard) = session_locks().try_lock(&store.path().to_string_lossy(), session_id) else {
        return Err(FoldError::FoldInProgress(format!(
            "a rewind of session {session_id} is already running; wait for its result instead of rewinding again"
        )));
    };

    // 3. the region, or the repair of a fold committed but never stamped.
    let surface = Surface::decode(&abort.race(host.snapshot()).await?)?;
    // A report repairs the mark only if it names it AND was appended after it was taken: ids
    // restart at 1 when the store file is deleted or `store` moves, so an older report may name
    // a new mark's id.
    let repairs = |r: &&crate::surface::Report| r.mark_id == mark.id && u64::from(r.seq) >= mark.log_length;
    if let Some(report) = surface.reports.iter().find(repairs) {
        let stamp_error = stamp(store, session_id, mark.id).await;
        return Ok(FoldResult {
            mark_id: mark.id,
            folded_nodes: report.folded_nodes,
            start: report.start,
            end: report.end,
            folded_chars: u64::from(report.folded_chars),
            report_chars: u64::from(
                surface
                    .nodes
                    .iter()
                    .find(|n| n.seq == report.seq)
                    .map_or(0, |n| n.chars),
            ),
            tokens_freed: None,
            stamp_error,
        });
    }
    let region = region::select(&surface, mark.log_length)?;
    let request = FoldRequest {
        mark_id: mark.id,
        anchor: mark.log_length,
        region,
    };

    // 4. the report.
    let mut last = Summary::default();
    let mut report = None;
    for attempt in 0..=options.max_summarization_retries {
        last = abort.race(host.summarize(&request, attempt)).await?;
        if !last.text.trim().is_empty() {
            report = Some(std::mem::take(&mut last.text));
            break;
        }
    }
    let Some(report) = report else {
        return Err(FoldError::SummarizeFailed(empty_completion_message(
            options.max_summarization_retries,
            &last,
        )));
    };

    // 5. the shrink check: in tokens when the host priced them, else in chars.
    let report_chars = js_len(&report);
    let folded_chars = request.region.folded_chars;
    let nodes = request.region.seqs.len();
    let tokens_freed = match last.tokens {
        Some(TokenPrices { region, report }) => {
            if region > 0 && report >= region {
                return Err(FoldError::Shrink(format!(
                    "the report ({report} tokens) is not smaller than the folded region ({region} tokens over {nodes} nodes); \
                     nothing was folded and the mark is still active"
                )));
            }
            Some(region.saturating_sub(report))
        }
        None => {
            if folded_chars > 0 && report_chars >= folded_chars {
                return Err(FoldError::Shrink(format!(
                    "the report ({report_chars} chars) is not smaller than the folded region ({folded_chars} chars over {nodes} nodes); \
                     nothing was folded and the mark is still active"
                )));
            }
            None
        }
    };

    // 6. the commit.
    abort.check()?;
    let plan = FoldPlan {
        request,
        report,
        report_chars,
    };
    if host.commit(&plan).await? == Commit::Changed {
        return Err(FoldError::Changed(
            "the surface changed while the report was being written (another fold or a compaction); \
             nothing was folded, rewind again"
                .into(),
        ));
    }

    // 7. the stamp. The fold has happened: nothing from here on fails the rewind.
    let stamp_error = stamp(store, session_id, mark.id).await;
    let region = &plan.request.region;
    Ok(FoldResult {
        mark_id: mark.id,
        folded_nodes: region.seqs.len() as u32,
        start: region.start(),
        end: region.end(),
        folded_chars,
        report_chars,
        tokens_freed,
        stamp_error,
    })
}

/// Stamps the mark folded, trying [`STAMP_ATTEMPTS`] times; the last error, if every try failed.
async fn stamp(store: &Arc<Store>, session_id: &str, mark_id: u64) -> Option<String> {
    let mut last = None;
    for _ in 0..STAMP_ATTEMPTS {
        match complete_fold(store, session_id, mark_id).await {
            Ok(_) => return None,
            Err(e) => last = Some(e),
        }
    }
    last.map(|e| {
        format!(
            "{}: the report was committed but mark {mark_id} could not be stamped folded ({e}); \
             the next rewind finishes the stamp",
            e.code()
        )
    })
}

fn empty_completion_message(retries: u32, last: &Summary) -> String {
    let mut usage = Vec::new();
    if let Some(t) = last.output_tokens {
        usage.push(format!("outputTokens {t}"));
    }
    if let Some(t) = last.reasoning_tokens {
        usage.push(format!("reasoningTokens {t}"));
    }
    format!(
        "summarization returned an empty report {} time(s) (finish: {}{}{}); nothing was folded and the mark is still active",
        retries + 1,
        last.finish.as_deref().unwrap_or("unknown"),
        if usage.is_empty() { "" } else { ", " },
        usage.join(", ")
    )
}

//! The rewind transaction, in its order: fold everything since a session's latest mark into a
//! report. The host owns the session and the LLM; the core owns the rules, the order and the lock.
//!
//! [`Rewind`] is a state machine without I/O: the host drives it, feeding each answer back and
//! doing what the returned [`Step`] says. The binding drives it from the JS thread (the mirror is
//! read there, summarize and commit are JS calls; only the durable stamp leaves the thread);
//! tests drive it directly. The order:
//!
//! 1. the session's latest mark (the host looks it up, [`Rewind::begin`] judges it): none →
//!    `NO_CHECKPOINT`; already folded → `EMPTY_REGION` (one fold per mark);
//! 2. the session's fold lock, without waiting: held → `FOLD_IN_PROGRESS`;
//! 3. [`Step::Snapshot`]: the session now, read off its mirror ([`Rewind::read`]). If the log
//!    already holds a report of this very mark (its commit landed but its stamp did not: a crash
//!    between the two, a failed store write; a report naming the mark's id, appended after the
//!    mark was taken), the fold is finished: stamp it and return that fold's result, never fold
//!    again — wherever the report stands now, on the surface or replaced since by a compaction
//!    (a second fold would take everything after the compaction, the user's next request with
//!    it). Else select the region ([`crate::region`]);
//! 4. [`Step::Summarize`]: an empty report, or one cut off at its output budget
//!    ([`Summary::truncated`]), is retried up to `max_summarization_retries` times, then
//!    `SUMMARIZE_FAILED` with the last finish reason and token usage;
//! 5. the report must be smaller than the region — in tokens when the host's meter priced both,
//!    else in model-visible chars — or `SHRINK` (skipped for a region that weighs nothing);
//! 6. [`Step::Commit`]: in one synchronous step the host re-selects on its mirror in step with
//!    the session and appends the replacement, or answers "changed" → `CHANGED`;
//! 7. [`Step::Stamp`]: the fold has happened, so its result is out now (the host settles with it
//!    at once: the durable session log, whose replacement names the mark, is the fold's record);
//!    then the mark is stamped folded, durably, off the fold's critical path. A stamp that fails
//!    is tried again, then [`Step::Done`] carries `stamp_error` for the host to report late, and
//!    the next rewind finishes the stamp (step 3). Dropping the machine releases the lock.
//!
//! Any failure before 6 writes nothing: the region is intact, the mark active, the fold
//! retryable. [`Rewind::abort`] is honoured until the commit starts (the driver defers one that
//! fires during the commit). Dropping a `Rewind` (after
//! an error, an abort or `Done`) releases the session's lock.

use std::sync::Arc;

use crate::error::{FoldError, Result};
use crate::locks::{session_locks, SessionGuard};
use crate::meter::utf16_len;
use crate::mirror::{MarkReport, Mirror};
use crate::region::{self, Region};
use crate::store::{check_session_id, MarkRecord, Store};
use crate::surface::Surface;

/// The retry budget's upper bound (the plugin's schema enforces the same range).
pub const MAX_SUMMARIZATION_RETRIES: u32 = 8;

/// Tries of the durable stamp once the report is committed.
pub const STAMP_ATTEMPTS: u32 = 3;

/// The mark a fold starts from: a store's record, or what another checkpoint service returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    pub id: u64,
    /// The session's log length when the mark was taken: the fold starts after it.
    pub log_length: u64,
    pub folded: bool,
}

impl From<&MarkRecord> for Anchor {
    fn from(m: &MarkRecord) -> Self {
        Self {
            id: m.id,
            log_length: m.log_length,
            folded: m.folded_at.is_some(),
        }
    }
}

/// What the summarizer is asked to condense.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldRequest {
    pub mark_id: u64,
    pub anchor: u64,
    pub region: Region,
}

/// One summarizer answer. An empty (or all-whitespace) `text` is an empty completion; one that
/// stopped at its output budget ([`Summary::truncated`]) is no whole report either.
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

impl Summary {
    /// Whether the writer stopped at its output budget (finish `max-tokens`, DSH's name, or
    /// `length`, the OpenAI-compatible one): the text is cut off, never committed as a report.
    pub fn truncated(&self) -> bool {
        matches!(self.finish.as_deref(), Some("max-tokens" | "length"))
    }
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

/// The host's answer to [`Step::Commit`].
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

/// What the host must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Read the session's mirror, in step with the session now, with [`Rewind::read`].
    Snapshot,
    /// Ask the summarizer (`attempt` counts from 0) and pass its answer to [`Rewind::summarized`].
    Summarize { request: FoldRequest, attempt: u32 },
    /// In one synchronous step: re-select on the session's mirror in step
    /// ([`region::still_matches`]) and append the replacement if unchanged; pass the answer to
    /// [`Rewind::committed`].
    Commit(FoldPlan),
    /// The fold happened: settle with `result` now (it is final), then stamp `mark_id` folded,
    /// durably (off the JS thread), and pass the outcome to [`Rewind::stamped`].
    Stamp { mark_id: u64, result: FoldResult },
    /// The fold is over. After a [`Step::Stamp`] the result was already given; only
    /// `stamp_error` is news (a stamp that kept failing, to report late).
    Done(FoldResult),
}

enum Phase {
    Snapshot,
    Summarize { request: FoldRequest, attempt: u32 },
    Commit { plan: FoldPlan, tokens_freed: Option<u64> },
    Stamp { result: FoldResult, tries: u32 },
    Over,
}

/// One rewind in progress; holds its session's fold lock until dropped.
pub struct Rewind {
    session_id: String,
    mark: Anchor,
    options: RewindOptions,
    phase: Phase,
    /// The host answered `committed` (or a report of this mark was found): the fold happened.
    committed: bool,
    _lock: SessionGuard,
}

impl std::fmt::Debug for Rewind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rewind")
            .field("session_id", &self.session_id)
            .field("mark", &self.mark)
            .finish_non_exhaustive()
    }
}

impl Rewind {
    /// Steps 1 and 2: judges the session's latest mark and takes the session's lock.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` (session id, retries), `NO_CHECKPOINT`, `EMPTY_REGION` (folded mark),
    /// `FOLD_IN_PROGRESS`.
    pub fn begin(session_id: &str, mark: Option<Anchor>, options: RewindOptions) -> Result<(Self, Step)> {
        check_session_id(session_id)?;
        if options.max_summarization_retries > MAX_SUMMARIZATION_RETRIES {
            return Err(FoldError::invalid(format!(
                "maxSummarizationRetries must be from 0 to {MAX_SUMMARIZATION_RETRIES}, got {}",
                options.max_summarization_retries
            )));
        }
        let Some(mark) = mark else {
            return Err(FoldError::NoCheckpoint(
                "no checkpoint mark for this session: call `checkpoint` before an exploration, then `rewind` when it is done"
                    .into(),
            ));
        };
        if mark.folded {
            return Err(FoldError::EmptyRegion(format!(
                "checkpoint mark {} was already folded; call `checkpoint` to start a new exploration",
                mark.id
            )));
        }
        let Some(lock) = session_locks().try_lock(session_id) else {
            return Err(FoldError::FoldInProgress(format!(
                "another fold is already in progress for session {session_id}; wait for its result instead of rewinding again"
            )));
        };
        let rewind = Self {
            session_id: session_id.to_owned(),
            mark,
            options,
            phase: Phase::Snapshot,
            committed: false,
            _lock: lock,
        };
        Ok((rewind, Step::Snapshot))
    }

    /// The session this fold belongs to.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The fold's anchor: the mark's log length (a host may meter only what a fold from it reaches).
    pub fn anchor(&self) -> u64 {
        self.mark.log_length
    }

    /// Whether the fold has happened (the commit answered `committed`, or the report of this mark
    /// was already on the surface): from here on nothing fails the fold and an abort is ignored.
    pub fn committed_already(&self) -> bool {
        self.committed
    }

    fn out_of_order(&mut self, what: &str) -> FoldError {
        self.phase = Phase::Over;
        FoldError::HostFailed(format!("the fold was driven out of order: {what} came unasked"))
    }

    /// Step 3 on the session's mirror: the mark's report wherever the log holds it (a repair),
    /// else the region from the mark on the surface. The mirror is the host's: a mirror that
    /// cannot answer (broken, or its log index unknown, so a report a compaction replaced would
    /// go unseen) fails the fold as `HOST_FAILED`, writing nothing.
    ///
    /// # Errors
    /// `HOST_FAILED` for a mirror that cannot answer; `EMPTY_REGION` / `UNBALANCED` from the
    /// region rules.
    pub fn read(&mut self, mirror: &Mirror, current: Option<u32>) -> Result<Step> {
        if !matches!(self.phase, Phase::Snapshot) {
            return Err(self.out_of_order("a reading of the mirror"));
        }
        let host_failed = |e: FoldError| FoldError::HostFailed(format!("the host's session mirror cannot answer: {e}"));
        let surface = (|| {
            if let Some(why) = mirror.broken() {
                return Err(FoldError::invalid(format!(
                    "the session mirror is out of step with its session: {why}"
                )));
            }
            if !mirror.log_known() {
                return Err(FoldError::invalid(
                    "its log index is not known (SessionMirror.loadLog first), so a report of this mark replaced since could go unseen",
                ));
            }
            match mirror.mark_report(self.mark.id, self.mark.log_length) {
                Some(report) => Ok(Err(report)),
                None => mirror.rewind_surface(self.mark.log_length, current).map(Ok),
            }
        })();
        let chosen = match surface {
            Ok(Ok(surface)) => self.select(&surface),
            Ok(Err(report)) => Ok(self.repair(&report)),
            Err(e) => Err(host_failed(e)),
        };
        self.enter(chosen)
    }

    /// Enters the phase step 3 chose (a repair is a committed fold), or ends on its error.
    fn enter(&mut self, chosen: Result<(Phase, Step)>) -> Result<Step> {
        let (phase, step) = chosen.inspect_err(|_| self.phase = Phase::Over)?;
        self.committed = matches!(phase, Phase::Stamp { .. });
        self.phase = phase;
        Ok(step)
    }

    /// The fold a report already in the log recorded: stamp it, return its result.
    fn repair(&self, report: &MarkReport) -> (Phase, Step) {
        let facts = &report.facts;
        let result = FoldResult {
            mark_id: self.mark.id,
            folded_nodes: facts.folded_nodes,
            start: facts.start,
            end: facts.end,
            folded_chars: facts.folded_chars,
            report_chars: u64::from(report.chars),
            tokens_freed: None,
            stamp_error: None,
        };
        let step = Step::Stamp {
            mark_id: self.mark.id,
            result: result.clone(),
        };
        (Phase::Stamp { result, tries: 0 }, step)
    }

    /// The region from the mark on the surface: step 4 asks for its report.
    fn select(&self, surface: &Surface) -> Result<(Phase, Step)> {
        let mark = self.mark;
        let request = FoldRequest {
            mark_id: mark.id,
            anchor: mark.log_length,
            region: region::select(surface, mark.log_length)?,
        };
        let step = Step::Summarize {
            request: request.clone(),
            attempt: 0,
        };
        Ok((Phase::Summarize { request, attempt: 0 }, step))
    }

    /// Steps 4 and 5: the summarizer's answer to the last [`Step::Summarize`].
    ///
    /// # Errors
    /// `SUMMARIZE_FAILED` once every attempt came back empty or cut off; `SHRINK`.
    pub fn summarized(&mut self, summary: Summary) -> Result<Step> {
        let Phase::Summarize { request, attempt } = std::mem::replace(&mut self.phase, Phase::Over) else {
            return Err(self.out_of_order("a summary"));
        };
        if summary.text.trim().is_empty() || summary.truncated() {
            if attempt < self.options.max_summarization_retries {
                let step = Step::Summarize {
                    request: request.clone(),
                    attempt: attempt + 1,
                };
                self.phase = Phase::Summarize {
                    request,
                    attempt: attempt + 1,
                };
                return Ok(step);
            }
            return Err(FoldError::SummarizeFailed(empty_completion_message(
                self.options.max_summarization_retries,
                &summary,
            )));
        }
        let tokens_freed = shrink_check(&request.region, &summary)?;
        let plan = FoldPlan {
            request,
            report_chars: utf16_len(&summary.text),
            report: summary.text,
        };
        let step = Step::Commit(plan.clone());
        self.phase = Phase::Commit { plan, tokens_freed };
        Ok(step)
    }

    /// Step 6: the host's answer to [`Step::Commit`].
    ///
    /// # Errors
    /// `CHANGED` when the surface moved under the summarizer (nothing was appended).
    pub fn committed(&mut self, commit: Commit) -> Result<Step> {
        let Phase::Commit { plan, tokens_freed } = std::mem::replace(&mut self.phase, Phase::Over) else {
            return Err(self.out_of_order("a commit"));
        };
        if commit == Commit::Changed {
            return Err(FoldError::Changed(
                "the fold region changed during summarization (another fold or a compaction); \
                 nothing was folded, rewind again"
                    .into(),
            ));
        }
        let region = &plan.request.region;
        let result = FoldResult {
            mark_id: self.mark.id,
            folded_nodes: region.seqs.len() as u32,
            start: region.start(),
            end: region.end(),
            folded_chars: region.folded_chars,
            report_chars: plan.report_chars,
            tokens_freed,
            stamp_error: None,
        };
        let step = Step::Stamp {
            mark_id: self.mark.id,
            result: result.clone(),
        };
        self.phase = Phase::Stamp { result, tries: 0 };
        self.committed = true;
        Ok(step)
    }

    /// Step 7: the outcome of the last [`Step::Stamp`]. A stamp that keeps failing still ends
    /// the fold, with `stamp_error` in the [`Step::Done`] (the next rewind repairs it).
    ///
    /// # Errors
    /// Only `HOST_FAILED` when no stamp was asked for (a driver bug).
    pub fn stamped(&mut self, outcome: Result<bool>) -> Result<Step> {
        let Phase::Stamp { result, tries } = std::mem::replace(&mut self.phase, Phase::Over) else {
            return Err(self.out_of_order("a stamp"));
        };
        let mut job = StampJob {
            mark_id: self.mark.id,
            result,
            tries,
        };
        Ok(match job.stamped(outcome) {
            StampNext::Retry => {
                let step = Step::Stamp {
                    mark_id: job.mark_id,
                    result: job.result.clone(),
                };
                self.phase = Phase::Stamp {
                    result: job.result,
                    tries: job.tries,
                };
                step
            }
            StampNext::Done => Step::Done(job.result),
            StampNext::Failed { message, .. } => Step::Done(FoldResult {
                stamp_error: Some(message),
                ..job.result
            }),
        })
    }

    /// After a [`Step::Stamp`]: the fold is over (its result given), so the machine ends here and
    /// releases the session's lock; the stamp goes on alone ([`StampJob`]), off the fold's
    /// critical path.
    ///
    /// # Errors
    /// `HOST_FAILED` when no stamp was asked for (a driver bug).
    pub fn into_stamp(mut self) -> Result<StampJob> {
        match std::mem::replace(&mut self.phase, Phase::Over) {
            Phase::Stamp { result, tries } => Ok(StampJob {
                mark_id: self.mark.id,
                result,
                tries,
            }),
            _ => Err(self.out_of_order("a stamp job")),
        }
    }

    /// Cancels the fold unless it is committed. A driver defers an abort that fires while the
    /// host runs [`Step::Commit`] until [`Rewind::committed`] has its answer.
    ///
    /// # Errors
    /// `ABORTED` when cancelled (the fold is over: drop it). `Ok` once committed: the fold goes on.
    pub fn abort(&mut self) -> Result<()> {
        if self.committed_already() {
            return Ok(());
        }
        self.phase = Phase::Over;
        Err(FoldError::Aborted(
            "the rewind was aborted; nothing was written and the mark is still active".into(),
        ))
    }
}

/// The durable stamp of a fold that has happened, after its result was given: tried up to
/// [`STAMP_ATTEMPTS`] times; one that still fails is reported late, and the next rewind finishes
/// it (a report naming the mark is on the surface).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StampJob {
    mark_id: u64,
    result: FoldResult,
    tries: u32,
}

/// What a [`StampJob`] does after one try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StampNext {
    /// Stamped, or nothing to stamp (the mark is no longer the session's latest active one).
    Done,
    /// Try again.
    Retry,
    /// Every try failed: the last failure's code and a message saying what it means (it starts
    /// with the code), for the host to report.
    Failed { code: &'static str, message: String },
}

impl StampJob {
    /// The mark to stamp folded.
    pub fn mark_id(&self) -> u64 {
        self.mark_id
    }

    /// The fold's result (already given).
    pub fn result(&self) -> &FoldResult {
        &self.result
    }

    /// The outcome of one try.
    pub fn stamped(&mut self, outcome: Result<bool>) -> StampNext {
        match outcome {
            Ok(_) => StampNext::Done,
            Err(_) if self.tries + 1 < STAMP_ATTEMPTS => {
                self.tries += 1;
                StampNext::Retry
            }
            Err(e) => StampNext::Failed {
                code: e.code(),
                message: format!(
                    "{}: the report was committed but mark {} could not be stamped folded ({e}); \
                     the next rewind finishes the stamp",
                    e.code(),
                    self.mark_id
                ),
            },
        }
    }
}

/// Step 5: `Ok(tokens freed)` (when priced) if the report is smaller than the region.
fn shrink_check(region: &Region, summary: &Summary) -> Result<Option<u64>> {
    let nodes = region.seqs.len();
    let refuse = |report: u64, folded: u64, unit: &str| {
        FoldError::Shrink(format!(
            "the report ({report} {unit}) is not smaller than the folded region ({folded} {unit} over {nodes} nodes); \
             nothing was folded and the mark is still active"
        ))
    };
    if let Some(TokenPrices { region, report }) = summary.tokens {
        if region > 0 && report >= region {
            return Err(refuse(report, region, "tokens"));
        }
        return Ok(Some(region.saturating_sub(report)));
    }
    let (report, folded) = (utf16_len(&summary.text), region.folded_chars);
    if folded > 0 && report >= folded {
        return Err(refuse(report, folded, "chars"));
    }
    Ok(None)
}

fn empty_completion_message(retries: u32, last: &Summary) -> String {
    let mut detail = format!("finish: {}", last.finish.as_deref().unwrap_or("unknown"));
    if let Some(t) = last.output_tokens {
        detail.push_str(&format!(", outputTokens: {t}"));
        if let Some(r) = last.reasoning_tokens {
            detail.push_str(&format!(", reasoningTokens: {r}"));
        }
    }
    if last.truncated() && !last.text.trim().is_empty() {
        return format!(
            "rewind summarization was cut off at its output budget (maxTokens) after {retries} retries ({detail}); \
             nothing was folded and the mark is still active"
        );
    }
    format!(
        "rewind summarization produced no text report content after {retries} retries ({detail}); \
         nothing was folded and the mark is still active"
    )
}

// ---- the store verbs as a host runs them: the session lock, and disk work off its thread ----

/// Runs blocking store I/O (a durable write) without stalling the async runtime. On a
/// multi-threaded runtime (napi's) it runs right here, after handing this worker's other tasks
/// to its peers: a hop to the blocking pool and back costs 150–300 µs on a parked VM, more than
/// the write on tmpfs. A current-thread runtime cannot do that, so it hops.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread) {
        return tokio::task::block_in_place(f);
    }
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| FoldError::StoreIo(format!("checkpoint store worker failed: {e}")))?
}

/// The session's latest mark: from memory, or read from the file off the async thread.
pub async fn latest_mark(store: &Arc<Store>, session_id: &str) -> Result<Option<MarkRecord>> {
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
    let _guard = session_locks().lock(session_id).await;
    let (store, session) = (store.clone(), session_id.to_owned());
    blocking(move || store.mark(&session, log_length, objective.as_deref())).await
}

/// Writes a stamp queued on the JS thread ([`Store::queue_stamp`]): whether it stamped the mark.
pub async fn finish_stamp(store: &Arc<Store>, queued: crate::store::QueuedStamp) -> Result<bool> {
    let store = store.clone();
    blocking(move || Ok(store.finish_stamp(queued)? == crate::store::Stamp::Stamped)).await
}

/// Stamps the mark folded (durable); see [`Store::complete_fold`].
pub async fn complete_fold(store: &Arc<Store>, session_id: &str, mark_id: u64) -> Result<bool> {
    let (store, session) = (store.clone(), session_id.to_owned());
    blocking(move || store.complete_fold(&session, mark_id)).await
}

//! The compaction policy's exports: `planCompaction` (what a compaction replaces and how its
//! summary is made, `fold_core::compaction`, read off the session's mirror with the overlay the
//! plugin keeps beside it: its only input) and `foldInProgress` (whether a rewind holds a
//! session's fold lock, the lock a compaction declines during). Synchronous, on the JS thread,
//! conversion only; every bad argument is an `INVALID_ARGUMENT` that names it, and a panic is
//! the coded `INTERNAL` error (`guard.rs`).

use fold_core::compaction::{self, CompactionSurface, MirrorOverlay, Params, Treatment, Trigger};
use fold_core::locks::session_locks;
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::convert::{self, cast, describe, throw, CoreResult};
use crate::mirror::SessionMirror;

/// Largest token count accepted (a safe integer).
const MAX_TOKENS: f64 = 9_007_199_254_740_991.0;

/// What the cut splits.
#[napi(object)]
pub struct CompactionSplits {
    /// Inside the exploration of an active checkpoint mark.
    pub active_exploration: bool,
    /// Inside a block with a call still open.
    pub open_block: bool,
    /// Inside a closed block's span.
    pub closed_block: bool,
}

/// One item of the summary: a run of range positions and what becomes of it.
#[napi(object)]
pub struct CompactionItem {
    /// `work`, `user`, `rewind-report`, `block-summary`, `compaction-summary` or `foreign-summary`.
    #[napi(ts_type = "'work' | 'user' | 'rewind-report' | 'block-summary' | 'compaction-summary' | 'foreign-summary'")]
    pub source: String,
    /// First surface position (index into the range's `seqs`).
    pub start: u32,
    /// One past the last surface position.
    pub end: u32,
    /// Visible chars of the item as it stands.
    pub chars: f64,
    /// `verbatim`, `cut` (head and tail kept), `condense` (the extractive report, at most
    /// `maxChars`), `trim` (an earlier checkpoint of ours in at most `maxChars`: its oldest
    /// carried reports as pointers) or `pointer` (one line; recall returns it).
    #[napi(ts_type = "'verbatim' | 'cut' | 'condense' | 'trim' | 'pointer'")]
    pub treatment: String,
    pub head: Option<u32>,
    pub tail: Option<u32>,
    pub max_chars: Option<u32>,
}

/// What a compaction replaces: surface positions `[startPos, endPos)`.
#[napi(object)]
pub struct CompactionPlan {
    /// Surface position of the first replaced node.
    pub start_pos: u32,
    /// One past the last replaced node's surface position.
    pub end_pos: u32,
    /// Seq of the first replaced node (the replace op's `start`).
    pub start: u32,
    /// Seq of the last replaced node (the replace op's `end`).
    pub end: u32,
    /// The replaced nodes' seqs in model order.
    pub seqs: Uint32Array,
    /// Their price in the snapshot's tokens.
    pub range_tokens: f64,
    /// The summary body's budget in chars.
    pub budget_chars: f64,
    pub items: Vec<CompactionItem>,
    /// The summary's estimated price.
    pub summary_tokens: f64,
    /// The request's estimated price after the replace.
    pub projected_tokens: f64,
    /// Whether the projection is under the threshold (always true but under pressure).
    pub relieves: bool,
    pub splits: CompactionSplits,
    /// Items reduced to pointers to fit the budget.
    pub degraded: u32,
    /// The train of thought's room, in chars (0: a part left out).
    pub thought: CompactionThought,
}

/// The room each part of the train of thought got (`trainOfThoughtOf`'s budgets).
#[napi(object)]
pub struct CompactionThought {
    /// The model's latest words.
    pub intent_chars: u32,
    /// The names in play.
    pub names_chars: u32,
    /// The open state of the work.
    pub state_chars: u32,
}

/// Reads one numeric property of the params object.
fn number(obj: &Object<'_>, key: &str, max: f64) -> napi::Result<CoreResult<u64>> {
    let v: Unknown = obj.get_named_property(key)?;
    convert::integer(&v, &format!("params.{key}"), max)
}

/// Reads the params object.
fn params(v: &Unknown<'_>) -> napi::Result<CoreResult<Params>> {
    if v.get_type()? != ValueType::Object {
        return Ok(Err(FoldError::invalid(format!(
            "params must be an object {{trigger, totalTokens, thresholdTokens, retainTokens, maxSummaryTokens, pasteChars, intentChars?, namesChars?}}, got {}",
            describe(v)?
        ))));
    }
    let obj = cast::<Object>(v)?;
    let trigger: Unknown = obj.get_named_property("trigger")?;
    let trigger = match convert::string(&trigger, "params.trigger")? {
        Ok(t) => match t.as_str() {
            "pressure" => Trigger::Pressure,
            "context-overflow" => Trigger::Overflow,
            "manual" => Trigger::Manual,
            other => {
                return Ok(Err(FoldError::invalid(format!(
                    "params.trigger must be 'pressure', 'context-overflow' or 'manual', got {other:?}"
                ))))
            }
        },
        Err(e) => return Ok(Err(e)),
    };
    let mut out = [0u64; 5];
    for (slot, (key, max)) in out.iter_mut().zip([
        ("totalTokens", MAX_TOKENS),
        ("thresholdTokens", MAX_TOKENS),
        ("retainTokens", MAX_TOKENS),
        ("maxSummaryTokens", MAX_TOKENS),
        ("pasteChars", f64::from(u32::MAX)),
    ]) {
        match number(&obj, key, max)? {
            Ok(n) => *slot = n,
            Err(e) => return Ok(Err(e)),
        }
    }
    let [total_tokens, threshold_tokens, retain_tokens, max_summary_tokens, paste_chars] = out;
    // The train of thought's caps: absent, none of it.
    let mut thought = [0u32; 2];
    for (slot, key) in thought.iter_mut().zip(["intentChars", "namesChars"]) {
        let v: Unknown = obj.get_named_property(key)?;
        if matches!(v.get_type()?, ValueType::Undefined | ValueType::Null) {
            continue;
        }
        match convert::integer(&v, &format!("params.{key}"), f64::from(u32::MAX))? {
            Ok(n) => *slot = n as u32,
            Err(e) => return Ok(Err(e)),
        }
    }
    let [intent_chars, names_chars] = thought;
    Ok(Ok(Params {
        trigger,
        total_tokens,
        threshold_tokens,
        retain_tokens,
        max_summary_tokens,
        paste_chars: paste_chars as u32,
        intent_chars,
        names_chars,
    }))
}

/// A `Uint32Array`, borrowed for this call (never copied), or `None`.
fn words<'e>(v: &Unknown<'e>) -> napi::Result<Option<Uint32ArraySlice<'e>>> {
    if v.get_type()? == ValueType::Object && v.is_typedarray()? {
        if let Ok(words) = cast::<Uint32ArraySlice>(v) {
            return Ok(Some(words));
        }
    }
    Ok(None)
}

/// What the policy reads: the session's mirror with what it does not keep beside it.
struct Source<'e> {
    mirror: ClassInstance<'e, SessionMirror>,
    anchors: Uint32ArraySlice<'e>,
    facts: Uint32ArraySlice<'e>,
    ours: Uint32ArraySlice<'e>,
    notes: Uint32ArraySlice<'e>,
}

impl Source<'_> {
    fn surface(&self) -> CoreResult<CompactionSurface> {
        let overlay = MirrorOverlay {
            facts: &self.facts,
            ours: &self.ours,
            notes: &self.notes,
        };
        CompactionSurface::from_mirror(&self.mirror.mirror, self.anchors.to_vec(), &overlay)
    }
}

/// Reads the source: the session's `SessionMirror` with its overlay `{anchors, facts, ours, notes}`
/// (each a `Uint32Array`).
fn source<'e>(env: &Env, v: &Unknown<'e>, overlay: Option<&Unknown<'e>>) -> napi::Result<CoreResult<Source<'e>>> {
    if let Some(mirror) = crate::mirror::of(env, v)? {
        let object = match overlay {
            Some(o) if o.get_type()? == ValueType::Object => cast::<Object>(o)?,
            _ => {
                return Ok(Err(FoldError::invalid(
                    "with the session's mirror, overlay must be {anchors, facts, ours, notes} (Uint32Arrays)",
                )))
            }
        };
        let part = |key: &str| -> napi::Result<CoreResult<Uint32ArraySlice<'e>>> {
            let value: Unknown = object.get_named_property(key)?;
            Ok(match words(&value)? {
                Some(w) => Ok(w),
                None => Err(FoldError::invalid(format!(
                    "overlay.{key} must be a Uint32Array, got {}",
                    describe(&value)?
                ))),
            })
        };
        let anchors = match part("anchors")? {
            Ok(w) => w,
            Err(e) => return Ok(Err(e)),
        };
        let facts = match part("facts")? {
            Ok(w) => w,
            Err(e) => return Ok(Err(e)),
        };
        let ours = match part("ours")? {
            Ok(w) => w,
            Err(e) => return Ok(Err(e)),
        };
        let notes = match part("notes")? {
            Ok(w) => w,
            Err(e) => return Ok(Err(e)),
        };
        return Ok(Ok(Source {
            mirror,
            anchors,
            facts,
            ours,
            notes,
        }));
    }
    Ok(Err(FoldError::invalid(format!(
        "source must be the session's SessionMirror (the compaction policy reads nothing else), got {}",
        describe(v)?
    ))))
}

macro_rules! arg {
    ($env:expr, $conv:expr) => {
        match $conv? {
            Ok(v) => v,
            Err(e) => return Err(throw($env, &e)),
        }
    };
}

/// Plans a compaction: what it replaces and how its summary is made, or `null` when no useful
/// range exists. Reads the session's mirror with `overlay`. Pure and synchronous; writes nothing.
#[napi(ts_args_type = "mirror: SessionMirror, params: CompactionParams, overlay: CompactionOverlay")]
pub fn plan_compaction<'e>(
    env: &Env,
    source: Unknown<'e>,
    params: Unknown<'e>,
    overlay: Option<Unknown<'e>>,
) -> napi::Result<Option<CompactionPlan>> {
    crate::guard::throwing(env, "planCompaction", || plan_checked(env, source, params, overlay))
}

fn plan_checked<'e>(
    env: &Env,
    source: Unknown<'e>,
    params: Unknown<'e>,
    overlay: Option<Unknown<'e>>,
) -> napi::Result<Option<CompactionPlan>> {
    let source = arg!(env, self::source(env, &source, overlay.as_ref()));
    let params = arg!(env, self::params(&params));
    let surface = source.surface().map_err(|e| throw(env, &e))?;
    Ok(compaction::plan(&surface, &params).map(to_js))
}

/// The items and budget of an explicit range of surface positions `[start, end)` (DSH's
/// `compactRegion`). Pure and synchronous; writes nothing.
#[napi(
    ts_args_type = "mirror: SessionMirror, params: CompactionParams, start: number, end: number, overlay: CompactionOverlay"
)]
pub fn plan_compaction_range<'e>(
    env: &Env,
    source: Unknown<'e>,
    params: Unknown<'e>,
    start: Unknown<'e>,
    end: Unknown<'e>,
    overlay: Option<Unknown<'e>>,
) -> napi::Result<CompactionPlan> {
    crate::guard::throwing(env, "planCompactionRange", || {
        range_checked(env, source, params, start, end, overlay)
    })
}

fn range_checked<'e>(
    env: &Env,
    source: Unknown<'e>,
    params: Unknown<'e>,
    start: Unknown<'e>,
    end: Unknown<'e>,
    overlay: Option<Unknown<'e>>,
) -> napi::Result<CompactionPlan> {
    let source = arg!(env, self::source(env, &source, overlay.as_ref()));
    let params = arg!(env, self::params(&params));
    let start = arg!(env, convert::integer(&start, "start", f64::from(u32::MAX)));
    let end = arg!(env, convert::integer(&end, "end", f64::from(u32::MAX)));
    let surface = source.surface().map_err(|e| throw(env, &e))?;
    compaction::plan_range(&surface, &params, start as usize, end as usize)
        .map(to_js)
        .map_err(|e| throw(env, &e))
}

fn to_js(plan: compaction::Plan) -> CompactionPlan {
    let items = plan
        .items
        .iter()
        .map(|item| {
            let (treatment, head, tail, max_chars) = match item.treatment {
                Treatment::Verbatim => ("verbatim", None, None, None),
                Treatment::Cut { head, tail } => ("cut", Some(head), Some(tail), None),
                Treatment::Condense { max_chars } => ("condense", None, None, Some(max_chars)),
                Treatment::Trim { max_chars } => ("trim", None, None, Some(max_chars)),
                Treatment::Pointer => ("pointer", None, None, None),
            };
            CompactionItem {
                source: item.source.as_str().to_owned(),
                start: item.start_pos as u32,
                end: item.end_pos as u32,
                chars: item.chars as f64,
                treatment: treatment.to_owned(),
                head,
                tail,
                max_chars,
            }
        })
        .collect();
    CompactionPlan {
        start_pos: plan.start_pos as u32,
        end_pos: plan.end_pos as u32,
        start: plan.start(),
        end: plan.end(),
        range_tokens: plan.range_tokens as f64,
        budget_chars: plan.budget_chars as f64,
        items,
        summary_tokens: plan.summary_tokens as f64,
        projected_tokens: plan.projected_tokens as f64,
        relieves: plan.relieves,
        splits: CompactionSplits {
            active_exploration: plan.splits.active_exploration,
            open_block: plan.splits.open_block,
            closed_block: plan.splits.closed_block,
        },
        degraded: plan.degraded,
        thought: CompactionThought {
            intent_chars: plan.thought.intent_chars,
            names_chars: plan.thought.names_chars,
            state_chars: plan.thought.state_chars,
        },
        seqs: Uint32Array::new(plan.seqs),
    }
}

/// Whether a rewind (or a mark) of `sessionId` holds the session's fold lock right now in this
/// process. Only looks: never takes the lock.
#[napi(ts_args_type = "sessionId: string")]
pub fn fold_in_progress(env: &Env, session_id: Unknown<'_>) -> napi::Result<bool> {
    crate::guard::throwing(env, "foldInProgress", || {
        let session_id = arg!(env, convert::string(&session_id, "sessionId"));
        Ok(session_locks().is_held(&session_id))
    })
}

//! The JS side of a fold, called on the JS thread: the host's callbacks and the checkpoint source.
//!
//! | core step            | JS                                                                   |
//! |----------------------|----------------------------------------------------------------------|
//! | `Step::Snapshot`     | `host.mirror` (+ `current`), or `host.snapshot(anchor)`:             |
//! |                      | `SessionMirror`                                                      |
//! | `Step::Summarize`    | `host.summarize(region, attempt): Promise<string \| SummaryReply>`  |
//! | `Step::Commit`       | `host.commit(plan): 'committed' \| 'changed'` — synchronous          |
//! | the mark             | the store's memory, or `checkpoint.latestMark(sessionId)`            |
//! | `Step::Stamp`        | the store's group commit, or `checkpoint.completeFold(id, mark)`,    |
//! |                      | after the fold's promise is settled                                  |
//!
//! Every call catches what the callback throws, so a throw becomes a coded rejection with the
//! thrown value as `cause`, never an exception escaping the addon. A callback's own mistakes
//! (a `snapshot()` that returns no `SessionMirror`, a summary that resolves to something else, a
//! commit that answers something else) are classified the same way. What `summarize`,
//! `latestMark` and `completeFold` return is awaited as `await` would (`rewind.rs`: adopted by
//! a promise of the binding's own). Each foreign property is read once: a getter that answers
//! differently on a second read cannot make two reads disagree.

use fold_core::fold::{Anchor, Commit, FoldPlan as CorePlan, FoldRequest, Summary};
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};

use crate::convert::{self, call_catching, reason_of, CoreResult};
use crate::types::{FoldPlan, FoldRegion, SummaryReply, TokenPrices};

/// Largest mark id a foreign checkpoint service may hand back (a JS number's exact integers).
const MAX_MARK_ID: f64 = 9_007_199_254_740_991.0;
/// Largest log length (seqs are 32-bit in the mirror's records).
const MAX_LOG_LENGTH: f64 = u32::MAX as f64 - 1.0;

/// A failure of a JS callback: the coded error, and the value it threw or rejected with.
pub type Failure<'e> = (FoldError, Option<Unknown<'e>>);

/// The host's three callbacks, kept across the fold's continuations.
pub struct JsHost {
    this: Receiver,
    snapshot: FunctionRef<(), ()>,
    summarize: FunctionRef<(), ()>,
    commit: FunctionRef<(), ()>,
    /// `host.current`: the seq of the assistant node carrying the rewind call.
    current: Option<u32>,
}

/// The session's mirror a fold reads its surface and its log off
/// ([`fold_core::fold::Rewind::read`]): `host.mirror`, or what `host.snapshot` returned.
pub type Taken<'e> = ClassInstance<'e, crate::mirror::SessionMirror>;

/// A referenced function of `obj` named `name`, or the argument error.
fn method(obj: &Object<'_>, owner: &str, name: &str) -> napi::Result<CoreResult<FunctionRef<(), ()>>> {
    let f: Unknown = obj.get_named_property(name)?;
    if f.get_type()? != ValueType::Function {
        return Ok(Err(FoldError::invalid(format!("{owner}.{name} must be a function"))));
    }
    Ok(Ok(convert::cast::<Function<(), ()>>(&f)?.create_ref()?))
}

/// A JS object kept across the fold's continuations, and its methods called with it as `this`.
struct Receiver(ObjectRef<false>);

impl Receiver {
    fn of(obj: &Object<'_>) -> napi::Result<Self> {
        Ok(Self(obj.create_ref::<false>()?))
    }

    fn release(self, env: &Env) -> napi::Result<()> {
        self.0.unref(env)
    }

    /// `f.call(this, ...args)`: `Err` holds what it threw.
    fn call<'e>(
        &self,
        env: &'e Env,
        f: &FunctionRef<(), ()>,
        args: impl JsValuesTupleIntoVec,
    ) -> napi::Result<std::result::Result<Unknown<'e>, Unknown<'e>>> {
        let this = self.0.get_value(env)?;
        call_catching(env, this.raw(), f.borrow_back(env)?.raw(), args)
    }
}

impl JsHost {
    /// Reads `host`'s callbacks (they are checked now, before anything else runs).
    pub fn new(host: &Unknown<'_>) -> napi::Result<CoreResult<Self>> {
        if host.get_type()? != ValueType::Object {
            return Ok(Err(FoldError::invalid(
                "host must be an object with snapshot, summarize and commit functions",
            )));
        }
        let obj = convert::cast::<Object>(host)?;
        let snapshot = match method(&obj, "host", "snapshot")? {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        let summarize = match method(&obj, "host", "summarize")? {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        let commit = match method(&obj, "host", "commit")? {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        let current: Unknown = obj.get_named_property("current")?;
        let current = match current.get_type()? {
            ValueType::Undefined | ValueType::Null => None,
            _ => match convert::integer(&current, "host.current", MAX_LOG_LENGTH)? {
                Ok(seq) => Some(seq as u32),
                Err(e) => return Ok(Err(e)),
            },
        };
        Ok(Ok(Self {
            this: Receiver::of(&obj)?,
            snapshot,
            summarize,
            commit,
            current,
        }))
    }

    /// Releases the host object (the functions release themselves).
    pub fn release(self, env: &Env) -> napi::Result<()> {
        self.this.release(env)
    }

    /// The session's mirror, for a fold from `anchor`: `host.mirror` when the host handed it
    /// over (in step with the session when `rewind` was called: no callback at all) and the fold
    /// did not wait since (`waited`); else asked of `host.snapshot(anchor)`, which returns the
    /// mirror brought back in step.
    pub fn snapshot<'e>(
        &self,
        env: &'e Env,
        anchor: u64,
        waited: bool,
    ) -> napi::Result<std::result::Result<Taken<'e>, Failure<'e>>> {
        if !waited {
            let this = self.this.0.get_value(env)?;
            let handed: Unknown = this.get_named_property("mirror")?;
            if let Some(m) = crate::mirror::of(env, &handed)? {
                return Ok(Ok(m));
            }
        }
        Ok(
            match self.this.call(env, &self.snapshot, FnArgs::from((anchor as f64,)))? {
                Ok(v) => match crate::mirror::of(env, &v)? {
                    Some(m) => Ok(m),
                    None => Err((
                        FoldError::HostFailed(format!(
                            "host.snapshot() returned garbage: {}",
                            crate::mirror::expected(&v)?
                        )),
                        None,
                    )),
                },
                Err(thrown) => Err((
                    FoldError::HostFailed(format!("host.snapshot() threw: {}", reason_or_cause(thrown))),
                    Some(thrown),
                )),
            },
        )
    }

    /// `host.current`: the assistant node carrying the rewind call, when the host named it.
    pub fn current(&self) -> Option<u32> {
        self.current
    }

    /// Asks for a report: whatever `summarize` returned (a promise, a thenable or the reply
    /// itself), to be awaited.
    pub fn summarize<'e>(
        &self,
        env: &'e Env,
        request: &FoldRequest,
        attempt: u32,
    ) -> napi::Result<std::result::Result<Unknown<'e>, Failure<'e>>> {
        let args = FnArgs::from((FoldRegion::from(request), attempt));
        Ok(self
            .this
            .call(env, &self.summarize, args)?
            .map_err(|thrown| (summarize_failed(thrown), Some(thrown))))
    }

    /// Commits `plan` in one synchronous step.
    pub fn commit<'e>(&self, env: &'e Env, plan: &CorePlan) -> napi::Result<std::result::Result<Commit, Failure<'e>>> {
        Ok(
            match self
                .this
                .call(env, &self.commit, FnArgs::from((FoldPlan::from(plan),)))?
            {
                Ok(v) if v.get_type()? == ValueType::String => match convert::cast::<String>(&v)?.as_str() {
                    "committed" => Ok(Commit::Committed),
                    "changed" => Ok(Commit::Changed),
                    other => Err((
                        FoldError::HostFailed(format!(
                            "commit must return 'committed' or 'changed', got {other:?}; the fold state is unknown"
                        )),
                        None,
                    )),
                },
                Ok(v) => Err((
                    FoldError::HostFailed(format!(
                        "commit must synchronously return 'committed' or 'changed', got {}; the fold state is unknown \
                     (if the report was appended, the next rewind finishes the fold)",
                        type_name(&v)?
                    )),
                    None,
                )),
                Err(thrown) => Err((
                    FoldError::HostFailed(format!("commit failed: {}", reason_or_cause(thrown))),
                    Some(thrown),
                )),
            },
        )
    }
}

/// The JS type of `v`, as `typeof` would name it (`null` for null).
fn type_name(v: &Unknown<'_>) -> napi::Result<String> {
    Ok(format!("{}", v.get_type()?).to_lowercase())
}

/// A thrown value's message, or a pointer to `cause` when it is not an `Error`.
fn reason_or_cause(thrown: Unknown<'_>) -> String {
    let reason = reason_of(thrown);
    if reason.is_empty() {
        "a value that is not an Error (see cause)".into()
    } else {
        reason
    }
}

/// The coded error for a summarizer that threw or rejected with `thrown`.
pub fn summarize_failed(thrown: Unknown<'_>) -> FoldError {
    let reason = reason_of(thrown);
    FoldError::SummarizeFailed(format!(
        "summarization failed: {}; nothing was folded and the mark is still active",
        if reason.is_empty() {
            "the summarizer threw or rejected a value that is not an Error (see cause)"
        } else {
            &reason
        }
    ))
}

/// What a `summarize` promise resolved to, as the core's [`Summary`].
pub fn summary(value: &Unknown<'_>) -> napi::Result<CoreResult<Summary>> {
    let got = type_name(value)?;
    let wrong = || {
        FoldError::SummarizeFailed(format!(
            "summarization failed: summarize must return (or resolve to) a string or {{text, finish?, usage?, tokens?}}, \
             got {got}; nothing was folded and the mark is still active"
        ))
    };
    match value.get_type()? {
        ValueType::String => {
            return Ok(Ok(Summary {
                text: convert::cast::<String>(value)?,
                ..Summary::default()
            }))
        }
        ValueType::Object => {}
        _ => return Ok(Err(wrong())),
    }
    let Ok(reply) = convert::cast::<SummaryReply>(value) else {
        return Ok(Err(wrong()));
    };
    let tokens = match reply.tokens.as_ref().map(TokenPrices::to_core) {
        None => None,
        Some(Some(t)) => Some(t),
        Some(None) => {
            return Ok(Err(FoldError::SummarizeFailed(
                "summarization failed: tokens.region and tokens.report must be integers from 0 to 2^53 - 1; \
                 nothing was folded and the mark is still active"
                    .into(),
            )))
        }
    };
    let usage = reply.usage.as_ref();
    Ok(Ok(Summary {
        text: reply.text,
        finish: reply.finish,
        output_tokens: usage.and_then(|u| u.output_tokens).map(|t| t as u64),
        reasoning_tokens: usage.and_then(|u| u.reasoning_tokens).map(|t| t as u64),
        tokens,
    }))
}

impl TokenPrices {
    /// The core's prices, when both are integers a JS number holds exactly.
    fn to_core(&self) -> Option<fold_core::fold::TokenPrices> {
        let whole = |v: f64| (v.fract() == 0.0 && (0.0..=MAX_MARK_ID).contains(&v)).then_some(v as u64);
        Some(fold_core::fold::TokenPrices {
            region: whole(self.region)?,
            report: whole(self.report)?,
        })
    }
}

/// A checkpoint service other than dsh-fold's store (the reference's `ctx.checkpoint`): marks
/// come from its `latestMark(sessionId)` and the stamp goes through its
/// `completeFold(sessionId, markId)`, both on the JS thread.
pub struct CheckpointService {
    this: Receiver,
    latest_mark: FunctionRef<(), ()>,
    complete_fold: FunctionRef<(), ()>,
}

impl CheckpointService {
    /// `Some` when `obj` has a `latestMark` function (a service, not a store reference). The
    /// property is read once: what decided it is a service is the function the fold calls.
    pub fn of(obj: &Object<'_>) -> napi::Result<Option<CoreResult<Self>>> {
        let latest: Unknown = obj.get_named_property("latestMark")?;
        if latest.get_type()? != ValueType::Function {
            return Ok(None);
        }
        let latest_mark = convert::cast::<Function<(), ()>>(&latest)?.create_ref()?;
        let complete_fold = match method(obj, "checkpoint", "completeFold")? {
            Ok(f) => f,
            Err(e) => return Ok(Some(Err(e))),
        };
        Ok(Some(Ok(Self {
            this: Receiver::of(obj)?,
            latest_mark,
            complete_fold,
        })))
    }

    pub fn release(self, env: &Env) -> napi::Result<()> {
        self.this.release(env)
    }

    /// `latestMark(sessionId)`: what it returned (a promise, or the mark itself).
    pub fn latest_mark<'e>(
        &self,
        env: &'e Env,
        session_id: &str,
    ) -> napi::Result<std::result::Result<Unknown<'e>, Failure<'e>>> {
        Ok(self
            .this
            .call(env, &self.latest_mark, FnArgs::from((session_id,)))?
            .map_err(|thrown| {
                (
                    FoldError::HostFailed(format!("checkpoint.latestMark() threw: {}", reason_or_cause(thrown))),
                    Some(thrown),
                )
            }))
    }

    /// `completeFold(sessionId, markId)`: what it returned (a promise, or the answer itself).
    pub fn complete_fold<'e>(
        &self,
        env: &'e Env,
        session_id: &str,
        mark_id: u64,
    ) -> napi::Result<std::result::Result<Unknown<'e>, Unknown<'e>>> {
        self.this
            .call(env, &self.complete_fold, FnArgs::from((session_id, mark_id as f64)))
    }
}

/// A mark as a checkpoint service hands it back: `undefined`/`null` (none) or
/// `{id, logLength, foldedAt?}` (`foldedAt` null or absent while active).
pub fn foreign_mark(value: &Unknown<'_>) -> napi::Result<CoreResult<Option<Anchor>>> {
    let bad = |what: String| FoldError::HostFailed(format!("checkpoint.latestMark() resolved to {what}"));
    match value.get_type()? {
        ValueType::Undefined | ValueType::Null => return Ok(Ok(None)),
        ValueType::Object => {}
        _ => return Ok(Err(bad(convert::describe(value)?))),
    }
    let obj = convert::cast::<Object>(value)?;
    let id: Unknown = obj.get_named_property("id")?;
    let id = match convert::integer(&id, "mark.id", MAX_MARK_ID)? {
        Ok(id) => id,
        Err(e) => return Ok(Err(bad(format!("a mark with a bad id: {e}")))),
    };
    let log_length: Unknown = obj.get_named_property("logLength")?;
    let log_length = match convert::integer(&log_length, "mark.logLength", MAX_LOG_LENGTH)? {
        Ok(n) => n,
        Err(e) => return Ok(Err(bad(format!("a mark with a bad logLength: {e}")))),
    };
    let folded_at: Unknown = obj.get_named_property("foldedAt")?;
    let folded = !matches!(folded_at.get_type()?, ValueType::Undefined | ValueType::Null);
    Ok(Ok(Some(Anchor { id, log_length, folded })))
}

//! The durable stamp of a fold that has happened, run after the fold's promise settled (the
//! stamp is off the fold's critical path: the session log, whose replacement names the mark, is
//! the fold's record, and crash repair finishes a stamp that never landed).
//!
//! With dsh-fold's store the stamp is queued for the store's group commit right away, on the JS
//! thread ([`Store::queue_stamp`]): from then on this process reads the mark as folded, and any
//! mark or stamp queued later is written after it. The write happens off the JS thread; a
//! failure is retried as the core's [`StampJob`] says. With another checkpoint service, its
//! `completeFold(sessionId, markId)` is called at once and retried the same way.
//!
//! A stamp that keeps failing is reported late, as `stampError` was: to the rewind's
//! `onStampError(error)` when given (the plugin logs it as a warning), else as a process
//! warning (`process.emitWarning`). The error is an `Error` whose `code` is the last failure's.

use std::cell::RefCell;
use std::rc::Rc;

use fold_core::fold::{self, StampJob, StampNext};
use fold_core::store::QueuedStamp;
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};

use crate::convert::{call_catching, reason_of, CoreResult, Deferred};
use crate::guard;
use crate::host::CheckpointService;

/// Where the stamp goes.
pub enum Target {
    Store(std::sync::Arc<fold_core::store::Store>),
    Service(CheckpointService),
}

/// One stamp in progress, shared by its continuations.
pub struct Stamper {
    pub session_id: String,
    pub job: StampJob,
    pub target: Target,
    /// `onStampError`, when the rewind was given one.
    pub on_error: Option<FunctionRef<(), ()>>,
    /// The store's claim ([`fold_core::store::Store::begin_work`]) from the first try to the
    /// last: `closeStore` waits for the stamp, its retries included. Set by [`start`].
    pub work: Option<fold_core::store::Work>,
}

type Shared = Rc<RefCell<Option<Stamper>>>;

/// A stamp queued in the store before the first try ([`fold_core::store::Store::queue_stamp`]'s answer).
type Queued = CoreResult<Option<QueuedStamp>>;

/// Starts stamping. A service's `completeFold` is called now. The store's stamp is queued now
/// (from here on this process reads the mark folded, and later writes go after it), and its
/// write's hop to another thread happens in a microtask, after the fold's own promise reactions:
/// the code awaiting the fold resumes first.
pub fn start(env: &Env, mut stamper: Stamper) {
    let queued = match &stamper.target {
        Target::Store(store) => {
            let store = store.clone();
            stamper.work = Some(store.begin_work());
            store.queue_stamp(&stamper.session_id, stamper.job.mark_id())
        }
        Target::Service(_) => {
            let me: Shared = Rc::new(RefCell::new(Some(stamper)));
            return try_once(env, &me, None);
        }
    };
    let queued = Some(queued);
    let me: Shared = Rc::new(RefCell::new(Some(stamper)));
    let first = Rc::new(RefCell::new(queued));
    let (later, first_later) = (me.clone(), first.clone());
    let deferred = env
        .create_function_from_closure::<(), (), _>("stamp", move |ctx| {
            let queued = first_later.try_borrow_mut().ok().and_then(|mut q| q.take());
            try_once(ctx.env, &later, queued);
            Ok(())
        })
        .and_then(|f| {
            let queue: Function<Function<(), ()>, ()> = env.get_global()?.get_named_property("queueMicrotask")?;
            queue.call(f)
        });
    if let Err(e) = deferred {
        // No microtask queue to defer to: stamp now.
        eprintln!("dsh-fold: deferring the stamp failed ({e}); stamping now");
        let queued = first.borrow_mut().take();
        try_once(env, &me, queued);
    }
}

fn try_once(env: &Env, me: &Shared, queued: Option<Queued>) {
    match guard::catching("rewind.stamp", || try_stamp(env, me, queued)) {
        Ok(Ok(())) => {}
        // A Node-API call failed, or a panic: the stamp cannot go on; say so like any failure.
        Ok(Err(e)) => failed(env, me, FoldError::HostFailed(e.to_string())),
        Err(e) => failed(env, me, e),
    }
}

fn try_stamp(env: &Env, me: &Shared, queued: Option<Queued>) -> napi::Result<()> {
    let borrowed = me.borrow();
    let Some(s) = borrowed.as_ref() else { return Ok(()) };
    let (session, mark_id) = (s.session_id.clone(), s.job.mark_id());
    match &s.target {
        Target::Store(store) => {
            let store = store.clone();
            drop(borrowed);
            // The first try's stamp was queued when the fold settled; a retry queues it again.
            let queued = match queued.unwrap_or_else(|| store.queue_stamp(&session, mark_id)) {
                Ok(q) => q,
                Err(e) => return outcome(env, me, Err(e)),
            };
            if queued.is_none() && store.is_loaded() {
                // Memory says there is nothing to stamp (folded already, or no longer the
                // session's latest active mark).
                return outcome(env, me, Ok(false));
            }
            let me = me.clone();
            let warned = store.clone();
            env.spawn_future_with_callback(
                async move {
                    let stamping = async move {
                        match queued {
                            Some(queued) => fold::finish_stamp(&store, queued).await,
                            None => fold::complete_fold(&store, &session, mark_id).await,
                        }
                    };
                    // A panic while it is polled is the stamp's failure (INTERNAL), not a hang.
                    Ok(guard::future("the stamp's write", stamping).await)
                },
                move |env, stamped| {
                    guarded(env, &me, "rewind.stamped", |env, me| {
                        outcome(env, me, stamped)?;
                        // A stamp that landed with a durability problem (its directory fsync
                        // failed) is a warning.
                        crate::store::emit_warnings(env, &warned)
                    })
                },
            )?;
            Ok(())
        }
        Target::Service(service) => {
            let called = service.complete_fold(env, &session, mark_id)?;
            drop(borrowed);
            match called {
                // Awaited as `await` does: a promise, any thenable (its first callback counts), or
                // the value itself, through a promise of the binding's own.
                Ok(v) => {
                    let (deferred, promise) = Deferred::new(env)?;
                    deferred.resolve(env, v)?;
                    let (ok, err) = (me.clone(), me.clone());
                    let on_ok = env.create_function_from_closure::<(), (), _>("stamped", move |ctx| {
                        guarded(ctx.env, &ok, "rewind.stamped", |env, me| outcome(env, me, Ok(true)))
                    })?;
                    let on_err = env.create_function_from_closure::<(), (), _>("stampFailed", move |ctx| {
                        let thrown = ctx.get::<Unknown>(0)?;
                        let failed = service_failed(thrown);
                        guarded(ctx.env, &err, "rewind.stamped", |env, me| outcome(env, me, Err(failed)))
                    })?;
                    let then: Unknown = promise.get_named_property("then")?;
                    call_catching(env, promise.raw(), then.raw(), FnArgs::from((on_ok, on_err)))?
                        .map_err(|_| napi::Error::from_reason("a native promise's then threw"))?;
                    Ok(())
                }
                Err(thrown) => outcome(env, me, Err(service_failed(thrown))),
            }
        }
    }
}

/// Runs a continuation of the stamp: a panic in it (or a failed Node-API call) ends the stamp
/// with a reported failure, never unwinds into Node.
fn guarded(
    env: &Env,
    me: &Shared,
    place: &str,
    body: impl FnOnce(&Env, &Shared) -> napi::Result<()>,
) -> napi::Result<()> {
    match guard::catching(place, || body(env, me)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => failed(env, me, FoldError::HostFailed(e.to_string())),
        Err(e) => failed(env, me, e),
    }
    Ok(())
}

/// Ends the stamp as failed for a reason of the binding's own: a Node-API call failed
/// (`HOST_FAILED`), or a panic (`INTERNAL`). The queued write itself goes on in the store.
fn failed(env: &Env, me: &Shared, why: FoldError) {
    let mark = me.try_borrow().ok().and_then(|s| s.as_ref().map(|s| s.job.mark_id()));
    let mark = mark.map_or_else(|| "the mark".to_owned(), |id| format!("mark {id}"));
    let code = why.code();
    let message = format!(
        "{code}: the report was committed but {mark} could not be stamped folded ({why}); the next rewind \
         finishes the stamp"
    );
    if me.try_borrow_mut().is_err() {
        eprintln!("dsh-fold: {message}");
        return;
    }
    finish(env, me, StampNext::Failed { code, message });
}

/// The stamp's error for a checkpoint service whose `completeFold` threw or rejected.
pub fn service_failed(thrown: Unknown<'_>) -> FoldError {
    FoldError::StoreIo(format!("checkpoint.completeFold() failed: {}", reason_of(thrown)))
}

fn outcome(env: &Env, me: &Shared, stamped: CoreResult<bool>) -> napi::Result<()> {
    let next = {
        let mut borrowed = me.borrow_mut();
        let Some(s) = borrowed.as_mut() else { return Ok(()) };
        s.job.stamped(stamped)
    };
    match next {
        StampNext::Retry => try_once(env, me, None),
        other => finish(env, me, other),
    }
    Ok(())
}

/// Ends the stamp: reports a failure late, lets go of the references.
fn finish(env: &Env, me: &Shared, next: StampNext) {
    let Some(s) = me.borrow_mut().take() else { return };
    if let StampNext::Failed { code, message } = next {
        if let Err(e) = report(env, s.on_error.as_ref(), code, &message) {
            eprintln!("dsh-fold: {message} (and reporting it failed: {e})");
        }
    }
    if let Target::Service(service) = s.target {
        let _ = service.release(env);
    }
}

/// Tells `onStampError(error)`, or emits the error as a process warning.
fn report(env: &Env, on_error: Option<&FunctionRef<(), ()>>, code: &str, message: &str) -> napi::Result<()> {
    let mut error = env.create_error(napi::Error::from_reason(message.to_owned()))?;
    error.set_named_property("name", "FoldError")?;
    error.set_named_property("code", code)?;
    let global = env.get_global()?;
    let (this, f) = match on_error {
        Some(f) => (global.raw(), f.borrow_back(env)?.raw()),
        None => {
            let process: Object = global.get_named_property("process")?;
            let emit: Unknown = process.get_named_property("emitWarning")?;
            if emit.get_type()? != ValueType::Function {
                eprintln!("dsh-fold: {message}");
                return Ok(());
            }
            (process.raw(), emit.raw())
        }
    };
    if call_catching(env, this, f, FnArgs::from((error,)))?.is_err() {
        // The callback threw: the report still must not be lost.
        eprintln!("dsh-fold: {message} (onStampError threw)");
    }
    Ok(())
}

//! The `rewind` export: the core's transaction ([`fold_core::fold::Rewind`]) driven from the JS
//! thread. Region selection (on the session mirror the host hands over), the
//! summarize call and the commit run on the JS thread with no thread handoff (the summarizer's
//! promise resumes the fold in a JS continuation). The promise settles as soon as the commit has
//! appended the replacement; the durable stamp follows, off the fold's critical path
//! ([`crate::stamp`]). Only the stamp's write and the first read of a store file not yet in
//! memory leave the JS thread.
//!
//! A fold waiting on its summarizer is kept alive by the continuations it handed to that
//! promise. An `abort` event settles the fold at once, unless it fires while a
//! host callback runs: then it is honoured when the callback returns (and ignored once the commit
//! answered `committed`: the fold has happened).
//!
//! What JS hands back (`summarize`'s, `latestMark`'s and `completeFold`'s answers) is awaited the
//! way `await` does: a promise of the binding's own is resolved with it ([`adopt`]), which adopts
//! a thenable by calling its `then` from a microtask, takes its first callback only, and treats
//! a plain value as already resolved. So no callback ever runs inside the fold's own stack, and
//! every fold settles: by its steps, its abort signal, or a panic caught as `INTERNAL`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use fold_core::fold::{self, Anchor, Rewind, RewindOptions, Step, Summary, MAX_SUMMARIZATION_RETRIES};
use fold_core::store::Store;
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::abort::{self, SignalListener};
use crate::convert::{self, js_error, CoreResult, Deferred};
use crate::guard;
use crate::host::{self, CheckpointService, Failure, JsHost};
use crate::stamp::{self, Stamper, Target};
use crate::types::RewindResult;

/// Where the fold's mark comes from and where its stamp goes.
enum Checkpoint {
    /// dsh-fold's store: the mark from memory, the stamp off the JS thread.
    Store(Arc<Store>),
    /// Another checkpoint service, called on the JS thread.
    Service(CheckpointService),
}

/// One fold in progress, shared by its continuations.
struct Fold {
    /// Set by the `abort` listener; read after every host call.
    aborted: Cell<bool>,
    state: RefCell<Driver>,
}

struct Driver {
    session_id: String,
    options: RewindOptions,
    checkpoint: Option<Checkpoint>,
    host: Option<JsHost>,
    signal: Option<SignalListener>,
    /// `options.onStampError`: told when the stamp fails after the fold settled.
    on_stamp_error: Option<FunctionRef<(), ()>>,
    /// Whether the fold waited for its mark (a store file read off-thread, a service's answer):
    /// the session may have moved since `rewind` was called, so the host's `snapshot()` is asked
    /// even when the host handed its mirror over.
    waited: bool,
    /// `None` until the mark is known, and after the fold ended.
    machine: Option<Rewind>,
    /// `None` once the promise is settled.
    deferred: Option<Deferred>,
}

impl Fold {
    /// Runs `step` on the driver (on the JS thread). A panic in it fails the fold with
    /// `INTERNAL`, releasing the session's lock. The driver is never busy here: continuations
    /// run from microtasks and the event loop, never inside a host callback (see [`adopt`]).
    fn drive(self: &Rc<Self>, env: &Env, place: &str, step: impl FnOnce(&mut Driver, &Env, &Rc<Fold>)) {
        let ran = guard::catching(place, || {
            if let Ok(mut driver) = self.state.try_borrow_mut() {
                step(&mut driver, env, self);
            }
        });
        if let Err(e) = ran {
            if let Ok(mut driver) = self.state.try_borrow_mut() {
                driver.fail(env, e, None);
            }
        }
    }
}

/// Folds everything since the session's latest mark into the host's report.
#[napi(
    ts_args_type = "checkpoint: StoreRef | CheckpointService, sessionId: string, host: RewindHost, options?: RewindOptions | null",
    ts_return_type = "Promise<RewindResult>"
)]
pub fn rewind<'e>(
    env: &'e Env,
    checkpoint: Unknown<'e>,
    session_id: Unknown<'e>,
    host: Unknown<'e>,
    options: Option<Unknown<'e>>,
) -> Result<Object<'e>> {
    guard::catching("rewind", || start(env, checkpoint, session_id, host, options)).unwrap_or_else(|e| {
        let p: PromiseRaw<'e, ()> = convert::rejected(env, e)?;
        convert::cast::<Object>(&p.to_unknown())
    })
}

fn start<'e>(
    env: &'e Env,
    checkpoint: Unknown<'e>,
    session_id: Unknown<'e>,
    host: Unknown<'e>,
    options: Option<Unknown<'e>>,
) -> Result<Object<'e>> {
    // Argument errors reject the promise; nothing throws.
    let reject = |e: FoldError| -> Result<Object<'e>> {
        let p: PromiseRaw<'e, ()> = convert::rejected(env, e)?;
        convert::cast::<Object>(&p.to_unknown())
    };
    // The plain arguments first: the ones below take references, released if a later one fails.
    let session_id = match convert::string(&session_id, "sessionId")? {
        Ok(s) => s,
        Err(e) => return reject(e),
    };
    let (options, signal, on_stamp_error) = match options_of(options.as_ref())? {
        Ok(o) => o,
        Err(e) => return reject(e),
    };
    let checkpoint = match checkpoint_of(&checkpoint)? {
        Ok(c) => c,
        Err(e) => return reject(e),
    };
    let release = |checkpoint: Checkpoint| -> Result<()> {
        match checkpoint {
            Checkpoint::Service(service) => service.release(env),
            Checkpoint::Store(_) => Ok(()),
        }
    };
    let host = match JsHost::new(&host)? {
        Ok(h) => h,
        Err(e) => {
            release(checkpoint)?;
            return reject(e);
        }
    };
    // An already aborted signal: nothing runs at all.
    if let Some(signal) = &signal {
        if signal.aborted() {
            release(checkpoint)?;
            host.release(env)?;
            let p: PromiseRaw<'e, ()> =
                PromiseRaw::reject(env, js_error(env, &aborted_error(), Some(signal.reason()?))?)?;
            return convert::cast::<Object>(&p.to_unknown());
        }
    }

    let (deferred, promise) = Deferred::new(env)?;
    let fold = Rc::new(Fold {
        aborted: Cell::new(false),
        state: RefCell::new(Driver {
            session_id,
            options,
            checkpoint: Some(checkpoint),
            host: Some(host),
            signal: None,
            on_stamp_error,
            waited: false,
            machine: None,
            deferred: Some(deferred),
        }),
    });
    if let Some(signal) = &signal {
        let weak = Rc::downgrade(&fold);
        let listener = SignalListener::attach(env, signal, move |env| {
            if let Some(fold) = weak.upgrade() {
                fold.aborted.set(true);
                // Busy inside a host callback: the driver honours the flag when it returns.
                fold.drive(env, "rewind.abort", |driver, env, _| driver.on_abort(env));
            }
        })?;
        fold.state.borrow_mut().signal = Some(listener);
    }
    Driver::find_mark(env, &fold);
    Ok(promise)
}

/// A step reached after the fold settled (a defect: settling ends every step).
fn settled_already() -> napi::Error {
    napi::Error::from_reason("the rewind already settled")
}

fn aborted_error() -> FoldError {
    FoldError::Aborted("the rewind was aborted; nothing was written and the mark is still active".into())
}

/// `checkpoint`: a store reference (path or `{path, ...}`) or a checkpoint service object.
fn checkpoint_of(v: &Unknown<'_>) -> Result<CoreResult<Checkpoint>> {
    if v.get_type()? == ValueType::Object {
        if let Some(service) = CheckpointService::of(&convert::cast::<Object>(v)?)? {
            return Ok(service.map(Checkpoint::Service));
        }
    }
    Ok(convert::store(v)?.map(Checkpoint::Store))
}

/// The options: the core's, the abort signal, `onStampError`.
type Options<'e> = (RewindOptions, Option<abort::Signal<'e>>, Option<FunctionRef<(), ()>>);

fn options_of<'e>(v: Option<&Unknown<'e>>) -> Result<CoreResult<Options<'e>>> {
    let mut options = RewindOptions::default();
    let Some(v) = v.filter(|o| !matches!(o.get_type(), Ok(ValueType::Undefined | ValueType::Null))) else {
        return Ok(Ok((options, None, None)));
    };
    if v.get_type()? != ValueType::Object {
        return Ok(Err(FoldError::invalid("options must be an object")));
    }
    let obj = convert::cast::<Object>(v)?;
    let retries: Unknown = obj.get_named_property("maxSummarizationRetries")?;
    if retries.get_type()? != ValueType::Undefined {
        match convert::integer(
            &retries,
            "maxSummarizationRetries",
            f64::from(MAX_SUMMARIZATION_RETRIES),
        )? {
            Ok(n) => options.max_summarization_retries = n as u32,
            Err(e) => return Ok(Err(e)),
        }
    }
    let on_error: Unknown = obj.get_named_property("onStampError")?;
    let on_error = match on_error.get_type()? {
        ValueType::Undefined | ValueType::Null => None,
        ValueType::Function => Some(convert::cast::<Function<(), ()>>(&on_error)?.create_ref()?),
        _ => {
            return Ok(Err(FoldError::invalid(format!(
                "options.onStampError must be a function, got {}",
                convert::describe(&on_error)?
            ))))
        }
    };
    let signal: Unknown = obj.get_named_property("signal")?;
    Ok(abort::signal(&signal)?.map(|signal| (options, signal, on_error)))
}

/// A JS function that resumes the fold with its first argument.
fn continuation<'e>(
    env: &'e Env,
    fold: &Rc<Fold>,
    place: &'static str,
    resume: impl Fn(&mut Driver, &Env, Unknown<'_>, &Rc<Fold>) + 'static,
) -> Result<Function<'e, (), ()>> {
    let fold = fold.clone();
    env.create_function_from_closure::<(), (), _>("resume", move |ctx| {
        let value = ctx.get::<Unknown>(0)?;
        // A continuation never runs inside another (promise reactions run on an empty stack).
        fold.drive(ctx.env, place, |driver, env, fold| resume(driver, env, value, fold));
        Ok(())
    })
}

/// A promise of the binding's own resolved with `value`: `await value`'s semantics
/// (`Promise.resolve`). A thenable's `then` is called from a microtask, once; only its first
/// callback counts; a plain value is the resolution itself. The result's `then` is the
/// engine's, so the fold's continuations always run from a microtask.
fn adopt<'e>(env: &'e Env, value: Unknown<'_>) -> Result<Object<'e>> {
    let (deferred, promise) = Deferred::new(env)?;
    deferred.resolve(env, value)?;
    Ok(promise)
}

/// `adopt(value).then(on_ok, on_err)`: awaits whatever JS handed back.
fn await_then(
    env: &Env,
    value: Unknown<'_>,
    fold: &Rc<Fold>,
    place: &'static str,
    on_ok: impl Fn(&mut Driver, &Env, Unknown<'_>, &Rc<Fold>) + 'static,
    on_err: impl Fn(&mut Driver, &Env, Unknown<'_>, &Rc<Fold>) + 'static,
) -> Result<()> {
    then(env, &adopt(env, value)?, fold, place, on_ok, on_err)
}

/// `promise.then(on_ok, on_err)` on a promise of the binding's own (see [`adopt`]).
fn then(
    env: &Env,
    promise: &Object<'_>,
    fold: &Rc<Fold>,
    place: &'static str,
    on_ok: impl Fn(&mut Driver, &Env, Unknown<'_>, &Rc<Fold>) + 'static,
    on_err: impl Fn(&mut Driver, &Env, Unknown<'_>, &Rc<Fold>) + 'static,
) -> Result<()> {
    let ok = continuation(env, fold, place, on_ok)?;
    let err = continuation(env, fold, place, on_err)?;
    let then: Unknown = promise.get_named_property("then")?;
    // The derived promise resolves to undefined: the continuations never throw.
    convert::call_catching(env, promise.raw(), then.raw(), FnArgs::from((ok, err)))?
        .map_err(|_| napi::Error::from_reason("a native promise's then threw"))?;
    Ok(())
}

impl Driver {
    fn settled(&self) -> bool {
        self.deferred.is_none()
    }

    /// Step 1: the session's latest mark, then the machine.
    fn find_mark(env: &Env, fold: &Rc<Fold>) {
        fold.drive(env, "rewind.start", |driver, env, fold| {
            if let Err(e) = driver.try_find_mark(env, fold) {
                driver.fail_napi(env, e);
            }
        });
    }

    /// The checkpoint, until the fold settles.
    fn checkpoint(&self) -> Result<&Checkpoint> {
        self.checkpoint.as_ref().ok_or_else(settled_already)
    }

    /// The host, until the fold settles.
    fn host(&self) -> Result<&JsHost> {
        self.host.as_ref().ok_or_else(settled_already)
    }

    fn try_find_mark(&mut self, env: &Env, fold: &Rc<Fold>) -> Result<()> {
        let looked_up = match self.checkpoint()? {
            Checkpoint::Store(store) => {
                // In memory (the usual case): now, on this thread.
                if let Some(answer) = store.latest_in_memory(&self.session_id) {
                    self.begin(env, fold, answer.map(|m| m.as_ref().map(Anchor::from)));
                    return Ok(());
                }
                // The first read of the file happens off the JS thread.
                let (store, session) = (store.clone(), self.session_id.clone());
                let fold = fold.clone();
                let work = store.begin_work();
                env.spawn_future_with_callback(
                    async move {
                        let _work = work;
                        Ok(guard::future("rewind's mark lookup", fold::latest_mark(&store, &session)).await)
                    },
                    move |env, answer| {
                        fold.drive(env, "rewind.mark", |driver, env, fold| {
                            driver.waited = true;
                            driver.begin(env, fold, answer.map(|m| m.as_ref().map(Anchor::from)));
                        });
                        Ok(())
                    },
                )?;
                return Ok(());
            }
            Checkpoint::Service(service) => service.latest_mark(env, &self.session_id)?,
        };
        let value = match looked_up {
            Ok(v) => v,
            Err(failure) => return self.fail_with(env, failure),
        };
        await_then(
            env,
            value,
            fold,
            "rewind.mark",
            |driver, env, mark, fold| match host::foreign_mark(&mark) {
                Ok(mark) => {
                    // The service's answer is awaited (a microtask at least): the session may
                    // have moved since rewind was called.
                    driver.waited = true;
                    driver.begin(env, fold, mark)
                }
                Err(e) => driver.fail_napi(env, e),
            },
            |driver, env, thrown, _| {
                let error = FoldError::HostFailed(format!(
                    "checkpoint.latestMark() rejected: {}",
                    convert::reason_of(thrown)
                ));
                driver.fail(env, error, Some(thrown));
            },
        )?;
        // An abort during the call: honoured now, not when (if ever) the lookup settles.
        self.abort_if_asked(env, fold);
        Ok(())
    }

    /// Step 2 and on: judge the mark, take the lock, run the steps.
    fn begin(&mut self, env: &Env, fold: &Rc<Fold>, mark: CoreResult<Option<Anchor>>) {
        if self.settled() {
            return;
        }
        let started = mark.and_then(|mark| Rewind::begin(&self.session_id, mark, self.options));
        match started {
            Ok((machine, step)) => {
                self.machine = Some(machine);
                self.run(env, fold, Ok(step));
            }
            Err(e) => self.fail(env, e, None),
        }
    }

    /// Runs the steps that need no waiting; returns when the fold waits on a promise or ended.
    fn run(&mut self, env: &Env, fold: &Rc<Fold>, mut step: CoreResult<Step>) {
        loop {
            if self.settled() {
                return;
            }
            let current = match step {
                Ok(s) => s,
                Err(e) => return self.fail(env, e, None),
            };
            // An abort that fired while a host callback ran.
            if fold.aborted.get() && !self.committed() {
                return self.on_abort(env);
            }
            let next = match self.step(env, fold, current) {
                Ok(Some(next)) => next,
                // Waiting on a promise: an abort during the call that made it is honoured now.
                Ok(None) => return self.abort_if_asked(env, fold),
                Err(e) => return self.fail_napi(env, e),
            };
            step = next;
        }
    }

    fn committed(&self) -> bool {
        self.machine.as_ref().is_some_and(Rewind::committed_already)
    }

    fn machine(&mut self) -> Result<&mut Rewind> {
        self.machine.as_mut().ok_or_else(settled_already)
    }

    /// One step: `Some(next)` to go on now, `None` when waiting (or settled).
    fn step(&mut self, env: &Env, fold: &Rc<Fold>, step: Step) -> Result<Option<CoreResult<Step>>> {
        match step {
            Step::Snapshot => {
                let anchor = self.machine()?.anchor();
                let waited = self.waited;
                let taken = self.host()?.snapshot(env, anchor, waited)?;
                match taken {
                    Ok(m) => {
                        let current = self.host()?.current();
                        Ok(Some(self.machine()?.read(&m.mirror, current)))
                    }
                    Err(failure) => self.fail_with(env, failure).map(|()| None),
                }
            }
            Step::Summarize { request, attempt } => {
                let reply = match self.host()?.summarize(env, &request, attempt)? {
                    Ok(reply) => reply,
                    Err(failure) => return self.fail_with(env, failure).map(|()| None),
                };
                await_then(
                    env,
                    reply,
                    fold,
                    "rewind.summary",
                    |driver, env, reply, fold| match host::summary(&reply) {
                        Ok(summary) => driver.on_summary(env, fold, summary),
                        Err(e) => driver.fail_napi(env, e),
                    },
                    |driver, env, thrown, _| driver.fail(env, host::summarize_failed(thrown), Some(thrown)),
                )?;
                Ok(None)
            }
            Step::Commit(plan) => {
                let answer = self.host()?.commit(env, &plan)?;
                match answer {
                    Ok(answer) => Ok(Some(self.machine()?.committed(answer))),
                    Err(failure) => self.fail_with(env, failure).map(|()| None),
                }
            }
            Step::Stamp { result, .. } => {
                // The fold has happened: its result is final. Settle now, stamp afterwards.
                let job = self.machine.take().ok_or_else(settled_already)?.into_stamp();
                let target = match self.checkpoint.take().ok_or_else(settled_already)? {
                    Checkpoint::Store(store) => Target::Store(store),
                    Checkpoint::Service(service) => Target::Service(service),
                };
                let on_error = self.on_stamp_error.take();
                self.settle(env, |env, deferred| deferred.resolve(env, RewindResult::from(result)));
                match job {
                    Ok(job) => stamp::start(
                        env,
                        Stamper {
                            session_id: self.session_id.clone(),
                            job,
                            target,
                            on_error,
                            work: None,
                        },
                    ),
                    Err(e) => eprintln!("dsh-fold: {e}"),
                }
                Ok(None)
            }
            Step::Done(result) => {
                self.settle(env, |env, deferred| deferred.resolve(env, RewindResult::from(result)));
                Ok(None)
            }
        }
    }

    fn on_summary(&mut self, env: &Env, fold: &Rc<Fold>, summary: CoreResult<Summary>) {
        if self.settled() {
            return;
        }
        let step = match self.machine() {
            Ok(machine) => summary.and_then(|s| machine.summarized(s)),
            Err(e) => return self.fail_napi(env, e),
        };
        self.run(env, fold, step);
    }

    /// Honours an abort that fired during the last host call, unless the fold is committed.
    fn abort_if_asked(&mut self, env: &Env, fold: &Rc<Fold>) {
        if fold.aborted.get() && !self.committed() {
            self.on_abort(env);
        }
    }

    /// The signal fired (now, or during a host callback that has returned).
    fn on_abort(&mut self, env: &Env) {
        if self.settled() {
            return;
        }
        match self.machine.as_mut().map(Rewind::abort) {
            // Committed: the fold has happened; the abort is ignored.
            Some(Ok(())) => {}
            // Before the commit, or while the mark was being looked up.
            Some(Err(_)) | None => {
                let reason = self.signal.take().map(|s| s.detach(env)).transpose().unwrap_or(None);
                self.fail(env, aborted_error(), reason);
            }
        }
    }

    /// Rejects with a callback's failure.
    fn fail_with(&mut self, env: &Env, (error, cause): Failure<'_>) -> Result<()> {
        self.fail(env, error, cause);
        Ok(())
    }

    /// Rejects with a napi failure (a Node-API call that failed, not a rule of the fold).
    fn fail_napi(&mut self, env: &Env, e: napi::Error) {
        self.fail(
            env,
            FoldError::HostFailed(format!("the rewind could not call its host: {e}")),
            None,
        );
    }

    fn fail(&mut self, env: &Env, error: FoldError, cause: Option<Unknown<'_>>) {
        self.settle(env, |env, deferred| {
            let error = js_error(env, &error, cause)?;
            deferred.reject(env, error.raw())
        });
    }

    /// Settles the promise once, then lets go of everything: the machine (and with it the
    /// session's lock), the signal's listener, the host's and the service's references.
    fn settle(&mut self, env: &Env, with: impl FnOnce(&Env, Deferred) -> Result<()>) {
        let Some(deferred) = self.deferred.take() else { return };
        self.machine = None;
        if let Some(signal) = self.signal.take() {
            let _ = signal.detach(env);
        }
        if let Some(host) = self.host.take() {
            let _ = host.release(env);
        }
        if let Some(Checkpoint::Service(service)) = self.checkpoint.take() {
            let _ = service.release(env);
        }
        if let Err(e) = with(env, deferred) {
            // Settling failed (an out-of-memory Node-API call): nothing is left to tell.
            eprintln!("dsh-fold: could not settle a rewind: {e}");
        }
    }
}

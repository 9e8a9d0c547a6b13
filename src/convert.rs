//! Argument conversion and error mapping between JS and the core.
//!
//! Arguments arrive as `Unknown` and are checked here, so a wrong type is an
//! `INVALID_ARGUMENT` error that says which argument, not napi's generic type error.
//! Errors leave as real JS `Error`s with the core's stable `code`, built on the JS thread.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use fold_core::store::{self, Limits, Store};
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};

pub type CoreResult<T> = std::result::Result<T, FoldError>;

/// The JS error for a core error: `Error` with `name = 'FoldError'`, the stable `code`, and
/// `cause` when the failure came from a JS value (a callback's throw, an abort reason).
pub fn js_error<'e>(env: &'e Env, err: &FoldError, cause: Option<Unknown<'e>>) -> napi::Result<Object<'e>> {
    let mut obj = env.create_error(napi::Error::from_reason(err.to_string()))?;
    obj.set_named_property("name", "FoldError")?;
    obj.set_named_property("code", err.code())?;
    if let Some(cause) = cause {
        obj.set_named_property("cause", cause)?;
    }
    Ok(obj)
}

/// A napi error that makes napi throw (or reject with) exactly this JS object.
///
/// Captured without coercion: `napi::Error::from(Unknown)` stringifies the error and, through
/// its `cause` chain, a thrown value kept as `cause` — a Symbol cause then throws inside the
/// conversion and escapes as an uncaught exception.
pub fn throw_value(obj: Object<'_>) -> napi::Error {
    napi::Error::from_unknown_without_coercion(obj.to_unknown())
}

/// The napi error that throws (or rejects with) the coded JS error for `err`.
pub fn throw(env: &Env, err: &FoldError) -> napi::Error {
    reject(env, err, None)
}

/// As [`throw`], with the JS value that caused it as `cause`.
pub fn reject(env: &Env, err: &FoldError, cause: Option<Unknown<'_>>) -> napi::Error {
    match js_error(env, err, cause) {
        Ok(obj) => throw_value(obj),
        Err(e) => e,
    }
}

/// Runs `fut` on napi's runtime and settles a promise on the JS thread through `settle`.
pub fn settle<'e, T, V, F, S>(env: &'e Env, fut: F, settle: S) -> napi::Result<PromiseRaw<'e, V>>
where
    T: Send + 'static,
    V: ToNapiValue,
    F: Future<Output = CoreResult<T>> + Send + 'static,
    S: 'static + FnOnce(&Env, CoreResult<T>) -> napi::Result<V>,
{
    // A panic while the future runs, or while the callback settles, rejects with INTERNAL.
    env.spawn_future_with_callback(
        async move { Ok(crate::guard::future("an async call", fut).await) },
        move |env, out| crate::guard::settling(env, "settling an async call", || settle(env, out)),
    )
}

/// Runs `fut` and resolves through `to_js`, or rejects with the coded error.
pub fn promise<'e, T, V, F, R>(env: &'e Env, fut: F, to_js: R) -> napi::Result<PromiseRaw<'e, V>>
where
    T: Send + 'static,
    V: ToNapiValue,
    F: Future<Output = CoreResult<T>> + Send + 'static,
    R: 'static + FnOnce(&Env, T) -> napi::Result<V>,
{
    settle(env, fut, move |env, out| match out {
        Ok(value) => to_js(env, value),
        Err(err) => Err(throw(env, &err)),
    })
}

/// A promise already settled with `result`, made on the JS thread without the async runtime
/// (an answer known from memory, or bad arguments of an async export).
pub fn settled<'e, V: ToNapiValue>(env: &'e Env, result: CoreResult<V>) -> napi::Result<PromiseRaw<'e, V>> {
    match result {
        Ok(value) => PromiseRaw::resolve(env, value),
        Err(err) => PromiseRaw::reject(env, js_error(env, &err, None)?),
    }
}

/// A promise created now and settled later, on the JS thread (a fold driven by JS continuations).
/// It must be settled exactly once: a `Deferred` dropped unsettled leaks its promise.
pub struct Deferred(napi::sys::napi_deferred);

impl Deferred {
    /// A new promise and the handle that settles it.
    pub fn new(env: &Env) -> napi::Result<(Self, Object<'_>)> {
        let mut deferred = std::ptr::null_mut();
        let mut promise = std::ptr::null_mut();
        #[allow(unsafe_code, reason = "Node-API promise creation on this env's thread")]
        unsafe {
            napi::check_status!(
                napi::sys::napi_create_promise(env.raw(), &mut deferred, &mut promise),
                "failed to create the rewind promise"
            )?;
            Ok((Self(deferred), Object::from_raw(env.raw(), promise)))
        }
    }

    /// Resolves the promise with `value`.
    pub fn resolve<V: ToNapiValue>(self, env: &Env, value: V) -> napi::Result<()> {
        #[allow(
            unsafe_code,
            reason = "the deferred of a promise of this env, settled once, on its thread"
        )]
        unsafe {
            let value = V::to_napi_value(env.raw(), value)?;
            napi::check_status!(
                napi::sys::napi_resolve_deferred(env.raw(), self.0, value),
                "failed to resolve the rewind promise"
            )
        }
    }

    /// Rejects the promise with `value` (an `Error`, or whatever a signal's reason is).
    pub fn reject(self, env: &Env, value: napi::sys::napi_value) -> napi::Result<()> {
        #[allow(
            unsafe_code,
            reason = "the deferred of a promise of this env, settled once, on its thread"
        )]
        unsafe {
            napi::check_status!(
                napi::sys::napi_reject_deferred(env.raw(), self.0, value),
                "failed to reject the rewind promise"
            )
        }
    }
}

/// The message of a value a callback threw or rejected with, read without coercing it (a
/// Symbol, a Proxy or a getter that throws cannot escape).
pub fn reason_of(value: Unknown<'_>) -> String {
    napi::Error::from_unknown_without_coercion(value).reason
}

/// Unwraps a conversion result or returns a promise rejected with its error.
macro_rules! arg_or_reject {
    ($env:expr, $conv:expr) => {
        match $conv? {
            Ok(v) => v,
            Err(e) => return $crate::convert::rejected($env, e),
        }
    };
}
pub(crate) use arg_or_reject;

/// Unwraps a conversion result or throws its error.
macro_rules! arg_or_throw {
    ($env:expr, $conv:expr) => {
        match $conv? {
            Ok(v) => v,
            Err(e) => return Err($crate::convert::throw($env, &e)),
        }
    };
}
pub(crate) use arg_or_throw;

/// A promise already rejected with `err` (bad arguments of an async export).
pub fn rejected<'e, V: ToNapiValue>(env: &'e Env, err: FoldError) -> napi::Result<PromiseRaw<'e, V>> {
    settled(env, Err(err))
}

/// Reads a JS value as `T`.
///
/// `Unknown::cast` is `unsafe` because it does not check the value's type first; every caller
/// here has checked it (or `T`'s own conversion checks it and fails cleanly).
pub fn cast<T: FromNapiValue>(v: &Unknown<'_>) -> napi::Result<T> {
    #[allow(
        unsafe_code,
        reason = "see the function docs: the type is checked by the caller or by T"
    )]
    unsafe {
        v.cast::<T>()
    }
}

fn type_of(v: &Unknown<'_>) -> napi::Result<ValueType> {
    v.get_type()
}

/// Calls `f` with `this` and `args`, on the JS thread. `Err` carries whatever it threw,
/// untouched: napi-rs's `Function::call` turns a throw into an error by coercing the thrown
/// value to a string, which loses a primitive (Node-API < 10 cannot reference it: "Create Error
/// reference failed") and, for a Symbol, leaves a second exception pending that then escapes
/// the caller synchronously.
pub fn call_catching<'e>(
    env: &'e Env,
    this: napi::sys::napi_value,
    f: napi::sys::napi_value,
    args: impl JsValuesTupleIntoVec,
) -> napi::Result<std::result::Result<Unknown<'e>, Unknown<'e>>> {
    let raw_env = env.raw();
    let args = args.into_vec(raw_env)?;
    let mut ret = std::ptr::null_mut();
    #[allow(
        unsafe_code,
        reason = "plain Node-API calls on values of this env, on its thread; the exception is cleared before anything else runs"
    )]
    unsafe {
        match napi::sys::napi_call_function(raw_env, this, f, args.len(), args.as_ptr(), &mut ret) {
            napi::sys::Status::napi_ok => Ok(Ok(Unknown::from_raw_unchecked(raw_env, ret))),
            napi::sys::Status::napi_pending_exception => {
                let mut thrown = std::ptr::null_mut();
                napi::check_status!(
                    napi::sys::napi_get_and_clear_last_exception(raw_env, &mut thrown),
                    "failed to clear the exception a host callback threw"
                )?;
                Ok(Err(Unknown::from_raw_unchecked(raw_env, thrown)))
            }
            status => Err(napi::Error::new(Status::from(status), "failed to call a host callback")),
        }
    }
}

/// A required string argument.
pub fn string(v: &Unknown<'_>, name: &str) -> napi::Result<CoreResult<String>> {
    if type_of(v)? != ValueType::String {
        return Ok(Err(FoldError::invalid(format!(
            "{name} must be a string, got {}",
            describe(v)?
        ))));
    }
    Ok(Ok(cast::<String>(v)?))
}

/// An optional string argument (`undefined` and `null` are absent).
pub fn opt_string(v: Option<&Unknown<'_>>, name: &str) -> napi::Result<CoreResult<Option<String>>> {
    match v {
        None => Ok(Ok(None)),
        Some(v) if matches!(type_of(v)?, ValueType::Undefined | ValueType::Null) => Ok(Ok(None)),
        Some(v) => Ok(string(v, name)?.map(Some)),
    }
}

/// A required non-negative integer argument no larger than `max`.
pub fn integer(v: &Unknown<'_>, name: &str, max: f64) -> napi::Result<CoreResult<u64>> {
    if type_of(v)? != ValueType::Number {
        return Ok(Err(FoldError::invalid(format!(
            "{name} must be a number, got {}",
            describe(v)?
        ))));
    }
    let n = cast::<f64>(v)?;
    if !(n.is_finite() && n.fract() == 0.0 && (0.0..=max).contains(&n)) {
        return Ok(Err(FoldError::invalid(format!(
            "{name} must be an integer from 0 to {max}, got {n}"
        ))));
    }
    Ok(Ok(n as u64))
}

/// A short description of a JS value for error messages (never its whole content).
pub fn describe(v: &Unknown<'_>) -> napi::Result<String> {
    Ok(match type_of(v)? {
        ValueType::Number => format!("the number {}", cast::<f64>(v)?),
        ValueType::String => "a string".into(),
        t => format!("{t}").to_lowercase(),
    })
}

/// The `store` argument: a path string, or `{ path, maxMarksPerSession?, maxAgeDays? }`.
pub fn store(v: &Unknown<'_>) -> napi::Result<CoreResult<Arc<Store>>> {
    let (path, limits) = match type_of(v)? {
        ValueType::String => (cast::<String>(v)?, None),
        ValueType::Object => {
            let obj = cast::<Object>(v)?;
            let path: Unknown = obj.get_named_property("path")?;
            let path = match string(&path, "store.path")? {
                Ok(p) => p,
                Err(e) => return Ok(Err(e)),
            };
            let number = |key: &str| -> napi::Result<CoreResult<Option<f64>>> {
                let value: Unknown = obj.get_named_property(key)?;
                Ok(match type_of(&value)? {
                    ValueType::Undefined | ValueType::Null => Ok(None),
                    ValueType::Number => Ok(Some(cast::<f64>(&value)?)),
                    _ => Err(FoldError::invalid(format!(
                        "store.{key} must be a number, got {}",
                        describe(&value)?
                    ))),
                })
            };
            let limits = match (number("maxMarksPerSession")?, number("maxAgeDays")?) {
                (Ok(cap), Ok(age)) => Limits::new(cap, age),
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
            match limits {
                Ok(l) => (path, Some(l)),
                Err(e) => return Ok(Err(e)),
            }
        }
        _ => {
            return Ok(Err(FoldError::invalid(format!(
                "store must be a path string or {{ path, maxMarksPerSession?, maxAgeDays? }}, got {}",
                describe(v)?
            ))))
        }
    };
    // Limits are registered with the store of that path, which prunes with the loosest of all
    // registered: two plugins naming one file with different limits never prune each other's
    // marks, whichever calls last (Store::register_limits).
    Ok(store::shared(&PathBuf::from(path)).inspect(|s| {
        if let Some(l) = limits {
            s.register_limits(l);
        }
    }))
}

/// Reads a `Uint32Array` argument (a plan's seqs), copied.
pub fn words(v: &Unknown<'_>) -> napi::Result<CoreResult<Vec<u32>>> {
    let is_u32 = type_of(v)? == ValueType::Object && v.is_typedarray()? && {
        let typed = cast::<Uint32ArraySlice>(v);
        typed.is_ok()
    };
    if !is_u32 {
        return Ok(Err(FoldError::invalid(format!(
            "expected a Uint32Array, got {}",
            describe(v)?
        ))));
    }
    let typed = cast::<Uint32ArraySlice>(v)?;
    Ok(Ok(typed.as_ref().to_vec()))
}

//! No panic crosses the Node-API boundary. A panic unwinding out of an `extern "C"` callback
//! aborts the process (SIGABRT: the user's whole DSH host dies), so every way Node enters this
//! addon runs under [`std::panic::catch_unwind`]: each `#[napi]` export ([`throwing`],
//! [`rejecting`]), each future handed to the async runtime ([`future`]), each callback the
//! runtime settles a promise with ([`settling`]), and each JS function the binding creates (the
//! fold's continuations and abort listener, through [`catching`]). A caught panic becomes the
//! coded `INTERNAL` error: the call fails, the host keeps running.
//!
//! Test builds (the `test-faults` feature) can make any of these places panic on purpose:
//! `DSH_FOLD_TEST_FAULTS=panic:<place>` (comma-separated with the store's faults), where
//! `<place>` is the name each guard is given (an export's JS name, or e.g. `rewind.summary`).
//! Release builds compile no such check.

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::Env;

use crate::convert::{self, CoreResult};

// `catch_unwind` only helps where panics unwind.
#[cfg(panic = "abort")]
compile_error!("dsh-fold must be built with panic = \"unwind\": a panic must become an INTERNAL error, not abort Node");

/// The coded error for a panic caught at `place`.
pub fn internal(place: &str, payload: &(dyn Any + Send)) -> FoldError {
    let detail = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    FoldError::Internal(format!(
        "dsh-fold internal error in {place} ({detail}); the call failed, nothing it would have written was \
         written, and the host keeps running. Please report it"
    ))
}

/// Runs `body`; a panic in it is `Err(INTERNAL)`.
pub fn catching<T>(place: &str, body: impl FnOnce() -> T) -> CoreResult<T> {
    catch_unwind(AssertUnwindSafe(|| {
        fault(place);
        body()
    }))
    .map_err(|payload| internal(place, &*payload))
}

/// A synchronous export's body: a panic is thrown as the coded `INTERNAL` error.
pub fn throwing<T>(env: &Env, place: &str, body: impl FnOnce() -> napi::Result<T>) -> napi::Result<T> {
    catching(place, body).unwrap_or_else(|e| Err(convert::throw(env, &e)))
}

/// A promise-returning export's body: a panic is a promise rejected with `INTERNAL`.
pub fn rejecting<'e, V: ToNapiValue>(
    env: &'e Env,
    place: &str,
    body: impl FnOnce() -> napi::Result<PromiseRaw<'e, V>>,
) -> napi::Result<PromiseRaw<'e, V>> {
    catching(place, body).unwrap_or_else(|e| convert::rejected(env, e))
}

/// The callback that settles a promise on the JS thread: a panic rejects it with `INTERNAL`.
pub fn settling<T>(env: &Env, place: &str, body: impl FnOnce() -> napi::Result<T>) -> napi::Result<T> {
    throwing(env, place, body)
}

/// `fut`, with a panic while it is polled turned into `Err(INTERNAL)` (on any thread: a panic
/// inside a task of the async runtime would otherwise leave its promise pending forever).
pub fn future<T, F>(place: &'static str, fut: F) -> CatchUnwind<F>
where
    F: Future<Output = CoreResult<T>>,
{
    CatchUnwind {
        place,
        fut: Box::pin(fut),
    }
}

/// See [`future`].
pub struct CatchUnwind<F> {
    place: &'static str,
    fut: Pin<Box<F>>,
}

impl<T, F: Future<Output = CoreResult<T>>> Future for CatchUnwind<F> {
    type Output = CoreResult<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let place = self.place;
        let fut = self.fut.as_mut();
        match catching(place, || fut.poll(cx)) {
            Ok(poll) => poll,
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

/// Panics when a test build was asked to at `place` (see the module docs).
#[cfg(feature = "test-faults")]
fn fault(place: &str) {
    if let Ok(faults) = std::env::var("DSH_FOLD_TEST_FAULTS") {
        if faults
            .split(',')
            .any(|f| f.trim().strip_prefix("panic:") == Some(place))
        {
            panic!("test fault panic:{place}");
        }
    }
}

/// Release builds: no fault is ever injected.
#[cfg(not(feature = "test-faults"))]
#[inline(always)]
fn fault(_place: &str) {}

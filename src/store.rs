//! The checkpoint store's exports: `mark`, `latestMark`, `hasActive`, `hasActiveSync`,
//! `completeFold`, `listMarks`, `findMark`, `openStore` (what a plugin calls at mount),
//! `compactStore` and `closeStore` (what a plugin calls when it is disposed).
//!
//! Every call that may touch the files claims the store ([`Store::begin_work`]) on the JS
//! thread, before its promise exists, until its file work is over; `closeStore` resolves once
//! no claim is left: the calls before it (awaited or not), a fold's stamp and its retries, a
//! background load and a journal fold included. After it nothing of this process touches the
//! files until the next call, so the store's folder can be removed or the process can end.
//!
//! The JS thread never does file work here: reads answer from memory on the spot once the file
//! is loaded; before that, the async reads wait for a load that runs off-thread, and
//! `hasActiveSync` (which cannot wait) throws `STORE_LOADING` and starts the load. Writes run on
//! napi's runtime. A write that landed with a problem worth telling (its directory fsync
//! failed) resolves normally and the problem is emitted as a process warning
//! (`process.emitWarning`, type `DshFoldWarning`, code `DSH_FOLD_STORE_DURABILITY`) when the
//! promise settles.

use fold_core::fold;
use fold_core::store::{check_session_id, Store};
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::convert::{self, arg_or_reject, arg_or_throw, promise, rejected, settled, throw, CoreResult};
use crate::types::{MarkRecord, NewMark};
use crate::MAX_LOG_LENGTH;

/// Largest mark id accepted from JS.
const MAX_MARK_ID: f64 = 9_007_199_254_740_991.0;

/// The `type` and `code` of the process warnings the store emits.
const WARNING_TYPE: &str = "DshFoldWarning";
const WARNING_CODE: &str = "DSH_FOLD_STORE_DURABILITY";

/// Emits the store's pending warnings as process warnings (on the JS thread).
pub(crate) fn emit_warnings(env: &Env, store: &Store) -> napi::Result<()> {
    let warnings = store.take_warnings();
    if warnings.is_empty() {
        return Ok(());
    }
    let process: Object = env.get_global()?.get_named_property("process")?;
    let emit: Function<FnArgs<(String, Object)>, Unknown> = process.get_named_property("emitWarning")?;
    for warning in warnings {
        let mut options = Object::new(env)?;
        options.set_named_property("type", WARNING_TYPE)?;
        options.set_named_property("code", WARNING_CODE)?;
        emit.apply(process, FnArgs::from((warning, options)))?;
    }
    Ok(())
}

/// Runs blocking store work (a load, a listing) on napi's blocking pool.
async fn off_thread<T: Send + 'static>(f: impl FnOnce() -> CoreResult<T> + Send + 'static) -> CoreResult<T> {
    napi::bindgen_prelude::spawn_blocking(f).await.map_err(|e| {
        if e.is_panic() {
            crate::guard::internal("a checkpoint store worker", &*e.into_panic())
        } else {
            FoldError::StoreIo(format!("checkpoint store worker failed: {e}"))
        }
    })?
}

/// Records a durable checkpoint mark for `sessionId` at log length `logLength`.
#[napi(
    ts_args_type = "store: StoreRef, sessionId: string, logLength: number, objective?: string | null",
    ts_return_type = "Promise<NewMark>"
)]
pub fn mark<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Unknown<'e>,
    log_length: Unknown<'e>,
    objective: Option<Unknown<'e>>,
) -> Result<PromiseRaw<'e, NewMark>> {
    crate::guard::rejecting(env, "mark", || {
        mark_checked(env, store, session_id, log_length, objective)
    })
}

fn mark_checked<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Unknown<'e>,
    log_length: Unknown<'e>,
    objective: Option<Unknown<'e>>,
) -> Result<PromiseRaw<'e, NewMark>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let session_id = arg_or_reject!(env, convert::string(&session_id, "sessionId"));
    let log_length = arg_or_reject!(env, convert::integer(&log_length, "logLength", MAX_LOG_LENGTH));
    let objective = arg_or_reject!(env, convert::opt_string(objective.as_ref(), "objective"));
    let warned = store.clone();
    let work = store.begin_work();
    promise(
        env,
        async move {
            let _work = work;
            fold::mark(&store, &session_id, log_length, objective).await
        },
        move |env, m| {
            emit_warnings(env, &warned)?;
            Ok(NewMark {
                id: m.id as i64,
                log_length: m.log_length as i64,
            })
        },
    )
}

/// The session's newest mark (folded or not), or `null`.
#[napi(
    ts_args_type = "store: StoreRef, sessionId: string",
    ts_return_type = "Promise<MarkRecord | null>"
)]
pub fn latest_mark<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Unknown<'e>,
) -> Result<PromiseRaw<'e, Option<MarkRecord>>> {
    crate::guard::rejecting(env, "latestMark", || latest_mark_checked(env, store, session_id))
}

fn latest_mark_checked<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Unknown<'e>,
) -> Result<PromiseRaw<'e, Option<MarkRecord>>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let session_id = arg_or_reject!(env, convert::string(&session_id, "sessionId"));
    // Once the file is in memory the answer is known here: settle now, without the async
    // runtime's thread hops (the turn guard asks at every turn end; bench/has-active.mjs).
    // Before that, the load runs off-thread and the promise waits for it.
    if let Some(answer) = store.latest_in_memory(&session_id) {
        return settled(env, answer.map(|m| m.map(MarkRecord::from)));
    }
    let work = store.begin_work();
    promise(
        env,
        async move {
            let _work = work;
            fold::latest_mark(&store, &session_id).await
        },
        |_, m| Ok(m.map(MarkRecord::from)),
    )
}

/// Whether the session's newest mark exists and is not folded (from memory once loaded; the
/// first call waits for the load, which runs off-thread).
#[napi(
    ts_args_type = "store: StoreRef, sessionId: string",
    ts_return_type = "Promise<boolean>"
)]
pub fn has_active<'e>(env: &'e Env, store: Unknown<'e>, session_id: Unknown<'e>) -> Result<PromiseRaw<'e, bool>> {
    crate::guard::rejecting(env, "hasActive", || has_active_checked(env, store, session_id))
}

fn has_active_checked<'e>(env: &'e Env, store: Unknown<'e>, session_id: Unknown<'e>) -> Result<PromiseRaw<'e, bool>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let session_id = match convert::string(&session_id, "sessionId")?.and_then(|s| check_session_id(&s).map(|()| s)) {
        Ok(s) => s,
        Err(e) => return rejected(env, e),
    };
    // Known from memory: settle now rather than through the async runtime (a thread hop there
    // and back, ~25 µs instead of ~2 µs; bench/has-active.mjs).
    if let Some(Ok(active)) = store.has_active_in_memory(&session_id) {
        return settled(env, Ok(active));
    }
    let work = store.begin_work();
    promise(
        env,
        async move {
            let _work = work;
            off_thread(move || store.has_active(&session_id)).await
        },
        |_, active| Ok(active),
    )
}

/// `hasActive` without the promise, for hot paths: from memory. Before the store file is
/// loaded it throws `STORE_LOADING` (and starts the load off-thread) rather than read the disk
/// on the JS thread; after a failed load it throws that load's error (and tries again).
#[napi(ts_args_type = "store: StoreRef, sessionId: string")]
pub fn has_active_sync(env: &Env, store: Unknown<'_>, session_id: Unknown<'_>) -> Result<bool> {
    crate::guard::throwing(env, "hasActiveSync", || has_active_sync_checked(env, store, session_id))
}

fn has_active_sync_checked(env: &Env, store: Unknown<'_>, session_id: Unknown<'_>) -> Result<bool> {
    let store = arg_or_throw!(env, convert::store(&store));
    let session_id = arg_or_throw!(env, convert::string(&session_id, "sessionId"));
    let answer = match store.has_active_in_memory(&session_id) {
        Some(Ok(active)) => return Ok(active),
        Some(Err(e)) if e.code() == "INVALID_ARGUMENT" => Err(e),
        Some(Err(e)) => {
            store.start_loading();
            Err(e)
        }
        None => {
            store.start_loading();
            Err(FoldError::StoreLoading(format!(
                "checkpoint store {} is still loading (off the JS thread); use hasActive, which waits \
                 for it, or ask again",
                store.path().display()
            )))
        }
    };
    answer.map_err(|e| throw(env, &e))
}

/// Stamps `markId` folded when it is the session's latest active mark; `false` changes nothing.
#[napi(
    ts_args_type = "store: StoreRef, sessionId: string, markId: number",
    ts_return_type = "Promise<boolean>"
)]
pub fn complete_fold<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Unknown<'e>,
    mark_id: Unknown<'e>,
) -> Result<PromiseRaw<'e, bool>> {
    crate::guard::rejecting(env, "completeFold", || {
        complete_fold_checked(env, store, session_id, mark_id)
    })
}

fn complete_fold_checked<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Unknown<'e>,
    mark_id: Unknown<'e>,
) -> Result<PromiseRaw<'e, bool>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let session_id = arg_or_reject!(env, convert::string(&session_id, "sessionId"));
    let mark_id = arg_or_reject!(env, convert::integer(&mark_id, "markId", MAX_MARK_ID));
    let warned = store.clone();
    let work = store.begin_work();
    promise(
        env,
        async move {
            let _work = work;
            fold::complete_fold(&store, &session_id, mark_id).await
        },
        move |env, stamped| {
            emit_warnings(env, &warned)?;
            Ok(stamped)
        },
    )
}

/// Every mark of the store (or of one session), newest first; re-reads what other processes wrote.
#[napi(
    ts_args_type = "store: StoreRef, sessionId?: string | null",
    ts_return_type = "Promise<MarkRecord[]>"
)]
pub fn list_marks<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Option<Unknown<'e>>,
) -> Result<PromiseRaw<'e, Vec<MarkRecord>>> {
    crate::guard::rejecting(env, "listMarks", || list_marks_checked(env, store, session_id))
}

fn list_marks_checked<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    session_id: Option<Unknown<'e>>,
) -> Result<PromiseRaw<'e, Vec<MarkRecord>>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let session_id = arg_or_reject!(env, convert::opt_string(session_id.as_ref(), "sessionId"));
    let work = store.begin_work();
    promise(
        env,
        async move {
            let _work = work;
            off_thread(move || store.list(session_id.as_deref())).await
        },
        |_, marks| Ok(marks.into_iter().map(MarkRecord::from).collect()),
    )
}

/// The mark with id `markId` (any session's), or `null`: one mark's lookup, from memory when it
/// is there (settled on the spot), else off the JS thread after catching up with the files
/// (what recall's owner check asks, instead of listing the whole store).
#[napi(
    ts_args_type = "store: StoreRef, markId: number",
    ts_return_type = "Promise<MarkRecord | null>"
)]
pub fn find_mark<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    mark_id: Unknown<'e>,
) -> Result<PromiseRaw<'e, Option<MarkRecord>>> {
    crate::guard::rejecting(env, "findMark", || find_mark_checked(env, store, mark_id))
}

fn find_mark_checked<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    mark_id: Unknown<'e>,
) -> Result<PromiseRaw<'e, Option<MarkRecord>>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let mark_id = arg_or_reject!(env, convert::integer(&mark_id, "markId", MAX_MARK_ID));
    if let Some(found) = store.find_in_memory(mark_id) {
        return settled(env, Ok(Some(MarkRecord::from(found))));
    }
    let work = store.begin_work();
    promise(
        env,
        async move {
            let _work = work;
            off_thread(move || store.find(mark_id)).await
        },
        |_, m| Ok(m.map(MarkRecord::from)),
    )
}

/// Loads the store into memory off the JS thread, so the first turn's `hasActive` /
/// `latestMark` answer on the spot, and folds a non-empty journal into the store file (best
/// effort). A checkpoint plugin calls it when it mounts; it also registers the ref's limits.
/// Resolves once loaded; rejects with the store's error when it cannot be read (every later
/// call reports it too).
#[napi(ts_args_type = "store: StoreRef", ts_return_type = "Promise<void>")]
pub fn open_store<'e>(env: &'e Env, store: Unknown<'e>) -> Result<PromiseRaw<'e, ()>> {
    crate::guard::rejecting(env, "openStore", || open_store_checked(env, store))
}

fn open_store_checked<'e>(env: &'e Env, store: Unknown<'e>) -> Result<PromiseRaw<'e, ()>> {
    whole_store_work(env, store, Store::open)
}

/// `openStore` and `compactStore`: one operation on the whole store, off the JS thread, claimed
/// until its file work is over; its warnings are emitted on the JS thread.
fn whole_store_work<'e>(
    env: &'e Env,
    store: Unknown<'e>,
    operation: fn(&Store) -> CoreResult<()>,
) -> Result<PromiseRaw<'e, ()>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let warned = store.clone();
    let work = store.begin_work();
    promise(
        env,
        async move {
            let _work = work;
            off_thread(move || operation(&store)).await
        },
        move |env, ()| emit_warnings(env, &warned),
    )
}

/// Folds the store's journal into the store file now, so a tool that reads only the file sees
/// every mark. Resolves once done (nothing to do for a store that does not exist).
#[napi(ts_args_type = "store: StoreRef", ts_return_type = "Promise<void>")]
pub fn compact_store<'e>(env: &'e Env, store: Unknown<'e>) -> Result<PromiseRaw<'e, ()>> {
    crate::guard::rejecting(env, "compactStore", || compact_store_checked(env, store))
}

fn compact_store_checked<'e>(env: &'e Env, store: Unknown<'e>) -> Result<PromiseRaw<'e, ()>> {
    whole_store_work(env, store, Store::compact)
}

/// Resolves once this process has no file work left on the store: every call made before it
/// (awaited or not), a fold's stamp and its retries, a background load, a journal fold. What a
/// checkpoint plugin calls when it is disposed, and what a program calls before it removes the
/// store's folder. The store stays usable: a later call opens it again.
#[napi(ts_args_type = "store: StoreRef", ts_return_type = "Promise<void>")]
pub fn close_store<'e>(env: &'e Env, store: Unknown<'e>) -> Result<PromiseRaw<'e, ()>> {
    crate::guard::rejecting(env, "closeStore", || close_store_checked(env, store))
}

fn close_store_checked<'e>(env: &'e Env, store: Unknown<'e>) -> Result<PromiseRaw<'e, ()>> {
    let store = arg_or_reject!(env, convert::store(&store));
    let warned = store.clone();
    promise(
        env,
        async move {
            off_thread(move || {
                store.close();
                Ok(())
            })
            .await
        },
        move |env, ()| emit_warnings(env, &warned),
    )
}

//! The bridge from a JS `AbortSignal` to the core's [`Abort`] flag.
//!
//! napi's own `AbortSignal` type only fits tasks, not a future that awaits JS callbacks, so the
//! binding listens to the signal's `abort` event instead. The listener is removed, and the
//! reference to the signal released, when the fold settles: a long-lived signal must not keep a
//! dead listener, and an `ObjectRef` is not released by `Drop`.

use fold_core::fold::Abort;
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};

use crate::convert;

/// `addEventListener` / `removeEventListener` as napi sees them.
type ListenerFn<'a> = Function<'a, FnArgs<(&'a str, Function<'a, (), ()>)>, ()>;

/// A signal the fold is listening to.
pub struct SignalListener {
    signal: ObjectRef<false>,
    listener: Option<FunctionRef<(), ()>>,
}

/// Checks that `signal` looks like an `AbortSignal` (`aborted`, `addEventListener`,
/// `removeEventListener`), before anything is attached to it.
pub fn check(signal: &Object<'_>) -> napi::Result<std::result::Result<(), FoldError>> {
    let aborted: Unknown = signal.get_named_property("aborted")?;
    let add: Unknown = signal.get_named_property("addEventListener")?;
    let remove: Unknown = signal.get_named_property("removeEventListener")?;
    Ok(
        if aborted.get_type()? == ValueType::Boolean
            && add.get_type()? == ValueType::Function
            && remove.get_type()? == ValueType::Function
        {
            Ok(())
        } else {
            Err(FoldError::invalid("options.signal must be an AbortSignal"))
        },
    )
}

impl SignalListener {
    /// Fires `abort` now if the signal already aborted, else when its `abort` event comes.
    pub fn attach(env: &Env, signal: &Object<'_>, abort: &Abort) -> napi::Result<Self> {
        let aborted: Unknown = signal.get_named_property("aborted")?;
        let mut listener = None;
        if convert::cast::<bool>(&aborted)? {
            abort.fire();
        } else {
            let fire = abort.clone();
            let f = env.create_function_from_closure::<(), (), _>("onAbort", move |_| {
                fire.fire();
                Ok(())
            })?;
            let add: ListenerFn = signal.get_named_property("addEventListener")?;
            add.apply(signal, FnArgs::from(("abort", f)))?;
            listener = Some(f.create_ref()?);
        }
        Ok(Self {
            signal: signal.create_ref::<false>()?,
            listener,
        })
    }

    /// Removes the listener and releases the signal; returns the signal's `reason`.
    pub fn detach<'e>(self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        let signal = self.signal.get_value(env)?;
        self.signal.unref(env)?;
        if let Some(listener) = &self.listener {
            let remove: ListenerFn = signal.get_named_property("removeEventListener")?;
            remove.apply(signal, FnArgs::from(("abort", listener.borrow_back(env)?)))?;
        }
        signal.get_named_property("reason")
    }
}

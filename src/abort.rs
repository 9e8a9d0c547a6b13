//! The bridge from a JS `AbortSignal` to a fold: a listener on the signal's `abort` event.
//!
//! napi's own `AbortSignal` type only fits tasks, so the binding listens to the event itself. The
//! listener is removed, and the reference to the signal released, when the fold settles: a
//! long-lived signal must not keep a dead listener, and an `ObjectRef` is not released by `Drop`.

use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};

use crate::convert;

/// `addEventListener` / `removeEventListener` as napi sees them.
type ListenerFn<'a> = Function<'a, FnArgs<(&'a str, Function<'a, (), ()>)>, ()>;

/// A signal the fold is listening to.
pub struct SignalListener {
    signal: ObjectRef<false>,
    listener: FunctionRef<(), ()>,
}

/// The signal in `options.signal`, checked to look like an `AbortSignal` (`aborted`,
/// `addEventListener`, `removeEventListener`) before anything is attached to it.
pub fn signal<'e>(v: &Unknown<'e>) -> napi::Result<std::result::Result<Option<Object<'e>>, FoldError>> {
    match v.get_type()? {
        ValueType::Undefined | ValueType::Null => return Ok(Ok(None)),
        ValueType::Object => {}
        _ => return Ok(Err(FoldError::invalid("options.signal must be an AbortSignal"))),
    }
    let signal = convert::cast::<Object>(v)?;
    let aborted: Unknown = signal.get_named_property("aborted")?;
    let add: Unknown = signal.get_named_property("addEventListener")?;
    let remove: Unknown = signal.get_named_property("removeEventListener")?;
    Ok(
        if aborted.get_type()? == ValueType::Boolean
            && add.get_type()? == ValueType::Function
            && remove.get_type()? == ValueType::Function
        {
            Ok(Some(signal))
        } else {
            Err(FoldError::invalid("options.signal must be an AbortSignal"))
        },
    )
}

/// Whether the signal has already fired.
pub fn aborted(signal: &Object<'_>) -> napi::Result<bool> {
    let aborted: Unknown = signal.get_named_property("aborted")?;
    convert::cast::<bool>(&aborted)
}

/// The signal's `reason`.
pub fn reason<'e>(signal: &Object<'e>) -> napi::Result<Unknown<'e>> {
    signal.get_named_property("reason")
}

impl SignalListener {
    /// Calls `on_abort` (on the JS thread) when the signal's `abort` event comes.
    pub fn attach(env: &Env, signal: &Object<'_>, on_abort: impl Fn(&Env) + 'static) -> napi::Result<Self> {
        let f = env.create_function_from_closure::<(), (), _>("onAbort", move |ctx| {
            on_abort(ctx.env);
            Ok(())
        })?;
        let add: ListenerFn = signal.get_named_property("addEventListener")?;
        add.apply(signal, FnArgs::from(("abort", f)))?;
        Ok(Self {
            signal: signal.create_ref::<false>()?,
            listener: f.create_ref()?,
        })
    }

    /// Removes the listener and releases the signal; returns the signal's `reason`.
    pub fn detach<'e>(self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        let signal = self.signal.get_value(env)?;
        self.signal.unref(env)?;
        let remove: ListenerFn = signal.get_named_property("removeEventListener")?;
        remove.apply(signal, FnArgs::from(("abort", self.listener.borrow_back(env)?)))?;
        reason(&signal)
    }
}

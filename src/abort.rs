//! The bridge from a JS `AbortSignal` to a fold: a listener on the signal's `abort` event.
//!
//! napi's own `AbortSignal` type only fits tasks, so the binding listens to the event itself. The
//! listener is removed, and the reference to the signal released, when the fold settles: a
//! long-lived signal must not keep a dead listener, and an `ObjectRef` is not released by `Drop`.
//! The signal's `aborted`, `addEventListener` and `removeEventListener` are read once, when the
//! options are checked: what was checked is what is used.

use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};

use crate::convert;
use crate::guard;

/// A signal as `options.signal` held it when it was checked.
pub struct Signal<'e> {
    obj: Object<'e>,
    aborted: bool,
    add: Unknown<'e>,
    remove: Unknown<'e>,
}

/// A signal the fold is listening to.
pub struct SignalListener {
    signal: ObjectRef<false>,
    remove: FunctionRef<(), ()>,
    listener: FunctionRef<(), ()>,
}

/// The signal in `options.signal`, checked to look like an `AbortSignal` (`aborted`,
/// `addEventListener`, `removeEventListener`) before anything is attached to it.
pub fn signal<'e>(v: &Unknown<'e>) -> napi::Result<std::result::Result<Option<Signal<'e>>, FoldError>> {
    match v.get_type()? {
        ValueType::Undefined | ValueType::Null => return Ok(Ok(None)),
        ValueType::Object => {}
        _ => return Ok(Err(FoldError::invalid("options.signal must be an AbortSignal"))),
    }
    let obj = convert::cast::<Object>(v)?;
    let aborted: Unknown = obj.get_named_property("aborted")?;
    let add: Unknown = obj.get_named_property("addEventListener")?;
    let remove: Unknown = obj.get_named_property("removeEventListener")?;
    Ok(
        if aborted.get_type()? == ValueType::Boolean
            && add.get_type()? == ValueType::Function
            && remove.get_type()? == ValueType::Function
        {
            Ok(Some(Signal {
                obj,
                aborted: convert::cast::<bool>(&aborted)?,
                add,
                remove,
            }))
        } else {
            Err(FoldError::invalid("options.signal must be an AbortSignal"))
        },
    )
}

impl<'e> Signal<'e> {
    /// Whether the signal had fired when it was checked.
    pub fn aborted(&self) -> bool {
        self.aborted
    }

    /// The signal's `reason`.
    pub fn reason(&self) -> napi::Result<Unknown<'e>> {
        self.obj.get_named_property("reason")
    }
}

impl SignalListener {
    /// Calls `on_abort` (on the JS thread) when the signal's `abort` event comes. A panic in it
    /// never reaches the event's dispatch (where a throw would be an uncaught exception).
    pub fn attach(env: &Env, signal: &Signal<'_>, on_abort: impl Fn(&Env) + 'static) -> napi::Result<Self> {
        let f = env.create_function_from_closure::<(), (), _>("onAbort", move |ctx| {
            if let Err(e) = guard::catching("the abort listener", || on_abort(ctx.env)) {
                eprintln!("dsh-fold: {e}");
            }
            Ok(())
        })?;
        if let Err(thrown) =
            convert::call_catching(env, signal.obj.raw(), signal.add.raw(), FnArgs::from(("abort", f)))?
        {
            return Err(napi::Error::from_reason(format!(
                "options.signal.addEventListener threw: {}",
                convert::reason_of(thrown)
            )));
        }
        Ok(Self {
            signal: signal.obj.create_ref::<false>()?,
            remove: convert::cast::<Function<(), ()>>(&signal.remove)?.create_ref()?,
            listener: f.create_ref()?,
        })
    }

    /// Removes the listener and releases the signal; returns the signal's `reason`.
    pub fn detach<'e>(self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        let signal = self.signal.get_value(env)?;
        self.signal.unref(env)?;
        let listener = self.listener.borrow_back(env)?;
        // A throwing removeEventListener leaves a listener that finds its fold settled.
        let _ = convert::call_catching(
            env,
            signal.raw(),
            self.remove.borrow_back(env)?.raw(),
            FnArgs::from(("abort", listener)),
        )?;
        signal.get_named_property("reason")
    }
}

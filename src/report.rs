//! `extractiveReport`: the fold's report written without a model, synchronously on the JS thread.
//!
//! Contract: takes the region's messages as a JSON string (DSH's `deriveMessages()` shape) and
//! options `{ language?: 'en' | 'zh', maxChars?: number }`, returns the Markdown report, at most
//! `min(maxChars, visible - 1)` UTF-16 units long (`visible`: the region's model-visible text;
//! `maxChars` absent: the core's `default_max_chars(visible)` = 1000 + visible / 4), the
//! same bytes for the same input. Throws a coded `FoldError`: `INVALID_ARGUMENT` for a
//! non-string, non-JSON or non-message input or bad options, `SHRINK` when not even the report's
//! skeleton fits. All rules live in `fold_core::report`; it runs at about 50 MB/s of CPU time
//! (bench figure 6), so even a large region costs milliseconds and needs no worker thread.

use fold_core::report::{self, Language, ReportOptions as CoreOptions};
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::convert::{self, throw, CoreResult};

/// Largest `maxChars` accepted.
const MAX_CHARS: f64 = u32::MAX as f64;

/// Options of `extractiveReport`.
#[napi(object)]
pub struct ReportOptions {
    /// Section names and fixed phrases of the report.
    /// @default 'en'
    #[napi(ts_type = "'en' | 'zh'")]
    pub language: Option<String>,
    /// Upper bound of the report in UTF-16 units (JS `string.length`); the region's own visible
    /// size minus one bounds it further. Absent: a function of the region's size, 1000 plus a
    /// quarter of its visible chars (what the plugin and the CLI use).
    /// @default 1000 + floor(visible / 4)
    pub max_chars: Option<u32>,
}

/// Reads `options` (absent, `undefined` or `null`: the defaults).
fn options(v: Option<&Unknown<'_>>) -> napi::Result<CoreResult<CoreOptions>> {
    let mut out = CoreOptions::default();
    let Some(v) = v else { return Ok(Ok(out)) };
    match v.get_type()? {
        ValueType::Undefined | ValueType::Null => return Ok(Ok(out)),
        ValueType::Object => {}
        _ => {
            return Ok(Err(FoldError::invalid(format!(
                "options must be {{ language?, maxChars? }}, got {}",
                convert::describe(v)?
            ))))
        }
    }
    let obj = convert::cast::<Object>(v)?;
    let language: Unknown = obj.get_named_property("language")?;
    match convert::opt_string(Some(&language), "options.language")? {
        Ok(None) => {}
        Ok(Some(s)) => match Language::parse(&s) {
            Ok(l) => out.language = l,
            Err(_) => {
                return Ok(Err(FoldError::invalid(format!(
                    "options.language must be 'en' or 'zh', got {s:?}"
                ))))
            }
        },
        Err(e) => return Ok(Err(e)),
    }
    let max: Unknown = obj.get_named_property("maxChars")?;
    match max.get_type()? {
        ValueType::Undefined | ValueType::Null => {}
        ValueType::Number => {
            let n = convert::cast::<f64>(&max)?;
            if !(n.fract() == 0.0 && (1.0..=MAX_CHARS).contains(&n)) {
                return Ok(Err(FoldError::invalid(format!(
                    "options.maxChars must be an integer from 1 to {MAX_CHARS}, got {n}"
                ))));
            }
            out.max_chars = Some(n as usize);
        }
        _ => {
            return Ok(Err(FoldError::invalid(format!(
                "options.maxChars must be a number, got {}",
                convert::describe(&max)?
            ))))
        }
    }
    Ok(Ok(out))
}

/// The deterministic extractive report of a region: Findings, Files and Artifacts, Decisions,
/// Unresolved Questions, Recommended Next Step, copied verbatim from the messages.
#[napi(ts_args_type = "messagesJson: string, options?: ReportOptions | null")]
pub fn extractive_report(env: &Env, messages_json: Unknown<'_>, options: Option<Unknown<'_>>) -> Result<String> {
    crate::guard::throwing(env, "extractiveReport", || report_checked(env, messages_json, options))
}

fn report_checked(env: &Env, messages_json: Unknown<'_>, options: Option<Unknown<'_>>) -> Result<String> {
    let json = convert::string(&messages_json, "messagesJson")?.map_err(|e| throw(env, &e))?;
    let options = self::options(options.as_ref())?.map_err(|e| throw(env, &e))?;
    report::extractive_report(&json, &options).map_err(|e| throw(env, &e))
}

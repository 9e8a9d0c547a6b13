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

use fold_core::report::{self, Language, MessageFacts, ReportOptions as CoreOptions, ThoughtOptions as CoreThought};
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::convert::{self, cast, describe, throw, CoreResult};

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

/// What one message contributes to an extractive report (`reportFacts`): an opaque handle.
#[napi]
pub struct ReportFacts {
    facts: MessageFacts,
}

#[napi]
impl ReportFacts {
    /// The message's model-visible text in UTF-16 units.
    #[napi(getter)]
    pub fn visible_chars(&self) -> f64 {
        self.facts.visible_chars() as f64
    }

    /// The chars a report takes to copy what the message names (its calls' labels, error lines
    /// and paths, as if no other message named them): an upper bound of its share of a report.
    #[napi(getter)]
    pub fn fact_chars(&self) -> f64 {
        self.facts.fact_chars() as f64
    }
}

/// Reads one message (DSH's shape, as JSON) for `extractiveReportOf`.
#[napi(ts_args_type = "messageJson: string")]
pub fn report_facts(env: &Env, message_json: Unknown<'_>) -> Result<ReportFacts> {
    crate::guard::throwing(env, "reportFacts", || {
        let json = convert::string(&message_json, "messageJson")?.map_err(|e| throw(env, &e))?;
        let facts = MessageFacts::parse(&json).map_err(|e| throw(env, &e))?;
        Ok(ReportFacts { facts })
    })
}

/// The extractive report of a region given as its messages' `ReportFacts`, in order: the same
/// text `extractiveReport` writes for those messages.
#[napi(ts_args_type = "facts: ReportFacts[], options?: ReportOptions | null")]
pub fn extractive_report_of(env: &Env, facts: Unknown<'_>, options: Option<Unknown<'_>>) -> Result<String> {
    crate::guard::throwing(env, "extractiveReportOf", || {
        let handles = convert::arg_or_throw!(env, report_facts_list(env, &facts));
        let options = self::options(options.as_ref())?.map_err(|e| throw(env, &e))?;
        report::report_of(handles.iter().map(|h| &h.facts), &options).map_err(|e| throw(env, &e))
    })
}

/// Reads `facts`: an array of `ReportFacts` (each checked with `instanceof` before it is unwrapped).
fn report_facts_list<'e>(env: &Env, v: &Unknown<'e>) -> napi::Result<CoreResult<Vec<ClassInstance<'e, ReportFacts>>>> {
    if v.get_type()? != ValueType::Object || !v.is_array()? {
        return Ok(Err(FoldError::invalid(format!(
            "facts must be an array of ReportFacts (what reportFacts returns), got {}",
            describe(v)?
        ))));
    }
    let array = cast::<Object>(v)?;
    let len = array.get_array_length()?;
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..len {
        let item: Unknown = array.get_element(i)?;
        if item.get_type()? != ValueType::Object || !ReportFacts::instance_of(env, &item)? {
            return Ok(Err(FoldError::invalid(format!(
                "facts[{i}] must be a ReportFacts (what reportFacts returns), got {}",
                describe(&item)?
            ))));
        }
        out.push(cast::<ClassInstance<ReportFacts>>(&item)?);
    }
    Ok(Ok(out))
}

/// Options of `trainOfThoughtOf`: each part's room (a compaction plan's `thought`), the
/// checkpoint's other text and the recall tool's name.
#[napi(object)]
pub struct ThoughtOptions {
    /// @default 'en'
    #[napi(ts_type = "'en' | 'zh'")]
    pub language: Option<String>,
    /// The latest words' room, in UTF-16 units.
    pub intent_chars: u32,
    /// The names line's room.
    pub names_chars: u32,
    /// The open state's room.
    pub state_chars: u32,
    /// The checkpoint's other text: a name it holds is not listed again.
    pub written: Option<String>,
    /// The recall tool's name, when the model can call it (the names line says it finds each).
    pub recall: Option<String>,
}

/// The train of thought of a compaction's range (`fold_core::report::thought`): the model's
/// latest words, the names in play and the open state of the work, from the range's messages'
/// `ReportFacts` (in order, with their event seqs) and the kept tail's (a name the model wrote
/// there is not listed). Empty when there is nothing to say.
#[napi(ts_args_type = "facts: ReportFacts[], seqs: Uint32Array, tail: ReportFacts[], options: ThoughtOptions")]
pub fn train_of_thought_of(
    env: &Env,
    facts: Unknown<'_>,
    seqs: Uint32Array,
    tail: Unknown<'_>,
    options: ThoughtOptions,
) -> Result<String> {
    crate::guard::throwing(env, "trainOfThoughtOf", || {
        let handles = convert::arg_or_throw!(env, report_facts_list(env, &facts));
        let tail = convert::arg_or_throw!(env, report_facts_list(env, &tail));
        if seqs.len() != handles.len() {
            let e = FoldError::invalid(format!(
                "seqs holds {} seqs for {} facts (one each)",
                seqs.len(),
                handles.len()
            ));
            return Err(throw(env, &e));
        }
        let language = match options.language.as_deref() {
            None => Language::En,
            Some(s) => Language::parse(s).map_err(|e| throw(env, &e))?,
        };
        let range: Vec<(u32, &MessageFacts)> = seqs.iter().copied().zip(handles.iter().map(|h| &h.facts)).collect();
        let tail: Vec<&MessageFacts> = tail.iter().map(|h| &h.facts).collect();
        let core = CoreThought {
            language,
            intent_chars: options.intent_chars as usize,
            names_chars: options.names_chars as usize,
            state_chars: options.state_chars as usize,
            written: options.written.as_deref().unwrap_or(""),
            recall: options.recall.as_deref(),
        };
        Ok(report::train_of_thought(&range, &tail, &core))
    })
}

//! `recallSearch`: the recall tool's matcher, synchronously on the JS thread.
//!
//! Contract: `recallSearch(texts, query, maxHits?)` compiles `query` (`/regex/flags` or a
//! smart-case substring; rules in `fold_core::recall`) and returns `{hits, total, literal}`:
//! `hits` a `Uint32Array` of 4 words per matching line — text index, line index, first match's
//! start and end in UTF-16 units within the line — for the first `maxHits` (default: all)
//! matching lines in text order, `total` every matching line. A bad or refused query (syntax,
//! look-around, backreferences, too long, too large a program) and non-string arguments throw
//! a coded `INVALID_ARGUMENT`. The engine is linear in the input, so no query can stall the JS
//! thread beyond O(pattern × text).

use fold_core::recall::{self, Query};
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::convert::{self, throw};

/// What `recallSearch` found.
#[napi(object)]
pub struct RecallSearch {
    /// 4 words per matching line shown: text index, line index, match start, match end (UTF-16).
    pub hits: Uint32Array,
    /// Matching lines, all of them (`hits` holds at most `maxHits`).
    pub total: u32,
    /// Whether the query was a literal substring (not a `/regex/`).
    pub literal: bool,
}

/// The lines of `texts` that match `query` (see the module contract).
#[napi(ts_args_type = "texts: string[], query: string, maxHits?: number | null")]
pub fn recall_search(
    env: &Env,
    texts: Unknown<'_>,
    query: Unknown<'_>,
    max_hits: Option<Unknown<'_>>,
) -> Result<RecallSearch> {
    crate::guard::throwing(env, "recallSearch", || search_checked(env, texts, query, max_hits))
}

fn search_checked(
    env: &Env,
    texts: Unknown<'_>,
    query: Unknown<'_>,
    max_hits: Option<Unknown<'_>>,
) -> Result<RecallSearch> {
    let query = convert::string(&query, "query")?.map_err(|e| throw(env, &e))?;
    let texts = strings(&texts).map_err(|e| throw(env, &e))?;
    let max_hits = match max_hits {
        None => usize::MAX,
        Some(v) if matches!(v.get_type()?, ValueType::Undefined | ValueType::Null) => usize::MAX,
        Some(v) => convert::integer(&v, "maxHits", u32::MAX as f64)?.map_err(|e| throw(env, &e))? as usize,
    };
    let query = Query::parse(&query).map_err(|e| throw(env, &e))?;
    let found = recall::search(&texts, &query, max_hits);
    let mut words = Vec::with_capacity(found.hits.len() * 4);
    for h in &found.hits {
        words.extend_from_slice(&[h.text, h.line, h.start, h.end]);
    }
    Ok(RecallSearch {
        hits: Uint32Array::new(words),
        total: found.total,
        literal: query.is_literal(),
    })
}

/// `texts`: an array of strings.
fn strings(v: &Unknown<'_>) -> std::result::Result<Vec<String>, FoldError> {
    let not_array = || FoldError::invalid("texts must be an array of strings");
    if !v.is_array().map_err(|_| not_array())? {
        return Err(not_array());
    }
    let texts: Vec<Unknown> = convert::cast(v).map_err(|_| not_array())?;
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| match convert::string(t, &format!("texts[{i}]")) {
            Ok(r) => r,
            Err(_) => Err(not_array()),
        })
        .collect()
}

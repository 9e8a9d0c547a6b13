//! `SessionMirror`: one session's mirror ([`fold_core::mirror`]) as a JS class. The plugin feeds
//! it from its `session/event` listener (`push`, one record per event, synchronously) and
//! rebuilds it from the session when it falls out of step (`load` + `loadLog`, or `reset` and
//! every event again); `rewind` (`host.mirror`, or what a host's `snapshot()` returns),
//! `selectRegion`, `planMatches`, `planBlockSummary` and recall (`replacements`, `originals`) read
//! it, and nothing else. Conversion only: every rule is the core's.
//!
//! A JS value is taken for a mirror only if it is an instance of this class (`instanceof`),
//! checked before it is unwrapped.

use fold_core::mirror::{Mirror, Replacement, Source};
use fold_core::surface::BlockId;
use fold_core::FoldError;
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::convert::{self, cast, describe, throw, CoreResult};
use crate::guard;

/// One session's mirror.
#[napi]
pub struct SessionMirror {
    pub(crate) mirror: Mirror,
}

/// The token and char price of some nodes ([`SessionMirror::price`]).
#[napi(object)]
pub struct NodesPrice {
    /// Model-visible chars (UTF-16 units) of the described nodes among them.
    pub chars: f64,
    /// Their token price, when every one is described and priced by a token meter.
    pub tokens: Option<f64>,
}

/// One replacement of the session's history, as recall lists it.
#[napi(object)]
pub struct MirrorReplacement {
    pub seq: u32,
    /// `fold` (a rewind report), `block` (a block summary), `compaction`, or `rewrite`.
    #[napi(ts_type = "'fold' | 'block' | 'compaction' | 'rewrite'")]
    pub kind: String,
    /// A fold's mark id.
    pub mark_id: Option<f64>,
    /// A block summary's closed ids.
    #[napi(ts_type = "string[] | undefined")]
    pub closed: Option<Vec<Utf16String>>,
    /// A block summary's carried ids.
    #[napi(ts_type = "string[] | undefined")]
    pub remaining: Option<Vec<Utf16String>>,
    /// The message events it cites, in its order.
    pub sources: Uint32Array,
}

fn js(env: &Env, e: &FoldError) -> napi::Error {
    throw(env, e)
}

#[napi]
impl SessionMirror {
    /// The mirror of an empty session.
    #[napi(constructor)]
    #[allow(clippy::new_without_default, reason = "a JS constructor")]
    pub fn new() -> Self {
        Self { mirror: Mirror::new() }
    }

    /// Describes the next events of the log: `words[0..length]` (all of `words` when `length` is
    /// absent) holds one record after another (format: `crates/fold-core/src/mirror/mod.rs`). A record
    /// out of step throws `INVALID_ARGUMENT` and leaves the mirror broken until rebuilt.
    #[napi]
    pub fn push(&mut self, env: &Env, words: &[u32], length: Option<u32>) -> Result<()> {
        guard::throwing(env, "SessionMirror.push", || {
            let words = match length {
                Some(n) if (n as usize) <= words.len() => &words[..n as usize],
                Some(n) => {
                    return Err(js(
                        env,
                        &FoldError::invalid(format!("length {n} is past the {} words", words.len())),
                    ))
                }
                None => words,
            };
            self.mirror.push(words).map_err(|e| js(env, &e))
        })
    }

    /// Rebuilds the surface index from a description of the surface as it is now (the load
    /// format). The log index is unknown until `loadLog`.
    #[napi]
    pub fn load(&mut self, env: &Env, words: &[u32]) -> Result<()> {
        guard::throwing(env, "SessionMirror.load", || {
            self.mirror.load(words).map_err(|e| js(env, &e))
        })
    }

    /// Learns the log index of a loaded mirror: the open `compaction/start` (or `0xFFFFFFFF`) and
    /// every replacement's record, in log order.
    #[napi]
    pub fn load_log(&mut self, env: &Env, open_compaction: u32, words: &[u32]) -> Result<()> {
        guard::throwing(env, "SessionMirror.loadLog", || {
            self.mirror.load_log(open_compaction, words).map_err(|e| js(env, &e))
        })
    }

    /// Forgets everything: the mirror of an empty session again.
    #[napi]
    pub fn reset(&mut self, env: &Env) -> Result<()> {
        guard::throwing(env, "SessionMirror.reset", || {
            self.mirror.reset();
            Ok(())
        })
    }

    /// Interns a list of block ids (exact UTF-16): the set word a record carries (0 for none).
    #[napi(ts_args_type = "ids: string[]")]
    pub fn intern(&mut self, env: &Env, ids: Unknown<'_>) -> Result<u32> {
        guard::throwing(env, "SessionMirror.intern", || {
            let ids = convert::arg_or_throw!(env, block_ids(&ids, "ids"));
            Ok(self.mirror.intern(&ids))
        })
    }

    /// Whether the mirror describes a log of `eventCount` events whose surface had
    /// `generation` replaces: 0 in step, 1 behind (events to describe), 2 out of step (broken,
    /// ahead, or another generation: rebuild it). One call for the check made before every
    /// answer.
    #[napi]
    pub fn step(&self, env: &Env, event_count: u32, generation: u32) -> Result<u32> {
        guard::throwing(env, "SessionMirror.step", || {
            Ok({
                let m = &self.mirror;
                if m.broken().is_some() || m.event_count() > event_count {
                    2
                } else if m.event_count() < event_count {
                    1
                } else if m.generation() != generation {
                    2
                } else {
                    0
                }
            })
        })
    }

    /// The log length the mirror describes.
    #[napi(getter)]
    pub fn event_count(&self, env: &Env) -> Result<u32> {
        guard::throwing(env, "SessionMirror.eventCount", || Ok(self.mirror.event_count()))
    }

    /// Replaces applied (DSH's `surface.replaceGeneration` for the same log).
    #[napi(getter)]
    pub fn generation(&self, env: &Env) -> Result<u32> {
        guard::throwing(env, "SessionMirror.generation", || Ok(self.mirror.generation()))
    }

    /// Why the mirror cannot answer until rebuilt, or `null`.
    #[napi(getter)]
    pub fn broken(&self, env: &Env) -> Result<Option<String>> {
        guard::throwing(env, "SessionMirror.broken", || {
            Ok(self.mirror.broken().map(str::to_owned))
        })
    }

    /// Whether the log index (open compaction, replacements) is known.
    #[napi(getter)]
    pub fn log_known(&self, env: &Env) -> Result<bool> {
        guard::throwing(env, "SessionMirror.logKnown", || Ok(self.mirror.log_known()))
    }

    /// The seq of the `compaction/start` holding DSH's compaction lock now (no `compaction/end`
    /// nor `session/end-seed` after it), or `null`. Throws while the log index is unknown
    /// (`loadLog` first).
    #[napi]
    pub fn open_compaction(&self, env: &Env) -> Result<Option<u32>> {
        guard::throwing(env, "SessionMirror.openCompaction", || {
            match self.mirror.open_compaction() {
                Some(open) => Ok(open),
                None => Err(js(
                    env,
                    &FoldError::invalid("the mirror's log index is not known yet (loadLog first)"),
                )),
            }
        })
    }

    /// Surface nodes.
    #[napi(getter)]
    pub fn length(&self, env: &Env) -> Result<u32> {
        guard::throwing(env, "SessionMirror.length", || Ok(self.mirror.len() as u32))
    }

    /// The surface's token price (when every node is priced) and chars.
    #[napi]
    pub fn surface_price(&self, env: &Env) -> Result<NodesPrice> {
        guard::throwing(env, "SessionMirror.surfacePrice", || {
            Ok(NodesPrice {
                chars: self.mirror.surface_chars() as f64,
                tokens: self.mirror.surface_tokens().map(|t| t as f64),
            })
        })
    }

    /// The price of the described events `seqs`.
    #[napi]
    pub fn price(&self, env: &Env, seqs: &[u32]) -> Result<NodesPrice> {
        guard::throwing(env, "SessionMirror.price", || {
            Ok(NodesPrice {
                chars: self.mirror.chars_of(seqs) as f64,
                tokens: self.mirror.tokens_of(seqs).map(|t| t as f64),
            })
        })
    }

    /// The rewind report of `markId` appended at or after `anchor`, wherever it stands now (on the
    /// surface, or replaced since: the log's record that the mark's fold happened; complete once
    /// the log index is known), or `null`: its seq, whether it is still on the surface, and the
    /// tokens its fold freed (its sources' price minus its own), when priced.
    #[napi(ts_return_type = "{ seq: number, onSurface: boolean, tokensFreed?: number } | null")]
    pub fn report_of(&self, env: &Env, mark_id: f64, anchor: f64) -> Result<Option<ReportOf>> {
        guard::throwing(env, "SessionMirror.reportOf", || {
            // Ids are exact integers in JS numbers: anything else names no mark.
            if !(mark_id >= 0.0 && mark_id.fract() == 0.0 && mark_id <= 9_007_199_254_740_991.0) || anchor.is_nan() {
                return Ok(None);
            }
            let (mark_id, anchor) = (mark_id as u64, anchor.max(0.0).ceil() as u64);
            Ok(self.mirror.mark_report(mark_id, anchor).map(|report| ReportOf {
                seq: report.seq,
                on_surface: report.pos.is_some(),
                tokens_freed: report
                    .facts
                    .folded_tokens
                    .zip(report.tokens)
                    .map(|(folded, own)| folded.saturating_sub(u64::from(own)) as f64),
            }))
        })
    }

    /// The session's replacements, in log order (recall's listing); `null` while the log index is
    /// unknown (`loadLog`).
    #[napi]
    pub fn replacements(&self, env: &Env) -> Result<Option<Vec<MirrorReplacement>>> {
        guard::throwing(env, "SessionMirror.replacements", || {
            Ok({
                let history = self.mirror.replacements();
                history.map(|h| h.iter().map(|r| self.listed(r)).collect())
            })
        })
    }

    /// The original messages a fold or block summary stands for, in model order, nested folds and
    /// block summaries opened up (recall's rule); `null` when `seq` is no known replacement.
    #[napi]
    pub fn originals(&self, env: &Env, seq: u32) -> Result<Option<Uint32Array>> {
        guard::throwing(env, "SessionMirror.originals", || {
            Ok({
                let open = |r: &Replacement| matches!(r.source, Source::RewindReport { .. } | Source::BlockSummary);
                self.mirror.originals(seq, open).map(Uint32Array::new)
            })
        })
    }

    /// The opener (assistant seq) of the call the tool result `seq` answers, when known.
    #[napi]
    pub fn opener(&self, env: &Env, seq: u32) -> Result<Option<u32>> {
        guard::throwing(env, "SessionMirror.opener", || {
            Ok(self.mirror.described(seq).and_then(|v| v.opener))
        })
    }

    /// Approximate heap bytes the mirror holds.
    #[napi]
    pub fn heap_bytes(&self, env: &Env) -> Result<f64> {
        guard::throwing(env, "SessionMirror.heapBytes", || Ok(self.mirror.heap_bytes() as f64))
    }

    /// A canonical description of everything a planner reads, as JSON (tests compare two
    /// mirrors by it, and read a mirror's facts off it: `fold_core::mirror::Canonical`);
    /// `nodeIds: false` leaves out the nodes' block ids (a mirror rebuilt from its surface knows
    /// the ids a compaction covered only when block mode had every event described).
    #[napi]
    pub fn canonical(&self, env: &Env, node_ids: Option<bool>) -> Result<String> {
        guard::throwing(env, "SessionMirror.canonical", || {
            let mut c = self.mirror.canonical().map_err(|e| js(env, &e))?;
            if node_ids == Some(false) {
                for node in &mut c.nodes {
                    node.ids = None;
                }
            }
            Ok(c.to_json())
        })
    }
}

#[napi(object)]
pub struct ReportOf {
    pub seq: u32,
    /// Whether the report still stands on the surface (else a compaction or another replacement
    /// took its place since).
    pub on_surface: bool,
    pub tokens_freed: Option<f64>,
}

impl SessionMirror {
    fn listed(&self, r: &Replacement) -> MirrorReplacement {
        let spell = |k: Option<u32>| {
            k.map(|k| {
                self.mirror
                    .set(k)
                    .iter()
                    .map(|&m| Utf16String::from(self.mirror.id(m).to_vec()))
                    .collect()
            })
        };
        let (kind, mark_id) = match r.source {
            Source::RewindReport { mark_id } => ("fold", Some(mark_id as f64)),
            Source::BlockSummary => ("block", None),
            Source::CompactionSummary => ("compaction", None),
            _ => ("rewrite", None),
        };
        MirrorReplacement {
            seq: r.seq,
            kind: kind.into(),
            mark_id,
            closed: spell(r.closed).or_else(|| (kind == "block").then(Vec::new)),
            remaining: spell(r.carried).or_else(|| (kind == "block").then(Vec::new)),
            sources: Uint32Array::new(self.mirror.cited(r).to_vec()),
        }
    }
}

/// Reads `v` as a `SessionMirror`, if it is one (checked with `instanceof`). A class instance,
/// not a `&SessionMirror`: a borrow can be taken only in a generated callback's conversion, and
/// a fold reads the mirror from its own continuations too.
pub fn of<'e>(env: &Env, v: &Unknown<'e>) -> napi::Result<Option<ClassInstance<'e, SessionMirror>>> {
    if v.get_type()? != ValueType::Object || !SessionMirror::instance_of(env, v)? {
        return Ok(None);
    }
    Ok(Some(cast::<ClassInstance<SessionMirror>>(v)?))
}

/// The coded error for a value that is not a `SessionMirror` where a planner reads one.
pub fn expected(v: &Unknown<'_>) -> napi::Result<FoldError> {
    Ok(FoldError::invalid(format!(
        "mirror must be the session's SessionMirror (plugin/shared/mirror.js: mirrorOf(session).native), got {}",
        describe(v)?
    )))
}

/// An array of block id strings, kept as exact UTF-16.
pub fn block_ids(v: &Unknown<'_>, name: &str) -> napi::Result<CoreResult<Vec<BlockId>>> {
    if v.get_type()? != ValueType::Object || !v.is_array()? {
        return Ok(Err(FoldError::invalid(format!(
            "{name} must be an array of block id strings, got {}",
            describe(v)?
        ))));
    }
    let array = cast::<Object>(v)?;
    let len = array.get_array_length()?;
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..len {
        let item: Unknown = array.get_element(i)?;
        if item.get_type()? != ValueType::String {
            return Ok(Err(FoldError::invalid(format!(
                "{name}[{i}] must be a string, got {}",
                describe(&item)?
            ))));
        }
        out.push(BlockId(cast::<Utf16String>(&item)?.to_vec()));
    }
    Ok(Ok(out))
}

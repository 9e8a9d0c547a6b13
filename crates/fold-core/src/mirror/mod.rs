//! The session mirror: one incremental description of a DSH session's model-visible surface,
//! kept beside the session and read by every planner — rewind's region ([`crate::region`]),
//! block mode ([`crate::blocks`]), recall's region listing, a compaction policy — so that no
//! planner needs a snapshot of the surface sent to it.
//!
//! Contract:
//! - **Fed once per event.** The host describes each appended event once, in the order the log
//!   took it, as a record of `u32` words ([`Mirror::push`], format below): O(1) words for any
//!   event but a replacement, whose record also lists the message events it cites. The mirror
//!   keeps, per message event, its facts (kind, origin, model-visible chars, token price, call
//!   links, block ids, provenance), and the surface order; a replace splices the order as the
//!   host's surface does. Nothing is allocated in proportion to the session per event.
//! - **A cache, never a source of truth.** A record that does not follow from the mirror's state
//!   (a seq out of step, a replace of nodes not on its surface, a link the rules forbid) is an
//!   error and leaves the mirror *broken*: every read fails until the host rebuilds it, from
//!   the session itself ([`Mirror::load`]: the surface as it is now, or [`Mirror::reset`] and
//!   every event again). The host compares [`Mirror::event_count`] and [`Mirror::generation`]
//!   with its own log length and replace generation before it trusts an answer.
//! - **Two levels of knowledge.** The surface index (order, facts, pairing, reports, prices) is
//!   always known. The log index — the open compaction bracket and the history of replacements
//!   recall reads — is known when the mirror was fed from the log's first event; a mirror
//!   loaded from a surface learns it later ([`Mirror::load_log`]) and says so until then.
//! - **Reads** give node facts in surface order ([`Mirror::node`]), the pairing of any window
//!   ([`Mirror::pairing`]), and the exact inputs of the planners: rewind's [`Surface`] for a
//!   fold's anchor ([`Mirror::rewind_surface`]) and block mode's [`BlockSurface`]
//!   ([`Mirror::block_surface`]). They equal what the snapshot formats of [`crate::surface`]
//!   decode to for the same session (the property tests hold the mirror to that after every
//!   step of random sessions).
//!
//! ## The record format (`u32` words)
//!
//! ```text
//! [0]  seq
//! [1]  meta   bits 0-1   kind: 0 other, 1 user, 2 assistant, 3 tool result
//!             bits 2-3   surface op: 0 none (a log-only event), 1 append, 2 replace
//!             bit 4      PROTECTED: no summary may replace it (a system or developer message)
//!             bits 8-11  source: 0 appended, 1 the user's, 2 injected, 3 rewind report,
//!                        4 block summary, 5 compaction summary, 6 another rewrite,
//!                        7 a plugin's note that asks nothing (see [`Source`])
//!             bits 12-15 log class: 0 other, 1 compaction/start, 2 compaction/end,
//!                        3 session/end-seed
//!      A log-only event's record ends here (2 words); a surface event's goes on:
//! [2]  link   assistant: how many tool calls it opens; tool result: 1 + seq of the assistant
//!             event that opened its call (0: unknown; a result rewritten in place with 0 takes
//!             the link of the result it replaces); others 0
//! [3]  chars  model-visible text (UTF-16 units: text, reasoning, call arguments, tool outputs)
//! [4]  tokens the token meter's price of its message, or NONE when no meter priced it
//! [5]  ids    0, or 1 + an id set ([`Mirror::intern`]): an assistant's block ids (of its block
//!             calls, in call order), a block summary's carried ids
//! [6]  closed 0, or 1 + the id set a block summary closed
//! [7]  mark id, low 32 bits (a rewind report)
//! [8]  mark id, high 32 bits
//! [9]  replace start seq (op 2; else 0)
//! [10] replace end seq   (op 2; else 0)
//! [11] the lowest seq the event cites in `sourceEventSeqs` (op 2), or NONE
//! [12] origin: NONE in a pushed record (the mirror derives it); the node's origin in a loaded one
//! [13] S, then S seqs: the surface-eligible events the replacement cites, in its order (op 2)
//! ```
//!
//! A node's *origin* is the smallest event seq it stands for: its own, or for a replacement the
//! origin of the node it replaced first (`start`) or any lower seq it cites. A replacement's
//! block ids, when it is not a block summary, are the ids of what it covered: the union, in order
//! of first appearance, of the ids of the events it cites.
//!
//! ## The load format (a rebuild from a surface)
//!
//! ```text
//! [0] LOAD_FORMAT (= 3)
//! [1] event count   the log's length
//! [2] generation    the host surface's replace generation
//! [3] N             surface nodes
//! [4] M             other described events (the events rewind reports on the surface cite)
//! then M records (in seq order), then N records in model order, each as above with its origin
//! ```
//!
//! The files, one concern each: this one keeps the record format, the mirror's state and its
//! views and queries; `feed.rs` how a pushed record is checked, resolved, placed and remembered;
//! `rebuild.rs` the load and the log index learnt from the log (a mark's report wherever it
//! stands); `inputs.rs` what the planners read (rewind's window, block mode's surface, prices).

use std::collections::HashMap;
use std::ops::Range;

use crate::error::{FoldError, Result};
use crate::surface::{BlockId, BlockNode, BlockSurface, Kind, Node, Pairing, Provenance, Surface};

mod feed;
mod inputs;
mod rebuild;

/// "None" in a word.
pub const NONE: u32 = u32::MAX;
/// The load format's version word.
pub const LOAD_FORMAT: u32 = 3;
/// Words before the sources of a surface event's record.
pub const RECORD_WORDS: usize = 14;
const LOG_RECORD_WORDS: usize = 2;
const LOAD_HEADER_WORDS: usize = 5;

const KIND_BITS: u32 = 0b11;
const OP_SHIFT: u32 = 2;
const OP_BITS: u32 = 0b11 << OP_SHIFT;
const OP_APPEND: u32 = 1;
const OP_REPLACE: u32 = 2;
/// Record meta bit: a protected node.
pub const PROTECTED: u32 = 1 << 4;
const SOURCE_SHIFT: u32 = 8;
const SOURCE_BITS: u32 = 0xF << SOURCE_SHIFT;
const LOG_SHIFT: u32 = 12;
const LOG_BITS: u32 = 0xF << LOG_SHIFT;
const META_BITS: u32 = KIND_BITS | OP_BITS | PROTECTED | SOURCE_BITS | LOG_BITS;

/// How a node came to be on the surface: what it is to a planner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Source {
    /// An appended model message, tool result, or other surface event.
    Appended,
    /// An appended `user/message` the user wrote (its source kind is `user`).
    User,
    /// An appended `user/message` from elsewhere: workspace instructions, a plugin's message.
    Injected,
    /// A rewind report: the replacement of the fold of `mark_id`.
    RewindReport { mark_id: u64 },
    /// A block summary: a replacement carrying the block ids it did not close.
    BlockSummary,
    /// A compaction's summary (DSH's compact checkpoint source, not a block summary).
    CompactionSummary,
    /// Any other replacement (a tool result rewritten by a pruner, another producer's).
    Rewrite,
    /// An appended `user/message` from a plugin that asks nothing of the model and adds no
    /// requirement (block mode's note naming summaries it did not apply): injected, but not
    /// user-authored, so it makes no queued summary stale.
    Note,
}

impl Source {
    fn of(code: u32, mark_low: u32, mark_high: u32) -> std::result::Result<Self, String> {
        Ok(match code {
            0 => Self::Appended,
            1 => Self::User,
            2 => Self::Injected,
            3 => Self::RewindReport {
                mark_id: u64::from(mark_low) | u64::from(mark_high) << 32,
            },
            4 => Self::BlockSummary,
            5 => Self::CompactionSummary,
            6 => Self::Rewrite,
            7 => Self::Note,
            other => return Err(format!("unknown source {other}")),
        })
    }

    fn code(self) -> u32 {
        match self {
            Self::Appended => 0,
            Self::User => 1,
            Self::Injected => 2,
            Self::RewindReport { .. } => 3,
            Self::BlockSummary => 4,
            Self::CompactionSummary => 5,
            Self::Rewrite => 6,
            Self::Note => 7,
        }
    }

    /// Whether the node replaced others (a `surfaceOp: replace`).
    pub fn is_replacement(self) -> bool {
        matches!(
            self,
            Self::RewindReport { .. } | Self::BlockSummary | Self::CompactionSummary | Self::Rewrite
        )
    }

    /// Whether the node is a `user/message` appended from outside the model's work.
    pub fn is_user_authored(self) -> bool {
        matches!(self, Self::User | Self::Injected)
    }
}

/// One described event as planners read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeView {
    pub seq: u32,
    pub kind: Kind,
    /// The smallest event seq the node stands for.
    pub origin: u32,
    /// Model-visible text, in UTF-16 units.
    pub chars: u32,
    /// The token meter's price, when a meter priced it.
    pub tokens: Option<u32>,
    /// Assistant nodes: how many tool calls it opens.
    pub opens: u32,
    /// Tool results: the seq of the assistant event that opened the call, when known (it may be
    /// off the surface: an orphan).
    pub opener: Option<u32>,
    pub source: Source,
    pub protected: bool,
    /// The node's block id set ([`Mirror::set`]): an assistant's block ids, a block summary's
    /// carried ids, another replacement's covered ids.
    pub ids: Option<u32>,
    /// The surface position, when the node is on the surface.
    pub pos: Option<usize>,
}

/// A rewind report's account of its fold, from the events it cites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ReportFacts {
    pub mark_id: u64,
    /// The message events it cites (the folded nodes).
    pub folded_nodes: u32,
    pub start: u32,
    pub end: u32,
    pub folded_chars: u64,
    /// Their token price, when every one was priced.
    pub folded_tokens: Option<u64>,
}

/// A mark's rewind report as the log records it ([`Mirror::mark_report`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkReport {
    pub seq: u32,
    /// The fold it records.
    pub facts: ReportFacts,
    /// The report's own model-visible chars and token price (when priced).
    pub chars: u32,
    pub tokens: Option<u32>,
    /// Its surface position, while it stands on the surface.
    pub pos: Option<usize>,
}

/// One replacement of the session's history (for recall): who replaced what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    pub seq: u32,
    pub kind: Kind,
    pub source: Source,
    /// A block summary's closed ids (a set), if any.
    pub closed: Option<u32>,
    /// A block summary's carried ids (a set), if any.
    pub carried: Option<u32>,
    sources: Range<usize>,
}

/// Per described event. `meta` packs kind, source code and the protected bit.
#[derive(Debug, Clone, Copy)]
struct Fact {
    seq: u32,
    origin: u32,
    chars: u32,
    tokens: u32,
    /// As the record's link word.
    link: u32,
    /// The opener's index in `facts` (tool results whose opener was described), else NONE.
    opener: u32,
    /// Set + 1, or 0.
    ids: u32,
    /// Surface position, or NONE.
    pos: u32,
    /// Index into `reports` + 1, or 0.
    report: u32,
    kind: Kind,
    source: Source,
    protected: bool,
}

/// Block ids and id sets, interned: each id once, each distinct list of ids once.
#[derive(Debug, Clone, Default)]
struct Interner {
    units: Vec<u16>,
    ranges: Vec<Range<usize>>,
    index: HashMap<Vec<u16>, u32>,
    sets: Vec<Range<usize>>,
    members: Vec<u32>,
    set_index: HashMap<Vec<u32>, u32>,
}

impl Interner {
    fn id(&mut self, units: &[u16]) -> u32 {
        if let Some(i) = self.index.get(units) {
            return *i;
        }
        let i = self.ranges.len() as u32;
        let start = self.units.len();
        self.units.extend_from_slice(units);
        self.ranges.push(start..self.units.len());
        self.index.insert(units.to_vec(), i);
        i
    }

    /// Set number + 1 of `members` (0 for none).
    fn set(&mut self, members: Vec<u32>) -> u32 {
        if members.is_empty() {
            return 0;
        }
        if let Some(k) = self.set_index.get(&members) {
            return k + 1;
        }
        let k = self.sets.len() as u32;
        let start = self.members.len();
        self.members.extend_from_slice(&members);
        self.sets.push(start..self.members.len());
        self.set_index.insert(members, k);
        k + 1
    }

    fn members(&self, k: u32) -> &[u32] {
        &self.members[self.sets[k as usize].clone()]
    }
}

/// Where each described event's fact is, by seq: one slot per event (a mirror fed from its
/// session's first event, or loaded from a real surface: one read per lookup), or a map for a load
/// that claims far more events than it describes (a host bug, or hostile words), so a claimed log
/// length never costs memory in proportion to it.
#[derive(Debug, Clone)]
enum FactIndex {
    Dense(Vec<u32>),
    Sparse(HashMap<u32, u32>),
}

/// Slots per described event a load may spend before its index is a map (a real session's
/// surface holds one node for every few dozen events at most).
const DENSE_SLOTS_PER_FACT: usize = 64;

impl Default for FactIndex {
    fn default() -> Self {
        Self::Dense(Vec::new())
    }
}

impl FactIndex {
    /// The index for a load of `facts` described events of a log of `event_count`.
    fn for_load(event_count: u32, facts: usize) -> Self {
        if event_count as usize <= facts.saturating_mul(DENSE_SLOTS_PER_FACT).max(1 << 16) {
            Self::Dense(Vec::new())
        } else {
            Self::Sparse(HashMap::with_capacity(facts))
        }
    }

    #[inline]
    fn get(&self, seq: u32) -> Option<usize> {
        match self {
            Self::Dense(slots) => match slots.get(seq as usize) {
                Some(&i) if i != NONE => Some(i as usize),
                _ => None,
            },
            Self::Sparse(map) => map.get(&seq).map(|&i| i as usize),
        }
    }

    fn set(&mut self, seq: u32, index: u32) {
        match self {
            Self::Dense(slots) => {
                if slots.len() <= seq as usize {
                    slots.resize(seq as usize + 1, NONE);
                }
                slots[seq as usize] = index;
            }
            Self::Sparse(map) => {
                map.insert(seq, index);
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Self::Dense(slots) => slots.capacity() * 4,
            Self::Sparse(map) => map.capacity() * 8,
        }
    }
}

/// One session's mirror. See the module docs.
#[derive(Debug, Clone, Default)]
pub struct Mirror {
    event_count: u32,
    generation: u32,
    broken: Option<String>,
    /// Every described event, by seq.
    facts: Vec<Fact>,
    /// Per event of the log (by seq): the index of its fact, if it was described. Finding a node
    /// by seq is then one read, not a search.
    fact_at: FactIndex,
    /// The surface: indexes into `facts`, in model order.
    order: Vec<u32>,
    /// Positions `i > 0` whose origin is below the origin at `i - 1` (0 on every surface DSH
    /// writes: origins rise along a surface, so the anchor's node is found by bisection).
    descents: u32,
    reports: Vec<ReportFacts>,
    /// The facts (indexes) of the rewind reports, in seq order: a fold looks for its report
    /// among these, not along the whole surface.
    report_facts: Vec<u32>,
    surface_chars: u64,
    surface_tokens: u64,
    /// Surface nodes without a token price.
    unpriced: u32,
    ids: Interner,
    /// Whether the log index below is known (fed from the first event, or loaded).
    log_known: bool,
    open_compaction: Option<u32>,
    history: Vec<Replacement>,
    history_sources: Vec<u32>,
}

fn out_of_step(what: impl std::fmt::Display) -> FoldError {
    FoldError::invalid(format!("the session mirror is out of step with its session: {what}"))
}

/// One record, borrowed from the words.
struct Record<'w> {
    w: &'w [u32],
}

impl<'w> Record<'w> {
    /// The record at the start of `words` and its length.
    fn at(words: &'w [u32]) -> std::result::Result<(Self, usize), String> {
        if words.len() < LOG_RECORD_WORDS {
            return Err(format!("a record of {} words", words.len()));
        }
        let meta = words[1];
        if meta & !META_BITS != 0 {
            return Err(format!(
                "event {}: unknown meta bits {:#x}",
                words[0],
                meta & !META_BITS
            ));
        }
        if (meta & OP_BITS) >> OP_SHIFT == 0 {
            if meta & !LOG_BITS != 0 {
                return Err(format!("log-only event {} carries node facts", words[0]));
            }
            return Ok((Self { w: &words[..2] }, LOG_RECORD_WORDS));
        }
        if words.len() < RECORD_WORDS {
            return Err(format!("event {}: a record of {} words", words[0], words.len()));
        }
        let len = RECORD_WORDS
            .checked_add(words[RECORD_WORDS - 1] as usize)
            .filter(|len| *len <= words.len())
            .ok_or_else(|| format!("event {}: its sources run past the words", words[0]))?;
        Ok((Self { w: &words[..len] }, len))
    }

    fn seq(&self) -> u32 {
        self.w[0]
    }
    fn meta(&self) -> u32 {
        self.w[1]
    }
    fn op(&self) -> u32 {
        (self.meta() & OP_BITS) >> OP_SHIFT
    }
    fn log_class(&self) -> u32 {
        (self.meta() & LOG_BITS) >> LOG_SHIFT
    }
    fn sources(&self) -> &'w [u32] {
        &self.w[RECORD_WORDS..]
    }

    /// The node facts, checked as a snapshot's node is (a link on the right kind only, an opener
    /// before its result), with `opener` and `report` unresolved.
    fn fact(&self, origin: u32) -> std::result::Result<Fact, String> {
        let w = self.w;
        let (seq, meta) = (w[0], w[1]);
        let kind = Kind::of(meta & KIND_BITS).unwrap_or(Kind::Other);
        let link = w[2];
        match kind {
            Kind::Assistant => {}
            Kind::ToolResult if link > seq => {
                return Err(format!("result {seq} answers a call of later event {}", link - 1))
            }
            Kind::ToolResult => {}
            _ if link != 0 => return Err(format!("event {seq}: a {kind:?} node cannot link to calls")),
            _ => {}
        }
        let source =
            Source::of((meta & SOURCE_BITS) >> SOURCE_SHIFT, w[7], w[8]).map_err(|e| format!("event {seq}: {e}"))?;
        if source.is_replacement() != (self.op() == OP_REPLACE) {
            return Err(format!("event {seq}: source {source:?} does not match its surface op"));
        }
        if origin > seq {
            return Err(format!("event {seq}: origin {origin} is after its seq"));
        }
        Ok(Fact {
            seq,
            origin,
            chars: w[3],
            tokens: w[4],
            link,
            opener: NONE,
            ids: w[5],
            pos: NONE,
            report: 0,
            kind,
            source,
            protected: meta & PROTECTED != 0,
        })
    }
}

impl Mirror {
    /// An empty mirror: the description of an empty session (its log index known).
    pub fn new() -> Self {
        Self {
            log_known: true,
            ..Self::default()
        }
    }

    /// Forgets everything: the mirror of an empty session again.
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// The log length the mirror has described.
    pub fn event_count(&self) -> u32 {
        self.event_count
    }

    /// Replaces applied to the surface (DSH's `surface.replaceGeneration` for the same log).
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// Why the mirror cannot answer (a record out of step), until it is rebuilt.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    fn check(&self) -> Result<()> {
        match &self.broken {
            Some(why) => Err(out_of_step(format!("{why}; rebuild it from the session"))),
            None => Ok(()),
        }
    }

    /// Surface nodes.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Model-visible chars on the surface.
    pub fn surface_chars(&self) -> u64 {
        self.surface_chars
    }

    /// The surface's token price, when every node on it was priced.
    pub fn surface_tokens(&self) -> Option<u64> {
        (self.unpriced == 0).then_some(self.surface_tokens)
    }

    /// The seq of a `compaction/start` with no end yet: `Some(None)` when none is open, `None`
    /// while the log index is unknown ([`Mirror::load_log`]).
    pub fn open_compaction(&self) -> Option<Option<u32>> {
        self.log_known.then_some(self.open_compaction)
    }

    #[inline]
    fn index_of(&self, seq: u32) -> Option<usize> {
        self.fact_at.get(seq)
    }

    #[inline]
    fn view(&self, f: &Fact) -> NodeView {
        NodeView {
            seq: f.seq,
            kind: f.kind,
            origin: f.origin,
            chars: f.chars,
            tokens: (f.tokens != NONE).then_some(f.tokens),
            opens: if f.kind == Kind::Assistant { f.link } else { 0 },
            opener: (f.kind == Kind::ToolResult && f.link > 0).then(|| f.link - 1),
            source: f.source,
            protected: f.protected,
            ids: f.ids.checked_sub(1),
            pos: (f.pos != NONE).then_some(f.pos as usize),
        }
    }

    /// The node at surface position `pos`.
    ///
    /// # Panics
    /// When `pos` is not below [`Mirror::len`].
    #[inline]
    pub fn node(&self, pos: usize) -> NodeView {
        self.view(&self.facts[self.order[pos] as usize])
    }

    /// The surface nodes in `range` of positions, in model order.
    #[inline]
    pub fn nodes(&self, range: Range<usize>) -> impl Iterator<Item = NodeView> + '_ {
        self.order[range].iter().map(|&i| self.view(&self.facts[i as usize]))
    }

    /// A described event by seq, on the surface or not (shadowed nodes keep their facts).
    pub fn described(&self, seq: u32) -> Option<NodeView> {
        self.index_of(seq).map(|i| self.view(&self.facts[i]))
    }

    /// The surface position of `seq`, if it is on the surface.
    #[inline]
    pub fn position(&self, seq: u32) -> Option<usize> {
        self.index_of(seq)
            .map(|i| self.facts[i].pos)
            .filter(|p| *p != NONE)
            .map(|p| p as usize)
    }

    /// The surface position of the assistant node that opened the call of the result at `pos`,
    /// when that node is on the surface.
    pub fn opener_position(&self, pos: usize) -> Option<usize> {
        let f = &self.facts[self.order[pos] as usize];
        if f.kind != Kind::ToolResult || f.opener == NONE {
            return None;
        }
        let p = self.facts[f.opener as usize].pos;
        (p != NONE).then_some(p as usize)
    }

    /// The pairing of the surface's positions `from..`: for each node of that window, its
    /// opener's position in the window, and each assistant's results in it.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when the mirror is broken.
    pub fn pairing(&self, from: usize) -> Result<Pairing> {
        self.check()?;
        self.window_pairing(from).map_err(out_of_step)
    }

    /// [`Mirror::pairing`] by the mirror's own links (each result's opener is a fact index), as
    /// [`Pairing::of`] derives it from seqs: a result's opener must stand in the window, be an
    /// assistant, and have a call left for it.
    #[allow(
        clippy::needless_range_loop,
        reason = "each step writes the entries of another position (the opener's)"
    )]
    fn window_pairing(&self, from: usize) -> std::result::Result<Pairing, String> {
        let n = self.len() - from;
        let mut opener_pos = vec![None; n];
        let mut answered = vec![0u32; n];
        let mut last_answer = vec![None; n];
        for i in 0..n {
            let Some(p) = self.opener_position(from + i).and_then(|p| p.checked_sub(from)) else {
                continue;
            };
            let calls = &self.facts[self.order[from + p] as usize];
            if calls.kind != Kind::Assistant {
                return Err(format!(
                    "result {} is linked to {} which is not an assistant node",
                    self.node(from + i).seq,
                    calls.seq
                ));
            }
            answered[p] += 1;
            if answered[p] > calls.link {
                return Err(format!(
                    "assistant {} has more results than its {} call(s)",
                    calls.seq, calls.link
                ));
            }
            opener_pos[i] = Some(p);
            last_answer[p] = Some(last_answer[p].map_or(i, |l: usize| l.max(i)));
        }
        Ok(Pairing {
            opener_pos,
            answered,
            last_answer,
        })
    }

    /// The id table's id `i`, as UTF-16 code units.
    pub fn id(&self, i: u32) -> &[u16] {
        &self.ids.units[self.ids.ranges[i as usize].clone()]
    }

    /// Id set `k`'s members (indexes into the id table), in the order they were listed.
    pub fn set(&self, k: u32) -> &[u32] {
        self.ids.members(k)
    }

    /// Interns an id list as a set: the word a record carries for it (0 for an empty list).
    pub fn intern(&mut self, ids: &[BlockId]) -> u32 {
        let members = ids.iter().map(|id| self.ids.id(id.units())).collect();
        self.ids.set(members)
    }

    /// The rewind report at `seq`, if `seq` is one.
    pub fn report(&self, seq: u32) -> Option<ReportFacts> {
        let f = &self.facts[self.index_of(seq)?];
        f.report.checked_sub(1).map(|r| self.reports[r as usize])
    }

    /// The session's replacements in log order (recall's region listing): `None` while the log
    /// index is unknown.
    pub fn replacements(&self) -> Option<&[Replacement]> {
        self.log_known.then_some(&self.history)
    }

    /// The message events a replacement cites, in its order.
    pub fn cited(&self, r: &Replacement) -> &[u32] {
        &self.history_sources[r.sources.clone()]
    }

    /// The original messages a replacement stands for, in model order: what it cites, with each
    /// cited replacement for which `open` is true opened up into its own originals, recursively.
    /// `None` when `seq` is no replacement of the known history.
    pub fn originals(&self, seq: u32, open: impl Fn(&Replacement) -> bool) -> Option<Vec<u32>> {
        let history = self.replacements()?;
        let find = |s: u32| history.binary_search_by_key(&s, |r| r.seq).ok().map(|i| &history[i]);
        let root = find(seq)?;
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut stack: Vec<std::slice::Iter<'_, u32>> = vec![self.cited(root).iter()];
        while let Some(top) = stack.last_mut() {
            let Some(&s) = top.next() else {
                stack.pop();
                continue;
            };
            if !seen.insert(s) {
                continue;
            }
            match find(s).filter(|r| open(r)) {
                Some(nested) => stack.push(self.cited(nested).iter()),
                None => out.push(s),
            }
        }
        Some(out)
    }

    /// Approximate heap bytes the mirror holds (for the benchmark's memory figure).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.facts.capacity() * size_of::<Fact>()
            + self.fact_at.heap_bytes()
            + self.order.capacity() * 4
            + self.reports.capacity() * size_of::<ReportFacts>()
            + self.report_facts.capacity() * 4
            + self.history.capacity() * size_of::<Replacement>()
            + self.history_sources.capacity() * 4
            + self.ids.units.capacity() * 2
            + self.ids.members.capacity() * 4
            + (self.ids.ranges.capacity() + self.ids.sets.capacity()) * size_of::<Range<usize>>()
    }

    /// The canonical description of what every planner reads (tests compare mirrors by it): per
    /// surface node in model order its facts, with the opener only when it stands on the surface
    /// (an orphan's unknown opener and a shadowed one are the same to every rule), block ids
    /// spelled out, and a rewind report's account; then the log index when known, with the
    /// account of every rewind report in it (on the surface or not: what a fold's repair reads).
    pub fn canonical(&self) -> Result<Canonical> {
        self.check()?;
        let spell = |k: Option<u32>| k.map(|k| self.set(k).iter().map(|&m| BlockId(self.id(m).to_vec())).collect());
        let nodes = (0..self.len())
            .map(|p| {
                let v = self.node(p);
                CanonicalNode {
                    seq: v.seq,
                    kind: v.kind,
                    origin: v.origin,
                    chars: v.chars,
                    tokens: v.tokens,
                    opens: v.opens,
                    opener: self.opener_position(p).map(|q| self.node(q).seq),
                    source: v.source,
                    protected: v.protected,
                    ids: spell(v.ids),
                    report: self.report(v.seq),
                }
            })
            .collect();
        let log = self.replacements().map(|history| {
            let replacements = history
                .iter()
                .map(|r| {
                    (
                        r.seq,
                        r.source,
                        spell(r.closed),
                        spell(r.carried),
                        self.cited(r).to_vec(),
                        self.report(r.seq),
                    )
                })
                .collect();
            (self.open_compaction, replacements)
        });
        Ok(Canonical {
            event_count: self.event_count,
            generation: self.generation,
            nodes,
            log,
        })
    }
}

/// A mirror's canonical description ([`Mirror::canonical`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Canonical {
    pub event_count: u32,
    pub generation: u32,
    pub nodes: Vec<CanonicalNode>,
    /// The open compaction and the replacements (seq, source, closed, carried, cited, and a
    /// rewind report's account wherever it stands), if known.
    #[allow(clippy::type_complexity, reason = "a flat description compared whole")]
    pub log: Option<(
        Option<u32>,
        Vec<(
            u32,
            Source,
            Option<Vec<BlockId>>,
            Option<Vec<BlockId>>,
            Vec<u32>,
            Option<ReportFacts>,
        )>,
    )>,
}

impl Canonical {
    /// As JSON (what the binding hands tests): field names as here, block ids as their UTF-16
    /// code units, kinds and sources by name.
    pub fn to_json(&self) -> String {
        // Cannot fail: plain structs and enums, no maps, no fallible `Serialize`.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// One node of a [`Canonical`] description.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CanonicalNode {
    pub seq: u32,
    pub kind: Kind,
    pub origin: u32,
    pub chars: u32,
    pub tokens: Option<u32>,
    pub opens: u32,
    /// The opener's seq when it stands on the surface.
    pub opener: Option<u32>,
    pub source: Source,
    pub protected: bool,
    pub ids: Option<Vec<BlockId>>,
    pub report: Option<ReportFacts>,
}

impl NodeView {
    /// The node as rewind's [`Surface`] holds it.
    pub fn node(&self) -> Node {
        Node {
            seq: self.seq,
            origin: self.origin,
            kind: self.kind,
            chars: self.chars,
            opens: self.opens,
            opener: self.opener,
        }
    }
}

/// Builds records (tests, benches and non-JS hosts: what the plugin writes from a DSH event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordBuilder {
    pub seq: u32,
    pub kind: Kind,
    /// `None` for a log-only event; `Some(None)` for an append; `Some(Some((start, end)))` for
    /// a replace.
    pub op: Option<Option<(u32, u32)>>,
    pub protected: bool,
    pub source: Source,
    /// 1 compaction/start, 2 compaction/end, 3 session/end-seed, 0 other.
    pub log_class: u32,
    pub link: u32,
    pub chars: u32,
    pub tokens: Option<u32>,
    /// Set words (1 + set), 0 for none.
    pub ids: u32,
    pub closed: u32,
    pub lowest_source: Option<u32>,
    pub origin: Option<u32>,
}

impl RecordBuilder {
    /// A log-only event.
    pub fn log(seq: u32, log_class: u32) -> Self {
        Self {
            seq,
            kind: Kind::Other,
            op: None,
            protected: false,
            source: Source::Appended,
            log_class,
            link: 0,
            chars: 0,
            tokens: None,
            ids: 0,
            closed: 0,
            lowest_source: None,
            origin: None,
        }
    }

    /// An appended node.
    pub fn append(seq: u32, kind: Kind) -> Self {
        Self {
            kind,
            op: Some(None),
            ..Self::log(seq, 0)
        }
    }

    /// Appends the record's words to `out`, with `sources` (a replacement's cited message events).
    pub fn write(&self, sources: &[u32], out: &mut Vec<u32>) {
        let kind = self.kind.code();
        let op = match self.op {
            None => 0,
            Some(None) => OP_APPEND,
            Some(Some(_)) => OP_REPLACE,
        };
        let mut meta = kind | op << OP_SHIFT | self.source.code() << SOURCE_SHIFT | self.log_class << LOG_SHIFT;
        if self.protected {
            meta |= PROTECTED;
        }
        if op == 0 {
            out.extend([self.seq, self.log_class << LOG_SHIFT]);
            return;
        }
        let mark = match self.source {
            Source::RewindReport { mark_id } => mark_id,
            _ => 0,
        };
        let (start, end) = self.op.flatten().unwrap_or((0, 0));
        #[allow(
            clippy::cast_possible_truncation,
            reason = "the id is split into its two 32-bit halves"
        )]
        out.extend([
            self.seq,
            meta,
            self.link,
            self.chars,
            self.tokens.unwrap_or(NONE),
            self.ids,
            self.closed,
            mark as u32,
            (mark >> 32) as u32,
            start,
            end,
            self.lowest_source.unwrap_or(NONE),
            self.origin.unwrap_or(NONE),
            sources.len() as u32,
        ]);
        out.extend_from_slice(sources);
    }
}

/// The load format's header (tests, benches and non-JS hosts).
pub fn load_header(event_count: u32, generation: u32, nodes: u32, others: u32) -> [u32; LOAD_HEADER_WORDS] {
    [LOAD_FORMAT, event_count, generation, nodes, others]
}

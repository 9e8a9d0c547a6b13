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

use std::collections::HashMap;
use std::ops::Range;

use crate::error::{FoldError, Result};
use crate::surface::{BlockId, BlockNode, BlockSurface, Kind, Node, Pairing, Provenance, Surface};

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

    // ---- feeding ------------------------------------------------------------------------------

    /// Describes the events in `words` (one record after another), each the next of the log.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when a record is malformed or does not follow from the mirror's state;
    /// the mirror is then broken until rebuilt (records before the bad one were applied).
    pub fn push(&mut self, words: &[u32]) -> Result<()> {
        self.check()?;
        let mut at = 0;
        while at < words.len() {
            let applied = Record::at(&words[at..]).and_then(|(record, len)| self.apply(&record).map(|()| len));
            match applied {
                Ok(len) => at += len,
                Err(why) => {
                    self.broken = Some(why.clone());
                    return Err(out_of_step(why));
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, r: &Record<'_>) -> std::result::Result<(), String> {
        let seq = r.seq();
        if seq != self.event_count {
            return Err(format!("event {seq} arrived when event {} was next", self.event_count));
        }
        if seq == NONE {
            return Err("the log is full (seqs are 32-bit)".into());
        }
        let op = r.op();
        if op != 0 {
            self.apply_node(r)?;
        }
        if op != 0 {
            self.fact_at.set(seq, self.facts.len() as u32 - 1);
        }
        if self.log_known {
            match r.log_class() {
                1 => self.open_compaction = Some(seq),
                2 | 3 => self.open_compaction = None,
                _ => {}
            }
        }
        self.event_count = seq + 1;
        Ok(())
    }

    /// A record's id set words name sets the mirror interned ([`Mirror::intern`]), or none.
    fn check_sets(&self, r: &Record<'_>) -> std::result::Result<(), String> {
        let interned = self.ids.sets.len() as u32;
        match [r.w[5], r.w[6]].into_iter().find(|&word| word > interned) {
            Some(word) => Err(format!(
                "event {} names id set {}, not one of the {interned} interned",
                r.seq(),
                word - 1
            )),
            None => Ok(()),
        }
    }

    fn apply_node(&mut self, r: &Record<'_>) -> std::result::Result<(), String> {
        let seq = r.seq();
        let w = r.w;
        let replace = match r.op() {
            OP_APPEND => None,
            OP_REPLACE => {
                let (start, end) = (w[9], w[10]);
                let at = |s: u32| self.position(s);
                let (Some(s), Some(e)) = (at(start), at(end)) else {
                    return Err(format!("replace {seq} names {start}..{end}, not both on the surface"));
                };
                if s > e {
                    return Err(format!("replace {seq}: start {start} stands after end {end}"));
                }
                Some((s, e))
            }
            other => return Err(format!("event {seq}: unknown surface op {other}")),
        };
        if let Some(s) = r.sources().iter().find(|s| **s >= seq) {
            return Err(format!("event {seq} cites {s}, not an earlier event"));
        }
        // Origin: its own seq, or for a replacement the first replaced node's origin or any
        // lower seq it cites.
        let mut origin = seq;
        if let Some((s, _)) = replace {
            origin = origin.min(self.facts[self.order[s] as usize].origin).min(w[11]);
        }
        self.check_sets(r)?;
        let mut fact = r.fact(origin)?;
        // A tool result rewritten in place answers the call the result it replaces answered (the
        // host need not remember answered calls).
        if let (Kind::ToolResult, 0, Some((s, _))) = (fact.kind, fact.link, replace) {
            let replaced = &self.facts[self.order[s] as usize];
            if replaced.kind == Kind::ToolResult {
                fact.link = replaced.link;
            }
        }
        self.resolve(&mut fact, r.sources(), replace.map_or(0..0, |(s, e)| s..e + 1));
        let index = self.facts.len() as u32;
        if fact.report != 0 {
            self.report_facts.push(index);
        }
        self.facts.push(fact);
        match replace {
            None => self.place(index, self.order.len(), 0),
            Some((s, e)) => {
                self.generation += 1;
                self.place(index, s, e - s + 1);
            }
        }
        if self.log_known && fact.source.is_replacement() {
            self.remember(&fact, w[6], r.sources());
        }
        Ok(())
    }

    /// Links a fact to what it cites: its call's opener, a report's account, covered block ids.
    /// `shadowed`: the surface positions the event replaces (a push's replace): what it cites is
    /// looked up there first (a report cites exactly those), then among every described event.
    fn resolve(&mut self, fact: &mut Fact, sources: &[u32], shadowed: Range<usize>) {
        if fact.kind == Kind::ToolResult && fact.link > 0 {
            fact.opener = self.index_of(fact.link - 1).map_or(NONE, |i| i as u32);
        }
        let report = matches!(fact.source, Source::RewindReport { .. });
        let covers = fact.source.is_replacement()
            && fact.source != Source::BlockSummary
            && matches!(fact.kind, Kind::User | Kind::ToolResult);
        if !report && !covers {
            return;
        }
        let (mut chars, mut tokens) = (0u64, Some(0u64));
        let mut covered = Vec::new();
        let mut cursor = shadowed.start;
        for &s in sources {
            // In the replaced run, in order (one step each), else anywhere.
            let at = if cursor < shadowed.end && self.facts[self.order[cursor] as usize].seq == s {
                cursor += 1;
                Some(self.order[cursor - 1] as usize)
            } else {
                self.index_of(s)
            };
            let Some(i) = at else {
                tokens = None;
                continue;
            };
            let f = &self.facts[i];
            chars += u64::from(f.chars);
            tokens = tokens.and_then(|t| (f.tokens != NONE).then(|| t + u64::from(f.tokens)));
            if covers {
                if let Some(k) = f.ids.checked_sub(1) {
                    for &m in self.ids.members(k) {
                        if !covered.contains(&m) {
                            covered.push(m);
                        }
                    }
                }
            }
        }
        if let Source::RewindReport { mark_id } = fact.source {
            if let (Some(&start), Some(&end)) = (sources.first(), sources.last()) {
                self.reports.push(ReportFacts {
                    mark_id,
                    folded_nodes: sources.len() as u32,
                    start,
                    end,
                    folded_chars: chars,
                    folded_tokens: tokens,
                });
                fact.report = self.reports.len() as u32;
            }
        }
        // Another producer's replacement covers the ids of what it cites; a block summary
        // carries its own (the record's), as does an assistant.
        if covers {
            fact.ids = self.ids.set(covered);
        }
    }

    /// Puts fact `index` at surface position `at`, in place of the `removed` nodes from there.
    fn place(&mut self, index: u32, at: usize, removed: usize) {
        let origin_at = |m: &Self, p: usize| m.facts[m.order[p] as usize].origin;
        // Descents touching the changed run, before and after.
        let descents_around = |m: &Self, from: usize, to: usize| -> u32 {
            let lo = from.max(1);
            let hi = (to + 1).min(m.order.len());
            (lo..hi).filter(|&p| origin_at(m, p) < origin_at(m, p - 1)).count() as u32
        };
        self.descents -= descents_around(self, at, at + removed);
        for p in at..at + removed {
            let f = &mut self.facts[self.order[p] as usize];
            f.pos = NONE;
            self.surface_chars -= u64::from(f.chars);
            if f.tokens == NONE {
                self.unpriced -= 1;
            } else {
                self.surface_tokens -= u64::from(f.tokens);
            }
        }
        self.order.splice(at..at + removed, [index]);
        for p in at..self.order.len() {
            self.facts[self.order[p] as usize].pos = p as u32;
        }
        let f = self.facts[index as usize];
        self.surface_chars += u64::from(f.chars);
        if f.tokens == NONE {
            self.unpriced += 1;
        } else {
            self.surface_tokens += u64::from(f.tokens);
        }
        self.descents += descents_around(self, at, at + 1);
    }

    fn remember(&mut self, fact: &Fact, closed: u32, sources: &[u32]) {
        let start = self.history_sources.len();
        self.history_sources.extend_from_slice(sources);
        self.history.push(Replacement {
            seq: fact.seq,
            kind: fact.kind,
            source: fact.source,
            closed: closed.checked_sub(1),
            carried: if fact.source == Source::BlockSummary {
                fact.ids.checked_sub(1)
            } else {
                None
            },
            sources: start..self.history_sources.len(),
        });
    }

    // ---- rebuilding ---------------------------------------------------------------------------

    /// Rebuilds the surface index from a description of the surface as it is now (the load
    /// format). The log index becomes unknown ([`Mirror::load_log`]) — but for an empty log, whose
    /// index is known to be empty (a session described at its creation, then fed event by event,
    /// knows its whole log); the id table is kept.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when the words are malformed (the mirror is then broken).
    pub fn load(&mut self, words: &[u32]) -> Result<()> {
        let ids = std::mem::take(&mut self.ids);
        *self = Self { ids, ..Self::default() };
        if let Err(why) = self.try_load(words) {
            self.broken = Some(why.clone());
            return Err(out_of_step(why));
        }
        Ok(())
    }

    fn try_load(&mut self, words: &[u32]) -> std::result::Result<(), String> {
        if words.len() < LOAD_HEADER_WORDS || words[0] != LOAD_FORMAT {
            return Err(format!("a load of {} words, not in format {LOAD_FORMAT}", words.len()));
        }
        let (event_count, generation) = (words[1], words[2]);
        let (n, m) = (words[3] as usize, words[4] as usize);
        let mut records = Vec::with_capacity(n.saturating_add(m).min(words.len()));
        let mut at = LOAD_HEADER_WORDS;
        while at < words.len() {
            let (record, len) = Record::at(&words[at..])?;
            if record.op() == 0 {
                return Err(format!("event {} in a load is log-only", record.seq()));
            }
            if record.seq() >= event_count {
                return Err(format!(
                    "event {} is not below the event count {event_count}",
                    record.seq()
                ));
            }
            records.push(record);
            at += len;
        }
        if records.len() != n + m {
            return Err(format!("{} records for {n} nodes and {m} other events", records.len()));
        }
        self.fact_at = FactIndex::for_load(event_count, records.len());
        // Facts in seq order (reports and covered ids resolve against lower seqs), then the order.
        let mut by_seq: Vec<usize> = (0..records.len()).collect();
        by_seq.sort_unstable_by_key(|&i| records[i].seq());
        if let Some(w) = by_seq.windows(2).find(|w| records[w[0]].seq() == records[w[1]].seq()) {
            return Err(format!("event {} is described twice", records[w[0]].seq()));
        }
        let mut index_of_record = vec![0u32; records.len()];
        for &i in &by_seq {
            let r = &records[i];
            self.check_sets(r)?;
            let mut fact = r.fact(r.w[12])?;
            self.resolve(&mut fact, r.sources(), 0..0);
            index_of_record[i] = self.facts.len() as u32;
            self.fact_at.set(r.seq(), index_of_record[i]);
            if fact.report != 0 {
                self.report_facts.push(index_of_record[i]);
            }
            self.facts.push(fact);
        }
        self.order.reserve(n);
        for (p, i) in (m..m + n).enumerate() {
            let f = &mut self.facts[index_of_record[i] as usize];
            f.pos = p as u32;
            self.surface_chars += u64::from(f.chars);
            if f.tokens == NONE {
                self.unpriced += 1;
            } else {
                self.surface_tokens += u64::from(f.tokens);
            }
            self.order.push(index_of_record[i]);
        }
        self.descents = (1..n)
            .filter(|&p| self.facts[self.order[p] as usize].origin < self.facts[self.order[p - 1] as usize].origin)
            .count() as u32;
        self.event_count = event_count;
        self.generation = generation;
        // Nothing happened yet: no compaction is open and nothing was replaced.
        self.log_known = event_count == 0;
        Ok(())
    }

    /// Learns the log index of a loaded mirror: the open compaction bracket's start (or NONE)
    /// and, in seq order, the records of every replacement in the log, with the records of the
    /// message events the rewind reports off the surface cite (the log up to
    /// [`Mirror::event_count`]). Every event the surface load did not describe is described
    /// now (off the surface), so a fold's report is found, with its account, wherever it stands
    /// ([`Mirror::mark_report`]), as it is in a mirror fed from the first event.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when the words are malformed, out of seq order, or name events past
    /// the described log (the mirror is then unchanged).
    pub fn load_log(&mut self, open_compaction: u32, words: &[u32]) -> Result<()> {
        self.check()?;
        if open_compaction != NONE && open_compaction >= self.event_count {
            return Err(out_of_step(format!(
                "open compaction {open_compaction} is past the log"
            )));
        }
        let mut records = Vec::new();
        let mut at = 0;
        let mut last = None;
        while at < words.len() {
            let (record, len) = Record::at(&words[at..]).map_err(out_of_step)?;
            if record.op() == 0 || record.seq() >= self.event_count || last >= Some(record.seq()) {
                return Err(out_of_step(format!(
                    "event {} is no message event of the log in order",
                    record.seq()
                )));
            }
            // Checked before anything is kept, so a bad record changes nothing.
            record.fact(record.seq()).map_err(out_of_step)?;
            self.check_sets(&record).map_err(out_of_step)?;
            last = Some(record.seq());
            records.push(record);
            at += len;
        }
        let mut history = Vec::new();
        let mut sources = Vec::new();
        for record in &records {
            let seq = record.seq();
            let mut fact = record.fact(seq).map_err(out_of_step)?;
            // What it cites has a lower seq: described by now.
            match self.index_of(seq) {
                None => {
                    // Off the surface: described so what it is (a report of a mark) and what it
                    // accounts for are known.
                    self.resolve(&mut fact, record.sources(), 0..0);
                    let index = self.facts.len() as u32;
                    if fact.report != 0 {
                        self.report_facts.push(index);
                    }
                    self.fact_at.set(seq, index);
                    self.facts.push(fact);
                }
                Some(i) if self.facts[i].report != 0 => {
                    // A report the surface load described only as what another report cites,
                    // before what it cites itself was described: its account again, now whole.
                    self.resolve(&mut fact, record.sources(), 0..0);
                    // (`resolve` numbers the fresh fact only when it pushed an account.)
                    if let Some(whole) = (fact.report != 0).then(|| self.reports.pop()).flatten() {
                        self.reports[self.facts[i].report as usize - 1] = whole;
                    }
                }
                Some(_) => {}
            }
            if !fact.source.is_replacement() {
                continue;
            }
            let start = sources.len();
            sources.extend_from_slice(record.sources());
            history.push(Replacement {
                seq,
                kind: fact.kind,
                source: fact.source,
                closed: record.w[6].checked_sub(1),
                carried: if fact.source == Source::BlockSummary {
                    fact.ids.checked_sub(1)
                } else {
                    None
                },
                sources: start..sources.len(),
            });
        }
        self.open_compaction = (open_compaction != NONE).then_some(open_compaction);
        self.history = history;
        self.history_sources = sources;
        self.log_known = true;
        Ok(())
    }

    /// Whether the log index is known: fed from the log's first event, or learnt
    /// ([`Mirror::load_log`]).
    pub fn log_known(&self) -> bool {
        self.log_known
    }

    /// The rewind report of mark `mark_id` appended at or after `anchor` (the mark's log
    /// length: ids restart at 1 when a store is deleted, so an older report may name a new
    /// mark's id), wherever it stands now: on the surface, or replaced since (by a compaction,
    /// another fold) — the session log's record that the mark's fold happened. The earliest, if
    /// a mark was ever folded twice. Complete once the log index is known
    /// ([`Mirror::log_known`]); before that, only reports on the surface are seen.
    pub fn mark_report(&self, mark_id: u64, anchor: u64) -> Option<MarkReport> {
        self.report_facts
            .iter()
            .map(|&i| &self.facts[i as usize])
            .filter(|f| u64::from(f.seq) >= anchor)
            .map(|f| (f, self.reports[f.report as usize - 1]))
            .filter(|(_, r)| r.mark_id == mark_id)
            .min_by_key(|(f, _)| f.seq)
            .map(|(f, facts)| MarkReport {
                seq: f.seq,
                facts,
                chars: f.chars,
                tokens: (f.tokens != NONE).then_some(f.tokens),
                pos: (f.pos != NONE).then_some(f.pos as usize),
            })
    }

    // ---- the planners' inputs -----------------------------------------------------------------

    /// The first surface position whose origin is at or after `anchor` (the surface's length
    /// when none is).
    pub fn first_at_or_after(&self, anchor: u64) -> usize {
        let at = |p: usize| u64::from(self.facts[self.order[p] as usize].origin) >= anchor;
        if self.descents == 0 {
            self.order
                .partition_point(|&i| u64::from(self.facts[i as usize].origin) < anchor)
        } else {
            (0..self.order.len()).find(|&p| at(p)).unwrap_or(self.order.len())
        }
    }

    /// Rewind's input for a fold from `anchor`: the surface's suffix a fold from that anchor can
    /// reach — from the first node standing for an event at or after the anchor, back to the
    /// call of any result after it — plus the current step's node (`current`: the assistant
    /// carrying the rewind call; `None`: inferred, [`Surface::inferred_current`]). No region from
    /// `anchor` differs from the whole surface's. (A report of the fold's own mark is found
    /// wherever the log holds it: [`Mirror::mark_report`].)
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when the mirror is broken or `current` is not an assistant on it.
    pub fn rewind_surface(&self, anchor: u64, current: Option<u32>) -> Result<Surface> {
        self.check()?;
        let n = self.order.len();
        let first = self.first_at_or_after(anchor);
        let mut from = first;
        let mut i = n;
        while i > from {
            i -= 1;
            if let Some(p) = self.opener_position(i) {
                if p < i && p < from {
                    from = p;
                }
            }
        }
        match current {
            Some(seq) => {
                if let Some(p) = self.position(seq) {
                    from = from.min(p);
                }
            }
            None => {
                if let Some(p) = (0..n).rev().find(|&p| self.node(p).kind == Kind::Assistant) {
                    from = from.min(p);
                }
            }
        }
        // The current node: named (it must be an assistant on the surface), or inferred.
        let current = match current {
            None => None,
            Some(seq) => match self.position(seq) {
                Some(p) if self.node(p).kind == Kind::Assistant => Some(p - from),
                Some(_) => {
                    return Err(FoldError::invalid(format!(
                        "the rewind call's message: current seq {seq} is not an assistant node"
                    )))
                }
                None => {
                    return Err(FoldError::invalid(format!(
                        "the rewind call's message: current seq {seq} is not on the surface"
                    )))
                }
            },
        };
        let pairing = self.window_pairing(from).map_err(out_of_step)?;
        let nodes: Vec<Node> = self.nodes(from..n).map(|v| v.node()).collect();
        Ok(Surface::from_window(self.event_count, nodes, current, pairing))
    }

    /// The token price of the surface nodes `seqs`, when each is described and priced.
    pub fn tokens_of(&self, seqs: &[u32]) -> Option<u64> {
        seqs.iter().try_fold(0u64, |sum, &s| {
            let t = self.facts[self.index_of(s)?].tokens;
            (t != NONE).then(|| sum + u64::from(t))
        })
    }

    /// The model-visible chars of the described events `seqs` (0 for any not described).
    pub fn chars_of(&self, seqs: &[u32]) -> u64 {
        seqs.iter()
            .filter_map(|&s| self.index_of(s))
            .map(|i| u64::from(self.facts[i].chars))
            .sum()
    }

    /// Block mode's input: the whole surface with its block facts and the id table.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when the mirror is broken or its log index is unknown.
    pub fn block_surface(&self) -> Result<BlockSurface> {
        self.check()?;
        let Some(open) = self.open_compaction() else {
            return Err(out_of_step("its log index is not known (load it first)"));
        };
        let nodes: Vec<BlockNode> = self
            .nodes(0..self.len())
            .map(|v| BlockNode {
                seq: v.seq,
                kind: v.kind,
                opens: v.opens,
                opener: v.opener,
                protected: v.protected,
                user_authored: v.kind == Kind::User && v.source.is_user_authored(),
                provenance: match (v.kind, v.source) {
                    (Kind::User, Source::BlockSummary) => Provenance::BlockSummary,
                    (Kind::User | Kind::ToolResult, s) if s.is_replacement() => Provenance::Replacement,
                    _ => Provenance::Appended,
                },
                set: match (v.kind, v.source) {
                    (Kind::Assistant, _) => v.ids,
                    (Kind::User | Kind::ToolResult, s) if s.is_replacement() => v.ids,
                    _ => None,
                },
            })
            .collect();
        BlockSurface::from_parts(
            self.event_count,
            open.is_some(),
            self.ids.units.clone(),
            self.ids.ranges.clone(),
            nodes,
            self.ids.sets.clone(),
            self.ids.members.clone(),
            |seq| self.position(seq),
        )
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

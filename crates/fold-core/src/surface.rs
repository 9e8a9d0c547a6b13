//! The surfaces the planners read, in memory: the facts of each model-visible node in model
//! order and the pairing of calls with their results, as the session mirror ([`crate::mirror`])
//! builds them for a fold's anchor ([`Surface`], rewind's region: [`crate::region`]) and for
//! block mode ([`BlockSurface`]: [`crate::blocks`]). The mirror is the only producer; the
//! snapshot wire formats that once carried these from JS, and their decoders, are the tests'
//! oracles now ([`crate::wire`], behind the `oracles` feature).
//!
//! Kinds are the node's message type; an assistant node *opens* calls, a tool result names its
//! *opener* (the assistant event whose call it answers, by seq: the mirror resolves call ids once
//! per immutable event). Block ids travel as the UTF-16 code units JS holds ([`BlockId`]): a JS
//! string may hold lone surrogates that UTF-8 cannot, and two distinct ids must never become one.

use std::collections::HashMap;

use crate::error::{FoldError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
/// What a node is: its message type.
pub enum Kind {
    Other,
    User,
    Assistant,
    ToolResult,
}

impl Kind {
    /// The node's kind in a record's kind bits (the mirror's records, the snapshot formats).
    pub fn code(self) -> u32 {
        match self {
            Self::Other => 0,
            Self::User => 1,
            Self::Assistant => 2,
            Self::ToolResult => 3,
        }
    }

    /// The kind `code` names, if any.
    pub fn of(code: u32) -> Option<Self> {
        Some(match code {
            0 => Self::Other,
            1 => Self::User,
            2 => Self::Assistant,
            3 => Self::ToolResult,
            _ => return None,
        })
    }
}

/// One surface node as rewind reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    pub seq: u32,
    pub origin: u32,
    pub kind: Kind,
    pub chars: u32,
    /// Assistant nodes: number of tool calls opened. Others: 0.
    pub opens: u32,
    /// Tool results: the seq of the assistant event that opened the call, when known.
    pub opener: Option<u32>,
}

impl Node {
    /// A node standing for its own event only, linked to no call.
    pub fn new(seq: u32, kind: Kind, chars: u32) -> Self {
        Self {
            seq,
            origin: seq,
            kind,
            chars,
            opens: 0,
            opener: None,
        }
    }
}

/// Rewind's input: a window of the surface (what a fold from one anchor can reach) with the
/// derived indexes region selection needs.
#[derive(Debug, Clone)]
pub struct Surface {
    pub event_count: u32,
    pub nodes: Vec<Node>,
    /// Position of the current step's assistant node, if any.
    pub current: Option<usize>,
    /// For each node: the position of the node that opened its call (tool results).
    pub(crate) opener_pos: Vec<Option<usize>>,
    /// For each node: how many of its calls are answered on the surface (assistant nodes).
    pub(crate) answered: Vec<u32>,
    /// For each node: the last position answering one of its calls (assistant nodes).
    pub(crate) last_answer: Vec<Option<usize>>,
}

impl Surface {
    /// A surface from a window of the session mirror's surface, whose nodes were checked when they
    /// were described and whose pairing the mirror derived from its own links: nothing is
    /// validated again. `current` is the current node's position in the window (`None`: the
    /// current step is inferred, [`Surface::inferred_current`]).
    pub fn from_window(event_count: u32, nodes: Vec<Node>, current: Option<usize>, pairing: Pairing) -> Self {
        let Pairing {
            opener_pos,
            answered,
            last_answer,
        } = pairing;
        let current = current.or_else(|| Self::inferred_current(&nodes, &answered));
        Self {
            event_count,
            nodes,
            current,
            opener_pos,
            answered,
            last_answer,
        }
    }

    /// The current step when the host names none: the last assistant node, if it has no call (a
    /// final answer, which stays) or an unanswered one (the rewind's own).
    pub(crate) fn inferred_current(nodes: &[Node], answered: &[u32]) -> Option<usize> {
        (0..nodes.len())
            .rev()
            .find(|&i| nodes[i].kind == Kind::Assistant)
            .filter(|&i| nodes[i].opens == 0 || answered[i] < nodes[i].opens)
    }
}

/// What pairing reads of a node: the seq, the kind, the calls it opens, the call it answers.
pub(crate) struct Link {
    pub(crate) seq: u32,
    pub(crate) kind: Kind,
    pub(crate) opens: u32,
    pub(crate) opener: Option<u32>,
}

impl Link {
    pub(crate) fn new(seq: u32, kind: Kind, opens: u32, opener: Option<u32>) -> Self {
        Self {
            seq,
            kind,
            opens,
            opener,
        }
    }
}

pub(crate) trait Linked {
    fn link(&self) -> Link;
}

impl Linked for Node {
    fn link(&self) -> Link {
        Link {
            seq: self.seq,
            kind: self.kind,
            opens: self.opens,
            opener: self.opener,
        }
    }
}

/// The pairing indexes of a list of surface nodes (the session mirror's, for any window of its
/// surface): which surface node opened each result's call, and how each assistant node's calls
/// are answered on the surface. Positions are indexes into the node list they were built over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    /// For each node: the position of the node that opened its call (tool results).
    pub opener_pos: Vec<Option<usize>>,
    /// For each node: how many of its calls are answered on the surface (assistant nodes).
    pub answered: Vec<u32>,
    /// For each node: the last position answering one of its calls (assistant nodes).
    pub last_answer: Vec<Option<usize>>,
}

impl Pairing {
    /// Links every result to its opener on the surface (a result whose opener is off the surface
    /// stays unlinked: an orphan); an opener that is not an assistant node, or an assistant
    /// answered more often than it has calls, is a host bug. `pos_of` is the position of a seq
    /// among `nodes`, if it is one of them.
    pub(crate) fn of<T: Linked>(
        nodes: &[T],
        pos_of: impl Fn(u32) -> Option<usize>,
    ) -> std::result::Result<Self, String> {
        let n = nodes.len();
        let mut opener_pos = vec![None; n];
        let mut answered = vec![0u32; n];
        let mut last_answer = vec![None; n];
        for (i, node) in nodes.iter().enumerate() {
            let Some(opener) = node.link().opener else { continue };
            let Some(p) = pos_of(opener) else {
                continue;
            };
            let calls = nodes[p].link();
            if calls.kind != Kind::Assistant {
                return Err(format!(
                    "result {} is linked to {} which is not an assistant node",
                    node.link().seq,
                    opener
                ));
            }
            answered[p] += 1;
            if answered[p] > calls.opens {
                return Err(format!(
                    "assistant {} has more results than its {} call(s)",
                    opener, calls.opens
                ));
            }
            opener_pos[i] = Some(p);
            last_answer[p] = Some(last_answer[p].map_or(i, |l: usize| l.max(i)));
        }
        Ok(Self {
            opener_pos,
            answered,
            last_answer,
        })
    }

    /// How many calls of the assistant at `pos` have no result among the nodes (0 for others).
    pub fn open_calls(&self, pos: usize, opens: u32) -> u32 {
        opens.saturating_sub(self.answered[pos])
    }
}

/// How a block node came to be on the surface, which says what its id set means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// The event itself, appended (an assistant node's set: the ids of its block calls).
    Appended,
    /// A block summary (its set: the ids it carries).
    BlockSummary,
    /// Another producer's replacement: a compaction, a rewind report (its set: the ids of the
    /// events it covered, attributed no more).
    Replacement,
}

/// One surface node as block mode reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockNode {
    pub seq: u32,
    pub kind: Kind,
    /// Assistant nodes: number of tool calls opened. Others: 0.
    pub opens: u32,
    /// Tool results: the seq of the assistant event that opened the call, when known.
    pub opener: Option<u32>,
    pub protected: bool,
    pub user_authored: bool,
    pub provenance: Provenance,
    /// The node's id set (an index into the surface's sets), if it has one.
    pub set: Option<u32>,
}

impl BlockNode {
    /// An appended node without flags, links or ids.
    pub fn new(seq: u32, kind: Kind) -> Self {
        Self {
            seq,
            kind,
            opens: 0,
            opener: None,
            protected: false,
            user_authored: false,
            provenance: Provenance::Appended,
            set: None,
        }
    }
}

impl Linked for BlockNode {
    fn link(&self) -> Link {
        Link {
            seq: self.seq,
            kind: self.kind,
            opens: self.opens,
            opener: self.opener,
        }
    }
}

/// A block id exactly as JS holds it: UTF-16 code units (lone surrogates included). Shown lossily
/// (U+FFFD for a lone surrogate) in messages only.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct BlockId(pub Vec<u16>);

impl BlockId {
    pub fn units(&self) -> &[u16] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&str> for BlockId {
    fn from(s: &str) -> Self {
        Self(s.encode_utf16().collect())
    }
}

impl std::fmt::Display for BlockId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf16_lossy(&self.0))
    }
}

/// As its UTF-16 code units (exact: a lone surrogate has no UTF-8 spelling).
impl serde::Serialize for BlockId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl std::fmt::Debug for BlockId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf16_lossy(&self.0))
    }
}

/// Block mode's input: the whole surface with its id table, id sets and pairing indexes.
#[derive(Debug, Clone)]
pub struct BlockSurface {
    pub event_count: u32,
    /// A compaction (of any producer) holds the session's compaction lock.
    pub open_compaction: bool,
    /// The id table: every id's UTF-16 code units, one after the other, and where each is.
    pub(crate) id_units: Vec<u16>,
    pub(crate) id_ranges: Vec<std::ops::Range<usize>>,
    pub nodes: Vec<BlockNode>,
    /// Each set as a range of `members`.
    pub(crate) sets: Vec<std::ops::Range<usize>>,
    /// The sets' members: indexes into `ids`.
    pub(crate) members: Vec<u32>,
    pub pairing: Pairing,
}

impl BlockSurface {
    /// A block surface from the session mirror's parts: the id table as one buffer of UTF-16
    /// units with each id's range, the sets as ranges of `members`, and the surface nodes in
    /// model order, whose pairing `pos_of` resolves (the position of a seq among `nodes`).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a pairing no session has (a result linked to a node that is not an
    /// assistant, more results than calls): the mirror was fed out of step.
    #[allow(clippy::too_many_arguments, reason = "the parts of the surface, each its own table")]
    pub fn from_parts(
        event_count: u32,
        open_compaction: bool,
        id_units: Vec<u16>,
        id_ranges: Vec<std::ops::Range<usize>>,
        nodes: Vec<BlockNode>,
        sets: Vec<std::ops::Range<usize>>,
        members: Vec<u32>,
        pos_of: impl Fn(u32) -> Option<usize>,
    ) -> Result<Self> {
        let pairing = Pairing::of(&nodes, pos_of)
            .map_err(|why| FoldError::invalid(format!("the session mirror is out of step with its session: {why}")))?;
        Ok(Self {
            event_count,
            open_compaction,
            id_units,
            id_ranges,
            nodes,
            sets,
            members,
            pairing,
        })
    }

    /// The id indexes of set `k` (as the host listed them; repeats allowed).
    pub fn set(&self, k: u32) -> &[u32] {
        &self.members[self.sets[k as usize].clone()]
    }

    /// Number of ids in the id table.
    pub fn id_count(&self) -> usize {
        self.id_ranges.len()
    }

    /// Id `i` of the id table, as UTF-16 code units.
    pub fn id(&self, i: u32) -> &[u16] {
        &self.id_units[self.id_ranges[i as usize].clone()]
    }

    /// Id `i` of the id table, owned.
    pub fn block_id(&self, i: u32) -> BlockId {
        BlockId(self.id(i).to_vec())
    }

    /// The id table, owned (tests and diagnostics).
    pub fn ids(&self) -> Vec<BlockId> {
        (0..self.id_count() as u32).map(|i| self.block_id(i)).collect()
    }

    /// Number of id sets.
    pub fn set_count(&self) -> usize {
        self.sets.len()
    }
}

/// "No seq" in a word.
const NO_SLOT: u32 = u32::MAX;

/// The surface position of each seq. One slot per event while that costs at most a few dozen
/// words per node; a map otherwise, so a snapshot that claims billions of events (a host bug, or
/// hostile input) cannot make decoding allocate gigabytes, and a short snapshot of a long log (the
/// reachable tail of a surface) does not pay for a slot per event.
pub(crate) enum SeqIndex {
    Dense(Vec<u32>),
    Sparse(HashMap<u32, usize>),
}

/// Slots per node the dense index may spend.
const DENSE_SLOTS_PER_NODE: usize = 64;

impl SeqIndex {
    pub(crate) fn new(event_count: u32, nodes: usize) -> Self {
        let events = event_count as usize;
        if events <= nodes.saturating_mul(DENSE_SLOTS_PER_NODE).max(1024) {
            Self::Dense(vec![NO_SLOT; events])
        } else {
            Self::Sparse(HashMap::with_capacity(nodes))
        }
    }

    /// Records `seq` at `pos` (`seq` is below the event count); false when it was already there.
    pub(crate) fn insert(&mut self, seq: u32, pos: usize) -> bool {
        match self {
            Self::Dense(slots) => {
                let slot = &mut slots[seq as usize];
                let fresh = *slot == NO_SLOT;
                if fresh {
                    *slot = pos as u32;
                }
                fresh
            }
            Self::Sparse(map) => map.insert(seq, pos).is_none(),
        }
    }

    pub(crate) fn get(&self, seq: u32) -> Option<usize> {
        match self {
            Self::Dense(slots) => slots.get(seq as usize).filter(|p| **p != NO_SLOT).map(|p| *p as usize),
            Self::Sparse(map) => map.get(&seq).copied(),
        }
    }
}

impl Pairing {
    /// The pairing indexes of nodes in surface order (any snapshot format's): every seq below
    /// `event_count` and on the surface once, then linked as [`Pairing::of`] links them.
    pub(crate) fn build<T: Linked>(event_count: u32, nodes: &[T]) -> std::result::Result<Self, String> {
        let mut pos_of_seq = SeqIndex::new(event_count, nodes.len());
        for (i, node) in nodes.iter().enumerate() {
            let seq = node.link().seq;
            if seq >= event_count {
                return Err(format!(
                    "node {i}: seq {seq} is not below the event count {event_count}"
                ));
            }
            if !pos_of_seq.insert(seq, i) {
                return Err(format!("seq {seq} appears twice on the surface"));
            }
        }
        Self::of(nodes, |seq| pos_of_seq.get(seq))
    }
}

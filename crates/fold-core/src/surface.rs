//! The surface snapshots: what the host tells the core about its model-visible surface.
//!
//! Two formats, both flat `u32` arrays (a JS `Uint32Array`, passed without copying): version 1
//! for rewind ([`Surface`]) and version 2 for block mode ([`BlockSurface`]).
//!
//! Version 1:
//!
//! ```text
//! [0] FORMAT (= 1)
//! [1] eventCount      the session log's length now; every seq is below it
//! [2] current         seq of the assistant node carrying the rewind call, or NONE (0xFFFF_FFFF):
//!                     then the last assistant node on the surface is current if it has no tool
//!                     call (a final answer, which stays) or an unanswered one (the rewind's)
//! [3] N               surface nodes, in model order, 5 words each:
//!     seq             the event's seq
//!     origin          smallest event seq the node stands for (a replacement: its sources' origins)
//!     kind            0 other, 1 user, 2 assistant, 3 tool result
//!     chars           model-visible text size (UTF-16 units: text, reasoning, call arguments, outputs)
//!     link            assistant: how many tool calls it opens;
//!                     tool result: 1 + seq of the assistant event that opened its call (0: unknown)
//! [..] R              rewind reports on the surface, 7 words each:
//!     seq, markIdLow, markIdHigh, foldedNodes, startSeq, endSeq, foldedChars
//!                     (the mark id is carried whole: low and high 32 bits; ids reach 2^53 - 1)
//! ```
//!
//! Version 2 (block mode) carries its own id table (each block id once) after the id sets; the
//! sets name ids by their index in it:
//!
//! ```text
//! [0] FORMAT (= 2)
//! [1] eventCount      the session log's length now; every seq is below it
//! [2] flags           bit 0: OPEN_COMPACTION, a `compaction/start` has no `compaction/end` yet
//! [3] I               ids in the id table
//! [4] N               surface nodes, in model order, 4 words each:
//!     seq             the event's seq
//!     meta            bits 0-1: kind (0 other, 1 user, 2 assistant, 3 tool result)
//!                     bit 2 PROTECTED: no summary may replace it (a system/developer message)
//!                     bit 3 USER_AUTHORED: a `user/message` appended to the conversation (not a
//!                           replacement): the user's prompt, or context injected on the user's side
//!                     bit 4 BLOCK_SUMMARY: a block summary (a replacement `user/message`)
//!                     bit 5 REPLACEMENT: another producer's replacement (a compaction, a rewind report)
//!     link            as in version 1
//!     set             0: no ids; k >= 1: id set k-1, whose meaning the node's kind says:
//!                     assistant: the ids of its block calls, call after call (repeats allowed);
//!                     BLOCK_SUMMARY: the ids it carries; REPLACEMENT: the ids of what it covered
//! [..] S              id sets, each: its length L >= 1, then L indexes into the id table
//! [..]                the id table, I ids, each: its length U >= 1 in UTF-16 code units, then
//!                     ceil(U / 2) words, two code units each (the first in the low half; an odd
//!                     length leaves the last high half 0)
//! ```
//!
//! Ids travel as the UTF-16 code units JS holds, and stay so ([`BlockId`]): a JS string may hold
//! lone surrogates that UTF-8 cannot, and two distinct ids must never become one. Packing them
//! into the words keeps the whole snapshot one array, read without converting a string.
//!
//! The v2 words are facts read off the log (a call's arguments, a summary's metadata, a result's
//! call); every rule that turns them into a block's messages lives in [`crate::blocks`].
//!
//! Linking a result to its opener by seq (not by call id) lets the host resolve call ids once per
//! immutable event and keeps every record fixed-size; interning id sets keeps the v2 node record
//! fixed-size too. Decoding validates everything: a host bug must never become a wrong fold or a
//! wrong commit.
//!
//! A host that snapshots for one anchor (a fold's) may send only the surface's suffix a fold from
//! that anchor can reach — from the first node standing for an event at or after the anchor, back
//! to the call of any result after it, and including the current step's node and any report
//! appended after the anchor — and may leave `chars` 0 outside it: no region from that anchor
//! reads them (`plugin/shared/surface.js` does both; a test compares every anchor against the whole
//! surface).

use std::collections::HashMap;

use crate::error::{FoldError, Result};

pub const FORMAT: u32 = 1;
pub const NONE: u32 = u32::MAX;
const HEADER_WORDS: usize = 4;
const NODE_WORDS: usize = 5;
const REPORT_WORDS: usize = 7;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Kind {
    Other,
    User,
    Assistant,
    ToolResult,
}

/// One surface node, decoded.
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

/// A rewind report already on the surface (its source names the mark it folded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub seq: u32,
    pub mark_id: u64,
    pub folded_nodes: u32,
    pub start: u32,
    pub end: u32,
    pub folded_chars: u32,
}

/// A validated snapshot, with the derived indexes region selection needs.
#[derive(Debug, Clone)]
pub struct Surface {
    pub event_count: u32,
    pub nodes: Vec<Node>,
    pub reports: Vec<Report>,
    /// Position of the current step's assistant node, if any.
    pub current: Option<usize>,
    /// For each node: the position of the node that opened its call (tool results).
    pub(crate) opener_pos: Vec<Option<usize>>,
    /// For each node: how many of its calls are answered on the surface (assistant nodes).
    pub(crate) answered: Vec<u32>,
    /// For each node: the last position answering one of its calls (assistant nodes).
    pub(crate) last_answer: Vec<Option<usize>>,
}

/// The surface position of each seq. One slot per event while that costs at most a few dozen
/// words per node; a map otherwise, so a snapshot that claims billions of events (a host bug, or
/// hostile input) cannot make decoding allocate gigabytes, and a short snapshot of a long log (the
/// reachable tail of a surface) does not pay for a slot per event.
enum SeqIndex {
    Dense(Vec<u32>),
    Sparse(HashMap<u32, usize>),
}

/// Slots per node the dense index may spend.
const DENSE_SLOTS_PER_NODE: usize = 64;

impl SeqIndex {
    fn new(event_count: u32, nodes: usize) -> Self {
        let events = event_count as usize;
        if events <= nodes.saturating_mul(DENSE_SLOTS_PER_NODE).max(1024) {
            Self::Dense(vec![NONE; events])
        } else {
            Self::Sparse(HashMap::with_capacity(nodes))
        }
    }

    /// Records `seq` at `pos` (`seq` is below the event count); false when it was already there.
    fn insert(&mut self, seq: u32, pos: usize) -> bool {
        match self {
            Self::Dense(slots) => {
                let slot = &mut slots[seq as usize];
                let fresh = *slot == NONE;
                if fresh {
                    *slot = pos as u32;
                }
                fresh
            }
            Self::Sparse(map) => map.insert(seq, pos).is_none(),
        }
    }

    fn get(&self, seq: u32) -> Option<usize> {
        match self {
            Self::Dense(slots) => slots.get(seq as usize).filter(|p| **p != NONE).map(|p| *p as usize),
            Self::Sparse(map) => map.get(&seq).copied(),
        }
    }
}

fn bad(what: impl std::fmt::Display) -> FoldError {
    FoldError::invalid(format!("invalid surface snapshot: {what}"))
}

/// A node's kind word and link word, checked: the kind is known, only assistant nodes open
/// calls, only results link to an opener, and an opener is never a later event.
pub(crate) fn kind_and_link(
    i: usize,
    seq: u32,
    kind: u32,
    link: u32,
) -> std::result::Result<(Kind, u32, Option<u32>), String> {
    let kind = match kind {
        0 => Kind::Other,
        1 => Kind::User,
        2 => Kind::Assistant,
        3 => Kind::ToolResult,
        k => return Err(format!("node {i}: unknown kind {k}")),
    };
    let (opens, opener) = match kind {
        Kind::Assistant => (link, None),
        Kind::ToolResult if link == 0 => (0, None),
        // `link >= 1` here, so this is `link - 1 >= seq`: the opener is not before the result.
        Kind::ToolResult if link > seq => {
            return Err(format!(
                "node {i}: result {seq} answers a call of later event {}",
                link - 1
            ));
        }
        Kind::ToolResult => (0, Some(link - 1)),
        _ if link != 0 => return Err(format!("node {i}: a {kind:?} node cannot link to calls")),
        _ => (0, None),
    };
    Ok((kind, opens, opener))
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

/// The pairing indexes both formats derive (and the session mirror, for any window of its
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

impl Surface {
    /// Decodes and validates a snapshot.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the first problem: wrong format or length, a seq out of range or
    /// repeated, an origin after its seq, an unknown kind, a link on the wrong kind, a result
    /// linked to a later event or to a node that is not an assistant, more results than calls.
    pub fn decode(words: &[u32]) -> Result<Self> {
        if words.len() < HEADER_WORDS {
            return Err(bad(format!("{} words, shorter than the header", words.len())));
        }
        if words[0] != FORMAT {
            return Err(bad(format!("format {} (this build reads {FORMAT})", words[0])));
        }
        let event_count = words[1];
        let current_seq = words[2];
        let n = words[3] as usize;
        let nodes_end = n
            .checked_mul(NODE_WORDS)
            .and_then(|w| w.checked_add(HEADER_WORDS))
            .filter(|end| *end < words.len())
            .ok_or_else(|| bad(format!("{n} nodes do not fit in {} words", words.len())))?;
        let r = words[nodes_end] as usize;
        if r.checked_mul(REPORT_WORDS).and_then(|w| w.checked_add(nodes_end + 1)) != Some(words.len()) {
            return Err(bad(format!(
                "{r} reports do not match the {} words left",
                words.len() - nodes_end - 1
            )));
        }

        let mut pos_of_seq = SeqIndex::new(event_count, n);
        let mut nodes = Vec::with_capacity(n);
        for (i, w) in words[HEADER_WORDS..nodes_end].chunks_exact(NODE_WORDS).enumerate() {
            let [seq, origin, kind, chars, link] = [w[0], w[1], w[2], w[3], w[4]];
            if seq >= event_count {
                return Err(bad(format!(
                    "node {i}: seq {seq} is not below the event count {event_count}"
                )));
            }
            if !pos_of_seq.insert(seq, i) {
                return Err(bad(format!("seq {seq} appears twice on the surface")));
            }
            if origin > seq {
                return Err(bad(format!("node {i}: origin {origin} is after its seq {seq}")));
            }
            let (kind, opens, opener) = kind_and_link(i, seq, kind, link).map_err(bad)?;
            nodes.push(Node {
                seq,
                origin,
                kind,
                chars,
                opens,
                opener,
            });
        }

        let reports = words[nodes_end + 1..]
            .chunks_exact(REPORT_WORDS)
            .map(|w| Report {
                seq: w[0],
                mark_id: u64::from(w[1]) | u64::from(w[2]) << 32,
                folded_nodes: w[3],
                start: w[4],
                end: w[5],
                folded_chars: w[6],
            })
            .collect::<Vec<_>>();
        Self::assemble(event_count, nodes, &pos_of_seq, current_seq, reports)
    }

    /// A surface from nodes already in hand (the session mirror's window of its surface), checked
    /// as [`Surface::decode`] checks a snapshot: the same rules, the same errors.
    ///
    /// `current` is the seq of the current step's assistant node, or `None` to let the surface
    /// infer it (as a snapshot's `NONE`).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` as [`Surface::decode`].
    pub fn from_parts(event_count: u32, nodes: Vec<Node>, reports: Vec<Report>, current: Option<u32>) -> Result<Self> {
        let mut pos_of_seq = SeqIndex::new(event_count, nodes.len());
        for (i, node) in nodes.iter().enumerate() {
            let seq = node.seq;
            if seq >= event_count {
                return Err(bad(format!(
                    "node {i}: seq {seq} is not below the event count {event_count}"
                )));
            }
            if !pos_of_seq.insert(seq, i) {
                return Err(bad(format!("seq {seq} appears twice on the surface")));
            }
            if node.origin > seq {
                return Err(bad(format!("node {i}: origin {} is after its seq {seq}", node.origin)));
            }
            let link = match node.kind {
                Kind::Assistant => node.opens,
                Kind::ToolResult => node.opener.map_or(0, |s| s.saturating_add(1)),
                _ if node.opens != 0 || node.opener.is_some() => {
                    return Err(bad(format!("node {i}: a {:?} node cannot link to calls", node.kind)))
                }
                _ => 0,
            };
            let kind = match node.kind {
                Kind::Other => 0,
                Kind::User => 1,
                Kind::Assistant => 2,
                Kind::ToolResult => 3,
            };
            kind_and_link(i, seq, kind, link).map_err(bad)?;
        }
        Self::assemble(event_count, nodes, &pos_of_seq, current.unwrap_or(NONE), reports)
    }

    /// A surface from a window of the session mirror's surface, whose nodes were checked when they
    /// were described and whose pairing the mirror derived from its own links: nothing is
    /// validated again. `current` is the current node's position in the window (`None`: inferred
    /// as a snapshot's `NONE`).
    pub fn from_window(
        event_count: u32,
        nodes: Vec<Node>,
        reports: Vec<Report>,
        current: Option<usize>,
        pairing: Pairing,
    ) -> Self {
        let Pairing {
            opener_pos,
            answered,
            last_answer,
        } = pairing;
        let current = current.or_else(|| {
            (0..nodes.len())
                .rev()
                .find(|&i| nodes[i].kind == Kind::Assistant)
                .filter(|&i| nodes[i].opens == 0 || answered[i] < nodes[i].opens)
        });
        Self {
            event_count,
            nodes,
            reports,
            current,
            opener_pos,
            answered,
            last_answer,
        }
    }

    /// The derived indexes, the current node and the reports' check, shared by both constructors.
    fn assemble(
        event_count: u32,
        nodes: Vec<Node>,
        pos_of_seq: &SeqIndex,
        current_seq: u32,
        reports: Vec<Report>,
    ) -> Result<Self> {
        let n = nodes.len();
        let Pairing {
            opener_pos,
            answered,
            last_answer,
        } = Pairing::of(&nodes, |seq| pos_of_seq.get(seq)).map_err(bad)?;

        let current = if current_seq == NONE {
            (0..n)
                .rev()
                .find(|&i| nodes[i].kind == Kind::Assistant)
                .filter(|&i| nodes[i].opens == 0 || answered[i] < nodes[i].opens)
        } else {
            let p = pos_of_seq
                .get(current_seq)
                .ok_or_else(|| bad(format!("current seq {current_seq} is not on the surface")))?;
            if nodes[p].kind != Kind::Assistant {
                return Err(bad(format!("current seq {current_seq} is not an assistant node")));
            }
            Some(p)
        };
        for report in &reports {
            if pos_of_seq.get(report.seq).is_none() {
                return Err(bad(format!("report {} is not on the surface", report.seq)));
            }
        }

        Ok(Self {
            event_count,
            nodes,
            reports,
            current,
            opener_pos,
            answered,
            last_answer,
        })
    }

    /// Encodes nodes back into the wire format (tests, benches and non-JS hosts).
    pub fn encode(event_count: u32, current: Option<u32>, nodes: &[Node], reports: &[Report]) -> Vec<u32> {
        let mut words = Vec::with_capacity(HEADER_WORDS + nodes.len() * NODE_WORDS + 1 + reports.len() * REPORT_WORDS);
        words.extend([FORMAT, event_count, current.unwrap_or(NONE), nodes.len() as u32]);
        for node in nodes {
            let kind = match node.kind {
                Kind::Other => 0,
                Kind::User => 1,
                Kind::Assistant => 2,
                Kind::ToolResult => 3,
            };
            let link = match node.kind {
                Kind::Assistant => node.opens,
                Kind::ToolResult => node.opener.map_or(0, |s| s + 1),
                _ => 0,
            };
            words.extend([node.seq, node.origin, kind, node.chars, link]);
        }
        words.push(reports.len() as u32);
        for r in reports {
            #[allow(
                clippy::cast_possible_truncation,
                reason = "the id is split into its two 32-bit halves"
            )]
            let (low, high) = (r.mark_id as u32, (r.mark_id >> 32) as u32);
            words.extend([r.seq, low, high, r.folded_nodes, r.start, r.end, r.folded_chars]);
        }
        words
    }
}

// ---- Version 2: the block-mode snapshot ---------------------------------------------------------

pub const BLOCK_FORMAT: u32 = 2;
const BLOCK_HEADER_WORDS: usize = 5;
const BLOCK_NODE_WORDS: usize = 4;

/// Header flag (v2): a `compaction/start` on the log has no `compaction/end` yet.
pub const OPEN_COMPACTION: u32 = 1;
const HEADER_FLAGS: u32 = OPEN_COMPACTION;

const KIND_BITS: u32 = 0b11;
/// Node flag (v2): a message no summary may replace (a system or developer message).
pub const PROTECTED: u32 = 1 << 2;
/// Node flag (v2): a `user/message` appended to the conversation from outside the model's work.
pub const USER_AUTHORED: u32 = 1 << 3;
/// Node flag (v2): a block summary; its id set is the ids it carries.
pub const BLOCK_SUMMARY: u32 = 1 << 4;
/// Node flag (v2): another producer's replacement; its id set is the ids of what it covered.
pub const REPLACEMENT: u32 = 1 << 5;
const NODE_FLAGS: u32 = PROTECTED | USER_AUTHORED | BLOCK_SUMMARY | REPLACEMENT;

/// How a v2 node came to be on the surface, which says what its id set means.
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

/// One v2 surface node, decoded.
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
    /// The node's id set (an index into the snapshot's sets), if it has one.
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

/// A validated v2 snapshot with its id table and pairing indexes.
#[derive(Debug, Clone)]
pub struct BlockSurface {
    pub event_count: u32,
    /// A compaction (of any producer) holds the session's compaction lock.
    pub open_compaction: bool,
    /// The id table: every id's UTF-16 code units, one after the other, and where each is.
    id_units: Vec<u16>,
    id_ranges: Vec<std::ops::Range<usize>>,
    pub nodes: Vec<BlockNode>,
    /// Each set as a range of `members`.
    sets: Vec<std::ops::Range<usize>>,
    /// The sets' members: indexes into `ids`.
    members: Vec<u32>,
    pub pairing: Pairing,
}

fn bad_block(what: impl std::fmt::Display) -> FoldError {
    FoldError::invalid(format!("invalid block snapshot: {what}"))
}

impl BlockSurface {
    /// Decodes and validates a v2 snapshot.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the first problem: the v1 checks (format, lengths, seqs, kinds,
    /// links, pairing) plus unknown header or node flags, flags on the wrong kind (only a user
    /// node is user-authored or a block summary; an assistant node is never another producer's
    /// replacement), more than one provenance flag, an id set on a node whose kind carries none,
    /// a set index or id index out of range, an empty set, an empty, repeated or badly packed id.
    pub fn decode(words: &[u32]) -> Result<Self> {
        if words.len() < BLOCK_HEADER_WORDS {
            return Err(bad_block(format!("{} words, shorter than the header", words.len())));
        }
        if words[0] != BLOCK_FORMAT {
            return Err(bad_block(format!(
                "format {} (block mode reads {BLOCK_FORMAT})",
                words[0]
            )));
        }
        let event_count = words[1];
        let flags = words[2];
        if flags & !HEADER_FLAGS != 0 {
            return Err(bad_block(format!("unknown header flags {:#x}", flags & !HEADER_FLAGS)));
        }
        let id_count = words[3] as usize;
        let n = words[4] as usize;
        let nodes_end = n
            .checked_mul(BLOCK_NODE_WORDS)
            .and_then(|w| w.checked_add(BLOCK_HEADER_WORDS))
            .filter(|end| *end < words.len())
            .ok_or_else(|| bad_block(format!("{n} nodes do not fit in {} words", words.len())))?;

        // The sets, after the nodes: S, then each set as its length and its id indexes.
        let set_count = words[nodes_end] as usize;
        let mut sets = Vec::with_capacity(set_count.min(words.len()));
        let mut at = nodes_end + 1;
        for k in 0..set_count {
            let len = *words
                .get(at)
                .ok_or_else(|| bad_block(format!("set {k} of {set_count} is past the end of the words")))?
                as usize;
            if len == 0 {
                return Err(bad_block(format!("set {k} is empty (a node without ids names no set)")));
            }
            let range = at + 1..at + 1 + len;
            if range.end > words.len() {
                return Err(bad_block(format!("set {k} ({len} ids) runs past the end of the words")));
            }
            if let Some(m) = words[range.clone()].iter().find(|m| **m as usize >= id_count) {
                return Err(bad_block(format!("set {k} names id {m}, not below the {id_count} ids")));
            }
            sets.push(range.start - nodes_end - 1..range.end - nodes_end - 1);
            at = range.end;
        }
        let members = words[nodes_end + 1..at].to_vec();

        // The id table, after the sets: unpacked into one buffer, checked for repeats by sorting.
        let mut id_units = Vec::new();
        let mut id_ranges = Vec::with_capacity(id_count.min(words.len()));
        for i in 0..id_count {
            let units = *words
                .get(at)
                .ok_or_else(|| bad_block(format!("id {i} of {id_count} is past the end of the words")))?
                as usize;
            if units == 0 {
                return Err(bad_block(format!("id {i} is empty")));
            }
            let packed = at + 1..at + 1 + units.div_ceil(2);
            if packed.end > words.len() {
                return Err(bad_block(format!(
                    "id {i} ({units} UTF-16 units) runs past the end of the words"
                )));
            }
            let start = id_units.len();
            for w in &words[packed.clone()] {
                id_units.extend([*w as u16, (*w >> 16) as u16]);
            }
            if id_units.len() - start > units && id_units.pop() != Some(0) {
                return Err(bad_block(format!("id {i}: the unused half of its last word is not 0")));
            }
            id_ranges.push(start..id_units.len());
            at = packed.end;
        }
        let mut order: Vec<usize> = (0..id_ranges.len()).collect();
        order.sort_unstable_by(|a, b| {
            id_units[id_ranges[*a].clone()]
                .cmp(&id_units[id_ranges[*b].clone()])
                .then(a.cmp(b))
        });
        if let Some(w) = order
            .windows(2)
            .find(|w| id_units[id_ranges[w[0]].clone()] == id_units[id_ranges[w[1]].clone()])
        {
            return Err(bad_block(format!(
                "ids {} and {} are both {:?}",
                w[0],
                w[1],
                BlockId(id_units[id_ranges[w[0]].clone()].to_vec())
            )));
        }
        if at != words.len() {
            return Err(bad_block(format!("{} words left after the id table", words.len() - at)));
        }

        let mut pos_of_seq = SeqIndex::new(event_count, n);
        let mut nodes = Vec::with_capacity(n);
        for (i, w) in words[BLOCK_HEADER_WORDS..nodes_end]
            .chunks_exact(BLOCK_NODE_WORDS)
            .enumerate()
        {
            let [seq, meta, link, set] = [w[0], w[1], w[2], w[3]];
            if seq >= event_count {
                return Err(bad_block(format!(
                    "node {i}: seq {seq} is not below the event count {event_count}"
                )));
            }
            if !pos_of_seq.insert(seq, i) {
                return Err(bad_block(format!("seq {seq} appears twice on the surface")));
            }
            if meta & !(KIND_BITS | NODE_FLAGS) != 0 {
                return Err(bad_block(format!(
                    "node {i}: unknown flags {:#x}",
                    meta & !(KIND_BITS | NODE_FLAGS)
                )));
            }
            let (kind, opens, opener) = kind_and_link(i, seq, meta & KIND_BITS, link).map_err(bad_block)?;
            let provenance = match (meta & BLOCK_SUMMARY != 0, meta & REPLACEMENT != 0) {
                (false, false) => Provenance::Appended,
                (true, false) => Provenance::BlockSummary,
                (false, true) => Provenance::Replacement,
                (true, true) => {
                    return Err(bad_block(format!(
                        "node {i}: both a block summary and another producer's replacement"
                    )))
                }
            };
            let user_authored = meta & USER_AUTHORED != 0;
            if user_authored && (kind != Kind::User || provenance != Provenance::Appended) {
                return Err(bad_block(format!(
                    "node {i}: only an appended user node is user-authored"
                )));
            }
            if provenance == Provenance::BlockSummary && kind != Kind::User {
                return Err(bad_block(format!(
                    "node {i}: a block summary is a user node, not {kind:?}"
                )));
            }
            if provenance == Provenance::Replacement && kind == Kind::Assistant {
                return Err(bad_block(format!(
                    "node {i}: an assistant node cannot be marked as another producer's replacement"
                )));
            }
            let set = match set {
                0 => None,
                k if k as usize > sets.len() => {
                    return Err(bad_block(format!("node {i}: set {} of {} sets", k - 1, sets.len())))
                }
                k => Some(k - 1),
            };
            if set.is_some() && kind != Kind::Assistant && provenance == Provenance::Appended {
                return Err(bad_block(format!(
                    "node {i}: a {kind:?} node carries no ids (only assistant nodes, block summaries and replacements do)"
                )));
            }
            nodes.push(BlockNode {
                seq,
                kind,
                opens,
                opener,
                protected: meta & PROTECTED != 0,
                user_authored,
                provenance,
                set,
            });
        }
        let pairing = Pairing::of(&nodes, |seq| pos_of_seq.get(seq)).map_err(bad_block)?;

        Ok(Self {
            event_count,
            open_compaction: flags & OPEN_COMPACTION != 0,
            id_units,
            id_ranges,
            nodes,
            sets,
            members,
            pairing,
        })
    }

    /// A block surface from parts already in hand (the session mirror's): the id table as one
    /// buffer of UTF-16 units with each id's range, the sets as ranges of `members`, and the
    /// surface nodes in model order, whose pairing `pos_of` resolves (the position of a seq among
    /// `nodes`). The parts come from a source that keeps them consistent; the pairing is checked
    /// as [`BlockSurface::decode`] checks it.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a pairing a snapshot could not have (a result linked to a node that
    /// is not an assistant, more results than calls).
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
        let pairing = Pairing::of(&nodes, pos_of).map_err(bad_block)?;
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

    /// Number of id sets in the snapshot.
    pub fn set_count(&self) -> usize {
        self.sets.len()
    }

    /// Encodes nodes, sets (id indexes), the id table and flags into the v2 words (tests, benches
    /// and non-JS hosts).
    pub fn encode(
        event_count: u32,
        open_compaction: bool,
        ids: &[BlockId],
        nodes: &[BlockNode],
        sets: &[Vec<u32>],
    ) -> Vec<u32> {
        let set_words: usize = sets.iter().map(|s| 1 + s.len()).sum();
        let id_words: usize = ids.iter().map(|id| 1 + id.0.len().div_ceil(2)).sum();
        let mut words =
            Vec::with_capacity(BLOCK_HEADER_WORDS + nodes.len() * BLOCK_NODE_WORDS + 1 + set_words + id_words);
        words.extend([
            BLOCK_FORMAT,
            event_count,
            if open_compaction { OPEN_COMPACTION } else { 0 },
            ids.len() as u32,
            nodes.len() as u32,
        ]);
        for node in nodes {
            let mut meta = match node.kind {
                Kind::Other => 0,
                Kind::User => 1,
                Kind::Assistant => 2,
                Kind::ToolResult => 3,
            };
            if node.protected {
                meta |= PROTECTED;
            }
            if node.user_authored {
                meta |= USER_AUTHORED;
            }
            meta |= match node.provenance {
                Provenance::Appended => 0,
                Provenance::BlockSummary => BLOCK_SUMMARY,
                Provenance::Replacement => REPLACEMENT,
            };
            let link = match node.kind {
                Kind::Assistant => node.opens,
                Kind::ToolResult => node.opener.map_or(0, |s| s + 1),
                _ => 0,
            };
            words.extend([node.seq, meta, link, node.set.map_or(0, |k| k + 1)]);
        }
        words.push(sets.len() as u32);
        for set in sets {
            words.push(set.len() as u32);
            words.extend(set);
        }
        for id in ids {
            words.push(id.0.len() as u32);
            words.extend(
                id.0.chunks(2)
                    .map(|pair| u32::from(pair[0]) | u32::from(pair.get(1).copied().unwrap_or(0)) << 16),
            );
        }
        words
    }
}

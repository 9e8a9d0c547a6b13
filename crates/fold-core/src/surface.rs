//! The surface snapshot: what the host tells the core about its model-visible surface.
//!
//! A snapshot is a flat `u32` array (a JS `Uint32Array`, passed without copying), version 1:
//!
//! ```text
//! [0] FORMAT (= 1)
//! [1] eventCount      the session log's length now; every seq is below it
//! [2] current         seq of the assistant node carrying the rewind call, or NONE (0xFFFF_FFFF):
//!                     then the last assistant node with an unanswered call, if any, is current
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
//! Linking a result to its opener by seq (not by call id) lets the host resolve call ids once per
//! immutable event and keeps every record fixed-size. Decoding validates everything: a host bug
//! must never become a wrong fold.

use std::collections::HashMap;

use crate::error::{FoldError, Result};

pub const FORMAT: u32 = 1;
pub const NONE: u32 = u32::MAX;
const HEADER_WORDS: usize = 4;
const NODE_WORDS: usize = 5;
const REPORT_WORDS: usize = 7;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// The surface position of each seq. One slot per event while that costs at most a few words per
/// node; a map otherwise, so a snapshot that claims billions of events (a host bug, or hostile
/// input) cannot make decoding allocate gigabytes.
enum SeqIndex {
    Dense(Vec<u32>),
    Sparse(HashMap<u32, usize>),
}

/// Event counts up to this (or 8 per node) get the dense index: 4 MiB at most.
const DENSE_MAX_EVENTS: usize = 1 << 20;

impl SeqIndex {
    fn new(event_count: u32, nodes: usize) -> Self {
        let events = event_count as usize;
        if events <= DENSE_MAX_EVENTS.max(nodes.saturating_mul(8)) {
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
            let kind = match kind {
                0 => Kind::Other,
                1 => Kind::User,
                2 => Kind::Assistant,
                3 => Kind::ToolResult,
                k => return Err(bad(format!("node {i}: unknown kind {k}"))),
            };
            let (opens, opener) = match kind {
                Kind::Assistant => (link, None),
                Kind::ToolResult if link == 0 => (0, None),
                // `link >= 1` here, so this is `link - 1 >= seq`: the opener is not before the result.
                Kind::ToolResult if link > seq => {
                    return Err(bad(format!(
                        "node {i}: result {seq} answers a call of later event {}",
                        link - 1
                    )));
                }
                Kind::ToolResult => (0, Some(link - 1)),
                _ if link != 0 => return Err(bad(format!("node {i}: a {kind:?} node cannot link to calls"))),
                _ => (0, None),
            };
            nodes.push(Node {
                seq,
                origin,
                kind,
                chars,
                opens,
                opener,
            });
        }

        let mut opener_pos = vec![None; n];
        let mut answered = vec![0u32; n];
        let mut last_answer = vec![None; n];
        for (i, node) in nodes.iter().enumerate() {
            let Some(opener) = node.opener else { continue };
            let Some(p) = pos_of_seq.get(opener) else {
                continue;
            };
            if nodes[p].kind != Kind::Assistant {
                return Err(bad(format!(
                    "result {} is linked to {} which is not an assistant node",
                    node.seq, opener
                )));
            }
            answered[p] += 1;
            if answered[p] > nodes[p].opens {
                return Err(bad(format!(
                    "assistant {} has more results than its {} call(s)",
                    opener, nodes[p].opens
                )));
            }
            opener_pos[i] = Some(p);
            last_answer[p] = Some(last_answer[p].map_or(i, |l: usize| l.max(i)));
        }

        let current = if current_seq == NONE {
            (0..n)
                .rev()
                .find(|&i| nodes[i].kind == Kind::Assistant)
                .filter(|&i| answered[i] < nodes[i].opens)
        } else {
            let p = pos_of_seq
                .get(current_seq)
                .ok_or_else(|| bad(format!("current seq {current_seq} is not on the surface")))?;
            if nodes[p].kind != Kind::Assistant {
                return Err(bad(format!("current seq {current_seq} is not an assistant node")));
            }
            Some(p)
        };

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

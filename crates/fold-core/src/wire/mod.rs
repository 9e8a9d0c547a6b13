//! The surface snapshot wire formats: what a host once told the core about its model-visible
//! surface, before the session mirror ([`crate::mirror`]) became every planner's only input. They
//! stay as the tests' and the fuzz targets' oracles — a description of a surface written from the
//! formats' documentation, not from the mirror — behind the `oracles` feature (the shipped addon
//! does not compile them): the core's property tests hold the mirror's [`Surface`] and
//! [`BlockSurface`] to what these decode to for the same session.
//!
//! Two formats, both flat `u32` arrays: version 1 for rewind ([`Surface::decode`], `v1.rs`) and
//! version 2 for block mode ([`BlockSurface::decode`], `v2.rs`). This file keeps what both, and
//! compaction's own snapshot decoder, check with: the seq index and the kind and link rule
//! (compiled always, for that decoder, until it moves behind the feature: issue 31 part C).
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
//! [`Surface`]: crate::surface::Surface
//! [`BlockSurface`]: crate::surface::BlockSurface
//! [`Surface::decode`]: crate::surface::Surface::decode
//! [`BlockSurface::decode`]: crate::surface::BlockSurface::decode

use std::collections::HashMap;

use crate::surface::{Kind, Linked, Pairing};

#[cfg(any(test, feature = "oracles"))]
mod v1;
#[cfg(any(test, feature = "oracles"))]
mod v2;
#[cfg(any(test, feature = "oracles"))]
pub use v1::{Report, FORMAT, NONE};
#[cfg(any(test, feature = "oracles"))]
pub use v2::{BLOCK_FORMAT, BLOCK_SUMMARY, OPEN_COMPACTION, PROTECTED, REPLACEMENT, USER_AUTHORED};

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

/// A node's kind word and link word, checked: the kind is known, only assistant nodes open
/// calls, only results link to an opener, and an opener is never a later event.
pub(crate) fn kind_and_link(
    i: usize,
    seq: u32,
    kind: u32,
    link: u32,
) -> std::result::Result<(Kind, u32, Option<u32>), String> {
    let Some(kind) = Kind::of(kind) else {
        return Err(format!("node {i}: unknown kind {kind}"));
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

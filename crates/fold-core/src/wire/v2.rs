//! Version 2, block mode's snapshot (format: the module docs of [`crate::wire`]): decoded into
//! the [`BlockSurface`] block mode's rules read, and encoded from nodes, sets and an id table
//! (tests, benches, fuzz seeds).

use super::kind_and_link;
use crate::error::{FoldError, Result};
use crate::surface::SeqIndex;
use crate::surface::{BlockId, BlockNode, BlockSurface, Kind, Pairing, Provenance};

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
            let mut meta = node.kind.code();
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

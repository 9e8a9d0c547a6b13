//! Compaction's snapshot format (version 4): the policy's input ([`CompactionSurface`]) as one
//! flat `u32` array, as a host once described it from the session alone. Since the policy reads
//! the session mirror ([`CompactionSurface::from_mirror`]) it is the tests' oracle only, behind
//! the `oracles` feature: `__test__/oracles/compaction-snapshot.mjs` writes it, and the core's
//! property tests round-trip it.

use crate::compaction::{CompactionNode, CompactionSurface, Source};
use crate::error::{FoldError, Result};
use crate::surface::Kind;

/// The snapshot format's version word.
pub const FORMAT: u32 = 4;
const HEADER_WORDS: usize = 5;
const NODE_WORDS: usize = 9;
const KIND_BITS: u32 = 0b11;
const SOURCE_SHIFT: u32 = 2;
const SOURCE_BITS: u32 = 0b111 << SOURCE_SHIFT;

fn bad(what: impl std::fmt::Display) -> FoldError {
    FoldError::invalid(format!("invalid compaction snapshot: {what}"))
}

impl Source {
    pub(crate) fn from_word(w: u32) -> Option<Self> {
        Some(match w {
            0 => Self::Work,
            1 => Self::User,
            2 => Self::RewindReport,
            3 => Self::BlockSummary,
            4 => Self::CompactionSummary,
            5 => Self::ForeignSummary,
            _ => return None,
        })
    }

    pub(crate) fn word(self) -> u32 {
        match self {
            Self::Work => 0,
            Self::User => 1,
            Self::RewindReport => 2,
            Self::BlockSummary => 3,
            Self::CompactionSummary => 4,
            Self::ForeignSummary => 5,
        }
    }
}

impl CompactionSurface {
    /// Decodes a compaction snapshot:
    ///
    /// ```text
    /// [0] FORMAT (= 4)   [1] eventCount   [2] flags (0)   [3] N nodes   [4] A active mark anchors
    /// [..] A anchors (log lengths)
    /// [..] N nodes, 9 words each: seq, meta, link, origin, tokens, chars, set, facts, core
    ///      meta: bits 0-1 kind (0 other, 1 user, 2 assistant, 3 tool result);
    ///            bits 2-4 source (0 work, 1 user, 2 rewind report, 3 block summary,
    ///            4 compaction summary, 5 another backend's compaction summary)
    ///      link: as snapshot v1 (assistant: calls opened; result: 1 + opener seq, 0 unknown)
    ///      set:  0 none; k >= 1: block id set k-1
    ///      facts: 0 unknown; f >= 1: a work node's fact chars f-1
    ///      core: an earlier compaction summary of ours: its core chars (<= chars); else = chars
    /// [..] S sets, each: its length L >= 1, then L block numbers
    /// ```
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the first problem: format, lengths, flags, a seq out of range or
    /// repeated, an origin after its seq, an unknown kind or source, a link on the wrong kind, a
    /// result linked to a later event or to a node that is not an assistant, more results than
    /// calls, a set on a node that carries none, a set index out of range, an empty set, fact
    /// chars on a node that is not work, a core larger than the node or on another source.
    pub fn decode(words: &[u32]) -> Result<Self> {
        if words.len() < HEADER_WORDS {
            return Err(bad(format!("{} words, shorter than the header", words.len())));
        }
        if words[0] != FORMAT {
            return Err(bad(format!("format {} (compaction reads {FORMAT})", words[0])));
        }
        let event_count = words[1];
        if words[2] != 0 {
            return Err(bad(format!("unknown flags {:#x}", words[2])));
        }
        let n = words[3] as usize;
        let a = words[4] as usize;
        let nodes_start = HEADER_WORDS
            .checked_add(a)
            .filter(|s| *s <= words.len())
            .ok_or_else(|| bad(format!("{a} anchors do not fit in {} words", words.len())))?;
        let nodes_end = n
            .checked_mul(NODE_WORDS)
            .and_then(|w| w.checked_add(nodes_start))
            .filter(|end| *end < words.len())
            .ok_or_else(|| bad(format!("{n} nodes do not fit in {} words", words.len())))?;
        let anchors = words[HEADER_WORDS..nodes_start].to_vec();
        let mut nodes = Vec::with_capacity(n);
        for (i, w) in words[nodes_start..nodes_end].chunks_exact(NODE_WORDS).enumerate() {
            let [seq, meta, link, origin, tokens, chars, set, facts, core] =
                [w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]];
            if meta & !(KIND_BITS | SOURCE_BITS) != 0 {
                return Err(bad(format!(
                    "node {i}: unknown meta bits {:#x}",
                    meta & !(KIND_BITS | SOURCE_BITS)
                )));
            }
            let source = Source::from_word((meta & SOURCE_BITS) >> SOURCE_SHIFT).ok_or_else(|| {
                bad(format!(
                    "node {i}: unknown source {}",
                    (meta & SOURCE_BITS) >> SOURCE_SHIFT
                ))
            })?;
            let (kind, opens, opener) = super::kind_and_link(i, seq, meta & KIND_BITS, link).map_err(bad)?;
            nodes.push(CompactionNode {
                seq,
                kind,
                source,
                origin,
                tokens,
                chars,
                opens,
                opener,
                set: set.checked_sub(1),
                facts: facts.checked_sub(1),
                core,
            });
        }
        let set_count = words[nodes_end] as usize;
        let mut sets = Vec::with_capacity(set_count.min(words.len()));
        let mut at = nodes_end + 1;
        for k in 0..set_count {
            let len = *words
                .get(at)
                .ok_or_else(|| bad(format!("set {k} of {set_count} is past the end")))? as usize;
            let range = at + 1..at.saturating_add(1).saturating_add(len);
            if len == 0 || range.end > words.len() {
                return Err(bad(format!("set {k} ({len} ids) is empty or runs past the end")));
            }
            sets.push(words[range.clone()].to_vec());
            at = range.end;
        }
        if at != words.len() {
            return Err(bad(format!("{} words left after the sets", words.len() - at)));
        }
        Self::new(event_count, anchors, nodes, sets)
    }

    /// Encodes the surface into the snapshot words (the tests' round trip).
    pub fn encode(&self) -> Vec<u32> {
        let mut words = vec![
            FORMAT,
            self.event_count,
            0,
            self.nodes.len() as u32,
            self.anchors.len() as u32,
        ];
        words.extend(&self.anchors);
        for node in &self.nodes {
            let kind = node.kind.code();
            let link = match node.kind {
                Kind::Assistant => node.opens,
                Kind::ToolResult => node.opener.map_or(0, |s| s + 1),
                _ => 0,
            };
            words.extend([
                node.seq,
                kind | node.source.word() << SOURCE_SHIFT,
                link,
                node.origin,
                node.tokens,
                node.chars,
                node.set.map_or(0, |k| k + 1),
                node.facts.map_or(0, |f| f.saturating_add(1)),
                node.core,
            ]);
        }
        words.push(self.sets.len() as u32);
        for set in &self.sets {
            words.push(set.len() as u32);
            words.extend(set);
        }
        words
    }
}

//! Version 1, rewind's snapshot (format: the module docs of [`crate::wire`]): decoded into the
//! [`Surface`] the region rules read, and encoded from nodes (tests, benches, fuzz seeds).

use super::kind_and_link;
use crate::error::{FoldError, Result};
use crate::surface::SeqIndex;
use crate::surface::{Kind, Node, Pairing, Surface};

pub const FORMAT: u32 = 1;
/// "None" in a word (no current step).
pub const NONE: u32 = u32::MAX;
const HEADER_WORDS: usize = 4;
const NODE_WORDS: usize = 5;
const REPORT_WORDS: usize = 7;

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

fn bad(what: impl std::fmt::Display) -> FoldError {
    FoldError::invalid(format!("invalid surface snapshot: {what}"))
}

impl Surface {
    /// Decodes and validates a snapshot (its reports checked, then left out: the mirror keeps a
    /// report's account itself).
    ///
    /// # Errors
    /// As [`Surface::decode_with_reports`].
    pub fn decode(words: &[u32]) -> Result<Self> {
        Self::decode_with_reports(words).map(|(surface, _)| surface)
    }

    /// Decodes and validates a snapshot, with the rewind reports on it.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the first problem: wrong format or length, a seq out of range or
    /// repeated, an origin after its seq, an unknown kind, a link on the wrong kind, a result
    /// linked to a later event or to a node that is not an assistant, more results than calls, a
    /// current step or a report not on the surface.
    pub fn decode_with_reports(words: &[u32]) -> Result<(Self, Vec<Report>)> {
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

    /// The derived indexes, the current node and the reports' check.
    fn assemble(
        event_count: u32,
        nodes: Vec<Node>,
        pos_of_seq: &SeqIndex,
        current_seq: u32,
        reports: Vec<Report>,
    ) -> Result<(Self, Vec<Report>)> {
        let pairing = Pairing::of(&nodes, |seq| pos_of_seq.get(seq)).map_err(bad)?;
        let current = if current_seq == NONE {
            None
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

        Ok((Self::from_window(event_count, nodes, current, pairing), reports))
    }

    /// Encodes nodes back into the wire format (tests, benches and non-JS hosts).
    pub fn encode(event_count: u32, current: Option<u32>, nodes: &[Node], reports: &[Report]) -> Vec<u32> {
        let mut words = Vec::with_capacity(HEADER_WORDS + nodes.len() * NODE_WORDS + 1 + reports.len() * REPORT_WORDS);
        words.extend([FORMAT, event_count, current.unwrap_or(NONE), nodes.len() as u32]);
        for node in nodes {
            let kind = node.kind.code();
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

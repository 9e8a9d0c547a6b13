//! What the planners read off the mirror: rewind's window of the surface for an anchor
//! ([`Mirror::rewind_surface`]), block mode's surface ([`Mirror::block_surface`]), and the
//! prices of a region. The mirror's facts were checked when they were described; these only
//! gather them.

use super::*;

impl Mirror {
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
}

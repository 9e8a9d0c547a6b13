//! Which surface nodes a fold replaces: the fold's rules, all of them, in this file.
//!
//! Given a surface (nodes in model order: the session mirror's window, [`Surface`]) and a mark's anchor (the log length when the
//! mark was taken), the region is the contiguous run of surface positions `[start, end)`:
//!
//! 1. **Start** at the first position whose node's *origin* is >= the anchor. Never `seq >=
//!    anchor`: a compaction replacement appended after the mark over pre-mark history has a high
//!    seq but stands early on the surface, and folding it would swallow the user's request.
//! 2. **End** just before the current step's assistant node (the one carrying the rewind call;
//!    without a call id, the last assistant node when it has no tool call — a final answer,
//!    which stays — or an unanswered one), or at the surface tail when there is none. Nothing after the current node is folded either:
//!    those are results of the current step's other calls.
//! 3. **What came after the last tool work stays**: the region ends before the trailing run of
//!    messages that are not tool work — assistant messages without a tool call (an answer the
//!    model already wrote: the turn guard asks for the rewind only after the model replied) and
//!    user messages that are not replacements (the guard's warning, a user's new message). An
//!    answer is never folded away, so the model still sees, after the fold, that it answered. The
//!    same holds where rule 5 ends the region early: it never ends on an answer.
//! 4. **Leading results** whose call was issued before the start:
//!    - the call is unknown or off the surface (an orphan): skipped, never folded alone;
//!    - the call's assistant node issued only that call, or none of its other results follows
//!      (the mark was taken mid-call: the checkpoint runs between its own call and result):
//!      skipped, so the checkpoint pair stays visible and the fold starts at the exploration
//!      after it;
//!    - the call's assistant node issued several calls and another of its results follows
//!      (exploration issued in parallel with the checkpoint): the whole assistant node and all
//!      its results join the fold, so no call is left on the surface without its result.
//! 5. **Pairing closure**, to a fixed point: a result inside whose call stands before the start
//!    pulls the start back to that call; an assistant node inside with a call that has no result
//!    yet, or whose result lies past the end, pulls the end in to just before it ("the last
//!    closed cut").
//! 6. Nothing left → `EMPTY_REGION` ("no surface nodes after the checkpoint mark" when no node
//!    stands for an event after the mark, else "... between the checkpoint mark and the rewind
//!    call", as the reference words both) or, when the closure ate the region, `UNBALANCED`.
//!
//! After a fold of such a region, every tool call on the surface still has its result and every
//! result its call (the OpenAI-compatible APIs reject anything else).

use crate::error::{FoldError, Result};
use crate::surface::{Kind, Node, Surface};

pub const NOTHING_AFTER_MARK: &str = "no surface nodes after the checkpoint mark";
pub const NOTHING_BEFORE_REWIND: &str = "no surface nodes between the checkpoint mark and the rewind call";

/// The nodes a fold replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Surface positions `[start_pos, end_pos)`.
    pub start_pos: usize,
    pub end_pos: usize,
    /// The replaced nodes' seqs in model order (the replacement's `sourceEventSeqs`).
    pub seqs: Vec<u32>,
    /// Model-visible text the region holds (sum of the nodes' `chars`).
    pub folded_chars: u64,
}

impl Region {
    /// Seq of the first replaced node (the replace op's `start`).
    pub fn start(&self) -> u32 {
        self.seqs[0]
    }

    /// Seq of the last replaced node (the replace op's `end`).
    pub fn end(&self) -> u32 {
        self.seqs[self.seqs.len() - 1]
    }
}

/// Selects the region to fold for a mark taken at log length `anchor`.
///
/// One function on purpose (~90 lines): its body is the module docs' rules 1–6 in their order,
/// numbered there, each narrowing the same `[start, end)`; split, every step would take and
/// return the pair and the surface, and the fixed point of rule 5 would read across functions.
///
/// # Errors
/// `EMPTY_REGION` or `UNBALANCED` as described in the module docs.
pub fn select(surface: &Surface, anchor: u64) -> Result<Region> {
    let nodes = &surface.nodes;
    let empty = |why: &str| FoldError::EmptyRegion(why.to_owned());

    // 1. start: first node standing for events at or after the anchor.
    let Some(first) = nodes.iter().position(|n| u64::from(n.origin) >= anchor) else {
        return Err(empty(NOTHING_AFTER_MARK));
    };
    // 2. end: the current step's assistant node.
    let mut limit = surface.current.unwrap_or(nodes.len());
    // 3. what came after the investigation's last tool work stays on the surface (again after the
    // closure, which may end the region just after an answer).
    while limit > first && stays(&nodes[limit - 1]) {
        limit -= 1;
    }
    if first >= limit {
        return Err(empty(NOTHING_BEFORE_REWIND));
    }

    // 4. leading results whose call was issued before the start.
    let mut start = first;
    while start < limit && nodes[start].kind == Kind::ToolResult {
        match surface.opener_pos[start] {
            None => start += 1,
            // The call's message issued only this call, or no other of its results follows: the
            // checkpoint's own result (a mark taken mid-call), left visible with its call.
            Some(p) if p < start && (nodes[p].opens <= 1 || surface.last_answer[p] <= Some(start)) => start += 1,
            // Exploration issued in parallel with the checkpoint: fold its whole message.
            Some(p) if p < start => {
                start = p;
                break;
            }
            Some(_) => break,
        }
    }
    if start >= limit {
        return Err(empty(NOTHING_BEFORE_REWIND));
    }

    // 5. pairing closure.
    let mut end = limit;
    loop {
        let (mut new_start, mut new_end) = (start, end);
        for (i, node) in nodes.iter().enumerate().take(end).skip(start) {
            match surface.opener_pos[i] {
                Some(p) if p >= end => new_end = new_end.min(i),
                Some(p) => new_start = new_start.min(p),
                None => {}
            }
            if node.kind == Kind::Assistant && node.opens > 0 {
                let open = surface.answered[i] < node.opens;
                let answered_past_end = surface.last_answer[i].is_some_and(|a| a >= end);
                if open || answered_past_end {
                    new_end = new_end.min(i);
                }
            }
        }
        if (new_start, new_end) == (start, end) {
            break;
        }
        (start, end) = (new_start, new_end);
        if start >= end {
            break;
        }
    }
    // The closure may have cut the end back to just after an answer: it stays too (rule 3).
    while end > start && stays(&nodes[end - 1]) {
        end -= 1;
    }
    if start >= end {
        return Err(FoldError::Unbalanced(
            "the fold region cannot be cut at a balanced boundary: the exploration since the checkpoint mark \
             ends in a tool call that has no result yet, and no earlier cut keeps every call with its result; \
             wait for the call to finish, then rewind"
                .to_owned(),
        ));
    }

    let seqs: Vec<u32> = nodes[start..end].iter().map(|n| n.seq).collect();
    let folded_chars = nodes[start..end].iter().map(|n| u64::from(n.chars)).sum();
    Ok(Region {
        start_pos: start,
        end_pos: end,
        seqs,
        folded_chars,
    })
}

/// Whether a node at the region's tail stays out of it (rule 3): an assistant message without a
/// tool call (an answer), or a user message that is not a replacement (its origin is its own seq;
/// a compaction or an earlier report stands for older events and is folded like them).
fn stays(node: &Node) -> bool {
    match node.kind {
        Kind::Assistant => node.opens == 0,
        Kind::User => node.origin == node.seq,
        _ => false,
    }
}

/// Whether selecting again on `surface` gives exactly `seqs` (the commit-time check).
pub fn still_matches(surface: &Surface, anchor: u64, seqs: &[u32]) -> bool {
    select(surface, anchor).is_ok_and(|r| r.seqs == seqs)
}

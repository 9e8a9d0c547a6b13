//! Block mode's rules, all of them, in this file: what a model-written summary of some block ids
//! replaces on the surface, which ids it carries on, and when it must wait or be refused.
//!
//! The input is a v2 snapshot ([`BlockSurface`]: facts read off the log), the target ids, and
//! `request_seq`, the session's log length when the summary was requested: every event with
//! `seq >= request_seq` was appended after the model wrote its summary, so the model has not read
//! it. The rules (DESIGN § Block mode, items 3–7; seed 002), in the order they are applied:
//!
//! 1. **Attribution.** An assistant node belongs to the ids of its block calls (several calls in
//!    one message: the union), its text and reasoning included; a tool result belongs to the ids
//!    of the assistant node that issued its call, when that node is on the surface; a block
//!    summary belongs to the ids it carries. Nothing else belongs to a block: user messages, and
//!    other producers' replacements (a compaction or a rewind report ends the attribution of
//!    what it covers).
//! 2. **Known ids.** Every target must belong to some node, else `UNKNOWN_BLOCK` naming the
//!    unknown ids and the blocks that are open — or `STALE` when a replacement appended after the
//!    request covered them (rule 6).
//! 3. **Range.** The contiguous surface run from the first to the last node belonging to any
//!    target, in model order.
//! 4. **Pairing closure**, to a fixed point: a result in the range whose call's node stands
//!    before (or after) it pulls that node in, and an assistant node in the range pulls in every
//!    result of its calls on the surface. A call and its result are replaced together or not at
//!    all: after the commit no node left on the surface has lost its call or its result. The
//!    range only grows (shrinking it would leave a target's nodes behind), and what it grows over
//!    is summarized with it (its ids inherited by rule 8).
//! 5. **Protected.** A protected node in the range → `PROTECTED`: rejected whole, nothing
//!    replaced (never just the part before it).
//! 6. **Stale.** In the range, a user-authored `user/message` with `seq >= request_seq`, a block
//!    summary with `seq >= request_seq` (the model wrote it after this one: landing this one
//!    would replace it, and what it says, unread — issue 22 item 5), or another producer's
//!    replacement (a rewind report, a compaction) with `seq >= request_seq` in the range or
//!    covering a target's nodes → `STALE`: nothing is replaced and every id keeps its owners;
//!    the model must read the context and summarize again.
//! 7. **Pending.** A call in the range without its result on the surface yet (always so when
//!    the program asking is itself in a target block), a `compaction/start` without its end, or a
//!    rewind holding the session's lock → `Pending`: the host plans again at its next session
//!    event, and the range is computed again then. Rejections come first: waiting lifts none.
//! 8. **Commit.** The range's nodes (their seqs in model order) are replaced by the summary,
//!    which carries `remaining` = (the ids of the nodes in the range) − targets, in order of first
//!    appearance. A summary with no ids left stays on the surface, belonging to no block.
//!
//! Pure and synchronous: no I/O, no LLM, no lock taken. [`plan_session`] reads the session's
//! mirror and adds the one piece of process state, whether a rewind holds the session's lock
//! ([`SessionLocks::is_held`]).

use crate::error::{FoldError, Result};
use crate::locks::{session_locks, SessionLocks};
use crate::mirror::Mirror;
use crate::surface::{BlockId, BlockSurface, Kind, Provenance};

/// What a summary replaces right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// Surface positions `[start_pos, end_pos)`.
    pub start_pos: usize,
    pub end_pos: usize,
    /// The replaced nodes' seqs in model order (the shadowed seqs).
    pub seqs: Vec<u32>,
    /// The ids the summary carries on: the range's ids minus the targets.
    pub remaining: Vec<BlockId>,
    /// The targets, as requested.
    pub closed: Vec<BlockId>,
}

impl Commit {
    /// Seq of the first replaced node (the replace op's `start`).
    pub fn start(&self) -> u32 {
        self.seqs[0]
    }

    /// Seq of the last replaced node (the replace op's `end`).
    pub fn end(&self) -> u32 {
        self.seqs[self.seqs.len() - 1]
    }
}

/// What a pending summary waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Results of calls in the range.
    Results,
    /// Another compaction's `compaction/end`.
    Compaction,
    /// A rewind of the session to finish (its lock).
    Rewind,
}

impl Wait {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Results => "results",
            Self::Compaction => "compaction",
            Self::Rewind => "rewind",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub wait: Wait,
    /// For the model's note: what the summary waits for.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    Commit(Commit),
    Pending(Pending),
}

/// Most block ids one summary may close (a documented limit: DESIGN § Block mode).
pub const MAX_TARGETS: usize = 256;
/// Longest block id, in UTF-16 code units (a JS string's length).
pub const MAX_ID_UNITS: usize = 256;

/// How many ids or seqs a message lists before it says "and N more".
const LIST_MAX: usize = 12;

/// Shown in full up to this many UTF-16 units; a longer id is shown as its start and "…".
const SHOWN_ID_UNITS: usize = 32;

/// At most [`LIST_MAX`] items, then "and N more": a message's length never grows with the list.
fn list<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    let mut shown = Vec::with_capacity(LIST_MAX);
    let mut more = 0usize;
    for item in items {
        if shown.len() < LIST_MAX {
            shown.push(item.to_string());
        } else {
            more += 1;
        }
    }
    let shown = shown.join(", ");
    match more {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// An id for a message: quoted, and cut to its first [`SHOWN_ID_UNITS`] units when longer.
fn shown_id(id: &BlockId) -> String {
    let units = id.units();
    if units.len() <= SHOWN_ID_UNITS {
        return format!("{id:?}");
    }
    let start = String::from_utf16_lossy(&units[..SHOWN_ID_UNITS]);
    format!("{:?}… ({} chars)", start, units.len())
}

fn quoted<'a>(ids: impl IntoIterator<Item = &'a BlockId>) -> String {
    list(ids.into_iter().map(shown_id))
}

/// A list of `count` targets is over the cap: for a caller that can refuse it before reading
/// its items (the binding, on a JS array).
///
/// # Errors
/// `INVALID_ARGUMENT` when `count` is above [`MAX_TARGETS`].
pub fn check_target_count(count: usize) -> Result<()> {
    if count > MAX_TARGETS {
        return Err(FoldError::invalid(format!(
            "targets names {count} block ids; one summary closes at most {MAX_TARGETS}. Summarize fewer blocks at a time"
        )));
    }
    Ok(())
}

/// Targets must be a non-empty list of at most [`MAX_TARGETS`] distinct ids, each non-empty and
/// at most [`MAX_ID_UNITS`] long. Linear: the count is checked before any id is looked at, and
/// repeats are found with a hash map.
fn check_targets(targets: &[BlockId]) -> Result<()> {
    if targets.is_empty() {
        return Err(FoldError::invalid("targets must name at least one block id"));
    }
    check_target_count(targets.len())?;
    let mut first = std::collections::HashMap::with_capacity(targets.len());
    for (i, t) in targets.iter().enumerate() {
        if t.is_empty() {
            return Err(FoldError::invalid(format!("targets[{i}] is an empty string")));
        }
        if t.units().len() > MAX_ID_UNITS {
            return Err(FoldError::invalid(format!(
                "targets[{i}] ({}) is longer than {MAX_ID_UNITS} characters, the longest block id",
                shown_id(t)
            )));
        }
        if let Some(j) = first.insert(t.units(), i) {
            return Err(FoldError::invalid(format!(
                "targets[{i}] repeats targets[{j}] ({})",
                shown_id(t)
            )));
        }
    }
    Ok(())
}

/// The id set a node belongs to (rule 1), if any.
fn attributed(surface: &BlockSurface, i: usize) -> Option<u32> {
    let node = &surface.nodes[i];
    match (node.kind, node.provenance) {
        (_, Provenance::BlockSummary) | (Kind::Assistant, _) => node.set,
        (Kind::ToolResult, _) => surface.pairing.opener_pos[i].and_then(|p| surface.nodes[p].set),
        _ => None,
    }
}

/// Plans a summary of `targets` requested at log length `request_seq`, on `surface`;
/// `rewind_running` says whether a rewind holds the session's lock.
///
/// One function on purpose (~190 lines): its body is the module docs' steps 1–8 in their order,
/// numbered there, sharing one pass's attribution (which sets hit a target) and the range as it
/// grows; the first failing step answers, so each step reads as a guard on the same state.
///
/// # Errors
/// `INVALID_ARGUMENT` (bad targets, `request_seq` past the log), `UNKNOWN_BLOCK`, `PROTECTED`,
/// `STALE`, as the module docs say. Nothing is changed by any outcome: the host commits.
pub fn plan(surface: &BlockSurface, targets: &[BlockId], request_seq: u64, rewind_running: bool) -> Result<Plan> {
    check_targets(targets)?;
    if request_seq > u64::from(surface.event_count) {
        return Err(FoldError::invalid(format!(
            "requestSeq {request_seq} is past the log's length {}",
            surface.event_count
        )));
    }
    let nodes = &surface.nodes;
    let late = |seq: u32| u64::from(seq) >= request_seq;

    // Which id index is which target.
    let index: std::collections::HashMap<&[u16], usize> =
        targets.iter().enumerate().map(|(t, id)| (id.units(), t)).collect();
    let target_of: Vec<Option<usize>> = (0..surface.id_count() as u32)
        .map(|k| index.get(surface.id(k)).copied())
        .collect();
    let hits_target = |k: u32| surface.set(k).iter().any(|m| target_of[*m as usize].is_some());

    // 1–3. attribution, known ids, the range's ends. Each distinct set is read once.
    let mut found = vec![false; targets.len()];
    let mut set_hits: Vec<Option<bool>> = vec![None; surface.set_count()];
    let mut ends: Option<(usize, usize)> = None;
    for i in 0..nodes.len() {
        let Some(k) = attributed(surface, i) else { continue };
        let hit = *set_hits[k as usize].get_or_insert_with(|| {
            let mut hit = false;
            for m in surface.set(k) {
                if let Some(t) = target_of[*m as usize] {
                    found[t] = true;
                    hit = true;
                }
            }
            hit
        });
        if hit {
            ends = Some(ends.map_or((i, i), |(first, _)| (first, i)));
        }
    }

    // Another producer's replacements appended after the request that covered a target's nodes.
    let late_covers: Vec<usize> = (0..nodes.len())
        .filter(|&i| {
            let n = &nodes[i];
            n.provenance == Provenance::Replacement && late(n.seq) && n.set.is_some_and(hits_target)
        })
        .collect();

    let unknown: Vec<&BlockId> = (0..targets.len()).filter(|&t| !found[t]).map(|t| &targets[t]).collect();
    let (first, last) = match ends {
        Some(ends) if unknown.is_empty() => ends,
        _ => {
            if let Some(&r) = late_covers.first() {
                return Err(stale_replacement(targets, nodes[r].seq));
            }
            return Err(unknown_block(surface, &unknown));
        }
    };

    // 4. pairing closure: each position is visited once as the range grows over it.
    let mut first_answer = vec![None; nodes.len()];
    for (i, p) in surface.pairing.opener_pos.iter().enumerate() {
        if let Some(p) = *p {
            first_answer[p].get_or_insert(i);
        }
    }
    let (mut start, mut end) = (first, last + 1);
    let (mut seen_start, mut seen_end) = (first, first);
    while seen_start > start || seen_end < end {
        let i = if seen_end < end {
            seen_end += 1;
            seen_end - 1
        } else {
            seen_start -= 1;
            seen_start
        };
        let mut reach = |p: usize| {
            start = start.min(p);
            end = end.max(p + 1);
        };
        if let Some(p) = surface.pairing.opener_pos[i] {
            reach(p);
        }
        if nodes[i].kind == Kind::Assistant {
            if let Some(a) = first_answer[i] {
                reach(a);
            }
            if let Some(a) = surface.pairing.last_answer[i] {
                reach(a);
            }
        }
    }
    let range = start..end;

    // 5. protected.
    let protected: Vec<u32> = range
        .clone()
        .filter(|&i| nodes[i].protected)
        .map(|i| nodes[i].seq)
        .collect();
    if !protected.is_empty() {
        return Err(FoldError::Protected(format!(
            "the range of block(s) {} (surface seqs {} to {}) crosses {} protected message(s) (seq {}), \
             which no summary may replace; nothing was changed. Summarize blocks that do not span it, \
             or continue without summarizing",
            quoted(targets),
            nodes[start].seq,
            nodes[end - 1].seq,
            protected.len(),
            list(&protected)
        )));
    }

    // 6. stale.
    if let Some(i) = range.clone().find(|&i| nodes[i].user_authored && late(nodes[i].seq)) {
        return Err(FoldError::Stale(format!(
            "a new user message (seq {}) arrived inside the range of block(s) {} after this summary was \
             written (requested at log length {request_seq}); nothing was changed. Read it, then write the \
             summary again, keeping its requests and constraints",
            nodes[i].seq,
            quoted(targets),
        )));
    }
    if let Some(i) = range
        .clone()
        .find(|&i| nodes[i].provenance == Provenance::BlockSummary && late(nodes[i].seq))
    {
        return Err(FoldError::Stale(format!(
            "another block summary (seq {}) landed inside the range of block(s) {} after this summary was \
             written (requested at log length {request_seq}); applying it would replace that summary unread, so \
             nothing was changed. Read the context as it is now and summarize again if the blocks are still open",
            nodes[i].seq,
            quoted(targets),
        )));
    }
    let late_inside = range
        .clone()
        .find(|&i| nodes[i].provenance == Provenance::Replacement && late(nodes[i].seq));
    if let Some(r) = late_inside.or(late_covers.first().copied()) {
        return Err(stale_replacement(targets, nodes[r].seq));
    }

    // 7. pending.
    // Summed as u64: a snapshot may claim up to 2^32 - 1 calls per message (fuzzing found a u32
    // sum wrapping to 0, which would have committed over calls without their results).
    let open_calls: u64 = range
        .clone()
        .filter(|&i| nodes[i].kind == Kind::Assistant)
        .map(|i| u64::from(nodes[i].opens.saturating_sub(surface.pairing.answered[i])))
        .sum();
    if open_calls > 0 {
        return Ok(Plan::Pending(Pending {
            wait: Wait::Results,
            reason: format!(
                "waiting for {open_calls} tool call(s) in the range to return; the summary replaces the \
                 range as soon as their results are in"
            ),
        }));
    }
    if surface.open_compaction {
        return Ok(Plan::Pending(Pending {
            wait: Wait::Compaction,
            reason: "waiting for another compaction of this session to finish".to_owned(),
        }));
    }
    if rewind_running {
        return Ok(Plan::Pending(Pending {
            wait: Wait::Rewind,
            reason: "waiting for a rewind of this session to finish".to_owned(),
        }));
    }

    // 8. commit.
    let mut carried = vec![false; surface.id_count()];
    let mut remaining = Vec::new();
    for i in range.clone() {
        let Some(k) = attributed(surface, i) else { continue };
        for &m in surface.set(k) {
            if target_of[m as usize].is_none() && !carried[m as usize] {
                carried[m as usize] = true;
                remaining.push(surface.block_id(m));
            }
        }
    }
    Ok(Plan::Commit(Commit {
        start_pos: start,
        end_pos: end,
        seqs: nodes[range].iter().map(|n| n.seq).collect(),
        remaining,
        closed: targets.to_vec(),
    }))
}

fn stale_replacement(targets: &[BlockId], seq: u32) -> FoldError {
    FoldError::Stale(format!(
        "a rewind report or a compaction (seq {seq}) replaced part of block(s) {} after this summary was \
         requested; nothing was changed. Read the context as it is now and summarize again if the blocks are \
         still there",
        quoted(targets),
    ))
}

fn unknown_block(surface: &BlockSurface, unknown: &[&BlockId]) -> FoldError {
    // The blocks a summary could close now, in order of first appearance, and the unknown ids
    // some earlier replacement covered (those blocks are gone, not misspelled).
    let mut open = vec![false; surface.id_count()];
    let mut order = Vec::new();
    let unknown_index: std::collections::HashMap<&[u16], usize> =
        unknown.iter().enumerate().map(|(u, id)| (id.units(), u)).collect();
    let mut is_covered = vec![false; unknown.len()];
    let mut covered = Vec::new();
    for i in 0..surface.nodes.len() {
        if let Some(k) = attributed(surface, i) {
            for &m in surface.set(k) {
                if !open[m as usize] {
                    open[m as usize] = true;
                    order.push(surface.block_id(m));
                }
            }
        }
        let node = &surface.nodes[i];
        if let (Provenance::Replacement, Some(k)) = (node.provenance, node.set) {
            for &m in surface.set(k) {
                if let Some(&u) = unknown_index.get(surface.id(m)) {
                    if !is_covered[u] {
                        is_covered[u] = true;
                        covered.push(unknown[u]);
                    }
                }
            }
        }
    }
    let open = if order.is_empty() {
        "no block is open on the context".to_owned()
    } else {
        format!("the open blocks are {}", quoted(&order))
    };
    let gone = if covered.is_empty() {
        String::new()
    } else {
        format!(
            " ({} was already replaced by another compaction, which ended its block)",
            quoted(covered)
        )
    };
    FoldError::UnknownBlock(format!(
        "no message on the context belongs to block id(s) {}{gone}; {open}. Nothing was changed; \
         close open blocks by their ids",
        quoted(unknown.iter().copied()),
    ))
}

/// Plans on `surface`, waiting while a rewind holds session `session_id`'s lock in `locks`.
///
/// # Errors
/// `INVALID_ARGUMENT` for an empty session id, then as [`plan`].
pub fn plan_with_locks(
    locks: &SessionLocks,
    session_id: &str,
    surface: &BlockSurface,
    targets: &[BlockId],
    request_seq: u64,
) -> Result<Plan> {
    if session_id.is_empty() {
        return Err(FoldError::invalid("sessionId must be a non-empty string"));
    }
    plan(surface, targets, request_seq, locks.is_held(session_id))
}

/// Plans on the session's mirror (its block surface, [`Mirror::block_surface`]), with this
/// process's session locks (the ones `rewind` takes).
///
/// # Errors
/// `INVALID_ARGUMENT` for a mirror that cannot answer (out of step, its log index unknown), then
/// as [`plan_with_locks`].
pub fn plan_session(session_id: &str, mirror: &Mirror, targets: &[BlockId], request_seq: u64) -> Result<Plan> {
    plan_with_locks(
        session_locks(),
        session_id,
        &mirror.block_surface()?,
        targets,
        request_seq,
    )
}

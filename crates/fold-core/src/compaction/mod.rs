//! The compaction policy, all of it, in this file: which head range of the surface a compaction
//! replaces (the cut), and what its summary is made of (the allocation). What it reads, and how
//! the session mirror hands that over, is `input.rs`. The `dsh-fold/compaction` backend
//! (`plugin/compaction/`) asks it under token pressure, on a provider's context overflow and for
//! `/compact`; DSH's own `compaction-basic` cuts at a token budget instead.
//!
//! Input: facts about the surface nodes in model order ([`CompactionNode`]: kind, where the node
//! came from, its token price and visible chars, its call links, its block ids), the anchors of
//! the checkpoint marks still active, and the pressure ([`Params`]). A pure function of them —
//! no I/O, no model call. The session mirror hands it those facts
//! ([`CompactionSurface::from_mirror`]), its only input; a flat snapshot of the same facts
//! (`crate::wire`, behind the `oracles` feature) is the tests' oracle.
//!
//! The rules, in the order they are applied:
//!
//! 1. **Head range.** A compaction replaces `[0, c)` for a cut `c`: the oldest nodes, as DSH's
//!    compaction does, and always leaves the newest node. A cut is *valid* when no tool call
//!    crosses it (no assistant node before it has a call whose result is at or after it, or no
//!    result yet): after the replace every call on the surface has its result.
//! 2. **Retention.** Under pressure the tail `[c, n)` keeps at least `retain_tokens` (basic's
//!    `retainRatio`/`retainTokens`); on overflow and for `/compact`, only the newest unit.
//! 3. **Units.** A cut *splits* a subtask when it falls inside the marked exploration of an
//!    active checkpoint mark (from the first node standing for an event at or after the mark's
//!    anchor, to the tail: that exploration is still going on) or inside a block's span (from
//!    the first to the last node attributed to the block id: assistant nodes by their
//!    `block_run_code` ids, their results by their call's node, block summaries by the ids they
//!    carry). A block with an unanswered call, or the block of the last assistant node that
//!    names one (the block the agent is working in: at a step boundary every call is answered),
//!    is *open*; any other is *closed*.
//! 4. **Choice.** Among valid cuts within the retention, the latest one that relieves the
//!    pressure (rule 6) and splits nothing, ending the range on the model's own lines (its last
//!    node is not a user message whose answer would stay); else the latest that relieves and
//!    splits only closed blocks (an active exploration or an open block is never split while
//!    another range relieves the pressure); else the latest that relieves; else, when no cut
//!    relieves, the latest valid cut (the most a pass can free; the caller may run another).
//!    On overflow the latest valid cut, whatever it splits; for `/compact` the latest cut that
//!    splits nothing, else the latest valid one, and only where the summary at its natural size
//!    is smaller than the range (a `/compact` never degrades items to make room).
//!    A range made only of earlier compaction summaries is never taken: it holds no new work,
//!    and writing it again could only lose what it carries.
//! 5. **Items.** The range's nodes become the summary's items, in order: each user message, each
//!    rewind report, block summary and earlier compaction summary (ours or another backend's) is
//!    one item carried *verbatim* (a user message longer than `paste_chars` is *cut*: its head
//!    and tail kept, the middle left to recall); each maximal run of other nodes (the agent's
//!    tool work) is one item *condensed* by the native extractive report.
//! 6. **Budget.** The summary's body may take `max_summary_tokens`, and under pressure no more
//!    than what brings the request under the threshold: `threshold - 1 - (total - range)`, less a
//!    tenth for the estimate's error. The range's own verbatim items come first, and an earlier
//!    checkpoint of ours at its *core* (what it carries of the user's words, and each report or
//!    summary it carried as a one-line pointer). Then the facts of the new work: each work report
//!    gets up to its *need* — the chars its named paths, commands and error lines take (the sum
//!    over its messages of what the extractive report would copy of them, an upper bound, plus
//!    the report's skeleton), at least [`MIN_WORK_CHARS`], at most its visible size; its natural
//!    size ([`default_max_chars`]) when the host does not say — shared in proportion when the
//!    room is short. Then the earlier checkpoint gets back what it carried (it is *trimmed*,
//!    its oldest carried reports becoming pointers, only as far as the room requires). Last,
//!    with room to spare, each work report may grow to half again its natural size (the report
//!    keeps more of its lowest-priority facts). So a long session's carried prose yields to the
//!    new range's facts, never the other way round. A cut *relieves* when its verbatim items
//!    (an earlier checkpoint of ours at its core) and the smallest work reports fit. When the
//!    chosen cut's do not, items degrade to a one-line pointer (recall returns them whole), in
//!    this order: earlier compaction summaries, then rewind reports and block summaries, then
//!    user messages, then work runs, oldest first; the plan counts them (a trimmed checkpoint
//!    too). `/compact` never trims nor degrades.
//! 7. **The train of thought.** A range with tool work also gets, after its items, the model's
//!    own thread through it (`report::thought`): its latest words (up to `intent_chars`), the
//!    names in play (up to `names_chars`) and the open state of the work (up to
//!    [`STATE_CHARS`]). Its room is claimed with the work reports' (rule 6), after the verbatim
//!    items: it never turns the user's words into pointers, and when the room is short it is
//!    shared in proportion with the reports' facts, at least [`THOUGHT_FLOOR`] chars of it when
//!    the floors fit, its latest words served first, then the open state, then the names; and
//!    it takes its room out of the reports' growth (rule 6's last step), so with room to spare
//!    the checkpoint is no larger for it than its reports would have grown.
//!
//! Prices are the host's (DSH's token meter: 4 chars a token plus framing); the plan's size
//! estimates use the same density.

use std::collections::HashMap;

mod input;

pub use input::{CompactionNode, CompactionSurface, MirrorOverlay, Source};

use crate::error::{FoldError, Result};
use crate::report::default_max_chars;
use crate::surface::Kind;

/// Chars per token of the host's meter (DSH's `estimateMessage`).
pub const CHARS_PER_TOKEN: u64 = 4;
/// The summary's fixed text: preamble, tags, the recall hint.
pub const FRAME_CHARS: u64 = 700;
/// Each item's heading line.
pub const ITEM_HEADER_CHARS: u64 = 48;
/// The smallest work report worth writing; below it a run becomes a pointer.
pub const MIN_WORK_CHARS: u64 = 400;
/// A pointer line.
pub const POINTER_CHARS: u64 = 160;
/// A work report's fixed text around its facts: section headings, the counts line, the closing
/// line saying what was left out.
pub const REPORT_SKELETON_CHARS: u64 = 320;
/// The marker between a cut paste's head and tail.
pub const CUT_MARKER_CHARS: u64 = 160;
/// The open state of the work at most (rule 7): a few lines of files, the last failure, the plan.
pub const STATE_CHARS: u64 = 720;
/// The least room the train of thought claims beside the work reports (rule 7).
pub const THOUGHT_FLOOR: u64 = 400;

impl CompactionSurface {
    /// Whether the cut before position `c` leaves every call with its result (rule 1), for
    /// every `c` in `0..=n`.
    pub fn valid_cuts(&self) -> Vec<bool> {
        let n = self.nodes.len();
        let first_open = (0..n)
            .find(|&i| self.nodes[i].kind == Kind::Assistant && self.pairing.answered[i] < self.nodes[i].opens)
            .unwrap_or(n);
        let mut valid = vec![false; n + 1];
        let mut min_opener = usize::MAX;
        for c in (0..=n).rev() {
            valid[c] = c <= first_open && min_opener >= c;
            if c > 0 {
                if let Some(p) = self.pairing.opener_pos[c - 1] {
                    min_opener = min_opener.min(p);
                }
            }
        }
        valid
    }

    /// Whether each cut is a balanced edge: no call crosses it (an open call crosses every cut
    /// after it; `start` only names the caller's range start and changes nothing for now).
    fn valid_cuts_between(&self, _start: usize) -> Vec<bool> {
        let n = self.nodes.len();
        let mut crossing = vec![0i64; n + 2];
        for (i, opener) in self.pairing.opener_pos.iter().enumerate() {
            if let Some(p) = *opener {
                crossing[p + 1] += 1;
                crossing[i + 1] -= 1;
            }
        }
        for (i, node) in self.nodes.iter().enumerate() {
            if node.kind == Kind::Assistant && self.pairing.answered[i] < node.opens {
                crossing[i + 1] += 1;
            }
        }
        let mut acc = 0i64;
        (0..=n)
            .map(|c| {
                acc += crossing[c];
                acc == 0
            })
            .collect()
    }

    /// The block id set a node belongs to (rule 3).
    fn attributed(&self, i: usize) -> Option<u32> {
        let node = &self.nodes[i];
        match node.kind {
            Kind::ToolResult => self.pairing.opener_pos[i].and_then(|p| self.nodes[p].set),
            _ => node.set,
        }
    }

    /// For each cut `c`: how many open and how many closed blocks it falls inside.
    fn block_splits(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.nodes.len();
        // The block the agent is working in: the last assistant node's that carries block ids.
        let current = (0..n)
            .rev()
            .find(|&i| self.nodes[i].kind == Kind::Assistant && self.nodes[i].set.is_some());
        // block number → (first, last, open)
        let mut spans: HashMap<u32, (usize, usize, bool)> = HashMap::new();
        for i in 0..n {
            let Some(k) = self.attributed(i) else { continue };
            let open = self.nodes[i].kind == Kind::Assistant
                && (self.pairing.answered[i] < self.nodes[i].opens || Some(i) == current);
            for &b in &self.sets[k as usize] {
                let span = spans.entry(b).or_insert((i, i, false));
                span.1 = i;
                span.2 |= open;
            }
        }
        let (mut open, mut closed) = (vec![0i64; n + 2], vec![0i64; n + 2]);
        for (first, last, is_open) in spans.into_values() {
            let diff = if is_open { &mut open } else { &mut closed };
            diff[first + 1] += 1;
            diff[last + 1] -= 1;
        }
        let run = |d: Vec<i64>| {
            let mut acc = 0i64;
            d.into_iter()
                .take(n + 1)
                .map(|x| {
                    acc += x;
                    acc as u32
                })
                .collect::<Vec<_>>()
        };
        (run(open), run(closed))
    }

    /// The first position of the earliest active marked exploration, if any is on the surface.
    fn exploration_start(&self) -> Option<usize> {
        let anchor = *self.anchors.iter().min()?;
        self.nodes.iter().position(|n| n.origin >= anchor)
    }
}

/// Why the policy is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Step-boundary token pressure: relieve it, keeping the retained tail.
    Pressure,
    /// The provider refused the request as too long: reduce as much as possible.
    Overflow,
    /// `/compact`: compact what is useful, below any pressure.
    Manual,
}

/// The pressure and the budgets, in the host meter's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    pub trigger: Trigger,
    /// The request's price now (envelope + surface).
    pub total_tokens: u64,
    /// Compact at or above this; a pass should bring the request below it (pressure only).
    pub threshold_tokens: u64,
    /// The tail kept verbatim (pressure only).
    pub retain_tokens: u64,
    /// Most tokens the summary may take.
    pub max_summary_tokens: u64,
    /// A user message longer than this is cut (its head and tail kept).
    pub paste_chars: u32,
    /// The train of thought's latest words at most (rule 7); 0: none.
    pub intent_chars: u32,
    /// The train of thought's names in play at most (rule 7); 0: none.
    pub names_chars: u32,
}

/// The room each part of the train of thought got (rule 7), in chars: 0 for a part left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Thought {
    pub intent_chars: u32,
    pub names_chars: u32,
    pub state_chars: u32,
}

impl Thought {
    pub fn total(&self) -> u64 {
        u64::from(self.intent_chars) + u64::from(self.names_chars) + u64::from(self.state_chars)
    }
}

/// What the policy does with one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Treatment {
    /// Carried as written.
    Verbatim,
    /// A long user message: its first `head` and last `tail` chars, the middle left to recall.
    Cut { head: u32, tail: u32 },
    /// Tool work: the extractive report, at most `max_chars`.
    Condense { max_chars: u32 },
    /// An earlier checkpoint of ours, at most `max_chars`: its user messages as written, the
    /// reports and summaries it carried as written, newest first, the rest as pointers.
    Trim { max_chars: u32 },
    /// One line saying what it was and that recall returns it.
    Pointer,
}

/// A run of consecutive range positions with one treatment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub source: Source,
    /// Surface positions `[start_pos, end_pos)`.
    pub start_pos: usize,
    pub end_pos: usize,
    /// The item's visible chars as it stands.
    pub chars: u64,
    /// An earlier compaction summary of ours: its core chars (rule 6); else `chars`.
    pub core: u64,
    pub treatment: Treatment,
}

/// The subtasks the cut splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Splits {
    pub active_exploration: bool,
    pub open_block: bool,
    pub closed_block: bool,
}

impl Splits {
    /// An active exploration or an open block: work still going on.
    pub fn in_progress(&self) -> bool {
        self.active_exploration || self.open_block
    }

    pub fn any(&self) -> bool {
        self.in_progress() || self.closed_block
    }
}

/// What a compaction replaces and how its summary is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The range is surface positions `[start_pos, end_pos)` (`start_pos` is 0 but for
    /// [`plan_range`]).
    pub start_pos: usize,
    pub end_pos: usize,
    /// Its nodes' seqs in model order (the shadowed seqs).
    pub seqs: Vec<u32>,
    /// Its price.
    pub range_tokens: u64,
    /// The summary body's budget in chars.
    pub budget_chars: u64,
    pub items: Vec<Item>,
    /// The summary's estimated price.
    pub summary_tokens: u64,
    /// The request's estimated price after the replace.
    pub projected_tokens: u64,
    /// Whether the projection is under the threshold (always true but under pressure).
    pub relieves: bool,
    pub splits: Splits,
    /// Items shortened beyond the rules of rule 5 (pointers).
    pub degraded: u32,
    /// The train of thought's room (rule 7).
    pub thought: Thought,
}

impl Plan {
    /// Seq of the first replaced node.
    pub fn start(&self) -> u32 {
        self.seqs[0]
    }

    /// Seq of the last replaced node.
    pub fn end(&self) -> u32 {
        self.seqs[self.seqs.len() - 1]
    }
}

/// The natural size of a work report over `chars` visible chars.
fn natural_work(chars: u64) -> u64 {
    (default_max_chars(chars as usize) as u64).min(chars.saturating_sub(1))
}

/// What the train of thought would take at most (rule 7), its heading included; 0 when the
/// params ask for none of it.
fn thought_want(params: &Params) -> u64 {
    if params.intent_chars == 0 && params.names_chars == 0 {
        return 0;
    }
    ITEM_HEADER_CHARS + u64::from(params.intent_chars) + u64::from(params.names_chars) + STATE_CHARS
}

/// The chars a verbatim item takes under rule 5 (a long user message is cut).
fn verbatim_chars(source: Source, chars: u64, paste_chars: u32) -> u64 {
    if source == Source::User && chars > u64::from(paste_chars) {
        u64::from(paste_chars) + CUT_MARKER_CHARS
    } else {
        chars
    }
}

/// Per cut, what the summary of `[0, c)` needs: verbatim chars, work runs, their natural and
/// smallest report sizes, item count.
struct Needs {
    verbatim: Vec<u64>,
    runs: Vec<u64>,
    natural: Vec<u64>,
    items: Vec<u64>,
}

fn needs(surface: &CompactionSurface, paste_chars: u32, trimmable: bool) -> Needs {
    let n = surface.nodes.len();
    let mut out = Needs {
        verbatim: vec![0; n + 1],
        runs: vec![0; n + 1],
        natural: vec![0; n + 1],
        items: vec![0; n + 1],
    };
    let (mut verbatim, mut runs, mut finished, mut items, mut run_chars) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut in_run = false;
    for c in 1..=n {
        let node = &surface.nodes[c - 1];
        if node.source == Source::Work {
            if !in_run {
                in_run = true;
                runs += 1;
                items += 1;
                run_chars = 0;
            }
            run_chars += u64::from(node.chars);
        } else {
            if in_run {
                finished += natural_work(run_chars);
                in_run = false;
            }
            let chars = if trimmable { node.core } else { node.chars };
            verbatim += verbatim_chars(node.source, u64::from(chars), paste_chars);
            items += 1;
        }
        out.verbatim[c] = verbatim;
        out.runs[c] = runs;
        out.natural[c] = finished + if in_run { natural_work(run_chars) } else { 0 };
        out.items[c] = items;
    }
    out
}

/// Plans a compaction of `surface` under `params`, or `None` when no useful range exists (no
/// valid cut leaves a tail, or no summary of the range would be smaller than it).
pub fn plan(surface: &CompactionSurface, params: &Params) -> Option<Plan> {
    let nodes = &surface.nodes;
    let n = nodes.len();
    if n < 2 {
        return None;
    }
    let mut prefix = vec![0u64; n + 1];
    for (i, node) in nodes.iter().enumerate() {
        prefix[i + 1] = prefix[i] + u64::from(node.tokens);
    }
    let valid = surface.valid_cuts();
    let pressure = params.trigger == Trigger::Pressure;
    let keeps = |c: usize| !pressure || prefix[n] - prefix[c] >= params.retain_tokens;
    let c_max = (1..n).rev().find(|&c| valid[c] && keeps(c))?;

    let needs = needs(surface, params.paste_chars, params.trigger != Trigger::Manual);
    let (open_blocks, closed_blocks) = surface.block_splits();
    let exploration = surface.exploration_start();
    let splits = |c: usize| Splits {
        active_exploration: exploration.is_some_and(|p| c > p),
        open_block: open_blocks[c] > 0,
        closed_block: closed_blocks[c] > 0,
    };
    let on_model_lines = |c: usize| nodes[c - 1].source != Source::User;
    let budget = |c: usize| budget_chars(params, prefix[c]);
    let framing = |c: usize| FRAME_CHARS + needs.items[c] * ITEM_HEADER_CHARS;
    // The smallest summary that keeps every verbatim item: does it fit the budget?
    let relieves = |c: usize| !pressure || framing(c) + needs.verbatim[c] + needs.runs[c] * MIN_WORK_CHARS <= budget(c);
    // Useful: the summary at its natural size is smaller than the range; shrinks: at its
    // smallest (every item a pointer) it is.
    let thought = |c: usize| if needs.runs[c] > 0 { thought_want(params) } else { 0 };
    let useful = |c: usize| {
        (framing(c) + needs.verbatim[c] + needs.natural[c] + thought(c)).div_ceil(CHARS_PER_TOKEN) < prefix[c]
    };
    let shrinks = |c: usize| (framing(c) + needs.items[c] * POINTER_CHARS).div_ceil(CHARS_PER_TOKEN) < prefix[c];
    // The first node that is not an earlier summary: a range must reach past it.
    let first_new = nodes.iter().position(|n| !n.source.is_summary()).unwrap_or(n);
    let latest = |ok: &dyn Fn(usize) -> bool| (1..=c_max).rev().find(|&c| c > first_new && valid[c] && ok(c));

    let chosen = match params.trigger {
        Trigger::Overflow => latest(&shrinks),
        // `/compact` relieves no pressure: it never degrades what it carries to make room.
        Trigger::Manual => latest(&|c| useful(c) && !splits(c).any() && on_model_lines(c)).or_else(|| latest(&useful)),
        Trigger::Pressure => latest(&|c| relieves(c) && !splits(c).any() && on_model_lines(c))
            .or_else(|| latest(&|c| relieves(c) && !splits(c).in_progress()))
            .or_else(|| latest(&relieves))
            .or_else(|| latest(&shrinks)),
    }?;
    Some(allocate(
        surface,
        params,
        (0, chosen),
        prefix[chosen],
        budget(chosen),
        splits(chosen),
    ))
}

/// The plan for the cut at position `c` (the range `[0, c)`), whatever rule 4 would choose:
/// `None` when that cut is not valid or leaves no node. For tests and diagnostics.
pub fn plan_at(surface: &CompactionSurface, params: &Params, c: usize) -> Option<Plan> {
    let n = surface.nodes.len();
    if c == 0 || c >= n || !surface.valid_cuts()[c] {
        return None;
    }
    let range_tokens = surface.nodes[..c].iter().map(|x| u64::from(x.tokens)).sum();
    let (open_blocks, closed_blocks) = surface.block_splits();
    let splits = Splits {
        active_exploration: surface.exploration_start().is_some_and(|p| c > p),
        open_block: open_blocks[c] > 0,
        closed_block: closed_blocks[c] > 0,
    };
    Some(allocate(
        surface,
        params,
        (0, c),
        range_tokens,
        budget_chars(params, range_tokens),
        splits,
    ))
}

/// The items and budget of an explicit range, surface positions `[start, end)` (DSH's
/// `compactRegion`: the caller chose it). Rule 4 does not apply; rules 5 and 6 do, with the
/// budget of a `/compact`.
///
/// # Errors
/// `INVALID_ARGUMENT` when the range is empty, out of bounds, or not cut at valid edges.
pub fn plan_range(surface: &CompactionSurface, params: &Params, start: usize, end: usize) -> Result<Plan> {
    let n = surface.nodes.len();
    if start >= end || end > n {
        return Err(FoldError::invalid(format!(
            "range [{start}, {end}) is not a non-empty range of the {n} surface nodes"
        )));
    }
    let valid = surface.valid_cuts_between(start);
    if !valid[start] || !valid[end] {
        return Err(FoldError::invalid(format!(
            "range [{start}, {end}) splits a tool call from its result at its {} edge",
            if valid[start] { "end" } else { "start" }
        )));
    }
    let range_tokens = surface.nodes[start..end].iter().map(|x| u64::from(x.tokens)).sum();
    let mut manual = *params;
    manual.trigger = Trigger::Manual;
    let budget = budget_chars(&manual, range_tokens);
    Ok(allocate(
        surface,
        &manual,
        (start, end),
        range_tokens,
        budget,
        Splits::default(),
    ))
}

/// The summary body's budget in chars for a range priced `range_tokens` (rule 6).
fn budget_chars(params: &Params, range_tokens: u64) -> u64 {
    let mut tokens = params.max_summary_tokens;
    if params.trigger == Trigger::Pressure {
        let rest = params.total_tokens.saturating_sub(range_tokens);
        tokens = tokens.min(params.threshold_tokens.saturating_sub(1).saturating_sub(rest));
    }
    tokens = tokens.min(range_tokens.saturating_sub(1));
    // A tenth off for the estimate's error (framing, per-block overheads).
    tokens * CHARS_PER_TOKEN * 9 / 10
}

/// What a work run's report needs to keep its facts (rule 6): the sum of its nodes' fact chars
/// and the report's skeleton, within `[min(MIN_WORK_CHARS, visible - 1), visible - 1]`; its
/// natural size when a node's fact chars are unknown.
fn work_need(nodes: &[CompactionNode]) -> u64 {
    let visible: u64 = nodes.iter().map(|n| u64::from(n.chars)).sum();
    let most = visible.saturating_sub(1);
    match nodes.iter().map(|n| n.facts.map(u64::from)).sum::<Option<u64>>() {
        Some(facts) => (facts + REPORT_SKELETON_CHARS).clamp(MIN_WORK_CHARS.min(most), most),
        None => natural_work(visible),
    }
}

/// Shares `room` among claims `(floor, want)`: each gets at least its floor when the floors fit,
/// then the rest of what it wants in proportion; all of it when everything fits.
fn share(room: u64, claims: &[(u64, u64)]) -> Vec<u64> {
    let wants: u64 = claims.iter().map(|c| c.1).sum();
    if room >= wants {
        return claims.iter().map(|c| c.1).collect();
    }
    let floors: u64 = claims.iter().map(|c| c.0).sum();
    let spare = room.saturating_sub(floors);
    let extra = wants - floors;
    claims
        .iter()
        .map(|&(floor, want)| floor + (want - floor) * spare / extra.max(1))
        .collect()
}

/// Rule 6 for the range `[s, c)`: its items (rule 5), degraded until the work fits at its
/// smallest, then the room shared in the rule's order — the new work's facts and the train of
/// thought (rule 7), what earlier checkpoints of ours carried, the reports' growth — and the
/// summary's price. Each step is a function below, named for its part of the rule.
fn allocate(
    surface: &CompactionSurface,
    params: &Params,
    (s, c): (usize, usize),
    range_tokens: u64,
    budget: u64,
    splits: Splits,
) -> Plan {
    let nodes = &surface.nodes[s..c];
    let mut items = items_of(nodes, s, params);
    let mut degraded = degrade_to_fit(&mut items, budget);
    let live = work_runs(&items);
    let room = budget
        .saturating_sub(fixed_chars(&items))
        .saturating_sub(live.len() as u64 * ITEM_HEADER_CHARS);
    let (mut work, thought_room, room) = claim_facts(surface, params, &items, &live, room);
    let thought = split_thought(params, thought_room.saturating_sub(ITEM_HEADER_CHARS));
    let (room, trimmed) = give_back_carried(&mut items, room);
    degraded += trimmed;
    grow_reports(&items, &live, &mut work, room, thought_chars(&thought));
    for (j, &k) in live.iter().enumerate() {
        items[k].treatment = Treatment::Condense {
            max_chars: u32::try_from(work[j]).unwrap_or(u32::MAX),
        };
    }
    let body: u64 = FRAME_CHARS + items.iter().map(item_size).sum::<u64>() + thought_chars(&thought);
    // The summary is one user message with text blocks: the meter adds a few tokens of framing.
    let summary_tokens = body.div_ceil(CHARS_PER_TOKEN) + 8;
    let projected_tokens = params.total_tokens.saturating_sub(range_tokens) + summary_tokens;
    let relieves = params.trigger != Trigger::Pressure || projected_tokens < params.threshold_tokens;
    Plan {
        start_pos: s,
        end_pos: c,
        seqs: nodes.iter().map(|n| n.seq).collect(),
        range_tokens,
        budget_chars: budget,
        items,
        summary_tokens,
        projected_tokens,
        relieves,
        splits,
        degraded,
        thought,
    }
}

/// Rule 5: the range's nodes (the first at surface position `s`) as the summary's items, each
/// maximal run of work one item to condense, a paste longer than `paste_chars` cut.
fn items_of(nodes: &[CompactionNode], s: usize, params: &Params) -> Vec<Item> {
    // `/compact` carries what it takes whole; under pressure and on overflow an earlier
    // checkpoint of ours may be trimmed to its core.
    let trimmable = params.trigger != Trigger::Manual;
    let mut items: Vec<Item> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let chars = u64::from(node.chars);
        match items.last_mut() {
            Some(last) if node.source == Source::Work && last.source == Source::Work => {
                last.end_pos = s + i + 1;
                last.chars += chars;
                last.core += chars;
            }
            _ => {
                let treatment = match node.source {
                    Source::Work => Treatment::Condense { max_chars: 0 },
                    Source::User if chars > u64::from(params.paste_chars) => {
                        let head = params.paste_chars * 2 / 3;
                        Treatment::Cut {
                            head,
                            tail: params.paste_chars - head,
                        }
                    }
                    _ => Treatment::Verbatim,
                };
                items.push(Item {
                    source: node.source,
                    start_pos: s + i,
                    end_pos: s + i + 1,
                    chars,
                    core: if trimmable { u64::from(node.core) } else { chars },
                    treatment,
                });
            }
        }
    }
    items
}

/// An item's size in the summary, with its header.
fn item_size(item: &Item) -> u64 {
    ITEM_HEADER_CHARS
        + match item.treatment {
            Treatment::Verbatim => item.chars,
            Treatment::Cut { head, tail } => u64::from(head) + u64::from(tail) + CUT_MARKER_CHARS,
            Treatment::Condense { max_chars } | Treatment::Trim { max_chars } => u64::from(max_chars),
            Treatment::Pointer => POINTER_CHARS,
        }
}

/// What the items other than work take at their smallest without degrading (an earlier
/// checkpoint of ours at its core), with the summary's frame.
fn fixed_chars(items: &[Item]) -> u64 {
    FRAME_CHARS
        + items
            .iter()
            .filter(|it| it.source != Source::Work)
            .map(|it| match it.treatment {
                Treatment::Verbatim => ITEM_HEADER_CHARS + it.core,
                _ => item_size(it),
            })
            .sum::<u64>()
}

/// The work runs still condensed (not pointers), by item index.
fn work_runs(items: &[Item]) -> Vec<usize> {
    (0..items.len())
        .filter(|&k| items[k].source == Source::Work && items[k].treatment != Treatment::Pointer)
        .collect()
}

/// Degrades items to pointers until the work fits `budget` at its smallest: verbatim items
/// first, cheapest loss first and oldest first, then the oldest work runs. The count degraded.
fn degrade_to_fit(items: &mut [Item], budget: u64) -> u32 {
    let mut degraded = 0u32;
    let mut order: Vec<usize> = (0..items.len()).filter(|&k| items[k].source != Source::Work).collect();
    order.sort_by_key(|&k| (items[k].source.degrade_rank(), k));
    let mut next = order.into_iter();
    loop {
        let work = work_runs(items).len() as u64;
        if fixed_chars(items) + work * (ITEM_HEADER_CHARS + MIN_WORK_CHARS) <= budget {
            break;
        }
        if let Some(k) = next.next() {
            if item_size(&items[k]) > ITEM_HEADER_CHARS + POINTER_CHARS {
                items[k].treatment = Treatment::Pointer;
                degraded += 1;
            }
            continue;
        }
        // Only work left: the oldest runs become pointers.
        match work_runs(items).first() {
            Some(&k) => {
                items[k].treatment = Treatment::Pointer;
                degraded += 1;
            }
            None => break,
        }
    }
    degraded
}

/// First claim on `room`: each live work report up to its need (rule 6), and the train of
/// thought beside them (rule 7) when the range has work. The reports' shares, the thought's
/// room, and the room left.
fn claim_facts(
    surface: &CompactionSurface,
    params: &Params,
    items: &[Item],
    live: &[usize],
    room: u64,
) -> (Vec<u64>, u64, u64) {
    let need: Vec<u64> = live
        .iter()
        .map(|&k| work_need(&surface.nodes[items[k].start_pos..items[k].end_pos]))
        .collect();
    let mut claims: Vec<(u64, u64)> = need.iter().map(|&x| (x.min(MIN_WORK_CHARS), x)).collect();
    let want = if live.is_empty() { 0 } else { thought_want(params) };
    claims.push((want.min(THOUGHT_FLOOR), want));
    let mut work = share(room, &claims);
    let thought_room = work.pop().unwrap_or(0);
    let left = room.saturating_sub(work.iter().sum::<u64>() + thought_room);
    (work, thought_room, left)
}

/// Then what the earlier checkpoints of ours carried, the newest first: each gets back what
/// `room` allows, trimmed where it falls short. The room left and the count trimmed.
fn give_back_carried(items: &mut [Item], mut room: u64) -> (u64, u32) {
    let mut trimmed = 0u32;
    for item in items.iter_mut().rev() {
        if item.source != Source::CompactionSummary || item.treatment != Treatment::Verbatim || item.core == item.chars
        {
            continue;
        }
        let back = (item.chars - item.core).min(room);
        room -= back;
        if item.core + back < item.chars {
            item.treatment = Treatment::Trim {
                max_chars: u32::try_from(item.core + back).unwrap_or(u32::MAX),
            };
            trimmed += 1;
        }
    }
    (room, trimmed)
}

/// The train of thought's chars in the summary, with its header (none without content).
fn thought_chars(thought: &Thought) -> u64 {
    if thought.total() > 0 {
        ITEM_HEADER_CHARS + thought.total()
    } else {
        0
    }
}

/// Last, with room to spare, a report may grow to half again its natural size (less than its
/// visible size): the extractive report keeps more of its lowest-priority facts. The train of
/// thought (`thought_chars`) takes its room out of that growth: the model's own words are worth
/// more than the reports' least facts, and the checkpoint is no larger for them than its reports
/// would have grown.
fn grow_reports(items: &[Item], live: &[usize], work: &mut [u64], room: u64, thought_chars: u64) {
    let grow: Vec<(u64, u64)> = live
        .iter()
        .enumerate()
        .map(|(j, &k)| {
            let natural = natural_work(items[k].chars);
            let target = (natural + natural / 2)
                .min(items[k].chars.saturating_sub(1))
                .max(work[j]);
            (0, target - work[j])
        })
        .collect();
    let growth: u64 = grow.iter().map(|g| g.1).sum();
    let room = room.min(growth.saturating_sub(thought_chars));
    for (j, extra) in share(room, &grow).into_iter().enumerate() {
        work[j] += extra;
    }
}

/// Shares the train of thought's room among its parts (rule 7): its latest words first, then the
/// open state, then the names.
fn split_thought(params: &Params, room: u64) -> Thought {
    let intent = room.min(u64::from(params.intent_chars));
    let state = (room - intent).min(STATE_CHARS);
    let names = (room - intent - state).min(u64::from(params.names_chars));
    let as32 = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
    Thought {
        intent_chars: as32(intent),
        names_chars: as32(names),
        state_chars: as32(state),
    }
}

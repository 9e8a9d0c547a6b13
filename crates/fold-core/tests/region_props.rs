//! Property test of `region::select` against a brute-force oracle, on random but realistic
//! surfaces built the way a DSH session grows them:
//!
//! - steps: user messages, (rarely) other surface nodes, assistant messages with 0..=4 tool calls
//!   whose results follow in a random order (a result sometimes never arrives: an open call),
//!   orphaned results (their call unknown or shadowed), log-only events (gaps in the seqs);
//! - compaction replacements that shadow a contiguous earlier run of whole steps (or, rarely, any
//!   contiguous run of nodes), spliced in at that run's position with a new, high seq and the run's
//!   smallest origin;
//! - optionally the current step: an assistant node carrying the rewind call (plus parallel calls,
//!   some answered after it), named explicitly or left for the decoder to infer; sometimes an
//!   earlier step's results arrive only after it;
//! - an anchor anywhere: uniform over the log, right after an assistant node (a mark taken
//!   mid-call), at a node's seq, or just past it.
//!
//! `PROPTEST_CASES` sets the number of cases (`npm test` runs 2000).

use std::collections::HashMap;

use fold_core::region::{self, NOTHING_AFTER_MARK, NOTHING_BEFORE_REWIND};
use fold_core::surface::{Kind, Node, Surface};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Step {
    User(u32),
    Other,
    Assistant {
        calls: usize,
        /// Results arrive in the order of these keys.
        order: [u8; 4],
        /// These calls never get a result.
        missing: [bool; 4],
        /// Whether `tool/call` log events sit between the message and its results.
        call_events: bool,
        chars: u32,
    },
    Orphan {
        /// The result's call was a log-only event (else the link is unknown, 0).
        via_log_event: bool,
    },
    LogOnly(u32),
    /// A replacement over a contiguous run: whole steps (a balanced cut, as dsh-compaction picks
    /// them) or, rarely, any short run of nodes. An unaligned run may split a step (its assistant
    /// node loses results: an open call; or its results lose their call: orphans), but it never
    /// ends between an assistant node before it and that node's later results: a replacement
    /// standing between a call and its answer is a surface no host produces (and no API accepts:
    /// tool messages must follow their call). On such a surface `select` documents (rule 5) that
    /// it pulls the start back to the call and answers `UNBALANCED` when that call is open, even
    /// if the replacement alone could be folded; the oracle here would call that unjustified.
    Compact {
        a: usize,
        b: usize,
        aligned: bool,
    },
}

#[derive(Debug, Clone)]
enum Current {
    Absent,
    /// The rewind's assistant node, named in the snapshot header.
    Explicit {
        parallel: usize,
        answered: usize,
    },
    /// The rewind's assistant node, left for the decoder to find by its open call.
    Inferred {
        parallel: usize,
        answered: usize,
    },
}

#[derive(Debug, Clone)]
struct Case {
    steps: Vec<Step>,
    current: Current,
    /// With a current step: the results of the last earlier step with results arrive after the
    /// current node (an asynchronous tool), so that step can only be folded with them.
    late: bool,
    anchor_mode: u8,
    anchor_pick: u32,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u32..120).prop_map(Step::User),
        1 => Just(Step::Other),
        10 => (
            prop_oneof![1 => Just(0usize), 4 => Just(1), 2 => Just(2), 1 => 3usize..=4],
            prop::array::uniform4(any::<u8>()),
            prop::array::uniform4(prop::bool::weighted(0.08)),
            any::<bool>(),
            prop_oneof![1 => Just(0u32), 6 => 1u32..400],
        )
            .prop_map(|(calls, order, missing, call_events, chars)| Step::Assistant {
                calls,
                order,
                missing,
                call_events,
                chars
            }),
        1 => any::<bool>().prop_map(|via_log_event| Step::Orphan { via_log_event }),
        2 => (1u32..4).prop_map(Step::LogOnly),
        2 => (any::<usize>(), any::<usize>(), prop::bool::weighted(0.8))
            .prop_map(|(a, b, aligned)| Step::Compact { a, b, aligned }),
    ]
}

fn current() -> impl Strategy<Value = Current> {
    prop_oneof![
        1 => Just(Current::Absent),
        2 => (0usize..3, 0usize..3).prop_map(|(parallel, answered)| Current::Explicit { parallel, answered }),
        1 => (0usize..3, 0usize..3).prop_map(|(parallel, answered)| Current::Inferred { parallel, answered }),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(step(), 0..24),
        current(),
        prop::bool::weighted(0.15),
        0u8..4,
        any::<u32>(),
    )
        .prop_map(|(steps, current, late, anchor_mode, anchor_pick)| Case {
            steps,
            current,
            late,
            anchor_mode,
            anchor_pick,
        })
}

fn node(seq: u32, kind: Kind, chars: u32) -> Node {
    Node::new(seq, kind, chars)
}

/// A surface as a host would snapshot it.
#[derive(Debug)]
struct Built {
    event_count: u32,
    current: Option<u32>,
    nodes: Vec<Node>,
}

/// Splits a flat run of nodes into steps: each non-result node starts one.
fn regroup(nodes: Vec<Node>) -> Vec<Vec<Node>> {
    let mut groups: Vec<Vec<Node>> = Vec::new();
    for n in nodes {
        match groups.last_mut() {
            Some(g) if n.kind == Kind::ToolResult => g.push(n),
            _ => groups.push(vec![n]),
        }
    }
    groups
}

fn replacement_of(run: &[Node], seq: u32) -> Node {
    Node {
        origin: run.iter().map(|n| n.origin).min().expect("a non-empty run"),
        ..node(seq, Kind::User, 40)
    }
}

fn assistant_step(
    next: &mut u32,
    calls: usize,
    order: [u8; 4],
    missing: [bool; 4],
    call_events: bool,
    chars: u32,
) -> Vec<Node> {
    let seq = *next;
    *next += 1;
    let mut group = vec![Node {
        opens: calls as u32,
        ..node(seq, Kind::Assistant, chars)
    }];
    if call_events {
        *next += calls as u32;
    }
    let mut idx: Vec<usize> = (0..calls).collect();
    idx.sort_by_key(|&i| order[i]);
    for i in idx.into_iter().filter(|&i| !missing[i]) {
        group.push(Node {
            opener: Some(seq),
            ..node(*next, Kind::ToolResult, chars / 2 + i as u32)
        });
        *next += 1;
    }
    group
}

fn build(case: &Case) -> Built {
    let mut next = 0u32;
    let mut groups: Vec<Vec<Node>> = Vec::new();
    for step in &case.steps {
        match *step {
            Step::User(chars) => {
                groups.push(vec![node(next, Kind::User, chars)]);
                next += 1;
            }
            Step::Other => {
                groups.push(vec![node(next, Kind::Other, 3)]);
                next += 1;
            }
            Step::Assistant {
                calls,
                order,
                missing,
                call_events,
                chars,
            } => groups.push(assistant_step(&mut next, calls, order, missing, call_events, chars)),
            Step::Orphan { via_log_event } => {
                let opener = via_log_event.then(|| {
                    next += 1;
                    next - 1
                });
                groups.push(vec![Node {
                    opener,
                    ..node(next, Kind::ToolResult, 25)
                }]);
                next += 1;
            }
            Step::LogOnly(n) => next += n,
            Step::Compact { a, b, aligned } => {
                if groups.is_empty() {
                    continue;
                }
                if aligned {
                    let i = a % groups.len();
                    let j = i + 1 + b % (groups.len() - i);
                    let run: Vec<Node> = groups[i..j].concat();
                    groups.splice(i..j, [vec![replacement_of(&run, next)]]);
                } else {
                    let mut flat = groups.concat();
                    let i = a % flat.len();
                    let mut j = i + 1 + b % (flat.len() - i).min(4);
                    // Never leave the replacement between a call and a later result of it (see
                    // `Step::Compact`): extend the run over those results, which then go with it.
                    while j < flat.len() && flat[j].opener.is_some_and(|o| flat[..i].iter().any(|n| n.seq == o)) {
                        j += 1;
                    }
                    let r = replacement_of(&flat[i..j], next);
                    flat.splice(i..j, [r]);
                    groups = regroup(flat);
                }
                next += 1;
            }
        }
    }
    let late = match case.current {
        Current::Absent => None,
        _ if !case.late => None,
        _ => groups
            .iter_mut()
            .rev()
            // A step whose group is exactly its assistant node and that node's results (an
            // unaligned compaction can leave other shapes, whose tail is not one call's answers).
            .find(|g| g[0].kind == Kind::Assistant && g.len() > 1 && g[1..].iter().all(|n| n.opener == Some(g[0].seq)))
            .map(|g| (g[0].seq, g.split_off(1).len())),
    };
    let mut nodes = groups.concat();
    let current = match case.current {
        Current::Absent => None,
        Current::Explicit { parallel, answered } | Current::Inferred { parallel, answered } => {
            // The rewind call is call 0 and never answered yet; parallel calls may be.
            let mut missing = [true; 4];
            for m in missing.iter_mut().skip(1).take(answered.min(parallel)) {
                *m = false;
            }
            let step = assistant_step(&mut next, 1 + parallel, [0, 1, 2, 3], missing, parallel > 0, 5);
            let seq = step[0].seq;
            nodes.extend(step);
            for _ in 0..late.map_or(0, |(_, n)| n) {
                nodes.push(Node {
                    opener: late.map(|(a, _)| a),
                    ..node(next, Kind::ToolResult, 60)
                });
                next += 1;
            }
            matches!(case.current, Current::Explicit { .. }).then_some(seq)
        }
    };
    // Sometimes log-only events follow (a `tool/call`, a `step/*`).
    let event_count = next + case.anchor_pick % 3;
    Built {
        event_count,
        current,
        nodes,
    }
}

fn anchor_for(case: &Case, built: &Built) -> u64 {
    let pick = case.anchor_pick as usize;
    let nodes = &built.nodes;
    let asst: Vec<&Node> = nodes.iter().filter(|n| n.kind == Kind::Assistant).collect();
    match case.anchor_mode {
        1 if !asst.is_empty() => u64::from(asst[pick % asst.len()].seq) + 1,
        2 if !nodes.is_empty() => u64::from(nodes[pick % nodes.len()].seq),
        3 if !nodes.is_empty() => u64::from(nodes[pick % nodes.len()].seq) + 1,
        _ => (pick % (built.event_count as usize + 2)) as u64,
    }
}

/// The rules, restated by brute force over surface positions.
struct Oracle<'a> {
    nodes: &'a [Node],
    anchor: u64,
    /// The current step's assistant node, or the tail.
    limit: usize,
    /// For each node: the position of the assistant node whose call it answers, when on the surface.
    opener: Vec<Option<usize>>,
}

impl<'a> Oracle<'a> {
    fn new(nodes: &'a [Node], anchor: u64, limit: usize) -> Self {
        let pos: HashMap<u32, usize> = nodes.iter().enumerate().map(|(i, n)| (n.seq, i)).collect();
        let opener = nodes
            .iter()
            .map(|n| n.opener.and_then(|o| pos.get(&o).copied()))
            .collect();
        Self {
            nodes,
            anchor,
            limit,
            opener,
        }
    }

    fn after_mark(&self, i: usize) -> bool {
        u64::from(self.nodes[i].origin) >= self.anchor
    }

    /// An answer (an assistant node without calls) or a user message that is not a replacement.
    fn stays(&self, i: usize) -> bool {
        let n = &self.nodes[i];
        match n.kind {
            Kind::Assistant => n.opens == 0,
            Kind::User => n.origin == n.seq,
            _ => false,
        }
    }

    fn is_result(&self, i: usize) -> bool {
        self.nodes[i].kind == Kind::ToolResult
    }

    fn is_orphan(&self, i: usize) -> bool {
        self.is_result(i) && self.opener[i].is_none()
    }

    /// A node after the mark the fold may leave on the surface before its start: an orphan, or
    /// the result of a call issued before the mark by a step with no other result after this one
    /// (the checkpoint's own, mid-call; the step stays whole and visible).
    fn skippable(&self, i: usize) -> bool {
        self.is_orphan(i)
            || (self.is_result(i)
                && self.opener[i].is_some_and(|p| {
                    !self.after_mark(p)
                        && (self.nodes[p].opens <= 1 || !((i + 1)..self.nodes.len()).any(|j| self.opener[j] == Some(p)))
                }))
    }

    fn first_after_mark(&self) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.after_mark(i))
    }

    /// Whether nothing can be folded because nothing but skippable results follow the mark
    /// before the current node.
    fn nothing_to_fold(&self) -> bool {
        self.first_after_mark()
            .is_none_or(|f| (f..self.limit).all(|i| self.skippable(i)))
    }

    /// Why `[s, e)` is not a region the rules allow, if it is not.
    fn invalid(&self, s: usize, e: usize) -> Option<String> {
        if s >= e {
            return Some("empty".into());
        }
        if e > self.limit {
            return Some(format!("reaches the current node or past it (limit {})", self.limit));
        }
        let inside = |p: usize| (s..e).contains(&p);
        // Pairing closure.
        for i in s..e {
            if let Some(p) = self.opener[i] {
                if !inside(p) {
                    return Some(format!("result at {i} is folded without its call at {p}"));
                }
            }
            let n = &self.nodes[i];
            if n.kind == Kind::Assistant {
                let answered = (s..e).filter(|&j| self.opener[j] == Some(i)).count() as u32;
                if answered != n.opens {
                    return Some(format!(
                        "assistant at {i} folded with {answered} of {} results",
                        n.opens
                    ));
                }
            }
        }
        // Before the mark, only a parallel step of the checkpoint (2+ calls, answered after it).
        for i in (s..e).filter(|&i| !self.after_mark(i)) {
            let step = match self.nodes[i].kind {
                Kind::Assistant => i,
                Kind::ToolResult => match self.opener[i] {
                    Some(p) => p,
                    None => return Some(format!("orphan at {i} before the mark")),
                },
                k => return Some(format!("{k:?} at {i} before the mark")),
            };
            if self.nodes[step].opens < 2 {
                return Some(format!("single-call step at {step} before the mark"));
            }
            if !(s..e).any(|j| self.opener[j] == Some(step) && self.after_mark(j)) {
                return Some(format!("step at {step} has no result after the mark in the region"));
            }
            // A step whose only result after the mark is the first node after it (the
            // checkpoint's own) is left whole, not folded.
            if self.first_after_mark().is_some_and(|f| {
                self.opener[f] == Some(step) && !((f + 1)..self.nodes.len()).any(|j| self.opener[j] == Some(step))
            }) {
                return Some(format!(
                    "step at {step} has nothing after the mark but its first result"
                ));
            }
        }
        // What came after the last tool work stays: the region never ends on it.
        if self.stays(e - 1) {
            return Some(format!(
                "ends on {:?} at {}, which stays",
                self.nodes[e - 1].kind,
                e - 1
            ));
        }
        // No foldable node after the mark is passed over at the start.
        if let Some(i) = (0..s).find(|&i| self.after_mark(i) && !self.skippable(i)) {
            return Some(format!("starts after the foldable node at {i}"));
        }
        if (s..e).all(|i| self.is_orphan(i)) {
            return Some("only orphans".into());
        }
        None
    }

    fn any_valid(&self) -> Option<(usize, usize)> {
        (0..self.limit).find_map(|s| {
            ((s + 1)..=self.limit)
                .find(|&e| self.invalid(s, e).is_none())
                .map(|e| (s, e))
        })
    }
}

/// Per node: whether its pairing is intact (a result's call is on the surface, an assistant
/// node's calls are all answered on it).
fn paired(nodes: &[Node]) -> Vec<bool> {
    let on: HashMap<u32, usize> = nodes.iter().enumerate().map(|(i, n)| (n.seq, i)).collect();
    let mut answered = vec![0u32; nodes.len()];
    for n in nodes {
        if let Some(p) = n.opener.and_then(|o| on.get(&o)) {
            answered[*p] += 1;
        }
    }
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| match n.kind {
            Kind::ToolResult => n.opener.is_some_and(|o| on.contains_key(&o)),
            Kind::Assistant => answered[i] == n.opens,
            _ => true,
        })
        .collect()
}

fn check(case: &Case) -> Result<(), TestCaseError> {
    let built = build(case);
    let words = Surface::encode(built.event_count, built.current, &built.nodes, &[]);
    let surface =
        Surface::decode(&words).map_err(|e| TestCaseError::fail(format!("generated snapshot rejected: {e}")))?;
    let nodes = &surface.nodes;
    prop_assert!(
        nodes.windows(2).all(|w| w[0].origin < w[1].origin),
        "origins rise along a realistic surface"
    );

    // The current node, found independently.
    let expected_current = match built.current {
        Some(seq) => nodes.iter().position(|n| n.seq == seq),
        None => nodes
            .iter()
            .rposition(|n| n.kind == Kind::Assistant)
            .filter(|&i| nodes[i].opens == 0 || !paired(nodes)[i]),
    };
    prop_assert_eq!(surface.current, expected_current);
    // The same snapshot claiming billions of events decodes (with a sparse index) to the same.
    let sparse = Surface::decode(&Surface::encode(u32::MAX - 1, built.current, &built.nodes, &[]))
        .map_err(|e| TestCaseError::fail(format!("huge eventCount rejected: {e}")))?;
    prop_assert_eq!((&sparse.nodes, sparse.current), (&surface.nodes, surface.current));
    let anchor = anchor_for(case, &built);
    // The end: the current node (or the tail), before the trailing run of what stays — answers
    // (assistant nodes without calls) and user messages that are not replacements — but never
    // before the first node after the mark.
    let first = nodes.iter().position(|n| u64::from(n.origin) >= anchor);
    let mut limit = surface.current.unwrap_or(nodes.len());
    while first.is_some_and(|f| limit > f) && Oracle::new(nodes, anchor, limit).stays(limit - 1) {
        limit -= 1;
    }

    let oracle = Oracle::new(nodes, anchor, limit);
    prop_assert_eq!(region::select(&sparse, anchor), region::select(&surface, anchor));
    match region::select(&surface, anchor) {
        Ok(r) => {
            let (s, e) = (r.start_pos, r.end_pos);
            prop_assert!(s < e && e <= limit, "region [{}, {}) with limit {}", s, e, limit);
            prop_assert_eq!(&r.seqs, &nodes[s..e].iter().map(|n| n.seq).collect::<Vec<_>>());
            prop_assert_eq!(
                r.folded_chars,
                nodes[s..e].iter().map(|n| u64::from(n.chars)).sum::<u64>()
            );
            if let Some(why) = oracle.invalid(s, e) {
                return Err(TestCaseError::fail(format!("region [{s}, {e}) breaks a rule: {why}")));
            }
            // The last closed cut: no longer region from the same start is allowed.
            if let Some(longer) = ((e + 1)..=limit).find(|&e2| oracle.invalid(s, e2).is_none()) {
                return Err(TestCaseError::fail(format!(
                    "region [{s}, {e}) stops short of the allowed [{s}, {longer})"
                )));
            }
            // Fold it: everything that was protocol-valid stays so.
            let report = Node {
                origin: nodes[s..e].iter().map(|n| n.origin).min().unwrap(),
                ..node(built.event_count, Kind::User, 9)
            };
            let after: Vec<Node> = nodes[..s]
                .iter()
                .copied()
                .chain([report])
                .chain(nodes[e..].iter().copied())
                .collect();
            let (before_ok, after_ok) = (paired(nodes), paired(&after));
            for i in (0..nodes.len()).filter(|i| !(s..e).contains(i)) {
                let j = if i < s { i } else { i - (e - s) + 1 };
                prop_assert!(
                    !before_ok[i] || after_ok[j],
                    "node {} (seq {}) lost its pairing in the fold",
                    i,
                    nodes[i].seq
                );
            }
            prop_assert!(after_ok[s], "the report node is valid");
            prop_assert!(region::still_matches(&surface, anchor, &r.seqs));
        }
        Err(err) => {
            if let Some((s, e)) = oracle.any_valid() {
                return Err(TestCaseError::fail(format!(
                    "{} ({err}) but [{s}, {e}) could be folded",
                    err.code()
                )));
            }
            let nothing = oracle.nothing_to_fold();
            match err.code() {
                "EMPTY_REGION" => {
                    prop_assert!(nothing, "EMPTY_REGION with foldable nodes after the mark");
                    let expected = if oracle.first_after_mark().is_some() {
                        NOTHING_BEFORE_REWIND
                    } else {
                        NOTHING_AFTER_MARK
                    };
                    prop_assert_eq!(err.to_string(), expected);
                }
                "UNBALANCED" => prop_assert!(!nothing, "UNBALANCED where EMPTY_REGION is due"),
                other => return Err(TestCaseError::fail(format!("unexpected {other}: {err}"))),
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn select_obeys_the_rules_on_realistic_surfaces(case in case()) {
        check(&case)?;
    }
}

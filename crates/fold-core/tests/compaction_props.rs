//! Properties of the compaction policy over random agent sessions: the replace leaves every
//! call with its result, the items partition the range in order, user messages and model-written
//! text are carried (verbatim, or a long paste cut by the rule) whenever nothing had to degrade,
//! the retained tail keeps its budget, and an active exploration or an open block is split only
//! when no other range relieves the pressure.

use fold_core::compaction::{plan, plan_at, CompactionNode, CompactionSurface, Params, Source, Treatment, Trigger};
use fold_core::surface::Kind;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Step {
    User(u32),
    Replacement(u8, u32),
    Work { calls: u32, result: u32, block: u8 },
    Say(u32),
    Mark,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (50u32..9000).prop_map(Step::User),
        1 => (0u8..4, 200u32..6000).prop_map(|(k, c)| Step::Replacement(k, c)),
        6 => (0u32..4, 10u32..8000, 0u8..4).prop_map(|(calls, result, block)| Step::Work { calls, result, block }),
        2 => (20u32..800).prop_map(Step::Say),
        1 => Just(Step::Mark),
    ]
}

/// The surface the steps make; the last work step's calls may still be open.
fn build(steps: &[Step], open_tail: bool) -> CompactionSurface {
    let mut nodes = Vec::new();
    let mut sets: Vec<Vec<u32>> = Vec::new();
    let mut anchors = Vec::new();
    let mut seq = 0u32;
    let last_work = steps
        .iter()
        .rposition(|s| matches!(s, Step::Work { calls, .. } if *calls > 0));
    for (i, s) in steps.iter().enumerate() {
        match *s {
            Step::User(chars) => {
                nodes.push(CompactionNode::new(seq, Kind::User, Source::User, chars / 4 + 8, chars));
                seq += 1;
            }
            Step::Replacement(k, chars) => {
                let source = [
                    Source::RewindReport,
                    Source::BlockSummary,
                    Source::CompactionSummary,
                    Source::ForeignSummary,
                ][k as usize];
                let mut node = CompactionNode::new(seq, Kind::User, source, chars / 4 + 8, chars);
                node.origin = nodes.first().map_or(seq, |n: &CompactionNode| n.origin.min(seq));
                if source == Source::BlockSummary {
                    sets.push(vec![u32::from(k) + 7]);
                    node.set = Some(sets.len() as u32 - 1);
                }
                nodes.push(node);
                seq += 1;
            }
            Step::Work { calls, result, block } => {
                let opener = seq;
                let mut a = CompactionNode::new(seq, Kind::Assistant, Source::Work, 40, 160);
                a.opens = calls;
                if block > 0 {
                    sets.push(vec![u32::from(block)]);
                    a.set = Some(sets.len() as u32 - 1);
                }
                nodes.push(a);
                seq += 1;
                let answered = if open_tail && Some(i) == last_work {
                    calls - 1
                } else {
                    calls
                };
                for _ in 0..answered {
                    let mut r = CompactionNode::new(seq, Kind::ToolResult, Source::Work, result / 4 + 8, result);
                    r.opener = Some(opener);
                    nodes.push(r);
                    seq += 1;
                }
            }
            Step::Say(chars) => {
                nodes.push(CompactionNode::new(
                    seq,
                    Kind::Assistant,
                    Source::Work,
                    chars / 4 + 8,
                    chars,
                ));
                seq += 1;
            }
            Step::Mark => anchors.push(seq),
        }
    }
    CompactionSurface::new(seq, anchors, nodes, sets).expect("a valid surface")
}

fn params() -> impl Strategy<Value = (u8, u64, u64, u64, u32)> {
    (0u8..3, 10u64..95, 0u64..40, 500u64..9000, 500u32..6000)
}

fn to_params(
    s: &CompactionSurface,
    (t, threshold_pct, retain_pct, max_summary, paste): (u8, u64, u64, u64, u32),
) -> Params {
    let total = s.nodes.iter().map(|n| u64::from(n.tokens)).sum::<u64>() + 300;
    Params {
        trigger: [Trigger::Pressure, Trigger::Overflow, Trigger::Manual][t as usize],
        total_tokens: total,
        threshold_tokens: total * threshold_pct / 100,
        retain_tokens: total * retain_pct / 100,
        max_summary_tokens: max_summary,
        paste_chars: paste,
        // The train of thought (rule 7) at its plugin defaults, or none on every other case.
        intent_chars: if paste % 2 == 0 { 1500 } else { 0 },
        names_chars: if paste % 2 == 0 { 500 } else { 0 },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn plans_keep_pairs_items_and_verbatim_text(steps in prop::collection::vec(step(), 2..60), open_tail: bool, p in params()) {
        let s = build(&steps, open_tail);
        let params = to_params(&s, p);
        let Some(plan) = plan(&s, &params) else { return Ok(()) };
        let c = plan.end_pos;
        prop_assert!(c >= 1 && c < s.nodes.len());
        // Every call on the surface after the replace has its result, and every result its call.
        let inside: std::collections::HashSet<u32> = s.nodes[..c].iter().map(|n| n.seq).collect();
        for n in &s.nodes {
            if let Some(opener) = n.opener {
                prop_assert_eq!(inside.contains(&opener), inside.contains(&n.seq), "result {} split from its call {}", n.seq, opener);
            }
            if n.kind == Kind::Assistant && inside.contains(&n.seq) {
                let answered = s.nodes.iter().filter(|r| r.opener == Some(n.seq)).count() as u32;
                prop_assert_eq!(answered, n.opens, "an open call was compacted");
            }
        }
        prop_assert_eq!(plan.seqs.clone(), s.nodes[..c].iter().map(|n| n.seq).collect::<Vec<_>>());
        // The items partition the range in order; verbatim sources stand alone; work runs are maximal.
        let mut at = 0;
        for (k, item) in plan.items.iter().enumerate() {
            prop_assert_eq!(item.start_pos, at);
            prop_assert!(item.end_pos > item.start_pos);
            for n in &s.nodes[item.start_pos..item.end_pos] {
                prop_assert_eq!(n.source, item.source);
            }
            if item.source != Source::Work {
                prop_assert_eq!(item.end_pos - item.start_pos, 1);
            } else if k > 0 {
                prop_assert_ne!(plan.items[k - 1].source, Source::Work);
            }
            at = item.end_pos;
            if plan.degraded == 0 {
                match item.source {
                    Source::User => {
                        let long = item.chars > u64::from(params.paste_chars);
                        let cut = matches!(item.treatment, Treatment::Cut { head: _, tail: _ });
                        prop_assert!(if long { cut } else { item.treatment == Treatment::Verbatim }, "user item {:?}", item);
                    }
                    Source::Work => {
                        let condensed = matches!(item.treatment, Treatment::Condense { max_chars: _ });
                        prop_assert!(condensed, "work item {:?}", item);
                    }
                    _ => prop_assert_eq!(item.treatment, Treatment::Verbatim),
                }
            }
        }
        prop_assert_eq!(at, c);
        // The train of thought (rule 7): within its caps, and only for a range with live work.
        let th = plan.thought;
        prop_assert!(th.intent_chars <= params.intent_chars && th.names_chars <= params.names_chars);
        prop_assert!(u64::from(th.state_chars) <= fold_core::compaction::STATE_CHARS);
        let live_work = plan.items.iter().any(|i| i.source == Source::Work && i.treatment != Treatment::Pointer);
        prop_assert!(live_work || th.total() == 0, "a thought without work: {:?}", th);
        let tail: u64 = s.nodes[c..].iter().map(|n| u64::from(n.tokens)).sum();
        if params.trigger == Trigger::Pressure {
            prop_assert!(tail >= params.retain_tokens);
            // Work in progress is split only when no range that keeps it whole relieves the pressure.
            if plan.splits.in_progress() {
                for c2 in 1..s.nodes.len() {
                    let keeps = s.nodes[c2..].iter().map(|n| u64::from(n.tokens)).sum::<u64>() >= params.retain_tokens;
                    if let Some(other) = plan_at(&s, &params, c2).filter(|_| keeps) {
                        prop_assert!(
                            other.splits.in_progress() || other.degraded > 0 || !other.relieves,
                            "cut {} keeps work in progress whole and relieves, but {} was chosen", c2, c
                        );
                    }
                }
            }
            // A plan that relieves without degrading stays within its budget and the threshold.
            if plan.relieves {
                prop_assert!(plan.projected_tokens < params.threshold_tokens);
            }
        }
    }

    #[test]
    fn snapshots_round_trip(steps in prop::collection::vec(step(), 1..40), open_tail: bool) {
        let s = build(&steps, open_tail);
        let back = CompactionSurface::decode(&s.encode()).unwrap();
        prop_assert_eq!(back.nodes, s.nodes);
        prop_assert_eq!(back.sets, s.sets);
    }
}

//! The compaction policy's rules (crates/fold-core/src/compaction/mod.rs), one behaviour per test, on
//! surfaces built step by step as an agent loop appends them.

use fold_core::compaction::{
    plan, plan_at, CompactionNode, CompactionSurface, MirrorOverlay, Params, Source, Treatment, Trigger,
};
use fold_core::surface::Kind;
use fold_core::wire::COMPACTION_FORMAT as FORMAT;

/// Builds a surface the way the agent loop appends it; every node costs `tokens` unless told.
#[derive(Default)]
struct Build {
    nodes: Vec<CompactionNode>,
    sets: Vec<Vec<u32>>,
    anchors: Vec<u32>,
    seq: u32,
}

impl Build {
    fn next(&mut self) -> u32 {
        let s = self.seq;
        self.seq += 1;
        s
    }

    fn user(mut self, chars: u32) -> Self {
        let seq = self.next();
        self.nodes
            .push(CompactionNode::new(seq, Kind::User, Source::User, chars / 4 + 8, chars));
        self
    }

    fn replacement(mut self, source: Source, chars: u32) -> Self {
        let seq = self.next();
        let mut node = CompactionNode::new(seq, Kind::User, source, chars / 4 + 8, chars);
        node.origin = self.nodes.first().map_or(seq, |n| n.origin.min(seq));
        self.nodes.push(node);
        self
    }

    /// One step: an assistant message with `calls` calls (tagged with `blocks`), then their
    /// results of `result_chars` each; `answered` of them answered.
    fn step_in(mut self, calls: u32, answered: u32, result_chars: u32, blocks: &[u32]) -> Self {
        let seq = self.next();
        let mut a = CompactionNode::new(seq, Kind::Assistant, Source::Work, 40, 160);
        a.opens = calls;
        if !blocks.is_empty() {
            self.sets.push(blocks.to_vec());
            a.set = Some(self.sets.len() as u32 - 1);
        }
        self.nodes.push(a);
        for _ in 0..answered {
            let r = self.next();
            let mut node = CompactionNode::new(r, Kind::ToolResult, Source::Work, result_chars / 4 + 8, result_chars);
            node.opener = Some(seq);
            self.nodes.push(node);
        }
        self
    }

    fn step(self, calls: u32, result_chars: u32) -> Self {
        self.step_in(calls, calls, result_chars, &[])
    }

    fn say(mut self, chars: u32) -> Self {
        let seq = self.next();
        self.nodes.push(CompactionNode::new(
            seq,
            Kind::Assistant,
            Source::Work,
            chars / 4 + 8,
            chars,
        ));
        self
    }

    /// A checkpoint mark taken now (its anchor: the log length, i.e. the next seq).
    fn mark(mut self) -> Self {
        self.anchors.push(self.seq);
        self
    }

    fn surface(self) -> CompactionSurface {
        CompactionSurface::new(self.seq, self.anchors, self.nodes, self.sets).expect("valid surface")
    }
}

fn total(s: &CompactionSurface) -> u64 {
    s.nodes.iter().map(|n| u64::from(n.tokens)).sum::<u64>() + 500
}

fn pressure(s: &CompactionSurface, threshold: u64, retain: u64) -> Params {
    Params {
        trigger: Trigger::Pressure,
        total_tokens: total(s),
        threshold_tokens: threshold,
        retain_tokens: retain,
        max_summary_tokens: 8192,
        paste_chars: 4000,
        intent_chars: 0,
        names_chars: 0,
    }
}

/// A long session: `turns` user prompts, each with `steps` steps of 2 calls.
fn session(turns: usize, steps: usize) -> Build {
    let mut b = Build::default();
    for _ in 0..turns {
        b = b.user(300);
        for _ in 0..steps {
            b = b.step(2, 4000);
        }
        b = b.say(400);
    }
    b
}

#[test]
fn snapshot_round_trips_and_rejects_bad_words() {
    let s = session(2, 3).mark().step(1, 100).surface();
    let words = s.encode();
    let back = CompactionSurface::decode(&words).expect("decodes");
    assert_eq!(back.nodes, s.nodes);
    assert_eq!(back.anchors, s.anchors);
    let code = |w: &[u32]| CompactionSurface::decode(w).unwrap_err().code();
    let mut wrong = words.clone();
    wrong[0] = FORMAT + 1;
    assert_eq!(code(&wrong), "INVALID_ARGUMENT");
    let mut flags = words.clone();
    flags[2] = 1;
    assert_eq!(code(&flags), "INVALID_ARGUMENT");
    assert_eq!(code(&words[..words.len() - 1]), "INVALID_ARGUMENT");
    // A tool result claiming to be a rewind report.
    let mut b = Build::default().step(1, 10);
    b.nodes[1].source = Source::RewindReport;
    assert!(CompactionSurface::new(b.seq, vec![], b.nodes, b.sets).is_err());
}

#[test]
fn no_plan_without_a_tail_or_a_useful_range() {
    let one = Build::default().user(100).surface();
    assert_eq!(plan(&one, &pressure(&one, 10, 0)), None);
    // Only an open call after the prompt: no valid cut keeps the tail.
    let open = Build::default().user(100).step_in(1, 0, 0, &[]).surface();
    assert_eq!(plan(&open, &pressure(&open, 10, 0)), None);
}

#[test]
fn every_call_keeps_its_result_and_the_tail_keeps_its_budget() {
    let s = session(6, 5).surface();
    let p = plan(&s, &pressure(&s, 20_000, 3_000)).expect("a plan");
    assert!(s.valid_cuts()[p.end_pos]);
    let tail: u64 = s.nodes[p.end_pos..].iter().map(|n| u64::from(n.tokens)).sum();
    assert!(tail >= 3_000, "tail {tail}");
    assert!(p.relieves, "{p:?}");
    // Results of a call inside the range are inside it too.
    for (i, n) in s.nodes.iter().enumerate() {
        if let Some(opener) = n.opener {
            let p_inside = s.nodes[..p.end_pos].iter().any(|m| m.seq == opener);
            assert_eq!(p_inside, i < p.end_pos);
        }
    }
}

#[test]
fn ends_on_the_models_lines_not_on_a_prompt_whose_answer_stays() {
    let s = session(6, 5).surface();
    let p = plan(&s, &pressure(&s, 20_000, 3_000)).expect("a plan");
    assert_ne!(s.nodes[p.end_pos - 1].source, Source::User);
    assert!(!p.splits.any());
}

#[test]
fn never_inside_an_active_exploration_when_an_earlier_range_relieves() {
    // Four finished turns, then a checkpoint and an exploration still going on.
    let s = session(4, 4)
        .user(200)
        .mark()
        .step(1, 3000)
        .step(2, 4000)
        .step(1, 4000)
        .surface();
    let params = pressure(&s, total(&s) - 2_000, 2_500);
    let p = plan(&s, &params).expect("a plan");
    assert!(!p.splits.active_exploration, "{p:?}");
    assert!(p.relieves);
    // The latest valid cut within the retention is inside the exploration: basic would cut there.
    let inside = (1..s.nodes.len())
        .rev()
        .find(|&c| s.valid_cuts()[c] && s.nodes[c..].iter().map(|n| u64::from(n.tokens)).sum::<u64>() >= 2_500)
        .unwrap();
    assert!(plan_at(&s, &params, inside).unwrap().splits.active_exploration);
}

#[test]
fn splits_an_exploration_only_when_nothing_else_relieves() {
    // The exploration holds almost everything: only a cut inside it relieves.
    let s = Build::default()
        .user(200)
        .mark()
        .step(1, 100)
        .step(2, 8000)
        .step(2, 8000)
        .step(2, 8000)
        .step(1, 400)
        .surface();
    let p = plan(&s, &pressure(&s, total(&s) - 1_000, 300)).expect("a plan");
    assert!(p.splits.active_exploration);
    assert!(p.relieves);
}

#[test]
fn open_blocks_are_not_split_and_closed_blocks_go_whole() {
    // Block 1 closed (interleaved with block 2, whose program is still running at the tail).
    let s = Build::default()
        .user(200)
        .step_in(1, 1, 6000, &[1])
        .step_in(1, 1, 6000, &[1])
        .say(300)
        .step_in(1, 1, 6000, &[2])
        .step_in(1, 1, 6000, &[2])
        .step_in(1, 1, 6000, &[1])
        .say(300)
        .step_in(1, 1, 500, &[2])
        .step_in(1, 0, 0, &[2])
        .surface();
    let p = plan(&s, &pressure(&s, total(&s) - 1_500, 200)).expect("a plan");
    // Every cut after block 2 began is inside it; every one before is inside block 1: the closed one is cut.
    assert!(!p.splits.open_block, "{p:?}");
    assert!(p.splits.closed_block, "{p:?}");

    // Two closed blocks one after the other, then block 4 in progress: the range takes block 1
    // whole, not half of block 3, though a cut inside block 3 is later and relieves too.
    let s = Build::default()
        .user(200)
        .step_in(1, 1, 6000, &[1])
        .step_in(1, 1, 6000, &[1])
        .say(300)
        .step_in(1, 1, 6000, &[3])
        .step_in(1, 1, 6000, &[3])
        .step_in(1, 1, 6000, &[3])
        .user(100)
        .step_in(1, 1, 300, &[4])
        .surface();
    let params = pressure(&s, total(&s) - 2_000, 2_000);
    let p = plan(&s, &params).expect("a plan");
    assert!(!p.splits.any(), "{p:?}");
    assert_eq!(p.end_pos, 6);
    let inside = plan_at(&s, &params, 10).unwrap();
    assert!(inside.relieves && inside.splits.closed_block && !inside.splits.open_block);
}

#[test]
fn the_block_being_worked_in_is_open_though_every_call_is_answered() {
    // At a step boundary every call has its result; block 2 is still the one in progress.
    let s = Build::default()
        .user(200)
        .step_in(3, 3, 6000, &[1])
        .say(200)
        .step_in(1, 1, 6000, &[2])
        .step_in(1, 1, 6000, &[2])
        .step_in(1, 1, 6000, &[2])
        .surface();
    let params = pressure(&s, total(&s) - 2_000, 1_000);
    let p = plan(&s, &params).expect("a plan");
    assert!(!p.splits.open_block, "{p:?}");
    assert_eq!(p.end_pos, 6);
    assert!(plan_at(&s, &params, 8).unwrap().splits.open_block);
}

#[test]
fn model_written_text_is_carried_and_tool_work_condensed() {
    let s = Build::default()
        .replacement(Source::ForeignSummary, 2000)
        .user(300)
        .step(2, 6000)
        .replacement(Source::RewindReport, 1200)
        .step(1, 6000)
        .replacement(Source::BlockSummary, 800)
        .user(9000)
        .step(2, 6000)
        .say(200)
        .user(100)
        .step(1, 200)
        .surface();
    let p = plan(&s, &pressure(&s, total(&s) - 3_000, 100)).expect("a plan");
    assert_eq!(p.degraded, 0);
    for item in &p.items {
        match (item.source, item.treatment) {
            (Source::Work, Treatment::Condense { max_chars }) => assert!(u64::from(max_chars) < item.chars),
            (Source::User, Treatment::Cut { head, tail }) => {
                assert!(item.chars > 4000);
                assert_eq!(head + tail, 4000);
            }
            (source, Treatment::Verbatim) => assert_ne!(source, Source::Work),
            other => panic!("unexpected {other:?}"),
        }
    }
    let kinds: Vec<Source> = p.items.iter().map(|i| i.source).collect();
    assert_eq!(
        &kinds[..7],
        [
            Source::ForeignSummary,
            Source::User,
            Source::Work,
            Source::RewindReport,
            Source::Work,
            Source::BlockSummary,
            Source::User
        ]
    );
}

#[test]
fn over_budget_earlier_summaries_become_pointers_first() {
    let s = Build::default()
        .replacement(Source::CompactionSummary, 20_000)
        .user(400)
        .replacement(Source::RewindReport, 3000)
        .step(2, 8000)
        .step(2, 8000)
        .say(100)
        .user(50)
        .step(1, 100)
        .surface();
    let mut params = pressure(&s, total(&s) - 4_000, 50);
    params.max_summary_tokens = 2_000;
    let p = plan(&s, &params).expect("a plan");
    assert!(p.degraded >= 1);
    let of = |src: Source| p.items.iter().find(|i| i.source == src).unwrap().treatment;
    assert_eq!(of(Source::CompactionSummary), Treatment::Pointer);
    assert_eq!(of(Source::User), Treatment::Verbatim);
    assert!(p.summary_tokens <= 2_000 + 50, "{p:?}");
}

#[test]
fn overflow_reduces_as_far_as_it_can_and_keeps_the_newest_unit() {
    let s = session(3, 3).step(3, 500).surface();
    let p = plan(
        &s,
        &Params {
            trigger: Trigger::Overflow,
            total_tokens: total(&s),
            threshold_tokens: 0,
            retain_tokens: 0,
            max_summary_tokens: 8192,
            paste_chars: 4000,
            intent_chars: 0,
            names_chars: 0,
        },
    )
    .expect("a plan");
    // The last step (an assistant node and its three results) stays.
    assert_eq!(p.end_pos, s.nodes.len() - 4);
}

#[test]
fn manual_compaction_prefers_a_clean_cut() {
    let s = session(3, 3).user(100).mark().step(1, 3000).step(1, 3000).surface();
    let p = plan(
        &s,
        &Params {
            trigger: Trigger::Manual,
            total_tokens: total(&s),
            threshold_tokens: 0,
            retain_tokens: 0,
            max_summary_tokens: 8192,
            paste_chars: 4000,
            intent_chars: 0,
            names_chars: 0,
        },
    )
    .expect("a plan");
    assert!(!p.splits.any());
    assert_ne!(s.nodes[p.end_pos - 1].source, Source::User);
}

#[test]
fn a_range_that_cannot_shrink_is_not_planned() {
    // Only an earlier summary and a tiny step: carrying the summary cannot be smaller.
    let s = Build::default()
        .replacement(Source::CompactionSummary, 4000)
        .step(1, 10)
        .say(10)
        .surface();
    let manual = Params {
        trigger: Trigger::Manual,
        total_tokens: total(&s),
        threshold_tokens: 0,
        retain_tokens: 0,
        max_summary_tokens: 8192,
        paste_chars: 4000,
        intent_chars: 0,
        names_chars: 0,
    };
    assert_eq!(plan(&s, &manual), None);
    // Nor under pressure, though a pointer would be smaller: only the earlier summary fits before
    // the newest unit, and writing it again could only lose what it carries.
    let s = Build::default()
        .replacement(Source::CompactionSummary, 4000)
        .step(1, 9000)
        .surface();
    assert_eq!(plan(&s, &pressure(&s, 100, 0)), None);
}

/// The same session fed to the session mirror, record by record, as the plugin feeds it.
mod from_mirror {
    use super::*;
    use fold_core::compaction::CompactionSurface;
    use fold_core::mirror::{Mirror, RecordBuilder, Source as M};
    use fold_core::surface::BlockId;

    fn push(m: &mut Mirror, b: RecordBuilder, sources: &[u32]) {
        let mut words = Vec::new();
        b.write(sources, &mut words);
        m.push(&words).unwrap();
    }

    fn rec(seq: u32, kind: Kind, chars: u32) -> RecordBuilder {
        RecordBuilder {
            chars,
            tokens: Some(chars / 4 + 8),
            ..RecordBuilder::append(seq, kind)
        }
    }

    #[test]
    fn the_mirror_and_the_snapshot_give_the_same_plan() {
        // user; block A: assistant + result, twice; a rewind report over an earlier span is not
        // needed here: a log-only event, a prompt, block B in progress.
        let mut m = Mirror::new();
        let a = m.intern(&[BlockId::from("A")]);
        let b = m.intern(&[BlockId::from("B")]);
        push(
            &mut m,
            RecordBuilder {
                source: M::User,
                ..rec(0, Kind::User, 200)
            },
            &[],
        );
        push(
            &mut m,
            RecordBuilder {
                link: 1,
                ids: a,
                ..rec(1, Kind::Assistant, 160)
            },
            &[],
        );
        push(
            &mut m,
            RecordBuilder {
                link: 2,
                ..rec(2, Kind::ToolResult, 8000)
            },
            &[],
        );
        push(
            &mut m,
            RecordBuilder {
                link: 1,
                ids: a,
                ..rec(3, Kind::Assistant, 160)
            },
            &[],
        );
        push(
            &mut m,
            RecordBuilder {
                link: 4,
                ..rec(4, Kind::ToolResult, 8000)
            },
            &[],
        );
        push(&mut m, RecordBuilder::log(5, 0), &[]);
        push(
            &mut m,
            RecordBuilder {
                source: M::User,
                ..rec(6, Kind::User, 100)
            },
            &[],
        );
        push(
            &mut m,
            RecordBuilder {
                link: 1,
                ids: b,
                ..rec(7, Kind::Assistant, 160)
            },
            &[],
        );
        push(
            &mut m,
            RecordBuilder {
                link: 8,
                ..rec(8, Kind::ToolResult, 8000)
            },
            &[],
        );
        let mirrored = CompactionSurface::from_mirror(&m, vec![], &MirrorOverlay::default()).expect("described");

        let built = Build::default()
            .user(200)
            .step_in(1, 1, 8000, &[0])
            .step_in(1, 1, 8000, &[0]);
        let mut built = Build {
            seq: built.seq + 1,
            ..built
        }
        .user(100)
        .step_in(1, 1, 8000, &[1])
        .surface();
        // The builder's assistant nodes cost 40 tokens; the mirror's are priced like any node.
        for n in &mut built.nodes {
            if n.kind == Kind::Assistant {
                n.tokens = 160 / 4 + 8;
                n.chars = 160;
            }
        }
        let built = CompactionSurface::new(built.event_count, vec![], built.nodes, built.sets).unwrap();
        // The same facts; a block set is compared by its members (the builder does not intern).
        let members = |s: &CompactionSurface| -> Vec<(CompactionNode, Option<Vec<u32>>)> {
            s.nodes
                .iter()
                .map(|n| {
                    (
                        CompactionNode { set: None, ..*n },
                        n.set.map(|k| s.sets[k as usize].clone()),
                    )
                })
                .collect()
        };
        assert_eq!(members(&mirrored), members(&built));
        let params = pressure(&built, total(&built) - 3_000, 2_000);
        let plan = plan(&mirrored, &params).expect("a plan");
        assert_eq!(Some(plan.clone()), super::plan(&built, &params));
        // Block B is the one in progress; the range ends before it, after block A whole.
        assert_eq!(plan.end_pos, 5);
        assert!(!plan.splits.any());
    }

    #[test]
    fn the_overlay_tells_our_checkpoints_and_gives_fact_sizes_and_cores() {
        let mut m = Mirror::new();
        let step = |m: &mut Mirror, seq: u32| {
            push(
                m,
                RecordBuilder {
                    link: 1,
                    ..rec(seq, Kind::Assistant, 160)
                },
                &[],
            );
            push(
                m,
                RecordBuilder {
                    link: seq + 1,
                    ..rec(seq + 1, Kind::ToolResult, 4000)
                },
                &[],
            );
        };
        let replace = |m: &mut Mirror, seq: u32, chars: u32, (a, b): (u32, u32)| {
            let r = RecordBuilder {
                op: Some(Some((a, b))),
                source: M::CompactionSummary,
                lowest_source: Some(a),
                ..rec(seq, Kind::User, chars)
            };
            push(m, r, &[a, b]);
        };
        push(
            &mut m,
            RecordBuilder {
                source: M::User,
                ..rec(0, Kind::User, 100)
            },
            &[],
        );
        step(&mut m, 1);
        replace(&mut m, 3, 3000, (1, 2));
        push(
            &mut m,
            RecordBuilder {
                source: M::User,
                ..rec(4, Kind::User, 100)
            },
            &[],
        );
        step(&mut m, 5);
        replace(&mut m, 7, 900, (5, 6));
        step(&mut m, 8);
        // A plugin's note and workspace instructions: both injected to the mirror.
        push(
            &mut m,
            RecordBuilder {
                source: M::Injected,
                ..rec(10, Kind::User, 240)
            },
            &[],
        );
        push(
            &mut m,
            RecordBuilder {
                source: M::Injected,
                ..rec(11, Kind::User, 300)
            },
            &[],
        );
        let overlay = MirrorOverlay {
            facts: &[0, 0, 0, 0, 51, 31, 0, 0],
            ours: &[3, 2000, 500],
            notes: &[10],
        };
        let s = CompactionSurface::from_mirror(&m, vec![], &overlay).expect("described");
        let at = |i: usize| s.nodes[i];
        assert_eq!(
            s.nodes.iter().map(|n| n.seq).collect::<Vec<_>>(),
            [0, 3, 4, 7, 8, 9, 10, 11]
        );
        assert_eq!((at(6).source, at(7).source), (Source::Work, Source::User));
        assert_eq!(
            (at(1).source, at(1).chars, at(1).core),
            (Source::CompactionSummary, 2000, 500)
        );
        assert_eq!(
            (at(3).source, at(3).chars, at(3).core),
            (Source::ForeignSummary, 900, 900)
        );
        assert_eq!((at(4).facts, at(5).facts, at(0).facts), (Some(50), Some(30), None));
        // The same nodes from the snapshot words: the oracle the plugin's tests compare with.
        assert_eq!(CompactionSurface::decode(&s.encode()).unwrap().nodes, s.nodes);
        let code = |facts: &[u32], ours: &[u32]| {
            CompactionSurface::from_mirror(
                &m,
                vec![],
                &MirrorOverlay {
                    facts,
                    ours,
                    notes: &[],
                },
            )
            .unwrap_err()
            .code()
        };
        // Fact sizes not one per node; not triples; a core over its chars; a user message or a
        // node off the surface listed as ours.
        assert_eq!(code(&[0, 0], &[]), "INVALID_ARGUMENT");
        assert_eq!(code(&[], &[3, 2000]), "INVALID_ARGUMENT");
        assert_eq!(code(&[], &[3, 500, 2000]), "INVALID_ARGUMENT");
        assert_eq!(code(&[], &[4, 100, 100]), "INVALID_ARGUMENT");
        assert_eq!(code(&[], &[1, 100, 100]), "INVALID_ARGUMENT");
    }

    #[test]
    fn an_out_of_step_mirror_is_refused() {
        let mut m = Mirror::new();
        push(&mut m, rec(0, Kind::User, 10), &[]);
        let mut words = Vec::new();
        rec(5, Kind::User, 10).write(&[], &mut words);
        assert!(m.push(&words).is_err());
        assert_eq!(
            CompactionSurface::from_mirror(&m, vec![], &MirrorOverlay::default())
                .unwrap_err()
                .code(),
            "INVALID_ARGUMENT"
        );
    }
}

/// Sets the fact chars of every work node from position `from` on.
fn with_facts(mut b: Build, from: usize, facts: u32) -> Build {
    for n in &mut b.nodes[from..] {
        if n.source == Source::Work {
            n.facts = Some(facts);
        }
    }
    b
}

#[test]
fn snapshot_carries_fact_sizes_and_cores_and_rejects_them_where_they_do_not_belong() {
    let mut b = with_facts(
        Build::default()
            .replacement(Source::CompactionSummary, 9000)
            .user(200)
            .step(2, 3000),
        0,
        120,
    );
    b.nodes[0].core = 1500;
    let s = b.surface();
    let back = CompactionSurface::decode(&s.encode()).expect("decodes");
    assert_eq!(back.nodes, s.nodes);
    assert_eq!(back.nodes[0].core, 1500);
    assert_eq!(back.nodes[3].facts, Some(120));
    // A core larger than the node, a core on a user message, facts on a user message.
    let mut big = Build::default().replacement(Source::CompactionSummary, 900).step(1, 10);
    big.nodes[0].core = 901;
    assert!(CompactionSurface::new(big.seq, vec![], big.nodes, big.sets).is_err());
    let mut user = Build::default().user(900).step(1, 10);
    user.nodes[0].core = 10;
    assert!(CompactionSurface::new(user.seq, vec![], user.nodes, user.sets).is_err());
    let mut facts = Build::default().user(900).step(1, 10);
    facts.nodes[0].facts = Some(3);
    assert!(CompactionSurface::new(facts.seq, vec![], facts.nodes, facts.sets).is_err());
}

#[test]
fn an_earlier_checkpoint_yields_what_it_carried_to_the_new_works_facts() {
    // The earlier checkpoint carries 24k chars, 3k of them the user's words and headings (its
    // core); the new work's facts need ~6k chars; the budget is ~29k chars.
    let mut b = Build::default()
        .replacement(Source::CompactionSummary, 24_000)
        .user(300);
    for _ in 0..6 {
        b = b.step(2, 12_000);
    }
    b.nodes[0].core = 3_000;
    let b = with_facts(b, 2, 450).say(200).user(100).step(1, 200);
    let s = b.surface();
    let mut params = pressure(&s, total(&s) - 20_000, 100);
    params.max_summary_tokens = 8_192;
    let p = plan(&s, &params).expect("a plan");
    let work: Vec<u32> = p
        .items
        .iter()
        .filter_map(|i| match i.treatment {
            Treatment::Condense { max_chars } => Some(max_chars),
            _ => None,
        })
        .collect();
    let facts_need = 18 * 450 + 320; // 6 steps of 3 work nodes at 450 chars, and the skeleton
    assert!(
        work.iter().map(|&m| u64::from(m)).sum::<u64>() >= facts_need as u64,
        "{work:?}"
    );
    match p.items[0].treatment {
        Treatment::Trim { max_chars } => assert!((3_000..24_000).contains(&max_chars), "{max_chars}"),
        other => panic!("the earlier checkpoint was not trimmed: {other:?}"),
    }
    assert_eq!(p.items[1].treatment, Treatment::Verbatim, "the user's words stay");
    assert!(p.relieves);
    assert_eq!(p.degraded, 1);
    // With room for everything it is carried whole.
    let mut roomy = params;
    roomy.threshold_tokens = total(&s) + 1;
    roomy.max_summary_tokens = 100_000;
    let whole = plan(&s, &roomy).expect("a plan");
    assert_eq!(whole.items[0].treatment, Treatment::Verbatim);
}

#[test]
fn work_reports_share_a_short_budget_by_their_facts_not_their_size() {
    // A run of long file reads with few facts, then a run of short failing commands with many.
    let mut b = Build::default().user(300);
    for _ in 0..4 {
        b = b.step(1, 20_000);
    }
    b = with_facts(b, 1, 60);
    let second = b.nodes.len() + 1;
    b = b.user(200);
    for _ in 0..8 {
        b = b.step(1, 1_500);
    }
    let b = with_facts(b, second, 500).say(100).user(50).step(1, 100);
    let s = b.surface();
    let mut params = pressure(&s, total(&s) - 8_000, 50);
    params.max_summary_tokens = 2_500;
    let p = plan(&s, &params).expect("a plan");
    let condensed: Vec<(u64, u32)> = p
        .items
        .iter()
        .filter_map(|i| match i.treatment {
            Treatment::Condense { max_chars } => Some((i.chars, max_chars)),
            _ => None,
        })
        .collect();
    assert_eq!(condensed.len(), 2, "{:?}", p.items);
    let (big, small) = (condensed[0], condensed[1]);
    assert!(big.0 > 5 * small.0, "{condensed:?}");
    // The fact-dense run gets more room than the run five times its size.
    assert!(small.1 > big.1, "{condensed:?}");
    // The sparse run still gets what its facts need (8 nodes x 60 chars and the skeleton).
    assert!(big.1 >= 8 * 60 + 320, "{condensed:?}");
}

#[test]
fn compact_never_trims_an_earlier_checkpoint() {
    let mut b = Build::default().replacement(Source::CompactionSummary, 6_000).user(300);
    for _ in 0..6 {
        b = b.step(2, 12_000);
    }
    b.nodes[0].core = 1_000;
    let s = with_facts(b, 2, 450).say(200).surface();
    let mut params = pressure(&s, 0, 0);
    params.trigger = Trigger::Manual;
    let p = plan(&s, &params).expect("a plan");
    assert_eq!(p.items[0].treatment, Treatment::Verbatim);
    assert_eq!(p.degraded, 0);
}

fn with_thought(mut p: Params, intent: u32, names: u32) -> Params {
    p.intent_chars = intent;
    p.names_chars = names;
    p
}

#[test]
fn a_range_of_work_gets_room_for_the_train_of_thought_and_a_range_without_none() {
    // Rule 7: with room to spare, the caps in full (the open state at its bound).
    let s = session(2, 2).surface();
    let t = total(&s);
    let p = plan(&s, &with_thought(pressure(&s, t - 500, 3000), 1000, 400)).expect("a plan");
    assert!(p.items.iter().any(|i| i.source == Source::Work));
    assert_eq!(p.thought.intent_chars, 1000);
    assert_eq!(p.thought.names_chars, 400);
    assert_eq!(u64::from(p.thought.state_chars), fold_core::compaction::STATE_CHARS);
    // Without caps, none of it; and the same cut.
    let none = plan(&s, &pressure(&s, t - 500, 3000)).expect("a plan");
    assert_eq!(none.thought.total(), 0);
    assert_eq!(none.end_pos, p.end_pos);
    // A range with no work of the model (an earlier checkpoint and a prompt) gets none.
    let s = Build::default()
        .replacement(Source::CompactionSummary, 8000)
        .user(2000)
        .step(1, 40_000)
        .surface();
    let t = total(&s);
    let p = plan_at(&s, &with_thought(pressure(&s, t - 100, 1000), 1000, 400), 2).expect("a plan");
    assert_eq!(p.thought.total(), 0);
}

#[test]
fn the_train_of_thought_never_turns_the_users_words_into_pointers_and_yields_first() {
    // A session whose budget barely holds the user's words and the smallest reports: the train
    // of thought gets what is left, not the user's words' room.
    let mut b = Build::default();
    for _ in 0..6 {
        b = b.user(3000).step(2, 3000).say(200);
    }
    let s = b.step(1, 200).surface();
    let t = total(&s);
    for threshold in [t - 200, t - 600, t / 2] {
        let base = pressure(&s, threshold, 200);
        let (Some(without), Some(with)) = (plan(&s, &base), plan(&s, &with_thought(base, 1000, 400))) else {
            continue;
        };
        assert_eq!(with.end_pos, without.end_pos, "threshold {threshold}");
        assert_eq!(
            with.degraded, without.degraded,
            "threshold {threshold}: the thought degraded an item"
        );
        let user_pointers = |p: &fold_core::compaction::Plan| {
            p.items
                .iter()
                .filter(|i| i.source == Source::User && i.treatment == Treatment::Pointer)
                .count()
        };
        assert_eq!(user_pointers(&with), user_pointers(&without), "threshold {threshold}");
        // Its room is inside the budget: the summary's estimate is no larger than without it
        // when the budget binds, and within the budget always.
        assert!(
            with.summary_tokens <= (with.budget_chars + fold_core::compaction::FRAME_CHARS).div_ceil(4) + 8,
            "threshold {threshold}: the plan overran its budget ({} tokens, {} chars)",
            with.summary_tokens,
            with.budget_chars
        );
    }
}

#[test]
fn the_train_of_thought_takes_its_latest_words_first_when_room_is_short() {
    // Shared in proportion with the reports' facts: below the caps, the latest words are served
    // first, then the open state, then the names.
    let s = session(3, 8).surface();
    let t = total(&s);
    let mut seen_short = false;
    for threshold in (t / 3..t).step_by(((t - t / 3) / 40).max(1) as usize) {
        let Some(p) = plan(&s, &with_thought(pressure(&s, threshold, 1000), 1000, 400)) else {
            continue;
        };
        let th = p.thought;
        if th.total() == 0 {
            continue;
        }
        if th.names_chars > 0 {
            assert_eq!(u64::from(th.state_chars), fold_core::compaction::STATE_CHARS, "{th:?}");
        }
        if th.state_chars > 0 {
            assert_eq!(th.intent_chars, 1000, "{th:?}");
        }
        seen_short |= th.intent_chars < 1000 || th.names_chars < 400;
    }
    assert!(seen_short, "no threshold made the room short");
}

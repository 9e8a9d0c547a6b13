//! The fold's region rules (`region::select`), one test per rule, and the snapshot decoder's
//! validation. Surfaces are built the way a DSH session makes them: `seq` is the event's index in
//! the log (log-only events such as `tool/call` leave gaps), nodes are listed in model order, and a
//! replacement node (a compaction or an earlier fold) has a high seq and, as its origin, the
//! smallest origin of what it replaced.

use fold_core::region::{self, Region, NOTHING_AFTER_MARK, NOTHING_BEFORE_REWIND};
use fold_core::surface::{Kind, Node, Surface};
use fold_core::wire::{Report, NONE};

fn node(seq: u32, kind: Kind, chars: u32) -> Node {
    Node::new(seq, kind, chars)
}

fn user(seq: u32) -> Node {
    node(seq, Kind::User, 10)
}

/// An assistant message issuing `calls` tool calls.
fn asst(seq: u32, calls: u32) -> Node {
    Node {
        opens: calls,
        ..node(seq, Kind::Assistant, 20)
    }
}

/// A tool result answering a call of the assistant event `opener`.
fn res(seq: u32, opener: u32) -> Node {
    Node {
        opener: Some(opener),
        ..node(seq, Kind::ToolResult, 30)
    }
}

/// A tool result whose call is unknown (link 0).
fn orphan(seq: u32) -> Node {
    node(seq, Kind::ToolResult, 30)
}

/// A replacement `user/message` appended at `seq` over events starting at `origin`.
fn replacement(seq: u32, origin: u32) -> Node {
    Node {
        origin,
        ..node(seq, Kind::User, 15)
    }
}

fn event_count(nodes: &[Node]) -> u32 {
    nodes.iter().map(|n| n.seq + 1).max().unwrap_or(0)
}

fn surface_with(event_count: u32, current: Option<u32>, nodes: &[Node]) -> Surface {
    Surface::decode(&Surface::encode(event_count, current, nodes, &[])).expect("a valid snapshot")
}

fn surface(current: Option<u32>, nodes: &[Node]) -> Surface {
    surface_with(event_count(nodes), current, nodes)
}

fn select(surface: &Surface, anchor: u64) -> Region {
    region::select(surface, anchor).unwrap_or_else(|e| panic!("select failed: {} {e}", e.code()))
}

fn folded(surface: &Surface, anchor: u64) -> Vec<u32> {
    select(surface, anchor).seqs
}

fn rejected(surface: &Surface, anchor: u64) -> (&'static str, String) {
    let err = region::select(surface, anchor).expect_err("select should fail");
    (err.code(), err.to_string())
}

// ---------------------------------------------------------------------------------------------
// Region rules
// ---------------------------------------------------------------------------------------------

/// 0 user request, 1 assistant[checkpoint], 2 tool/call, (mark: logLength 3), 3 result,
/// 4 assistant[read], 5 tool/call, 6 result, 7 assistant[grep, grep], 8-9 tool/call, 10-11 results,
/// 12 assistant[rewind] (current), 13 tool/call.
fn exploration() -> Vec<Node> {
    vec![
        user(0),
        asst(1, 1),
        res(3, 1),
        asst(4, 1),
        res(6, 4),
        asst(7, 2),
        res(11, 7),
        res(10, 7),
        asst(12, 1),
    ]
}

#[test]
fn folds_the_balanced_span_after_the_anchor_up_to_the_rewind_call() {
    let s = surface_with(14, Some(12), &exploration());
    let r = select(&s, 3);
    assert_eq!(
        r.seqs,
        [4, 6, 7, 11, 10],
        "model order, the rewind's assistant node excluded"
    );
    assert_eq!((r.start_pos, r.end_pos), (3, 8));
    assert_eq!((r.start(), r.end()), (4, 10));
    assert_eq!(r.folded_chars, 20 + 30 + 20 + 30 + 30);
}

#[test]
fn the_region_starts_at_the_first_node_after_the_anchor_whatever_its_kind() {
    // A mark taken at the start of a turn: the user's next message opens the region.
    let nodes = [user(0), asst(1, 0), user(2), asst(3, 1), res(5, 3), asst(6, 1)];
    assert_eq!(folded(&surface(Some(6), &nodes), 2), [2, 3, 5]);
    // An anchor past some events but before the next node starts at that node.
    assert_eq!(folded(&surface(Some(6), &nodes), 3), [3, 5]);
}

#[test]
fn nothing_after_the_anchor_is_an_empty_region() {
    let nodes = [user(0), asst(1, 1), res(3, 1), asst(4, 0)];
    for anchor in [5, 6, 100] {
        let (code, msg) = rejected(&surface_with(5, None, &nodes), anchor);
        assert_eq!((code, msg.as_str()), ("EMPTY_REGION", NOTHING_AFTER_MARK));
    }
    // Also when a current node exists but stands before the anchor (no node is after the mark).
    let (code, msg) = rejected(&surface_with(6, Some(4), &nodes), 5);
    assert_eq!((code, msg.as_str()), ("EMPTY_REGION", NOTHING_AFTER_MARK));
    // And on an empty surface.
    let (code, msg) = rejected(&surface_with(0, None, &[]), 0);
    assert_eq!((code, msg.as_str()), ("EMPTY_REGION", NOTHING_AFTER_MARK));
}

#[test]
fn only_the_rewind_call_after_the_anchor_is_an_empty_region() {
    // The mark was taken, then the very next step rewinds.
    let nodes = [user(0), asst(1, 0), asst(2, 1)];
    let (code, msg) = rejected(&surface(Some(2), &nodes), 2);
    assert_eq!((code, msg.as_str()), ("EMPTY_REGION", NOTHING_BEFORE_REWIND));
    // The usual shape: checkpoint call, (mark), its result, then the rewind call.
    let nodes = [user(0), asst(1, 1), res(3, 1), asst(4, 1)];
    let (code, msg) = rejected(&surface(Some(4), &nodes), 3);
    assert_eq!((code, msg.as_str()), ("EMPTY_REGION", NOTHING_BEFORE_REWIND));
    // Same with the current node inferred from its open call (current = NONE).
    let (code, msg) = rejected(&surface(None, &nodes), 3);
    assert_eq!((code, msg.as_str()), ("EMPTY_REGION", NOTHING_BEFORE_REWIND));
}

#[test]
fn an_unresolved_open_call_right_after_the_mark_is_unbalanced() {
    // 4 assistant[read] never got its result (an aborted turn); the user spoke again, then rewind.
    let nodes = [user(0), asst(1, 1), res(3, 1), asst(4, 1), user(6), asst(7, 1)];
    let (code, msg) = rejected(&surface(Some(7), &nodes), 3);
    assert_eq!(code, "UNBALANCED", "{msg}");
}

#[test]
fn a_parallel_call_still_open_leaves_nothing_to_fold() {
    // The checkpoint was issued with a second call that has no result yet: only the checkpoint's
    // own result follows the mark, and it stays with its call (as in the reference).
    let nodes = [user(0), asst(1, 2), res(4, 1), asst(5, 1)];
    let (code, msg) = rejected(&surface(Some(5), &nodes), 4);
    assert_eq!((code, msg.as_str()), ("EMPTY_REGION", NOTHING_BEFORE_REWIND));
}

#[test]
fn a_call_answered_only_after_the_rewind_call_is_unbalanced() {
    // 4 assistant[read]'s result lands after the rewind's assistant node (never folded).
    let nodes = [user(0), asst(1, 1), res(3, 1), asst(4, 1), asst(6, 1), res(8, 4)];
    assert_eq!(rejected(&surface(Some(6), &nodes), 3).0, "UNBALANCED");
}

#[test]
fn an_open_call_at_the_tail_ends_the_region_at_the_last_closed_cut() {
    // 9 assistant[grep, grep] has only one result when rewind runs.
    let nodes = [
        user(0),
        asst(1, 1),
        res(3, 1),
        asst(4, 1),
        res(6, 4),
        asst(7, 0),
        asst(9, 2),
        res(11, 9),
        asst(13, 1),
    ];
    // The last closed cut falls right after 7, an assistant message without a call (an answer):
    // it stays with what follows it.
    assert_eq!(folded(&surface(Some(13), &nodes), 3), [4, 6]);
    // Without a rewind node: the open step itself is taken as current, same cut.
    assert_eq!(folded(&surface(None, &nodes[..8]), 3), [4, 6]);
    // Closed steps after the open call are not folded either: the region is contiguous.
    let mut later = nodes[..8].to_vec();
    later.extend([user(14), asst(15, 1), res(17, 15), asst(18, 1)]);
    assert_eq!(folded(&surface(Some(18), &later), 3), [4, 6]);
    // A cut that leaves only an answer before the open call folds nothing: UNBALANCED.
    let nodes = [
        user(0),
        asst(1, 1),
        res(3, 1),
        asst(4, 0),
        asst(5, 2),
        res(6, 5),
        asst(8, 1),
    ];
    assert_eq!(rejected(&surface(Some(8), &nodes), 3).0, "UNBALANCED");
}

#[test]
fn a_mark_taken_mid_call_keeps_the_checkpoint_pair_out_of_the_region() {
    // 1 assistant[checkpoint] stands before the anchor, its result 3 after it.
    let nodes = exploration();
    let r = select(&surface_with(14, Some(12), &nodes), 3);
    assert!(!r.seqs.contains(&1) && !r.seqs.contains(&3), "{:?}", r.seqs);
    assert_eq!(r.start_pos, 3);
    // With no tool/call events in between (anchor right after the call).
    let nodes = [user(0), asst(1, 1), res(2, 1), asst(3, 1), res(4, 3), asst(5, 1)];
    assert_eq!(folded(&surface(Some(5), &nodes), 2), [3, 4]);
}

#[test]
fn parallel_exploration_with_the_checkpoint_joins_the_fold_whole() {
    // 1 assistant[checkpoint, read a, read b]; (mark at 5); results 5 (checkpoint), 6, 7.
    let nodes = [
        user(0),
        asst(1, 3),
        res(5, 1),
        res(6, 1),
        res(7, 1),
        asst(8, 1),
        res(10, 8),
        asst(11, 1),
    ];
    let r = select(&surface(Some(11), &nodes), 5);
    assert_eq!(r.seqs, [1, 5, 6, 7, 8, 10], "the calls go with their results");
    assert_eq!(r.start_pos, 1);
    // The parallel step alone, right before the rewind.
    let alone = [&nodes[..5], &[asst(8, 1)]].concat();
    assert_eq!(folded(&surface(Some(8), &alone), 5), [1, 5, 6, 7]);
}

#[test]
fn a_parallel_result_that_landed_before_the_mark_stays_with_its_step() {
    // 1 assistant[read, checkpoint]: the read finished first (3), the mark (logLength 4) ran next,
    // so only the checkpoint's own result (4) follows the mark: the step stays whole and visible
    // (as in the reference), the fold starts after it.
    let nodes = [
        user(0),
        asst(1, 2),
        res(3, 1),
        res(4, 1),
        asst(5, 1),
        res(6, 5),
        asst(7, 1),
    ];
    let r = select(&surface(Some(7), &nodes), 4);
    assert_eq!(r.seqs, [5, 6]);
    assert_eq!(r.start_pos, 4);
    // With the read answered after the mark instead, the whole step joins the fold.
    let nodes = [
        user(0),
        asst(1, 2),
        res(3, 1),
        res(4, 1),
        asst(5, 1),
        res(6, 5),
        asst(7, 1),
    ];
    assert_eq!(select(&surface(Some(7), &nodes), 3).seqs, [1, 3, 4, 5, 6]);
}

#[test]
fn an_orphaned_result_then_only_the_rewind_call_is_an_empty_region() {
    // 2 is a result whose call is unknown (link 0); 4's call was event 3, not on the surface.
    for nodes in [
        vec![user(0), asst(1, 0), orphan(2), asst(3, 1)],
        vec![user(0), asst(1, 0), res(4, 3), asst(5, 1)],
    ] {
        let current = nodes.last().unwrap().seq;
        let (code, msg) = rejected(&surface(Some(current), &nodes), 2);
        assert_eq!((code, msg.as_str()), ("EMPTY_REGION", NOTHING_BEFORE_REWIND));
    }
}

#[test]
fn an_orphan_as_the_only_node_is_an_empty_region() {
    // Something follows the mark, so the reference's wording is "between": the orphan is skipped.
    for anchor in [0, 1] {
        let (code, msg) = rejected(&surface_with(2, None, &[orphan(1)]), anchor);
        assert_eq!((code, msg.as_str()), ("EMPTY_REGION", NOTHING_BEFORE_REWIND));
    }
    let (code, msg) = rejected(&surface_with(2, None, &[orphan(1)]), 2);
    assert_eq!((code, msg.as_str()), ("EMPTY_REGION", NOTHING_AFTER_MARK));
}

#[test]
fn orphans_inside_the_region_are_folded_with_it() {
    // Only leading orphans are skipped; one after real exploration goes with the fold (the
    // answer after it stays).
    let nodes = [user(0), user(2), res(4, 3), asst(5, 0), asst(6, 1)];
    assert_eq!(folded(&surface(Some(6), &nodes), 2), [2, 4]);
}

#[test]
fn a_result_whose_call_stands_before_the_start_pulls_the_start_back_to_it() {
    // Rule 5 of region.rs, on surfaces no DSH host writes (something between a call and its
    // result). A user message among a parallel step's results: the step joins whole.
    let nodes = [user(0), asst(1, 2), res(2, 1), user(3), res(4, 1), asst(5, 1)];
    assert_eq!(folded(&surface(Some(5), &nodes), 3), [1, 2, 3, 4]);
    // A replacement that shadowed one result of a two-call step stands between the step and its
    // other result: the step can no longer be balanced, so the fold refuses (UNBALANCED) rather
    // than folding the replacement alone next to a broken step.
    let nodes = [user(0), asst(1, 2), replacement(4, 2), res(3, 1), asst(5, 1)];
    assert_eq!(rejected(&surface(Some(5), &nodes), 2).0, "UNBALANCED");
}

#[test]
fn without_any_assistant_message_the_fold_runs_to_the_tail() {
    let nodes = [user(0), user(1), node(2, Kind::Other, 7), replacement(4, 3)];
    let s = surface(None, &nodes);
    assert_eq!(s.current, None);
    let r = select(&s, 1);
    assert_eq!((r.seqs.as_slice(), r.end_pos), ([1, 2, 4].as_slice(), 4));
    assert_eq!(r.folded_chars, 32);
    // Closed assistant steps and no rewind node: also to the tail.
    let nodes = [user(0), user(1), asst(2, 1), res(3, 2)];
    let s = surface(None, &nodes);
    assert_eq!(s.current, None, "the last assistant node has no open call");
    assert_eq!(folded(&s, 1), [1, 2, 3]);
}

#[test]
fn without_a_rewind_node_a_final_answer_stays() {
    // A direct rewind after the turn: the last assistant node has no tool call (the final
    // answer); the region ends before it, as in the reference.
    let nodes = [user(0), user(1), asst(2, 1), res(3, 2), asst(4, 0)];
    let s = surface(None, &nodes);
    assert_eq!(s.current, Some(4));
    assert_eq!(folded(&s, 1), [1, 2, 3]);
}

#[test]
fn an_answer_written_before_the_rewind_stays_with_what_follows_it() {
    // The turn guard's case: 1 user request, 2 assistant[checkpoint], 4 its result (mark at 3),
    // 5 assistant[read], 7 read result, 8 the answer (no tool call), 9 the guard's warning,
    // 10 assistant[rewind]. The answer and the warning stay: the model still sees it answered.
    let nodes = [
        user(1),
        asst(2, 1),
        res(4, 2),
        asst(5, 1),
        res(7, 5),
        asst(8, 0),
        user(9),
        asst(10, 1),
    ];
    let r = select(&surface(Some(10), &nodes), 3);
    assert_eq!((r.seqs.as_slice(), r.end_pos), ([5, 7].as_slice(), 5));
    // A user's new message after the last tool work stays too, and so do several answers.
    let nodes = [
        user(1),
        asst(2, 1),
        res(4, 2),
        asst(5, 1),
        res(7, 5),
        asst(8, 0),
        user(9),
        asst(11, 0),
        user(12),
        asst(13, 1),
    ];
    assert_eq!(folded(&surface(Some(13), &nodes), 3), [5, 7]);
    // An answer between two stretches of tool work is part of the investigation.
    let nodes = [
        user(1),
        asst(2, 1),
        res(4, 2),
        asst(5, 1),
        res(7, 5),
        asst(8, 0),
        user(9),
        asst(10, 1),
        res(11, 10),
        asst(12, 1),
    ];
    assert_eq!(folded(&surface(Some(12), &nodes), 3), [5, 7, 8, 9, 10, 11]);
    // Without a rewind node (a direct rewind), the same.
    let nodes = [
        user(1),
        asst(2, 1),
        res(4, 2),
        asst(5, 1),
        res(7, 5),
        asst(8, 0),
        user(9),
    ];
    assert_eq!(folded(&surface(None, &nodes), 3), [5, 7]);
}

#[test]
fn only_an_answer_after_the_mark_is_an_empty_region() {
    // The model checkpointed, answered without any tool work, then rewound: nothing to fold.
    let nodes = [user(1), asst(2, 1), res(4, 2), asst(5, 0), user(6), asst(7, 1)];
    let (code, msg) = rejected(&surface(Some(7), &nodes), 3);
    assert_eq!((code, msg.as_str()), ("EMPTY_REGION", NOTHING_BEFORE_REWIND));
}

#[test]
fn a_replacement_at_the_tail_is_folded_not_kept() {
    // An earlier report or a compaction over the investigation's tail stands for tool work.
    let nodes = [
        user(1),
        asst(2, 1),
        res(4, 2),
        asst(5, 1),
        res(7, 5),
        replacement(12, 8),
        asst(13, 1),
    ];
    assert_eq!(folded(&surface(Some(13), &nodes), 3), [5, 7, 12]);
}

#[test]
fn a_compaction_replacement_after_the_mark_does_not_pull_the_request_into_the_fold() {
    // The reference's defect: events 0 user request, 1 assistant reply, 2 assistant[checkpoint],
    // (mark: logLength 3), 3 checkpoint result, 4 assistant[read], 5 read result,
    // 6 compaction `user/message` replacing {start: 0, end: 1} (sourceEventSeqs [0, 1]),
    // 7 assistant[rewind]. Surface in model order: [6, 2, 3, 4, 5, 7].
    let nodes = [
        replacement(6, 0),
        asst(2, 1),
        res(3, 2),
        asst(4, 1),
        res(5, 4),
        asst(7, 1),
    ];
    let s = surface_with(8, Some(7), &nodes);
    assert_eq!(s.nodes.iter().map(|n| n.seq).collect::<Vec<_>>(), [6, 2, 3, 4, 5, 7]);
    // The reference picks `seq >= 3` and folds [6, 2, 3, 4, 5], the request included.
    let r = select(&s, 3);
    assert_eq!(r.seqs, [4, 5]);
    assert_eq!((r.start_pos, r.end_pos), (3, 5));
    // Same with the current node inferred from its open call.
    assert_eq!(folded(&surface_with(8, None, &nodes), 3), [4, 5]);
}

#[test]
fn a_compaction_of_the_exploration_itself_is_folded_as_one_node() {
    // Compaction after the mark shadowed 4..6 (origin 4): it stands where 4 stood and is folded.
    let nodes = [
        user(0),
        asst(1, 1),
        res(3, 1),
        replacement(13, 4),
        asst(7, 1),
        res(9, 7),
        asst(14, 1),
    ];
    assert_eq!(folded(&surface(Some(14), &nodes), 3), [13, 7, 9]);
    // A compaction straddling the anchor (origin before it) stays on the surface.
    let nodes = [user(0), replacement(13, 1), asst(7, 1), res(9, 7), asst(14, 1)];
    assert_eq!(folded(&surface(Some(14), &nodes), 3), [7, 9]);
}

#[test]
fn nodes_after_the_current_node_are_never_folded() {
    // 9 assistant[rewind, read]: the read's result 11 stands after the current node.
    let nodes = [
        user(0),
        asst(1, 1),
        res(3, 1),
        asst(4, 1),
        res(6, 4),
        asst(9, 2),
        res(11, 9),
        user(12),
    ];
    let r = select(&surface(Some(9), &nodes), 3);
    assert_eq!(r.seqs, [4, 6]);
    assert_eq!(r.end_pos, 5);
    // When only nodes after the current node follow the mark, there is nothing to fold.
    let nodes = [user(0), asst(1, 1), res(3, 1), asst(4, 2), res(6, 4)];
    let (code, msg) = rejected(&surface(Some(4), &nodes), 3);
    assert_eq!((code, msg.as_str()), ("EMPTY_REGION", NOTHING_BEFORE_REWIND));
}

#[test]
fn still_matches_the_same_surface_and_not_a_changed_one() {
    let nodes = exploration();
    let s = surface_with(14, Some(12), &nodes);
    let r = select(&s, 3);
    assert!(region::still_matches(&s, 3, &r.seqs));
    assert!(
        region::still_matches(&surface_with(14, Some(12), &nodes), 3, &r.seqs),
        "same surface, decoded again"
    );
    // The log grew after the current node (its own result): the region is the same.
    let mut grown = nodes.clone();
    grown.push(res(14, 12));
    assert!(region::still_matches(&surface_with(15, Some(12), &grown), 3, &r.seqs));
    // A compaction replaced part of the region while the report was being written.
    let mut compacted = nodes.clone();
    compacted.splice(3..5, [replacement(14, 4)]);
    assert!(!region::still_matches(
        &surface_with(15, Some(12), &compacted),
        3,
        &r.seqs
    ));
    // Another fold already replaced the region.
    let mut refolded = nodes.clone();
    refolded.splice(3..8, [replacement(14, 4)]);
    assert!(!region::still_matches(
        &surface_with(15, Some(12), &refolded),
        3,
        &r.seqs
    ));
    // The surface grew at the tail with no current node: the region would grow.
    let tail = [user(0), user(1), asst(2, 1), res(3, 2)];
    let r = select(&surface(None, &tail), 1);
    assert!(!region::still_matches(
        &surface(None, &[&tail[..], &[node(4, Kind::Other, 5)]].concat()),
        1,
        &r.seqs
    ));
    // A surface that now selects nothing.
    assert!(!region::still_matches(&surface_with(14, None, &nodes[..3]), 3, &r.seqs));
}

// ---------------------------------------------------------------------------------------------
// Snapshot decoding
// ---------------------------------------------------------------------------------------------

fn assert_invalid(words: &[u32], what: &str) {
    match Surface::decode(words) {
        Ok(s) => panic!("{what}: decoded {s:?}"),
        Err(e) => {
            assert_eq!(e.code(), "INVALID_ARGUMENT", "{what}: {e}");
            assert!(e.to_string().starts_with("invalid surface snapshot: "), "{what}: {e}");
        }
    }
}

/// Word index of field `field` (0 seq, 1 origin, 2 kind, 3 chars, 4 link) of node `i`.
fn at(i: usize, field: usize) -> usize {
    4 + i * 5 + field
}

fn valid_words() -> Vec<u32> {
    let report = Report {
        seq: 14,
        mark_id: 1,
        folded_nodes: 2,
        start: 4,
        end: 6,
        folded_chars: 50,
    };
    let mut nodes = exploration();
    nodes.push(user(14));
    Surface::encode(15, Some(12), &nodes, &[report])
}

#[test]
fn decodes_what_it_encodes() {
    let words = valid_words();
    let (s, reports) = Surface::decode_with_reports(&words).unwrap();
    assert_eq!(s.event_count, 15);
    assert_eq!(s.nodes.len(), 10);
    assert_eq!(s.nodes[..9], exploration()[..]);
    assert_eq!(s.current, Some(8));
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].mark_id, 1);
    let again = Surface::encode(s.event_count, Some(12), &s.nodes, &reports);
    assert_eq!(again, words);
}

#[test]
fn current_none_means_the_last_assistant_node_when_it_has_an_open_call() {
    let nodes = [user(0), asst(1, 1), res(2, 1), asst(3, 2), res(4, 3)];
    assert_eq!(surface(None, &nodes).current, Some(3));
    let closed = [user(0), asst(1, 1), res(2, 1)];
    assert_eq!(surface(None, &closed).current, None);
    // An earlier open assistant is not current when a later one is closed.
    let earlier = [asst(0, 1), asst(1, 1), res(2, 1)];
    assert_eq!(surface(None, &earlier).current, None);
}

#[test]
fn rejects_a_bad_format() {
    let mut words = valid_words();
    words[0] = 2;
    assert_invalid(&words, "format 2");
    words[0] = 0;
    assert_invalid(&words, "format 0");
}

#[test]
fn rejects_a_truncated_or_padded_snapshot() {
    let words = valid_words();
    assert_invalid(&[], "no words");
    assert_invalid(&words[..3], "shorter than the header");
    assert_invalid(&words[..4], "header only, nodes announced");
    assert_invalid(&words[..at(3, 0)], "cut inside the nodes");
    assert_invalid(&words[..words.len() - 7], "cut before the report count");
    assert_invalid(&words[..words.len() - 1], "cut inside a report");
    let mut padded = words.clone();
    padded.push(0);
    assert_invalid(&padded, "a word too many");
    let mut huge = words.clone();
    huge[3] = u32::MAX;
    assert_invalid(&huge, "node count overflowing the length");
    let mut reports = words;
    let r = reports.len() - 7;
    reports[r] = u32::MAX;
    assert_invalid(&reports, "report count overflowing the length");
}

#[test]
fn rejects_a_seq_at_or_past_the_event_count() {
    let mut words = valid_words();
    words[1] = 14; // node 14 is on the surface
    assert_invalid(&words, "seq == eventCount");
    let mut words = valid_words();
    words[at(0, 0)] = 1000;
    assert_invalid(&words, "seq > eventCount");
    assert_invalid(&Surface::encode(0, None, &[user(0)], &[]), "eventCount 0 with a node");
}

#[test]
fn rejects_a_duplicated_seq() {
    let mut words = valid_words();
    words[at(2, 0)] = 1;
    words[at(2, 1)] = 1;
    assert_invalid(&words, "seq 1 twice");
}

#[test]
fn rejects_an_origin_after_its_seq() {
    let mut words = valid_words();
    words[at(3, 1)] = 5; // node seq 4
    assert_invalid(&words, "origin 5 > seq 4");
}

#[test]
fn rejects_an_unknown_kind() {
    for kind in [4, 9, u32::MAX] {
        let mut words = valid_words();
        words[at(0, 2)] = kind;
        assert_invalid(&words, &format!("kind {kind}"));
    }
}

#[test]
fn rejects_a_link_on_a_node_that_cannot_link() {
    let mut words = valid_words();
    words[at(0, 4)] = 1; // user node 0
    assert_invalid(&words, "link on a user node");
    let words = Surface::encode(2, None, &[node(0, Kind::Other, 1), user(1)], &[]);
    let mut other = words.clone();
    other[at(0, 4)] = 1;
    assert_invalid(&other, "link on an other node");
}

#[test]
fn rejects_a_result_linked_to_a_later_or_the_same_event() {
    let mut words = valid_words();
    words[at(2, 4)] = 1 + 4; // result 3 answering event 4
    assert_invalid(&words, "result linked to a later event");
    words[at(2, 4)] = 1 + 3; // result 3 answering itself
    assert_invalid(&words, "result linked to itself");
}

#[test]
fn rejects_a_result_linked_to_a_node_that_is_not_an_assistant() {
    let mut words = valid_words();
    words[at(2, 4)] = 1; // result 3 answering user node 0
    assert_invalid(&words, "result linked to a user node");
    let nodes = [user(0), asst(1, 1), res(2, 1), res(3, 2)];
    assert_invalid(&Surface::encode(4, None, &nodes, &[]), "result linked to a result");
}

#[test]
fn rejects_more_results_than_calls() {
    let nodes = [user(0), asst(1, 1), res(2, 1), res(3, 1)];
    assert_invalid(&Surface::encode(4, None, &nodes, &[]), "two results for one call");
    let nodes = [user(0), asst(1, 0), res(2, 1)];
    assert_invalid(
        &Surface::encode(3, None, &nodes, &[]),
        "a result for an assistant without calls",
    );
}

#[test]
fn rejects_a_current_seq_not_on_the_surface() {
    let mut words = valid_words();
    words[2] = 2; // a tool/call event: in the log, not on the surface
    assert_invalid(&words, "current is a log-only event");
    words[2] = 15;
    assert_invalid(&words, "current past the event count");
    words[2] = NONE - 1;
    assert_invalid(&words, "current far past the event count");
}

#[test]
fn rejects_a_current_seq_that_is_not_an_assistant_node() {
    for seq in [0, 3, 14] {
        let mut words = valid_words();
        words[2] = seq;
        assert_invalid(&words, &format!("current {seq}"));
    }
}

#[test]
fn rejects_a_report_not_on_the_surface() {
    let mut words = valid_words();
    let r = words.len() - 7;
    words[r] = 13; // a tool/call event
    assert_invalid(&words, "report seq not on the surface");
    words[r] = 99;
    assert_invalid(&words, "report seq past the event count");
}

#[test]
fn a_snapshot_claiming_billions_of_events_decodes_like_a_small_one() {
    // eventCount 0xFFFF_FFFE (a host bug, or hostile input) must not cost an index slot per event.
    let nodes = exploration();
    let huge = NONE - 1;
    let small = surface_with(14, Some(12), &nodes);
    let big = surface_with(huge, Some(12), &nodes);
    assert_eq!(
        (big.nodes.as_slice(), big.current),
        (small.nodes.as_slice(), small.current)
    );
    assert_eq!(select(&big, 3), select(&small, 3));
    // The same checks hold: a duplicated seq, a seq past the count, a current off the surface.
    let mut twice = Surface::encode(huge, None, &nodes, &[]);
    twice[at(2, 0)] = 1;
    twice[at(2, 1)] = 1;
    assert_invalid(&twice, "seq 1 twice, sparse index");
    assert_invalid(
        &Surface::encode(huge, None, &[user(huge)], &[]),
        "seq == eventCount, sparse index",
    );
    assert_invalid(
        &Surface::encode(huge, Some(2), &nodes, &[]),
        "current off the surface, sparse index",
    );
    // Seqs far apart, up to the last one the count allows.
    let far = [
        user(7),
        asst(1 << 30, 1),
        res((1 << 30) + 5, 1 << 30),
        asst(huge - 1, 1),
    ];
    let s = surface_with(huge, None, &far);
    assert_eq!(s.current, Some(3));
    assert_eq!(folded(&s, 8), [1 << 30, (1 << 30) + 5]);
}

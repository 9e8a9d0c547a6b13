//! Block mode's rules (`blocks::plan`), one test per rule, the seed's algebra as fixed cases, the
//! v2 snapshot decoder's validation, and the lock the planner consults. Surfaces are built the way
//! a DSH session in Code Mode grows them: each `block_run_code` step is an assistant message whose
//! calls carry block ids, followed by its results; `tool/call` events are log-only (gaps in the
//! seqs); a summary (ours or another producer's) has a high seq and sits where its range was.

use fold_core::blocks::{self, Commit, Plan, Wait};
use fold_core::locks::{session_locks, SessionLocks};
use fold_core::surface::{BlockId, BlockNode, BlockSurface, Kind, Node, Provenance, Surface};
use fold_core::wire::{BLOCK_FORMAT, FORMAT};

fn ids<S: AsRef<str>>(names: &[S]) -> Vec<BlockId> {
    names.iter().map(|n| BlockId::from(n.as_ref())).collect()
}

fn names(ids: &[BlockId]) -> Vec<String> {
    ids.iter().map(BlockId::to_string).collect()
}

/// A session's surface in block mode, grown event by event.
#[derive(Default, Clone)]
struct Session {
    ids: Vec<String>,
    sets: Vec<Vec<u32>>,
    nodes: Vec<BlockNode>,
    /// The log's length (the next event's seq).
    next: u32,
    open_compaction: bool,
}

impl Session {
    fn intern(&mut self, ids: &[&str]) -> Option<u32> {
        if ids.is_empty() {
            return None;
        }
        let set: Vec<u32> = ids
            .iter()
            .map(|id| match self.ids.iter().position(|x| x == id) {
                Some(i) => i as u32,
                None => {
                    self.ids.push((*id).to_owned());
                    self.ids.len() as u32 - 1
                }
            })
            .collect();
        let k = self.sets.iter().position(|s| *s == set).unwrap_or_else(|| {
            self.sets.push(set);
            self.sets.len() - 1
        });
        Some(k as u32)
    }

    fn push(&mut self, node: BlockNode) -> u32 {
        self.nodes.push(node);
        self.next = self.next.max(node.seq + 1);
        node.seq
    }

    /// Log-only events (a `tool/call`, `step/*`): the log grows, the surface does not.
    fn log_only(&mut self, n: u32) {
        self.next += n;
    }

    /// A message the user typed.
    fn user(&mut self) -> u32 {
        let seq = self.next;
        self.push(BlockNode {
            user_authored: true,
            ..BlockNode::new(seq, Kind::User)
        })
    }

    /// A message no summary may replace (a host that puts its system prompt on the surface).
    fn system(&mut self) -> u32 {
        let seq = self.next;
        self.push(BlockNode {
            protected: true,
            ..BlockNode::new(seq, Kind::Other)
        })
    }

    /// An assistant message with one call per entry: the ids of a `block_run_code` call (an
    /// empty entry: a call of another tool). Each call logs a `tool/call` event after it.
    fn message(&mut self, calls: &[&[&str]]) -> u32 {
        let seq = self.next;
        let all: Vec<&str> = calls.iter().flat_map(|c| c.iter().copied()).collect();
        let set = self.intern(&all);
        self.push(BlockNode {
            opens: calls.len() as u32,
            set,
            ..BlockNode::new(seq, Kind::Assistant)
        });
        self.log_only(calls.len() as u32);
        seq
    }

    /// A result of a call of the assistant message `opener`.
    fn result(&mut self, opener: u32) -> u32 {
        let seq = self.next;
        self.push(BlockNode {
            opener: Some(opener),
            ..BlockNode::new(seq, Kind::ToolResult)
        })
    }

    /// One `block_run_code` step in `ids`, answered.
    fn step(&mut self, ids: &[&str]) -> u32 {
        let m = self.message(&[ids]);
        self.result(m);
        m
    }

    /// Replaces surface positions `[from, to)` by one node of `provenance` carrying `ids`.
    fn replace(&mut self, from: usize, to: usize, provenance: Provenance, ids: &[&str]) -> u32 {
        let seq = self.next;
        let set = self.intern(ids);
        let node = BlockNode {
            provenance,
            set,
            ..BlockNode::new(seq, Kind::User)
        };
        self.nodes.splice(from..to, [node]);
        self.next += 1;
        seq
    }

    /// Another producer's compaction of `[from, to)`: its set is the ids of what it covered.
    fn compact(&mut self, from: usize, to: usize) -> u32 {
        let surface = self.surface();
        let mut covered: Vec<String> = Vec::new();
        for i in from..to {
            let n = &self.nodes[i];
            let set = match n.kind {
                Kind::ToolResult => None,
                _ => n.set,
            };
            for m in set.map(|k| surface.set(k).to_vec()).unwrap_or_default() {
                let id = &self.ids[m as usize];
                if !covered.contains(id) {
                    covered.push(id.clone());
                }
            }
        }
        let covered: Vec<&str> = covered.iter().map(String::as_str).collect();
        self.replace(from, to, Provenance::Replacement, &covered)
    }

    fn words(&self) -> Vec<u32> {
        BlockSurface::encode(
            self.next,
            self.open_compaction,
            &ids(&self.ids),
            &self.nodes,
            &self.sets,
        )
    }

    fn surface(&self) -> BlockSurface {
        BlockSurface::decode(&self.words()).expect("a valid snapshot")
    }

    fn plan_at<S: AsRef<str>>(&self, targets: &[S], request_seq: u64) -> Result<Plan, fold_core::FoldError> {
        blocks::plan(&self.surface(), &ids(targets), request_seq, false)
    }

    /// The plan for a summary requested now.
    fn plan(&self, targets: &[&str]) -> Result<Plan, fold_core::FoldError> {
        self.plan_at(targets, u64::from(self.next))
    }

    fn commit(&self, targets: &[&str]) -> Commit {
        match self.plan(targets) {
            Ok(Plan::Commit(c)) => c,
            other => panic!("expected a commit of {targets:?}, got {other:?}"),
        }
    }

    fn rejected<S: AsRef<str>>(&self, targets: &[S], request_seq: u64) -> (&'static str, String) {
        let err = self
            .plan_at(targets, request_seq)
            .expect_err("the plan should be rejected");
        (err.code(), err.to_string())
    }

    /// Commits a plan as the plugin does: the summary replaces the range and carries `remaining`.
    fn apply(&mut self, c: &Commit) -> u32 {
        assert_eq!(
            self.nodes[c.start_pos..c.end_pos]
                .iter()
                .map(|n| n.seq)
                .collect::<Vec<_>>(),
            c.seqs
        );
        let remaining = names(&c.remaining);
        let remaining: Vec<&str> = remaining.iter().map(String::as_str).collect();
        self.log_only(2); // compaction/start, compaction/summary
        let seq = self.replace(c.start_pos, c.end_pos, Provenance::BlockSummary, &remaining);
        self.log_only(1); // compaction/end
        seq
    }

    /// The surface in the seed's notation: a block step by its ids, a summary as `S[ids]`, a
    /// user message as `u`; results are left out (they go with their step).
    fn shape(&self) -> String {
        let surface = self.surface();
        let ids = |set: Option<u32>| -> String {
            set.map(|k| {
                surface
                    .set(k)
                    .iter()
                    .map(|m| self.ids[*m as usize].as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
        };
        self.nodes
            .iter()
            .filter_map(|n| match (n.kind, n.provenance) {
                (_, Provenance::BlockSummary) => Some(format!("S[{}]", ids(n.set))),
                (_, Provenance::Replacement) => Some("R".to_owned()),
                (Kind::Assistant, _) => Some(ids(n.set)),
                (Kind::User, _) => Some("u".to_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Every call on the surface has its result and every result its call (what the API checks).
fn protocol_valid(s: &Session) -> bool {
    s.nodes.iter().all(|n| match n.kind {
        Kind::Assistant => s.nodes.iter().filter(|r| r.opener == Some(n.seq)).count() as u32 == n.opens,
        Kind::ToolResult => n.opener.is_some_and(|o| s.nodes.iter().any(|a| a.seq == o)),
        _ => true,
    })
}

/// The seed's `A A B A C B`.
fn seed_surface() -> Session {
    let mut s = Session::default();
    for ids in ["A", "A", "B", "A", "C", "B"] {
        s.step(&[ids]);
    }
    s
}

// ---------------------------------------------------------------------------------------------
// The seed's algebra
// ---------------------------------------------------------------------------------------------

#[test]
fn seed_algebra_summary_of_a_carries_b() {
    let mut s = seed_surface();
    assert_eq!(s.shape(), "A A B A C B");
    let c = s.commit(&["A"]);
    assert_eq!(
        (names(&c.remaining), names(&c.closed)),
        (vec!["B".to_owned()], vec!["A".to_owned()])
    );
    assert_eq!(c.seqs.len(), 8, "A A B A: four steps, each a message and its result");
    s.apply(&c);
    assert_eq!(s.shape(), "S[B] C B");
    assert!(protocol_valid(&s));
}

#[test]
fn seed_algebra_summary_of_b_over_a_summary_carries_c() {
    let mut s = seed_surface();
    s.apply(&s.commit(&["A"]));
    let c = s.commit(&["B"]);
    assert_eq!(names(&c.remaining), ["C"]);
    s.apply(&c);
    assert_eq!(s.shape(), "S[C]");
    assert!(protocol_valid(&s));
}

#[test]
fn seed_algebra_summary_of_the_last_block_carries_nothing_and_stays() {
    let mut s = seed_surface();
    s.apply(&s.commit(&["A"]));
    s.apply(&s.commit(&["B"]));
    let c = s.commit(&["C"]);
    assert!(c.remaining.is_empty());
    assert_eq!(c.seqs.len(), 1, "the summary alone");
    s.apply(&c);
    assert_eq!(s.shape(), "S[]", "a summary with no ids left stays on the surface");
    // It belongs to no block any more.
    assert_eq!(s.rejected(&["C"], u64::from(s.next)).0, "UNKNOWN_BLOCK");
}

#[test]
fn seed_algebra_summary_of_a_and_b_at_once_carries_c() {
    let mut s = seed_surface();
    let c = s.commit(&["A", "B"]);
    assert_eq!(names(&c.remaining), ["C"]);
    assert_eq!(names(&c.closed), ["A", "B"]);
    assert_eq!(c.seqs.len(), s.nodes.len(), "the whole surface");
    s.apply(&c);
    assert_eq!(s.shape(), "S[C]");
}

// ---------------------------------------------------------------------------------------------
// Rule 1: attribution
// ---------------------------------------------------------------------------------------------

#[test]
fn a_call_tags_its_whole_message_and_its_results() {
    let mut s = Session::default();
    s.user();
    let m = s.message(&[&["A"]]);
    let r = s.result(m);
    s.user();
    let c = s.commit(&["A"]);
    // The message node stands for its text, reasoning and calls: it goes whole, with its result.
    assert_eq!(c.seqs, [m, r]);
    assert_eq!((c.start(), c.end()), (m, r));
}

#[test]
fn several_block_calls_in_one_message_give_the_union() {
    let mut s = Session::default();
    let m = s.message(&[&["A"], &["B", "C"]]);
    let r1 = s.result(m);
    let r2 = s.result(m);
    s.step(&["C"]);
    // Closing A replaces the message (it belongs to A too) and both its results; B and C go on.
    let c = s.commit(&["A"]);
    assert_eq!(c.seqs, [m, r1, r2]);
    assert_eq!(names(&c.remaining), ["B", "C"]);
    // Closing B does the same: the message belongs to every id of every block call in it.
    assert_eq!(s.commit(&["B"]).seqs, [m, r1, r2]);
}

#[test]
fn calls_of_other_tools_and_user_messages_belong_to_no_block() {
    let mut s = Session::default();
    let plain = s.message(&[&[]]);
    s.result(plain);
    s.user();
    let a = s.step(&["A"]);
    let c = s.commit(&["A"]);
    assert_eq!(c.seqs[0], a, "the range starts at A's first node, not before");
    assert_eq!(s.rejected(&["plain"], u64::from(s.next)).0, "UNKNOWN_BLOCK");
}

#[test]
fn a_result_whose_call_is_off_the_surface_belongs_to_no_block() {
    let mut s = Session::default();
    let m = s.step(&["A"]);
    // The message was compacted away by another producer, a late result stayed (an orphan).
    s.compact(0, 1);
    s.result(m);
    let (code, msg) = s.rejected(&["A"], u64::from(s.next));
    assert_eq!(code, "UNKNOWN_BLOCK");
    assert!(msg.contains("already replaced by another compaction"), "{msg}");
}

// ---------------------------------------------------------------------------------------------
// Rules 2-3: known ids, the range
// ---------------------------------------------------------------------------------------------

#[test]
fn the_range_runs_from_the_first_to_the_last_node_of_any_target() {
    let mut s = Session::default();
    let before = s.user();
    let a1 = s.step(&["A"]);
    let u = s.user();
    s.step(&["B"]);
    let a2 = s.step(&["A"]);
    let a2r = a2 + 2;
    let after = s.user();
    let c = s.commit(&["A"]);
    assert_eq!(c.seqs, [a1, a1 + 2, u, u + 1, u + 3, a2, a2r]);
    assert!(!c.seqs.contains(&before) && !c.seqs.contains(&after));
    assert_eq!(
        names(&c.remaining),
        ["B"],
        "B's step inside the range goes with it and B goes on"
    );
}

#[test]
fn remaining_ids_are_in_order_of_first_appearance() {
    let mut s = Session::default();
    s.step(&["T"]);
    s.step(&["Z"]);
    let m = s.message(&[&["Y", "T"], &["X", "Z"]]);
    s.result(m);
    s.result(m);
    s.step(&["T"]);
    assert_eq!(names(&s.commit(&["T"]).remaining), ["Z", "Y", "X"]);
}

#[test]
fn unknown_ids_reject_the_whole_request_and_name_the_open_blocks() {
    let s = seed_surface();
    let (code, msg) = s.rejected(&["A", "nope", "Q"], u64::from(s.next));
    assert_eq!(code, "UNKNOWN_BLOCK");
    assert!(
        msg.contains(r#"block id(s) "nope", "Q";"#),
        "known ids are not called unknown: {msg}"
    );
    assert!(msg.contains(r#"the open blocks are "A", "B", "C""#), "{msg}");
    assert!(msg.contains("Nothing was changed"), "{msg}");
    let empty = Session::default();
    let (code, msg) = empty.rejected(&["A"], 0);
    assert_eq!(code, "UNKNOWN_BLOCK");
    assert!(msg.contains("no block is open"), "{msg}");
}

#[test]
fn an_id_known_only_from_a_summary_is_a_block() {
    let mut s = seed_surface();
    s.apply(&s.commit(&["A", "C"]));
    assert_eq!(s.shape(), "S[B] B");
    let c = s.commit(&["B"]);
    assert_eq!(c.seqs.len(), 3, "the summary carrying B, B's last step and its result");
}

// ---------------------------------------------------------------------------------------------
// Rule 4: pairing closure at the range's edges
// ---------------------------------------------------------------------------------------------

#[test]
fn a_result_in_the_range_pulls_in_the_call_issued_before_it() {
    // An untagged call whose result lands only inside A's range (an asynchronous tool).
    let mut s = Session::default();
    s.user();
    let early = s.message(&[&[]]);
    let a = s.message(&[&["A"]]);
    let late = s.result(early);
    let ar = s.result(a);
    let a2 = s.step(&["A"]);
    let c = s.commit(&["A"]);
    assert_eq!(
        c.seqs,
        [early, a, late, ar, a2, a2 + 2],
        "the early call goes with its result"
    );
    let mut after = s.clone();
    after.apply(&c);
    assert!(protocol_valid(&after));
}

#[test]
fn an_assistant_message_in_the_range_pulls_in_its_results_after_the_range() {
    let mut s = Session::default();
    let a = s.step(&["A"]);
    let other = s.message(&[&[]]);
    let a2 = s.step(&["A"]);
    let late = s.result(other);
    s.user();
    let c = s.commit(&["A"]);
    assert_eq!(c.seqs, [a, a + 2, other, a2, a2 + 2, late]);
    let mut after = s.clone();
    after.apply(&c);
    assert!(protocol_valid(&after));
}

#[test]
fn the_closure_grows_to_a_fixed_point() {
    // B's message in the range has a result after the range; that result's neighbour chain goes on.
    let mut s = Session::default();
    let x = s.message(&[&[], &[]]);
    let a = s.message(&[&["A"]]);
    let xr1 = s.result(x);
    let ar = s.result(a);
    let y = s.message(&[&[]]);
    let xr2 = s.result(x);
    let yr = s.result(y);
    s.user();
    let c = s.commit(&["A"]);
    assert_eq!(c.seqs, [x, a, xr1, ar, y, xr2, yr]);
}

// ---------------------------------------------------------------------------------------------
// Rule 5: protected
// ---------------------------------------------------------------------------------------------

#[test]
fn a_range_crossing_a_protected_message_is_rejected_whole() {
    let mut s = Session::default();
    s.step(&["A"]);
    let sys = s.system();
    s.step(&["A"]);
    let (code, msg) = s.rejected(&["A"], u64::from(s.next));
    assert_eq!(code, "PROTECTED");
    assert!(msg.contains(&format!("seq {sys}")), "{msg}");
    assert!(msg.contains("nothing was changed"), "{msg}");
}

#[test]
fn a_protected_message_outside_the_range_is_no_obstacle() {
    let mut s = Session::default();
    s.system();
    s.step(&["A"]);
    s.step(&["B"]);
    s.system();
    assert_eq!(s.commit(&["A"]).seqs.len(), 2);
}

// ---------------------------------------------------------------------------------------------
// Rule 6: stale
// ---------------------------------------------------------------------------------------------

#[test]
fn a_user_message_that_arrived_after_the_request_inside_the_range_makes_it_stale() {
    let mut s = Session::default();
    s.step(&["A"]);
    let request = u64::from(s.next);
    let u = s.user();
    s.step(&["A"]);
    let (code, msg) = s.rejected(&["A"], request);
    assert_eq!(code, "STALE");
    assert!(
        msg.contains(&format!("seq {u}")) && msg.contains("write the summary again"),
        "{msg}"
    );
    // Requested after it arrived: the model read it, the summary keeps it.
    assert!(matches!(s.plan_at(&["A"], request + 1), Ok(Plan::Commit(_))));
}

#[test]
fn the_request_seq_is_a_log_length_so_the_event_at_it_came_after() {
    let mut s = Session::default();
    s.step(&["A"]);
    let u = s.user();
    s.step(&["A"]);
    assert_eq!(s.rejected(&["A"], u64::from(u)).0, "STALE");
    assert!(matches!(s.plan_at(&["A"], u64::from(u) + 1), Ok(Plan::Commit(_))));
}

#[test]
fn a_late_user_message_outside_the_range_changes_nothing() {
    let mut s = Session::default();
    s.step(&["A"]);
    s.step(&["A"]);
    let request = u64::from(s.next);
    s.user();
    assert!(matches!(s.plan_at(&["A"], request), Ok(Plan::Commit(_))));
}

#[test]
fn late_steps_of_the_block_itself_are_not_stale() {
    // The program asking is in the range, and its result always comes after the request.
    let mut s = Session::default();
    s.step(&["A"]);
    let m = s.message(&[&["A"]]);
    let request = u64::from(s.next);
    s.result(m);
    s.step(&["A"]);
    assert!(matches!(s.plan_at(&["A"], request), Ok(Plan::Commit(_))));
}

#[test]
fn a_summary_of_another_block_that_landed_in_the_range_after_the_request_makes_it_stale() {
    // Issue 22 item 5: blocks B, A, B; a program tagged A queues a summary of A (its own block is
    // open), then closes B at once — B's summary carries A. Landing A's summary now would replace
    // B's summary, which it was written without.
    let mut s = Session::default();
    s.user();
    s.step(&["B"]);
    s.step(&["A"]);
    s.step(&["B"]);
    let m = s.message(&[&["A"]]);
    let request_a = u64::from(s.next);
    assert!(matches!(s.plan_at(&["A"], request_a), Ok(Plan::Pending(_))));
    s.log_only(2); // block_summary's dispatch events
    let b = s.commit(&["B"]);
    assert_eq!(names(&b.remaining), ["A"]);
    let summary_b = s.apply(&b);
    assert_eq!(s.shape(), "u S[A] A");
    s.result(m);
    let (code, msg) = s.rejected(&["A"], request_a);
    assert_eq!(code, "STALE");
    assert!(
        msg.contains(&format!("another block summary (seq {summary_b})")) && msg.contains("nothing was changed"),
        "{msg}"
    );
    // Written after B's summary landed (the model read it): the summary of A replaces it.
    let c = s.commit(&["A"]);
    assert_eq!(c.seqs.first(), Some(&summary_b));
    // A block summary that landed after the request but outside the range changes nothing.
    let mut t = Session::default();
    t.step(&["A"]);
    t.step(&["B"]);
    let request = u64::from(t.next);
    t.apply(&t.commit(&["B"]));
    assert!(matches!(t.plan_at(&["A"], request), Ok(Plan::Commit(_))));
}

#[test]
fn our_own_summary_of_another_block_committed_after_the_request_inside_the_range_makes_it_stale() {
    // The seed's `A A B A C B`: C's summary lands inside B's range after B's summary was written.
    let mut s = seed_surface();
    let request = u64::from(s.next);
    s.apply(&s.commit(&["C"]));
    assert_eq!(s.shape(), "A A B A S[] B");
    assert_eq!(s.rejected(&["B"], request).0, "STALE");
    // Requested after C's summary landed, B's summary carries A and replaces C's.
    let c = s.commit(&["B"]);
    assert_eq!(names(&c.remaining), ["A"]);
}

#[test]
fn another_producers_replacement_after_the_request_inside_the_range_makes_it_stale() {
    let mut s = Session::default();
    s.step(&["A"]);
    s.user();
    s.step(&["A"]);
    let request = u64::from(s.next);
    let r = s.compact(2, 3); // the user message between the steps
    let (code, msg) = s.rejected(&["A"], request);
    assert_eq!(code, "STALE");
    assert!(msg.contains(&format!("seq {r}")), "{msg}");
    // Before the request, the same replacement is just a node of the range.
    assert!(matches!(s.plan_at(&["A"], u64::from(r) + 1), Ok(Plan::Commit(_))));
}

#[test]
fn another_producers_replacement_after_the_request_over_a_targets_nodes_makes_it_stale() {
    let mut s = Session::default();
    s.step(&["A"]);
    s.step(&["B"]);
    s.step(&["A"]);
    let request = u64::from(s.next);
    // A compaction took the first A step: the A range left is only a part of what was summarized.
    s.compact(0, 2);
    assert_eq!(s.rejected(&["A"], request).0, "STALE");
    // It took every A node: still STALE (not UNKNOWN_BLOCK): the summary came first.
    let mut all = Session::default();
    all.step(&["A"]);
    let request = u64::from(all.next);
    all.compact(0, 2);
    assert_eq!(all.rejected(&["A"], request).0, "STALE");
}

#[test]
fn an_older_replacement_in_the_range_is_replaced_without_its_ids() {
    let mut s = Session::default();
    s.step(&["A"]);
    s.step(&["B"]);
    s.compact(2, 4); // B's only step: B is gone
    s.step(&["A"]);
    let c = s.commit(&["A"]);
    assert_eq!(c.seqs.len(), 5);
    assert!(
        c.remaining.is_empty(),
        "a compaction ended B's attribution: {:?}",
        c.remaining
    );
}

// ---------------------------------------------------------------------------------------------
// Rule 7: pending
// ---------------------------------------------------------------------------------------------

#[test]
fn a_summary_requested_inside_its_own_block_waits_for_the_calls_result() {
    let mut s = Session::default();
    s.user();
    s.step(&["A"]);
    let m = s.message(&[&["A"]]); // its program calls block_summary({ids: ['A']})
    let request = u64::from(s.next);
    match s.plan_at(&["A"], request) {
        Ok(Plan::Pending(p)) => {
            assert_eq!(p.wait, Wait::Results);
            assert!(p.reason.contains("1 tool call"), "{}", p.reason);
        }
        other => panic!("{other:?}"),
    }
    let r = s.result(m);
    match s.plan_at(&["A"], request) {
        Ok(Plan::Commit(c)) => assert_eq!(c.end(), r, "lands with the result, right after it"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_summary_requested_from_another_block_commits_at_once() {
    let mut s = Session::default();
    let a = s.step(&["A"]);
    let m = s.message(&[&["B"]]); // B's program closes A
    let c = s.commit(&["A"]);
    assert_eq!(c.seqs, [a, a + 2]);
    assert!(!c.seqs.contains(&m));
    let mut after = s.clone();
    after.apply(&c);
    // The open call of B's message is untouched: it gets its result later, as before.
    after.result(m);
    assert!(protocol_valid(&after));
}

#[test]
fn a_parallel_call_still_running_in_the_range_makes_it_wait() {
    let mut s = Session::default();
    let m = s.message(&[&["A"], &[]]);
    s.result(m);
    match s.plan(&["A"]) {
        Ok(Plan::Pending(p)) => assert_eq!(p.wait, Wait::Results),
        other => panic!("{other:?}"),
    }
}

#[test]
fn open_calls_past_u32_in_all_still_make_it_wait() {
    // Found by the fuzz campaign (snapshot_v2): two messages claiming 2^31 calls each, none
    // answered. The count of open calls was a u32 sum: it overflowed (a panic in a debug build,
    // and in a release build 0 open calls: a commit replacing calls without their results).
    let mut s = Session::default();
    for _ in 0..2 {
        let seq = s.next;
        s.push(BlockNode {
            opens: 1 << 31,
            set: s.clone().intern(&["A"]),
            ..BlockNode::new(seq, Kind::Assistant)
        });
    }
    s.intern(&["A"]);
    match s.plan(&["A"]) {
        Ok(Plan::Pending(p)) => {
            assert_eq!(p.wait, Wait::Results);
            assert!(p.reason.contains("waiting for 4294967296 tool call(s)"), "{}", p.reason);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_open_compaction_makes_it_wait() {
    let mut s = seed_surface();
    s.open_compaction = true;
    match s.plan(&["A"]) {
        Ok(Plan::Pending(p)) => assert_eq!(p.wait, Wait::Compaction),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_rewind_holding_the_session_lock_makes_it_wait() {
    let s = seed_surface();
    let targets = ids(&["A"]);
    match blocks::plan(&s.surface(), &targets, u64::from(s.next), true) {
        Ok(Plan::Pending(p)) => {
            assert_eq!(p.wait, Wait::Rewind);
            assert_eq!(p.wait.as_str(), "rewind");
        }
        other => panic!("{other:?}"),
    }
    // Through the locks a rewind takes: held for this session only.
    let locks: &'static SessionLocks = Box::leak(Box::default());
    let plan = |session: &str| blocks::plan_with_locks(locks, session, &s.surface(), &targets, 0);
    let guard = locks.try_lock("s1").expect("free");
    assert!(matches!(
        plan("s1"),
        Ok(Plan::Pending(Pending { wait: Wait::Rewind, .. }))
    ));
    assert!(matches!(plan("s2"), Ok(Plan::Commit(_))));
    drop(guard);
    assert!(matches!(plan("s1"), Ok(Plan::Commit(_))));
}

use fold_core::blocks::Pending;

#[test]
fn rejections_come_before_waiting() {
    let mut s = Session::default();
    s.step(&["A"]);
    s.system();
    s.message(&[&["A"]]);
    s.open_compaction = true;
    assert_eq!(s.rejected(&["A"], u64::from(s.next)).0, "PROTECTED");
    assert_eq!(s.rejected(&["Q"], u64::from(s.next)).0, "UNKNOWN_BLOCK");
}

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------

#[test]
fn bad_targets_and_request_seqs_are_invalid_arguments() {
    let s = seed_surface();
    let end = u64::from(s.next);
    for (targets, what) in [
        (&[][..], "at least one"),
        (&[""][..], "targets[0] is an empty string"),
        (&["A", "B", "A"][..], "targets[2] repeats targets[0]"),
    ] {
        let (code, msg) = s.rejected(targets, end);
        assert_eq!(code, "INVALID_ARGUMENT");
        assert!(msg.contains(what), "{msg}");
    }
    let (code, msg) = s.rejected(&["A"], end + 1);
    assert_eq!(code, "INVALID_ARGUMENT");
    assert!(msg.contains("requestSeq"), "{msg}");
    let err = blocks::plan_with_locks(session_locks(), "", &s.surface(), &ids(&["A"]), 0).unwrap_err();
    assert_eq!(
        (err.code(), err.to_string().contains("sessionId")),
        ("INVALID_ARGUMENT", true)
    );
}

#[test]
fn more_targets_than_the_cap_are_invalid_before_anything_is_compared() {
    // A program can pass 200,000 ids for the price of one call: the planner refuses them by
    // count, naming the cap, and its message stays short however many there are.
    let s = seed_surface();
    let end = u64::from(s.next);
    let many: Vec<String> = (0..blocks::MAX_TARGETS + 1).map(|i| format!("id-{i}")).collect();
    let (code, msg) = s.rejected(&many, end);
    assert_eq!(code, "INVALID_ARGUMENT", "{msg}");
    assert!(msg.contains(&blocks::MAX_TARGETS.to_string()), "{msg}");
    assert!(msg.len() < 400, "{} chars: {}", msg.len(), &msg[..400.min(msg.len())]);
    // At the cap, the request is planned (unknown ids here), and its message is bounded too.
    let at_cap: Vec<String> = (0..blocks::MAX_TARGETS).map(|i| format!("id-{i}")).collect();
    let (code, msg) = s.rejected(&at_cap, end);
    assert_eq!(code, "UNKNOWN_BLOCK");
    assert!(msg.contains(&format!("and {} more", blocks::MAX_TARGETS - 12)), "{msg}");
}

#[test]
fn every_message_shows_a_long_id_cut_short() {
    // An id is the model's text: a message names it, but never more than a short prefix of it.
    let s = seed_surface();
    let end = u64::from(s.next);
    let long = "x".repeat(blocks::MAX_ID_UNITS + 1);
    let (code, msg) = s.rejected(&[long.as_str()], end);
    assert_eq!(code, "INVALID_ARGUMENT", "{msg}");
    assert!(
        msg.contains(&blocks::MAX_ID_UNITS.to_string()) && msg.len() < 400,
        "{msg}"
    );
    let near = "y".repeat(blocks::MAX_ID_UNITS);
    for targets in [vec![near.as_str(), "A", near.as_str()], vec![near.as_str()]] {
        let (code, msg) = s.rejected(&targets, end);
        assert!(["INVALID_ARGUMENT", "UNKNOWN_BLOCK"].contains(&code), "{code}");
        assert!(msg.len() < 600, "{code}: {} chars: {msg}", msg.len());
        assert!(msg.contains('…'), "{msg}");
    }
}

#[test]
fn many_distinct_and_repeated_targets_are_checked_in_linear_time() {
    // Not a timing assertion: a repeat at the very end of a full list is found (the check is a
    // set, so its position costs nothing), and named by both positions.
    let s = seed_surface();
    let end = u64::from(s.next);
    let mut many: Vec<String> = (0..blocks::MAX_TARGETS - 1).map(|i| format!("id-{i}")).collect();
    many.push("id-3".to_owned());
    let (code, msg) = s.rejected(&many, end);
    assert_eq!(code, "INVALID_ARGUMENT");
    assert!(
        msg.contains(&format!("targets[{}] repeats targets[3]", blocks::MAX_TARGETS - 1)),
        "{msg}"
    );
}

// ---------------------------------------------------------------------------------------------
// The v2 snapshot
// ---------------------------------------------------------------------------------------------

fn assert_invalid(words: &[u32], what: &str) {
    let err = BlockSurface::decode(words).unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    let msg = err.to_string();
    assert!(
        msg.starts_with("invalid block snapshot: ") && msg.contains(what),
        "expected {what:?} in {msg:?}"
    );
}

/// Header: format, eventCount, flags, I, N; nodes of 4 words from index 5; then the sets.
fn node_word(i: usize, field: usize) -> usize {
    5 + i * 4 + field
}

#[test]
fn v2_decodes_what_it_encodes() {
    let mut s = seed_surface();
    s.apply(&s.commit(&["A"]));
    s.system();
    s.user();
    s.open_compaction = true;
    let d = s.surface();
    assert_eq!(d.nodes, s.nodes);
    assert_eq!(d.ids(), ids(&s.ids));
    assert_eq!(d.set_count(), s.sets.len());
    assert!(d.open_compaction);
    for (k, set) in s.sets.iter().enumerate() {
        assert_eq!(d.set(k as u32), set.as_slice());
    }
    assert_eq!(s.words()[0], BLOCK_FORMAT);
}

#[test]
fn ids_travel_as_exact_utf16_lone_surrogates_included() {
    // Two ids UTF-8 would both turn into U+FFFD stay two ids; odd and even lengths pack alike.
    let lone_high = BlockId(vec![0xD800]);
    let lone_low = BlockId(vec![0xDBFF]);
    let emoji = BlockId::from("块-🧱");
    let table = vec![lone_high.clone(), lone_low.clone(), emoji.clone(), BlockId::from("ab")];
    let nodes = [
        BlockNode {
            opens: 1,
            set: Some(0),
            ..BlockNode::new(0, Kind::Assistant)
        },
        BlockNode {
            opener: Some(0),
            ..BlockNode::new(1, Kind::ToolResult)
        },
        BlockNode {
            opens: 1,
            set: Some(1),
            ..BlockNode::new(2, Kind::Assistant)
        },
        BlockNode {
            opener: Some(2),
            ..BlockNode::new(3, Kind::ToolResult)
        },
    ];
    let sets = vec![vec![0, 2], vec![1, 3]];
    let d = BlockSurface::decode(&BlockSurface::encode(4, false, &table, &nodes, &sets)).unwrap();
    assert_eq!(d.ids(), table);
    let plan = blocks::plan(&d, std::slice::from_ref(&lone_high), 4, false).unwrap();
    match plan {
        Plan::Commit(c) => {
            assert_eq!(c.seqs, [0, 1], "only the lone high surrogate's block");
            assert_eq!(c.remaining, [emoji]);
            assert_eq!(c.closed, [lone_high]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        format!("{lone_low:?}"),
        "\"\u{fffd}\"",
        "shown lossily in messages only"
    );
}

#[test]
fn v1_and_v2_do_not_read_each_other() {
    let v1 = Surface::encode(2, None, &[Node::new(0, Kind::User, 1)], &[]);
    assert_invalid(&v1, "format 1 (block mode reads 2)");
    let v2 = seed_surface().words();
    let err = Surface::decode(&v2).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("format 2 (this build reads {FORMAT})")),
        "{err}"
    );
}

#[test]
fn v2_rejects_every_malformed_snapshot() {
    let mut s = Session::default();
    s.user(); // node 0
    s.message(&[&["A"], &["Bc"]]); // node 1: seq 1, set 0
    s.result(1); // node 2: seq 4
    let good = s.words();
    assert!(BlockSurface::decode(&good).is_ok());
    let with = |f: &dyn Fn(&mut Vec<u32>)| {
        let mut w = good.clone();
        f(&mut w);
        w
    };
    // After the nodes: S = 1, set 0 = [2, 0, 1]; then the ids: "A" = [1, 'A'], "Bc" = [2, 'B' | 'c' << 16].
    let sets_at = node_word(3, 0);
    let ids_at = sets_at + 4;
    assert_eq!(&good[sets_at..], [1, 2, 0, 1, 1, 0x41, 2, 0x42 | 0x63 << 16]);

    assert_invalid(&good[..4], "shorter than the header");
    assert_invalid(&with(&|w| w[0] = 3), "format 3");
    assert_invalid(&with(&|w| w[2] = 2), "unknown header flags 0x2");
    assert_invalid(&with(&|w| w[4] = 5), "5 nodes do not fit");
    assert_invalid(&with(&|w| w[4] = u32::MAX), "nodes do not fit");
    assert_invalid(
        &with(&|w| {
            w.truncate(ids_at);
            w[sets_at] = 2;
        }),
        "set 1 of 2 is past the end",
    );
    assert_invalid(&with(&|w| w[sets_at] = 2), "set 1 names id 65, not below the 2 ids");
    assert_invalid(&with(&|w| w[sets_at + 1] = 0), "set 0 is empty");
    assert_invalid(&with(&|w| w[sets_at + 1] = 99), "set 0 (99 ids) runs past the end");
    assert_invalid(&with(&|w| w[sets_at + 2] = 2), "set 0 names id 2, not below the 2 ids");
    // The id table.
    assert_invalid(&with(&|w| w[3] = 3), "id 2 of 3 is past the end of the words");
    assert_invalid(&with(&|w| w.push(0)), "1 words left after the id table");
    assert_invalid(&with(&|w| w[ids_at] = 0), "id 0 is empty");
    assert_invalid(&with(&|w| w[ids_at + 2] = 9), "id 1 (9 UTF-16 units) runs past the end");
    assert_invalid(
        &with(&|w| w[ids_at + 1] |= 1 << 16),
        "id 0: the unused half of its last word is not 0",
    );
    let w = with(&|w| {
        w[ids_at + 2] = 1;
        w[ids_at + 3] = 0x41;
    });
    assert_invalid(&w, "ids 0 and 1 are both \"A\"");
    // Nodes.
    assert_invalid(
        &with(&|w| w[node_word(0, 0)] = 99),
        "node 0: seq 99 is not below the event count",
    );
    assert_invalid(&with(&|w| w[node_word(2, 0)] = 0), "seq 0 appears twice");
    assert_invalid(&with(&|w| w[node_word(0, 1)] |= 1 << 6), "node 0: unknown flags 0x40");
    assert_invalid(
        &with(&|w| w[node_word(0, 1)] |= 1 << 4 | 1 << 5),
        "both a block summary and another producer's replacement",
    );
    assert_invalid(
        &with(&|w| w[node_word(1, 1)] |= 1 << 3),
        "node 1: only an appended user node is user-authored",
    );
    assert_invalid(
        &with(&|w| w[node_word(0, 1)] |= 1 << 4),
        "only an appended user node is user-authored",
    );
    assert_invalid(
        &with(&|w| w[node_word(2, 1)] |= 1 << 4),
        "node 2: a block summary is a user node, not ToolResult",
    );
    assert_invalid(
        &with(&|w| w[node_word(1, 1)] |= 1 << 5),
        "node 1: an assistant node cannot be marked as another producer's replacement",
    );
    assert_invalid(&with(&|w| w[node_word(0, 3)] = 2), "node 0: set 1 of 1 sets");
    assert_invalid(&with(&|w| w[node_word(0, 3)] = 1), "node 0: a User node carries no ids");
    assert_invalid(
        &with(&|w| w[node_word(2, 3)] = 1),
        "node 2: a ToolResult node carries no ids",
    );
    // The v1 checks of kinds and links, with the v2 prefix.
    assert_invalid(
        &with(&|w| w[node_word(0, 2)] = 1),
        "node 0: a User node cannot link to calls",
    );
    assert_invalid(
        &with(&|w| w[node_word(2, 2)] = 9),
        "node 2: result 4 answers a call of later event 8",
    );
    assert_invalid(
        &with(&|w| w[node_word(2, 2)] = 1),
        "result 4 is linked to 0 which is not an assistant",
    );
    assert_invalid(
        &with(&|w| w[node_word(1, 2)] = 0),
        "assistant 1 has more results than its 0 call(s)",
    );
    // A replacement's set (the ids it covered) and a summary's are accepted on a user node.
    for flag in [1 << 4, 1 << 5] {
        let w = with(&|w| {
            w[node_word(0, 1)] = 1 | flag;
            w[node_word(0, 3)] = 1;
        });
        assert!(BlockSurface::decode(&w).is_ok());
    }
}

#[test]
fn an_empty_surface_and_a_huge_event_count_decode() {
    let empty = BlockSurface::encode(0, false, &[], &[], &[]);
    assert_eq!(BlockSurface::decode(&empty).unwrap().nodes.len(), 0);
    // A snapshot claiming billions of events (the sparse seq index) plans the same.
    let s = seed_surface();
    let huge = BlockSurface::encode(u32::MAX - 1, false, &ids(&s.ids), &s.nodes, &s.sets);
    let targets = ids(&["A"]);
    let a = blocks::plan(&BlockSurface::decode(&huge).unwrap(), &targets, 0, false);
    assert_eq!(a, blocks::plan(&s.surface(), &targets, 0, false));
}

// ---------------------------------------------------------------------------------------------
// The lock
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn is_held_while_a_guard_or_a_waiter_holds_the_session() {
    let locks: &'static SessionLocks = Box::leak(Box::default());
    assert!(!locks.is_held("s"));
    let a = locks.try_lock("s").expect("free");
    assert!(locks.is_held("s"));
    assert!(!locks.is_held("t"), "other sessions are free");
    // A waiter counts as busy too: the commit must not slip in between the fold and the mark.
    let waiter = tokio::spawn(locks.lock("s"));
    tokio::task::yield_now().await;
    drop(a);
    let b = waiter.await.expect("the waiter gets the lock");
    assert!(locks.is_held("s"), "held by the former waiter");
    drop(b);
    assert!(!locks.is_held("s"));
    assert!(locks.is_empty(), "looking leaves no entry behind");
    // Looking never takes the lock: a rewind trying at the same time still gets it.
    let g = locks.lock("s").await;
    assert!(locks.is_held("s"));
    assert!(locks.try_lock("s").is_none());
    drop(g);
    assert!(locks.try_lock("s").is_some());
}

//! The rewind transaction (`fold::Rewind`), driven as the binding drives it: a session surface
//! held in memory and handed over as its session's mirror, a scripted summarizer, a commit that
//! re-selects on the mirror of the surface now and splices the report in, and the durable stamp
//! on a real store in a temp dir.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use fold_core::fold::{
    self, Anchor, Commit, FoldPlan, FoldRequest, FoldResult, Rewind, RewindOptions, Step, Summary, TokenPrices,
    STAMP_ATTEMPTS,
};
use fold_core::locks::session_locks;
use fold_core::mirror::{self, Mirror, RecordBuilder, Source, NONE};
use fold_core::region;
use fold_core::store::{Limits, Store};
use fold_core::surface::{Kind, Node};
use fold_core::FoldError;

const SESSION: &str = "session-1";

/// Session locks are per process and keyed by session id: the tests of this file take turns.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn node(seq: u32, kind: Kind, chars: u32) -> Node {
    Node::new(seq, kind, chars)
}

fn user(seq: u32, chars: u32) -> Node {
    node(seq, Kind::User, chars)
}

fn asst(seq: u32, calls: u32, chars: u32) -> Node {
    Node {
        opens: calls,
        ..node(seq, Kind::Assistant, chars)
    }
}

fn res(seq: u32, opener: u32, chars: u32) -> Node {
    Node {
        opener: Some(opener),
        ..node(seq, Kind::ToolResult, chars)
    }
}

/// How the scripted summarizer answers each call.
enum Reply {
    Text(Summary),
    /// The summarizer failed (threw, rejected, timed out): the host drops the fold.
    Fail(FoldError),
    /// The caller's signal fired while the summarizer ran (it never answers).
    Abort,
    /// A compaction replaces the region's first two nodes, then the report is returned.
    CompactThen(Summary),
    /// The report is returned, then the signal fires before the commit starts.
    AbortAfter(Summary),
}

fn text(t: &str) -> Reply {
    Reply::Text(Summary {
        text: t.into(),
        finish: Some("stop".into()),
        output_tokens: Some(12),
        ..Summary::default()
    })
}

fn empty(finish: &str, output: u64, reasoning: Option<u64>) -> Reply {
    Reply::Text(Summary {
        text: String::new(),
        finish: Some(finish.into()),
        output_tokens: Some(output),
        reasoning_tokens: reasoning,
        ..Summary::default()
    })
}

/// A rewind report the host committed: the replacement's seq and the mark it folded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Committed {
    seq: u32,
    mark_id: u64,
}

/// A session surface in memory, and the host side of a fold over it.
struct Host {
    event_count: u32,
    current: Option<u32>,
    /// The surface, in model order.
    nodes: Vec<Node>,
    /// The nodes replaced away (a report's account reads them).
    shadowed: Vec<Node>,
    /// Each replacement: the seqs it replaced, and the mark whose fold it records (a rewind
    /// report), if any.
    replaced: BTreeMap<u32, (Vec<u32>, Option<u64>)>,
    reports: Vec<Committed>,
    replies: VecDeque<Reply>,
    snapshots: u32,
    attempts: Vec<u32>,
    requests: Vec<FoldRequest>,
    commits: Vec<FoldPlan>,
    stamps: u32,
    /// Runs once a commit has appended the report.
    after_commit: Option<Box<dyn FnOnce()>>,
}

/// 0 user request, 1 assistant[checkpoint], 2 tool/call, (mark: logLength 3), 3 result,
/// 4 assistant[read], 5 tool/call, 6 result, 7 assistant[grep, grep], 8-9 tool/call, 10-11 results,
/// 12 assistant[rewind] (current), 13 tool/call. The region is [4, 6, 7, 10, 11]: 300 chars.
fn exploration() -> Host {
    Host::new(
        14,
        Some(12),
        vec![
            user(0, 50),
            asst(1, 1, 10),
            res(3, 1, 5),
            asst(4, 1, 20),
            res(6, 4, 100),
            asst(7, 2, 30),
            res(10, 7, 70),
            res(11, 7, 80),
            asst(12, 1, 15),
        ],
    )
}

const ANCHOR: u64 = 3;
const REGION: [u32; 5] = [4, 6, 7, 10, 11];
const REGION_CHARS: u64 = 300;

impl Host {
    fn new(event_count: u32, current: Option<u32>, nodes: Vec<Node>) -> Self {
        Self {
            event_count,
            current,
            nodes,
            shadowed: Vec::new(),
            replaced: BTreeMap::new(),
            reports: Vec::new(),
            replies: VecDeque::new(),
            snapshots: 0,
            attempts: Vec::new(),
            requests: Vec::new(),
            commits: Vec::new(),
            stamps: 0,
            after_commit: None,
        }
    }

    fn replying(mut self, replies: impl IntoIterator<Item = Reply>) -> Self {
        self.replies.extend(replies);
        self
    }

    fn after_commit(mut self, f: impl FnOnce() + 'static) -> Self {
        self.after_commit = Some(Box::new(f));
        self
    }

    /// The session's mirror, as the host hands it to the fold: rebuilt from the surface and its
    /// log index learnt, as a host rebuilds one.
    fn mirror(&mut self) -> Mirror {
        self.snapshots += 1;
        self.mirror_now()
    }

    /// The mirror of the surface now (the commit's re-check: not a reading the fold asked for).
    fn mirror_now(&self) -> Mirror {
        let record = |n: &Node| {
            let replaced = self.replaced.get(&n.seq);
            let source = match replaced {
                Some((_, Some(mark_id))) => Source::RewindReport { mark_id: *mark_id },
                Some(_) => Source::CompactionSummary,
                None if n.kind == Kind::User => Source::User,
                None => Source::Appended,
            };
            let sources = replaced.map_or(&[][..], |(seqs, _)| seqs.as_slice());
            let builder = RecordBuilder {
                op: Some(replaced.map(|(seqs, _)| (seqs[0], seqs[seqs.len() - 1]))),
                source,
                link: match n.kind {
                    Kind::Assistant => n.opens,
                    Kind::ToolResult => n.opener.map_or(0, |o| o + 1),
                    _ => 0,
                },
                chars: n.chars,
                origin: Some(n.origin),
                ..RecordBuilder::append(n.seq, n.kind)
            };
            (builder, sources)
        };
        let mut others = self.shadowed.clone();
        others.sort_by_key(|n| n.seq);
        let header = mirror::load_header(self.event_count, 0, self.nodes.len() as u32, others.len() as u32);
        let mut words = header.to_vec();
        for n in others.iter().chain(&self.nodes) {
            let (builder, sources) = record(n);
            builder.write(sources, &mut words);
        }
        let mut m = Mirror::new();
        m.load(&words).unwrap();
        // The log index: every replacement's record, in seq order.
        let mut log = Vec::new();
        for seq in self.replaced.keys() {
            let n = others.iter().chain(&self.nodes).find(|n| n.seq == *seq).unwrap();
            let (builder, sources) = record(n);
            builder.write(sources, &mut log);
        }
        m.load_log(NONE, &log).unwrap();
        m
    }

    /// The surface positions `start..end` of the run from seq `first` to seq `last`.
    fn span(&self, first: u32, last: u32) -> (usize, usize) {
        let at = |seq: u32| self.nodes.iter().position(|n| n.seq == seq).unwrap();
        (at(first), at(last) + 1)
    }

    /// Replacement `seq` is the rewind report of `mark_id` (its fold of what it replaced).
    fn report(&mut self, seq: u32, mark_id: u64) {
        self.replaced.get_mut(&seq).expect("a replacement").1 = Some(mark_id);
        self.reports.push(Committed { seq, mark_id });
    }

    fn seqs(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.seq).collect()
    }

    /// Appends a `user/message` replacing positions `start..end` (a compaction or a fold report).
    fn replace(&mut self, start: usize, end: usize, chars: u32) -> u32 {
        let seq = self.event_count;
        self.event_count += 1;
        let origin = self.nodes[start..end].iter().map(|n| n.origin).min().unwrap();
        let gone: Vec<Node> = self
            .nodes
            .splice(
                start..end,
                [Node {
                    origin,
                    ..node(seq, Kind::User, chars)
                }],
            )
            .collect();
        self.replaced.insert(seq, (gone.iter().map(|n| n.seq).collect(), None));
        self.shadowed.extend(gone);
        seq
    }

    /// The one synchronous commit step: re-select on the mirror now, append if unchanged.
    fn commit(&mut self, plan: &FoldPlan) -> Commit {
        self.commits.push(plan.clone());
        let region = &plan.request.region;
        let now = self
            .mirror_now()
            .rewind_surface(plan.request.anchor, self.current)
            .unwrap();
        if !region::still_matches(&now, plan.request.anchor, &region.seqs) {
            return Commit::Changed;
        }
        // The region's positions count from the mirror's window: the surface knows its seqs.
        let (start, end) = self.span(region.start(), region.end());
        let seq = self.replace(start, end, plan.report_chars as u32);
        self.report(seq, plan.request.mark_id);
        if let Some(f) = self.after_commit.take() {
            f();
        }
        Commit::Committed
    }
}

fn store() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::new(
        dir.path().join("storages/checkpoint.json"),
        Limits::default(),
    ));
    (dir, store)
}

fn marked() -> (tempfile::TempDir, Arc<Store>, u64) {
    let (dir, store) = store();
    let mark = store.mark(SESSION, ANCHOR, Some("find the bug")).unwrap();
    (dir, store, mark.id)
}

fn mark_of(store: &Store, session: &str) -> Option<Anchor> {
    store.latest(session).unwrap().as_ref().map(Anchor::from)
}

/// Drives a whole rewind of `session` the way the binding does, on one thread: the mark from the
/// store, then each step; a summarizer failure or an abort drops the fold (releasing its lock).
fn drive_session(
    store: &Store,
    session: &str,
    host: &mut Host,
    options: RewindOptions,
) -> fold_core::Result<FoldResult> {
    let (mut rewind, mut step) = Rewind::begin(session, mark_of(store, session), options)?;
    // The result the fold settles with at its first stamp: final, whatever the stamp does.
    let mut settled: Option<FoldResult> = None;
    loop {
        step = match step {
            Step::Snapshot => rewind.read(&host.mirror(), host.current)?,
            Step::Summarize { request, attempt } => {
                host.attempts.push(attempt);
                host.requests.push(request.clone());
                match host.replies.pop_front().unwrap_or_else(|| text("the report")) {
                    Reply::Text(s) => rewind.summarized(s)?,
                    Reply::Fail(e) => return Err(e),
                    Reply::Abort => {
                        rewind.abort()?;
                        unreachable!("an abort before the commit ends the fold")
                    }
                    Reply::CompactThen(s) => {
                        let (start, _) = host.span(request.region.start(), request.region.end());
                        host.replace(start, start + 2, 10);
                        rewind.summarized(s)?
                    }
                    Reply::AbortAfter(s) => {
                        let next = rewind.summarized(s)?;
                        assert!(matches!(next, Step::Commit(_)));
                        rewind.abort()?;
                        unreachable!("an abort before the commit ends the fold")
                    }
                }
            }
            Step::Commit(plan) => {
                let answer = host.commit(&plan);
                rewind.committed(answer)?
            }
            Step::Stamp { mark_id, result } => {
                assert_eq!(settled.get_or_insert(result.clone()), &result, "one result, given once");
                assert_eq!(result.stamp_error, None, "nothing failed before the stamp");
                host.stamps += 1;
                rewind.stamped(store.complete_fold(session, mark_id))?
            }
            Step::Done(result) => {
                let given = settled.expect("a fold that happened is settled at its stamp");
                assert_eq!(
                    FoldResult {
                        stamp_error: None,
                        ..result.clone()
                    },
                    given,
                    "the stamp adds only its error"
                );
                return Ok(result);
            }
        };
    }
}

fn drive(store: &Store, host: &mut Host) -> fold_core::Result<FoldResult> {
    drive_session(store, SESSION, host, RewindOptions::default())
}

/// A fold of the session's mark driven through its commit (report "r"), and the step after it.
fn committed(store: &Store, host: &mut Host) -> (Rewind, Step) {
    let (mut rewind, _) = Rewind::begin(SESSION, mark_of(store, SESSION), RewindOptions::default()).unwrap();
    let Step::Summarize { .. } = rewind.read(&host.mirror(), host.current).unwrap() else {
        panic!("a summary is asked next")
    };
    let Step::Commit(plan) = rewind
        .summarized(Summary {
            text: "r".into(),
            ..Summary::default()
        })
        .unwrap()
    else {
        panic!("a commit is asked next")
    };
    let answer = host.commit(&plan);
    let step = rewind.committed(answer).unwrap();
    (rewind, step)
}

fn retries(n: u32) -> RewindOptions {
    RewindOptions {
        max_summarization_retries: n,
    }
}

fn assert_still_active(store: &Store) {
    let latest = store.latest(SESSION).unwrap().expect("a mark");
    assert_eq!(latest.folded_at, None, "the mark must stay active");
    assert!(store.has_active(SESSION).unwrap());
    // And on disk, for a process that reads the file fresh.
    let fresh = Store::new(store.path(), Limits::default());
    assert!(fresh.has_active(SESSION).unwrap());
}

fn assert_untouched(host: &Host) {
    assert_eq!(host.seqs(), exploration().seqs(), "the surface must be left as it was");
    assert!(host.reports.is_empty());
}

fn assert_unlocked(session: &str) {
    assert!(
        !session_locks().is_held(session),
        "the session's fold lock was released"
    );
}

#[test]
fn a_successful_fold_stamps_the_mark_and_returns_the_result() {
    let _serial = serial();
    let (_dir, store, mark_id) = marked();
    let mut host = exploration().replying([text("Explored: the bug is in parse().")]);
    let result = drive(&store, &mut host).unwrap();
    assert_eq!(
        result,
        FoldResult {
            mark_id,
            folded_nodes: 5,
            start: 4,
            end: 11,
            folded_chars: REGION_CHARS,
            report_chars: 32,
            tokens_freed: None,
            stamp_error: None,
        }
    );
    // One snapshot, the summarizer saw the region once.
    assert_eq!((host.snapshots, host.attempts.as_slice()), (1, [0].as_slice()));
    let request = &host.requests[0];
    assert_eq!((request.mark_id, request.anchor), (mark_id, ANCHOR));
    assert_eq!(request.region.seqs, REGION);
    // The report replaced the region on the surface, once.
    assert_eq!(host.commits.len(), 1);
    assert_eq!(host.commits[0].report, "Explored: the bug is in parse().");
    assert_eq!(host.seqs(), [0, 1, 3, 14, 12]);
    assert_eq!(host.nodes[3].origin, 4);
    // The mark is folded, durably.
    assert!(store.latest(SESSION).unwrap().unwrap().folded_at.is_some());
    assert!(!store.has_active(SESSION).unwrap());
    assert!(!Store::new(store.path(), Limits::default()).has_active(SESSION).unwrap());
    assert_eq!(host.stamps, 1);
    assert_unlocked(SESSION);
}

#[test]
fn the_steps_come_in_the_transactions_order_and_the_lock_is_held_until_the_end() {
    let _serial = serial();
    let (_dir, store, mark_id) = marked();
    let mut host = exploration();
    let (mut rewind, step) = Rewind::begin(SESSION, mark_of(&store, SESSION), RewindOptions::default()).unwrap();
    assert_eq!(step, Step::Snapshot);
    assert!(session_locks().is_held(SESSION), "the lock is taken at begin");
    let Step::Summarize { request, attempt: 0 } = rewind.read(&host.mirror(), host.current).unwrap() else {
        panic!("a summary is asked next")
    };
    assert_eq!(request.region.seqs, REGION);
    let Step::Commit(plan) = rewind
        .summarized(Summary {
            text: "report".into(),
            ..Summary::default()
        })
        .unwrap()
    else {
        panic!("a commit is asked next")
    };
    assert_eq!(plan.report, "report");
    assert!(!rewind.committed_already());
    let answer = host.commit(&plan);
    let Step::Stamp {
        mark_id: stamping,
        result: settled,
    } = rewind.committed(answer).unwrap()
    else {
        panic!("the stamp is asked next")
    };
    assert_eq!(
        (stamping, settled.mark_id, settled.stamp_error),
        (mark_id, mark_id, None)
    );
    assert!(rewind.committed_already());
    let Step::Done(result) = rewind.stamped(Ok(true)).unwrap() else {
        panic!("done")
    };
    assert_eq!(result.mark_id, mark_id);
    assert!(session_locks().is_held(SESSION), "held until the fold is dropped");
    drop(rewind);
    assert_unlocked(SESSION);
}

#[test]
fn steps_out_of_order_are_a_host_failure_that_ends_the_fold() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let (mut rewind, _) = Rewind::begin(SESSION, mark_of(&store, SESSION), RewindOptions::default()).unwrap();
    let err = rewind.summarized(Summary::default()).unwrap_err();
    assert_eq!(err.code(), "HOST_FAILED", "{err}");
    assert!(err.to_string().contains("out of order"), "{err}");
    // The fold is over: even the right step is refused now.
    assert_eq!(
        rewind.read(&exploration().mirror(), Some(12)).unwrap_err().code(),
        "HOST_FAILED"
    );
    assert_eq!(rewind.stamped(Ok(true)).unwrap_err().code(), "HOST_FAILED");
    drop(rewind);
    assert_unlocked(SESSION);
    assert_still_active(&store);
}

#[test]
fn report_chars_are_counted_in_utf16_units_like_js() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    // 4 chars in JS (the emoji is a surrogate pair), 9 bytes of UTF-8.
    let mut host = exploration().replying([text("é😀a")]);
    assert_eq!(drive(&store, &mut host).unwrap().report_chars, 4);
}

#[test]
fn without_a_mark_it_is_no_checkpoint() {
    let _serial = serial();
    let (_dir, store) = store();
    let mut host = exploration();
    let err = drive(&store, &mut host).unwrap_err();
    assert_eq!(err.code(), "NO_CHECKPOINT", "{err}");
    assert_eq!(host.snapshots, 0);
    // Another session's mark is not this session's.
    store.mark("other", 1, None).unwrap();
    assert_eq!(drive(&store, &mut host).unwrap_err().code(), "NO_CHECKPOINT");
    assert_unlocked(SESSION);
}

#[test]
fn an_already_folded_mark_is_an_empty_region() {
    let _serial = serial();
    let (_dir, store, mark_id) = marked();
    let mut host = exploration();
    drive(&store, &mut host).unwrap();
    // One fold per mark: even with new exploration on the surface.
    host.nodes.insert(4, node(15, Kind::Other, 40));
    host.event_count = 16;
    let err = drive(&store, &mut host).unwrap_err();
    assert_eq!(err.code(), "EMPTY_REGION", "{err}");
    assert!(
        err.to_string().contains(&format!("mark {mark_id} was already folded")),
        "{err}"
    );
    assert_eq!(host.attempts, [0], "the summarizer ran only for the first fold");
    // A new mark can be folded again.
    store.mark(SESSION, 15, None).unwrap();
    assert_eq!(drive(&store, &mut host).unwrap().mark_id, mark_id + 1);
}

#[test]
fn the_region_rules_apply_inside_the_transaction() {
    let _serial = serial();
    let (_dir, store) = store();
    // Marked right before the rewind: nothing to fold.
    store.mark(SESSION, 12, None).unwrap();
    let mut host = exploration();
    let err = drive(&store, &mut host).unwrap_err();
    assert_eq!(
        (err.code(), err.to_string().as_str()),
        ("EMPTY_REGION", region::NOTHING_BEFORE_REWIND)
    );
    assert_eq!(host.attempts, Vec::<u32>::new());
    assert_still_active(&store);
    assert_unlocked(SESSION);
}

#[test]
fn a_held_session_lock_is_fold_in_progress_without_waiting() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let (first, _) = Rewind::begin(SESSION, mark_of(&store, SESSION), RewindOptions::default()).unwrap();
    let mut host = exploration();
    let err = drive(&store, &mut host).unwrap_err();
    assert_eq!(err.code(), "FOLD_IN_PROGRESS", "{err}");
    assert!(err.to_string().contains("already in progress"), "{err}");
    assert_eq!(host.snapshots, 0, "nothing was read");
    assert_still_active(&store);
    // Other sessions are not blocked.
    store.mark("other", ANCHOR, None).unwrap();
    drive_session(&store, "other", &mut exploration(), RewindOptions::default()).unwrap();
    // The first fold dropped (say its summarizer failed): the session folds again.
    drop(first);
    drive(&store, &mut host).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::await_holding_lock,
    reason = "the guard only serializes this file's tests; nothing else takes it"
)]
async fn a_mark_taken_while_a_fold_runs_lands_after_it() {
    let _serial = serial();
    let (_dir, store, first) = marked();
    let (rewind, _) = Rewind::begin(SESSION, mark_of(&store, SESSION), RewindOptions::default()).unwrap();
    let marking = tokio::spawn({
        let store = store.clone();
        async move { fold::mark(&store, SESSION, 20, None).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!marking.is_finished(), "the mark waits for the fold's lock");
    drop(rewind);
    let second = tokio::time::timeout(Duration::from_secs(5), marking)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(second.id, first + 1);
    assert_unlocked(SESSION);
}

#[test]
fn empty_completions_are_retried_then_summarize_failed_with_finish_and_usage() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let mut host = exploration().replying([
        empty("length", 0, Some(3)),
        Reply::Text(Summary {
            text: " \n\t ".into(),
            ..Summary::default()
        }),
        empty("length", 512, Some(498)),
        text("never asked for"),
    ]);
    let err = drive_session(&store, SESSION, &mut host, retries(2)).unwrap_err();
    assert_eq!(err.code(), "SUMMARIZE_FAILED", "{err}");
    assert_eq!(
        host.attempts,
        [0, 1, 2],
        "1 try + 2 retries; whitespace counts as empty"
    );
    let msg = err.to_string();
    assert!(
        msg.contains(
            "no text report content after 2 retries (finish: length, outputTokens: 512, reasoningTokens: 498)"
        ),
        "{msg}"
    );
    assert!(host.commits.is_empty());
    assert_untouched(&host);
    assert_still_active(&store);
    assert_unlocked(SESSION);
}

#[test]
fn a_report_cut_off_at_its_budget_is_retried_and_never_committed() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let cut = |finish: &str| {
        Reply::Text(Summary {
            text: "## Findings\n- the parser drops the last tok".into(),
            finish: Some(finish.into()),
            output_tokens: Some(1024),
            ..Summary::default()
        })
    };
    // Cut off, then whole: the whole one is committed.
    let mut host = exploration().replying([cut("max-tokens"), text("R: whole")]);
    let result = drive_session(&store, SESSION, &mut host, retries(2)).unwrap();
    assert_eq!(host.attempts, [0, 1]);
    assert_eq!(host.commits.len(), 1);
    assert_eq!(result.report_chars, 8);
    // Cut off every time ("length" too): SUMMARIZE_FAILED, nothing written.
    let (_dir, store, _) = marked();
    let mut host = exploration().replying([cut("length"), cut("max-tokens"), text("never asked for")]);
    let err = drive_session(&store, SESSION, &mut host, retries(1)).unwrap_err();
    assert_eq!(err.code(), "SUMMARIZE_FAILED", "{err}");
    assert_eq!(host.attempts, [0, 1]);
    assert!(
        err.to_string().contains(
            "cut off at its output budget (maxTokens) after 1 retries (finish: max-tokens, outputTokens: 1024)"
        ),
        "{err}"
    );
    assert!(host.commits.is_empty());
    assert_untouched(&host);
    assert_still_active(&store);
    assert_unlocked(SESSION);
}

#[test]
fn summarize_failed_leaves_out_reasoning_tokens_when_absent() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let mut host = exploration().replying([empty("content_filter", 7, None)]);
    let err = drive_session(&store, SESSION, &mut host, retries(0)).unwrap_err();
    assert_eq!(err.code(), "SUMMARIZE_FAILED");
    assert_eq!(host.attempts, [0], "no retries");
    let msg = err.to_string();
    assert!(
        msg.contains("after 0 retries (finish: content_filter, outputTokens: 7)"),
        "{msg}"
    );
    assert!(!msg.contains("reasoningTokens"), "{msg}");
    // No finish reason and no usage at all.
    let mut host = exploration().replying([Reply::Text(Summary::default())]);
    let msg = drive_session(&store, SESSION, &mut host, retries(0))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("(finish: unknown)"), "{msg}");
    assert_still_active(&store);
}

#[test]
fn a_report_after_an_empty_completion_folds() {
    let _serial = serial();
    let (_dir, store, mark_id) = marked();
    let mut host = exploration().replying([empty("length", 0, Some(40)), text("the report")]);
    let result = drive(&store, &mut host).unwrap();
    assert_eq!(host.attempts, [0, 1]);
    assert_eq!((result.mark_id, result.report_chars), (mark_id, 10));
    assert_eq!(host.commits[0].report, "the report");
}

#[test]
fn a_report_not_smaller_than_the_region_is_shrink() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let same = "x".repeat(REGION_CHARS as usize);
    let mut host = exploration().replying([text(&same)]);
    let err = drive(&store, &mut host).unwrap_err();
    assert_eq!(err.code(), "SHRINK", "{err}");
    assert!(
        err.to_string()
            .contains("(300 chars) is not smaller than the folded region (300 chars over 5 nodes)"),
        "{err}"
    );
    assert!(host.commits.is_empty());
    assert_untouched(&host);
    assert_still_active(&store);
    // One char shorter folds.
    let mut host = exploration().replying([text(&same[1..])]);
    assert_eq!(drive(&store, &mut host).unwrap().report_chars, REGION_CHARS - 1);
}

#[test]
fn with_token_prices_the_shrink_check_compares_tokens_and_the_result_frees_them() {
    let _serial = serial();
    let priced = |text: &str, region: u64, report: u64| {
        Reply::Text(Summary {
            text: text.into(),
            tokens: Some(TokenPrices { region, report }),
            ..Summary::default()
        })
    };
    // Longer than the region in chars, lighter in tokens: folds, freeing the difference.
    let (_dir, store, _) = marked();
    let long = "y".repeat(REGION_CHARS as usize + 10);
    let mut host = exploration().replying([priced(&long, 120, 80)]);
    let result = drive(&store, &mut host).unwrap();
    assert_eq!(
        (result.report_chars, result.tokens_freed),
        (REGION_CHARS + 10, Some(40))
    );
    // Shorter in chars, not lighter in tokens: SHRINK, in tokens.
    let (_dir, store, _) = marked();
    let mut host = exploration().replying([priced("short", 120, 120)]);
    let err = drive(&store, &mut host).unwrap_err();
    assert_eq!(err.code(), "SHRINK");
    assert!(
        err.to_string()
            .contains("(120 tokens) is not smaller than the folded region (120 tokens over 5 nodes)"),
        "{err}"
    );
    assert_untouched(&host);
    assert_still_active(&store);
}

#[test]
fn the_shrink_check_is_skipped_for_a_region_without_text() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let mut host = exploration();
    for n in &mut host.nodes[3..8] {
        n.chars = 0;
    }
    let mut host = host.replying([text(&"long report ".repeat(50))]);
    let result = drive(&store, &mut host).unwrap();
    assert_eq!((result.folded_chars, result.report_chars), (0, 600));
}

#[test]
fn a_surface_that_changed_under_the_summarizer_is_changed() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let mut host = exploration().replying([Reply::CompactThen(Summary {
        text: "the report".into(),
        ..Summary::default()
    })]);
    let err = drive(&store, &mut host).unwrap_err();
    assert_eq!(err.code(), "CHANGED", "{err}");
    assert!(err.to_string().contains("changed during summarization"), "{err}");
    assert_eq!(host.commits.len(), 1, "the commit answered changed");
    assert_eq!(host.seqs(), [0, 1, 3, 14, 7, 10, 11, 12], "only the compaction landed");
    assert!(host.reports.is_empty());
    assert_still_active(&store);
    // Retrying folds the new region.
    let result = drive(&store, &mut host).unwrap();
    assert_eq!((result.start, result.end, result.folded_nodes), (14, 11, 4));
}

#[test]
fn an_abort_right_after_begin_is_aborted() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let (mut rewind, _) = Rewind::begin(SESSION, mark_of(&store, SESSION), RewindOptions::default()).unwrap();
    let err = rewind.abort().unwrap_err();
    assert_eq!(err.code(), "ABORTED", "{err}");
    assert_eq!(
        rewind.read(&exploration().mirror(), Some(12)).unwrap_err().code(),
        "HOST_FAILED",
        "the fold is over"
    );
    drop(rewind);
    assert_still_active(&store);
    assert_unlocked(SESSION);
}

#[test]
fn an_abort_while_the_summarizer_runs_is_aborted() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let mut host = exploration().replying([Reply::Abort]);
    let err = drive(&store, &mut host).unwrap_err();
    assert_eq!(err.code(), "ABORTED", "{err}");
    assert_eq!(host.attempts, [0]);
    assert!(host.commits.is_empty());
    assert_untouched(&host);
    assert_still_active(&store);
    assert_unlocked(SESSION);
}

#[test]
fn an_abort_after_the_report_but_before_the_commit_is_aborted() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let mut host = exploration().replying([Reply::AbortAfter(Summary {
        text: "the report".into(),
        ..Summary::default()
    })]);
    let err = drive(&store, &mut host).unwrap_err();
    assert_eq!(err.code(), "ABORTED", "{err}");
    assert!(host.commits.is_empty(), "the commit never starts");
    assert_untouched(&host);
    assert_still_active(&store);
}

#[test]
fn an_abort_once_committed_is_ignored() {
    let _serial = serial();
    let (_dir, store, mark_id) = marked();
    let mut host = exploration();
    let (mut rewind, step) = committed(&store, &mut host);
    assert!(
        matches!(step, Step::Stamp { mark_id: m, .. } if m == mark_id),
        "{step:?}"
    );
    rewind.abort().expect("the fold has happened: the abort is ignored");
    assert!(matches!(
        rewind.stamped(store.complete_fold(SESSION, mark_id)).unwrap(),
        Step::Done(_)
    ));
    rewind.abort().expect("and still after it is done");
    drop(rewind);
    assert!(!store.has_active(SESSION).unwrap());
    // A repair is a fold that has happened too.
    let mut host = exploration();
    host.replace(3, 8, 33);
    host.report(14, mark_id + 1);
    store.mark(SESSION, ANCHOR, None).unwrap();
    let (mut rewind, _) = Rewind::begin(SESSION, mark_of(&store, SESSION), RewindOptions::default()).unwrap();
    let step = rewind.read(&host.mirror(), host.current).unwrap();
    assert!(
        matches!(step, Step::Stamp { mark_id: m, .. } if m == mark_id + 1),
        "{step:?}"
    );
    rewind.abort().expect("a repair is not cancelled");
}

#[test]
fn a_summarizer_failure_drops_the_fold_writing_nothing() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let failure = FoldError::SummarizeFailed("summarization failed: rate limited".into());
    let mut host = exploration().replying([Reply::Fail(failure.clone()), text("never asked for")]);
    assert_eq!(drive(&store, &mut host).unwrap_err(), failure);
    assert_eq!(host.attempts, [0], "an error is not an empty completion: no retry");
    assert_untouched(&host);
    assert_still_active(&store);
    assert_unlocked(SESSION);
}

#[test]
fn a_committed_but_unstamped_fold_is_repaired_not_folded_again() {
    let _serial = serial();
    let (_dir, store, mark_id) = marked();
    // The process died between the commit and the stamp: the report (seq 14, 33 chars) of this
    // mark is on the surface, in the session's log, while the store says active.
    let mut host = exploration();
    host.replace(3, 8, 33);
    host.report(14, mark_id);
    let before = host.seqs();
    assert_still_active(&store);
    let result = drive(&store, &mut host).unwrap();
    assert_eq!(
        result,
        FoldResult {
            mark_id,
            folded_nodes: 5,
            start: 4,
            end: 11,
            folded_chars: 300,
            report_chars: 33,
            tokens_freed: None,
            stamp_error: None,
        }
    );
    assert!(host.attempts.is_empty(), "the summarizer is never called");
    assert!(host.commits.is_empty(), "nothing is appended");
    assert_eq!(host.seqs(), before);
    assert!(!store.has_active(SESSION).unwrap());
    assert!(!Store::new(store.path(), Limits::default()).has_active(SESSION).unwrap());
}

#[test]
fn a_report_of_an_older_mark_does_not_repair_the_latest() {
    let _serial = serial();
    let (_dir, store, first) = marked();
    let mut host = exploration();
    drive(&store, &mut host).unwrap();
    assert_eq!(host.reports[0].mark_id, first);
    // The rewind's result (15), a new mark (logLength 16), new exploration, a new rewind call:
    // the old report stays on the surface, the new region is folded.
    let second = store.mark(SESSION, 16, None).unwrap();
    host.nodes
        .extend([res(15, 12, 5), asst(16, 1, 10), res(17, 16, 90), asst(18, 1, 5)]);
    host.event_count = 19;
    host.current = Some(18);
    let result = drive(&store, &mut host).unwrap();
    assert_eq!((result.mark_id, result.start, result.end), (second.id, 16, 17));
    assert_eq!(host.attempts, [0, 0]);
}

#[test]
fn a_report_appended_before_the_mark_never_repairs_it() {
    let _serial = serial();
    // The store file was deleted (or `store` moved): ids restart at 1. An old fold's report,
    // which named mark 1 of the old store, stands on the surface (seq 14); the new store's first
    // mark, id 1 again, is taken after it (log length 16). The report is older than the mark, so
    // it is not that mark's fold: the new exploration is folded.
    let (_dir, store) = store();
    let mut host = exploration();
    host.replace(3, 8, 33);
    host.report(14, 1);
    host.nodes
        .extend([res(15, 12, 5), asst(16, 1, 10), res(17, 16, 90), asst(18, 1, 5)]);
    host.event_count = 19;
    host.current = Some(18);
    let mark = store.mark(SESSION, 16, None).unwrap();
    assert_eq!(mark.id, 1, "a fresh store starts at 1 again");
    let result = drive(&store, &mut host).unwrap();
    assert_eq!(
        (result.mark_id, result.start, result.end, result.folded_nodes),
        (1, 16, 17, 2)
    );
    assert_eq!(host.attempts, [0], "the new region was summarized, not repaired");
    assert_eq!(host.commits.len(), 1);
}

#[test]
fn a_report_names_its_mark_id_whole_past_32_bits() {
    let _serial = serial();
    // Mark 2^32 + 1's report must not be read as mark 1's, nor mark 1's as 2^32 + 1's.
    let (_dir, store, mark_id) = marked();
    assert_eq!(mark_id, 1);
    let mut host = exploration();
    host.replace(3, 8, 33);
    host.report(14, (1 << 32) + 1);
    assert_eq!(host.mirror_now().report(14).map(|r| r.mark_id), Some((1 << 32) + 1));
    // Not this mark's report: the fold goes on (and selects the report itself, after the mark).
    let result = drive(&store, &mut host).unwrap();
    assert_eq!(host.attempts, [0]);
    assert_eq!(result.start, 14);
}

#[test]
fn a_stamp_that_fails_after_the_commit_still_returns_the_fold() {
    let _serial = serial();
    let (dir, store, mark_id) = marked();
    // Every write fails once the commit has run: the store's folder is now a file.
    let folder = dir.path().join("storages");
    let away = folder.with_extension("away");
    let mut host = exploration().after_commit({
        let (folder, away) = (folder.clone(), away.clone());
        move || {
            std::fs::rename(&folder, &away).unwrap();
            std::fs::write(&folder, "not a folder").unwrap();
        }
    });
    let result = drive(&store, &mut host).expect("the fold happened");
    assert_eq!((result.mark_id, result.folded_nodes), (mark_id, 5));
    let why = result.stamp_error.clone().expect("the stamp failed");
    assert!(why.starts_with("STORE_IO: "), "{why}");
    assert_eq!(host.stamps, STAMP_ATTEMPTS, "tried {STAMP_ATTEMPTS} times");
    assert_eq!(host.reports.len(), 1, "the report is on the surface");
    assert_unlocked(SESSION);
    std::fs::remove_file(&folder).unwrap();
    std::fs::rename(&away, &folder).unwrap();
    // The next rewind finishes the stamp instead of folding again.
    let repaired = drive(&store, &mut host).unwrap();
    assert_eq!(repaired.stamp_error, None);
    assert_eq!((repaired.start, repaired.end), (result.start, result.end));
    assert_eq!(host.attempts, [0], "no second report");
    assert!(!store.has_active(SESSION).unwrap());
}

#[test]
fn a_stamp_that_finds_the_mark_gone_still_returns_the_fold() {
    let _serial = serial();
    let (_dir, store, mark_id) = marked();
    let mut host = exploration();
    let (mut rewind, _) = committed(&store, &mut host);
    // `complete_fold` answers false: the mark is no longer the latest active one.
    let Step::Done(result) = rewind.stamped(Ok(false)).unwrap() else {
        panic!("done")
    };
    assert_eq!((result.mark_id, result.stamp_error), (mark_id, None));
}

#[test]
fn more_than_eight_retries_is_an_invalid_argument() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let mut host = exploration();
    let err = drive_session(&store, SESSION, &mut host, retries(9)).unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    assert!(err.to_string().contains("maxSummarizationRetries"), "{err}");
    assert_eq!(host.snapshots, 0);
    assert_still_active(&store);
    assert_unlocked(SESSION);
    // 8 is allowed: 9 empty completions, then SUMMARIZE_FAILED.
    let mut host = exploration().replying((0..9).map(|_| empty("stop", 0, None)));
    let err = drive_session(&store, SESSION, &mut host, retries(fold::MAX_SUMMARIZATION_RETRIES)).unwrap_err();
    assert_eq!(err.code(), "SUMMARIZE_FAILED");
    assert_eq!(host.attempts, (0..=8).collect::<Vec<_>>());
}

#[test]
fn a_bad_session_id_is_an_invalid_argument() {
    let _serial = serial();
    for id in ["", "a\nb"] {
        let err = Rewind::begin(id, None, RewindOptions::default()).unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    }
}

#[test]
fn a_rewind_call_not_on_the_surface_fails_the_fold_as_the_hosts_and_writes_nothing() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    let mut host = exploration();
    host.current = Some(2); // a log-only event
    let err = drive(&store, &mut host).unwrap_err();
    assert_eq!(err.code(), "HOST_FAILED", "{err}");
    assert!(err.to_string().contains("current seq 2 is not on the surface"), "{err}");
    assert!(host.attempts.is_empty());
    assert_still_active(&store);
    assert_unlocked(SESSION);
}

#[test]
fn is_held_tells_whether_a_fold_holds_the_session() {
    let _serial = serial();
    let (_dir, store, _) = marked();
    assert!(!session_locks().is_held(SESSION));
    assert!(!session_locks().is_held("never-seen"));
    let (rewind, _) = Rewind::begin(SESSION, mark_of(&store, SESSION), RewindOptions::default()).unwrap();
    assert!(session_locks().is_held(SESSION));
    assert!(!session_locks().is_held("other"));
    drop(rewind);
    assert!(!session_locks().is_held(SESSION));
}

//! The rewind transaction (`fold::rewind`) against a small Rust `FoldHost`: a session surface
//! held in memory, a scripted summarizer, and a commit that re-selects on a fresh snapshot and
//! splices the report in, as the JS host does. The store is a real one in a temp dir.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use fold_core::fold::{
    self, Abort, Commit, FoldHost, FoldPlan, FoldRequest, FoldResult, RewindOptions, Summary, TokenPrices,
};
use fold_core::locks::session_locks;
use fold_core::region;
use fold_core::store::{Limits, Store};
use fold_core::surface::{Kind, Node, Report, Surface};
use fold_core::FoldError;
use tokio::sync::Notify;

const SESSION: &str = "session-1";

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

/// How the scripted summarizer behaves on each call.
enum Reply {
    Text(Summary),
    Fail(FoldError),
    /// Never settles.
    Hang,
    /// Fires the abort, then never settles.
    AbortThenHang(Abort),
    /// A compaction replaces the region's first two nodes, then the report is returned.
    CompactThen(Summary),
    /// Fires the abort, then returns the report anyway.
    AbortThen(Abort),
}

fn text(t: &str) -> Reply {
    Reply::Text(Summary {
        text: t.into(),
        finish: Some("stop".into()),
        output_tokens: Some(12),
        reasoning_tokens: None,
        tokens: None,
    })
}

fn empty(finish: &str, output: u64, reasoning: Option<u64>) -> Reply {
    Reply::Text(Summary {
        text: String::new(),
        finish: Some(finish.into()),
        output_tokens: Some(output),
        reasoning_tokens: reasoning,
        tokens: None,
    })
}

/// A session surface in memory.
struct Host {
    event_count: u32,
    current: Option<u32>,
    nodes: Vec<Node>,
    reports: Vec<Report>,
    replies: VecDeque<Reply>,
    /// Notified when the summarizer is entered.
    entered: Arc<Notify>,
    snapshots: u32,
    attempts: Vec<u32>,
    requests: Vec<FoldRequest>,
    commits: Vec<FoldPlan>,
    /// Runs once a commit has appended the report.
    after_commit: Option<Box<dyn FnOnce() + Send>>,
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
            reports: Vec::new(),
            replies: VecDeque::new(),
            entered: Arc::new(Notify::new()),
            snapshots: 0,
            attempts: Vec::new(),
            requests: Vec::new(),
            commits: Vec::new(),
            after_commit: None,
        }
    }

    fn after_commit(mut self, f: impl FnOnce() + Send + 'static) -> Self {
        self.after_commit = Some(Box::new(f));
        self
    }

    fn replying(mut self, replies: impl IntoIterator<Item = Reply>) -> Self {
        self.replies.extend(replies);
        self
    }

    fn words(&self) -> Vec<u32> {
        Surface::encode(self.event_count, self.current, &self.nodes, &self.reports)
    }

    fn seqs(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.seq).collect()
    }

    /// Appends a `user/message` replacing positions `start..end` (a compaction or a fold report).
    fn replace(&mut self, start: usize, end: usize, chars: u32) -> u32 {
        let seq = self.event_count;
        self.event_count += 1;
        let origin = self.nodes[start..end].iter().map(|n| n.origin).min().unwrap();
        self.nodes.splice(
            start..end,
            [Node {
                origin,
                ..node(seq, Kind::User, chars)
            }],
        );
        seq
    }
}

impl FoldHost for Host {
    async fn snapshot(&mut self) -> fold_core::Result<Vec<u32>> {
        self.snapshots += 1;
        Ok(self.words())
    }

    async fn summarize(&mut self, request: &FoldRequest, attempt: u32) -> fold_core::Result<Summary> {
        self.entered.notify_one();
        self.attempts.push(attempt);
        self.requests.push(request.clone());
        match self.replies.pop_front().unwrap_or_else(|| text("the report")) {
            Reply::Text(s) => Ok(s),
            Reply::Fail(e) => Err(e),
            Reply::Hang => std::future::pending().await,
            Reply::AbortThenHang(abort) => {
                abort.fire();
                std::future::pending().await
            }
            Reply::AbortThen(abort) => {
                abort.fire();
                Ok(Summary {
                    text: "the report".into(),
                    ..Summary::default()
                })
            }
            Reply::CompactThen(s) => {
                let start = request.region.start_pos;
                self.replace(start, start + 2, 10);
                Ok(s)
            }
        }
    }

    async fn commit(&mut self, plan: &FoldPlan) -> fold_core::Result<Commit> {
        self.commits.push(plan.clone());
        let fresh = Surface::decode(&self.words())?;
        let region = &plan.request.region;
        if !region::still_matches(&fresh, plan.request.anchor, &region.seqs) {
            return Ok(Commit::Changed);
        }
        let seq = self.replace(region.start_pos, region.end_pos, plan.report_chars as u32);
        self.reports.push(Report {
            seq,
            mark_id: plan.request.mark_id,
            folded_nodes: region.seqs.len() as u32,
            start: region.start(),
            end: region.end(),
            folded_chars: region.folded_chars as u32,
        });
        if let Some(f) = self.after_commit.take() {
            f();
        }
        Ok(Commit::Committed)
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

async fn marked() -> (tempfile::TempDir, Arc<Store>, u64) {
    let (dir, store) = store();
    let mark = fold::mark(&store, SESSION, ANCHOR, Some("find the bug".into()))
        .await
        .unwrap();
    (dir, store, mark.id)
}

async fn rewind(store: &Arc<Store>, host: &mut Host) -> fold_core::Result<FoldResult> {
    fold::rewind(store, SESSION, host, RewindOptions::default(), &Abort::default()).await
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

#[tokio::test]
async fn a_successful_fold_stamps_the_mark_and_returns_the_result() {
    let (_dir, store, mark_id) = marked().await;
    let mut host = exploration().replying([text("Explored: the bug is in parse().")]);
    let result = rewind(&store, &mut host).await.unwrap();
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
    // The summarizer saw the region, once.
    assert_eq!(host.attempts, [0]);
    let request = &host.requests[0];
    assert_eq!((request.mark_id, request.anchor), (mark_id, ANCHOR));
    assert_eq!(request.region.seqs, REGION);
    // The report replaced the region on the surface, once.
    assert_eq!(host.commits.len(), 1);
    assert_eq!(host.commits[0].report, "Explored: the bug is in parse().");
    assert_eq!(host.seqs(), [0, 1, 3, 14, 12]);
    assert_eq!(host.nodes[3].origin, 4);
    // The mark is folded, durably.
    let latest = store.latest(SESSION).unwrap().unwrap();
    assert!(latest.folded_at.is_some());
    assert!(!store.has_active(SESSION).unwrap());
    assert!(!Store::new(store.path(), Limits::default()).has_active(SESSION).unwrap());
    // The session lock was released.
    assert!(session_locks()
        .try_lock(&store.path().to_string_lossy(), SESSION)
        .is_some());
}

#[tokio::test]
async fn report_chars_are_counted_in_utf16_units_like_js() {
    let (_dir, store, _) = marked().await;
    // 4 chars in JS (the emoji is a surrogate pair), 9 bytes of UTF-8.
    let mut host = exploration().replying([text("é😀a")]);
    assert_eq!(rewind(&store, &mut host).await.unwrap().report_chars, 4);
}

#[tokio::test]
async fn without_a_mark_it_is_no_checkpoint() {
    let (_dir, store) = store();
    let mut host = exploration();
    let err = rewind(&store, &mut host).await.unwrap_err();
    assert_eq!(err.code(), "NO_CHECKPOINT", "{err}");
    assert_eq!(host.snapshots, 0);
    // Another session's mark is not this session's.
    fold::mark(&store, "other", 1, None).await.unwrap();
    assert_eq!(rewind(&store, &mut host).await.unwrap_err().code(), "NO_CHECKPOINT");
}

#[tokio::test]
async fn an_already_folded_mark_is_an_empty_region() {
    let (_dir, store, mark_id) = marked().await;
    let mut host = exploration();
    rewind(&store, &mut host).await.unwrap();
    // One fold per mark: even with new exploration on the surface.
    host.nodes.insert(4, user(15, 40));
    host.event_count = 16;
    let err = rewind(&store, &mut host).await.unwrap_err();
    assert_eq!(err.code(), "EMPTY_REGION", "{err}");
    assert!(
        err.to_string().contains(&format!("mark {mark_id} was already folded")),
        "{err}"
    );
    assert_eq!(host.attempts, [0], "the summarizer ran only for the first fold");
    // A new mark can be folded again.
    fold::mark(&store, SESSION, 15, None).await.unwrap();
    let second = rewind(&store, &mut host).await.unwrap();
    assert_eq!(second.mark_id, mark_id + 1);
}

#[tokio::test]
async fn the_region_rules_apply_inside_the_transaction() {
    let (_dir, store) = store();
    // Marked right before the rewind: nothing to fold.
    fold::mark(&store, SESSION, 12, None).await.unwrap();
    let mut host = exploration();
    let err = rewind(&store, &mut host).await.unwrap_err();
    assert_eq!(
        (err.code(), err.to_string().as_str()),
        ("EMPTY_REGION", region::NOTHING_BEFORE_REWIND)
    );
    assert_eq!(host.attempts, Vec::<u32>::new());
    assert_still_active(&store);
}

#[tokio::test]
async fn a_held_session_lock_is_fold_in_progress_without_waiting() {
    let (_dir, store, _) = marked().await;
    let key = store.path().to_string_lossy().into_owned();
    let guard = session_locks().lock(&key, SESSION).await;
    let mut host = exploration();
    let err = tokio::time::timeout(Duration::from_secs(5), rewind(&store, &mut host))
        .await
        .expect("try-lock never waits")
        .unwrap_err();
    assert_eq!(err.code(), "FOLD_IN_PROGRESS", "{err}");
    assert_eq!(host.snapshots, 0, "nothing was read");
    assert_still_active(&store);
    // Other sessions of the same store are not blocked.
    fold::mark(&store, "other", ANCHOR, None).await.unwrap();
    let mut other = exploration();
    fold::rewind(&store, "other", &mut other, RewindOptions::default(), &Abort::default())
        .await
        .unwrap();
    drop(guard);
    rewind(&store, &mut host).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_rewind_while_one_runs_is_fold_in_progress() {
    let (_dir, store, _) = marked().await;
    let abort = Abort::default();
    let first = exploration().replying([Reply::Hang]);
    let entered = first.entered.clone();
    let running = tokio::spawn({
        let (store, abort) = (store.clone(), abort.clone());
        async move {
            let mut host = first;
            let out = fold::rewind(&store, SESSION, &mut host, RewindOptions::default(), &abort).await;
            (out, host)
        }
    });
    entered.notified().await;
    let mut second = exploration();
    let err = tokio::time::timeout(Duration::from_secs(5), rewind(&store, &mut second))
        .await
        .expect("try-lock never waits")
        .unwrap_err();
    assert_eq!(err.code(), "FOLD_IN_PROGRESS", "{err}");
    assert_eq!(second.snapshots, 0);
    abort.fire();
    let (out, host) = running.await.unwrap();
    assert_eq!(out.unwrap_err().code(), "ABORTED");
    assert_untouched(&host);
    assert_still_active(&store);
    // The lock is free again: the fold can be retried.
    rewind(&store, &mut second).await.unwrap();
}

#[tokio::test]
async fn empty_completions_are_retried_then_summarize_failed_with_finish_and_usage() {
    let (_dir, store, _) = marked().await;
    let mut host = exploration().replying([
        empty("length", 0, Some(3)),
        Reply::Text(Summary {
            text: " \n\t ".into(),
            ..Summary::default()
        }),
        empty("length", 512, Some(498)),
        text("never asked for"),
    ]);
    let err = fold::rewind(&store, SESSION, &mut host, retries(2), &Abort::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SUMMARIZE_FAILED", "{err}");
    assert_eq!(
        host.attempts,
        [0, 1, 2],
        "1 try + 2 retries; whitespace counts as empty"
    );
    let msg = err.to_string();
    for part in ["3 time(s)", "finish: length", "outputTokens 512", "reasoningTokens 498"] {
        assert!(msg.contains(part), "{part:?} missing from {msg:?}");
    }
    assert!(host.commits.is_empty());
    assert_untouched(&host);
    assert_still_active(&store);
}

#[tokio::test]
async fn summarize_failed_leaves_out_reasoning_tokens_when_absent() {
    let (_dir, store, _) = marked().await;
    let mut host = exploration().replying([empty("content_filter", 7, None)]);
    let err = fold::rewind(&store, SESSION, &mut host, retries(0), &Abort::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SUMMARIZE_FAILED");
    assert_eq!(host.attempts, [0], "no retries");
    let msg = err.to_string();
    assert!(
        msg.contains("finish: content_filter") && msg.contains("outputTokens 7"),
        "{msg}"
    );
    assert!(!msg.contains("reasoningTokens"), "{msg}");
    // No finish reason and no usage at all.
    let mut host = exploration().replying([Reply::Text(Summary::default())]);
    let err = fold::rewind(&store, SESSION, &mut host, retries(0), &Abort::default())
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("finish: unknown") && !msg.contains("Tokens"), "{msg}");
    assert_still_active(&store);
}

#[tokio::test]
async fn a_report_after_an_empty_completion_folds() {
    let (_dir, store, mark_id) = marked().await;
    let mut host = exploration().replying([empty("length", 0, Some(40)), text("the report")]);
    let result = rewind(&store, &mut host).await.unwrap();
    assert_eq!(host.attempts, [0, 1]);
    assert_eq!((result.mark_id, result.report_chars), (mark_id, 10));
    assert_eq!(host.commits[0].report, "the report");
}

#[tokio::test]
async fn a_report_not_shorter_than_the_region_is_shrink() {
    let (_dir, store, _) = marked().await;
    let same = "x".repeat(REGION_CHARS as usize);
    let mut host = exploration().replying([text(&same)]);
    let err = rewind(&store, &mut host).await.unwrap_err();
    assert_eq!(err.code(), "SHRINK", "{err}");
    assert!(err.to_string().contains("300"), "{err}");
    assert!(host.commits.is_empty());
    assert_untouched(&host);
    assert_still_active(&store);
    // One char shorter folds.
    let mut host = exploration().replying([text(&same[1..])]);
    assert_eq!(rewind(&store, &mut host).await.unwrap().report_chars, REGION_CHARS - 1);
}

#[tokio::test]
async fn with_token_prices_the_shrink_check_compares_tokens_and_the_result_frees_them() {
    let (_dir, store, _) = marked().await;
    let priced = |text: &str, region: u64, report: u64| {
        Reply::Text(Summary {
            text: text.into(),
            tokens: Some(TokenPrices { region, report }),
            ..Summary::default()
        })
    };
    // Longer than the region in chars, lighter in tokens: folds, freeing the difference.
    let long = "y".repeat(REGION_CHARS as usize + 10);
    let mut host = exploration().replying([priced(&long, 120, 80)]);
    let result = rewind(&store, &mut host).await.unwrap();
    assert_eq!(
        (result.report_chars, result.tokens_freed),
        (REGION_CHARS + 10, Some(40))
    );
    // Shorter in chars, not lighter in tokens: SHRINK, in tokens.
    let (_dir, store, _) = marked().await;
    let mut host = exploration().replying([priced("short", 120, 120)]);
    let err = rewind(&store, &mut host).await.unwrap_err();
    assert_eq!(err.code(), "SHRINK");
    assert!(
        err.to_string()
            .contains("(120 tokens) is not smaller than the folded region (120 tokens over 5 nodes)"),
        "{err}"
    );
    assert_untouched(&host);
    assert_still_active(&store);
}

#[tokio::test]
async fn the_shrink_check_is_skipped_for_a_region_without_text() {
    let (_dir, store, _) = marked().await;
    let mut host = exploration();
    for n in &mut host.nodes[3..8] {
        n.chars = 0;
    }
    let mut host = host.replying([text(&"long report ".repeat(50))]);
    let result = rewind(&store, &mut host).await.unwrap();
    assert_eq!((result.folded_chars, result.report_chars), (0, 600));
}

#[tokio::test]
async fn a_surface_that_changed_under_the_summarizer_is_changed() {
    let (_dir, store, _) = marked().await;
    let mut host = exploration().replying([Reply::CompactThen(Summary {
        text: "the report".into(),
        ..Summary::default()
    })]);
    let err = rewind(&store, &mut host).await.unwrap_err();
    assert_eq!(err.code(), "CHANGED", "{err}");
    assert_eq!(host.commits.len(), 1, "the commit answered changed");
    assert_eq!(host.seqs(), [0, 1, 3, 14, 7, 10, 11, 12], "only the compaction landed");
    assert!(host.reports.is_empty());
    assert_still_active(&store);
    // Retrying folds the new region.
    let result = rewind(&store, &mut host).await.unwrap();
    assert_eq!((result.start, result.end, result.folded_nodes), (14, 11, 4));
}

#[tokio::test]
async fn an_abort_before_the_rewind_is_aborted() {
    let (_dir, store, _) = marked().await;
    let abort = Abort::default();
    abort.fire();
    let mut host = exploration();
    let err = fold::rewind(&store, SESSION, &mut host, RewindOptions::default(), &abort)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ABORTED", "{err}");
    assert_eq!((host.snapshots, host.attempts.len(), host.commits.len()), (0, 0, 0));
    assert_untouched(&host);
    assert_still_active(&store);
}

#[tokio::test]
async fn an_abort_during_a_summarizer_that_never_settles_is_aborted() {
    let (_dir, store, _) = marked().await;
    let abort = Abort::default();
    let mut host = exploration().replying([Reply::AbortThenHang(abort.clone())]);
    let err = tokio::time::timeout(
        Duration::from_secs(5),
        fold::rewind(&store, SESSION, &mut host, RewindOptions::default(), &abort),
    )
    .await
    .expect("the abort ends the wait")
    .unwrap_err();
    assert_eq!(err.code(), "ABORTED", "{err}");
    assert_eq!(host.attempts, [0]);
    assert!(host.commits.is_empty());
    assert_untouched(&host);
    assert_still_active(&store);
}

#[tokio::test]
async fn an_abort_after_the_report_but_before_the_commit_is_aborted() {
    let (_dir, store, _) = marked().await;
    let abort = Abort::default();
    let mut host = exploration().replying([Reply::AbortThen(abort.clone())]);
    let err = fold::rewind(&store, SESSION, &mut host, RewindOptions::default(), &abort)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ABORTED", "{err}");
    assert!(host.commits.is_empty(), "the commit never starts");
    assert_untouched(&host);
    assert_still_active(&store);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_from_another_task_ends_a_hanging_summarizer() {
    let (_dir, store, _) = marked().await;
    let abort = Abort::default();
    let mut host = exploration().replying([Reply::Hang]);
    let entered = host.entered.clone();
    let firing = tokio::spawn({
        let abort = abort.clone();
        async move {
            entered.notified().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            abort.fire();
        }
    });
    let err = tokio::time::timeout(
        Duration::from_secs(5),
        fold::rewind(&store, SESSION, &mut host, RewindOptions::default(), &abort),
    )
    .await
    .expect("the abort ends the wait")
    .unwrap_err();
    firing.await.unwrap();
    assert_eq!(err.code(), "ABORTED", "{err}");
    assert_untouched(&host);
    assert_still_active(&store);
    assert!(session_locks()
        .try_lock(&store.path().to_string_lossy(), SESSION)
        .is_some());
}

#[tokio::test]
async fn a_committed_but_unstamped_fold_is_repaired_not_folded_again() {
    let (_dir, store, mark_id) = marked().await;
    // The process died between the commit and the stamp: the report (seq 14, 33 chars) of this
    // mark is on the surface, in the snapshot's reports trailer, while the store says active.
    let mut host = exploration();
    host.replace(3, 8, 33);
    host.reports.push(Report {
        seq: 14,
        mark_id,
        folded_nodes: 5,
        start: 4,
        end: 11,
        folded_chars: 300,
    });
    let before = host.seqs();
    assert_still_active(&store);
    let result = rewind(&store, &mut host).await.unwrap();
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

#[tokio::test]
async fn a_report_of_an_older_mark_does_not_repair_the_latest() {
    let (_dir, store, first) = marked().await;
    let mut host = exploration();
    rewind(&store, &mut host).await.unwrap();
    assert_eq!(host.reports[0].mark_id, first);
    // The rewind's result (15), a new mark (logLength 16), new exploration, a new rewind call:
    // the old report stays on the surface, the new region is folded.
    let second = fold::mark(&store, SESSION, 16, None).await.unwrap();
    host.nodes
        .extend([res(15, 12, 5), asst(16, 1, 10), res(17, 16, 90), asst(18, 1, 5)]);
    host.event_count = 19;
    host.current = Some(18);
    let result = rewind(&store, &mut host).await.unwrap();
    assert_eq!((result.mark_id, result.start, result.end), (second.id, 16, 17));
    assert_eq!(host.attempts, [0, 0]);
}

#[tokio::test]
async fn a_report_appended_before_the_mark_never_repairs_it() {
    // The store file was deleted (or `store` moved): ids restart at 1. An old fold's report,
    // which named mark 1 of the old store, stands on the surface (seq 14); the new store's first
    // mark, id 1 again, is taken after it (log length 16). The report is older than the mark, so
    // it is not that mark's fold: the new exploration is folded.
    let (_dir, store) = store();
    let mut host = exploration();
    host.replace(3, 8, 33);
    host.reports.push(Report {
        seq: 14,
        mark_id: 1,
        folded_nodes: 5,
        start: 4,
        end: 11,
        folded_chars: 300,
    });
    host.nodes
        .extend([res(15, 12, 5), asst(16, 1, 10), res(17, 16, 90), asst(18, 1, 5)]);
    host.event_count = 19;
    host.current = Some(18);
    let mark = fold::mark(&store, SESSION, 16, None).await.unwrap();
    assert_eq!(mark.id, 1, "a fresh store starts at 1 again");
    let result = rewind(&store, &mut host).await.unwrap();
    assert_eq!(
        (result.mark_id, result.start, result.end, result.folded_nodes),
        (1, 16, 17, 2)
    );
    assert_eq!(host.attempts, [0], "the new region was summarized, not repaired");
    assert_eq!(host.commits.len(), 1);
}

#[tokio::test]
async fn a_report_names_its_mark_id_whole_past_32_bits() {
    // Mark 2^32 + 1's report must not be read as mark 1's, nor mark 1's as 2^32 + 1's.
    let (_dir, store, mark_id) = marked().await;
    assert_eq!(mark_id, 1);
    let mut host = exploration();
    host.replace(3, 8, 33);
    host.reports.push(Report {
        seq: 14,
        mark_id: (1 << 32) + 1,
        folded_nodes: 5,
        start: 4,
        end: 11,
        folded_chars: 300,
    });
    let decoded = Surface::decode(&host.words()).unwrap();
    assert_eq!(decoded.reports[0].mark_id, (1 << 32) + 1);
    // Not this mark's report: the fold goes on (and selects the report itself, after the mark).
    let result = rewind(&store, &mut host).await.unwrap();
    assert_eq!(host.attempts, [0]);
    assert_eq!(result.start, 14);
}

#[tokio::test]
async fn a_stamp_that_fails_after_the_commit_still_returns_the_fold() {
    let (dir, store, mark_id) = marked().await;
    // Every write fails once the commit has run: the store's folder is now a file.
    let folder = dir.path().join("storages");
    let mut host = exploration().after_commit(move || {
        std::fs::rename(&folder, folder.with_extension("away")).unwrap();
        std::fs::write(&folder, "not a folder").unwrap();
    });
    let result = rewind(&store, &mut host).await.expect("the fold happened");
    assert_eq!((result.mark_id, result.folded_nodes), (mark_id, 5));
    let why = result.stamp_error.expect("the stamp failed");
    assert!(why.starts_with("STORE_IO: "), "{why}");
    assert_eq!(host.reports.len(), 1, "the report is on the surface");
    let folder = dir.path().join("storages");
    std::fs::remove_file(&folder).unwrap();
    std::fs::rename(folder.with_extension("away"), &folder).unwrap();
    // The next rewind finishes the stamp instead of folding again.
    let repaired = rewind(&store, &mut host).await.unwrap();
    assert_eq!(repaired.stamp_error, None);
    assert_eq!((repaired.start, repaired.end), (result.start, result.end));
    assert_eq!(host.attempts, [0], "no second report");
    assert!(!store.has_active(SESSION).unwrap());
}

#[tokio::test]
async fn a_summarizer_error_passes_through() {
    let (_dir, store, _) = marked().await;
    let failure = FoldError::HostFailed("summarize rejected: rate limited".into());
    let mut host = exploration().replying([Reply::Fail(failure.clone()), text("never asked for")]);
    let err = rewind(&store, &mut host).await.unwrap_err();
    assert_eq!(err, failure);
    assert_eq!(host.attempts, [0], "an error is not an empty completion: no retry");
    assert_untouched(&host);
    assert_still_active(&store);
}

#[tokio::test]
async fn more_than_eight_retries_is_an_invalid_argument() {
    let (_dir, store, _) = marked().await;
    let mut host = exploration();
    let err = fold::rewind(&store, SESSION, &mut host, retries(9), &Abort::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    assert!(err.to_string().contains("maxSummarizationRetries"), "{err}");
    assert_eq!(host.snapshots, 0);
    assert_still_active(&store);
    // 8 is allowed: 9 empty completions, then SUMMARIZE_FAILED.
    let mut host = exploration().replying((0..9).map(|_| empty("stop", 0, None)));
    let err = fold::rewind(
        &store,
        SESSION,
        &mut host,
        retries(fold::MAX_SUMMARIZATION_RETRIES),
        &Abort::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "SUMMARIZE_FAILED");
    assert_eq!(host.attempts, (0..=8).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_bad_session_id_is_an_invalid_argument() {
    let (_dir, store) = store();
    let mut host = exploration();
    for id in ["", "a\nb"] {
        let err = fold::rewind(&store, id, &mut host, RewindOptions::default(), &Abort::default())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    }
}

#[tokio::test]
async fn a_bad_snapshot_is_an_invalid_argument_and_writes_nothing() {
    let (_dir, store, _) = marked().await;
    let mut host = exploration();
    host.current = Some(2); // a log-only event
    let err = rewind(&store, &mut host).await.unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    assert!(host.attempts.is_empty());
    assert_still_active(&store);
}

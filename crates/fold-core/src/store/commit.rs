//! Group commit: concurrent writers of one store in one process share one durable write. The
//! first caller to find no write in flight becomes the leader and writes every op queued so far
//! as one journal append (one fsync), or as a rewrite of the store file when there is no
//! journal to append to yet. Once every caller of the batch has its result, the leader folds
//! the journal into the store file if it has grown past [`COMPACT_AFTER_BYTES`] and the store
//! file's size.

use std::collections::HashMap;

use super::document::{Document, MarkRecord, StoredMark};
use super::file::Held;
use super::journal::{self, Change};
use super::{lock, now_ms, sys, Stamp, Store, MAX_MARK_ID, UNIT_VERSION};
use crate::error::{FoldError, Result};

/// A journal is folded into the store file once it is larger than this and than the store file
/// itself: each rewrite is then paid for by at least as many bytes of appends, so the work per
/// change stays constant, and a load reads at most about twice the store.
pub(super) const COMPACT_AFTER_BYTES: u64 = 64 << 10;

/// A write queued for the next group commit.
#[derive(Debug, Clone)]
pub(super) enum Op {
    Mark {
        session_id: String,
        log_length: u64,
        objective: Option<String>,
    },
    Stamp {
        session_id: String,
        mark_id: u64,
    },
}

#[derive(Debug, Clone)]
pub(super) enum Outcome {
    Marked(MarkRecord),
    Stamp(Stamp),
}

#[derive(Default)]
pub(super) struct Queue {
    pub(super) pending: Vec<(u64, Op)>,
    pub(super) done: HashMap<u64, Result<Outcome>>,
    pub(super) writing: bool,
    pub(super) next_ticket: u64,
}

impl Store {
    /// Queues `op` for the next group commit and waits for its result. The first caller to
    /// find no write in flight becomes the leader and writes every op queued so far.
    /// As the leader, it also folds the journal into the store file after the batch's other
    /// callers have their answers; its [`super::Work`] covers that, so a close waits for it.
    pub(super) fn submit(&self, op: Op) -> Result<Outcome> {
        let _work = self.begin_work();
        let ticket = self.enqueue(op);
        self.wait_for(ticket)
    }

    /// Queues `op` for the next group commit without waiting: ops are written in the order they
    /// were queued. [`Store::wait_for`] waits for its result.
    pub(super) fn enqueue(&self, op: Op) -> u64 {
        let mut queue = lock(&self.queue);
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.pending.push((ticket, op));
        ticket
    }

    /// Waits for the result of the op queued as `ticket`, writing the queue as the leader when
    /// no write is in flight.
    pub(super) fn wait_for(&self, ticket: u64) -> Result<Outcome> {
        let mut queue = lock(&self.queue);
        loop {
            if let Some(result) = queue.done.remove(&ticket) {
                return result;
            }
            if !queue.writing {
                queue.writing = true;
                let batch = std::mem::take(&mut queue.pending);
                drop(queue);
                // Should the write panic, the guard hands the queue on: without it `writing`
                // would stay set and every later writer would wait forever.
                let mut guard = LeaderGuard {
                    store: self,
                    leader: ticket,
                    others: batch.iter().map(|(t, _)| *t).filter(|t| *t != ticket).collect(),
                };
                let (results, compaction_due) = self.commit_batch(&batch);
                let mine = {
                    let mut queue = lock(&self.queue);
                    let mut mine = None;
                    for ((t, _), result) in batch.into_iter().zip(results) {
                        if t == ticket {
                            mine = Some(result);
                        } else {
                            queue.done.insert(t, result);
                        }
                    }
                    mine.expect("the leader's op is in its batch")
                };
                // Everyone of the batch has an answer: wake them before the compaction.
                guard.others.clear();
                self.written.notify_all();
                if compaction_due {
                    if let Err(e) = self.compact_if_due() {
                        self.warn(format!(
                            "{e} (the journal keeps every change; the next write tries again)"
                        ));
                    }
                }
                std::mem::forget(guard);
                lock(&self.queue).writing = false;
                self.written.notify_all();
                return mine;
            }
            queue = self
                .written
                .wait(queue)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Applies a batch under the cross-process lock and writes it once. Also says whether the
    /// journal is due to be folded into the store file.
    pub(super) fn commit_batch(&self, batch: &[(u64, Op)]) -> (Vec<Result<Outcome>>, bool) {
        if sys::Faults::take(&self.faults.leader_panic) {
            panic!("test fault: the group-commit leader panics before writing");
        }
        match self.try_commit_batch(batch) {
            Ok((results, due)) => (results.into_iter().map(Ok).collect(), due),
            Err(e) => (batch.iter().map(|_| Err(e.clone())).collect(), false),
        }
    }

    fn try_commit_batch(&self, batch: &[(u64, Op)]) -> Result<(Vec<Outcome>, bool)> {
        let mut disk = lock(&self.disk);
        self.ensure_dir()?;
        let mut file_lock = self.lock_file()?;
        self.sweep_once();
        let generation = self.read_generation(&mut file_lock)?;
        self.catch_up(&mut disk, Held::Exclusive(generation))?;
        let now = now_ms();
        let (changes, outcomes) = self
            .with_doc(|doc| plan(doc, batch, now, &self.path))
            .expect("memory is loaded once caught up")?;
        if changes.is_empty() {
            return Ok((outcomes, false));
        }
        // Bump the counter first: a crash between the two only makes others re-read needlessly.
        self.write_generation(&mut file_lock, generation + 1)?;
        let limits = self.limits();
        let appendable = disk.base.is_some() && disk.base_version >= UNIT_VERSION && disk.journal_id.is_some();
        let line = journal::batch(&changes);
        if appendable && self.append(&disk, &line)? {
            self.update_doc(|doc| {
                let touched = doc.apply(changes);
                doc.prune_after(limits, now, &touched);
            });
            disk.journal_len += line.len() as u64;
            disk.generation = Some(generation + 1);
        } else {
            // No store file yet, one older dsh-fold versions would read without our journal, or
            // no journal to append to: write the store file whole (and start a journal).
            let mut doc = self.doc_snapshot();
            doc.apply(changes);
            doc.prune(limits, now);
            self.rewrite(&mut disk, doc, generation + 1)?;
        }
        Ok((outcomes, compaction_due(&disk)))
    }

    /// Folds the journal into the store file if it is (still) due, under the exclusive lock.
    fn compact_if_due(&self) -> Result<()> {
        let mut disk = lock(&self.disk);
        let mut file_lock = self.lock_file()?;
        let generation = self.read_generation(&mut file_lock)?;
        self.catch_up(&mut disk, Held::Exclusive(generation))?;
        if !compaction_due(&disk) {
            return Ok(()); // another process did it meanwhile
        }
        self.write_generation(&mut file_lock, generation + 1)?;
        let mut doc = self.doc_snapshot();
        doc.prune(self.limits(), now_ms());
        self.rewrite(&mut disk, doc, generation + 1)
    }

    /// Folds the journal into the store file now (what `compactStore` and a plugin's mount
    /// ask for). Creates nothing when there is no store yet.
    pub(super) fn compact_now(&self) -> Result<()> {
        if !self.path.exists() && !self.journal_path.exists() {
            return Ok(());
        }
        let mut disk = lock(&self.disk);
        self.ensure_dir()?;
        let mut file_lock = self.lock_file()?;
        let generation = self.read_generation(&mut file_lock)?;
        self.catch_up(&mut disk, Held::Exclusive(generation))?;
        self.write_generation(&mut file_lock, generation + 1)?;
        let mut doc = self.doc_snapshot();
        doc.prune(self.limits(), now_ms());
        self.rewrite(&mut disk, doc, generation + 1)
    }
}

fn compaction_due(disk: &super::file::DiskView) -> bool {
    disk.journal_len > COMPACT_AFTER_BYTES.max(disk.base_len)
}

/// What a batch does to `doc`: the changes to write and each op's outcome, in order. Reads
/// `doc` only (a failed write must leave memory as it was).
fn plan(doc: &Document, batch: &[(u64, Op)], now: u64, path: &std::path::Path) -> Result<(Vec<Change>, Vec<Outcome>)> {
    let mut next_id = doc.next_id;
    let mut changes = Vec::new();
    let mut outcomes = Vec::with_capacity(batch.len());
    // The batch's own marks and folds, which `doc` does not have yet.
    let mut latest_in_batch: HashMap<&str, u64> = HashMap::new();
    let mut folded_in_batch: Vec<u64> = Vec::new();
    for (_, op) in batch {
        outcomes.push(match op {
            Op::Mark {
                session_id,
                log_length,
                objective,
            } => {
                if next_id > MAX_MARK_ID {
                    return Err(FoldError::corrupt(
                        path,
                        format!("every mark id up to {MAX_MARK_ID} is used"),
                    ));
                }
                let mark = MarkRecord {
                    id: next_id,
                    session_id: session_id.clone(),
                    log_length: *log_length,
                    objective: objective.clone(),
                    created_at: now,
                    folded_at: None,
                };
                next_id += 1;
                latest_in_batch.insert(session_id, mark.id);
                changes.push(Change::Mark(StoredMark {
                    mark: mark.clone(),
                    extras: None,
                }));
                Outcome::Marked(mark)
            }
            Op::Stamp { session_id, mark_id } => {
                let stamp = if folded_in_batch.contains(mark_id) {
                    Stamp::AlreadyStamped
                } else if latest_in_batch.get(session_id.as_str()).is_some_and(|id| id != mark_id) {
                    // a newer mark of the session in this very batch
                    match stamp_of(doc, session_id, *mark_id) {
                        Stamp::Stamped => Stamp::NotLatest,
                        other => other,
                    }
                } else {
                    stamp_of(doc, session_id, *mark_id)
                };
                if stamp == Stamp::Stamped {
                    folded_in_batch.push(*mark_id);
                    changes.push(Change::Fold {
                        id: *mark_id,
                        folded_at: now,
                    });
                }
                Outcome::Stamp(stamp)
            }
        });
    }
    Ok((changes, outcomes))
}

/// Armed while a leader writes; dropped only when the write panicked (the normal path forgets
/// it). Fails the other ops of the batch with an error instead of leaving them waiting, clears
/// `writing` so the next writer leads, and forgets what memory knows about the files so that
/// writer reads them whole.
struct LeaderGuard<'a> {
    store: &'a Store,
    leader: u64,
    others: Vec<u64>,
}

impl Drop for LeaderGuard<'_> {
    fn drop(&mut self) {
        lock(&self.store.disk).known = false;
        let mut queue = lock(&self.store.queue);
        queue.writing = false;
        for ticket in &self.others {
            queue.done.insert(
                *ticket,
                Err(FoldError::StoreIo(format!(
                    "checkpoint store {}: the write that carried this operation failed unexpectedly \
                     (the writer panicked; ticket {} led it); it may not have been written, retry",
                    self.store.path.display(),
                    self.leader
                ))),
            );
        }
        self.store.written.notify_all();
    }
}

/// What stamping `mark_id` of `session_id` would do to `doc`.
pub(super) fn stamp_of(doc: &Document, session_id: &str, mark_id: u64) -> Stamp {
    match doc.marks.get(&mark_id) {
        Some(m) if m.session_id != session_id => Stamp::Missing,
        None => Stamp::Missing,
        Some(m) if m.folded_at.is_some() => Stamp::AlreadyStamped,
        Some(_) if doc.latest_id(session_id) != Some(mark_id) => Stamp::NotLatest,
        Some(_) => Stamp::Stamped,
    }
}

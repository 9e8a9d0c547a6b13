//! Group commit: concurrent writers of one store in one process share one durable write. The
//! first caller to find no write in flight becomes the leader and writes every op queued so far.

use std::collections::HashMap;
use std::sync::Arc;

use super::document::{Document, MarkRecord, StoredMark};
use super::file::DiskView;
use super::{lock, now_ms, sys, Stamp, Store, MAX_MARK_ID};
use crate::error::{FoldError, Result};

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
    pub(super) fn submit(&self, op: Op) -> Result<Outcome> {
        let mut queue = lock(&self.queue);
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.pending.push((ticket, op));
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
                let guard = LeaderGuard {
                    store: self,
                    leader: ticket,
                    others: batch.iter().map(|(t, _)| *t).filter(|t| *t != ticket).collect(),
                };
                let results = self.commit_batch(&batch);
                std::mem::forget(guard);
                queue = lock(&self.queue);
                queue.writing = false;
                for ((ticket, _), result) in batch.into_iter().zip(results) {
                    queue.done.insert(ticket, result);
                }
                self.written.notify_all();
                continue;
            }
            queue = self
                .written
                .wait(queue)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Applies a batch under the cross-process lock and writes the file once.
    pub(super) fn commit_batch(&self, batch: &[(u64, Op)]) -> Vec<Result<Outcome>> {
        if sys::Faults::take(&self.faults.leader_panic) {
            panic!("test fault: the group-commit leader panics before writing");
        }
        match self.try_commit_batch(batch) {
            Ok(results) => results.into_iter().map(Ok).collect(),
            Err(e) => batch.iter().map(|_| Err(e.clone())).collect(),
        }
    }

    pub(super) fn try_commit_batch(&self, batch: &[(u64, Op)]) -> Result<Vec<Outcome>> {
        let mut disk = lock(&self.disk);
        self.ensure_dir()?;
        let mut file_lock = self.lock_file()?;
        let generation = self.read_generation(&mut file_lock)?;
        let current = self.catch_up(&mut disk, Some(generation))?;
        let mut doc = (*current).clone();
        let now = now_ms();
        let mut changed = false;
        let mut outcomes = Vec::with_capacity(batch.len());
        for (_, op) in batch {
            outcomes.push(match op {
                Op::Mark {
                    session_id,
                    log_length,
                    objective,
                } => {
                    if doc.next_id > MAX_MARK_ID {
                        return Err(FoldError::corrupt(
                            &self.path,
                            format!("every mark id up to {MAX_MARK_ID} is used"),
                        ));
                    }
                    let mark = MarkRecord {
                        id: doc.next_id,
                        session_id: session_id.clone(),
                        log_length: *log_length,
                        objective: objective.clone(),
                        created_at: now,
                        folded_at: None,
                    };
                    doc.next_id += 1;
                    doc.insert(StoredMark {
                        mark: mark.clone(),
                        extras: None,
                    });
                    changed = true;
                    Outcome::Marked(mark)
                }
                Op::Stamp { session_id, mark_id } => {
                    let stamp = stamp_of(&doc, session_id, *mark_id);
                    if stamp == Stamp::Stamped {
                        if let Some(m) = doc.marks.get_mut(mark_id) {
                            m.folded_at = Some(now);
                        }
                        changed = true;
                    }
                    Outcome::Stamp(stamp)
                }
            });
        }
        changed |= doc.prune(self.limits(), now);
        if !changed {
            return Ok(outcomes);
        }
        // Bump the counter first: a crash between the two only makes others re-read needlessly.
        self.write_generation(&mut file_lock, generation + 1)?;
        let (stamp, warning) = self.write_durably(&doc.to_json())?;
        if let Some(warning) = warning {
            self.warn(warning);
        }
        self.set_doc(Arc::new(doc));
        *disk = DiskView {
            known: true,
            stamp: Some(stamp),
            generation: Some(generation + 1),
        };
        Ok(outcomes)
    }
}

/// Armed while a leader writes; dropped only when the write panicked (the normal path forgets
/// it). Fails the other ops of the batch with an error instead of leaving them waiting, clears
/// `writing` so the next writer leads, and forgets what memory knows about the file so that
/// writer re-reads it whole.
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

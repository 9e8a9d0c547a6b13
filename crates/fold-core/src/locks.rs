//! Per-session locks, one map per process, shared by marks and folds.
//!
//! A fold takes its session's lock with [`SessionLocks::try_lock`] and fails fast with
//! `FOLD_IN_PROGRESS` when it is held (folds never queue: a second rewind of the same
//! exploration is a mistake the model should hear about). A mark waits with
//! [`SessionLocks::lock`], so a checkpoint taken while a fold runs lands after the fold's
//! stamp and becomes the new latest mark. Entries are removed when their last guard drops,
//! so the map does not grow with the number of sessions ever seen.

use std::sync::Arc;

use dashmap::DashMap;
use once_cell::sync::Lazy;
use tokio::sync::{Mutex, OwnedMutexGuard};

type Key = (String, String);

/// The process-wide map from (store path, session id) to that session's lock.
#[derive(Default)]
pub struct SessionLocks {
    map: DashMap<Key, Arc<Mutex<()>>>,
}

/// Holds a session's lock; dropping it releases the lock and forgets an idle entry.
pub struct SessionGuard<'a> {
    locks: &'a SessionLocks,
    key: Key,
    guard: Option<OwnedMutexGuard<()>>,
}

impl Drop for SessionGuard<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        // Only this map and no guard or waiter hold the mutex: nobody can be using it.
        self.locks.map.remove_if(&self.key, |_, m| Arc::strong_count(m) == 1);
    }
}

/// The locks of this process.
pub fn session_locks() -> &'static SessionLocks {
    static LOCKS: Lazy<SessionLocks> = Lazy::new(SessionLocks::default);
    &LOCKS
}

impl SessionLocks {
    fn entry(&self, key: &Key) -> Arc<Mutex<()>> {
        self.map.entry(key.clone()).or_default().clone()
    }

    /// Takes the lock without waiting; `None` when another holder has it.
    pub fn try_lock(&self, store: &str, session_id: &str) -> Option<SessionGuard<'_>> {
        let key = (store.to_owned(), session_id.to_owned());
        let mutex = self.entry(&key);
        let guard = mutex.try_lock_owned().ok();
        let held = guard.is_some();
        let session = SessionGuard {
            locks: self,
            key,
            guard,
        };
        held.then_some(session)
    }

    /// Waits for the lock.
    pub async fn lock(&self, store: &str, session_id: &str) -> SessionGuard<'_> {
        let key = (store.to_owned(), session_id.to_owned());
        let guard = self.entry(&key).lock_owned().await;
        SessionGuard {
            locks: self,
            key,
            guard: Some(guard),
        }
    }

    /// Whether the session's lock is held (or awaited) right now, under any store path: a rewind
    /// (or a mark) of that session is under way. Block mode asks before it commits, and waits.
    ///
    /// It only looks: an entry's mutex is shared by the map and by each guard or waiter, so more
    /// than one owner means busy. Probing with `try_lock` instead would, for an instant, hold the
    /// lock itself and could make a rewind starting at that instant fail `FOLD_IN_PROGRESS`.
    pub fn is_held(&self, session_id: &str) -> bool {
        self.map
            .iter()
            .any(|e| e.key().1 == session_id && Arc::strong_count(e.value()) > 1)
    }

    /// Number of sessions with a live entry (for leak tests).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

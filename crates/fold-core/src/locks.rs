//! Per-session locks, one map per process, shared by marks, folds and block commits.
//!
//! A session lives in one host process at a time, so its id alone keys its lock (whatever store
//! file its marks are in, and block mode has none). A fold takes its session's lock with
//! [`SessionLocks::try_lock`] and fails fast with `FOLD_IN_PROGRESS` when it is held (folds
//! never queue: a second rewind of the same exploration is a mistake the model should hear
//! about); the guard is a plain value, so a fold driven from JS continuations holds it across
//! them. A mark waits with [`SessionLocks::lock`], so a checkpoint taken while a fold runs lands
//! after the fold's stamp and becomes the new latest mark. [`SessionLocks::is_held`] answers
//! synchronously whether a fold (or a mark) holds the session right now: block mode's commits
//! must not land while a rewind of that session holds it. Entries are removed when their last
//! guard drops, so the map does not grow with the number of sessions ever seen.

use std::sync::Arc;

use dashmap::DashMap;
use once_cell::sync::Lazy;
use tokio::sync::{Mutex, OwnedMutexGuard};

/// The process-wide map from session id to that session's lock.
#[derive(Default)]
pub struct SessionLocks {
    map: DashMap<String, Arc<Mutex<()>>>,
}

/// Holds a session's lock; dropping it releases the lock and forgets an idle entry.
pub struct SessionGuard {
    locks: &'static SessionLocks,
    session_id: String,
    guard: Option<OwnedMutexGuard<()>>,
}

impl std::fmt::Debug for SessionGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionGuard")
            .field("session_id", &self.session_id)
            .finish()
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        drop(self.guard.take());
        // Only this map and no guard or waiter hold the mutex: nobody can be using it.
        self.locks
            .map
            .remove_if(&self.session_id, |_, m| Arc::strong_count(m) == 1);
    }
}

/// The locks of this process.
pub fn session_locks() -> &'static SessionLocks {
    static LOCKS: Lazy<SessionLocks> = Lazy::new(SessionLocks::default);
    &LOCKS
}

impl SessionLocks {
    fn entry(&self, session_id: &str) -> Arc<Mutex<()>> {
        if let Some(m) = self.map.get(session_id) {
            return m.clone();
        }
        self.map.entry(session_id.to_owned()).or_default().clone()
    }

    /// Takes the lock without waiting; `None` when another holder has it.
    pub fn try_lock(&'static self, session_id: &str) -> Option<SessionGuard> {
        let guard = self.entry(session_id).try_lock_owned().ok();
        let held = guard.is_some();
        // Built even when not taken, so its drop forgets the entry this call may have created.
        let session = SessionGuard {
            locks: self,
            session_id: session_id.to_owned(),
            guard,
        };
        held.then_some(session)
    }

    /// Waits for the lock.
    pub async fn lock(&'static self, session_id: &str) -> SessionGuard {
        let guard = self.entry(session_id).lock_owned().await;
        SessionGuard {
            locks: self,
            session_id: session_id.to_owned(),
            guard: Some(guard),
        }
    }

    /// Whether the session's lock is held (or awaited) right now: a rewind (or a mark) of that
    /// session is under way. Block mode asks before it commits, and waits. Synchronous.
    ///
    /// It only looks: an entry's mutex is shared by the map and by each guard or waiter, so more
    /// than one owner means busy. Probing with `try_lock` instead would, for an instant, hold the
    /// lock itself and could make a rewind starting at that instant fail `FOLD_IN_PROGRESS`.
    pub fn is_held(&self, session_id: &str) -> bool {
        self.map
            .get(session_id)
            .is_some_and(|m| Arc::strong_count(m.value()) > 1)
    }

    /// Number of sessions with a live entry (for leak tests).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

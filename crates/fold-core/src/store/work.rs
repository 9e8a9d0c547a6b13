//! The file work of this process in flight on one store, so that closing it
//! ([`Store::close`](super::Store::close)) can wait for all of it: a caller takes a [`Work`]
//! guard before it starts an operation that may touch the store's files and drops it when the
//! operation is over — including whatever it does after its callers have their answers (a
//! fold's stamp and its retries, a group-commit leader folding the journal, a background
//! load). Nothing here touches the disk.

use std::sync::{Arc, Condvar, Mutex};

use super::lock;

/// How many operations are in flight, and a condition signalled when none is.
#[derive(Default)]
pub(super) struct InFlight {
    count: Mutex<usize>,
    idle: Condvar,
}

impl InFlight {
    pub(super) fn begin(self: &Arc<Self>) -> Work {
        *lock(&self.count) += 1;
        Work(self.clone())
    }

    /// Blocks until no operation is in flight.
    pub(super) fn wait_idle(&self) {
        let mut count = lock(&self.count);
        while *count > 0 {
            count = self.idle.wait(count).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

/// One operation's claim on its store's files: [`Store::close`](super::Store::close) waits
/// until every `Work` taken before it returns has been dropped. Dropping it (also in a panic's
/// unwinding) ends the claim.
#[must_use = "the operation counts as in flight only while its Work is held"]
pub struct Work(Arc<InFlight>);

impl Drop for Work {
    fn drop(&mut self) {
        let mut count = lock(&self.0.count);
        *count -= 1;
        if *count == 0 {
            self.0.idle.notify_all();
        }
    }
}

impl std::fmt::Debug for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Work")
    }
}

//! The durable checkpoint-mark store: one JSON file shared by every process of a profile.
//!
//! Contract:
//! - Layout follows DSH's storage-json files so DSH tooling can read it:
//!   `{"unit":{"name":"checkpoint","version":1},"global":{"nextId":N},"tables":{"marks":{"<id>":Mark}}}`.
//! - Mark ids are integers, monotonic per file from 1, never reused (`global.nextId` survives pruning).
//! - A write returns only after the new file is on disk: temp file (0600) → write → fsync →
//!   rename → fsync directory. A crash leaves the old or the new file, never a torn one.
//! - Every read-modify-write holds an exclusive lock on `<file>.lock` and re-reads the file
//!   when another process changed it since we last saw it, so no process loses another's marks.
//!   "Changed" is decided by a write counter kept in the lock file (bumped under the lock before
//!   every write) and the file's inode/length/mtime: mtimes alone can be coarser than two writes.
//! - Concurrent writers in one process are batched: one leader writes everything queued
//!   while the previous write was in flight (group commit), each caller waits for its own result.
//! - A file we cannot read (bad JSON, wrong unit, newer version, a directory) is an error that
//!   names the file, and the file is never written over.
//! - Reads (`latest`, `has_active`) come from memory once the file was loaded: a session lives
//!   in one host process at a time, so its own marks in memory are current.

mod commit;
mod document;
mod file;
mod sys;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use self::commit::{Op, Outcome, Queue};
pub use self::document::MarkRecord;
use self::file::Cache;
use crate::error::{FoldError, Result};

/// The storage unit name and the newest layout version this build reads and writes.
pub const UNIT_NAME: &str = "checkpoint";
pub const UNIT_VERSION: u64 = 1;

/// Largest objective accepted, in bytes of UTF-8.
pub const MAX_OBJECTIVE_BYTES: usize = 4096;
/// Largest session id accepted, in bytes of UTF-8.
pub const MAX_SESSION_ID_BYTES: usize = 512;
/// Largest mark id (2^53 - 1, the largest integer a JS number holds exactly). A file with a larger
/// id or `nextId` past it is corrupt; a store whose ids are used up refuses new marks.
pub const MAX_MARK_ID: u64 = (1 << 53) - 1;

/// How many marks the store keeps, checked at every write.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Newest marks kept per session; older ones are pruned. At least 1.
    pub max_marks_per_session: u32,
    /// Marks older than this (by `createdAt`) are pruned, in milliseconds.
    pub max_age_ms: u64,
}

impl Default for Limits {
    /// 64 marks per session, 30 days.
    fn default() -> Self {
        Self {
            max_marks_per_session: 64,
            max_age_ms: 30 * 24 * 60 * 60 * 1000,
        }
    }
}

impl Limits {
    /// The limits that keep everything either keeps: the larger cap and the longer age.
    pub fn loosest(self, other: Self) -> Self {
        Self {
            max_marks_per_session: self.max_marks_per_session.max(other.max_marks_per_session),
            max_age_ms: self.max_age_ms.max(other.max_age_ms),
        }
    }

    /// Builds limits from caller input, rejecting nonsense.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when the cap is 0 or the age is not a positive finite number of days.
    pub fn new(max_marks_per_session: Option<f64>, max_age_days: Option<f64>) -> Result<Self> {
        let mut limits = Self::default();
        if let Some(cap) = max_marks_per_session {
            if !(cap.is_finite() && cap.fract() == 0.0 && (1.0..=1_000_000.0).contains(&cap)) {
                return Err(FoldError::invalid(format!(
                    "maxMarksPerSession must be an integer from 1 to 1000000, got {cap}"
                )));
            }
            limits.max_marks_per_session = cap as u32;
        }
        if let Some(days) = max_age_days {
            if !(days.is_finite() && days > 0.0 && days <= 36_500.0) {
                return Err(FoldError::invalid(format!(
                    "maxAgeDays must be a number of days above 0 and at most 36500, got {days}"
                )));
            }
            limits.max_age_ms = (days * 86_400_000.0) as u64;
        }
        Ok(limits)
    }
}

/// The pruning limits of a store: those it was made with, and the loosest registered since.
#[derive(Debug, Clone, Copy)]
struct LimitSet {
    given: Limits,
    registered: Option<Limits>,
}

/// One checkpoint store file. Share it (`Arc`) between every caller of the same path.
pub struct Store {
    path: PathBuf,
    lock_path: PathBuf,
    limits: Mutex<LimitSet>,
    cache: Mutex<Cache>,
    queue: Mutex<Queue>,
    written: Condvar,
    temp_counter: AtomicU64,
    /// Whether this process already swept the temp files of dead writers.
    swept: AtomicBool,
    /// Failures a test asked for (see [`sys::Faults`]); none in production.
    faults: sys::Faults,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these leaves consistent data (every mutation is a swap),
    // so a poisoned lock is still usable.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Validates a session id from a caller.
///
/// # Errors
/// `INVALID_ARGUMENT` when empty, too long, or containing control characters.
pub fn check_session_id(session_id: &str) -> Result<()> {
    if session_id.is_empty() {
        return Err(FoldError::invalid("sessionId must be a non-empty string"));
    }
    if session_id.len() > MAX_SESSION_ID_BYTES {
        return Err(FoldError::invalid(format!(
            "sessionId is {} bytes, over the {MAX_SESSION_ID_BYTES}-byte cap",
            session_id.len()
        )));
    }
    if session_id.chars().any(char::is_control) {
        return Err(FoldError::invalid("sessionId must not contain control characters"));
    }
    Ok(())
}

impl Store {
    /// A store over `path`. Nothing is read or created until the first operation.
    pub fn new(path: impl Into<PathBuf>, limits: Limits) -> Self {
        let path = path.into();
        let mut lock_name = path.file_name().unwrap_or_default().to_os_string();
        lock_name.push(".lock");
        Self {
            lock_path: path.with_file_name(lock_name),
            path,
            limits: Mutex::new(LimitSet {
                given: limits,
                registered: None,
            }),
            cache: Mutex::default(),
            queue: Mutex::default(),
            written: Condvar::new(),
            temp_counter: AtomicU64::new(0),
            swept: AtomicBool::new(false),
            faults: sys::Faults::from_env(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the pruning limits used from the next write on, and forgets every registered
    /// one ([`Store::register_limits`]).
    pub fn set_limits(&self, limits: Limits) {
        *lock(&self.limits) = LimitSet {
            given: limits,
            registered: None,
        };
    }

    /// Registers one user's limits (a plugin's config): from then on the store prunes with the
    /// loosest of every limits registered in this process, whatever the order of the calls. So
    /// when two plugins name the same file with different limits, neither loses marks the other
    /// keeps, and nothing depends on which one wrote last. (Registrations last as long as the
    /// process: lowering a limit takes effect after a restart.)
    pub fn register_limits(&self, limits: Limits) {
        let mut set = lock(&self.limits);
        set.registered = Some(set.registered.map_or(limits, |r| r.loosest(limits)));
    }

    /// The limits the next write prunes with: the loosest registered, else those given to
    /// [`Store::new`] or [`Store::set_limits`].
    pub fn limits(&self) -> Limits {
        let set = lock(&self.limits);
        set.registered.unwrap_or(set.given)
    }

    /// Records a new active mark for `session_id` and returns it once it is durable.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a bad session id or an objective over [`MAX_OBJECTIVE_BYTES`];
    /// `STORE_*` when the file cannot be read, locked or written (then nothing was written).
    pub fn mark(&self, session_id: &str, log_length: u64, objective: Option<&str>) -> Result<MarkRecord> {
        check_session_id(session_id)?;
        if let Some(o) = objective {
            if o.len() > MAX_OBJECTIVE_BYTES {
                return Err(FoldError::invalid(format!(
                    "objective is {} bytes, over the {MAX_OBJECTIVE_BYTES}-byte cap",
                    o.len()
                )));
            }
        }
        let op = Op::Mark {
            session_id: session_id.to_owned(),
            log_length,
            objective: objective.map(str::to_owned),
        };
        match self.submit(op)? {
            Outcome::Marked(mark) => Ok(mark),
            Outcome::Stamped(_) => unreachable!("a mark op yields a mark"),
        }
    }

    /// Stamps `foldedAt` on `mark_id` when it is the session's latest active mark; durable on return.
    /// Returns whether it stamped (false: not the latest, already folded, or unknown).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a bad session id; `STORE_*` as for [`Store::mark`].
    pub fn complete_fold(&self, session_id: &str, mark_id: u64) -> Result<bool> {
        check_session_id(session_id)?;
        // Skip the durable write when memory already says there is nothing to stamp.
        let doc = self.doc()?;
        match doc.latest(session_id) {
            Some(m) if m.id == mark_id && m.folded_at.is_none() => {}
            _ => return Ok(false),
        }
        let op = Op::CompleteFold {
            session_id: session_id.to_owned(),
            mark_id,
        };
        match self.submit(op)? {
            Outcome::Stamped(done) => Ok(done),
            Outcome::Marked(_) => unreachable!("a stamp op yields a flag"),
        }
    }

    /// The session's newest mark, folded or not, from memory.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a bad session id; `STORE_*` when the first load fails.
    pub fn latest(&self, session_id: &str) -> Result<Option<MarkRecord>> {
        check_session_id(session_id)?;
        Ok(self.doc()?.latest(session_id).cloned())
    }

    /// [`Store::latest`] when the file is already in memory, without touching the disk; `None`
    /// before the first load. Lets async callers answer without a blocking-pool hop.
    pub fn latest_in_memory(&self, session_id: &str) -> Option<Result<Option<MarkRecord>>> {
        let doc = lock(&self.cache).doc.clone()?;
        Some(check_session_id(session_id).map(|()| doc.latest(session_id).cloned()))
    }

    /// Whether the session's newest mark exists and is not folded, from memory.
    ///
    /// # Errors
    /// As [`Store::latest`].
    pub fn has_active(&self, session_id: &str) -> Result<bool> {
        check_session_id(session_id)?;
        Ok(self.doc()?.latest(session_id).is_some_and(|m| m.folded_at.is_none()))
    }

    /// Every mark (of one session, or all), newest first. Re-reads the file when another
    /// process changed it, since listings are for people and tools looking at the whole store.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a bad session id; `STORE_*` when the file cannot be read.
    pub fn list(&self, session_id: Option<&str>) -> Result<Vec<MarkRecord>> {
        if let Some(s) = session_id {
            check_session_id(s)?;
        }
        let doc = self.refresh()?;
        Ok(doc
            .marks
            .values()
            .rev()
            .filter(|m| session_id.is_none_or(|s| m.session_id == s))
            .cloned()
            .collect())
    }
}

/// The one [`Store`] of each file in this process, so every caller shares its memory view,
/// its write queue and its batching.
///
/// # Errors
/// `INVALID_ARGUMENT` for an empty path or one that cannot be made absolute.
pub fn shared(path: &Path) -> Result<Arc<Store>> {
    static STORES: once_cell::sync::Lazy<dashmap::DashMap<PathBuf, Arc<Store>>> =
        once_cell::sync::Lazy::new(dashmap::DashMap::new);
    if path.as_os_str().is_empty() {
        return Err(FoldError::invalid("store path must be a non-empty string"));
    }
    if path.file_name().is_none() {
        return Err(FoldError::invalid(format!(
            "store path {} does not name a file",
            path.display()
        )));
    }
    let abs =
        std::path::absolute(path).map_err(|e| FoldError::invalid(format!("store path {}: {e}", path.display())))?;
    Ok(STORES
        .entry(abs.clone())
        .or_insert_with(|| Arc::new(Store::new(abs, Limits::default())))
        .clone())
}

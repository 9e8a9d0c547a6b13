//! The durable checkpoint-mark store: one JSON file and its journal, shared by every process of
//! a profile.
//!
//! Contract:
//! - The store file keeps DSH's storage-json layout, so DSH tooling can read it:
//!   `{"unit":{"name":"checkpoint","version":2},"global":{"nextId":N},"tables":{"marks":{"<id>":Mark}}}`.
//!   It is complete as of its last rewrite; the changes since are in `<file>.journal`
//!   ([`journal`]): a mark or a stamp is one fsync'd append there, not a rewrite of every mark.
//!   The journal is folded into the file when it outgrows it (and 64 KiB), when a host opens
//!   the store ([`Store::open`]), and on request ([`Store::compact`]). Layout version 2 means
//!   "read the journal too": older dsh-fold versions refuse it (`STORE_VERSION`) instead of
//!   reading a stale file and reusing ids. Version 1 files are read, and rewritten as 2 by the
//!   first write.
//! - Mark ids are integers, monotonic per store from 1, never reused (`global.nextId` survives
//!   pruning; a journaled mark raises it).
//! - A write returns only after it is on disk: an append is written and fsync'd; a rewrite is
//!   temp file (0600) → write → fsync → rename → fsync directory. A crash leaves the old or the
//!   new store file, and a journal whose torn tail (never acknowledged) is cut by the next
//!   writer.
//! - Every write holds an exclusive lock on `<file>.lock` and first catches up with what other
//!   processes wrote: nothing when the write counter in the lock file says nobody wrote, the
//!   appended journal lines when the store file is unchanged, else a full read. Reads that go
//!   to the files (the first load, a listing) hold the lock shared.
//! - Concurrent writers in one process are batched: one leader writes everything queued
//!   while the previous write was in flight (group commit), each caller waits for its own result.
//! - Files we cannot read (bad JSON, wrong unit, newer version, damage before the journal's
//!   tail, a directory) are an error that names the file, and nothing is written over them.
//! - Reads (`latest`, `has_active`) come from memory once the file was loaded: a session lives
//!   in one host process at a time, so its own marks in memory are current.
//! - Memory is locked only for a lookup, a swap or applying a written batch. Loads, re-reads and
//!   writes work on the files under a lock of their own and parse before they swap the result
//!   in, so a reader never waits behind file work; the `*_in_memory` reads never touch the disk
//!   (they say "not loaded" instead), for callers on the JS thread.
//! - A write that landed where every reader sees it is returned as written even if the
//!   directory fsync after it failed: the failure is kept as a warning
//!   ([`Store::take_warnings`]), since a mark reported lost would be taken twice.
//! - Stamps say what they did ([`Stamp`]), so a caller can retry one safely.
//! - Pruning (limits per path, [`Store::register_limits`]) happens in memory at every write and
//!   in the file at every rewrite, so the files stay within about twice the pruned store.
//! - Closing ([`Store::close`]) waits for every operation of this process that holds a [`Work`]
//!   on the store ([`Store::begin_work`]): after it, nothing of this process touches the files
//!   until the next operation, so the store's folder can be removed or the process can exit. A
//!   closed store stays usable; the next operation opens it again.

mod commit;
mod document;
mod file;
#[cfg(any(test, feature = "oracles"))]
#[doc(hidden)]
pub mod fuzzing;
mod journal;
mod sys;
#[cfg(test)]
mod tests;
mod work;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use self::commit::{Op, Outcome, Queue};
use self::document::Document;
pub use self::document::MarkRecord;
use self::file::{DiskView, Held};
use self::work::InFlight;
pub use self::work::Work;
use crate::error::{FoldError, Result};

/// The storage unit name and the layout version this build writes (it reads 1 and 2).
pub const UNIT_NAME: &str = "checkpoint";
pub const UNIT_VERSION: u64 = 2;

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

/// What [`Store::stamp`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamp {
    /// The mark was the session's latest and active; it is folded now (durable).
    Stamped,
    /// The mark was already folded (by this call's earlier attempt, or anyone): nothing to do.
    AlreadyStamped,
    /// The mark is active but no longer the session's latest: not stamped (only the latest
    /// mark is ever folded).
    NotLatest,
    /// No such mark of this session (never taken, pruned, or another session's).
    Missing,
}

/// What readers see. Held only for a lookup, a swap or applying a written batch — never through
/// file work or parsing, so a reader on the JS thread never waits behind the disk.
#[derive(Default)]
struct Memory {
    doc: Option<Arc<Document>>,
    /// Why the last load failed, while nothing is loaded (for [`Store::has_active_in_memory`]).
    failed: Option<FoldError>,
    /// Stamps queued and not yet settled ([`Store::queue_stamp`]), by session: the mark id and
    /// when it was queued. Reads of this process see those marks folded.
    stamping: HashMap<String, (u64, u64)>,
}

impl Memory {
    /// The session's newest mark, as readers of this process see it: folded once its stamp is
    /// queued.
    fn latest(&self, session_id: &str) -> Option<MarkRecord> {
        let mut mark = self.doc.as_deref()?.latest(session_id)?.clone();
        if mark.folded_at.is_none() {
            if let Some(&(id, at)) = self.stamping.get(session_id) {
                if id == mark.id {
                    mark.folded_at = Some(at);
                }
            }
        }
        Some(mark)
    }
}

/// A stamp queued for the store's next group commit ([`Store::queue_stamp`]).
#[derive(Debug)]
pub struct QueuedStamp {
    ticket: u64,
    session_id: String,
    mark_id: u64,
    /// Until the stamp is written ([`Store::finish_stamp`]), [`Store::close`] waits for it.
    _work: Work,
}

impl QueuedStamp {
    pub fn mark_id(&self) -> u64 {
        self.mark_id
    }
}

/// Most warnings kept until someone takes them ([`Store::take_warnings`]).
const MAX_WARNINGS: usize = 32;

/// One checkpoint store file. Share it (`Arc`) between every caller of the same path.
pub struct Store {
    path: PathBuf,
    lock_path: PathBuf,
    journal_path: PathBuf,
    limits: Mutex<LimitSet>,
    memory: Mutex<Memory>,
    /// Held through all file work (loads, re-reads, writes): what memory corresponds to on disk.
    disk: Mutex<DiskView>,
    queue: Mutex<Queue>,
    written: Condvar,
    /// Problems that did not fail an operation (a write landed but its directory fsync failed).
    warnings: Mutex<Vec<String>>,
    /// Whether a background load ([`Store::start_loading`]) is running.
    loading: AtomicBool,
    temp_counter: AtomicU64,
    /// Whether this process already swept the temp files of dead writers.
    swept: AtomicBool,
    /// The operations of this process in flight on the files ([`Store::close`] waits for them).
    in_flight: Arc<InFlight>,
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
    // A panic while holding one of these leaves consistent data (every mutation is a swap or
    // a batch applied whole), so a poisoned lock is still usable.
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
        let beside = |suffix: &str| {
            let mut name = path.file_name().unwrap_or_default().to_os_string();
            name.push(suffix);
            path.with_file_name(name)
        };
        Self {
            lock_path: beside(".lock"),
            journal_path: beside(".journal"),
            path,
            limits: Mutex::new(LimitSet {
                given: limits,
                registered: None,
            }),
            memory: Mutex::default(),
            disk: Mutex::default(),
            queue: Mutex::default(),
            written: Condvar::new(),
            warnings: Mutex::default(),
            loading: AtomicBool::new(false),
            temp_counter: AtomicU64::new(0),
            swept: AtomicBool::new(false),
            in_flight: Arc::default(),
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
    /// A write whose data landed where every reader sees it (the rename happened) but whose
    /// directory fsync then failed is returned as written: the failure is kept as a warning
    /// ([`Store::take_warnings`]), since reporting the mark lost would make the model take
    /// another one.
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
            Outcome::Stamp(_) => unreachable!("a mark op yields a mark"),
        }
    }

    /// Stamps `foldedAt` on `mark_id` when it is the session's latest active mark; durable on
    /// return. Safe to retry: a retry after a stamp that landed answers
    /// [`Stamp::AlreadyStamped`]. A write whose directory fsync failed counts as landed (see
    /// [`Store::mark`]).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a bad session id; `STORE_*` when the file cannot be read, locked
    /// or written — then the stamp may be retried.
    pub fn stamp(&self, session_id: &str, mark_id: u64) -> Result<Stamp> {
        check_session_id(session_id)?;
        self.load()?;
        // Skip the durable write when memory already says there is nothing to stamp.
        let answer = self.with_doc(|doc| commit::stamp_of(doc, session_id, mark_id));
        if answer != Some(Stamp::Stamped) {
            return Ok(answer.unwrap_or(Stamp::Missing));
        }
        let op = Op::Stamp {
            session_id: session_id.to_owned(),
            mark_id,
        };
        match self.submit(op)? {
            Outcome::Stamp(stamp) => Ok(stamp),
            Outcome::Marked(_) => unreachable!("a stamp op yields a stamp"),
        }
    }

    /// Queues the stamp of `mark_id` for the next group commit, at once and without touching the
    /// disk (callable on the JS thread): the fold it records has happened, and its result need not
    /// wait for the write. From this call on, this process reads the mark as folded, and any mark
    /// or stamp queued later is written after it. [`Store::finish_stamp`] writes it (off the JS
    /// thread) and reports the outcome.
    ///
    /// `Ok(None)`: nothing to queue — memory is not loaded yet (use [`Store::stamp`]), or memory
    /// already says there is nothing to stamp (folded, not the latest active mark, unknown).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a bad session id.
    pub fn queue_stamp(&self, session_id: &str, mark_id: u64) -> Result<Option<QueuedStamp>> {
        check_session_id(session_id)?;
        let mut memory = lock(&self.memory);
        let Some(doc) = memory.doc.as_deref() else {
            return Ok(None);
        };
        if commit::stamp_of(doc, session_id, mark_id) != Stamp::Stamped {
            return Ok(None);
        }
        // Queued under the memory lock: no reader sees the mark active once the op is queued.
        let ticket = self.enqueue(Op::Stamp {
            session_id: session_id.to_owned(),
            mark_id,
        });
        memory.stamping.insert(session_id.to_owned(), (mark_id, now_ms()));
        Ok(Some(QueuedStamp {
            ticket,
            session_id: session_id.to_owned(),
            mark_id,
            _work: self.begin_work(),
        }))
    }

    /// Writes a queued stamp (with whatever else is queued) and reports what it did; durable on
    /// return. On failure the mark reads active again, and [`Store::stamp`] may retry it.
    ///
    /// # Errors
    /// `STORE_*` when the files cannot be read, locked or written.
    pub fn finish_stamp(&self, queued: QueuedStamp) -> Result<Stamp> {
        let outcome = self.wait_for(queued.ticket);
        let mut memory = lock(&self.memory);
        if memory
            .stamping
            .get(&queued.session_id)
            .is_some_and(|(id, _)| *id == queued.mark_id)
        {
            memory.stamping.remove(&queued.session_id);
        }
        drop(memory);
        match outcome? {
            Outcome::Stamp(stamp) => Ok(stamp),
            Outcome::Marked(_) => unreachable!("a stamp op yields a stamp"),
        }
    }

    /// [`Store::stamp`] as a yes/no: whether this call stamped the mark (false: not the
    /// latest, already folded, or unknown).
    ///
    /// # Errors
    /// As [`Store::stamp`].
    pub fn complete_fold(&self, session_id: &str, mark_id: u64) -> Result<bool> {
        Ok(self.stamp(session_id, mark_id)? == Stamp::Stamped)
    }

    /// The session's newest mark, folded or not, from memory (loading the file on first use,
    /// on the calling thread: call it off the JS thread, or use [`Store::latest_in_memory`]).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a bad session id; `STORE_*` when the first load fails.
    pub fn latest(&self, session_id: &str) -> Result<Option<MarkRecord>> {
        check_session_id(session_id)?;
        self.load()?;
        Ok(lock(&self.memory).latest(session_id))
    }

    /// [`Store::latest`] when the file is already in memory, without touching the disk; `None`
    /// before the first load finished (or after it failed). Lets callers on the JS thread
    /// answer on the spot, and go off-thread only for the first load.
    pub fn latest_in_memory(&self, session_id: &str) -> Option<Result<Option<MarkRecord>>> {
        if let Err(e) = check_session_id(session_id) {
            return Some(Err(e));
        }
        let memory = lock(&self.memory);
        memory.doc.is_some().then(|| Ok(memory.latest(session_id)))
    }

    /// Whether the session's newest mark exists and is not folded, from memory (loading the
    /// file on first use, on the calling thread; see [`Store::latest`]).
    ///
    /// # Errors
    /// As [`Store::latest`].
    pub fn has_active(&self, session_id: &str) -> Result<bool> {
        Ok(self.latest(session_id)?.is_some_and(|m| m.folded_at.is_none()))
    }

    /// [`Store::has_active`] without touching the disk: `None` while the file was never loaded,
    /// `Some(Err(..))` with the error of the last load when it failed.
    pub fn has_active_in_memory(&self, session_id: &str) -> Option<Result<bool>> {
        if let Err(e) = check_session_id(session_id) {
            return Some(Err(e));
        }
        let memory = lock(&self.memory);
        match (&memory.doc, &memory.failed) {
            (Some(_), _) => Some(Ok(memory.latest(session_id).is_some_and(|m| m.folded_at.is_none()))),
            (None, Some(e)) => Some(Err(e.clone())),
            (None, None) => None,
        }
    }

    /// Whether the file is in memory (reads answer without touching the disk).
    pub fn is_loaded(&self) -> bool {
        lock(&self.memory).doc.is_some()
    }

    /// Loads the store into memory if it is not yet: on the calling thread, waiting for any
    /// other load or write of this store in progress. A no-op once loaded.
    ///
    /// # Errors
    /// `STORE_*` when the files cannot be read (remembered for [`Store::has_active_in_memory`]
    /// until a load succeeds).
    pub fn load(&self) -> Result<()> {
        if self.is_loaded() {
            return Ok(());
        }
        let _work = self.begin_work();
        let mut disk = lock(&self.disk);
        if self.is_loaded() {
            return Ok(()); // another thread loaded it while we waited
        }
        let loaded = self.read_shared(&mut disk);
        if let Err(e) = &loaded {
            lock(&self.memory).failed = Some(e.clone());
        }
        loaded
    }

    /// Catches memory up with the files under the shared lock (without one when there is no
    /// lock file to take).
    fn read_shared(&self, disk: &mut DiskView) -> Result<()> {
        let mut shared = self.lock_shared()?;
        let held = match shared.as_mut() {
            Some(file) => Held::Shared(self.read_generation(file)?),
            None => Held::Nothing,
        };
        self.catch_up(disk, held)
    }

    /// Starts loading the file on a thread of its own unless it is loaded or loading, and
    /// returns at once. For callers on the JS thread that cannot wait (`hasActiveSync`); the load
    /// counts as in flight until it is over ([`Store::close`] waits for it).
    pub fn start_loading(self: &Arc<Self>) {
        if self.is_loaded() || self.loading.swap(true, Ordering::SeqCst) {
            return;
        }
        let store = self.clone();
        let work = self.begin_work();
        let spawned = std::thread::Builder::new()
            .name("dsh-fold-store-load".into())
            .spawn(move || {
                let _ = store.load();
                store.loading.store(false, Ordering::SeqCst);
                drop(work);
            });
        if spawned.is_err() {
            self.loading.store(false, Ordering::SeqCst);
        }
    }

    /// Claims the store's files for one operation until the returned [`Work`] is dropped:
    /// [`Store::close`] waits for it. Take it before the operation's first file work (on the
    /// caller's thread, so a close that starts later cannot miss it) and drop it after its last,
    /// including work done after its callers have their answer (a stamp queued by a fold, its
    /// retries).
    pub fn begin_work(&self) -> Work {
        self.in_flight.begin()
    }

    /// Waits until no operation of this process holds a [`Work`] on the store: every write,
    /// stamp, load, listing and journal fold started before the call has finished touching the
    /// files. Blocks the calling thread (call it off the JS thread). The store stays usable:
    /// the next operation opens it again.
    pub fn close(&self) {
        self.in_flight.wait_idle();
    }

    /// What a host calls when it starts using the store (a plugin's mount): loads it, so the
    /// first turn's reads answer from memory, and folds a non-empty journal into the store file,
    /// so tools that read only the file see everything. The fold is best effort: when it
    /// fails (a read-only directory...) the store works as it is, and a warning says why.
    ///
    /// # Errors
    /// As [`Store::load`].
    pub fn open(&self) -> Result<()> {
        let _work = self.begin_work();
        self.load()?;
        let pending = {
            let disk = lock(&self.disk);
            disk.journal_id
                .is_some_and(|id| disk.journal_len > journal::header(id).len() as u64)
        };
        if pending {
            if let Err(e) = self.compact_now() {
                self.warn(format!("{e} (the journal keeps every change)"));
            }
        }
        Ok(())
    }

    /// Folds the journal into the store file now, under the exclusive lock. Does nothing (and
    /// creates nothing) when there is no store yet.
    ///
    /// # Errors
    /// `STORE_*` when the files cannot be read or written (the journal keeps every change).
    pub fn compact(&self) -> Result<()> {
        let _work = self.begin_work();
        self.compact_now()
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
        let _work = self.begin_work();
        let mut disk = lock(&self.disk);
        self.read_shared(&mut disk)?;
        // Listed outside the memory lock (copying 100,000 marks takes milliseconds a reader
        // should not wait for), with `disk` held so no writer changes memory meanwhile (which
        // would make it copy the document this listing holds).
        let (doc, stamping) = {
            let memory = lock(&self.memory);
            (memory.doc.clone(), memory.stamping.clone())
        };
        let Some(doc) = doc else {
            return Ok(Vec::new());
        };
        let marks = doc
            .marks
            .values()
            .rev()
            .filter(|m| session_id.is_none_or(|s| m.session_id == s))
            .cloned()
            .map(|mut m| {
                // A stamp queued and not yet written: this process reads the mark folded.
                if let (None, Some(&(id, at))) = (m.folded_at, stamping.get(&m.session_id)) {
                    if id == m.id {
                        m.folded_at = Some(at);
                    }
                }
                m
            })
            .collect();
        drop(doc);
        drop(disk);
        Ok(marks)
    }

    /// The mark with id `mark_id`, whichever session it belongs to: one lookup in memory, not a
    /// listing. Catches memory up with the files first (a cheap check of their generation when
    /// no other process wrote since), so a mark another process just took is found too.
    ///
    /// # Errors
    /// `STORE_*` when the files cannot be read.
    pub fn find(&self, mark_id: u64) -> Result<Option<MarkRecord>> {
        let _work = self.begin_work();
        let mut disk = lock(&self.disk);
        self.read_shared(&mut disk)?;
        drop(disk);
        Ok(self.with_doc(|doc| doc.marks.get(&mark_id).cloned()).flatten())
    }

    /// [`Store::find`] from memory alone, for the JS thread: `None` before the file is loaded or
    /// when memory has no such mark (then ask [`Store::find`], which reads what other processes
    /// wrote since).
    pub fn find_in_memory(&self, mark_id: u64) -> Option<MarkRecord> {
        self.with_doc(|doc| doc.marks.get(&mark_id).cloned()).flatten()
    }

    /// The warnings of operations that succeeded with a problem worth telling (a durable write
    /// whose directory fsync failed), oldest first; each is returned once.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.warnings))
    }

    fn warn(&self, warning: String) {
        let mut warnings = lock(&self.warnings);
        // One write can meet the same failure twice (the rename's directory fsync, then the
        // new journal's): one warning says it.
        if warnings.last() == Some(&warning) {
            return;
        }
        if warnings.len() >= MAX_WARNINGS {
            warnings.remove(0);
        }
        warnings.push(warning);
    }

    /// Runs `f` on the document in memory (briefly holding the memory lock); `None` when the
    /// file is not loaded.
    fn with_doc<T>(&self, f: impl FnOnce(&Document) -> T) -> Option<T> {
        lock(&self.memory).doc.as_deref().map(f)
    }

    /// A copy of the document in memory, to change and write whole (a rewrite).
    fn doc_snapshot(&self) -> Document {
        let doc = lock(&self.memory).doc.clone().expect("memory is loaded once caught up");
        Arc::unwrap_or_clone(doc)
    }

    /// Changes the document in memory in place (the changes of one append), briefly holding
    /// the memory lock. No copy is made unless someone holds the document outside the lock.
    fn update_doc(&self, f: impl FnOnce(&mut Document)) {
        let mut memory = lock(&self.memory);
        if let Some(doc) = memory.doc.as_mut() {
            f(Arc::make_mut(doc));
        }
    }

    /// Puts `doc` in memory. The old document is dropped after the lock is released: freeing
    /// 100,000 marks takes milliseconds a reader should not wait for.
    fn set_doc(&self, doc: Arc<Document>) {
        let old = {
            let mut memory = lock(&self.memory);
            memory.failed = None;
            memory.doc.replace(doc)
        };
        drop(old);
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
    // The hot path (every hasActive at every turn end): an absolute path already opened, found
    // under the map's read lock with no allocation.
    if path.is_absolute() {
        if let Some(store) = STORES.get(path) {
            return Ok(store.clone());
        }
    }
    let abs =
        std::path::absolute(path).map_err(|e| FoldError::invalid(format!("store path {}: {e}", path.display())))?;
    Ok(STORES
        .entry(abs.clone())
        .or_insert_with(|| Arc::new(Store::new(abs, Limits::default())))
        .clone())
}

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

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

/// One checkpoint mark as stored and as returned to callers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MarkRecord {
    pub id: u64,
    pub session_id: String,
    /// The session's event count when the mark was taken: the fold anchor.
    pub log_length: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// Milliseconds since the Unix epoch; `None` while the mark is active.
    pub folded_at: Option<u64>,
}

/// The whole file, parsed. Unknown `global` keys and other tables are carried through untouched.
#[derive(Debug, Clone, Default)]
struct Document {
    next_id: u64,
    marks: BTreeMap<u64, MarkRecord>,
    /// Newest mark id of each session (the one `latest` answers with).
    latest: HashMap<String, u64>,
    other_global: Map<String, Value>,
    other_tables: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Unit {
    name: String,
    version: u64,
}

impl Document {
    fn parse(path: &Path, bytes: &[u8]) -> Result<Self> {
        let root: Value =
            serde_json::from_slice(bytes).map_err(|e| FoldError::corrupt(path, format!("invalid JSON: {e}")))?;
        let Value::Object(mut root) = root else {
            return Err(FoldError::corrupt(path, "top level is not an object"));
        };
        let unit: Unit = root
            .remove("unit")
            .ok_or_else(|| FoldError::corrupt(path, "no `unit`"))
            .and_then(|u| {
                serde_json::from_value(u).map_err(|e| FoldError::corrupt(path, format!("bad `unit`: {e}")))
            })?;
        if unit.name != UNIT_NAME {
            return Err(FoldError::corrupt(
                path,
                format!("unit is `{}`, expected `{UNIT_NAME}`", unit.name),
            ));
        }
        if unit.version > UNIT_VERSION {
            return Err(FoldError::StoreVersion(format!(
                "checkpoint store {} has layout version {}, newer than the {UNIT_VERSION} this dsh-fold reads; \
                 upgrade dsh-fold (the file was left unchanged)",
                path.display(),
                unit.version
            )));
        }
        if unit.version < 1 {
            return Err(FoldError::corrupt(
                path,
                format!("unknown layout version {}", unit.version),
            ));
        }
        let mut other_global = match root.remove("global") {
            Some(Value::Object(g)) => g,
            None => Map::new(),
            Some(_) => return Err(FoldError::corrupt(path, "`global` is not an object")),
        };
        let mut other_tables = match root.remove("tables") {
            Some(Value::Object(t)) => t,
            None => Map::new(),
            Some(_) => return Err(FoldError::corrupt(path, "`tables` is not an object")),
        };
        if let Some(key) = root.keys().next() {
            return Err(FoldError::corrupt(path, format!("unexpected top-level key `{key}`")));
        }
        let mut next_id = match other_global.remove("nextId") {
            None => 1,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=MAX_MARK_ID + 1).contains(n))
                .ok_or_else(|| {
                    FoldError::corrupt(
                        path,
                        format!("`global.nextId` is not an integer from 1 to {}", MAX_MARK_ID + 1),
                    )
                })?,
        };
        let rows = match other_tables.remove("marks") {
            Some(Value::Object(rows)) => rows,
            None => Map::new(),
            Some(_) => return Err(FoldError::corrupt(path, "`tables.marks` is not an object")),
        };
        let mut doc = Document {
            other_global,
            other_tables,
            ..Default::default()
        };
        for (key, row) in rows {
            let mark: MarkRecord =
                serde_json::from_value(row).map_err(|e| FoldError::corrupt(path, format!("mark `{key}`: {e}")))?;
            if key != mark.id.to_string() || mark.id == 0 || mark.id > MAX_MARK_ID {
                return Err(FoldError::corrupt(path, format!("mark `{key}` has id {}", mark.id)));
            }
            next_id = next_id.max(mark.id + 1);
            doc.insert(mark);
        }
        doc.next_id = next_id;
        Ok(doc)
    }

    /// The file's bytes, serialized straight from the records. (Building a `serde_json::Value`
    /// per mark first, then the bytes, was ~70 % of a write's CPU with 10,000 marks stored;
    /// bench/mark.mjs.)
    fn to_json(&self) -> Vec<u8> {
        use serde::ser::{SerializeMap, Serializer};

        /// The entries of `other` plus `key: value` (replacing an entry of that key).
        struct With<'a, V> {
            other: &'a Map<String, Value>,
            key: &'static str,
            value: V,
        }
        impl<V: Serialize> Serialize for With<'_, V> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(None)?;
                for (k, v) in self.other.iter().filter(|(k, _)| k.as_str() != self.key) {
                    map.serialize_entry(k, v)?;
                }
                map.serialize_entry(self.key, &self.value)?;
                map.end()
            }
        }
        /// The marks table: `{"<id>": mark}` (serde_json writes integer keys as strings).
        struct Marks<'a>(&'a BTreeMap<u64, MarkRecord>);
        impl Serialize for Marks<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.collect_map(self.0)
            }
        }
        #[derive(Serialize)]
        struct UnitOut {
            name: &'static str,
            version: u64,
        }
        #[derive(Serialize)]
        struct Root<'a> {
            unit: UnitOut,
            global: With<'a, u64>,
            tables: With<'a, Marks<'a>>,
        }
        serde_json::to_vec(&Root {
            unit: UnitOut {
                name: UNIT_NAME,
                version: UNIT_VERSION,
            },
            global: With {
                other: &self.other_global,
                key: "nextId",
                value: self.next_id,
            },
            tables: With {
                other: &self.other_tables,
                key: "marks",
                value: Marks(&self.marks),
            },
        })
        .expect("document serializes")
    }

    fn insert(&mut self, mark: MarkRecord) {
        let latest = self.latest.entry(mark.session_id.clone()).or_insert(mark.id);
        *latest = (*latest).max(mark.id);
        self.marks.insert(mark.id, mark);
    }

    fn latest(&self, session_id: &str) -> Option<&MarkRecord> {
        self.latest.get(session_id).and_then(|id| self.marks.get(id))
    }

    /// Drops marks past the age limit and all but the newest `max_marks_per_session` per session.
    /// Returns whether anything was removed.
    fn prune(&mut self, limits: Limits, now: u64) -> bool {
        let before = self.marks.len();
        let cutoff = now.saturating_sub(limits.max_age_ms);
        let mut kept_per_session: HashMap<&str, u32> = HashMap::new();
        let mut doomed = Vec::new();
        for (id, mark) in self.marks.iter().rev() {
            let kept = kept_per_session.entry(mark.session_id.as_str()).or_default();
            if mark.created_at < cutoff || *kept >= limits.max_marks_per_session {
                doomed.push(*id);
            } else {
                *kept += 1;
            }
        }
        for id in doomed {
            self.marks.remove(&id);
        }
        if self.marks.len() != before {
            self.latest.clear();
            for mark in self.marks.values() {
                self.latest.insert(mark.session_id.clone(), mark.id);
            }
        }
        self.marks.len() != before
    }
}

/// What identifies one version of the file on disk, so an unchanged file is not re-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

impl FileStamp {
    fn of(meta: &fs::Metadata) -> Self {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        Self {
            ino: sys::inode(meta),
            len: meta.len(),
            mtime_ns,
        }
    }
}

/// The in-memory view of the file and the stamp of the version it was read from.
#[derive(Default)]
struct Cache {
    doc: Option<Arc<Document>>,
    stamp: Option<FileStamp>,
    /// The lock file's write counter when `doc` was read or written under the lock; `None` when
    /// `doc` came from an unlocked read (the first load, a listing), which the next write re-reads.
    generation: Option<u64>,
}

/// A write queued for the next group commit.
#[derive(Debug, Clone)]
enum Op {
    Mark {
        session_id: String,
        log_length: u64,
        objective: Option<String>,
    },
    CompleteFold {
        session_id: String,
        mark_id: u64,
    },
}

#[derive(Debug, Clone)]
enum Outcome {
    Marked(MarkRecord),
    Stamped(bool),
}

#[derive(Default)]
struct Queue {
    pending: Vec<(u64, Op)>,
    done: HashMap<u64, Result<Outcome>>,
    writing: bool,
    next_ticket: u64,
}

/// One checkpoint store file. Share it (`Arc`) between every caller of the same path.
pub struct Store {
    path: PathBuf,
    lock_path: PathBuf,
    limits: Mutex<Limits>,
    cache: Mutex<Cache>,
    queue: Mutex<Queue>,
    written: Condvar,
    temp_counter: AtomicU64,
    /// Whether this process already swept the temp files of dead writers.
    swept: AtomicBool,
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
            limits: Mutex::new(limits),
            cache: Mutex::default(),
            queue: Mutex::default(),
            written: Condvar::new(),
            temp_counter: AtomicU64::new(0),
            swept: AtomicBool::new(false),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the pruning limits used from the next write on.
    pub fn set_limits(&self, limits: Limits) {
        *lock(&self.limits) = limits;
    }

    pub fn limits(&self) -> Limits {
        *lock(&self.limits)
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

    /// The in-memory document, loading the file on first use.
    fn doc(&self) -> Result<Arc<Document>> {
        if let Some(doc) = &lock(&self.cache).doc {
            return Ok(doc.clone());
        }
        self.refresh()
    }

    /// Re-reads the file if it changed since we last read or wrote it.
    fn refresh(&self) -> Result<Arc<Document>> {
        // Read while holding the cache so a concurrent writer's newer view is never replaced
        // by an older one read before its rename.
        let mut cache = lock(&self.cache);
        let (doc, stamp) = self.read_current(&cache, None)?;
        if !cache.doc.as_ref().is_some_and(|d| Arc::ptr_eq(d, &doc)) {
            cache.generation = None;
        }
        cache.doc = Some(doc.clone());
        cache.stamp = stamp;
        Ok(doc)
    }

    /// The document as it is on disk now, reusing `cache` when the file is the one it holds:
    /// same inode, length and mtime, and — when called under the lock with the lock file's
    /// `generation` — no write by anyone since `cache` was taken.
    fn read_current(&self, cache: &Cache, generation: Option<u64>) -> Result<(Arc<Document>, Option<FileStamp>)> {
        let meta = match fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Ok((
                    Arc::new(Document {
                        next_id: 1,
                        ..Default::default()
                    }),
                    None,
                ));
            }
            Err(e) => return Err(FoldError::io(&self.path, "cannot stat", &e)),
        };
        if meta.is_dir() {
            return Err(FoldError::StoreIo(format!(
                "checkpoint store {} is a directory, not a file; it was left unchanged",
                self.path.display()
            )));
        }
        let stamp = FileStamp::of(&meta);
        if let (Some(doc), Some(seen)) = (&cache.doc, cache.stamp) {
            if seen == stamp && (generation.is_none() || generation == cache.generation) {
                return Ok((doc.clone(), Some(stamp)));
            }
        }
        let bytes = fs::read(&self.path).map_err(|e| FoldError::io(&self.path, "cannot read", &e))?;
        Ok((Arc::new(Document::parse(&self.path, &bytes)?), Some(stamp)))
    }

    /// Queues `op` for the next group commit and waits for its result. The first caller to
    /// find no write in flight becomes the leader and writes every op queued so far.
    fn submit(&self, op: Op) -> Result<Outcome> {
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
                let results = self.commit_batch(&batch);
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
    fn commit_batch(&self, batch: &[(u64, Op)]) -> Vec<Result<Outcome>> {
        match self.try_commit_batch(batch) {
            Ok(results) => results.into_iter().map(Ok).collect(),
            Err(e) => batch.iter().map(|_| Err(e.clone())).collect(),
        }
    }

    fn try_commit_batch(&self, batch: &[(u64, Op)]) -> Result<Vec<Outcome>> {
        self.ensure_dir()?;
        let mut file_lock = self.lock_file()?;
        let generation = self.read_generation(&mut file_lock)?;
        let (current, stamp) = self.read_current(&lock(&self.cache), Some(generation))?;
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
                    doc.insert(mark.clone());
                    changed = true;
                    Outcome::Marked(mark)
                }
                Op::CompleteFold { session_id, mark_id } => {
                    let latest = doc.latest.get(session_id.as_str()).copied();
                    let stamped = match doc.marks.get_mut(mark_id) {
                        Some(m) if latest == Some(*mark_id) && m.folded_at.is_none() => {
                            m.folded_at = Some(now);
                            true
                        }
                        _ => false,
                    };
                    changed |= stamped;
                    Outcome::Stamped(stamped)
                }
            });
        }
        changed |= doc.prune(self.limits(), now);
        if !changed {
            let mut cache = lock(&self.cache);
            (cache.doc, cache.stamp, cache.generation) = (Some(current), stamp, Some(generation));
            return Ok(outcomes);
        }
        // Bump the counter first: a crash between the two only makes others re-read needlessly.
        self.write_generation(&mut file_lock, generation + 1)?;
        let stamp = self.write_durably(&doc.to_json())?;
        let mut cache = lock(&self.cache);
        (cache.doc, cache.stamp, cache.generation) = (Some(Arc::new(doc)), Some(stamp), Some(generation + 1));
        Ok(outcomes)
    }

    fn ensure_dir(&self) -> Result<()> {
        let dir = self.dir();
        if dir.is_dir() {
            return Ok(());
        }
        sys::create_private_dir(dir).map_err(|e| {
            FoldError::io(
                &self.path,
                &format!("cannot create the store directory {}", dir.display()),
                &e,
            )
        })
    }

    fn dir(&self) -> &Path {
        match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        }
    }

    /// Takes the exclusive cross-process lock; released when the returned file drops.
    fn lock_file(&self) -> Result<File> {
        let file = sys::private_options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.lock_path)
            .map_err(|e| FoldError::io(&self.lock_path, "cannot open the lock file", &e))?;
        file.lock()
            .map_err(|e| FoldError::io(&self.lock_path, "cannot lock", &e))?;
        Ok(file)
    }

    /// The write counter in the lock file (0 for a new or empty lock file).
    fn read_generation(&self, file: &mut File) -> Result<u64> {
        let mut bytes = [0u8; 8];
        let read = file
            .seek(SeekFrom::Start(0))
            .and_then(|_| file.read(&mut bytes))
            .map_err(|e| FoldError::io(&self.lock_path, "cannot read the lock file", &e))?;
        Ok(if read == bytes.len() {
            u64::from_le_bytes(bytes)
        } else {
            0
        })
    }

    /// Stores the write counter. Not fsynced: after a crash, a lost bump only costs a re-read.
    fn write_generation(&self, file: &mut File, generation: u64) -> Result<()> {
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(&generation.to_le_bytes()))
            .map_err(|e| FoldError::io(&self.lock_path, "cannot write the lock file", &e))
    }

    /// Deletes the temp files of writers that died between creating and renaming them (a kill,
    /// a power cut). Every write happens under the file lock, which we hold, so any temp file of
    /// this store is such a leftover. Best effort: a failure only leaves the garbage there.
    fn remove_stale_temp_files(&self, name: &str) {
        let prefix = format!(".{name}.");
        let Ok(entries) = fs::read_dir(self.dir()) else { return };
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let file_name = file_name.to_string_lossy();
            if file_name.starts_with(&prefix) && file_name.ends_with(".tmp") {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// temp → write → fsync → rename → fsync dir. Returns the stamp of the file now in place.
    /// Called with the file lock held.
    fn write_durably(&self, bytes: &[u8]) -> Result<FileStamp> {
        let name = self.path.file_name().unwrap_or_default().to_string_lossy();
        // Once per process: leftovers come from writers that died before this one started (or
        // while it runs, swept by the next process), and a directory scan per write is waste.
        if !self.swept.swap(true, Ordering::Relaxed) {
            self.remove_stale_temp_files(&name);
        }
        let temp = self.path.with_file_name(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            self.temp_counter.fetch_add(1, Ordering::Relaxed)
        ));
        // Errors name the store file (what the caller knows) and the temp file (what failed).
        let temp_err = |what: &str, e: std::io::Error| {
            FoldError::io(&self.path, &format!("{what} the temp file {}", temp.display()), &e)
        };
        let result = (|| {
            let mut file = sys::private_options()
                .write(true)
                .create_new(true)
                .open(&temp)
                .map_err(|e| temp_err("cannot create", e))?;
            file.write_all(bytes).map_err(|e| temp_err("cannot write", e))?;
            file.sync_all().map_err(|e| temp_err("cannot fsync", e))?;
            let stamp = FileStamp::of(&file.metadata().map_err(|e| temp_err("cannot stat", e))?);
            fs::rename(&temp, &self.path)
                .map_err(|e| FoldError::io(&self.path, "cannot rename the temp file over", &e))?;
            Ok(stamp)
        })();
        if result.is_err() {
            // Best effort: the temp file is ours and worthless now; the store file is untouched.
            let _ = fs::remove_file(&temp);
            return result;
        }
        sys::sync_dir(self.dir()).map_err(|e| {
            FoldError::io(
                &self.path,
                &format!("cannot fsync the directory {}", self.dir().display()),
                &e,
            )
        })?;
        result
    }
}

/// Platform specifics: permissions, inode numbers, directory fsync.
mod sys {
    use std::fs::{self, OpenOptions};
    use std::path::Path;

    #[cfg(unix)]
    pub fn private_options() -> OpenOptions {
        use std::os::unix::fs::OpenOptionsExt;
        let mut o = OpenOptions::new();
        o.mode(0o600);
        o
    }

    #[cfg(not(unix))]
    pub fn private_options() -> OpenOptions {
        OpenOptions::new()
    }

    #[cfg(unix)]
    pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
    }

    #[cfg(not(unix))]
    pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
        fs::create_dir_all(dir)
    }

    #[cfg(unix)]
    pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
        fs::File::open(dir)?.sync_all()
    }

    #[cfg(not(unix))]
    pub fn sync_dir(_dir: &Path) -> std::io::Result<()> {
        // Windows has no directory fsync; the rename is durable once MoveFileEx returns.
        Ok(())
    }

    #[cfg(unix)]
    pub fn inode(meta: &fs::Metadata) -> u64 {
        use std::os::unix::fs::MetadataExt;
        meta.ino()
    }

    #[cfg(not(unix))]
    pub fn inode(_meta: &fs::Metadata) -> u64 {
        0
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

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("storages/checkpoint.json"), Limits::default());
        (dir, store)
    }

    #[test]
    fn ids_are_monotonic_and_survive_a_reopen() {
        let (_dir, store) = temp_store();
        assert_eq!(store.mark("s", 3, Some("look")).unwrap().id, 1);
        assert_eq!(store.mark("t", 5, None).unwrap().id, 2);
        let again = Store::new(store.path(), Limits::default());
        let latest = again.latest("s").unwrap().unwrap();
        assert_eq!(
            (latest.id, latest.log_length, latest.objective.as_deref()),
            (1, 3, Some("look"))
        );
        assert_eq!(again.mark("s", 9, None).unwrap().id, 3);
        assert_eq!(
            again.list(None).unwrap().iter().map(|m| m.id).collect::<Vec<_>>(),
            [3, 2, 1]
        );
    }

    #[test]
    fn complete_fold_stamps_only_the_latest_active_mark() {
        let (_dir, store) = temp_store();
        let first = store.mark("s", 1, None).unwrap();
        let second = store.mark("s", 2, None).unwrap();
        assert!(!store.complete_fold("s", first.id).unwrap());
        assert!(store.has_active("s").unwrap());
        assert!(store.complete_fold("s", second.id).unwrap());
        assert!(!store.complete_fold("s", second.id).unwrap());
        assert!(!store.has_active("s").unwrap());
        let reread = Store::new(store.path(), Limits::default());
        assert!(reread.latest("s").unwrap().unwrap().folded_at.is_some());
    }

    #[cfg(unix)]
    #[test]
    fn files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("new/checkpoint.json"), Limits::default());
        store.mark("s", 0, None).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.path()), 0o600);
        assert_eq!(mode(&dir.path().join("new")), 0o700);
    }

    #[test]
    fn prunes_per_session_and_by_age_but_never_reuses_ids() {
        let (_dir, store) = temp_store();
        store.set_limits(Limits {
            max_marks_per_session: 2,
            ..Limits::default()
        });
        for n in 0..5 {
            store.mark("s", n, None).unwrap();
        }
        assert_eq!(
            store.list(Some("s")).unwrap().iter().map(|m| m.id).collect::<Vec<_>>(),
            [5, 4]
        );
        store.set_limits(Limits {
            max_marks_per_session: 2,
            max_age_ms: 0,
        });
        // Everything older than "now" goes; the new mark's id still continues from 6.
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!(store.mark("t", 0, None).unwrap().id, 6);
    }

    #[test]
    fn unreadable_files_are_never_overwritten() {
        let cases: [(&[u8], &str); 6] = [
            (b"", "STORE_CORRUPT"),
            (b"{\"unit\":", "STORE_CORRUPT"),
            (b"[]", "STORE_CORRUPT"),
            (
                br#"{"unit":{"name":"other","version":1},"global":{},"tables":{}}"#,
                "STORE_CORRUPT",
            ),
            (
                br#"{"unit":{"name":"checkpoint","version":2},"global":{},"tables":{}}"#,
                "STORE_VERSION",
            ),
            (
                br#"{"unit":{"name":"checkpoint","version":1},"tables":{"marks":{"1":{"id":2}}}}"#,
                "STORE_CORRUPT",
            ),
        ];
        for (bytes, code) in cases {
            let (_dir, store) = temp_store();
            fs::create_dir_all(store.path().parent().unwrap()).unwrap();
            fs::write(store.path(), bytes).unwrap();
            let err = store.mark("s", 1, None).unwrap_err();
            assert_eq!(err.code(), code, "{err}");
            assert!(err.to_string().contains(&store.path().display().to_string()));
            assert_eq!(fs::read(store.path()).unwrap(), bytes);
            assert_eq!(store.latest("s").unwrap_err().code(), code);
        }
    }

    #[test]
    fn other_tables_and_globals_are_carried_through() {
        let (_dir, store) = temp_store();
        fs::create_dir_all(store.path().parent().unwrap()).unwrap();
        fs::write(
            store.path(),
            br#"{"unit":{"name":"checkpoint","version":1},"global":{"x":1,"nextId":7},"tables":{"t":{"k":true}}}"#,
        )
        .unwrap();
        assert_eq!(store.mark("s", 1, None).unwrap().id, 7);
        let v: Value = serde_json::from_slice(&fs::read(store.path()).unwrap()).unwrap();
        assert_eq!(v["global"]["x"], 1);
        assert_eq!(v["global"]["nextId"], 8);
        assert_eq!(v["tables"]["t"]["k"], true);
    }

    #[test]
    fn concurrent_writers_in_two_stores_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint.json");
        // Two Store values over one file behave like two processes (separate memory, one file lock).
        let stores = [
            Arc::new(Store::new(&path, Limits::default())),
            Arc::new(Store::new(&path, Limits::default())),
        ];
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let store = stores[t % 2].clone();
                std::thread::spawn(move || {
                    (0..25)
                        .map(|n| store.mark(&format!("s{t}"), n, None).unwrap().id)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut ids: Vec<u64> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
        ids.sort_unstable();
        assert_eq!(ids, (1..=200).collect::<Vec<_>>());
        let fresh = Store::new(&path, Limits::default());
        assert_eq!(fresh.list(None).unwrap().len(), 200);
    }

    #[test]
    fn another_writer_is_seen_even_when_the_file_looks_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint.json");
        let (a, b) = (
            Store::new(&path, Limits::default()),
            Store::new(&path, Limits::default()),
        );
        assert_eq!(a.mark("s", 1, None).unwrap().id, 1);
        assert_eq!(b.mark("t", 1, None).unwrap().id, 2);
        // What a coarse mtime (and a reused inode) can make true: a's view looks like the file.
        lock(&a.cache).stamp = Some(FileStamp::of(&fs::metadata(&path).unwrap()));
        assert_eq!(
            a.mark("s", 2, None).unwrap().id,
            3,
            "the lock file's counter forces a re-read"
        );
        assert_eq!(Store::new(&path, Limits::default()).list(None).unwrap().len(), 3);
    }

    #[test]
    fn rejects_bad_input_without_touching_the_disk() {
        let (_dir, store) = temp_store();
        assert_eq!(store.mark("", 1, None).unwrap_err().code(), "INVALID_ARGUMENT");
        assert_eq!(store.mark("a\nb", 1, None).unwrap_err().code(), "INVALID_ARGUMENT");
        let huge = "x".repeat(MAX_OBJECTIVE_BYTES + 1);
        assert_eq!(store.mark("s", 1, Some(&huge)).unwrap_err().code(), "INVALID_ARGUMENT");
        assert!(!store.path().parent().unwrap().exists());
    }
}

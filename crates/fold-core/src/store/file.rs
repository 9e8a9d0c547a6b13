//! The store's files: the store file (rewritten whole, atomically), its journal (appended,
//! fsync'd), and the lock file (the cross-process lock and its write counter); and bringing
//! memory up to date with them.
//!
//! Every load, re-read and write holds the store's `disk` lock while it works here. Files are
//! read and parsed with only that lock held; memory is locked just to swap a new document in,
//! or to apply the changes of one append, so readers keep answering meanwhile.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use super::document::Document;
use super::journal::{self, Scan};
use super::{now_ms, sys, Store, UNIT_VERSION};
use crate::error::{FoldError, Result};

/// What identifies one version of a file on disk, so an unchanged file is not re-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileStamp {
    pub(super) ino: u64,
    pub(super) len: u64,
    pub(super) mtime_ns: i128,
}

impl FileStamp {
    pub(super) fn of(meta: &fs::Metadata) -> Self {
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

/// What memory corresponds to on disk (under the store's `disk` lock).
#[derive(Debug, Default, Clone)]
pub(super) struct DiskView {
    /// Whether memory holds what this view describes (false until the first read, and after a
    /// writer panicked).
    pub(super) known: bool,
    /// The store file memory was read from or written as; `None`: there was none.
    pub(super) base: Option<FileStamp>,
    /// Its layout version (0: none) and size.
    pub(super) base_version: u64,
    pub(super) base_len: u64,
    /// The journal's header id; `None`: no journal, or no whole header yet.
    pub(super) journal_id: Option<u64>,
    /// Bytes of whole journal lines memory holds (header included).
    pub(super) journal_len: u64,
    /// Whether a torn tail follows them (cut by the next writer).
    pub(super) torn: bool,
    /// The lock file's write counter when memory was last brought up to date under the lock;
    /// `None` after a read without it.
    pub(super) generation: Option<u64>,
}

/// How the caller holds the cross-process lock, with the write counter it read under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Held {
    /// Not at all: there is no lock file to take (nobody ever wrote, or it was deleted).
    Nothing,
    Shared(u64),
    Exclusive(u64),
}

impl Held {
    fn generation(self) -> Option<u64> {
        match self {
            Held::Nothing => None,
            Held::Shared(g) | Held::Exclusive(g) => Some(g),
        }
    }
}

impl Store {
    /// Brings memory up to date with the files, with `disk` held: nothing to do when nobody
    /// wrote since (the lock file's counter says so); the appended journal lines when the store
    /// file and the journal are the ones memory came from; else a full read. A torn journal
    /// tail is cut when the caller holds the exclusive lock (it is about to append).
    pub(super) fn catch_up(&self, disk: &mut DiskView, held: Held) -> Result<()> {
        let generation = held.generation();
        if disk.known && self.is_loaded() {
            if generation.is_some() && generation == disk.generation {
                return self.cut_torn_tail(disk, held);
            }
            if let Some(scan) = self.read_tail(disk)? {
                if !scan.changes.is_empty() {
                    if let Some(checked) = self.with_doc(|doc| doc.check(&self.journal_path, &scan.changes)) {
                        checked?;
                    }
                    let (limits, now) = (self.limits(), now_ms());
                    self.update_doc(|doc| {
                        let touched = doc.apply(scan.changes);
                        doc.prune_after(limits, now, &touched);
                    });
                }
                disk.journal_len += scan.valid as u64;
                disk.torn = scan.torn;
                disk.generation = generation;
                return self.cut_torn_tail(disk, held);
            }
        }
        let (mut doc, view) = self.read_all(held)?;
        doc.prune(self.limits(), now_ms());
        self.set_doc(Arc::new(doc));
        *disk = DiskView { generation, ..view };
        self.cut_torn_tail(disk, held)
    }

    /// The journal lines appended since `disk` was taken, when the store file and the journal
    /// are still the ones it describes; `None` when memory must be read again whole.
    fn read_tail(&self, disk: &DiskView) -> Result<Option<Scan>> {
        let Some(id) = disk.journal_id else { return Ok(None) };
        if self.stat_base()? != disk.base {
            return Ok(None);
        }
        let mut file = match File::open(&self.journal_path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(FoldError::io(&self.journal_path, "cannot open", &e)),
        };
        let read_err = |e: std::io::Error| FoldError::io(&self.journal_path, "cannot read", &e);
        let len = file.metadata().map_err(read_err)?.len();
        let header = journal::header(id);
        if len < disk.journal_len || len < header.len() as u64 {
            return Ok(None);
        }
        let mut seen = vec![0u8; header.len()];
        file.read_exact(&mut seen).map_err(read_err)?;
        if seen != header {
            return Ok(None); // reset by another process's rewrite
        }
        let mut tail = Vec::with_capacity((len - disk.journal_len) as usize);
        file.seek(SeekFrom::Start(disk.journal_len))
            .and_then(|_| file.read_to_end(&mut tail))
            .map_err(read_err)?;
        journal::scan(&self.journal_path, &tail, false, disk.journal_len).map(Some)
    }

    /// The whole store: the store file with the journal replayed onto it. Without the lock,
    /// a rewrite by another process between the two reads is noticed (the store file changed
    /// under us) and the read is done again.
    fn read_all(&self, held: Held) -> Result<(Document, DiskView)> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let base = self.stat_base()?;
            let (mut doc, base_len) = match base {
                None => (Document::empty(), 0),
                Some(_) => {
                    let bytes = fs::read(&self.path).map_err(|e| FoldError::io(&self.path, "cannot read", &e))?;
                    (Document::parse(&self.path, &bytes)?, bytes.len() as u64)
                }
            };
            let bytes = match fs::read(&self.journal_path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(FoldError::io(&self.journal_path, "cannot read", &e)),
            };
            if held == Held::Nothing && attempts < 3 && self.stat_base()? != base {
                continue;
            }
            let scan = journal::scan(&self.journal_path, &bytes, true, 0)?;
            doc.check(&self.journal_path, &scan.changes)?;
            doc.apply(scan.changes);
            let view = DiskView {
                known: true,
                base,
                base_version: doc.version,
                base_len,
                journal_id: scan.id,
                journal_len: scan.valid as u64,
                torn: scan.torn,
                generation: None,
            };
            return Ok((doc, view));
        }
    }

    fn stat_base(&self) -> Result<Option<FileStamp>> {
        match fs::metadata(&self.path) {
            Ok(meta) if meta.is_dir() => Err(FoldError::StoreIo(format!(
                "checkpoint store {} is a directory, not a file; it was left unchanged",
                self.path.display()
            ))),
            Ok(meta) => Ok(Some(FileStamp::of(&meta))),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(FoldError::io(&self.path, "cannot stat", &e)),
        }
    }

    /// Cuts a torn journal tail (bytes no append ever acknowledged) before the next append,
    /// when the caller holds the exclusive lock; otherwise leaves it to the next writer.
    fn cut_torn_tail(&self, disk: &mut DiskView, held: Held) -> Result<()> {
        if !disk.torn || !matches!(held, Held::Exclusive(_)) {
            return Ok(());
        }
        let file = OpenOptions::new()
            .write(true)
            .open(&self.journal_path)
            .map_err(|e| FoldError::io(&self.journal_path, "cannot open", &e))?;
        file.set_len(disk.journal_len)
            .and_then(|()| file.sync_data())
            .map_err(|e| FoldError::io(&self.journal_path, "cannot cut the torn tail of", &e))?;
        disk.torn = false;
        Ok(())
    }

    /// Appends one line to the journal and fsyncs it; `false` when there is no journal to
    /// append to (deleted by hand since memory read it): the caller rewrites the store file
    /// instead. On failure the journal is cut back to where it was (best effort), so nothing
    /// half-written stays behind. Called with the exclusive lock held and memory caught up (so
    /// the journal ends at `disk.journal_len`).
    pub(super) fn append(&self, disk: &DiskView, line: &[u8]) -> Result<bool> {
        let mut file = match OpenOptions::new().append(true).open(&self.journal_path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(FoldError::io(&self.journal_path, "cannot open", &e)),
        };
        if self.faults.torn_append.load(Ordering::SeqCst) {
            // A test's SIGKILL lands here: half a line on disk, the rest never written.
            let _ = file.write_all(&line[..line.len() / 2]).and_then(|()| file.sync_data());
            loop {
                std::thread::park();
            }
        }
        let written = file.write_all(line).and_then(|()| file.sync_data());
        written.map_err(|e| {
            let _ = file.set_len(disk.journal_len).and_then(|()| file.sync_data());
            FoldError::io(&self.journal_path, "cannot append to", &e)
        })?;
        Ok(true)
    }

    /// Starts a fresh journal with header `id` (in place: a crash halfway leaves an empty or
    /// torn journal, which reads as empty). Returns its length, and a warning when the journal
    /// was created and the directory fsync failed.
    pub(super) fn reset_journal(&self, id: u64) -> Result<(u64, Option<String>)> {
        let existed = self.journal_path.exists();
        let header = journal::header(id);
        let mut file = sys::private_options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.journal_path)
            .map_err(|e| FoldError::io(&self.journal_path, "cannot open", &e))?;
        file.set_len(0)
            .and_then(|()| file.write_all(&header))
            .and_then(|()| file.sync_data())
            .map_err(|e| FoldError::io(&self.journal_path, "cannot start", &e))?;
        let warning = if existed { None } else { self.sync_dir_or_warn() };
        Ok((header.len() as u64, warning))
    }

    /// Fsyncs the store's directory; a failure becomes the warning returned.
    fn sync_dir_or_warn(&self) -> Option<String> {
        let synced = if self.faults.sync_dir.load(Ordering::SeqCst) {
            Err(std::io::Error::from_raw_os_error(5))
        } else {
            sys::sync_dir(self.dir())
        };
        synced.err().map(|e| {
            format!(
                "checkpoint store {}: the write landed (every reader of the file sees it) but fsyncing \
                 the directory {} failed: {e}; it may not survive a power loss",
                self.path.display(),
                self.dir().display()
            )
        })
    }

    /// Rewrites the store file from `doc` (what memory holds, pruned) and starts a fresh
    /// journal, with the exclusive lock held and the write counter already bumped to
    /// `generation`. If the directory fsync after the rename fails, the journal is kept: its
    /// changes are in the new file too (replaying them does nothing), and it holds them durably
    /// in case the rename does not survive; the next rewrite tries again.
    pub(super) fn rewrite(&self, disk: &mut DiskView, doc: Document, generation: u64) -> Result<()> {
        let bytes = doc.to_json();
        let (stamp, warning) = self.write_durably(&bytes)?;
        self.set_doc(Arc::new(doc));
        disk.known = true;
        disk.base = Some(stamp);
        disk.base_version = UNIT_VERSION;
        disk.base_len = bytes.len() as u64;
        disk.generation = Some(generation);
        match warning {
            Some(warning) if disk.journal_id.is_some() => {
                self.warn(format!(
                    "{warning} (its journal keeps every change until a later rewrite succeeds)"
                ));
            }
            warning => {
                if let Some(warning) = warning {
                    self.warn(warning);
                }
                let id = sys::random_u64();
                match self.reset_journal(id) {
                    Ok((len, warning)) => {
                        if let Some(warning) = warning {
                            self.warn(warning);
                        }
                        (disk.journal_id, disk.journal_len, disk.torn) = (Some(id), len, false);
                    }
                    Err(e) => {
                        // The store file holds everything; the journal is in an unknown state,
                        // so the next write reads the files whole (and rewrites again).
                        self.warn(format!("{e} (the store file was rewritten and holds every mark)"));
                        disk.known = false;
                    }
                }
            }
        }
        Ok(())
    }

    pub(super) fn ensure_dir(&self) -> Result<()> {
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

    pub(super) fn dir(&self) -> &Path {
        match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        }
    }

    /// Takes the exclusive cross-process lock; released when the returned file drops.
    pub(super) fn lock_file(&self) -> Result<File> {
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

    /// Takes the cross-process lock shared, for a read: `None` when there is no lock file to
    /// take (nobody wrote yet) or it cannot be opened (a read-only copy of someone's store).
    pub(super) fn lock_shared(&self) -> Result<Option<File>> {
        let file = match File::open(&self.lock_path) {
            Ok(file) => file,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied) => return Ok(None),
            Err(e) => return Err(FoldError::io(&self.lock_path, "cannot open the lock file", &e)),
        };
        file.lock_shared()
            .map_err(|e| FoldError::io(&self.lock_path, "cannot lock", &e))?;
        Ok(Some(file))
    }

    /// The write counter in the lock file (0 for a new or empty lock file).
    pub(super) fn read_generation(&self, file: &mut File) -> Result<u64> {
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
    pub(super) fn write_generation(&self, file: &mut File, generation: u64) -> Result<()> {
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(&generation.to_le_bytes()))
            .map_err(|e| FoldError::io(&self.lock_path, "cannot write the lock file", &e))
    }

    /// Sweeps the temp files of dead writers, once per process, at its first write of any kind
    /// (most writes are appends that make no temp file, so a rewrite alone would rarely come).
    /// Leftovers come from writers that died before this one started (or while it runs, swept
    /// by the next process), and a directory scan per write is waste. Called with the exclusive
    /// lock held.
    pub(super) fn sweep_once(&self) {
        if !self.swept.swap(true, Ordering::Relaxed) {
            let name = self.path.file_name().unwrap_or_default().to_string_lossy();
            self.remove_stale_temp_files(&name);
        }
    }

    /// Deletes the temp files of writers that died between creating and renaming them (a kill,
    /// a power cut). Every write happens under the file lock, which we hold, so any temp file of
    /// this store is such a leftover. Best effort: a failure only leaves the garbage there.
    pub(super) fn remove_stale_temp_files(&self, name: &str) {
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

    /// temp → write → fsync → rename → fsync dir. Returns the stamp of the file now in place,
    /// and a warning when the rename landed but the directory fsync failed: the new file is what
    /// every reader sees from then on, so the write is not reported as failed (it may not
    /// survive a power loss, which the warning says). Called with the file lock held.
    pub(super) fn write_durably(&self, bytes: &[u8]) -> Result<(FileStamp, Option<String>)> {
        let name = self.path.file_name().unwrap_or_default().to_string_lossy();
        self.sweep_once();
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
        let stamp = match result {
            Ok(stamp) => stamp,
            Err(e) => {
                // Best effort: the temp file is ours and worthless now; the store file is untouched.
                let _ = fs::remove_file(&temp);
                return Err(e);
            }
        };
        let warning = self.sync_dir_or_warn();
        Ok((stamp, warning))
    }
}

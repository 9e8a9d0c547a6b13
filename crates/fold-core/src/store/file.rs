//! The store's files: reading the document when it changed, the cross-process lock and its
//! write counter, and the durable replace (temp → fsync → rename → fsync directory).

use std::fs::{self, File};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use super::document::Document;
use super::{lock, sys, Store};
use crate::error::{FoldError, Result};

/// What identifies one version of the file on disk, so an unchanged file is not re-read.
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

/// The in-memory view of the file and the stamp of the version it was read from.
#[derive(Default)]
pub(super) struct Cache {
    pub(super) doc: Option<Arc<Document>>,
    pub(super) stamp: Option<FileStamp>,
    /// The lock file's write counter when `doc` was read or written under the lock; `None` when
    /// `doc` came from an unlocked read (the first load, a listing), which the next write re-reads.
    pub(super) generation: Option<u64>,
}

impl Store {
    /// The in-memory document, loading the file on first use.
    pub(super) fn doc(&self) -> Result<Arc<Document>> {
        if let Some(doc) = &lock(&self.cache).doc {
            return Ok(doc.clone());
        }
        self.refresh()
    }

    /// Re-reads the file if it changed since we last read or wrote it.
    pub(super) fn refresh(&self) -> Result<Arc<Document>> {
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
    pub(super) fn read_current(
        &self,
        cache: &Cache,
        generation: Option<u64>,
    ) -> Result<(Arc<Document>, Option<FileStamp>)> {
        let meta = match fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Ok((Arc::new(Document::empty()), None));
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

    /// temp → write → fsync → rename → fsync dir. Returns the stamp of the file now in place.
    /// Called with the file lock held.
    pub(super) fn write_durably(&self, bytes: &[u8]) -> Result<FileStamp> {
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

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

/// What memory corresponds to on disk. Kept under the store's `disk` lock, which every load,
/// re-read and write holds while it works on the files.
#[derive(Debug, Default)]
pub(super) struct DiskView {
    /// Whether memory holds what this view describes (false until the first read, and after a
    /// writer panicked).
    pub(super) known: bool,
    /// The file memory was read from or written as; `None`: there was no file.
    pub(super) stamp: Option<FileStamp>,
    /// The lock file's write counter when memory was read or written under the lock; `None`
    /// after an unlocked read (a load, a listing), which the next write re-reads.
    pub(super) generation: Option<u64>,
}

impl Store {
    /// Brings memory up to date with the file (reading it only if it changed since memory was
    /// read or written) and returns the document now in memory. Called with `disk` held;
    /// `generation` is the lock file's counter when the caller holds the exclusive lock.
    ///
    /// The file is read and parsed with only `disk` held; memory is locked just to swap the new
    /// document in, so readers keep answering from the old one meanwhile.
    pub(super) fn catch_up(&self, disk: &mut DiskView, generation: Option<u64>) -> Result<Arc<Document>> {
        let current = lock(&self.memory).doc.clone();
        let stamp = match fs::metadata(&self.path) {
            Ok(meta) if meta.is_dir() => {
                return Err(FoldError::StoreIo(format!(
                    "checkpoint store {} is a directory, not a file; it was left unchanged",
                    self.path.display()
                )))
            }
            Ok(meta) => Some(FileStamp::of(&meta)),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(FoldError::io(&self.path, "cannot stat", &e)),
        };
        if let Some(doc) = current {
            // Same inode, length and mtime, and — under the lock — no write by anyone since.
            if disk.known && disk.stamp == stamp && (generation.is_none() || generation == disk.generation) {
                return Ok(doc);
            }
        }
        let doc = match stamp {
            None => Document::empty(),
            Some(_) => {
                let bytes = fs::read(&self.path).map_err(|e| FoldError::io(&self.path, "cannot read", &e))?;
                Document::parse(&self.path, &bytes)?
            }
        };
        let doc = Arc::new(doc);
        self.set_doc(doc.clone());
        *disk = DiskView {
            known: true,
            stamp,
            generation,
        };
        Ok(doc)
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

    /// temp → write → fsync → rename → fsync dir. Returns the stamp of the file now in place,
    /// and a warning when the rename landed but the directory fsync failed: the new file is what
    /// every reader sees from then on, so the write is not reported as failed (it may not
    /// survive a power loss, which the warning says). Called with the file lock held.
    pub(super) fn write_durably(&self, bytes: &[u8]) -> Result<(FileStamp, Option<String>)> {
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
        let stamp = match result {
            Ok(stamp) => stamp,
            Err(e) => {
                // Best effort: the temp file is ours and worthless now; the store file is untouched.
                let _ = fs::remove_file(&temp);
                return Err(e);
            }
        };
        let synced = if self.faults.sync_dir.load(Ordering::SeqCst) {
            Err(std::io::Error::from_raw_os_error(5))
        } else {
            sys::sync_dir(self.dir())
        };
        let warning = synced.err().map(|e| {
            format!(
                "checkpoint store {}: the write landed (every reader of the file sees it) but fsyncing \
                 the directory {} failed: {e}; it may not survive a power loss",
                self.path.display(),
                self.dir().display()
            )
        });
        Ok((stamp, warning))
    }
}

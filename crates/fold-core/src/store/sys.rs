//! Platform specifics: permissions, inode numbers, directory fsync.

use std::fs::{self, OpenOptions};
use std::path::Path;

#[cfg(unix)]
pub(super) fn private_options() -> OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = OpenOptions::new();
    o.mode(0o600);
    o
}

#[cfg(not(unix))]
pub(super) fn private_options() -> OpenOptions {
    OpenOptions::new()
}

#[cfg(unix)]
pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(not(unix))]
pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

#[cfg(unix)]
pub(super) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
pub(super) fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    // Windows has no directory fsync; the rename is durable once MoveFileEx returns.
    Ok(())
}

#[cfg(unix)]
pub(super) fn inode(meta: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.ino()
}

#[cfg(not(unix))]
pub(super) fn inode(_meta: &fs::Metadata) -> u64 {
    0
}

/// A random 64-bit number (a journal's id), from the standard library's randomly keyed hasher
/// plus the time and the process: it only has to differ from the journal it replaces.
pub(super) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// Failures a test asks for, so the paths that handle them run for real. Production never sets
/// them: they come from `DSH_FOLD_TEST_FAULTS` (comma-separated names) when a store is created
/// in a build with the `test-faults` feature, or from a unit test setting the fields.
#[derive(Debug, Default)]
pub(super) struct Faults {
    /// `leader-panic`: the next group-commit leader panics before it writes (once).
    pub(super) leader_panic: std::sync::atomic::AtomicBool,
    /// `sync-dir`: every directory fsync fails with EIO (what a rename's durability hinges on).
    pub(super) sync_dir: std::sync::atomic::AtomicBool,
    /// `torn-append`: a journal append writes half its line, fsyncs it and stops there for good
    /// (the thread parks), so a test can SIGKILL the process mid-append.
    pub(super) torn_append: std::sync::atomic::AtomicBool,
}

impl Faults {
    /// The faults named in `DSH_FOLD_TEST_FAULTS`; none when it is unset, and none ever in a
    /// build without the `test-faults` feature (a release binary ignores the variable).
    #[cfg(not(feature = "test-faults"))]
    pub(super) fn from_env() -> Self {
        Self::default()
    }

    /// The faults named in `DSH_FOLD_TEST_FAULTS`; none when it is unset.
    #[cfg(feature = "test-faults")]
    pub(super) fn from_env() -> Self {
        let faults = Self::default();
        let Ok(names) = std::env::var("DSH_FOLD_TEST_FAULTS") else {
            return faults;
        };
        for name in names.split(',').map(str::trim) {
            let flag = match name {
                "leader-panic" => &faults.leader_panic,
                "sync-dir" => &faults.sync_dir,
                "torn-append" => &faults.torn_append,
                _ => continue,
            };
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        faults
    }

    /// Consumes a one-shot fault: true once after it was armed.
    pub(super) fn take(flag: &std::sync::atomic::AtomicBool) -> bool {
        flag.swap(false, std::sync::atomic::Ordering::SeqCst)
    }
}

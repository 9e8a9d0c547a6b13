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

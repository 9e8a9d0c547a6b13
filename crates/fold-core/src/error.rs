//! The error every fallible operation of the core returns.
//!
//! The `code()` string is the stable contract (JS callers and tests match on it);
//! messages are for humans and may change. Store errors always name the file.

use std::path::Path;

/// A classified failure of a store operation or a fold.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum FoldError {
    /// The session has no checkpoint mark to fold to.
    #[error("{0}")]
    NoCheckpoint(String),
    /// Nothing to fold: no surface nodes after the mark, or the mark was already folded.
    #[error("{0}")]
    EmptyRegion(String),
    /// The region would split a tool call from its result and no balanced cut remains.
    #[error("{0}")]
    Unbalanced(String),
    /// Another fold of the same session is running.
    #[error("{0}")]
    FoldInProgress(String),
    /// The surface moved under the fold while the report was being written.
    #[error("{0}")]
    Changed(String),
    /// The report is not shorter than what it would replace.
    #[error("{0}")]
    Shrink(String),
    /// The summarizer failed, or returned only empty completions.
    #[error("{0}")]
    SummarizeFailed(String),
    /// The caller's AbortSignal fired.
    #[error("{0}")]
    Aborted(String),
    /// A host callback (snapshot or commit) failed or returned something unusable.
    #[error("{0}")]
    HostFailed(String),
    /// The store file is not a checkpoint store we can read (bad JSON, wrong unit, bad layout).
    #[error("{0}")]
    StoreCorrupt(String),
    /// The store file was written by a newer dsh-fold.
    #[error("{0}")]
    StoreVersion(String),
    /// The store file or its directory could not be read, written or locked.
    #[error("{0}")]
    StoreIo(String),
    /// A synchronous read came before the store file was loaded into memory; it is loading now
    /// (off the calling thread). Ask again, or use the async read, which waits for the load.
    #[error("{0}")]
    StoreLoading(String),
    /// Bad input from the caller.
    #[error("{0}")]
    InvalidArgument(String),
    /// Block mode: a block id the summary closes has no message on the surface.
    #[error("{0}")]
    UnknownBlock(String),
    /// Block mode: the summary's range crosses a message no summary may replace.
    #[error("{0}")]
    Protected(String),
    /// Block mode: the range changed after the summary was written (a new user message in it, or
    /// another producer's replacement over part of it); the model must read it and summarize again.
    #[error("{0}")]
    Stale(String),
    /// Another producer holds the session's compaction lock (a live `compaction/start` with no
    /// `compaction/end`) and did not release it within the fold's time bound.
    #[error("{0}")]
    CompactionBusy(String),
    /// A defect of dsh-fold itself (a panic caught at the Node-API boundary): the operation
    /// failed, nothing it would have written was written, and the host keeps running.
    #[error("{0}")]
    Internal(String),
}

impl FoldError {
    /// The stable code of this error, e.g. `"NO_CHECKPOINT"`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoCheckpoint(_) => "NO_CHECKPOINT",
            Self::EmptyRegion(_) => "EMPTY_REGION",
            Self::Unbalanced(_) => "UNBALANCED",
            Self::FoldInProgress(_) => "FOLD_IN_PROGRESS",
            Self::Changed(_) => "CHANGED",
            Self::Shrink(_) => "SHRINK",
            Self::SummarizeFailed(_) => "SUMMARIZE_FAILED",
            Self::Aborted(_) => "ABORTED",
            Self::HostFailed(_) => "HOST_FAILED",
            Self::StoreCorrupt(_) => "STORE_CORRUPT",
            Self::StoreVersion(_) => "STORE_VERSION",
            Self::StoreIo(_) => "STORE_IO",
            Self::StoreLoading(_) => "STORE_LOADING",
            Self::InvalidArgument(_) => "INVALID_ARGUMENT",
            Self::UnknownBlock(_) => "UNKNOWN_BLOCK",
            Self::Protected(_) => "PROTECTED",
            Self::Stale(_) => "STALE",
            Self::CompactionBusy(_) => "COMPACTION_BUSY",
            Self::Internal(_) => "INTERNAL",
        }
    }

    /// Every code this crate can produce.
    pub const CODES: [&'static str; 19] = [
        "NO_CHECKPOINT",
        "EMPTY_REGION",
        "UNBALANCED",
        "FOLD_IN_PROGRESS",
        "CHANGED",
        "SHRINK",
        "SUMMARIZE_FAILED",
        "ABORTED",
        "HOST_FAILED",
        "STORE_CORRUPT",
        "STORE_VERSION",
        "STORE_IO",
        "STORE_LOADING",
        "INVALID_ARGUMENT",
        "UNKNOWN_BLOCK",
        "PROTECTED",
        "STALE",
        "COMPACTION_BUSY",
        "INTERNAL",
    ];

    pub(crate) fn io(path: &Path, what: &str, err: &std::io::Error) -> Self {
        Self::StoreIo(format!("checkpoint store {}: {what}: {err}", path.display()))
    }

    pub(crate) fn corrupt(path: &Path, what: impl std::fmt::Display) -> Self {
        Self::StoreCorrupt(format!(
            "checkpoint store {} is not a readable checkpoint store ({what}); it was left unchanged",
            path.display()
        ))
    }

    pub fn invalid(what: impl Into<String>) -> Self {
        Self::InvalidArgument(what.into())
    }
}

pub type Result<T, E = FoldError> = std::result::Result<T, E>;

//! dsh-fold's core: the checkpoint-mark store, the fold's region rules and the fold
//! transaction. It knows nothing about Node-API or DSH: the binding crate adapts it to JS,
//! and the DSH plugin describes a DSH `Session` to the session mirror every planner reads.
//!
//! - [`store`]: the durable, cross-process JSON store of marks.
//! - [`locks`]: per-session fold locks shared by every store and fold of a process.
//! - [`surface`]: the surfaces the planners read, in memory (the mirror builds them).
//! - [`region`]: which surface nodes a fold replaces — the fold's rules, in one file.
//! - [`meter`]: the visible-chars meter (sizes in the JS host's unit).
//! - [`fold`]: the rewind transaction, in its order: a state machine the host drives.
//! - [`recall`]: the linear-time matcher of the `recall` tool.
//! - [`blocks`]: what a block summary replaces — block mode's rules, in one file.
//! - [`compaction`]: what a compaction replaces and how its summary is made — the compaction
//!   backend's policy, in one file.
//! - [`mirror`]: the session mirror, one incremental description of a session's surface that
//!   every planner reads.
//! - `wire`: the snapshot wire formats (rewind's, block mode's, compaction's) and their decoders,
//!   the tests' and fuzz targets' oracles (behind the `oracles` feature).
//! - `fuzz`: the fuzz targets (`npm run fuzz`), replayed from their corpus by `cargo test`
//!   (behind the `oracles` feature).

#![forbid(unsafe_code)]

pub mod blocks;
pub mod compaction;
pub mod error;
pub mod fold;
#[cfg(any(test, feature = "oracles"))]
#[doc(hidden)]
pub mod fuzz;
pub mod locks;
pub mod meter;
pub mod mirror;
pub mod recall;
pub mod region;
pub mod report;
pub mod store;
pub mod surface;
#[cfg(any(test, feature = "oracles"))]
pub mod wire;
pub mod zstd;

pub use error::{FoldError, Result};

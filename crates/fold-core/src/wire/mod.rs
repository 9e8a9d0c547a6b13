//! The surface snapshot wire formats: what a host once told the core about its model-visible
//! surface, before the session mirror ([`crate::mirror`]) became every planner's only input. They
//! stay as the tests' and the fuzz targets' oracles — a description of a surface written from the
//! formats' documentation, not from the mirror — behind the `oracles` feature (the shipped addon
//! does not compile them): the core's property tests hold the mirror's [`Surface`] and
//! [`BlockSurface`] to what these decode to for the same session.
//!
//! Two formats, both flat `u32` arrays: version 1 for rewind ([`Surface::decode`], `v1.rs`) and
//! version 2 for block mode ([`BlockSurface::decode`], `v2.rs`); compaction's own, version 4
//! (`compaction.rs`), is documented with its decoder. This file keeps the kind and link rule all
//! three check nodes with.
//!
//! Version 1:
//!
//! ```text
//! [0] FORMAT (= 1)
//! [1] eventCount      the session log's length now; every seq is below it
//! [2] current         seq of the assistant node carrying the rewind call, or NONE (0xFFFF_FFFF):
//!                     then the last assistant node on the surface is current if it has no tool
//!                     call (a final answer, which stays) or an unanswered one (the rewind's)
//! [3] N               surface nodes, in model order, 5 words each:
//!     seq             the event's seq
//!     origin          smallest event seq the node stands for (a replacement: its sources' origins)
//!     kind            0 other, 1 user, 2 assistant, 3 tool result
//!     chars           model-visible text size (UTF-16 units: text, reasoning, call arguments, outputs)
//!     link            assistant: how many tool calls it opens;
//!                     tool result: 1 + seq of the assistant event that opened its call (0: unknown)
//! [..] R              rewind reports on the surface, 7 words each:
//!     seq, markIdLow, markIdHigh, foldedNodes, startSeq, endSeq, foldedChars
//!                     (the mark id is carried whole: low and high 32 bits; ids reach 2^53 - 1)
//! ```
//!
//! Version 2 (block mode) carries its own id table (each block id once) after the id sets; the
//! sets name ids by their index in it:
//!
//! ```text
//! [0] FORMAT (= 2)
//! [1] eventCount      the session log's length now; every seq is below it
//! [2] flags           bit 0: OPEN_COMPACTION, a `compaction/start` has no `compaction/end` yet
//! [3] I               ids in the id table
//! [4] N               surface nodes, in model order, 4 words each:
//!     seq             the event's seq
//!     meta            bits 0-1: kind (0 other, 1 user, 2 assistant, 3 tool result)
//!                     bit 2 PROTECTED: no summary may replace it (a system/developer message)
//!                     bit 3 USER_AUTHORED: a `user/message` appended to the conversation (not a
//!                           replacement): the user's prompt, or context injected on the user's side
//!                     bit 4 BLOCK_SUMMARY: a block summary (a replacement `user/message`)
//!                     bit 5 REPLACEMENT: another producer's replacement (a compaction, a rewind report)
//!     link            as in version 1
//!     set             0: no ids; k >= 1: id set k-1, whose meaning the node's kind says:
//!                     assistant: the ids of its block calls, call after call (repeats allowed);
//!                     BLOCK_SUMMARY: the ids it carries; REPLACEMENT: the ids of what it covered
//! [..] S              id sets, each: its length L >= 1, then L indexes into the id table
//! [..]                the id table, I ids, each: its length U >= 1 in UTF-16 code units, then
//!                     ceil(U / 2) words, two code units each (the first in the low half; an odd
//!                     length leaves the last high half 0)
//! ```
//!
//! Ids travel as the UTF-16 code units JS holds, and stay so ([`BlockId`]): a JS string may hold
//! lone surrogates that UTF-8 cannot, and two distinct ids must never become one. Packing them
//! into the words keeps the whole snapshot one array, read without converting a string.
//!
//! The v2 words are facts read off the log (a call's arguments, a summary's metadata, a result's
//! call); every rule that turns them into a block's messages lives in [`crate::blocks`].
//!
//! Linking a result to its opener by seq (not by call id) lets the host resolve call ids once per
//! immutable event and keeps every record fixed-size; interning id sets keeps the v2 node record
//! fixed-size too. Decoding validates everything: a host bug must never become a wrong fold or a
//! wrong commit.
//!
//! [`Surface`]: crate::surface::Surface
//! [`BlockSurface`]: crate::surface::BlockSurface
//! [`Surface::decode`]: crate::surface::Surface::decode
//! [`BlockSurface::decode`]: crate::surface::BlockSurface::decode

use crate::surface::Kind;

mod compaction;
mod v1;
mod v2;
pub use compaction::FORMAT as COMPACTION_FORMAT;
pub use v1::{Report, FORMAT, NONE};
pub use v2::{BLOCK_FORMAT, BLOCK_SUMMARY, OPEN_COMPACTION, PROTECTED, REPLACEMENT, USER_AUTHORED};

/// A node's kind word and link word, checked: the kind is known, only assistant nodes open
/// calls, only results link to an opener, and an opener is never a later event.
pub(crate) fn kind_and_link(
    i: usize,
    seq: u32,
    kind: u32,
    link: u32,
) -> std::result::Result<(Kind, u32, Option<u32>), String> {
    let Some(kind) = Kind::of(kind) else {
        return Err(format!("node {i}: unknown kind {kind}"));
    };
    let (opens, opener) = match kind {
        Kind::Assistant => (link, None),
        Kind::ToolResult if link == 0 => (0, None),
        // `link >= 1` here, so this is `link - 1 >= seq`: the opener is not before the result.
        Kind::ToolResult if link > seq => {
            return Err(format!(
                "node {i}: result {seq} answers a call of later event {}",
                link - 1
            ));
        }
        Kind::ToolResult => (0, Some(link - 1)),
        _ if link != 0 => return Err(format!("node {i}: a {kind:?} node cannot link to calls")),
        _ => (0, None),
    };
    Ok((kind, opens, opener))
}

//! The fuzz targets: one function per target, each taking the fuzzer's bytes and panicking only
//! when a contract is broken. The `fuzz/` crate (cargo-fuzz, driven by `npm run fuzz`) runs them
//! under libFuzzer; `cargo test` replays the committed regression corpus (`fuzz/corpus/<target>/`)
//! through the same functions (tests/fuzz_corpus.rs), so CI checks every input a campaign kept
//! without fuzzing. Not part of the API.
//!
//! | target          | what it reads                                                        |
//! |-----------------|----------------------------------------------------------------------|
//! | `store_file`    | a store file (the JSON document), as the store loads it              |
//! | `store_journal` | a journal replayed onto a good store file, and onto no store file    |
//! | `snapshot_v1`   | a v1 surface snapshot, then the fold's region planner on it           |
//! | `snapshot_v2`   | a v2 block snapshot, then block mode's planner with ids of its table |
//! | `report_input`  | the extractive report's input (a JSON array of DSH messages)         |
//! | `zstd`          | zstd frames, as a session log `.jsonl.zstd` is read                   |

use crate::blocks::{self, Plan};
use crate::report::{self, ReportOptions};
use crate::surface::{BlockId, BlockSurface, Surface};
use crate::{region, store, zstd};

/// Every target's name, in the order `npm run fuzz` runs them.
pub const TARGETS: [&str; 6] = [
    "store_file",
    "store_journal",
    "snapshot_v1",
    "snapshot_v2",
    "report_input",
    "zstd",
];

/// Runs `target` on `data`; `false` for an unknown target name.
pub fn run(target: &str, data: &[u8]) -> bool {
    match target {
        "store_file" => store_file(data),
        "store_journal" => store_journal(data),
        "snapshot_v1" => snapshot_v1(data),
        "snapshot_v2" => snapshot_v2(data),
        "report_input" => report_input(data),
        "zstd" => zstd(data),
        _ => return false,
    }
    true
}

/// A store file with two sessions' marks, one folded: what journals are replayed onto.
const BASE: &[u8] = br#"{"unit":{"name":"checkpoint","version":1},"global":{"nextId":4},"tables":{"marks":{"1":{"id":1,"sessionId":"s","logLength":3,"objective":"read the parser","createdAt":1764547200000,"foldedAt":1764547260000},"3":{"id":3,"sessionId":"t","logLength":9,"createdAt":1764547300000,"foldedAt":null}}}}"#;

pub fn store_file(data: &[u8]) {
    store::fuzzing::check(Some(data), b"");
}

pub fn store_journal(data: &[u8]) {
    store::fuzzing::check(Some(BASE), data);
    store::fuzzing::check(None, data);
}

/// Little-endian words; a last partial word is dropped.
fn words(data: &[u8]) -> Vec<u32> {
    data.chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

/// The first word is the anchor; the rest the snapshot.
pub fn snapshot_v1(data: &[u8]) {
    let words = words(data);
    let Some((&anchor, words)) = words.split_first() else {
        return;
    };
    let surface = match Surface::decode(words) {
        Ok(s) => s,
        Err(e) => return assert_eq!(e.code(), "INVALID_ARGUMENT", "{e}"),
    };
    let anchor = u64::from(anchor);
    match region::select(&surface, anchor) {
        Ok(r) => {
            assert!(r.start_pos < r.end_pos && r.end_pos <= surface.nodes.len(), "{r:?}");
            let nodes = &surface.nodes[r.start_pos..r.end_pos];
            assert_eq!(r.seqs, nodes.iter().map(|n| n.seq).collect::<Vec<_>>());
            assert_eq!(r.folded_chars, nodes.iter().map(|n| u64::from(n.chars)).sum::<u64>());
            assert!(region::still_matches(&surface, anchor, &r.seqs));
        }
        Err(e) => assert!(
            matches!(e.code(), "EMPTY_REGION" | "UNBALANCED" | "INVALID_ARGUMENT"),
            "{}: {e}",
            e.code()
        ),
    }
}

/// The first word picks the targets (bits 0–7: up to 4 ids of the table by index, bit 8: an
/// unknown id too), the request's age (bits 9–10) and whether a rewind holds the lock (bit 11);
/// the rest is the snapshot.
pub fn snapshot_v2(data: &[u8]) {
    let words = words(data);
    let Some((&pick, words)) = words.split_first() else {
        return;
    };
    let surface = match BlockSurface::decode(words) {
        Ok(s) => s,
        Err(e) => return assert_eq!(e.code(), "INVALID_ARGUMENT", "{e}"),
    };
    let mut targets: Vec<BlockId> = Vec::new();
    let ids = surface.id_count();
    for k in 0..(pick & 3) + 1 {
        if ids > 0 {
            let id = surface.block_id(((pick >> (2 + 2 * k)) as usize % ids) as u32);
            if !targets.contains(&id) {
                targets.push(id);
            }
        }
    }
    if pick & (1 << 8) != 0 || targets.is_empty() {
        targets.push(BlockId::from("no-such-block"));
    }
    let request_seq = u64::from(surface.event_count).saturating_sub(u64::from((pick >> 9) & 3));
    match blocks::plan(&surface, &targets, request_seq, pick & (1 << 11) != 0) {
        Ok(Plan::Commit(c)) => {
            assert!(c.start_pos < c.end_pos && c.end_pos <= surface.nodes.len(), "{c:?}");
            let seqs: Vec<u32> = surface.nodes[c.start_pos..c.end_pos].iter().map(|n| n.seq).collect();
            assert_eq!(c.seqs, seqs);
            assert!(
                c.remaining.iter().all(|id| !targets.contains(id)),
                "a target is carried on"
            );
            assert_eq!(c.closed, targets);
        }
        Ok(Plan::Pending(_)) => {}
        Err(e) => assert!(
            matches!(e.code(), "UNKNOWN_BLOCK" | "PROTECTED" | "STALE" | "INVALID_ARGUMENT"),
            "{}: {e}",
            e.code()
        ),
    }
}

pub fn report_input(data: &[u8]) {
    let json = String::from_utf8_lossy(data);
    for options in [
        ReportOptions::default(),
        ReportOptions {
            max_chars: Some(200),
            ..ReportOptions::default()
        },
    ] {
        match report::extractive_report(&json, &options) {
            Ok(text) => {
                if let Some(max) = options.max_chars {
                    assert!(text.encode_utf16().count() <= max, "the report is over max_chars");
                }
            }
            Err(e) => assert!(matches!(e.code(), "INVALID_ARGUMENT" | "SHRINK"), "{}: {e}", e.code()),
        }
    }
}

pub fn zstd(data: &[u8]) {
    if let Err(e) = zstd::decode_frames(data) {
        assert_eq!(e.code(), "INVALID_ARGUMENT", "{e}");
    }
    // The torn-tail reader (what the CLI reads logs with): its frame boundaries lie in its text,
    // in order, and a torn frame starts inside the input.
    match zstd::decode_log(data) {
        Ok(log) => {
            assert!(
                log.frame_ends.windows(2).all(|w| w[0] <= w[1]),
                "frame ends out of order"
            );
            assert!(
                log.frame_ends.last().is_none_or(|&end| end <= log.text.len()),
                "a frame ends past the text"
            );
            if let Some(t) = log.torn {
                assert!(t.byte < data.len(), "a torn frame starts past the input");
                assert_eq!(t.frame, log.frame_ends.len(), "the torn frame is the last one");
            }
        }
        Err(e) => assert_eq!(e.code(), "INVALID_ARGUMENT", "{e}"),
    }
}

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
//! | `mirror`        | the session mirror's records (pushed, or a load and its log index),   |
//! |                 | then rewind's region and block mode's plan read off the mirror, each  |
//! |                 | held to the snapshot decoders of [`crate::wire`] on the same surface  |
//! | `report_input`  | the extractive report's input (a JSON array of DSH messages)         |
//! | `zstd`          | zstd frames, as a session log `.jsonl.zstd` is read                   |

use crate::blocks::{self, Plan};
use crate::mirror::Mirror;
use crate::report::{self, ReportOptions};
use crate::surface::{BlockId, BlockSurface, Surface};
use crate::{region, store, zstd};

/// Every target's name, in the order `npm run fuzz` runs them.
pub const TARGETS: [&str; 5] = ["store_file", "store_journal", "mirror", "report_input", "zstd"];

/// Runs `target` on `data`; `false` for an unknown target name.
pub fn run(target: &str, data: &[u8]) -> bool {
    match target {
        "store_file" => store_file(data),
        "store_journal" => store_journal(data),
        "mirror" => mirror(data),
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

/// Control bits of a `mirror` input's second word (bits 0-11 pick block mode's request, as
/// [`block_plan`] reads them).
const NAMED_CURRENT: u32 = 1 << 12;
const LOADED: u32 = 1 << 13;

/// A session mirror fed the mirror's own records, then every planner read off it.
///
/// The input, in little-endian words: `[anchor, control, current, S, ...S id sets, ...feed]`.
/// Each id set is its length L, then L ids, each its length U in UTF-16 units and `ceil(U / 2)`
/// words of units (as v2 packs them); the sets are interned in order, so a record names set `k`
/// by the word the k-th interning returned. The feed is records pushed one stream (control bit
/// 13 clear), or a rebuild: W, then W words of the load format, then the open compaction's seq,
/// then the log index's records (bit 13 set). Bit 12: the rewind call's message is `current`.
///
/// The contract: feeding answers `Ok` or `INVALID_ARGUMENT`, and a mirror it refused answers
/// nothing until rebuilt. A mirror that answers gives rewind a window whose region is in bounds,
/// its seqs and chars, and still matches; a window the v1 decoder accepts as it is, selecting
/// the same region ([`crate::wire`]: the mirror builds the window without validating it again);
/// and block mode a surface the v2 decoder accepts as it is, planned alike.
pub fn mirror(data: &[u8]) {
    let words = words(data);
    let [anchor, control, current, rest @ ..] = words.as_slice() else {
        return;
    };
    let mut m = Mirror::new();
    let Some(rest) = intern_sets(&mut m, rest) else {
        return;
    };
    if let Err(e) = feed(&mut m, *control & LOADED != 0, rest) {
        assert_eq!(e.code(), "INVALID_ARGUMENT", "{e}");
        assert!(m.canonical().is_err(), "a mirror fed out of step still answers");
        return;
    }
    m.canonical().expect("a mirror in step describes itself");
    let current = (*control & NAMED_CURRENT != 0).then_some(*current);
    rewind_region(&m, u64::from(*anchor), current);
    if let Ok(surface) = m.block_surface() {
        block_plan(&surface, *control);
    }
}

/// Interns the input's id sets; the feed's words after them (`None`: the sets run past the input).
fn intern_sets<'w>(m: &mut Mirror, words: &'w [u32]) -> Option<&'w [u32]> {
    let (&sets, mut rest) = words.split_first()?;
    for _ in 0..sets.min(1024) {
        let (&len, after) = rest.split_first()?;
        rest = after;
        let mut ids = Vec::new();
        for _ in 0..len.min(64) {
            let (&units, after) = rest.split_first()?;
            let packed = (units.min(64) as usize).div_ceil(2);
            let id = after.get(..packed)?;
            let mut id: Vec<u16> = id.iter().flat_map(|w| [*w as u16, (*w >> 16) as u16]).collect();
            id.truncate(units.min(64) as usize);
            // A host interns the ids of real calls and summaries only: never an empty one.
            if !id.is_empty() {
                ids.push(BlockId(id));
            }
            rest = &after[packed..];
        }
        m.intern(&ids);
    }
    Some(rest)
}

/// Feeds the mirror: one push of records, or a load and its log index.
fn feed(m: &mut Mirror, loaded: bool, words: &[u32]) -> crate::Result<()> {
    if !loaded {
        return m.push(words);
    }
    let Some((&len, rest)) = words.split_first() else {
        return m.push(&[]);
    };
    let len = (len as usize).min(rest.len());
    m.load(&rest[..len])?;
    let Some((&open, log)) = rest[len..].split_first() else {
        return Ok(());
    };
    m.load_log(open, log)
}

/// Rewind's region off the mirror, held to the v1 decoder on the same window.
fn rewind_region(m: &Mirror, anchor: u64, current: Option<u32>) {
    let surface = match m.rewind_surface(anchor, current) {
        Ok(s) => s,
        Err(e) => return assert_eq!(e.code(), "INVALID_ARGUMENT", "{e}"),
    };
    let chosen = region::select(&surface, anchor);
    match &chosen {
        Ok(r) => {
            assert!(r.start_pos < r.end_pos && r.end_pos <= surface.nodes.len(), "{r:?}");
            let nodes = &surface.nodes[r.start_pos..r.end_pos];
            assert_eq!(r.seqs, nodes.iter().map(|n| n.seq).collect::<Vec<_>>());
            assert_eq!(r.folded_chars, nodes.iter().map(|n| u64::from(n.chars)).sum::<u64>());
            assert!(region::still_matches(&surface, anchor, &r.seqs));
        }
        Err(e) => assert!(matches!(e.code(), "EMPTY_REGION" | "UNBALANCED"), "{}: {e}", e.code()),
    }
    let current = surface.current.map(|p| surface.nodes[p].seq);
    let words = Surface::encode(surface.event_count, current, &surface.nodes, &[]);
    let decoded = Surface::decode(&words).unwrap_or_else(|e| panic!("the mirror's window is no valid surface: {e}"));
    let pick = |r: &crate::Result<region::Region>| r.as_ref().map(|r| r.seqs.clone()).map_err(|e| e.to_string());
    assert_eq!(
        pick(&region::select(&decoded, anchor)),
        pick(&chosen),
        "the decoded window selects otherwise"
    );
}

/// Block mode's plan off the mirror, held to the v2 decoder on the same surface. `control`'s
/// bits 0–7 pick the targets (up to 4 ids of the table by index), bit 8 adds an unknown id,
/// bits 9–10 the request's age and bit 11 a rewind holding the lock.
fn block_plan(surface: &BlockSurface, control: u32) {
    let sets: Vec<Vec<u32>> = (0..surface.set_count() as u32)
        .map(|k| surface.set(k).to_vec())
        .collect();
    let words = BlockSurface::encode(
        surface.event_count,
        surface.open_compaction,
        &surface.ids(),
        &surface.nodes,
        &sets,
    );
    let decoded =
        BlockSurface::decode(&words).unwrap_or_else(|e| panic!("the mirror's block surface is no valid surface: {e}"));
    let mut targets: Vec<BlockId> = Vec::new();
    let ids = surface.id_count();
    for k in 0..(control & 3) + 1 {
        if ids > 0 {
            let id = surface.block_id(((control >> (2 + 2 * k)) as usize % ids) as u32);
            if !targets.contains(&id) {
                targets.push(id);
            }
        }
    }
    if control & (1 << 8) != 0 || targets.is_empty() {
        targets.push(BlockId::from("no-such-block"));
    }
    let request_seq = u64::from(surface.event_count).saturating_sub(u64::from((control >> 9) & 3));
    let rewinding = control & (1 << 11) != 0;
    let planned = blocks::plan(surface, &targets, request_seq, rewinding);
    match &planned {
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
    let describe = |p: &crate::Result<Plan>| format!("{p:?}");
    assert_eq!(
        describe(&blocks::plan(&decoded, &targets, request_seq, rewinding)),
        describe(&planned),
        "the decoded surface plans otherwise"
    );
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

//! The store's fuzz entry points: a store file and its journal read as [`super::file`] reads
//! them, but from memory (no file, no lock, no fsync), so a fuzzer runs them thousands of times a
//! second. Used by the crate's fuzz targets (`crate::fuzz`, the `fuzz/` crate) and by the
//! committed corpus's replay in `cargo test` (tests/fuzz_corpus.rs).
//!
//! The contract checked on every input: reading answers `Ok` or a `STORE_*` error naming the
//! file, never a panic; a document that reads writes out as a document that reads back the same
//! (its serialization is a fixed point); a journal that reads has its whole lines and its torn
//! tail told apart consistently (the whole lines alone read the same changes, untorn).

use std::path::Path;

use super::document::Document;
use super::journal;
use crate::error::Result;

const STORE: &str = "/fuzz/checkpoint.json";
const JOURNAL: &str = "/fuzz/checkpoint.json.journal";

/// The store file `base` (none: no store file yet) with the journal `journal` replayed onto it,
/// as the store reads them; `Ok` with the document's JSON.
///
/// # Errors
/// The store's own errors (`STORE_CORRUPT`, `STORE_VERSION`).
pub fn read(base: Option<&[u8]>, journal: &[u8]) -> Result<Vec<u8>> {
    let mut doc = match base {
        Some(bytes) => Document::parse(Path::new(STORE), bytes)?,
        None => Document::empty(),
    };
    let scan = journal::scan(Path::new(JOURNAL), journal, true, 0)?;
    doc.check(Path::new(JOURNAL), &scan.changes)?;
    doc.apply(scan.changes);
    Ok(doc.to_json())
}

/// Checks the contract (module docs) on one input; panics when it is broken.
pub fn check(base: Option<&[u8]>, journal: &[u8]) {
    match read(base, journal) {
        Ok(json) => {
            let again =
                read(Some(&json), b"").unwrap_or_else(|e| panic!("a document we wrote does not read back: {e}"));
            assert_eq!(again, json, "writing a document read back is not a fixed point");
            let scan = journal::scan(Path::new(JOURNAL), journal, true, 0)
                .unwrap_or_else(|e| panic!("the journal read once and not twice: {e}"));
            let whole = journal::scan(Path::new(JOURNAL), &journal[..scan.valid], true, 0)
                .unwrap_or_else(|e| panic!("the whole lines alone do not read: {e}"));
            assert!(!whole.torn, "the whole lines alone read as torn");
            assert_eq!(
                whole.changes, scan.changes,
                "the torn tail changed what the whole lines say"
            );
            assert!(scan.valid <= journal.len());
        }
        Err(e) => {
            assert!(e.code().starts_with("STORE_"), "{}: {e}", e.code());
            let text = e.to_string();
            assert!(
                text.contains(STORE) || text.contains(JOURNAL),
                "the error names no file: {text}"
            );
        }
    }
}

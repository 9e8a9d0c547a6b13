//! The journal: `<store file>.journal`, an append-only log of the changes made since the store
//! file was last rewritten, so a mark or a stamp costs one fsync'd append instead of a rewrite
//! of every mark.
//!
//! Format: text lines, each `<crc> <json>\n`, where `<crc>` is the CRC-32 (IEEE) of the JSON
//! text in 8 lowercase hex digits.
//! - Line 1, the header: `{"journal":"checkpoint","version":1,"id":"<16 hex digits>"}`. The id
//!   is new at every rewrite of the store file, so a reader that kept its place in the journal
//!   knows whether it is still the same journal.
//! - Every further line is one append (one group commit): `{"changes":[...]}`, each change
//!   `{"op":"mark","mark":{...a mark as in the store file...}}` or
//!   `{"op":"fold","id":N,"foldedAt":T}`.
//!
//! Replaying a change is idempotent (a mark already there is kept; a fold of a folded mark does
//! nothing), so the journal may safely hold changes the store file already has: after a crash
//! between a rewrite of the store file and the journal's reset, or when the directory fsync of
//! that rewrite failed and the journal was kept on purpose.
//!
//! Recovery, as for a torn DSH session log: a line is whole when it ends in `\n` and its CRC
//! and JSON check out. Bad bytes at the end — a last line cut short, or a run of bad lines
//! with no whole line after them (a batch whose pages reached the disk out of order) — are a
//! torn tail: never acknowledged (an append is acknowledged only after its fsync), so dropped
//! and cut off by the next writer. A bad line followed by a whole line is corruption of
//! acknowledged data: `STORE_CORRUPT` naming the journal, and nothing is written. A newer
//! journal version or an unknown change is `STORE_VERSION` (skipping a change this version
//! does not know could lose it at the next rewrite).

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::document::{MarkOut, StoredMark};
use super::MAX_MARK_ID;
use crate::error::{FoldError, Result};

/// The journal's name and format version (its header says both).
pub(super) const JOURNAL_NAME: &str = "checkpoint";
pub(super) const JOURNAL_VERSION: u64 = 1;

/// One journaled change.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Change {
    Mark(StoredMark),
    Fold { id: u64, folded_at: u64 },
}

/// What a scan of journal bytes found.
#[derive(Debug, Default)]
pub(super) struct Scan {
    /// The header's id (scans from the start only; `None` when there is no whole header).
    pub(super) id: Option<u64>,
    pub(super) changes: Vec<Change>,
    /// Bytes of whole lines from the start of the scanned bytes.
    pub(super) valid: usize,
    /// Whether a torn tail follows `valid`.
    pub(super) torn: bool,
}

const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

static CRC_TABLE: [u32; 256] = crc_table();

/// CRC-32 (IEEE 802.3, the one of zlib and PNG).
fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |c, &b| {
        CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

fn line_of(json: &[u8]) -> Vec<u8> {
    let mut line = Vec::with_capacity(json.len() + 10);
    let mut crc = String::with_capacity(8);
    let _ = write!(crc, "{:08x}", crc32(json));
    line.extend_from_slice(crc.as_bytes());
    line.push(b' ');
    line.extend_from_slice(json);
    line.push(b'\n');
    line
}

/// The header line of a journal with `id`.
pub(super) fn header(id: u64) -> Vec<u8> {
    let json = format!(r#"{{"journal":"{JOURNAL_NAME}","version":{JOURNAL_VERSION},"id":"{id:016x}"}}"#);
    line_of(json.as_bytes())
}

/// The line of one append.
pub(super) fn batch(changes: &[Change]) -> Vec<u8> {
    struct Out<'a>(&'a Change);
    impl Serialize for Out<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = s.serialize_map(None)?;
            match self.0 {
                Change::Mark(stored) => {
                    map.serialize_entry("op", "mark")?;
                    map.serialize_entry("mark", &MarkOut(&stored.mark, stored.extras.as_ref()))?;
                }
                Change::Fold { id, folded_at } => {
                    map.serialize_entry("op", "fold")?;
                    map.serialize_entry("id", id)?;
                    map.serialize_entry("foldedAt", folded_at)?;
                }
            }
            map.end()
        }
    }
    #[derive(Serialize)]
    struct Batch<'a> {
        changes: Vec<Out<'a>>,
    }
    let json = serde_json::to_vec(&Batch {
        changes: changes.iter().map(Out).collect(),
    })
    .expect("changes serialize");
    line_of(&json)
}

/// A line's JSON text when the line is whole and its CRC matches.
fn checked(line: &[u8]) -> Option<&[u8]> {
    let body = line.strip_suffix(b"\n")?;
    if body.len() < 10 || body[8] != b' ' {
        return None;
    }
    let crc = std::str::from_utf8(&body[..8]).ok()?;
    if !crc.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let json = &body[9..];
    (u32::from_str_radix(crc, 16).ok()? == crc32(json)).then_some(json)
}

/// The lines of `bytes`, each with its `\n` (the last may lack it), and where each starts.
fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= bytes.len() {
            return None;
        }
        let end = bytes[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| at + i + 1);
        let line = (at, &bytes[at..end]);
        at = end;
        Some(line)
    })
}

/// Scans journal bytes: the whole journal when `from_start` (header first), else the bytes
/// that follow a known whole line. `offset` is where `bytes` start in the file (for messages).
pub(super) fn scan(path: &Path, bytes: &[u8], from_start: bool, offset: u64) -> Result<Scan> {
    let corrupt =
        |at: usize, what: String| FoldError::corrupt(path, format!("journal byte {}: {what}", offset + at as u64));
    let mut scan = Scan::default();
    let mut expect_header = from_start;
    for (at, line) in lines(bytes) {
        let Some(json) = checked(line) else {
            // A bad line: a torn tail if no whole line follows it, else corruption.
            let rest = &bytes[at + line.len()..];
            if let Some((later, _)) = lines(rest).find(|(_, l)| checked(l).is_some()) {
                return Err(corrupt(
                    at,
                    format!(
                        "a damaged line is followed by a whole one at byte {}",
                        offset + (at + line.len() + later) as u64
                    ),
                ));
            }
            scan.torn = true;
            return Ok(scan);
        };
        let value: Value = serde_json::from_slice(json)
            .map_err(|e| corrupt(at, format!("a line with a good CRC is not JSON: {e}")))?;
        if expect_header {
            scan.id = Some(parse_header(path, &value).map_err(|what| corrupt(at, what))??);
            expect_header = false;
        } else {
            parse_batch(path, value, &mut scan.changes).map_err(|what| corrupt(at, what))??;
        }
        scan.valid = at + line.len();
    }
    Ok(scan)
}

/// The header's id; `Err(what)` for a malformed header, `Ok(Err(..))` for a newer version.
fn parse_header(path: &Path, value: &Value) -> std::result::Result<Result<u64>, String> {
    let name = value.get("journal").and_then(Value::as_str);
    if name != Some(JOURNAL_NAME) {
        return Err(format!("the first line is not a `{JOURNAL_NAME}` journal header"));
    }
    let version = value
        .get("version")
        .and_then(Value::as_u64)
        .ok_or("the header has no version")?;
    if version > JOURNAL_VERSION {
        return Ok(Err(FoldError::StoreVersion(format!(
            "checkpoint store {} has a journal of version {version}, newer than the {JOURNAL_VERSION} this \
             dsh-fold reads; upgrade dsh-fold (the files were left unchanged)",
            path.display()
        ))));
    }
    let id = value
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| s.len() == 16)
        .and_then(|s| u64::from_str_radix(s, 16).ok())
        .ok_or("the header has no 16-digit hex id")?;
    Ok(Ok(id))
}

/// Adds one append's changes; `Err(what)` for a malformed line, `Ok(Err(..))` for an unknown
/// change (written by a newer dsh-fold).
fn parse_batch(path: &Path, value: Value, out: &mut Vec<Change>) -> std::result::Result<Result<()>, String> {
    let Value::Object(mut line) = value else {
        return Err("an append line is not an object".into());
    };
    let Some(Value::Array(changes)) = line.remove("changes") else {
        return Err("an append line has no `changes` list".into());
    };
    for change in changes {
        let Value::Object(mut change) = change else {
            return Err("a change is not an object".into());
        };
        match change.get("op").and_then(Value::as_str) {
            Some("mark") => {
                let mark = change.remove("mark").ok_or("a mark change has no `mark`")?;
                let stored: StoredMark = serde_json::from_value(mark).map_err(|e| format!("a mark change: {e}"))?;
                if stored.mark.id == 0 || stored.mark.id > MAX_MARK_ID {
                    return Err(format!("a mark change has id {}", stored.mark.id));
                }
                out.push(Change::Mark(stored));
            }
            Some("fold") => {
                let number = |key: &str| change.get(key).and_then(Value::as_u64);
                let (Some(id), Some(folded_at)) = (number("id"), number("foldedAt")) else {
                    return Err("a fold change needs an integer `id` and `foldedAt`".into());
                };
                out.push(Change::Fold { id, folded_at });
            }
            op => {
                return Ok(Err(FoldError::StoreVersion(format!(
                    "checkpoint store {} has a journal change {} this dsh-fold does not know (written by \
                     a newer one); upgrade dsh-fold (the files were left unchanged)",
                    path.display(),
                    op.map_or_else(|| "without an `op`".to_owned(), |op| format!("`{op}`"))
                ))));
            }
        }
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MarkRecord;

    fn mark(id: u64) -> Change {
        Change::Mark(StoredMark {
            mark: MarkRecord {
                id,
                session_id: "s".into(),
                log_length: id * 10,
                objective: Some("o\n\"x\"".into()),
                created_at: 5,
                folded_at: None,
            },
            extras: None,
        })
    }

    fn journal(lines: &[Vec<u8>]) -> Vec<u8> {
        lines.concat()
    }

    #[test]
    fn crc32_is_the_ieee_one() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn a_journal_round_trips() {
        let bytes = journal(&[
            header(0xabc),
            batch(&[mark(1), mark(2)]),
            batch(&[Change::Fold { id: 2, folded_at: 9 }]),
        ]);
        let scan = scan(Path::new("j"), &bytes, true, 0).unwrap();
        assert_eq!(scan.id, Some(0xabc));
        assert_eq!(
            scan.changes,
            vec![mark(1), mark(2), Change::Fold { id: 2, folded_at: 9 }]
        );
        assert_eq!((scan.valid, scan.torn), (bytes.len(), false));
    }

    #[test]
    fn a_torn_tail_is_dropped_wherever_it_was_cut() {
        let whole = journal(&[header(1), batch(&[mark(1)])]);
        let last = batch(&[mark(2), Change::Fold { id: 1, folded_at: 3 }]);
        for cut in 0..last.len() {
            let mut bytes = whole.clone();
            bytes.extend_from_slice(&last[..cut]);
            let scan = scan(Path::new("j"), &bytes, true, 0).unwrap();
            assert_eq!(scan.changes, vec![mark(1)], "cut at {cut}");
            assert_eq!((scan.valid, scan.torn), (whole.len(), cut > 0), "cut at {cut}");
        }
        // zeros where a batch should be (a file extended but never written), even with newlines
        for tail in [&b"\0\0\0\0"[..], b"\0\0\n\0\0", b"0000\n{\"changes\":[]}\n"] {
            let mut bytes = whole.clone();
            bytes.extend_from_slice(tail);
            let scan = scan(Path::new("j"), &bytes, true, 0).unwrap();
            assert_eq!((scan.changes.len(), scan.valid, scan.torn), (1, whole.len(), true));
        }
        // a torn header: an empty journal
        let scan = scan(Path::new("j"), &header(1)[..20], true, 0).unwrap();
        assert_eq!((scan.id, scan.valid, scan.torn), (None, 0, true));
    }

    #[test]
    fn damage_before_a_whole_line_is_corruption() {
        let mut bytes = journal(&[header(1), batch(&[mark(1)]), batch(&[mark(2)])]);
        let at = header(1).len() + 12;
        bytes[at] ^= 0x01; // a bit flipped inside the first append
        let err = scan(Path::new("/x/j"), &bytes, true, 0).unwrap_err();
        assert_eq!(err.code(), "STORE_CORRUPT", "{err}");
        assert!(err.to_string().contains("/x/j"), "{err}");
        // ...and so is a header that is not one
        let err = scan(Path::new("j"), &journal(&[batch(&[mark(1)])]), true, 0).unwrap_err();
        assert_eq!(err.code(), "STORE_CORRUPT");
    }

    #[test]
    fn newer_journals_and_unknown_changes_are_refused() {
        let newer = line_of(br#"{"journal":"checkpoint","version":2,"id":"0000000000000001"}"#);
        assert_eq!(
            scan(Path::new("j"), &newer, true, 0).unwrap_err().code(),
            "STORE_VERSION"
        );
        let unknown = journal(&[header(1), line_of(br#"{"changes":[{"op":"rename","id":1}]}"#)]);
        assert_eq!(
            scan(Path::new("j"), &unknown, true, 0).unwrap_err().code(),
            "STORE_VERSION"
        );
        // a mark with fields this version does not know is read, and keeps them
        let extra = journal(&[
            header(1),
            line_of(br#"{"changes":[{"op":"mark","mark":{"id":3,"sessionId":"s","logLength":1,"createdAt":2,"foldedAt":null,"color":"red"}}]}"#),
        ]);
        let scan = scan(Path::new("j"), &extra, true, 0).unwrap();
        let Change::Mark(stored) = &scan.changes[0] else {
            panic!()
        };
        assert_eq!(stored.extras.as_ref().unwrap()["color"], "red");
    }
}

//! Fuzz targets, run as property tests (CI-sized: `PROPTEST_CASES`, which `npm test` sets to 2000).
//!
//! - The store's parser, through a real [`Store`] on a temp file: arbitrary bytes and structurally
//!   mutated valid documents are written, `latest`/`list` must answer `Ok` or a `STORE_*` error and
//!   leave the file byte-for-byte unchanged — never panic. A file we can read must also take a
//!   write that a fresh `Store` reads back with every old mark and a new, larger id.
//! - The store's journal, next to a good store file: mutated journals and journals cut at every
//!   byte must read `Ok` (a torn tail dropped) or `STORE_CORRUPT` / `STORE_VERSION`, change no
//!   file when read, and a readable one must take a write that a fresh reader sees whole.
//! - The surface decoder and region selection: arbitrary `u32` vectors and mutated valid
//!   snapshots through [`Surface::decode`] + [`region::select`] must never panic, and a selected
//!   region must be consistent (in bounds, its seqs, its chars, `still_matches`).
//!
//! The seed corpus under `tests/corpus/` is replayed first: `store/<expect>-*.json` where expect
//! is `ok`, `corrupt` (STORE_CORRUPT) or `version` (STORE_VERSION); `surface/*.txt` holds decimal
//! words, with `# anchor: N` and `# expect: ok|<CODE>` comment lines.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fold_core::region;
use fold_core::store::{Limits, Store};
use fold_core::surface::Surface;
use fold_core::wire::NONE;
use proptest::prelude::*;
use serde_json::{json, Value};

/// No pruning, so a write must keep every mark it read.
const KEEP_ALL: Limits = Limits {
    max_marks_per_session: 1_000_000,
    max_age_ms: u64::MAX,
};

/// A scratch directory on tmpfs when there is one: thousands of fsyncs stay cheap.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::Builder::new().prefix("fold-fuzz-").tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::Builder::new().prefix("fold-fuzz-").tempdir().unwrap()
}

fn corpus_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(kind)
}

/// The whole store contract for one file content. Returns the code of the read (`"ok"` or a code).
fn check_store_bytes(dir: &Path, bytes: &[u8]) -> String {
    let path = dir.join("checkpoint.json");
    let _ = fs::remove_file(&path);
    // The journal of the previous case belongs to another store.
    let _ = fs::remove_file(dir.join("checkpoint.json.journal"));
    fs::write(&path, bytes).unwrap();
    let store = Store::new(&path, KEEP_ALL);
    let read = store.latest("s").map(|_| ());
    let listed = store.list(None);
    assert_eq!(fs::read(&path).unwrap(), bytes, "a read changed the file");
    let marks = match (read, listed) {
        (Ok(()), Ok(marks)) => marks,
        (Err(a), Err(b)) => {
            assert!(a.code().starts_with("STORE_"), "{}: {a}", a.code());
            assert_eq!(a.code(), b.code(), "latest and list disagree");
            assert!(
                a.to_string().contains(&path.display().to_string()),
                "the error does not name the file: {a}"
            );
            // A file we cannot read is never written over, not even by a write.
            let w = store.mark("w", 1, None).unwrap_err();
            assert_eq!(w.code(), a.code(), "{w}");
            assert_eq!(fs::read(&path).unwrap(), bytes, "a failed write changed the file");
            return a.code().to_owned();
        }
        (a, b) => panic!("latest {a:?} and list {:?} disagree", b.map(|m| m.len())),
    };
    // Readable: a write keeps every mark and takes a fresh id; a new reader sees the same.
    let before_max = marks.iter().map(|m| m.id).max().unwrap_or(0);
    match store.mark("fuzz", 7, Some("fuzz")) {
        Ok(new) => {
            assert!(new.id > before_max, "id {} reused (max {before_max})", new.id);
            let again = Store::new(&path, KEEP_ALL).list(None).expect("we read what we wrote");
            assert_eq!(again.len(), marks.len() + 1);
            for m in &marks {
                assert!(again.contains(m), "mark {} lost by a write", m.id);
            }
            assert_eq!(again[0].id, new.id);
        }
        Err(e) => {
            // Only an exhausted id space may refuse a readable file; it writes nothing.
            assert!(e.code().starts_with("STORE_"), "{}: {e}", e.code());
            assert_eq!(fs::read(&path).unwrap(), bytes);
        }
    }
    "ok".to_owned()
}

/// Decodes `words` and selects at `anchor`; checks every region it gets. Returns the code.
fn check_surface(words: &[u32], anchor: u64) -> String {
    let (surface, reports) = match Surface::decode_with_reports(words) {
        Ok(s) => s,
        Err(e) => {
            assert_eq!(e.code(), "INVALID_ARGUMENT", "{e}");
            return e.code().to_owned();
        }
    };
    // What decodes re-encodes to the same words.
    let current = (words[2] != NONE).then_some(words[2]);
    assert_eq!(
        Surface::encode(surface.event_count, current, &surface.nodes, &reports),
        words
    );
    match region::select(&surface, anchor) {
        Ok(r) => {
            assert!(r.start_pos < r.end_pos && r.end_pos <= surface.nodes.len(), "{r:?}");
            let nodes = &surface.nodes[r.start_pos..r.end_pos];
            assert_eq!(r.seqs, nodes.iter().map(|n| n.seq).collect::<Vec<_>>());
            assert_eq!(r.folded_chars, nodes.iter().map(|n| u64::from(n.chars)).sum::<u64>());
            if let Some(c) = surface.current {
                assert!(r.end_pos <= c, "the region swallows the current step");
            }
            assert!(region::still_matches(&surface, anchor, &r.seqs));
            "ok".to_owned()
        }
        Err(e) => {
            assert!(matches!(e.code(), "EMPTY_REGION" | "UNBALANCED"), "{}: {e}", e.code());
            e.code().to_owned()
        }
    }
}

/// The store contract for one journal content next to a good store file: reads answer `Ok` (a
/// torn tail dropped) or a `STORE_*` error and change no file; a readable store takes a write
/// that cuts any torn tail and that a fresh reader sees with every mark the read saw.
fn check_journal_bytes(dir: &Path, base: &[u8], journal: &[u8]) -> String {
    let path = dir.join("checkpoint.json");
    let journal_path = dir.join("checkpoint.json.journal");
    fs::write(&path, base).unwrap();
    fs::write(&journal_path, journal).unwrap();
    let unchanged = || {
        assert_eq!(fs::read(&path).unwrap(), base, "the store file changed");
        assert_eq!(fs::read(&journal_path).unwrap(), journal, "the journal changed");
    };
    let store = Store::new(&path, KEEP_ALL);
    let marks = match store.list(None) {
        Ok(marks) => marks,
        Err(e) => {
            assert!(
                matches!(e.code(), "STORE_CORRUPT" | "STORE_VERSION"),
                "{}: {e}",
                e.code()
            );
            assert!(e.to_string().contains("checkpoint.json"), "{e}");
            assert_eq!(store.mark("w", 1, None).unwrap_err().code(), e.code());
            unchanged();
            return e.code().to_owned();
        }
    };
    unchanged();
    let new = store.mark("fuzz", 7, None).expect("a readable store takes a write");
    assert!(marks.iter().all(|m| m.id < new.id), "id {} reused", new.id);
    let again = Store::new(&path, KEEP_ALL).list(None).expect("we read what we wrote");
    assert_eq!(again.len(), marks.len() + 1);
    for m in &marks {
        assert!(again.contains(m), "mark {} lost by a write", m.id);
    }
    "ok".to_owned()
}

/// A store file and its journal with a few appends (marks with and without objectives, a fold).
fn journal_template() -> (Vec<u8>, Vec<u8>) {
    let dir = scratch();
    let path = dir.path().join("checkpoint.json");
    let store = Store::new(&path, KEEP_ALL);
    store.mark("a", 1, Some("first")).unwrap();
    store.mark("b", 2, None).unwrap();
    store.mark("a", 3, Some("quote \" and newline \n")).unwrap();
    assert!(store.complete_fold("a", 3).unwrap());
    store.mark("c", 4, None).unwrap();
    (
        fs::read(&path).unwrap(),
        fs::read(dir.path().join("checkpoint.json.journal")).unwrap(),
    )
}

// ---------------------------------------------------------------- seed corpus

#[test]
fn corpus_store_files_replay() {
    let dir = scratch();
    let mut seen = 0;
    for entry in fs::read_dir(corpus_dir("store")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let expect = match name.split('-').next().unwrap() {
            "ok" => "ok",
            "corrupt" => "STORE_CORRUPT",
            "version" => "STORE_VERSION",
            other => panic!("{name}: unknown expectation `{other}`"),
        };
        let started = Instant::now();
        let got = check_store_bytes(dir.path(), &fs::read(&path).unwrap());
        assert_eq!(got, expect, "{name}");
        assert!(started.elapsed() < Duration::from_secs(2), "{name} is slow");
        seen += 1;
    }
    assert!(seen >= 10, "the store corpus is missing ({seen} files)");
}

#[test]
fn corpus_snapshots_replay() {
    let mut seen = 0;
    for entry in fs::read_dir(corpus_dir("surface")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (mut anchor, mut expect, mut words) = (0u64, String::new(), Vec::new());
        for line in fs::read_to_string(&path).unwrap().lines() {
            let line = line.trim();
            if let Some(a) = line.strip_prefix("# anchor:") {
                anchor = a.trim().parse().unwrap();
            } else if let Some(e) = line.strip_prefix("# expect:") {
                expect = e.trim().to_owned();
            } else if !line.starts_with('#') {
                words.extend(line.split_whitespace().map(|w| w.parse::<u32>().unwrap()));
            }
        }
        assert!(!expect.is_empty(), "{name}: no `# expect:` line");
        // Bounded by the input, not by the numbers in it (a huge event count must stay cheap).
        let started = Instant::now();
        assert_eq!(check_surface(&words, anchor), expect, "{name}");
        assert!(started.elapsed() < Duration::from_secs(2), "{name} is slow");
        seen += 1;
    }
    assert!(seen >= 8, "the snapshot corpus is missing ({seen} files)");
}

// ---------------------------------------------------------------- store documents

/// A valid document: marks with ids 1.., some folded, plus foreign keys carried through.
fn valid_document() -> impl Strategy<Value = Value> {
    let mark = (
        0u8..3,
        0u64..10_000,
        proptest::option::of("[a-z ]{0,12}"),
        any::<bool>(),
    );
    (prop::collection::vec(mark, 0..8), 0u64..4).prop_map(|(marks, gap)| {
        let mut rows = serde_json::Map::new();
        for (i, (session, log_length, objective, folded)) in marks.iter().enumerate() {
            let id = (i as u64 + 1) * (gap + 1);
            let mut row = json!({
                "id": id,
                "sessionId": format!("s{session}"),
                "logLength": log_length,
                "createdAt": 1_764_547_200_000u64 + id,
                "foldedAt": if *folded { json!(1_764_547_300_000u64) } else { Value::Null },
            });
            if let Some(o) = objective {
                row["objective"] = json!(o);
            }
            rows.insert(id.to_string(), row);
        }
        let next = (marks.len() as u64 + 1) * (gap + 1);
        json!({
            // both layouts this version reads: 1 (no journal) and 2
            "unit": {"name": "checkpoint", "version": 1 + gap % 2},
            "global": {"nextId": next, "other": "kept"},
            "tables": {"marks": rows, "foreign": {"a": [1, 2]}},
        })
    })
}

/// JSON pointers of every node of `v`, in document order.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                pointers(child, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Values a mutation plants: every JSON type, edge numbers, names that mean something here.
fn weird_value(pick: u8) -> Value {
    match pick % 16 {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(-1),
        3 => json!(1.5),
        4 => json!(u64::MAX),
        5 => json!(i64::MIN),
        6 => json!(0),
        7 => json!(""),
        8 => json!("checkpoint"),
        9 => json!([]),
        10 => json!({}),
        11 => json!(1e308),
        12 => json!(9_007_199_254_740_992u64),
        13 => json!({"id": 1, "sessionId": "s", "logLength": 1, "createdAt": 1, "foldedAt": null}),
        14 => json!(2),
        _ => json!("x".repeat(300)),
    }
}

#[derive(Debug, Clone)]
enum DocMutation {
    /// Replace the n-th node with a weird value.
    Replace(usize, u8),
    /// Remove the n-th node from its parent (object key or array item).
    Remove(usize),
    /// Insert a key (one of ours or a stranger) into the n-th node if it is an object.
    Insert(usize, u8, u8),
    /// Re-key the n-th node under its parent.
    Rekey(usize, u8),
}

fn doc_mutation() -> impl Strategy<Value = DocMutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(n, v)| DocMutation::Replace(n, v)),
        any::<usize>().prop_map(DocMutation::Remove),
        (any::<usize>(), any::<u8>(), any::<u8>()).prop_map(|(n, k, v)| DocMutation::Insert(n, k, v)),
        (any::<usize>(), any::<u8>()).prop_map(|(n, k)| DocMutation::Rekey(n, k)),
    ]
}

const KEYS: [&str; 12] = [
    "unit",
    "global",
    "tables",
    "marks",
    "nextId",
    "id",
    "sessionId",
    "logLength",
    "foldedAt",
    "1",
    "01",
    "stranger",
];

fn split_parent(pointer: &str) -> Option<(&str, &str)> {
    pointer.rfind('/').map(|i| (&pointer[..i], &pointer[i + 1..]))
}

fn mutate_doc(doc: &mut Value, m: &DocMutation) {
    let mut all = Vec::new();
    pointers(doc, String::new(), &mut all);
    let pick = |n: usize| all[n % all.len()].clone();
    match *m {
        DocMutation::Replace(n, v) => *doc.pointer_mut(&pick(n)).unwrap() = weird_value(v),
        DocMutation::Remove(n) => {
            if let Some((parent, key)) = split_parent(&pick(n)) {
                match doc.pointer_mut(parent).unwrap() {
                    Value::Object(o) => drop(o.remove(key)),
                    Value::Array(a) => drop(a.remove(key.parse::<usize>().unwrap())),
                    _ => {}
                }
            }
        }
        DocMutation::Insert(n, k, v) => {
            if let Value::Object(o) = doc.pointer_mut(&pick(n)).unwrap() {
                o.insert(KEYS[k as usize % KEYS.len()].to_owned(), weird_value(v));
            }
        }
        DocMutation::Rekey(n, k) => {
            if let Some((parent, key)) = split_parent(&pick(n)) {
                if let Value::Object(o) = doc.pointer_mut(parent).unwrap() {
                    if let Some(child) = o.remove(key) {
                        o.insert(KEYS[k as usize % KEYS.len()].to_owned(), child);
                    }
                }
            }
        }
    }
}

#[derive(Debug, Clone)]
enum ByteMutation {
    Truncate(usize),
    Flip(usize, u8),
    Insert(usize, u8),
    /// Duplicate a slice in place (duplicate keys, repeated rows).
    Repeat(usize, usize),
}

fn byte_mutation() -> impl Strategy<Value = ByteMutation> {
    prop_oneof![
        any::<usize>().prop_map(ByteMutation::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| ByteMutation::Flip(i, b)),
        (
            any::<usize>(),
            prop::sample::select(b"{}[]\",:0-9.e\\ \x00\xff".to_vec())
        )
            .prop_map(|(i, b)| ByteMutation::Insert(i, b)),
        (any::<usize>(), 1usize..40).prop_map(|(i, n)| ByteMutation::Repeat(i, n)),
    ]
}

fn mutate_bytes(bytes: &mut Vec<u8>, m: &ByteMutation) {
    if bytes.is_empty() {
        return;
    }
    match *m {
        ByteMutation::Truncate(i) => bytes.truncate(i % bytes.len()),
        ByteMutation::Flip(i, b) => {
            let i = i % bytes.len();
            bytes[i] ^= b.max(1);
        }
        ByteMutation::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), b),
        ByteMutation::Repeat(i, n) => {
            let i = i % bytes.len();
            let slice = bytes[i..(i + n).min(bytes.len())].to_vec();
            bytes.splice(i..i, slice);
        }
    }
}

// ---------------------------------------------------------------- surfaces

/// A plausible surface built from a small program: users, assistants opening 0..3 calls, results
/// (some missing, some for calls of older assistants), replacement nodes with early origins,
/// gaps in the log, a current step or not, and a report on the surface sometimes.
fn valid_snapshot() -> impl Strategy<Value = (Vec<u32>, u64)> {
    let step = (0u8..5, 0u32..3000, 0u8..4, 0u8..3);
    (
        prop::collection::vec(step, 0..30),
        any::<bool>(),
        any::<bool>(),
        0u64..40,
    )
        .prop_map(|(steps, with_current, with_report, anchor)| {
            let mut words: Vec<[u32; 5]> = Vec::new();
            let mut seq = 0u32;
            let mut open: Vec<u32> = Vec::new(); // opener seq per pending call
            let mut last_assistant = None;
            for (op, chars, calls, gap) in steps {
                seq += u32::from(gap);
                match op {
                    0 => words.push([seq, seq, 1, chars, 0]),
                    1 => {
                        words.push([seq, seq, 2, chars, u32::from(calls)]);
                        open.extend(std::iter::repeat_n(seq, usize::from(calls)));
                        last_assistant = Some(seq);
                    }
                    2 | 3 if !open.is_empty() => {
                        let opener = open.remove(usize::from(calls) % open.len());
                        words.push([seq, seq, 3, chars, opener + 1]);
                    }
                    2 => words.push([seq, seq, 3, chars, 0]),
                    _ => words.push([seq, seq / 2, 1, chars, 0]),
                }
                seq += 1;
            }
            let current = if with_current {
                last_assistant.unwrap_or(NONE)
            } else {
                NONE
            };
            let mut out = vec![1, seq, current, words.len() as u32];
            out.extend(words.iter().flatten());
            let user = words.iter().find(|w| w[2] == 1).map(|w| w[0]);
            match user.filter(|_| with_report) {
                Some(s) => out.extend([1, s, 1, 2, 0, 1, 40]),
                None => out.push(0),
            }
            (out, anchor)
        })
}

#[derive(Debug, Clone)]
enum WordMutation {
    Set(usize, u32),
    Truncate(usize),
    Insert(usize, u32),
    Remove(usize),
    /// Copy a 5-word node record over another (duplicated seqs, links to later events).
    CopyRecord(usize, usize),
}

fn edge_word() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(2),
        Just(3),
        Just(4),
        Just(NONE),
        Just(NONE - 1),
        Just(u32::MAX / 5),
        0u32..64,
        any::<u32>(),
    ]
}

fn word_mutation() -> impl Strategy<Value = WordMutation> {
    prop_oneof![
        3 => (any::<usize>(), edge_word()).prop_map(|(i, w)| WordMutation::Set(i, w)),
        1 => any::<usize>().prop_map(WordMutation::Truncate),
        1 => (any::<usize>(), edge_word()).prop_map(|(i, w)| WordMutation::Insert(i, w)),
        1 => any::<usize>().prop_map(WordMutation::Remove),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| WordMutation::CopyRecord(a, b)),
    ]
}

fn mutate_words(words: &mut Vec<u32>, m: &WordMutation) {
    if words.is_empty() {
        return;
    }
    let len = words.len();
    match *m {
        WordMutation::Set(i, w) => words[i % len] = w,
        WordMutation::Truncate(i) => words.truncate(i % len),
        WordMutation::Insert(i, w) => words.insert(i % (len + 1), w),
        WordMutation::Remove(i) => drop(words.remove(i % len)),
        WordMutation::CopyRecord(a, b) => {
            let records = len.saturating_sub(5) / 5;
            if records >= 2 {
                let (a, b) = (4 + (a % records) * 5, 4 + (b % records) * 5);
                let record: Vec<u32> = words[a..a + 5].to_vec();
                words[b..b + 5].copy_from_slice(&record);
            }
        }
    }
}

/// Arbitrary words, but with a plausible header often enough to reach the node checks.
fn arbitrary_words() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![
        prop::collection::vec(any::<u32>(), 0..48),
        (
            0u32..40,
            edge_word(),
            0u32..8,
            prop::collection::vec(edge_word(), 0..48)
        )
            .prop_map(|(events, current, n, body)| {
                let mut w = vec![1, events, current, n];
                w.extend(body);
                w
            }),
    ]
}

/// Runs `test` over `strategy` for `PROPTEST_CASES` cases (proptest's default config reads it)
/// and prints the number of executions and the time taken (`cargo test -- --nocapture`).
fn fuzz<S: Strategy>(name: &str, strategy: S, test: impl Fn(S::Value) -> String)
where
    S::Value: std::fmt::Debug,
{
    let config = ProptestConfig {
        // Findings go into tests/corpus by hand; never write regression files into the repo.
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let cases = config.cases;
    let runs = AtomicU64::new(0);
    let outcomes = std::sync::Mutex::new(std::collections::BTreeMap::<String, u64>::new());
    let started = Instant::now();
    let mut runner = proptest::test_runner::TestRunner::new(config);
    if let Err(e) = runner.run(&strategy, |value| {
        runs.fetch_add(1, Ordering::Relaxed);
        let code = test(value);
        *outcomes.lock().unwrap().entry(code).or_default() += 1;
        Ok(())
    }) {
        panic!("{name}: {e}");
    }
    eprintln!(
        "fuzz {name}: {} executions ({cases} cases) in {:.2?}, outcomes {:?}",
        runs.load(Ordering::Relaxed),
        started.elapsed(),
        outcomes.lock().unwrap()
    );
}

#[test]
fn store_parser_survives_arbitrary_bytes() {
    let dir = scratch();
    fuzz(
        "store/arbitrary-bytes",
        prop::collection::vec(any::<u8>(), 0..300),
        |bytes| check_store_bytes(dir.path(), &bytes),
    );
}

#[test]
fn store_parser_survives_mutated_documents() {
    let dir = scratch();
    let strategy = (
        valid_document(),
        prop::collection::vec(doc_mutation(), 0..4),
        prop::collection::vec(byte_mutation(), 0..3),
    );
    fuzz(
        "store/mutated-documents",
        strategy,
        |(mut doc, doc_mutations, byte_mutations)| {
            for m in &doc_mutations {
                mutate_doc(&mut doc, m);
            }
            let mut bytes = serde_json::to_vec(&doc).unwrap();
            for m in &byte_mutations {
                mutate_bytes(&mut bytes, m);
            }
            check_store_bytes(dir.path(), &bytes)
        },
    );
}

#[test]
fn journal_survives_mutations_and_torn_tails() {
    let dir = scratch();
    let (base, journal) = journal_template();
    let strategy = (prop::collection::vec(byte_mutation(), 1..4), any::<usize>());
    fuzz("store/journal", strategy, |(mutations, cut)| {
        let mut bytes = journal.clone();
        for m in &mutations {
            mutate_bytes(&mut bytes, m);
        }
        if cut % 3 == 0 {
            bytes.truncate(cut % (bytes.len() + 1)); // a torn tail on top
        }
        check_journal_bytes(dir.path(), &base, &bytes)
    });
    // every cut of the clean journal reads, and takes a write
    for cut in 0..=journal.len() {
        assert_eq!(
            check_journal_bytes(dir.path(), &base, &journal[..cut]),
            "ok",
            "cut at {cut}"
        );
    }
}

#[test]
fn surface_decode_survives_arbitrary_words() {
    let strategy = (arbitrary_words(), prop_oneof![0u64..64, any::<u64>()]);
    fuzz("surface/arbitrary-words", strategy, |(words, anchor)| {
        check_surface(&words, anchor)
    });
}

#[test]
fn surface_decode_survives_mutated_snapshots() {
    let strategy = (valid_snapshot(), prop::collection::vec(word_mutation(), 0..4));
    fuzz(
        "surface/mutated-snapshots",
        strategy,
        |((mut words, anchor), mutations)| {
            for m in &mutations {
                mutate_words(&mut words, m);
            }
            check_surface(&words, anchor)
        },
    );
}

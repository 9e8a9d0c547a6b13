//! The fuzz campaign's regression corpus, replayed: every file under `fuzz/corpus/<target>/`
//! (the inputs `npm run fuzz` kept for new coverage, and every input that once broke a
//! contract) goes through its target's function (`fold_core::fuzz`), the very function the
//! fuzzer runs. So CI checks all of them on every `cargo test`, without fuzzing.

use std::fs;
use std::path::Path;

use fold_core::fuzz;

#[test]
fn every_corpus_input_keeps_its_targets_contract() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut replayed = 0;
    for target in fuzz::TARGETS {
        let dir = root.join(target);
        let mut files: Vec<_> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (every target has a committed corpus)", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{}: an empty corpus", dir.display());
        for file in files {
            let data = fs::read(&file).unwrap();
            let outcome = std::panic::catch_unwind(|| fuzz::run(target, &data));
            assert!(
                matches!(outcome, Ok(true)),
                "{target}: {} broke its contract (replay: npm run fuzz -- --replay {})",
                file.display(),
                file.display()
            );
            replayed += 1;
        }
    }
    assert!(replayed >= fuzz::TARGETS.len());
}

#[test]
fn a_good_store_file_and_journal_read_and_a_bad_one_is_refused() {
    // The targets' own oracle, checked on known answers (a target that accepts nothing, or
    // everything, would pass the replay above).
    let good = br#"{"unit":{"name":"checkpoint","version":1},"global":{"nextId":2},"tables":{"marks":{"1":{"id":1,"sessionId":"s","logLength":1,"createdAt":1,"foldedAt":null}}}}"#;
    assert!(fold_core::store::fuzzing::read(Some(good), b"").is_ok());
    assert_eq!(
        fold_core::store::fuzzing::read(Some(b"{"), b"").unwrap_err().code(),
        "STORE_CORRUPT"
    );
    assert!(!fuzz::run("no_such_target", b""));
}

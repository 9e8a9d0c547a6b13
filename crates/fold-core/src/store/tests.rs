//! The store's unit tests: ids, stamps, privacy, pruning, bad files, two writers.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::file::FileStamp;
use super::*;

fn temp_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("storages/checkpoint.json"), Limits::default());
    (dir, store)
}

#[test]
fn ids_are_monotonic_and_survive_a_reopen() {
    let (_dir, store) = temp_store();
    assert_eq!(store.mark("s", 3, Some("look")).unwrap().id, 1);
    assert_eq!(store.mark("t", 5, None).unwrap().id, 2);
    let again = Store::new(store.path(), Limits::default());
    let latest = again.latest("s").unwrap().unwrap();
    assert_eq!(
        (latest.id, latest.log_length, latest.objective.as_deref()),
        (1, 3, Some("look"))
    );
    assert_eq!(again.mark("s", 9, None).unwrap().id, 3);
    assert_eq!(
        again.list(None).unwrap().iter().map(|m| m.id).collect::<Vec<_>>(),
        [3, 2, 1]
    );
}

#[test]
fn find_answers_one_mark_by_id_from_memory_and_sees_other_writers() {
    let (_dir, store) = temp_store();
    assert_eq!(store.find_in_memory(1), None, "nothing loaded yet");
    assert_eq!(store.find(1).unwrap(), None);
    let a = store.mark("s", 3, None).unwrap();
    let b = store.mark("t", 5, Some("other")).unwrap();
    let found = store.find_in_memory(b.id).unwrap();
    assert_eq!((found.session_id.as_str(), found.log_length), ("t", 5));
    assert!(store.complete_fold("s", a.id).unwrap());
    assert!(store.find(a.id).unwrap().unwrap().folded_at.is_some());
    // A mark another store (another process) wrote is not in this one's memory, but find reads it.
    let other = Store::new(store.path(), Limits::default());
    let c = other.mark("u", 7, None).unwrap();
    assert_eq!(store.find_in_memory(c.id), None);
    assert_eq!(store.find(c.id).unwrap().unwrap().session_id, "u");
    assert_eq!(store.find(999).unwrap(), None);
}

#[test]
fn complete_fold_stamps_only_the_latest_active_mark() {
    let (_dir, store) = temp_store();
    let first = store.mark("s", 1, None).unwrap();
    let second = store.mark("s", 2, None).unwrap();
    assert!(!store.complete_fold("s", first.id).unwrap());
    assert!(store.has_active("s").unwrap());
    assert!(store.complete_fold("s", second.id).unwrap());
    assert!(!store.complete_fold("s", second.id).unwrap());
    assert!(!store.has_active("s").unwrap());
    let reread = Store::new(store.path(), Limits::default());
    assert!(reread.latest("s").unwrap().unwrap().folded_at.is_some());
}

#[cfg(unix)]
#[test]
fn files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("new/checkpoint.json"), Limits::default());
    store.mark("s", 0, None).unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(store.path()), 0o600);
    assert_eq!(mode(&dir.path().join("new")), 0o700);
}

#[test]
fn prunes_per_session_and_by_age_but_never_reuses_ids() {
    let (_dir, store) = temp_store();
    store.set_limits(Limits {
        max_marks_per_session: 2,
        ..Limits::default()
    });
    for n in 0..5 {
        store.mark("s", n, None).unwrap();
    }
    assert_eq!(
        store.list(Some("s")).unwrap().iter().map(|m| m.id).collect::<Vec<_>>(),
        [5, 4]
    );
    store.set_limits(Limits {
        max_marks_per_session: 2,
        max_age_ms: 0,
    });
    // Everything older than "now" goes; the new mark's id still continues from 6.
    std::thread::sleep(std::time::Duration::from_millis(2));
    assert_eq!(store.mark("t", 0, None).unwrap().id, 6);
}

#[test]
fn unreadable_files_are_never_overwritten() {
    let cases: [(&[u8], &str); 6] = [
        (b"", "STORE_CORRUPT"),
        (b"{\"unit\":", "STORE_CORRUPT"),
        (b"[]", "STORE_CORRUPT"),
        (
            br#"{"unit":{"name":"other","version":1},"global":{},"tables":{}}"#,
            "STORE_CORRUPT",
        ),
        (
            br#"{"unit":{"name":"checkpoint","version":3},"global":{},"tables":{}}"#,
            "STORE_VERSION",
        ),
        (
            br#"{"unit":{"name":"checkpoint","version":1},"tables":{"marks":{"1":{"id":2}}}}"#,
            "STORE_CORRUPT",
        ),
    ];
    for (bytes, code) in cases {
        let (_dir, store) = temp_store();
        fs::create_dir_all(store.path().parent().unwrap()).unwrap();
        fs::write(store.path(), bytes).unwrap();
        let err = store.mark("s", 1, None).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
        assert!(err.to_string().contains(&store.path().display().to_string()));
        assert_eq!(fs::read(store.path()).unwrap(), bytes);
        assert_eq!(store.latest("s").unwrap_err().code(), code);
    }
}

#[test]
fn other_tables_and_globals_are_carried_through() {
    let (_dir, store) = temp_store();
    fs::create_dir_all(store.path().parent().unwrap()).unwrap();
    fs::write(
        store.path(),
        br#"{"unit":{"name":"checkpoint","version":1},"global":{"x":1,"nextId":7},"tables":{"t":{"k":true}}}"#,
    )
    .unwrap();
    assert_eq!(store.mark("s", 1, None).unwrap().id, 7);
    let v: Value = serde_json::from_slice(&fs::read(store.path()).unwrap()).unwrap();
    assert_eq!(v["global"]["x"], 1);
    assert_eq!(v["global"]["nextId"], 8);
    assert_eq!(v["tables"]["t"]["k"], true);
}

#[test]
fn a_foreign_number_keeps_its_value_across_rewrites() {
    // Found by the fuzz campaign (store_file): serde_json's default float parsing is not
    // correctly rounded, so a foreign float moved by an ULP at every rewrite of the store file.
    let (_dir, store) = temp_store();
    fs::create_dir_all(store.path().parent().unwrap()).unwrap();
    let digits = "184467440737088888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888889551651";
    fs::write(
        store.path(),
        format!(
            r#"{{"unit":{{"name":"checkpoint","version":1}},"global":{{"spent":{digits},"nextId":1}},"tables":{{}}}}"#
        ),
    )
    .unwrap();
    let exact: f64 = digits.parse().unwrap(); // Rust's parse is correctly rounded
    let mut written = Vec::new();
    for i in 0..3 {
        store.mark("s", i, None).unwrap();
        store.compact().unwrap();
        let text = fs::read_to_string(store.path()).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["global"]["spent"].as_f64(), Some(exact), "rewrite {i}: {text}");
        written.push(
            text.split("\"spent\":")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
                .to_owned(),
        );
    }
    assert!(written.windows(2).all(|w| w[0] == w[1]), "{written:?}");
}

#[test]
fn concurrent_writers_in_two_stores_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checkpoint.json");
    // Two Store values over one file behave like two processes (separate memory, one file lock).
    let stores = [
        Arc::new(Store::new(&path, Limits::default())),
        Arc::new(Store::new(&path, Limits::default())),
    ];
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let store = stores[t % 2].clone();
            std::thread::spawn(move || {
                (0..25)
                    .map(|n| store.mark(&format!("s{t}"), n, None).unwrap().id)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut ids: Vec<u64> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=200).collect::<Vec<_>>());
    let fresh = Store::new(&path, Limits::default());
    assert_eq!(fresh.list(None).unwrap().len(), 200);
}

#[test]
fn another_writer_is_seen_even_when_the_file_looks_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checkpoint.json");
    let (a, b) = (
        Store::new(&path, Limits::default()),
        Store::new(&path, Limits::default()),
    );
    assert_eq!(a.mark("s", 1, None).unwrap().id, 1);
    assert_eq!(b.mark("t", 1, None).unwrap().id, 2); // an append a has not read
    assert_eq!(a.mark("s", 2, None).unwrap().id, 3);
    b.compact().unwrap(); // a rewrite of the store file and a fresh journal
                          // What a coarse mtime and a reused inode can make true: the rewritten store file looks like
                          // the one a read. The fresh journal's id still tells a to read everything again.
    lock(&a.disk).base = Some(FileStamp::of(&fs::metadata(&path).unwrap()));
    assert_eq!(b.mark("t", 2, None).unwrap().id, 4);
    assert_eq!(a.mark("s", 3, None).unwrap().id, 5, "a saw b's rewrite and b's append");
    assert_eq!(Store::new(&path, Limits::default()).list(None).unwrap().len(), 5);
}

#[test]
fn rejects_bad_input_without_touching_the_disk() {
    let (_dir, store) = temp_store();
    assert_eq!(store.mark("", 1, None).unwrap_err().code(), "INVALID_ARGUMENT");
    assert_eq!(store.mark("a\nb", 1, None).unwrap_err().code(), "INVALID_ARGUMENT");
    let huge = "x".repeat(MAX_OBJECTIVE_BYTES + 1);
    assert_eq!(store.mark("s", 1, Some(&huge)).unwrap_err().code(), "INVALID_ARGUMENT");
    assert!(!store.path().parent().unwrap().exists());
}

/// Runs `f` on a thread and waits at most 60 s for it: a wedged store fails the test instead of
/// hanging it.
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the store is wedged: a writer waited for over a minute")
}

#[test]
fn a_leader_that_panics_does_not_wedge_later_writers() {
    let (_dir, store) = temp_store();
    let store = Arc::new(store);
    assert_eq!(store.mark("s", 1, None).unwrap().id, 1);

    // Hold the cross-process lock, so the next leader blocks with two more writers queued
    // behind it; they become the next batch, whose leader panics.
    let held = store.lock_file().unwrap();
    let spawn_mark = |n: u64| {
        let store = store.clone();
        std::thread::spawn(move || store.mark("s", n, None))
    };
    let first = spawn_mark(2);
    while !lock(&store.queue).writing {
        std::thread::yield_now();
    }
    let (second, third) = (spawn_mark(3), spawn_mark(4));
    while lock(&store.queue).pending.len() < 2 {
        std::thread::yield_now();
    }
    store
        .faults
        .leader_panic
        .store(true, std::sync::atomic::Ordering::SeqCst);
    drop(held);
    assert_eq!(within_a_minute(move || first.join()).unwrap().unwrap().id, 2);
    // One of the two led the panicking batch (its thread panicked); the other, in the same
    // batch, got an error instead of waiting forever.
    let outcomes = within_a_minute(move || [second.join(), third.join()]);
    assert_eq!(outcomes.iter().filter(|o| o.is_err()).count(), 1, "{outcomes:?}");
    let waiter = outcomes.into_iter().find_map(Result::ok).unwrap();
    assert_eq!(waiter.unwrap_err().code(), "STORE_IO");

    // Later writers proceed, and what is on disk is intact.
    let store2 = store.clone();
    let later = within_a_minute(move || store2.mark("s", 5, None)).unwrap();
    assert_eq!(later.id, 3);
    assert_eq!(Store::new(store.path(), Limits::default()).list(None).unwrap().len(), 3);
}

#[test]
fn unknown_fields_are_read_and_kept_through_a_rewrite() {
    // What a newer minor version may write: extra fields in a mark, an extra top-level key.
    let (_dir, store) = temp_store();
    fs::create_dir_all(store.path().parent().unwrap()).unwrap();
    fs::write(
        store.path(),
        format!(
            r#"{{"unit":{{"name":"checkpoint","version":1}},"global":{{"nextId":2}},"tables":{{"marks":{{"1":{{"id":1,"sessionId":"s","logLength":4,"createdAt":{},"foldedAt":null,"color":"red","tags":["a",{{"b":2}}]}}}}}},"meta":{{"by":"newer"}}}}"#,
            now_ms()
        ),
    )
    .unwrap();
    let latest = store.latest("s").unwrap().unwrap();
    assert_eq!((latest.id, latest.log_length, latest.folded_at), (1, 4, None));
    assert!(store.complete_fold("s", 1).unwrap());
    store.mark("t", 9, None).unwrap();
    store.compact().unwrap(); // the journal's changes into the file
    let v: Value = serde_json::from_slice(&fs::read(store.path()).unwrap()).unwrap();
    assert_eq!(v["unit"]["version"], 2);
    let kept = &v["tables"]["marks"]["1"];
    assert_eq!(kept["color"], "red");
    assert_eq!(kept["tags"], serde_json::json!(["a", {"b": 2}]));
    assert!(kept["foldedAt"].is_u64());
    assert_eq!(v["meta"]["by"], "newer");
    assert_eq!(v["tables"]["marks"]["2"]["sessionId"], "t");
    assert!(v["tables"]["marks"]["2"].get("color").is_none());
}

#[test]
fn registered_limits_combine_into_the_loosest() {
    let (_dir, store) = temp_store();
    let tight = Limits {
        max_marks_per_session: 2,
        max_age_ms: 10_000_000,
    };
    let loose = Limits {
        max_marks_per_session: 5,
        max_age_ms: 1_000,
    };
    assert_eq!(store.limits(), Limits::default());
    store.register_limits(tight);
    assert_eq!(store.limits(), tight);
    store.register_limits(loose);
    store.register_limits(tight);
    assert_eq!(
        store.limits(),
        Limits {
            max_marks_per_session: 5,
            max_age_ms: 10_000_000
        }
    );
    store.set_limits(tight);
    assert_eq!(store.limits(), tight);
}

#[test]
fn a_write_whose_directory_fsync_fails_is_durable_for_every_reader_and_returned() {
    // The rename landed: every reader of the file sees the mark. Reporting it lost would make
    // the model mark again; the mark is returned and the fsync failure surfaces as a warning.
    let (_dir, store) = temp_store();
    store.faults.sync_dir.store(true, std::sync::atomic::Ordering::SeqCst);
    let mark = store.mark("s", 3, None).expect("the mark landed");
    assert_eq!(mark.id, 1);
    assert_eq!(
        Store::new(store.path(), Limits::default())
            .latest("s")
            .unwrap()
            .unwrap()
            .id,
        1
    );
    // Memory has it, and the problem is kept as a warning naming the file and the directory.
    assert_eq!(store.latest_in_memory("s").unwrap().unwrap().unwrap().id, 1);
    let warnings = store.take_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains(&store.path().display().to_string()),
        "{}",
        warnings[0]
    );
    assert!(warnings[0].contains("fsyncing the directory"), "{}", warnings[0]);
    assert!(store.take_warnings().is_empty(), "each warning is handed out once");
    // A stamp is a journal append (no directory fsync); a retry answers that it is done.
    assert_eq!(store.stamp("s", 1).unwrap(), Stamp::Stamped);
    assert!(store.take_warnings().is_empty());
    assert_eq!(store.stamp("s", 1).unwrap(), Stamp::AlreadyStamped);
    // A rewrite whose directory fsync fails keeps the journal (its changes durable there too,
    // in case the rename does not survive), and warns; the next good rewrite resets it.
    let journal = store.path().with_file_name("checkpoint.json.journal");
    let journal_before = fs::read(&journal).unwrap();
    store.compact().unwrap();
    assert_eq!(store.take_warnings().len(), 1);
    assert_eq!(fs::read(&journal).unwrap(), journal_before);
    store.faults.sync_dir.store(false, std::sync::atomic::Ordering::SeqCst);
    store.compact().unwrap();
    assert!(store.take_warnings().is_empty());
    assert!(fs::read(&journal).unwrap().len() < journal_before.len());
    assert!(Store::new(store.path(), Limits::default())
        .latest("s")
        .unwrap()
        .unwrap()
        .folded_at
        .is_some());
}

#[test]
fn stamp_says_what_it_did_and_can_be_retried() {
    let (_dir, store) = temp_store();
    let first = store.mark("s", 1, None).unwrap();
    let second = store.mark("s", 2, None).unwrap();
    store.mark("t", 1, None).unwrap();
    assert_eq!(store.stamp("s", first.id).unwrap(), Stamp::NotLatest);
    assert_eq!(store.stamp("s", 99).unwrap(), Stamp::Missing);
    assert_eq!(
        store.stamp("t", second.id).unwrap(),
        Stamp::Missing,
        "another session's mark"
    );
    assert_eq!(store.stamp("s", second.id).unwrap(), Stamp::Stamped);
    assert_eq!(store.stamp("s", second.id).unwrap(), Stamp::AlreadyStamped);
    // What another process sees on disk: a stamp there is AlreadyStamped here after a re-read.
    let other = Store::new(store.path(), Limits::default());
    assert_eq!(other.stamp("s", second.id).unwrap(), Stamp::AlreadyStamped);
    assert_eq!(store.stamp("", 1).unwrap_err().code(), "INVALID_ARGUMENT");
}

#[test]
fn readers_of_memory_never_wait_for_file_work() {
    let (_dir, store) = temp_store();
    let store = Arc::new(store);
    store.mark("s", 1, None).unwrap();
    // Whoever works on the files (a load, a re-read, a writer) holds `disk` throughout.
    let working = lock(&store.disk);
    let reader = store.clone();
    let answers = within_a_minute(move || {
        (
            reader.latest_in_memory("s").unwrap().unwrap().map(|m| m.id),
            reader.has_active_in_memory("s").unwrap().unwrap(),
            reader.is_loaded(),
        )
    });
    assert_eq!(answers, (Some(1), true, true));
    drop(working);
}

#[test]
fn before_the_first_load_memory_says_so_and_a_failed_load_is_remembered() {
    let (_dir, store) = temp_store();
    assert!(store.latest_in_memory("s").is_none());
    assert!(store.has_active_in_memory("s").is_none());
    assert_eq!(
        store.has_active_in_memory("").unwrap().unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    fs::create_dir_all(store.path().parent().unwrap()).unwrap();
    fs::write(store.path(), b"nope").unwrap();
    assert_eq!(store.load().unwrap_err().code(), "STORE_CORRUPT");
    assert_eq!(
        store.has_active_in_memory("s").unwrap().unwrap_err().code(),
        "STORE_CORRUPT"
    );
    assert!(store.latest_in_memory("s").is_none());
    fs::remove_file(store.path()).unwrap();
    store.load().unwrap();
    assert!(!store.has_active_in_memory("s").unwrap().unwrap());
}

#[test]
fn a_background_load_fills_memory() {
    let (_dir, store) = temp_store();
    store.mark("s", 1, None).unwrap();
    let fresh = Arc::new(Store::new(store.path(), Limits::default()));
    fresh.start_loading();
    let waiting = fresh.clone();
    within_a_minute(move || {
        while !waiting.is_loaded() {
            std::thread::yield_now();
        }
    });
    assert!(fresh.has_active_in_memory("s").unwrap().unwrap());
}

fn journal_of(store: &Store) -> Vec<u8> {
    fs::read(&store.journal_path).unwrap()
}

#[test]
fn marks_and_stamps_after_the_first_are_journal_appends() {
    let (_dir, store) = temp_store();
    store.mark("s", 1, None).unwrap(); // the first write: the store file and an empty journal
    let base = fs::metadata(store.path()).unwrap();
    let header_len = journal_of(&store).len();
    store.mark("t", 2, None).unwrap();
    assert!(store.complete_fold("t", 2).unwrap());
    let after = fs::metadata(store.path()).unwrap();
    assert_eq!(
        FileStamp::of(&after),
        FileStamp::of(&base),
        "the store file was rewritten"
    );
    let journal = journal_of(&store);
    assert_eq!(
        journal.iter().filter(|&&b| b == b'\n').count(),
        3,
        "a header and two appends"
    );
    assert!(journal.len() > header_len);
    // A new reader replays the journal onto the file.
    let fresh = Store::new(store.path(), Limits::default());
    let t = fresh.latest("t").unwrap().unwrap();
    assert_eq!((t.id, t.folded_at.is_some()), (2, true));
}

#[test]
fn the_journal_is_folded_into_the_file_when_it_outgrows_it_and_at_open() {
    let (_dir, store) = temp_store();
    store.set_limits(Limits {
        max_marks_per_session: 1_000_000,
        max_age_ms: u64::MAX,
    });
    store.mark("s", 0, None).unwrap();
    let objective = "o".repeat(1000);
    let mut rewrites = 0;
    let mut ino = FileStamp::of(&fs::metadata(store.path()).unwrap()).ino;
    for n in 1..200 {
        store.mark("s", n, Some(&objective)).unwrap();
        let now = FileStamp::of(&fs::metadata(store.path()).unwrap()).ino;
        if now != ino {
            rewrites += 1;
            ino = now;
        }
        // never much more journal than the file (and the 64 KiB floor) before it is folded in
        let (journal, file) = (
            journal_of(&store).len() as u64,
            fs::metadata(store.path()).unwrap().len(),
        );
        assert!(
            journal <= commit::COMPACT_AFTER_BYTES.max(file) + 1200,
            "journal {journal}, file {file}"
        );
    }
    assert!(
        (1..=6).contains(&rewrites),
        "{rewrites} rewrites for 200 marks of ~1 KB"
    );
    // open() folds whatever is left; afterwards the file alone holds every mark.
    store.mark("s", 999, None).unwrap();
    let fresh = Store::new(store.path(), Limits::default());
    fresh.open().unwrap();
    let v: Value = serde_json::from_slice(&fs::read(store.path()).unwrap()).unwrap();
    assert_eq!(
        v["tables"]["marks"].as_object().unwrap().len(),
        64,
        "pruned to the default cap at the rewrite"
    );
    assert_eq!(
        journal_of(&store).iter().filter(|&&b| b == b'\n').count(),
        1,
        "just a header"
    );
    assert!(fresh.take_warnings().is_empty());
}

#[test]
fn a_version_1_file_is_read_and_rewritten_as_version_2_by_the_first_write() {
    let (_dir, store) = temp_store();
    fs::create_dir_all(store.path().parent().unwrap()).unwrap();
    let v1 = format!(
        r#"{{"unit":{{"name":"checkpoint","version":1}},"global":{{"nextId":8}},"tables":{{"marks":{{"7":{{"id":7,"sessionId":"s","logLength":2,"createdAt":{},"foldedAt":null}}}}}}}}"#,
        now_ms()
    );
    fs::write(store.path(), &v1).unwrap();
    assert_eq!(store.latest("s").unwrap().unwrap().id, 7);
    assert_eq!(fs::read_to_string(store.path()).unwrap(), v1, "reading changes nothing");
    assert_eq!(store.mark("t", 1, None).unwrap().id, 8);
    let v: Value = serde_json::from_slice(&fs::read(store.path()).unwrap()).unwrap();
    assert_eq!(v["unit"]["version"], 2);
    assert_eq!(
        v["tables"]["marks"]["8"]["sessionId"], "t",
        "written whole, not appended"
    );
}

#[test]
fn a_failed_append_leaves_the_journal_as_it_was_and_memory_untouched() {
    let (_dir, store) = temp_store();
    store.mark("s", 1, None).unwrap();
    store.mark("s", 2, None).unwrap();
    let before = journal_of(&store);
    // The journal becomes a directory: opening it for an append fails.
    fs::remove_file(&store.journal_path).unwrap();
    fs::create_dir(&store.journal_path).unwrap();
    let err = store.mark("s", 3, None).unwrap_err();
    assert_eq!(err.code(), "STORE_IO", "{err}");
    assert!(err.to_string().contains("checkpoint.json.journal"), "{err}");
    assert_eq!(store.latest_in_memory("s").unwrap().unwrap().unwrap().id, 2);
    fs::remove_dir(&store.journal_path).unwrap();
    fs::write(&store.journal_path, &before).unwrap();
    assert_eq!(store.mark("s", 3, None).unwrap().id, 3);
}

#[test]
fn the_first_write_of_a_process_sweeps_a_dead_writers_temp_file_even_when_it_appends() {
    let (_dir, store) = temp_store();
    store.mark("s", 1, None).unwrap();
    // What a writer killed between creating its temp file and renaming it leaves behind.
    let leftover = store.path().with_file_name(".checkpoint.json.4242.0.tmp");
    fs::write(&leftover, b"half a store").unwrap();
    let next = Store::new(store.path(), Limits::default()); // another process
    next.mark("s", 2, None).unwrap(); // an append: no temp file of its own
    assert!(!leftover.exists(), "the leftover temp file is still there");
}

#[test]
fn a_deleted_journal_loses_only_its_own_changes_and_the_store_goes_on() {
    // Someone deletes the journal by hand: the store file's marks stay, ids never go back
    // (nextId is in the file, and memory keeps the highest), and the next write starts over.
    let (_dir, store) = temp_store();
    store.mark("s", 1, None).unwrap(); // in the file
    store.mark("s", 2, None).unwrap(); // in the journal
    fs::remove_file(&store.journal_path).unwrap();
    let other = Store::new(store.path(), Limits::default());
    assert_eq!(other.latest("s").unwrap().unwrap().id, 1);
    assert_eq!(
        store.mark("t", 1, None).unwrap().id,
        3,
        "this process remembers id 2 was used"
    );
    assert_eq!(
        Store::new(store.path(), Limits::default())
            .latest("t")
            .unwrap()
            .unwrap()
            .id,
        3
    );
}

#[test]
fn a_queued_stamp_reads_folded_at_once_and_lands_before_anything_queued_after_it() {
    let (_dir, store) = temp_store();
    let store = Arc::new(store);
    let first = store.mark("s", 1, None).unwrap();
    let queued = store
        .queue_stamp("s", first.id)
        .unwrap()
        .expect("the latest active mark");
    // Every read of this process sees the fold at once, before anything is written.
    assert_eq!(store.has_active_in_memory("s"), Some(Ok(false)));
    assert!(store
        .latest_in_memory("s")
        .unwrap()
        .unwrap()
        .unwrap()
        .folded_at
        .is_some());
    assert!(store.list(Some("s")).unwrap()[0].folded_at.is_some());
    assert!(
        Store::new(store.path(), Limits::default())
            .latest("s")
            .unwrap()
            .unwrap()
            .folded_at
            .is_none(),
        "nothing is on disk yet"
    );
    // A mark taken after the queue, on another thread, is written after the stamp.
    let marking = {
        let store = store.clone();
        std::thread::spawn(move || store.mark("s", 9, None).unwrap())
    };
    let second = marking.join().unwrap();
    assert_eq!(
        store.finish_stamp(queued).unwrap(),
        Stamp::Stamped,
        "written first, in the mark's batch or before it"
    );
    let reread = Store::new(store.path(), Limits::default());
    let marks = reread.list(Some("s")).unwrap();
    assert_eq!(
        marks.iter().map(|m| (m.id, m.folded_at.is_some())).collect::<Vec<_>>(),
        [(second.id, false), (first.id, true)]
    );
    assert!(reread.has_active("s").unwrap(), "the new mark is the active one");
}

#[test]
fn a_queued_stamp_is_written_by_its_own_finish_when_no_one_else_writes() {
    let (_dir, store) = temp_store();
    let mark = store.mark("s", 1, None).unwrap();
    let queued = store.queue_stamp("s", mark.id).unwrap().unwrap();
    assert_eq!(store.finish_stamp(queued).unwrap(), Stamp::Stamped);
    assert!(!Store::new(store.path(), Limits::default()).has_active("s").unwrap());
    // Nothing left to queue: folded already, unknown, or not loaded.
    assert!(store.queue_stamp("s", mark.id).unwrap().is_none());
    assert!(store.queue_stamp("s", 999).unwrap().is_none());
    assert!(Store::new(store.path(), Limits::default())
        .queue_stamp("s", mark.id)
        .unwrap()
        .is_none());
    assert_eq!(store.queue_stamp("", 1).unwrap_err().code(), "INVALID_ARGUMENT");
}

#[test]
fn a_queued_stamp_that_fails_reads_active_again_and_can_be_retried() {
    let (_dir, store) = temp_store();
    store.mark("s", 1, None).unwrap();
    let mark = store.mark("s", 2, None).unwrap();
    let before = journal_of(&store);
    fs::remove_file(&store.journal_path).unwrap();
    fs::create_dir(&store.journal_path).unwrap();
    let queued = store.queue_stamp("s", mark.id).unwrap().unwrap();
    assert_eq!(store.has_active_in_memory("s"), Some(Ok(false)));
    let err = store.finish_stamp(queued).unwrap_err();
    assert_eq!(err.code(), "STORE_IO", "{err}");
    assert_eq!(
        store.has_active_in_memory("s"),
        Some(Ok(true)),
        "the failed stamp is not pretended"
    );
    fs::remove_dir(&store.journal_path).unwrap();
    fs::write(&store.journal_path, &before).unwrap();
    assert_eq!(store.stamp("s", mark.id).unwrap(), Stamp::Stamped);
}

#[test]
fn close_waits_for_a_queued_stamp_and_then_nothing_touches_the_files() {
    let (dir, store) = temp_store();
    let store = Arc::new(store);
    let mark = store.mark("s", 1, None).unwrap();
    let queued = store.queue_stamp("s", mark.id).unwrap().unwrap();
    let (closed_tx, closed) = std::sync::mpsc::channel();
    let closer = {
        let store = store.clone();
        std::thread::spawn(move || {
            store.close();
            closed_tx.send(()).unwrap();
        })
    };
    // While the stamp is queued, close does not return (it cannot return early: the stamp's
    // Work is held until finish_stamp ends).
    assert_eq!(
        closed.recv_timeout(std::time::Duration::from_millis(100)),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout)
    );
    assert_eq!(store.finish_stamp(queued).unwrap(), Stamp::Stamped);
    closed.recv().unwrap();
    closer.join().unwrap();
    // Closed: the folder can go, and nothing of this process brings a file back.
    fs::remove_dir_all(dir.path().join("storages")).unwrap();
    store.close();
    assert!(!dir.path().join("storages").exists());
    // A closed store stays usable.
    assert!(
        store.latest("s").unwrap().unwrap().folded_at.is_some(),
        "memory keeps the stamp"
    );
}

#[test]
fn a_store_used_and_closed_leaves_only_its_documented_files() {
    let (dir, store) = temp_store();
    let store = Arc::new(store);
    store.open().unwrap();
    let mark = store.mark("s", 1, Some("look")).unwrap();
    store.start_loading();
    let queued = store.queue_stamp("s", mark.id).unwrap().unwrap();
    store.finish_stamp(queued).unwrap();
    store.list(None).unwrap();
    store.find(mark.id).unwrap();
    store.compact().unwrap();
    store.close();
    let mut files: Vec<String> = fs::read_dir(dir.path().join("storages"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    // docs/store.md: the store file, its journal and its lock file, nothing else.
    assert!(
        files
            .iter()
            .all(|f| ["checkpoint.json", "checkpoint.json.journal", "checkpoint.json.lock"].contains(&f.as_str())),
        "{files:?}"
    );
}

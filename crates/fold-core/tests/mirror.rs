//! The session mirror's read API on small hand-written sessions: what each planner reads (node
//! facts in surface order, pairing, prices, provenance, block ids, the history recall lists), and
//! how records out of step and bad loads are refused. The property test (`mirror_props.rs`)
//! holds the mirror to a from-scratch description on random sessions.

use fold_core::mirror::{self, Mirror, RecordBuilder, Source, NONE};
use fold_core::region;
use fold_core::surface::{BlockId, Kind};

/// Feeds one record.
fn push(m: &mut Mirror, b: RecordBuilder, sources: &[u32]) {
    let mut words = Vec::new();
    b.write(sources, &mut words);
    m.push(&words).unwrap();
}

fn node(seq: u32, kind: Kind, chars: u32, tokens: u32) -> RecordBuilder {
    RecordBuilder {
        chars,
        tokens: Some(tokens),
        ..RecordBuilder::append(seq, kind)
    }
}

fn assistant(seq: u32, calls: u32, chars: u32) -> RecordBuilder {
    RecordBuilder {
        link: calls,
        ..node(seq, Kind::Assistant, chars, chars / 4 + 4)
    }
}

fn result(seq: u32, opener: u32, chars: u32) -> RecordBuilder {
    RecordBuilder {
        link: opener + 1,
        ..node(seq, Kind::ToolResult, chars, chars / 4 + 4)
    }
}

fn replace(seq: u32, start: u32, end: u32, source: Source) -> RecordBuilder {
    RecordBuilder {
        op: Some(Some((start, end))),
        source,
        lowest_source: Some(start),
        ..node(seq, Kind::User, 100, 29)
    }
}

/// 0 user, 1 log, 2 assistant(2 calls), 3 result, 4 log, 5 result, 6 assistant(1 call), 7 log.
fn session() -> Mirror {
    let mut m = Mirror::new();
    push(
        &mut m,
        RecordBuilder {
            source: Source::User,
            ..node(0, Kind::User, 40, 14)
        },
        &[],
    );
    push(&mut m, RecordBuilder::log(1, 0), &[]);
    push(&mut m, assistant(2, 2, 80), &[]);
    push(&mut m, result(3, 2, 400), &[]);
    push(&mut m, RecordBuilder::log(4, 0), &[]);
    push(&mut m, result(5, 2, 800), &[]);
    push(&mut m, assistant(6, 1, 20), &[]);
    push(&mut m, RecordBuilder::log(7, 1), &[]);
    m
}

#[test]
fn nodes_are_read_in_surface_order_with_their_facts_and_pairing() {
    let m = session();
    assert_eq!((m.event_count(), m.generation(), m.len()), (8, 0, 5));
    let seqs: Vec<u32> = m.nodes(0..m.len()).map(|n| n.seq).collect();
    assert_eq!(seqs, [0, 2, 3, 5, 6]);
    let first = m.node(0);
    assert_eq!(
        (first.kind, first.source, first.chars, first.tokens),
        (Kind::User, Source::User, 40, Some(14))
    );
    assert_eq!(m.node(3).opener, Some(2));
    assert_eq!(m.opener_position(3), Some(1));
    assert_eq!(m.position(5), Some(3));
    assert_eq!(m.position(4), None, "log-only events are not on the surface");
    // Pairing of the whole surface, and of a window whose results' call is outside it.
    let all = m.pairing(0).unwrap();
    assert_eq!((all.answered[1], all.last_answer[1]), (2, Some(3)));
    assert_eq!(all.open_calls(4, m.node(4).opens), 1, "the last call has no result yet");
    let tail = m.pairing(2).unwrap();
    assert_eq!(tail.opener_pos[0], None, "the opener stands before the window");
    // Prices, and the open compaction bracket (event 7).
    assert_eq!(m.surface_chars(), 40 + 80 + 400 + 800 + 20);
    assert_eq!(m.surface_tokens(), Some(14 + 24 + 104 + 204 + 9));
    assert_eq!(m.tokens_of(&[3, 5]), Some(104 + 204));
    assert_eq!(m.open_compaction(), Some(Some(7)));
    assert!(m.heap_bytes() > 0);
}

#[test]
fn a_replace_splices_the_surface_and_keeps_what_it_shadowed() {
    let mut m = session();
    push(
        &mut m,
        replace(8, 2, 5, Source::RewindReport { mark_id: 7 }),
        &[2, 3, 5],
    );
    assert_eq!(m.nodes(0..m.len()).map(|n| n.seq).collect::<Vec<_>>(), [0, 8, 6]);
    assert_eq!(
        (m.generation(), m.node(1).origin),
        (1, 2),
        "a replacement stands for its first node"
    );
    let report = m.report(8).unwrap();
    assert_eq!(
        (
            report.mark_id,
            report.folded_nodes,
            report.start,
            report.end,
            report.folded_chars,
            report.folded_tokens
        ),
        (7, 3, 2, 5, 1280, Some(24 + 104 + 204))
    );
    let shadowed = m.described(3).unwrap();
    assert_eq!(
        (shadowed.pos, shadowed.chars),
        (None, 400),
        "shadowed nodes keep their facts"
    );
    assert_eq!(m.surface_chars(), 40 + 100 + 20);
    // Recall's history: the report, citing what it folded.
    let history = m.replacements().unwrap();
    assert_eq!((history.len(), m.cited(&history[0])), (1, &[2u32, 3, 5][..]));
    assert_eq!(m.originals(8, |_| true), Some(vec![2, 3, 5]));
    // Rewind finds the report by its mark (a fold of mark 7 from anchor 2 repairs it instead of
    // folding it again); the window the region rules read runs from the report to the current
    // step's node.
    assert_eq!(m.mark_report(7, 2).map(|r| (r.seq, r.pos)), Some((8, Some(1))));
    let surface = m.rewind_surface(2, None).unwrap();
    assert_eq!(surface.nodes.len(), 2);
    assert_eq!(region::select(&surface, 2).unwrap().seqs, [8]);
}

#[test]
fn origins_that_stop_rising_are_still_found() {
    let mut m = session();
    // A replacement of the last node citing event 1: its origin (1) is below the nodes before it.
    push(
        &mut m,
        RecordBuilder {
            lowest_source: Some(1),
            ..replace(8, 6, 6, Source::CompactionSummary)
        },
        &[6],
    );
    assert_eq!(
        m.nodes(0..m.len()).map(|n| n.origin).collect::<Vec<_>>(),
        [0, 2, 3, 5, 1]
    );
    assert_eq!(m.first_at_or_after(1), 1);
    assert_eq!(m.first_at_or_after(6), 5, "no node stands for events from 6 on");
}

#[test]
fn block_ids_are_interned_and_a_compaction_covers_the_ids_of_what_it_replaced() {
    let mut m = Mirror::new();
    let ab = m.intern(&[BlockId::from("a"), BlockId::from("b")]);
    assert_eq!(
        m.intern(&[BlockId::from("a"), BlockId::from("b")]),
        ab,
        "one set, interned once"
    );
    assert_eq!(m.intern(&[]), 0);
    push(
        &mut m,
        RecordBuilder {
            ids: ab,
            ..assistant(0, 1, 10)
        },
        &[],
    );
    push(&mut m, result(1, 0, 10), &[]);
    push(&mut m, replace(2, 0, 1, Source::CompactionSummary), &[0, 1]);
    let covered = m.node(0).ids.expect("the ids it covered");
    let spelled: Vec<String> = m
        .set(covered)
        .iter()
        .map(|&i| String::from_utf16_lossy(m.id(i)))
        .collect();
    assert_eq!(spelled, ["a", "b"]);
    let surface = m.block_surface().unwrap();
    assert_eq!(surface.nodes.len(), 1);
}

#[test]
fn a_plugin_note_is_injected_but_not_user_authored() {
    let mut m = Mirror::new();
    for (seq, source) in [(0, Source::User), (1, Source::Injected), (2, Source::Note)] {
        push(
            &mut m,
            RecordBuilder {
                source,
                ..node(seq, Kind::User, 10, 4)
            },
            &[],
        );
    }
    assert_eq!(m.node(2).source, Source::Note);
    let surface = m.block_surface().unwrap();
    let authored: Vec<bool> = surface.nodes.iter().map(|n| n.user_authored).collect();
    assert_eq!(
        authored,
        [true, true, false],
        "a note asks nothing: it makes no summary stale"
    );
}

#[test]
fn a_mirror_loaded_from_an_empty_session_knows_its_log_as_events_arrive() {
    // A host describes a session when it is created (no events yet), then feeds every event:
    // its log index (the open compaction, the replacements) is known without reading the log.
    let mut m = Mirror::new();
    m.load(&mirror::load_header(0, 0, 0, 0)).unwrap();
    assert_eq!(m.open_compaction(), Some(None));
    push(&mut m, node(0, Kind::User, 10, 4), &[]);
    push(&mut m, RecordBuilder::log(1, 1), &[]);
    assert_eq!(m.open_compaction(), Some(Some(1)), "a compaction/start holds the lock");
    push(&mut m, replace(2, 0, 0, Source::CompactionSummary), &[0]);
    push(&mut m, RecordBuilder::log(3, 2), &[]);
    assert_eq!(m.open_compaction(), Some(None));
    assert_eq!(m.replacements().map(<[_]>::len), Some(1));
    // A load of a session that has events does not know its log until told.
    let mut late = Mirror::new();
    late.load(&mirror::load_header(4, 1, 0, 0)).unwrap();
    assert_eq!(late.open_compaction(), None);
}

#[test]
fn a_record_out_of_step_breaks_the_mirror_until_it_is_rebuilt() {
    let mut m = session();
    for (bad, why) in [
        (
            RecordBuilder::append(9, Kind::User),
            "event 9 arrived when event 8 was next",
        ),
        (replace(8, 3, 2, Source::CompactionSummary), "stands after end"),
        (replace(8, 4, 5, Source::CompactionSummary), "not both on the surface"),
        (result(8, 8, 1), "answers a call of later event"),
    ] {
        let mut copy = m.clone();
        let mut words = Vec::new();
        bad.write(&[], &mut words);
        let err = copy.push(&words).unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT");
        assert!(err.to_string().contains(why), "{err}");
        assert!(copy.broken().is_some() && copy.rewind_surface(0, None).is_err() && copy.pairing(0).is_err());
    }
    // Truncated and unknown words.
    assert!(m.clone().push(&[8]).is_err());
    assert!(m.clone().push(&[8, 1 << 20]).is_err());
    // A rebuild from a surface: two nodes, one of them citing an event described apart.
    let mut words = mirror::load_header(8, 0, 2, 1).to_vec();
    RecordBuilder {
        origin: Some(3),
        ..result(3, 2, 400)
    }
    .write(&[], &mut words);
    RecordBuilder {
        origin: Some(0),
        ..node(0, Kind::User, 40, 14)
    }
    .write(&[], &mut words);
    RecordBuilder {
        origin: Some(3),
        ..replace(6, 3, 3, Source::RewindReport { mark_id: 1 })
    }
    .write(&[3], &mut words);
    m.load(&words).unwrap();
    assert_eq!((m.len(), m.report(6).unwrap().folded_chars), (2, 400));
    assert_eq!(m.open_compaction(), None, "a loaded mirror's log index is unknown");
    assert_eq!(m.block_surface().unwrap_err().code(), "INVALID_ARGUMENT");
    m.load_log(NONE, &[]).unwrap();
    assert_eq!(m.open_compaction(), Some(None));
    // Bad loads: wrong format, a count that does not match, an event past the log.
    for bad in [vec![2, 0, 0, 0, 0], mirror::load_header(8, 0, 3, 0).to_vec(), {
        let mut w = mirror::load_header(1, 0, 1, 0).to_vec();
        node(5, Kind::User, 1, 1).write(&[], &mut w);
        w
    }] {
        let mut copy = Mirror::new();
        assert_eq!(copy.load(&bad).unwrap_err().code(), "INVALID_ARGUMENT");
        assert!(copy.broken().is_some());
    }
}

/// A fold whose stamp was lost, then a compaction over it: 0 user, 1 log, [mark at 2] 2
/// assistant(1 call), 3 result, 4 the report of mark 1 (replaces 2..3), 5 a compaction's summary
/// (replaces 0..4), 6 the user's next request, 7 the assistant carrying a rewind call.
fn compacted_fold(m: &mut Mirror) {
    push(
        m,
        RecordBuilder {
            source: Source::User,
            ..node(0, Kind::User, 40, 14)
        },
        &[],
    );
    push(m, RecordBuilder::log(1, 0), &[]);
    push(m, assistant(2, 1, 80), &[]);
    push(m, result(3, 2, 400), &[]);
    push(m, replace(4, 2, 3, Source::RewindReport { mark_id: 1 }), &[2, 3]);
    push(
        m,
        RecordBuilder {
            lowest_source: Some(0),
            ..replace(5, 0, 4, Source::CompactionSummary)
        },
        &[0, 4],
    );
    push(
        m,
        RecordBuilder {
            source: Source::User,
            ..node(6, Kind::User, 60, 19)
        },
        &[],
    );
    push(m, assistant(7, 1, 20), &[]);
}

/// The same session rebuilt as a restarted host does: its surface (5, 6, 7), then its log index
/// (every replacement, and what the report off the surface cites).
fn compacted_fold_loaded(with_log: bool) -> Mirror {
    let mut fed = Mirror::new();
    compacted_fold(&mut fed);
    let mut words = mirror::load_header(8, 2, 3, 0).to_vec();
    RecordBuilder {
        lowest_source: Some(0),
        origin: Some(0),
        ..replace(5, 0, 4, Source::CompactionSummary)
    }
    .write(&[0, 4], &mut words);
    RecordBuilder {
        source: Source::User,
        origin: Some(6),
        ..node(6, Kind::User, 60, 19)
    }
    .write(&[], &mut words);
    RecordBuilder {
        origin: Some(7),
        ..assistant(7, 1, 20)
    }
    .write(&[], &mut words);
    let mut m = Mirror::new();
    m.load(&words).unwrap();
    if with_log {
        let mut log = Vec::new();
        assistant(2, 1, 80).write(&[], &mut log);
        result(3, 2, 400).write(&[], &mut log);
        replace(4, 2, 3, Source::RewindReport { mark_id: 1 }).write(&[2, 3], &mut log);
        RecordBuilder {
            lowest_source: Some(0),
            ..replace(5, 0, 4, Source::CompactionSummary)
        }
        .write(&[0, 4], &mut log);
        m.load_log(NONE, &log).unwrap();
        assert_eq!(m.canonical().unwrap(), fed.canonical().unwrap(), "loaded as fed");
    }
    m
}

#[test]
fn a_marks_report_is_found_in_the_log_after_a_compaction_replaced_it() {
    let mut fed = Mirror::new();
    compacted_fold(&mut fed);
    for m in [fed, compacted_fold_loaded(true)] {
        let report = m.mark_report(1, 2).expect("the report of mark 1");
        assert_eq!((report.seq, report.chars, report.pos), (4, 100, None));
        assert_eq!(
            (
                report.facts.folded_nodes,
                report.facts.start,
                report.facts.end,
                report.facts.folded_chars
            ),
            (2, 2, 3, 480)
        );
        assert_eq!(
            m.mark_report(1, 5),
            None,
            "a report older than the mark is not its fold"
        );
        assert_eq!(m.mark_report(2, 0), None);
    }
}

#[test]
fn a_rewind_of_a_mark_whose_report_was_compacted_repairs_it_and_folds_nothing() {
    use fold_core::fold::{Anchor, Rewind, RewindOptions, Step};
    let mut fed = Mirror::new();
    compacted_fold(&mut fed);
    for (i, m) in [fed, compacted_fold_loaded(true)].into_iter().enumerate() {
        let session = format!("compacted-fold-{i}");
        let mark = Anchor {
            id: 1,
            log_length: 2,
            folded: false,
        };
        let (mut rewind, step) = Rewind::begin(&session, Some(mark), RewindOptions::default()).unwrap();
        assert_eq!(step, Step::Snapshot);
        let Step::Stamp { mark_id, result } = rewind.read(&m, Some(7)).unwrap() else {
            panic!("the fold in the log is repaired, not folded again")
        };
        assert_eq!(mark_id, 1);
        assert_eq!(
            (
                result.folded_nodes,
                result.start,
                result.end,
                result.folded_chars,
                result.report_chars
            ),
            (2, 2, 3, 480, 100)
        );
        assert!(rewind.committed_already());
    }
    // Without its log index a loaded mirror cannot see the report: the fold refuses to guess.
    let loaded = compacted_fold_loaded(false);
    let (mut rewind, _) = Rewind::begin(
        "compacted-fold-unknown-log",
        Some(Anchor {
            id: 1,
            log_length: 2,
            folded: false,
        }),
        RewindOptions::default(),
    )
    .unwrap();
    let e = rewind.read(&loaded, Some(7)).unwrap_err();
    assert_eq!(e.code(), "HOST_FAILED", "{e}");
    assert!(e.to_string().contains("log index"), "{e}");
}

#[test]
fn a_bad_log_index_is_refused_and_changes_nothing() {
    let mut m = compacted_fold_loaded(false);
    let before = m.canonical().unwrap();
    let words = |records: &[(RecordBuilder, &[u32])]| {
        let mut out = Vec::new();
        for (r, sources) in records {
            r.write(sources, &mut out);
        }
        out
    };
    let report = replace(4, 2, 3, Source::RewindReport { mark_id: 1 });
    for (why, bad) in [
        (
            "out of seq order",
            words(&[(report, &[2, 3]), (assistant(2, 1, 80), &[])]),
        ),
        ("past the log", words(&[(assistant(9, 1, 80), &[])])),
        ("a log-only event", words(&[(RecordBuilder::log(1, 0), &[])])),
        ("a truncated record", words(&[(report, &[2, 3])])[..5].to_vec()),
    ] {
        let e = m.load_log(NONE, &bad).unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT", "{why}: {e}");
        assert_eq!(m.canonical().unwrap(), before, "{why}: the mirror changed");
        assert_eq!(m.mark_report(1, 2), None, "{why}");
    }
}

#[test]
fn a_load_claiming_billions_of_events_costs_memory_for_what_it_describes_only() {
    // A host bug (or hostile words): three nodes of a log said to hold 2^32 - 2 events. The
    // planners answer on it, and the mirror holds a few slots, not one per claimed event.
    let (base, events) = (4_000_000_000u32, u32::MAX - 1);
    let nodes = [
        RecordBuilder {
            source: Source::User,
            origin: Some(base),
            ..node(base, Kind::User, 5, 2)
        },
        RecordBuilder {
            origin: Some(base + 1),
            ..assistant(base + 1, 1, 50)
        },
        RecordBuilder {
            origin: Some(base + 2),
            ..result(base + 2, base + 1, 500)
        },
    ];
    let mut words = mirror::load_header(events, 0, 3, 0).to_vec();
    for n in nodes {
        n.write(&[], &mut words);
    }
    let mut m = Mirror::new();
    m.load(&words).unwrap();
    assert!(m.heap_bytes() < 64 << 10, "{} bytes", m.heap_bytes());
    let region = region::select(
        &m.rewind_surface(u64::from(base) + 1, None).unwrap(),
        u64::from(base) + 1,
    )
    .unwrap();
    assert_eq!(region.seqs, [base + 1, base + 2]);
    // Fed on from there, it stays small too.
    m.load_log(NONE, &[]).unwrap();
    let mut next = Vec::new();
    node(events, Kind::User, 3, 1).write(&[], &mut next);
    m.push(&next).unwrap();
    assert_eq!(m.position(events), Some(3));
    assert!(m.heap_bytes() < 64 << 10, "{} bytes", m.heap_bytes());
}

#[test]
fn a_record_naming_an_id_set_never_interned_is_refused() {
    // A host bug: an id set word past the sets the mirror interned. Read as a set it would index
    // past the table (a panic in the addon); it is a record out of step instead.
    for (ids, closed) in [(3, 0), (0, 2)] {
        let mut m = session();
        let ab = m.intern(&[BlockId::from("A"), BlockId::from("B")]);
        assert_eq!(ab, 1);
        let mut words = Vec::new();
        RecordBuilder {
            ids,
            closed,
            ..assistant(8, 0, 10)
        }
        .write(&[], &mut words);
        let err = m.push(&words).unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
        assert!(err.to_string().contains("id set"), "{err}");
        assert!(m.canonical().is_err(), "refused until rebuilt");
        // In a load too.
        let mut load = mirror::load_header(9, 0, 1, 0).to_vec();
        RecordBuilder {
            ids,
            closed,
            origin: Some(8),
            ..assistant(8, 0, 10)
        }
        .write(&[], &mut load);
        let mut fresh = Mirror::new();
        assert_eq!(fresh.load(&load).unwrap_err().code(), "INVALID_ARGUMENT");
    }
}

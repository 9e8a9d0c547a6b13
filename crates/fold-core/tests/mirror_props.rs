//! The session mirror against a from-scratch description, after every step of random sessions.
//!
//! A session model appends random events — log-only events (compaction brackets, seed ends),
//! user messages (the user's, injected, rarely protected), assistant messages with parallel calls
//! (block calls naming ids), results in any order (some never, some for unknown calls), and
//! replaces: compactions, rewind reports, block summaries over any run of nodes (sometimes citing
//! a seq below the run, so origins stop rising), a tool result rewritten in place — and, now and
//! then, "restores" the session: the mirror is rebuilt from the session as it is (from its
//! surface when no block ids are tracked, else by replaying every event) and the session goes on
//! with a `session/end-seed`, as a restored or forked DSH session does.
//!
//! After every step the incrementally fed mirror must answer every planner exactly as the
//! snapshot formats do when built from scratch (written here from the formats' documentation,
//! not from the mirror): rewind's region and the reports a fold could repair, for every anchor,
//! with and without a named current step; block mode's plan for every id (and an unknown one) at
//! several request seqs; recall's replacements and originals. A mirror rebuilt from the surface
//! right now must describe the same surface (ids aside), and a mirror fed a record that does not
//! follow from its state must refuse it and stay refused until rebuilt.
//!
//! `PROPTEST_CASES` sets the number of cases (default 256).

use std::collections::HashMap;

use fold_core::blocks::{self, Plan};
use fold_core::mirror::{self, Canonical, Mirror, RecordBuilder, Source, NONE};
use fold_core::region;
use fold_core::surface::{BlockId, BlockNode, BlockSurface, Kind, Node, Provenance, Surface};
use fold_core::wire::Report;
use proptest::prelude::*;

const ALPHABET: [&str; 4] = ["A", "B", "C", "D"];

#[derive(Debug, Clone)]
enum Ev {
    Log(u32),
    User {
        source: Source,
        protected: bool,
    },
    Assistant {
        /// (call id, block ids; None: another tool)
        calls: Vec<(u32, Option<Vec<u8>>)>,
    },
    Result {
        call: u32,
    },
    Replace {
        kind: Kind,
        start: u32,
        end: u32,
        /// Every cited seq, in order (message events and others).
        cited: Vec<u32>,
        source: Source,
        carried: Vec<u8>,
        closed: Vec<u8>,
        /// A rewritten result's call.
        call: Option<u32>,
    },
}

#[derive(Debug, Clone)]
struct Event {
    ev: Ev,
    chars: u32,
    tokens: Option<u32>,
}

#[derive(Debug, Default, Clone)]
struct Model {
    events: Vec<Event>,
    surface: Vec<u32>,
    generation: u32,
    /// call id → the assistant event that opened it.
    calls: HashMap<u32, u32>,
    answered: HashMap<u32, u32>,
    next_call: u32,
    next_mark: u64,
}

fn ids(alphabet: &[u8]) -> Vec<BlockId> {
    alphabet.iter().map(|&i| BlockId::from(ALPHABET[i as usize])).collect()
}

impl Model {
    fn is_message(&self, seq: u32) -> bool {
        !matches!(self.events[seq as usize].ev, Ev::Log(_))
    }

    fn kind(&self, seq: u32) -> Kind {
        match &self.events[seq as usize].ev {
            Ev::Log(_) => Kind::Other,
            Ev::User { .. } => Kind::User,
            Ev::Assistant { .. } => Kind::Assistant,
            Ev::Result { .. } => Kind::ToolResult,
            Ev::Replace { kind, .. } => *kind,
        }
    }

    /// The origin, by the rule: own seq, or the first replaced node's origin or a lower cited seq.
    fn origin(&self, seq: u32) -> u32 {
        match &self.events[seq as usize].ev {
            Ev::Replace { start, cited, .. } => cited.iter().copied().chain([seq, self.origin(*start)]).min().unwrap(),
            _ => seq,
        }
    }

    /// Result link: 1 + the seq of the assistant that opened its call, when one did (earlier).
    fn link(&self, seq: u32) -> u32 {
        match &self.events[seq as usize].ev {
            Ev::Assistant { calls } => calls.len() as u32,
            Ev::Result { call } | Ev::Replace { call: Some(call), .. } => {
                self.calls.get(call).filter(|o| **o < seq).map_or(0, |o| o + 1)
            }
            _ => 0,
        }
    }

    fn source(&self, seq: u32) -> Source {
        match &self.events[seq as usize].ev {
            Ev::User { source, .. } | Ev::Replace { source, .. } => *source,
            _ => Source::Appended,
        }
    }

    fn message_sources(&self, cited: &[u32]) -> Vec<u32> {
        cited.iter().copied().filter(|s| self.is_message(*s)).collect()
    }

    /// The record the plugin writes for event `seq` (`load`: with its origin).
    fn record(&self, seq: u32, load: bool, interner: &mut dyn FnMut(&[u8]) -> u32, out: &mut Vec<u32>) {
        let e = &self.events[seq as usize];
        let mut b = RecordBuilder::append(seq, self.kind(seq));
        b.chars = e.chars;
        b.tokens = e.tokens;
        b.link = self.link(seq);
        b.source = self.source(seq);
        if load {
            b.origin = Some(self.origin(seq));
        }
        let mut sources = Vec::new();
        match &e.ev {
            Ev::Log(class) => {
                RecordBuilder::log(seq, *class).write(&[], out);
                return;
            }
            Ev::User { protected, .. } => b.protected = *protected,
            Ev::Assistant { calls } => {
                let all: Vec<u8> = calls.iter().filter_map(|(_, ids)| ids.clone()).flatten().collect();
                b.ids = interner(&all);
            }
            Ev::Result { .. } => {}
            Ev::Replace {
                start,
                end,
                cited,
                carried,
                closed,
                source,
                ..
            } => {
                b.op = Some(Some((*start, *end)));
                b.lowest_source = cited.iter().copied().min();
                sources = self.message_sources(cited);
                if *source == Source::BlockSummary {
                    b.ids = interner(carried);
                    b.closed = interner(closed);
                }
            }
        }
        b.write(&sources, out);
    }

    fn push(&mut self, ev: Ev, chars: u32, tokens: Option<u32>) -> u32 {
        let seq = self.events.len() as u32;
        match &ev {
            Ev::Log(_) => {}
            Ev::User { .. } | Ev::Assistant { .. } | Ev::Result { .. } => self.surface.push(seq),
            Ev::Replace { start, end, .. } => {
                let s = self.surface.iter().position(|x| x == start).unwrap();
                let e = self.surface.iter().position(|x| x == end).unwrap();
                self.surface.splice(s..=e, [seq]);
                self.generation += 1;
            }
        }
        if let Ev::Assistant { calls } = &ev {
            for (c, _) in calls {
                self.calls.insert(*c, seq);
            }
        }
        if let Ev::Result { call } = &ev {
            self.answered.insert(*call, seq);
        }
        self.events.push(Event { ev, chars, tokens });
        seq
    }

    // ---- the from-scratch descriptions (the snapshot formats) --------------------------------

    /// Version 1 over the whole surface.
    fn v1(&self, current: Option<u32>) -> Vec<u32> {
        let nodes: Vec<Node> = self
            .surface
            .iter()
            .map(|&seq| {
                let kind = self.kind(seq);
                let link = self.link(seq);
                Node {
                    seq,
                    origin: self.origin(seq),
                    kind,
                    chars: self.events[seq as usize].chars,
                    opens: if kind == Kind::Assistant { link } else { 0 },
                    opener: (kind == Kind::ToolResult && link > 0).then(|| link - 1),
                }
            })
            .collect();
        let reports: Vec<Report> = self
            .surface
            .iter()
            .filter_map(|&seq| {
                let Ev::Replace {
                    cited,
                    source: Source::RewindReport { mark_id },
                    ..
                } = &self.events[seq as usize].ev
                else {
                    return None;
                };
                let sources = self.message_sources(cited);
                Some(Report {
                    seq,
                    mark_id: *mark_id,
                    folded_nodes: sources.len() as u32,
                    start: *sources.first()?,
                    end: *sources.last()?,
                    folded_chars: sources.iter().map(|s| self.events[*s as usize].chars).sum(),
                })
            })
            .collect();
        Surface::encode(self.events.len() as u32, current, &nodes, &reports)
    }

    /// Version 2, ids interned in surface-description order.
    fn v2(&self) -> Vec<u32> {
        let mut table: Vec<BlockId> = Vec::new();
        let mut sets: Vec<Vec<u32>> = Vec::new();
        let mut intern = |list: &[BlockId]| -> Option<u32> {
            if list.is_empty() {
                return None;
            }
            let members: Vec<u32> = list
                .iter()
                .map(|id| match table.iter().position(|t| t == id) {
                    Some(i) => i as u32,
                    None => {
                        table.push(id.clone());
                        table.len() as u32 - 1
                    }
                })
                .collect();
            Some(match sets.iter().position(|s| *s == members) {
                Some(k) => k as u32,
                None => {
                    sets.push(members);
                    sets.len() as u32 - 1
                }
            })
        };
        let mut nodes = Vec::new();
        for &seq in &self.surface {
            let kind = self.kind(seq);
            let link = self.link(seq);
            let source = self.source(seq);
            let (provenance, list) = match &self.events[seq as usize].ev {
                Ev::Assistant { calls } => (
                    Provenance::Appended,
                    ids(&calls
                        .iter()
                        .filter_map(|(_, i)| i.clone())
                        .flatten()
                        .collect::<Vec<_>>()),
                ),
                Ev::Replace {
                    source: Source::BlockSummary,
                    carried,
                    ..
                } => (Provenance::BlockSummary, ids(carried)),
                Ev::Replace { .. } => (Provenance::Replacement, self.covered(seq)),
                _ => (Provenance::Appended, vec![]),
            };
            nodes.push(BlockNode {
                seq,
                kind,
                opens: if kind == Kind::Assistant { link } else { 0 },
                opener: (kind == Kind::ToolResult && link > 0).then(|| link - 1),
                protected: matches!(self.events[seq as usize].ev, Ev::User { protected: true, .. }),
                // A plugin's note asks nothing: only the user's and injected messages count.
                user_authored: matches!(source, Source::User | Source::Injected),
                provenance,
                set: intern(&list),
            });
        }
        BlockSurface::encode(
            self.events.len() as u32,
            self.open_compaction().is_some(),
            &table,
            &nodes,
            &sets,
        )
    }

    /// The ids an event stands for in block terms: an assistant's, a summary's carried ids,
    /// another replacement's covered ids (the union over what it cites, in order).
    fn event_ids(&self, seq: u32) -> Vec<BlockId> {
        match &self.events[seq as usize].ev {
            Ev::Assistant { calls } => ids(&calls
                .iter()
                .filter_map(|(_, i)| i.clone())
                .flatten()
                .collect::<Vec<_>>()),
            Ev::Replace {
                source: Source::BlockSummary,
                carried,
                ..
            } => ids(carried),
            Ev::Replace { .. } => self.covered(seq),
            _ => vec![],
        }
    }

    fn covered(&self, seq: u32) -> Vec<BlockId> {
        let Ev::Replace { cited, .. } = &self.events[seq as usize].ev else {
            return vec![];
        };
        let mut out: Vec<BlockId> = Vec::new();
        for &s in cited {
            for id in self.event_ids(s) {
                if !out.contains(&id) {
                    out.push(id);
                }
            }
        }
        out
    }

    fn open_compaction(&self) -> Option<u32> {
        let mut open = None;
        for (seq, e) in self.events.iter().enumerate() {
            match e.ev {
                Ev::Log(1) => open = Some(seq as u32),
                Ev::Log(2 | 3) => open = None,
                _ => {}
            }
        }
        open
    }

    /// The load words of the surface now (no ids: a load describes no block ids), and the log.
    fn load(&self, m: &mut Mirror) {
        let mut others: Vec<u32> = Vec::new();
        for &seq in &self.surface {
            if let Ev::Replace {
                source: Source::RewindReport { .. },
                cited,
                ..
            } = &self.events[seq as usize].ev
            {
                others.extend(
                    self.message_sources(cited)
                        .into_iter()
                        .filter(|s| !self.surface.contains(s)),
                );
            }
        }
        others.sort_unstable();
        others.dedup();
        let mut words = mirror::load_header(
            self.events.len() as u32,
            self.generation,
            self.surface.len() as u32,
            others.len() as u32,
        )
        .to_vec();
        let mut none = |_: &[u8]| 0;
        for &seq in others.iter().chain(&self.surface) {
            self.record(seq, true, &mut none, &mut words);
        }
        m.load(&words).expect("a load of the model's surface");
        // The log index: every replacement, and what the rewind reports off the surface cite
        // (so their accounts are known), in seq order.
        let mut cited_off_surface: Vec<u32> = Vec::new();
        for seq in 0..self.events.len() as u32 {
            if let Ev::Replace {
                source: Source::RewindReport { .. },
                cited,
                ..
            } = &self.events[seq as usize].ev
            {
                if !self.surface.contains(&seq) {
                    cited_off_surface.extend(
                        self.message_sources(cited)
                            .into_iter()
                            .filter(|s| !self.surface.contains(s)),
                    );
                }
            }
        }
        let mut log = Vec::new();
        for seq in 0..self.events.len() as u32 {
            if matches!(self.events[seq as usize].ev, Ev::Replace { .. }) || cited_off_surface.contains(&seq) {
                self.record(seq, false, &mut none, &mut log);
            }
        }
        m.load_log(self.open_compaction().unwrap_or(NONE), &log)
            .expect("the model's log index");
    }
}

fn interner(m: &mut Mirror) -> impl FnMut(&[u8]) -> u32 + '_ {
    move |list: &[u8]| m.intern(&ids(list))
}

/// One random step, interpreted against the model's state.
#[derive(Debug, Clone)]
struct Step {
    choice: u8,
    a: u32,
    b: u32,
    c: u32,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (0u8..100, any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(choice, a, b, c)| Step { choice, a, b, c }),
        1..70,
    )
}

struct Run {
    model: Model,
    mirror: Mirror,
    blocks: bool,
    meter: bool,
}

impl Run {
    fn price(&self, x: u32) -> (u32, Option<u32>) {
        let chars = x % 5000;
        (chars, self.meter.then_some(chars / 4 + 4))
    }

    fn feed(&mut self, ev: Ev, x: u32) {
        let (chars, tokens) = match ev {
            Ev::Log(_) => (0, None),
            _ => self.price(x),
        };
        let seq = self.model.push(ev, chars, tokens);
        let mut words = Vec::new();
        {
            let mut intern = interner(&mut self.mirror);
            self.model.record(seq, false, &mut intern, &mut words);
        }
        self.mirror
            .push(&words)
            .unwrap_or_else(|e| panic!("event {seq} pushed: {e}"));
    }

    fn rebuild(&mut self) {
        let mut fresh = Mirror::new();
        if self.blocks {
            for seq in 0..self.model.events.len() as u32 {
                let mut words = Vec::new();
                {
                    let mut intern = interner(&mut fresh);
                    self.model.record(seq, false, &mut intern, &mut words);
                }
                fresh.push(&words).unwrap();
            }
        } else {
            self.model.load(&mut fresh);
        }
        self.mirror = fresh;
    }

    fn step(&mut self, s: &Step) {
        let m = &self.model;
        let n = m.surface.len() as u32;
        match s.choice {
            0..=9 => self.feed(Ev::Log(s.a % 4), 0),
            10..=24 => {
                let source = if s.a.is_multiple_of(3) {
                    Source::Injected
                } else if s.a % 7 == 1 {
                    Source::Note
                } else {
                    Source::User
                };
                let protected = s.b.is_multiple_of(23);
                self.feed(Ev::User { source, protected }, s.c);
            }
            25..=49 => {
                let k = s.a % 4;
                let mut calls = Vec::new();
                for i in 0..k {
                    self.model.next_call += 1;
                    let block = self.blocks && !(s.b >> i).is_multiple_of(3);
                    let names = (0..1 + (s.b >> (8 + i)) % 2)
                        .map(|j| ((s.b >> (12 + 2 * (i + j))) % 4) as u8)
                        .collect();
                    calls.push((self.model.next_call, block.then_some(names)));
                }
                self.feed(Ev::Assistant { calls }, s.c);
            }
            50..=69 => {
                let open: Vec<u32> = (1..=m.next_call).filter(|c| !m.answered.contains_key(c)).collect();
                let call = if open.is_empty() || s.b.is_multiple_of(17) {
                    1_000_000 + s.a % 1_000_000
                } else {
                    open[s.a as usize % open.len()]
                };
                self.feed(Ev::Result { call }, s.c);
            }
            70..=89 if n > 0 => {
                let (i, j) = (s.a % n, s.b % n);
                let (i, j) = (i.min(j), i.max(j));
                let (start, end) = (m.surface[i as usize], m.surface[j as usize]);
                let mut cited: Vec<u32> = m.surface[i as usize..=j as usize].to_vec();
                let kind = s.c % 5;
                let source = match kind {
                    0 => Source::CompactionSummary,
                    1 | 2 => {
                        self.model.next_mark += 1;
                        Source::RewindReport {
                            mark_id: self.model.next_mark + if s.c.is_multiple_of(7) { 1 << 40 } else { 0 },
                        }
                    }
                    3 => Source::BlockSummary,
                    _ => Source::Rewrite,
                };
                if matches!(source, Source::CompactionSummary | Source::BlockSummary) {
                    // A compaction's bracket: start and summary events, cited first.
                    let open = self.model.events.len() as u32;
                    self.feed(Ev::Log(1), 0);
                    self.feed(Ev::Log(0), 0);
                    cited.splice(0..0, [open, open + 1]);
                }
                if s.a.is_multiple_of(11) && start > 0 && !matches!(source, Source::RewindReport { .. }) {
                    // An exotic producer citing a seq below the run: origins stop rising.
                    let low = s.b % start;
                    if !cited.contains(&low) {
                        cited.push(low);
                    }
                }
                let carried = if source == Source::BlockSummary && self.blocks {
                    (0..s.a % 3).map(|k| ((s.b >> (2 * k)) % 4) as u8).collect::<Vec<_>>()
                } else {
                    vec![]
                };
                let closed = if source == Source::BlockSummary && self.blocks {
                    vec![(s.c % 4) as u8]
                } else {
                    vec![]
                };
                let bracket = matches!(source, Source::CompactionSummary | Source::BlockSummary);
                self.feed(
                    Ev::Replace {
                        kind: Kind::User,
                        start,
                        end,
                        cited,
                        source,
                        carried,
                        closed,
                        call: None,
                    },
                    s.c,
                );
                if bracket && !s.a.is_multiple_of(5) {
                    self.feed(Ev::Log(2), 0);
                }
            }
            90..=94 if n > 0 => {
                // A tool result rewritten in place (DSH's pruner).
                let results: Vec<u32> = m
                    .surface
                    .iter()
                    .copied()
                    .filter(|&q| matches!(m.events[q as usize].ev, Ev::Result { .. }))
                    .collect();
                if let Some(&seq) = results.get(s.a as usize % results.len().max(1)) {
                    let Ev::Result { call } = m.events[seq as usize].ev else {
                        unreachable!()
                    };
                    self.feed(
                        Ev::Replace {
                            kind: Kind::ToolResult,
                            start: seq,
                            end: seq,
                            cited: vec![seq],
                            source: Source::Rewrite,
                            carried: vec![],
                            closed: vec![],
                            call: Some(call),
                        },
                        s.c,
                    );
                }
            }
            95..=99 => {
                self.rebuild();
                self.feed(Ev::Log(3), 0);
            }
            _ => self.feed(Ev::Log(0), 0),
        }
    }

    fn check(&self) {
        let (m, mirror) = (&self.model, &self.mirror);
        assert_eq!(
            (mirror.event_count(), mirror.generation()),
            (m.events.len() as u32, m.generation)
        );
        // Rewind: every anchor, current inferred or named.
        let mut currents = vec![None];
        currents.extend(
            m.surface
                .iter()
                .copied()
                .filter(|&s| m.kind(s) == Kind::Assistant)
                .map(Some),
        );
        for current in currents {
            let oracle = Surface::decode(&m.v1(current));
            for anchor in 0..=m.events.len() as u64 {
                let mine = mirror.rewind_surface(anchor, current);
                match (&oracle, &mine) {
                    (Ok(o), Ok(s)) => {
                        // Positions count from the window's first node: compare what is folded.
                        let pick = |x: &Surface| {
                            region::select(x, anchor)
                                .map(|r| (r.seqs, r.folded_chars))
                                .map_err(|e| (e.code(), e.to_string()))
                        };
                        let (want, got) = (pick(o), pick(s));
                        assert_eq!(got, want, "region at anchor {anchor}, current {current:?}");
                    }
                    (Err(o), Err(s)) => assert_eq!(s.code(), o.code(), "{s} / {o}"),
                    _ => panic!("anchor {anchor}, current {current:?}: mirror {mine:?}, snapshot {oracle:?}"),
                }
            }
        }
        // The rewind reports on the surface: each one's account, as a fold's repair reads it.
        let (_, reports) = Surface::decode_with_reports(&m.v1(None)).expect("the model's v1 snapshot");
        for r in reports {
            let account = mirror.report(r.seq).expect("a report the mirror knows");
            assert_eq!(
                (
                    account.mark_id,
                    account.folded_nodes,
                    account.start,
                    account.end,
                    account.folded_chars
                ),
                (r.mark_id, r.folded_nodes, r.start, r.end, u64::from(r.folded_chars)),
                "report {}",
                r.seq
            );
        }
        // Block mode: every id and an unknown one, now and at earlier request seqs.
        let oracle = BlockSurface::decode(&m.v2()).expect("the model's v2 snapshot");
        let mine = mirror.block_surface().expect("the mirror's block surface");
        let n = m.events.len() as u64;
        for target in ALPHABET.iter().chain(["Z"].iter()) {
            let targets = [BlockId::from(*target)];
            for request in [n, n / 2, n.saturating_sub(3)] {
                let plan = |s: &BlockSurface| -> Result<Plan, (String, String)> {
                    blocks::plan(s, &targets, request, false).map_err(|e| (e.code().to_string(), e.to_string()))
                };
                assert_eq!(plan(&mine), plan(&oracle), "block plan of {target} at {request}");
            }
        }
        // Recall: the history and each replacement's originals.
        let history = mirror.replacements().expect("known log");
        let want: Vec<u32> = (0..n as u32)
            .filter(|&s| matches!(m.events[s as usize].ev, Ev::Replace { .. }))
            .collect();
        assert_eq!(history.iter().map(|r| r.seq).collect::<Vec<_>>(), want);
        for r in history {
            let Ev::Replace { cited, .. } = &m.events[r.seq as usize].ev else {
                unreachable!()
            };
            assert_eq!(mirror.cited(r), m.message_sources(cited).as_slice());
            let open = |x: &mirror::Replacement| matches!(x.source, Source::RewindReport { .. } | Source::BlockSummary);
            let originals = mirror.originals(r.seq, open).unwrap();
            assert_eq!(originals, self.originals(r.seq), "originals of {}", r.seq);
        }
        // A rebuild from the surface describes the same surface (block ids aside).
        let mut loaded = Mirror::new();
        m.load(&mut loaded);
        assert_eq!(
            strip(loaded.canonical().unwrap()),
            strip(mirror.canonical().unwrap()),
            "a mirror loaded now"
        );
        assert_eq!(
            mirror.surface_chars(),
            m.surface
                .iter()
                .map(|s| u64::from(m.events[*s as usize].chars))
                .sum::<u64>()
        );
    }

    /// Recall's originals by the rule: what a fold or block summary cites (messages only), each
    /// nested fold or block summary opened up, each message once.
    fn originals(&self, seq: u32) -> Vec<u32> {
        fn walk(m: &Model, seq: u32, seen: &mut Vec<u32>, out: &mut Vec<u32>) {
            let Ev::Replace { cited, .. } = &m.events[seq as usize].ev else {
                return;
            };
            for s in m.message_sources(cited) {
                if seen.contains(&s) {
                    continue;
                }
                seen.push(s);
                match &m.events[s as usize].ev {
                    Ev::Replace {
                        source: Source::RewindReport { .. } | Source::BlockSummary,
                        ..
                    } => walk(m, s, seen, out),
                    _ => out.push(s),
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.model, seq, &mut Vec::new(), &mut out);
        out
    }
}

/// A canonical description without block ids (a load describes none).
fn strip(mut c: Canonical) -> Canonical {
    for n in &mut c.nodes {
        n.ids = None;
    }
    if let Some((_, replacements)) = &mut c.log {
        for r in replacements {
            r.2 = None;
            r.3 = None;
        }
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_mirror_answers_as_a_fresh_description_after_every_step(steps in steps(), blocks in any::<bool>(), meter in any::<bool>()) {
        let mut run = Run { model: Model::default(), mirror: Mirror::new(), blocks, meter };
        for s in &steps {
            run.step(s);
            run.check();
        }
    }

    #[test]
    fn a_record_out_of_step_breaks_the_mirror_until_it_is_rebuilt(steps in steps(), skew in 1u32..5) {
        let mut run = Run { model: Model::default(), mirror: Mirror::new(), blocks: false, meter: true };
        for s in &steps {
            run.step(s);
        }
        let mut words = Vec::new();
        RecordBuilder::append(run.model.events.len() as u32 + skew, Kind::User).write(&[], &mut words);
        let err = run.mirror.push(&words).unwrap_err();
        prop_assert_eq!(err.code(), "INVALID_ARGUMENT");
        prop_assert!(run.mirror.broken().is_some());
        prop_assert!(run.mirror.rewind_surface(0, None).is_err());
        prop_assert!(run.mirror.block_surface().is_err());
        run.rebuild();
        prop_assert!(run.mirror.broken().is_none());
        run.check();
    }
}

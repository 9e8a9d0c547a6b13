//! What the compaction policy reads ([`super`]'s rules read nothing else): each surface node's
//! facts ([`CompactionNode`]: kind, where it came from, token price, visible chars, call links,
//! block ids, fact chars, an earlier checkpoint's core), validated once into a
//! [`CompactionSurface`] with its pairing indexes, and how the session mirror hands them over
//! with the backend's overlay ([`CompactionSurface::from_mirror`]: the mirror's provenance mapped
//! onto the policy's sources).

use std::collections::HashMap;

use super::CHARS_PER_TOKEN;
use crate::error::{FoldError, Result};
use crate::mirror::{Mirror, Source as MirrorSource};
use crate::surface::{Kind, Link, Linked, Pairing};

/// Where a node came from: what the policy may do with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The agent's work: assistant messages, tool results, anything else appended.
    Work,
    /// A message from the user's side (a prompt, workspace instructions).
    User,
    /// A rewind report (the model's fold of a marked exploration).
    RewindReport,
    /// A block summary (the model's own summary of closed blocks).
    BlockSummary,
    /// An earlier compaction summary of this backend.
    CompactionSummary,
    /// Another backend's compaction summary (DSH's `compaction-basic`).
    ForeignSummary,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Work => "work",
            Self::User => "user",
            Self::RewindReport => "rewind-report",
            Self::BlockSummary => "block-summary",
            Self::CompactionSummary => "compaction-summary",
            Self::ForeignSummary => "foreign-summary",
        }
    }

    /// Model-written text carried as written.
    pub fn is_model_written(self) -> bool {
        matches!(
            self,
            Self::RewindReport | Self::BlockSummary | Self::CompactionSummary | Self::ForeignSummary
        )
    }

    /// The order in which verbatim items degrade to pointers (lower first): another backend's
    /// summary, then the model's reports and block summaries, then our earlier summaries (what
    /// they carry is the user's words and the model's text) and the user's messages.
    pub(super) fn degrade_rank(self) -> u8 {
        match self {
            Self::ForeignSummary => 0,
            Self::RewindReport | Self::BlockSummary => 1,
            Self::CompactionSummary | Self::User => 2,
            Self::Work => 3,
        }
    }

    /// An earlier compaction summary (ours or another backend's).
    pub(super) fn is_summary(self) -> bool {
        matches!(self, Self::CompactionSummary | Self::ForeignSummary)
    }
}

/// One surface node's facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionNode {
    pub seq: u32,
    pub kind: Kind,
    pub source: Source,
    /// Smallest event seq the node stands for (a replacement: its sources').
    pub origin: u32,
    /// The host meter's price of the node's message.
    pub tokens: u32,
    /// Model-visible chars (UTF-16 units).
    pub chars: u32,
    /// Assistant nodes: tool calls opened.
    pub opens: u32,
    /// Tool results: the seq of the assistant node that opened the call.
    pub opener: Option<u32>,
    /// The node's block id set (index into the snapshot's sets): an assistant node's
    /// `block_run_code` ids, a block summary's carried ids.
    pub set: Option<u32>,
    /// Work nodes: the chars the extractive report would copy of the node's named paths,
    /// commands and error lines (an upper bound: repeats across nodes count each time), when
    /// the host knows it (rule 6).
    pub facts: Option<u32>,
    /// An earlier compaction summary of ours: its chars with every report and summary it carries
    /// as a one-line pointer (its core, rule 6); any other node: `chars`.
    pub core: u32,
}

impl CompactionNode {
    /// A node standing for its own event, linked to nothing.
    pub fn new(seq: u32, kind: Kind, source: Source, tokens: u32, chars: u32) -> Self {
        Self {
            seq,
            kind,
            source,
            origin: seq,
            tokens,
            chars,
            opens: 0,
            opener: None,
            set: None,
            facts: None,
            core: chars,
        }
    }
}

impl Linked for CompactionNode {
    fn link(&self) -> Link {
        Link::new(self.seq, self.kind, self.opens, self.opener)
    }
}

/// What the policy needs that the session mirror does not keep (see
/// [`CompactionSurface::from_mirror`]), given by the host beside it.
#[derive(Debug, Clone, Copy, Default)]
pub struct MirrorOverlay<'a> {
    /// Per surface node in model order: 0 unknown, else 1 + a work node's fact chars (rule 6);
    /// empty: all unknown.
    pub facts: &'a [u32],
    /// `(seq, chars, core)` of each earlier checkpoint of ours on the surface: what a later
    /// checkpoint carries of it, and its core (rule 6).
    pub ours: &'a [u32],
    /// Seqs of the injected messages that are a plugin's transient notes (a turn guard's
    /// warning): work to condense, not words to carry (the mirror calls them injected, as it
    /// does workspace instructions).
    pub notes: &'a [u32],
}

/// The policy's input, validated: the surface's facts as the mirror hands them over.
#[derive(Debug, Clone)]
pub struct CompactionSurface {
    pub event_count: u32,
    /// Log lengths at which the active checkpoint marks were taken.
    pub anchors: Vec<u32>,
    pub nodes: Vec<CompactionNode>,
    /// Block id sets: each a list of block numbers (the host interns ids; only identity counts).
    pub sets: Vec<Vec<u32>>,
    pub(super) pairing: Pairing,
}

fn bad(what: impl std::fmt::Display) -> FoldError {
    FoldError::invalid(format!("invalid compaction snapshot: {what}"))
}

impl CompactionSurface {
    /// A surface from facts; the pairing indexes are derived and checked.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` as [`CompactionSurface::decode`] says.
    pub fn new(event_count: u32, anchors: Vec<u32>, nodes: Vec<CompactionNode>, sets: Vec<Vec<u32>>) -> Result<Self> {
        for (i, node) in nodes.iter().enumerate() {
            if node.origin > node.seq {
                return Err(bad(format!(
                    "node {i}: origin {} is after its seq {}",
                    node.origin, node.seq
                )));
            }
            if let Some(k) = node.set {
                if k as usize >= sets.len() {
                    return Err(bad(format!("node {i}: set {k} of {} sets", sets.len())));
                }
                let carries = node.kind == Kind::Assistant || node.source == Source::BlockSummary;
                if !carries {
                    return Err(bad(format!(
                        "node {i}: only assistant nodes and block summaries carry block ids"
                    )));
                }
            }
            if node.core > node.chars || (node.core < node.chars && node.source != Source::CompactionSummary) {
                return Err(bad(format!(
                    "node {i}: core {} of {} chars (only an earlier compaction summary has a smaller core)",
                    node.core, node.chars
                )));
            }
            if node.facts.is_some() && node.source != Source::Work {
                return Err(bad(format!("node {i}: only work nodes carry fact sizes")));
            }
            if node.source != Source::Work && node.kind != Kind::User {
                return Err(bad(format!(
                    "node {i}: a {:?} node cannot be a {}",
                    node.kind,
                    node.source.as_str()
                )));
            }
        }
        if let Some(k) = sets.iter().position(Vec::is_empty) {
            return Err(bad(format!("set {k} is empty")));
        }
        let pairing = Pairing::build(event_count, &nodes).map_err(bad)?;
        Ok(Self {
            event_count,
            anchors,
            nodes,
            sets,
            pairing,
        })
    }

    /// The policy's input read off the session mirror, which describes the surface as it is
    /// (the warm path: no pass over the session), with what the mirror does not keep given
    /// beside it ([`MirrorOverlay`]). The mirror's provenance maps onto the policy's sources: the
    /// user's and injected messages (workspace instructions) are the user's side but for the
    /// plugin notes the overlay lists, a rewind report and a block summary are carried as
    /// written, a compaction summary is ours when the overlay lists it (its carried chars and
    /// core given there) and another backend's otherwise, anything else (model messages, tool
    /// results, rewritten results, block mode's notices, plugin notes) is work. A node the meter
    /// did not price is priced at 4 chars a token.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when the mirror is out of step with its session, the overlay does not
    /// fit it (fact sizes not one per surface node, a listed checkpoint that is not a compaction
    /// summary on the surface, a core larger than its chars), or its facts fail
    /// [`CompactionSurface::new`]'s checks.
    pub fn from_mirror(mirror: &Mirror, anchors: Vec<u32>, overlay: &MirrorOverlay<'_>) -> Result<Self> {
        if let Some(why) = mirror.broken() {
            return Err(FoldError::invalid(format!("the session mirror is out of step: {why}")));
        }
        let n = mirror.len();
        if !overlay.facts.is_empty() && overlay.facts.len() != n {
            return Err(FoldError::invalid(format!(
                "facts holds {} words for {n} surface nodes (one each, or none)",
                overlay.facts.len()
            )));
        }
        if !overlay.ours.len().is_multiple_of(3) {
            return Err(FoldError::invalid(format!(
                "ours holds {} words, not (seq, chars, core) triples",
                overlay.ours.len()
            )));
        }
        let mut ours: HashMap<u32, (u32, u32)> = HashMap::new();
        for t in overlay.ours.chunks_exact(3) {
            if t[2] > t[1] {
                return Err(FoldError::invalid(format!(
                    "our checkpoint at seq {}: core {} is larger than its {} chars",
                    t[0], t[2], t[1]
                )));
            }
            ours.insert(t[0], (t[1], t[2]));
        }
        let notes: std::collections::HashSet<u32> = overlay.notes.iter().copied().collect();
        let mut sets: Vec<Vec<u32>> = Vec::new();
        let mut index: HashMap<u32, u32> = HashMap::new();
        let mut nodes = Vec::with_capacity(n);
        for (pos, v) in mirror.nodes(0..n).enumerate() {
            let mine = ours.remove(&v.seq);
            let source = match (v.kind, v.source) {
                (Kind::User, MirrorSource::Injected) if notes.contains(&v.seq) => Source::Work,
                (Kind::User, MirrorSource::User | MirrorSource::Injected) => Source::User,
                (Kind::User, MirrorSource::RewindReport { .. }) => Source::RewindReport,
                (Kind::User, MirrorSource::BlockSummary) => Source::BlockSummary,
                (Kind::User, MirrorSource::CompactionSummary) if mine.is_some() => Source::CompactionSummary,
                (Kind::User, MirrorSource::CompactionSummary) => Source::ForeignSummary,
                _ => Source::Work,
            };
            if mine.is_some() && source != Source::CompactionSummary {
                return Err(FoldError::invalid(format!(
                    "seq {} is listed as our checkpoint but is not a compaction summary",
                    v.seq
                )));
            }
            let carries = v.kind == Kind::Assistant || source == Source::BlockSummary;
            let set = v.ids.filter(|_| carries).map(|k| {
                *index.entry(k).or_insert_with(|| {
                    sets.push(mirror.set(k).to_vec());
                    sets.len() as u32 - 1
                })
            });
            let (chars, core) = mine.unwrap_or((v.chars, v.chars));
            let facts = match overlay.facts.get(pos) {
                Some(&f) if f > 0 && source == Source::Work => Some(f - 1),
                _ => None,
            };
            nodes.push(CompactionNode {
                seq: v.seq,
                kind: v.kind,
                source,
                origin: v.origin,
                tokens: v.tokens.unwrap_or(v.chars / CHARS_PER_TOKEN as u32 + 4),
                chars,
                opens: v.opens,
                opener: v.opener,
                set,
                facts,
                core,
            });
        }
        if let Some(seq) = ours.keys().min() {
            return Err(FoldError::invalid(format!(
                "seq {seq} is listed as our checkpoint but is not on the surface"
            )));
        }
        Self::new(mirror.event_count(), anchors, nodes, sets)
    }
}

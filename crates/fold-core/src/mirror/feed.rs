//! Feeding the mirror, one event at a time: each record pushed is checked against the mirror's
//! state, resolved (the call a result answers, what a replacement shadows), placed on the surface
//! and remembered in the log index. A record that does not follow breaks the mirror until it is
//! rebuilt ([`Mirror::load`]).

use std::ops::Range;

use super::*;

impl Mirror {
    /// Describes the events in `words` (one record after another), each the next of the log.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when a record is malformed or does not follow from the mirror's state;
    /// the mirror is then broken until rebuilt (records before the bad one were applied).
    pub fn push(&mut self, words: &[u32]) -> Result<()> {
        self.check()?;
        let mut at = 0;
        while at < words.len() {
            let applied = Record::at(&words[at..]).and_then(|(record, len)| self.apply(&record).map(|()| len));
            match applied {
                Ok(len) => at += len,
                Err(why) => {
                    self.broken = Some(why.clone());
                    return Err(out_of_step(why));
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, r: &Record<'_>) -> std::result::Result<(), String> {
        let seq = r.seq();
        if seq != self.event_count {
            return Err(format!("event {seq} arrived when event {} was next", self.event_count));
        }
        if seq == NONE {
            return Err("the log is full (seqs are 32-bit)".into());
        }
        let op = r.op();
        if op != 0 {
            self.apply_node(r)?;
        }
        if op != 0 {
            self.fact_at.set(seq, self.facts.len() as u32 - 1);
        }
        if self.log_known {
            match r.log_class() {
                1 => self.open_compaction = Some(seq),
                2 | 3 => self.open_compaction = None,
                _ => {}
            }
        }
        self.event_count = seq + 1;
        Ok(())
    }

    /// A record's id set words name sets the mirror interned ([`Mirror::intern`]), or none.
    pub(super) fn check_sets(&self, r: &Record<'_>) -> std::result::Result<(), String> {
        let interned = self.ids.sets.len() as u32;
        match [r.w[5], r.w[6]].into_iter().find(|&word| word > interned) {
            Some(word) => Err(format!(
                "event {} names id set {}, not one of the {interned} interned",
                r.seq(),
                word - 1
            )),
            None => Ok(()),
        }
    }

    fn apply_node(&mut self, r: &Record<'_>) -> std::result::Result<(), String> {
        let seq = r.seq();
        let w = r.w;
        let replace = match r.op() {
            OP_APPEND => None,
            OP_REPLACE => {
                let (start, end) = (w[9], w[10]);
                let at = |s: u32| self.position(s);
                let (Some(s), Some(e)) = (at(start), at(end)) else {
                    return Err(format!("replace {seq} names {start}..{end}, not both on the surface"));
                };
                if s > e {
                    return Err(format!("replace {seq}: start {start} stands after end {end}"));
                }
                Some((s, e))
            }
            other => return Err(format!("event {seq}: unknown surface op {other}")),
        };
        if let Some(s) = r.sources().iter().find(|s| **s >= seq) {
            return Err(format!("event {seq} cites {s}, not an earlier event"));
        }
        // Origin: its own seq, or for a replacement the first replaced node's origin or any
        // lower seq it cites.
        let mut origin = seq;
        if let Some((s, _)) = replace {
            origin = origin.min(self.facts[self.order[s] as usize].origin).min(w[11]);
        }
        self.check_sets(r)?;
        let mut fact = r.fact(origin)?;
        // A tool result rewritten in place answers the call the result it replaces answered (the
        // host need not remember answered calls).
        if let (Kind::ToolResult, 0, Some((s, _))) = (fact.kind, fact.link, replace) {
            let replaced = &self.facts[self.order[s] as usize];
            if replaced.kind == Kind::ToolResult {
                fact.link = replaced.link;
            }
        }
        self.resolve(&mut fact, r.sources(), replace.map_or(0..0, |(s, e)| s..e + 1));
        let index = self.facts.len() as u32;
        if fact.report != 0 {
            self.report_facts.push(index);
        }
        self.facts.push(fact);
        match replace {
            None => self.place(index, self.order.len(), 0),
            Some((s, e)) => {
                self.generation += 1;
                self.place(index, s, e - s + 1);
            }
        }
        if self.log_known && fact.source.is_replacement() {
            self.remember(&fact, w[6], r.sources());
        }
        Ok(())
    }

    /// Links a fact to what it cites: its call's opener, a report's account, covered block ids.
    /// `shadowed`: the surface positions the event replaces (a push's replace): what it cites is
    /// looked up there first (a report cites exactly those), then among every described event.
    pub(super) fn resolve(&mut self, fact: &mut Fact, sources: &[u32], shadowed: Range<usize>) {
        if fact.kind == Kind::ToolResult && fact.link > 0 {
            fact.opener = self.index_of(fact.link - 1).map_or(NONE, |i| i as u32);
        }
        let report = matches!(fact.source, Source::RewindReport { .. });
        let covers = fact.source.is_replacement()
            && fact.source != Source::BlockSummary
            && matches!(fact.kind, Kind::User | Kind::ToolResult);
        if !report && !covers {
            return;
        }
        let (mut chars, mut tokens) = (0u64, Some(0u64));
        let mut covered = Vec::new();
        let mut cursor = shadowed.start;
        for &s in sources {
            // In the replaced run, in order (one step each), else anywhere.
            let at = if cursor < shadowed.end && self.facts[self.order[cursor] as usize].seq == s {
                cursor += 1;
                Some(self.order[cursor - 1] as usize)
            } else {
                self.index_of(s)
            };
            let Some(i) = at else {
                tokens = None;
                continue;
            };
            let f = &self.facts[i];
            chars += u64::from(f.chars);
            tokens = tokens.and_then(|t| (f.tokens != NONE).then(|| t + u64::from(f.tokens)));
            if covers {
                if let Some(k) = f.ids.checked_sub(1) {
                    for &m in self.ids.members(k) {
                        if !covered.contains(&m) {
                            covered.push(m);
                        }
                    }
                }
            }
        }
        if let Source::RewindReport { mark_id } = fact.source {
            if let (Some(&start), Some(&end)) = (sources.first(), sources.last()) {
                self.reports.push(ReportFacts {
                    mark_id,
                    folded_nodes: sources.len() as u32,
                    start,
                    end,
                    folded_chars: chars,
                    folded_tokens: tokens,
                });
                fact.report = self.reports.len() as u32;
            }
        }
        // Another producer's replacement covers the ids of what it cites; a block summary
        // carries its own (the record's), as does an assistant.
        if covers {
            fact.ids = self.ids.set(covered);
        }
    }

    /// Puts fact `index` at surface position `at`, in place of the `removed` nodes from there.
    fn place(&mut self, index: u32, at: usize, removed: usize) {
        let origin_at = |m: &Self, p: usize| m.facts[m.order[p] as usize].origin;
        // Descents touching the changed run, before and after.
        let descents_around = |m: &Self, from: usize, to: usize| -> u32 {
            let lo = from.max(1);
            let hi = (to + 1).min(m.order.len());
            (lo..hi).filter(|&p| origin_at(m, p) < origin_at(m, p - 1)).count() as u32
        };
        self.descents -= descents_around(self, at, at + removed);
        for p in at..at + removed {
            let f = &mut self.facts[self.order[p] as usize];
            f.pos = NONE;
            self.surface_chars -= u64::from(f.chars);
            if f.tokens == NONE {
                self.unpriced -= 1;
            } else {
                self.surface_tokens -= u64::from(f.tokens);
            }
        }
        self.order.splice(at..at + removed, [index]);
        for p in at..self.order.len() {
            self.facts[self.order[p] as usize].pos = p as u32;
        }
        let f = self.facts[index as usize];
        self.surface_chars += u64::from(f.chars);
        if f.tokens == NONE {
            self.unpriced += 1;
        } else {
            self.surface_tokens += u64::from(f.tokens);
        }
        self.descents += descents_around(self, at, at + 1);
    }

    fn remember(&mut self, fact: &Fact, closed: u32, sources: &[u32]) {
        let start = self.history_sources.len();
        self.history_sources.extend_from_slice(sources);
        self.history.push(Replacement {
            seq: fact.seq,
            kind: fact.kind,
            source: fact.source,
            closed: closed.checked_sub(1),
            carried: if fact.source == Source::BlockSummary {
                fact.ids.checked_sub(1)
            } else {
                None
            },
            sources: start..self.history_sources.len(),
        });
    }
}

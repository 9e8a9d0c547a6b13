//! Rebuilding the mirror from a session it never saw, or that moved without it: the load of the
//! surface (and the events off it a report cites), then the log index learnt from the log
//! ([`Mirror::load_log`]), and what that index answers (a mark's report wherever it stands).

use super::*;

impl Mirror {
    /// Rebuilds the surface index from a description of the surface as it is now (the load
    /// format). The log index becomes unknown ([`Mirror::load_log`]) — but for an empty log, whose
    /// index is known to be empty (a session described at its creation, then fed event by event,
    /// knows its whole log); the id table is kept.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when the words are malformed (the mirror is then broken).
    pub fn load(&mut self, words: &[u32]) -> Result<()> {
        let ids = std::mem::take(&mut self.ids);
        *self = Self { ids, ..Self::default() };
        if let Err(why) = self.try_load(words) {
            self.broken = Some(why.clone());
            return Err(out_of_step(why));
        }
        Ok(())
    }

    fn try_load(&mut self, words: &[u32]) -> std::result::Result<(), String> {
        if words.len() < LOAD_HEADER_WORDS || words[0] != LOAD_FORMAT {
            return Err(format!("a load of {} words, not in format {LOAD_FORMAT}", words.len()));
        }
        let (event_count, generation) = (words[1], words[2]);
        let (n, m) = (words[3] as usize, words[4] as usize);
        let mut records = Vec::with_capacity(n.saturating_add(m).min(words.len()));
        let mut at = LOAD_HEADER_WORDS;
        while at < words.len() {
            let (record, len) = Record::at(&words[at..])?;
            if record.op() == 0 {
                return Err(format!("event {} in a load is log-only", record.seq()));
            }
            if record.seq() >= event_count {
                return Err(format!(
                    "event {} is not below the event count {event_count}",
                    record.seq()
                ));
            }
            records.push(record);
            at += len;
        }
        if records.len() != n + m {
            return Err(format!("{} records for {n} nodes and {m} other events", records.len()));
        }
        self.fact_at = FactIndex::for_load(event_count, records.len());
        // Facts in seq order (reports and covered ids resolve against lower seqs), then the order.
        let mut by_seq: Vec<usize> = (0..records.len()).collect();
        by_seq.sort_unstable_by_key(|&i| records[i].seq());
        if let Some(w) = by_seq.windows(2).find(|w| records[w[0]].seq() == records[w[1]].seq()) {
            return Err(format!("event {} is described twice", records[w[0]].seq()));
        }
        let mut index_of_record = vec![0u32; records.len()];
        for &i in &by_seq {
            let r = &records[i];
            self.check_sets(r)?;
            let mut fact = r.fact(r.w[12])?;
            self.resolve(&mut fact, r.sources(), 0..0);
            index_of_record[i] = self.facts.len() as u32;
            self.fact_at.set(r.seq(), index_of_record[i]);
            if fact.report != 0 {
                self.report_facts.push(index_of_record[i]);
            }
            self.facts.push(fact);
        }
        self.order.reserve(n);
        for (p, i) in (m..m + n).enumerate() {
            let f = &mut self.facts[index_of_record[i] as usize];
            f.pos = p as u32;
            self.surface_chars += u64::from(f.chars);
            if f.tokens == NONE {
                self.unpriced += 1;
            } else {
                self.surface_tokens += u64::from(f.tokens);
            }
            self.order.push(index_of_record[i]);
        }
        self.descents = (1..n)
            .filter(|&p| self.facts[self.order[p] as usize].origin < self.facts[self.order[p - 1] as usize].origin)
            .count() as u32;
        self.event_count = event_count;
        self.generation = generation;
        // Nothing happened yet: no compaction is open and nothing was replaced.
        self.log_known = event_count == 0;
        Ok(())
    }

    /// Learns the log index of a loaded mirror: the open compaction bracket's start (or NONE)
    /// and, in seq order, the records of every replacement in the log, with the records of the
    /// message events the rewind reports off the surface cite (the log up to
    /// [`Mirror::event_count`]). Every event the surface load did not describe is described
    /// now (off the surface), so a fold's report is found, with its account, wherever it stands
    /// ([`Mirror::mark_report`]), as it is in a mirror fed from the first event.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when the words are malformed, out of seq order, or name events past
    /// the described log (the mirror is then unchanged).
    pub fn load_log(&mut self, open_compaction: u32, words: &[u32]) -> Result<()> {
        self.check()?;
        if open_compaction != NONE && open_compaction >= self.event_count {
            return Err(out_of_step(format!(
                "open compaction {open_compaction} is past the log"
            )));
        }
        let mut records = Vec::new();
        let mut at = 0;
        let mut last = None;
        while at < words.len() {
            let (record, len) = Record::at(&words[at..]).map_err(out_of_step)?;
            if record.op() == 0 || record.seq() >= self.event_count || last >= Some(record.seq()) {
                return Err(out_of_step(format!(
                    "event {} is no message event of the log in order",
                    record.seq()
                )));
            }
            // Checked before anything is kept, so a bad record changes nothing.
            record.fact(record.seq()).map_err(out_of_step)?;
            self.check_sets(&record).map_err(out_of_step)?;
            last = Some(record.seq());
            records.push(record);
            at += len;
        }
        let mut history = Vec::new();
        let mut sources = Vec::new();
        for record in &records {
            let seq = record.seq();
            let mut fact = record.fact(seq).map_err(out_of_step)?;
            // What it cites has a lower seq: described by now.
            match self.index_of(seq) {
                None => {
                    // Off the surface: described so what it is (a report of a mark) and what it
                    // accounts for are known.
                    self.resolve(&mut fact, record.sources(), 0..0);
                    let index = self.facts.len() as u32;
                    if fact.report != 0 {
                        self.report_facts.push(index);
                    }
                    self.fact_at.set(seq, index);
                    self.facts.push(fact);
                }
                Some(i) if self.facts[i].report != 0 => {
                    // A report the surface load described only as what another report cites,
                    // before what it cites itself was described: its account again, now whole.
                    self.resolve(&mut fact, record.sources(), 0..0);
                    // (`resolve` numbers the fresh fact only when it pushed an account.)
                    if let Some(whole) = (fact.report != 0).then(|| self.reports.pop()).flatten() {
                        self.reports[self.facts[i].report as usize - 1] = whole;
                    }
                }
                Some(_) => {}
            }
            if !fact.source.is_replacement() {
                continue;
            }
            let start = sources.len();
            sources.extend_from_slice(record.sources());
            history.push(Replacement {
                seq,
                kind: fact.kind,
                source: fact.source,
                closed: record.w[6].checked_sub(1),
                carried: if fact.source == Source::BlockSummary {
                    fact.ids.checked_sub(1)
                } else {
                    None
                },
                sources: start..sources.len(),
            });
        }
        self.open_compaction = (open_compaction != NONE).then_some(open_compaction);
        self.history = history;
        self.history_sources = sources;
        self.log_known = true;
        Ok(())
    }

    /// Whether the log index is known: fed from the log's first event, or learnt
    /// ([`Mirror::load_log`]).
    pub fn log_known(&self) -> bool {
        self.log_known
    }

    /// The rewind report of mark `mark_id` appended at or after `anchor` (the mark's log
    /// length: ids restart at 1 when a store is deleted, so an older report may name a new
    /// mark's id), wherever it stands now: on the surface, or replaced since (by a compaction,
    /// another fold) — the session log's record that the mark's fold happened. The earliest, if
    /// a mark was ever folded twice. Complete once the log index is known
    /// ([`Mirror::log_known`]); before that, only reports on the surface are seen.
    pub fn mark_report(&self, mark_id: u64, anchor: u64) -> Option<MarkReport> {
        self.report_facts
            .iter()
            .map(|&i| &self.facts[i as usize])
            .filter(|f| u64::from(f.seq) >= anchor)
            .map(|f| (f, self.reports[f.report as usize - 1]))
            .filter(|(_, r)| r.mark_id == mark_id)
            .min_by_key(|(f, _)| f.seq)
            .map(|(f, facts)| MarkReport {
                seq: f.seq,
                facts,
                chars: f.chars,
                tokens: (f.tokens != NONE).then_some(f.tokens),
                pos: (f.pos != NONE).then_some(f.pos as usize),
            })
    }
}

//! Layout and budget: the report's lines, their priorities, the greedy fit, and the English and
//! Chinese text.
//!
//! Contract. `Plan::new` turns the facts into atoms — one report line each (a step, an error
//! line under it, a conclusion), an item of an inline list (a path), or a suffix of another
//! atom's line (a step's last output line) — each with a priority and a place in the report.
//! `Plan::render(limit)` counts costs without rendering: when everything fits it writes the whole
//! report; otherwise it takes atoms by priority, in report order within a priority (an atom that
//! does not fit is skipped, smaller later ones may still fit; a suffix only joins a line that
//! was taken; the conclusion and the next step may be cut), and closes with a line saying how
//! many atoms were left out. Costs are counted on the English text, whose every phrase is at
//! least as long as its Chinese one: both languages keep the same atoms, the same facts. The result is at most `limit` UTF-16 units; every section heading
//! appears once and in order (an empty section says `(none)`, or `(omitted)` when its atoms did
//! not fit); `None` means not even that skeleton fits. Time is linear in the atoms (one pass per
//! priority level, and there are `LEVELS` of them).

use std::collections::HashSet;

use super::facts::{Facts, Outcome, PathRole, Step, Summary, ToolKind};
use super::scan::{cap, len16, FxBuild};
use super::Language;

/// The shortest cut of a cut-able atom worth writing.
const MIN_CUT: usize = 40;
/// Failed commands still worth naming as unresolved, newest first.
const MAX_UNRESOLVED: usize = 2;
/// How much of a command an unresolved line repeats (the step line above has it whole): its
/// head and its tail, which tell apart commands that share a long prefix.
const CAP_UNRESOLVED: (usize, usize) = (60, 40);

/// Priorities, most important first: failed calls (and calls whose output printed new error
/// lines), their error lines, the paths, the other shell commands, ...
const P_FAILED: u8 = 0;
const P_ERROR: u8 = 1;
const P_PATH: u8 = 2;
const P_STEP: u8 = 3;
const P_NEXT: u8 = 4;
const P_CONCLUSION: u8 = 5;
const P_UNRESOLVED: u8 = 6;
const P_MINOR_STEP: u8 = 7;
const P_SENTENCE: u8 = 8;
const P_TAIL: u8 = 9;
const LEVELS: u8 = 10;

const FINDINGS: usize = 0;
const FILES: usize = 1;
const DECISIONS: usize = 2;
const QUESTIONS: usize = 3;
const NEXT: usize = 4;

struct Phrases {
    none: &'static str,
    omitted: &'static str,
    exit: &'static str,
    failed: &'static str,
    ok: &'static str,
    no_output: &'static str,
    entries: &'static str,
    lines: &'static str,
    more_lines: (&'static str, &'static str),
    repeated: &'static str,
    edits: &'static str,
    conclusion: &'static str,
    still_failing: &'static str,
    edited: &'static str,
    written: &'static str,
    read: &'static str,
    named: &'static str,
}

impl Language {
    fn phrases(self) -> Phrases {
        match self {
            Self::En => Phrases {
                none: "- (none)",
                omitted: "- (omitted)",
                exit: " → exit ",
                failed: " → failed",
                ok: " → ok",
                no_output: " → ok, no output",
                entries: " entries",
                lines: " lines",
                more_lines: (" (+", " lines)"),
                repeated: ", errors as above",
                edits: " edits)",
                conclusion: "- Conclusion: ",
                still_failing: "- Still failing: ",
                edited: "- Edited: ",
                written: "- Written: ",
                read: "- Read: ",
                named: "- Also named: ",
            },
            Self::Zh => Phrases {
                none: "- （无）",
                omitted: "- （已省略）",
                exit: " → 退出码 ",
                failed: " → 失败",
                ok: " → 成功",
                no_output: " → 成功，无输出",
                entries: " 项",
                lines: " 行",
                more_lines: ("（另 ", " 行）"),
                repeated: "，错误同上",
                edits: " 次编辑)",
                conclusion: "- 结论：",
                still_failing: "- 仍然失败：",
                edited: "- 已修改：",
                written: "- 已写入：",
                read: "- 已读取：",
                named: "- 其他提及：",
            },
        }
    }

    fn counts(self, messages: usize, calls: usize, failed: usize, chars: usize) -> String {
        match self {
            Self::En => format!("- Folded {messages} messages: {calls} tool calls ({failed} failed), {chars} chars."),
            Self::Zh => format!("- 折叠了 {messages} 条消息：{calls} 次工具调用（{failed} 次失败），共 {chars} 字符。"),
        }
    }

    fn marker(self, omitted: usize, total: usize, limit: usize) -> String {
        match self {
            Self::En => format!("_[extractive report: {omitted} of {total} items omitted to fit {limit} chars]_"),
            Self::Zh => format!("_[抽取式报告：为不超过 {limit} 字符，省略了 {total} 项中的 {omitted} 项]_"),
        }
    }
}

/// How an atom sits in the report.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A line of its own.
    Line,
    /// An item of its group's inline list (`header` + items joined by `, `).
    Item,
    /// Text appended to the line of the atom at this index (always an earlier `Line`).
    Suffix(usize),
}

struct Atom {
    prio: u8,
    section: usize,
    /// Atoms of one inline list share a group; its header opens the line.
    group: usize,
    shape: Shape,
    /// May be cut to fit: its text after the first `cut` bytes (a fixed label) is what is cut.
    cut: Option<usize>,
    /// The English text: what costs are counted on. Every Chinese phrase is at most as long as
    /// its English one, so a choice that fits in English fits in Chinese, and both languages
    /// keep the same facts.
    text: String,
    /// The Chinese text, when the report is Chinese (same verbatim content).
    local: Option<String>,
}

/// An atom's text in both languages: English, and Chinese when asked for.
type Texts = (String, Option<String>);

/// The report's atoms in report order.
pub(super) struct Plan {
    language: Language,
    atoms: Vec<Atom>,
    /// Inline-list headers (English, Chinese), by group index (`""` for groups that are not
    /// inline lists).
    headers: Vec<[&'static str; 2]>,
}

/// Both languages' phrases, and whether the report wants the Chinese text too.
struct Tongues {
    en: Phrases,
    zh: Phrases,
    wants_zh: bool,
}

impl Tongues {
    fn of(language: Language) -> Self {
        Self {
            en: Language::En.phrases(),
            zh: Language::Zh.phrases(),
            wants_zh: language == Language::Zh,
        }
    }

    /// The same text in both languages: `make` writes it with one language's phrases.
    fn both(&self, make: &dyn Fn(&Phrases) -> String) -> Texts {
        (make(&self.en), self.wants_zh.then(|| make(&self.zh)))
    }
}

/// A step's priority: failed (or printing new error lines), a shell command, or a minor step.
fn step_priority(step: &Step) -> u8 {
    if matches!(step.outcome, Outcome::Failed(_)) || !step.errors.is_empty() {
        P_FAILED
    } else if step.kind == ToolKind::Shell {
        P_STEP
    } else {
        P_MINOR_STEP
    }
}

impl Plan {
    /// The report's atoms in report order: its sections one after the other (findings, files,
    /// decisions and open questions, the next step).
    pub(super) fn new(f: &Facts, language: Language, messages: usize, visible: usize) -> Self {
        let t = Tongues::of(language);
        let mut plan = Self {
            language,
            atoms: Vec::new(),
            headers: Vec::new(),
        };
        plan.findings(f, &t, messages, visible);
        plan.files(f, &t);
        plan.open_ends(f, &t);
        plan
    }

    /// Findings: the counts, every step with its new error lines, the conclusion.
    fn findings(&mut self, f: &Facts, t: &Tongues, messages: usize, visible: usize) {
        let counts = (
            Language::En.counts(messages, f.calls, f.failed, visible),
            t.wants_zh
                .then(|| Language::Zh.counts(messages, f.calls, f.failed, visible)),
        );
        self.line(P_FAILED, FINDINGS, counts, None);
        self.steps(f, t);
        if let Some(c) = &f.conclusion {
            let texts = t.both(&|p| format!("{}{c}", p.conclusion));
            self.line(P_CONCLUSION, FINDINGS, texts, Some(c.len()));
        }
    }

    /// Every step as a line (its output's last line as a suffix when it ended well with nothing
    /// new), its new error lines under it. A step repeated with the same line and nothing new is
    /// one line with a count.
    fn steps(&mut self, f: &Facts, t: &Tongues) {
        let mut last: Option<(usize, Texts, usize)> = None;
        for step in &f.steps {
            let line = t.both(&|p| format!("- {}", step_line(step, p, None)));
            if let Some((at, prev, n)) = &mut last {
                if *prev == line && step.errors.is_empty() {
                    *n += 1;
                    let a = &mut self.atoms[*at];
                    a.text = format!("{} (×{n})", prev.0);
                    a.local = prev.1.as_ref().map(|l| format!("{l} (×{n})"));
                    continue;
                }
            }
            let at = self.line(step_priority(step), FINDINGS, line.clone(), None);
            last = Some((at, line, 1));
            if let (Outcome::Ok, Some(Summary::Tail(tail))) = (step.outcome, &step.summary) {
                if step.errors.is_empty() && !step.repeated {
                    self.suffix(at, t.both(&|_| format!(": {tail}")));
                }
            }
            for &e in &step.errors {
                let error = &f.errors.items[e];
                self.line(P_ERROR, FINDINGS, t.both(&|_| format!("  - {error}")), None);
                last = None;
            }
        }
    }

    /// Files and Artifacts: every path the agent named, by the strongest role it played, one
    /// inline list per role.
    fn files(&mut self, f: &Facts, t: &Tongues) {
        let (en_p, zh_p) = (&t.en, &t.zh);
        for (role, header) in [
            (PathRole::Edited, [en_p.edited, zh_p.edited]),
            (PathRole::Written, [en_p.written, zh_p.written]),
            (PathRole::Read, [en_p.read, zh_p.read]),
            (PathRole::Named, [en_p.named, zh_p.named]),
        ] {
            let mut paths = f.paths_with(role);
            if role == PathRole::Named {
                // A path only named in a command or an error line is in that line already.
                paths.retain(|p| !f.in_labels.seen.contains(p));
            }
            if paths.is_empty() {
                continue;
            }
            let group = self.group(header);
            for path in paths {
                let edits = f.edits.get(&path).copied().unwrap_or(0);
                let (text, local) = t.both(&|p| {
                    if edits > 1 {
                        format!("`{path}` ({edits}{}", p.edits)
                    } else {
                        format!("`{path}`")
                    }
                });
                self.atoms.push(Atom {
                    prio: P_PATH,
                    section: FILES,
                    group,
                    shape: Shape::Item,
                    cut: None,
                    text,
                    local,
                });
            }
        }
    }

    /// Decisions, open questions (commands whose program never succeeded afterwards first),
    /// the next step the agent announced.
    fn open_ends(&mut self, f: &Facts, t: &Tongues) {
        for d in &f.decisions {
            self.line(P_SENTENCE, DECISIONS, t.both(&|_| format!("- {d}")), None);
        }
        for step in unresolved(&f.steps) {
            let texts = t.both(&|p| format!("{}{}", p.still_failing, step_line(step, p, Some(CAP_UNRESOLVED))));
            self.line(P_UNRESOLVED, QUESTIONS, texts, None);
        }
        for q in &f.questions {
            self.line(P_SENTENCE, QUESTIONS, t.both(&|_| format!("- {q}")), None);
        }
        if let Some(n) = &f.next {
            self.line(P_NEXT, NEXT, t.both(&|_| format!("- {n}")), Some(n.len()));
        }
    }

    fn group(&mut self, header: [&'static str; 2]) -> usize {
        self.headers.push(header);
        self.headers.len() - 1
    }

    /// Adds a line; `cut_tail`: the length in bytes of its last part that may be cut.
    fn line(&mut self, prio: u8, section: usize, (text, local): Texts, cut_tail: Option<usize>) -> usize {
        let group = self.group(["", ""]);
        self.atoms.push(Atom {
            prio,
            section,
            group,
            shape: Shape::Line,
            cut: cut_tail.map(|n| text.len() - n),
            text,
            local,
        });
        self.atoms.len() - 1
    }

    fn suffix(&mut self, of: usize, (text, local): Texts) {
        let a = &self.atoms[of];
        let (section, group) = (a.section, a.group);
        self.atoms.push(Atom {
            prio: P_TAIL,
            section,
            group,
            shape: Shape::Suffix(of),
            cut: None,
            text,
            local,
        });
    }

    /// An atom's cost in English: its text, plus its newline (a line), or its list header and
    /// newline (the first item of a list) or `, ` (a later item).
    fn cost(&self, a: &Atom, text_len: usize, first_in_group: bool) -> usize {
        text_len
            + match a.shape {
                Shape::Line => 1,
                Shape::Suffix(_) => 0,
                Shape::Item if first_in_group => len16(self.headers[a.group][0]) + 1,
                Shape::Item => 2,
            }
    }

    /// The report within `limit` UTF-16 units, or `None` when not even the skeleton fits.
    ///
    /// The choice is made on the English costs (the longer ones), so a Chinese report keeps
    /// exactly the atoms an English one keeps.
    pub(super) fn render(&self, limit: usize) -> Option<String> {
        let p = Language::En.phrases();
        let headings: usize = Language::En.sections().iter().map(|h| len16(h) + 1).sum::<usize>() + 4;
        let mut full = headings;
        let mut filled = [false; 5];
        let mut open = vec![false; self.headers.len()];
        for a in &self.atoms {
            full += self.cost(a, len16(&a.text), !open[a.group]);
            open[a.group] = true;
            filled[a.section] = true;
        }
        full += filled.iter().filter(|f| !**f).count() * (len16(p.none) + 1);
        if full <= limit {
            return Some(self.write(&vec![Take::Whole; self.atoms.len()], None));
        }
        let total = self.atoms.len();
        let marker_cost = len16(&Language::En.marker(total, total, limit)) + 2;
        let empty = len16(p.none).max(len16(p.omitted)) + 1;
        let budget = limit.checked_sub(marker_cost)?;
        let mut used = headings + 5 * empty;
        if used > budget {
            return None;
        }
        let mut taken = vec![Take::No; total];
        let mut open = vec![false; self.headers.len()];
        let mut filled = [false; 5];
        let mut kept = 0;
        for level in 0..LEVELS {
            for (i, a) in self.atoms.iter().enumerate() {
                if a.prio != level {
                    continue;
                }
                if let Shape::Suffix(of) = a.shape {
                    if matches!(taken[of], Take::No) {
                        continue;
                    }
                }
                // Taking the first atom of a section frees its placeholder line.
                let freed = if filled[a.section] { 0 } else { empty };
                let room = budget + freed - used;
                let whole = self.cost(a, len16(&a.text), !open[a.group]);
                let (take, cost) = if whole <= room {
                    (Take::Whole, whole)
                } else if let Some(head) = a.cut {
                    // Cut the verbatim tail to what is left after the fixed head.
                    let fixed = self.cost(a, len16(&a.text[..head]), !open[a.group]);
                    if room < fixed + MIN_CUT {
                        continue;
                    }
                    let kept_tail = cap(&a.text[head..], room - fixed);
                    (Take::Cut(room - fixed), fixed + len16(&kept_tail))
                } else {
                    continue;
                };
                used = used + cost - freed;
                open[a.group] = true;
                filled[a.section] = true;
                taken[i] = take;
                kept += 1;
            }
        }
        let marker = self.language.marker(total - kept, total, limit);
        let out = self.write(&taken, Some(&marker));
        debug_assert!(len16(&out) <= limit, "report {} > limit {limit}", len16(&out));
        Some(out)
    }

    /// Renders the taken atoms in report order and the report's language, then the marker when
    /// one is given.
    fn write(&self, taken: &[Take], marker: Option<&str>) -> String {
        let p = self.language.phrases();
        let local = usize::from(self.language == Language::Zh);
        let mut out = String::new();
        let mut any = [false; 5];
        let mut dropped = [false; 5];
        let mut bodies: [String; 5] = Default::default();
        let mut open_group = usize::MAX;
        for (a, t) in self.atoms.iter().zip(taken) {
            let text = a.local.as_deref().unwrap_or(&a.text);
            let text = match t {
                Take::No => {
                    dropped[a.section] = true;
                    continue;
                }
                Take::Whole => std::borrow::Cow::Borrowed(text),
                Take::Cut(units) => {
                    // The cut part is the verbatim tail, the same bytes in both languages.
                    let tail = a.text.len() - a.cut.unwrap_or(a.text.len());
                    let (head, rest) = text.split_at(text.len() - tail);
                    std::borrow::Cow::Owned(format!("{head}{}", cap(rest, *units)))
                }
            };
            let body = &mut bodies[a.section];
            any[a.section] = true;
            match a.shape {
                Shape::Line => {
                    body.push_str(&text);
                    body.push('\n');
                }
                Shape::Suffix(_) => {
                    // The parent line was written last in this section: insert before its newline.
                    body.pop();
                    body.push_str(&text);
                    body.push('\n');
                }
                Shape::Item => {
                    if open_group == a.group {
                        body.pop();
                        body.push_str(", ");
                    } else {
                        body.push_str(self.headers[a.group][local]);
                    }
                    body.push_str(&text);
                    body.push('\n');
                }
            }
            open_group = a.group;
        }
        for (si, heading) in self.language.sections().iter().enumerate() {
            if si > 0 {
                out.push('\n');
            }
            out.push_str(heading);
            out.push('\n');
            if any[si] {
                out.push_str(&bodies[si]);
            } else {
                out.push_str(if dropped[si] { p.omitted } else { p.none });
                out.push('\n');
            }
        }
        if let Some(m) = marker {
            out.push('\n');
            out.push_str(m);
            out.push('\n');
        }
        out
    }
}

/// A step's line: `$ command (+N lines) → exit 1`, `read_file src/a.rs → 120 lines`; a label
/// longer than `head + tail` chars (`short`) keeps its head and tail around `…`.
fn step_line(step: &Step, p: &Phrases, short: Option<(usize, usize)>) -> String {
    let mut s = String::with_capacity(step.label.len() + 32);
    if step.kind == ToolKind::Shell {
        s.push_str("$ ");
    }
    match short {
        Some((head, tail)) if len16(&step.label) > head + tail + 1 => {
            s.push_str(cap(&step.label, head + 1).trim_end_matches('…'));
            s.push('…');
            let chars: Vec<char> = step.label.chars().collect();
            let mut units = 0;
            let mut from = chars.len();
            while from > 0 && units + chars[from - 1].len_utf16() <= tail {
                from -= 1;
                units += chars[from].len_utf16();
            }
            s.extend(&chars[from..]);
        }
        _ => s.push_str(&step.label),
    }
    if step.more_lines > 0 {
        s.push_str(p.more_lines.0);
        s.push_str(&step.more_lines.to_string());
        s.push_str(p.more_lines.1);
    }
    match (step.outcome, &step.summary) {
        (Outcome::Pending, _) => {}
        (Outcome::Failed(Some(code)), _) => {
            s.push_str(p.exit);
            s.push_str(&code.to_string());
        }
        (Outcome::Failed(None), _) => s.push_str(p.failed),
        (Outcome::Ok, Some(Summary::Listing(n))) => {
            s.push_str(" → ");
            s.push_str(&n.to_string());
            s.push_str(p.entries);
        }
        (Outcome::Ok, Some(Summary::Lines(n))) => {
            s.push_str(" → ");
            s.push_str(&n.to_string());
            s.push_str(p.lines);
        }
        (Outcome::Ok, Some(Summary::Empty)) => s.push_str(p.no_output),
        (Outcome::Ok, _) => s.push_str(p.ok),
    }
    if step.repeated {
        s.push_str(p.repeated);
    }
    s
}

/// Failed shell steps whose program never succeeded later in the region, newest first (at most
/// `MAX_UNRESOLVED`): what the agent left broken.
fn unresolved(steps: &[Step]) -> Vec<&Step> {
    let mut out: Vec<&Step> = Vec::new();
    let mut fixed: HashSet<&str, FxBuild> = HashSet::default();
    for step in steps.iter().rev() {
        let Some(key) = step.key.as_deref() else { continue };
        let program = super::facts::primary_program(key);
        match step.outcome {
            Outcome::Ok => {
                fixed.insert(program);
            }
            Outcome::Failed(_)
                if !fixed.contains(&program)
                    && out.len() < MAX_UNRESOLVED
                    && !out.iter().any(|s| s.key == step.key) =>
            {
                out.push(step);
            }
            _ => {}
        }
    }
    out
}

/// Whether an atom made it into the report, whole or with its tail cut to this many units.
#[derive(Clone, Copy)]
enum Take {
    No,
    Whole,
    Cut(usize),
}

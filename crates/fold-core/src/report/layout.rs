//! Layout and budget: the report's sections, the priority groups, the greedy fit, and its
//! English and Chinese text.
//!
//! Contract. `Plan::new` sets the facts into groups in the heuristics' priority order, each
//! bound to a section and a rank within it. `Plan::render(limit)` counts costs without
//! rendering: when everything fits it writes the whole report; otherwise it takes items greedily
//! in priority order (skipping one that does not fit, cutting the next step when that helps)
//! and closes with a line saying how many were left out. The result is at most `limit` UTF-16
//! units, every section heading appears once and in order (an empty section says so), and
//! `None` means not even that skeleton fits.

use std::rc::Rc;

use super::facts::Facts;
use super::scan::{cap, len16};
use super::Language;

const MIN_CUT: usize = 40;

impl Language {
    fn phrases(self) -> Phrases {
        match self {
            Self::En => Phrases {
                none: "- (none)",
                omitted: "- (omitted)",
                errors: "- Errors and failures:",
                values: "- Values the outputs established: ",
                tails: "- Last lines of each output:",
                output: "tool output",
            },
            Self::Zh => Phrases {
                none: "- （无）",
                omitted: "- （已省略）",
                errors: "- 错误与失败：",
                values: "- 输出确认的值：",
                tails: "- 各输出的最后几行：",
                output: "工具输出",
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

struct Phrases {
    none: &'static str,
    omitted: &'static str,
    errors: &'static str,
    values: &'static str,
    tails: &'static str,
    output: &'static str,
}

const FINDINGS: usize = 0;
const FILES: usize = 1;
const DECISIONS: usize = 2;
const QUESTIONS: usize = 3;
const NEXT: usize = 4;

/// A run of lines inside a section: an optional header line, then items (one per line, or all on
/// the header line separated by `, ` when `inline`). A `cut` group holds one text that may be
/// shortened to fit.
struct Group {
    section: usize,
    /// Render rank within the section.
    order: u8,
    header: &'static str,
    inline: bool,
    cut: bool,
    /// Written around every item.
    affix: (&'static str, &'static str),
    items: Vec<Rc<str>>,
}

impl Group {
    fn new(section: usize, order: u8, prefix: &'static str, items: &[Rc<str>]) -> Self {
        Self {
            section,
            order,
            header: "",
            inline: false,
            cut: false,
            affix: (prefix, ""),
            items: items.to_vec(),
        }
    }

    /// An item's cost: its text and affixes, plus its newline (or `, ` after an inline first).
    fn cost(&self, item: &str, nth: usize) -> usize {
        let sep = if !self.inline {
            1
        } else if nth > 0 {
            2
        } else {
            0
        };
        len16(self.affix.0) + len16(item) + len16(self.affix.1) + sep
    }
}

/// The report's groups in priority order, with the section order kept for rendering.
pub(super) struct Plan {
    language: Language,
    groups: Vec<Group>,
    /// Render order of group indices within each section.
    layout: [Vec<usize>; 5],
}

impl Plan {
    pub(super) fn new(f: &Facts, language: Language, messages: usize, visible: usize) -> Self {
        let p = language.phrases();
        let other_paths: Vec<Rc<str>> = f
            .other_paths
            .items
            .iter()
            .filter(|s| !f.arg_paths.seen.contains(*s))
            .cloned()
            .collect();
        let commands: Vec<Rc<str>> = f
            .commands
            .items
            .iter()
            .map(|c| {
                if c.contains('\n') {
                    c.lines().collect::<Vec<_>>().join("\n    ").into()
                } else {
                    c.clone()
                }
            })
            .collect();
        let tails: Vec<Rc<str>> = f
            .tails
            .iter()
            .map(|t| {
                let label = if t.label.is_empty() { p.output } else { &t.label };
                format!("  - {label} →\n    {}", t.lines.join("\n    ")).into()
            })
            .collect();
        let next: Vec<Rc<str>> = f.next.iter().map(|s| s.as_str().into()).collect();
        let counts: Rc<str> = language.counts(messages, f.calls, f.failed, visible).into();
        // Priority order. `order` is the render order within a section: findings are earlier
        // observations, conclusions, errors, values, tails, counts; files are argument paths,
        // other paths, commands.
        let mut groups = vec![
            Group {
                affix: ("- `", "`"),
                ..Group::new(FILES, 0, "", &f.arg_paths.items)
            },
            Group::new(FILES, 2, "- $ ", &commands),
            Group {
                header: p.errors,
                ..Group::new(FINDINGS, 2, "  - ", &f.errors.items)
            },
            Group {
                cut: true,
                ..Group::new(NEXT, 0, "", &next)
            },
            Group::new(FINDINGS, 1, "- ", &f.conclusions.items),
            Group {
                affix: ("- `", "`"),
                ..Group::new(FILES, 1, "", &other_paths)
            },
            Group::new(DECISIONS, 0, "- ", &f.decisions.items),
            Group::new(QUESTIONS, 0, "- ", &f.questions.items),
            Group::new(FINDINGS, 0, "- ", &f.notes.items),
            Group {
                header: p.values,
                inline: true,
                affix: ("`", "`"),
                ..Group::new(FINDINGS, 3, "", &f.values.items)
            },
            Group {
                header: p.tails,
                ..Group::new(FINDINGS, 4, "", &tails)
            },
            Group::new(FINDINGS, 5, "", &[counts]),
        ];
        groups.retain(|g| !g.items.is_empty());
        let mut layout: [Vec<usize>; 5] = Default::default();
        for (i, g) in groups.iter().enumerate() {
            layout[g.section].push(i);
        }
        for l in &mut layout {
            l.sort_by_key(|&i| groups[i].order);
        }
        Self {
            language,
            groups,
            layout,
        }
    }

    /// The report within `limit` UTF-16 units, or `None` when not even the skeleton fits.
    ///
    /// Costs are counted, not rendered: a line costs its UTF-16 length plus its newline; a
    /// section with nothing in it costs its placeholder line (the longer of the two when
    /// counting before the choice is known, so the count is an upper bound).
    pub(super) fn render(&self, limit: usize) -> Option<String> {
        let p = self.language.phrases();
        let headings: usize = self.language.sections().iter().map(|h| len16(h) + 1).sum::<usize>() + 4;
        let header = |g: &Group| if g.header.is_empty() { 0 } else { len16(g.header) + 1 };
        let mut full = headings;
        for layout in &self.layout {
            let body: usize = layout
                .iter()
                .map(|&gi| {
                    let g = &self.groups[gi];
                    header(g) + g.items.iter().enumerate().map(|(n, s)| g.cost(s, n)).sum::<usize>()
                })
                .sum();
            full += if body == 0 { len16(p.none) + 1 } else { body };
        }
        if full <= limit {
            let taken = self
                .groups
                .iter()
                .map(|g| vec![Take::Whole; g.items.len()])
                .collect::<Vec<_>>();
            return Some(self.write(&taken, None));
        }
        let total: usize = self.groups.iter().map(|g| g.items.len()).sum();
        let marker_cost = len16(&self.language.marker(total, total, limit)) + 2;
        let empty = (len16(p.none).max(len16(p.omitted)) + 1) as isize;
        let budget = limit as isize - marker_cost as isize;
        let mut used = headings as isize + 5 * empty;
        if used > budget {
            return None;
        }
        let mut in_section = [0usize; 5];
        let mut taken: Vec<Vec<Take>> = self.groups.iter().map(|g| vec![Take::No; g.items.len()]).collect();
        let mut kept = 0;
        for (gi, g) in self.groups.iter().enumerate() {
            let mut in_group = 0usize;
            for (ii, it) in g.items.iter().enumerate() {
                let mut fixed = 0isize;
                if in_group == 0 {
                    fixed += header(g) as isize;
                    if in_section[g.section] == 0 {
                        fixed -= empty;
                    }
                }
                let room = budget - used - fixed;
                let cost = g.cost(it, in_group) as isize;
                let take = if cost <= room {
                    used += fixed + cost;
                    Take::Whole
                } else if g.cut && room - cost + (len16(it) as isize) >= (MIN_CUT + 4) as isize {
                    let mut cut = cap(it, (room - cost + len16(it) as isize - 4) as usize).into_owned();
                    if cut.matches("```").count() % 2 == 1 {
                        cut.push_str("\n```");
                    }
                    used += fixed + g.cost(&cut, in_group) as isize;
                    Take::Cut(cut)
                } else {
                    continue;
                };
                taken[gi][ii] = take;
                in_group += 1;
                in_section[g.section] += 1;
                kept += 1;
            }
        }
        let marker = self.language.marker(total - kept, total, limit);
        let out = self.write(&taken, Some(&marker));
        debug_assert!(len16(&out) <= limit, "report {} > limit {limit}", len16(&out));
        Some(out)
    }

    /// Renders the chosen items in section order, then the marker when one is given.
    fn write(&self, taken: &[Vec<Take>], marker: Option<&str>) -> String {
        let p = self.language.phrases();
        let mut out = String::new();
        for (si, heading) in self.language.sections().iter().enumerate() {
            if si > 0 {
                out.push('\n');
            }
            out.push_str(heading);
            out.push('\n');
            let mut any = false;
            let mut dropped = false;
            for &gi in &self.layout[si] {
                let g = &self.groups[gi];
                let mut items = g.items.iter().zip(&taken[gi]).filter_map(|(s, t)| match t {
                    Take::No => None,
                    Take::Whole => Some(&**s),
                    Take::Cut(c) => Some(c.as_str()),
                });
                dropped |= taken[gi].iter().any(|t| matches!(t, Take::No));
                let Some(first) = items.next() else { continue };
                any = true;
                out.push_str(g.header);
                if !g.inline && !g.header.is_empty() {
                    out.push('\n');
                }
                for (n, s) in std::iter::once(first).chain(items).enumerate() {
                    if n > 0 {
                        out.push_str(if g.inline { ", " } else { "\n" });
                    }
                    out.push_str(g.affix.0);
                    out.push_str(s);
                    out.push_str(g.affix.1);
                }
                out.push('\n');
            }
            if !any {
                out.push_str(if dropped { p.omitted } else { p.none });
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

/// Whether an item made it into the report, whole or cut.
#[derive(Clone)]
enum Take {
    No,
    Whole,
    Cut(String),
}

//! The train of thought: what a compaction's checkpoint carries of the model's own thinking beside
//! its items, so the agent resumes where it was rather than from a list of facts.
//!
//! Contract. [`train_of_thought`] reads the replaced range's messages' facts (in order, each with
//! its event seq) and writes three parts, each within its own budget (UTF-16 units), in English
//! or Chinese; a part with nothing to say, or no budget, is left out, and so is the whole when
//! all three are:
//!
//! 1. **Latest words.** The model's last texts before the cut, verbatim (code blocks included):
//!    up to [`MAX_TEXTS`] of them, newest first as far as the budget goes, written oldest first,
//!    each under its seq. A newest
//!    text longer than the budget keeps its opening third and its end (what it was about, and
//!    what it was about to do), the middle named as left out.
//! 2. **Names in play.** The identifiers, paths and symbols the model wrote in the range
//!    ([`MessageFacts`]' names: its texts and call arguments), on one line, those it wrote in the
//!    most messages first, then the most recent; leaving out what the model still sees — the
//!    names the checkpoint's other text holds (`written`, with the latest words) and those the
//!    model wrote again in the kept tail. When the recall tool is reachable, the line says that
//!    it finds where each was used.
//! 3. **Open state of the work.** From the range's calls in order: the files edited or written
//!    since the last passing check (a shell command that ran code: not a read, a listing, a
//!    search or a file operation), or since the range began when none passed; the files the
//!    last passing check covered (done: not to be redone); the last failure, unless a later run
//!    of the same command passed, with its first error line; and the latest plan the model kept
//!    with a plan tool (`todo_write`, `update_plan`: its items by status).
//!
//! A pure function of its input; time linear in the range's facts (the names are counted in one
//! map, the checkpoint's text scanned once).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::rc::Rc;

use super::facts::{checked_calls, CheckedCall, MessageFacts, PlanStatus};
use super::scan::{cap, len16, name_tokens, FxBuild, Ordered};
use super::Language;

/// What the train of thought may take, and what the checkpoint already says.
#[derive(Debug, Clone, Copy)]
pub struct ThoughtOptions<'a> {
    pub language: Language,
    /// The latest words' budget.
    pub intent_chars: usize,
    /// The names line's budget.
    pub names_chars: usize,
    /// The open state's budget.
    pub state_chars: usize,
    /// The checkpoint's other text: a name it holds is not listed again.
    pub written: &'a str,
    /// The recall tool's name, when the model can call it.
    pub recall: Option<&'a str>,
}

/// The shortest cut text worth writing: below it, the latest words are left out.
const MIN_WORDS: usize = 120;
/// The most texts the latest words carry (the newest first).
const MAX_TEXTS: usize = 3;
/// The most lines of one kind in the open state (files, plan items).
const MAX_STATE_ITEMS: usize = 8;
/// A state line's copied text (a command, an error line, a plan item) keeps this many chars.
const CAP_STATE_LINE: usize = 160;

struct Phrases {
    latest: &'static str,
    earlier: &'static str,
    /// Around a text's seq: ` (seq ` … `):`.
    seq: (&'static str, &'static str),
    left_out: (&'static str, &'static str),
    names: &'static str,
    names_recall: (&'static str, &'static str),
    state: &'static str,
    edited_since: &'static str,
    edited_unchecked: &'static str,
    verified: (&'static str, &'static str),
    failure: (&'static str, &'static str),
    plan: &'static str,
    done: &'static str,
    doing: &'static str,
    todo: &'static str,
    more: (&'static str, &'static str),
}

fn phrases(language: Language) -> Phrases {
    match language {
        Language::En => Phrases {
            latest: "Your latest words",
            earlier: "Your words",
            seq: (" (seq ", "):"),
            left_out: ("\n[… ", " chars of this text left out here …]\n"),
            names: "Names in play: ",
            names_recall: (" (`", "` finds where each was used)"),
            state: "Open state of the work:",
            edited_since: "- Edited since the last passing run: ",
            edited_unchecked: "- Edited, no passing run since: ",
            verified: ("- Edits a passing run checked (seq ", "): "),
            failure: ("- Last failure (seq ", "): "),
            plan: "- Your plan: ",
            done: "done: ",
            doing: "in progress: ",
            todo: "to do: ",
            more: (" (+", " more)"),
        },
        Language::Zh => Phrases {
            latest: "你最近的原话",
            earlier: "你的原话",
            seq: ("（seq ", "）："),
            left_out: ("\n[… 此处省略了这段文字的 ", " 个字符 …]\n"),
            names: "在用的名字：",
            names_recall: ("（`", "` 可找到每个名字的出处）"),
            state: "工作的未完成状态：",
            edited_since: "- 上次通过的运行之后修改过：",
            edited_unchecked: "- 已修改，之后没有通过的运行：",
            verified: ("- 已由通过的运行验证的修改（seq ", "）："),
            failure: ("- 最近一次失败（seq ", "）："),
            plan: "- 你的计划：",
            done: "已完成：",
            doing: "进行中：",
            todo: "待办：",
            more: ("（另 ", " 项）"),
        },
    }
}

/// The train of thought of a range given as its messages' facts with their seqs, in order; `tail`
/// is the kept tail's messages' facts (names the model wrote there are not listed). Empty when
/// there is nothing to say.
pub fn train_of_thought(
    range: &[(u32, &MessageFacts)],
    tail: &[&MessageFacts],
    options: &ThoughtOptions<'_>,
) -> String {
    let p = phrases(options.language);
    let mut out = String::new();
    let words = latest_words(range, options.intent_chars, &p);
    let state = open_state(range, options.state_chars, &p);
    let names = names_in_play(range, tail, options, &[&words, &state], &p);
    for part in [words, names, state] {
        if part.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&part);
    }
    out
}

/// Part 1: the latest texts, verbatim, within `budget`.
fn latest_words(range: &[(u32, &MessageFacts)], budget: usize, p: &Phrases) -> String {
    let mut picked: Vec<(u32, String)> = Vec::new();
    let mut used = 0;
    for &(seq, m) in range.iter().rev() {
        if picked.len() == MAX_TEXTS {
            break;
        }
        let Some(text) = m.said() else { continue };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let label = if picked.is_empty() { p.latest } else { p.earlier };
        let head = format!("{label}{}{seq}{}\n", p.seq.0, p.seq.1);
        let whole = len16(&head) + len16(text) + 1;
        if used + whole <= budget {
            used += whole;
            picked.push((seq, format!("{head}{text}")));
            continue;
        }
        if picked.is_empty() {
            // The newest text alone is longer than the budget: its opening third and its end.
            let room = budget.saturating_sub(len16(&head) + len16(p.left_out.0) + len16(p.left_out.1) + 8);
            if room >= MIN_WORDS {
                let first = cap_chars(text, room / 3);
                let last = tail_chars(text, room - len16(first));
                let gone = len16(text) - len16(first) - len16(last);
                picked.push((
                    seq,
                    format!("{head}{first}{}{gone}{}{last}", p.left_out.0, p.left_out.1),
                ));
            }
        }
        break;
    }
    picked.reverse();
    picked.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join("\n")
}

/// The longest prefix of `s` of at most `n` UTF-16 units, on a char boundary.
fn cap_chars(s: &str, n: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > n {
            return &s[..i];
        }
    }
    s
}

/// The longest suffix of `s` of at most `n` UTF-16 units, on a char boundary.
fn tail_chars(s: &str, n: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices().rev() {
        units += c.len_utf16();
        if units > n {
            return &s[i + c.len_utf8()..];
        }
    }
    s
}

/// How a name was used in the range: in how many messages, the last of them, and its rank in
/// first-seen order.
struct Seen {
    messages: usize,
    last: usize,
    first: usize,
}

/// Part 2: the names the model wrote in the range and does not see otherwise.
fn names_in_play(
    range: &[(u32, &MessageFacts)],
    tail: &[&MessageFacts],
    options: &ThoughtOptions<'_>,
    also: &[&str],
    p: &Phrases,
) -> String {
    let mut seen: HashMap<Rc<str>, Seen, FxBuild> = HashMap::default();
    for (i, (_, m)) in range.iter().enumerate() {
        for name in m.names() {
            let first = seen.len();
            let entry = seen.entry(name.clone()).or_insert(Seen {
                messages: 0,
                last: i,
                first,
            });
            entry.messages += 1;
            entry.last = i;
        }
    }
    if seen.is_empty() || options.names_chars == 0 {
        return String::new();
    }
    // What the model still sees: the checkpoint's other text, the latest words, the open state,
    // and what it wrote in the kept tail.
    let mut known = name_tokens(options.written);
    for text in also {
        known.extend(name_tokens(text));
    }
    for m in tail {
        known.extend(m.names().iter().map(|n| &**n));
    }
    let mut ranked: Vec<(&Rc<str>, &Seen)> = seen.iter().filter(|(n, _)| !known.contains(&***n)).collect();
    ranked.sort_by(|(_, a), (_, b)| {
        b.messages
            .cmp(&a.messages)
            .then(b.last.cmp(&a.last))
            .then(a.first.cmp(&b.first))
    });
    let suffix = match options.recall {
        Some(tool) => format!("{}{tool}{}", p.names_recall.0, p.names_recall.1),
        None => String::new(),
    };
    let mut line = String::from(p.names);
    let fixed = len16(&line) + len16(&suffix);
    let mut listed = 0;
    for (name, _) in ranked {
        let item = len16(name) + 2 + if listed == 0 { 0 } else { 2 };
        if fixed + len16(&line) - len16(p.names) + item > options.names_chars {
            continue;
        }
        if listed > 0 {
            line.push_str(", ");
        }
        let _ = write!(line, "`{name}`");
        listed += 1;
    }
    if listed == 0 {
        return String::new();
    }
    line.push_str(&suffix);
    line
}

/// Part 3: the open state, from the range's calls in order: what was edited since the last
/// passing check, what that check covered, the last failure still standing, the latest plan;
/// under the heading, the lines that fit the budget.
fn open_state(range: &[(u32, &MessageFacts)], budget: usize, p: &Phrases) -> String {
    let calls: Vec<(u32, CheckedCall)> = checked_calls(range.iter().copied());
    let last_pass = calls.iter().rposition(|(_, c)| c.check && c.passed());
    let lines = [
        edited_line(&calls, last_pass, p),
        verified_line(&calls, last_pass, p),
        failure_line(&calls, p),
        plan_line(range, p),
    ];
    fit_state(lines.into_iter().flatten(), budget, p)
}

/// The files the calls that did not fail edited or wrote, first seen first.
fn changed_by(calls: &[(u32, CheckedCall)]) -> Ordered {
    let mut changed = Ordered::default();
    for (_, c) in calls {
        if !c.failed() {
            for path in &c.changed {
                changed.push(path);
            }
        }
    }
    changed
}

/// The files edited since the last passing check (or at all, when none passed).
fn edited_line(calls: &[(u32, CheckedCall)], last_pass: Option<usize>, p: &Phrases) -> Option<String> {
    let open = changed_by(&calls[last_pass.map_or(0, |i| i + 1)..]);
    if open.items.is_empty() {
        return None;
    }
    let label = if last_pass.is_some() {
        p.edited_since
    } else {
        p.edited_unchecked
    };
    Some(format!("{label}{}", list(&open.items, p)))
}

/// The last passing check and the files changed before it, which it covered (done: not to be
/// redone).
fn verified_line(calls: &[(u32, CheckedCall)], last_pass: Option<usize>, p: &Phrases) -> Option<String> {
    let i = last_pass?;
    let covered = changed_by(&calls[..i]);
    if covered.items.is_empty() {
        return None;
    }
    let (seq, check) = &calls[i];
    Some(format!(
        "{}{seq}, `{}`{}{}",
        p.verified.0,
        cap(&check.label, CAP_STATE_LINE),
        p.verified.1,
        list(&covered.items, p)
    ))
}

/// The last failure with its first error line, unless a later run of the same command passed.
fn failure_line(calls: &[(u32, CheckedCall)], p: &Phrases) -> Option<String> {
    let f = calls.iter().rposition(|(_, c)| c.failed())?;
    let (seq, failed) = &calls[f];
    if calls[f + 1..].iter().any(|(_, c)| c.passed() && c.same_run(failed)) {
        return None;
    }
    let mut line = format!(
        "{}{seq}{}`{}`",
        p.failure.0,
        p.failure.1,
        cap(&failed.label, CAP_STATE_LINE)
    );
    if let Some(e) = &failed.error {
        let _ = write!(line, "\n  {}", cap(e, CAP_STATE_LINE));
    }
    Some(line)
}

/// The latest plan the model kept with a plan tool: its items by status (done, doing, to do).
fn plan_line(range: &[(u32, &MessageFacts)], p: &Phrases) -> Option<String> {
    let plan = range.iter().rev().find_map(|(_, m)| m.plan())?;
    let mut parts = Vec::new();
    for (status, label) in [
        (PlanStatus::Done, p.done),
        (PlanStatus::Doing, p.doing),
        (PlanStatus::Todo, p.todo),
    ] {
        let items: Vec<&str> = plan.iter().filter(|(s, _)| *s == status).map(|(_, t)| &**t).collect();
        if items.is_empty() {
            continue;
        }
        let shown: Vec<String> = items
            .iter()
            .take(MAX_STATE_ITEMS)
            .map(|t| cap(t, CAP_STATE_LINE / 2).into_owned())
            .collect();
        let more = if items.len() > shown.len() {
            format!("{}{}{}", p.more.0, items.len() - shown.len(), p.more.1)
        } else {
            String::new()
        };
        parts.push(format!("{label}{}{more}", shown.join("; ")));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!("{}{}", p.plan, parts.join(" · ")))
}

/// Within the budget: the heading, then the lines in order while they fit (a line that does
/// not fit is left out, a later shorter one may still fit); empty when none fits.
fn fit_state(lines: impl Iterator<Item = String>, budget: usize, p: &Phrases) -> String {
    let mut out = String::from(p.state);
    for line in lines {
        if len16(&out) + 1 + len16(&line) > budget {
            continue;
        }
        out.push('\n');
        out.push_str(&line);
    }
    if out.len() == p.state.len() {
        return String::new();
    }
    out
}

/// Paths as a list, at most [`MAX_STATE_ITEMS`], the rest counted.
fn list(items: &[Rc<str>], p: &Phrases) -> String {
    let shown: Vec<String> = items.iter().take(MAX_STATE_ITEMS).map(|i| format!("`{i}`")).collect();
    let mut out = shown.join(", ");
    if items.len() > MAX_STATE_ITEMS {
        let _ = write!(out, "{}{}{}", p.more.0, items.len() - MAX_STATE_ITEMS, p.more.1);
    }
    out
}

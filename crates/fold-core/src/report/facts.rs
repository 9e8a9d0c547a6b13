//! Extraction: one walk over the region's messages that gathers every candidate item.
//!
//! Contract. `Facts::extract` is a pure function of the messages, linear in their size: it
//! reads tool-call arguments (commands, argument paths), tool outputs (error lines, paths,
//! values, tails) and message text (paths; assistant sentences sorted into conclusions,
//! decisions, questions, observations and the next step), in the heuristics of the parent
//! module. Every list is deduplicated in first-seen order and every item is already capped to
//! its line length; choosing what fits the budget is `layout`'s job.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use super::input::{join_text, Block, Message, Role};
use super::scan::{
    cap, has_cue, is_error_line, len16, scan_paths, sentences, tokens_of, value_shaped, FxBuild, Ordered, CAP_LINE,
};
use super::READ_TOOL_CUES;

const SHELL_TOOL_CUES: [&str; 6] = ["bash", "shell", "exec", "terminal", "command", "run"];
const COMMAND_KEYS: [&str; 6] = ["command", "cmd", "script", "commands", "shellcommand", "bashcommand"];
const PATH_KEYS: [&str; 18] = [
    "path",
    "file",
    "filepath",
    "filename",
    "paths",
    "files",
    "dir",
    "directory",
    "cwd",
    "workdir",
    "workingdirectory",
    "destination",
    "dest",
    "oldpath",
    "newpath",
    "notebookpath",
    "sourcepath",
    "targetpath",
];
const CONTENT_KEYS: [&str; 15] = [
    "content",
    "text",
    "newstring",
    "oldstring",
    "newstr",
    "oldstr",
    "filetext",
    "patch",
    "diff",
    "code",
    "body",
    "data",
    "edits",
    "replacement",
    "input",
];
const DECISION_CUES: [&str; 24] = [
    "decide",
    "decided",
    "decision",
    "chose",
    "choose",
    "chosen",
    "will",
    "i'll",
    "we'll",
    "use",
    "using",
    "instead",
    "switch to",
    "prefer",
    "opt for",
    "going to",
    "let's",
    "决定",
    "选择",
    "采用",
    "改用",
    "打算",
    "使用",
    "将",
];
const QUESTION_CUES: [&str; 12] = [
    "todo",
    "fixme",
    "unknown",
    "unclear",
    "not sure",
    "unresolved",
    "open question",
    "待定",
    "未知",
    "不确定",
    "不清楚",
    "待确认",
];
const NEXT_CUES: [&str; 16] = [
    "next",
    "then",
    "now",
    "should",
    "need to",
    "needs to",
    "will",
    "let me",
    "let's",
    "todo",
    "下一步",
    "接下来",
    "然后",
    "需要",
    "应该",
    "将",
];

/// Sentences that announce an action rather than report a finding (skipped as observations).
const INTENT_CUES: [&str; 10] = [
    "let me", "i'll", "first", "now", "先", "查看", "看看", "复现", "让我", "我来",
];

const TAIL_LINES: usize = 3;
const CAP_TAIL_LINE: usize = 200;
const CAP_COMMAND: usize = 600;
const CAP_LABEL: usize = 80;
const CAP_SENTENCE: usize = 300;
const CAP_NEXT: usize = 400;
const CAP_CONCLUSIONS: usize = 1200;

pub(super) struct Tail {
    pub(super) label: String,
    pub(super) lines: Vec<String>,
}

/// Everything extracted from the region, before the budget.
#[derive(Default)]
pub(super) struct Facts {
    pub(super) arg_paths: Ordered,
    pub(super) other_paths: Ordered,
    pub(super) commands: Ordered,
    pub(super) errors: Ordered,
    pub(super) decisions: Ordered,
    pub(super) questions: Ordered,
    pub(super) values: Ordered,
    pub(super) tails: Vec<Tail>,
    /// Unplaced sentences of the last assistant text (its conclusions) and of earlier ones.
    pub(super) conclusions: Ordered,
    pub(super) notes: Ordered,
    pub(super) next: Option<String>,
    pub(super) calls: usize,
    pub(super) failed: usize,
}

/// What the extractor remembers about a call until its result arrives.
struct CallInfo {
    label: String,
    reads: bool,
}

impl Facts {
    pub(super) fn extract(messages: &[Message]) -> Self {
        let mut f = Facts::default();
        let mut calls: HashMap<&str, CallInfo, FxBuild> = HashMap::default();
        // Values: identifier/number tokens of assistant text, kept when an output has them too.
        let mut candidates: HashMap<&str, bool, FxBuild> = HashMap::default();
        let mut order: Vec<&str> = Vec::new();
        for m in messages.iter().filter(|m| m.role == Role::Assistant) {
            for b in &m.content {
                if let Block::Text { text } = b {
                    for tok in tokens_of(text).filter(|t| value_shaped(t) && !t.contains('/')) {
                        if !candidates.contains_key(tok) {
                            candidates.insert(tok, false);
                            order.push(tok);
                        }
                    }
                }
            }
        }
        let mut texts: Vec<String> = Vec::new();
        for m in messages {
            if m.role == Role::Tool {
                let out = join_text(&m.content);
                let is_error = m.is_error.unwrap_or(false);
                f.output(&calls, m.call_id.as_deref(), &out, is_error, &mut candidates);
                continue;
            }
            let mut text = String::new();
            for b in &m.content {
                match b {
                    Block::Text { text: t } => {
                        if m.role == Role::Assistant {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(t);
                        } else {
                            scan_paths(t, &mut f.other_paths);
                        }
                    }
                    Block::Reasoning { .. } | Block::Other => {}
                    Block::ToolCall { id, name, arguments } => {
                        f.calls += 1;
                        let label = f.call(name, arguments);
                        let lower = name.to_ascii_lowercase();
                        let reads = READ_TOOL_CUES.iter().any(|c| lower.contains(c)) && !is_shell(&lower);
                        calls.insert(id, CallInfo { label, reads });
                    }
                    Block::ToolResult {
                        tool_call_id,
                        content,
                        is_error,
                    } => {
                        let out = join_text(content);
                        f.output(&calls, Some(tool_call_id), &out, *is_error, &mut candidates);
                    }
                }
            }
            if !text.trim().is_empty() {
                scan_paths(&text, &mut f.other_paths);
                texts.push(text);
            }
        }
        // Sentences and values last: a value counts when any output, earlier or later, has it.
        let last = texts.len().saturating_sub(1);
        for (i, text) in texts.iter().enumerate() {
            f.mine_text(text, i == last);
        }
        for tok in order.into_iter().filter(|t| candidates.get(t) == Some(&true)) {
            f.values.push(tok);
        }
        f
    }

    /// Records a tool call; returns its label for the output tails.
    fn call(&mut self, name: &str, arguments: &Value) -> String {
        let lower = name.to_ascii_lowercase();
        let shell = is_shell(&lower);
        let parsed;
        let args = match arguments {
            Value::String(s) => match serde_json::from_str::<Value>(s) {
                Ok(v) => {
                    parsed = v;
                    &parsed
                }
                Err(_) => {
                    if shell {
                        self.command(s);
                    }
                    scan_paths(s, &mut self.arg_paths);
                    return label_of(name, shell.then_some(s.as_str()), None);
                }
            },
            v => v,
        };
        let mut command = None;
        match args {
            Value::String(s) if shell => command = Some(s.clone()),
            Value::Object(map) => {
                for (k, v) in map {
                    let k = norm_key(k);
                    if !COMMAND_KEYS.contains(&k.as_str()) {
                        continue;
                    }
                    let words = || v.as_array().into_iter().flatten().filter_map(Value::as_str);
                    match v {
                        Value::String(s) => command = command.or(Some(s.clone())),
                        Value::Array(_) if k == "commands" => words().for_each(|s| self.command(s)),
                        Value::Array(_) => command = command.or(Some(words().collect::<Vec<_>>().join(" "))),
                        _ => {}
                    }
                }
                if command.is_none() && shell {
                    let argv = map.get("args").or_else(|| map.get("argv")).and_then(Value::as_array);
                    if let Some(argv) = argv {
                        let program = ["program", "executable", "bin"]
                            .iter()
                            .find_map(|k| map.get(*k)?.as_str());
                        let words: Vec<&str> = program
                            .into_iter()
                            .chain(argv.iter().filter_map(Value::as_str))
                            .collect();
                        command = Some(words.join(" "));
                    }
                }
            }
            _ => {}
        }
        if let Some(c) = &command {
            self.command(c);
        }
        let before = self.arg_paths.items.len();
        self.arg_strings(args, false, false);
        let first_path = self.arg_paths.items.get(before).cloned();
        label_of(name, command.as_deref(), first_path.as_deref())
    }

    fn command(&mut self, c: &str) {
        let c = c.trim();
        if !c.is_empty() {
            self.commands.push(&cap(c, CAP_COMMAND));
        }
    }

    /// Walks argument strings for paths: whole values under path keys, token scans elsewhere.
    fn arg_strings(&mut self, v: &Value, path_key: bool, content: bool) {
        match v {
            Value::String(s) => {
                let t = s.trim();
                if path_key && !t.is_empty() && t.len() <= CAP_LINE && !t.contains(char::is_whitespace) {
                    self.arg_paths.push(t);
                } else if content {
                    scan_paths(s, &mut self.other_paths);
                } else {
                    scan_paths(s, &mut self.arg_paths);
                }
            }
            Value::Array(items) => items.iter().for_each(|i| self.arg_strings(i, path_key, content)),
            Value::Object(map) => {
                for (k, v) in map {
                    let k = norm_key(k);
                    let is_content = content || CONTENT_KEYS.contains(&k.as_str());
                    self.arg_strings(v, PATH_KEYS.contains(&k.as_str()), is_content);
                }
            }
            _ => {}
        }
    }

    /// Records one tool output: error lines, paths, tokens, tail.
    fn output(
        &mut self,
        calls: &HashMap<&str, CallInfo, FxBuild>,
        call_id: Option<&str>,
        out: &str,
        is_error: bool,
        candidates: &mut HashMap<&str, bool, FxBuild>,
    ) {
        let call = call_id.and_then(|id| calls.get(id));
        if is_error {
            self.failed += 1;
        }
        let errors = is_error || !call.is_some_and(|c| c.reads);
        let mut cue_lines = 0;
        let mut tail: VecDeque<&str> = VecDeque::with_capacity(TAIL_LINES + 1);
        for line in out.lines() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if errors && is_error_line(line) {
                cue_lines += 1;
                self.errors.push(&cap(line, CAP_LINE));
            }
            scan_paths(line, &mut self.other_paths);
            if !candidates.is_empty() {
                for tok in tokens_of(line) {
                    if let Some(found) = candidates.get_mut(tok) {
                        *found = true;
                    }
                }
            }
            if line.chars().any(char::is_alphanumeric) {
                tail.push_back(line);
                if tail.len() > TAIL_LINES {
                    tail.pop_front();
                }
            }
        }
        if is_error && cue_lines == 0 {
            if let Some(first) = out.lines().map(str::trim).find(|l| !l.is_empty()) {
                self.errors.push(&cap(first, CAP_LINE));
            }
        }
        if !tail.is_empty() {
            self.tails.push(Tail {
                label: call.map_or_else(String::new, |c| c.label.clone()),
                lines: tail.iter().map(|l| cap(l, CAP_TAIL_LINE).into_owned()).collect(),
            });
        }
    }

    /// Mines one assistant text: decisions, questions, values; for the last text also the next
    /// step and its conclusions; for earlier ones the observations (sentences with no cue).
    fn mine_text(&mut self, text: &str, last: bool) {
        let sentences = sentences(text);
        let next = if last {
            let lowered: Vec<String> = sentences.iter().map(|s| s.to_lowercase()).collect();
            let i = (0..sentences.len()).rev().find(|&i| has_cue(&lowered[i], &NEXT_CUES));
            i.or(sentences.len().checked_sub(1))
        } else {
            None
        };
        let mut conclusions = 0;
        for (i, s) in sentences.iter().enumerate() {
            if Some(i) == next {
                self.next = Some(cap(s, CAP_NEXT).into_owned());
                continue;
            }
            let lower = s.to_lowercase();
            if s.ends_with('?') || s.ends_with('？') || has_cue(&lower, &QUESTION_CUES) {
                self.questions.push(&cap(s, CAP_SENTENCE));
            } else if has_cue(&lower, &DECISION_CUES) {
                self.decisions.push(&cap(s, CAP_SENTENCE));
            } else if last && conclusions < CAP_CONCLUSIONS {
                conclusions += len16(s);
                self.conclusions.push(&cap(s, CAP_SENTENCE));
            } else if !last && !has_cue(&lower, &NEXT_CUES) && !has_cue(&lower, &INTENT_CUES) {
                self.notes.push(&cap(s, CAP_SENTENCE));
            }
        }
    }
}

fn is_shell(lower_name: &str) -> bool {
    lower_name == "sh" || SHELL_TOOL_CUES.iter().any(|c| lower_name.contains(c))
}

fn label_of(name: &str, command: Option<&str>, path: Option<&str>) -> String {
    match (command, path) {
        (Some(c), _) => format!("$ {}", cap(c.lines().next().unwrap_or("").trim(), CAP_LABEL)),
        (None, Some(p)) => cap(&format!("{name} {p}"), CAP_LABEL).into_owned(),
        (None, None) => cap(name, CAP_LABEL).into_owned(),
    }
}

fn norm_key(k: &str) -> String {
    k.chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

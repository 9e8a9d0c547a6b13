//! Extraction: one walk over the region's messages that gathers what the report says.
//!
//! Contract. `Facts::extract` is a pure function of the messages, linear in their size. It
//! turns every tool call into a `Step` (what ran, how it ended, the error lines its output
//! added, a one-line summary of the output), sorts the paths the agent named into roles
//! (edited, written, read, named), and reads the assistant's own text for its conclusion, the
//! next step it announced, and a few decisions and open questions. Error lines are
//! deduplicated across the whole region (first-seen order) and every item is already capped;
//! choosing what fits the budget is `layout`'s job. Nothing here copies an output whole: a
//! command keeps its first line, an output keeps its error lines and one summary line.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

use super::input::{join_text, Block, Message, Role};
use super::scan::{cap, collapse, has_cue, is_error_line, len16, scan_paths, sentences, FxBuild, Ordered, CAP_LINE};
use super::READ_TOOL_CUES;

const SHELL_TOOL_CUES: [&str; 6] = ["bash", "shell", "exec", "terminal", "command", "run"];
const EDIT_TOOL_CUES: [&str; 6] = ["edit", "replace", "patch", "apply", "insert", "modify"];
const WRITE_TOOL_CUES: [&str; 3] = ["write", "create", "save"];
const SEARCH_TOOL_CUES: [&str; 5] = ["grep", "search", "find", "glob", "list"];
const COMMAND_KEYS: [&str; 6] = ["command", "cmd", "script", "commands", "shellcommand", "bashcommand"];
const PATH_KEYS: [&str; 20] = [
    "path",
    "targetfile",
    "file",
    "filepath",
    "filename",
    "paths",
    "files",
    "dir",
    "dirpath",
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
/// Argument keys whose strings are file bodies, not names: never scanned for paths.
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
/// Argument keys that say what a search or non-shell call was about (its label).
const SUBJECT_KEYS: [&str; 4] = ["pattern", "query", "regex", "url"];
const DECISION_CUES: [&str; 17] = [
    "decide",
    "decided",
    "decision",
    "chose",
    "choose",
    "chosen",
    "instead",
    "switch to",
    "prefer",
    "opt for",
    "the fix is",
    "the fix should",
    "决定",
    "选择",
    "采用",
    "改用",
    "打算",
];
const QUESTION_CUES: [&str; 10] = [
    "todo",
    "fixme",
    "unclear",
    "not sure",
    "unresolved",
    "open question",
    "待定",
    "不确定",
    "不清楚",
    "待确认",
];
const NEXT_CUES: [&str; 14] = [
    "next",
    "then",
    "now",
    "should",
    "need to",
    "needs to",
    "let me",
    "let's",
    "下一步",
    "接下来",
    "然后",
    "需要",
    "应该",
    "将",
];
/// Programs whose output is a listing: the report says what was listed and how many entries.
const LISTING_PROGRAMS: [&str; 6] = ["ls", "find", "tree", "fd", "du", "dir"];
/// Programs whose output is a file's text: the report says how many lines were read.
const READING_PROGRAMS: [&str; 6] = ["cat", "head", "nl", "less", "more", "bat"];
/// Words that only set up the real program of a command segment.
const PREFIX_WORDS: [&str; 8] = ["sudo", "env", "time", "nice", "nohup", "exec", "command", "builtin"];

/// A command's first line and an error line keep their first 200 chars (then `…`).
const CAP_COMMAND: usize = 201;
const CAP_LABEL: usize = 120;
pub(super) const CAP_ERROR: usize = 201;
const CAP_TAIL: usize = 100;
const CAP_CONCLUSION: usize = 320;
const CAP_SENTENCE: usize = 220;
const CAP_NEXT: usize = 320;
const MAX_DECISIONS: usize = 2;
const MAX_QUESTIONS: usize = 2;
/// How many of the agent's latest texts are read for decisions and questions.
const RECENT_TEXTS: usize = 32;

/// What a tool call was, by its name (and, for shells, its program).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ToolKind {
    Shell,
    Read,
    Edit,
    Write,
    Search,
    Other,
}

/// The role a path played, strongest last: a path both read and edited is reported as edited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum PathRole {
    Named,
    Read,
    Written,
    Edited,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// No result in the region.
    Pending,
    Ok,
    /// Failed; the exit code when the output states one.
    Failed(Option<i64>),
}

/// A one-line account of an output that is not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Summary {
    /// A directory listing with this many entries.
    Listing(usize),
    /// A file's text, this many lines.
    Lines(usize),
    /// The output's last line.
    Tail(String),
    /// An empty output.
    Empty,
}

/// One tool call and what its output established.
pub(super) struct Step {
    pub(super) label: String,
    /// Lines of a multi-line command that the label leaves out.
    pub(super) more_lines: usize,
    pub(super) kind: ToolKind,
    pub(super) outcome: Outcome,
    /// Indices into `Facts::errors` of the error lines this output added.
    pub(super) errors: Vec<usize>,
    /// The output had error lines, all of them already reported by an earlier step.
    pub(super) repeated: bool,
    pub(super) summary: Option<Summary>,
    /// The command's first line, for matching reruns (shell steps only).
    pub(super) key: Option<Rc<str>>,
}

/// Everything extracted from the region, before the budget.
#[derive(Default)]
pub(super) struct Facts {
    pub(super) steps: Vec<Step>,
    pub(super) errors: Ordered,
    pub(super) paths: Ordered,
    roles: HashMap<Rc<str>, PathRole, FxBuild>,
    /// Path tokens of the step labels (a command's first line) and of the error lines: a named
    /// path found there is already in the report once that line is.
    pub(super) in_labels: Ordered,
    /// Edit calls per edited path.
    pub(super) edits: HashMap<Rc<str>, usize, FxBuild>,
    pub(super) conclusion: Option<String>,
    pub(super) next: Option<String>,
    pub(super) decisions: Vec<String>,
    pub(super) questions: Vec<String>,
    pub(super) calls: usize,
    pub(super) failed: usize,
}

impl Facts {
    pub(super) fn extract(messages: &[Message]) -> Self {
        let mut f = Facts::default();
        let mut by_id: HashMap<&str, usize, FxBuild> = HashMap::default();
        let mut texts: Vec<String> = Vec::new();
        // A text-protocol action (a fenced shell block in an assistant text, no tool call) waiting
        // for the user message that carries its `<returncode>` output.
        let mut text_action: Option<usize> = None;
        for m in messages {
            if m.role == Role::Tool {
                let out = join_text(&m.content);
                f.result(&by_id, m.call_id.as_deref(), &out, m.is_error.unwrap_or(false));
                continue;
            }
            let mut text = String::new();
            let mut called = false;
            for b in &m.content {
                match b {
                    Block::Text { text: t } if m.role == Role::Assistant => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(t);
                    }
                    Block::Text { text: t } if m.role == Role::User => {
                        if let Some(i) = text_action.filter(|_| t.contains("<returncode>")) {
                            let failed = t.lines().rev().find_map(exit_code).is_some_and(|c| c != 0);
                            f.result_at(i, t, failed);
                            text_action = None;
                        }
                    }
                    Block::ToolCall { id, name, arguments } => {
                        f.calls += 1;
                        called = true;
                        f.call(name, arguments);
                        by_id.insert(id, f.steps.len() - 1);
                    }
                    Block::ToolResult {
                        tool_call_id,
                        content,
                        is_error,
                    } => {
                        let out = join_text(content);
                        f.result(&by_id, Some(tool_call_id), &out, *is_error);
                    }
                    Block::Text { .. } | Block::Reasoning { .. } | Block::Other => {}
                }
            }
            if !text.trim().is_empty() {
                let mut found = Ordered::default();
                scan_paths(&text, &mut found);
                for p in &found.items {
                    f.path(p, PathRole::Named);
                }
                if !called {
                    if let Some(command) = shell_block(&text) {
                        f.calls += 1;
                        f.push_step("bash", ToolKind::Shell, Some(command), None, None);
                        text_action = Some(f.steps.len() - 1);
                    }
                }
                texts.push(text);
            }
        }
        f.mine_texts(&texts);
        f
    }

    fn path(&mut self, p: &str, role: PathRole) {
        self.paths.push(p);
        if let Some(key) = self.paths.seen.get(p) {
            let entry = self.roles.entry(key.clone()).or_insert(role);
            if role > *entry {
                *entry = role;
            }
        }
    }

    /// The paths of one role, in first-seen order.
    pub(super) fn paths_with(&self, role: PathRole) -> Vec<Rc<str>> {
        self.paths
            .items
            .iter()
            .filter(|p| self.roles.get(*p) == Some(&role))
            .cloned()
            .collect()
    }

    /// Records a tool call as a step.
    fn call(&mut self, name: &str, arguments: &Value) {
        let lower = name.to_ascii_lowercase();
        let parsed;
        let args = match arguments {
            Value::String(s) => match serde_json::from_str::<Value>(s) {
                Ok(v) => {
                    parsed = v;
                    &parsed
                }
                Err(_) => {
                    // Raw, non-JSON arguments: a shell's command line, or free text.
                    let mut found = Ordered::default();
                    scan_paths(s, &mut found);
                    for p in &found.items {
                        self.path(p, PathRole::Named);
                    }
                    let kind = kind_of(&lower, None);
                    let command = (kind == ToolKind::Shell).then_some(s.as_str());
                    self.push_step(name, kind, command, None, None);
                    return;
                }
            },
            v => v,
        };
        let command = command_of(args, is_shell(&lower));
        // An editor's one-word `command` (`view`, `create`, `str_replace`) is its subcommand.
        let sub = match args.get("command") {
            Some(Value::String(c)) if command.is_none() && !c.is_empty() && !c.contains(char::is_whitespace) => {
                Some(c.as_str())
            }
            _ => None,
        };
        let kind = match sub.map(|c| kind_of(&c.to_ascii_lowercase(), None)) {
            Some(k) if k != ToolKind::Other && k != ToolKind::Shell => k,
            _ => kind_of(&lower, command.as_deref()),
        };
        let role = match kind {
            ToolKind::Edit => PathRole::Edited,
            ToolKind::Write => PathRole::Written,
            ToolKind::Read => PathRole::Read,
            _ => PathRole::Named,
        };
        let before = self.paths.items.len();
        let mut first_key_path = None;
        self.arg_strings(args, false, false, role, &mut first_key_path);
        // Reading, writing or editing needs a file: without a path argument the call is another
        // kind of tool (`todo_write`, `read_lints`).
        let kind = match kind {
            ToolKind::Edit | ToolKind::Write | ToolKind::Read if first_key_path.is_none() => ToolKind::Other,
            k => k,
        };
        // Without a path argument, a search or file tool's target is the first new path token of
        // its arguments; other tools (`todo_write`) have none.
        let target = first_key_path.or_else(|| {
            matches!(
                kind,
                ToolKind::Search | ToolKind::Read | ToolKind::Edit | ToolKind::Write
            )
            .then(|| self.paths.items.get(before).cloned())
            .flatten()
        });
        if kind == ToolKind::Edit {
            if let Some(t) = &target {
                *self.edits.entry(t.clone()).or_insert(0) += 1;
            }
        }
        let subject = subject_of(args);
        let name = match sub {
            Some(c) => format!("{name} {c}"),
            None => name.to_owned(),
        };
        self.push_step(&name, kind, command.as_deref(), target.as_deref(), subject.as_deref());
    }

    fn push_step(
        &mut self,
        name: &str,
        kind: ToolKind,
        command: Option<&str>,
        target: Option<&str>,
        subject: Option<&str>,
    ) {
        let (label, more_lines, key) = match command {
            Some(c) => {
                let c = c.trim();
                let mut lines = c.lines();
                let first = lines.next().unwrap_or("").trim();
                let more = lines.filter(|l| !l.trim().is_empty()).count();
                let first = cap(first, CAP_COMMAND).into_owned();
                let key: Rc<str> = Rc::from(first.as_str());
                (first, more, Some(key))
            }
            None => {
                let mut label = name.to_owned();
                for part in [subject, target].into_iter().flatten() {
                    label.push(' ');
                    label.push_str(part);
                }
                (cap(&label, CAP_LABEL).into_owned(), 0, None)
            }
        };
        let kind = if command.is_some() { ToolKind::Shell } else { kind };
        scan_paths(&label, &mut self.in_labels);
        if command.is_some() {
            // `> file` and `>> file` in the first line: the command wrote that file.
            let mut words = label.split_whitespace().peekable();
            while let Some(w) = words.next() {
                let target = match w.trim_start_matches(['>', '1']) {
                    "" if w.ends_with('>') && !w.starts_with('2') => words.peek().copied(),
                    t if w.starts_with('>') && !t.starts_with('&') => Some(t),
                    _ => None,
                };
                if let Some(t) = target.map(|t| t.trim_matches(['\'', '"', ';'])) {
                    if t.len() > 1 && t != "/dev/null" && !t.starts_with('&') && !t.contains('$') {
                        self.path(t, PathRole::Written);
                    }
                }
            }
        }
        self.steps.push(Step {
            label,
            more_lines,
            kind,
            outcome: Outcome::Pending,
            errors: Vec::new(),
            repeated: false,
            summary: None,
            key,
        });
    }

    /// Walks argument strings for paths: whole values under path keys, token scans elsewhere,
    /// nothing in file bodies. The first whole path-key value is the call's target.
    fn arg_strings(&mut self, v: &Value, path_key: bool, body: bool, role: PathRole, target: &mut Option<Rc<str>>) {
        match v {
            Value::String(s) => {
                let t = s.trim();
                if body {
                } else if path_key && !t.is_empty() && len16(t) <= CAP_LINE && !t.contains(char::is_whitespace) {
                    self.path(t, role);
                    if target.is_none() {
                        *target = self.paths.seen.get(t).cloned();
                    }
                } else {
                    let mut found = Ordered::default();
                    scan_paths(s, &mut found);
                    for p in &found.items {
                        self.path(p, PathRole::Named);
                    }
                }
            }
            Value::Array(items) => items
                .iter()
                .for_each(|i| self.arg_strings(i, path_key, body, role, target)),
            Value::Object(map) => {
                for (k, v) in map {
                    let k = norm_key(k);
                    let body = body || CONTENT_KEYS.contains(&k.as_str());
                    self.arg_strings(v, PATH_KEYS.contains(&k.as_str()), body, role, target);
                }
            }
            _ => {}
        }
    }

    /// Records one tool output on its step: outcome, new error lines, a summary line.
    fn result(&mut self, by_id: &HashMap<&str, usize, FxBuild>, call_id: Option<&str>, out: &str, is_error: bool) {
        let index = match call_id.and_then(|id| by_id.get(id)) {
            // A second result for the same call (should not happen) reads as its own step.
            Some(&i) if self.steps[i].outcome == Outcome::Pending => i,
            _ => {
                self.push_step("tool output", ToolKind::Other, None, None, None);
                self.steps.len() - 1
            }
        };
        self.result_at(index, out, is_error);
    }

    /// Records one tool output on the step at `index`.
    fn result_at(&mut self, index: usize, out: &str, is_error: bool) {
        if is_error {
            self.failed += 1;
        }
        let kind = self.steps[index].kind;
        let program = self.steps[index]
            .key
            .as_deref()
            .map(primary_program)
            .unwrap_or_default();
        let scan_errors = is_error || kind != ToolKind::Read;
        let mut added = Vec::new();
        let mut cue_lines = 0usize;
        let mut lines = 0usize;
        let mut last: Option<&str> = None;
        let mut exit = None;
        for raw in out.lines() {
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            lines += 1;
            if let Some(code) = exit_code(line) {
                exit = Some(code);
                continue;
            }
            if scan_errors && is_error_line(line) {
                cue_lines += 1;
                let before = self.errors.items.len();
                self.errors.push(&cap(line, CAP_ERROR));
                if self.errors.items.len() > before {
                    added.push(before);
                    scan_paths(&self.errors.items[before], &mut self.in_labels);
                }
            }
            if line.chars().any(char::is_alphanumeric) {
                last = Some(line);
            }
        }
        if is_error && cue_lines == 0 {
            // A failure that names no cue: its first line says what went wrong.
            if let Some(first) = out
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && exit_code(l).is_none())
            {
                let before = self.errors.items.len();
                self.errors.push(&cap(first, CAP_ERROR));
                if self.errors.items.len() > before {
                    added.push(before);
                }
            }
        }
        let summary = if lines == 0 || (lines == 1 && exit.is_some()) {
            Summary::Empty
        } else if kind == ToolKind::Read || READING_PROGRAMS.contains(&program) {
            Summary::Lines(lines - usize::from(exit.is_some()))
        } else if LISTING_PROGRAMS.contains(&program) && cue_lines == 0 {
            Summary::Listing(lines - usize::from(exit.is_some()))
        } else {
            match last {
                Some(l) => Summary::Tail(cap(l, CAP_TAIL).into_owned()),
                None => Summary::Empty,
            }
        };
        let step = &mut self.steps[index];
        step.outcome = if is_error { Outcome::Failed(exit) } else { Outcome::Ok };
        step.repeated = added.is_empty() && cue_lines > 0;
        step.errors = added;
        step.summary = Some(summary);
    }

    /// Reads the assistant's text: the conclusion and the announced next step come from its last
    /// text; decisions and open questions from any text (the latest few).
    fn mine_texts(&mut self, texts: &[String]) {
        let Some(last) = texts.last() else { return };
        let conclusion = collapse(last);
        if !conclusion.is_empty() {
            self.conclusion = Some(cap(&conclusion, CAP_CONCLUSION).into_owned());
        }
        let last_sentences = sentences(last);
        self.next = last_sentences
            .iter()
            .rev()
            .find(|s| has_cue(&s.to_lowercase(), &NEXT_CUES))
            .map(|s| cap(s, CAP_NEXT).into_owned());
        let mut decisions = Ordered::default();
        let mut questions = Ordered::default();
        for text in texts.iter().rev().take(RECENT_TEXTS) {
            for s in sentences(text).into_iter().rev() {
                let lower = s.to_lowercase();
                if (s.ends_with('?') || s.ends_with('？') || has_cue(&lower, &QUESTION_CUES))
                    && questions.items.len() < MAX_QUESTIONS
                {
                    questions.push(&cap(s, CAP_SENTENCE));
                } else if has_cue(&lower, &DECISION_CUES) && decisions.items.len() < MAX_DECISIONS {
                    decisions.push(&cap(s, CAP_SENTENCE));
                }
            }
            if decisions.items.len() >= MAX_DECISIONS && questions.items.len() >= MAX_QUESTIONS {
                break;
            }
        }
        // Collected newest first; report them in the order they were written.
        self.decisions = decisions.items.iter().rev().map(|s| s.to_string()).collect();
        self.questions = questions.items.iter().rev().map(|s| s.to_string()).collect();
    }
}

fn is_shell(lower_name: &str) -> bool {
    lower_name == "sh" || SHELL_TOOL_CUES.iter().any(|c| lower_name.contains(c))
}

fn kind_of(lower_name: &str, command: Option<&str>) -> ToolKind {
    let has = |cues: &[&str]| cues.iter().any(|c| lower_name.contains(c));
    if command.is_some() || is_shell(lower_name) {
        ToolKind::Shell
    } else if has(&EDIT_TOOL_CUES) {
        ToolKind::Edit
    } else if has(&WRITE_TOOL_CUES) {
        ToolKind::Write
    } else if READ_TOOL_CUES.contains(&lower_name)
        || (has(&READ_TOOL_CUES) && ["file", "text", "notebook"].iter().any(|t| lower_name.contains(t)))
    {
        ToolKind::Read
    } else if has(&SEARCH_TOOL_CUES) {
        ToolKind::Search
    } else {
        ToolKind::Other
    }
}

/// The command of a call: a top-level command-like argument (an argv array is joined), or the
/// `args`/`argv` of a shell-like tool, or a shell tool's bare string argument.
fn command_of(args: &Value, shell: bool) -> Option<String> {
    match args {
        Value::String(s) if shell => Some(s.clone()),
        Value::Object(map) => {
            for (k, v) in map {
                if !COMMAND_KEYS.contains(&norm_key(k).as_str()) {
                    continue;
                }
                match v {
                    Value::String(s) if !shell && !s.trim().contains(char::is_whitespace) => {}
                    Value::String(s) => return Some(s.clone()),
                    Value::Array(items) => {
                        let words: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                        let sep = if norm_key(k) == "commands" { "\n" } else { " " };
                        return Some(words.join(sep));
                    }
                    _ => {}
                }
            }
            if !shell {
                return None;
            }
            let argv = map.get("args").or_else(|| map.get("argv")).and_then(Value::as_array)?;
            let program = ["program", "executable", "bin"]
                .iter()
                .find_map(|k| map.get(*k)?.as_str());
            let words: Vec<&str> = program
                .into_iter()
                .chain(argv.iter().filter_map(Value::as_str))
                .collect();
            Some(words.join(" "))
        }
        _ => None,
    }
}

/// What a non-shell call was about, for its label: a pattern, query or URL argument.
fn subject_of(args: &Value) -> Option<String> {
    let Value::Object(map) = args else { return None };
    map.iter()
        .find(|(k, _)| SUBJECT_KEYS.contains(&norm_key(k).as_str()))
        .and_then(|(_, v)| v.as_str())
        .map(|s| cap(s.trim(), CAP_LABEL / 2).into_owned())
}

/// The last fenced shell block (```` ```bash ````, `sh`, `shell`) of an assistant text: the action
/// of an agent that runs commands by writing them (mini-swe-agent's text protocol).
fn shell_block(text: &str) -> Option<&str> {
    let mut found = None;
    let mut open: Option<usize> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        match open {
            None if matches!(t, "```bash" | "```sh" | "```shell") => open = Some(at + line.len()),
            Some(start) if t == "```" => {
                found = Some(text[start..at].trim());
                open = None;
            }
            _ => {}
        }
        at += line.len();
    }
    found.filter(|c| !c.is_empty())
}

/// The program a command line runs first, past `cd`, variable assignments and wrappers.
pub(super) fn primary_program(line: &str) -> &str {
    for segment in line.split(['|', ';', '&']) {
        let mut words = segment.split_whitespace().peekable();
        while let Some(w) = words.peek() {
            if w.contains('=') && !w.starts_with('-') || PREFIX_WORDS.contains(w) {
                words.next();
            } else {
                break;
            }
        }
        match words.next() {
            None | Some("cd" | "pushd" | "source" | "." | "export" | "set") => continue,
            Some(program) => return program.rsplit('/').next().unwrap_or(program),
        }
    }
    ""
}

/// An exit-code line a tool appends to its output (`[exit code 2]`, `Exit code: 2`).
fn exit_code(line: &str) -> Option<i64> {
    let line = line.trim();
    if !line.starts_with(['[', '(', '<', 'e', 'E']) {
        return None;
    }
    if let Some(rest) = line.strip_prefix("<returncode>") {
        return rest.strip_suffix("</returncode>")?.trim().parse().ok();
    }
    let l = line.trim_matches(['[', ']', '(', ')']).trim();
    let rest = l
        .strip_prefix("exit code")
        .or_else(|| l.strip_prefix("Exit code"))
        .or_else(|| l.strip_prefix("exit status"))?;
    rest.trim_start_matches([':', ' ']).parse().ok()
}

fn norm_key(k: &str) -> String {
    k.chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primary_programs() {
        assert_eq!(primary_program("cd /x && ls -la src"), "ls");
        assert_eq!(primary_program("FOO=1 sudo /usr/bin/find . -name x | head"), "find");
        assert_eq!(primary_program("cd /x && python -m pytest -x 2>&1 | tail -5"), "python");
        assert_eq!(primary_program("cd /x"), "");
    }

    #[test]
    fn shell_blocks_of_text_protocol_agents() {
        assert_eq!(
            shell_block("THOUGHT: look\n```bash\nls -la src\n```\n"),
            Some("ls -la src")
        );
        assert_eq!(shell_block("```python\nx = 1\n```"), None);
        assert_eq!(shell_block("```bash\na\n```\nthen\n```sh\nb && c\n```"), Some("b && c"));
    }

    #[test]
    fn exit_code_lines() {
        assert_eq!(exit_code("<returncode>2</returncode>"), Some(2));
        assert_eq!(exit_code("[exit code 101]"), Some(101));
        assert_eq!(exit_code("Exit code: 2"), Some(2));
        assert_eq!(exit_code("exit code is what matters"), None);
    }
}

//! Extraction: what the report says, gathered in two steps — what each message contributes read
//! from that message alone ([`MessageFacts`]), then one merge over the region's messages in
//! order ([`Facts::merge`]).
//!
//! Contract. `MessageFacts::of` is a pure function of one message, linear in its size: the scans
//! that read every byte (a tool output's lines for error lines, an argument's or a text's path
//! tokens, a command's first line) run here, once per message, and keep only what the report can
//! use (capped lines, path lists, counts). `Facts::merge` replays those contributions in order
//! against the region's state — which call a result answers, which error lines and paths an
//! earlier message already named, the text-protocol action awaiting its `<returncode>` — and costs
//! time linear in the facts, not in the messages' text. `merge(of(m) for m in messages)` is the
//! whole extraction: the rewind's report (one JSON region) and a compaction's (facts kept per
//! message as the session grows) take the same path and write the same bytes.
//!
//! What the merge builds: every tool call as a `Step` (what ran, how it ended, the error lines its
//! output added, a one-line summary of the output), the paths the agent named sorted into roles
//! (edited, written, read, named), and from the assistant's own text its conclusion, the next step
//! it announced, and a few decisions and open questions. Error lines are deduplicated across the
//! whole region (first-seen order) and every item is already capped; choosing what fits the
//! budget is `layout`'s job. Nothing here copies an output whole: a command keeps its first line,
//! an output keeps its error lines and one summary line.

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

use super::input::{join_text, Block, Message, Role};
use super::scan::{
    cap, collapse, has_cue, is_error_line, is_known_extension, len16, scan_names, scan_paths, sentences, FxBuild,
    Ordered, CAP_LINE,
};
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
/// Programs that print a file's text (a command that starts with one reads a file).
const FILE_PROGRAMS: [&str; 8] = ["cat", "head", "tail", "nl", "less", "more", "bat", "sed"];
/// Programs a file's text is piped through and stays text of that file.
const FILTER_PROGRAMS: [&str; 16] = [
    "cat", "head", "tail", "nl", "less", "more", "bat", "sed", "grep", "egrep", "rg", "awk", "cut", "sort", "uniq",
    "tr",
];
/// Programs that look at or move files rather than run the code: a command that runs one is not
/// a check of the work (every other shell command that ends well is).
const NOT_CHECKS: [&str; 24] = [
    "ls", "find", "tree", "fd", "du", "dir", "grep", "egrep", "rg", "ag", "git", "echo", "printf", "pwd", "which",
    "wc", "diff", "mkdir", "cp", "mv", "rm", "touch", "chmod", "stat",
];
/// Keys of a plan item's text (`todo_write`'s `content`, `update_plan`'s `step`, ...).
const PLAN_TEXT_KEYS: [&str; 6] = ["content", "step", "title", "task", "text", "description"];
/// Extensions of logs and program output: a file read with one is diagnostics, not content.
const OUTPUT_EXTENSIONS: [&str; 6] = ["log", "out", "err", "stderr", "stdout", "trace"];
/// Words in a file's name (between `.`, `-`, `_`) that make it a log or a program's output.
const OUTPUT_WORDS: [&str; 14] = [
    "log",
    "logs",
    "output",
    "outputs",
    "out",
    "stderr",
    "stdout",
    "err",
    "errors",
    "result",
    "results",
    "trace",
    "traceback",
    "junit",
];
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

/// Whether a call only read a file, and what kind: a read's successful output is the file's
/// text, and only the text of a log or of a program's output file is scanned for error lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FileRead {
    /// Not a plain file read: its output is scanned as a command's.
    No,
    /// A source, document or data file: its text is content, not diagnostics.
    Content,
    /// A log or a program's output file (`build.log`, `test_output.txt`): diagnostics.
    Output,
}

/// One tool call and what its output established.
pub(super) struct Step {
    pub(super) label: String,
    /// Lines of a multi-line command that the label leaves out.
    pub(super) more_lines: usize,
    pub(super) kind: ToolKind,
    pub(super) read: FileRead,
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

/// A command's first line as a step's label shows it, and how many more non-empty lines it has.
#[derive(Debug, Clone)]
struct CommandLine {
    first: String,
    more: usize,
}

impl CommandLine {
    fn of(command: &str) -> Self {
        let c = command.trim();
        let mut lines = c.lines();
        let first = lines.next().unwrap_or("").trim();
        let more = lines.filter(|l| !l.trim().is_empty()).count();
        Self {
            first: cap(first, CAP_COMMAND).into_owned(),
            more,
        }
    }
}

/// What a tool output says, read from its text alone: what a step's outcome and summary need,
/// whatever the call was.
#[derive(Debug, Clone, Default)]
struct Output {
    /// Non-empty lines (an exit-code line included).
    lines: usize,
    /// The last exit-code line's code.
    exit: Option<i64>,
    /// Its error lines, capped, each once, in order.
    cues: Vec<String>,
    /// How many lines were error lines (repeats included).
    cue_lines: usize,
    /// The last line with a letter or digit (not an exit-code line), capped for a summary.
    last: Option<String>,
    /// The first non-empty line that is not an exit-code line, capped as an error line: what a
    /// failure without an error line says.
    first: Option<String>,
}

impl Output {
    fn of(out: &str) -> Self {
        let mut o = Output::default();
        let mut seen = Ordered::default();
        let mut last: Option<&str> = None;
        for raw in out.lines() {
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            o.lines += 1;
            if let Some(code) = exit_code(line) {
                o.exit = Some(code);
                continue;
            }
            if o.first.is_none() {
                o.first = Some(cap(line, CAP_ERROR).into_owned());
            }
            if is_error_line(line) {
                o.cue_lines += 1;
                let capped = cap(line, CAP_ERROR);
                let before = seen.items.len();
                seen.push(&capped);
                if seen.items.len() > before {
                    o.cues.push(capped.into_owned());
                }
            }
            if line.chars().any(char::is_alphanumeric) {
                last = Some(line);
            }
        }
        o.last = last.map(|l| cap(l, CAP_TAIL).into_owned());
        o
    }
}

/// A tool call, read from its message: everything but what depends on the region before it.
#[derive(Debug, Clone)]
struct Call {
    /// The step's name (an editor's subcommand appended).
    name: String,
    kind: ToolKind,
    command: Option<CommandLine>,
    subject: Option<String>,
    /// The paths its arguments named, with their roles, in the order they were found.
    paths: Vec<(String, PathRole)>,
    /// The first whole value under a path key: the call's target.
    key_target: Option<String>,
    /// Without `key_target`, the target is the first of `paths` new to the region (search and
    /// file tools only).
    target_from_new: bool,
}

impl Call {
    fn of(name: &str, arguments: &Value) -> Self {
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
                    let kind = kind_of(&lower, None);
                    return Self {
                        name: name.to_owned(),
                        kind,
                        command: (kind == ToolKind::Shell).then(|| CommandLine::of(s)),
                        subject: None,
                        paths: found.items.iter().map(|p| (p.to_string(), PathRole::Named)).collect(),
                        key_target: None,
                        target_from_new: false,
                    };
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
        let mut paths = Vec::new();
        let mut key_target = None;
        arg_strings(args, false, false, role, &mut paths, &mut key_target);
        // Reading, writing or editing needs a file: without a path argument the call is another
        // kind of tool (`todo_write`, `read_lints`).
        let kind = match kind {
            ToolKind::Edit | ToolKind::Write | ToolKind::Read if key_target.is_none() => ToolKind::Other,
            k => k,
        };
        let target_from_new = key_target.is_none()
            && matches!(
                kind,
                ToolKind::Search | ToolKind::Read | ToolKind::Edit | ToolKind::Write
            );
        Self {
            name: match sub {
                Some(c) => format!("{name} {c}"),
                None => name.to_owned(),
            },
            kind,
            command: command.as_deref().map(CommandLine::of),
            subject: subject_of(args),
            paths,
            key_target,
            target_from_new,
        }
    }
}

/// Walks argument strings for paths: whole values under path keys, token scans elsewhere,
/// nothing in file bodies. The first whole path-key value is the call's target.
fn arg_strings(
    v: &Value,
    path_key: bool,
    body: bool,
    role: PathRole,
    paths: &mut Vec<(String, PathRole)>,
    target: &mut Option<String>,
) {
    match v {
        Value::String(s) => {
            let t = s.trim();
            if body {
            } else if path_key && !t.is_empty() && len16(t) <= CAP_LINE && !t.contains(char::is_whitespace) {
                paths.push((t.to_owned(), role));
                if target.is_none() {
                    *target = Some(t.to_owned());
                }
            } else {
                let mut found = Ordered::default();
                scan_paths(s, &mut found);
                paths.extend(found.items.iter().map(|p| (p.to_string(), PathRole::Named)));
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|i| arg_strings(i, path_key, body, role, paths, target)),
        Value::Object(map) => {
            for (k, v) in map {
                let k = norm_key(k);
                let body = body || CONTENT_KEYS.contains(&k.as_str());
                arg_strings(v, PATH_KEYS.contains(&k.as_str()), body, role, paths, target);
            }
        }
        _ => {}
    }
}

/// An assistant message's own text, read once: the paths it names, the fenced shell block a
/// text-protocol agent runs (used when the message makes no tool call), the text itself (the
/// merge mines the latest few for decisions, questions and the conclusion).
#[derive(Debug, Clone)]
struct Text {
    body: TextBody,
    paths: Vec<String>,
    shell: Option<CommandLine>,
}

/// What one message contributes, in the order the extraction meets it.
#[derive(Debug, Clone)]
enum Op {
    Call {
        id: String,
        call: Call,
    },
    Result {
        call_id: Option<String>,
        output: Output,
        is_error: bool,
    },
    /// A user text carrying a `<returncode>`: the output of a pending text-protocol action.
    ReturnCode(Output),
    Text(Text),
}

/// What one message contributes to the report, read from that message alone (module docs).
#[derive(Debug, Clone)]
pub struct MessageFacts {
    ops: Vec<Op>,
    /// Its model-visible text in UTF-16 units (`Region::visible_chars`'s measure).
    pub(super) visible: usize,
    /// An assistant message's text as written (its text blocks, joined by newlines).
    said: Option<Box<str>>,
    /// The names the model wrote in it (texts and call arguments): [`scan_names`].
    names: Vec<Rc<str>>,
    /// The plan a plan tool's call in it set (the last such call's items).
    plan: Option<Vec<(PlanStatus, Box<str>)>>,
}

/// A plan item's status (`completed`, `in_progress`, `pending`, and their spellings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanStatus {
    Done,
    Doing,
    Todo,
}

/// A tool call as the open state of the work reads it (`thought`): paired with its result.
#[derive(Debug, Clone)]
pub(super) struct CheckedCall {
    /// A shell command's first line (`$ cmd`), else the tool's name and target.
    pub(super) label: String,
    /// What tells two runs of one command apart: a shell command's program and its first
    /// argument, else the label.
    key: String,
    /// A shell command that ran code (not a read, a listing, a search or a file operation).
    pub(super) check: bool,
    /// The files it edited or wrote.
    pub(super) changed: Vec<Rc<str>>,
    outcome: Outcome,
    /// Its output's first error line (a failure without one: the output's first line).
    pub(super) error: Option<String>,
}

impl CheckedCall {
    pub(super) fn passed(&self) -> bool {
        self.outcome == Outcome::Ok
    }

    pub(super) fn failed(&self) -> bool {
        matches!(self.outcome, Outcome::Failed(_))
    }

    /// Another run of the same command (or the same call).
    pub(super) fn same_run(&self, other: &Self) -> bool {
        self.key == other.key
    }

    fn of(call: &Call) -> Self {
        match &call.command {
            Some(c) => Self::shell(c),
            None => {
                let changed = call
                    .paths
                    .iter()
                    .filter(|(_, r)| matches!(r, PathRole::Edited | PathRole::Written))
                    .map(|(p, _)| Rc::from(p.as_str()))
                    .collect();
                let label = match &call.key_target {
                    Some(t) => format!("{} {t}", call.name),
                    None => call.name.clone(),
                };
                Self {
                    key: label.clone(),
                    label,
                    check: false,
                    changed,
                    outcome: Outcome::Pending,
                    error: None,
                }
            }
        }
    }

    fn shell(c: &CommandLine) -> Self {
        let program = primary_program(&c.first);
        let check = !program.is_empty() && shell_read(&c.first) == FileRead::No && !NOT_CHECKS.contains(&program);
        Self {
            label: format!("$ {}", c.first),
            key: run_key(&c.first),
            check,
            changed: written_files(&c.first).into_iter().map(Rc::from).collect(),
            outcome: Outcome::Pending,
            error: None,
        }
    }

    fn settle(&mut self, out: &Output, is_error: bool) {
        self.outcome = if is_error {
            Outcome::Failed(out.exit)
        } else {
            Outcome::Ok
        };
        self.error = out
            .cues
            .first()
            .cloned()
            .or_else(|| if is_error { out.first.clone() } else { None });
    }
}

/// What a report line costs around its copied text: a bullet, a label's ` → exit 1`, a newline.
const LINE_CHARS: usize = 12;
/// A call's label when the region decides it (a name, a subject and a target path).
const LABEL_ESTIMATE: usize = 80;

impl Output {
    /// The chars its error lines take in a report (the failure's first line when it has none).
    fn fact_chars(&self, is_error: bool) -> usize {
        let cues: usize = self.cues.iter().map(|l| len16(l) + LINE_CHARS).sum();
        if is_error && self.cues.is_empty() {
            cues + self.first.as_deref().map_or(0, |l| len16(l) + LINE_CHARS)
        } else {
            cues
        }
    }
}

impl MessageFacts {
    /// One message's contribution: a tool message is its result; any other message is what its
    /// blocks hold, read in order ([`BlocksRead`]), then its text as a whole — an assistant's
    /// words and names, the paths and shell block any text names ([`text_op`]).
    pub(super) fn of(m: &Message, visible: usize) -> Self {
        if m.role == Role::Tool {
            return Self::tool_message(m, visible);
        }
        let mut read = BlocksRead::default();
        for b in &m.content {
            read.block(b, m.role);
        }
        let BlocksRead {
            mut ops,
            mut names,
            plan,
            text,
            called,
        } = read;
        let said = (m.role == Role::Assistant && !text.trim().is_empty()).then(|| Box::from(text.as_str()));
        if said.is_some() {
            scan_names(&text, true, &mut names);
        }
        if !text.trim().is_empty() {
            ops.push(text_op(text, called));
        }
        Self {
            ops,
            visible,
            said,
            names: names.items,
            plan,
        }
    }

    /// A tool message: one result, answering its call id.
    fn tool_message(m: &Message, visible: usize) -> Self {
        let out = join_text(&m.content);
        Self {
            ops: vec![Op::Result {
                call_id: m.call_id.clone(),
                output: Output::of(&out),
                is_error: m.is_error.unwrap_or(false),
            }],
            visible,
            said: None,
            names: Vec::new(),
            plan: None,
        }
    }

    /// An assistant message's text as written.
    pub(super) fn said(&self) -> Option<&str> {
        self.said.as_deref()
    }

    /// The names the model wrote in this message, first seen first.
    pub(super) fn names(&self) -> &[Rc<str>] {
        &self.names
    }

    /// The plan a plan tool's call in this message set.
    pub(super) fn plan(&self) -> Option<&[(PlanStatus, Box<str>)]> {
        self.plan.as_deref()
    }

    /// The chars a report takes to copy what this message names — its calls' labels (a command's
    /// first line), the error lines its outputs printed, the paths it named — counted as if no
    /// other message named them: an upper bound of its share of a region's report, before the
    /// budget (a compaction sizes a run's report by it).
    pub fn fact_chars(&self) -> usize {
        let paths = |ps: &mut dyn Iterator<Item = &str>| -> usize { ps.map(|p| len16(p) + 4).sum() };
        self.ops
            .iter()
            .map(|op| match op {
                Op::Call { call, .. } => {
                    let label = call.command.as_ref().map_or(LABEL_ESTIMATE, |c| len16(&c.first)) + LINE_CHARS;
                    label + paths(&mut call.paths.iter().map(|(p, _)| p.as_str()))
                }
                Op::Result { output, is_error, .. } => output.fact_chars(*is_error),
                Op::ReturnCode(output) => output.fact_chars(output.exit.is_some_and(|c| c != 0)),
                Op::Text(t) => paths(&mut t.paths.iter().map(String::as_str)),
            })
            .sum()
    }

    /// Readies these facts to be kept for later reports: the agent's text is mined now (what a
    /// report reads of it is kept, the text itself dropped), so a report merging them reads no
    /// text at all.
    pub fn prepare(&mut self) {
        for op in &mut self.ops {
            if let Op::Text(t) = op {
                if let TextBody::Raw(text) = &t.body {
                    t.body = TextBody::Mined(Mined::of(text));
                }
            }
        }
    }
}

/// What a (non-tool) message's blocks hold, read in order: the calls, results and return codes
/// as ops, the names in an assistant's call arguments, the plan it set, its text blocks joined.
#[derive(Default)]
struct BlocksRead {
    ops: Vec<Op>,
    names: Ordered,
    plan: Option<Vec<(PlanStatus, Box<str>)>>,
    /// An assistant's text blocks, joined by newlines.
    text: String,
    /// Whether the message calls a tool (then its text's shell block is not an action).
    called: bool,
}

impl BlocksRead {
    fn block(&mut self, b: &Block, role: Role) {
        match b {
            Block::Text { text: t } if role == Role::Assistant => {
                if !self.text.is_empty() {
                    self.text.push('\n');
                }
                self.text.push_str(t);
            }
            Block::Text { text: t } if role == Role::User => {
                if t.contains("<returncode>") {
                    self.ops.push(Op::ReturnCode(Output::of(t)));
                }
            }
            Block::ToolCall { id, name, arguments } => {
                self.called = true;
                if role == Role::Assistant {
                    arg_names(arguments, &mut self.names);
                    if let Some(items) = plan_of(arguments) {
                        self.plan = Some(items);
                    }
                }
                self.ops.push(Op::Call {
                    id: id.clone(),
                    call: Call::of(name, arguments),
                });
            }
            Block::ToolResult {
                tool_call_id,
                content,
                is_error,
            } => {
                let out = join_text(content);
                self.ops.push(Op::Result {
                    call_id: Some(tool_call_id.clone()),
                    output: Output::of(&out),
                    is_error: *is_error,
                });
            }
            Block::Text { .. } | Block::Reasoning { .. } | Block::Other => {}
        }
    }
}

/// A message's text as an op: the paths it names and, when the message called no tool, the
/// shell block a text-protocol agent wrote as its action.
fn text_op(text: String, called: bool) -> Op {
    let mut found = Ordered::default();
    scan_paths(&text, &mut found);
    let shell = if called {
        None
    } else {
        shell_block(&text).map(CommandLine::of)
    };
    Op::Text(Text {
        paths: found.items.iter().map(|p| p.to_string()).collect(),
        shell,
        body: TextBody::Raw(text),
    })
}

/// The calls of messages (each with its seq), in order, each settled by its result when the
/// messages hold it (a text-protocol action by the `<returncode>` that follows it).
pub(super) fn checked_calls<'a>(
    messages: impl IntoIterator<Item = (u32, &'a MessageFacts)>,
) -> Vec<(u32, CheckedCall)> {
    let mut calls: Vec<(u32, CheckedCall)> = Vec::new();
    let mut by_id: HashMap<&str, usize, FxBuild> = HashMap::default();
    let mut text_action: Option<usize> = None;
    for (seq, m) in messages {
        for op in &m.ops {
            match op {
                Op::Call { id, call } => {
                    by_id.insert(id, calls.len());
                    calls.push((seq, CheckedCall::of(call)));
                }
                Op::Result {
                    call_id,
                    output,
                    is_error,
                } => {
                    if let Some(&i) = call_id.as_deref().and_then(|id| by_id.get(id)) {
                        if calls[i].1.outcome == Outcome::Pending {
                            calls[i].1.settle(output, *is_error);
                        }
                    }
                }
                Op::ReturnCode(output) => {
                    if let Some(i) = text_action.take() {
                        calls[i].1.settle(output, output.exit.is_some_and(|c| c != 0));
                    }
                }
                Op::Text(t) => {
                    if let Some(command) = &t.shell {
                        text_action = Some(calls.len());
                        calls.push((seq, CheckedCall::shell(command)));
                    }
                }
            }
        }
    }
    calls
}

/// Adds the names of a call's arguments (every string, file bodies included: the model wrote
/// them; not a status word such as a plan item's `in_progress`) to `out`.
fn arg_names(v: &Value, out: &mut Ordered) {
    match v {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(parsed) if parsed.is_object() || parsed.is_array() => arg_names(&parsed, out),
            _ => scan_names(s, false, out),
        },
        Value::Array(items) => items.iter().for_each(|i| arg_names(i, out)),
        Value::Object(map) => map
            .iter()
            .filter(|(k, _)| !matches!(norm_key(k).as_str(), "status" | "state"))
            .for_each(|(_, v)| arg_names(v, out)),
        _ => {}
    }
}

/// The plan a plan tool's arguments set: the first array of objects with a `status` and a text
/// (`{todos: [{content, status}]}`, `{plan: [{step, status}]}`).
fn plan_of(arguments: &Value) -> Option<Vec<(PlanStatus, Box<str>)>> {
    let parsed;
    let args = match arguments {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).ok()?;
            &parsed
        }
        v => v,
    };
    let Value::Object(map) = args else { return None };
    map.values().find_map(|v| {
        let items = v.as_array()?;
        let plan: Vec<(PlanStatus, Box<str>)> = items
            .iter()
            .filter_map(|item| {
                let item = item.as_object()?;
                let status = item.get("status")?.as_str()?;
                let text = item
                    .iter()
                    .find(|(k, v)| PLAN_TEXT_KEYS.contains(&norm_key(k).as_str()) && v.is_string())?
                    .1
                    .as_str()?;
                let status = match norm_key(status).as_str() {
                    "completed" | "complete" | "done" => PlanStatus::Done,
                    "inprogress" | "active" | "running" | "started" => PlanStatus::Doing,
                    _ => PlanStatus::Todo,
                };
                Some((status, Box::from(text.trim())))
            })
            .collect();
        (!plan.is_empty() && plan.len() == items.len()).then_some(plan)
    })
}

impl Facts {
    /// The region's facts: each message's contribution, replayed in order.
    pub(super) fn merge<'a>(messages: impl IntoIterator<Item = &'a MessageFacts>) -> Self {
        let mut f = Facts::default();
        let mut by_id: HashMap<&str, usize, FxBuild> = HashMap::default();
        let mut texts: Vec<&TextBody> = Vec::new();
        // A text-protocol action (a fenced shell block in an assistant text, no tool call) waiting
        // for the user message that carries its `<returncode>` output.
        let mut text_action: Option<usize> = None;
        for m in messages {
            for op in &m.ops {
                match op {
                    Op::Call { id, call } => {
                        f.calls += 1;
                        f.call(call);
                        by_id.insert(id, f.steps.len() - 1);
                    }
                    Op::Result {
                        call_id,
                        output,
                        is_error,
                    } => f.result(&by_id, call_id.as_deref(), output, *is_error),
                    Op::ReturnCode(output) => {
                        if let Some(i) = text_action.take() {
                            let failed = output.exit.is_some_and(|c| c != 0);
                            f.result_at(i, output, failed);
                        }
                    }
                    Op::Text(t) => {
                        for p in &t.paths {
                            f.path(p, PathRole::Named);
                        }
                        if let Some(command) = &t.shell {
                            f.calls += 1;
                            f.push_step("bash", ToolKind::Shell, Some(command), None, None);
                            text_action = Some(f.steps.len() - 1);
                        }
                        texts.push(&t.body);
                    }
                }
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
    fn call(&mut self, call: &Call) {
        let before = self.paths.items.len();
        for (p, role) in &call.paths {
            self.path(p, *role);
        }
        let target: Option<Rc<str>> = match &call.key_target {
            Some(t) => self.paths.seen.get(t.as_str()).cloned(),
            None if call.target_from_new => self.paths.items.get(before).cloned(),
            None => None,
        };
        if call.kind == ToolKind::Edit {
            if let Some(t) = &target {
                *self.edits.entry(t.clone()).or_insert(0) += 1;
            }
        }
        self.push_step(
            &call.name,
            call.kind,
            call.command.as_ref(),
            target.as_deref(),
            call.subject.as_deref(),
        );
    }

    fn push_step(
        &mut self,
        name: &str,
        kind: ToolKind,
        command: Option<&CommandLine>,
        target: Option<&str>,
        subject: Option<&str>,
    ) {
        let (label, more_lines, key) = match command {
            Some(c) => (c.first.clone(), c.more, Some(Rc::from(c.first.as_str()))),
            None => {
                let mut label = name.to_owned();
                for part in [subject, target].into_iter().flatten() {
                    label.push(' ');
                    label.push_str(part);
                }
                (cap(&label, CAP_LABEL).into_owned(), 0, None)
            }
        };
        let read = match (command, kind) {
            (Some(c), _) => shell_read(&c.first),
            (None, ToolKind::Read) => match target {
                Some(t) if is_output_file(t) => FileRead::Output,
                _ => FileRead::Content,
            },
            _ => FileRead::No,
        };
        let kind = if command.is_some() { ToolKind::Shell } else { kind };
        scan_paths(&label, &mut self.in_labels);
        if command.is_some() {
            for t in written_files(&label) {
                self.path(t, PathRole::Written);
            }
        }
        self.steps.push(Step {
            label,
            more_lines,
            kind,
            read,
            outcome: Outcome::Pending,
            errors: Vec::new(),
            repeated: false,
            summary: None,
            key,
        });
    }

    /// Records one tool output on its step: outcome, new error lines, a summary line.
    fn result(&mut self, by_id: &HashMap<&str, usize, FxBuild>, call_id: Option<&str>, out: &Output, is_error: bool) {
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
    fn result_at(&mut self, index: usize, out: &Output, is_error: bool) {
        if is_error {
            self.failed += 1;
        }
        let kind = self.steps[index].kind;
        let program = self.steps[index]
            .key
            .as_deref()
            .map(primary_program)
            .unwrap_or_default();
        // A successful read of a source or document file is content, not diagnostics; a log's
        // or an output file's text is scanned like a command's output.
        let scan_errors = is_error || self.steps[index].read != FileRead::Content;
        let cue_lines = if scan_errors { out.cue_lines } else { 0 };
        let mut added = Vec::new();
        if scan_errors {
            for line in &out.cues {
                let before = self.errors.items.len();
                self.errors.push(line);
                if self.errors.items.len() > before {
                    added.push(before);
                    scan_paths(&self.errors.items[before], &mut self.in_labels);
                }
            }
        }
        if is_error && cue_lines == 0 {
            // A failure that names no cue: its first line says what went wrong.
            if let Some(first) = &out.first {
                let before = self.errors.items.len();
                self.errors.push(first);
                if self.errors.items.len() > before {
                    added.push(before);
                }
            }
        }
        let lines = out.lines;
        let exit = out.exit;
        let summary = if lines == 0 || (lines == 1 && exit.is_some()) {
            Summary::Empty
        } else if kind == ToolKind::Read || READING_PROGRAMS.contains(&program) {
            Summary::Lines(lines - usize::from(exit.is_some()))
        } else if LISTING_PROGRAMS.contains(&program) && cue_lines == 0 {
            Summary::Listing(lines - usize::from(exit.is_some()))
        } else {
            match &out.last {
                Some(l) => Summary::Tail(l.clone()),
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
    fn mine_texts(&mut self, texts: &[&TextBody]) {
        let Some(last) = texts.last() else { return };
        let last = last.mined();
        self.conclusion = last.conclusion.clone();
        self.next = last.next.clone();
        let mut decisions = Ordered::default();
        let mut questions = Ordered::default();
        for text in texts.iter().rev().take(RECENT_TEXTS) {
            for (s, question, decision) in &text.mined().marked {
                if *question && questions.items.len() < MAX_QUESTIONS {
                    questions.push(s);
                } else if *decision && decisions.items.len() < MAX_DECISIONS {
                    decisions.push(s);
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

/// What the report reads in one of the agent's texts: its conclusion (the text on one line),
/// the next step it announces, and its sentences that ask or decide, newest first.
#[derive(Debug, Clone)]
struct Mined {
    conclusion: Option<String>,
    next: Option<String>,
    /// (the sentence, capped; whether it asks; whether it decides), last sentence first; only
    /// sentences that do one or the other.
    marked: Vec<(String, bool, bool)>,
}

impl Mined {
    fn of(text: &str) -> Self {
        let conclusion = collapse(text);
        let all = sentences(text);
        let next = all
            .iter()
            .rev()
            .find(|s| has_cue(&s.to_lowercase(), &NEXT_CUES))
            .map(|s| cap(s, CAP_NEXT).into_owned());
        let marked = all
            .iter()
            .rev()
            .filter_map(|s| {
                let lower = s.to_lowercase();
                let question = s.ends_with('?') || s.ends_with('？') || has_cue(&lower, &QUESTION_CUES);
                let decision = has_cue(&lower, &DECISION_CUES);
                (question || decision).then(|| (cap(s, CAP_SENTENCE).into_owned(), question, decision))
            })
            .collect();
        Self {
            conclusion: (!conclusion.is_empty()).then(|| cap(&conclusion, CAP_CONCLUSION).into_owned()),
            next,
            marked,
        }
    }
}

/// An agent's text as the facts keep it: as written (read when a region's report mines it), or
/// already mined (a message kept for later reports: `MessageFacts::prepare`).
#[derive(Debug, Clone)]
enum TextBody {
    Raw(String),
    Mined(Mined),
}

impl TextBody {
    fn mined(&self) -> Cow<'_, Mined> {
        match self {
            Self::Raw(text) => Cow::Owned(Mined::of(text)),
            Self::Mined(m) => Cow::Borrowed(m),
        }
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

/// The files a shell command's first line writes: the targets of `>` and `>>`, and the files a
/// `sed -i` edits in place.
fn written_files(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut words = line.split_whitespace().peekable();
    let mut in_place = false;
    let mut sed_script = false;
    while let Some(w) = words.next() {
        let target = match w.trim_start_matches(['>', '1']) {
            "" if w.ends_with('>') && !w.starts_with('2') => words.peek().copied(),
            t if w.starts_with('>') && !t.starts_with('&') => Some(t),
            _ => None,
        };
        if let Some(t) = target.map(|t| t.trim_matches(['\'', '"', ';'])) {
            if t.len() > 1 && t != "/dev/null" && !t.starts_with('&') && !t.contains('$') {
                out.push(t);
            }
            continue;
        }
        match w {
            "sed" => (in_place, sed_script) = (false, true),
            "|" | ";" | "&&" | "||" => (in_place, sed_script) = (false, false),
            w if sed_script && w.starts_with("-i") => in_place = true,
            w if in_place && !w.starts_with('-') && !w.starts_with(['\'', '"']) && path_like_arg(w) => out.push(w),
            _ => {}
        }
    }
    out
}

/// A command argument that names a file (a `/` or an extension), not a sed script.
fn path_like_arg(w: &str) -> bool {
    let t = w.trim_matches(['\'', '"', ';']);
    (t.contains('/')
        || t.rsplit_once('.')
            .is_some_and(|(a, b)| !a.is_empty() && is_known_extension(&b.to_ascii_lowercase())))
        && !t.contains(['$', '*'])
}

/// What a shell command's first line reads: a file read when it starts with a file-printing
/// program (past `cd` and wrappers) naming at least one file, pipes only through filters and
/// writes nothing (`>`, `>>`, `tee`, `sed -i`); an output file when one of the files it names
/// is a log or a program's output ([`is_output_file`]).
fn shell_read(line: &str) -> FileRead {
    let mut files = Vec::new();
    let mut first = true;
    for segment in line.split(['|', ';', '&']) {
        let mut words = segment
            .split_whitespace()
            .skip_while(|w| w.contains('=') && !w.starts_with('-') || PREFIX_WORDS.contains(w))
            .peekable();
        let Some(program) = words.next() else { continue };
        let program = program.rsplit('/').next().unwrap_or(program);
        if matches!(program, "cd" | "pushd" | "source" | "." | "export" | "set") {
            continue;
        }
        let allowed: &[&str] = if first { &FILE_PROGRAMS } else { &FILTER_PROGRAMS };
        if !allowed.contains(&program) {
            return FileRead::No;
        }
        for w in words {
            let redirect = w.starts_with('>') || w.starts_with("1>") || (w.contains('>') && !w.starts_with("2>"));
            if redirect || (program == "sed" && w.starts_with("-i")) || w == "tee" {
                return FileRead::No;
            }
            if first && !w.starts_with('-') && !w.starts_with("2>") {
                files.push(w.trim_matches(['\'', '"']));
            }
        }
        first = false;
    }
    match files.as_slice() {
        [] => FileRead::No,
        fs if fs.iter().any(|f| is_output_file(f)) => FileRead::Output,
        _ => FileRead::Content,
    }
}

/// A log or a program's output file, by its name: an output extension (`.log`, `.out`, `.err`,
/// ...), or, when its extension is not a source or document one, an output word among the
/// name's parts (`test_output.txt`, `stderr`, `build-log.txt`).
fn is_output_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    if let Some((_, ext)) = name.rsplit_once('.') {
        if OUTPUT_EXTENSIONS.contains(&ext) {
            return true;
        }
        if ext != "txt" && is_known_extension(ext) {
            return false;
        }
    }
    name.split(['.', '-', '_']).any(|part| OUTPUT_WORDS.contains(&part))
}

/// What tells runs of a command apart: its program (as [`primary_program`] finds it) and its
/// first argument that is not a flag (`pytest tests/a.py`, `python -m` → `python pytest`).
fn run_key(line: &str) -> String {
    for segment in line.split(['|', ';', '&']) {
        let mut words = segment
            .split_whitespace()
            .skip_while(|w| w.contains('=') && !w.starts_with('-') || PREFIX_WORDS.contains(w));
        match words.next() {
            None | Some("cd" | "pushd" | "source" | "." | "export" | "set") => continue,
            Some(program) => {
                let program = program.rsplit('/').next().unwrap_or(program);
                let arg = words.find(|w| !w.starts_with('-')).unwrap_or("");
                return format!("{program} {arg}");
            }
        }
    }
    String::new()
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
    fn file_reads_and_output_files() {
        assert_eq!(shell_read("cd /x && cat src/a.py | head -80"), FileRead::Content);
        assert_eq!(shell_read("nl -ba docs/a.md | sed -n '56,120p'"), FileRead::Content);
        assert_eq!(shell_read("tail -n 50 /tmp/build.log"), FileRead::Output);
        assert_eq!(
            shell_read("cat target/test_output.txt | grep -n error"),
            FileRead::Output
        );
        assert_eq!(shell_read("cat > /tmp/t.py << 'EOF'"), FileRead::No);
        assert_eq!(shell_read("sed -i 's/a/b/' src/a.py"), FileRead::No);
        assert_eq!(shell_read("cat a.log | tee b.log"), FileRead::No);
        assert_eq!(shell_read("python -m pytest -x 2>&1 | tail -5"), FileRead::No);
        assert_eq!(shell_read("cat"), FileRead::No);
        for yes in [
            "build.log",
            "/tmp/nohup.out",
            "test_output.txt",
            "logs/stderr",
            "build-log.txt",
            "junit.xml.err",
        ] {
            assert!(is_output_file(yes), "{yes}");
        }
        for no in [
            "src/logger.py",
            "errors.py",
            "requirements.txt",
            "CHANGELOG.md",
            "src/output.rs",
            "tools.txt",
        ] {
            assert!(!is_output_file(no), "{no}");
        }
    }

    #[test]
    fn exit_code_lines() {
        assert_eq!(exit_code("<returncode>2</returncode>"), Some(2));
        assert_eq!(exit_code("[exit code 101]"), Some(101));
        assert_eq!(exit_code("Exit code: 2"), Some(2));
        assert_eq!(exit_code("exit code is what matters"), None);
    }
}

//! The deterministic extractive report: the fold's report written without a model.
//!
//! Contract. [`extractive_report`] takes the region's messages in DSH's shape (a JSON array of
//! `{role, content: [blocks]}`) and writes the same Markdown sections as the LLM report —
//! Findings / Files and Artifacts / Decisions / Unresolved Questions / Recommended Next Step —
//! in English or Chinese. It copies, never paraphrases: every item is a verbatim piece of the
//! region, set in fixed headings and labels. Output is a pure function of the input bytes and
//! the options (no hash-order iteration, no clock), costs time linear in the region, and is at
//! most `min(maxChars, visible - 1)` UTF-16 units long, where `visible` is the region's own
//! model-visible text (user/assistant text, reasoning, tool-call arguments, tool outputs; the
//! fold's shrink meter). When not even the report's skeleton fits, it fails with `SHRINK`; a
//! region with no visible text is bounded by `maxChars` alone. Input that is not an array of
//! messages, or a message that is not `{role: 'system'|'user'|'assistant'|'tool', content: []}`,
//! is `INVALID_ARGUMENT`; block types it does not know (images, plugin blocks) are skipped.
//!
//! Accepted shapes: DSH's own (`deriveMessages()`: tool results are `role: 'user'` messages
//! holding a `{type: 'tool-result', toolCallId, content, isError}` block) and the flat
//! `{role: 'tool', callId, content, isError?}`. `arguments` is the raw JSON string or an object.
//!
//! Heuristics, in priority order under the budget (each list deduplicated, first-seen order):
//! 1. **Paths in tool-call arguments.** String values under path-like keys (`path`, `file_path`,
//!    `cwd`, ...) that are one token are taken whole; other argument strings (except file
//!    contents: `content`, `new_string`, `patch`, ...) are scanned for path tokens. A path token
//!    is a run of `[A-Za-z0-9_.~@+/-]` with a letter that starts with `/`, `~/`, `./` or `../`,
//!    has two slashes, or ends in a known extension (`.rs`, `.json`, ...); `file:///x` gives
//!    `/x`; URLs and `scheme:rest` tokens (`node:internal/...`) are not paths.
//! 2. **Commands**: top-level `command`/`cmd`/`script`/`commands` argument strings (an argv
//!    array is joined), `args`/`argv` of shell-like tools (`bash`, `shell`, `exec`, ...), or the
//!    raw arguments of a shell-like tool that are not JSON. Whole up to 600 chars.
//! 3. **Error lines**: output lines with one of [`ERROR_CUES`] (ASCII case-insensitive) at a
//!    word start or as a name's suffix before a single `:` (`error[E0061]`, `FAILED`,
//!    `TypeError:`, not `ParseError::TooDeep`), from every output except those of successful
//!    file-reading tools ([`READ_TOOL_CUES`]); an `isError` output without one gives its first
//!    line.
//! 4. **Next step**: the last sentence of the last assistant text with a next-step cue (`next`,
//!    `then`, `should`, `下一步`, ...), else its last sentence. May be cut to fit.
//! 5. **Conclusions** (Findings): the other sentences of the last assistant text that are no
//!    decision or question, up to 1200 chars.
//! 6. **Other paths**: path tokens in outputs, user/assistant text and file contents.
//! 7. **Decisions**: assistant-text sentences with a decision cue (`decide`, `chose`, `will`,
//!    `use`, `instead`, `决定`, `改用`, ...; ASCII cues as whole words).
//! 8. **Unresolved questions**: assistant-text sentences ending in `?`/`？` or naming
//!    `TODO`/`FIXME`/`unknown`/`unclear`/`不确定`/... .
//! 9. **Observations** (Findings): earlier assistant-text sentences with no cue at all (not
//!    intents such as "Let me ...", "先...").
//! 10. **Values**: identifier- or number-shaped tokens of assistant text (a digit, `_`, `::` or a
//!     camelCase step) that also occur in a tool output: what the outputs established.
//! 11. **Output tails**: the last 3 non-empty lines with a letter or digit of each tool output,
//!     under its command (or tool name and first path).
//! 12. **Counts**: messages, tool calls, failed calls, visible chars.
//!
//! Sentences come from prose outside fenced code; reasoning is measured but not mined (it is
//! speculative). Lines are capped (300 chars, tails 200) and end in `…` when cut. When the whole
//! report does not fit, items are taken greedily in the order above (one that does not fit is
//! skipped, smaller later ones may still fit), and a closing line says how many were left out.
//! Time is linear: every input byte is scanned a bounded number of times, and sets only test
//! membership (output order never depends on hashing).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{FoldError, Result};

/// The report budget when the caller names none, in UTF-16 units.
pub const DEFAULT_MAX_CHARS: usize = 4000;
/// Output-line cues (ASCII case-insensitive) that make a line an error line; see `is_error_line`.
pub const ERROR_CUES: [&str; 19] = [
    "error",
    "err!",
    "fail",
    "panic",
    "exception",
    "traceback",
    "fatal",
    "abort",
    "denied",
    "not found",
    "no such file",
    "cannot",
    "can't",
    "unable to",
    "segmentation fault",
    "timed out",
    "✗",
    "✘",
    "❌",
];
/// Tool-name substrings of file-reading tools, whose successful output is content, not diagnostics.
pub const READ_TOOL_CUES: [&str; 4] = ["read", "view", "open", "cat"];

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
const EXTENSIONS: [&str; 52] = [
    "rs", "toml", "lock", "json", "jsonl", "js", "mjs", "cjs", "ts", "mts", "cts", "tsx", "jsx", "md", "mdx", "yml",
    "yaml", "py", "pyi", "go", "c", "h", "cc", "cpp", "hpp", "java", "kt", "swift", "rb", "php", "cs", "sh", "bash",
    "zsh", "txt", "log", "node", "html", "css", "scss", "vue", "svelte", "sql", "proto", "xml", "csv", "ini", "cfg",
    "conf", "env", "patch", "diff",
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
const CAP_LINE: usize = 300;
const CAP_TAIL_LINE: usize = 200;
const CAP_COMMAND: usize = 600;
const CAP_LABEL: usize = 80;
const CAP_SENTENCE: usize = 300;
const CAP_NEXT: usize = 400;
const CAP_CONCLUSIONS: usize = 1200;
const MIN_CUT: usize = 40;
const ELLIPSIS: &str = "…";

/// The report's language: section names and the few fixed phrases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Language {
    #[default]
    En,
    Zh,
}

impl Language {
    /// `"en"` or `"zh"`; anything else is `INVALID_ARGUMENT`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "en" => Ok(Self::En),
            "zh" => Ok(Self::Zh),
            _ => Err(FoldError::invalid(format!("language must be 'en' or 'zh', got {s:?}"))),
        }
    }

    /// The five section headings, in report order.
    pub fn sections(self) -> [&'static str; 5] {
        match self {
            Self::En => [
                "## Findings",
                "## Files and Artifacts",
                "## Decisions",
                "## Unresolved Questions",
                "## Recommended Next Step",
            ],
            Self::Zh => [
                "## 发现",
                "## 文件与产物",
                "## 决策",
                "## 未解决的问题",
                "## 建议的下一步",
            ],
        }
    }

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

/// What to write and how long it may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportOptions {
    pub language: Language,
    /// Upper bound of the report in UTF-16 units (JS `string.length`); the region's own visible
    /// size minus one bounds it further.
    pub max_chars: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        Self {
            language: Language::En,
            max_chars: DEFAULT_MAX_CHARS,
        }
    }
}

/// Parses `messages_json` and writes its extractive report.
///
/// # Errors
/// `INVALID_ARGUMENT` for input that is not an array of DSH messages; `SHRINK` when even the
/// skeleton of the report does not fit in `min(max_chars, visible - 1)`.
pub fn extractive_report(messages_json: &str, options: &ReportOptions) -> Result<String> {
    Region::parse(messages_json)?.report(options)
}

// ---------------------------------------------------------------------------------------------
// Input
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    System,
    User,
    Assistant,
    Tool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Message {
    role: Role,
    content: Vec<Block>,
    #[serde(default, alias = "toolCallId")]
    call_id: Option<String>,
    #[serde(default)]
    is_error: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
enum Block {
    #[serde(rename = "text")]
    Text { text: String },
    #[serde(rename = "reasoning")]
    Reasoning { text: String },
    #[serde(rename = "tool-call")]
    ToolCall {
        #[serde(default)]
        id: String,
        name: String,
        #[serde(default)]
        arguments: Value,
    },
    #[serde(rename = "tool-result", rename_all = "camelCase")]
    ToolResult {
        #[serde(default)]
        tool_call_id: String,
        #[serde(default)]
        content: Vec<Block>,
        #[serde(default)]
        is_error: bool,
    },
    #[serde(other)]
    Other,
}

/// The array of messages; a bad element's error names its index.
struct Messages(Vec<Message>);

impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Seq;
        impl<'de> Visitor<'de> for Seq {
            type Value = Messages;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of DSH messages")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Messages, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                loop {
                    match seq.next_element::<Message>() {
                        Ok(Some(m)) => out.push(m),
                        Ok(None) => return Ok(Messages(out)),
                        Err(e) => {
                            let e = e.to_string();
                            let e = e.rsplit_once(" at line ").map_or(e.as_str(), |(head, _)| head);
                            return Err(de::Error::custom(format_args!("message {}: {e}", out.len())));
                        }
                    }
                }
            }
        }
        d.deserialize_seq(Seq)
    }
}

/// A parsed region: the messages a fold would replace.
#[derive(Debug)]
pub struct Region {
    messages: Vec<Message>,
}

impl Region {
    /// Parses the region's messages from JSON.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT`, naming the message and field at fault.
    pub fn parse(json: &str) -> Result<Self> {
        match serde_json::from_str::<Messages>(json) {
            Ok(Messages(messages)) => Ok(Self { messages }),
            // The element wrapper hides the category, so ask the bare syntax (error path only).
            Err(e) => Err(FoldError::invalid(match serde_json::from_str::<de::IgnoredAny>(json) {
                Err(syntax) => format!("messages is not valid JSON: {syntax}"),
                Ok(_) => format!("messages must be an array of DSH messages {{role, content: [blocks]}}: {e}"),
            })),
        }
    }

    /// The region's model-visible text in UTF-16 units: user and assistant text, reasoning,
    /// tool-call arguments (as the JSON text the model wrote) and tool outputs.
    pub fn visible_chars(&self) -> usize {
        fn blocks(bs: &[Block]) -> usize {
            bs.iter()
                .map(|b| match b {
                    Block::Text { text } | Block::Reasoning { text } => len16(text),
                    Block::ToolCall { arguments, .. } => match arguments {
                        Value::String(s) => len16(s),
                        Value::Null => 0,
                        v => len16(&v.to_string()),
                    },
                    Block::ToolResult { content, .. } => blocks(content),
                    Block::Other => 0,
                })
                .sum()
        }
        self.messages.iter().map(|m| blocks(&m.content)).sum()
    }

    /// Writes the report (see the module docs).
    ///
    /// # Errors
    /// `SHRINK` when the report's skeleton does not fit its limit.
    pub fn report(&self, options: &ReportOptions) -> Result<String> {
        let visible = self.visible_chars();
        let limit = if visible == 0 {
            options.max_chars
        } else {
            options.max_chars.min(visible - 1)
        };
        let facts = Facts::extract(&self.messages);
        let plan = Plan::new(&facts, options.language, self.messages.len(), visible);
        plan.render(limit).ok_or_else(|| {
            FoldError::Shrink(format!(
                "the extractive report cannot be shorter than the region: its skeleton needs more than {limit} \
                 chars (region {visible} chars, maxChars {})",
                options.max_chars
            ))
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Extraction
// ---------------------------------------------------------------------------------------------

/// FxHash: fast and deterministic (the inputs are the session's own text, not an adversary's).
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }
    fn write_u8(&mut self, b: u8) {
        self.add(u64::from(b));
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl Fx {
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type FxBuild = BuildHasherDefault<Fx>;

/// An ordered set of strings: insertion order kept, duplicates dropped.
#[derive(Default)]
struct Ordered {
    seen: HashSet<Rc<str>, FxBuild>,
    items: Vec<Rc<str>>,
}

impl Ordered {
    fn push(&mut self, s: &str) {
        if !s.is_empty() && !self.seen.contains(s) {
            let s: Rc<str> = Rc::from(s);
            self.seen.insert(s.clone());
            self.items.push(s);
        }
    }
}

struct Tail {
    label: String,
    lines: Vec<String>,
}

/// Everything extracted from the region, before the budget.
#[derive(Default)]
struct Facts {
    arg_paths: Ordered,
    other_paths: Ordered,
    commands: Ordered,
    errors: Ordered,
    decisions: Ordered,
    questions: Ordered,
    values: Ordered,
    tails: Vec<Tail>,
    /// Unplaced sentences of the last assistant text (its conclusions) and of earlier ones.
    conclusions: Ordered,
    notes: Ordered,
    next: Option<String>,
    calls: usize,
    failed: usize,
}

/// What the extractor remembers about a call until its result arrives.
struct CallInfo {
    label: String,
    reads: bool,
}

impl Facts {
    fn extract(messages: &[Message]) -> Self {
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

fn join_text(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        if let Block::Text { text } = b {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
    }
    out
}

/// An error line: an ASCII cue at a word start (`error[E0061]`, `FAILED`, `Permission denied`)
/// or ending a name before one `:` (`TypeError:`), or a non-ASCII cue (`✗`) anywhere. So code
/// identifiers (`ParseError::TooDeep`, `isError`) are not errors.
fn is_error_line(line: &str) -> bool {
    // A test runner's success line names its test, and a test named `errors` or `fails_on_eof`
    // passing is not a failure: `test eval::errors ... ok` (libtest), `ok 3 - errors` (TAP),
    // `✓ errors` / `✔ errors` (mocha, node --test, vitest).
    let trimmed = line.trim();
    if ends_with_ci(trimmed.as_bytes(), b"... ok")
        || starts_with_ci(trimmed.as_bytes(), b"ok ")
        || trimmed.starts_with(['✓', '✔'])
    {
        return false;
    }
    /// Bit `x - 'a'` is set when an ASCII cue starts with `x`.
    const FIRST: u32 = {
        let mut m = 0u32;
        let mut i = 0;
        while i < ERROR_CUES.len() {
            let c = ERROR_CUES[i].as_bytes()[0];
            if c.is_ascii_lowercase() {
                m |= 1 << (c - b'a');
            }
            i += 1;
        }
        m
    };
    let b = line.as_bytes();
    let cue_at = |i: usize| {
        let first = b[i].to_ascii_lowercase();
        FIRST & (1 << (first - b'a')) != 0
            && ERROR_CUES
                .iter()
                .any(|c| c.as_bytes()[0] == first && starts_with_ci(&b[i..], c.as_bytes()))
    };
    let cue_before = |j: usize| {
        let last = b[j - 1].to_ascii_lowercase();
        ERROR_CUES
            .iter()
            .any(|c| c.as_bytes()[c.len() - 1] == last && ends_with_ci(&b[..j], c.as_bytes()))
    };
    for i in 0..b.len() {
        let word_start = b[i].is_ascii_alphabetic() && (i == 0 || !b[i - 1].is_ascii_alphabetic());
        if (word_start && cue_at(i))
            || (b[i] == b':' && b.get(i + 1) != Some(&b':') && i > 0 && b[i - 1] != b':' && cue_before(i))
        {
            return true;
        }
    }
    !line.is_ascii() && ERROR_CUES.iter().any(|c| !c.is_ascii() && line.contains(c))
}

fn starts_with_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay[..needle.len()].eq_ignore_ascii_case(needle)
}

fn ends_with_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay[hay.len() - needle.len()..].eq_ignore_ascii_case(needle)
}

/// Whether `lower` contains `cue` as a whole word (ASCII cues) or at all (CJK cues).
fn has_cue(lower: &str, cues: &[&str]) -> bool {
    let b = lower.as_bytes();
    // A word boundary: not an ASCII letter or digit, and not inside a multi-byte letter.
    let boundary_before = |i: usize| i == 0 || (b[i - 1] < 0x80 && !b[i - 1].is_ascii_alphanumeric());
    let boundary_at = |i: usize| i >= b.len() || (b[i] < 0x80 && !b[i].is_ascii_alphanumeric());
    for i in 0..b.len() {
        if !boundary_before(i) || !b[i].is_ascii_alphanumeric() {
            continue;
        }
        let word = &b[i..];
        let hit = cues.iter().any(|c| {
            let c = c.as_bytes();
            c[0] == word[0] && word.starts_with(c) && boundary_at(i + c.len())
        });
        if hit {
            return true;
        }
    }
    !lower.is_ascii() && cues.iter().any(|c| !c.is_ascii() && lower.contains(c))
}

fn path_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/' | b'~' | b'@' | b'+')
}

/// Adds every path token of `s` to `out`. `file:///x` yields `/x`; other `scheme:rest` tokens
/// (`node:internal/...`, `https://...`) are not paths.
fn scan_paths(s: &str, out: &mut Ordered) {
    let b = s.as_bytes();
    let mut start = 0;
    let mut marked = false; // the token has a `/` or a `.`: the only ones that can be paths
    for i in 0..=b.len() {
        let c = b.get(i).copied().unwrap_or(b' ');
        if path_byte(c) {
            marked |= c == b'/' || c == b'.';
            continue;
        }
        if marked {
            let tok = s[start..i].trim_end_matches(['.', '-']);
            let tok = match s[..start].strip_suffix(':') {
                Some(head) if head.ends_with("file") && tok.starts_with("///") => Some(&tok[2..]),
                Some(head) if head.ends_with(|c: char| c.is_ascii_alphabetic()) => None,
                _ => Some(tok),
            };
            if let Some(tok) = tok.filter(|t| path_like(t)) {
                out.push(tok);
            }
        }
        start = i + 1;
        marked = false;
    }
}

fn path_like(tok: &str) -> bool {
    if tok.len() < 3 || tok.len() > CAP_LINE || !tok.bytes().any(|b| b.is_ascii_alphabetic()) || tok.starts_with("//") {
        return false;
    }
    let known_ext = tok
        .rsplit('/')
        .next()
        .and_then(|name| name.rsplit_once('.'))
        .is_some_and(|(stem, ext)| {
            !stem.is_empty() && EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()) && !stem.ends_with('.')
        });
    if !tok.contains('/') {
        return known_ext;
    }
    known_ext
        || tok.starts_with('/')
        || tok.starts_with("~/")
        || tok.starts_with("./")
        || tok.starts_with("../")
        || tok.matches('/').count() >= 2
}

/// Identifier/number tokens: runs of `[A-Za-z0-9_.:#@/$+-]`, trimmed of edge punctuation.
fn tokens_of(s: &str) -> impl Iterator<Item = &str> {
    let token =
        |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'#' | b'@' | b'/' | b'$' | b'+' | b'-');
    s.as_bytes()
        .split(move |&c| !token(c))
        .map(|t| {
            let start = t.iter().position(u8::is_ascii_alphanumeric).unwrap_or(t.len());
            let end = t.iter().rposition(u8::is_ascii_alphanumeric).map_or(start, |e| e + 1);
            &t[start..end.max(start)]
        })
        .filter(|t| !t.is_empty())
        // Tokens are ASCII, split at ASCII bytes: always whole chars.
        .map(|t| std::str::from_utf8(t).unwrap_or_default())
}

/// An identifier or number worth copying: has a digit, `_`, `::`, or a lower-to-upper case step.
fn value_shaped(t: &str) -> bool {
    if t.len() < 2 || t.len() > 64 {
        return false;
    }
    let b = t.as_bytes();
    b.iter().any(u8::is_ascii_digit)
        || (t.len() >= 3 && (t.contains('_') || t.contains("::")))
        || b.windows(2)
            .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
}

/// Sentences of prose, outside fenced code blocks, with list markers stripped.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || t.is_empty() {
            continue;
        }
        let t = t.trim_start_matches(['#', '>', '-', '*', '+', ' ']);
        let t = match t.split_once(". ") {
            Some((n, rest)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => rest,
            _ => t,
        };
        let mut start = 0;
        let mut chars = t.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let end = match c {
                '。' | '！' | '？' => true,
                '.' | '!' | '?' => chars.peek().is_none_or(|(_, n)| n.is_whitespace()),
                _ => false,
            };
            if end {
                let j = i + c.len_utf8();
                push_sentence(&t[start..j], &mut out);
                start = j;
            }
        }
        push_sentence(&t[start..], &mut out);
    }
    out
}

fn push_sentence<'a>(s: &'a str, out: &mut Vec<&'a str>) {
    let s = s.trim();
    if s.chars().count() >= 3 {
        out.push(s);
    }
}

/// UTF-16 length, the unit JS and the fold's meter count in.
fn len16(s: &str) -> usize {
    // One unit per char (every byte but continuation bytes), two for 4-byte chars.
    s.bytes()
        .map(|b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0))
        .sum()
}

/// `s` cut to at most `max` UTF-16 units, ending in `…` when cut.
fn cap(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max || len16(s) <= max {
        return Cow::Borrowed(s);
    }
    let mut n = 0;
    let mut end = 0;
    for (i, c) in s.char_indices() {
        n += c.len_utf16();
        if n > max - 1 {
            break;
        }
        end = i + c.len_utf8();
    }
    Cow::Owned(format!("{}{ELLIPSIS}", &s[..end]))
}

// ---------------------------------------------------------------------------------------------
// Layout and budget
// ---------------------------------------------------------------------------------------------

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
struct Plan {
    language: Language,
    groups: Vec<Group>,
    /// Render order of group indices within each section.
    layout: [Vec<usize>; 5],
}

impl Plan {
    fn new(f: &Facts, language: Language, messages: usize, visible: usize) -> Self {
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
    fn render(&self, limit: usize) -> Option<String> {
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

#[cfg(test)]
mod tests {

    #[test]
    fn test_runner_success_lines_are_not_errors() {
        assert!(!is_error_line("test eval::tests::errors ... ok"));
        assert!(!is_error_line("ok 3 - reports errors"));
        assert!(!is_error_line("  ✔ fails on eof (2ms)"));
        assert!(is_error_line("test lexer::tests::unicode_ident ... FAILED"));
        assert!(is_error_line("not ok 4 - errors on eof"));
    }
    use super::*;

    const RUST: &str = include_str!("../../../__test__/fixtures/report/rust-build-failure.json");
    const NODE_ZH: &str = include_str!("../../../__test__/fixtures/report/node-test-failure.zh.json");
    const WIDE: &str = include_str!("../../../__test__/fixtures/report/wide-listing.json");

    fn opts(language: Language, max_chars: usize) -> ReportOptions {
        ReportOptions { language, max_chars }
    }

    fn en(json: &str) -> String {
        extractive_report(json, &ReportOptions::default()).unwrap()
    }

    fn assert_has(report: &str, needles: &[&str]) {
        for n in needles {
            assert!(report.contains(n), "report lacks {n:?}:\n{report}");
        }
    }

    /// Headings appear once each, in order.
    fn assert_sections(report: &str, language: Language) {
        let mut at = 0;
        for h in language.sections() {
            let i = report[at..]
                .find(&format!("{h}\n"))
                .unwrap_or_else(|| panic!("no {h:?} after {at}:\n{report}"));
            at += i + h.len();
        }
    }

    fn msgs(v: serde_json::Value) -> String {
        v.to_string()
    }

    #[test]
    fn writes_the_five_sections_in_english_and_chinese() {
        assert_sections(&en(RUST), Language::En);
        let zh = extractive_report(NODE_ZH, &opts(Language::Zh, DEFAULT_MAX_CHARS)).unwrap();
        assert_sections(&zh, Language::Zh);
        assert!(!zh.contains("## Findings"));
        assert_has(&zh, &["- 错误与失败：", "- 各输出的最后几行："]);
        assert_sections(
            &extractive_report(RUST, &opts(Language::Zh, DEFAULT_MAX_CHARS)).unwrap(),
            Language::Zh,
        );
    }

    #[test]
    fn keeps_paths_commands_error_lines_and_tails_verbatim() {
        let r = en(RUST);
        assert_has(
            &r,
            &[
                "`src/parser.rs`",
                "`src/main.rs`",
                "`Cargo.toml`",
                "- $ ls -R src config && cat Cargo.toml",
                "- $ cargo build --offline 2>&1",
                "- $ grep -rn \"parse_header\" src",
                "  - error[E0061]: this function takes 3 arguments but 2 arguments were supplied",
                "  - error: could not compile `ini-lite` (bin \"ini-lite\") due to 1 previous error",
                "[exit code 101]",
                "`MAX_DEPTH`, `64`, `E0061`",
            ],
        );
        // Code read with a read tool is content, not diagnostics; identifiers are not errors.
        assert!(!r.contains("  - return Err(ParseError::TooDeep);"), "{r}");
        assert!(!r.contains("  - src/parser.rs:33:"), "{r}");
    }

    #[test]
    fn sorts_assistant_sentences_into_findings_decisions_questions_and_next_step() {
        let r = en(RUST);
        let section = |h: &str| {
            let start = r.find(h).unwrap() + h.len();
            let end = r[start..].find("\n## ").map_or(r.len(), |i| start + i);
            r[start..end].to_owned()
        };
        assert!(section("## Decisions").contains("- I decided to keep the 3-argument signature"));
        assert!(section("## Unresolved Questions").contains("is `BadHeader` still meant for unterminated headers?"));
        assert!(section("## Recommended Next Step").contains("Next step: edit src/main.rs to call"));
        let findings = section("## Findings");
        assert!(findings.contains("- Findings: the build fails because src/main.rs:5 calls"));
        assert!(findings.contains("- The build fails with E0061 in src/main.rs."));
        assert!(
            !findings.contains("Let me look at"),
            "intents are not findings: {findings}"
        );
        assert!(
            !findings.contains("I decided"),
            "a decision is not repeated in findings"
        );
        let zh = extractive_report(NODE_ZH, &opts(Language::Zh, DEFAULT_MAX_CHARS)).unwrap();
        assert_has(
            &zh,
            &[
                "## 决策\n- 我决定在 lib/ttl.js 中改用默认 TTL",
                "## 未解决的问题\n- 默认 TTL 应该取多少，配置里是否已有约定？",
                "## 建议的下一步\n下一步：修改 lib/ttl.js 加上默认值，然后重新运行 `npm test`。",
                "  - TypeError: Cannot read properties of undefined (reading 'ttlMs')",
                "  - /bin/bash: line 1: pnpm: command not found",
            ],
        );
    }

    #[test]
    fn is_deterministic() {
        for f in [RUST, NODE_ZH, WIDE] {
            for max in [DEFAULT_MAX_CHARS, 1500, 700] {
                let a = extractive_report(f, &opts(Language::En, max));
                assert_eq!(a, extractive_report(f, &opts(Language::En, max)));
            }
        }
    }

    #[test]
    fn always_shrinks_and_respects_every_budget() {
        for f in [RUST, NODE_ZH, WIDE] {
            let visible = Region::parse(f).unwrap().visible_chars();
            assert!(len16(&en(f)) < visible);
            let mut fitted = 0;
            for max in (0..visible + 200).step_by(7) {
                match extractive_report(f, &opts(Language::Zh, max)) {
                    Ok(r) => {
                        fitted += 1;
                        assert!(len16(&r) <= max.min(visible - 1), "{} > {max}", len16(&r));
                        assert_sections(&r, Language::Zh);
                    }
                    Err(e) => {
                        assert_eq!(e.code(), "SHRINK");
                        assert!(max < 400, "only a skeleton-sized budget may fail: {max}");
                    }
                }
            }
            assert!(fitted > 0);
        }
    }

    #[test]
    fn under_pressure_keeps_paths_commands_and_errors_first_and_says_what_it_left_out() {
        let r = en(WIDE);
        assert!(len16(&r) <= DEFAULT_MAX_CHARS);
        assert_has(
            &r,
            &[
                "`packages/pkg-99/src`",
                "- $ find packages -type f | sort",
                "ls: cannot access 'packages/pkg-99/src': No such file or directory",
                "Next, I will read packages/pkg-00/src/index.ts.",
                "items omitted to fit 4000 chars]_",
            ],
        );
        let r = extractive_report(WIDE, &opts(Language::En, 600)).unwrap();
        assert!(len16(&r) <= 600);
        assert_has(
            &r,
            &["- $ find packages -type f | sort", "items omitted to fit 600 chars]_"],
        );
    }

    #[test]
    fn a_region_too_small_for_the_skeleton_is_shrink() {
        let tiny = msgs(serde_json::json!([{ "role": "assistant", "content": [{ "type": "text", "text": "Done." }] }]));
        let e = extractive_report(&tiny, &ReportOptions::default()).unwrap_err();
        assert_eq!(e.code(), "SHRINK");
        assert!(e.to_string().contains("region 5 chars"), "{e}");
        assert_eq!(
            extractive_report(RUST, &opts(Language::En, 10)).unwrap_err().code(),
            "SHRINK"
        );
    }

    #[test]
    fn an_empty_region_is_bounded_by_max_chars_alone() {
        let r = extractive_report("[]", &ReportOptions::default()).unwrap();
        assert_sections(&r, Language::En);
        assert!(r.contains("- (none)"));
        assert_eq!(Region::parse("[]").unwrap().visible_chars(), 0);
    }

    #[test]
    fn reads_the_flat_tool_shape_object_arguments_and_skips_unknown_blocks() {
        let json = msgs(serde_json::json!([
            { "role": "user", "content": [
                { "type": "image", "attachment": { "id": "a1", "mime": "image/png" } },
                { "type": "text", "text": "see ./docs/arch.md" },
            ] },
            { "role": "assistant", "content": [
                { "type": "reasoning", "text": "check the env file" },
                { "type": "tool-call", "id": "c1", "name": "shell", "arguments": { "cmd": ["cat", ".env.local"] } },
                { "type": "tool-call", "id": "c2", "name": "edit_file",
                  "arguments": { "file_path": "src/app", "new_string": "see lib/util/fmt.go" } },
                { "type": "plugin-widget", "payload": [1, 2, 3] },
            ] },
            { "role": "tool", "callId": "c1", "isError": true, "content": [{ "type": "text", "text": "cat: .env.local: No such file or directory\nexit 1" }] },
            { "role": "tool", "toolCallId": "c2", "content": [{ "type": "text", "text": format!("{}ok: wrote 12 lines", "~\n".repeat(400)) }] },
            { "role": "assistant", "content": [{ "type": "text", "text": "The env file is missing, so the config falls back to defaults and nothing else changes in this module." }] },
        ]));
        let region = Region::parse(&json).unwrap();
        let args = r#"{"cmd":["cat",".env.local"]}"#.len() - 4
            + r#"{"file_path":"src/app","new_string":"see lib/util/fmt.go"}"#.len();
        assert!(region.visible_chars() > args);
        let r = region.report(&ReportOptions::default()).unwrap();
        assert_has(
            &r,
            &[
                "- $ cat .env.local",
                "`src/app`",
                "`./docs/arch.md`",
                "`lib/util/fmt.go`",
                "  - cat: .env.local: No such file or directory",
                "1 failed",
            ],
        );
    }

    #[test]
    fn raw_non_json_arguments_of_a_shell_tool_are_the_command() {
        let json = msgs(serde_json::json!([
            { "role": "assistant", "content": [{ "type": "tool-call", "id": "c", "name": "bash", "arguments": "make -C build check" }] },
            { "role": "user", "content": [{ "type": "tool-result", "toolCallId": "c", "content": [{ "type": "text", "text": format!("{}make: *** [check] Error 2\nmake: Leaving directory '/src/build'", "cc -c x.c\n".repeat(60)) }] }] },
        ]));
        let r = en(&json);
        assert_has(
            &r,
            &[
                "- $ make -C build check",
                "  - make: *** [check] Error 2",
                "  - $ make -C build check →",
            ],
        );
    }

    #[test]
    fn rejects_what_is_not_an_array_of_messages() {
        let bad = [
            ("[{\"role\":", "not valid JSON"),
            ("nope", "not valid JSON"),
            ("{}", "expected an array of DSH messages"),
            ("{\"role\":\"user\"}", "array of DSH messages"),
            ("[{\"content\":[]}]", "message 0: missing field `role`"),
            (
                "[{\"role\":\"user\",\"content\":[]},{\"role\":\"robot\",\"content\":[]}]",
                "message 1: unknown variant `robot`",
            ),
            (
                "[{\"role\":\"user\",\"content\":\"hi\"}]",
                "message 0: invalid type: string",
            ),
            (
                "[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]",
                "missing field `text`",
            ),
            (
                "[{\"role\":\"user\",\"content\":[{\"text\":\"x\"}]}]",
                "missing field `type`",
            ),
            ("[1]", "message 0"),
        ];
        for (json, what) in bad {
            let e = Region::parse(json).unwrap_err();
            assert_eq!(e.code(), "INVALID_ARGUMENT", "{json}");
            assert!(e.to_string().contains(what), "{json}: {e}");
            assert!(e.to_string().matches(" at line ").count() <= 1, "{e}");
        }
        assert_eq!(Language::parse("fr").unwrap_err().code(), "INVALID_ARGUMENT");
        assert_eq!(Language::parse("zh"), Ok(Language::Zh));
    }

    #[test]
    fn counts_utf16_units_like_js() {
        assert_eq!(len16("a中😀"), 4);
        assert_eq!(cap("😀😀😀", 5), "😀😀…");
        assert_eq!(cap("abc", 3), "abc");
        let json = msgs(serde_json::json!([{ "role": "assistant", "content": [{ "type": "text", "text": "😀x" }] }]));
        assert_eq!(Region::parse(&json).unwrap().visible_chars(), 3);
    }

    #[test]
    fn error_lines_skip_identifiers_but_keep_diagnostics() {
        for yes in [
            "error[E0061]: x",
            "FAILED tests/a.py::t",
            "TypeError: x",
            "npm ERR! code 1",
            "✗ build",
            "Permission denied",
            "thread 'main' panicked at src/a.rs",
        ] {
            assert!(is_error_line(yes), "{yes}");
        }
        for no in [
            "return Err(ParseError::TooDeep);",
            "if (isError) {",
            "let e = FoldError::invalid(x)",
            "ok 1 - works",
        ] {
            assert!(!is_error_line(no), "{no}");
        }
    }

    #[test]
    fn path_tokens() {
        let mut o = Ordered::default();
        scan_paths(
            "see src/lib.rs:12, /etc/hosts, ~/x/y, ./a, README.md, and/or, 1/2, https://x.io/a/b, node:internal/x/y, file:///tmp/a.js, v1.2.3, crates/fold-core.",
            &mut o,
        );
        let items: Vec<&str> = o.items.iter().map(|s| &**s).collect();
        assert_eq!(
            items,
            ["src/lib.rs", "/etc/hosts", "~/x/y", "./a", "README.md", "/tmp/a.js"]
        );
    }

    /// A synthetic exploration of about `bytes` bytes: many calls, long outputs, errors, prose.
    fn big_region(bytes: usize) -> String {
        let mut out = Vec::new();
        let mut i = 0;
        let mut size = 0;
        while size < bytes {
            let mut text = String::new();
            for j in 0..40 {
                text.push_str(&format!(
                    "   --> src/mod_{i}/file_{j}.rs:{j}:5 value_{i}_{j} = {}\n",
                    i * j
                ));
                if j % 10 == 0 {
                    text.push_str(&format!("error[E{:04}]: mismatched types in item_{i}_{j}\n", j));
                }
            }
            out.push(serde_json::json!({ "role": "assistant", "content": [
                { "type": "text", "text": format!("Checking mod_{i}; value_{i}_3 looks wrong. I will use item_{i}_0 instead. Why does mod_{i} fail?") },
                { "type": "tool-call", "id": format!("c{i}"), "name": "bash", "arguments": serde_json::json!({ "command": format!("cargo check -p mod_{i}") }).to_string() },
            ] }));
            out.push(serde_json::json!({ "role": "user", "content": [{ "type": "tool-result", "toolCallId": format!("c{i}"), "content": [{ "type": "text", "text": text }] }] }));
            size += text.len() + 200;
            i += 1;
        }
        serde_json::Value::Array(out).to_string()
    }

    #[test]
    fn time_is_linear_in_the_region() {
        let small = big_region(128 << 10);
        let large = big_region(1 << 20);
        let time = |json: &str| {
            (0..3)
                .map(|_| {
                    let t = std::time::Instant::now();
                    let r = extractive_report(json, &ReportOptions::default()).unwrap();
                    assert!(len16(&r) <= DEFAULT_MAX_CHARS);
                    t.elapsed()
                })
                .min()
                .unwrap()
        };
        let (ts, tl) = (time(&small), time(&large));
        let ratio = tl.as_secs_f64() / ts.as_secs_f64();
        println!("128 KiB: {ts:?}, 1 MiB: {tl:?}, ratio {ratio:.1} (linear 8, quadratic 64)");
        assert!(ratio < 24.0, "1 MiB took {ratio:.1}x the time of 128 KiB");
        assert!(tl.as_secs_f64() < 5.0, "1 MiB took {tl:?}");
        let r = en(&large);
        assert_has(&r, &["- $ cargo check -p mod_0", "_[extractive report:"]);
    }
}

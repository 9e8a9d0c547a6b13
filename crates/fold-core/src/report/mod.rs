//! The deterministic extractive report: the fold's report written without a model.
//!
//! Contract. [`extractive_report`] takes the region's messages in DSH's shape (a JSON array of
//! `{role, content: [blocks]}`) and writes the same Markdown sections as the LLM report —
//! Findings / Files and Artifacts / Decisions / Unresolved Questions / Recommended Next Step —
//! in English or Chinese. It reads like a person's account of the work: what ran and how it
//! ended, the error lines the outputs printed, the files touched, the agent's conclusion and
//! next step. It copies, never paraphrases: every item is a verbatim piece of the region (a
//! command's first line, an error line, a path, a sentence), set in fixed labels. Output is a
//! pure function of the input bytes and the options (no hash-order iteration, no clock), costs
//! time linear in the region, and is at most `min(maxChars, visible - 1)` UTF-16 units long,
//! where `visible` is the region's own model-visible text (user/assistant text, reasoning,
//! tool-call arguments, tool outputs; the fold's shrink meter) and `maxChars` defaults to
//! [`default_max_chars`]`(visible)` = 1000 + visible / 4: the budget grows with the region, so
//! a large region's error lines are not cut by a fixed cap. When not even the report's
//! skeleton fits, it fails with `SHRINK`; a region with no visible text is bounded by
//! `maxChars` alone. Input that is not an array of messages, or a message that is not
//! `{role: 'system'|'user'|'assistant'|'tool', content: []}`, is `INVALID_ARGUMENT`; block types
//! it does not know (images, plugin blocks) are skipped.
//!
//! Accepted shapes: DSH's own (`deriveMessages()`: tool results are `role: 'user'` messages
//! holding a `{type: 'tool-result', toolCallId, content, isError}` block) and the flat
//! `{role: 'tool', callId, content, isError?}`. `arguments` is the raw JSON string or an object.
//!
//! What the report says (`facts` extracts, `layout` sets it under the budget):
//! - **Findings**: a counts line; one line per tool call, in order — a shell command's first
//!   line (`- $ cmd (+N lines) → exit 1`: a heredoc or multi-line script is never copied whole),
//!   other tools as `name target` — with how it ended: `exit N` / `failed`, `N entries` for a
//!   directory listing (`ls`, `find`, `tree`: the names themselves are not copied), `N lines`
//!   for a file read, else `ok: <last output line>`. Under each call, the error lines its output
//!   printed that no earlier call printed: lines with one of [`ERROR_CUES`] (ASCII
//!   case-insensitive) at a word start or as a name's suffix before a single `:` (`error[E0061]`,
//!   `FAILED`, `TypeError:`, not `ParseError::TooDeep`), from every output except a successful
//!   read of a source, document or data file (a file-reading tool, [`READ_TOOL_CUES`], or a
//!   shell command that only prints files: `cat`, `head`, `tail`, `sed`, ... through filters):
//!   a read log or program output file (`build.log`, `test_output.txt`) is scanned like a
//!   command's output; a failed output without an error line gives its first line. Last, the
//!   agent's conclusion: its last text, on one line, capped.
//! - **Files and Artifacts**: every path the agent named — whole values under path-like
//!   argument keys, path tokens in its other arguments (never in file bodies: `content`,
//!   `new_string`, `patch`, ...) and in its own text — listed once, under the strongest role it
//!   played: edited (with the number of edits), written, read, or named. A path token is a run
//!   of `[A-Za-z0-9_.~@+/-]` with a letter that starts with `/`, `~/`, `./` or `../`, has two
//!   slashes, or ends in a known extension; URLs and `scheme:rest` tokens are not paths.
//! - **Decisions** and **Unresolved Questions**: the agent's latest sentences (in its last 32
//!   texts) with a decision cue (`decided`, `instead`, `the fix is`, `决定`, `改用`, ...) or a
//!   question (`?`, `TODO`, `unclear`, `不确定`, ...), two of each; before the questions, failed
//!   commands whose program never succeeded later in the region.
//! - **Recommended Next Step**: the last sentence of the agent's last text with a next-step cue
//!   (`next`, `then`, `should`, `下一步`, ...).
//!
//! Reasoning is measured but not mined (it is speculative), and the agent's sentences are never
//! copied one per bullet. Under the budget, atoms are taken by priority — failed calls (and
//! calls that printed new error lines), their error lines, the paths, the other shell commands,
//! the next step, the conclusion, unresolved commands, successful non-shell calls, decision and
//! question sentences, and last the last output lines — and a closing line says how many were
//! left out.
//!
//! The module's files: `input` (the serde message model and its parsing), `facts` (the walk
//! over the messages that gathers every candidate item), `scan` (the scanners it uses: paths,
//! error lines, cues, sentences, UTF-16 lengths), `layout` (the atoms, the budget and the en/zh
//! text) and `tests` (end-to-end tests on the fixtures and the recorded trajectories).

mod facts;
mod input;
mod layout;
mod scan;
#[cfg(test)]
mod tests;

use serde::de;
use serde_json::Value;

use crate::error::{FoldError, Result};
use facts::Facts;
pub use facts::MessageFacts;
use input::{Block, Message, Messages};
use layout::Plan;
use scan::len16;

/// The fixed part of the default budget, in UTF-16 units: room for the skeleton and a small
/// region's few lines.
pub const DEFAULT_BASE_CHARS: usize = 1000;

/// The report budget when the caller names none: [`DEFAULT_BASE_CHARS`] plus a quarter of the
/// region's visible chars (the region's own size minus one bounds it further). It grows with the
/// region, so a large region's error lines are not cut by a fixed cap; a large region's report
/// stays near a quarter of it, a small one's near its whole account.
pub fn default_max_chars(visible: usize) -> usize {
    DEFAULT_BASE_CHARS + visible / 4
}
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
/// Tool-name substrings of file-reading tools (`read`, `read_file`, `view_text_file`, ...: a cue
/// and `file`/`text`/`notebook`, or a cue alone), whose successful output is content, not
/// diagnostics.
pub const READ_TOOL_CUES: [&str; 4] = ["read", "view", "open", "cat"];

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
}

/// What to write and how long it may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReportOptions {
    pub language: Language,
    /// Upper bound of the report in UTF-16 units (JS `string.length`); `None`:
    /// [`default_max_chars`] of the region. The region's own visible size minus one bounds it
    /// further.
    pub max_chars: Option<usize>,
}

/// Parses `messages_json` and writes its extractive report.
///
/// # Errors
/// `INVALID_ARGUMENT` for input that is not an array of DSH messages; `SHRINK` when even the
/// skeleton of the report does not fit in `min(max_chars, visible - 1)`.
pub fn extractive_report(messages_json: &str, options: &ReportOptions) -> Result<String> {
    Region::parse(messages_json)?.report(options)
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
        self.messages.iter().map(visible_chars).sum()
    }

    /// Writes the report (see the module docs).
    ///
    /// # Errors
    /// `SHRINK` when the report's skeleton does not fit its limit.
    pub fn report(&self, options: &ReportOptions) -> Result<String> {
        let facts: Vec<MessageFacts> = self.messages.iter().map(MessageFacts::of_message).collect();
        report_of(&facts, options)
    }
}

/// A message's model-visible text in UTF-16 units (see [`Region::visible_chars`]).
fn visible_chars(m: &Message) -> usize {
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
    blocks(&m.content)
}

impl MessageFacts {
    /// What one message (DSH's shape, as JSON: one element of what [`Region::parse`] reads)
    /// contributes to a report: the scans of its text done once, kept for [`report_of`]
    /// ([`MessageFacts::prepare`]d: nothing of its text is read again).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for anything but one DSH message.
    pub fn parse(json: &str) -> Result<Self> {
        match serde_json::from_str::<Message>(json) {
            Ok(m) => {
                let mut facts = Self::of_message(&m);
                facts.prepare();
                Ok(facts)
            }
            Err(e) => Err(FoldError::invalid(match serde_json::from_str::<de::IgnoredAny>(json) {
                Err(syntax) => format!("message is not valid JSON: {syntax}"),
                Ok(_) => format!("message must be one DSH message {{role, content: [blocks]}}: {e}"),
            })),
        }
    }

    fn of_message(m: &Message) -> Self {
        Self::of(m, visible_chars(m))
    }

    /// Its model-visible text in UTF-16 units.
    pub fn visible_chars(&self) -> usize {
        self.visible
    }
}

/// The report of a region given as its messages' facts, in order: the same bytes
/// [`extractive_report`] writes for those messages, without reading their text again.
///
/// # Errors
/// `SHRINK` when the report's skeleton does not fit its limit.
pub fn report_of<'a, I>(messages: I, options: &ReportOptions) -> Result<String>
where
    I: IntoIterator<Item = &'a MessageFacts>,
    I::IntoIter: Clone,
{
    let messages = messages.into_iter();
    let (count, visible) = messages.clone().fold((0, 0), |(n, v), m| (n + 1, v + m.visible));
    let max_chars = options.max_chars.unwrap_or_else(|| default_max_chars(visible));
    let limit = if visible == 0 {
        max_chars
    } else {
        max_chars.min(visible - 1)
    };
    let facts = Facts::merge(messages);
    let plan = Plan::new(&facts, options.language, count, visible);
    plan.render(limit).ok_or_else(|| {
        FoldError::Shrink(format!(
            "the extractive report cannot be shorter than the region: its skeleton needs more than {limit} \
             chars (region {visible} chars, maxChars {max_chars})"
        ))
    })
}

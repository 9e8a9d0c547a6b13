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
//!
//! The module's files: `input` (the serde message model and its parsing), `facts` (the walk
//! over the messages that gathers every candidate item), `scan` (the scanners it uses: paths,
//! error lines, cues, tokens, sentences, UTF-16 lengths), `layout` (sections, the budget and
//! the en/zh text) and `tests` (end-to-end tests on the fixtures).

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
use input::{Block, Message, Messages};
use layout::Plan;
use scan::len16;

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

//! The region's input: DSH messages as serde reads them.
//!
//! Contract. `Messages` is a JSON array of `Message`s, each `{role, content: [blocks]}` with
//! `role` one of `system`/`user`/`assistant`/`tool`; a flat tool message may carry `callId` (or
//! `toolCallId`) and `isError`. A bad element fails the whole array with an error that names its
//! index (`message 3: ...`). Blocks are `text`, `reasoning`, `tool-call` and `tool-result` (whose
//! content is blocks again); any other `type` reads as `Block::Other`, which the report skips.
//! `join_text` joins the text blocks of a content list with newlines (borrowing a lone one).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Role {
    System,
    User,
    Assistant,
    Tool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Message {
    pub(super) role: Role,
    pub(super) content: Vec<Block>,
    #[serde(default, alias = "toolCallId")]
    pub(super) call_id: Option<String>,
    #[serde(default)]
    pub(super) is_error: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(super) enum Block {
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
pub(super) struct Messages(pub(super) Vec<Message>);

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

pub(super) fn join_text(blocks: &[Block]) -> Cow<'_, str> {
    // The usual output is one text block: borrow it.
    if let [Block::Text { text }] = blocks {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    for b in blocks {
        if let Block::Text { text } = b {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use crate::report::{Language, Region};

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
}

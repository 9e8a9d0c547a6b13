//! The recall matcher: which lines of a folded region's original texts match a query.
//!
//! Contract. A query is either a regular expression written `/pattern/flags` or, otherwise, a
//! literal substring. Literal queries follow "smart case": with no uppercase letter they match
//! case-insensitively, with one they match exactly. [`Query::parse`] compiles the query once;
//! [`search`] runs it over the texts line by line (lines split at `\n`, a trailing `\r`
//! dropped) and reports each matching line once, with its first match's span in UTF-16 units
//! (JS string offsets), in text order, up to `max_hits`; `total` still counts every matching
//! line.
//!
//! Why this cannot hang the host: the engine is the `regex` crate's, whose every search runs in
//! time linear in the input (finite automata; no backtracking). The constructs that need
//! backtracking — backreferences and look-around — do not exist in its syntax and are refused
//! at parse time with `INVALID_ARGUMENT`, as are patterns longer than [`MAX_PATTERN_CHARS`] and
//! patterns whose compiled program would exceed [`MAX_PROGRAM_BYTES`] (e.g. `\w{1000}{1000}`).
//! So a search costs O(pattern × text) at worst, and the texts are the session's own log.
//!
//! Flags: `i` (case-insensitive), `x` (verbose), and JavaScript's other flags (`d g m s u v
//! y`), which change nothing here (every line is searched, one line at a time, always as
//! Unicode) and are accepted so a model can write the regex it knows. A query is a regex only
//! when everything after its last `/` is such flags: `/usr/bin` (`b`, `n` are no flags) and
//! `crates/parser` are literals, `/a/b/` and `/tmp/x` are regexes.

use regex::{Regex, RegexBuilder};

use crate::{FoldError, Result};

/// Longest query accepted, in chars.
pub const MAX_PATTERN_CHARS: usize = 1024;
/// Largest compiled regex program (and lazy-DFA cache) accepted, in bytes.
pub const MAX_PROGRAM_BYTES: usize = 1 << 20;
/// The flags a `/regex/` may end with: JavaScript's, plus `x`.
const FLAGS: &str = "dgimsuvxy";
/// Deepest group nesting accepted.
const MAX_NEST: u32 = 64;

/// A compiled recall query.
#[derive(Debug, Clone)]
pub struct Query {
    regex: Regex,
    literal: bool,
}

/// One matching line: which text, which line, and the first match's span in UTF-16 units
/// from the start of the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub text: u32,
    pub line: u32,
    pub start: u32,
    pub end: u32,
}

/// The matching lines of one search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Search {
    /// The first `max_hits` matching lines, in text order.
    pub hits: Vec<Hit>,
    /// Every matching line, counted.
    pub total: u32,
}

impl Query {
    /// Compiles `query`: `/pattern/flags` is a regex, anything else a smart-case literal.
    pub fn parse(query: &str) -> Result<Self> {
        if query.is_empty() {
            return Err(FoldError::invalid("the query is empty: give a substring or a /regex/"));
        }
        let chars = query.chars().count();
        if chars > MAX_PATTERN_CHARS {
            return Err(FoldError::invalid(format!(
                "the query is {chars} chars long; at most {MAX_PATTERN_CHARS} are accepted"
            )));
        }
        match split_regex(query) {
            Some((pattern, flags)) => Self::regex(pattern, flags),
            None => Self::literal(query),
        }
    }

    /// Whether the query is a literal substring (not a `/regex/`).
    pub fn is_literal(&self) -> bool {
        self.literal
    }

    fn literal(text: &str) -> Result<Self> {
        let insensitive = !text.chars().any(char::is_uppercase);
        let regex = builder(&regex::escape(text)).case_insensitive(insensitive).build();
        // An escaped literal always compiles unless it is too large for the program limit.
        let regex = regex.map_err(|e| refused(text, &e))?;
        Ok(Self { regex, literal: true })
    }

    fn regex(pattern: &str, flags: &str) -> Result<Self> {
        if pattern.is_empty() {
            return Err(FoldError::invalid(
                "the regex `//` is empty: give a pattern between the slashes",
            ));
        }
        let mut b = builder(pattern);
        b.case_insensitive(flags.contains('i'))
            .ignore_whitespace(flags.contains('x'));
        let regex = b.build().map_err(|e| refused(&format!("/{pattern}/{flags}"), &e))?;
        Ok(Self { regex, literal: false })
    }
}

/// `/pattern/flags` → (pattern, flags), when `query` is written as a regex.
fn split_regex(query: &str) -> Option<(&str, &str)> {
    let rest = query.strip_prefix('/')?;
    let close = rest.rfind('/')?;
    let (pattern, flags) = (&rest[..close], &rest[close + 1..]);
    flags.chars().all(|c| FLAGS.contains(c)).then_some((pattern, flags))
}

fn builder(pattern: &str) -> RegexBuilder {
    let mut b = RegexBuilder::new(pattern);
    b.size_limit(MAX_PROGRAM_BYTES)
        .dfa_size_limit(MAX_PROGRAM_BYTES)
        .nest_limit(MAX_NEST);
    b
}

/// The error for a pattern the engine refuses, saying what to do instead.
fn refused(query: &str, err: &regex::Error) -> FoldError {
    match err {
        regex::Error::CompiledTooBig(limit) => FoldError::invalid(format!(
            "the regex {query} compiles to more than {limit} bytes; simplify it (fewer or smaller repetitions)"
        )),
        regex::Error::Syntax(text) => {
            let text = text.trim_end();
            let hint = if text.contains("look-around") || text.contains("backreference") {
                "\nrecall's regex engine runs in linear time and has no look-around or backreferences: rewrite the pattern without them, or search a plain substring."
            } else {
                ""
            };
            FoldError::invalid(format!("the regex {query} is not valid:\n{text}{hint}"))
        }
        other => FoldError::invalid(format!("the regex {query} is refused: {other}")),
    }
}

/// The matching lines of `texts`, at most `max_hits` of them reported (all counted).
pub fn search<S: AsRef<str>>(texts: &[S], query: &Query, max_hits: usize) -> Search {
    let mut out = Search::default();
    for (t, text) in texts.iter().enumerate() {
        for (l, line) in text.as_ref().split('\n').enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let Some(m) = query.regex.find(line) else { continue };
            out.total = out.total.saturating_add(1);
            if out.hits.len() < max_hits {
                let start = utf16_len(&line[..m.start()]);
                out.hits.push(Hit {
                    text: t as u32,
                    line: l as u32,
                    start,
                    end: start + utf16_len(m.as_str()),
                });
            }
        }
    }
    out
}

fn utf16_len(s: &str) -> u32 {
    s.chars().map(|c| c.len_utf16() as u32).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(texts: &[&str], q: &str) -> Vec<(u32, u32, u32, u32)> {
        let query = Query::parse(q).unwrap();
        search(texts, &query, usize::MAX)
            .hits
            .iter()
            .map(|h| (h.text, h.line, h.start, h.end))
            .collect()
    }

    #[test]
    fn literal_is_smart_case_and_escaped() {
        let texts = ["alpha\nError: Boom\nerror: quiet", "a.b and axb"];
        assert_eq!(lines(&texts, "error"), vec![(0, 1, 0, 5), (0, 2, 0, 5)]);
        assert_eq!(lines(&texts, "Error"), vec![(0, 1, 0, 5)]);
        assert_eq!(lines(&texts, "a.b"), vec![(1, 0, 0, 3)]);
        assert!(Query::parse("a.b").unwrap().is_literal());
    }

    #[test]
    fn regex_with_flags_and_utf16_spans() {
        let texts = ["été: FAILED\r\nok", "π = 3.14"];
        assert_eq!(lines(&texts, "/fail(ed)?/i"), vec![(0, 0, 5, 11)]);
        assert_eq!(lines(&texts, "/\\d+\\.\\d+/g"), vec![(1, 0, 4, 8)]);
        // The trailing \r is not part of the line: `$` matches before it.
        assert_eq!(lines(&texts, "/FAILED$/"), vec![(0, 0, 5, 11)]);
        let emoji = ["😀 x"];
        assert_eq!(lines(&emoji, "/x/"), vec![(0, 0, 3, 4)]);
    }

    #[test]
    fn one_hit_per_line_all_counted() {
        let texts = ["a a a\nb\na"];
        let q = Query::parse("a").unwrap();
        let s = search(&texts, &q, 1);
        assert_eq!(s.total, 2);
        assert_eq!(
            s.hits,
            vec![Hit {
                text: 0,
                line: 0,
                start: 0,
                end: 1
            }]
        );
    }

    #[test]
    fn slashes_inside_are_literal_unless_the_query_is_a_regex() {
        assert!(Query::parse("crates/parser/src").unwrap().is_literal());
        assert!(Query::parse("/usr/bin").unwrap().is_literal());
        assert!(!Query::parse("/a/b/").unwrap().is_literal());
        assert!(!Query::parse("/tmp/x").unwrap().is_literal());
    }

    #[test]
    fn refusals_are_invalid_argument_with_advice() {
        for (q, needle) in [
            ("", "empty"),
            ("//", "empty"),
            ("/(a/", "not valid"),
            ("/(?=a)b/", "look-around"),
            (r"/(a)\1/", "backreferences"),
            (r"/\w{1000}{1000}/", "compiles to more than"),
        ] {
            let err = Query::parse(q).unwrap_err();
            assert_eq!(err.code(), "INVALID_ARGUMENT", "{q}");
            assert!(err.to_string().contains(needle), "{q}: {err}");
        }
        let long = "x".repeat(MAX_PATTERN_CHARS + 1);
        assert!(Query::parse(&long).unwrap_err().to_string().contains("at most 1024"));
    }

    #[test]
    fn chinese_text_matches_with_the_unicode_tables_recall_keeps() {
        // What recall keeps of Unicode (regex's unicode-case and unicode-perl): case folding
        // beyond ASCII, and \w, \d, \s, \b on any script.
        let texts = [
            "错误：解析失败 in src/解析器.rs 第１２行",
            "ÉTÉ est là\u{3000}fin",
            "Ошибка: ФАЙЛ",
        ];
        assert_eq!(lines(&texts, "解析"), vec![(0, 0, 3, 5)]);
        assert_eq!(lines(&texts, "/解析.败/"), vec![(0, 0, 3, 7)]);
        assert_eq!(lines(&texts, r"/^\w+/"), vec![(0, 0, 0, 2), (1, 0, 0, 3), (2, 0, 0, 6)]);
        assert_eq!(lines(&texts, r"/第\d+行/"), vec![(0, 0, 22, 26)]);
        assert_eq!(lines(&texts, r"/là\sfin/"), vec![(1, 0, 8, 14)]);
        assert_eq!(lines(&texts, r"/\bsrc\b/"), vec![(0, 0, 11, 14)]);
        assert_eq!(lines(&texts, "/été/i"), vec![(1, 0, 0, 3)]);
        assert_eq!(
            lines(&texts, "файл"),
            vec![(2, 0, 8, 12)],
            "a smart-case literal folds Cyrillic"
        );
        assert_eq!(lines(&texts, "/ошибка/i"), vec![(2, 0, 0, 6)]);
        // (Script and category classes, `\p{Han}`, are what the addon's build leaves out; the
        // addon's test checks both halves on the shipped engine: __test__/recall.test.mjs.)
    }

    #[test]
    fn catastrophic_backtracking_patterns_run_linearly() {
        // (a+)+$ and (a|aa)*c take exponential time in a backtracking engine on "aaaa…b".
        let text = format!("{}b", "a".repeat(50_000));
        for q in ["/(a+)+$/", "/(a|aa)*c/", "/(x+x+)+y/"] {
            let query = Query::parse(q).unwrap();
            assert_eq!(search(&[text.as_str()], &query, 10).total, 0, "{q}");
        }
    }
}

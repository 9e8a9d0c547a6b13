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
//! Case-insensitive matching folds by Unicode's simple case folding, as `regex`'s `(?i)` does, from
//! recall's own table ([`case_folding`]: the regex crate's table, as plain pairs, so the addon
//! carries no table of pointers): the folding is applied to the pattern's syntax tree before it is
//! translated, so a negated class excludes every case of what it names. Inline `(?i)` flags are
//! refused (the `i` flag after the closing slash says it).
//!
//! Flags: `i` (case-insensitive), `x` (verbose), and JavaScript's other flags (`d g m s u v
//! y`), which change nothing here (every line is searched, one line at a time, always as
//! Unicode) and are accepted so a model can write the regex it knows. A query is a regex only
//! when everything after its last `/` is such flags: `/usr/bin` (`b`, `n` are no flags) and
//! `crates/parser` are literals, `/a/b/` and `/tmp/x` are regexes.

use regex_automata::meta::{self, Regex};
use regex_automata::MatchKind;
use regex_syntax::ast::{self, Ast, ClassSet, ClassSetItem};

mod case_folding;

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
        // An escaped literal always compiles unless it is too large for the program limit.
        let regex = compile(&regex_syntax::escape(text), insensitive, false, text)?;
        Ok(Self { regex, literal: true })
    }

    fn regex(pattern: &str, flags: &str) -> Result<Self> {
        if pattern.is_empty() {
            return Err(FoldError::invalid(
                "the regex `//` is empty: give a pattern between the slashes",
            ));
        }
        let shown = format!("/{pattern}/{flags}");
        let regex = compile(pattern, flags.contains('i'), flags.contains('x'), &shown)?;
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

/// Parses, folds (when `insensitive`), translates and compiles `pattern` (`regex`'s defaults:
/// Unicode, UTF-8, leftmost-first), refusing what the engine cannot run.
fn compile(pattern: &str, insensitive: bool, verbose: bool, shown: &str) -> Result<Regex> {
    let mut ast = ast::parse::ParserBuilder::new()
        .nest_limit(MAX_NEST)
        .ignore_whitespace(verbose)
        .build()
        .parse(pattern)
        .map_err(|e| syntax_refused(shown, &e.to_string()))?;
    if has_case_flag(&ast) {
        return Err(FoldError::invalid(format!(
            "the regex {shown} sets the case flag inline ((?i) or (?-i)), which recall does not support: \
             write the i flag after the closing slash instead (/pattern/i)"
        )));
    }
    if insensitive {
        fold_ast(&mut ast);
    }
    let hir = regex_syntax::hir::translate::TranslatorBuilder::new()
        .utf8(true)
        .build()
        .translate(pattern, &ast)
        .map_err(|e| syntax_refused(shown, &e.to_string()))?;
    let config = meta::Config::new()
        .match_kind(MatchKind::LeftmostFirst)
        .utf8_empty(true)
        .nfa_size_limit(Some(MAX_PROGRAM_BYTES));
    meta::Builder::new()
        .configure(config)
        .build_from_hir(&hir)
        .map_err(|e| match e.size_limit() {
            Some(limit) => FoldError::invalid(format!(
                "the regex {shown} compiles to more than {limit} bytes; simplify it (fewer or smaller repetitions)"
            )),
            None => FoldError::invalid(format!("the regex {shown} is refused: {e}")),
        })
}

/// The error for a pattern the parser refuses, saying what to do instead.
fn syntax_refused(shown: &str, text: &str) -> FoldError {
    let text = text.trim_end();
    let hint = if text.contains("look-around") || text.contains("backreference") {
        "\nrecall's regex engine runs in linear time and has no look-around or backreferences: rewrite the pattern without them, or search a plain substring."
    } else {
        ""
    };
    FoldError::invalid(format!("the regex {shown} is not valid:\n{text}{hint}"))
}

/// Whether the pattern sets or clears the case-insensitive flag inline anywhere.
fn has_case_flag(ast: &Ast) -> bool {
    let sets = |flags: &ast::Flags| {
        flags
            .items
            .iter()
            .any(|i| i.kind == ast::FlagsItemKind::Flag(ast::Flag::CaseInsensitive))
    };
    match ast {
        Ast::Flags(f) => sets(&f.flags),
        Ast::Group(g) => g.flags().is_some_and(sets) || has_case_flag(&g.ast),
        Ast::Repetition(r) => has_case_flag(&r.ast),
        Ast::Alternation(a) => a.asts.iter().any(has_case_flag),
        Ast::Concat(c) => c.asts.iter().any(has_case_flag),
        _ => false,
    }
}

/// The chars that fold together with `c`, other than `c` (one run of the sorted pairs).
fn others(c: u32) -> impl Iterator<Item = char> {
    let pairs = &case_folding::PAIRS;
    let lo = pairs.partition_point(|&(a, _)| a < c);
    pairs[lo..]
        .iter()
        .take_while(move |&&(a, _)| a == c)
        .filter_map(|&(_, b)| char::from_u32(b))
}

/// The chars that fold together with some char of `start..=end` and are not in it.
fn others_of_range(start: char, end: char) -> Vec<char> {
    let pairs = &case_folding::PAIRS;
    let lo = pairs.partition_point(|&(a, _)| a < u32::from(start));
    pairs[lo..]
        .iter()
        .take_while(|&&(a, _)| a <= u32::from(end))
        .filter(|&&(_, b)| b < u32::from(start) || b > u32::from(end))
        .filter_map(|&(_, b)| char::from_u32(b))
        .collect()
}

/// A literal standing for `lit.c` or any char folding with it: a bracketed class of them, or the
/// literal itself when no char folds with it.
fn fold_literal(lit: ast::Literal) -> Ast {
    let mut items: Vec<ClassSetItem> = others(u32::from(lit.c))
        .map(|c| ClassSetItem::Literal(ast::Literal { c, ..lit.clone() }))
        .collect();
    if items.is_empty() {
        return Ast::literal(lit);
    }
    let span = lit.span;
    items.insert(0, ClassSetItem::Literal(lit));
    Ast::class_bracketed(ast::ClassBracketed {
        span,
        negated: false,
        kind: ClassSet::union(ast::ClassSetUnion { span, items }),
    })
}

/// The letters of an ASCII class (`[[:alpha:]]` and the like), which case folding closes over.
fn ascii_letters(kind: &ast::ClassAsciiKind) -> &'static [(char, char)] {
    use ast::ClassAsciiKind as K;
    match kind {
        K::Alnum | K::Alpha | K::Graph | K::Print | K::Word => &[('A', 'Z'), ('a', 'z')],
        K::Lower => &[('a', 'z')],
        K::Upper => &[('A', 'Z')],
        K::Xdigit => &[('A', 'F'), ('a', 'f')],
        _ => &[],
    }
}

/// Adds to a class item every char folding with one it names; a negated nested class is folded
/// inside, so its negation excludes every case. Perl and Unicode classes are closed already.
fn fold_item(item: &mut ClassSetItem) {
    let literal = |c: char, span: ast::Span| {
        ClassSetItem::Literal(ast::Literal {
            span,
            kind: ast::LiteralKind::Verbatim,
            c,
        })
    };
    let added: Vec<ClassSetItem> = match item {
        ClassSetItem::Literal(lit) => others(u32::from(lit.c)).map(|c| literal(c, lit.span)).collect(),
        ClassSetItem::Range(r) => others_of_range(r.start.c, r.end.c)
            .into_iter()
            .map(|c| literal(c, r.span))
            .collect(),
        ClassSetItem::Ascii(a) => ascii_letters(&a.kind)
            .iter()
            .flat_map(|&(s, e)| others_of_range(s, e))
            .map(|c| literal(c, a.span))
            .collect(),
        ClassSetItem::Bracketed(b) => {
            fold_set(&mut b.kind);
            Vec::new()
        }
        ClassSetItem::Union(u) => {
            u.items.iter_mut().for_each(fold_item);
            Vec::new()
        }
        ClassSetItem::Empty(_) | ClassSetItem::Unicode(_) | ClassSetItem::Perl(_) => Vec::new(),
    };
    if added.is_empty() {
        return;
    }
    let span = *item.span();
    let original = std::mem::replace(item, ClassSetItem::Empty(span));
    let mut items = vec![original];
    items.extend(added);
    *item = ClassSetItem::Union(ast::ClassSetUnion { span, items });
}

fn fold_set(set: &mut ClassSet) {
    match set {
        ClassSet::Item(item) => fold_item(item),
        ClassSet::BinaryOp(op) => {
            fold_set(&mut op.lhs);
            fold_set(&mut op.rhs);
        }
    }
}

/// Folds every literal and class of the pattern (what `(?i)` does in translation).
fn fold_ast(ast: &mut Ast) {
    match ast {
        Ast::Literal(lit) => {
            let lit = (**lit).clone();
            *ast = fold_literal(lit);
        }
        Ast::ClassBracketed(b) => fold_set(&mut b.kind),
        Ast::Group(g) => fold_ast(&mut g.ast),
        Ast::Repetition(r) => fold_ast(&mut r.ast),
        Ast::Alternation(a) => a.asts.iter_mut().for_each(fold_ast),
        Ast::Concat(c) => c.asts.iter_mut().for_each(fold_ast),
        Ast::Empty(_) | Ast::Flags(_) | Ast::Dot(_) | Ast::Assertion(_) | Ast::ClassUnicode(_) | Ast::ClassPerl(_) => {}
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
                    end: start + utf16_len(&line[m.range()]),
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
    fn case_folding_is_unicode_simple_folding_applied_before_negation() {
        let texts = [
            "KELVIN \u{212A} and long \u{17F}",
            "ΣΊΣΥΦΟΣ ς",
            "ABC xyz",
            "Straße STRASSE \u{1E9E}",
        ];
        assert_eq!(lines(&texts, "/k/i"), vec![(0, 0, 0, 1)]);
        assert_eq!(
            lines(&texts, "/\u{212A}/i"),
            vec![(0, 0, 0, 1)],
            "the Kelvin sign folds with k"
        );
        assert_eq!(lines(&texts, "/ \u{212A}/i"), vec![(0, 0, 6, 8)]);
        assert_eq!(lines(&texts, "long s"), vec![(0, 0, 13, 19)]);
        assert_eq!(lines(&texts, "/long S/i"), vec![(0, 0, 13, 19)]);
        assert_eq!(lines(&texts, "/long ſ/i"), vec![(0, 0, 13, 19)]);
        assert_eq!(
            lines(&texts, "σ"),
            vec![(1, 0, 0, 1)],
            "a smart-case literal: σ, ς and Σ fold together"
        );
        assert_eq!(lines(&texts, "/ς$/i"), vec![(1, 0, 8, 9)]);
        assert_eq!(lines(&texts, "/[a-c]{3}/i"), vec![(2, 0, 0, 3)]);
        assert_eq!(
            lines(&texts, "/[[:lower:]]{3} /i"),
            vec![(0, 0, 3, 7), (2, 0, 0, 4), (3, 0, 11, 15)]
        );
        // Negation after folding: [^a] names neither a nor A.
        assert_eq!(lines(&["A", "a", "b"], "/^[^a]$/i"), vec![(2, 0, 0, 1)]);
        assert_eq!(lines(&["K", "\u{212A}", "x"], "/^[^k]$/i"), vec![(2, 0, 0, 1)]);
        assert_eq!(lines(&["B", "c"], "/^[a-z&&[^b]]$/i"), vec![(1, 0, 0, 1)]);
        assert_eq!(lines(&texts, "/ß/i"), vec![(3, 0, 4, 5)], "ß and ẞ fold together");
        assert_eq!(lines(&["\u{1E9E}"], "/ß/i"), vec![(0, 0, 0, 1)]);
        for q in ["/(?i)abc/", "/a(?-i:b)c/i", "/(?i:x)/"] {
            let err = Query::parse(q).unwrap_err();
            assert_eq!(err.code(), "INVALID_ARGUMENT", "{q}");
            assert!(err.to_string().contains("(/pattern/i)"), "{q}: {err}");
        }
    }

    #[test]
    fn the_folding_table_is_the_regex_crates() {
        // Every char's others, from the pairs, equal regex-syntax's simple case folding of it.
        use regex::RegexBuilder;
        let mut checked = 0;
        for c in (0u32..0x20000).filter_map(char::from_u32) {
            let mine: Vec<char> = others(u32::from(c)).collect();
            if mine.is_empty() && !c.is_alphabetic() {
                continue;
            }
            let theirs = RegexBuilder::new(&regex::escape(&c.to_string()))
                .case_insensitive(true)
                .build()
                .unwrap();
            for &d in &mine {
                assert!(
                    theirs.is_match(&d.to_string()),
                    "{c:?} folds with {d:?} here but not in regex"
                );
            }
            checked += 1;
        }
        assert!(checked > 2000);
        for &(a, b) in &case_folding::PAIRS {
            assert!(
                others(b).any(|x| u32::from(x) == a),
                "the pairs are symmetric: {a:x} {b:x}"
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Recall's matcher answers as the regex crate with its own Unicode case tables, on random
        /// patterns over a mixed-script alphabet, with and without `i`.
        #[test]
        fn matches_as_the_regex_crate_does(
            pieces in proptest::collection::vec(0usize..PIECES.len(), 1..6),
            hay in proptest::collection::vec(0usize..HAY.len(), 0..12),
            insensitive in proptest::bool::ANY,
        ) {
            let pattern: String = pieces.iter().map(|&i| PIECES[i]).collect();
            let line: String = hay.iter().map(|&i| HAY[i]).collect();
            let flags = if insensitive { "i" } else { "" };
            let Ok(mine) = Query::parse(&format!("/{pattern}/{flags}")) else { return Ok(()) };
            let theirs = regex::RegexBuilder::new(&pattern).case_insensitive(insensitive).build().unwrap();
            let found = search(&[line.as_str()], &mine, 1).hits.first().map(|h| (h.start, h.end));
            let expected = theirs.find(&line).map(|m| (utf16_len(&line[..m.start()]), utf16_len(&line[..m.end()])));
            proptest::prop_assert_eq!(found, expected, "/{}/{} on {:?}", pattern, flags, line);
        }
    }

    const PIECES: &[&str] = &[
        "a",
        "A",
        "k",
        "s",
        "ß",
        "σ",
        "Σ",
        "é",
        "É",
        "解",
        "析",
        "ж",
        "Ж",
        "[a-c]",
        "[^a]",
        "[^kK]",
        "[ς-σ]",
        "[[:upper:]]",
        "[[:lower:]]",
        "\\w",
        "\\W",
        "\\d",
        "\\s",
        "\\b",
        ".",
        "+",
        "*",
        "?",
        "(x|é)",
        "(?:ab)+",
        "[a-z&&[^s]]",
        "[\\w--\\d]",
        "^",
        "$",
        "[\\u{212A}]",
        "ſ",
    ];
    const HAY: &[&str] = &[
        "a", "A", "b", "K", "\u{212A}", "s", "S", "ſ", "ß", "ẞ", "σ", "ς", "Σ", "é", "É", "解", "析", "ж", "Ж", "1",
        "１", " ", "\u{3000}", "x", "é",
    ];

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

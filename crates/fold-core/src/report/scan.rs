//! The extraction scanners: pure functions over one string that find what the report copies.
//!
//! Contract. Every scanner is linear in its input (each byte is looked at a bounded number of
//! times) and deterministic: `Ordered`, the set the scanners fill, keeps first-seen order and
//! drops duplicates, and its `Fx` hash only tests membership. `scan_paths` finds path tokens,
//! `is_error_line` error lines, `has_cue` whole-word cues, `sentences` the prose sentences
//! outside fenced code and `collapse` a text's prose on one line. Lengths are UTF-16 units, as
//! JS counts them (`len16`); `cap` cuts to such a length, ending in `…`.

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use super::ERROR_CUES;

pub(super) const CAP_LINE: usize = 300;
const EXTENSIONS: [&str; 52] = [
    "rs", "toml", "lock", "json", "jsonl", "js", "mjs", "cjs", "ts", "mts", "cts", "tsx", "jsx", "md", "mdx", "yml",
    "yaml", "py", "pyi", "go", "c", "h", "cc", "cpp", "hpp", "java", "kt", "swift", "rb", "php", "cs", "sh", "bash",
    "zsh", "txt", "log", "node", "html", "css", "scss", "vue", "svelte", "sql", "proto", "xml", "csv", "ini", "cfg",
    "conf", "env", "patch", "diff",
];
const ELLIPSIS: &str = "…";

/// FxHash: fast and deterministic (the inputs are the session's own text, not an adversary's).
#[derive(Default, Clone, Copy)]
pub(super) struct Fx(u64);

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

pub(super) type FxBuild = BuildHasherDefault<Fx>;

/// An ordered set of strings: insertion order kept, duplicates dropped.
#[derive(Default)]
pub(super) struct Ordered {
    pub(super) seen: HashSet<Rc<str>, FxBuild>,
    pub(super) items: Vec<Rc<str>>,
}

impl Ordered {
    pub(super) fn push(&mut self, s: &str) {
        if !s.is_empty() && !self.seen.contains(s) {
            let s: Rc<str> = Rc::from(s);
            self.seen.insert(s.clone());
            self.items.push(s);
        }
    }
}

/// An error line: an ASCII cue at a word start (`error[E0061]`, `FAILED`, `Permission denied`)
/// or ending a name before one `:` (`TypeError:`), or a non-ASCII cue (`✗`) anywhere. So code
/// identifiers (`ParseError::TooDeep`, `isError`) are not errors.
pub(super) fn is_error_line(line: &str) -> bool {
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
    let b = line.as_bytes();
    let cue_at = |i: usize| {
        let first = b[i].to_ascii_lowercase();
        cues_starting(first)
            .iter()
            .any(|c| starts_with_ci(&b[i..], c.as_bytes()))
    };
    let cue_before = |j: usize| {
        let last = b[j - 1].to_ascii_lowercase();
        ERROR_CUES
            .iter()
            .any(|c| c.as_bytes()[c.len() - 1] == last && ends_with_ci(&b[..j], c.as_bytes()))
    };
    // One look per word start and per `:`; the letters inside a word are skipped.
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() {
            if cue_at(i) {
                return true;
            }
            i += 1;
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            continue;
        }
        if b[i] == b':' && b.get(i + 1) != Some(&b':') && i > 0 && b[i - 1] != b':' && cue_before(i) {
            return true;
        }
        i += 1;
    }
    !line.is_ascii() && ERROR_CUES.iter().any(|c| !c.is_ascii() && line.contains(c))
}

/// The ASCII cues of [`ERROR_CUES`] that start with the (lowercase) letter `first`.
fn cues_starting(first: u8) -> &'static [&'static str] {
    match first {
        b'e' => &["error", "err!", "exception"],
        b'f' => &["fail", "fatal"],
        b'p' => &["panic"],
        b'a' => &["abort"],
        b'd' => &["denied"],
        b'n' => &["not found", "no such file"],
        b'c' => &["cannot", "can't"],
        b'u' => &["unable to"],
        b's' => &["segmentation fault"],
        b't' => &["traceback", "timed out"],
        _ => &[],
    }
}

fn starts_with_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay[..needle.len()].eq_ignore_ascii_case(needle)
}

fn ends_with_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay[hay.len() - needle.len()..].eq_ignore_ascii_case(needle)
}

/// Whether `lower` contains `cue` as a whole word (ASCII cues) or at all (CJK cues).
pub(super) fn has_cue(lower: &str, cues: &[&str]) -> bool {
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
pub(super) fn scan_paths(s: &str, out: &mut Ordered) {
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

/// Whether `ext` (lowercase, no dot) is one of the extensions a path token may end in: source,
/// document, data and log files.
pub(super) fn is_known_extension(ext: &str) -> bool {
    EXTENSIONS.contains(&ext)
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

/// `text` with every run of whitespace (newlines too) collapsed to one space, fenced code
/// blocks left out (they are quoted code, not what the agent concluded), trimmed.
pub(super) fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4096));
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for word in line.split_whitespace() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
    }
    out
}

/// Sentences of prose, outside fenced code blocks and tables, with list markers stripped.
pub(super) fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        // Table rows are data, not prose.
        if fenced || t.is_empty() || t.starts_with('|') {
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
pub(super) fn len16(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    // One unit per char (every byte but continuation bytes), two for 4-byte chars.
    s.len() - s.bytes().filter(|b| b & 0xC0 == 0x80).count() + s.bytes().filter(|b| *b >= 0xF0).count()
}

/// `s` cut to at most `max` UTF-16 units, ending in `…` when cut.
pub(super) fn cap(s: &str, max: usize) -> Cow<'_, str> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_runner_success_lines_are_not_errors() {
        assert!(!is_error_line("test eval::tests::errors ... ok"));
        assert!(!is_error_line("ok 3 - reports errors"));
        assert!(!is_error_line("  ✔ fails on eof (2ms)"));
        assert!(is_error_line("test lexer::tests::unicode_ident ... FAILED"));
        assert!(is_error_line("not ok 4 - errors on eof"));
    }

    #[test]
    fn every_ascii_cue_is_found_by_its_first_letter() {
        for cue in ERROR_CUES.iter().filter(|c| c.is_ascii()) {
            assert!(cues_starting(cue.as_bytes()[0]).contains(cue), "{cue}");
        }
        let listed: usize = (b'a'..=b'z').map(|c| cues_starting(c).len()).sum();
        assert_eq!(listed, ERROR_CUES.iter().filter(|c| c.is_ascii()).count());
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
}

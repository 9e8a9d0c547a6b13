/**
 * @module bin/demo-session
 * The demo's session, built with the package's session builder (bin/session.mjs): a real
 * `@deepseek-ai/dsh-session` Session with the messages an agent loop appends for a typical
 * debugging investigation — a user request, a checkpoint (marked
 * mid-call, as the real tool does), parallel reads and a grep, a failing test run, a focused
 * read, and the concluding step that calls `rewind`. `continueAfterFold` then plays the rest of
 * the task on the folded context (the fix, a passing test run, the answer), so a saved demo log
 * (`dsh-fold demo --save FILE`) has requests after the fold for `dsh-fold economics` to price.
 */
import { WORDS } from '../plugin/fold/words.js'
import { SessionBuilder } from './session.mjs'

const SYSTEM = 'You are a coding agent working in /work/app. Investigate before you edit; keep changes minimal and run the tests after every fix.'

/** The tool schemas the demo agent is offered (what every request carries before its messages). */
const TOOLS = [
  { name: 'read', description: 'Read a file, optionally a range of lines.', parameters: { type: 'object', properties: { path: { type: 'string' }, offset: { type: 'integer' }, limit: { type: 'integer' } }, required: ['path'] } },
  { name: 'grep', description: 'Search files for a pattern.', parameters: { type: 'object', properties: { pattern: { type: 'string' }, path: { type: 'string' } }, required: ['pattern'] } },
  { name: 'bash', description: 'Run a shell command in the workspace.', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
  { name: 'edit', description: 'Replace text in a file.', parameters: { type: 'object', properties: { path: { type: 'string' }, old: { type: 'string' }, new: { type: 'string' } }, required: ['path', 'old', 'new'] } },
  { name: 'checkpoint', description: 'Mark the start of an investigation.', parameters: { type: 'object', properties: { objective: { type: 'string' } } } },
  { name: 'rewind', description: 'Fold everything since your latest checkpoint into a report.', parameters: { type: 'object', properties: {} } },
]

const LEXER = `//! Tokenizer for the expression language.
use crate::span::Span;

#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Ident(String),
    Number(f64),
    Op(char),
    LParen,
    RParen,
}

pub struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Self {
        Self { src, pos: 0 }
    }

    pub fn tokenize(mut self) -> Result<Vec<(Token, Span)>, LexError> {
        let mut out = Vec::new();
        while let Some(c) = self.peek() {
            let start = self.pos;
            let token = match c {
                ' ' | '\\t' | '\\n' => { self.bump(); continue }
                '(' => { self.bump(); Token::LParen }
                ')' => { self.bump(); Token::RParen }
                '+' | '-' | '*' | '/' => { self.bump(); Token::Op(c) }
                c if c.is_ascii_digit() => self.number()?,
                c if c.is_ascii_alphabetic() || c == '_' => self.ident(),
                other => return Err(LexError::Unexpected(other, start)),
            };
            out.push((token, Span::new(start, self.pos)));
        }
        Ok(out)
    }

    fn number(&mut self) -> Result<Token, LexError> {
        let start = self.pos;
        while matches!(self.peek(), Some(c) if c.is_ascii_digit() || c == '.') {
            self.bump();
        }
        let text = &self.src[start..self.pos];
        text.parse::<f64>().map(Token::Number).map_err(|_| LexError::BadNumber(start))
    }

    fn ident(&mut self) -> Token {
        let start = self.pos;
        while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == '_') {
            self.bump();
        }
        Token::Ident(self.src[start..self.pos].to_owned())
    }

    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
        }
    }
}

#[derive(Debug, PartialEq)]
pub enum LexError {
    Unexpected(char, usize),
    BadNumber(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(src: &str) -> Result<Vec<Token>, LexError> {
        Lexer::new(src).tokenize().map(|t| t.into_iter().map(|(t, _)| t).collect())
    }

    #[test]
    fn numbers() {
        assert_eq!(lex("1 2.5"), Ok(vec![Token::Number(1.0), Token::Number(2.5)]));
    }

    #[test]
    fn operators() {
        assert_eq!(lex("+-*/"), Ok("+-*/".chars().map(Token::Op).collect()));
    }

    #[test]
    fn ascii_ident() {
        assert_eq!(lex("foo_bar1"), Ok(vec![Token::Ident("foo_bar1".into())]));
    }

    #[test]
    fn unicode_ident() {
        assert_eq!(
            Lexer::new("été").tokenize(),
            Ok(vec![(Token::Ident("été".into()), Span::new(0, 5))])
        );
    }
}
`

const TEST_RUN = `   Compiling parser v0.4.1 (/work/app/crates/parser)
    Finished \`test\` profile [unoptimized + debuginfo] target(s) in 3.71s
     Running unittests src/lib.rs (target/debug/deps/parser-5d1c2e9a7b3f0c11)

running 14 tests
test lexer::tests::numbers ... ok
test lexer::tests::operators ... ok
test lexer::tests::parens ... ok
test lexer::tests::ascii_ident ... ok
test lexer::tests::unicode_ident ... FAILED
test parser::tests::precedence ... ok
test parser::tests::unary_minus ... ok
test parser::tests::nested_parens ... ok
test parser::tests::unicode_call ... FAILED
test eval::tests::division ... ok
test eval::tests::variables ... ok
test eval::tests::errors ... ok
test span::tests::merge ... ok
test span::tests::display ... ok

failures:

---- lexer::tests::unicode_ident stdout ----
thread 'lexer::tests::unicode_ident' panicked at crates/parser/src/lexer.rs:88:9:
assertion \`left == right\` failed
  left: Err(Unexpected('é', 0))
 right: Ok([(Ident("été"), Span { start: 0, end: 5 })])

---- parser::tests::unicode_call stdout ----
thread 'parser::tests::unicode_call' panicked at crates/parser/src/parser.rs:212:14:
called \`Result::unwrap()\` on an \`Err\` value: Lex(Unexpected('π', 4))

failures:
    lexer::tests::unicode_ident
    parser::tests::unicode_call

test result: FAILED. 12 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s

error: test failed, to rerun pass \`-p parser --lib\``

const GREP = `crates/parser/src/lexer.rs:37:                c if c.is_ascii_alphabetic() || c == '_' => self.ident(),
crates/parser/src/lexer.rs:61:        while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == '_') {
crates/parser/src/parser.rs:198:    fn call(&mut self, name: String) -> Result<Expr, ParseError> {
crates/eval/src/env.rs:14:    // identifiers are ASCII-only until the lexer learns XID (see issue #212)`

const IDENT = `    fn ident(&mut self) -> Token {
        let start = self.pos;
        while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == '_') {
            self.bump();
        }
        Token::Ident(self.src[start..self.pos].to_owned())
    }`

/**
 * Builds the session; `mark(session)` is called mid-call, the way the checkpoint tool runs.
 * @param {(session: any) => Promise<unknown>} mark
 */
export async function buildDemoSession(mark) {
  const b = new SessionBuilder('demo-session', { model: { provider: 'deepseek', model: 'deepseek-chat' } })
  b.turnStart()
  b.header({ provider: 'deepseek', model: 'deepseek-chat', maxTokens: 8192 }, { system: SYSTEM, tools: TOOLS })
  b.user('`cargo test -p parser` fails since the unicode tests landed. Find out why and fix it.')
  b.step++
  b.assistant({
    text: 'This needs a look at the lexer and the failing tests first; marking the investigation.',
    calls: [{ id: 'call_ckpt', name: 'checkpoint', args: { objective: 'find why cargo test -p parser fails' } }],
  })
  const marked = /** @type {{id: number}} */ (await mark(b.session))
  // The checkpoint tool's result, as the row renders it.
  b.result('call_ckpt', WORDS.en.marked(marked.id, undefined, { checkpoint: 'checkpoint', rewind: 'rewind' }))
  b.step++
  b.assistant({
    calls: [
      { id: 'call_read', name: 'read', args: { path: 'crates/parser/src/lexer.rs' } },
      { id: 'call_grep', name: 'grep', args: { pattern: 'is_ascii_al', path: 'crates/' } },
    ],
  })
  b.result('call_read', LEXER)
  b.result('call_grep', GREP)
  b.step++
  b.assistant({ text: 'The lexer only accepts ASCII letters. Running the tests to see the exact failures.', calls: [{ id: 'call_test', name: 'bash', args: { command: 'cargo test -p parser' } }] })
  b.result('call_test', TEST_RUN, true)
  b.step++
  b.assistant({ calls: [{ id: 'call_ident', name: 'read', args: { path: 'crates/parser/src/lexer.rs', offset: 59, limit: 7 } }] })
  b.result('call_ident', IDENT)
  b.step++
  b.assistant({
    text: 'Found it: `Lexer::ident` and the dispatch in `tokenize` use `is_ascii_alphabetic`/`is_ascii_alphanumeric`, so `été` and `π` are rejected with `LexError::Unexpected`. The fix is to use `unicode_ident::is_xid_start`/`is_xid_continue` in crates/parser/src/lexer.rs lines 37 and 61. Folding the investigation before editing.',
    calls: [{ id: 'call_rewind', name: 'rewind', args: {} }],
  })
  return { session: b.session, rewindCallId: 'call_rewind', step: () => b.step }
}

const FIXED_IDENT = `    fn ident(&mut self) -> Token {
        let start = self.pos;
        while matches!(self.peek(), Some(c) if unicode_ident::is_xid_continue(c)) {
            self.bump();
        }
        Token::Ident(self.src[start..self.pos].to_owned())
    }`

const PASSING_RUN = `   Compiling unicode-ident v1.0.12
   Compiling parser v0.4.1 (/work/app/crates/parser)
    Finished \`test\` profile [unoptimized + debuginfo] target(s) in 4.02s
     Running unittests src/lib.rs (target/debug/deps/parser-5d1c2e9a7b3f0c11)

running 14 tests
test result: ok. 14 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s`

/**
 * The rest of the task after the fold: the rewind's result, then the fix and its check on the
 * folded context, and the answer.
 * @param {any} session @param {string} rewindResult the rewind tool's rendered result
 * @param {number} step the last step number used
 */
export function continueAfterFold(session, rewindResult, step) {
  const b = new SessionBuilder(session, { model: { provider: 'deepseek', model: 'deepseek-chat' } })
  b.turn = 1
  b.step = step
  /** @param {string} text @param {[string, string, object][]} calls */
  const assistant = (text, calls) => {
    b.step++
    b.assistant({ text, calls: calls.map(([id, name, args]) => ({ id, name, args })) })
  }
  const result = (/** @type {string} */ id, /** @type {string} */ text, isError = false) => b.result(id, text, isError)
  result('call_rewind', rewindResult)
  assistant('Applying the fix from the report: XID classes in `tokenize` and `ident`.', [
    ['call_edit1', 'edit', { path: 'crates/parser/src/lexer.rs', old: "c if c.is_ascii_alphabetic() || c == '_' => self.ident(),", new: "c if unicode_ident::is_xid_start(c) || c == '_' => self.ident()," }],
    ['call_edit2', 'edit', { path: 'crates/parser/src/lexer.rs', old: "Some(c) if c.is_ascii_alphanumeric() || c == '_'", new: 'Some(c) if unicode_ident::is_xid_continue(c)' }],
  ])
  result('call_edit1', 'Edited crates/parser/src/lexer.rs: 1 replacement at line 37.')
  result('call_edit2', `Edited crates/parser/src/lexer.rs: 1 replacement at line 61.\n${FIXED_IDENT}`)
  assistant('', [['call_dep', 'bash', { command: 'cargo add -p parser unicode-ident@1' }]])
  result('call_dep', '    Updating crates.io index\n      Adding unicode-ident v1.0.12 to dependencies')
  assistant('Running the tests again.', [['call_test2', 'bash', { command: 'cargo test -p parser' }]])
  result('call_test2', PASSING_RUN)
  assistant('Fixed: the lexer now classifies identifier characters with `unicode_ident` (XID start/continue) instead of ASCII-only checks, so `été` and `π` lex as identifiers. `cargo test -p parser` passes (14 tests).', [])
  b.turnEnd()
}

//! End-to-end tests of the report on the fixtures in `__test__/fixtures/report` and on
//! synthetic regions: sections, verbatim items, budgets, determinism, linear time.

use super::scan::{cap, len16};
use super::*;

const RUST: &str = include_str!("../../../../__test__/fixtures/report/rust-build-failure.json");
const NODE_ZH: &str = include_str!("../../../../__test__/fixtures/report/node-test-failure.zh.json");
const WIDE: &str = include_str!("../../../../__test__/fixtures/report/wide-listing.json");

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
fn counts_utf16_units_like_js() {
    assert_eq!(len16("a中😀"), 4);
    assert_eq!(cap("😀😀😀", 5), "😀😀…");
    assert_eq!(cap("abc", 3), "abc");
    let json = msgs(serde_json::json!([{ "role": "assistant", "content": [{ "type": "text", "text": "😀x" }] }]));
    assert_eq!(Region::parse(&json).unwrap().visible_chars(), 3);
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

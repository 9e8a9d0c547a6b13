//! End-to-end tests of the report on the fixtures in `__test__/fixtures/report`, on the recorded
//! agent trajectories in `__test__/fixtures/trajectories` and on synthetic regions: sections,
//! verbatim items, what is summarized instead of copied, budgets, determinism. (Retention is
//! graded in JS, by an extraction independent of this code: `__test__/report-trajectories.test.mjs`.)

use super::scan::{cap, len16};
use super::*;

const RUST: &str = include_str!("../../../../__test__/fixtures/report/rust-build-failure.json");
const NODE_ZH: &str = include_str!("../../../../__test__/fixtures/report/node-test-failure.zh.json");
const WIDE: &str = include_str!("../../../../__test__/fixtures/report/wide-listing.json");

fn opts(language: Language, max_chars: usize) -> ReportOptions {
    ReportOptions {
        language,
        max_chars: Some(max_chars),
    }
}

fn en(json: &str) -> String {
    extractive_report(json, &ReportOptions::default()).unwrap()
}

/// The whole report, as far as the region's own size allows.
fn roomy(json: &str, language: Language) -> String {
    extractive_report(json, &opts(language, 1 << 20)).unwrap()
}

fn zh(json: &str) -> String {
    let o = ReportOptions {
        language: Language::Zh,
        max_chars: None,
    };
    extractive_report(json, &o).unwrap()
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

fn section(r: &str, h: &str) -> String {
    let start = r.find(h).unwrap() + h.len();
    let end = r[start..].find("\n## ").map_or(r.len(), |i| start + i);
    r[start..end].to_owned()
}

fn msgs(v: serde_json::Value) -> String {
    v.to_string()
}

/// A region of shell calls: `(command, output, failed)` each.
fn shell_region(calls: &[(&str, &str, bool)], closing: &str) -> String {
    let mut out = Vec::new();
    for (i, (command, output, failed)) in calls.iter().enumerate() {
        out.push(serde_json::json!({ "role": "assistant", "content": [
            { "type": "tool-call", "id": format!("c{i}"), "name": "bash", "arguments": serde_json::json!({ "command": command }).to_string() },
        ] }));
        out.push(serde_json::json!({ "role": "user", "content": [
            { "type": "tool-result", "toolCallId": format!("c{i}"), "isError": failed, "content": [{ "type": "text", "text": output }] },
        ] }));
    }
    out.push(serde_json::json!({ "role": "assistant", "content": [{ "type": "text", "text": closing }] }));
    serde_json::Value::Array(out).to_string()
}

#[test]
fn writes_the_five_sections_in_english_and_chinese() {
    assert_sections(&en(RUST), Language::En);
    let z = zh(NODE_ZH);
    assert_sections(&z, Language::Zh);
    assert!(!z.contains("## Findings"));
    assert_has(&z, &["→ 退出码 ", "- 结论："]);
    assert_sections(&zh(RUST), Language::Zh);
}

#[test]
fn says_what_ran_how_it_ended_and_which_errors_it_printed() {
    let r = roomy(RUST, Language::En);
    let findings = section(&r, "## Findings");
    assert_has(
        &findings,
        &[
            "- $ ls -R src config && cat Cargo.toml → 10 entries",
            "- read_file src/parser.rs → 29 lines",
            "- $ cargo build --offline 2>&1 → exit 101\n  - error[E0061]: this function takes 3 arguments but 2 arguments were supplied\n",
            "  - error: could not compile `ini-lite` (bin \"ini-lite\") due to 1 previous error",
            "- $ grep -rn \"parse_header\" src",
            "- $ cargo test --offline parser 2>&1 | tail -n 25 → ok\n  - error: could not compile `ini-lite` (bin \"ini-lite\" test)",
            "- Conclusion: Findings: the build fails because src/main.rs:5 calls",
        ],
    );
    // Code read with a read tool is content, not diagnostics; identifiers are not errors.
    assert!(!r.contains("  - return Err(ParseError::TooDeep);"), "{r}");
    let files = section(&r, "## Files and Artifacts");
    assert_has(&files, &["- Read: `src/parser.rs`", "- Also named: `src/main.rs`"]);
    // A path named only in a command line is not listed again.
    assert!(!files.contains("Cargo.toml"), "{files}");
}

#[test]
fn sorts_assistant_sentences_into_decisions_questions_and_next_step() {
    let r = roomy(RUST, Language::En);
    assert!(section(&r, "## Decisions").contains("- I decided to keep the 3-argument signature"));
    assert!(section(&r, "## Unresolved Questions").contains("is `BadHeader` still meant for unterminated headers?"));
    assert!(section(&r, "## Recommended Next Step").contains("- Next step: edit src/main.rs to call"));
    let z = roomy(NODE_ZH, Language::Zh);
    assert_has(
        &z,
        &[
            "## 决策\n- 我决定在 lib/ttl.js 中改用默认 TTL",
            "- 默认 TTL 应该取多少，配置里是否已有约定？",
            "## 建议的下一步\n- 下一步：修改 lib/ttl.js 加上默认值，然后重新运行 `npm test`。",
            "  - TypeError: Cannot read properties of undefined (reading 'ttlMs')",
            "  - /bin/bash: line 1: pnpm: command not found",
        ],
    );
}

#[test]
fn findings_do_not_copy_the_agents_prose_sentence_by_sentence() {
    let prose = "I looked at the parser first. It reads headers one by one. The depth check was added later. \
                 That explains the extra argument. Everything else matches the docs.";
    let mut region: Vec<serde_json::Value> = (0..6)
        .map(|i| serde_json::json!({ "role": "assistant", "content": [{ "type": "text", "text": format!("Step {i}: {prose}") }] }))
        .collect();
    region.push(serde_json::json!({ "role": "assistant", "content": [{ "type": "reasoning", "text": "maybe the depth should be optional" }] }));
    let r = en(&serde_json::Value::Array(region).to_string());
    let findings = section(&r, "## Findings");
    assert_eq!(
        findings.matches("\n- ").count(),
        2,
        "a counts line and one conclusion:\n{r}"
    );
    assert!(findings.contains("- Conclusion: Step 5: I looked at the parser first."));
    assert!(!r.contains("maybe the depth"), "reasoning is not mined:\n{r}");
}

#[test]
fn a_multi_line_command_keeps_its_first_line_not_its_body() {
    let body: String = (0..40).map(|i| format!("    print('line {i}')\n")).collect();
    let heredoc = format!("cat > /tmp/repro.py << 'EOF'\nimport sys\n{body}EOF\npython /tmp/repro.py");
    let json = shell_region(
        &[(
            &heredoc,
            "Traceback (most recent call last):\nValueError: bad input\n[exit code 1]",
            true,
        )],
        "Reproduced the bug.",
    );
    let r = en(&json);
    assert_has(
        &r,
        &[
            "- $ cat > /tmp/repro.py << 'EOF' (+43 lines) → exit 1\n",
            "  - Traceback (most recent call last):",
            "  - ValueError: bad input",
            "- Written: `/tmp/repro.py`",
        ],
    );
    assert!(!r.contains("print('line 7')"), "{r}");
}

#[test]
fn a_directory_listing_is_one_line_what_was_listed_and_how_many_entries() {
    let listing: String = (0..120)
        .map(|i| format!("-rw-r--r-- 1 u u 10 Jan 1 file_{i:03}.py\n"))
        .collect();
    let cat: String = (0..30).map(|i| format!("x = {i}\n")).collect();
    let json = shell_region(
        &[
            ("cd /code/proj && ls -la src", &listing, false),
            ("cat /code/proj/setup.py", &cat, false),
            ("python -c 'print(1)'", "1", false),
        ],
        "Looked around.",
    );
    let r = en(&json);
    assert_has(
        &r,
        &[
            "- $ cd /code/proj && ls -la src → 120 entries\n",
            "- $ cat /code/proj/setup.py → 30 lines\n",
            "- $ python -c 'print(1)' → ok: 1\n",
        ],
    );
    assert!(!r.contains("file_007.py"), "{r}");
    let z = zh(&json);
    assert_has(&z, &["→ 120 项\n", "→ 30 行\n", "→ 成功: 1\n"]);
}

#[test]
fn the_default_budget_grows_with_the_region_so_errors_survive() {
    let large = big_region(1 << 20);
    let region = Region::parse(&large).unwrap();
    let visible = region.visible_chars();
    let r = en(&large);
    assert!(len16(&r) <= default_max_chars(visible), "{} > default", len16(&r));
    assert!(len16(&r) * 4 <= visible + 4 * DEFAULT_BASE_CHARS);
    // Every error line of the region is kept, the last one too; a fixed 4000 cap would cut them.
    let last = big_region_last_error(&large);
    assert_has(
        &r,
        &[
            "- $ cargo check -p mod_0 → exit 1",
            "error[E0000]: mismatched types in item_0_0",
            &last,
        ],
    );
    let capped = extractive_report(&large, &opts(Language::En, 4000)).unwrap();
    assert!(!capped.contains(&last));
    assert!(capped.contains("items omitted to fit 4000 chars]_"));
    assert_eq!(default_max_chars(0), DEFAULT_BASE_CHARS);
    assert_eq!(default_max_chars(400_000), 101_000);
}

#[test]
fn is_deterministic() {
    for f in [RUST, NODE_ZH, WIDE] {
        for max in [None, Some(1500), Some(700)] {
            let o = ReportOptions {
                language: Language::En,
                max_chars: max,
            };
            assert_eq!(extractive_report(f, &o), extractive_report(f, &o));
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
fn under_pressure_keeps_commands_errors_and_paths_first_and_says_what_it_left_out() {
    // The 120-file listing is one line, so the whole report is short.
    let r = en(WIDE);
    assert_has(&r, &["- $ find packages -type f | sort → 120 entries\n"]);
    assert!(!r.contains("_[extractive report:"));
    let r = extractive_report(WIDE, &opts(Language::En, 600)).unwrap();
    assert!(len16(&r) <= 600);
    assert_has(
        &r,
        &[
            "- $ find packages -type f | sort",
            "ls: cannot access 'packages/pkg-99/src': No such file or directory",
            "items omitted to fit 600 chars]_",
        ],
    );
    let r = extractive_report(RUST, &opts(Language::En, 700)).unwrap();
    assert!(len16(&r) <= 700);
    assert_has(
        &r,
        &[
            "- $ cargo build --offline 2>&1 → exit 101",
            "  - error[E0061]:",
            "items omitted to fit 700 chars]_",
        ],
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
    assert!(len16(&r) <= DEFAULT_BASE_CHARS);
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
            "- $ cat .env.local → failed",
            "  - cat: .env.local: No such file or directory",
            "- edit_file src/app → ok: ok: wrote 12 lines",
            "- Edited: `src/app`",
            "1 failed",
        ],
    );
    // File bodies are not scanned for paths, and a user's text is not the agent's.
    assert!(!r.contains("lib/util/fmt.go"), "{r}");
    assert!(!r.contains("./docs/arch.md"), "{r}");
}

#[test]
fn raw_non_json_arguments_of_a_shell_tool_are_the_command() {
    let json = msgs(serde_json::json!([
        { "role": "assistant", "content": [{ "type": "tool-call", "id": "c", "name": "bash", "arguments": "make -C build check" }] },
        { "role": "user", "content": [{ "type": "tool-result", "toolCallId": "c", "content": [{ "type": "text", "text": format!("{}make: *** [check] Error 2\nmake: Leaving directory '/src/build'", "cc -c x.c\n".repeat(60)) }] }] },
    ]));
    let r = en(&json);
    assert_has(&r, &["- $ make -C build check → ok\n", "  - make: *** [check] Error 2"]);
}

#[test]
fn a_command_whose_program_never_succeeded_again_is_unresolved() {
    let json = shell_region(
        &[
            (
                "pip install -e .",
                "error: externally-managed-environment\n[exit code 1]",
                true,
            ),
            (
                "pytest tests/test_a.py",
                &format!(
                    "{}FAILED tests/test_a.py::test_x\n[exit code 1]",
                    "tests/test_a.py .\n".repeat(99)
                ),
                true,
            ),
            (
                "pip install --break-system-packages -e .",
                "Successfully installed proj",
                false,
            ),
        ],
        "Installed; the test still fails.",
    );
    let q = section(&roomy(&json, Language::En), "## Unresolved Questions");
    assert!(
        q.contains("- Still failing: $ pytest tests/test_a.py → exit 1\n"),
        "{q}"
    );
    assert!(!q.contains("pip install"), "{q}");
}

#[test]
fn every_recorded_trajectory_fits_the_default_budget_in_both_languages() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../__test__/fixtures/trajectories");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        // Every segment; `sources.json` is the corpus's manifest, not a region.
        .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.ends_with("sources.json"))
        .collect();
    names.sort();
    assert!(names.len() >= 30, "{names:?}");
    for path in names {
        let json = std::fs::read_to_string(&path).unwrap();
        let visible = Region::parse(&json).unwrap().visible_chars();
        for language in [Language::En, Language::Zh] {
            let o = ReportOptions {
                language,
                max_chars: None,
            };
            let r = extractive_report(&json, &o).unwrap();
            assert!(len16(&r) <= default_max_chars(visible).min(visible - 1), "{path:?}");
            assert_sections(&r, language);
            assert_eq!(extractive_report(&json, &o).unwrap(), r, "{path:?}");
        }
    }
}

#[test]
fn counts_utf16_units_like_js() {
    assert_eq!(len16("a中😀"), 4);
    assert_eq!(cap("😀😀😀", 5), "😀😀…");
    assert_eq!(cap("abc", 3), "abc");
    let json = msgs(serde_json::json!([{ "role": "assistant", "content": [{ "type": "text", "text": "😀x" }] }]));
    assert_eq!(Region::parse(&json).unwrap().visible_chars(), 3);
}

/// A synthetic exploration of about `bytes` bytes: many failing calls, long outputs with
/// distinct error lines, prose.
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
        text.push_str("[exit code 1]");
        out.push(serde_json::json!({ "role": "assistant", "content": [
            { "type": "text", "text": format!("Checking mod_{i}; value_{i}_3 looks wrong. I will use item_{i}_0 instead. Why does mod_{i} fail?") },
            { "type": "tool-call", "id": format!("c{i}"), "name": "bash", "arguments": serde_json::json!({ "command": format!("cargo check -p mod_{i}") }).to_string() },
        ] }));
        out.push(serde_json::json!({ "role": "user", "content": [{ "type": "tool-result", "toolCallId": format!("c{i}"), "isError": true, "content": [{ "type": "text", "text": text }] }] }));
        size += text.len() + 200;
        i += 1;
    }
    serde_json::Value::Array(out).to_string()
}

fn big_region_last_error(json: &str) -> String {
    let at = json.rfind("error[E0030]: mismatched types in item_").unwrap();
    let end = json[at..].find("\\n").unwrap();
    json[at..at + end].to_owned()
}

#[test]
fn an_editor_subcommand_is_not_a_shell_command() {
    let code: String = (0..60)
        .map(|i| format!("{i:4}\traise ValueError('bad {i}')\n"))
        .collect();
    let json = msgs(serde_json::json!([
        { "role": "assistant", "content": [
            { "type": "tool-call", "id": "v", "name": "str_replace_editor", "arguments": serde_json::json!({ "command": "view", "path": "/repo/pkg/core.py" }).to_string() },
            { "type": "tool-call", "id": "e", "name": "str_replace_editor", "arguments": serde_json::json!({ "command": "str_replace", "path": "/repo/pkg/core.py", "old_str": "a", "new_str": "b" }).to_string() },
        ] },
        { "role": "user", "content": [{ "type": "tool-result", "toolCallId": "v", "content": [{ "type": "text", "text": code }] }] },
        { "role": "user", "content": [{ "type": "tool-result", "toolCallId": "e", "content": [{ "type": "text", "text": "The file /repo/pkg/core.py has been edited." }] }] },
    ]));
    let r = roomy(&json, Language::En);
    assert_has(
        &r,
        &[
            "- str_replace_editor view /repo/pkg/core.py → 60 lines\n",
            "- str_replace_editor str_replace /repo/pkg/core.py → ok",
            "- Edited: `/repo/pkg/core.py`",
        ],
    );
    assert!(!r.contains("$ view") && !r.contains("raise ValueError"), "{r}");
}

#[test]
fn reads_a_text_protocol_agent_that_writes_its_commands() {
    let out: String = (0..80).map(|i| format!("tests/test_x.py::test_{i} PASSED\n")).collect();
    let json = msgs(serde_json::json!([
        { "role": "user", "content": [{ "type": "text", "text": "Fix the bug in src/x.py." }] },
        { "role": "assistant", "content": [{ "type": "text", "text": "THOUGHT: run the tests.\n\n```bash\ncd /repo && python -m pytest tests/test_x.py -q\n```" }] },
        { "role": "user", "content": [{ "type": "text", "text": format!("<returncode>1</returncode>\n<output>\n{out}FAILED tests/test_x.py::test_y - AssertionError: 2 != 3\n</output>") }] },
    ]));
    let r = roomy(&json, Language::En);
    assert_has(
        &r,
        &[
            "- Folded 3 messages: 1 tool calls (1 failed)",
            "- $ cd /repo && python -m pytest tests/test_x.py -q → exit 1\n  - FAILED tests/test_x.py::test_y - AssertionError: 2 != 3\n",
        ],
    );
}

#[test]
fn english_and_chinese_keep_the_same_atoms_under_every_budget() {
    let omitted = |r: &str, zh: bool| -> Option<(usize, usize)> {
        let nums: Vec<usize> = r
            .rsplit("_[")
            .next()?
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect();
        // en: omitted, total, limit; zh: limit, total, omitted.
        Some(if zh { (nums[2], nums[1]) } else { (nums[0], nums[1]) })
    };
    for f in [RUST, NODE_ZH, WIDE] {
        let visible = Region::parse(f).unwrap().visible_chars();
        for max in (100..visible).step_by(37) {
            let en = extractive_report(f, &opts(Language::En, max));
            let zh = extractive_report(f, &opts(Language::Zh, max));
            match (en, zh) {
                (Ok(en), Ok(zh)) => {
                    assert!(len16(&zh) <= len16(&en), "{max}");
                    let marked = en.contains("_[extractive report:");
                    assert_eq!(marked, zh.contains("_[抽取式报告："), "{max}");
                    if marked {
                        assert_eq!(omitted(&en, false), omitted(&zh, true), "{max}:\n{en}\n{zh}");
                    }
                    for line in en.lines().filter(|l| l.starts_with("  - ")) {
                        assert!(zh.contains(line), "{max}: zh lacks {line:?}");
                    }
                }
                (Err(a), Err(b)) => assert_eq!((a.code(), max < 400), (b.code(), true)),
                (a, b) => panic!("{max}: {a:?} / {b:?}"),
            }
        }
    }
}

/// Every region of the corpus: the fixtures and the recorded trajectories.
fn corpus() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = [("rust", RUST), ("node-zh", NODE_ZH), ("wide", WIDE)]
        .into_iter()
        .map(|(n, j)| (n.to_owned(), j.to_owned()))
        .collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../__test__/fixtures/trajectories");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.ends_with("sources.json"))
        .collect();
    names.sort();
    for path in names {
        out.push((format!("{path:?}"), std::fs::read_to_string(&path).unwrap()));
    }
    out
}

#[test]
fn a_report_of_facts_read_message_by_message_is_the_report_of_the_region() {
    // Whole regions and windows of them (a window may start with a result whose call is
    // outside it, or end with a call whose result is): the facts of each message, read alone and
    // kept (`prepare`d), make the same bytes as the region's JSON.
    let mut compared = 0;
    for (name, json) in corpus() {
        let messages: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
        let mut windows = vec![(0, messages.len())];
        windows.extend((0..messages.len()).step_by(5).map(|i| (i, (i + 9).min(messages.len()))));
        for (a, b) in windows {
            let window = &messages[a..b];
            let region = serde_json::to_string(window).unwrap();
            let facts: Vec<MessageFacts> = window
                .iter()
                .map(|m| MessageFacts::parse(&serde_json::to_string(m).unwrap()).unwrap())
                .collect();
            assert_eq!(
                facts.iter().map(MessageFacts::visible_chars).sum::<usize>(),
                Region::parse(&region).unwrap().visible_chars()
            );
            for language in [Language::En, Language::Zh] {
                for max_chars in [None, Some(400), Some(3000)] {
                    let o = ReportOptions { language, max_chars };
                    let whole = extractive_report(&region, &o).map_err(|e| e.to_string());
                    let merged = report_of(&facts, &o).map_err(|e| e.to_string());
                    assert_eq!(merged, whole, "{name} [{a}..{b}] {language:?} {max_chars:?}");
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 2000, "{compared}");
}

#[test]
fn message_facts_read_one_message_and_refuse_anything_else() {
    let m = MessageFacts::parse(r#"{"role":"assistant","content":[{"type":"text","text":"héllo"}]}"#).unwrap();
    assert_eq!(m.visible_chars(), 5);
    for (json, what) in [
        ("{", "message is not valid JSON"),
        ("[]", "must be one DSH message"),
        (r#"{"role":"robot","content":[]}"#, "unknown variant `robot`"),
        (r#"{"content":[]}"#, "missing field `role`"),
    ] {
        let e = MessageFacts::parse(json).unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT", "{json}");
        assert!(e.to_string().contains(what), "{json}: {e}");
    }
}

#[test]
fn a_search_without_a_path_argument_is_labelled_with_the_first_path_new_to_the_region() {
    // The state the merge carries across messages: `src/a.rs` was named by an earlier message,
    // so the search's target is the next path its arguments name, `src/b.rs`.
    let out: String = (0..60).map(|i| format!("src/b.rs:{i}: fn main() {{}}\n")).collect();
    let json = msgs(serde_json::json!([
        { "role": "assistant", "content": [{ "type": "text", "text": "Start from src/a.rs." }] },
        { "role": "assistant", "content": [
            { "type": "tool-call", "id": "g", "name": "grep", "arguments": { "pattern": "fn main", "glob": "src/a.rs src/b.rs" } },
        ] },
        { "role": "user", "content": [{ "type": "tool-result", "toolCallId": "g", "content": [{ "type": "text", "text": out }] }] },
    ]));
    let r = roomy(&json, Language::En);
    assert_has(&r, &["- grep fn main src/b.rs"]);
}

#[test]
fn a_budget_of_the_messages_fact_chars_keeps_every_command_error_line_and_path() {
    // What a compaction sizes a run's report by (rule 6 of the compaction policy): the sum of
    // its messages' fact chars and the report's skeleton. At that budget the report keeps what
    // it keeps with all the room in the world, of its highest-priority atoms.
    for (name, json) in corpus() {
        let messages: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
        let facts: Vec<MessageFacts> = messages
            .iter()
            .map(|m| MessageFacts::parse(&serde_json::to_string(m).unwrap()).unwrap())
            .collect();
        let need = facts.iter().map(MessageFacts::fact_chars).sum::<usize>() + 320;
        let Ok(sized) = report_of(&facts, &opts(Language::En, need)) else {
            continue;
        };
        let roomy = report_of(&facts, &opts(Language::En, 1 << 20)).unwrap();
        for line in roomy.lines() {
            let fact = if let Some(cmd) = line.strip_prefix("- $ ") {
                cmd.split(" → ").next().unwrap_or(cmd)
            } else if line.starts_with("  - ") {
                line
            } else {
                continue;
            };
            assert!(sized.contains(fact), "{name}: {fact:?} missing at budget {need}");
        }
        for path in section(&roomy, "## Files and Artifacts").split('`').skip(1).step_by(2) {
            assert!(sized.contains(path), "{name}: path {path:?} missing at budget {need}");
        }
    }
}

#[test]
fn keeps_the_error_lines_of_a_log_it_read_and_not_the_word_error_in_source_code() {
    let log = "   Compiling p v0.1.0\nerror[E0599]: no method named `frob` found for struct `Parser`\n  --> src/lib.rs:12:9\nerror: could not compile `p` (lib) due to 1 previous error";
    let source = "fn parse() -> Result<(), Error> {\n    // the error case: bail out\n    return Err(Error::Eof);\n}\npanic!(\"unreachable\");";
    let region = msgs(serde_json::json!([
        { "role": "assistant", "content": [
            { "type": "tool-call", "id": "r1", "name": "read_file", "arguments": "{\"path\":\"target/build.log\"}" },
            { "type": "tool-call", "id": "r2", "name": "read_file", "arguments": "{\"path\":\"src/lib.rs\"}" },
            { "type": "tool-call", "id": "r3", "name": "bash", "arguments": "{\"command\":\"tail -n 40 /tmp/test_output.txt\"}" },
            { "type": "tool-call", "id": "r4", "name": "bash", "arguments": "{\"command\":\"cat src/lib.rs | head -20\"}" },
        ] },
        { "role": "user", "content": [{ "type": "tool-result", "toolCallId": "r1", "content": [{ "type": "text", "text": log }] }] },
        { "role": "user", "content": [{ "type": "tool-result", "toolCallId": "r2", "content": [{ "type": "text", "text": source }] }] },
        { "role": "user", "content": [{ "type": "tool-result", "toolCallId": "r3", "content": [{ "type": "text", "text": "test parser::eof ... FAILED\nthread 'parser::eof' panicked at src/lib.rs:3:5" }] }] },
        { "role": "user", "content": [{ "type": "tool-result", "toolCallId": "r4", "content": [{ "type": "text", "text": source }] }] },
        { "role": "assistant", "content": [{ "type": "text", "text": "The build log says frob is missing." }] },
    ]));
    let report = roomy(&region, Language::En);
    assert_has(
        &report,
        &[
            "error[E0599]: no method named `frob` found for struct `Parser`",
            "error: could not compile `p` (lib) due to 1 previous error",
            "test parser::eof ... FAILED",
            "thread 'parser::eof' panicked at src/lib.rs:3:5",
        ],
    );
    for line in [
        "// the error case: bail out",
        "panic!(\"unreachable\");",
        "return Err(Error::Eof);",
    ] {
        assert!(
            !report.contains(line),
            "source line {line:?} reported as an error:\n{report}"
        );
    }
}

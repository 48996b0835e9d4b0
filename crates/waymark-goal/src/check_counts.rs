//! How many tests a goal's check ran, read from the closing lines its runner prints (issue
//! 39: a check's baseline, its pass count on the gauge, "fewer tests ran"). Known runners:
//! cargo test (every binary's `test result:` line, summed), cargo nextest (`Summary`),
//! pytest, vitest, jest, node's test runner (TAP `# pass`), go test (`--- PASS`/`--- FAIL`
//! with -v), and the plain "N passed, N failed". Colour codes are ignored. None when the
//! output names no count: the check then counts only by its exit code.

/// Tests a check's run reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestCounts {
    pub passed: u64,
    pub failed: u64,
    /// Skipped, ignored or filtered out as the runner reports them.
    pub skipped: u64,
}

impl TestCounts {
    /// Tests that ran (passed or failed).
    pub fn ran(&self) -> u64 {
        self.passed.saturating_add(self.failed)
    }
}

/// The counts in `output`, by the first runner whose summary it holds.
pub fn counts(output: &str) -> Option<TestCounts> {
    let text = strip_ansi(output);
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    nextest(&lines)
        .or_else(|| cargo(&lines))
        .or_else(|| vitest(&lines))
        .or_else(|| jest(&lines))
        .or_else(|| node_tap(&lines))
        .or_else(|| pytest(&lines))
        .or_else(|| go(&lines))
        .or_else(|| unittest(&lines))
        .or_else(|| plain(&lines))
}

/// `Summary [ 0.650s] 6 tests run: 5 passed, 1 failed, 328 skipped` (the last one).
fn nextest(lines: &[&str]) -> Option<TestCounts> {
    let line = lines.iter().rev().find(|l| {
        l.starts_with("Summary [") && l.contains("tests run:")
            || l.starts_with("Summary [") && l.contains("test run:")
    })?;
    let (_, tail) = line.split_once("run:")?;
    Some(tally(tail))
}

/// Each test binary's `test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0
/// filtered out; finished in 0.01s`, summed.
fn cargo(lines: &[&str]) -> Option<TestCounts> {
    let mut found = None;
    for l in lines.iter().filter(|l| l.starts_with("test result:")) {
        let c = tally(l.split_once('.').map_or(*l, |(_, t)| t));
        let sum: &mut TestCounts = found.get_or_insert_with(TestCounts::default);
        sum.passed += c.passed;
        sum.failed += c.failed;
        sum.skipped += c.skipped;
    }
    found
}

/// `Tests  1 failed | 326 passed | 2 skipped (329)` (vitest's closing block).
fn vitest(lines: &[&str]) -> Option<TestCounts> {
    let line = lines.iter().rev().find(|l| {
        l.strip_prefix("Tests")
            .is_some_and(|t| t.starts_with(char::is_whitespace) && !t.trim_start().starts_with(':'))
    })?;
    let body = line["Tests".len()..].split('(').next().unwrap_or("");
    Some(tally(&body.replace('|', ",")))
}

/// `Tests:       1 failed, 2 passed, 3 total` (jest).
fn jest(lines: &[&str]) -> Option<TestCounts> {
    let line = lines.iter().rev().find(|l| l.starts_with("Tests:"))?;
    Some(tally(&line["Tests:".len()..]))
}

/// Node's test runner: `# pass 4`, `# fail 1`, `# skipped 0`, `# todo 0`.
fn node_tap(lines: &[&str]) -> Option<TestCounts> {
    let field = |name: &str| -> Option<u64> {
        lines.iter().rev().find_map(|l| {
            l.strip_prefix('#')
                .map(str::trim)
                .and_then(|t| t.strip_prefix(name))
                .and_then(|n| n.trim().parse().ok())
        })
    };
    let passed = field("pass ")?;
    Some(TestCounts {
        passed,
        failed: field("fail ").unwrap_or(0),
        skipped: field("skipped ").unwrap_or(0) + field("todo ").unwrap_or(0),
    })
}

/// `===== 3 passed, 1 failed, 2 skipped in 0.12s =====`, or `no tests ran in 0.01s`.
fn pytest(lines: &[&str]) -> Option<TestCounts> {
    let line = lines.iter().rev().find(|l| {
        l.starts_with('=') && l.ends_with('=') && (l.contains(" in ") || l.contains("no tests ran"))
    })?;
    let body = line.trim_matches('=').trim();
    let body = body.rsplit_once(" in ").map_or(body, |(b, _)| b);
    if body.starts_with("no tests ran") {
        return Some(TestCounts::default());
    }
    let c = tally(body);
    let errors = count_of(body, "error").unwrap_or(0);
    Some(TestCounts {
        failed: c.failed + errors,
        ..c
    })
}

/// `go test -v`: one `--- PASS: TestX` / `--- FAIL: TestY` / `--- SKIP: TestZ` per test.
fn go(lines: &[&str]) -> Option<TestCounts> {
    let n = |p: &str| lines.iter().filter(|l| l.starts_with(p)).count() as u64;
    let c = TestCounts {
        passed: n("--- PASS:"),
        failed: n("--- FAIL:"),
        skipped: n("--- SKIP:"),
    };
    (c != TestCounts::default()).then_some(c)
}

/// Python's unittest: `Ran 5 tests in 0.01s`, then `OK`, `OK (skipped=1)` or
/// `FAILED (failures=1, errors=1, skipped=1)`.
fn unittest(lines: &[&str]) -> Option<TestCounts> {
    let at = lines
        .iter()
        .rposition(|l| l.starts_with("Ran ") && l.contains(" test"))?;
    let ran: u64 = lines[at]["Ran ".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let verdict = lines[at + 1..].iter().find(|l| !l.is_empty())?;
    let field = |name: &str| -> u64 {
        verdict
            .split(['(', ')', ','])
            .filter_map(|part| part.trim().strip_prefix(name)?.strip_prefix('='))
            .filter_map(|n| n.trim().parse::<u64>().ok())
            .sum()
    };
    if !verdict.starts_with("OK") && !verdict.starts_with("FAILED") {
        return None;
    }
    let skipped = field("skipped") + field("expected failures");
    let failed = field("failures") + field("errors") + field("unexpected successes");
    Some(TestCounts {
        passed: ran.saturating_sub(skipped).saturating_sub(failed),
        failed,
        skipped,
    })
}

/// The plain `N passed, N failed` on the last line that says it.
fn plain(lines: &[&str]) -> Option<TestCounts> {
    let line = lines
        .iter()
        .rev()
        .find(|l| count_of(l, "passed").is_some())?;
    Some(tally(line))
}

/// Reads `N passed`, `N failed`, `N skipped`/`ignored`/`filtered out`/`todo` anywhere in
/// `text`, separated by commas or semicolons.
fn tally(text: &str) -> TestCounts {
    TestCounts {
        passed: count_of(text, "passed").unwrap_or(0),
        failed: count_of(text, "failed").unwrap_or(0),
        skipped: [
            "skipped",
            "ignored",
            "filtered out",
            "xfailed",
            "deselected",
            "todo",
        ]
        .iter()
        .filter_map(|w| count_of(text, w))
        .sum(),
    }
}

/// The number written just before `word` in `text` (`12 passed`), if any.
fn count_of(text: &str, word: &str) -> Option<u64> {
    let mut from = 0;
    while let Some(i) = text[from..].find(word) {
        let at = from + i;
        from = at + word.len();
        // A whole word: `failed` is not the tail of `xfailed`.
        let before_ok = text[..at]
            .chars()
            .next_back()
            .is_some_and(char::is_whitespace);
        let after_ok = text[from..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric());
        if !before_ok || !after_ok {
            continue;
        }
        let digits: String = text[..at]
            .trim_end()
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if let Ok(n) = digits.parse() {
            return Some(n);
        }
    }
    None
}

/// `text` without ANSI escape sequences (the colours test runners print).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(passed: u64, failed: u64, skipped: u64) -> Option<TestCounts> {
        Some(TestCounts {
            passed,
            failed,
            skipped,
        })
    }

    #[test]
    fn cargo_test_sums_every_binary() {
        let out = "running 3 tests\ntest a ... ok\n\ntest result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n   Doc-tests parser\n\nrunning 2 tests\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 2 filtered out; finished in 0.01s\n";
        assert_eq!(counts(out), c(4, 1, 3));
    }

    #[test]
    fn nextest_reads_its_summary() {
        let out = "        PASS [   0.008s] (1/6) waymark-goal x\n────────────\n     Summary [   0.650s] 6 tests run: 5 passed, 1 failed, 328 skipped\n        FAIL [   0.442s] (4/6) y\nerror: test run failed";
        assert_eq!(counts(out), c(5, 1, 328));
        assert_eq!(
            counts("     Summary [   0.005s] 1 test run: 1 passed, 0 skipped"),
            c(1, 0, 0)
        );
    }

    #[test]
    fn pytest_reads_its_closing_line_in_any_order() {
        assert_eq!(
            counts("tests/test_api.py ..F.s\n==== 1 failed, 3 passed, 1 skipped in 0.12s ===="),
            c(3, 1, 1)
        );
        assert_eq!(
            counts("======================== 5 passed in 0.01s ========================"),
            c(5, 0, 0)
        );
        assert_eq!(
            counts("=== 2 passed, 1 error, 1 xfailed in 0.3s ==="),
            c(2, 1, 1)
        );
        assert_eq!(
            counts(
                "============================ no tests ran in 0.01s ============================"
            ),
            c(0, 0, 0)
        );
    }

    #[test]
    fn vitest_and_jest_read_their_summaries_through_colour() {
        let vitest = "\u{1b}[2m Test Files \u{1b}[22m \u{1b}[1m\u{1b}[32m49 passed\u{1b}[39m\u{1b}[22m\n\u{1b}[2m      Tests \u{1b}[22m \u{1b}[1m\u{1b}[31m1 failed\u{1b}[39m\u{1b}[22m\u{1b}[2m | \u{1b}[22m\u{1b}[1m\u{1b}[32m326 passed\u{1b}[39m\u{1b}[22m\u{1b}[90m (327)\u{1b}[39m";
        assert_eq!(counts(vitest), c(326, 1, 0));
        assert_eq!(
            counts(
                "Test Suites: 1 failed, 1 passed, 2 total\nTests:       1 failed, 2 passed, 3 total\nSnapshots:   0 total"
            ),
            c(2, 1, 0)
        );
    }

    #[test]
    fn node_and_go_runners_are_counted() {
        assert_eq!(
            counts(
                "# tests 5\n# suites 0\n# pass 4\n# fail 1\n# cancelled 0\n# skipped 0\n# todo 0"
            ),
            c(4, 1, 0)
        );
        assert_eq!(
            counts(
                "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n--- FAIL: TestB (0.00s)\n--- SKIP: TestC (0.00s)\nFAIL"
            ),
            c(1, 1, 1)
        );
    }

    /// The real runners on this machine print what is read: cargo test on a crate made here,
    /// and node's own test runner.
    #[test]
    fn real_cargo_test_and_node_test_output_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let krate = dir.path().join("tiny");
        std::fs::create_dir_all(krate.join("src")).unwrap();
        std::fs::write(
            krate.join("Cargo.toml"),
            "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
        )
        .unwrap();
        std::fs::write(
            krate.join("src/lib.rs"),
            "#[test] fn a() {}\n#[test] fn b() { panic!(\"no\") }\n#[test] #[ignore] fn c() {}\n",
        )
        .unwrap();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = std::process::Command::new(cargo)
            .args(["test", "--offline", "--quiet"])
            .current_dir(&krate)
            .env("CARGO_TARGET_DIR", dir.path().join("target"))
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(counts(&text), c(1, 1, 1), "{text}");

        let js = dir.path().join("t.test.mjs");
        std::fs::write(
            &js,
            "import test from 'node:test';\nimport assert from 'node:assert';\ntest('a', () => {});\ntest('b', () => assert.equal(1, 2));\ntest('c', { skip: true }, () => {});\n",
        )
        .unwrap();
        let out = std::process::Command::new("node")
            .args(["--test", "--test-reporter=tap"])
            .arg(&js)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(counts(&text), c(1, 1, 1), "{text}");
    }

    #[test]
    fn unittest_reads_ran_and_its_verdict() {
        let ok = "..s\n----------------------------------------------------------------------\nRan 3 tests in 0.001s\n\nOK (skipped=1)\n";
        assert_eq!(
            counts(ok),
            Some(TestCounts {
                passed: 2,
                failed: 0,
                skipped: 1
            })
        );
        let failed = "Ran 4 tests in 0.002s\n\nFAILED (failures=1, errors=1)\n";
        assert_eq!(
            counts(failed),
            Some(TestCounts {
                passed: 2,
                failed: 2,
                skipped: 0
            })
        );
        assert_eq!(counts("Ran the build\nall good\n"), None);
    }

    #[test]
    fn plain_counts_and_no_counts() {
        assert_eq!(counts("make check: 12 passed, 3 failed"), c(12, 3, 0));
        assert_eq!(counts("all good\nexit 0"), None);
        // A word that merely ends like a count word is not one.
        assert_eq!(count_of("2 xfailed", "failed"), None);
        assert_eq!(count_of("", "passed"), None);
    }
}

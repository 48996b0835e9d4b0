//! A workspace's test files and what each holds (G-51): its tests, the markers that skip
//! tests, and its assertions, counted line by line per language (comment lines left out).
//! The weakened-check verdict compares these counts with the goal's baseline.
//!
//! Counting lines is a heuristic on purpose: it needs no parser per language, it is fast on
//! a large tree, and what it misses (an assertion hidden behind `if false`) the checks' own
//! counts and the reviewer's test diff still show.

use crate::code_lines::{Syntax, code_lines};
use sha2::{Digest, Sha256};
use std::path::Path;

/// What one test file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    pub tests: u64,
    pub skips: u64,
    pub asserts: u64,
}

/// One file as the scan found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    /// Relative to the workspace, `/`-separated.
    pub path: String,
    pub sha256: String,
    pub tally: Tally,
    /// Whether it is a test file (a protected file need not be one).
    pub is_test: bool,
    /// Its text when it is small enough to keep for a diff.
    pub content: Option<String>,
}

/// The most files (and links) a scan looks at; past it the scan says it is incomplete.
const MAX_FILES: usize = 50_000;
/// Larger files are hashed but not counted: no one writes a test file that big by hand.
const TALLY_BYTES: u64 = 1024 * 1024;
/// Larger files are known by their size alone (a hostile tree of huge sparse files would
/// otherwise take hours to hash).
const HASH_BYTES: u64 = 64 * 1024 * 1024;
/// The most one scan reads, all files together; past it the scan says it is incomplete.
const SCAN_BYTES: u64 = 256 * 1024 * 1024;
/// Text kept for the diff, per file.
pub const KEEP_BYTES: usize = 64 * 1024;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Lang {
    Rust,
    Python,
    Js,
    Go,
}

fn lang(path: &Path) -> Option<Lang> {
    match path.extension()?.to_str()? {
        "rs" => Some(Lang::Rust),
        "py" => Some(Lang::Python),
        "js" | "mjs" | "cjs" | "jsx" | "ts" | "mts" | "cts" | "tsx" => Some(Lang::Js),
        "go" => Some(Lang::Go),
        _ => None,
    }
}

/// Whether the path names a test file by the language's convention.
fn named_as_test(rel: &Path, lang: Lang) -> bool {
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let in_test_dir = rel.parent().is_some_and(|p| {
        p.components().any(|c| {
            matches!(
                c.as_os_str().to_str(),
                Some("tests" | "test" | "__tests__" | "spec")
            )
        })
    });
    match lang {
        Lang::Rust => in_test_dir || name.ends_with("_test.rs") || name.ends_with("_tests.rs"),
        Lang::Python => {
            name.starts_with("test_") || name.ends_with("_test.py") || name == "conftest.py"
        }
        Lang::Js => name.contains(".test.") || name.contains(".spec.") || in_test_dir,
        Lang::Go => name.ends_with("_test.go"),
    }
}

/// How often any of `needles` occurs in `line`, each starting at a word boundary (not
/// after a letter, digit, `_`, `$` or `.` unless the needle itself starts with `.`).
fn occurrences(line: &str, needles: &[&str]) -> u64 {
    let mut n = 0;
    for needle in needles {
        let mut from = 0;
        while let Some(i) = line[from..].find(needle) {
            let at = from + i;
            let before = line[..at].chars().next_back();
            let bounded = needle.starts_with('.')
                || before.is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '$' | '.')));
            if bounded {
                n += 1;
            }
            from = at + needle.len();
        }
    }
    n
}

/// Rust assertion macros: `assert!`, `assert_eq!`, `prop_assert_ne!`, `debug_assert!`…
fn rust_asserts(line: &str) -> u64 {
    let mut n = 0;
    let mut from = 0;
    while let Some(i) = line[from..].find("assert") {
        let at = from + i;
        let rest = &line[at + "assert".len()..];
        let word_end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if rest[word_end..].starts_with('!') {
            n += 1;
        }
        from = at + "assert".len();
    }
    n
}

/// Counts a file's tests, skip markers and assertions in its code alone (comments removed,
/// strings emptied: `code_lines`).
fn tally(text: &str, lang: Lang) -> Tally {
    let syntax = match lang {
        Lang::Rust => Syntax::Rust,
        Lang::Python => Syntax::Python,
        Lang::Js => Syntax::Js,
        Lang::Go => Syntax::Go,
    };
    let mut t = Tally::default();
    for code in code_lines(text, syntax) {
        let line = code.trim();
        match lang {
            Lang::Rust => {
                // Attributes compared without spaces: `# [ ignore ]` is `#[ignore]`.
                let tight: String = line.chars().filter(|c| !c.is_whitespace()).collect();
                t.tests += occurrences(
                    &tight,
                    &[
                        "#[test]",
                        "#[tokio::test",
                        "#[async_std::test",
                        "#[rstest",
                        "#[test_case",
                    ],
                );
                t.skips += occurrences(&tight, &["#[ignore", "#[cfg(any())]", "#[cfg(FALSE)]"]);
                if tight.starts_with("#[cfg_attr") && tight.contains("ignore") {
                    t.skips += 1;
                }
                t.asserts += rust_asserts(line);
            }
            Lang::Python => {
                if line.starts_with("def test") || line.starts_with("async def test") {
                    t.tests += 1;
                }
                t.skips += occurrences(
                    line,
                    &[
                        // `pytest.mark.skip` and `mark.skip` (after `from pytest import mark`).
                        ".mark.skip",
                        "mark.skip",
                        ".mark.xfail",
                        "mark.xfail",
                        "unittest.skip",
                        "expectedFailure",
                        "pytest.skip(",
                        "pytest.xfail(",
                        "importorskip(",
                        ".skipTest(",
                    ],
                );
                if line.starts_with("assert ") || line.starts_with("assert(") {
                    t.asserts += 1;
                }
                t.asserts += occurrences(line, &["self.assert", "pytest.raises("]);
            }
            Lang::Js => {
                t.tests += occurrences(
                    line,
                    &[
                        "test(",
                        "it(",
                        "test.only(",
                        "it.only(",
                        "test.skip(",
                        "it.skip(",
                        "xit(",
                        "xtest(",
                        "test.todo(",
                        "it.todo(",
                    ],
                );
                t.skips += occurrences(
                    line,
                    &[
                        ".skip",
                        ".todo(",
                        "xit(",
                        "xtest(",
                        "xdescribe(",
                        "skip:",
                        "todo:",
                    ],
                );
                t.asserts += occurrences(line, &["expect(", "assert(", "assert.", "t.assert"]);
            }
            Lang::Go => {
                if line.starts_with("func Test") {
                    t.tests += 1;
                }
                t.skips += occurrences(line, &["t.Skip"]);
                t.asserts += occurrences(
                    line,
                    &["t.Error", "t.Fatal", "t.Fail", "assert.", "require."],
                );
            }
        }
    }
    t
}

/// The hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads one entry of the workspace as the scan sees it: a file (counted when small, hashed
/// when not huge), or a link (known by where it leads; never followed). `None` when it is
/// missing, unreadable or something else (a FIFO is never opened).
pub fn read_one(workspace: &Path, rel: &str) -> Option<Scanned> {
    let full = workspace.join(rel);
    let meta = std::fs::symlink_metadata(&full).ok()?;
    let by_name = lang(Path::new(rel)).is_some_and(|l| named_as_test(Path::new(rel), l));
    let plain = |sha256: String| Scanned {
        path: rel.to_string(),
        sha256,
        tally: Tally::default(),
        is_test: by_name,
        content: None,
    };
    if meta.file_type().is_symlink() {
        let to = std::fs::read_link(&full).ok()?;
        let mut bytes = b"link:".to_vec();
        bytes.extend_from_slice(to.as_os_str().as_encoded_bytes());
        return Some(plain(sha256_hex(&bytes)));
    }
    if !meta.is_file() {
        return None;
    }
    if meta.len() <= TALLY_BYTES {
        let bytes = std::fs::read(&full).ok()?;
        return Some(judge(rel, &bytes));
    }
    if meta.len() > HASH_BYTES {
        return Some(plain(format!("too-large:{}", meta.len())));
    }
    let mut hasher = Sha256::new();
    let mut file = std::fs::File::open(&full).ok()?;
    std::io::copy(&mut file, &mut hasher).ok()?;
    Some(plain(
        hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    ))
}

fn judge(rel: &str, bytes: &[u8]) -> Scanned {
    let path = Path::new(rel);
    let text = std::str::from_utf8(bytes).ok();
    let (tally, is_test) = match (lang(path), text) {
        (Some(l), Some(text)) => {
            let t = tally(text, l);
            let is_test = named_as_test(path, l) || l == Lang::Rust && t.tests > 0;
            (t, is_test)
        }
        _ => (Tally::default(), false),
    };
    Scanned {
        path: rel.to_string(),
        sha256: sha256_hex(bytes),
        tally,
        is_test,
        content: text.filter(|t| t.len() <= KEEP_BYTES).map(str::to_string),
    }
}

/// What a scan found, and why it is incomplete if it is.
#[derive(Debug, Default)]
pub struct Scan {
    pub files: Vec<Scanned>,
    /// Set when the tree held more than a scan reads (files or bytes): what was left out
    /// cannot be compared.
    pub incomplete: Option<String>,
}

/// The test files of the workspace, and the files and links `also` picks (the protected
/// ones), in path order. `.gitignore` is not honoured (an agent could ignore a file to hide
/// it); `.git` and build output and caches are left out by name; links are read, never
/// followed.
pub fn scan(workspace: &Path, also: impl Fn(&str) -> bool) -> Scan {
    let mut out = Scan::default();
    let walk = ignore::WalkBuilder::new(workspace)
        .hidden(false)
        .git_ignore(false)
        .git_global(false)
        .git_exclude(false)
        .ignore(false)
        .parents(false)
        .follow_links(false)
        .filter_entry(|e| {
            !matches!(
                e.file_name().to_str(),
                Some(
                    "target"
                        | "node_modules"
                        | ".git"
                        | "__pycache__"
                        | ".venv"
                        | "venv"
                        | ".tox"
                        | ".nox"
                        | ".mypy_cache"
                        | ".pytest_cache"
                        | ".ruff_cache"
                        | ".cache"
                        | ".gradle"
                        | ".next"
                        | ".svelte-kit"
                )
            )
        })
        .build();
    let (mut seen, mut read) = (0usize, 0u64);
    for entry in walk.flatten() {
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if !kind.is_file() && !kind.is_symlink() {
            continue;
        }
        seen += 1;
        if seen > MAX_FILES {
            out.incomplete = Some(format!("the workspace holds more than {MAX_FILES} files"));
            break;
        }
        let Ok(rel) = entry.path().strip_prefix(workspace) else {
            continue;
        };
        let Some(rel_text) = rel.to_str() else {
            continue;
        };
        let picked = also(rel_text);
        // A Rust file is a test file when it holds tests, wherever it is; the others by
        // their names.
        let candidate = lang(rel).is_some_and(|l| l == Lang::Rust || named_as_test(rel, l));
        if !picked && !candidate {
            continue;
        }
        read = read.saturating_add(entry.metadata().map_or(0, |m| m.len().min(HASH_BYTES)));
        if read > SCAN_BYTES {
            out.incomplete = Some(format!(
                "its test and protected files hold more than {} MB",
                SCAN_BYTES / (1024 * 1024)
            ));
            break;
        }
        if let Some(s) = read_one(workspace, rel_text).filter(|s| s.is_test || picked) {
            out.files.push(s);
        }
    }
    out.files.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_tests_skips_and_assertions_are_counted_and_comments_are_not() {
        let text = "#[test]\nfn a() { assert_eq!(1, 1); assert!(true); }\n#[test]\n#[ignore]\nfn b() {\n    // assert!(false);\n    prop_assert_ne!(1, 2);\n}\n/*\nassert!(x);\n*/\n#[tokio::test]\nasync fn c() {}\n";
        assert_eq!(
            tally(text, Lang::Rust),
            Tally {
                tests: 3,
                skips: 1,
                asserts: 3
            }
        );
    }

    #[test]
    fn tests_hidden_in_comments_or_strings_and_markers_on_one_line_are_seen() {
        let hidden = "let a = 1; /* gone:\n#[test]\nfn a() { assert!(true); }\n*/\nconst OLD: &str = r#\"\n#[test]\nfn b() { assert!(true); }\n\"#;\n#[test] #[ignore]\nfn c() {}\n# [ ignore ]\n#[cfg(any())]\n#[test]\nfn d() { let s = \"assert!(x)\"; }\n";
        assert_eq!(
            tally(hidden, Lang::Rust),
            Tally {
                tests: 2,
                skips: 3,
                asserts: 0
            }
        );
        let py = "pytestmark = pytest.mark.skip\nx = '''\ndef test_old():\n    assert 1\n'''\ndef test_a():\n    assert 1  # assert 2\n";
        assert_eq!(
            tally(py, Lang::Python),
            Tally {
                tests: 1,
                skips: 1,
                asserts: 1
            }
        );
        let js = "it.skipIf(ci)('a', () => { expect(1).toBe(1); });\n";
        assert_eq!(tally(js, Lang::Js).skips, 1);
    }

    #[test]
    fn python_js_and_go_markers_are_counted() {
        let py = "import pytest\n@pytest.mark.skip(reason='x')\ndef test_a():\n    assert 1 == 1\n# assert 2\ndef test_b(self):\n    self.assertEqual(1, 1)\n    with pytest.raises(ValueError): pass\n";
        assert_eq!(
            tally(py, Lang::Python),
            Tally {
                tests: 2,
                skips: 1,
                asserts: 3
            }
        );
        let js = "test('a', () => { assert.equal(1, 1); });\ntest.skip('b', () => { expect(x).toBe(1); });\nit('c', { skip: true }, () => {});\n// it('d')\nconst submit = (x) => x;\n";
        assert_eq!(
            tally(js, Lang::Js),
            Tally {
                tests: 3,
                skips: 2,
                asserts: 2
            }
        );
        let go = "func TestA(t *testing.T) {\n\tt.Skip(\"later\")\n\tif x != 1 { t.Errorf(\"no\") }\n}\n";
        assert_eq!(
            tally(go, Lang::Go),
            Tally {
                tests: 1,
                skips: 1,
                asserts: 1
            }
        );
    }

    #[test]
    fn links_and_large_files_are_seen_and_a_scan_past_its_budget_says_so() {
        let ws = tempfile::tempdir().unwrap();
        let w = ws.path();
        std::fs::create_dir_all(w.join("helpers")).unwrap();
        std::fs::write(w.join("helpers/plug.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink("helpers/plug.py", w.join("conftest.py")).unwrap();
        let big = std::fs::File::create(w.join("test_big.py")).unwrap();
        big.set_len(3 * 1024 * 1024).unwrap();
        let s = scan(w, |p| p == "conftest.py");
        let paths: Vec<&str> = s.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["conftest.py", "test_big.py"]);
        assert_eq!(s.files[0].sha256, sha256_hex(b"link:helpers/plug.py"));
        assert!(s.files[1].is_test && s.files[1].content.is_none());
        assert!(s.incomplete.is_none());
        // A FIFO named like a test is never opened (reading one would block).
        let made = std::process::Command::new("mkfifo")
            .arg(w.join("test_pipe.py"))
            .status()
            .unwrap();
        assert!(made.success());
        assert!(read_one(w, "test_pipe.py").is_none());
        // Sparse files past the scan's budget: said, not read for hours.
        std::fs::create_dir_all(w.join("junk")).unwrap();
        for i in 0..5 {
            let f = std::fs::File::create(w.join(format!("junk/f{i}_test.py"))).unwrap();
            f.set_len(HASH_BYTES + 1).unwrap();
        }
        let s = scan(w, |_| false);
        assert!(
            s.incomplete
                .as_deref()
                .is_some_and(|w| w.contains("more than 256 MB")),
            "{:?}",
            s.incomplete
        );
    }

    #[test]
    fn the_scan_finds_test_files_by_name_or_by_their_tests_and_skips_ignored_folders() {
        let ws = tempfile::tempdir().unwrap();
        let w = ws.path();
        std::fs::create_dir_all(w.join("src")).unwrap();
        std::fs::create_dir_all(w.join("tests")).unwrap();
        std::fs::create_dir_all(w.join("target/debug")).unwrap();
        std::fs::create_dir_all(w.join("pkg")).unwrap();
        std::fs::write(
            w.join("src/lib.rs"),
            "pub fn f() {}\n#[cfg(test)]\nmod t {\n#[test]\nfn x() { assert!(true); }\n}\n",
        )
        .unwrap();
        std::fs::write(w.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(w.join("tests/api.rs"), "#[test]\nfn y() {}\n").unwrap();
        std::fs::write(w.join("target/debug/gen_test.rs"), "#[test]\nfn z() {}\n").unwrap();
        std::fs::write(
            w.join("pkg/test_parse.py"),
            "def test_p():\n    assert True\n",
        )
        .unwrap();
        std::fs::write(w.join("pkg/util.py"), "def test_helper():\n    pass\n").unwrap();
        std::fs::write(w.join("pkg/sum.test.mjs"), "test('s', () => {});\n").unwrap();
        std::fs::create_dir_all(w.join(".github/workflows")).unwrap();
        std::fs::write(w.join(".github/workflows/ci.yml"), "on: push\n").unwrap();
        std::fs::create_dir_all(w.join(".git")).unwrap();
        // Ignoring a folder hides nothing from the scan.
        std::fs::write(w.join(".gitignore"), "pkg/\n").unwrap();
        std::fs::write(w.join(".git/test_x.py"), "def test_x(): pass\n").unwrap();
        let found: Vec<(String, bool)> = scan(w, |p| p.starts_with(".github/"))
            .files
            .into_iter()
            .map(|s| (s.path, s.is_test))
            .collect();
        let want = [
            (".github/workflows/ci.yml", false),
            ("pkg/sum.test.mjs", true),
            ("pkg/test_parse.py", true),
            ("src/lib.rs", true),
            ("tests/api.rs", true),
        ];
        assert_eq!(found, want.map(|(p, t)| (p.to_string(), t)));
    }
}

//! What a goal's worker may not change without the user (G-52): CI files, the scripts the
//! goal's checks name, and the globs of `goal.protect`. While a goal is active, a file
//! tool's write to one of them asks the user in every permission mode, `auto` included, with
//! no grant covering it (the engine's guard asks, through [`PermissionRule::protects`]).
//! A change made some other way (a shell command) is found at the next completion claim by
//! comparing each protected file with the baseline (G-51).
//!
//! [`PermissionRule::protects`]: waymark_extension::rules::PermissionRule::protects

use globset::{Glob, GlobSet, GlobSetBuilder};
use std::collections::BTreeSet;
use std::path::Path;

/// CI configuration and the test runners' own settings: changing them changes what "the
/// project's checks" mean.
pub const DEFAULT_GLOBS: &[&str] = &[
    ".github/workflows/**",
    ".gitlab-ci.yml",
    ".gitlab-ci/**",
    ".circleci/**",
    ".ci/**",
    ".buildkite/**",
    ".woodpecker.yml",
    ".woodpecker/**",
    ".travis.yml",
    "azure-pipelines.yml",
    "Jenkinsfile",
    // The test runners' own settings: each can make every test pass without touching one
    // (a cargo runner that prints a summary, a pytest hook that skips every body).
    ".cargo/config",
    ".cargo/config.toml",
    "conftest.py",
    "**/conftest.py",
    "pytest.ini",
    "jest.config.*",
    "vitest.config.*",
    ".mocharc*",
    "setup.cfg",
    "tox.ini",
    "rust-toolchain",
    "rust-toolchain.toml",
    "sitecustomize.py",
    "**/sitecustomize.py",
    "usercustomize.py",
];

/// A `goal.protect` glob that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("goal.protect: `{glob}` is not a glob: {reason}")]
pub struct BadGlob {
    pub glob: String,
    pub reason: String,
}

/// The protected set of one goal.
#[derive(Debug)]
pub struct Protected {
    globs: GlobSet,
    /// Files a check names, relative to the workspace.
    named: BTreeSet<String>,
}

impl Protected {
    /// The set for a goal with these checks, under these `goal.protect` globs. A glob that
    /// does not parse is an error naming it.
    pub fn new(
        user_globs: &[String],
        checks: &[String],
        workspace: &Path,
    ) -> Result<Protected, BadGlob> {
        let bad = |glob: &str, e: globset::Error| BadGlob {
            glob: glob.escape_debug().to_string(),
            reason: e.to_string(),
        };
        let mut b = GlobSetBuilder::new();
        for g in DEFAULT_GLOBS {
            b.add(Glob::new(g).map_err(|e| bad(g, e))?);
        }
        for g in user_globs {
            let glob = globset::GlobBuilder::new(g.trim_start_matches("./"))
                .literal_separator(true)
                .build()
                .map_err(|e| bad(g, e))?;
            b.add(glob);
            // `dir/` and `dir` protect what is inside too.
            let inside = format!("{}/**", g.trim_start_matches("./").trim_end_matches('/'));
            if let Ok(glob) = Glob::new(&inside) {
                b.add(glob);
            }
        }
        let globs = b.build().map_err(|e| bad("(all of them together)", e))?;
        let named = checks.iter().flat_map(|c| named_by(c, workspace)).collect();
        Ok(Protected { globs, named })
    }

    /// Whether `rel` (relative to the workspace, `/`-separated) is protected.
    pub fn matches(&self, rel: &str) -> bool {
        self.named.contains(rel) || self.globs.is_match(rel)
    }
}

/// Programs that run the script named after their options (`sh ./check.sh`,
/// `python3 tests/run.py`).
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "python", "python3", "node", "deno", "ruby", "perl", "php",
    "pwsh", "tclsh", "lua",
];

/// The files of the workspace a check command names as what it runs, whether they exist now
/// or not (one deleted and written again is still the check's): a command that is a path
/// (`./scripts/check.sh`), the script an interpreter runs (`sh ci/test.sh`), a settings file
/// given with `--config`/`-c` (`pytest -c ci/pytest.ini`), and the file a task runner reads
/// (`Makefile` for `make`, `package.json` for `npm`, `justfile`, `tox.ini`); each normalised,
/// and also where a link leads. Operands the check merely tests (`test -f out.txt`) are not
/// the check's: the goal's work may be to make them.
fn named_by(check: &str, workspace: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |word: &str| {
        let Some(rel) = normalize(word, workspace) else {
            return;
        };
        // Where a link leads, if inside the workspace: a write is judged where it lands.
        if let (Ok(real), Ok(ws)) = (
            workspace.join(&rel).canonicalize(),
            workspace.canonicalize(),
        ) && let Some(to) = real.strip_prefix(&ws).ok().and_then(|p| p.to_str())
            && to != rel
        {
            out.push(to.to_string());
        }
        out.push(rel);
    };
    for segment in check.split([';', '&', '|', '(', ')', '\n']) {
        let words: Vec<&str> = segment
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
            .filter(|w| !w.is_empty())
            .collect();
        // `VAR=value` before the command, and `env`/`exec`/`time`/`nohup` in front of it.
        let Some(at) = words.iter().position(|w| {
            (!w.contains('=') || w.starts_with('-'))
                && !matches!(*w, "env" | "exec" | "time" | "nohup" | "command")
        }) else {
            continue;
        };
        let (cmd, rest) = (words[at], &words[at + 1..]);
        let program = cmd.rsplit('/').next().unwrap_or(cmd);
        if cmd.contains('/') {
            add(cmd);
        }
        let runner_files: &[&str] = match program {
            "make" | "gmake" => &["Makefile", "makefile", "GNUmakefile"],
            "npm" | "yarn" | "pnpm" | "bun" => &["package.json"],
            "just" => &["justfile", "Justfile", ".justfile"],
            "tox" => &["tox.ini"],
            "nox" => &["noxfile.py"],
            _ => &[],
        };
        for f in runner_files {
            add(f);
        }
        if INTERPRETERS.contains(&program) {
            // The first operand after the options; `-c`/`-e` take the inline script,
            // whose own first word is then the script it runs; `-m` names a module.
            let mut it = rest.iter();
            while let Some(w) = it.next() {
                match *w {
                    "-m" => break,
                    "-c" | "-e" => {
                        if let Some(inline) = it.next() {
                            add(inline);
                        }
                        break;
                    }
                    w if w.starts_with('-') => {}
                    w => {
                        add(w);
                        break;
                    }
                }
            }
            continue;
        }
        // A settings file the check reads.
        let mut it = rest.iter();
        while let Some(w) = it.next() {
            if let Some(v) = w
                .strip_prefix("--config=")
                .or_else(|| w.strip_prefix("--rcfile="))
            {
                add(v);
            } else if matches!(*w, "--config" | "-c" | "--rcfile" | "--config-file")
                && let Some(v) = it.next()
            {
                add(v);
            }
        }
    }
    out
}

/// `word` as a path relative to the workspace, `/`-separated with no `.` or empty parts;
/// `None` for an option, a path leaving the workspace, or an absolute path outside it.
fn normalize(word: &str, workspace: &Path) -> Option<String> {
    if word.is_empty() || word.starts_with('-') {
        return None;
    }
    let rel = if word.starts_with('/') {
        let ws = workspace.to_str()?;
        word.strip_prefix(ws)?.strip_prefix('/')?
    } else {
        word
    };
    let mut parts = Vec::new();
    for p in rel.split('/') {
        match p {
            "" | "." => {}
            ".." => return None,
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_files_check_scripts_and_user_globs_are_protected_and_nothing_else() {
        let ws = tempfile::tempdir().unwrap();
        let w = ws.path();
        std::fs::create_dir_all(w.join("scripts")).unwrap();
        std::fs::write(w.join("scripts/check.sh"), "exit 0").unwrap();
        std::fs::write(w.join("Makefile"), "check:\n\ttrue\n").unwrap();
        std::fs::write(w.join("package.json"), "{}").unwrap();
        let p = Protected::new(
            &["fixtures/".into(), "*.snap".into()],
            &["./scripts/check.sh --all && make check".into()],
            w,
        )
        .unwrap();
        for yes in [
            ".github/workflows/ci.yml",
            ".cargo/config.toml",
            "pkg/conftest.py",
            "scripts/check.sh",
            "Makefile",
            "fixtures/a/b.json",
            "x.snap",
        ] {
            assert!(p.matches(yes), "{yes}");
        }
        // `npm` is not in this check; `*.snap` does not cross folders.
        for no in [
            "package.json",
            "src/lib.rs",
            "scripts/other.sh",
            "a/x.snap",
            "../Makefile",
        ] {
            assert!(!p.matches(no), "{no}");
        }
    }

    #[test]
    fn a_glob_that_does_not_parse_is_named() {
        let ws = tempfile::tempdir().unwrap();
        let e = Protected::new(&["src/[".into()], &[], ws.path()).unwrap_err();
        assert_eq!(e.glob, "src/[");
        assert!(
            e.to_string()
                .starts_with("goal.protect: `src/[` is not a glob"),
            "{e}"
        );
    }
}

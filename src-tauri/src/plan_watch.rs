//! Live Plan tab (PM-23): watches the open session's artifacts folder (not the file, so an
//! editor's write-to-temp-then-rename is seen) and pushes the re-rendered plan.

use notify_debouncer_mini::{DebounceEventResult, Debouncer, new_debouncer, notify};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Quiet period before a burst of file events is handled: short enough to repaint well
/// inside 100 ms, long enough to coalesce a save's create/write/rename.
const DEBOUNCE: Duration = Duration::from_millis(20);

/// The rendered plan file as pushed to the UI: at most 512 KiB rendered, with a note
/// when the rest is left out (see [`waymark_runtime::plan::live_plan`]).
pub type PlanContent = waymark_runtime::plan::LivePlan;

/// Reads and renders the plan file, known secrets hidden (no markdown when it does not
/// exist, is cut or hides a secret).
pub fn read(path: &Path, secrets: &waymark_runtime::logging::Secrets) -> PlanContent {
    waymark_runtime::plan::live_plan(path, &secrets())
}

/// A running watch; dropping it stops watching.
pub struct PlanWatch {
    pub session_id: String,
    _debouncer: Debouncer<notify::RecommendedWatcher>,
}

impl PlanWatch {
    /// Calls `on_change` with the new content whenever `plan` changes.
    pub fn start(
        session_id: &str,
        plan: PathBuf,
        secrets: waymark_runtime::logging::Secrets,
        on_change: impl Fn(PlanContent) + Send + 'static,
    ) -> notify::Result<PlanWatch> {
        let folder = plan
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let name = plan.file_name().map(|n| n.to_os_string());
        let mut last: Option<PlanContent> = None;
        let mut debouncer = new_debouncer(DEBOUNCE, move |res: DebounceEventResult| {
            let Ok(events) = res else { return };
            if !events.iter().any(|e| e.path.file_name() == name.as_deref()) {
                return;
            }
            let content = read(&plan, &secrets);
            if last.as_ref() != Some(&content) {
                last = Some(content.clone());
                on_change(content);
            }
        })?;
        std::fs::create_dir_all(&folder).map_err(notify::Error::io)?;
        debouncer
            .watcher()
            .watch(&folder, notify::RecursiveMode::NonRecursive)?;
        Ok(PlanWatch {
            session_id: session_id.to_string(),
            _debouncer: debouncer,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn next(rx: &mpsc::Receiver<PlanContent>) -> PlanContent {
        rx.recv_timeout(Duration::from_secs(5)).unwrap()
    }

    #[test]
    fn sees_plain_writes_rename_writes_and_removal() {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("artifacts").join("plan.md");
        let (tx, rx) = mpsc::channel();
        let secrets: waymark_runtime::logging::Secrets =
            std::sync::Arc::new(|| std::sync::Arc::new(Default::default()));
        let _w = PlanWatch::start("s", plan.clone(), secrets, move |c| {
            let _ = tx.send(c);
        })
        .unwrap();
        std::fs::write(&plan, "## Summary\nfirst\n").unwrap();
        let c = next(&rx);
        assert!(c.html.contains("<h2>Summary</h2>"), "{}", c.html);
        // An editor's save: write a temp file beside it, then rename over it.
        let tmp = plan.with_file_name(".plan.md.swp");
        std::fs::write(&tmp, "## Summary\nsecond <script>alert(1)</script>\n").unwrap();
        std::fs::rename(&tmp, &plan).unwrap();
        let c = next(&rx);
        assert!(c.html.contains("second"), "{}", c.html);
        assert!(!c.html.contains("<script"), "{}", c.html);
        // Other files in the folder do not repaint.
        std::fs::write(plan.with_file_name("notes.txt"), "x").unwrap();
        std::fs::remove_file(&plan).unwrap();
        let c = next(&rx);
        assert_eq!(c.markdown, None);
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    }

    /// A model rewriting a huge plan in a tight loop: the bursts are coalesced, and each
    /// repaint renders at most 512 KiB with a note, never the whole file.
    #[test]
    fn bursts_are_debounced_and_huge_plans_are_cut_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("artifacts").join("plan.md");
        let (tx, rx) = mpsc::channel();
        let secrets: waymark_runtime::logging::Secrets =
            std::sync::Arc::new(|| std::sync::Arc::new(Default::default()));
        let _w = PlanWatch::start("s", plan.clone(), secrets, move |c| {
            let _ = tx.send(c);
        })
        .unwrap();
        let step = "- another step of a very long plan\n".repeat(100_000);
        for i in 0..50 {
            std::fs::write(&plan, format!("## Summary\nRound {i}.\n\n{step}")).unwrap();
        }
        let mut seen = vec![next(&rx)];
        while let Ok(c) = rx.recv_timeout(Duration::from_millis(500)) {
            seen.push(c);
        }
        assert!(seen.len() < 25, "{} repaints for 50 writes", seen.len());
        let last = seen.last().unwrap();
        assert!(last.html.contains("Round 49."));
        assert!(last.html.contains("Only the first 512 KiB"));
        assert!(
            last.markdown.is_none(),
            "a cut plan is not offered for editing"
        );
        // A repaint may catch a write half done; none renders more than the cap.
        for c in &seen {
            assert!(c.html.len() < 2 << 20, "{} bytes of HTML", c.html.len());
        }
    }
}

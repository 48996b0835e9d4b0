//! Plan entry keeps the earlier plan file whatever fails (issue 38, item 2; PM-3): the draft
//! is made within the transaction that starts the plan, and a transaction that does not
//! commit puts the earlier file back, even when the failure is the COMMIT itself.

use super::{BACKUP_FILE, PLAN_FILE, prepare_draft};
use waymark_store::{Store, StoreError};

fn artifacts_with_plan() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().join("artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(artifacts.join(PLAN_FILE), "## Summary\nThe earlier plan.\n").unwrap();
    (dir, artifacts)
}

fn as_before(artifacts: &std::path::Path) {
    assert_eq!(
        std::fs::read_to_string(artifacts.join(PLAN_FILE)).unwrap(),
        "## Summary\nThe earlier plan.\n"
    );
    assert!(!artifacts.join(BACKUP_FILE).exists());
}

#[test]
fn a_failed_commit_puts_the_earlier_plan_back() {
    let store = Store::open_in_memory().unwrap();
    let (_dir, artifacts) = artifacts_with_plan();
    let e = store
        .write(1, |tx| {
            prepare_draft(tx, &artifacts).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            // The draft is in place while the transaction runs…
            assert_eq!(
                std::fs::read_to_string(artifacts.join(PLAN_FILE)).unwrap(),
                ""
            );
            // …then the COMMIT fails: a row whose foreign key is checked only at commit.
            tx.conn().execute_batch(
                "PRAGMA defer_foreign_keys = ON;
                 INSERT INTO turns (session_id, message_id, status, started_at)
                 VALUES ('no-such-session', 1, 'running', 0);",
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap_err();
    assert!(e.to_string().contains("FOREIGN KEY"), "{e}");
    as_before(&artifacts);
}

#[test]
fn a_failure_after_the_draft_puts_the_earlier_plan_back() {
    let store = Store::open_in_memory().unwrap();
    let (_dir, artifacts) = artifacts_with_plan();
    let e = store
        .write(1, |tx| {
            prepare_draft(tx, &artifacts).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            Err::<(), _>(StoreError::Corrupt("a later step failed".into()))
        })
        .unwrap_err();
    assert!(e.to_string().contains("a later step failed"), "{e}");
    as_before(&artifacts);
    // Committed, the draft stays and the earlier plan is kept aside.
    store
        .write(2, |tx| {
            prepare_draft(tx, &artifacts).map_err(|e| StoreError::Corrupt(e.to_string()))
        })
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(artifacts.join(PLAN_FILE)).unwrap(),
        ""
    );
    assert!(artifacts.join(BACKUP_FILE).exists());
}

//! The window-state file's guards, kept around the store plugin: what it cannot keep itself.
//! Before the plugin opens the file, it is checked on the open file (a regular file within
//! its cap, never a link, never a FIFO, holding a JSON object) and set aside when it is not;
//! it is made private (0600); and it is written atomically (a new private file, synced,
//! renamed over the old one) instead of the plugin's in-place write, which keeps the default
//! file mode and follows a link.

use serde_json::Value;
use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::CAP;

/// Writes the state file whole, atomically and private to the user.
pub(super) fn write(path: &Path, bytes: &[u8]) -> waymark_runtime::Result<()> {
    waymark_runtime::settings::write_private(path, bytes)
}

/// Moves the file from where an earlier build kept it, when there is none at `to` yet. A
/// file past [`CAP`] or not a regular file stays where it is.
pub(super) fn move_old(from: &Path, to: &Path) {
    if from == to || std::fs::symlink_metadata(to).is_ok() {
        return;
    }
    if std::fs::symlink_metadata(from).is_ok_and(|m| m.file_type().is_file() && m.len() <= CAP) {
        if let Some(dir) = to.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if std::fs::rename(from, to).is_err() {
            // Another file system: copy (within the cap), then keep the old one out of the way.
            if let Ok(bytes) = read_capped(from)
                && waymark_runtime::settings::write_private(to, &bytes).is_ok()
            {
                let _ = std::fs::remove_file(from);
            }
        }
    }
}

/// The bytes of a regular file of at most [`CAP`] bytes, checked and read on one open file
/// that was never a link and never waited on (a FIFO), else why not.
fn read_capped(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        // It holds the user's unsent comments: theirs alone, even when it is set aside.
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    let mut bytes = Vec::new();
    (&mut f).take(CAP + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > CAP {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "too large",
        ));
    }
    Ok(bytes)
}

/// What the window kept at `path`, read on one open file, for the store plugin to hold: the
/// plugin never opens the file itself. Anything but a regular file within [`CAP`] holding a
/// JSON object (a FIFO a read would wait on forever, a link, a huge file, a file cut short)
/// is moved aside under a name no other file has, so start-up never hangs, no link is
/// followed and nothing the user wrote is written over; the state then starts empty, and
/// where the file went is returned. A missing file is an empty state.
pub(super) fn check(
    path: &Path,
    tag: u32,
) -> std::io::Result<(serde_json::Map<String, Value>, Option<PathBuf>)> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    waymark_runtime::settings::sweep_temps(path, waymark_runtime::settings::STALE_TEMP);
    let taken = match read_capped(path) {
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((serde_json::Map::new(), None));
        }
        // What the file is (a link, a socket, not a regular file, too large): set aside.
        Err(e)
            if e.kind() == std::io::ErrorKind::InvalidData
                || matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENXIO)) =>
        {
            None
        }
        // Anything passing (no file handles left, a lease, a disk error): the file stays as
        // it is, and this run keeps no state.
        Err(e) => return Err(e),
    };
    match taken {
        Some(map) => Ok((map, None)),
        None => Ok((serde_json::Map::new(), Some(set_aside(path, tag)?))),
    }
}

/// Moves what is at `path` (whatever it is; a link is moved, not followed) to a new name
/// beside it, never over another file, and returns that name.
fn set_aside(path: &Path, tag: u32) -> std::io::Result<PathBuf> {
    for n in 0..1000u32 {
        let suffix = if n == 0 {
            format!("json.set-aside-{tag}")
        } else {
            format!("json.set-aside-{tag}-{n}")
        };
        let to = path.with_extension(suffix);
        // A hard link fails when the name is taken, so nothing is ever replaced; the link
        // is to the entry itself (a symbolic link is not followed).
        match std::fs::hard_link(path, &to) {
            Ok(()) => {
                std::fs::remove_file(path)?;
                return Ok(to);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) if std::fs::symlink_metadata(&to).is_err() => {
                // A file system without hard links: the name was free just now.
                std::fs::rename(path, &to)?;
                return Ok(to);
            }
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "no free name to set the file aside",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui_state::FILE;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// A write is whole and private, leaves no temporary file, and is what the next start
    /// takes as it is.
    #[test]
    fn a_write_is_whole_private_and_taken_at_the_next_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        write(&path, br#"{"last-session":"s1"}"#).unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(
            names(dir.path()),
            [FILE],
            "no temporary file is left behind"
        );
        let (kept, aside) = check(&path, 1).unwrap();
        assert_eq!(
            (kept.get("last-session"), aside),
            (Some(&Value::from("s1")), None)
        );
    }

    /// When the file cannot be written, the write says so and leaves nothing half-written.
    #[test]
    fn a_failed_write_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        // The file's place taken by a folder: no rename can land there, even as root.
        std::fs::create_dir_all(path.join("x")).unwrap();
        assert!(write(&path, b"{}").is_err());
        assert_eq!(names(dir.path()), [FILE], "no temporary file left");
    }

    /// The file is the user's alone, whether it is new or was there (0644) before.
    #[test]
    fn the_state_file_is_made_private_before_it_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(FILE);
        std::fs::write(&old, r#"{"last-session":"s1"}"#).unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(check(&old, 1).unwrap().1, None);
        assert_eq!(mode(&old), 0o600);
    }

    /// The file an earlier build kept in the plugin's folder moves to the data folder once,
    /// never over a file already there, and never when it is past the cap.
    #[test]
    fn the_old_file_moves_to_the_data_folder_once() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("plugin/ui-state.json");
        std::fs::create_dir_all(old.parent().unwrap()).unwrap();
        std::fs::write(&old, r#"{"last-session":"old"}"#).unwrap();
        let new = dir.path().join("data/ui-state.json");
        move_old(&old, &new);
        assert!(std::fs::read_to_string(&new).unwrap().contains("old"));
        assert!(!old.exists());
        std::fs::write(&old, r#"{"last-session":"older"}"#).unwrap();
        move_old(&old, &new);
        assert!(std::fs::read_to_string(&new).unwrap().contains("\"old\""));
        let huge = dir.path().join("plugin2/ui-state.json");
        std::fs::create_dir_all(huge.parent().unwrap()).unwrap();
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(CAP + 1)
            .unwrap();
        let to = dir.path().join("data2/ui-state.json");
        move_old(&huge, &to);
        assert!(!to.exists() && huge.exists(), "a huge file is not moved");
    }

    /// A FIFO (which the plugin's read would wait on forever), a link (which it would
    /// follow) and a huge or cut-short file are set aside before the plugin opens the file,
    /// and the next write makes a private regular file without touching the link's target.
    #[test]
    fn what_is_not_a_small_regular_file_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f/ui-state.json");
        std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let big = dir.path().join("b/ui-state.json");
        std::fs::create_dir_all(big.parent().unwrap()).unwrap();
        std::fs::File::create(&big)
            .unwrap()
            .set_len(CAP + 1)
            .unwrap();
        std::fs::set_permissions(&big, std::fs::Permissions::from_mode(0o644)).unwrap();
        let cut = dir.path().join("c/ui-state.json");
        std::fs::create_dir_all(cut.parent().unwrap()).unwrap();
        std::fs::write(&cut, r#"{"comment-drafts":{"p1:v1":[{"start":1,"#).unwrap();
        let array = dir.path().join("a/ui-state.json");
        std::fs::create_dir_all(array.parent().unwrap()).unwrap();
        std::fs::write(&array, "[1, 2]").unwrap();
        let link = dir.path().join("l/ui-state.json");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        let target = dir.path().join("elsewhere.json");
        std::fs::write(&target, r#"{"last-session":"theirs"}"#).unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for p in [&fifo, &big, &cut, &array, &link] {
            let (kept, aside) = check(p, 7).unwrap();
            assert!(kept.is_empty());
            let aside = aside.expect("set aside");
            assert_eq!(aside, p.with_extension("json.set-aside-7"));
            assert!(
                std::fs::symlink_metadata(&aside).is_ok(),
                "{}",
                aside.display()
            );
            assert!(
                std::fs::symlink_metadata(p).is_err(),
                "{} is free",
                p.display()
            );
            write(p, br#"{"last-session":"mine"}"#).unwrap();
            assert!(std::fs::symlink_metadata(p).unwrap().file_type().is_file());
            assert_eq!(mode(p), 0o600);
        }
        assert!(
            std::fs::read_to_string(&target).unwrap().contains("theirs"),
            "the link's target is untouched"
        );
        // What was set aside is as private as the file it was.
        assert_eq!(mode(&big.with_extension("json.set-aside-7")), 0o600);
    }

    /// Setting a file aside never replaces one set aside before, by this start or another
    /// with the same process id.
    #[test]
    fn a_file_set_aside_never_replaces_an_earlier_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        for text in ["first {", "second {", "third {"] {
            std::fs::write(&path, text).unwrap();
            check(&path, 7).unwrap();
        }
        let mut kept: Vec<String> = names(dir.path())
            .iter()
            .map(|n| std::fs::read_to_string(dir.path().join(n)).unwrap())
            .collect();
        kept.sort();
        assert_eq!(kept, ["first {", "second {", "third {"]);
    }
}

//! Where things live on disk: the data dir (database, session dirs) and the settings file.

use std::path::{Path, PathBuf};

/// Environment variable overriding the data dir.
pub const DATA_DIR_ENV: &str = "WAYMARK_DATA_DIR";

/// The platform default data dir (`~/.local/share/waymark` on Linux).
pub fn default_data_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("waymark")
}

/// The platform default settings file (`~/.config/waymark/settings.json` on Linux).
pub fn default_config_file() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("waymark")
        .join("settings.json")
}

/// Makes folder `path` private to the user (0700): created as such with any parent it lacks,
/// and narrowed to 0700 when it was there already, whatever its mode was. Everything Waymark
/// keeps in its data folder goes into folders made this way.
pub fn private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)?;
    let m = std::fs::symlink_metadata(path)?;
    if !m.is_dir() {
        return Err(std::io::Error::other(format!(
            "{} is not a folder",
            path.display()
        )));
    }
    if m.permissions().mode() & 0o7777 != 0o700 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// The database file inside a data dir.
pub fn database_file(data_dir: &Path) -> PathBuf {
    data_dir.join("waymark.db")
}

/// A session's own directory (never inside the workspace).
pub fn session_dir(data_dir: &Path, session_id: &str) -> PathBuf {
    data_dir.join("sessions").join(session_id)
}

/// Where sessions' git worktrees are made (G-34).
pub fn worktrees_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("worktrees")
}

/// The session's artifacts folder (the plan file lives here).
pub fn artifacts_dir(session_dir: &Path) -> PathBuf {
    session_dir.join("artifacts")
}

//! Files and folders of the checkpoint store that only the user may read: the store holds
//! copies of the workspace's files.

use std::path::Path;

/// Writes `data` to a new or emptied file at `path` that only the user may read (0600): the
/// store holds copies of the workspace's files.
pub(crate) fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // One an older version left wider is narrowed too.
    use std::os::unix::fs::PermissionsExt as _;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(data)
}

/// Makes folder `path` (and any parent it lacks) private to the user, 0700, whatever it was.
pub(crate) fn private_dir(path: &Path) -> std::io::Result<()> {
    waymark_extension::paths::private_dir(path)
}

//! The workspace folder as one checkpoint or rewind sees it: opened once (reached even when
//! the user owns it but shut themselves out of it) and named by its device and inode. A rewind
//! checks that identity against the one its checkpoint recorded, then takes its undo
//! checkpoint and restores through this same handle: a folder swapped in at the path meanwhile
//! (by a process of the agent's that outlived its turn) is never read or written.

use crate::{CheckpointError, Result};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// The workspace folder, held open.
#[derive(Debug)]
pub struct Root {
    /// Its path, links resolved (for reading files, each checked to be the one listed, and
    /// for messages).
    pub(crate) path: PathBuf,
    pub(crate) fd: OwnedFd,
    /// Its device and inode.
    pub id: (u64, u64),
}

impl Root {
    /// The folder at `workspace` (a link to one is taken as the folder), opened.
    pub fn open(workspace: &Path) -> Result<Root> {
        let io = |e: std::io::Error| CheckpointError::Io {
            path: workspace.display().to_string(),
            source: e,
        };
        let path = workspace.canonicalize().map_err(io)?;
        let fd = crate::access::open_root(&path).map_err(|e| match e {
            rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP => {
                CheckpointError::Invalid(format!("{} is not a folder", workspace.display()))
            }
            e => io(e.into()),
        })?;
        let st = rustix::fs::fstat(&fd).map_err(|e| io(e.into()))?;
        Ok(Root {
            path,
            fd,
            id: (st.st_dev, st.st_ino),
        })
    }

    /// Its identity as a checkpoint's row records it: `<device>:<inode>`.
    pub fn label(&self) -> String {
        format!("{}:{}", self.id.0, self.id.1)
    }

    /// Another handle on the same folder.
    pub(crate) fn handle(&self) -> Result<OwnedFd> {
        self.fd.try_clone().map_err(|e| CheckpointError::Io {
            path: self.path.display().to_string(),
            source: e,
        })
    }
}

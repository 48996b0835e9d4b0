//! Watching the test and protected files while a claim's checks run (G-51): a file changed
//! and put back meanwhile (by a process the agent left running) is the same before and
//! after, so only a watch over the run can tell. The checks themselves write into their
//! scratch layer, never here, so any write seen is someone else's.

use inotify::{Inotify, WatchDescriptor, WatchMask};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// A watch on the folders holding the files judged.
pub(crate) struct During {
    inotify: Inotify,
    dirs: HashMap<WatchDescriptor, String>,
}

impl During {
    /// Starts watching the folders of `files` (relative to `workspace`) and the workspace
    /// itself. `None` where the kernel gives no watch (the before/after comparison stands).
    pub(crate) fn start<'a>(
        workspace: &Path,
        files: impl Iterator<Item = &'a String>,
    ) -> Option<During> {
        let inotify = Inotify::init().ok()?;
        let mut folders: BTreeSet<String> = files
            .map(|f| {
                f.rsplit_once('/')
                    .map_or(String::new(), |(d, _)| d.to_string())
            })
            .collect();
        folders.insert(String::new());
        let mask = WatchMask::MODIFY
            | WatchMask::CLOSE_WRITE
            | WatchMask::ATTRIB
            | WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::DONT_FOLLOW;
        let mut dirs = HashMap::new();
        for d in folders {
            if let Ok(wd) = inotify.watches().add(workspace.join(&d), mask) {
                dirs.insert(wd, d);
            }
        }
        Some(During { inotify, dirs })
    }

    /// Every file written, made, removed or moved in a watched folder since the start,
    /// relative to the workspace.
    pub(crate) fn touched(mut self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut buffer = [0u8; 16 * 1024];
        while let Ok(events) = self.inotify.read_events(&mut buffer) {
            let mut any = false;
            for e in events {
                any = true;
                let (Some(dir), Some(name)) = (self.dirs.get(&e.wd), e.name) else {
                    continue;
                };
                let name = name.to_string_lossy();
                out.insert(if dir.is_empty() {
                    name.into_owned()
                } else {
                    format!("{dir}/{name}")
                });
            }
            if !any {
                break;
            }
        }
        out
    }
}

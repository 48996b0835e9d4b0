//! The log: spans for each session, turn, model call and tool call (with their durations when
//! they close) and events for what went wrong, written to `logs/waymark.log` in the data dir.
//! The file rotates at [`ROTATE_AT`], keeping [`KEEP`] older files. The level comes from
//! `--log-level` or `WAYMARK_LOG` (`error`, `warn`, `info`, `debug`, `trace`, `off`, or a
//! filter such as `waymark_engine=debug`); the default is `warn` (what went wrong, at no cost
//! per turn); `info` adds the spans with their durations.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tracing_subscriber::fmt::MakeWriter;

/// Size at which the log file is rotated.
pub const ROTATE_AT: u64 = 8 * 1024 * 1024;
/// Rotated files kept beside the current one (`waymark.log.1` … `.3`).
pub const KEEP: u32 = 3;
/// Environment variable with the log level or filter.
pub const LEVEL_ENV: &str = "WAYMARK_LOG";

/// Why logging could not start.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("invalid log level `{level}`: {reason} (use error, warn, info, debug, trace or off)")]
    Level { level: String, reason: String },
    #[error("cannot open the log file {path}: {source}")]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("a logger is already installed")]
    Installed,
}

/// Where the log file of a data dir is.
pub fn log_file(data_dir: &Path) -> PathBuf {
    data_dir.join("logs").join("waymark.log")
}

/// The secrets to keep out of the log, as they are known at the time of each record.
pub type Secrets = Arc<dyn Fn() -> Arc<crate::secrets::Redactor> + Send + Sync>;

/// Installs the process-wide logger writing to the data dir's log file, every record with
/// the known secrets replaced. `level` (the `--log-level` option) wins over `WAYMARK_LOG`.
/// With `off`, nothing is written.
pub fn init(data_dir: &Path, level: Option<&str>, secrets: Secrets) -> Result<(), LogError> {
    let env = std::env::var(LEVEL_ENV).ok();
    let level = level
        .map(str::to_string)
        .or(env)
        .unwrap_or_else(|| "warn".into());
    let filter = tracing_subscriber::EnvFilter::builder()
        .parse(&level)
        .map_err(|e| LogError::Level {
            level: level.clone(),
            reason: e.to_string(),
        })?;
    if level.trim() == "off" {
        return Ok(());
    }
    let writer = RotatingFile::open(&log_file(data_dir), secrets)?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(writer)
        .try_init()
        .map_err(|_| LogError::Installed)
}

/// A log file that is renamed to `.1` (and older ones shifted) once it reaches
/// [`ROTATE_AT`].
#[derive(Clone)]
pub struct RotatingFile {
    inner: Arc<Mutex<Rotating>>,
    secrets: Secrets,
}

struct Rotating {
    path: PathBuf,
    file: File,
    len: u64,
}

impl RotatingFile {
    pub fn open(path: &Path, secrets: Secrets) -> Result<RotatingFile, LogError> {
        let file_err = |source| LogError::File {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            crate::paths::private_dir(dir).map_err(file_err)?;
        }
        let file = append(path).map_err(file_err)?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(RotatingFile {
            inner: Arc::new(Mutex::new(Rotating {
                path: path.to_path_buf(),
                file,
                len,
            })),
            secrets,
        })
    }
}

fn append(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    // Private like the database: tool output in the log may be sensitive. Never through a
    // link, and narrowed when an older file was wider.
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(f)
}

impl Rotating {
    fn rotate(&mut self) -> std::io::Result<()> {
        let numbered = |n: u32| {
            let mut p = self.path.clone().into_os_string();
            p.push(format!(".{n}"));
            PathBuf::from(p)
        };
        for n in (1..KEEP).rev() {
            let _ = std::fs::rename(numbered(n), numbered(n + 1));
        }
        std::fs::rename(&self.path, numbered(1))?;
        self.file = append(&self.path)?;
        self.len = 0;
        Ok(())
    }
}

/// One log record's writer: holds the file while the record is written, and writes it with
/// the known secrets replaced (a provider error may echo a key).
pub struct RecordWriter<'a> {
    file: std::sync::MutexGuard<'a, Rotating>,
    secrets: Arc<crate::secrets::Redactor>,
}

impl Write for RecordWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let clean = self.secrets.redact(&text);
        let r = &mut *self.file;
        if r.len > 0 && r.len + clean.len() as u64 > ROTATE_AT {
            r.rotate()?;
        }
        r.file.write_all(clean.as_bytes())?;
        r.len += clean.len() as u64;
        // The whole record was taken (in its redacted form).
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.file.flush()
    }
}

impl<'a> MakeWriter<'a> for RotatingFile {
    type Writer = RecordWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        RecordWriter {
            file: self.inner.lock().unwrap_or_else(|p| p.into_inner()),
            secrets: (self.secrets)(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_secrets() -> Secrets {
        Arc::new(|| Arc::new(crate::secrets::Redactor::default()))
    }

    /// A record quoting a known key (a provider error echoing it) is written redacted.
    #[test]
    fn records_are_written_with_secrets_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("waymark.log");
        let mut r = crate::secrets::Redactor::default();
        r.add("OPENAI_API_KEY", "sk-live-0123456789abcdef");
        let r = Arc::new(r);
        let w = RotatingFile::open(&path, Arc::new(move || r.clone())).unwrap();
        w.make_writer()
            .write_all(b"WARN model call failed: invalid key sk-live-0123456789abcdef\n")
            .unwrap();
        let log = std::fs::read_to_string(&path).unwrap();
        assert!(!log.contains("sk-live-0123456789abcdef"), "{log}");
        assert!(log.contains("[REDACTED:OPENAI_API_KEY]"), "{log}");
    }

    #[test]
    fn the_file_rotates_and_keeps_three_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/waymark.log");
        let w = RotatingFile::open(&path, no_secrets()).unwrap();
        let line = vec![b'x'; 1024 * 1024];
        for _ in 0..(8 * 5) {
            let mut r = w.make_writer();
            r.write_all(&line).unwrap();
        }
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).ok();
        assert!(size(&path).unwrap() <= ROTATE_AT);
        for n in 1..=KEEP {
            let old = PathBuf::from(format!("{}.{n}", path.display()));
            assert!(
                size(&old).is_some_and(|s| s <= ROTATE_AT),
                "{}",
                old.display()
            );
        }
        assert!(!PathBuf::from(format!("{}.4", path.display())).exists());
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn a_bad_level_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let e = init(dir.path(), Some("loud=["), no_secrets())
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid log level `loud=[`"), "{e}");
    }
}

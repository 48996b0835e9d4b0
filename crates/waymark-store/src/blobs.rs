//! Content blobs: bytes kept by key with their SHA-256, checked when read (a plan's frozen
//! revisions are kept here).

use super::{Result, StoreError, Tx};
use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Tx<'_> {
    /// Keeps `bytes` under `key` (once: the same bytes again are a no-op, other bytes are
    /// refused); returns their hash.
    pub fn put_blob(&mut self, key: &str, bytes: &[u8]) -> Result<String> {
        let sha = sha256_hex(bytes);
        let now = self.now();
        let existing: Option<String> = self
            .conn()
            .query_row("SELECT sha256 FROM blobs WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()?;
        match existing {
            Some(s) if s == sha => {}
            Some(_) => {
                return Err(StoreError::Corrupt(format!(
                    "blob {key} already holds other content"
                )));
            }
            None => {
                self.conn().execute(
                    "INSERT INTO blobs (key, sha256, bytes, created_at) VALUES (?1, ?2, ?3, ?4)",
                    params![key, sha, bytes, now],
                )?;
            }
        }
        Ok(sha)
    }
}

/// A blob's content, checked against its recorded hash.
pub fn get(conn: &Connection, key: &str) -> Result<Option<Vec<u8>>> {
    let row: Option<(Vec<u8>, String)> = conn
        .query_row(
            "SELECT bytes, sha256 FROM blobs WHERE key = ?1",
            [key],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    match row {
        None => Ok(None),
        Some((bytes, sha)) if sha256_hex(&bytes) == sha => Ok(Some(bytes)),
        Some(_) => Err(StoreError::Corrupt(format!(
            "blob {key} does not match its sha256"
        ))),
    }
}

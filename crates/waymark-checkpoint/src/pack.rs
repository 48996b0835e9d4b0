//! Many new objects at once (the first checkpoint of a tree) go into one pack file with its
//! index, in git's own formats (pack version 2, index version 2), instead of a file each:
//! ten thousand loose objects cost ten thousand inodes and renames, which on a busy file
//! system takes seconds. The store reads packs and loose objects alike (`gix-odb`).
//!
//! While a pack is written its entries go to a temporary file in `objects/pack/`; the pack
//! and its index appear under their final names only when complete (the pack first, so an
//! index never names a pack that is not there). A pack left unfinished (an error, a crash)
//! leaves only temporary files, removed at the next pack.

use gix_hash::ObjectId;
use std::collections::HashSet;
use std::io::{BufWriter, Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// A pack being written.
pub(crate) struct PackWriter {
    dir: PathBuf,
    body_path: PathBuf,
    body: BufWriter<std::fs::File>,
    /// Where the next entry starts in the finished pack (after its 12-byte header).
    offset: u64,
    entries: Vec<(ObjectId, u32, u64)>,
    ids: HashSet<ObjectId>,
}

const TEMP_PREFIX: &str = "tmp-waymark-";

fn io(path: &Path) -> impl Fn(std::io::Error) -> std::io::Error + '_ {
    move |e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// A pack entry for an object: its type and size header, then its content deflated.
pub(crate) fn entry(kind: gix_object::Kind, data: &[u8]) -> std::io::Result<Vec<u8>> {
    let code: u8 = match kind {
        gix_object::Kind::Commit => 1,
        gix_object::Kind::Tree => 2,
        gix_object::Kind::Blob => 3,
        gix_object::Kind::Tag => 4,
    };
    let mut out = Vec::with_capacity(data.len() / 2 + 32);
    let mut size = data.len() as u64;
    let mut byte = (code << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size > 0 {
        out.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    out.push(byte);
    let mut z = gix_zlib::stream::deflate::Write::new(out, gix_zlib::Compression::BEST_SPEED);
    z.write_all(data)?;
    z.flush()?;
    Ok(z.into_inner())
}

impl PackWriter {
    /// Starts a pack in `objects/pack/` of the store's `objects` folder.
    pub(crate) fn start(objects: &Path) -> std::io::Result<PackWriter> {
        let dir = objects.join("pack");
        crate::private::private_dir(&dir).map_err(io(&dir))?;
        // What an unfinished pack left behind.
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let body_path = dir.join(format!("{TEMP_PREFIX}{:016x}", fastrand::u64(..)));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&body_path)
            .map_err(io(&body_path))?;
        Ok(PackWriter {
            dir,
            body_path,
            body: BufWriter::with_capacity(1 << 20, file),
            offset: 12,
            entries: Vec::new(),
            ids: HashSet::new(),
        })
    }

    pub(crate) fn has(&self, id: &ObjectId) -> bool {
        self.ids.contains(id)
    }

    /// Adds object `id` as its pack `entry` (see [`entry`]); an object already in the pack
    /// is not added again.
    pub(crate) fn add(&mut self, id: ObjectId, entry: &[u8]) -> std::io::Result<()> {
        if !self.ids.insert(id) {
            return Ok(());
        }
        self.body.write_all(entry).map_err(io(&self.body_path))?;
        self.entries.push((id, crc32fast::hash(entry), self.offset));
        self.offset += entry.len() as u64;
        Ok(())
    }

    /// Writes the pack and its index under their final names; nothing when no object was
    /// added.
    pub(crate) fn finish(mut self) -> std::io::Result<()> {
        self.body.flush().map_err(io(&self.body_path))?;
        if self.entries.is_empty() {
            let _ = std::fs::remove_file(&self.body_path);
            return Ok(());
        }
        let result = self.write_out();
        let _ = std::fs::remove_file(&self.body_path);
        result
    }

    fn write_out(&mut self) -> std::io::Result<()> {
        let count = u32::try_from(self.entries.len())
            .map_err(|_| std::io::Error::other("too many objects for one pack"))?;
        // The pack: header, the entries as written, and the checksum of it all.
        let pack_tmp = self
            .dir
            .join(format!("{TEMP_PREFIX}{:016x}.pack", fastrand::u64(..)));
        let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
        {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&pack_tmp)
                .map_err(io(&pack_tmp))?;
            let mut out = BufWriter::with_capacity(1 << 20, file);
            let mut header = Vec::with_capacity(12);
            header.extend_from_slice(b"PACK");
            header.extend_from_slice(&2u32.to_be_bytes());
            header.extend_from_slice(&count.to_be_bytes());
            hasher.update(&header);
            out.write_all(&header).map_err(io(&pack_tmp))?;
            let mut body = std::fs::File::open(&self.body_path).map_err(io(&self.body_path))?;
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = body.read(&mut buf).map_err(io(&self.body_path))?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
                out.write_all(&buf[..n]).map_err(io(&pack_tmp))?;
            }
            let sum = hasher
                .try_finalize()
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            out.write_all(sum.as_bytes()).map_err(io(&pack_tmp))?;
            out.flush().map_err(io(&pack_tmp))?;
            self.finish_with(&pack_tmp, sum)
        }
    }

    fn finish_with(&mut self, pack_tmp: &Path, sum: ObjectId) -> std::io::Result<()> {
        let idx = index(&mut self.entries, sum)?;
        let name = format!("pack-{}", sum.to_hex());
        let idx_tmp = self
            .dir
            .join(format!("{TEMP_PREFIX}{:016x}.idx", fastrand::u64(..)));
        crate::private::write_private(&idx_tmp, &idx).map_err(io(&idx_tmp))?;
        let pack = self.dir.join(format!("{name}.pack"));
        let idx_path = self.dir.join(format!("{name}.idx"));
        std::fs::rename(pack_tmp, &pack).map_err(io(&pack))?;
        std::fs::rename(&idx_tmp, &idx_path).map_err(io(&idx_path))
    }
}

impl Drop for PackWriter {
    /// A pack not finished leaves nothing behind.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.body_path);
    }
}

/// The version 2 index of a pack whose checksum is `pack_sum`.
fn index(entries: &mut [(ObjectId, u32, u64)], pack_sum: ObjectId) -> std::io::Result<Vec<u8>> {
    entries.sort_by_key(|e| e.0);
    let n = entries.len();
    let mut out = Vec::with_capacity(8 + 1024 + n * 28 + 40);
    out.extend_from_slice(&[0xff, b't', b'O', b'c']);
    out.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for (id, _, _) in entries.iter() {
        fanout[id.as_bytes()[0] as usize] += 1;
    }
    let mut total = 0u32;
    for f in fanout {
        total += f;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for (id, _, _) in entries.iter() {
        out.extend_from_slice(id.as_bytes());
    }
    for (_, crc, _) in entries.iter() {
        out.extend_from_slice(&crc.to_be_bytes());
    }
    let mut large = Vec::new();
    for (_, _, offset) in entries.iter() {
        let small = if *offset < 0x8000_0000 {
            *offset as u32
        } else {
            let at = u32::try_from(large.len())
                .ok()
                .filter(|at| *at < 0x8000_0000)
                .ok_or_else(|| std::io::Error::other("the pack is too large to index"))?;
            large.push(*offset);
            0x8000_0000 | at
        };
        out.extend_from_slice(&small.to_be_bytes());
    }
    for offset in large {
        out.extend_from_slice(&offset.to_be_bytes());
    }
    out.extend_from_slice(pack_sum.as_bytes());
    let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
    hasher.update(&out);
    let sum = hasher
        .try_finalize()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    out.extend_from_slice(sum.as_bytes());
    Ok(out)
}

/// The ids an index of ours lists, or `None` when it is not one (then it is left alone).
pub(crate) fn ids_of_index(path: &Path) -> Option<Vec<ObjectId>> {
    let data = std::fs::read(path).ok()?;
    if data.len() < 8 + 1024 || data[..4] != [0xff, b't', b'O', b'c'] || data[4..8] != [0, 0, 0, 2]
    {
        return None;
    }
    let n = u32::from_be_bytes(data[8 + 255 * 4..8 + 256 * 4].try_into().ok()?) as usize;
    let ids = data.get(8 + 1024..8 + 1024 + n.checked_mul(20)?)?;
    Some(
        ids.chunks_exact(20)
            .map(ObjectId::from_bytes_or_panic)
            .collect(),
    )
}

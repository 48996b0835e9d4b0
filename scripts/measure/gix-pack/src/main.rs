//! Measures writing one pack and its index for a first checkpoint (10,000 files, 200 MB):
//! Waymark's own writer (pack.rs: entries deflated once, the index built from the ids and
//! CRCs it already has) against gix-pack's (`data::output::bytes::FromEntriesIter` for the
//! pack, `Bundle::write_to_directory` for the index, which reads the pack back), on the same
//! deflated entries, and checks that the two indexes are the same bytes.
//!
//! `cargo run --release --manifest-path scripts/measure/gix-pack/Cargo.toml --target-dir /tmp/measure-gix-pack`
//! (its own target folder: it is not part of the workspace).
use std::io::Write as _;
use std::time::Instant;

fn blob(i: usize, len: usize) -> Vec<u8> {
    // Source-like text: lines that repeat with variation, about as compressible as code.
    let mut s = Vec::with_capacity(len);
    let mut n = i as u64 * 2654435761 + 1;
    while s.len() < len {
        n ^= n << 13;
        n ^= n >> 7;
        n ^= n << 17;
        let line = format!(
            "    let value_{} = compute({}, \"{:x}\");\n",
            n % 997,
            n % 10007,
            n
        );
        s.extend_from_slice(line.as_bytes());
    }
    s.truncate(len);
    s
}

fn entry_header(size: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut size = size;
    let mut byte = (3u8 << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size > 0 {
        out.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    out.push(byte);
    out
}

fn deflate(data: &[u8]) -> Vec<u8> {
    let mut z = gix_zlib::stream::deflate::Write::new(
        Vec::with_capacity(data.len() / 2),
        gix_zlib::Compression::BEST_SPEED,
    );
    z.write_all(data).unwrap();
    z.flush().unwrap();
    z.into_inner()
}

fn ours(dir: &std::path::Path, items: &[(gix_hash::ObjectId, usize, Vec<u8>)]) {
    // pack: header, entries, trailer; index from ids, crcs, offsets (as pack.rs does)
    let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
    let f = std::fs::File::create(dir.join("ours.pack")).unwrap();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, f);
    let mut header = b"PACK".to_vec();
    header.extend_from_slice(&2u32.to_be_bytes());
    header.extend_from_slice(&(items.len() as u32).to_be_bytes());
    hasher.update(&header);
    out.write_all(&header).unwrap();
    let mut offset = 12u64;
    let mut entries = Vec::with_capacity(items.len());
    for (id, size, z) in items {
        let mut e = entry_header(*size as u64);
        e.extend_from_slice(z);
        hasher.update(&e);
        out.write_all(&e).unwrap();
        entries.push((*id, crc32fast::hash(&e), offset));
        offset += e.len() as u64;
    }
    let sum = hasher.try_finalize().unwrap();
    out.write_all(sum.as_bytes()).unwrap();
    out.flush().unwrap();
    entries.sort_by_key(|e| e.0);
    let mut idx = vec![0xff, b't', b'O', b'c', 0, 0, 0, 2];
    let mut fanout = [0u32; 256];
    for (id, _, _) in &entries {
        fanout[id.as_bytes()[0] as usize] += 1;
    }
    let mut t = 0u32;
    for f in fanout {
        t += f;
        idx.extend_from_slice(&t.to_be_bytes());
    }
    for (id, _, _) in &entries {
        idx.extend_from_slice(id.as_bytes());
    }
    for (_, c, _) in &entries {
        idx.extend_from_slice(&c.to_be_bytes());
    }
    for (_, _, o) in &entries {
        idx.extend_from_slice(&(*o as u32).to_be_bytes());
    }
    idx.extend_from_slice(sum.as_bytes());
    let mut h = gix_hash::hasher(gix_hash::Kind::Sha1);
    h.update(&idx);
    idx.extend_from_slice(h.try_finalize().unwrap().as_bytes());
    std::fs::write(dir.join("ours.idx"), idx).unwrap();
}

fn gix(dir: &std::path::Path, items: &[(gix_hash::ObjectId, usize, Vec<u8>)]) -> (f64, f64) {
    use gix_pack::data::output;
    let t = Instant::now();
    let entries: Vec<output::Entry> = items
        .iter()
        .map(|(id, size, z)| output::Entry {
            id: *id,
            kind: output::entry::Kind::Base(gix_object::Kind::Blob),
            decompressed_size: *size,
            compressed_data: z.clone(),
        })
        .collect();
    let f = std::fs::File::create(dir.join("gix-stream.pack")).unwrap();
    let mut w = output::bytes::FromEntriesIter::new(
        std::iter::once(Ok(entries)),
        std::io::BufWriter::with_capacity(1 << 20, f),
        items.len() as u32,
        gix_pack::data::Version::V2,
        gix_hash::Kind::Sha1,
    );
    for r in &mut w {
        r.unwrap();
    }
    w.into_write().flush().unwrap();
    let pack_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let out_dir = dir.join("gix");
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut r = std::io::BufReader::with_capacity(
        1 << 20,
        std::fs::File::open(dir.join("gix-stream.pack")).unwrap(),
    );
    let stop = std::sync::atomic::AtomicBool::new(false);
    gix_pack::Bundle::write_to_directory(
        &mut r,
        Some(&out_dir),
        &mut gix_utils::progress::Discard,
        &stop,
        None::<gix_object::find::Never>,
        gix_hash::Kind::Sha1,
        gix_pack::bundle::write::Options {
            thread_limit: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    (pack_s, t.elapsed().as_secs_f64())
}

fn main() {
    let n = 10_000;
    let len = 20_000;
    let dir = std::env::temp_dir().join("gixpack-bench-out");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let blobs: Vec<Vec<u8>> = (0..n).map(|i| blob(i, len)).collect();
    let t = Instant::now();
    let items: Vec<(gix_hash::ObjectId, usize, Vec<u8>)> = blobs
        .iter()
        .map(|b| {
            let id =
                gix_object::compute_hash(gix_hash::Kind::Sha1, gix_object::Kind::Blob, b).unwrap();
            (id, b.len(), deflate(b))
        })
        .collect();
    let shared = t.elapsed().as_secs_f64();
    let zbytes: usize = items.iter().map(|i| i.2.len()).sum();
    for round in 0..3 {
        let t = Instant::now();
        ours(&dir, &items);
        let o = t.elapsed().as_secs_f64();
        let (gp, gi) = gix(&dir, &items);
        println!(
            "round {round}: shared (ids + deflate, 1 thread) {shared:.3} s; ours pack+index {o:.3} s; gix pack {gp:.3} s + index (reads the pack back) {gi:.3} s; {} MB in, {} MB deflated",
            n * len / 1_000_000,
            zbytes / 1_000_000
        );
    }
    let a = std::fs::read(dir.join("ours.idx")).unwrap();
    let gdir = dir.join("gix");
    let gidx = std::fs::read_dir(&gdir)
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "idx"))
        .unwrap()
        .path();
    let b = std::fs::read(gidx).unwrap();
    println!("indexes identical: {}", a == b);
}

//! Fifth red-team: a process of the agent's writing a file through a shared memory map
//! changes its content without changing its stat once the page is dirty. The stat cache
//! vouched for the old content: the change was in no checkpoint, and a rewind left it.

use super::*;
use std::io::{BufRead as _, Write as _};

/// A process that maps `file`, dirties its first page (the kernel stamps the times then)
/// and, when told, writes `EVIL` over its start through the map: the file's stat stays.
struct Mapper(
    std::process::Child,
    std::io::BufReader<std::process::ChildStdout>,
);

const MAPPER: &str = r#"
import mmap, sys
f = open(sys.argv[1], "r+b")
m = mmap.mmap(f.fileno(), 0)
m[0:1] = m[0:1]
print("ready", flush=True)
sys.stdin.readline()
m[0:4] = b"EVIL"
print("done", flush=True)
sys.stdin.readline()
"#;

impl Mapper {
    fn start(file: &Path) -> Mapper {
        let mut c = std::process::Command::new("python3")
            .arg("-c")
            .arg(MAPPER)
            .arg(file)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 (installed by scripts/setup.sh)");
        let out = std::io::BufReader::new(c.stdout.take().unwrap());
        let mut m = Mapper(c, out);
        m.expect("ready");
        m
    }

    fn expect(&mut self, what: &str) {
        let mut line = String::new();
        self.1.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), what);
    }

    fn tell(&mut self) {
        writeln!(self.0.stdin.as_mut().unwrap()).unwrap();
    }
}

impl Drop for Mapper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_file_written_through_a_memory_map_is_in_the_next_checkpoint() {
    let f = fixture();
    write(&f.ws, "config.txt", "SAFE=1\n");
    let before = snap(&f);
    let stat = |p: &Path| {
        let m = std::fs::symlink_metadata(p).unwrap();
        use std::os::unix::fs::MetadataExt as _;
        (
            m.ino(),
            m.size(),
            m.mtime_nsec(),
            m.mtime(),
            m.ctime(),
            m.ctime_nsec(),
        )
    };
    let file = f.ws.join("config.txt");
    // The case needs the page to stay dirty from the first touch to the write through the
    // map. A writeback in between (another process's `sync` under load) cleans it, and the
    // write then stamps the times like any other: the case was not reached, so it is made
    // again, a few times at most.
    let mut tries = 0;
    let (mapper, seen) = loop {
        write(&f.ws, "config.txt", "SAFE=1\n");
        let mut mapper = Mapper::start(&file);
        // Past the clock's step: the old rule vouched for the file from here on.
        std::thread::sleep(std::time::Duration::from_millis(2_500));
        let seen = snap(&f);
        let stamped = stat(&file);
        mapper.tell();
        mapper.expect("done");
        if stat(&file) == stamped {
            break (mapper, seen);
        }
        tries += 1;
        assert!(
            tries < 4,
            "the page was written back between the touch and the write four times over"
        );
    };
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "EVIL=1\n");
    let after = snap(&f);
    assert_ne!(after.tree, seen.tree, "the change is in the checkpoint");
    // Rewinding to it gives back the file as it is now, and to the first, the safe one.
    write(&f.ws, "config.txt", "OTHER\n");
    rewind(&f, &after);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "EVIL=1\n");
    drop(mapper);
    rewind(&f, &before);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "SAFE=1\n");
}

#[test]
fn no_stat_vouches_for_a_file_on_a_volatile_file_system() {
    let mut c = crate::cache::Cache::default();
    let st = rustix::fs::stat("/").unwrap();
    let stat = crate::cache::Stat::of(&st);
    let id = ObjectId::null(gix_hash::Kind::Sha1);
    let mut files = std::collections::HashMap::new();
    files.insert("f".to_string(), (stat, id));
    c = c.next(files, &[]);
    // Saving stamps when the cache was made.
    let dir = tempfile::tempdir().unwrap();
    c.save(&dir.path().join("stat-cache")).unwrap();
    // `/`'s times are long past: the stat vouches on the trusted device alone; no stat
    // vouches on a volatile file system (none trusted), nor for a file mounted from another.
    c.set_trusted(Some(st.st_dev));
    assert_eq!(c.blob("f", &stat, st.st_dev), Some(id));
    assert_eq!(c.blob("f", &stat, st.st_dev + 1), None);
    c.set_trusted(None);
    assert_eq!(c.blob("f", &stat, st.st_dev), None);
    // A tmpfs is seen as one.
    if let Ok(shm) = rustix::fs::openat(
        rustix::fs::CWD,
        "/dev/shm",
        crate::access::DIR,
        rustix::fs::Mode::empty(),
    ) {
        let tmpfs = rustix::fs::fstatfs(&shm).is_ok_and(|s| s.f_type as u64 == 0x0102_1994);
        assert_eq!(crate::snapshot::volatile(&shm), tmpfs);
    }
}

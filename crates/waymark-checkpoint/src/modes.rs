//! The permission bits of a checkpoint's files and folders. A git tree keeps only whether a
//! file is executable, so a checkpoint also stores this record beside its tree (a blob in the
//! same store): a default for each kind of entry (the one most of them have) and every entry
//! that differs from it. A rewind puts each file back with its own bits, so a private file
//! (`0600`) never comes back readable by others. A folder keeps its sticky and set-group-id
//! bits (a shared `1777` folder stays one where no one deletes another's files); a file's
//! set-id bits are never kept.

use std::collections::{BTreeMap, HashMap};

/// What an entry is, for its default bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    File,
    Executable,
    Folder,
}

impl Kind {
    fn tag(self) -> char {
        match self {
            Kind::File => 'f',
            Kind::Executable => 'x',
            Kind::Folder => 'd',
        }
    }

    fn of_tag(c: &str) -> Option<Kind> {
        match c {
            "f" => Some(Kind::File),
            "x" => Some(Kind::Executable),
            "d" => Some(Kind::Folder),
            _ => None,
        }
    }

    /// The bits of an entry of this kind a record keeps.
    fn kept(self) -> u32 {
        match self {
            Kind::File | Kind::Executable => 0o777,
            Kind::Folder => FOLDER_BITS,
        }
    }

    /// The bits an entry of this kind has when nothing says otherwise.
    fn fallback(self) -> u32 {
        match self {
            Kind::File => 0o644,
            Kind::Executable | Kind::Folder => 0o755,
        }
    }
}

/// The bits a folder's record keeps: its permissions, sticky and set-group-id.
const FOLDER_BITS: u32 = 0o3777;

/// The first line of a record, naming its format.
const HEADER: &str = "waymark-modes 1";

/// The permission bits a checkpoint recorded, by workspace-relative path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Modes {
    defaults: HashMap<Kind, u32>,
    own: BTreeMap<String, u32>,
}

impl Modes {
    /// The record of `entries` (path, kind, `st_mode`).
    pub(crate) fn of<'a>(entries: impl IntoIterator<Item = (&'a str, Kind, u32)>) -> Modes {
        let all: Vec<(&str, Kind, u32)> = entries
            .into_iter()
            .map(|(p, k, m)| (p, k, m & k.kept()))
            .collect();
        let mut counts: HashMap<(Kind, u32), usize> = HashMap::new();
        for (_, k, m) in &all {
            *counts.entry((*k, *m)).or_default() += 1;
        }
        let mut defaults: HashMap<Kind, u32> = HashMap::new();
        for kind in [Kind::File, Kind::Executable, Kind::Folder] {
            let best = counts
                .iter()
                .filter(|((k, _), _)| *k == kind)
                // The most common; on a tie the lowest bits, so the record is the same
                // whatever order the walk found them in.
                .max_by(|((_, ma), na), ((_, mb), nb)| na.cmp(nb).then(mb.cmp(ma)))
                .map(|((_, m), _)| *m)
                .unwrap_or(kind.fallback());
            defaults.insert(kind, best);
        }
        let own = all
            .into_iter()
            .filter(|(_, k, m)| defaults.get(k) != Some(m))
            .map(|(p, _, m)| (p.to_string(), m))
            .collect();
        Modes { defaults, own }
    }

    /// The bits `path` (of `kind`) had.
    pub fn bits(&self, path: &str, kind: Kind) -> u32 {
        self.own
            .get(path)
            .copied()
            .or_else(|| self.defaults.get(&kind).copied())
            .unwrap_or(kind.fallback())
            & kind.kept()
    }

    /// The record as stored: the header, the defaults, then each entry that differs, each
    /// field list ended by a NUL (paths may hold any other character).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = format!("{HEADER}\0").into_bytes();
        for kind in [Kind::File, Kind::Executable, Kind::Folder] {
            let bits = self.defaults.get(&kind).copied().unwrap_or(kind.fallback());
            out.extend_from_slice(format!("{} {bits:o}\0", kind.tag()).as_bytes());
        }
        for (path, bits) in &self.own {
            out.extend_from_slice(format!("{bits:o} {path}\0").as_bytes());
        }
        out
    }

    /// A stored record; `None` when it is not one (then the store is damaged).
    pub(crate) fn decode(data: &[u8]) -> Option<Modes> {
        let text = std::str::from_utf8(data).ok()?;
        let mut fields = text.split('\0');
        if fields.next()? != HEADER {
            return None;
        }
        let bits = |s: &str| u32::from_str_radix(s, 8).ok().filter(|b| *b <= FOLDER_BITS);
        let mut modes = Modes::default();
        for _ in 0..3 {
            let (tag, b) = fields.next()?.split_once(' ')?;
            modes.defaults.insert(Kind::of_tag(tag)?, bits(b)?);
        }
        for field in fields {
            if field.is_empty() {
                continue;
            }
            let (b, path) = field.split_once(' ')?;
            if path.is_empty() {
                return None;
            }
            modes.own.insert(path.to_string(), bits(b)?);
        }
        Some(modes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_keeps_every_entrys_bits_in_a_few_bytes() {
        let entries = [
            ("a.txt", Kind::File, 0o100644),
            ("b.txt", Kind::File, 0o100644),
            ("secret.env", Kind::File, 0o100600),
            ("run.sh", Kind::Executable, 0o100755),
            ("tool", Kind::Executable, 0o104750),
            ("src", Kind::Folder, 0o40755),
            ("private", Kind::Folder, 0o40700),
            ("shared", Kind::Folder, 0o41777),
            ("group", Kind::Folder, 0o42775),
            ("name with\nnewline", Kind::File, 0o100640),
        ];
        let m = Modes::of(entries);
        for (path, kind, mode) in entries {
            let kept = if kind == Kind::Folder { 0o3777 } else { 0o777 };
            assert_eq!(m.bits(path, kind), mode & kept, "{path}");
        }
        let stored = m.encode();
        assert_eq!(Modes::decode(&stored), Some(m.clone()));
        // Only what differs from the defaults is listed.
        assert_eq!(m.own.len(), 6, "{:?}", m.own);
        // A path the record does not know gets its kind's default.
        assert_eq!(m.bits("new.txt", Kind::File), 0o644);
        // Under a umask of 077, everything private is the default: nothing is listed.
        let private = Modes::of([("a", Kind::File, 0o600), ("d", Kind::Folder, 0o700)]);
        assert!(private.own.is_empty());
        assert_eq!(private.bits("b", Kind::File), 0o600);
    }

    #[test]
    fn a_damaged_record_does_not_decode() {
        for bad in [
            &b""[..],
            b"waymark-modes 2\x00f 644\x00x 755\x00d 755\x00",
            b"waymark-modes 1\x00f 644\x00x 755\x00",
            b"waymark-modes 1\x00f 644\x00x 755\x00d 4755\x00",
            b"waymark-modes 1\x00f 644\x00x 755\x00d 755\x00999 a\x00",
            b"waymark-modes 1\x00f 644\x00x 755\x00d 755\x00644 \x00",
            b"waymark-modes 1\x00q 644\x00x 755\x00d 755\x00",
            b"\xff\xfe",
        ] {
            assert_eq!(Modes::decode(bad), None, "{bad:?}");
        }
    }
}

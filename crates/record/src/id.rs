//! Record ids, and the names of the files beside a record.
//!
//! A record's id becomes a file name (`<id>.json`, `<id>.log`, ...), and
//! ids arrive from places numalab does not trust: records copied from
//! elsewhere, a guest's channel, a plan's cells. So an id is checked
//! before it is ever joined to a directory: 1 to [`MAX_LEN`] characters
//! from `A-Z a-z 0-9 - _ .`, not starting with a dot (no `.`, `..` or
//! hidden file), and therefore never holding a separator. The ids numalab
//! makes (`RunRecord::make_id`) are always valid.
//!
//! A record's side files are found from the record's own path: the same
//! directory, the same id, one of [`SIDE_SUFFIXES`]. A name stored in a
//! record (`sched.events_file`) must be a plain file name of that
//! directory ([`plain_file_name`]).

use std::path::{Path, PathBuf};

/// The longest id: well within a file name's 255 bytes with any suffix.
pub const MAX_LEN: usize = 200;

/// What a record may have beside it: a command's output, the simulator's
/// trace, the raw scheduling events.
pub const SIDE_SUFFIXES: &[&str] = &[".log", ".trace", ".sched.tsv"];

/// An id checked to be a safe file name stem.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordId(String);

/// Why an id or a stored file name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {text:?} {why}")]
pub struct NameError {
    pub what: &'static str,
    pub text: String,
    pub why: &'static str,
}

fn check_name(what: &'static str, s: &str) -> Result<(), NameError> {
    let err = |why| {
        Err(NameError {
            what,
            text: s.chars().take(MAX_LEN + 20).collect(),
            why,
        })
    };
    if s.is_empty() {
        return err("is empty");
    }
    if s.len() > MAX_LEN {
        return err("is longer than 200 characters");
    }
    if s.starts_with('.') {
        return err("starts with a dot");
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return err("may hold only letters, digits, '-', '_' and '.'");
    }
    Ok(())
}

impl RecordId {
    /// Check `s` as a record id.
    pub fn parse(s: &str) -> Result<RecordId, NameError> {
        check_name("record id", s)?;
        Ok(RecordId(s.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `<dir>/<id>.json`.
    pub fn record_path(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}.json", self.0))
    }

    /// `<dir>/<id><suffix>`, `suffix` one of [`SIDE_SUFFIXES`].
    pub fn side_path(&self, dir: &Path, suffix: &str) -> PathBuf {
        debug_assert!(SIDE_SUFFIXES.contains(&suffix));
        dir.join(format!("{}{suffix}", self.0))
    }

    /// The name of a side file (`<id>.log`).
    pub fn side_name(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.0)
    }
}

impl std::fmt::Display for RecordId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A file name stored in a record, checked to name a file in the
/// record's own directory: no separator, no leading dot.
pub fn plain_file_name<'a>(what: &'static str, s: &'a str) -> Result<&'a str, NameError> {
    check_name(what, s)?;
    Ok(s)
}

/// Whether `name` is the side file `suffix` of record `id`.
pub fn is_side_of(id: &RecordId, name: &str) -> bool {
    SIDE_SUFFIXES
        .iter()
        .any(|s| name.strip_suffix(s) == Some(id.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_ids_are_valid() {
        let t = chrono::DateTime::parse_from_rfc3339("2026-11-22T10:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let id = crate::RunRecord::make_id("numa02", "a b/../c", &t, 3);
        RecordId::parse(&id).unwrap();
    }

    #[test]
    fn traversal_and_separators_are_refused() {
        for bad in [
            "",
            ".",
            "..",
            "../../../../outside/escaped",
            "a/b",
            ".hidden",
            "a\nb",
            "a\0b",
            "a b",
            "é",
            &"x".repeat(201),
        ] {
            assert!(RecordId::parse(bad).is_err(), "{bad:?}");
            assert!(plain_file_name("events_file", bad).is_err(), "{bad:?}");
        }
        let e = RecordId::parse("../x").unwrap_err();
        assert_eq!(e.to_string(), "record id \"../x\" starts with a dot");
    }

    #[test]
    fn side_files_are_named_from_the_id() {
        let id = RecordId::parse("20261122T100000.000Z-numa02-default-r1-7").unwrap();
        assert_eq!(
            id.side_path(Path::new("/r"), ".log"),
            Path::new("/r/20261122T100000.000Z-numa02-default-r1-7.log")
        );
        assert!(is_side_of(&id, &id.side_name(".sched.tsv")));
        assert!(!is_side_of(&id, "other.log"));
        assert!(!is_side_of(&id, &format!("{id}.json")));
    }
}

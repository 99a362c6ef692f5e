//! Writing records atomically and reading them back, one bad file never
//! hiding the good ones.

use crate::schema::{RunRecord, SCHEMA_VERSION};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a numalab run record: {msg}")]
    Invalid { path: PathBuf, msg: String },
    /// A record that parsed but failed [`RunRecord::check`].
    #[error("{path}: not a numalab run record: {source}")]
    Inconsistent {
        path: PathBuf,
        source: crate::schema::CheckError,
    },
    #[error("{path}: schema version {found} is newer than this numalab reads ({SCHEMA_VERSION}); upgrade numalab")]
    Newer { path: PathBuf, found: u64 },
}

/// Check that records can be written in `dir`, before any work is done.
/// A directory that does not exist yet is created for the check and
/// removed again: it is made when the first record is written, so an
/// invocation that records nothing leaves nothing behind.
pub fn ensure_writable_dir(dir: &Path) -> Result<(), RecordError> {
    let io = |source| RecordError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut missing = Vec::new();
    let mut d = Some(dir);
    while let Some(p) = d.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
        missing.push(p.to_path_buf());
        d = p.parent();
    }
    let checked = fs::create_dir_all(dir).and_then(|()| {
        tempfile::Builder::new()
            .prefix(".numalab-write-test")
            .tempfile_in(dir)
            .map(drop)
    });
    for p in &missing {
        let _ = fs::remove_dir(p);
    }
    checked.map_err(io)
}

/// Write `record` as `<dir>/<id>.json` atomically: a temporary file in the
/// same directory, synced, then renamed into place.
pub fn write_atomic(dir: &Path, record: &RunRecord) -> Result<PathBuf, RecordError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RecordError::Io { path, source }
    };
    let id = crate::RecordId::parse(&record.id).map_err(|e| RecordError::Invalid {
        path: dir.to_path_buf(),
        msg: e.to_string(),
    })?;
    fs::create_dir_all(dir).map_err(io(dir))?;
    let path = id.record_path(dir);
    let mut tmp = tempfile::Builder::new()
        .prefix(".numalab-record")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io(dir))?;
    let json = serde_json::to_vec_pretty(record).map_err(|e| RecordError::Invalid {
        path: path.clone(),
        msg: e.to_string(),
    })?;
    tmp.write_all(&json).map_err(io(&path))?;
    tmp.write_all(b"\n").map_err(io(&path))?;
    // Records are results to share: readable by everyone, like any file a
    // benchmark writes (tempfile creates 0600).
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(0o644))
            .map_err(io(&path))?;
    }
    tmp.as_file().sync_all().map_err(io(&path))?;
    tmp.persist(&path).map_err(|e| RecordError::Io {
        path: path.clone(),
        source: e.error,
    })?;
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(path)
}

/// Create the file at `path` for writing: a new file (mode 0644), never
/// one that exists, and never through a symbolic link (`O_CREAT|O_EXCL|
/// O_NOFOLLOW`), so a link planted where numalab writes cannot redirect
/// the write.
pub fn create_new(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// A file being written under a temporary name in its final directory;
/// [`SideFile::commit`] renames it into place (replacing what is there,
/// a symbolic link included, never writing through one). Dropped
/// uncommitted, it is removed: a partial file never takes the name.
pub struct SideFile {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl SideFile {
    /// Start writing what will be `path` (mode 0644).
    pub fn new(path: &Path) -> std::io::Result<SideFile> {
        use std::os::unix::fs::PermissionsExt;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        fs::create_dir_all(dir)?;
        let tmp = tempfile::Builder::new()
            .prefix(".numalab-side")
            .suffix(".tmp")
            .tempfile_in(dir)?;
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(0o644))?;
        Ok(SideFile {
            tmp,
            path: path.to_path_buf(),
        })
    }

    /// The open file (a child process's output can be pointed at it).
    pub fn file(&self) -> &fs::File {
        self.tmp.as_file()
    }

    /// Where it is while written (a temporary name in the same directory).
    pub fn temp_path(&self) -> &Path {
        self.tmp.path()
    }

    /// Where it will be.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sync and rename into place.
    pub fn commit(self) -> std::io::Result<PathBuf> {
        self.tmp.as_file().sync_all()?;
        self.tmp.persist(&self.path).map_err(|e| e.error)?;
        Ok(self.path)
    }
}

impl Write for SideFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tmp.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.tmp.flush()
    }
}

/// Write `bytes` as `path` atomically ([`SideFile`]).
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = SideFile::new(path)?;
    f.write_all(bytes)?;
    f.commit().map(drop)
}

/// Remove the side files of record `id` in `dir` (its record could not
/// be written: a side file never stands without its record).
pub fn remove_side_files(dir: &Path, id: &str) {
    if let Ok(id) = crate::RecordId::parse(id) {
        for s in crate::id::SIDE_SUFFIXES {
            let _ = fs::remove_file(id.side_path(dir, s));
        }
    }
}

/// How records are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Skip the time series (`series.samples`, most of a sampled record's
    /// bytes), which are read as empty and not checked: for readers of
    /// metrics only (`compare`, `export`), about three times faster.
    pub skip_samples: bool,
}

thread_local! {
    /// [`LoadOptions::skip_samples`] of the record being parsed on this
    /// thread (serde gives a field's deserializer no other way in).
    static SKIP_SAMPLES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `series.samples`, or `[]` without building it when skipped.
pub(crate) fn samples_or_skip<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<crate::schema::Sample>, D::Error> {
    use serde::Deserialize;
    if SKIP_SAMPLES.with(|s| s.get()) {
        serde::de::IgnoredAny::deserialize(d)?;
        Ok(Vec::new())
    } else {
        Vec::deserialize(d)
    }
}

/// Parse one record from text.
pub fn parse(path: &Path, text: &str) -> Result<RunRecord, RecordError> {
    parse_with(path, text, LoadOptions::default())
}

/// [`parse`], with [`LoadOptions`].
pub fn parse_with(path: &Path, text: &str, opts: LoadOptions) -> Result<RunRecord, RecordError> {
    let before = SKIP_SAMPLES.with(|s| s.replace(opts.skip_samples));
    let r = parse_inner(path, text);
    SKIP_SAMPLES.with(|s| s.set(before));
    r
}

fn parse_inner(path: &Path, text: &str) -> Result<RunRecord, RecordError> {
    let invalid = |msg: String| RecordError::Invalid {
        path: path.to_path_buf(),
        msg,
    };
    // The record is deserialized from the text directly, in one pass
    // (through a `serde_json::Value` it took three times as long, most of
    // it in the allocator); only when that fails is the text read again as
    // a document, so that a record without a version, or a newer one, is
    // refused as such and not by whatever its fields fail with.
    let record: RunRecord = match serde_json::from_str(text) {
        Ok(r) => r,
        Err(e) => {
            let value: serde_json::Value =
                serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
            return Err(match value.get("schema_version").and_then(|v| v.as_u64()) {
                None => invalid("no schema_version".into()),
                Some(v) if v > SCHEMA_VERSION as u64 => RecordError::Newer {
                    path: path.to_path_buf(),
                    found: v,
                },
                Some(_) => invalid(e.to_string()),
            });
        }
    };
    if record.schema_version > SCHEMA_VERSION {
        return Err(RecordError::Newer {
            path: path.to_path_buf(),
            found: record.schema_version.into(),
        });
    }
    record.check().map_err(|source| RecordError::Inconsistent {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(record)
}

/// Read one record file.
pub fn load(path: &Path) -> Result<RunRecord, RecordError> {
    load_with(path, LoadOptions::default())
}

/// [`load`], with [`LoadOptions`].
pub fn load_with(path: &Path, opts: LoadOptions) -> Result<RunRecord, RecordError> {
    let text = fs::read_to_string(path).map_err(|source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_with(path, &text, opts)
}

/// Records found under some paths, and the files that could not be used.
#[derive(Debug, Default)]
pub struct LoadReport {
    pub records: Vec<(PathBuf, RunRecord)>,
    pub errors: Vec<RecordError>,
}

/// Load every `*.json` record in the given files and directories
/// (recursively, in sorted order). Unreadable or corrupt files become
/// entries of `errors`; every other record is still returned.
pub fn load_paths(paths: &[PathBuf]) -> LoadReport {
    load_paths_with(paths, LoadOptions::default())
}

/// [`load_paths`], with [`LoadOptions`].
pub fn load_paths_with(paths: &[PathBuf], opts: LoadOptions) -> LoadReport {
    let mut files = Vec::new();
    let mut report = LoadReport::default();
    for p in paths {
        if p.is_dir() {
            if let Err(e) = collect(p, &mut files) {
                report.errors.push(e);
            }
        } else {
            files.push(p.clone());
        }
    }
    files.sort();
    files.dedup();
    for (f, loaded) in load_parallel(files, opts) {
        match loaded {
            Ok(r) => report.records.push((f, r)),
            Err(e) => report.errors.push(e),
        }
    }
    report
}

/// Load `files` on every CPU (reading and parsing are independent per
/// file), each thread a contiguous share; the results in `files`' order.
fn load_parallel(
    files: Vec<PathBuf>,
    opts: LoadOptions,
) -> Vec<(PathBuf, Result<RunRecord, RecordError>)> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len() / 16)
        .max(1);
    if threads == 1 {
        return files
            .into_iter()
            .map(|f| {
                let r = load_with(&f, opts);
                (f, r)
            })
            .collect();
    }
    let share = files.len().div_ceil(threads);
    let mut out = Vec::with_capacity(files.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(share)
            .map(|chunk| {
                s.spawn(move || chunk.iter().map(|f| load_with(f, opts)).collect::<Vec<_>>())
            })
            .collect();
        for h in handles {
            // A panic in a loader is the panic it would be in one thread.
            out.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
    });
    files.into_iter().zip(out).collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), RecordError> {
    let entries = fs::read_dir(dir).map_err(|source| RecordError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            collect(&p, out)?;
        } else if name.ends_with(".json") {
            out.push(p);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planted(d: &Path, name: &str) -> (PathBuf, PathBuf) {
        let victim = d.join("victim");
        fs::write(&victim, "keep").unwrap();
        let link = d.join(name);
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        (victim, link)
    }

    /// `<id>.trace` and `<id>.log` overwrote a victim through a link
    /// planted in the results directory: a side file now replaces the
    /// link, never writes through it.
    #[test]
    fn a_side_file_replaces_a_planted_link() {
        let d = tempfile::tempdir().unwrap();
        let (victim, link) = planted(d.path(), "x.log");
        write_file_atomic(&link, b"new").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert!(!fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(fs::read_to_string(&link).unwrap(), "new");
    }

    #[test]
    fn an_uncommitted_side_file_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let mut f = SideFile::new(&d.path().join("sub/x.trace")).unwrap();
        f.write_all(b"partial").unwrap();
        drop(f);
        assert_eq!(fs::read_dir(d.path().join("sub")).unwrap().count(), 0);
    }

    #[test]
    fn create_new_refuses_links_and_existing_files() {
        let d = tempfile::tempdir().unwrap();
        let (victim, link) = planted(d.path(), "console.log");
        assert!(create_new(&link).is_err());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert!(create_new(&victim).is_err());
        let mut f = create_new(&d.path().join("fresh")).unwrap();
        f.write_all(b"x").unwrap();
    }

    #[test]
    fn a_bad_id_is_never_a_path() {
        let d = tempfile::tempdir().unwrap();
        let mut r = crate::example_record("numa02", "a", 1, 1.0);
        r.id = "../escaped".into();
        let e = write_atomic(&d.path().join("r"), &r).unwrap_err();
        assert!(e.to_string().contains("record id"), "{e}");
        assert!(!d.path().join("escaped.json").exists());
        let text = serde_json::to_string(&r).unwrap();
        assert!(parse(Path::new("x.json"), &text).is_err());
    }

    #[test]
    fn side_files_go_with_their_record() {
        let d = tempfile::tempdir().unwrap();
        for s in crate::id::SIDE_SUFFIXES {
            fs::write(d.path().join(format!("run-1{s}")), "x").unwrap();
        }
        fs::write(d.path().join("run-2.log"), "x").unwrap();
        remove_side_files(d.path(), "run-1");
        let left: Vec<_> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("run-2.log")]);
    }

    /// `ensure_writable_dir` leaves no directory it made for the check.
    #[test]
    fn checking_a_new_directory_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        ensure_writable_dir(&d.path().join("a/b")).unwrap();
        assert!(!d.path().join("a").exists());
    }

    #[test]
    fn repetition_zero_is_refused() {
        let mut r = crate::example_record("numa02", "a", 1, 1.0);
        r.repetition = crate::Repetition { index: 0, of: 0 };
        let text = serde_json::to_string(&r).unwrap();
        let e = parse(Path::new("x.json"), &text).unwrap_err();
        assert!(e.to_string().contains("repetition 0 of 0"), "{e}");
    }
}

//! The guest's whole userland: this numalab executable as `/numalab/numalab`
//! (also PID 1), its loader and shared libraries at the paths the loader
//! looks for them, `/dev/console`, empty mount points, and the job file.
//!
//! The archive is uncompressed: under TCG the guest would spend longer
//! inflating it than the host spends copying it, and it only ever lives in
//! a temporary directory.

use crate::cpio::CpioWriter;
use crate::elf;
use crate::job::{Job, GUEST_EXE, JOB_PATH};
use std::collections::BTreeSet;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// What went into an initramfs.
#[derive(Debug, Clone)]
pub struct Built {
    pub bytes: u64,
    /// Guest paths of the files copied from the host.
    pub files: Vec<String>,
    /// `LD_LIBRARY_PATH` the guest needs (libraries outside the loader's
    /// default directories), empty when none.
    pub ld_library_path: String,
}

/// Why the initramfs was not written.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// numalab's interpreter or a library it needs.
    #[error("finding what numalab needs to run: {0}")]
    Closure(crate::elf::ClosureError),
    /// The archive could not be created.
    #[error("{}: {source}", path.display())]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    /// numalab or a library could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Writing into the archive failed.
    #[error("writing {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The job did not serialise.
    #[error("{0}")]
    Job(serde_json::Error),
}

/// Write an initramfs for `exe` running `job` to `out`, with `extra`
/// files (guest path, contents: the kernel modules) besides.
pub fn build(
    exe: &Path,
    job: &Job,
    extra: &[(String, Vec<u8>)],
    out: &Path,
) -> Result<Built, BuildError> {
    let closure = elf::closure(exe).map_err(BuildError::Closure)?;
    let file = fs::File::create(out).map_err(|source| BuildError::Create {
        path: out.to_path_buf(),
        source,
    })?;
    let mut w = CpioWriter::new(BufWriter::new(file));
    let io = |source: std::io::Error| BuildError::Write {
        path: out.to_path_buf(),
        source,
    };
    let read = |path: &Path| {
        fs::read(path).map_err(|source| BuildError::Read {
            path: path.to_path_buf(),
            source,
        })
    };

    let mut dirs: BTreeSet<String> = BTreeSet::new();
    for d in [
        "/dev",
        "/proc",
        "/sys",
        "/tmp",
        "/numalab",
        crate::job::GUEST_RESULTS,
    ] {
        dirs.insert(d.to_string());
    }
    let add_parents = |p: &str, dirs: &mut BTreeSet<String>| {
        let mut cur = Path::new(p).parent();
        while let Some(d) = cur {
            let s = d.to_string_lossy().to_string();
            if s == "/" || s.is_empty() {
                break;
            }
            dirs.insert(s);
            cur = d.parent();
        }
    };
    for guest in closure.files.keys() {
        add_parents(guest, &mut dirs);
    }
    for (guest, _) in extra {
        add_parents(guest, &mut dirs);
    }
    // Parents sort before children.
    for d in &dirs {
        w.dir(d, 0o755).map_err(io)?;
    }
    w.char_dev("/dev/console", 0o600, 5, 1).map_err(io)?;
    w.char_dev("/dev/null", 0o666, 1, 3).map_err(io)?;

    let exe_bytes = match stripped(exe, out) {
        Some(b) => b,
        None => read(exe)?,
    };
    w.file(GUEST_EXE, 0o755, &exe_bytes).map_err(io)?;
    drop(exe_bytes);
    let mut files = vec![GUEST_EXE.to_string()];
    for (guest, host) in &closure.files {
        let data = read(host)?;
        w.file(guest, 0o755, &data).map_err(io)?;
        files.push(guest.clone());
    }
    for (guest, data) in extra {
        w.file(guest, 0o644, data).map_err(io)?;
        files.push(guest.clone());
    }
    let job_json = serde_json::to_vec_pretty(job).map_err(BuildError::Job)?;
    w.file(JOB_PATH, 0o644, &job_json).map_err(io)?;
    let bytes = w.len();
    let mut inner = w.finish().map_err(io)?;
    inner.flush().map_err(io)?;
    Ok(Built {
        bytes,
        files,
        ld_library_path: closure.extra_lib_dirs.join(":"),
    })
}

/// `exe` without its debug sections (`objcopy --strip-debug`, written
/// beside `out`), when objcopy is there and works: the line tables of a
/// release build are four fifths of the file, and every byte of the
/// initramfs is copied and unpacked under emulation at boot. Symbols stay,
/// so a backtrace in the guest still names functions.
/// `NUMALAB_VM_NO_STRIP=1` keeps the file whole.
fn stripped(exe: &Path, out: &Path) -> Option<Vec<u8>> {
    if std::env::var_os("NUMALAB_VM_NO_STRIP").is_some_and(|v| !v.is_empty() && v != "0") {
        return None;
    }
    let tmp = out.with_extension("numalab-stripped");
    let ok = std::process::Command::new("objcopy")
        .arg("--strip-debug")
        .arg(exe)
        .arg(&tmp)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let bytes = if ok { fs::read(&tmp).ok() } else { None };
    let _ = fs::remove_file(&tmp);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpio;

    #[test]
    fn holds_the_binary_its_libraries_and_the_job() {
        let exe = std::env::current_exe().unwrap();
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("initrd");
        let job = Job {
            args: vec!["topology".into()],
            sysctls: vec![("kernel.numa_balancing".into(), "0".into())],
            results_dir: crate::job::GUEST_RESULTS.into(),
            agent: false,
            modules: vec!["/numalab/modules/x.ko".into()],
            hostfs: Some(crate::job::HostFs {
                shares: vec!["/src".into()],
                share_passthrough: false,
                cwd: "/src".into(),
            }),
            shell: None,
        };
        let extra = vec![("/numalab/modules/x.ko".to_string(), b"ko".to_vec())];
        let built = build(&exe, &job, &extra, &out).unwrap();
        let bytes = fs::read(&out).unwrap();
        let entries = cpio::read_all(&bytes).unwrap();
        let find = |n: &str| entries.iter().find(|e| e.name == n.trim_start_matches('/'));
        // The executable, maybe without its debug sections.
        let len = find(GUEST_EXE).unwrap().data.len() as u64;
        assert!(len > 0 && len <= fs::metadata(&exe).unwrap().len());
        assert_eq!(find("/dev/console").unwrap().rdev, (5, 1));
        let j: Job = serde_json::from_slice(&find(JOB_PATH).unwrap().data).unwrap();
        assert_eq!(j, job);
        assert_eq!(find("/numalab/modules/x.ko").unwrap().data, b"ko");
        for f in &built.files {
            assert!(find(f).is_some(), "{f}");
        }
        // Every file's parent directory comes before it.
        for (i, e) in entries.iter().enumerate() {
            if let Some((parent, _)) = e.name.rsplit_once('/') {
                assert!(
                    entries[..i].iter().any(|p| p.name == parent),
                    "{} before its directory",
                    e.name
                );
            }
        }
    }
}

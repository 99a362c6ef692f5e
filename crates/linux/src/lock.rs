//! Locks that say who holds them, and die with their holder.
//!
//! A campaign's results directory and each machine setting are held by
//! one numalab at a time. The lock is `flock(2)` on a file: the kernel
//! drops it when the last descriptor of its holder closes, so a numalab
//! killed with SIGKILL never leaves a stale lock behind, and a child that
//! inherits the descriptor (the knob guard, which restores settings after
//! numalab is killed) keeps it held until it is done. The holder's PID is
//! written into the file while it holds it and removed when it lets go:
//! a PID found on taking a free lock is a holder that was killed, and
//! the new holder says that it takes over.
//!
//! Lock files are opened without following symbolic links and created
//! with mode 0644 in directories the caller chose (the results
//! directory's `.campaign`, `/run/numalab/knobs`).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Exclusive (one holder) or shared (many holders, no exclusive one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Exclusive,
    Shared,
}

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it; `pid` when it wrote one.
    #[error("{} is held by {}", .path.display(), holder(*.pid))]
    Held { path: PathBuf, pid: Option<u32> },
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

fn holder(pid: Option<u32>) -> String {
    match pid {
        Some(p) => format!("numalab (PID {p})"),
        None => "another numalab".to_string(),
    }
}

/// A held lock; released on drop (the PID it wrote is removed first).
#[derive(Debug)]
pub struct Lock {
    file: File,
    path: PathBuf,
    mode: Mode,
    /// The PID found in the file when it was taken: a holder that was
    /// killed without letting go (or whose guard finished after it).
    pub took_over: Option<u32>,
}

impl Lock {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The descriptor, for a child that must keep the lock held.
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if self.mode == Mode::Exclusive {
            let _ = self.file.set_len(0);
        }
        let _ = self.file.unlock();
    }
}

/// Open (creating with mode 0644, never through a symbolic link) the lock
/// file at `path`.
fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

fn read_pid(file: &mut File) -> Option<u32> {
    let mut s = String::new();
    file.seek(io::SeekFrom::Start(0)).ok()?;
    file.take(64).read_to_string(&mut s).ok()?;
    s.trim().parse().ok()
}

/// Take the lock at `path`. Without `wait`, a lock held by another
/// process is [`LockError::Held`] with the holder's PID; with it, this
/// blocks until the holder lets go.
pub fn acquire(path: &Path, mode: Mode, wait: bool) -> Result<Lock, LockError> {
    let io = |source| LockError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = open(path).map_err(io)?;
    let taken = match (mode, wait) {
        (Mode::Exclusive, true) => file.lock().map_err(TryLockError::Error),
        (Mode::Shared, true) => file.lock_shared().map_err(TryLockError::Error),
        (Mode::Exclusive, false) => file.try_lock(),
        (Mode::Shared, false) => file.try_lock_shared(),
    };
    match taken {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(LockError::Held {
                path: path.to_path_buf(),
                pid: read_pid(&mut file),
            })
        }
        Err(TryLockError::Error(e)) => return Err(io(e)),
    }
    let mut lock = Lock {
        took_over: None,
        path: path.to_path_buf(),
        mode,
        file,
    };
    if mode == Mode::Exclusive {
        lock.took_over = read_pid(&mut lock.file).filter(|p| *p != std::process::id());
        lock.file.set_len(0).map_err(io)?;
        lock.file.seek(io::SeekFrom::Start(0)).map_err(io)?;
        writeln!(lock.file, "{}", std::process::id()).map_err(io)?;
        lock.file.flush().map_err(io)?;
    }
    Ok(lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_told_the_first_ones_pid() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("lock");
        let first = acquire(&p, Mode::Exclusive, false).unwrap();
        assert_eq!(first.took_over, None);
        // flock is per open file: a second open in this process conflicts.
        match acquire(&p, Mode::Exclusive, false) {
            Err(LockError::Held { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("expected Held, got {other:?}"),
        }
        assert!(matches!(
            acquire(&p, Mode::Shared, false),
            Err(LockError::Held { .. })
        ));
        drop(first);
        let again = acquire(&p, Mode::Exclusive, false).unwrap();
        assert_eq!(again.took_over, None, "a clean release leaves no PID");
    }

    #[test]
    fn shared_holders_coexist_and_keep_out_an_exclusive_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("lock");
        let a = acquire(&p, Mode::Shared, false).unwrap();
        let b = acquire(&p, Mode::Shared, false).unwrap();
        assert!(matches!(
            acquire(&p, Mode::Exclusive, false),
            Err(LockError::Held { .. })
        ));
        drop((a, b));
        acquire(&p, Mode::Exclusive, false).unwrap();
    }

    #[test]
    fn a_pid_left_behind_is_taken_over() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("lock");
        std::fs::write(&p, "999999999\n").unwrap();
        let l = acquire(&p, Mode::Exclusive, false).unwrap();
        assert_eq!(l.took_over, Some(999_999_999));
        assert_eq!(
            std::fs::read_to_string(&p).unwrap().trim(),
            std::process::id().to_string()
        );
    }

    #[test]
    fn a_symlink_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let p = d.path().join("lock");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        assert!(matches!(
            acquire(&p, Mode::Exclusive, false),
            Err(LockError::Io { .. })
        ));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn the_lock_is_dropped_when_its_process_dies() {
        // A child holds the lock through an inherited descriptor; the
        // lock is free once the child is gone.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("lock");
        // -o: flock(1) holds the lock itself, its child (cat, which ends
        // when its stdin closes) does not.
        let mut c = std::process::Command::new("flock")
            .arg("-o")
            .arg(&p)
            .arg("cat")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("flock(1), from util-linux, runs");
        let held = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            matches!(
                acquire(&p, Mode::Exclusive, false),
                Err(LockError::Held { .. })
            )
        });
        c.kill().unwrap();
        c.wait().unwrap();
        drop(c.stdin.take());
        assert!(held, "flock(1) held the lock");
        acquire(&p, Mode::Exclusive, false).unwrap();
    }
}

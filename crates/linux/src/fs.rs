//! Filesystems: mounts, the root directory, and access checks.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn c_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: a NUL byte in a path", p.display()),
        )
    })
}

/// Whether `path` is writable by this process (`access(W_OK)`; numalab is
/// not set-uid, so real and effective ids are the same). A path with a
/// NUL byte is not.
pub fn writable(path: &Path) -> bool {
    let Ok(c) = c_path(path) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated path that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// `mount(2)`: `source` on `target` as `fstype` (empty: none, as for
/// `MS_BIND` and `MS_MOVE`) with `flags` and the filesystem's options
/// `data` (empty: none). A string with a NUL byte is `InvalidInput`.
pub fn mount(
    source: &str,
    target: &str,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> io::Result<()> {
    let c = |s: &str| {
        CString::new(s).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{s:?}: a NUL byte in a mount argument"),
            )
        })
    };
    let (s, t, f, d) = (c(source)?, c(target)?, c(fstype)?, c(data)?);
    let data_ptr = if data.is_empty() {
        std::ptr::null()
    } else {
        d.as_ptr() as *const libc::c_void
    };
    // SAFETY: valid NUL-terminated strings that outlive the call, and a
    // data pointer that is one of them or null.
    let r = unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, data_ptr) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Make `path` this process's root directory (`chroot(2)`).
pub fn chroot(path: &Path) -> io::Result<()> {
    let c = c_path(path)?;
    // SAFETY: a valid NUL-terminated path that outlives the call.
    if unsafe { libc::chroot(c.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writable_and_unprivileged_errors() {
        let d = tempfile::tempdir().unwrap();
        assert!(writable(d.path()));
        assert!(!writable(&d.path().join("missing/deeper")));
        assert!(!writable(Path::new("a\0b")));
        assert_eq!(
            mount("a\0", "/x", "", 0, "").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        if !crate::process::is_root() {
            assert!(chroot(Path::new("/")).is_err());
        }
    }
}

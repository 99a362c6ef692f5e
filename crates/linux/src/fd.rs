//! File descriptors: waiting on them, and what `std` does not do with
//! them.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// Block until `fd` is readable (`poll` for `POLLIN`, retried until it
/// says so). Reads nothing: one byte written to a pipe wakes every
/// process waiting on its reading end. Async-signal-safe (one system
/// call on a stack value, in a loop), so a forked child may call it.
pub fn wait_readable(fd: impl AsFd) {
    let mut p = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd on the stack, for a descriptor borrowed
    // for the call.
    while unsafe { libc::poll(&mut p, 1, -1) } != 1 {}
}

/// Flush the filesystem holding `fd`'s file to its device (`syncfs`).
pub fn syncfs(fd: impl AsFd) -> io::Result<()> {
    // SAFETY: syncfs on a descriptor borrowed for the call.
    if unsafe { libc::syncfs(fd.as_fd().as_raw_fd()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_byte_wakes_every_waiter_and_syncfs_works() {
        let (r, mut w) = std::io::pipe().unwrap();
        let r2 = r.try_clone().unwrap();
        w.write_all(b"x").unwrap();
        wait_readable(&r);
        wait_readable(&r2);
        let f = std::fs::File::open(std::env::temp_dir()).unwrap();
        syncfs(&f).unwrap();
    }
}

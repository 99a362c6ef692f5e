//! This process's and its threads' identities, and other processes'
//! existence.

use std::io;

/// The calling thread's id (`gettid`), as `/proc/PID/task/TID` names it.
pub fn tid() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// This process's effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether this process runs as root (effective user id 0).
pub fn is_root() -> bool {
    euid() == 0
}

/// Whether process `pid` is certainly gone: signal 0 finds no such
/// process (`ESRCH`). One that exists but is not ours to signal (`EPERM`)
/// is not gone.
pub fn gone(pid: i32) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only checks `pid`.
    let r = unsafe { libc::kill(pid, 0) };
    r != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Whether process `pid` exists and may be signalled by this one.
pub fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only checks `pid`.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// End this process at once with `code` (`_exit`): no destructors, no
/// `atexit` handlers, no flushing of buffered output. The end of a forked
/// child, or of a process whose state is not worth tidying.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit ends the process; nothing after it runs.
    unsafe { libc::_exit(code) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_existence() {
        assert!(tid() > 0);
        assert!(std::path::Path::new(&format!("/proc/self/task/{}", tid())).exists());
        let other = std::thread::spawn(tid).join().unwrap();
        assert_ne!(other, tid());
        assert_eq!(is_root(), euid() == 0);
        let me = std::process::id() as i32;
        assert!(alive(me) && !gone(me));
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id() as i32;
        c.wait().unwrap();
        assert!(
            gone(pid) || alive(pid),
            "reaped: gone unless the pid was reused"
        );
    }
}

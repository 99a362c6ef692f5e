//! The machine as a guest's PID 1 handles it: kernel modules and power.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Load the kernel module in `module` (`finit_module(2)`, no parameters).
/// One already loaded is the kernel's `EEXIST` error.
pub fn load_module(module: &File) -> io::Result<()> {
    let params = c"";
    // SAFETY: an open descriptor borrowed for the call and an empty
    // NUL-terminated parameter string that outlives it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_finit_module,
            module.as_raw_fd(),
            params.as_ptr(),
            0 as libc::c_int,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Write every filesystem's buffers out (`sync`), then power the machine
/// off (`reboot(RB_POWER_OFF)`). Returns only when that was refused (not
/// root); the caller decides what then.
pub fn sync_and_power_off() -> io::Error {
    // SAFETY: sync and reboot take no pointers.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
    }
    io::Error::last_os_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_file_is_no_module() {
        if crate::process::is_root() {
            return; // never risk reboot or module loading as root
        }
        let f = tempfile::tempfile().unwrap();
        assert!(load_module(&f).is_err());
    }
}

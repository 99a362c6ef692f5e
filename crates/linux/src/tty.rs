//! Terminals: their size, raw mode, draining, and a shell's session.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The size of the terminal on `fd`, (rows, columns) (`TIOCGWINSZ`); an
/// error when it is not a terminal.
pub fn window_size(fd: impl AsFd) -> io::Result<(u16, u16)> {
    // SAFETY: winsize is plain data; all zeroes is a valid value.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize, into `ws`, which is valid
    // and writable; the descriptor is borrowed for the call.
    if unsafe { libc::ioctl(fd.as_fd().as_raw_fd(), libc::TIOCGWINSZ, &mut ws) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((ws.ws_row, ws.ws_col))
}

/// Set the size of the terminal on `fd` (`TIOCSWINSZ`).
pub fn set_window_size(fd: impl AsFd, rows: u16, cols: u16) -> io::Result<()> {
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize, from `ws`, which is valid;
    // the descriptor is borrowed for the call.
    if unsafe { libc::ioctl(fd.as_fd().as_raw_fd(), libc::TIOCSWINSZ, &ws) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Wait until everything written to the terminal on `fd` has been sent
/// (`tcdrain`).
pub fn drain(fd: impl AsFd) -> io::Result<()> {
    // SAFETY: tcdrain takes a descriptor, borrowed for the call.
    if unsafe { libc::tcdrain(fd.as_fd().as_raw_fd()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// No line discipline processing on the terminal on `fd`: bytes go out
/// as written (no `\n` to `\r\n`, no echo, 8 bits), at 115200 baud.
pub fn make_raw(fd: impl AsFd) -> io::Result<()> {
    let fd = fd.as_fd().as_raw_fd();
    // SAFETY: termios is plain data; all zeroes is a valid value.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: tcgetattr fills `t`, valid and writable.
    if unsafe { libc::tcgetattr(fd, &mut t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: cfmakeraw and cfsetspeed change fields of `t` only.
    unsafe {
        libc::cfmakeraw(&mut t);
        libc::cfsetspeed(&mut t, libc::B115200);
    }
    // SAFETY: tcsetattr reads `t`, a valid termios.
    if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Start `cmd`'s process in a session of its own (`setsid`) whose
/// controlling terminal is its standard input (`TIOCSCTTY`): an
/// interactive shell's job control works there.
pub fn own_session_on_stdin(cmd: &mut Command) -> &mut Command {
    // SAFETY: setsid and ioctl(TIOCSCTTY) are async-signal-safe system
    // calls with no pointer arguments, allowed between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 1) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_no_terminal() {
        let f = tempfile::tempfile().unwrap();
        assert!(window_size(&f).is_err());
        assert!(set_window_size(&f, 24, 80).is_err());
        assert!(drain(&f).is_err());
        assert!(make_raw(&f).is_err());
        // A session of its own, but no terminal to control: an error.
        let r = own_session_on_stdin(std::process::Command::new("true").stdin(f)).status();
        assert!(r.is_err());
    }
}

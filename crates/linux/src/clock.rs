//! CPU clocks and resource usage of this process and thread.

use std::io;
use std::time::Duration;

/// A CPU-time clock, read with `clock_gettime`.
fn cpu_clock(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec the call fills in; on
    // failure it stays zero.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu() -> Duration {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time of the whole process, every thread's (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn process_cpu() -> Duration {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Whose resource usage [`cpu_times`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// This process, its threads included (`RUSAGE_SELF`).
    Process,
    /// The calling thread (`RUSAGE_THREAD`).
    Thread,
}

/// User and system CPU seconds of `who`, from `getrusage`.
pub fn cpu_times(who: Who) -> io::Result<(f64, f64)> {
    let who = match who {
        Who::Process => libc::RUSAGE_SELF,
        Who::Thread => libc::RUSAGE_THREAD,
    };
    // SAFETY: rusage is plain data; all zeroes is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok((tv(ru.ru_utime), tv(ru.ru_stime)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_clocks_advance_with_work() {
        let (t0, p0) = (thread_cpu(), process_cpu());
        let mut x = 1u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        assert!(thread_cpu() > t0);
        assert!(process_cpu() > p0);
        let (u, s) = cpu_times(Who::Thread).unwrap();
        assert!(u + s > 0.0);
        let (u, s) = cpu_times(Who::Process).unwrap();
        assert!(u + s > 0.0);
    }
}

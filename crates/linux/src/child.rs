//! Child processes that cannot outlive numalab, and exact accounting of
//! their CPU time through `wait4`. A program whose own descendants must
//! not outlive numalab either runs under [`crate::supervise`].

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// SIGTERM, for [`die_with_parent_by`] from crates without `libc`.
pub const SIGTERM: i32 = libc::SIGTERM;

/// Name the calling thread `name` (`prctl(PR_SET_NAME)`, as `comm` in
/// /proc and in traces; the kernel keeps the first 15 bytes). Every task
/// numalab starts is named by its role (`nt-task-3`, `hb-send-12`), so a
/// trace tells them apart. Async-signal-safe (one system call on a stack
/// buffer), so a forked child may call it.
pub fn set_task_name(name: &str) {
    let mut buf = [0u8; 16];
    let n = name.len().min(15);
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    // SAFETY: a NUL-terminated buffer that outlives the call.
    unsafe { libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// Make `cmd`'s process receive SIGKILL when numalab dies, however it dies.
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    die_with_parent_by(cmd, libc::SIGKILL)
}

/// Make `cmd`'s process receive `sig` when numalab dies (SIGTERM for a
/// process that must first kill and reap what it forked).
pub fn die_with_parent_by(cmd: &mut Command, sig: i32) -> &mut Command {
    // SAFETY: getpid has no memory effects.
    let parent = unsafe { libc::getpid() };
    // SAFETY: only async-signal-safe calls run in pre_exec.
    unsafe { cmd.pre_exec(move || pdeathsig_or_exit(sig, parent)) }
}

/// In a process just forked from `parent`: receive `sig` when `parent`
/// dies. The kernel signals only a death after this call, so if `parent`
/// died between the fork and here (its child is already an orphan) exit
/// at once instead of running on unwatched. Async-signal-safe: for
/// `pre_exec` and for children forked without exec.
pub fn pdeathsig_or_exit(sig: i32, parent: i32) -> io::Result<()> {
    // SAFETY: prctl, getppid and _exit take no pointers.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
    Ok(())
}

/// This process's children (of every thread), from procfs.
pub fn children() -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
            }
        }
    }
    out
}

/// How a child ended and what CPU time it used (its own and that of its
/// waited-for descendants, as the kernel accounts in `wait4`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub user_s: f64,
    pub sys_s: f64,
    /// The kernel's scheduling counters of the process (its main thread),
    /// read as it lay dead and unreaped; `None` where procfs has none.
    pub sched: Option<crate::procfs::SchedCounters>,
}

impl Exit {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// `exit 0`, `exit 3`, `signal 9 (SIGKILL)`.
    pub fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("signal {s} ({})", signal_name(s)),
            _ => "unknown".into(),
        }
    }
}

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

fn tv(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

/// Wait for `pid` with `wait4`. With `block = false` returns `Ok(None)`
/// while it is still running. Before it is reaped, its scheduling
/// counters are read (`/proc/PID/sched` of the dead process).
pub fn wait4(pid: i32, block: bool) -> io::Result<Option<Exit>> {
    if !ended_unreaped(pid, block)? {
        return Ok(None);
    }
    let sched = crate::procfs::sched_counters(pid, None);
    let mut status = 0;
    // SAFETY: rusage is plain data filled in by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: valid pointers to locals.
        let r = unsafe { libc::wait4(pid, &mut status, flags, &mut ru) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Ok(None);
        }
        let (code, signal) = if libc::WIFEXITED(status) {
            (Some(libc::WEXITSTATUS(status)), None)
        } else if libc::WIFSIGNALED(status) {
            (None, Some(libc::WTERMSIG(status)))
        } else {
            (None, None)
        };
        return Ok(Some(Exit {
            code,
            signal,
            user_s: tv(ru.ru_utime),
            sys_s: tv(ru.ru_stime),
            sched,
        }));
    }
}

/// Whether child `pid` has ended (blocking until it has with `block`),
/// leaving it unreaped.
fn ended_unreaped(pid: i32, block: bool) -> io::Result<bool> {
    let flags = libc::WEXITED | libc::WNOWAIT | if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: siginfo_t is plain data the kernel fills in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid pointer to a local.
        let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
        if r == 0 {
            // SAFETY: si_pid is valid for SIGCHLD-style results.
            return Ok(unsafe { info.si_pid() } != 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// CPU seconds, (user, system), of every child this process has reaped
/// (and theirs): `getrusage(RUSAGE_CHILDREN)`. The difference over one
/// reaped child is that child's tree's times.
pub fn reaped_children_cpu_s() -> io::Result<(f64, f64)> {
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok((s(ru.ru_utime), s(ru.ru_stime)))
}

/// Context switches, voluntary and not, of every child this process has
/// reaped (and theirs): `getrusage(RUSAGE_CHILDREN)`'s `ru_nvcsw +
/// ru_nivcsw`. The difference over one reaped child is its tree's.
pub fn reaped_children_switches() -> io::Result<u64> {
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((ru.ru_nvcsw.max(0) + ru.ru_nivcsw.max(0)) as u64)
}

/// Block until the child `pid` has ended, leaving it unreaped (`waitid`
/// with `WNOWAIT`): its pid stays its own, so it can still be signalled
/// (a group, by its leader's pid) without hitting a reused one.
pub fn wait_exited(pid: i32) -> io::Result<()> {
    ended_unreaped(pid, true).map(|_| ())
}

/// Sleep until one of the children `pids` has ended (reaped or not) or
/// `timeout` has passed, whichever is first: a watcher's wait that wakes
/// when there is something to reap, not every few milliseconds. Each pid
/// gets a pidfd (`pidfd_open`, Linux 5.3), readable once the process has
/// exited; `poll` sleeps on them all. A pid already reaped returns at
/// once; without pidfds (an older kernel, a seccomp filter) it sleeps at
/// most [`EXIT_POLL`] and the caller looks again.
///
/// Why it matters: a watcher waking every 5 ms takes a CPU from the
/// benchmark 200 times a second; under QEMU's TCG each switch to another
/// process also empties that vCPU's software TLB, and a memset beside a
/// shell waking every 10 ms ran at a third of its speed
/// (docs/validation.md, "A fresh process zeroes slower under TCG").
pub fn wait_exit_of(pids: &[i32], timeout: std::time::Duration) {
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(pids.len());
    let close = |fds: &[libc::pollfd]| {
        for f in fds {
            // SAFETY: a descriptor opened here and not yet closed.
            unsafe { libc::close(f.fd) };
        }
    };
    for &pid in pids {
        // SAFETY: pidfd_open takes a pid and flags, no memory.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
        if fd < 0 {
            close(&fds);
            let gone = io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
            if !gone {
                std::thread::sleep(timeout.min(EXIT_POLL));
            }
            return;
        }
        fds.push(libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
    }
    // Rounded up: a sample due in 0.3 ms is not a busy loop.
    let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    if fds.is_empty() {
        std::thread::sleep(timeout);
        return;
    }
    // SAFETY: `fds` holds fds.len() valid pollfd structures. An EINTR (a
    // signal such as Ctrl-C) returns early, which the caller wants.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    close(&fds);
}

/// The longest [`wait_exit_of`] sleeps where the kernel gives no pidfd.
pub const EXIT_POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// Send `sig` to `pid`; a process that is already gone is not an error.
pub fn signal(pid: i32, sig: i32) {
    // SAFETY: kill has no memory effects.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Wait for any child of this process to end and reap it (`waitpid(-1)`):
/// its pid and raw wait status (for `libc::WIFEXITED` and the like). An
/// interrupted wait is an `Interrupted` error, for the caller to retry.
pub fn wait_any() -> io::Result<(i32, i32)> {
    let mut status = 0;
    // SAFETY: a valid pointer to a local.
    let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((pid, status))
}

/// Fork a child that exits at once with status 0, and reap it: the cost
/// of a fork and an exit of the calling process (lmbench's `lat_proc
/// fork`). The child calls only `_exit`, so this is safe in a process
/// with threads.
pub fn fork_exit_wait() -> io::Result<()> {
    // SAFETY: the child runs only the async-signal-safe `_exit`.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: ends the child at once, running no destructors.
        unsafe { libc::_exit(0) }
    }
    // A plain waitpid: wait4 above also reads the child's counters,
    // which would be timed with it.
    let mut status = 0;
    loop {
        // SAFETY: a valid pointer to a local.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "forked child ended with status {status:#x}"
        )))
    }
}

/// Pass a byte back and forth `rounds` times between this thread, pinned
/// to `cpu_a`, and a forked child pinned to `cpu_b`, through two pipes
/// (lmbench's `lat_ctx` with no working set, and its `lat_pipe`); returns
/// the time of all rounds. On one CPU each round is two context switches
/// between processes and two pipe writes and reads; on two CPUs, two
/// wakeups of a task blocked in `read` on another CPU. The child calls
/// only async-signal-safe functions (`sched_setaffinity`, `read`,
/// `write`, `_exit`), so this is safe in a process with threads; it dies
/// with the calling thread (`PR_SET_PDEATHSIG`) and is reaped before
/// returning. The caller's affinity is left pinned to `cpu_a`.
pub fn pipe_pingpong(cpu_a: u32, cpu_b: u32, rounds: u64) -> io::Result<std::time::Duration> {
    let limit = 8 * std::mem::size_of::<libc::cpu_set_t>() as u32;
    if let Some(c) = [cpu_a, cpu_b].into_iter().find(|&c| c >= limit) {
        return Err(io::Error::other(format!(
            "CPU {c} is beyond the {limit} a CPU set holds"
        )));
    }
    let (there, back) = pingpong_pipes()?;
    if !pin(cpu_a) {
        let e = io::Error::last_os_error();
        close_all(&there);
        close_all(&back);
        return Err(e);
    }
    // SAFETY: the child runs only async-signal-safe calls, then _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = io::Error::last_os_error();
        close_all(&there);
        close_all(&back);
        return Err(e);
    }
    if pid == 0 {
        pingpong_partner(there, back, cpu_b);
    }
    // The parent's unused ends, so a child that died is an end of file
    // here, not a wait for ever.
    // SAFETY: descriptors this function opened, not used by the parent.
    unsafe {
        libc::close(there[0]);
        libc::close(back[1]);
    }
    let out = pingpong_rounds(there, back, rounds);
    // Closing the writing end ends the child's loop; then reap it.
    // SAFETY: the parent's own ends, closed once.
    unsafe {
        libc::close(there[1]);
        libc::close(back[0]);
    }
    let mut status = 0;
    loop {
        // SAFETY: a valid pointer to a local.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break;
        }
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 3 {
        return Err(io::Error::other(format!(
            "cannot pin the partner to CPU {cpu_b}"
        )));
    }
    out
}

/// The ping-pong's two pipes: there (to the child) and back; the first
/// closed again when the second cannot be made.
fn pingpong_pipes() -> io::Result<([i32; 2], [i32; 2])> {
    let mut there = [0i32; 2];
    let mut back = [0i32; 2];
    // SAFETY: valid pointers to two-element arrays.
    if unsafe { libc::pipe(there.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::pipe(back.as_mut_ptr()) } != 0 {
        let e = io::Error::last_os_error();
        close_all(&there);
        return Err(e);
    }
    Ok((there, back))
}

/// Pin the calling thread to `cpu`; false when that fails.
fn pin(cpu: u32) -> bool {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET bounds-checks.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The forked child: pinned to `cpu_b`, it passes each byte back until
/// the parent's end closes (async-signal-safe calls only, then _exit).
fn pingpong_partner(there: [i32; 2], back: [i32; 2], cpu_b: u32) -> ! {
    // SAFETY: async-signal-safe calls on the pipes' descriptors and a
    // local byte; the child ends with _exit, running no destructors.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // Only the ends it uses stay open: when the parent closes its
        // writing end, the child's read sees the end.
        libc::close(there[1]);
        libc::close(back[0]);
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu_b as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            libc::_exit(3);
        }
        let mut b = 0u8;
        loop {
            if libc::read(there[0], (&mut b as *mut u8).cast(), 1) != 1 {
                libc::_exit(0);
            }
            if libc::write(back[1], (&b as *const u8).cast(), 1) != 1 {
                libc::_exit(4);
            }
        }
    }
}

/// The parent's `rounds` of a byte there and back: the time of all.
fn pingpong_rounds(
    there: [i32; 2],
    back: [i32; 2],
    rounds: u64,
) -> io::Result<std::time::Duration> {
    let mut b = 1u8;
    let t0 = std::time::Instant::now();
    for _ in 0..rounds {
        // SAFETY: the pipes' descriptors and a local byte.
        let w = unsafe { libc::write(there[1], (&b as *const u8).cast(), 1) };
        // SAFETY: as above.
        let r = unsafe { libc::read(back[0], (&mut b as *mut u8).cast(), 1) };
        if w != 1 || r != 1 {
            return Err(io::Error::other("the ping-pong partner stopped answering"));
        }
    }
    Ok(t0.elapsed())
}

fn close_all(fds: &[i32; 2]) {
    for &fd in fds {
        // SAFETY: closing descriptors this function opened.
        unsafe { libc::close(fd) };
    }
}

#[cfg(test)]
#[allow(clippy::zombie_processes)] // children are reaped with wait4
mod tests {

    /// A watcher's wait ends when a child exits, long before its
    /// timeout, and ends at its timeout while the child runs on (leaving
    /// the child running and unreaped).
    #[test]
    fn a_wait_for_children_ends_at_an_exit_or_the_timeout() {
        use std::time::{Duration, Instant};
        let mut quick = Command::new("true").spawn().unwrap();
        let t = Instant::now();
        wait_exit_of(&[quick.id() as i32], Duration::from_secs(600));
        assert!(t.elapsed() < Duration::from_secs(300), "{:?}", t.elapsed());
        assert!(quick.try_wait().unwrap().is_some(), "it had exited");
        let mut slow = Command::new("sleep").arg("600").spawn().unwrap();
        wait_exit_of(&[slow.id() as i32], Duration::from_millis(20));
        assert!(slow.try_wait().unwrap().is_none(), "still running");
        slow.kill().unwrap();
        slow.wait().unwrap();
        // Reaped: gone at once.
        wait_exit_of(&[slow.id() as i32], Duration::from_secs(600));
    }
    use super::*;

    #[test]
    fn a_thread_is_named_by_its_role() {
        std::thread::spawn(|| {
            set_task_name("nt-task-12345678901");
            let comm = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
            assert_eq!(comm.trim_end(), "nt-task-1234567");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_pingpong_makes_every_round_trip() {
        let t = pipe_pingpong(0, 0, 2000).unwrap();
        // At least two context switches a round: not free.
        assert!(t.as_nanos() > 2000 * 200, "{t:?}");
        assert!(pipe_pingpong(0, 100_000, 10).is_err());
        // A partner that cannot be pinned (an offline or absent CPU below
        // the set's limit) exits: an error, not a wait for ever.
        let n = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        assert!(pipe_pingpong(0, n + 200, 10).is_err());
    }

    #[test]
    fn exit_codes_signals_and_cpu_time() {
        let c = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let e = wait4(c.id() as i32, true).unwrap().unwrap();
        assert_eq!(e.describe(), "exit 3");
        assert!(!e.success());

        let c = die_with_parent(&mut Command::new("sleep"))
            .arg("30")
            .spawn()
            .unwrap();
        let pid = c.id() as i32;
        assert!(wait4(pid, false).unwrap().is_none());
        signal(pid, libc::SIGKILL);
        let e = wait4(pid, true).unwrap().unwrap();
        assert_eq!(e.describe(), "signal 9 (SIGKILL)");

        let c = Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let e = wait4(c.id() as i32, true).unwrap().unwrap();
        assert!(e.success());
        assert!(e.user_s > 0.0, "a busy child used CPU time: {e:?}");
        // A sleeper's counters, read from the dead process: it slept.
        if std::path::Path::new("/proc/self/sched").exists() {
            let c = Command::new("sleep").arg("0.05").spawn().unwrap();
            let e = wait4(c.id() as i32, true).unwrap().unwrap();
            let c = e.sched.expect("counters of the dead child");
            assert!(c.nr_voluntary_switches >= 1, "{c:?}");
        }
    }

    #[test]
    fn a_fork_and_exit_is_reaped() {
        // Ok means waitpid returned the child: reaped, not a zombie
        // (other tests' children may be alive, so /proc cannot tell).
        for _ in 0..3 {
            fork_exit_wait().unwrap();
        }
    }
}

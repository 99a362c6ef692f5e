//! The load peak of numa_test, and the message-passing benchmark of
//! placement experiments: a message storm like hackbench's process mode,
//! built in. `groups` groups of `fds` sender and `fds` receiver processes
//! (numa_test: 20, the seed's `hackbench 20`); every sender writes `loops`
//! messages of `size` bytes (numa_test: 100) to each receiver of its group
//! over a UNIX socketpair; receivers read until they have everything. Its
//! elapsed time (first message to last process exit) is numa_test's `H`.
//!
//! It runs as its own process (`numalab __hackbench GROUPS LOOPS [FDS
//! SIZE]`), which is single-threaded, so `fork` without `exec` is safe
//! there. Nothing of a storm outlives it, and it reaps what it forks:
//!
//! - SIGINT, SIGTERM and SIGHUP (a terminal's Ctrl-C reaches the whole
//!   process group; numalab stops it with SIGTERM, and it is started with
//!   `PR_SET_PDEATHSIG = SIGTERM`, so numalab's death is one too) make it
//!   SIGKILL every process it forked, reap each, and exit: no worker is
//!   left a zombie for init to reap. The handler knows every worker
//!   because signals are blocked from each `fork` until the child's pid
//!   is recorded, and a reaped worker's pid is forgotten before it could
//!   be reused.
//! - Every worker carries `PR_SET_PDEATHSIG = SIGKILL` and exits at once
//!   if the storm died between its `fork` and that `prctl`, so even a
//!   SIGKILLed storm leaves no worker running (as zombies they go to
//!   init then; only then).

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicUsize, Ordering};
use std::time::Instant;

/// numa_test's storm: senders and receivers per group, message bytes.
pub const PER_GROUP: usize = 20;
pub const MESSAGE: usize = 100;

/// The shape of one storm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Storm {
    pub groups: usize,
    pub fds: usize,
    pub loops: usize,
    pub size: usize,
}

/// The storm's workers, for [`stop`]: a slot per worker (its pid, 0 once
/// reaped), `FORKED` of them filled. The slots never move: they are
/// allocated for every worker before the first fork.
static SLOTS: AtomicPtr<AtomicI32> = AtomicPtr::new(std::ptr::null_mut());
static FORKED: AtomicUsize = AtomicUsize::new(0);

/// The signals that stop a storm.
const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// SIGKILL every worker not yet reaped, reap them, and `_exit(code)`.
/// Async-signal-safe (kill, waitpid, _exit on atomics): the handler of
/// [`STOP_SIGNALS`], and the end of a storm that failed.
fn kill_workers_and_exit(code: i32) -> ! {
    let base = SLOTS.load(Ordering::SeqCst);
    let n = FORKED.load(Ordering::SeqCst);
    let slots: &[AtomicI32] = if base.is_null() {
        &[]
    } else {
        // SAFETY: SLOTS points at a live array of at least FORKED slots.
        unsafe { std::slice::from_raw_parts(base, n) }
    };
    for s in slots {
        let pid = s.load(Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: kill has no memory effects.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    for s in slots {
        let pid = s.load(Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: waitpid with a null status pointer; errno read
            // through its location.
            unsafe {
                while libc::waitpid(pid, std::ptr::null_mut(), 0) < 0
                    && *libc::__errno_location() == libc::EINTR
                {}
            }
        }
    }
    // SAFETY: terminating the process.
    unsafe { libc::_exit(code) }
}

extern "C" fn stop(sig: libc::c_int) {
    kill_workers_and_exit(128 + sig)
}

/// Block (or with `false` unblock) [`STOP_SIGNALS`] in this thread.
fn block_stop_signals(block: bool) {
    // SAFETY: a sigset on the stack, filled by sigemptyset/sigaddset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in STOP_SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        let how = if block {
            libc::SIG_BLOCK
        } else {
            libc::SIG_UNBLOCK
        };
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Make [`STOP_SIGNALS`] stop the storm (the `__hackbench` process only).
fn install_stop_handler() {
    // SAFETY: a sigaction with a handler that only makes async-signal-safe
    // calls; every stop signal is blocked while it runs.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = stop as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        for s in STOP_SIGNALS {
            libc::sigaddset(&mut sa.sa_mask, s);
        }
        for s in STOP_SIGNALS {
            libc::sigaction(s, &sa, std::ptr::null_mut());
        }
    }
}

fn fail(what: &str) -> ! {
    let e = std::io::Error::last_os_error();
    numalab_linux::errln!("numalab: hackbench: {what}: {e}");
    kill_workers_and_exit(1)
}

/// Fork a child that runs `f` and exits; returns its pid, recorded in
/// the next slot before any stop signal can be handled.
fn fork_child(f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: getpid has no memory effects.
    let parent = unsafe { libc::getpid() };
    block_stop_signals(true);
    // SAFETY: called from a single-threaded process; the child only makes
    // system calls and exits with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        block_stop_signals(false);
        fail("fork");
    }
    if pid == 0 {
        // The child: no workers of its own, the default actions back, and
        // dead with the storm, even if it died already.
        FORKED.store(0, Ordering::SeqCst);
        // SAFETY: signal takes no pointers.
        unsafe {
            for s in STOP_SIGNALS {
                libc::signal(s, libc::SIG_DFL);
            }
        }
        block_stop_signals(false);
        if numalab_linux::child::pdeathsig_or_exit(libc::SIGKILL, parent).is_err() {
            // SAFETY: terminating the child.
            unsafe { libc::_exit(1) }
        }
        let code = f();
        unsafe { libc::_exit(code) }
    }
    let base = SLOTS.load(Ordering::SeqCst);
    let n = FORKED.load(Ordering::SeqCst);
    // SAFETY: run() allocated a slot for every worker it forks.
    unsafe { (*base.add(n)).store(pid, Ordering::SeqCst) };
    FORKED.store(n + 1, Ordering::SeqCst);
    block_stop_signals(false);
    pid
}

fn ready(ready_w: i32, wake_r: i32) {
    let b = 0u8;
    // SAFETY: plain fd I/O on valid descriptors with local buffers.
    unsafe {
        if libc::write(ready_w, &b as *const u8 as *const libc::c_void, 1) != 1 {
            fail("ready write");
        }
        let mut p = libc::pollfd {
            fd: wake_r,
            events: libc::POLLIN,
            revents: 0,
        };
        while libc::poll(&mut p, 1, -1) != 1 {}
    }
}

fn sender(out: &[i32], loops: usize, size: usize, ready_w: i32, wake_r: i32) -> i32 {
    ready(ready_w, wake_r);
    let data = vec![0u8; size];
    for _ in 0..loops {
        for &fd in out {
            let mut done = 0;
            while done < size {
                // SAFETY: writing from a local buffer.
                let r = unsafe {
                    libc::write(
                        fd,
                        data[done..].as_ptr() as *const libc::c_void,
                        size - done,
                    )
                };
                if r < 0 {
                    fail("sender write");
                }
                done += r as usize;
            }
        }
    }
    0
}

fn receiver(fd: i32, expected: usize, size: usize, ready_w: i32, wake_r: i32) -> i32 {
    ready(ready_w, wake_r);
    let mut buf = vec![0u8; size];
    let mut got = 0;
    while got < expected {
        // SAFETY: reading into a local buffer of `size` bytes.
        let r = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, size) };
        if r <= 0 {
            fail("receiver read");
        }
        got += r as usize;
    }
    0
}

/// Run the storm; returns seconds from "go" to the last exit.
pub fn run(storm: Storm) -> f64 {
    let Storm {
        groups,
        fds,
        loops,
        size,
    } = storm;
    let mut ready_p = [0i32; 2];
    let mut wake_p = [0i32; 2];
    // SAFETY: pipe writes two fds into the arrays.
    unsafe {
        if libc::pipe(ready_p.as_mut_ptr()) != 0 || libc::pipe(wake_p.as_mut_ptr()) != 0 {
            fail("pipe");
        }
    }
    // A slot for every worker, allocated before the first fork and never
    // moved or freed: the stop handler reads them.
    let workers = groups * 2 * fds;
    let slots: &'static [AtomicI32] = Box::leak((0..workers).map(|_| AtomicI32::new(0)).collect());
    FORKED.store(0, Ordering::SeqCst);
    SLOTS.store(slots.as_ptr() as *mut AtomicI32, Ordering::SeqCst);
    let mut pids = Vec::with_capacity(workers);
    for _ in 0..groups {
        let mut pairs = vec![[0i32; 2]; fds];
        for p in pairs.iter_mut() {
            // SAFETY: socketpair fills two fds.
            if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, p.as_mut_ptr()) } != 0
            {
                fail("socketpair");
            }
        }
        for p in &pairs {
            let fd = p[0];
            let name = format!("hb-recv-{}", pids.len() + 1);
            pids.push(fork_child(|| {
                numalab_linux::child::set_task_name(&name);
                receiver(fd, fds * loops * size, size, ready_p[1], wake_p[0])
            }));
        }
        let outs: Vec<i32> = pairs.iter().map(|p| p[1]).collect();
        for _ in 0..fds {
            let name = format!("hb-send-{}", pids.len() + 1);
            pids.push(fork_child(|| {
                numalab_linux::child::set_task_name(&name);
                sender(&outs, loops, size, ready_p[1], wake_p[0])
            }));
        }
        for p in &pairs {
            // SAFETY: closing our copies; the children keep theirs.
            unsafe {
                libc::close(p[0]);
                libc::close(p[1]);
            }
        }
    }
    let mut b = 0u8;
    for _ in 0..pids.len() {
        // SAFETY: reading one byte into a local.
        if unsafe { libc::read(ready_p[0], &mut b as *mut u8 as *mut libc::c_void, 1) } != 1 {
            fail("ready read");
        }
    }
    let start = Instant::now();
    // SAFETY: one byte makes the wake pipe readable for every child.
    if unsafe { libc::write(wake_p[1], &b as *const u8 as *const libc::c_void, 1) } != 1 {
        fail("wake write");
    }
    let mut failed = 0;
    for (i, pid) in pids.into_iter().enumerate() {
        // Wait for its end unreaped (a stop signal can still find it),
        // then reap it and forget it with the stop signals blocked, so the
        // handler never kills a pid that may have been reused.
        let ended = numalab_linux::child::wait_exited(pid);
        block_stop_signals(true);
        let exit = ended.and_then(|()| numalab_linux::child::wait4(pid, true));
        slots[i].store(0, Ordering::SeqCst);
        block_stop_signals(false);
        match exit {
            Ok(Some(e)) if e.success() => {}
            _ => failed += 1,
        }
    }
    if failed > 0 {
        numalab_linux::errln!("numalab: hackbench: {failed} processes failed");
        // SAFETY: terminating the process.
        unsafe { libc::_exit(1) }
    }
    start.elapsed().as_secs_f64()
}

/// Entry of `numalab __hackbench GROUPS LOOPS [FDS SIZE]` (FDS and SIZE
/// default to numa_test's 20 and 100): prints `H <seconds>`.
pub fn hackbench_main(args: &[String]) -> i32 {
    numalab_linux::child::set_task_name("hb-main");
    let parse = |i: usize| args.get(i).and_then(|s| s.parse::<usize>().ok());
    let (Some(groups), Some(loops)) = (parse(0), parse(1)) else {
        numalab_linux::errln!("numalab: internal: usage: __hackbench GROUPS LOOPS [FDS SIZE]");
        return 2;
    };
    let fds = parse(2).unwrap_or(PER_GROUP);
    let size = parse(3).unwrap_or(MESSAGE);
    if groups == 0 || loops == 0 || fds == 0 || size == 0 {
        numalab_linux::errln!("numalab: internal: hackbench needs positive counts");
        return 2;
    }
    install_stop_handler();
    let h = run(Storm {
        groups,
        fds,
        loops,
        size,
    });
    numalab_linux::outln!("H {h:.6}");
    0
}

//! The load peak of numa_test, and the message-passing benchmark of
//! placement experiments: a message storm like hackbench's process mode,
//! built in. `groups` groups of `fds` sender and `fds` receiver processes
//! (numa_test: 20, the seed's `hackbench 20`); every sender writes `loops`
//! messages of `size` bytes (numa_test: 100) to each receiver of its group
//! over a UNIX socketpair; receivers read until they have everything. Its
//! elapsed time (first message to last process exit) is numa_test's `H`.
//!
//! It runs as its own process (`numalab __hackbench GROUPS LOOPS [FDS
//! SIZE]`), which
//! is single-threaded, so `fork` without `exec` is safe there. Every
//! process it forks dies with it (PR_SET_PDEATHSIG), and it dies with
//! numalab.

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

fn fail(what: &str) -> ! {
    let e = std::io::Error::last_os_error();
    eprintln!("numalab: hackbench: {what}: {e}");
    // SAFETY: terminating the process.
    unsafe { libc::_exit(1) }
}

/// Fork a child that runs `f` and exits; returns its pid.
fn fork_child(f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: called from a single-threaded process; the child only makes
    // system calls and exits with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        fail("fork");
    }
    if pid == 0 {
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        }
        let code = f();
        unsafe { libc::_exit(code) }
    }
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
    let mut pids = Vec::with_capacity(groups * 2 * fds);
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
            pids.push(fork_child(|| {
                receiver(fd, fds * loops * size, size, ready_p[1], wake_p[0])
            }));
        }
        let outs: Vec<i32> = pairs.iter().map(|p| p[1]).collect();
        for _ in 0..fds {
            pids.push(fork_child(|| {
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
    for pid in pids {
        match numalab_linux::child::wait4(pid, true) {
            Ok(Some(e)) if e.success() => {}
            _ => failed += 1,
        }
    }
    if failed > 0 {
        eprintln!("numalab: hackbench: {failed} processes failed");
        // SAFETY: terminating the process.
        unsafe { libc::_exit(1) }
    }
    start.elapsed().as_secs_f64()
}

/// Entry of `numalab __hackbench GROUPS LOOPS [FDS SIZE]` (FDS and SIZE
/// default to numa_test's 20 and 100): prints `H <seconds>`.
pub fn hackbench_main(args: &[String]) -> i32 {
    let parse = |i: usize| args.get(i).and_then(|s| s.parse::<usize>().ok());
    let (Some(groups), Some(loops)) = (parse(0), parse(1)) else {
        eprintln!("numalab: internal: usage: __hackbench GROUPS LOOPS [FDS SIZE]");
        return 2;
    };
    let fds = parse(2).unwrap_or(PER_GROUP);
    let size = parse(3).unwrap_or(MESSAGE);
    if groups == 0 || loops == 0 || fds == 0 || size == 0 {
        eprintln!("numalab: internal: hackbench needs positive counts");
        return 2;
    }
    let h = run(Storm {
        groups,
        fds,
        loops,
        size,
    });
    println!("H {h:.6}");
    0
}

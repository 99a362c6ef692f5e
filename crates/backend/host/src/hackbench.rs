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
//! there ([`numalab_linux::fork::Workers`], which checks that it is).
//! Nothing of a storm outlives it, and it reaps what it forks:
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

use numalab_linux::fd::wait_readable;
use numalab_linux::fork::{self, Workers};
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::os::unix::net::UnixStream;
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

fn fail_with(what: &str, e: std::io::Error) -> ! {
    numalab_linux::errln!("numalab: hackbench: {what}: {e}");
    fork::kill_workers_and_exit(1)
}

fn fail(what: &str) -> ! {
    fail_with(what, std::io::Error::last_os_error())
}

/// The pipes every worker shares: each says it is ready on the first,
/// and waits until the second is readable.
struct Gate {
    ready_r: PipeReader,
    ready_w: PipeWriter,
    wake_r: PipeReader,
    wake_w: PipeWriter,
}

fn ready(gate: &Gate) {
    if (&gate.ready_w).write(&[0u8]).ok() != Some(1) {
        fail("ready write");
    }
    wait_readable(&gate.wake_r);
}

fn sender(out: &[&UnixStream], loops: usize, size: usize, gate: &Gate) -> i32 {
    ready(gate);
    let data = vec![0u8; size];
    for _ in 0..loops {
        for &(mut fd) in out {
            let mut done = 0;
            while done < size {
                match fd.write(&data[done..]) {
                    Ok(n) => done += n,
                    Err(e) => fail_with("sender write", e),
                }
            }
        }
    }
    0
}

fn receiver(mut fd: &UnixStream, expected: usize, size: usize, gate: &Gate) -> i32 {
    ready(gate);
    let mut buf = vec![0u8; size];
    let mut got = 0;
    while got < expected {
        match fd.read(&mut buf) {
            Ok(n) if n > 0 => got += n,
            Ok(_) => fail("receiver read"),
            Err(e) => fail_with("receiver read", e),
        }
    }
    0
}

/// Fork a worker running `f`; a failed fork ends the storm.
fn fork_child(workers: &Workers, f: impl FnOnce() -> i32) -> i32 {
    workers.fork(f).unwrap_or_else(|e| fail_with("fork", e))
}

/// Run the storm; returns seconds from "go" to the last exit.
pub fn run(storm: Storm) -> f64 {
    let Storm {
        groups,
        fds,
        loops,
        size,
    } = storm;
    let gate = match (std::io::pipe(), std::io::pipe()) {
        (Ok((ready_r, ready_w)), Ok((wake_r, wake_w))) => Gate {
            ready_r,
            ready_w,
            wake_r,
            wake_w,
        },
        (Err(e), _) | (_, Err(e)) => fail_with("pipe", e),
    };
    let workers = Workers::new(groups * 2 * fds);
    let mut forked = 0;
    for _ in 0..groups {
        let mut pairs = Vec::with_capacity(fds);
        for _ in 0..fds {
            pairs.push(UnixStream::pair().unwrap_or_else(|e| fail_with("socketpair", e)));
        }
        for (fd, _) in &pairs {
            forked += 1;
            let name = format!("hb-recv-{forked}");
            fork_child(&workers, || {
                numalab_linux::child::set_task_name(&name);
                receiver(fd, fds * loops * size, size, &gate)
            });
        }
        let outs: Vec<&UnixStream> = pairs.iter().map(|(_, out)| out).collect();
        for _ in 0..fds {
            forked += 1;
            let name = format!("hb-send-{forked}");
            fork_child(&workers, || {
                numalab_linux::child::set_task_name(&name);
                sender(&outs, loops, size, &gate)
            });
        }
        // Our copies close; the children keep theirs.
        drop(pairs);
    }
    let mut b = [0u8];
    for _ in 0..forked {
        if (&gate.ready_r).read(&mut b).ok() != Some(1) {
            fail("ready read");
        }
    }
    let start = Instant::now();
    // One byte makes the wake pipe readable for every child.
    if (&gate.wake_w).write(&b).ok() != Some(1) {
        fail("wake write");
    }
    let mut failed = 0;
    for i in 0..forked {
        match workers.reap(i) {
            Ok(Some(e)) if e.success() => {}
            _ => failed += 1,
        }
    }
    if failed > 0 {
        numalab_linux::errln!("numalab: hackbench: {failed} processes failed");
        numalab_linux::process::exit_now(1)
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
    fork::install_stop_handler();
    let h = run(Storm {
        groups,
        fds,
        loops,
        size,
    });
    numalab_linux::outln!("H {h:.6}");
    0
}

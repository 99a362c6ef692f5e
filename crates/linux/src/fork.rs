//! Processes forked without exec, from a process with one thread, and
//! the signals that stop them all.
//!
//! `fork` without `exec` copies only the calling thread; with others
//! running, the child could find a lock (the allocator's, stdout's) held
//! for ever by a thread it does not have. [`Workers::fork`] therefore
//! forks only while the calling process has one thread, which it checks
//! each time (only that thread could start another in between).
//!
//! The workers are recorded as they are forked, so that a stop signal
//! ([`STOP_SIGNALS`], with [`install_stop_handler`]) can SIGKILL and reap
//! every one and exit: nothing forked outlives the process, and none is
//! left a zombie for init. Stop signals are blocked from each `fork`
//! until the child's pid is recorded, and while a worker is reaped and
//! forgotten, so the handler never misses a worker nor kills a pid that
//! may have been reused.

use crate::child::Exit;
use std::io;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicUsize, Ordering};

/// The signals that stop every worker: a terminal's Ctrl-C (SIGINT),
/// SIGTERM, SIGHUP.
pub const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The workers, for the stop handler: a slot per worker (its pid, 0
/// once reaped), `FORKED` of them filled. The slots (with their number)
/// never move and are never freed.
static SLOTS: AtomicPtr<Vec<AtomicI32>> = AtomicPtr::new(std::ptr::null_mut());
static FORKED: AtomicUsize = AtomicUsize::new(0);

/// The slots filled so far.
fn recorded() -> &'static [AtomicI32] {
    let p = SLOTS.load(Ordering::SeqCst);
    if p.is_null() {
        return &[];
    }
    // SAFETY: SLOTS is null or points at a leaked, never freed and never
    // mutated Vec (see `Workers::new`), so a shared reference to it lives
    // for ever.
    let slots: &'static Vec<AtomicI32> = unsafe { &*p };
    &slots[..FORKED.load(Ordering::SeqCst).min(slots.len())]
}

/// SIGKILL every worker not yet reaped, reap them, and `_exit(code)`.
/// Async-signal-safe (kill, waitpid and _exit, on atomics): the stop
/// handler, and the end of a process whose work failed.
pub fn kill_workers_and_exit(code: i32) -> ! {
    let slots = recorded();
    for s in slots {
        let pid = s.load(Ordering::SeqCst);
        if pid > 0 {
            crate::child::signal(pid, libc::SIGKILL);
        }
    }
    for s in slots {
        let pid = s.load(Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: waitpid with a null status pointer (nothing is
            // written); errno read through its thread-local location.
            unsafe {
                while libc::waitpid(pid, std::ptr::null_mut(), 0) < 0
                    && *libc::__errno_location() == libc::EINTR
                {}
            }
        }
    }
    crate::process::exit_now(code)
}

extern "C" fn stop(sig: libc::c_int) {
    kill_workers_and_exit(128 + sig)
}

/// Block (or with `false` unblock) [`STOP_SIGNALS`] in this thread.
fn block_stop_signals(block: bool) {
    // SAFETY: a sigset on the stack, initialised by sigemptyset before
    // sigaddset and pthread_sigmask read it; no old set is asked for.
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

/// Make [`STOP_SIGNALS`] kill and reap every worker and exit with 128 +
/// the signal ([`kill_workers_and_exit`]), for the whole process.
pub fn install_stop_handler() {
    // SAFETY: a sigaction initialised on the stack, whose handler makes
    // only async-signal-safe calls, with every stop signal blocked while
    // it runs; no old action is asked for.
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

/// Whether this process has exactly one thread (`/proc/self/stat`'s
/// `num_threads`); false when that cannot be read.
pub fn single_threaded() -> bool {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return false;
    };
    // The fields after the command's closing parenthesis: state is the
    // first (field 3), num_threads the 18th (field 20).
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(17))
        .is_some_and(|n| n == "1")
}

/// The workers of this process: slots for a fixed number, each filled by
/// [`Workers::fork`] and emptied by [`Workers::reap`].
pub struct Workers {
    slots: &'static [AtomicI32],
}

impl Workers {
    /// Slots for `capacity` workers, allocated before the first fork and
    /// never moved or freed: the stop handler reads them.
    pub fn new(capacity: usize) -> Workers {
        let slots: &'static Vec<AtomicI32> =
            Box::leak(Box::new((0..capacity).map(|_| AtomicI32::new(0)).collect()));
        FORKED.store(0, Ordering::SeqCst);
        SLOTS.store(slots as *const Vec<AtomicI32> as *mut _, Ordering::SeqCst);
        Workers { slots }
    }

    /// Fork a child that runs `f` and `_exit`s with what it returns, with
    /// the default actions of the stop signals, `PR_SET_PDEATHSIG =
    /// SIGKILL`, and no workers of its own; it exits at once (1) if this
    /// process died before that was set. Returns its pid, recorded in the
    /// next slot before any stop signal can be handled. An error when the
    /// process has more than one thread, when every slot is taken, or
    /// when `fork` fails.
    pub fn fork(&self, f: impl FnOnce() -> i32) -> io::Result<i32> {
        let n = FORKED.load(Ordering::SeqCst);
        if n >= self.slots.len() {
            return Err(io::Error::other(format!("more than {n} workers")));
        }
        if !single_threaded() {
            return Err(io::Error::other(
                "fork without exec in a process with threads",
            ));
        }
        let parent = std::process::id() as i32;
        block_stop_signals(true);
        // SAFETY: this process has one thread (checked above; only this
        // thread could have started another since), so the child is a
        // whole copy of it and may run any code; it ends with _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = io::Error::last_os_error();
            block_stop_signals(false);
            return Err(e);
        }
        if pid == 0 {
            Workers::child(parent, f);
        }
        self.slots[n].store(pid, Ordering::SeqCst);
        FORKED.store(n + 1, Ordering::SeqCst);
        block_stop_signals(false);
        Ok(pid)
    }

    /// The forked child: no workers of its own, the default actions back,
    /// dead with its parent (even if it died already), then `f`.
    fn child(parent: i32, f: impl FnOnce() -> i32) -> ! {
        FORKED.store(0, Ordering::SeqCst);
        for s in STOP_SIGNALS {
            // SAFETY: signal takes no pointers; SIG_DFL is a valid action.
            unsafe { libc::signal(s, libc::SIG_DFL) };
        }
        block_stop_signals(false);
        if crate::child::pdeathsig_or_exit(libc::SIGKILL, parent).is_err() {
            crate::process::exit_now(1)
        }
        let code = f();
        crate::process::exit_now(code)
    }

    /// Wait for worker `i` (in the order forked) to end, then, with the
    /// stop signals blocked, reap it and forget it. `None` for a slot
    /// never filled or already reaped.
    pub fn reap(&self, i: usize) -> io::Result<Option<Exit>> {
        let pid = match self.slots.get(i).map(|s| s.load(Ordering::SeqCst)) {
            Some(pid) if pid > 0 => pid,
            _ => return Ok(None),
        };
        // Wait for its end unreaped (a stop signal can still find it).
        let ended = crate::child::wait_exited(pid);
        block_stop_signals(true);
        let exit = ended.and_then(|()| crate::child::wait4(pid, true));
        self.slots[i].store(0, Ordering::SeqCst);
        block_stop_signals(false);
        exit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_fork_without_exec_beside_threads() {
        // The test harness runs tests on threads of their own.
        assert!(!single_threaded());
        let w = Workers::new(1);
        let e = w.fork(|| 0).unwrap_err();
        assert!(e.to_string().contains("threads"), "{e}");
        assert!(w.reap(0).unwrap().is_none());
    }
}

//! A program's whole process tree, killed when numalab ends, however it
//! ends: the supervisor of `numalab run command`.
//!
//! numalab's own tasks die with it through `PR_SET_PDEATHSIG`
//! ([`crate::child::die_with_parent`]), but that covers one generation: a
//! user's program forks what it likes (`sh -c 'sleep 300 & sleep 301;
//! wait'`, `make -j`, a daemon that calls `setsid`), and when numalab is
//! SIGKILLed those grandchildren are reparented to PID 1 and run on. The
//! kernel has two ways to find such a tree after the fact: a cgroup
//! (`cgroup.kill`, Linux 5.14), or being the tree's subreaper
//! (`PR_SET_CHILD_SUBREAPER`, Linux 3.4), to which every orphan of the
//! tree is reparented instead of PID 1. Either way some process must
//! outlive numalab to act; numalab cannot act after its own SIGKILL.
//!
//! So the program runs under a supervisor: `numalab __supervise [--log
//! PATH] -- PROGRAM ARGS`, a child of numalab and the program's parent, which
//!
//! - is the subreaper of the program's tree, so no descendant can leave
//!   it: a background job, a double fork, a `setsid` daemon all end up
//!   its children when their parents die;
//! - runs the program in a process group of its own with standard input
//!   `/dev/null` and output to the supervisor's standard error (the run's
//!   log), and times it: `wait4` gives the exit status and the CPU time of
//!   the program and of every descendant it waited for;
//! - reads a pipe from numalab on its standard input: EOF (numalab died,
//!   whatever killed it, and the kernel closed the pipe) or the line
//!   `kill` (numalab was interrupted) makes it kill the whole tree; the
//!   line `term MS` (a service stopped: `--setup-bg`) sends SIGTERM to
//!   the program's process group first and kills the tree when the
//!   program has ended or MS milliseconds have passed;
//! - when the program exits, kills and reaps what it left running;
//! - removes the run's log (`--log PATH`) when numalab ends before it was
//!   told how the program ended: no record will ever name that log;
//! - ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT, so a terminal's Ctrl-C
//!   or a signal to numalab's process group cannot end it before it has
//!   cleaned up (numalab decides; the program gets the default actions
//!   back before it execs), and is not itself `PR_SET_PDEATHSIG`: it must
//!   outlive numalab. The program is, so if the supervisor itself is
//!   SIGKILLed (`pkill -9 numalab` matches both) its top process at least
//!   dies with it.
//!
//! Killing the tree: SIGKILL to the program's process group while the
//! program is still unreaped (its pid, hence the group's id, cannot have
//! been reused), then, until nothing is left, SIGKILL to every child of
//! the supervisor and reap: a descendant in another group is reached when
//! its parent dies and it is reparented here. SIGKILLed processes cannot
//! fork, so this ends; a process stuck in uninterruptible sleep is given
//! up on after 10 s.
//!
//! Why not a cgroup: moving a process into a new cgroup needs a writable,
//! delegated cgroup v2 subtree, which an unprivileged user, a container or
//! a cgroup v1 machine often does not have, so a fallback would be needed
//! anyway; the subreaper works for every user on every kernel numalab
//! supports, and catches everything a cgroup would except processes
//! started on the program's behalf by another daemon (systemd, D-Bus),
//! which are not in its cgroup either.
//!
//! Protocol, the supervisor's standard output to numalab, one line each:
//! `started PID`, then `exited CODE SIGNAL USER_S SYS_S ELAPSED_S` (`-`
//! for the code or signal that does not apply; seconds from just before
//! the program was started to its end) and `left N` (processes of its tree
//! still there, killed); or `failed MESSAGE` when it could not be started
//! or waited for. After `kill` or EOF on its input only `left N` follows.

use crate::child::{self, Exit};
use crate::procfs::SchedCounters;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The hidden numalab subcommand that runs [`main`].
pub const SUBCOMMAND: &str = "__supervise";

/// numalab's own executable, once the binary has said it dispatches
/// [`SUBCOMMAND`] ([`enable`]); library code (the runner's hooks) then
/// runs its programs under a supervisor.
static SELF_EXE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Called by numalab's `main`: `exe` runs [`main`] when given
/// [`SUBCOMMAND`].
pub fn enable(exe: std::path::PathBuf) {
    let _ = SELF_EXE.set(exe);
}

/// The executable to start supervisors with, when [`enable`] was called
/// (not in a library's unit tests).
pub fn exe() -> Option<&'static Path> {
    SELF_EXE.get().map(|p| p.as_path())
}

/// The signals the supervisor ignores and the program gets back.
const DEAF_TO: [i32; 5] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGPIPE,
];

/// How long killing a tree may take before the rest is given up on.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);

/// What the supervisor says.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The program was started with this pid.
    Started(i32),
    /// The program ended: how, with its CPU time, and the seconds from
    /// just before it was started to its end.
    Exited { exit: Exit, elapsed_s: f64 },
    /// Processes of the program's tree that were still there after it
    /// ended or was stopped, all killed and reaped.
    Left(usize),
    /// The program could not be started or waited for.
    Failed(String),
}

impl Event {
    fn line(&self) -> String {
        let opt = |v: Option<i32>| v.map_or("-".to_string(), |v| v.to_string());
        match self {
            Event::Started(pid) => format!("started {pid}"),
            Event::Exited { exit, elapsed_s } => {
                let mut l = format!(
                    "exited {} {} {} {} {elapsed_s}",
                    opt(exit.code),
                    opt(exit.signal),
                    exit.user_s,
                    exit.sys_s
                );
                if let Some(c) = exit.sched {
                    let o = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
                    l += &format!(
                        " {} {} {} {} {} {} {}",
                        c.sum_exec_runtime_ns,
                        c.nr_migrations,
                        c.nr_voluntary_switches,
                        c.nr_involuntary_switches,
                        o(c.numa_pages_migrated),
                        o(c.numa_preferred_nid.map(u64::from)),
                        o(c.total_numa_faults)
                    );
                }
                l
            }
            Event::Left(n) => format!("left {n}"),
            Event::Failed(m) => format!("failed {}", m.replace('\n', " ")),
        }
    }

    fn parse(line: &str) -> Option<Event> {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let opt = |w: &str| -> Option<Option<i32>> {
            if w == "-" {
                Some(None)
            } else {
                w.parse().ok().map(Some)
            }
        };
        match word {
            "started" => rest.trim().parse().ok().map(Event::Started),
            "left" => rest.trim().parse().ok().map(Event::Left),
            "failed" => Some(Event::Failed(rest.to_string())),
            "exited" => {
                let w: Vec<&str> = rest.split_whitespace().collect();
                let (&[code, signal, user, sys, elapsed], more) = (w.get(..5)?, &w[5..]) else {
                    return None;
                };
                // The program's scheduling counters, when procfs had them.
                let sched = match more {
                    [] => None,
                    [run, mig, vol, invol, pages, pref, faults] => {
                        let o = |w: &str| -> Option<Option<u64>> {
                            if w == "-" {
                                Some(None)
                            } else {
                                w.parse().ok().map(Some)
                            }
                        };
                        Some(SchedCounters {
                            sum_exec_runtime_ns: run.parse().ok()?,
                            nr_migrations: mig.parse().ok()?,
                            nr_voluntary_switches: vol.parse().ok()?,
                            nr_involuntary_switches: invol.parse().ok()?,
                            numa_pages_migrated: o(pages)?,
                            numa_preferred_nid: o(pref)?.and_then(|n| u32::try_from(n).ok()),
                            total_numa_faults: o(faults)?,
                        })
                    }
                    _ => return None,
                };
                Some(Event::Exited {
                    exit: Exit {
                        code: opt(code)?,
                        signal: opt(signal)?,
                        user_s: user.parse().ok()?,
                        sys_s: sys.parse().ok()?,
                        sched,
                    },
                    elapsed_s: elapsed.parse().ok()?,
                })
            }
            _ => None,
        }
    }
}

/// A running supervisor, from numalab's side. Dropping it (an error
/// path, a panic) closes its input, which kills the program's tree.
pub struct Supervisor {
    child: Child,
    control: Option<ChildStdin>,
    events: mpsc::Receiver<Event>,
}

impl Supervisor {
    /// Start `exe __supervise -- argv...` in `cwd` (numalab's own when
    /// `None`), the program's standard output and error going to
    /// `output`, the file at `log` if any, which the supervisor removes if
    /// numalab ends before it is told how the program ended. `exe` is
    /// numalab itself.
    pub fn start(
        exe: &Path,
        argv: &[String],
        cwd: Option<&Path>,
        log: Option<&Path>,
        output: File,
    ) -> io::Result<Supervisor> {
        let mut cmd = Command::new(exe);
        cmd.arg(SUBCOMMAND);
        if let Some(log) = log {
            cmd.arg("--log").arg(std::path::absolute(log)?);
        }
        cmd.arg("--")
            .args(argv)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(output);
        if let Some(c) = cwd {
            cmd.current_dir(c);
        }
        let mut child = cmd.spawn()?;
        let out = child.stdout.take().expect("piped stdout");
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if let Some(e) = Event::parse(&line) {
                    if tx.send(e).is_err() {
                        break;
                    }
                }
            }
        });
        Ok(Supervisor {
            control: child.stdin.take(),
            child,
            events,
        })
    }

    /// The supervisor's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next event, waiting at most `timeout`. `Disconnected`: the
    /// supervisor is gone.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Event, mpsc::RecvTimeoutError> {
        self.events.recv_timeout(timeout)
    }

    /// Kill the program's whole tree and wait for the supervisor to end.
    /// Returns how many processes were killed, when it said.
    pub fn stop(mut self) -> io::Result<Option<usize>> {
        if let Some(mut c) = self.control.take() {
            // Gone already is fine: it then has nothing left to kill.
            let _ = c.write_all(b"kill\n");
        }
        self.wait_end()
    }

    /// Stop the program as a service is stopped: SIGTERM to its process
    /// group, then, once it has ended or `grace` has passed, SIGKILL to
    /// its whole tree; wait for the supervisor to end. Returns how many
    /// processes were left after the program (or it ended), when it said.
    pub fn terminate(mut self, grace: Duration) -> io::Result<Option<usize>> {
        if let Some(mut c) = self.control.take() {
            let _ = writeln!(c, "term {}", grace.as_millis());
            // Kept open until the supervisor has answered: closing it
            // now would be EOF, a kill without the grace.
            let r = self.wait_end_after(grace);
            drop(c);
            return r;
        }
        self.wait_end()
    }

    /// After [`Event::Exited`]: wait for the supervisor to kill what the
    /// program left running and end. Returns how many there were.
    pub fn finish(mut self) -> io::Result<usize> {
        match self.wait_end()? {
            Some(n) => Ok(n),
            None => Err(io::Error::other(
                "the supervisor ended without saying what the command left running",
            )),
        }
    }

    /// Wait for `left N` and the supervisor's exit; its input is closed.
    fn wait_end(&mut self) -> io::Result<Option<usize>> {
        self.control = None;
        self.wait_end_after(Duration::ZERO)
    }

    /// [`Self::wait_end`], the supervisor first given `grace` to act.
    fn wait_end_after(&mut self, grace: Duration) -> io::Result<Option<usize>> {
        let mut left = None;
        // The supervisor gives up on a tree after KILL_TIMEOUT.
        let deadline = Instant::now() + grace + KILL_TIMEOUT + Duration::from_secs(5);
        while let Some(wait) = deadline.checked_duration_since(Instant::now()) {
            match self.events.recv_timeout(wait) {
                Ok(Event::Left(n)) => {
                    left.get_or_insert(n);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let status = self.child.wait()?;
        if left.is_none() && !status.success() {
            return Err(io::Error::other(format!(
                "the supervisor ended with {status}"
            )));
        }
        Ok(left)
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if self.control.take().is_some() {
            let _ = self.wait_end();
        }
    }
}

/// The state the two threads of the supervisor share: whether the
/// program was reaped (after which its group id may be reused), and
/// whether numalab was told how it ended (after which the log is
/// numalab's, to keep beside the record).
struct Tree {
    pgid: i32,
    reaped: bool,
    told: bool,
    log: Option<std::path::PathBuf>,
}

static TREE: Mutex<Option<Tree>> = Mutex::new(None);

fn say(e: &Event) {
    let mut out = io::stdout().lock();
    // numalab gone: nobody to tell (SIGPIPE is ignored).
    let _ = writeln!(out, "{}", e.line());
    let _ = out.flush();
}

/// Kill the tree: the program's group if it is unreaped, then every child
/// until none is left. Returns how many processes were reaped.
fn kill_tree(tree: &mut Tree) -> usize {
    if !tree.reaped {
        child::signal(-tree.pgid, libc::SIGKILL);
    }
    let deadline = Instant::now() + KILL_TIMEOUT;
    let mut reaped = 0;
    loop {
        for c in child::children() {
            child::signal(c, libc::SIGKILL);
        }
        loop {
            let mut status = 0;
            // SAFETY: a valid pointer to a local.
            let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if r > 0 {
                if r == tree.pgid {
                    tree.reaped = true;
                } else {
                    reaped += 1;
                }
                continue;
            }
            if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if r < 0 {
                return reaped; // ECHILD: nothing left
            }
            break; // children left, not dead yet
        }
        if Instant::now() > deadline {
            return reaped;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `term MS`: SIGTERM to the program's group while it is unreaped, then
/// up to `grace` for it to end. When it does, the main thread says how
/// it ended, kills what is left and exits the process while holding
/// [`TREE`]; the caller then kills the tree (the grace ran out).
fn terminate(grace: Duration) {
    {
        let tree = TREE.lock().unwrap_or_else(|e| e.into_inner());
        match tree.as_ref() {
            Some(t) if !t.reaped => child::signal(-t.pgid, libc::SIGTERM),
            _ => return,
        }
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
        let tree = TREE.lock().unwrap_or_else(|e| e.into_inner());
        if tree.as_ref().is_none_or(|t| t.reaped) {
            return;
        }
    }
}

/// The supervisor's main, run as `numalab __supervise [--log PATH] --
/// PROGRAM ARGS` (`args` are the arguments after `__supervise`). Returns
/// the exit code.
pub fn main(args: &[String]) -> i32 {
    let Some((log, argv)) = arguments(args) else {
        crate::errln!("numalab: internal: usage: {SUBCOMMAND} [--log PATH] -- PROGRAM [ARGS]");
        return 2;
    };
    if let Err(code) = become_subreaper() {
        return code;
    }
    let mut cmd = match command(argv) {
        Ok(cmd) => cmd,
        Err(code) => return code,
    };
    let start = Instant::now();
    let pid = match cmd.spawn() {
        // Reaped below with waitid and wait4, not through `Child`.
        Ok(c) => c.id() as i32,
        Err(e) => {
            say(&Event::Failed(format!("starting {}: {e}", argv[0])));
            return 1;
        }
    };
    *TREE.lock().unwrap_or_else(|e| e.into_inner()) = Some(Tree {
        pgid: pid,
        reaped: false,
        told: false,
        log,
    });
    say(&Event::Started(pid));
    listen();
    program_end(pid, start, argv)
}

/// The log's path, if given, and the program's argv: `None` when the
/// arguments are not `[--log PATH] -- PROGRAM [ARGS]`.
fn arguments(args: &[String]) -> Option<(Option<std::path::PathBuf>, &[String])> {
    let (log, args) = match args {
        [flag, path, rest @ ..] if flag == "--log" => (Some(std::path::PathBuf::from(path)), rest),
        _ => (None, args),
    };
    match args.split_first() {
        Some((dd, argv)) if dd == "--" && !argv.is_empty() => Some((log, argv)),
        _ => None,
    }
}

/// Deaf to the signals of [`DEAF_TO`], and the subreaper of what the
/// program leaves; the exit code when that fails.
fn become_subreaper() -> Result<(), i32> {
    // SAFETY: signal and prctl with integer arguments.
    unsafe {
        for s in DEAF_TO {
            libc::signal(s, libc::SIG_IGN);
        }
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            let e = io::Error::last_os_error();
            say(&Event::Failed(format!("becoming the subreaper: {e}")));
            return Err(1);
        }
    }
    Ok(())
}

/// The program's command: its own group, its output in the log, killed
/// when the supervisor dies; the exit code when the log cannot be shared.
fn command(argv: &[String]) -> Result<Command, i32> {
    // The program's output goes where ours does: the log.
    let out = match io::stderr().as_fd().try_clone_to_owned().map(File::from) {
        Ok(f) => f,
        Err(e) => {
            say(&Event::Failed(format!("duplicating the log: {e}")));
            return Err(1);
        }
    };
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::inherit())
        .process_group(0);
    // SAFETY: getpid has no memory effects.
    let supervisor = unsafe { libc::getpid() };
    // SAFETY: only async-signal-safe calls (signal, prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            for s in DEAF_TO {
                libc::signal(s, libc::SIG_DFL);
            }
            child::pdeathsig_or_exit(libc::SIGKILL, supervisor)
        });
    }
    Ok(cmd)
}

/// numalab's end, or its `kill`: the whole tree goes (a thread reading
/// numalab's lines).
fn listen() {
    std::thread::spawn(|| {
        let stdin = io::stdin();
        for line in stdin.lock().lines() {
            match line {
                Ok(l) if l.trim() == "kill" => break,
                Ok(l) if l.trim().starts_with("term ") => {
                    let ms = l.trim()["term ".len()..].parse().unwrap_or(0);
                    terminate(Duration::from_millis(ms));
                    break;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let mut tree = TREE.lock().unwrap_or_else(|e| e.into_inner());
        if tree.as_ref().is_some_and(|t| t.told) {
            // The program's end and what it left were said already (numalab
            // closes its end once it has heard them).
            std::process::exit(0);
        }
        let n = tree.as_mut().map_or(0, kill_tree);
        if let Some(Tree {
            told: false,
            log: Some(log),
            ..
        }) = tree.as_ref()
        {
            let _ = std::fs::remove_file(log);
        }
        say(&Event::Left(n));
        std::process::exit(0);
    });
}

/// The program's end: timed at once, its group killed while its id is
/// still ours, then reaped for its CPU time. Returns the exit code.
fn program_end(pid: i32, start: Instant, argv: &[String]) -> i32 {
    let ended = child::wait_exited(pid);
    let elapsed_s = start.elapsed().as_secs_f64();
    let mut tree = TREE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(t) = tree.as_mut() else { return 1 };
    if t.reaped {
        // The other thread is killing the tree (numalab ended); it exits.
        drop(tree);
        loop {
            std::thread::park();
        }
    }
    if let Err(e) = ended {
        let n = kill_tree(t);
        say(&Event::Failed(format!("waiting for {}: {e}", argv[0])));
        say(&Event::Left(n));
        return 1;
    }
    child::signal(-t.pgid, libc::SIGKILL);
    let exit = child::wait4(pid, true);
    t.reaped = true;
    t.told = true;
    match exit {
        Ok(Some(exit)) => say(&Event::Exited { exit, elapsed_s }),
        Ok(None) => say(&Event::Failed(format!(
            "waiting for {}: no status",
            argv[0]
        ))),
        Err(e) => say(&Event::Failed(format!("waiting for {}: {e}", argv[0]))),
    }
    let n = kill_tree(t);
    say(&Event::Left(n));
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip() {
        for e in [
            Event::Started(42),
            Event::Left(3),
            Event::Failed("starting x: No such file or directory (os error 2)".into()),
            Event::Exited {
                exit: Exit {
                    code: Some(3),
                    signal: None,
                    user_s: 0.125,
                    sys_s: 1e-6,
                    sched: Some(SchedCounters {
                        sum_exec_runtime_ns: 1_234_567,
                        nr_migrations: 4,
                        nr_voluntary_switches: 9,
                        nr_involuntary_switches: 1,
                        numa_pages_migrated: Some(0),
                        numa_preferred_nid: None,
                        total_numa_faults: None,
                    }),
                },
                elapsed_s: 2.5000001,
            },
            Event::Exited {
                exit: Exit {
                    code: None,
                    signal: Some(9),
                    user_s: 0.0,
                    sys_s: 0.0,
                    sched: None,
                },
                elapsed_s: 0.0,
            },
        ] {
            assert_eq!(Event::parse(&e.line()), Some(e.clone()), "{}", e.line());
        }
        assert_eq!(Event::parse("exited 1 2"), None);
        assert_eq!(Event::parse("hello"), None);
        assert_eq!(
            Event::Failed("a\nb".into()).line(),
            "failed a b",
            "one event, one line"
        );
    }
}

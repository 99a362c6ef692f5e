//! Nothing of a benchmark outlives numalab: `kill -9` of numalab in the
//! middle of every host benchmark leaves no process of it running one
//! second later, and Ctrl-C during numa_test's message storm leaves no
//! zombie either.
//!
//! Every numalab started here carries a unique marker in its environment,
//! which everything it starts inherits (the storm's workers are forked
//! without exec; a command's children get numalab's environment), so the
//! benchmark's processes are found wherever they were reparented. This
//! test process makes itself a subreaper: what numalab's tree leaves
//! behind is reparented here instead of to init, which on some machines
//! reaps zombies at once and would hide them, so a zombie numalab failed
//! to reap stays visible, and is reaped here once looked at.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

mod common;
use common::EXE;

const MARK_VAR: &str = "NUMALAB_LEFT_BEHIND_MARK";

/// One benchmark at a time: a 2-core machine, and a second benchmark's
/// load should not slow the one being checked.
static SERIAL: Mutex<()> = Mutex::new(());

fn setup() -> std::sync::MutexGuard<'static, ()> {
    static SUBREAPER: Once = Once::new();
    SUBREAPER.call_once(|| {
        // SAFETY: prctl with integer arguments.
        let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        assert_eq!(r, 0, "PR_SET_CHILD_SUBREAPER");
    });
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A process carrying a mark: its pid, state letter and arguments.
#[derive(Debug)]
struct Proc {
    pid: i32,
    state: char,
    ppid: i32,
    argv: Vec<String>,
}

/// `/proc/PID`'s state, parent and arguments, if it still exists.
fn proc_info(pid: i32) -> Option<Proc> {
    let dir = Path::new("/proc").join(pid.to_string());
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let after = stat.rsplit_once(')').map_or("", |(_, a)| a).trim_start();
    let mut f = after.split_whitespace();
    let state = f.next().and_then(|s| s.chars().next()).unwrap_or('?');
    let ppid = f.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let argv = std::fs::read(dir.join("cmdline"))
        .map(|c| {
            c.split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default();
    Some(Proc {
        pid,
        state,
        ppid,
        argv,
    })
}

fn pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .collect()
}

/// Every process whose environment holds `MARK_VAR=mark`, wherever it
/// was reparented.
fn marked(mark: &str) -> Vec<Proc> {
    let want = format!("{MARK_VAR}={mark}");
    pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == want.as_bytes()))
        })
        .filter_map(proc_info)
        .collect()
}

/// The running descendants of `root` (a cheaper look than [`marked`], fast
/// enough to catch a storm that lasts a second on a busy machine).
fn running_tree(root: i32) -> Vec<Proc> {
    let all: Vec<Proc> = pids().into_iter().filter_map(proc_info).collect();
    let mut tree = std::collections::HashSet::from([root]);
    let mut grew = true;
    while grew {
        grew = false;
        for p in &all {
            if tree.contains(&p.ppid) && tree.insert(p.pid) {
                grew = true;
            }
        }
    }
    all.into_iter()
        .filter(|p| tree.contains(&p.pid) && p.state != 'Z')
        .collect()
}

/// A zombie no longer runs.
fn running(mark: &str) -> Vec<Proc> {
    marked(mark)
        .into_iter()
        .filter(|p| p.state != 'Z')
        .collect()
}

/// Kill whatever of `mark` is left and reap what was reparented here, so
/// a failing test leaves nothing behind either.
fn clean_up(mark: &str) {
    for p in marked(mark) {
        if p.state != 'Z' {
            // SAFETY: signalling a process of this test's benchmark.
            unsafe { libc::kill(p.pid, libc::SIGKILL) };
        }
    }
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: getpid has no memory effects.
    let me = unsafe { libc::getpid() };
    for p in marked(mark) {
        if p.ppid == me {
            // SAFETY: reaping a child of this process.
            unsafe { libc::waitpid(p.pid, std::ptr::null_mut(), libc::WNOHANG) };
        }
    }
}

/// numalab `args` with a fresh mark, in `dir`, its output in files there
/// (a pipe held by a leftover would block reading it).
fn start(args: &[&str], dir: &Path, env: &[(&str, &str)], own_group: bool) -> (Child, String) {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let mark = format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let mut cmd = Command::new(EXE);
    cmd.args(args)
        .env(MARK_VAR, &mark)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap());
    if own_group {
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    }
    (cmd.spawn().unwrap(), mark)
}

/// Wait (up to 2 minutes, the machine may be busy) until the running
/// processes of `mark` satisfy `ready`; numalab (`c`, writing its
/// standard error to `dir/stderr`) ending first is a failure saying why.
fn wait_for(c: &mut Child, dir: &Path, mark: &str, what: &str, ready: impl Fn(&[Proc]) -> bool) {
    let t0 = Instant::now();
    loop {
        let now = running_tree(c.id() as i32);
        if ready(&now) {
            return;
        }
        let ended = c.try_wait().unwrap();
        if ended.is_some() || t0.elapsed() > Duration::from_secs(120) {
            clean_up(mark);
            let err = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
            panic!(
                "{what} was not seen running (numalab: {}); running: {now:#?}\nstderr: {err}",
                ended.map_or("still running after 2 minutes".into(), |s| s.to_string())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many of `ps` run `numalab WORDS...` (numalab's own hidden
/// subcommands: `__task spin`, `__hackbench`), by their arguments after
/// the program, never matching numalab's own command line.
fn count(ps: &[Proc], words: &[&str]) -> usize {
    ps.iter()
        .filter(|p| p.argv.len() > words.len() && p.argv[1..=words.len()] == *words)
        .count()
}

/// How many of `ps` run exactly `argv`.
fn count_exact(ps: &[Proc], argv: &[&str]) -> usize {
    ps.iter().filter(|p| p.argv == argv).count()
}

/// Start `args`, wait until `ready` says the benchmark is in full swing,
/// `kill -9` numalab, and check one second later that none of its
/// processes is running.
fn killed_mid_run(
    args: &[&str],
    env: &[(&str, &str)],
    what: &str,
    ready: impl Fn(&[Proc]) -> bool,
) {
    let _serial = setup();
    let dir = tempfile::tempdir().unwrap();
    let (mut c, mark) = start(args, dir.path(), env, false);
    wait_for(&mut c, dir.path(), &mark, what, ready);
    let before = running(&mark).len();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
    c.wait().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let left = running(&mark);
    clean_up(&mark);
    assert!(
        left.is_empty(),
        "{what}: {} of {before} processes still running 1 s after kill -9 of numalab: {left:#?}",
        left.len()
    );
}

#[test]
fn kill_9_during_numa_tests_message_storm_leaves_nothing_running() {
    killed_mid_run(
        &["run", "numa_test", "--tasks", "2", "--size", "4000000"],
        &[("NUMALAB_NUMA_TEST_PEAK_AT", "0.2")],
        "numa_test's tasks and its storm",
        // 2 tasks, the storm and (some of) its 800 workers
        |ps| count(ps, &["__task", "randupdt"]) == 2 && count(ps, &["__hackbench"]) >= 100,
    );
}

#[test]
fn kill_9_during_numa01_leaves_nothing_running() {
    killed_mid_run(
        &["run", "numa01", "--bytes", "8M", "--threads", "1"],
        &[],
        "numa01's two processes",
        |ps| count(ps, &["__task", "autonuma"]) == 2,
    )
}

#[test]
fn kill_9_during_twohalves_leaves_nothing_running() {
    killed_mid_run(
        &["run", "twohalves", "--bytes", "8M", "--threads", "1"],
        &[],
        "twohalves's process",
        |ps| count(ps, &["__task", "autonuma"]) == 1,
    )
}

#[test]
fn kill_9_during_spin_leaves_nothing_running() {
    killed_mid_run(
        &[
            "run",
            "spin",
            "--tasks",
            "2",
            "--iterations",
            "100000000000",
            "--placement",
            "default",
        ],
        &[],
        "spin's two tasks",
        |ps| count(ps, &["__task", "spin"]) == 2,
    )
}

#[test]
fn kill_9_during_hackbench_leaves_nothing_running() {
    killed_mid_run(
        &[
            "run",
            "hackbench",
            "--groups",
            "2",
            "--fds",
            "10",
            "--loops",
            "10000000",
            "--placement",
            "default",
        ],
        &[],
        "hackbench and its 40 senders and receivers",
        |ps| count(ps, &["__hackbench"]) == 41,
    )
}

#[test]
fn kill_9_during_a_command_with_background_children_leaves_nothing_running() {
    killed_mid_run(
        &["run", "command", "--", "sh", "-c", BACKGROUND_SLEEPS],
        &[],
        "the command's sh and its two sleeps",
        sh_and_two_sleeps,
    );
}

/// `sh -c 'sleep 300 & sleep 301; wait'` and both its sleeps are running.
fn sh_and_two_sleeps(ps: &[Proc]) -> bool {
    count_exact(ps, &["sh", "-c", BACKGROUND_SLEEPS]) == 1
        && count_exact(ps, &["sleep", "300"]) == 1
        && count_exact(ps, &["sleep", "301"]) == 1
}

/// A simulated run of a second or so, to hang hooks on.
const TINY_SIM: [&str; 8] = [
    "sim",
    "--machine",
    "ht2",
    "numa02",
    "--bytes",
    "8M",
    "--loops",
    "1",
];

/// A shell with a background child and a foreground one.
const BACKGROUND_SLEEPS: &str = "sleep 300 & sleep 301; wait";

/// A hook's background jobs (here `--prepare`'s, under `sim`) die with
/// numalab too: the shell alone would (it dies with its parent), its
/// children would not.
#[test]
fn kill_9_during_a_hook_with_background_children_leaves_nothing_running() {
    killed_mid_run(
        &[TINY_SIM.as_slice(), &["--prepare", BACKGROUND_SLEEPS]].concat(),
        &[],
        "the hook's sh and its two sleeps",
        sh_and_two_sleeps,
    );
}

/// What a hook leaves running when it ends is killed then: a hook is a
/// step, not a service.
#[test]
fn a_hook_that_leaves_a_background_job_has_it_killed_when_it_ends() {
    let _serial = setup();
    let dir = tempfile::tempdir().unwrap();
    let (mut c, mark) = start(
        &[
            TINY_SIM.as_slice(),
            &["--setup", "sleep 302 &", "--prepare", "sleep 1"],
        ]
        .concat(),
        dir.path(),
        &[],
        false,
    );
    // While the first run's prepare sleeps, setup has ended: its job must
    // be gone.
    wait_for(&mut c, dir.path(), &mark, "the prepare hook", |ps| {
        count_exact(ps, &["sleep", "1"]) == 1
    });
    let left = running(&mark);
    let status = c.wait().unwrap();
    clean_up(&mark);
    assert!(status.success(), "{status}");
    assert_eq!(count_exact(&left, &["sleep", "302"]), 0, "{left:#?}");
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    let one_line = err.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        one_line.contains("numalab: warning: --setup \"sleep 302 &\" left 1 process(es) running when it ended; killed"),
        "{err}"
    );
    assert!(err.lines().all(|l| l.chars().count() <= 80), "{err}");
}

/// A `--setup-bg` service with a background child: its shell, the child
/// and the foreground sleep.
const SERVICE: &str = "sleep 303 & sleep 304; wait";

fn service_running(ps: &[Proc]) -> bool {
    count_exact(ps, &["sh", "-c", SERVICE]) == 1
        && count_exact(ps, &["sleep", "303"]) == 1
        && count_exact(ps, &["sleep", "304"]) == 1
}

/// A `--setup-bg` service dies with numalab however numalab dies: here
/// `kill -9` while a run's `--prepare` holds the run, so numalab is
/// killed with the service running, not after having stopped it.
#[test]
fn kill_9_during_the_runs_of_a_setup_bg_service_leaves_nothing_running() {
    killed_mid_run(
        &[
            TINY_SIM.as_slice(),
            &["--setup-bg", SERVICE, "--prepare", "sleep 305"],
        ]
        .concat(),
        &[],
        "the service's sh and its two sleeps, and the prepare hook",
        |ps| service_running(ps) && count_exact(ps, &["sleep", "305"]) == 1,
    );
}

/// A service deaf to SIGTERM is killed, its whole tree, once the grace
/// has passed (5 s), and numalab then ends as usual.
#[test]
fn a_setup_bg_service_deaf_to_sigterm_is_killed_after_the_grace() {
    let _serial = setup();
    let dir = tempfile::tempdir().unwrap();
    // The run waits until the service has set its trap: on a busy
    // machine the shell could otherwise be stopped before it had.
    let deaf = "trap '' TERM; touch deaf; sleep 307 & while :; do sleep 1; done";
    let ready = "while [ ! -e deaf ]; do sleep 0.05; done";
    let (mut c, mark) = start(
        &[
            TINY_SIM.as_slice(),
            &["--setup-bg", deaf, "--prepare", ready],
        ]
        .concat(),
        dir.path(),
        &[],
        false,
    );
    let t0 = Instant::now();
    let status = c.wait().unwrap();
    let took = t0.elapsed();
    let left = running(&mark);
    clean_up(&mark);
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    assert!(status.success(), "{status}: {err}");
    assert!(left.is_empty(), "left running: {left:#?}");
    // It was given the grace: SIGTERM alone would have ended nothing.
    assert!(took >= Duration::from_secs(5), "{took:?}");
    let log = std::fs::read_to_string(dir.path().join("numalab-results/hooks.log")).unwrap();
    assert!(log.contains(" setup-bg: stopped\n"), "{log}");
}

/// Ctrl-C (SIGINT to numalab's process group) and SIGTERM (to numalab
/// alone) stop the service: numalab exits 130 with none of it left.
fn setup_bg_stopped_by(signal: i32, whole_group: bool, code: i32) {
    let _serial = setup();
    let dir = tempfile::tempdir().unwrap();
    let (mut c, mark) = start(
        &[
            TINY_SIM.as_slice(),
            &["--setup-bg", SERVICE, "--prepare", "sleep 305"],
        ]
        .concat(),
        dir.path(),
        &[],
        whole_group,
    );
    wait_for(
        &mut c,
        dir.path(),
        &mark,
        "the service and the prepare",
        |ps| service_running(ps) && count_exact(ps, &["sleep", "305"]) == 1,
    );
    let pid = c.id() as i32;
    let target = if whole_group { -pid } else { pid };
    // SAFETY: signalling our own child (and its process group).
    unsafe { libc::kill(target, signal) };
    let status = c.wait().unwrap();
    let left = running(&mark);
    clean_up(&mark);
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    assert_eq!(status.code(), Some(code), "{err}");
    assert!(left.is_empty(), "left running: {left:#?}\nstderr: {err}");
}

#[test]
fn ctrl_c_stops_a_setup_bg_service() {
    setup_bg_stopped_by(libc::SIGINT, true, 130);
}

#[test]
fn sigterm_stops_a_setup_bg_service() {
    setup_bg_stopped_by(libc::SIGTERM, false, 130);
}

/// Ctrl-C during the storm: numalab exits 130 having reaped every worker.
/// Nothing of the benchmark may exist afterwards, not even a zombie (a
/// zombie left behind is reparented to this subreaper and stays visible).
fn interrupted_during_the_storm(whole_group: bool) {
    let _serial = setup();
    let dir = tempfile::tempdir().unwrap();
    let (mut c, mark) = start(
        &["run", "numa_test", "--tasks", "2", "--size", "4000000"],
        dir.path(),
        &[("NUMALAB_NUMA_TEST_PEAK_AT", "0.2")],
        whole_group,
    );
    wait_for(&mut c, dir.path(), &mark, "numa_test's storm", |ps| {
        count(ps, &["__task", "randupdt"]) == 2 && count(ps, &["__hackbench"]) >= 100
    });
    let pid = c.id() as i32;
    // A terminal's Ctrl-C signals the whole foreground process group.
    let target = if whole_group { -pid } else { pid };
    // SAFETY: signalling our own child (and its process group).
    unsafe { libc::kill(target, libc::SIGINT) };
    let status = c.wait().unwrap();
    let left = marked(&mark);
    clean_up(&mark);
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        left.is_empty(),
        "after numalab exited, {} of its processes remain (Z: zombies it did not reap): {left:#?}",
        left.len()
    );
}

#[test]
fn ctrl_c_during_the_storm_reaps_every_worker() {
    interrupted_during_the_storm(true);
}

#[test]
fn sigint_to_numalab_alone_during_the_storm_reaps_every_worker() {
    interrupted_during_the_storm(false);
}

#[test]
fn kill_9_during_forkexec_leaves_nothing_running() {
    killed_mid_run(
        &[
            "run",
            "forkexec",
            "--children",
            "1000000",
            "--jobs",
            "4",
            "--child-us",
            "20000",
        ],
        &[],
        "forkexec's parent and its children",
        |ps| count(ps, &["__forkexec"]) == 1 && count(ps, &["__task", "burst"]) >= 1,
    );
}

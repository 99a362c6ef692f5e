//! Configuration hooks: `--prepare CMD` before every repetition (untimed),
//! `--setup CMD` and `--cleanup CMD` once per configuration, and the
//! service `--setup-bg CMD`, kept running through the configuration's
//! runs. Each runs as `sh -c CMD` under numalab's supervisor
//! (numalab_linux::supervise), like `numalab run command`: whatever a hook
//! starts (a background job, a daemon) is killed when the hook ends, on
//! Ctrl-C, and when numalab dies however it dies, SIGKILL included. Where
//! no supervisor is available (a library's unit tests) the shell runs in
//! its own process group, dies with numalab and is killed with its group
//! on Ctrl-C.
//!
//! A hook runs in the benchmark's directory where it has one (`run command
//! --cwd DIR`), else in numalab's. Its output goes to numalab's standard
//! error as it comes and to the invocation's hook log ([`HookLog`],
//! `RESULTS/hooks.log`), and a failing hook's error carries its last lines
//! (a hook that failed in a guest said only "exit 2").
//!
//! A service ([`Service`]) is started after `--setup` when its
//! configuration becomes active and stopped when it stops being active
//! (SIGTERM to its process group, SIGKILL to its whole tree after
//! [`STOP_GRACE`]): after the configuration's last run, on a failure, on
//! Ctrl-C and SIGTERM; its supervisor kills it when numalab is SIGKILLed.
//! A service that ends on its own before the runs are done fails them.

use crate::interrupt::Interrupt;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// `sh -c CMD` in its own process group, in `cwd` where given, both
/// output streams to `out`, dying with numalab (the fallback where no
/// supervisor is available). Our ends of the output pipe go with the
/// command, so the output ends when the shell's group does.
fn spawn_shell(
    cmd: &str,
    cwd: Option<&Path>,
    out: std::io::PipeWriter,
) -> std::io::Result<std::process::Child> {
    let argv = ["sh".to_string(), "-c".to_string(), cmd.to_string()];
    spawn_argv(&argv, cwd, out)
}

/// [`spawn_shell`] for a program and its arguments (`argv` not empty).
fn spawn_argv(
    argv: &[String],
    cwd: Option<&Path>,
    out: std::io::PipeWriter,
) -> std::io::Result<std::process::Child> {
    let err = out.try_clone()?;
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    numalab_linux::child::die_with_parent(&mut c);
    let spawned = c.spawn();
    drop(c);
    spawned
}

/// How many of a failing hook's last output lines its error carries.
pub const TAIL_LINES: usize = 5;

/// How long a stopped `--setup-bg` service has between SIGTERM and
/// SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// The hook log's name in the results directory.
pub const LOG_NAME: &str = "hooks.log";

/// Hook output kept before the results directory exists, at most.
const PENDING_MAX: usize = 1 << 20;

/// The invocation's hook log, `RESULTS/hooks.log`: every hook's output,
/// each line prefixed with the time and the hook, between a line saying
/// what started and one saying how it ended. Each invocation creates a
/// file of its own (`O_EXCL`: never opened through a name that exists, so
/// a link planted in the directory is not written through): `hooks.log`,
/// or for a later invocation into the same directory `hooks.2.log`,
/// `hooks.3.log` and so on ([`HookLog::path`] says which). A results directory is made when its first
/// record is written, so until it exists the lines wait in memory (at most
/// 1 MiB; an invocation that ends before it, a failed `--setup`, leaves
/// no directory and the failure's last lines in its error).
#[derive(Clone)]
pub struct HookLog(Arc<Mutex<LogState>>);

struct LogState {
    dir: PathBuf,
    file: Option<std::fs::File>,
    /// The file's name in `dir`, once created.
    name: String,
    pending: Vec<u8>,
    dropped: bool,
    failed: bool,
}

impl HookLog {
    /// The log of results directory `dir`; nothing is created yet.
    pub fn new(dir: &Path) -> HookLog {
        HookLog(Arc::new(Mutex::new(LogState {
            dir: dir.to_path_buf(),
            file: None,
            name: LOG_NAME.to_string(),
            pending: Vec::new(),
            dropped: false,
            failed: false,
        })))
    }

    /// One line of hook `which` (`setup`, `prepare`, ...).
    pub fn line(&self, which: &str, text: &str) {
        let stamp = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        let l = format!("{stamp} {which}: {text}\n");
        if let Ok(mut st) = self.0.lock() {
            st.write(l.as_bytes());
        }
    }

    /// Write what waited for the directory, if it exists now.
    pub fn flush(&self) {
        if let Ok(mut st) = self.0.lock() {
            st.write(b"");
        }
    }

    /// The log's path (before it is created: the name it would have if
    /// it were the directory's first).
    pub fn path(&self) -> PathBuf {
        self.0
            .lock()
            .map(|st| st.dir.join(&st.name))
            .unwrap_or_default()
    }
}

/// Create this invocation's log in `dir`: the first of `hooks.log`,
/// `hooks.2.log`, ... that does not exist yet.
fn create_log(dir: &Path) -> std::io::Result<(std::fs::File, String)> {
    let (stem, ext) = LOG_NAME
        .rsplit_once('.')
        .expect("the log name has an extension");
    for n in 1..=1000u32 {
        let name = match n {
            1 => LOG_NAME.to_string(),
            n => format!("{stem}.{n}.{ext}"),
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(dir.join(&name))
        {
            Ok(f) => return Ok((f, name)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("1000 hook logs exist already"))
}

impl LogState {
    fn write(&mut self, bytes: &[u8]) {
        // Nothing to write: no file (a run with no hook leaves none).
        if self.failed || (bytes.is_empty() && self.pending.is_empty() && !self.dropped) {
            return;
        }
        if self.file.is_none() && self.dir.is_dir() {
            match create_log(&self.dir) {
                Ok((f, name)) => {
                    self.file = Some(f);
                    self.name = name;
                }
                Err(e) => {
                    self.failed = true;
                    numalab_linux::errln!(
                        "numalab: warning: {}: {e}; hook output not kept",
                        self.dir.join(LOG_NAME).display()
                    );
                    return;
                }
            }
        }
        match &mut self.file {
            Some(f) => {
                if !self.pending.is_empty() {
                    if self.dropped {
                        self.pending
                            .extend_from_slice(b"numalab: (hook output over 1 MiB before the results directory existed was dropped)\n");
                        self.dropped = false;
                    }
                    let _ = f.write_all(&std::mem::take(&mut self.pending));
                }
                if !bytes.is_empty() {
                    let _ = f.write_all(bytes);
                }
            }
            None if self.pending.len() + bytes.len() <= PENDING_MAX => {
                self.pending.extend_from_slice(bytes)
            }
            None => self.dropped = true,
        }
    }
}

/// Why a hook failed, in one line.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("--{which} {cmd:?} could not start: {err}")]
    Start {
        which: &'static str,
        cmd: String,
        err: std::io::Error,
    },
    #[error("--{which} {cmd:?} failed ({status}){}", tail_text(.tail))]
    Failed {
        which: &'static str,
        cmd: String,
        status: String,
        /// Its last output lines, oldest first.
        tail: Vec<String>,
    },
    /// A `--setup-bg` service (or a sched_ext scheduler, `--scx`) ended
    /// before its configuration's runs did.
    #[error("--{which} {cmd:?} ended before the runs were done ({status}){}", tail_text(.tail))]
    Ended {
        which: &'static str,
        cmd: String,
        status: String,
        tail: Vec<String>,
    },
    #[error("interrupted during --{which}")]
    Interrupted { which: &'static str },
}

/// Longest line an error quotes.
const QUOTED_CHARS: usize = 200;
/// Longest line kept (a sched_ext loader's exit record is one line of
/// JSON with a message of up to 1 KiB).
const KEPT_CHARS: usize = 4096;

pub(crate) fn tail_text(tail: &[String]) -> String {
    if tail.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = tail
        .iter()
        .map(|l| l.chars().take(QUOTED_CHARS).collect())
        .collect();
    format!("; its last output: {}", quoted.join(" | "))
}

/// Run `cmd` through `sh -c` in `cwd` (numalab's directory when `None`),
/// its output to numalab's standard error and to `log`.
pub fn run(
    which: &'static str,
    cmd: &str,
    cwd: Option<&Path>,
    log: Option<&HookLog>,
    interrupt: &Interrupt,
) -> Result<(), HookError> {
    if let Some(l) = log {
        l.line(which, &format!("$ {cmd}"));
    }
    let tail = Tail::start(which, log.cloned(), true).map_err(|err| HookError::Start {
        which,
        cmd: cmd.to_string(),
        err,
    })?;
    let (tail, writer) = tail;
    let r = match numalab_linux::supervise::exe() {
        Some(exe) => supervised(exe, which, cmd, cwd, writer, interrupt),
        None => unsupervised(which, cmd, cwd, writer, interrupt),
    };
    let r = match r {
        Err(HookError::Failed {
            which, cmd, status, ..
        }) => Err(HookError::Failed {
            which,
            cmd,
            status,
            tail: tail.lines(),
        }),
        r => {
            tail.wait();
            r
        }
    };
    if let Some(l) = log {
        let end = match &r {
            Ok(()) => "ended: exit status: 0".to_string(),
            Err(HookError::Failed { status, .. }) => format!("failed: {status}"),
            Err(e) => e.to_string(),
        };
        l.line(which, &end);
    }
    r
}

/// A hook's output, copied line by line to numalab's standard error (with
/// `echo`) and to the hook log, its last lines kept for the error of a
/// failing hook.
struct Tail {
    last: Arc<Mutex<VecDeque<String>>>,
    eof: mpsc::Receiver<()>,
    ended: std::sync::atomic::AtomicBool,
}

impl Tail {
    fn start(
        which: &'static str,
        log: Option<HookLog>,
        echo: bool,
    ) -> std::io::Result<(Tail, std::io::PipeWriter)> {
        let (reader, writer) = std::io::pipe()?;
        let last = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, eof) = mpsc::channel();
        let keep = last.clone();
        std::thread::spawn(move || {
            let mut r = BufReader::new(reader);
            let mut buf = Vec::new();
            while let Ok(n) = r.read_until(b'\n', &mut buf) {
                if n == 0 {
                    break;
                }
                // Standard error, not standard output: hook output must
                // not mix into the per-run lines and tables.
                if echo {
                    let _ = std::io::stderr().write_all(&buf);
                }
                let raw = String::from_utf8_lossy(&buf);
                let raw = raw.trim_end_matches(['\n', '\r']);
                if let Some(l) = &log {
                    l.line(which, raw);
                }
                let line: String = raw
                    .trim_end()
                    .chars()
                    .map(|c| if c.is_control() { '?' } else { c })
                    .take(KEPT_CHARS)
                    .collect();
                if let Ok(mut l) = keep.lock() {
                    if l.len() == TAIL_LINES {
                        l.pop_front();
                    }
                    l.push_back(line);
                }
                buf.clear();
            }
            let _ = tx.send(());
        });
        Ok((
            Tail {
                last,
                eof,
                ended: false.into(),
            },
            writer,
        ))
    }

    /// Wait for the output to end (at most half a second, if something
    /// the hook started still holds it), so that the log has it all
    /// before the line saying how the hook ended.
    fn wait(&self) {
        use std::sync::atomic::Ordering;
        if !self.ended.load(Ordering::Relaxed)
            && !matches!(
                self.eof.recv_timeout(Duration::from_millis(500)),
                Err(mpsc::RecvTimeoutError::Timeout)
            )
        {
            self.ended.store(true, Ordering::Relaxed);
        }
    }

    /// The last lines, once the output has ended (or half a second on,
    /// if something the hook started still holds it).
    fn lines(&self) -> Vec<String> {
        self.wait();
        self.last
            .lock()
            .map(|l| l.iter().filter(|s| !s.is_empty()).cloned().collect())
            .unwrap_or_default()
    }
}

/// A `--setup-bg` service: `sh -c CMD` kept running (under a supervisor
/// where numalab has one) until [`Service::stop`], its output in the hook
/// log only (it would break the progress bar on standard error).
pub struct Service {
    which: &'static str,
    cmd: String,
    log: Option<HookLog>,
    tail: Tail,
    proc: ServiceProc,
    /// How it ended on its own, once seen.
    ended: Option<String>,
}

enum ServiceProc {
    Supervised(Option<numalab_linux::supervise::Supervisor>),
    Plain(std::process::Child),
}

const BG: &str = "setup-bg";

impl Service {
    /// Start `cmd` through `sh -c` in `cwd`.
    pub fn start(cmd: &str, cwd: Option<&Path>, log: Option<&HookLog>) -> Result<Self, HookError> {
        Service::start_as(BG, cmd, cwd, log)
    }

    /// [`Service::start`], its lines and errors named by `which`
    /// (`setup-bg`, `scx`).
    pub fn start_as(
        which: &'static str,
        cmd: &str,
        cwd: Option<&Path>,
        log: Option<&HookLog>,
    ) -> Result<Self, HookError> {
        let argv = ["sh".to_string(), "-c".to_string(), cmd.to_string()];
        Service::start_argv(which, cmd, &argv, cwd, log)
    }

    /// A program with its arguments, no shell between (numalab's own
    /// sched_ext loader, which must start where there is no shell: a
    /// guest with `--rootfs initramfs`); `shown` is how lines and errors
    /// name it.
    pub fn start_argv(
        which: &'static str,
        shown: &str,
        argv: &[String],
        cwd: Option<&Path>,
        log: Option<&HookLog>,
    ) -> Result<Self, HookError> {
        let start_err = |err: std::io::Error| HookError::Start {
            which,
            cmd: shown.to_string(),
            err,
        };
        if argv.is_empty() {
            return Err(start_err(std::io::Error::other("no program")));
        }
        if let Some(l) = log {
            l.line(which, &format!("$ {shown}"));
        }
        let (tail, out) = Tail::start(which, log.cloned(), false).map_err(start_err)?;
        let proc = match numalab_linux::supervise::exe() {
            Some(exe) => {
                let out = std::fs::File::from(std::os::fd::OwnedFd::from(out));
                let sup = numalab_linux::supervise::Supervisor::start(exe, argv, cwd, None, out)
                    .map_err(start_err)?;
                ServiceProc::Supervised(Some(sup))
            }
            None => ServiceProc::Plain(spawn_argv(argv, cwd, out).map_err(start_err)?),
        };
        Ok(Service {
            which,
            cmd: shown.to_string(),
            log: log.cloned(),
            tail,
            proc,
            ended: None,
        })
    }

    /// Whether it still runs: [`HookError::Ended`] with its exit status
    /// and last output lines once it has ended.
    pub fn check(&mut self) -> Result<(), HookError> {
        use numalab_linux::supervise::Event;
        if self.ended.is_none() {
            self.ended = match &mut self.proc {
                ServiceProc::Supervised(Some(sup)) => loop {
                    match sup.recv_timeout(Duration::ZERO) {
                        Ok(Event::Exited { exit, .. }) => break Some(exit.describe()),
                        Ok(Event::Failed(why)) => break Some(why),
                        Ok(_) => {}
                        Err(mpsc::RecvTimeoutError::Timeout) => break None,
                        Err(mpsc::RecvTimeoutError::Disconnected) => {
                            break Some("its supervisor ended".into())
                        }
                    }
                },
                ServiceProc::Supervised(None) => Some("stopped".into()),
                ServiceProc::Plain(child) => match child.try_wait() {
                    Ok(Some(st)) => Some(st.to_string()),
                    Ok(None) => None,
                    Err(e) => Some(e.to_string()),
                },
            };
            if let (Some(status), Some(l)) = (&self.ended, &self.log) {
                self.tail.wait();
                l.line(self.which, &format!("ended on its own: {status}"));
            }
        }
        match &self.ended {
            None => Ok(()),
            Some(status) => Err(HookError::Ended {
                which: self.which,
                cmd: self.cmd.clone(),
                status: status.clone(),
                tail: self.tail.lines(),
            }),
        }
    }

    /// Stop it: SIGTERM to its process group, SIGKILL to everything of it
    /// that is left after `grace` (or once the shell has ended). Its last
    /// output lines, oldest first.
    pub fn stop(mut self, grace: Duration) -> Vec<String> {
        let was_running = self.check().is_ok();
        match &mut self.proc {
            ServiceProc::Supervised(sup) => {
                if let Some(sup) = sup.take() {
                    if let Err(e) = sup.terminate(grace) {
                        numalab_linux::errln!("numalab: warning: stopping --{}: {e}", self.which);
                    }
                }
            }
            ServiceProc::Plain(child) => stop_plain(child, grace),
        }
        if let (true, Some(l)) = (was_running, &self.log) {
            self.tail.wait();
            l.line(self.which, "stopped");
        }
        self.tail.lines()
    }

    /// Its last output lines, oldest first (once its output has ended,
    /// or half a second on).
    pub fn last_lines(&self) -> Vec<String> {
        self.tail.lines()
    }
}

/// SIGTERM to the group, SIGKILL after `grace`, reaped.
fn stop_plain(child: &mut std::process::Child, grace: Duration) {
    let pid = child.id() as i32;
    if matches!(child.try_wait(), Ok(None)) {
        // The service's own process group, unreaped.
        numalab_linux::child::signal(-pid, libc::SIGTERM);
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(5));
        }
        if matches!(child.try_wait(), Ok(None)) {
            numalab_linux::child::signal(-pid, libc::SIGKILL);
        }
    }
    let _ = child.wait();
}

impl Drop for Service {
    /// An error path or a panic: killed at once.
    fn drop(&mut self) {
        match &mut self.proc {
            ServiceProc::Supervised(sup) => drop(sup.take()),
            ServiceProc::Plain(child) => stop_plain(child, Duration::ZERO),
        }
    }
}

fn supervised(
    exe: &std::path::Path,
    which: &'static str,
    cmd: &str,
    cwd: Option<&Path>,
    out: std::io::PipeWriter,
    interrupt: &Interrupt,
) -> Result<(), HookError> {
    use numalab_linux::supervise::{Event, Supervisor};
    use std::sync::mpsc::RecvTimeoutError;
    let start_err = |err: std::io::Error| HookError::Start {
        which,
        cmd: cmd.to_string(),
        err,
    };
    let failed = |status: String| HookError::Failed {
        which,
        cmd: cmd.to_string(),
        status,
        tail: Vec::new(),
    };
    let argv = ["sh".to_string(), "-c".to_string(), cmd.to_string()];
    let out = std::fs::File::from(std::os::fd::OwnedFd::from(out));
    let sup = Supervisor::start(exe, &argv, cwd, None, out).map_err(start_err)?;
    loop {
        if interrupt.is_set() {
            let _ = sup.stop();
            return Err(HookError::Interrupted { which });
        }
        match sup.recv_timeout(Duration::from_millis(10)) {
            Ok(Event::Exited { exit, .. }) => {
                // What the hook left running is killed here, and said: a
                // load meant to run beside the benchmark belongs in it.
                let left = sup.finish().map_err(|e| failed(e.to_string()))?;
                if left > 0 {
                    let w = format!(
                        "numalab: warning: --{which} {cmd:?} left {left} process(es) running when it ended; killed (a hook is a step: run a background load inside the benchmark)"
                    );
                    for l in numalab_linux::out::wrap(&w, 80) {
                        numalab_linux::errln!("{l}");
                    }
                }
                return if exit.success() {
                    Ok(())
                } else {
                    Err(failed(exit.describe()))
                };
            }
            Ok(Event::Failed(why)) => {
                let _ = sup.stop();
                return Err(failed(why));
            }
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                let why = match sup.stop() {
                    Err(e) => e.to_string(),
                    Ok(_) => "its supervisor ended first".into(),
                };
                return Err(failed(why));
            }
        }
    }
}

fn unsupervised(
    which: &'static str,
    cmd: &str,
    cwd: Option<&Path>,
    out: std::io::PipeWriter,
    interrupt: &Interrupt,
) -> Result<(), HookError> {
    let start_err = |err: std::io::Error| HookError::Start {
        which,
        cmd: cmd.to_string(),
        err,
    };
    let mut child = spawn_shell(cmd, cwd, out).map_err(start_err)?;
    let pid = child.id() as i32;
    loop {
        if interrupt.is_set() {
            // The hook's own process group.
            numalab_linux::child::signal(-pid, libc::SIGKILL);
            let _ = child.wait();
            return Err(HookError::Interrupted { which });
        }
        match child.try_wait() {
            Ok(Some(st)) if st.success() => return Ok(()),
            Ok(Some(st)) => {
                return Err(HookError::Failed {
                    which,
                    cmd: cmd.to_string(),
                    status: st.to_string(),
                    tail: Vec::new(),
                })
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                return Err(HookError::Failed {
                    which,
                    cmd: cmd.to_string(),
                    status: e.to_string(),
                    tail: Vec::new(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_failure_and_missing() {
        let i = Interrupt::never();
        assert!(run("prepare", "true", None, None, &i).is_ok());
        let e = run("setup", "exit 3", None, None, &i)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--setup") && e.contains("exit status: 3"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x");
        run(
            "prepare",
            &format!("echo hi > {}", f.display()),
            None,
            None,
            &i,
        )
        .unwrap();
        assert_eq!(std::fs::read_to_string(f).unwrap(), "hi\n");
    }

    #[test]
    fn hooks_run_in_cwd_and_failures_say_their_last_lines() {
        let i = Interrupt::never();
        let dir = tempfile::tempdir().unwrap();
        run("prepare", "echo here > marker", Some(dir.path()), None, &i).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("marker")).unwrap(),
            "here\n"
        );
        let e = run(
            "setup",
            "for i in 1 2 3 4 5 6 7; do echo line $i; done; echo oops >&2; exit 2",
            None,
            None,
            &i,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("exit status: 2"), "{e}");
        assert!(
            e.ends_with("its last output: line 4 | line 5 | line 6 | line 7 | oops"),
            "{e}"
        );
    }

    #[test]
    fn interrupted_hooks_stop() {
        let i = Interrupt::never();
        i.set();
        let e = run("prepare", "sleep 30", None, None, &i).unwrap_err();
        assert!(matches!(e, HookError::Interrupted { .. }));
    }

    /// Wait for `cond`, at most 20 s.
    fn eventually(mut cond: impl FnMut() -> bool) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            if cond() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    fn alive(pid: i32) -> bool {
        // Alive and not a zombie.
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, r)| !r.starts_with('Z'))
        })
    }

    fn pid_in(path: &Path) -> Option<i32> {
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    }

    #[test]
    fn a_service_runs_across_hooks_and_is_stopped() {
        let i = Interrupt::never();
        let dir = tempfile::tempdir().unwrap();
        let log = HookLog::new(dir.path());
        let mut svc = Service::start(
            "echo service up; sleep 1000 & echo $! > pid; wait",
            Some(dir.path()),
            Some(&log),
        )
        .unwrap();
        let pidfile = dir.path().join("pid");
        assert!(eventually(|| pid_in(&pidfile).is_some()), "no pid file");
        let pid = pid_in(&pidfile).unwrap();
        // Three "runs": each prepare finds the service's sleep alive.
        for _ in 0..3 {
            run(
                "prepare",
                "kill -0 $(cat pid)",
                Some(dir.path()),
                Some(&log),
                &i,
            )
            .unwrap();
            svc.check().unwrap();
        }
        assert!(alive(pid));
        svc.stop(STOP_GRACE);
        assert!(eventually(|| !alive(pid)), "the service's sleep survived");
        let text = std::fs::read_to_string(dir.path().join(LOG_NAME)).unwrap();
        assert!(text.contains(" setup-bg: $ echo service up"), "{text}");
        assert!(text.contains(" setup-bg: service up\n"), "{text}");
        assert!(text.contains(" prepare: $ kill -0 $(cat pid)\n"), "{text}");
        assert!(text.contains(" prepare: ended: exit status: 0\n"), "{text}");
        assert!(text.contains(" setup-bg: stopped\n"), "{text}");
    }

    #[test]
    fn a_service_that_ends_says_how_with_its_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut svc =
            Service::start("echo starting; echo no port >&2; exit 7", None, None).unwrap();
        assert!(eventually(|| svc.check().is_err()), "its end was not seen");
        let e = svc.check().unwrap_err().to_string();
        assert!(e.starts_with("--setup-bg \"echo starting;"), "{e}");
        assert!(e.contains("ended before the runs were done"), "{e}");
        assert!(e.contains("7"), "{e}");
        assert!(e.ends_with("its last output: starting | no port"), "{e}");
        assert!(!e.contains('\n'));
        svc.stop(STOP_GRACE);
        drop(dir);
    }

    #[test]
    fn a_service_deaf_to_sigterm_is_killed_after_the_grace() {
        let dir = tempfile::tempdir().unwrap();
        let svc = Service::start(
            "trap '' TERM; sleep 1000 & echo $! > pid; while :; do sleep 1; done",
            Some(dir.path()),
            None,
        )
        .unwrap();
        let pidfile = dir.path().join("pid");
        assert!(eventually(|| pid_in(&pidfile).is_some()), "no pid file");
        let pid = pid_in(&pidfile).unwrap();
        svc.stop(Duration::from_millis(300));
        assert!(eventually(|| !alive(pid)), "the service's sleep survived");
    }

    #[test]
    fn the_hook_log_waits_for_the_results_directory() {
        let d = tempfile::tempdir().unwrap();
        let results = d.path().join("results");
        let log = HookLog::new(&results);
        let i = Interrupt::never();
        run("setup", "echo before", None, Some(&log), &i).unwrap();
        assert!(!results.exists(), "a hook made the results directory");
        std::fs::create_dir(&results).unwrap();
        log.flush();
        run("cleanup", "echo after", None, Some(&log), &i).unwrap();
        let text = std::fs::read_to_string(results.join(LOG_NAME)).unwrap();
        let lines: Vec<&str> = text.lines().map(|l| l.split_once(' ').unwrap().1).collect();
        assert_eq!(
            lines,
            [
                "setup: $ echo before",
                "setup: before",
                "setup: ended: exit status: 0",
                "cleanup: $ echo after",
                "cleanup: after",
                "cleanup: ended: exit status: 0",
            ]
        );
        // A link planted at the name is not written through.
        let other = d.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::os::unix::fs::symlink(d.path().join("target"), other.join(LOG_NAME)).unwrap();
        let log = HookLog::new(&other);
        run("setup", "echo x", None, Some(&log), &i).unwrap();
        assert!(!d.path().join("target").exists());
        assert_eq!(log.path(), other.join("hooks.2.log"));
        // Nor is a hard link: the invocation makes a file of its own.
        let third = d.path().join("third");
        std::fs::create_dir(&third).unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "mine\n").unwrap();
        std::fs::hard_link(&victim, third.join(LOG_NAME)).unwrap();
        std::fs::hard_link(&victim, third.join("hooks.2.log")).unwrap();
        let log = HookLog::new(&third);
        run("setup", "echo y", None, Some(&log), &i).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
        assert_eq!(log.path(), third.join("hooks.3.log"));
        let text = std::fs::read_to_string(third.join("hooks.3.log")).unwrap();
        assert!(text.contains("setup: y\n"), "{text}");
    }
}

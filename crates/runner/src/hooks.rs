//! Configuration hooks: `--prepare CMD` before every repetition (untimed),
//! `--setup CMD` and `--cleanup CMD` once per configuration. Each runs as
//! `sh -c CMD` under numalab's supervisor (numalab_linux::supervise), like
//! `numalab run command`: whatever the hook starts (a background job, a
//! daemon) is killed when the hook ends, on Ctrl-C, and when numalab dies
//! however it dies, SIGKILL included. Where no supervisor is available (a
//! library's unit tests) the shell runs in its own process group, dies
//! with numalab and is killed with its group on Ctrl-C.
//!
//! A hook runs in the benchmark's directory where it has one (`run command
//! --cwd DIR`), else in numalab's. Its output goes to numalab's standard
//! error as it comes, and a failing hook's error carries its last lines
//! (a hook that failed in a guest said only "exit 2").

use crate::interrupt::Interrupt;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// How many of a failing hook's last output lines its error carries.
pub const TAIL_LINES: usize = 5;

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
    #[error("interrupted during --{which}")]
    Interrupted { which: &'static str },
}

fn tail_text(tail: &[String]) -> String {
    if tail.is_empty() {
        return String::new();
    }
    format!("; its last output: {}", tail.join(" | "))
}

/// Run `cmd` through `sh -c` in `cwd` (numalab's directory when `None`),
/// its output to numalab's standard error.
pub fn run(
    which: &'static str,
    cmd: &str,
    cwd: Option<&Path>,
    interrupt: &Interrupt,
) -> Result<(), HookError> {
    let tail = Tail::start().map_err(|err| HookError::Start {
        which,
        cmd: cmd.to_string(),
        err,
    })?;
    let (tail, writer) = tail;
    let r = match numalab_linux::supervise::exe() {
        Some(exe) => supervised(exe, which, cmd, cwd, writer, interrupt),
        None => unsupervised(which, cmd, cwd, writer, interrupt),
    };
    match r {
        Err(HookError::Failed {
            which, cmd, status, ..
        }) => Err(HookError::Failed {
            which,
            cmd,
            status,
            tail: tail.lines(),
        }),
        r => r,
    }
}

/// A hook's output, copied to numalab's standard error line by line, its
/// last lines kept for the error of a failing hook.
struct Tail {
    last: Arc<Mutex<VecDeque<String>>>,
    eof: mpsc::Receiver<()>,
}

impl Tail {
    fn start() -> std::io::Result<(Tail, std::io::PipeWriter)> {
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
                let _ = std::io::stderr().write_all(&buf);
                let line = String::from_utf8_lossy(&buf);
                let line: String = line
                    .trim_end()
                    .chars()
                    .map(|c| if c.is_control() { '?' } else { c })
                    .take(200)
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
        Ok((Tail { last, eof }, writer))
    }

    /// The last lines, once the output has ended (or half a second on,
    /// if something the hook started still holds it).
    fn lines(&self) -> Vec<String> {
        let _ = self.eof.recv_timeout(Duration::from_millis(500));
        self.last
            .lock()
            .map(|l| l.iter().filter(|s| !s.is_empty()).cloned().collect())
            .unwrap_or_default()
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
    let err = out.try_clone().map_err(start_err)?;
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    numalab_linux::child::die_with_parent(&mut c);
    let spawned = c.spawn();
    // Our ends of the output pipe go with the command, so the output ends
    // when the hook's group does.
    drop(c);
    let mut child = spawned.map_err(start_err)?;
    let pid = child.id() as i32;
    loop {
        if interrupt.is_set() {
            // SAFETY: kill of the hook's own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
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
        assert!(run("prepare", "true", None, &i).is_ok());
        let e = run("setup", "exit 3", None, &i).unwrap_err().to_string();
        assert!(e.contains("--setup") && e.contains("exit status: 3"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x");
        run("prepare", &format!("echo hi > {}", f.display()), None, &i).unwrap();
        assert_eq!(std::fs::read_to_string(f).unwrap(), "hi\n");
    }

    #[test]
    fn hooks_run_in_cwd_and_failures_say_their_last_lines() {
        let i = Interrupt::never();
        let dir = tempfile::tempdir().unwrap();
        run("prepare", "echo here > marker", Some(dir.path()), &i).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("marker")).unwrap(),
            "here\n"
        );
        let e = run(
            "setup",
            "for i in 1 2 3 4 5 6 7; do echo line $i; done; echo oops >&2; exit 2",
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
        let e = run("prepare", "sleep 30", None, &i).unwrap_err();
        assert!(matches!(e, HookError::Interrupted { .. }));
    }
}

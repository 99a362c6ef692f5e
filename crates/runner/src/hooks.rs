//! Configuration hooks: `--prepare CMD` before every repetition (untimed),
//! `--setup CMD` and `--cleanup CMD` once per configuration. Each runs as
//! `sh -c CMD` under numalab's supervisor (numalab_linux::supervise), like
//! `numalab run command`: whatever the hook starts (a background job, a
//! daemon) is killed when the hook ends, on Ctrl-C, and when numalab dies
//! however it dies, SIGKILL included. Where no supervisor is available (a
//! library's unit tests) the shell runs in its own process group, dies
//! with numalab and is killed with its group on Ctrl-C.

use crate::interrupt::Interrupt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Why a hook failed, in one line.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("--{which} {cmd:?} could not start: {err}")]
    Start {
        which: &'static str,
        cmd: String,
        err: std::io::Error,
    },
    #[error("--{which} {cmd:?} failed ({status})")]
    Failed {
        which: &'static str,
        cmd: String,
        status: String,
    },
    #[error("interrupted during --{which}")]
    Interrupted { which: &'static str },
}

/// Run `cmd` through `sh -c`, its output to numalab's standard error.
pub fn run(which: &'static str, cmd: &str, interrupt: &Interrupt) -> Result<(), HookError> {
    match numalab_linux::supervise::exe() {
        Some(exe) => supervised(exe, which, cmd, interrupt),
        None => unsupervised(which, cmd, interrupt),
    }
}

/// Standard error, duplicated: hook output must not mix into the per-run
/// lines and tables on standard output.
fn stderr_dup() -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::AsFd;
    std::io::stderr().as_fd().try_clone_to_owned()
}

fn supervised(
    exe: &std::path::Path,
    which: &'static str,
    cmd: &str,
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
    };
    let out = stderr_dup().map_err(start_err)?;
    let argv = ["sh".to_string(), "-c".to_string(), cmd.to_string()];
    let sup =
        Supervisor::start(exe, &argv, None, None, std::fs::File::from(out)).map_err(start_err)?;
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

fn unsupervised(which: &'static str, cmd: &str, interrupt: &Interrupt) -> Result<(), HookError> {
    let out = match stderr_dup() {
        Ok(fd) => Stdio::from(fd),
        Err(_) => Stdio::null(),
    };
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::inherit())
        .process_group(0);
    numalab_linux::child::die_with_parent(&mut c);
    let mut child = c.spawn().map_err(|err| HookError::Start {
        which,
        cmd: cmd.to_string(),
        err,
    })?;
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
                })
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                return Err(HookError::Failed {
                    which,
                    cmd: cmd.to_string(),
                    status: e.to_string(),
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
        assert!(run("prepare", "true", &i).is_ok());
        let e = run("setup", "exit 3", &i).unwrap_err().to_string();
        assert!(e.contains("--setup") && e.contains("exit status: 3"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x");
        run("prepare", &format!("echo hi > {}", f.display()), &i).unwrap();
        assert_eq!(std::fs::read_to_string(f).unwrap(), "hi\n");
    }

    #[test]
    fn interrupted_hooks_stop() {
        let i = Interrupt::never();
        i.set();
        let e = run("prepare", "sleep 30", &i).unwrap_err();
        assert!(matches!(e, HookError::Interrupted { .. }));
    }
}

//! Configuration hooks: `--prepare CMD` before every repetition (untimed),
//! `--setup CMD` and `--cleanup CMD` once per configuration. Each runs as
//! `sh -c CMD` in its own process group, dies with numalab, and is killed
//! with its group on Ctrl-C.

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
    use std::os::fd::AsFd;
    // Hook output goes to standard error: it must not mix into the
    // per-run lines and tables on standard output.
    let out = match std::io::stderr().as_fd().try_clone_to_owned() {
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

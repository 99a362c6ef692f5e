//! A configuration's sched_ext scheduler (`--scx`, `--scx-exec`), where
//! the runner itself runs it: on this machine, or in a guest's PID 1.
//!
//! The scheduler is a process kept as a [`hooks::Service`] is (under the
//! supervisor where numalab has one, so it dies with numalab, SIGKILL
//! included, and the kernel unregisters its scheduler when its BPF link
//! closes), and it counts as loaded only when `/sys/kernel/sched_ext`
//! says so ([`sched_ext::wait_enabled`]). Stopping it is SIGTERM to its
//! process group, on which numalab's loader and the scx schedulers
//! unload; numalab's loader prints how the scheduler ended.

use crate::hooks::{self, HookLog, Service};
use numalab_linux::sched_ext::{self, ExitInfo, Scx, Status};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a scheduler may take to be enabled.
const ENABLE_TIMEOUT: Duration = Duration::from_secs(40);

/// What the log and errors call it.
const WHICH: &str = "scx";

/// How long a scheduler's program may take to exit once the kernel has
/// disabled its scheduler (numalab's loader polls every 50 ms and waits
/// up to 5 s for the kernel's exit record).
pub const EXIT_WAIT: Duration = Duration::from_secs(6);

/// Why a scheduler did not load; each message begins with its flag
/// (`--scx NAME`), but a command numalab cannot run and a process that
/// did not start, which say so in their own words.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// This kernel has no sched_ext (why not, as sysfs shows it).
    #[error("{flag}: {why}")]
    Unsupported { flag: String, why: String },
    /// `/sys/kernel/sched_ext` could not be read.
    #[error("{flag}: {why}")]
    Status { flag: String, why: String },
    /// Another scheduler is loaded (as sysfs describes it).
    #[error("{flag}: a sched_ext scheduler is already loaded ({loaded})")]
    AlreadyLoaded { flag: String, loaded: String },
    /// The command holds a character a shell would read.
    #[error(transparent)]
    Command(#[from] numalab_linux::shell::ControlChar),
    /// Its process did not start.
    #[error(transparent)]
    Spawn(#[from] hooks::HookError),
    /// It started but the kernel did not enable it (what was last seen),
    /// with the scheduler's last output.
    #[error("{flag}: {why}{}", hooks::tail_text(tail))]
    NotEnabled {
        flag: String,
        why: String,
        tail: Vec<String>,
    },
}

/// A scheduler running, as loaded.
pub struct Loaded {
    pub scx: Scx,
    /// What sysfs said once it was enabled.
    pub status: Status,
    service: Service,
    root: PathBuf,
}

impl Loaded {
    /// Start `scx` (numalab's own through `exe __scx-load`) and wait
    /// until the kernel has enabled it; one line on failure, with the
    /// scheduler's last output.
    pub fn start(
        scx: &Scx,
        exe: &Path,
        root: &Path,
        log: Option<&HookLog>,
    ) -> Result<Loaded, StartError> {
        let flag = scx.flag();
        if let Some(why) = sched_ext::unsupported(root) {
            return Err(StartError::Unsupported { flag, why });
        }
        let before = Status::read(root).map_err(|e| StartError::Status {
            flag: flag.clone(),
            why: e.to_string(),
        })?;
        if before.state != "disabled" {
            return Err(StartError::AlreadyLoaded {
                flag,
                loaded: before.describe(),
            });
        }
        let cmd = scx.command(exe)?;
        let mut service = match scx.argv(exe) {
            Some(argv) => Service::start_argv(WHICH, &cmd, &argv, None, log),
            None => Service::start_as(WHICH, &cmd, None, log),
        }?;
        let waited = sched_ext::wait_enabled(
            root,
            before.enable_seq,
            scx.expected_ops(),
            ENABLE_TIMEOUT,
            &mut || service.check().err().map(|_| "it exited".to_string()),
        );
        match waited {
            Ok(status) => Ok(Loaded {
                scx: scx.clone(),
                status,
                service,
                root: root.to_path_buf(),
            }),
            Err(e) => {
                let tail = service.stop(hooks::STOP_GRACE);
                Err(StartError::NotEnabled {
                    flag,
                    why: e.to_string(),
                    tail,
                })
            }
        }
    }

    /// Whether it still runs: why not, once it has ended or the kernel
    /// has disabled it (then after its program has said how, if it does
    /// within [`EXIT_WAIT`]).
    pub fn ended(&mut self) -> Option<String> {
        if let Some(why) = self.exited() {
            return Some(why);
        }
        let ops = self.status.ops.clone();
        match Status::read(&self.root) {
            Ok(s) if s.state == "enabled" && s.enable_seq == self.status.enable_seq => None,
            Ok(s) => {
                // The kernel is disabling it (or has): its program, which
                // says how it ended, exits right after; give it that long.
                let t = std::time::Instant::now();
                while t.elapsed() < EXIT_WAIT {
                    if let Some(why) = self.exited() {
                        return Some(why);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                Some(format!(
                    "sched_ext scheduler {ops} is no longer the one enabled (sched_ext {}, enable_seq {})",
                    s.describe(),
                    s.enable_seq
                ))
            }
            Err(e) => Some(format!("sched_ext scheduler {ops}: {e}")),
        }
    }

    /// How its program ended, once it has: the scheduler's exit record
    /// when it printed one.
    fn exited(&mut self) -> Option<String> {
        let e = self.service.check().err()?;
        let lines = self.service.last_lines();
        Some(match sched_ext::exit_in(&lines) {
            Some(x) => format!(
                "sched_ext scheduler {} ended during the run: {}",
                self.status.ops,
                x.describe()
            ),
            None => e.to_string(),
        })
    }

    /// Stop it; how it ended, where the scheduler said (numalab's own).
    pub fn stop(self) -> Option<ExitInfo> {
        let lines = self.service.stop(hooks::STOP_GRACE);
        sched_ext::exit_in(&lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_linux::sched_ext::EXIT_LINE;

    fn write(root: &Path, state: &str, ops: &str, seq: u64) {
        std::fs::create_dir_all(root.join("root")).unwrap();
        std::fs::write(root.join("state"), format!("{state}\n")).unwrap();
        std::fs::write(root.join("root/ops"), format!("{ops}\n")).unwrap();
        std::fs::write(root.join("enable_seq"), format!("{seq}\n")).unwrap();
    }

    /// Seen between runs while the kernel is disabling the scheduler and
    /// before its program has exited: how it ended is the program's exit
    /// record (the loader prints it a moment later), not the sysfs state
    /// of the moment (CI saw "no longer the one enabled (sched_ext
    /// disabling ...)" where the test expected the UNREG record).
    #[test]
    fn a_scheduler_seen_disabling_says_how_it_ended() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(root, "disabled", "", 0);
        let r = root.display();
        let exit = r#"{"kind":64,"kind_name":"UNREG","code":0,"reason":"unregistered from user space","msg":""}"#;
        // A stand-in scheduler: enables, holds a second, says how it ended.
        let cmd = format!(
            "printf 'enabled\\n' > {r}/state; printf 'x\\n' > {r}/root/ops; \
             printf '1\\n' > {r}/enable_seq; sleep 1; echo '{EXIT_LINE}{exit}'"
        );
        let want = Scx::Exec { cmd };
        let mut l = Loaded::start(&want, Path::new("/bin/true"), root, None).unwrap();
        assert_eq!(l.ended(), None);
        // The kernel is disabling it; its program has not exited yet.
        write(root, "disabling", "x", 1);
        let why = l.ended().unwrap();
        assert_eq!(
            why,
            "sched_ext scheduler x ended during the run: UNREG (unregistered from user space)"
        );
    }
}

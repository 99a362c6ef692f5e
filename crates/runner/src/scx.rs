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
    ) -> Result<Loaded, String> {
        let flag = scx.flag();
        if let Some(why) = sched_ext::unsupported(root) {
            return Err(format!("{flag}: {why}"));
        }
        let before = Status::read(root).map_err(|e| format!("{flag}: {e}"))?;
        if before.state != "disabled" {
            return Err(format!(
                "{flag}: a sched_ext scheduler is already loaded ({})",
                before.describe()
            ));
        }
        let cmd = scx.command(exe).map_err(|e| e.to_string())?;
        let mut service = match scx.argv(exe) {
            Some(argv) => Service::start_argv(WHICH, &cmd, &argv, None, log),
            None => Service::start_as(WHICH, &cmd, None, log),
        }
        .map_err(|e| e.to_string())?;
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
                let lines = service.stop(hooks::STOP_GRACE);
                Err(format!("{flag}: {e}{}", hooks::tail_text(&lines)))
            }
        }
    }

    /// Whether it still runs: why not, once it has ended or the kernel
    /// has disabled it.
    pub fn ended(&mut self) -> Option<String> {
        let ops = &self.status.ops;
        if let Err(e) = self.service.check() {
            let lines = self.service.last_lines();
            return Some(match sched_ext::exit_in(&lines) {
                Some(x) => format!(
                    "sched_ext scheduler {ops} ended during the run: {}",
                    x.describe()
                ),
                None => e.to_string(),
            });
        }
        match Status::read(&self.root) {
            Ok(s) if s.state == "enabled" && s.enable_seq == self.status.enable_seq => None,
            Ok(s) => Some(format!(
                "sched_ext scheduler {ops} is no longer the one enabled (sched_ext {}, enable_seq {})",
                s.describe(),
                s.enable_seq
            )),
            Err(e) => Some(format!("sched_ext scheduler {ops}: {e}")),
        }
    }

    /// Stop it; how it ended, where the scheduler said (numalab's own).
    pub fn stop(self) -> Option<ExitInfo> {
        let lines = self.service.stop(hooks::STOP_GRACE);
        sched_ext::exit_in(&lines)
    }
}

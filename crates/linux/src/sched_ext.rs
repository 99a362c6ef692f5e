//! sched_ext as user space sees it: `/sys/kernel/sched_ext`, and what a
//! configuration asks for (`--scx NAME[k=v,...]`, `--scx-exec CMD`).
//!
//! The kernel (Documentation/scheduler/sched-ext.rst; `scx_attr_*_show`
//! in kernel/sched/ext.c) says whether a BPF scheduler runs in three
//! files: `state` (`enabled`, `disabled`, `enabling`, `disabling`),
//! `root/ops` (the `name` of the `sched_ext_ops` registered) and
//! `enable_seq` (how many times one was enabled since boot). `root/ops`
//! shows a name before the enabling is complete, and a scheduler that
//! fails in `ops.init` leaves `state` as it was, so "loaded" here is all
//! three: `state` is `enabled`, `root/ops` names the scheduler expected
//! (any, for a program numalab did not write), and `enable_seq` is past
//! its value from before the start: this enable is ours, not one from
//! earlier. Waiting polls every 20 ms; the kernel offers no event.
//!
//! A scheduler numalab runs is a process: its own schedulers are loaded
//! by `numalab __scx-load SPEC` (crate numalab-scx, which unloads on
//! SIGINT or SIGTERM, and whose BPF link the kernel closes if it dies,
//! unregistering the scheduler), any other through `sh -c CMD`
//! (scx_simple, scx_rusty, ... which all unload on SIGINT and SIGTERM).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where the kernel shows sched_ext.
pub const SYSFS: &str = "/sys/kernel/sched_ext";

/// A sched_ext scheduler a configuration runs under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Scx {
    /// One of numalab's own (`--scx NAME[k=v,...]`): `spec` is canonical
    /// (every parameter, sorted), `ops` the name it registers.
    Own { spec: String, ops: String },
    /// Any other program (`--scx-exec 'PROGRAM ARGS'`), run by `sh -c`.
    Exec { cmd: String },
}

impl Scx {
    /// As records and tables name it: `fifo[slice_ms=20]`, or the
    /// command.
    pub fn name(&self) -> &str {
        match self {
            Scx::Own { spec, .. } => spec,
            Scx::Exec { cmd } => cmd,
        }
    }

    /// The ops name it must register, where known.
    pub fn expected_ops(&self) -> Option<&str> {
        match self {
            Scx::Own { ops, .. } => Some(ops),
            Scx::Exec { .. } => None,
        }
    }

    /// The shell command that runs it: `exe __scx-load 'SPEC'`, or the
    /// user's command. Refused if it holds a control character.
    pub fn command(&self, exe: &Path) -> Result<String, crate::shell::ControlChar> {
        match self {
            Scx::Own { spec, .. } => Ok(format!(
                "exec {} __scx-load {}",
                crate::shell::checked_quote("numalab's path", &exe.to_string_lossy())?,
                crate::shell::checked_quote("--scx", spec)?
            )),
            Scx::Exec { cmd } => {
                crate::shell::check("--scx-exec", cmd)?;
                Ok(cmd.clone())
            }
        }
    }

    /// numalab's own loader as a program and its arguments, started with
    /// no shell between (a guest with `--rootfs initramfs` has none);
    /// `None` for `--scx-exec`, which is a shell command.
    pub fn argv(&self, exe: &Path) -> Option<Vec<String>> {
        match self {
            Scx::Own { spec, .. } => Some(vec![
                exe.to_string_lossy().into_owned(),
                "__scx-load".into(),
                spec.clone(),
            ]),
            Scx::Exec { .. } => None,
        }
    }

    /// The flag that asked for it, with its value (for messages).
    pub fn flag(&self) -> String {
        match self {
            Scx::Own { spec, .. } => format!("--scx {spec}"),
            Scx::Exec { cmd } => format!("--scx-exec {cmd:?}"),
        }
    }
}

/// What `/sys/kernel/sched_ext` says.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Status {
    /// `enabled`, `disabled`, `enabling`, `disabling`.
    pub state: String,
    /// `root/ops`: the scheduler's name (empty when none).
    pub ops: String,
    pub enable_seq: u64,
}

/// Why `/sys/kernel/sched_ext` could not be read; names the file.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("{}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `enable_seq` is not a number.
    #[error("{}: {value:?} is not a count", .path.display())]
    NotACount { path: PathBuf, value: String },
}

/// Why no scheduler was seen loaded: what was last seen.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// The process that loads it ended first (its reason).
    #[error("it ended before sched_ext was enabled ({why}); sched_ext is {}", .last.describe())]
    Ended { why: String, last: Status },
    #[error("sched_ext still {} after {:.0} s (root/ops {:?}, enable_seq {})", .last.state, .timeout.as_secs_f64(), .last.ops, .last.enable_seq)]
    TimedOut { timeout: Duration, last: Status },
}

impl Status {
    /// Read `root` (normally [`SYSFS`]); an error names the file.
    pub fn read(root: &Path) -> Result<Status, StatusError> {
        let read = |rel: &str| -> Result<String, StatusError> {
            let path = root.join(rel);
            match std::fs::read_to_string(&path) {
                Ok(s) => Ok(s.trim().to_string()),
                Err(source) => Err(StatusError::Read { path, source }),
            }
        };
        let state = read("state")?;
        // No root/ops while nothing is loaded on some kernels.
        let ops = read("root/ops").unwrap_or_default();
        let seq = read("enable_seq")?;
        let enable_seq = seq.parse().map_err(|_| StatusError::NotACount {
            path: root.join("enable_seq"),
            value: seq.clone(),
        })?;
        Ok(Status {
            state,
            ops,
            enable_seq,
        })
    }

    /// A loaded scheduler's: `enabled numalab_fifo`; else the state.
    pub fn describe(&self) -> String {
        if self.state == "enabled" && !self.ops.is_empty() {
            format!("enabled {}", self.ops)
        } else {
            self.state.clone()
        }
    }
}

/// Why this kernel cannot run a sched_ext scheduler, if it cannot:
/// `root` is absent (no `CONFIG_SCHED_CLASS_EXT`).
pub fn unsupported(root: &Path) -> Option<String> {
    if root.join("state").is_file() {
        return None;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    Some(format!(
        "this kernel ({release}) has no sched_ext ({} missing)",
        root.display()
    ))
}

/// Wait until a scheduler is loaded in `root`: `state` `enabled`,
/// `root/ops` non-empty and equal to `ops` where given, `enable_seq`
/// past `before`. `gone` is asked between polls whether the process
/// that loads it has ended (its reason); the error says what was last
/// seen.
pub fn wait_enabled(
    root: &Path,
    before: u64,
    ops: Option<&str>,
    timeout: Duration,
    gone: &mut dyn FnMut() -> Option<String>,
) -> Result<Status, WaitError> {
    let start = Instant::now();
    let mut last = Status::default();
    loop {
        if let Ok(s) = Status::read(root) {
            let ours = s.state == "enabled"
                && !s.ops.is_empty()
                && ops.is_none_or(|o| o == s.ops)
                && s.enable_seq > before;
            if ours {
                return Ok(s);
            }
            last = s;
        }
        if let Some(why) = gone() {
            return Err(WaitError::Ended { why, last });
        }
        if start.elapsed() >= timeout {
            return Err(WaitError::TimedOut { timeout, last });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How a sched_ext scheduler ended, from its `scx_exit_info` (numalab's
/// own schedulers copy it out in `ops.exit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitInfo {
    /// `enum scx_exit_kind` as a number.
    pub kind: i64,
    /// Its name: `UNREG`, `ERROR_STALL`, ...
    pub kind_name: String,
    pub code: i64,
    /// The kernel's one-line reason ("unregistered from user space").
    pub reason: String,
    /// The scheduler's or the kernel's message, if any.
    pub msg: String,
    /// What the scheduler counted while it ran, by name (numalab's
    /// `nest`: tasks placed by each step of its policy).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub stats: std::collections::BTreeMap<String, u64>,
}

impl ExitInfo {
    /// `name=value ...` of its counters, in name order.
    pub fn describe_stats(&self) -> String {
        let v: Vec<String> = self.stats.iter().map(|(k, v)| format!("{k}={v}")).collect();
        v.join(" ")
    }

    /// `UNREG (unregistered from user space)`, with the message if any.
    pub fn describe(&self) -> String {
        let mut s = format!("{} ({})", self.kind_name, self.reason);
        if !self.msg.is_empty() {
            s.push_str(": ");
            s.push_str(&self.msg);
        }
        s
    }

    /// An error (not an unregistration asked for).
    pub fn is_error(&self) -> bool {
        self.kind >= 1024
    }
}

/// `enum scx_exit_kind` of Linux 7.3 (include/linux/sched/ext.h via
/// vmlinux.h): the name of kind `k`.
pub fn exit_kind_name(k: i64) -> String {
    match k {
        0 => "NONE",
        1 => "DONE",
        64 => "UNREG",
        65 => "UNREG_BPF",
        66 => "UNREG_KERN",
        67 => "SYSRQ",
        68 => "PARENT",
        69 => "PARENT_KILL",
        1024 => "ERROR",
        1025 => "ERROR_BPF",
        1026 => "ERROR_STALL",
        1027 => "ERROR_REENQ",
        1028 => "ERROR_RESCUE",
        _ => return format!("kind {k}"),
    }
    .to_string()
}

/// What the loader prints on standard output when the scheduler is
/// enabled, and when it has ended (followed by its [`ExitInfo`] as JSON).
pub const ENABLED_LINE: &str = "numalab-scx: enabled";
pub const EXIT_LINE: &str = "numalab-scx: exit ";

/// The [`ExitInfo`] among a loader's output lines (the last one).
pub fn exit_in(lines: &[String]) -> Option<ExitInfo> {
    lines.iter().rev().find_map(|l| {
        serde_json::from_str(l.trim().strip_prefix(EXIT_LINE.trim_end())?.trim()).ok()
    })
}

/// The sysfs root to use: [`SYSFS`], or `$NUMALAB_SCX_SYSFS` (tests).
pub fn root() -> PathBuf {
    std::env::var_os("NUMALAB_SCX_SYSFS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(SYSFS))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, state: &str, ops: &str, seq: u64) {
        std::fs::create_dir_all(root.join("root")).unwrap();
        std::fs::write(root.join("state"), format!("{state}\n")).unwrap();
        std::fs::write(root.join("root/ops"), format!("{ops}\n")).unwrap();
        std::fs::write(root.join("enable_seq"), format!("{seq}\n")).unwrap();
    }

    #[test]
    fn loaded_means_enabled_named_and_a_new_enable() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        assert!(unsupported(r).unwrap().contains("has no sched_ext"));
        write(r, "disabled", "", 3);
        assert_eq!(unsupported(r), None);
        let s = Status::read(r).unwrap();
        assert_eq!((s.state.as_str(), s.enable_seq), ("disabled", 3));
        let short = Duration::from_millis(100);
        // Still disabled: a timeout that says so.
        let e = wait_enabled(r, 3, Some("numalab_fifo"), short, &mut || None).unwrap_err();
        assert!(
            e.to_string().starts_with("sched_ext still disabled after"),
            "{e}"
        );
        // Enabled, but another scheduler, or an old enable: not ours.
        write(r, "enabled", "simple", 4);
        assert!(wait_enabled(r, 3, Some("numalab_fifo"), short, &mut || None).is_err());
        write(r, "enabled", "numalab_fifo", 3);
        assert!(wait_enabled(r, 3, Some("numalab_fifo"), short, &mut || None).is_err());
        write(r, "enabled", "numalab_fifo", 4);
        let s = wait_enabled(r, 3, Some("numalab_fifo"), short, &mut || None).unwrap();
        assert_eq!(s.describe(), "enabled numalab_fifo");
        // Any name for a program numalab did not write.
        write(r, "enabled", "simple", 5);
        assert_eq!(
            wait_enabled(r, 4, None, short, &mut || None).unwrap().ops,
            "simple"
        );
        // The loader ended first: its reason.
        write(r, "disabled", "", 5);
        let e = wait_enabled(r, 5, None, Duration::from_secs(5), &mut || {
            Some("exit status: 2".into())
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "it ended before sched_ext was enabled (exit status: 2); sched_ext is disabled"
        );
        std::fs::write(r.join("enable_seq"), "many\n").unwrap();
        assert!(Status::read(r)
            .unwrap_err()
            .to_string()
            .contains("is not a count"));
    }

    #[test]
    fn exit_lines_and_kinds() {
        let e = ExitInfo {
            kind: 1026,
            kind_name: exit_kind_name(1026),
            code: 0,
            reason: "runnable task stall".into(),
            msg: "t[1] failed to run for 30 s".into(),
            stats: Default::default(),
        };
        assert!(e.is_error());
        assert_eq!(
            e.describe(),
            "ERROR_STALL (runnable task stall): t[1] failed to run for 30 s"
        );
        let lines = vec![
            "libbpf: something".to_string(),
            format!("{EXIT_LINE}{}", serde_json::to_string(&e).unwrap()),
        ];
        assert_eq!(exit_in(&lines), Some(e.clone()));
        assert_eq!(exit_in(&lines[..1]), None);
        // Counters, when the scheduler kept some, ride along.
        let mut e = e;
        e.stats.insert("reserve".into(), 7);
        e.stats.insert("attached".into(), 40);
        assert_eq!(e.describe_stats(), "attached=40 reserve=7");
        let line = format!("{EXIT_LINE}{}", serde_json::to_string(&e).unwrap());
        assert_eq!(exit_in(&[line]), Some(e));
        assert_eq!(exit_kind_name(64), "UNREG");
        assert_eq!(exit_kind_name(7), "kind 7");
    }

    #[test]
    fn commands() {
        let own = Scx::Own {
            spec: "fifo[slice_ms=20]".into(),
            ops: "numalab_fifo".into(),
        };
        assert_eq!(
            own.command(Path::new("/usr/bin/numalab")).unwrap(),
            "exec /usr/bin/numalab __scx-load 'fifo[slice_ms=20]'"
        );
        assert_eq!(own.expected_ops(), Some("numalab_fifo"));
        assert_eq!(
            own.argv(Path::new("/usr/bin/numalab")).unwrap(),
            ["/usr/bin/numalab", "__scx-load", "fifo[slice_ms=20]"]
        );
        let exec = Scx::Exec {
            cmd: "scx_simple -v".into(),
        };
        assert_eq!(exec.command(Path::new("x")).unwrap(), "scx_simple -v");
        assert_eq!(exec.flag(), "--scx-exec \"scx_simple -v\"");
        let bad = Scx::Exec {
            cmd: "scx_simple\nrm -rf /".into(),
        };
        assert!(bad.command(Path::new("x")).is_err());
    }
}

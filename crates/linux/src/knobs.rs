//! Machine settings ("knobs") applied for a benchmark configuration and
//! always restored: sysctls, any sysfs file, the cpufreq governor of every
//! CPU, and transparent hugepages.
//!
//! [`apply`] checks every knob first (the file exists, and can be written
//! when numalab is not root) and writes nothing if one fails; it reads
//! every original value, hands the list to a guard process, and only then
//! writes. The values come back by one of four roads:
//!
//! - success or failure of the runs: the caller calls
//!   [`Applied::restore`] (or drops the [`Applied`]);
//! - Ctrl-C or SIGTERM: the caller's signal flag ends the runs and it
//!   calls `restore` as on any other path;
//! - a write that fails halfway: `apply` itself writes back what it had
//!   written and returns the error;
//! - SIGKILL (or a crash that skips destructors): the guard, a child
//!   process started as `numalab __knob-guard` in a session of its own and
//!   deaf to SIGINT/SIGTERM/SIGHUP, is blocked reading a pipe from numalab.
//!   When numalab dies the kernel closes its end, the guard reads EOF and
//!   writes every original back itself. A normal restore tells it `done`
//!   first, and it exits without touching anything.
//!
//! The pipe's write end is close-on-exec, so programs numalab starts do
//! not hold it; a process forked without exec while knobs are applied
//! does, and the guard sees EOF once it is gone too (numalab's tasks die
//! with it through `PR_SET_PDEATHSIG`).
//!
//! `root` is `/` in production; the tests use a directory laid out like it
//! (`proc/sys/...`, `sys/...`).

use crate::fs::writable;
use crate::process::is_root;
use std::collections::BTreeMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

/// The hidden numalab subcommand that runs [`guard_main`].
pub const GUARD_SUBCOMMAND: &str = "__knob-guard";

/// The longest value numalab reads from a knob's file: sysfs attributes
/// are at most a page, sysctls shorter still.
const MAX_VALUE: u64 = 64 * 1024;

const THP_ENABLED: &str = "sys/kernel/mm/transparent_hugepage/enabled";
const CPU_DIR: &str = "sys/devices/system/cpu";
const DEBUGFS: &str = "/sys/kernel/debug";

/// One machine setting, as given on the command line (serialisable, so a
/// guest can be told to apply it to itself).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Knob {
    /// `--sysctl KEY=VALUE`: dotted sysctl name under `<root>/proc/sys`.
    /// The NUMA-balancing scan tunables
    /// `kernel.numa_balancing_scan_{delay_ms,period_min_ms,period_max_ms,size_mb}`
    /// are accepted by these names on every kernel: since 5.13 they live in
    /// debugfs at `<root>/sys/kernel/debug/sched/numa_balancing/scan_*`
    /// (see [`sysctl_path`]). When debugfs is not mounted, numalab is root
    /// and `root` is `/`, [`apply`] mounts it (and leaves it mounted).
    Sysctl { key: String, value: String },
    /// `--sysfs PATH=VALUE`: any file under `/sys` (absolute, starting
    /// with `/sys/`, without `..`). A file that reads as a list of words
    /// with one in brackets (`[mq-deadline] none`) has that word as its
    /// value.
    Sysfs { path: String, value: String },
    /// `--governor NAME`: the cpufreq `scaling_governor` of every CPU that
    /// has cpufreq.
    Governor(String),
    /// `--thp MODE`: `/sys/kernel/mm/transparent_hugepage/enabled`
    /// (`always`, `madvise` or `never`).
    Thp(String),
}

/// Why a knob could not be parsed, applied or restored. Every message is
/// one line and names the knob.
#[derive(Debug, thiserror::Error)]
pub enum KnobError {
    /// A command-line text that is not a knob (`flag` is `--sysctl`, ...).
    #[error("{flag}: {reason}")]
    Invalid { flag: &'static str, reason: String },
    /// The file (or every CPU's cpufreq) is missing.
    #[error("{knob}: {what}")]
    Missing { knob: String, what: String },
    /// A `--sysctl` whose file is not there.
    #[error("{knob}: {source}")]
    NoSysctl { knob: String, source: NoSysctl },
    /// numalab is not root and cannot write the file.
    #[error("{knob}: needs root (cannot write {path})")]
    NeedsRoot { knob: String, path: String },
    /// The value is not among those the kernel offers (governor, THP mode).
    #[error("{knob}: {value:?} is not available on {place} (available: {available})")]
    Unavailable {
        knob: String,
        value: String,
        place: String,
        available: String,
    },
    /// Another numalab holds the knob's file (it changes it too).
    #[error("{knob}: held by {} (PID {pid}), which changes it too; run again when it is done, or with --wait", if *.guard { "the knob guard of a numalab that was killed" } else { "numalab" })]
    Held { knob: String, pid: u32, guard: bool },
    /// The file has no write permission for anyone (a read-only sysctl).
    #[error("{knob}: {path} is read-only (mode {mode:o})")]
    ReadOnly {
        knob: String,
        path: String,
        mode: u32,
    },
    /// The value is not of the kind the file holds.
    #[error("{knob}: {value:?} is not {kind}, as the kernel's value {current:?} is")]
    WrongType {
        knob: String,
        value: String,
        kind: &'static str,
        current: String,
    },
    /// Two knobs with the same [`Knob::name`].
    #[error("{knob}: given twice")]
    Duplicate { knob: String },
    /// Reading or writing a knob's file failed.
    #[error("{knob}: cannot {action} {path}: {source}")]
    Io {
        knob: String,
        action: &'static str,
        path: String,
        source: io::Error,
    },
    /// The guard process could not be started or handed the originals.
    #[error("cannot start the knob guard ({exe}): {source}")]
    Guard { exe: String, source: io::Error },
    /// A write failed, and writing back the values written before it
    /// failed too.
    #[error("{error}; restoring the values written before it failed too: {restore}")]
    Rollback {
        error: Box<KnobError>,
        restore: Box<KnobError>,
    },
    /// Some originals could not be written back (each entry names its knob).
    #[error("could not restore {}", .0.join("; "))]
    Restore(Vec<String>),
}

fn invalid(flag: &'static str, reason: String) -> KnobError {
    KnobError::Invalid { flag, reason }
}

/// The rules of `--sysctl`: a dotted name of `[A-Za-z0-9._-]` without
/// empty parts or `/`, a non-empty value without a newline.
fn check_sysctl(k: &str, v: &str) -> Result<(), KnobError> {
    let ok = !k.is_empty()
        && !k.starts_with('.')
        && !k.ends_with('.')
        && !k.contains("..")
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-');
    if !ok {
        return Err(invalid(
            "--sysctl",
            format!("{k:?} is not a sysctl name (e.g. kernel.numa_balancing)"),
        ));
    }
    check_value("--sysctl", k, v)
}

fn check_value(flag: &'static str, name: &str, v: &str) -> Result<(), KnobError> {
    if v.is_empty() {
        return Err(invalid(flag, format!("{name} has an empty value")));
    }
    if v.contains('\n') {
        return Err(invalid(flag, format!("{name}: the value has a newline")));
    }
    Ok(())
}

fn check_sysfs(p: &str, v: &str) -> Result<(), KnobError> {
    let under_sys = p.len() > "/sys/".len() && p.starts_with("/sys/");
    if !under_sys || p.contains("..") || p.contains(['\n', '\0']) {
        return Err(invalid(
            "--sysfs",
            format!(
                "{p:?} is not a file under /sys (an absolute path without .., \
                 e.g. /sys/kernel/mm/transparent_hugepage/defrag)"
            ),
        ));
    }
    check_value("--sysfs", p, v)
}

fn check_governor(name: &str) -> Result<(), KnobError> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok {
        return Err(invalid(
            "--governor",
            format!("{name:?} is not a cpufreq governor name (e.g. performance)"),
        ));
    }
    Ok(())
}

const THP_MODES: [&str; 3] = ["always", "madvise", "never"];

fn check_thp(mode: &str) -> Result<(), KnobError> {
    if !THP_MODES.contains(&mode) {
        return Err(invalid(
            "--thp",
            format!("{mode:?} is not a THP mode (always, madvise or never)"),
        ));
    }
    Ok(())
}

impl Knob {
    /// `--sysctl KEY=VALUE`, e.g. `kernel.numa_balancing=1` (spaces around
    /// the key and the value are dropped).
    pub fn parse_sysctl(text: &str) -> Result<Knob, KnobError> {
        let (k, v) = text.split_once('=').ok_or_else(|| {
            invalid(
                "--sysctl",
                format!("{text:?} is not KEY=VALUE (e.g. kernel.numa_balancing=0)"),
            )
        })?;
        let (k, v) = (k.trim(), v.trim());
        check_sysctl(k, v)?;
        Ok(Knob::Sysctl {
            key: k.to_string(),
            value: v.to_string(),
        })
    }

    /// `--sysfs PATH=VALUE`, e.g. `/sys/kernel/mm/transparent_hugepage/defrag=never`.
    pub fn parse_sysfs(text: &str) -> Result<Knob, KnobError> {
        let (p, v) = text.split_once('=').ok_or_else(|| {
            invalid(
                "--sysfs",
                format!(
                    "{text:?} is not PATH=VALUE (e.g. /sys/kernel/mm/transparent_hugepage/defrag=never)"
                ),
            )
        })?;
        let (p, v) = (p.trim(), v.trim());
        check_sysfs(p, v)?;
        Ok(Knob::Sysfs {
            path: p.to_string(),
            value: v.to_string(),
        })
    }

    /// `--governor NAME`, e.g. `performance`.
    pub fn governor(name: &str) -> Result<Knob, KnobError> {
        let name = name.trim();
        check_governor(name)?;
        Ok(Knob::Governor(name.to_string()))
    }

    /// `--thp MODE`: `always`, `madvise` or `never`.
    pub fn thp(mode: &str) -> Result<Knob, KnobError> {
        let mode = mode.trim();
        check_thp(mode)?;
        Ok(Knob::Thp(mode.to_string()))
    }

    /// How the knob is shown and recorded: the sysctl key, the sysfs path,
    /// `governor`, `thp`.
    pub fn name(&self) -> String {
        match self {
            Knob::Sysctl { key, .. } => key.clone(),
            Knob::Sysfs { path, .. } => path.clone(),
            Knob::Governor(_) => "governor".into(),
            Knob::Thp(_) => "thp".into(),
        }
    }

    /// The value to write.
    pub fn value(&self) -> &str {
        match self {
            Knob::Sysctl { value, .. } | Knob::Sysfs { value, .. } => value,
            Knob::Governor(v) | Knob::Thp(v) => v,
        }
    }

    /// Parse rules again, for knobs built without the parsers.
    fn validate(&self) -> Result<(), KnobError> {
        match self {
            Knob::Sysctl { key, value } => check_sysctl(key, value),
            Knob::Sysfs { path, value } => check_sysfs(path, value),
            Knob::Governor(n) => check_governor(n),
            Knob::Thp(m) => check_thp(m),
        }
    }

    /// What errors call it: `--sysctl kernel.numa_balancing`,
    /// `--governor performance`.
    fn label(&self) -> String {
        match self {
            Knob::Sysctl { key, .. } => format!("--sysctl {key}"),
            Knob::Sysfs { path, .. } => format!("--sysfs {path}"),
            Knob::Governor(n) => format!("--governor {n}"),
            Knob::Thp(m) => format!("--thp {m}"),
        }
    }
}

/// The command-line form: `--sysctl kernel.numa_balancing=1`, `--thp never`.
impl fmt::Display for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Knob::Sysctl { key, value } => write!(f, "--sysctl {key}={value}"),
            Knob::Sysfs { path, value } => write!(f, "--sysfs {path}={value}"),
            Knob::Governor(n) => write!(f, "--governor {n}"),
            Knob::Thp(m) => write!(f, "--thp {m}"),
        }
    }
}

/// Where a dotted sysctl name is written, under the root `root` (`/` in
/// production): `/proc/sys/...`, except the NUMA balancing scan tunables
/// (`kernel.numa_balancing_scan_delay_ms` and the other
/// `kernel.numa_balancing_scan_*`), which kernels since 5.13 keep in
/// debugfs (`/sys/kernel/debug/sched/numa_balancing/scan_*`): the
/// documented sysctl names work on every kernel. The `/proc/sys` file wins
/// when it exists.
pub fn sysctl_path(root: &Path, key: &str) -> PathBuf {
    let proc = root.join("proc/sys").join(key.replace('.', "/"));
    if let Some(t) = key.strip_prefix("kernel.numa_balancing_") {
        let debugfs = root.join("sys/kernel/debug/sched/numa_balancing").join(t);
        if !proc.exists() && debugfs.exists() {
            return debugfs;
        }
    }
    proc
}

/// How to start the guard process: `exe` with `args`, then the protocol of
/// [`guard_main`] on its stdin. The guard runs in `/`, so `exe` should be
/// an absolute path (or a bare name looked up in `PATH`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    pub exe: PathBuf,
    pub args: Vec<String>,
    /// Extra environment for the guard (tests start it as a role of the
    /// test binary, which needs a variable to take that role).
    pub env: Vec<(String, String)>,
}

impl Guard {
    /// numalab itself: `/proc/self/exe __knob-guard`. `/proc/self/exe`
    /// still works when the binary was replaced or deleted since numalab
    /// started (a rebuild during a long run).
    pub fn this_executable() -> Guard {
        Guard {
            exe: PathBuf::from("/proc/self/exe"),
            args: vec![GUARD_SUBCOMMAND.to_string()],
            env: Vec::new(),
        }
    }
}

/// One file written for a knob (a governor has one per CPU).
#[derive(Debug)]
struct Target {
    /// Index of the knob in the `apply` list.
    knob: usize,
    /// [`Knob::label`], for errors.
    label: String,
    /// `cpu3` for a governor, else empty.
    cpu: String,
    path: PathBuf,
    /// The value to write.
    value: String,
    /// A sysctl: the value is the trimmed text, never a bracketed word.
    plain: bool,
    original: String,
}

impl Target {
    /// What the file's text says the value is.
    fn parse(&self, text: &str) -> String {
        if self.plain {
            text.trim().to_string()
        } else {
            selected(text)
        }
    }
}

/// The running guard: its stdin is the pipe whose EOF means "numalab died".
#[derive(Debug)]
struct GuardChild {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl GuardChild {
    /// Tell the guard not to touch anything, and reap it.
    fn finish(mut self) -> io::Result<std::process::ExitStatus> {
        if let Some(mut stdin) = self.stdin.take() {
            // A guard that is already gone is no reason to fail a restore.
            let _ = stdin.write_all(b"done\n");
        }
        self.child.wait()
    }
}

/// Knobs in force: the originals to write back, what was read back after
/// writing, and the guard. Restores on [`Applied::restore`] or on drop.
#[derive(Debug)]
pub struct Applied {
    /// Written targets, in the order they were written.
    written: Vec<Target>,
    values: BTreeMap<String, String>,
    guard: Option<GuardChild>,
    done: bool,
    /// Held until the originals are back.
    locks: Vec<crate::lock::Lock>,
}

impl Applied {
    /// [`Knob::name`] -> the value read back after writing, the selected
    /// word for THP, governors and bracketed sysfs files (what the record
    /// stores). CPUs whose governors read back differently show as
    /// `cpu0=performance,cpu1=powersave`.
    pub fn values(&self) -> &BTreeMap<String, String> {
        &self.values
    }

    /// Write every original back, in reverse order, then tell the guard it
    /// is done and reap it. An error lists every file that could not be
    /// restored; the others were.
    pub fn restore(mut self) -> Result<(), KnobError> {
        self.restore_inner()
    }

    fn restore_inner(&mut self) -> Result<(), KnobError> {
        self.done = true;
        let written = std::mem::take(&mut self.written);
        let result = write_back(&written);
        if let Some(g) = self.guard.take() {
            match g.finish() {
                Ok(s) if s.success() => {}
                Ok(s) => warn(&format!("the knob guard ended with {s}")),
                Err(e) => warn(&format!("cannot wait for the knob guard: {e}")),
            }
        }
        // Restored: another numalab may change these files now.
        self.locks.clear();
        result
    }
}

impl Drop for Applied {
    fn drop(&mut self) {
        if !self.done {
            if let Err(e) = self.restore_inner() {
                warn(&e.to_string());
            }
        }
    }
}

/// One line on stderr; a closed or broken stderr is ignored (no panic,
/// unlike `eprintln!`).
fn warn(line: &str) {
    let _ = writeln!(io::stderr(), "numalab: {line}");
}

fn write_back(written: &[Target]) -> Result<(), KnobError> {
    let mut failures = Vec::new();
    for t in written.iter().rev() {
        if let Err(e) = write_value(&t.path, &t.original) {
            failures.push(format!(
                "{}: cannot write {:?} to {}: {e}",
                t.label,
                t.original,
                t.path.display()
            ));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(KnobError::Restore(failures))
    }
}

/// Read a knob's file: at most [`MAX_VALUE`] bytes of UTF-8.
fn read_value(path: &Path) -> io::Result<String> {
    let mut buf = Vec::new();
    File::open(path)?
        .take(MAX_VALUE + 1)
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_VALUE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "longer than 64 KiB",
        ));
    }
    String::from_utf8(buf).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

/// Write a value as `echo VALUE > PATH` does: the whole value and a
/// newline in one write, to an existing file.
fn write_value(path: &Path, value: &str) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).truncate(true).open(path)?;
    f.write_all(format!("{value}\n").as_bytes())
}

/// The selected word of a `always [madvise] never` list, else the trimmed
/// text.
fn selected(text: &str) -> String {
    let mut chosen = text
        .split_whitespace()
        .filter_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')));
    match (chosen.next(), chosen.next()) {
        (Some(w), None) if !w.is_empty() => w.to_string(),
        _ => text.trim().to_string(),
    }
}

/// The words of a list file, brackets dropped: `always madvise never`.
fn words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| w.trim_start_matches('[').trim_end_matches(']').to_string())
        .collect()
}

/// Whether something is mounted on `/sys/kernel/debug`.
fn debugfs_mounted() -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| {
            t.lines()
                .any(|l| l.split_whitespace().nth(4) == Some(DEBUGFS))
        })
        .unwrap_or(false)
}

/// `mount -t debugfs none /sys/kernel/debug`.
fn mount_debugfs() -> io::Result<()> {
    // SAFETY: NUL-terminated literals; no data argument.
    let r = unsafe {
        libc::mount(
            c"none".as_ptr(),
            c"/sys/kernel/debug".as_ptr(),
            c"debugfs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Why a `--sysctl` has no file.
#[derive(Debug, thiserror::Error)]
pub enum NoSysctl {
    /// Not under `/proc/sys`, and not a scan tunable.
    #[error("no such sysctl ({})", .path.display())]
    NoFile { path: PathBuf },
    /// A `kernel.numa_balancing_*` scan tunable in neither `/proc/sys`
    /// nor debugfs (`mount` says why debugfs was not mounted, if tried).
    #[error("no such sysctl ({}, nor {}{})", .path.display(), .debugfs.display(), .mount.as_ref().map_or(String::new(), |m| format!("; {m}")))]
    NoTunable {
        path: PathBuf,
        debugfs: PathBuf,
        mount: Option<DebugfsUnmounted>,
    },
}

/// Why debugfs could not be mounted for a scan tunable.
#[derive(Debug, thiserror::Error)]
pub enum DebugfsUnmounted {
    #[error("debugfs is not mounted on {DEBUGFS} and mounting it needs root")]
    NeedsRoot,
    #[error("mounting debugfs on {DEBUGFS}: {0}")]
    Mount(io::Error),
}

/// The file behind a `--sysctl`, mounting debugfs for the scan tunables
/// when allowed. The error says what is missing.
fn resolve_sysctl(root: &Path, real_root: bool, key: &str) -> Result<PathBuf, NoSysctl> {
    let path = sysctl_path(root, key);
    if path.is_file() {
        return Ok(path);
    }
    let Some(t) = key.strip_prefix("kernel.numa_balancing_") else {
        return Err(NoSysctl::NoFile { path });
    };
    let debugfs = root.join("sys/kernel/debug/sched/numa_balancing").join(t);
    let mut mount = None;
    if real_root && !debugfs_mounted() {
        if !is_root() {
            mount = Some(DebugfsUnmounted::NeedsRoot);
        } else {
            match mount_debugfs() {
                Ok(()) => {
                    let path = sysctl_path(root, key);
                    if path.is_file() {
                        return Ok(path);
                    }
                }
                Err(e) => mount = Some(DebugfsUnmounted::Mount(e)),
            }
        }
    }
    Err(NoSysctl::NoTunable {
        path,
        debugfs,
        mount,
    })
}

/// The cpuN directories under `<root>/sys/devices/system/cpu`, by number.
fn cpus(root: &Path) -> io::Result<Vec<(u32, PathBuf)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join(CPU_DIR))? {
        let e = e?;
        let name = e.file_name();
        let Some(n) = name
            .to_str()
            .and_then(|s| s.strip_prefix("cpu"))
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        out.push((n, e.path()));
    }
    out.sort();
    Ok(out)
}

/// Check one knob and list its files (without originals yet).
fn resolve(knob: &Knob, root: &Path, real_root: bool) -> Result<Vec<(String, PathBuf)>, KnobError> {
    let label = knob.label();
    let missing = |what: String| KnobError::Missing {
        knob: label.clone(),
        what,
    };
    let io_err = |action, path: &Path, source| KnobError::Io {
        knob: label.clone(),
        action,
        path: path.display().to_string(),
        source,
    };
    let files = match knob {
        Knob::Sysctl { key, .. } => {
            vec![(
                String::new(),
                resolve_sysctl(root, real_root, key).map_err(|source| KnobError::NoSysctl {
                    knob: label.clone(),
                    source,
                })?,
            )]
        }
        Knob::Sysfs { path, .. } => {
            let p = root.join(path.trim_start_matches('/'));
            if !p.is_file() {
                return Err(missing(format!("no such file ({})", p.display())));
            }
            vec![(String::new(), p)]
        }
        Knob::Thp(mode) => {
            let p = root.join(THP_ENABLED);
            if !p.is_file() {
                return Err(missing(format!(
                    "no transparent hugepage support ({})",
                    p.display()
                )));
            }
            let text = read_value(&p).map_err(|e| io_err("read", &p, e))?;
            let offered = words(&text);
            if !offered.contains(mode) {
                return Err(KnobError::Unavailable {
                    knob: label.clone(),
                    value: mode.clone(),
                    place: "this kernel".into(),
                    available: offered.join(" "),
                });
            }
            vec![(String::new(), p)]
        }
        Knob::Governor(name) => {
            let dir = root.join(CPU_DIR);
            let list = cpus(root).map_err(|e| io_err("list", &dir, e))?;
            let mut files = Vec::new();
            for (n, cpu) in list {
                let gov = cpu.join("cpufreq/scaling_governor");
                if !gov.is_file() {
                    continue;
                }
                let avail = cpu.join("cpufreq/scaling_available_governors");
                let text = read_value(&avail).map_err(|e| io_err("read", &avail, e))?;
                let offered = words(&text);
                if !offered.contains(name) {
                    return Err(KnobError::Unavailable {
                        knob: label.clone(),
                        value: name.clone(),
                        place: format!("cpu{n}"),
                        available: offered.join(" "),
                    });
                }
                files.push((format!("cpu{n}"), gov));
            }
            if files.is_empty() {
                return Err(missing(format!(
                    "no CPU has cpufreq ({}/cpu*/cpufreq/scaling_governor)",
                    dir.display()
                )));
            }
            files
        }
    };
    if !is_root() {
        for (_, p) in &files {
            if !writable(p) {
                return Err(KnobError::NeedsRoot {
                    knob: label,
                    path: p.display().to_string(),
                });
            }
        }
    }
    for (_, p) in &files {
        check_writable_kind(knob, &label, p)?;
    }
    Ok(files)
}

/// A file nobody may write is refused (root's `access(W_OK)` says yes
/// to a read-only sysctl, the write then fails); a value that is not a
/// number where the file holds numbers (`kernel.numa_balancing=banana`)
/// is refused before anything is written.
fn check_writable_kind(knob: &Knob, label: &str, p: &Path) -> Result<(), KnobError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(p)
        .map(|m| m.permissions().mode())
        .unwrap_or(0o644);
    if mode & 0o222 == 0 {
        return Err(KnobError::ReadOnly {
            knob: label.to_string(),
            path: p.display().to_string(),
            mode: mode & 0o7777,
        });
    }
    if !matches!(knob, Knob::Sysctl { .. } | Knob::Sysfs { .. }) {
        return Ok(());
    }
    let Ok(text) = read_value(p) else {
        return Ok(()); // unreadable: apply says so when it reads the original
    };
    let current: Vec<&str> = text.split_whitespace().collect();
    let numbers = |ws: &[&str]| !ws.is_empty() && ws.iter().all(|w| w.parse::<i64>().is_ok());
    let value: Vec<&str> = knob.value().split_whitespace().collect();
    if numbers(&current) && !(numbers(&value) && value.len() <= current.len()) {
        return Err(KnobError::WrongType {
            knob: label.to_string(),
            value: knob.value().to_string(),
            kind: if current.len() == 1 {
                "a whole number"
            } else {
                "whole numbers"
            },
            current: text.trim().to_string(),
        });
    }
    Ok(())
}

/// Where the knob locks live: `/run/numalab/knobs`, or under a test's
/// root.
fn lock_dir(root: &Path, real_root: bool) -> PathBuf {
    if real_root {
        PathBuf::from("/run/numalab/knobs")
    } else {
        root.join("run/numalab/knobs")
    }
}

/// Hold every target's file, machine-wide, for as long as the knobs are
/// applied (and, through the guard, until they are restored after a
/// SIGKILL): a second numalab that would change the same file is refused
/// with the holder's PID, or waits with `wait`. A numalab that is not
/// root and cannot create the lock directory (only root may write under
/// `/run`) changes only files it may write itself, and holds no lock.
fn hold(
    targets: &[Target],
    root: &Path,
    real_root: bool,
    wait: bool,
) -> Result<Vec<crate::lock::Lock>, KnobError> {
    use crate::lock::{acquire, LockError, Mode};
    let dir = lock_dir(root, real_root);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        if is_root() {
            return Err(KnobError::Io {
                knob: "knob locks".into(),
                action: "create",
                path: dir.display().to_string(),
                source: e,
            });
        }
        return Ok(Vec::new());
    }
    let mut locks: Vec<crate::lock::Lock> = Vec::new();
    for t in targets {
        let rel = t.path.strip_prefix(root).unwrap_or(&t.path);
        let name = rel
            .to_string_lossy()
            .trim_start_matches('/')
            .replace('/', "%");
        let path = dir.join(format!("{name}.lock"));
        if locks.iter().any(|l| l.path() == path) {
            continue;
        }
        match acquire(&path, Mode::Exclusive, wait) {
            Ok(l) => locks.push(l),
            Err(LockError::Held { pid, .. }) => {
                let pid = pid.unwrap_or(0);
                return Err(KnobError::Held {
                    knob: t.label.clone(),
                    pid,
                    guard: pid != 0 && !alive(pid),
                });
            }
            Err(LockError::Io { path, source }) => {
                return Err(KnobError::Io {
                    knob: t.label.clone(),
                    action: "lock",
                    path: path.display().to_string(),
                    source,
                })
            }
        }
    }
    Ok(locks)
}

/// Whether process `pid` exists.
fn alive(pid: u32) -> bool {
    crate::process::alive(pid as i32)
}

/// Apply `knobs` under `root` (`/` in production), in order.
///
/// First every knob is checked (its file exists; when numalab is not
/// root, it is writable) and every original value read: if anything fails
/// nothing is written. Then the guard is started when `guard` is given and
/// handed the originals, and only then is each value written and read
/// back. If a write fails, what was written is restored and the error
/// returned.
pub fn apply(knobs: &[Knob], root: &Path, guard: Option<&Guard>) -> Result<Applied, KnobError> {
    apply_with(knobs, root, guard, false, &mut write_value)
}

/// [`apply`], waiting for another numalab that holds one of the files
/// (`--wait`) instead of refusing.
pub fn apply_waiting(
    knobs: &[Knob],
    root: &Path,
    guard: Option<&Guard>,
    wait: bool,
) -> Result<Applied, KnobError> {
    apply_with(knobs, root, guard, wait, &mut write_value)
}

/// The checks [`apply`] makes before it writes anything (names, values,
/// files present and writable), without writing: so a bad setting is
/// refused before any run starts.
pub fn check(knobs: &[Knob], root: &Path) -> Result<(), KnobError> {
    let real_root = root == Path::new("/");
    let mut seen = std::collections::BTreeSet::new();
    for k in knobs {
        k.validate()?;
        if !seen.insert(k.name()) {
            return Err(KnobError::Duplicate { knob: k.label() });
        }
        resolve(k, root, real_root)?;
    }
    Ok(())
}

type Writer<'a> = dyn FnMut(&Path, &str) -> io::Result<()> + 'a;

fn apply_with(
    knobs: &[Knob],
    root: &Path,
    guard: Option<&Guard>,
    wait: bool,
    write: &mut Writer<'_>,
) -> Result<Applied, KnobError> {
    let real_root = root == Path::new("/");
    // Absolute, so the guard (started in `/`) finds the same files.
    let root = std::path::absolute(root).map_err(|e| KnobError::Io {
        knob: "knobs".into(),
        action: "resolve",
        path: root.display().to_string(),
        source: e,
    })?;

    // 1. Check everything and read the originals; nothing written yet.
    let mut targets = check_targets(knobs, &root, real_root)?;
    // 1b. One numalab changes a file at a time: the originals read next
    // are the machine's, not another invocation's values.
    let locks = hold(&targets, &root, real_root, wait)?;
    read_originals(&mut targets)?;

    // 2. The guard holds the originals before anything changes.
    let guard = match guard {
        Some(g) => Some(start_guard(g, &targets, &locks)?),
        None => None,
    };
    let mut applied = Applied {
        written: Vec::with_capacity(targets.len()),
        values: BTreeMap::new(),
        guard,
        done: false,
        locks,
    };

    // 3. Write and read back; on failure put back what was written.
    let read_back = write_targets(&mut applied, targets, write)?;
    applied.values = values(knobs, &read_back);
    Ok(applied)
}

/// Every knob checked (valid, not given twice, its files resolved under
/// `root`): its targets, the originals not read yet.
fn check_targets(knobs: &[Knob], root: &Path, real_root: bool) -> Result<Vec<Target>, KnobError> {
    let mut seen = std::collections::BTreeSet::new();
    let mut targets = Vec::new();
    for (i, k) in knobs.iter().enumerate() {
        k.validate()?;
        if !seen.insert(k.name()) {
            return Err(KnobError::Duplicate { knob: k.label() });
        }
        for (cpu, path) in resolve(k, root, real_root)? {
            targets.push(Target {
                knob: i,
                label: k.label(),
                cpu,
                path,
                value: k.value().to_string(),
                plain: matches!(k, Knob::Sysctl { .. }),
                original: String::new(),
            });
        }
    }
    Ok(targets)
}

/// Read every target's original value.
fn read_originals(targets: &mut [Target]) -> Result<(), KnobError> {
    for t in targets {
        let text = read_value(&t.path).map_err(|e| KnobError::Io {
            knob: t.label.clone(),
            action: "read",
            path: t.path.display().to_string(),
            source: e,
        })?;
        t.original = t.parse(&text);
    }
    Ok(())
}

/// Write each target and read it back, in order, into `applied`; on
/// failure put back what was written. Returns (knob, cpu, value read
/// back) per target.
fn write_targets(
    applied: &mut Applied,
    targets: Vec<Target>,
    write: &mut Writer<'_>,
) -> Result<Vec<(usize, String, String)>, KnobError> {
    let mut read_back: Vec<(usize, String, String)> = Vec::new();
    for t in targets {
        let result = match write(&t.path, &t.value) {
            Err(e) => Err(("write", e, false)),
            Ok(()) => read_value(&t.path).map_err(|e| ("read back", e, true)),
        };
        match result {
            Ok(text) => {
                read_back.push((t.knob, t.cpu.clone(), t.parse(&text)));
                applied.written.push(t);
            }
            Err((action, source, written)) => {
                let error = KnobError::Io {
                    knob: t.label.clone(),
                    action,
                    path: t.path.display().to_string(),
                    source,
                };
                if written {
                    applied.written.push(t);
                }
                return Err(match applied.restore_inner() {
                    Ok(()) => error,
                    Err(r) => KnobError::Rollback {
                        error: Box::new(error),
                        restore: Box::new(r),
                    },
                });
            }
        }
    }
    Ok(read_back)
}

/// [`Knob::name`] -> the value read back: one value when all its targets
/// agree, else `cpu=value` per target.
fn values(knobs: &[Knob], read_back: &[(usize, String, String)]) -> BTreeMap<String, String> {
    let mut values = BTreeMap::new();
    for (i, k) in knobs.iter().enumerate() {
        let per: Vec<&(usize, String, String)> =
            read_back.iter().filter(|(j, _, _)| *j == i).collect();
        let first = per.first().map(|(_, _, v)| v.clone()).unwrap_or_default();
        let value = if per.iter().all(|(_, _, v)| *v == first) {
            first
        } else {
            per.iter()
                .map(|(_, cpu, v)| format!("{cpu}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        values.insert(k.name(), value);
    }
    values
}

/// Start the guard in a session of its own, deaf to the terminal's
/// signals, and hand it the originals.
fn start_guard(
    g: &Guard,
    targets: &[Target],
    locks: &[crate::lock::Lock],
) -> Result<GuardChild, KnobError> {
    use std::os::fd::AsRawFd;
    let lock_fds: Vec<i32> = locks.iter().map(|l| l.file().as_raw_fd()).collect();
    let err = |source| KnobError::Guard {
        exe: g.exe.display().to_string(),
        source,
    };
    let mut pairs = Vec::with_capacity(targets.len());
    for t in targets {
        let p = t.path.to_str().ok_or_else(|| {
            err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is not UTF-8", t.path.display()),
            ))
        })?;
        pairs.push((p, t.original.as_str()));
    }
    let mut line = serde_json::to_string(&pairs)
        .map_err(|e| err(io::Error::new(io::ErrorKind::InvalidData, e)))?;
    line.push('\n');

    let mut cmd = Command::new(&g.exe);
    cmd.args(&g.args)
        .envs(g.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .current_dir("/");
    // SAFETY: only async-signal-safe calls (setsid, signal, a raw syscall,
    // fcntl); `lock_fds` was allocated before the fork.
    unsafe {
        cmd.pre_exec(move || {
            detach();
            // Only stdin, stdout and stderr: mark every other inherited
            // descriptor close-on-exec (kernels without close_range keep
            // the ones std already marks, which is all numalab opens).
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            // The knob locks stay held by the guard: after a SIGKILL of
            // numalab they are free only once it has restored the files.
            for &fd in &lock_fds {
                libc::fcntl(fd, libc::F_SETFD, 0);
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(err)?;
    let mut stdin = child.stdin.take();
    let sent = match stdin.as_mut() {
        Some(s) => s.write_all(line.as_bytes()).and_then(|()| s.flush()),
        None => Err(io::Error::other("no stdin pipe")),
    };
    let exited = match child.try_wait() {
        Ok(Some(status)) => Some(io::Error::other(format!("it exited at once ({status})"))),
        _ => None,
    };
    if let Some(e) = sent.err().or(exited) {
        drop(stdin);
        let _ = child.kill();
        let _ = child.wait();
        return Err(err(e));
    }
    Ok(GuardChild { child, stdin })
}

/// Leave numalab's session and process group, and ignore the signals a
/// terminal or a service manager sends to the whole group.
fn detach() {
    // SAFETY: setsid and signal are async-signal-safe and take no pointers;
    // setsid failing (already a group leader) is fine.
    unsafe {
        libc::setsid();
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
            libc::signal(s, libc::SIG_IGN);
        }
    }
}

/// The guard process's main, run as `numalab __knob-guard` (`args` are
/// the arguments after `__knob-guard`; none are needed and any are
/// ignored). Returns the exit code.
///
/// Protocol, all on stdin (stdout is unused, stderr gets one-line
/// diagnostics):
///
/// 1. The first line is a JSON array of `[path, original]` string pairs,
///    in the order the files are written, e.g.
///    `[["/proc/sys/kernel/numa_balancing","1"]]`. A missing, incomplete
///    or malformed first line means numalab died before writing anything:
///    exit 2 without touching anything.
/// 2. Then the guard blocks reading stdin. The line `done` means numalab
///    restored the originals itself: exit 0 without touching anything.
///    Other lines are ignored.
/// 3. EOF (numalab died, whatever killed it: the kernel closes the pipe)
///    or a read error: write every original back, last first, each as
///    `echo ORIGINAL > PATH` would; exit 0, or 1 if any write failed.
///
/// The guard ignores SIGINT, SIGTERM, SIGHUP and SIGPIPE and leaves
/// numalab's session (`setsid`); [`apply`] already does both before
/// exec, so no signal sent to numalab's process group reaches it.
pub fn guard_main(args: &[String]) -> i32 {
    let _ = args;
    detach();
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut first = String::new();
    let pairs: Vec<(String, String)> = match input.read_line(&mut first) {
        Ok(_) if first.ends_with('\n') => {
            match serde_json::from_str(&first) {
                Ok(p) => p,
                Err(e) => {
                    warn(&format!("{GUARD_SUBCOMMAND}: the first line of stdin is not [[path, value], ...]: {e}"));
                    return 2;
                }
            }
        }
        Ok(_) => {
            warn(&format!(
                "{GUARD_SUBCOMMAND}: no list of originals on stdin; nothing to guard"
            ));
            return 2;
        }
        Err(e) => {
            warn(&format!("{GUARD_SUBCOMMAND}: reading stdin: {e}"));
            return 2;
        }
    };
    let originals: Vec<(PathBuf, String)> = pairs
        .into_iter()
        .map(|(p, v)| (PathBuf::from(p), v))
        .collect();
    guard_loop(input, &originals)
}

/// Wait on `input` for `done` (return 0, nothing touched) or its end
/// (write `originals` back in reverse order; 0, or 1 if some failed).
fn guard_loop(mut input: impl BufRead, originals: &[(PathBuf, String)]) -> i32 {
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line.trim() == "done" => return 0,
            Ok(_) => {}
        }
    }
    let mut failed = Vec::new();
    for (path, value) in originals.iter().rev() {
        if let Err(e) = write_value(path, value) {
            failed.push(format!("{}: {e}", path.display()));
        }
    }
    if failed.is_empty() {
        warn(&format!(
            "{GUARD_SUBCOMMAND}: numalab ended without restoring its settings; restored {}",
            originals.len()
        ));
        0
    } else {
        warn(&format!(
            "{GUARD_SUBCOMMAND}: numalab ended without restoring its settings; could not restore {}",
            failed.join("; ")
        ));
        1
    }
}

#[cfg(test)]
#[allow(clippy::zombie_processes)] // every child is waited for or killed
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, Instant};

    /// Set for the test binary when it runs one of the `subprocess_*`
    /// roles below (a guard, a numalab killed by SIGKILL, an unprivileged
    /// numalab).
    const SUBPROCESS: &str = "NUMALAB_KNOBS_TEST_SUBPROCESS";
    const ROOT_VAR: &str = "NUMALAB_KNOBS_TEST_ROOT";

    const NB: &str = "proc/sys/kernel/numa_balancing";
    const SWAP: &str = "proc/sys/vm/swappiness";
    const SCAN: &str = "sys/kernel/debug/sched/numa_balancing/scan_delay_ms";
    const DEFRAG: &str = "sys/kernel/mm/transparent_hugepage/defrag";

    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn get(root: &Path, rel: &str) -> String {
        fs::read_to_string(root.join(rel)).unwrap()
    }

    fn gov(cpu: u32) -> String {
        format!("{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor")
    }

    /// A root laid out like `/`: two sysctls, a scan tunable only in
    /// debugfs, THP, and CPUs 0, 1, 2 and 10 of which 1 has no cpufreq.
    fn fake_root() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        put(r, NB, "1\n");
        put(r, SWAP, "60\n");
        put(r, SCAN, "1000\n");
        put(r, THP_ENABLED, "always [madvise] never\n");
        put(r, DEFRAG, "[always] defer defer+madvise madvise never\n");
        for cpu in [0, 2, 10] {
            put(r, &gov(cpu), "powersave\n");
            put(
                r,
                &format!("{CPU_DIR}/cpu{cpu}/cpufreq/scaling_available_governors"),
                "performance powersave\n",
            );
        }
        fs::create_dir_all(r.join(CPU_DIR).join("cpu1")).unwrap();
        fs::create_dir_all(r.join(CPU_DIR).join("cpufreq")).unwrap();
        d
    }

    fn knobs(texts: &[&str]) -> Vec<Knob> {
        texts
            .iter()
            .map(|t| match t.split_once(' ') {
                Some(("--sysctl", v)) => Knob::parse_sysctl(v),
                Some(("--sysfs", v)) => Knob::parse_sysfs(v),
                Some(("--governor", v)) => Knob::governor(v),
                Some(("--thp", v)) => Knob::thp(v),
                _ => panic!("{t}"),
            })
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// Every file of the fake root with its contents.
    fn snapshot(root: &Path) -> BTreeMap<String, String> {
        fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
            for e in fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                if rel == "run" {
                    continue; // the knob locks, not the machine's state
                }
                if p.is_dir() {
                    out.insert(rel, "<dir>".into());
                    walk(&p, root, out);
                } else {
                    out.insert(rel, fs::read_to_string(&p).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(root, root, &mut out);
        out
    }

    #[test]
    fn sysctl_texts() {
        let k = Knob::parse_sysctl("kernel.numa_balancing=1").unwrap();
        assert_eq!(
            k,
            Knob::Sysctl {
                key: "kernel.numa_balancing".into(),
                value: "1".into()
            }
        );
        assert_eq!(k.name(), "kernel.numa_balancing");
        assert_eq!(k.to_string(), "--sysctl kernel.numa_balancing=1");
        assert_eq!(
            Knob::parse_sysctl("vm.swappiness = 10").unwrap().value(),
            "10"
        );
        assert_eq!(
            Knob::parse_sysctl("net.ipv4.conf.all.rp_filter=2 1")
                .unwrap()
                .value(),
            "2 1"
        );
        for bad in [
            "kernel.numa_balancing",
            "../../etc=1",
            "kernel/x=1",
            "kernel.x=",
            "kernel.x=  ",
            "=1",
            ".kernel.x=1",
            "kernel.x.=1",
            "kernel..x=1",
            "kernel.x y=1",
            "kernel.x=1\n2",
        ] {
            let e = Knob::parse_sysctl(bad).unwrap_err();
            let m = e.to_string();
            assert!(m.starts_with("--sysctl: "), "{bad:?}: {m}");
            assert!(!m.contains('\n'), "{bad:?}: {m}");
        }
        assert!(Knob::parse_sysctl("kernel/x=1")
            .unwrap_err()
            .to_string()
            .contains("\"kernel/x\" is not a sysctl name"));
        assert!(Knob::parse_sysctl("kernel.x=")
            .unwrap_err()
            .to_string()
            .contains("kernel.x has an empty value"));
    }

    #[test]
    fn sysfs_texts() {
        let k = Knob::parse_sysfs("/sys/kernel/mm/transparent_hugepage/defrag=never").unwrap();
        assert_eq!(k.name(), "/sys/kernel/mm/transparent_hugepage/defrag");
        assert_eq!(k.value(), "never");
        // The first `=` ends the path; the value may hold more.
        assert_eq!(
            Knob::parse_sysfs("/sys/x/y=a=b").unwrap(),
            Knob::Sysfs {
                path: "/sys/x/y".into(),
                value: "a=b".into()
            }
        );
        for bad in [
            "/etc/passwd=1",
            "sys/kernel/x=1",
            "/sysfoo/x=1",
            "/sys/=1",
            "/sys=1",
            "/sys/../etc/passwd=1",
            "/sys/kernel/../../etc=1",
            "/sys/kernel/mm/transparent_hugepage/defrag",
            "/sys/kernel/x=",
            "/sys/kernel/x=1\n2",
            "",
        ] {
            let m = Knob::parse_sysfs(bad).unwrap_err().to_string();
            assert!(m.starts_with("--sysfs: "), "{bad:?}: {m}");
        }
        assert!(Knob::parse_sysfs("/sys/a/../b=1")
            .unwrap_err()
            .to_string()
            .contains("not a file under /sys"));
        assert!(Knob::parse_sysfs("/sys/a/b")
            .unwrap_err()
            .to_string()
            .contains("is not PATH=VALUE"));
    }

    #[test]
    fn governor_and_thp_texts() {
        let g = Knob::governor("performance").unwrap();
        assert_eq!(g, Knob::Governor("performance".into()));
        assert_eq!(g.name(), "governor");
        assert_eq!(g.to_string(), "--governor performance");
        for bad in ["", "perf ormance", "../x", "a/b", "x\ny"] {
            let m = Knob::governor(bad).unwrap_err().to_string();
            assert!(m.starts_with("--governor: "), "{bad:?}: {m}");
        }
        for m in ["always", "madvise", "never"] {
            let k = Knob::thp(m).unwrap();
            assert_eq!(k, Knob::Thp(m.into()));
            assert_eq!(k.name(), "thp");
        }
        for bad in ["", "Always", "[never]", "defer", "never madvise"] {
            let m = Knob::thp(bad).unwrap_err().to_string();
            assert!(m.starts_with("--thp: "), "{bad:?}: {m}");
        }
    }

    #[test]
    fn sysctl_paths() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        assert_eq!(
            sysctl_path(r, "kernel.numa_balancing"),
            r.join("proc/sys/kernel/numa_balancing")
        );
        // Scan tunables: the sysctl where it exists, else debugfs.
        let key = "kernel.numa_balancing_scan_period_max_ms";
        assert_eq!(
            sysctl_path(r, key),
            r.join("proc/sys/kernel/numa_balancing_scan_period_max_ms")
        );
        let dbg = r.join("sys/kernel/debug/sched/numa_balancing");
        fs::create_dir_all(&dbg).unwrap();
        fs::write(dbg.join("scan_period_max_ms"), "60000").unwrap();
        assert_eq!(sysctl_path(r, key), dbg.join("scan_period_max_ms"));
        fs::create_dir_all(r.join("proc/sys/kernel")).unwrap();
        fs::write(
            r.join("proc/sys/kernel/numa_balancing_scan_period_max_ms"),
            "1",
        )
        .unwrap();
        assert_eq!(
            sysctl_path(r, key),
            r.join("proc/sys/kernel/numa_balancing_scan_period_max_ms")
        );
    }

    #[test]
    fn bracketed_words() {
        assert_eq!(selected("always [madvise] never\n"), "madvise");
        assert_eq!(selected("[always] madvise never"), "always");
        assert_eq!(selected("never\n"), "never");
        assert_eq!(selected(" 4\t4\t1\t7\n"), "4\t4\t1\t7");
        assert_eq!(selected("[a] [b]"), "[a] [b]");
        assert_eq!(selected("[]"), "[]");
        assert_eq!(selected(""), "");
        assert_eq!(
            words("always [madvise] never"),
            ["always", "madvise", "never"]
        );
    }

    /// Two invocations changing the same sysctl left it changed (10
    /// became 13): the second read the first's value as the original and
    /// restored it. Now the second is refused with the first's PID while
    /// the first holds the knob, and reads the machine's value after.
    #[test]
    fn a_second_invocation_cannot_change_a_held_knob() {
        let d = fake_root();
        let r = d.path();
        let first = apply(&knobs(&["--sysctl vm.swappiness=10"]), r, None).unwrap();
        let e = apply(&knobs(&["--sysctl vm.swappiness=13"]), r, None).unwrap_err();
        match &e {
            KnobError::Held { pid, guard, .. } => {
                assert_eq!(*pid, std::process::id());
                assert!(!guard);
            }
            other => panic!("expected Held, got {other}"),
        }
        assert!(e.to_string().contains("--wait"), "{e}");
        assert_eq!(get(r, "proc/sys/vm/swappiness"), "10\n");
        // Another knob is free.
        let other = apply(&knobs(&["--sysctl kernel.numa_balancing=0"]), r, None).unwrap();
        first.restore().unwrap();
        other.restore().unwrap();
        let second = apply(&knobs(&["--sysctl vm.swappiness=13"]), r, None).unwrap();
        second.restore().unwrap();
        assert_eq!(get(r, "proc/sys/vm/swappiness"), "60\n");
    }

    #[test]
    fn wrong_kinds_and_read_only_files_are_refused_before_writing() {
        let d = fake_root();
        let r = d.path();
        let before = snapshot(r);
        let e = check(&knobs(&["--sysctl kernel.numa_balancing=banana"]), r).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--sysctl kernel.numa_balancing: \"banana\" is not a whole number, as the kernel's value \"1\" is"
        );
        check(&knobs(&["--sysctl kernel.numa_balancing=2"]), r).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let p = r.join("proc/sys/vm/swappiness");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o444)).unwrap();
        let e = check(&knobs(&["--sysctl vm.swappiness=1"]), r).unwrap_err();
        if is_root() {
            assert!(e.to_string().contains("is read-only (mode 444)"), "{e}");
        }
        assert!(apply(&knobs(&["--sysctl vm.swappiness=1"]), r, None).is_err());
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(snapshot(r), before);
    }

    #[test]
    fn apply_then_restore() {
        let d = fake_root();
        let r = d.path();
        let before = snapshot(r);
        let ks = knobs(&[
            "--sysctl kernel.numa_balancing=0",
            "--sysctl kernel.numa_balancing_scan_delay_ms=500",
            "--thp never",
            "--sysfs /sys/kernel/mm/transparent_hugepage/defrag=madvise",
            "--governor performance",
        ]);
        let a = apply(&ks, r, None).unwrap();
        let v: Vec<(&str, &str)> = a
            .values()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            v,
            [
                ("/sys/kernel/mm/transparent_hugepage/defrag", "madvise"),
                ("governor", "performance"),
                ("kernel.numa_balancing", "0"),
                ("kernel.numa_balancing_scan_delay_ms", "500"),
                ("thp", "never"),
            ]
        );
        assert_eq!(get(r, NB), "0\n");
        assert_eq!(get(r, SCAN), "500\n");
        assert_eq!(get(r, THP_ENABLED), "never\n");
        assert_eq!(get(r, DEFRAG), "madvise\n");
        for cpu in [0, 2, 10] {
            assert_eq!(get(r, &gov(cpu)), "performance\n", "cpu{cpu}");
        }
        assert_eq!(get(r, SWAP), "60\n");

        a.restore().unwrap();
        assert_eq!(get(r, NB), "1\n");
        assert_eq!(get(r, SCAN), "1000\n");
        // The original of a list file is its bracketed word.
        assert_eq!(get(r, THP_ENABLED), "madvise\n");
        assert_eq!(get(r, DEFRAG), "always\n");
        for cpu in [0, 2, 10] {
            assert_eq!(get(r, &gov(cpu)), "powersave\n", "cpu{cpu}");
        }
        let mut after = snapshot(r);
        after.insert(THP_ENABLED.into(), before[THP_ENABLED].clone());
        after.insert(DEFRAG.into(), before[DEFRAG].clone());
        assert_eq!(after, before, "nothing else was created or changed");
    }

    #[test]
    fn drop_restores() {
        let d = fake_root();
        let r = d.path();
        {
            let a = apply(
                &knobs(&["--sysctl vm.swappiness=10", "--thp always"]),
                r,
                None,
            )
            .unwrap();
            assert_eq!(get(r, SWAP), "10\n");
            assert_eq!(get(r, THP_ENABLED), "always\n");
            assert_eq!(a.values()["thp"], "always");
        }
        assert_eq!(get(r, SWAP), "60\n");
        assert_eq!(get(r, THP_ENABLED), "madvise\n");
    }

    #[test]
    fn values_are_read_back() {
        let d = fake_root();
        let r = d.path();
        // A kernel that clamps the value, and a CPU that picks another
        // governor: the record says what the machine says.
        let cpu2 = r.join(gov(2));
        let mut w = |p: &Path, v: &str| {
            let v = match v {
                "0" => "2",
                _ if p == cpu2 => "schedutil",
                v => v,
            };
            write_value(p, v)
        };
        let ks = knobs(&["--sysctl kernel.numa_balancing=0", "--governor performance"]);
        let a = apply_with(&ks, r, None, false, &mut w).unwrap();
        assert_eq!(a.values()["kernel.numa_balancing"], "2");
        assert_eq!(
            a.values()["governor"],
            "cpu0=performance,cpu2=schedutil,cpu10=performance"
        );
        a.restore().unwrap();
        assert_eq!(get(r, NB), "1\n");
        assert_eq!(get(r, &gov(2)), "powersave\n");
    }

    #[test]
    fn a_missing_file_changes_nothing() {
        let d = fake_root();
        let r = d.path();
        let before = snapshot(r);
        let cases: [(&[&str], String); 7] = [
            (
                &["--sysctl kernel.numa_balancing=0", "--sysctl kernel.foo=1"],
                format!(
                    "--sysctl kernel.foo: no such sysctl ({})",
                    r.join("proc/sys/kernel/foo").display()
                ),
            ),
            (
                &[
                    "--thp never",
                    "--sysctl kernel.numa_balancing_scan_size_mb=64",
                ],
                format!(
                    "--sysctl kernel.numa_balancing_scan_size_mb: no such sysctl ({}, nor {})",
                    r.join("proc/sys/kernel/numa_balancing_scan_size_mb")
                        .display(),
                    r.join("sys/kernel/debug/sched/numa_balancing/scan_size_mb")
                        .display()
                ),
            ),
            (
                // A directory is not a sysctl.
                &["--sysctl vm.swappiness=1", "--sysctl kernel=1"],
                format!(
                    "--sysctl kernel: no such sysctl ({})",
                    r.join("proc/sys/kernel").display()
                ),
            ),
            (
                &["--sysctl kernel.numa_balancing=0", "--sysfs /sys/nope=1"],
                format!(
                    "--sysfs /sys/nope: no such file ({})",
                    r.join("sys/nope").display()
                ),
            ),
            (
                &["--sysctl kernel.numa_balancing=0", "--governor ondemand"],
                "--governor ondemand: \"ondemand\" is not available on cpu0 \
                 (available: performance powersave)"
                    .to_string(),
            ),
            (
                &[
                    "--sysctl kernel.numa_balancing=0",
                    "--sysctl kernel.numa_balancing=1",
                ],
                "--sysctl kernel.numa_balancing: given twice".to_string(),
            ),
            (
                &["--governor performance", "--sysctl kernel.numa_balancing=0"],
                String::new(), // filled below: a root without cpufreq
            ),
        ];
        for (texts, want) in &cases[..6] {
            let e = apply(&knobs(texts), r, None).unwrap_err();
            assert_eq!(e.to_string(), *want);
            assert_eq!(snapshot(r), before, "{texts:?} changed something");
        }

        // No CPU with cpufreq, no THP.
        let bare = tempfile::tempdir().unwrap();
        let b = bare.path();
        put(b, NB, "1\n");
        fs::create_dir_all(b.join(CPU_DIR).join("cpu0")).unwrap();
        let e = apply(&knobs(cases[6].0), b, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "--governor performance: no CPU has cpufreq ({}/cpu*/cpufreq/scaling_governor)",
                b.join(CPU_DIR).display()
            )
        );
        let e = apply(
            &knobs(&["--sysctl kernel.numa_balancing=0", "--thp never"]),
            b,
            None,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--thp never: no transparent hugepage support ("),
            "{e}"
        );
        assert_eq!(get(b, NB), "1\n");

        // Knobs built by hand are checked like parsed ones.
        let e = apply(
            &[Knob::Sysfs {
                path: "/sys/../proc/sys/kernel/numa_balancing".into(),
                value: "0".into(),
            }],
            r,
            None,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("--sysfs: "), "{e}");
        assert_eq!(snapshot(r), before);
    }

    #[test]
    fn governor_writes_every_cpu_with_cpufreq() {
        let d = fake_root();
        let r = d.path();
        let a = apply(&knobs(&["--governor performance"]), r, None).unwrap();
        for cpu in [0, 2, 10] {
            assert_eq!(get(r, &gov(cpu)), "performance\n", "cpu{cpu}");
        }
        assert!(!r.join(CPU_DIR).join("cpu1/cpufreq").exists());
        assert_eq!(a.values()["governor"], "performance");
        drop(a);
        for cpu in [0, 2, 10] {
            assert_eq!(get(r, &gov(cpu)), "powersave\n", "cpu{cpu}");
        }
        // One CPU without the governor: nothing is written anywhere.
        put(
            r,
            &format!("{CPU_DIR}/cpu10/cpufreq/scaling_available_governors"),
            "powersave\n",
        );
        let before = snapshot(r);
        let e = apply(&knobs(&["--governor performance"]), r, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--governor performance: \"performance\" is not available on cpu10 (available: powersave)"
        );
        assert_eq!(snapshot(r), before);
    }

    #[test]
    fn a_failure_halfway_restores_what_was_written() {
        let d = fake_root();
        let r = d.path();
        let defrag = r.join(DEFRAG);
        // The file turns into a directory after the checks: its write fails.
        let mut w = |p: &Path, v: &str| {
            if p == defrag {
                fs::remove_file(p)?;
                fs::create_dir(p)?;
            }
            write_value(p, v)
        };
        let ks = knobs(&[
            "--sysctl kernel.numa_balancing=0",
            "--governor performance",
            "--sysfs /sys/kernel/mm/transparent_hugepage/defrag=never",
            "--thp never",
        ]);
        let e = apply_with(&ks, r, None, false, &mut w).unwrap_err();
        let m = e.to_string();
        assert!(
            m.starts_with(&format!(
                "--sysfs /sys/kernel/mm/transparent_hugepage/defrag: cannot write {}: ",
                defrag.display()
            )),
            "{m}"
        );
        assert!(!m.contains('\n'));
        assert_eq!(get(r, NB), "1\n");
        for cpu in [0, 2, 10] {
            assert_eq!(get(r, &gov(cpu)), "powersave\n", "cpu{cpu}");
        }
        assert_eq!(
            get(r, THP_ENABLED),
            "always [madvise] never\n",
            "never written"
        );
    }

    #[test]
    fn a_failed_rollback_is_reported() {
        let d = fake_root();
        let r = d.path();
        let nb = r.join(NB);
        let swap = r.join(SWAP);
        // The first file vanishes once written; the second cannot be written.
        let mut w = |p: &Path, v: &str| {
            if p == swap {
                fs::remove_file(&nb)?;
                fs::create_dir(&nb)?;
                return Err(io::Error::other("refused"));
            }
            write_value(p, v)
        };
        let ks = knobs(&[
            "--sysctl kernel.numa_balancing=0",
            "--sysctl vm.swappiness=1",
        ]);
        let m = apply_with(&ks, r, None, false, &mut w)
            .unwrap_err()
            .to_string();
        assert!(
            m.starts_with(&format!(
                "--sysctl vm.swappiness: cannot write {}: refused; restoring the values \
                 written before it failed too: could not restore --sysctl kernel.numa_balancing: \
                 cannot write \"1\" to {}: ",
                swap.display(),
                nb.display()
            )),
            "{m}"
        );
        assert!(!m.contains('\n'));
    }

    #[test]
    fn guard_loop_done_and_eof() {
        let d = fake_root();
        let r = d.path();
        let originals = vec![
            (r.join(NB), "1".to_string()),
            (r.join(SWAP), "60".to_string()),
            // The same file twice: the first original must end up there.
            (r.join(SCAN), "1000".to_string()),
            (r.join(SCAN), "2000".to_string()),
        ];
        let applied = |r: &Path| {
            put(r, NB, "0\n");
            put(r, SWAP, "10\n");
            put(r, SCAN, "5\n");
        };

        applied(r);
        assert_eq!(guard_loop(io::Cursor::new("done\n"), &originals), 0);
        assert_eq!(
            (get(r, NB), get(r, SWAP), get(r, SCAN)),
            ("0\n".into(), "10\n".into(), "5\n".into())
        );

        // Noise before `done` changes nothing either.
        assert_eq!(guard_loop(io::Cursor::new("hello\ndone"), &originals), 0);
        assert_eq!(get(r, NB), "0\n");

        for input in ["", "do", "hello\n"] {
            applied(r);
            assert_eq!(
                guard_loop(io::Cursor::new(input), &originals),
                0,
                "{input:?}"
            );
            assert_eq!(get(r, NB), "1\n", "{input:?}");
            assert_eq!(get(r, SWAP), "60\n", "{input:?}");
            assert_eq!(get(r, SCAN), "1000\n", "{input:?}: restored last first");
        }

        // A file that cannot be written: the others still are, exit 1.
        applied(r);
        let mut bad = originals.clone();
        bad.insert(0, (r.join("proc/sys/kernel"), "x".into()));
        assert_eq!(guard_loop(io::Cursor::new(""), &bad), 1);
        assert_eq!(get(r, NB), "1\n");
    }

    fn test_exe() -> PathBuf {
        std::env::current_exe().unwrap()
    }

    /// This test binary running only the test `name`, as a subprocess.
    fn role_args(name: &str) -> Vec<String> {
        [
            "--ignored",
            "--exact",
            &format!("knobs::tests::{name}"),
            "--nocapture",
            "--test-threads=1",
        ]
        .map(String::from)
        .to_vec()
    }

    fn test_guard() -> Guard {
        Guard {
            exe: test_exe(),
            args: role_args("subprocess_guard"),
            env: vec![(SUBPROCESS.to_string(), "1".to_string())],
        }
    }

    fn role(name: &str) -> Command {
        let mut c = Command::new(test_exe());
        c.args(role_args(name)).env(SUBPROCESS, "1");
        c
    }

    fn in_subprocess() -> bool {
        std::env::var_os(SUBPROCESS).is_some()
    }

    /// Role: the guard (`numalab __knob-guard`).
    #[test]
    #[ignore = "run as a subprocess by other tests"]
    fn subprocess_guard() {
        if in_subprocess() {
            std::process::exit(guard_main(&[]));
        }
    }

    /// Role: a numalab that applies knobs with a guard and waits to be
    /// killed.
    #[test]
    #[ignore = "run as a subprocess by other tests"]
    fn subprocess_victim() {
        if !in_subprocess() {
            return;
        }
        let root = PathBuf::from(std::env::var_os(ROOT_VAR).unwrap());
        let ks = knobs(&["--sysctl kernel.numa_balancing=0", "--thp never"]);
        let a = apply(&ks, &root, Some(&test_guard())).unwrap();
        let mut out = io::stdout();
        out.write_all(b"applied\n").unwrap();
        out.flush().unwrap();
        std::thread::sleep(Duration::from_secs(60));
        // Never killed: leave without restoring, like SIGKILL would.
        std::mem::forget(a);
        std::process::exit(3);
    }

    /// Role: an unprivileged numalab.
    #[test]
    #[ignore = "run as a subprocess by other tests"]
    fn subprocess_unprivileged() {
        if !in_subprocess() {
            return;
        }
        let root = PathBuf::from(std::env::var_os(ROOT_VAR).unwrap());
        let r = apply(&knobs(&["--sysctl kernel.numa_balancing=0"]), &root, None);
        let line = match r {
            Ok(_) => "OK\n".to_string(),
            Err(e) => format!("ERR: {e}\n"),
        };
        io::stdout().write_all(line.as_bytes()).unwrap();
    }

    fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
        let start = Instant::now();
        while !ok() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "timed out: {what}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn the_guard_process_restores_on_eof_only() {
        let d = fake_root();
        let r = d.path();
        let list = serde_json::to_string(&[
            (r.join(NB).to_str().unwrap(), "1"),
            (r.join(THP_ENABLED).to_str().unwrap(), "madvise"),
        ])
        .unwrap();
        let run = |stdin: &str| {
            put(r, NB, "0\n");
            put(r, THP_ENABLED, "never\n");
            let mut c = role("subprocess_guard")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
            c.wait().unwrap().code()
        };
        assert_eq!(run(&format!("{list}\ndone\n")), Some(0));
        assert_eq!(
            (get(r, NB), get(r, THP_ENABLED)),
            ("0\n".into(), "never\n".into())
        );
        assert_eq!(run(&format!("{list}\n")), Some(0));
        assert_eq!(
            (get(r, NB), get(r, THP_ENABLED)),
            ("1\n".into(), "madvise\n".into())
        );
        // No complete list: numalab died before writing; touch nothing.
        for bad in ["", "[[\"/x\"", "{}\n"] {
            assert_eq!(run(bad), Some(2), "{bad:?}");
            assert_eq!(get(r, NB), "0\n", "{bad:?}");
        }
    }

    #[test]
    fn the_guard_is_detached_and_told_done() {
        let d = fake_root();
        let r = d.path();
        let ks = knobs(&["--sysctl kernel.numa_balancing=0"]);
        let mut a = apply(&ks, r, Some(&test_guard())).unwrap();
        assert_eq!(get(r, NB), "0\n");
        let g = a.guard.take().unwrap();
        let pid = g.child.id() as i32;
        // SAFETY: getsid and getpgid take no pointers.
        let (sid, pgid, my_pgid) =
            unsafe { (libc::getsid(pid), libc::getpgid(pid), libc::getpgid(0)) };
        assert_eq!(sid, pid, "the guard leads its own session");
        assert_ne!(pgid, my_pgid);
        // Ctrl-C, SIGTERM and SIGHUP do not stop it.
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            crate::child::signal(pid, s);
        }
        std::thread::sleep(Duration::from_millis(200));
        let fds: Vec<String> = fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let locks = lock_dir(r, false);
        let held: Vec<PathBuf> = fds
            .iter()
            .filter(|f| !["0", "1", "2"].contains(&f.as_str()))
            .map(|f| fs::read_link(format!("/proc/{pid}/fd/{f}")).unwrap())
            .collect();
        assert!(
            held.iter().all(|p| p.starts_with(&locks)),
            "the guard holds only stdin, stdout, stderr and the knob locks: {held:?}"
        );
        assert!(fds.len() > 3, "the guard is running: {fds:?}");
        assert_eq!(held.len(), 1, "numa_balancing's lock: {held:?}");
        let status = g.finish().unwrap();
        assert!(status.success(), "{status}");
        assert_eq!(get(r, NB), "0\n", "`done`: the guard touched nothing");
        a.restore().unwrap();
        assert_eq!(get(r, NB), "1\n");

        // A guard that cannot start: nothing is written.
        let before = snapshot(r);
        let bad = Guard {
            exe: r.join("no-such-numalab"),
            args: vec![],
            env: vec![],
        };
        let e = apply(&ks, r, Some(&bad)).unwrap_err();
        assert!(
            e.to_string().starts_with("cannot start the knob guard ("),
            "{e}"
        );
        assert_eq!(snapshot(r), before);
    }

    #[test]
    fn sigkill_leaves_the_restore_to_the_guard() {
        let d = fake_root();
        let r = d.path();
        let mut victim = crate::child::die_with_parent(&mut role("subprocess_victim"))
            .env(ROOT_VAR, r)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = io::BufReader::new(victim.stdout.take().unwrap());
        let mut lines = out.lines();
        loop {
            match lines.next() {
                // libtest writes `test NAME ... ` before it.
                Some(Ok(l)) if l.ends_with("applied") => break,
                Some(Ok(_)) => {}
                other => panic!("the victim ended before applying: {other:?}"),
            }
        }
        assert_eq!(get(r, NB), "0\n");
        assert_eq!(get(r, THP_ENABLED), "never\n");
        crate::child::signal(victim.id() as i32, libc::SIGKILL);
        let status = victim.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
        wait_for("the guard restores numa_balancing", || get(r, NB) == "1\n");
        wait_for("the guard restores thp", || {
            get(r, THP_ENABLED) == "madvise\n"
        });
        // The guard held the knob until it had restored it, then let go.
        let lock = lock_dir(r, false).join("proc%sys%kernel%numa_balancing.lock");
        wait_for("the guard lets go of the knob", || {
            crate::lock::acquire(&lock, crate::lock::Mode::Exclusive, false).is_ok()
        });
    }

    #[test]
    fn not_root_needs_root() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        put(r, NB, "1\n");
        for dir in ["", "proc", "proc/sys", "proc/sys/kernel"] {
            fs::set_permissions(r.join(dir), fs::Permissions::from_mode(0o755)).unwrap();
        }
        fs::set_permissions(r.join(NB), fs::Permissions::from_mode(0o444)).unwrap();
        let want = format!(
            "--sysctl kernel.numa_balancing: needs root (cannot write {})",
            r.join(NB).display()
        );
        if is_root() {
            // Check as `nobody`.
            let out = std::os::unix::process::CommandExt::gid(
                std::os::unix::process::CommandExt::uid(
                    &mut role("subprocess_unprivileged"),
                    65534,
                ),
                65534,
            )
            .env(ROOT_VAR, r)
            .output()
            .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.lines().any(|l| l.ends_with(&format!("ERR: {want}"))),
                "{text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        } else {
            let e = apply(&knobs(&["--sysctl kernel.numa_balancing=0"]), r, None).unwrap_err();
            assert_eq!(e.to_string(), want);
        }
        assert_eq!(get(r, NB), "1\n");
    }
}

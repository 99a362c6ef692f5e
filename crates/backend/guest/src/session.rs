//! A running guest: QEMU as a child that cannot outlive numalab, its
//! console streamed, the channel socket read and written, and the ways a
//! guest ends (it powered off, the user interrupted, it ran past the
//! timeout, its kernel panicked, it never printed anything) told apart.
//!
//! [`Launcher`] does what every boot shares (find QEMU and the kernel,
//! choose the accelerator, build the initramfs, say what it does) and
//! boots with the retry rules of the crate essay; a [`Session`] is one
//! booted guest. `numalab vm -- CMD` reads a session to its end; the guest
//! backend keeps one open and sends requests through it.

use crate::initramfs;
use crate::job::Job;
use crate::kernel;
use crate::qemu::{self, Accel, AccelChoice};
use crate::spec::VmSpec;
use crate::VmError;
use numalab_protocol::frame::{self as channel, Frame, Kind};
use std::collections::VecDeque;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the host side looks at a running guest when no frame
/// comes (QEMU's exit, Ctrl-C).
const WATCH_TICK: Duration = Duration::from_millis(100);

/// Console lines kept for failure reports.
const TAIL_LINES: usize = 20;
/// A booting guest (one that has not sent its first frame) whose console
/// stays silent this long is taken to be hung. With `earlycon` and the
/// kernel's default log level it prints from its first instructions and
/// then at least every second or so until init runs (the longest gap in a
/// TCG boot here is under 1 s idle), so these are generous. A KVM guest
/// that hangs is what nested KVM without hardware support tends to do; a
/// TCG guest hung in about one boot in a hundred on a 2-core host running
/// five guests at once, once before the kernel printed anything and once
/// just after its first lines.
const KVM_SILENCE: Duration = Duration::from_secs(30);
const TCG_SILENCE: Duration = Duration::from_secs(60);
/// Boots tried before giving up on a guest that stays silent.
const BOOT_ATTEMPTS: u32 = 2;
/// After "Kernel panic" appears, give the guest this long to exit.
const PANIC_GRACE: Duration = Duration::from_secs(5);

/// How long a guest may stay silent: `NUMALAB_VM_SILENCE_S` (tests,
/// debugging) or the accelerator's default.
fn silence_limit(accel: Accel) -> Duration {
    if let Some(s) = std::env::var("NUMALAB_VM_SILENCE_S")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&s| s > 0)
    {
        return Duration::from_secs(s);
    }
    match accel {
        Accel::Kvm => KVM_SILENCE,
        Accel::Tcg => TCG_SILENCE,
    }
}

fn failed(m: impl std::fmt::Display) -> VmError {
    VmError::Failed(m.to_string())
}

/// `NUMALAB_VM_DEBUG=1`: print the QEMU command line and keep the
/// temporary directory (initramfs, kernel).
pub(crate) fn debug() -> bool {
    std::env::var_os("NUMALAB_VM_DEBUG").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Where console output goes, and what is kept for error reports.
pub(crate) struct Console {
    sink: Mutex<Box<dyn Write + Send>>,
    tail: Mutex<VecDeque<String>>,
    panic_line: Mutex<Option<String>>,
    /// The first oops (`Oops: int3: 0000 [#1] ...`) and the first `RIP:`
    /// after it (the function it died in), for the panic's one line.
    oops: Mutex<(Option<String>, Option<String>)>,
    /// Milliseconds since start of the first console byte (0: none yet).
    first_byte_ms: AtomicU64,
    /// Milliseconds since start of the latest console line (0: none yet).
    last_line_ms: AtomicU64,
    saw_panic: AtomicBool,
}

impl Console {
    fn new(sink: Box<dyn Write + Send>) -> Console {
        Console {
            sink: Mutex::new(sink),
            tail: Mutex::new(VecDeque::new()),
            panic_line: Mutex::new(None),
            oops: Mutex::new((None, None)),
            first_byte_ms: AtomicU64::new(0),
            last_line_ms: AtomicU64::new(0),
            saw_panic: AtomicBool::new(false),
        }
    }

    fn line(&self, line: &str) {
        let mut t = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        if t.len() == TAIL_LINES {
            t.pop_front();
        }
        t.push_back(line.to_string());
        if line.contains("Oops: ") || line.contains(" RIP: ") {
            let mut o = self.oops.lock().unwrap_or_else(|e| e.into_inner());
            let text = strip_timestamp(line);
            if text.starts_with("Oops: ") && o.0.is_none() {
                o.0 = Some(text.to_string());
            } else if let Some(rip) = text.strip_prefix("RIP: ") {
                if o.0.is_some() && o.1.is_none() {
                    // `0010:__schedule+0x3ee/0x1080` -> the function.
                    let at = rip.split_once(':').map_or(rip, |(_, f)| f);
                    o.1 = Some(at.to_string());
                }
            }
        }
        if line.contains("Kernel panic") {
            self.saw_panic.store(true, Ordering::SeqCst);
            self.panic_line
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(|| strip_timestamp(line).to_string());
        }
    }

    fn write_raw(&self, bytes: &[u8]) {
        let mut s = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        let _ = s.write_all(bytes);
        let _ = s.flush();
    }

    pub(crate) fn tail(&self) -> Vec<String> {
        self.tail
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    pub(crate) fn panic_line(&self) -> String {
        self.panic_line
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_default()
    }

    /// What killed the kernel, from its first oops: `` (after `Oops:
    /// int3` in __schedule+0x3ee/0x1080)`` (empty without one), and for an
    /// int3 oops under TCG what it most likely is.
    pub(crate) fn oops_note(&self, accel: Accel) -> String {
        let o = self.oops.lock().unwrap_or_else(|e| e.into_inner());
        let Some(oops) = &o.0 else {
            return String::new();
        };
        // `Oops: int3: 0000 [#1] SMP NOPTI` -> `Oops: int3`.
        let kind = oops.split(": ").take(2).collect::<Vec<_>>().join(": ");
        let mut note = format!(" (after `{kind}`");
        if let Some(at) = &o.1 {
            note.push_str(&format!(" in {at}"));
        }
        note.push(')');
        if kind == "Oops: int3" && accel == Accel::Tcg {
            note.push_str(
                "; under TCG most likely QEMU running code the kernel was patching \
                 (docs/sched-ext.md, Known problem), not the workload: run again, or use --accel kvm",
            );
        }
        note
    }
}

/// `[    3.769963] Kernel panic` -> `Kernel panic`.
pub(crate) fn strip_timestamp(line: &str) -> &str {
    let t = line.trim();
    match t.strip_prefix('[').and_then(|r| r.split_once(']')) {
        Some((stamp, rest)) if stamp.trim().parse::<f64>().is_ok() => rest.trim(),
        _ => t,
    }
}

/// How a session ended.
#[derive(Debug, Clone)]
pub(crate) enum End {
    /// QEMU exited by itself (the guest powered off, or its kernel died
    /// and `-no-reboot` turned the reboot into an exit).
    Exited(Option<ExitStatus>),
    /// Ctrl-C, SIGTERM or SIGHUP: QEMU was stopped.
    Interrupted,
    /// The guest ran past the timeout and was stopped.
    Timeout,
    /// "Kernel panic" on the console, and QEMU stopped.
    Panic,
    /// The console stayed silent; the firmware log's last lines.
    Silent { secs: u64, firmware: Vec<String> },
}

/// What reading a session gives: the next frame, or how it ended.
pub(crate) enum Next {
    Frame(Frame),
    End(End),
}

/// Everything a boot needs, prepared once for every boot of one guest
/// shape.
pub(crate) struct Launcher {
    qemu: PathBuf,
    boot_image: kernel::Prepared,
    initrd: PathBuf,
    /// Removes the working directory when dropped; `None` once kept.
    tmp: Option<tempfile::TempDir>,
    workdir: PathBuf,
    shares: Vec<qemu::Share>,
    spec: VmSpec,
    append: String,
    /// The console log kept beside the records (`--quiet`; a failure
    /// keeps it too: [`Launcher::kept_log`]).
    pub console_log: Option<PathBuf>,
    /// Where the console is written as it comes: `console_log`, or a file
    /// in the working directory (removed with it unless a failure keeps
    /// it); none with `--shell`, whose console is the terminal.
    console_path: Option<PathBuf>,
    /// `console_path`, created once: every boot of this guest appends to it.
    console_file: Option<fs::File>,
    /// `<results>/vm-logs`, where kept logs go.
    logs_dir: PathBuf,
    /// The log kept by a failure, once.
    kept: std::sync::OnceLock<Option<PathBuf>>,
    /// Keep the command's standard output in [`Session::stdout`] instead
    /// of writing it out (`calibrate --output` in a guest).
    pub capture_stdout: bool,
    timeout: Duration,
    /// When `numalab vm` started: timeouts and the reported times count
    /// from here.
    pub start: Instant,
    pub interrupted: Arc<AtomicBool>,
    pub accel: Accel,
    choice: AccelChoice,
    quiet: bool,
    verbose: bool,
    shell: bool,
}

/// What a launcher is given.
pub(crate) struct LaunchOptions<'a> {
    pub spec: &'a VmSpec,
    pub kernel: Option<&'a Path>,
    pub accel: AccelChoice,
    pub timeout: Duration,
    pub quiet: bool,
    /// The console on standard error as it runs (`--verbose`); without
    /// it or `quiet`, only its tail is kept, printed on failure.
    pub verbose: bool,
    pub append: &'a str,
    pub exe: Option<&'a Path>,
    /// The console log goes under `<results>/vm-logs` with `quiet`.
    pub results: &'a Path,
    pub rootfs: Rootfs,
    /// The guest kernel's module tree (default `/lib/modules/<release>`).
    pub modules: Option<&'a Path>,
    /// Read-write host directories for a host-filesystem guest.
    pub shares: &'a [PathBuf],
    /// `--share-passthrough`: modes, setuid bits and device nodes of the
    /// shares pass through to the host.
    pub share_passthrough: bool,
    /// The command's working directory in a host-filesystem guest.
    pub cwd: Option<&'a Path>,
    /// Keep the working directory and say where it is.
    pub keep_workdir: bool,
    /// The console on the terminal (QEMU's standard input and output are
    /// numalab's), for `--shell`.
    pub shell: bool,
}

/// What the guest's root filesystem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rootfs {
    /// The host's when the guest kernel's modules for it are found, else
    /// the initramfs (saying why).
    Auto,
    /// The host's `/`, read-only over 9p under a tmpfs overlay.
    Host,
    /// numalab and its libraries only.
    Initramfs,
}

impl Rootfs {
    /// The names `--rootfs` and a campaign's `rootfs` take (`auto` is
    /// leaving it out).
    pub const NAMES: [&'static str; 2] = ["host", "initramfs"];

    /// The root `name` (one of [`Rootfs::NAMES`]) stands for.
    pub fn from_name(name: &str) -> Option<Rootfs> {
        Some(match name {
            "host" => Rootfs::Host,
            "initramfs" => Rootfs::Initramfs,
            _ => return None,
        })
    }
}

/// The host-filesystem part of a boot: modules for the initramfs, the
/// job's [`crate::job::HostFs`], the 9p exports, and a sentence for the
/// status line.
struct HostFsPlan {
    modules: Vec<(String, Vec<u8>)>,
    module_paths: Vec<String>,
    hostfs: crate::job::HostFs,
    shares: Vec<qemu::Share>,
    describe: String,
}

fn canonical_dir(flag: &str, p: &Path) -> Result<PathBuf, VmError> {
    let c = fs::canonicalize(p).map_err(|e| failed(format!("{flag} {}: {e}", p.display())))?;
    if !c.is_dir() {
        return Err(failed(format!("{flag} {}: not a directory", p.display())));
    }
    if c.to_str().is_none() {
        return Err(failed(format!("{flag} {}: not valid UTF-8", p.display())));
    }
    Ok(c)
}

/// Why the guest's root is the initramfs only.
#[derive(Debug, thiserror::Error)]
enum InitramfsOnly {
    #[error("--rootfs initramfs")]
    Asked,
    /// `--rootfs auto` and the guest kernel's modules were not found.
    #[error(transparent)]
    NoModules(crate::modules::PlanError),
}

/// Decide the root filesystem: the host's (`Ok(Ok(plan))`) or the
/// initramfs only (`Ok(Err(why))`, when `auto` found no modules or
/// `--rootfs initramfs` was given).
fn plan_hostfs(
    o: &LaunchOptions,
    kernel: &Path,
    modules: Option<&Path>,
) -> Result<Result<HostFsPlan, InitramfsOnly>, VmError> {
    let asked_for_host = o.rootfs == Rootfs::Host || !o.shares.is_empty() || o.cwd.is_some();
    if o.rootfs == Rootfs::Initramfs {
        if !o.shares.is_empty() || o.cwd.is_some() {
            return Err(failed(
                "--share and --cwd need the host's filesystem in the guest (--rootfs host)",
            ));
        }
        return Ok(Err(InitramfsOnly::Asked));
    }
    let found = match modules {
        Some(d) => {
            if !d.is_dir() {
                return Err(failed(format!(
                    "--modules {}: not a directory",
                    d.display()
                )));
            }
            crate::modules::plan(d)
        }
        None => crate::modules::default_dir(kernel).and_then(|d| crate::modules::plan(&d)),
    };
    let plan = match found {
        Ok(p) => p,
        Err(e) if asked_for_host || modules.is_some() => return Err(failed(e)),
        Err(e) => return Ok(Err(InitramfsOnly::NoModules(e))),
    };
    let mut modules = Vec::new();
    let mut module_paths = Vec::new();
    for m in &plan.modules {
        let data = crate::modules::read_module(m).map_err(failed)?;
        let guest = format!("/numalab/modules/{}.ko", m.name);
        module_paths.push(guest.clone());
        modules.push((guest, data));
    }
    let mut shares = vec![qemu::Share {
        tag: crate::job::HOSTROOT_TAG.into(),
        path: "/".into(),
        readonly: true,
        passthrough: false,
    }];
    let mut guest_shares = Vec::new();
    for (i, d) in o.shares.iter().enumerate() {
        let c = canonical_dir("--share", d)?;
        if c == Path::new("/")
            || ["/proc", "/sys", "/dev", "/numalab"]
                .iter()
                .any(|p| c.starts_with(p))
        {
            return Err(failed(format!(
                "--share {}: cannot share {} (the guest mounts its own there)",
                d.display(),
                c.display()
            )));
        }
        shares.push(qemu::Share {
            tag: crate::job::share_tag(i),
            path: c.clone(),
            readonly: false,
            passthrough: o.share_passthrough,
        });
        guest_shares.push(c.to_string_lossy().to_string());
    }
    let cwd = match o.cwd {
        Some(c) => canonical_dir("--cwd", c)?.to_string_lossy().to_string(),
        // Like the host: where numalab was started, when the guest has it.
        None => std::env::current_dir()
            .ok()
            .and_then(|d| d.to_str().map(str::to_string))
            .filter(|d| {
                !["/proc", "/sys", "/dev", "/run"]
                    .iter()
                    .any(|p| Path::new(d).starts_with(p))
            })
            .unwrap_or_else(|| "/".into()),
    };
    let mut describe = format!(
        "root: the host's / over 9p, read-only under a tmpfs overlay ({} modules from {}); working directory {cwd}",
        plan.modules.len(),
        plan.dir.display()
    );
    if !guest_shares.is_empty() {
        describe.push_str(&format!("; read-write: {}", guest_shares.join(", ")));
    }
    Ok(Ok(HostFsPlan {
        modules,
        module_paths,
        hostfs: crate::job::HostFs {
            shares: guest_shares,
            share_passthrough: o.share_passthrough,
            cwd,
        },
        shares,
        describe,
    }))
}

/// The prefix of a working directory: `numalab-vm-<pid>-`.
const WORKDIR_PREFIX: &str = "numalab-vm-";

/// Remove the working directories under `tmp` that numalab processes now
/// dead left behind (killed by SIGKILL, say): `numalab-vm-<pid>-*` whose
/// pid no longer exists. Those of live processes, and names without a
/// pid, are left alone. Returns what was removed.
pub(crate) fn clean_stale_workdirs(tmp: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(tmp) else {
        return removed;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(pid) = name
            .strip_prefix(WORKDIR_PREFIX)
            .and_then(|r| r.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
            .filter(|&p| p > 0)
        else {
            continue;
        };
        let gone = numalab_linux::process::gone(pid);
        // Only a directory of ours: another user's is not ours to remove.
        let ours = e.metadata().is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == numalab_linux::process::euid()
        });
        if gone && ours && fs::remove_dir_all(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

/// The memory this machine can give a guest now: `MemAvailable` (the
/// guest preallocates all of its memory at QEMU's start, so what other
/// processes hold is not its to take), `MemTotal` on kernels without it.
fn host_memory_bytes() -> Option<u64> {
    available_memory(&fs::read_to_string("/proc/meminfo").ok()?)
}

fn available_memory(meminfo: &str) -> Option<u64> {
    let field = |name: &str| -> Option<u64> {
        let kb: u64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        Some(kb * 1024)
    };
    field("MemAvailable:").or_else(|| field("MemTotal:"))
}

/// A guest with more memory than this machine has available (both in
/// bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("--mem-per-node: the guest's {:.1} GiB in all is more than the {:.1} GiB of memory this machine has available (MemAvailable; the guest preallocates all of its memory)", gib(*guest), gib(*host))]
pub(crate) struct TooBigForHost {
    guest: u64,
    host: u64,
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

/// A guest bigger than this machine's available memory is refused
/// before QEMU is started (its preallocation would fail, or push the
/// host into swap and OOM).
pub(crate) fn check_host_memory(guest: u64, host: Option<u64>) -> Result<(), TooBigForHost> {
    match host {
        Some(h) if guest > h => Err(TooBigForHost { guest, host: h }),
        _ => Ok(()),
    }
}

/// The kernel to boot: a path as given, a named kernel from its cache
/// (with its module tree and a note saying what it is), or /boot's.
fn resolve_kernel(
    kernel_arg: Option<crate::named::KernelArg>,
    quiet: bool,
) -> Result<(PathBuf, Option<PathBuf>, Option<String>), VmError> {
    // A kernel by name brings its module tree (unless --modules).
    let mut named_modules = None;
    let mut named_note = None;
    let kernel = match kernel_arg {
        Some(crate::named::KernelArg::Path(k)) => {
            qemu::check_kernel(&k).map_err(failed)?;
            k
        }
        Some(crate::named::KernelArg::Named(known)) => {
            let entry = crate::named::resolve_for_vm(known, quiet).map_err(failed)?;
            named_note = Some(entry.describe(known));
            named_modules = Some(entry.modules.clone());
            entry.vmlinuz
        }
        None => qemu::find_kernel_in(Path::new("/boot")).map_err(failed)?,
    };

    Ok((kernel, named_modules, named_note))
}

/// The launcher's private working directory (mode 0700): removed with the
/// launcher, unless kept (`--keep-workdir`, said so).
fn working_directory(keep: bool) -> Result<(Option<tempfile::TempDir>, PathBuf), VmError> {
    // Private: the initramfs, the channel and the firmware log are
    // nobody else's to read.
    let tmp = tempfile::Builder::new()
        .prefix(&format!("{WORKDIR_PREFIX}{}-", std::process::id()))
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .map_err(|e| failed(format!("creating a temporary directory: {e}")))?;
    let workdir = tmp.path().to_path_buf();
    let tmp = if keep {
        numalab_linux::statusln!(
            "numalab vm: keeping the working directory {} (--keep-workdir)",
            tmp.keep().display()
        );
        None
    } else {
        Some(tmp)
    };
    Ok((tmp, workdir))
}

/// The kernel image QEMU boots: the vmlinuz as is, or prepared for a PVH
/// boot (unless NUMALAB_VM_NO_PVH is set).
fn boot_image(kernel: &Path, workdir: &Path) -> kernel::Prepared {
    if std::env::var_os("NUMALAB_VM_NO_PVH").is_some_and(|v| !v.is_empty() && v != "0") {
        kernel::Prepared {
            image: kernel.to_path_buf(),
            pvh: false,
            note: Some("NUMALAB_VM_NO_PVH is set: booting the compressed image".into()),
        }
    } else {
        kernel::prepare(kernel, kernel::cache_dir().as_deref(), workdir)
    }
}

/// Where the console goes: the results' vm-logs directory, the kept log
/// (with --quiet) and the file written (none for a shell without --quiet).
fn console_paths(
    o: &LaunchOptions,
    workdir: &Path,
) -> Result<(PathBuf, Option<PathBuf>, Option<PathBuf>), VmError> {
    let logs_dir = o.results.join("vm-logs");
    let console_log = if o.quiet {
        fs::create_dir_all(&logs_dir)
            .map_err(|e| failed(format!("{}: {e}", logs_dir.display())))?;
        Some(logs_dir.join(log_name()))
    } else {
        None
    };
    // The console is always written to a file, so that a failure can
    // name where all of it is; without --quiet, in the working
    // directory, kept only if the guest fails.
    let console_path = match (&console_log, o.shell) {
        (Some(p), _) => Some(p.clone()),
        (None, false) => Some(workdir.join("console.log")),
        (None, true) => None,
    };
    Ok((logs_dir, console_log, console_path))
}

/// A flag SIGINT, SIGTERM and SIGHUP set, for the launcher to stop its
/// guest by.
fn interrupt_flag() -> Result<Arc<AtomicBool>, VmError> {
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, interrupted.clone())
            .map_err(|e| failed(format!("installing signal handlers: {e}")))?;
    }
    Ok(interrupted)
}

impl Launcher {
    /// Check everything, build the initramfs for `job`, install the
    /// signal handlers and say what will boot.
    pub fn new(o: &LaunchOptions, job: &Job) -> Result<Launcher, VmError> {
        let start = Instant::now();
        check_host_memory(o.spec.total_memory_bytes(), host_memory_bytes()).map_err(failed)?;
        qemu::check_append(o.append).map_err(failed)?;
        // An unknown kernel name is refused before anything else.
        let kernel_arg = o
            .kernel
            .map(crate::named::classify)
            .transpose()
            .map_err(failed)?;
        let qemu_bin = qemu::find_qemu().map_err(failed)?;
        let (kernel, named_modules, named_note) = resolve_kernel(kernel_arg, o.quiet)?;
        let (accel, why) = qemu::choose_accel(o.accel).map_err(failed)?;
        let exe = match o.exe {
            Some(e) => e.to_path_buf(),
            None => std::env::current_exe()
                .map_err(|e| failed(format!("locating the numalab executable: {e}")))?,
        };
        let hostfs = plan_hostfs(o, &kernel, o.modules.or(named_modules.as_deref()))?;
        let mut job = job.clone();
        let (extra, shares, root_note) = match hostfs {
            Ok(p) => {
                job.modules = p.module_paths;
                job.hostfs = Some(p.hostfs);
                (p.modules, p.shares, p.describe)
            }
            Err(why) => (
                Vec::new(),
                Vec::new(),
                format!("root: the initramfs only, numalab and its libraries ({why})"),
            ),
        };
        let removed = clean_stale_workdirs(&std::env::temp_dir());
        let (tmp, workdir) = working_directory(o.keep_workdir)?;
        let initrd = workdir.join("initramfs.cpio");
        let built = initramfs::build(&exe, &job, &extra, &initrd).map_err(failed)?;
        let boot_image = boot_image(&kernel, &workdir);
        // The initramfs is loaded into guest memory, then unpacked into a
        // tmpfs-like rootfs next to it, and the kernel needs room of its own.
        let need = 2 * built.bytes + (160 << 20);
        if o.spec.total_memory_bytes() < need {
            return Err(failed(format!(
                "--mem-per-node: the guest needs at least {} MiB in all to unpack its {} MiB initramfs (numalab and its libraries); it has {} MiB",
                need >> 20,
                built.bytes >> 20,
                o.spec.total_memory_bytes() >> 20
            )));
        }
        let (logs_dir, console_log, console_path) = console_paths(o, &workdir)?;
        let interrupted = interrupt_flag()?;
        let console_file = match &console_path {
            Some(p) => Some(
                numalab_record::create_new(p)
                    .map_err(|e| failed(format!("{}: {e}", p.display())))?,
            ),
            None => None,
        };
        let l = Launcher {
            qemu: qemu_bin,
            initrd,
            tmp,
            workdir,
            shares,
            spec: o.spec.clone(),
            // A shell's terminal shows only warnings and worse.
            append: qemu::kernel_cmdline(&built.ld_library_path, o.shell, o.append),
            console_log,
            console_path,
            console_file,
            logs_dir,
            kept: std::sync::OnceLock::new(),
            capture_stdout: false,
            timeout: o.timeout,
            start,
            interrupted,
            accel,
            choice: o.accel,
            quiet: o.quiet,
            verbose: o.verbose,
            shell: o.shell,
            boot_image,
        };
        l.say_what_boots(
            o,
            &kernel,
            &why,
            [named_note.as_deref(), Some(&root_note)],
            &removed,
        );
        Ok(l)
    }

    /// Says what boots: the shape, kernel and accelerator, the kernel's
    /// and root's notes, stale working directories removed, TCG's warning.
    fn say_what_boots(
        &self,
        o: &LaunchOptions,
        kernel: &Path,
        why: &str,
        [named_note, root_note]: [Option<&str>; 2],
        removed: &[PathBuf],
    ) {
        let (l, accel) = (self, self.accel);
        l.status(&format!(
            "{}; kernel {}{}; accelerator {} ({why})",
            o.spec.summary(),
            kernel.display(),
            if l.boot_image.pvh { " (PVH boot)" } else { "" },
            accel.as_str()
        ));
        if let Some(note) = named_note {
            l.status(note);
        }
        if let Some(note) = &l.boot_image.note {
            l.status(note);
        }
        if let Some(note) = root_note {
            l.status(note);
        }
        for r in removed {
            l.status(&format!(
                "removed {}, left behind by a numalab that is gone",
                r.display()
            ));
        }
        if accel == Accel::Tcg {
            l.status("TCG emulates every instruction: expect a slow guest; its timings say nothing about NUMA hardware");
        }
    }

    /// A line on standard error, unless `--quiet`.
    pub fn status(&self, s: &str) {
        if !self.quiet {
            numalab_linux::statusln!("numalab vm: {s}");
        }
    }

    /// Boot until the guest sends its first frame (or ends), booting
    /// again when the console stays silent (with TCG if `auto` had picked
    /// KVM, else once more as it was) or when the kernel panics before
    /// init's first frame (once more).
    pub fn boot(&mut self) -> Result<(Session, Option<Frame>), VmError> {
        let mut attempt = 1;
        loop {
            let mut s = Session::start(self, self.accel)?;
            match s.next() {
                Next::Frame(f) => return Ok((s, Some(f))),
                Next::End(End::Silent { secs, firmware }) => {
                    let accel = self.accel;
                    let printed = s.console.first_byte_ms.load(Ordering::SeqCst) != 0;
                    if printed {
                        let tail = s.console.tail();
                        numalab_linux::statusln!(
                            "numalab vm: the guest's boot stalled; its last console lines were:"
                        );
                        console_lines(&tail[tail.len().saturating_sub(4)..]);
                    }
                    let what = format!(
                        "the {} guest {}{}",
                        accel.as_str().to_uppercase(),
                        if printed {
                            format!("stalled while booting (nothing on its console for {secs} s)")
                        } else {
                            format!("printed nothing for {secs} s")
                        },
                        if accel == Accel::Kvm {
                            " (nested KVM can hang)"
                        } else {
                            ""
                        }
                    );
                    if !firmware.is_empty() {
                        numalab_linux::statusln!(
                            "numalab vm: {what}; the last firmware lines were:"
                        );
                        console_lines(&firmware);
                    }
                    if accel == Accel::Kvm && self.choice == AccelChoice::Auto {
                        self.status(&format!("{what}; booting again with TCG"));
                        self.accel = Accel::Tcg;
                    } else if attempt < BOOT_ATTEMPTS {
                        attempt += 1;
                        numalab_linux::statusln!("numalab vm: {what}; stopped it, booting again (attempt {attempt} of {BOOT_ATTEMPTS})");
                    } else {
                        self.say_log();
                        return Err(failed(format!(
                            "{what}, {BOOT_ATTEMPTS} times, and was stopped{}",
                            if accel == Accel::Kvm {
                                "; use --accel tcg"
                            } else {
                                ""
                            }
                        )));
                    }
                }
                // A kernel that dies before init's first frame (an oops in
                // early boot: Debian's 7.3 under TCG once in four boots,
                // `Oops: int3` in sched_clock_cpu) gets one more boot.
                Next::End(End::Panic) if attempt < BOOT_ATTEMPTS => {
                    attempt += 1;
                    let tail = s.console.tail();
                    let oops = tail
                        .iter()
                        .map(|l| strip_timestamp(l))
                        .find(|l| l.starts_with("Oops") || l.starts_with("BUG:"))
                        .map(|l| format!("{l}; "))
                        .unwrap_or_default();
                    numalab_linux::statusln!(
                        "numalab vm: the guest kernel died before its init started ({oops}{}); booting again (attempt {attempt} of {BOOT_ATTEMPTS})",
                        s.console.panic_line()
                    );
                }
                Next::End(_) => return Ok((s, None)),
            }
        }
    }

    /// Keep the temporary directory (`NUMALAB_VM_DEBUG`).
    pub fn keep_tmp(&mut self) {
        if let Some(t) = self.tmp.take() {
            numalab_linux::statusln!("numalab vm: debug: kept {}", t.keep().display());
        }
    }

    fn tmp(&self) -> &Path {
        &self.workdir
    }

    /// The console log, kept beside the records: the `--quiet` log, or
    /// the working directory's copied to `<results>/vm-logs` (once).
    pub fn kept_log(&self) -> Option<PathBuf> {
        if let Some(p) = &self.console_log {
            return Some(p.clone());
        }
        self.kept
            .get_or_init(|| {
                let from = self.console_path.as_ref()?;
                let copy = || -> std::io::Result<PathBuf> {
                    fs::create_dir_all(&self.logs_dir)?;
                    let to = self.logs_dir.join(log_name());
                    let mut out = numalab_record::create_new(&to)?;
                    std::io::copy(&mut fs::File::open(from)?, &mut out)?;
                    Ok(to)
                };
                match copy() {
                    Ok(p) => Some(p),
                    Err(e) => {
                        numalab_linux::statusln!(
                            "numalab vm: warning: keeping the console log in {}: {e}",
                            self.logs_dir.display()
                        );
                        None
                    }
                }
            })
            .clone()
    }

    /// Say where the whole console is, after a failure.
    fn say_log(&self) {
        if let Some(p) = self.kept_log() {
            numalab_linux::statusln!("numalab vm: full console log: {}", p.display());
        }
    }

    /// A failure, with the last console lines printed to explain it.
    pub fn report(&self, msg: String, session: &Session) -> VmError {
        let tail = session.console.tail();
        if !tail.is_empty() {
            numalab_linux::statusln!(
                "numalab vm: last {} lines of the guest console:",
                tail.len()
            );
            console_lines(&tail);
        }
        self.say_log();
        failed(msg)
    }

    /// The message for an ended session, with the console tail printed.
    pub fn describe_end(&self, end: &End, session: &Session) -> VmError {
        let report = |msg: String| self.report(msg, session);
        match end {
            End::Interrupted => {
                VmError::Interrupted("interrupted: the guest was stopped and QEMU reaped".into())
            }
            End::Timeout => report(format!(
                "timed out after {} s: the guest was stopped (raise --timeout)",
                self.timeout.as_secs()
            )),
            End::Panic => report(format!(
                "the guest kernel panicked: {}{}",
                session.console.panic_line(),
                session.console.oops_note(self.accel)
            )),
            End::Silent { secs, .. } => report(format!(
                "the guest's console was silent for {secs} s before its init started"
            )),
            End::Exited(_) => report(format!(
                "the guest stopped early ({})",
                describe_exited(end, session)
            )),
        }
    }
}

/// `QEMU ended with exit status 0; the channel ended inside a frame`.
pub(crate) fn describe_exited(end: &End, session: &Session) -> String {
    let how = match end {
        End::Exited(Some(s)) => describe_status(*s),
        _ => "an unknown status".into(),
    };
    let mut msg = format!("QEMU ended with {how}");
    if session.truncated() > 0 {
        msg.push_str(&format!(
            "; the channel ended inside a frame ({} bytes)",
            session.truncated()
        ));
    }
    msg
}

pub(crate) fn describe_status(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "an unknown status".into(),
    }
}

/// QEMU as a child that cannot outlive us: SIGKILL when numalab dies
/// (PR_SET_PDEATHSIG; it fires when the spawning thread exits, so spawn
/// from the thread that waits), and its own process group so a terminal
/// Ctrl-C reaches only numalab, which then stops it in order.
fn spawn_qemu(cmd: &mut Command, own_group: bool) -> std::io::Result<Child> {
    // SIGKILL when numalab dies, even between the fork and here.
    numalab_linux::child::die_with_parent(cmd);
    // Not with the console on the terminal: a background group reading
    // from it would be stopped (SIGTTIN). QEMU puts the terminal in raw
    // mode, so Ctrl-C goes to the guest anyway.
    if own_group {
        cmd.process_group(0);
    }
    cmd.spawn()
}

/// Kill and reap. Idempotent.
fn stop(child: &mut Child) -> Option<ExitStatus> {
    if let Ok(Some(s)) = child.try_wait() {
        return Some(s);
    }
    let _ = child.kill();
    child.wait().ok()
}

/// One booted guest.
pub(crate) struct Session {
    child: Option<Child>,
    pub console: Arc<Console>,
    /// QEMU's channel socket; connected to once QEMU has created it.
    socket: PathBuf,
    rx: Option<Receiver<Vec<u8>>>,
    writer: Option<UnixStream>,
    parser: channel::Parser,
    pending: VecDeque<Frame>,
    pub frame_errors: Vec<String>,
    /// Seconds from the launcher's start to the guest's first frame and
    /// to the first byte of the command's output.
    pub init_s: Option<f64>,
    pub first_output_s: Option<f64>,
    /// The command's standard output, when the launcher captures it.
    pub stdout: Option<Vec<u8>>,
    start: Instant,
    boot_start: Instant,
    timeout: Duration,
    silence: Duration,
    firmware_log: PathBuf,
    interrupted: Arc<AtomicBool>,
    panic_at: Option<Instant>,
    ended: Option<End>,
    threads: Vec<JoinHandle<()>>,
}

impl Session {
    fn start(l: &Launcher, accel: Accel) -> Result<Session, VmError> {
        let tmp = l.tmp();
        let socket = tmp.join(format!("channel-{}.sock", accel.as_str()));
        let _ = fs::remove_file(&socket);
        if socket.as_os_str().len() >= 100 {
            return Err(failed(format!(
                "{}: too long for a Unix socket; set TMPDIR to a shorter directory",
                socket.display()
            )));
        }
        let firmware_log = tmp.join("firmware.log");
        let _ = fs::remove_file(&firmware_log);
        let launch = qemu::Launch {
            spec: &l.spec,
            accel,
            kernel: &l.boot_image.image,
            initrd: &l.initrd,
            channel: &socket,
            firmware_log: &firmware_log,
            append: l.append.clone(),
            name: format!("numalab-vm-{}", std::process::id()),
            shares: l.shares.clone(),
        };
        let qemu_args = qemu::args(&launch);
        if debug() {
            numalab_linux::statusln!(
                "numalab vm: debug: {} {}",
                l.qemu.display(),
                crate::host::shell_words(&qemu_args)
            );
        }
        let mut cmd = Command::new(&l.qemu);
        if l.shell {
            cmd.args(&qemu_args)
                .stdin(Stdio::inherit())
                .stdout(Stdio::inherit())
                .stderr(Stdio::piped());
        } else {
            cmd.args(&qemu_args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
        }
        // The console goes to its log file, and with --verbose to standard
        // error as well; its tail is kept to be printed when the guest fails.
        let file: Option<Box<dyn Write + Send>> = match (&l.console_file, &l.console_path) {
            (Some(f), Some(p)) => Some(Box::new(
                f.try_clone()
                    .map_err(|e| failed(format!("{}: {e}", p.display())))?,
            )),
            _ => None,
        };
        let sink: Box<dyn Write + Send> = match file {
            Some(f) if l.verbose => Box::new(Tee(f, Box::new(std::io::stderr()))),
            Some(f) => f,
            None if l.verbose || l.shell => Box::new(std::io::stderr()),
            None => Box::new(std::io::sink()),
        };
        let console = Arc::new(Console::new(sink));
        let boot_start = Instant::now();
        let mut child = spawn_qemu(&mut cmd, !l.shell)
            .map_err(|e| failed(format!("starting {}: {e}", l.qemu.display())))?;
        let mut threads = Vec::new();

        // Console: QEMU's stdout is the guest's ttyS0, streamed as it comes
        // (with --shell it is the terminal itself, and nobody watches it).
        let out = child.stdout.take();
        let c = console.clone();
        let t0 = l.start;
        threads.extend(out.map(|out| {
            std::thread::spawn(move || {
                let mut r = BufReader::new(out);
                let mut buf = Vec::new();
                loop {
                    buf.clear();
                    match r.read_until(b'\n', &mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let ms = t0.elapsed().as_millis().max(1) as u64;
                            let _ = c.first_byte_ms.compare_exchange(
                                0,
                                ms,
                                Ordering::SeqCst,
                                Ordering::SeqCst,
                            );
                            c.last_line_ms.store(ms, Ordering::SeqCst);
                            let line: Vec<u8> =
                                buf.iter().copied().filter(|&b| b != b'\r').collect();
                            c.write_raw(&line);
                            c.line(String::from_utf8_lossy(&line).trim_end());
                        }
                    }
                }
            })
        }));
        // QEMU's own messages go the same way, marked as QEMU's.
        let err = child.stderr.take().expect("piped");
        let c = console.clone();
        threads.push(std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let l = format!("qemu: {line}");
                c.write_raw(format!("{l}\n").as_bytes());
                c.line(&l);
            }
        }));

        Ok(Session {
            child: Some(child),
            console,
            socket,
            rx: None,
            writer: None,
            parser: channel::Parser::new(),
            pending: VecDeque::new(),
            frame_errors: Vec::new(),
            init_s: None,
            first_output_s: None,
            stdout: l.capture_stdout.then(Vec::new),
            start: l.start,
            boot_start,
            timeout: l.timeout,
            // An unwatched console cannot be silent.
            silence: if l.shell {
                Duration::MAX
            } else {
                silence_limit(accel)
            },
            firmware_log,
            interrupted: l.interrupted.clone(),
            panic_at: None,
            ended: None,
            threads,
        })
    }

    /// Bytes of a frame cut short when the channel ended.
    pub fn truncated(&self) -> usize {
        self.parser.pending()
    }

    /// Send a frame to the guest.
    pub fn send(&mut self, kind: Kind, name: &str, payload: &[u8]) -> Result<(), VmError> {
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| failed("the guest's channel is not connected"))?;
        w.write_all(&channel::encode(kind, name, payload))
            .map_err(|e| failed(format!("writing to the guest's channel: {e}")))
    }

    /// Connect to QEMU's channel socket if QEMU has created it (QEMU
    /// then lets the guest run), and read it on a thread of its own.
    fn connect(&mut self) {
        let Ok(stream) = UnixStream::connect(&self.socket) else {
            return;
        };
        let Ok(writer) = stream.try_clone() else {
            return;
        };
        let (tx, rx) = mpsc::channel();
        self.threads.push(std::thread::spawn(move || {
            let mut r = stream;
            let mut buf = vec![0u8; 64 << 10];
            loop {
                match r.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        }));
        self.rx = Some(rx);
        self.writer = Some(writer);
    }

    /// Decode bytes; write stdout and stderr frames out at once.
    fn take(&mut self, data: &[u8]) {
        for f in self.parser.push(data) {
            match f {
                Ok(f) => match f.kind {
                    Kind::Stdout | Kind::Stderr => {
                        self.first_output_s
                            .get_or_insert_with(|| self.start.elapsed().as_secs_f64());
                        let _ = if let (Kind::Stdout, Some(buf)) = (f.kind, &mut self.stdout) {
                            buf.extend_from_slice(&f.payload);
                            Ok(())
                        } else if f.kind == Kind::Stdout {
                            let mut o = std::io::stdout();
                            o.write_all(&f.payload).and_then(|_| o.flush())
                        } else {
                            let mut e = std::io::stderr();
                            e.write_all(&f.payload).and_then(|_| e.flush())
                        };
                    }
                    _ => {
                        if f.kind == Kind::Hello {
                            self.init_s = Some(self.start.elapsed().as_secs_f64());
                        }
                        self.pending.push_back(f);
                    }
                },
                Err(e) => self.frame_errors.push(format!("channel: {e}")),
            }
        }
    }

    /// The next frame (not stdout or stderr: those are written out as
    /// they arrive), or how the guest ended. Once ended, it says so again.
    pub fn next(&mut self) -> Next {
        loop {
            if let Some(f) = self.pending.pop_front() {
                return Next::Frame(f);
            }
            if let Some(e) = &self.ended {
                return Next::End(e.clone());
            }
            if self.rx.is_none() && self.child.is_some() {
                self.connect();
            }
            match &self.rx {
                // Frames wake it; between them it looks at QEMU and for
                // Ctrl-C every WATCH_TICK, not every 20 ms: under TCG the
                // host's CPUs are the guest's, and each wakeup here
                // takes one from a vCPU.
                Some(rx) => match rx.recv_timeout(WATCH_TICK) {
                    Ok(data) => {
                        self.take(&data);
                        continue;
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    // The guest is gone; `check` says how.
                    Err(RecvTimeoutError::Disconnected) => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                },
                None => std::thread::sleep(Duration::from_millis(20)),
            }
            let end = self.check();
            if let Some(end) = end {
                self.finish(end);
            }
        }
    }

    /// Whether the guest has ended, or must be stopped.
    fn check(&mut self) -> Option<End> {
        let child = self.child.as_mut()?;
        if let Ok(Some(s)) = child.try_wait() {
            return Some(End::Exited(Some(s)));
        }
        if self.interrupted.load(Ordering::SeqCst) {
            return Some(End::Interrupted);
        }
        if self.start.elapsed() > self.timeout {
            return Some(End::Timeout);
        }
        if self.console.saw_panic.load(Ordering::SeqCst) {
            let at = *self.panic_at.get_or_insert_with(Instant::now);
            if at.elapsed() > PANIC_GRACE {
                return Some(End::Panic);
            }
        }
        if self.init_s.is_none() && self.boot_silence() > self.silence {
            // Before the kernel's first line only the firmware can say
            // how far the boot got; after it, the console tail does.
            let firmware = if self.console.first_byte_ms.load(Ordering::SeqCst) == 0 {
                let log = fs::read_to_string(&self.firmware_log).unwrap_or_default();
                let lines: Vec<String> = log.lines().map(str::to_string).collect();
                lines[lines.len().saturating_sub(8)..].to_vec()
            } else {
                Vec::new()
            };
            return Some(End::Silent {
                secs: self.silence.as_secs(),
                firmware,
            });
        }
        None
    }

    /// How long the guest's console has been silent: since its latest
    /// line, or since QEMU started if there was none.
    fn boot_silence(&self) -> Duration {
        let last = self.console.last_line_ms.load(Ordering::SeqCst);
        let since_start = self.start.elapsed();
        let booted_at = self.boot_start.duration_since(self.start);
        since_start.saturating_sub(booted_at.max(Duration::from_millis(last)))
    }

    /// Stop QEMU (if it still runs), reap it, and decode what it sent on
    /// its way out.
    fn finish(&mut self, mut end: End) {
        if let Some(mut c) = self.child.take() {
            let status = stop(&mut c);
            if let End::Exited(s) = &mut end {
                *s = s.or(status);
            }
        }
        for t in std::mem::take(&mut self.threads) {
            let _ = t.join();
        }
        let mut rest = Vec::new();
        if let Some(rx) = &self.rx {
            while let Ok(data) = rx.try_recv() {
                rest.push(data);
            }
        }
        for data in rest {
            self.take(&data);
        }
        // A kernel that panicked and rebooted ends QEMU by itself.
        if matches!(end, End::Exited(_)) && self.console.saw_panic.load(Ordering::SeqCst) {
            end = End::Panic;
        }
        self.ended = Some(end);
    }

    /// Stop the guest now (idempotent).
    pub fn stop(&mut self) {
        if self.ended.is_none() {
            self.finish(End::Interrupted);
        }
    }

    /// Whether the guest has ended (and how it did is already known).
    pub fn has_ended(&self) -> bool {
        self.ended.is_some()
    }

    /// Seconds since the launcher started.
    pub fn elapsed_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}

/// A log's file name: when and by which numalab.
fn log_name() -> String {
    format!(
        "{}-{}.console.log",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
        std::process::id()
    )
}

/// Quoted console lines on standard error, `  | ` before each, cut into
/// pieces that fit 80 columns (the whole lines are in the log).
fn console_lines(lines: &[String]) {
    for l in lines {
        for piece in fit(l, 76) {
            numalab_linux::errln!("  | {piece}");
        }
    }
}

/// `line` in pieces of at most `width` characters (one empty piece for
/// an empty line).
fn fit(line: &str, width: usize) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(width).map(|c| c.iter().collect()).collect()
}

/// Writes to both.
struct Tee(Box<dyn Write + Send>, Box<dyn Write + Send>);

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write_all(buf)?;
        self.1.write_all(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()?;
        self.1.flush()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            stop(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn console() -> Console {
        Console::new(Box::new(std::io::sink()))
    }

    /// A panic's one line names the oops behind it and the function it
    /// died in (the 7.3 guest's, as its console printed it), and an int3
    /// oops under TCG says what it most likely is.
    #[test]
    fn a_panic_says_which_oops_and_where() {
        let c = console();
        for l in [
            "[   23.301793] Oops: int3: 0000 [#1] SMP NOPTI",
            "[   23.303185] RIP: 0010:__schedule+0x3ee/0x1080",
            "[   23.307879] RIP: 0010:__schedule+0x3ee/0x1080",
            "[   23.308192] Kernel panic - not syncing: Fatal exception in interrupt",
        ] {
            c.line(l);
        }
        assert_eq!(
            c.panic_line(),
            "Kernel panic - not syncing: Fatal exception in interrupt"
        );
        let tcg = c.oops_note(Accel::Tcg);
        assert!(
            tcg.starts_with(" (after `Oops: int3` in __schedule+0x3ee/0x1080); under TCG"),
            "{tcg}"
        );
        assert!(!tcg.contains('\n'));
        assert_eq!(
            c.oops_note(Accel::Kvm),
            " (after `Oops: int3` in __schedule+0x3ee/0x1080)"
        );
        // No oops (a panic of its own, VFS: unable to mount root): nothing.
        let c = console();
        c.line("[    1.0] Kernel panic - not syncing: VFS: Unable to mount root fs");
        assert_eq!(c.oops_note(Accel::Tcg), "");
    }

    #[test]
    fn a_guest_bigger_than_the_host_is_refused() {
        let g = 1u64 << 30;
        assert!(super::check_host_memory(2 * g, Some(24 * g)).is_ok());
        assert!(super::check_host_memory(2 * g, None).is_ok());
        let e = super::check_host_memory(128 * g, Some(24 * g)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--mem-per-node: the guest's 128.0 GiB in all is more than the 24.0 GiB of memory this machine has available (MemAvailable; the guest preallocates all of its memory)"
        );
        // What is available, not what is installed; MemTotal without it.
        let mi = "MemTotal:       25165824 kB\nMemFree: 1 kB\nMemAvailable:    1048576 kB\n";
        assert_eq!(super::available_memory(mi), Some(g));
        assert_eq!(super::available_memory("MemTotal: 1048576 kB\n"), Some(g));
        assert_eq!(super::available_memory("nothing\n"), None);
    }

    #[test]
    fn timestamps() {
        assert_eq!(
            strip_timestamp("[    3.769963] Kernel panic - not syncing: x"),
            "Kernel panic - not syncing: x"
        );
        assert_eq!(strip_timestamp("[x] y"), "[x] y");
    }

    #[test]
    fn only_dead_numalabs_workdirs_are_removed() {
        let t = tempfile::tempdir().unwrap();
        let mut c = Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        let me = std::process::id();
        for n in [
            format!("numalab-vm-{dead}-abc"),
            format!("numalab-vm-{me}-abc"),
            "numalab-vm-xyz".to_string(),
            format!("other-{dead}-abc"),
        ] {
            fs::create_dir_all(t.path().join(n).join("sub")).unwrap();
        }
        let removed = clean_stale_workdirs(t.path());
        assert_eq!(removed, [t.path().join(format!("numalab-vm-{dead}-abc"))]);
        assert!(t.path().join(format!("numalab-vm-{me}-abc")).exists());
        assert!(t.path().join("numalab-vm-xyz").exists());
        assert!(t.path().join(format!("other-{dead}-abc")).exists());
    }
}

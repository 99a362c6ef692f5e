//! The host side of `numalab vm`: build the initramfs, start QEMU, stream
//! the console, decode the channel, enforce the timeout, tear the guest
//! down whatever happens, and store the records that come back.

use crate::channel::{self, Frame, Kind};
use crate::initramfs;
use crate::job::{self, Job};
use crate::kernel;
use crate::qemu::{self, Accel, AccelChoice};
use crate::spec::VmSpec;
use numalab_record::Backend;
use numalab_topology::{MachineInfo, Roots};
use std::collections::{BTreeMap, VecDeque};
use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Console lines kept for failure reports.
const TAIL_LINES: usize = 20;
/// A guest whose console stays silent this long after QEMU starts is
/// taken to be hung. With `earlycon` the kernel prints within a second or
/// two of its start (1-4 s after QEMU's under TCG, even on a busy host), so
/// these are generous. A KVM guest that hangs is what nested KVM without
/// hardware support tends to do; a TCG guest hung once in ~100 boots on a
/// 2-core host under heavy load, before the kernel printed anything.
const KVM_SILENCE: Duration = Duration::from_secs(30);
const TCG_SILENCE: Duration = Duration::from_secs(60);
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

/// Boots tried before giving up on a guest that stays silent.
const BOOT_ATTEMPTS: u32 = 2;
/// After "Kernel panic" appears, give the guest this long to exit.
const PANIC_GRACE: Duration = Duration::from_secs(5);

/// Everything `numalab vm` was asked to do.
#[derive(Debug, Clone)]
pub struct VmOptions {
    pub spec: VmSpec,
    /// Kernel image; `None`: the newest readable `/boot/vmlinuz-*`.
    pub kernel: Option<PathBuf>,
    /// Already parsed `key=value` sysctls, in the order given.
    pub sysctls: Vec<(String, String)>,
    pub accel: AccelChoice,
    pub timeout: Duration,
    /// Console to a log file instead of standard error.
    pub quiet: bool,
    /// `numalab vm --results`.
    pub results: Option<PathBuf>,
    /// numalab arguments for the guest (what came after `--`).
    pub command: Vec<String>,
    /// Extra kernel command line arguments (before numalab's own
    /// `rdinit=... -- guest-init`, so they cannot replace init).
    pub append: String,
    /// The numalab executable to put in the guest (default: this one).
    pub exe: Option<PathBuf>,
}

/// How the guest command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestExit {
    Code(i32),
    Signal(i32),
}

/// What a finished `numalab vm` did.
#[derive(Debug, Clone)]
pub struct VmReport {
    pub exit: GuestExit,
    pub accel: Accel,
    pub guest_kernel: String,
    /// Records written on the host.
    pub records: Vec<PathBuf>,
    pub results_dir: PathBuf,
    pub console_log: Option<PathBuf>,
    /// Seconds from the start of `numalab vm` to the guest's init sending
    /// its first frame, and to the first byte of the command's output.
    pub init_s: Option<f64>,
    pub first_output_s: Option<f64>,
    pub total_s: f64,
}

impl VmReport {
    /// Exit code for the host process: the command's, or 128+signal.
    pub fn exit_code(&self) -> u8 {
        match self.exit {
            GuestExit::Code(c) => c.clamp(0, 255) as u8,
            GuestExit::Signal(s) => (128 + s).clamp(0, 255) as u8,
        }
    }
}

/// Why `numalab vm` failed. `Interrupted` is Ctrl-C/SIGTERM (exit 130).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VmError {
    Interrupted(String),
    Failed(String),
}

impl std::fmt::Display for VmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VmError::Interrupted(m) | VmError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for VmError {}

fn failed(m: impl Into<String>) -> VmError {
    VmError::Failed(m.into())
}

/// Where console output goes, and what is kept for error reports.
struct Console {
    sink: Mutex<Box<dyn Write + Send>>,
    tail: Mutex<VecDeque<String>>,
    panic_line: Mutex<Option<String>>,
    /// Milliseconds since start of the first console byte (0: none yet).
    first_byte_ms: AtomicU64,
    saw_panic: AtomicBool,
}

impl Console {
    fn line(&self, line: &str) {
        let mut t = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        if t.len() == TAIL_LINES {
            t.pop_front();
        }
        t.push_back(line.to_string());
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

    fn tail(&self) -> Vec<String> {
        self.tail
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

/// `[    3.769963] Kernel panic` -> `Kernel panic`.
fn strip_timestamp(line: &str) -> &str {
    let t = line.trim();
    match t.strip_prefix('[').and_then(|r| r.split_once(']')) {
        Some((stamp, rest)) if stamp.trim().parse::<f64>().is_ok() => rest.trim(),
        _ => t,
    }
}

/// Boot a guest, run the command in it, bring the records back.
pub fn run(opts: &VmOptions) -> Result<VmReport, VmError> {
    let start = Instant::now();
    job::check_command(&opts.command).map_err(failed)?;
    qemu::check_append(&opts.append).map_err(failed)?;
    let (guest_args, results_after) = job::split_results(&opts.command).map_err(failed)?;
    let results_dir = match (&opts.results, &results_after) {
        (Some(a), Some(b)) if a != b => {
            return Err(failed(format!(
                "--results given twice: {} before -- and {} after it",
                a.display(),
                b.display()
            )))
        }
        (Some(a), _) => a.clone(),
        (None, Some(b)) => b.clone(),
        (None, None) => PathBuf::from("numalab-results"),
    };

    let qemu_bin = qemu::find_qemu().map_err(failed)?;
    let kernel = match &opts.kernel {
        Some(k) => {
            qemu::check_kernel(k).map_err(failed)?;
            k.clone()
        }
        None => qemu::find_kernel_in(Path::new("/boot")).map_err(failed)?,
    };
    let (mut accel, why) = qemu::choose_accel(opts.accel).map_err(failed)?;
    check_results_dir(&results_dir).map_err(failed)?;

    let exe = match &opts.exe {
        Some(e) => e.clone(),
        None => std::env::current_exe()
            .map_err(|e| failed(format!("locating the numalab executable: {e}")))?,
    };
    let tmp = tempfile::Builder::new()
        .prefix("numalab-vm-")
        .tempdir()
        .map_err(|e| failed(format!("creating a temporary directory: {e}")))?;
    let initrd = tmp.path().join("initramfs.cpio");
    let job = Job {
        args: guest_args,
        sysctls: opts.sysctls.clone(),
        results_dir: job::GUEST_RESULTS.to_string(),
    };
    let built = initramfs::build(&exe, &job, &initrd).map_err(failed)?;
    let boot_image =
        if std::env::var_os("NUMALAB_VM_NO_PVH").is_some_and(|v| !v.is_empty() && v != "0") {
            kernel::Prepared {
                image: kernel.clone(),
                pvh: false,
                note: Some("NUMALAB_VM_NO_PVH is set: booting the compressed image".into()),
            }
        } else {
            kernel::prepare(&kernel, kernel::cache_dir().as_deref(), tmp.path())
        };
    // The initramfs is loaded into guest memory, then unpacked into a
    // tmpfs-like rootfs next to it, and the kernel needs room of its own.
    let need = 2 * built.bytes + (160 << 20);
    if opts.spec.total_memory_bytes() < need {
        return Err(failed(format!(
            "--mem-per-node: the guest needs at least {} MiB in all to unpack its {} MiB initramfs (numalab and its libraries); it has {} MiB",
            need >> 20,
            built.bytes >> 20,
            opts.spec.total_memory_bytes() >> 20
        )));
    }

    let host = host_info();
    let console_log = if opts.quiet {
        let dir = results_dir.join("vm-logs");
        fs::create_dir_all(&dir).map_err(|e| failed(format!("{}: {e}", dir.display())))?;
        Some(dir.join(format!(
            "{}-{}.console.log",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
            std::process::id()
        )))
    } else {
        None
    };
    let status_line = |s: &str| {
        if !opts.quiet {
            eprintln!("numalab vm: {s}");
        }
    };
    status_line(&format!(
        "{}; kernel {}{}; accelerator {} ({why})",
        opts.spec.summary(),
        kernel.display(),
        if boot_image.pvh { " (PVH boot)" } else { "" },
        accel.as_str()
    ));
    if let Some(note) = &boot_image.note {
        status_line(note);
    }
    if accel == Accel::Tcg {
        status_line("TCG emulates every instruction: expect a slow guest; its timings say nothing about NUMA hardware");
    }

    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, interrupted.clone())
            .map_err(|e| failed(format!("installing signal handlers: {e}")))?;
    }

    let ctx = BootCtx {
        qemu: &qemu_bin,
        kernel: &boot_image.image,
        initrd: &initrd,
        tmp: tmp.path(),
        spec: &opts.spec,
        append: qemu::kernel_cmdline(&built.ld_library_path, opts.quiet, &opts.append),
        console_log: console_log.as_deref(),
        timeout: opts.timeout,
        start,
        interrupted: &interrupted,
    };
    let mut attempt = 1;
    let outcome = loop {
        match boot(&ctx, accel) {
            Ok(o) => break o,
            Err(BootError::Vm(e)) => return Err(e),
            Err(BootError::Silent { secs, firmware }) => {
                let what = format!(
                    "the {} guest printed nothing for {secs} s{}",
                    accel.as_str().to_uppercase(),
                    if accel == Accel::Kvm {
                        " (nested KVM can hang)"
                    } else {
                        ""
                    }
                );
                if !firmware.is_empty() {
                    eprintln!("numalab vm: {what}; the last firmware lines were:");
                    for l in &firmware {
                        eprintln!("  | {l}");
                    }
                }
                if accel == Accel::Kvm && opts.accel == AccelChoice::Auto {
                    status_line(&format!("{what}; booting again with TCG"));
                    accel = Accel::Tcg;
                } else if attempt < BOOT_ATTEMPTS {
                    attempt += 1;
                    eprintln!("numalab vm: {what}; stopped it, booting again (attempt {attempt} of {BOOT_ATTEMPTS})");
                } else {
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
        }
    };

    let report_failure = |msg: String, console: &Console| -> VmError {
        let tail = console.tail();
        if !tail.is_empty() {
            eprintln!(
                "numalab vm: last {} lines of the guest console:",
                tail.len()
            );
            for l in &tail {
                eprintln!("  | {l}");
            }
        }
        if let Some(p) = &console_log {
            eprintln!("numalab vm: full console log: {}", p.display());
        }
        failed(msg)
    };

    let Outcome {
        console,
        qemu_status,
        stopped,
        frames,
        frame_errors,
        truncated,
        init_s,
        first_output_s,
    } = outcome;
    for e in &frame_errors {
        eprintln!("numalab vm: warning: {e}");
    }
    if let Some(reason) = stopped {
        return Err(match reason {
            Stop::Interrupted => {
                VmError::Interrupted("interrupted: the guest was stopped and QEMU reaped".into())
            }
            Stop::Timeout => report_failure(
                format!(
                    "timed out after {} s: the guest was stopped (raise --timeout)",
                    opts.timeout.as_secs()
                ),
                &console,
            ),
            Stop::Panic => report_failure(
                format!(
                    "the guest kernel panicked: {}",
                    console
                        .panic_line
                        .lock()
                        .unwrap()
                        .clone()
                        .unwrap_or_default()
                ),
                &console,
            ),
        });
    }

    let mut guest_kernel = String::new();
    let mut sysctls: BTreeMap<String, String> = BTreeMap::new();
    let mut exit = None;
    let mut guest_error = None;
    let mut records: Vec<(String, Vec<u8>)> = Vec::new();
    for f in frames {
        match f.kind {
            Kind::Hello => {
                if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&f.payload) {
                    guest_kernel = v["kernel"].as_str().unwrap_or("").to_string();
                }
            }
            Kind::Sysctls => {
                sysctls = serde_json::from_slice(&f.payload).unwrap_or_default();
            }
            Kind::Record => records.push((f.name, f.payload)),
            Kind::Exit => {
                let v: serde_json::Value = serde_json::from_slice(&f.payload).unwrap_or_default();
                exit = Some(match (v["code"].as_i64(), v["signal"].as_i64()) {
                    (Some(c), _) => GuestExit::Code(c as i32),
                    (None, Some(s)) => GuestExit::Signal(s as i32),
                    _ => GuestExit::Code(1),
                });
            }
            Kind::Error => guest_error = Some(String::from_utf8_lossy(&f.payload).to_string()),
            Kind::Stdout | Kind::Stderr => {}
        }
    }
    if let Some(e) = guest_error {
        return Err(report_failure(format!("in the guest: {e}"), &console));
    }
    let Some(exit) = exit else {
        let how = match qemu_status {
            Some(s) => describe_status(s),
            None => "an unknown status".into(),
        };
        let mut msg =
            format!("the guest stopped before the command finished (QEMU ended with {how})");
        if truncated > 0 {
            msg.push_str(&format!(
                "; the channel ended inside a frame ({truncated} bytes)"
            ));
        }
        return Err(report_failure(msg, &console));
    };

    // Store the records, tagged with where they came from.
    let mut written = Vec::new();
    let mut bad = Vec::new();
    for (name, data) in records {
        let text = String::from_utf8_lossy(&data);
        match numalab_record::parse(Path::new(&name), &text) {
            Ok(mut rec) => {
                // The guest's own backend facts (CPU lists, sizing) stay.
                let details = std::mem::take(rec.backend.details_mut());
                rec.backend = Backend::Guest {
                    accel: accel.as_str().to_string(),
                    spec: opts.spec.typed.clone(),
                    sysctls: sysctls.clone(),
                    host: host.hostname.clone(),
                    host_kernel: host.kernel.clone(),
                    host_cpu_model: host.cpu_model.clone(),
                    details,
                };
                let w = match accel {
                    Accel::Tcg => "run in a TCG-emulated QEMU guest: times measure the emulator, and emulated NUMA nodes have no remote-access cost",
                    Accel::Kvm => "run in a KVM guest: emulated NUMA nodes share the host's memory, so they have no remote-access cost",
                };
                if !rec.warnings.iter().any(|x| x == w) {
                    rec.warnings.push(w.to_string());
                }
                match numalab_record::write_atomic(&results_dir, &rec) {
                    Ok(p) => written.push(p),
                    Err(e) => bad.push(format!("writing {name}: {e}")),
                }
            }
            Err(e) => bad.push(format!("record {name} from the guest: {e}")),
        }
    }
    if !bad.is_empty() {
        return Err(failed(format!(
            "{} of {} records from the guest could not be stored (first: {})",
            bad.len(),
            bad.len() + written.len(),
            bad[0]
        )));
    }
    let report = VmReport {
        exit,
        accel,
        guest_kernel,
        records: written,
        results_dir,
        console_log,
        init_s,
        first_output_s,
        total_s: start.elapsed().as_secs_f64(),
    };
    if debug() {
        let kept = tmp.keep();
        eprintln!("numalab vm: debug: kept {}", kept.display());
    }
    Ok(report)
}

/// `NUMALAB_VM_DEBUG=1`: print the QEMU command line and keep the
/// temporary directory (initramfs, channel file).
fn debug() -> bool {
    std::env::var_os("NUMALAB_VM_DEBUG").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Arguments quoted for a POSIX shell, for copy and paste.
pub fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_=,./:+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn describe_status(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "an unknown status".into(),
    }
}

/// What `Backend::Guest` says about the host that ran QEMU.
struct HostInfo {
    hostname: String,
    kernel: String,
    cpu_model: Option<String>,
}

/// The host's name, kernel and CPU model; read directly when the full
/// machine probe fails (a host whose topology cannot be read).
fn host_info() -> HostInfo {
    if let Ok(m) = MachineInfo::probe(&Roots::host()) {
        return HostInfo {
            hostname: m.hostname,
            kernel: m.kernel,
            cpu_model: m.cpu_model,
        };
    }
    let read = |p: &str| fs::read_to_string(p).map(|s| s.trim().to_string()).ok();
    let cpu_model = read("/proc/cpuinfo").and_then(|c| {
        c.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
    });
    HostInfo {
        hostname: read("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
        kernel: read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
        cpu_model,
    }
}

/// Fail before booting if records could not be written to `dir`, without
/// creating it: a command that writes no records leaves nothing behind.
fn check_results_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        return numalab_record::ensure_writable_dir(dir)
            .map_err(|e| format!("results directory: {e}"));
    }
    let mut ancestor = dir.parent();
    while let Some(a) = ancestor {
        let a = if a.as_os_str().is_empty() {
            Path::new(".")
        } else {
            a
        };
        if a.exists() {
            let c = std::ffi::CString::new(a.as_os_str().as_encoded_bytes())
                .map_err(|e| e.to_string())?;
            // SAFETY: access(2) on a path string we own.
            let ok = a.is_dir() && unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0;
            if !ok {
                return Err(format!(
                    "results directory {}: cannot be created in {} ({})",
                    dir.display(),
                    a.display(),
                    if a.is_dir() {
                        "not writable"
                    } else {
                        "not a directory"
                    }
                ));
            }
            return Ok(());
        }
        ancestor = a.parent();
    }
    Ok(())
}

struct BootCtx<'a> {
    qemu: &'a Path,
    kernel: &'a Path,
    initrd: &'a Path,
    tmp: &'a Path,
    spec: &'a VmSpec,
    append: String,
    console_log: Option<&'a Path>,
    timeout: Duration,
    start: Instant,
    interrupted: &'a Arc<AtomicBool>,
}

enum Stop {
    Interrupted,
    Timeout,
    Panic,
}

struct Outcome {
    console: Arc<Console>,
    qemu_status: Option<ExitStatus>,
    stopped: Option<Stop>,
    frames: Vec<Frame>,
    frame_errors: Vec<String>,
    truncated: usize,
    init_s: Option<f64>,
    first_output_s: Option<f64>,
}

enum BootError {
    /// No console output in time; the last lines of the firmware's log.
    Silent {
        secs: u64,
        firmware: Vec<String>,
    },
    Vm(VmError),
}

impl From<VmError> for BootError {
    fn from(e: VmError) -> Self {
        BootError::Vm(e)
    }
}

/// QEMU as a child that cannot outlive us: SIGKILL when numalab dies
/// (PR_SET_PDEATHSIG; it fires when the spawning thread exits, so spawn
/// from the thread that waits), and its own process group so a terminal
/// Ctrl-C reaches only numalab, which then stops it in order.
fn spawn_qemu(cmd: &mut Command) -> std::io::Result<Child> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            libc::setpgid(0, 0);
            Ok(())
        });
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

/// Kills QEMU if this function is left early (a panic in numalab, `?`).
struct Guard(Option<Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            stop(c);
        }
    }
}

fn boot(ctx: &BootCtx, accel: Accel) -> Result<Outcome, BootError> {
    let channel_path = ctx.tmp.join(format!("channel-{}.bin", accel.as_str()));
    let firmware_log = ctx.tmp.join("firmware.log");
    let _ = fs::remove_file(&firmware_log);
    File::create(&channel_path).map_err(|e| failed(format!("{}: {e}", channel_path.display())))?;
    let launch = qemu::Launch {
        spec: ctx.spec,
        accel,
        kernel: ctx.kernel,
        initrd: ctx.initrd,
        channel: &channel_path,
        firmware_log: &firmware_log,
        append: ctx.append.clone(),
        name: format!("numalab-vm-{}", std::process::id()),
    };
    let qemu_args = qemu::args(&launch);
    if debug() {
        eprintln!(
            "numalab vm: debug: {} {}",
            ctx.qemu.display(),
            shell_words(&qemu_args)
        );
    }
    let mut cmd = Command::new(ctx.qemu);
    cmd.args(&qemu_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let sink: Box<dyn Write + Send> = match ctx.console_log {
        Some(p) => Box::new(
            fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| failed(format!("{}: {e}", p.display())))?,
        ),
        None => Box::new(std::io::stderr()),
    };
    let console = Arc::new(Console {
        sink: Mutex::new(sink),
        tail: Mutex::new(VecDeque::new()),
        panic_line: Mutex::new(None),
        first_byte_ms: AtomicU64::new(0),
        saw_panic: AtomicBool::new(false),
    });
    let boot_start = Instant::now();
    let mut guard =
        Guard(Some(spawn_qemu(&mut cmd).map_err(|e| {
            failed(format!("starting {}: {e}", ctx.qemu.display()))
        })?));
    let child = guard.0.as_mut().expect("just set");

    // Console: QEMU's stdout is the guest's ttyS0, streamed as it comes.
    let out = child.stdout.take().expect("piped");
    let c = console.clone();
    let t0 = ctx.start;
    let console_thread = std::thread::spawn(move || {
        let mut r = BufReader::new(out);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let ms = t0.elapsed().as_millis().max(1) as u64;
                    let _ =
                        c.first_byte_ms
                            .compare_exchange(0, ms, Ordering::SeqCst, Ordering::SeqCst);
                    let line: Vec<u8> = buf.iter().copied().filter(|&b| b != b'\r').collect();
                    c.write_raw(&line);
                    c.line(String::from_utf8_lossy(&line).trim_end());
                }
            }
        }
    });
    // QEMU's own messages go the same way, marked as QEMU's.
    let err = child.stderr.take().expect("piped");
    let c = console.clone();
    let qemu_err_thread = std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let l = format!("qemu: {line}");
            c.write_raw(format!("{l}\n").as_bytes());
            c.line(&l);
        }
    });

    let mut chan = File::open(&channel_path)
        .map_err(|e| failed(format!("{}: {e}", channel_path.display())))?;
    let mut parser = channel::Parser::new();
    let mut frames = Vec::new();
    let mut frame_errors = Vec::new();
    let mut init_s = None;
    let mut first_output_s = None;
    let mut buf = vec![0u8; 64 << 10];
    let mut panic_at: Option<Instant> = None;
    let mut stopped = None;
    let qemu_status;
    let mut stdout = std::io::stdout();
    let mut handle = |batch: Vec<Result<Frame, channel::FrameError>>,
                      frames: &mut Vec<Frame>,
                      errors: &mut Vec<String>,
                      init_s: &mut Option<f64>,
                      first: &mut Option<f64>| {
        for f in batch {
            match f {
                Ok(f) => {
                    match f.kind {
                        Kind::Hello => *init_s = Some(ctx.start.elapsed().as_secs_f64()),
                        Kind::Stdout => {
                            first.get_or_insert_with(|| ctx.start.elapsed().as_secs_f64());
                            let _ = stdout.write_all(&f.payload);
                            let _ = stdout.flush();
                        }
                        Kind::Stderr => {
                            first.get_or_insert_with(|| ctx.start.elapsed().as_secs_f64());
                            let mut e = std::io::stderr();
                            let _ = e.write_all(&f.payload);
                            let _ = e.flush();
                        }
                        _ => {}
                    }
                    if !matches!(f.kind, Kind::Stdout | Kind::Stderr) {
                        frames.push(f);
                    }
                }
                Err(e) => errors.push(format!("channel: {e}")),
            }
        }
    };
    loop {
        // Drain what the guest has sent so far.
        loop {
            match chan.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let batch = parser.push(&buf[..n]);
                    handle(
                        batch,
                        &mut frames,
                        &mut frame_errors,
                        &mut init_s,
                        &mut first_output_s,
                    );
                }
            }
        }
        if let Ok(Some(s)) = child.try_wait() {
            qemu_status = Some(s);
            break;
        }
        if ctx.interrupted.load(Ordering::SeqCst) {
            stopped = Some(Stop::Interrupted);
            qemu_status = stop(child);
            break;
        }
        if ctx.start.elapsed() > ctx.timeout {
            stopped = Some(Stop::Timeout);
            qemu_status = stop(child);
            break;
        }
        if console.saw_panic.load(Ordering::SeqCst) {
            let at = *panic_at.get_or_insert_with(Instant::now);
            if at.elapsed() > PANIC_GRACE {
                stopped = Some(Stop::Panic);
                qemu_status = stop(child);
                break;
            }
        }
        let silence = silence_limit(accel);
        if console.first_byte_ms.load(Ordering::SeqCst) == 0 && boot_start.elapsed() > silence {
            stop(child);
            let log = fs::read_to_string(&firmware_log).unwrap_or_default();
            let lines: Vec<String> = log.lines().map(str::to_string).collect();
            let firmware = lines[lines.len().saturating_sub(8)..].to_vec();
            return Err(BootError::Silent {
                secs: silence.as_secs(),
                firmware,
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    guard.0 = None; // reaped above
    let _ = console_thread.join();
    let _ = qemu_err_thread.join();
    // Whatever QEMU flushed on its way out.
    while let Ok(n) = chan.read(&mut buf) {
        if n == 0 {
            break;
        }
        let batch = parser.push(&buf[..n]);
        handle(
            batch,
            &mut frames,
            &mut frame_errors,
            &mut init_s,
            &mut first_output_s,
        );
    }
    if stopped.is_none()
        && console.saw_panic.load(Ordering::SeqCst)
        && !frames.iter().any(|f| f.kind == Kind::Exit)
    {
        stopped = Some(Stop::Panic);
    }
    Ok(Outcome {
        console,
        qemu_status,
        stopped,
        frames,
        frame_errors,
        truncated: parser.pending(),
        init_s,
        first_output_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_shell_words() {
        assert_eq!(
            strip_timestamp("[    3.769963] Kernel panic - not syncing: x"),
            "Kernel panic - not syncing: x"
        );
        assert_eq!(strip_timestamp("[x] y"), "[x] y");
        let w = shell_words(&["-append".into(), "a b".into(), "it's".into()]);
        assert_eq!(w, "-append 'a b' 'it'\\''s'");
    }

    #[test]
    fn results_dir_is_checked_not_created() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().join("a/b/results");
        check_results_dir(&r).unwrap();
        assert!(!d.path().join("a").exists());
        let file = d.path().join("file");
        fs::write(&file, b"x").unwrap();
        let e = check_results_dir(&file.join("results")).unwrap_err();
        assert!(e.contains("not a directory"), "{e}");
        check_results_dir(d.path()).unwrap();
    }

    #[test]
    fn exit_codes() {
        let r = |exit| VmReport {
            exit,
            accel: Accel::Tcg,
            guest_kernel: String::new(),
            records: vec![],
            results_dir: PathBuf::new(),
            console_log: None,
            init_s: None,
            first_output_s: None,
            total_s: 0.0,
        };
        assert_eq!(r(GuestExit::Code(0)).exit_code(), 0);
        assert_eq!(r(GuestExit::Code(3)).exit_code(), 3);
        assert_eq!(r(GuestExit::Signal(9)).exit_code(), 137);
    }
}

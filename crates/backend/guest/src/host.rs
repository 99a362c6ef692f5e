//! The host side of `numalab vm`: build the initramfs, start QEMU, stream
//! the console, decode the channel, enforce the timeout, tear the guest
//! down whatever happens, and store the records that come back.

use crate::job::{self, Job};
use crate::qemu::{Accel, AccelChoice};
pub use crate::session::Rootfs;
use crate::session::{debug, describe_exited, End, LaunchOptions, Launcher, Next};
use crate::spec::VmSpec;
use numalab_protocol::frame::{Frame, Kind};
use numalab_record::Backend;
use numalab_topology::{MachineInfo, Roots};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// The guest's console on standard error as it runs (otherwise only
    /// its last lines, on failure).
    pub verbose: bool,
    /// `numalab vm --results`.
    pub results: Option<PathBuf>,
    /// numalab arguments for the guest (what came after `--`).
    pub command: Vec<String>,
    /// Extra kernel command line arguments (before numalab's own
    /// `rdinit=... -- guest-init`, so they cannot replace init).
    pub append: String,
    /// The numalab executable to put in the guest (default: this one).
    pub exe: Option<PathBuf>,
    /// The guest's root filesystem.
    pub rootfs: Rootfs,
    /// The guest kernel's module tree (default `/lib/modules/<release>`).
    pub modules: Option<PathBuf>,
    /// Read-write host directories, mounted at their host paths.
    pub shares: Vec<PathBuf>,
    /// `--share-passthrough` (see [`crate::qemu::Share::passthrough`]).
    pub share_passthrough: bool,
    /// The guest command's working directory (a host path).
    pub cwd: Option<PathBuf>,
    /// Keep the working directory (initramfs, channel socket, logs).
    pub keep_workdir: bool,
    /// An interactive shell on the terminal instead of `command`.
    pub shell: bool,
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VmError {
    #[error("{0}")]
    Interrupted(String),
    #[error("{0}")]
    Failed(String),
}

fn failed(m: impl std::fmt::Display) -> VmError {
    VmError::Failed(m.to_string())
}

/// The host's terminal for `--shell`: `TERM` and the size of standard
/// output's terminal (0x0 when it is not one).
fn host_terminal() -> job::Shell {
    let (rows, cols) = numalab_linux::tty::window_size(std::io::stdout()).unwrap_or((0, 0));
    job::Shell {
        term: std::env::var("TERM").unwrap_or_else(|_| "vt100".into()),
        rows,
        cols,
    }
}

/// `numalab vm --kernel NAME --fetch-only`: the named kernel into the
/// cache (if it is not there), nothing booted.
pub fn fetch_kernel(kernel: &Path) -> Result<(), VmError> {
    match crate::named::classify(kernel).map_err(failed)? {
        crate::named::KernelArg::Named(k) => {
            let e = crate::named::resolve_for_vm(k, false).map_err(failed)?;
            numalab_linux::statusln!("numalab vm: {}", e.describe(k));
            Ok(())
        }
        crate::named::KernelArg::Path(p) => Err(failed(format!(
            "--fetch-only: --kernel {} is a path, not a kernel name numalab fetches (known: {})",
            p.display(),
            crate::named::known_names()
        ))),
    }
}

/// Boot a guest, run the command in it, bring the records back.
pub fn run(opts: &VmOptions) -> Result<VmReport, VmError> {
    if opts.shell {
        if !opts.command.is_empty() {
            return Err(failed(
                "--shell runs an interactive shell: give no command after --",
            ));
        }
        if opts.quiet {
            return Err(failed(
                "--shell puts the guest console on the terminal: --quiet does not apply",
            ));
        }
    } else {
        job::check_command(&opts.command).map_err(failed)?;
    }
    let (guest_args, results_after) = job::split_results(&opts.command).map_err(failed)?;
    let (guest_args, output) = job::split_output(&guest_args).map_err(failed)?;
    if let Some(out) = &output {
        check_output_file(out).map_err(failed)?;
    }
    let results_dir = results_dir(opts.results.as_deref(), results_after.as_deref())?;
    check_results_dir(&results_dir).map_err(failed)?;
    let job = Job {
        args: guest_args,
        sysctls: opts.sysctls.clone(),
        results_dir: job::GUEST_RESULTS.to_string(),
        agent: false,
        modules: Vec::new(),
        hostfs: None,
        shell: opts.shell.then(host_terminal),
    };
    let mut launcher = Launcher::new(&opts.launch_options(&results_dir), &job)?;
    launcher.capture_stdout = output.is_some();
    let host = host_info();
    let (mut session, first) = launcher.boot()?;
    let mut frames: Vec<Frame> = first.into_iter().collect();
    let end = loop {
        match session.next() {
            Next::Frame(f) => frames.push(f),
            Next::End(e) => break e,
        }
    };
    for e in &session.frame_errors {
        numalab_linux::statusln!("numalab vm: warning: {e}");
    }
    if !matches!(end, End::Exited(_)) {
        return Err(launcher.describe_end(&end, &session));
    }

    let mut guest_kernel = String::new();
    let mut sysctls: BTreeMap<String, String> = BTreeMap::new();
    let mut exit = None;
    let mut guest_error = None;
    let mut records: Vec<(String, Vec<u8>)> = Vec::new();
    for f in frames {
        match f.kind {
            Kind::Hello => guest_kernel = hello_kernel(&f.payload),
            Kind::Sysctls => {
                sysctls = serde_json::from_slice(&f.payload).unwrap_or_default();
            }
            Kind::Record => records.push((f.name, f.payload)),
            Kind::Exit => exit = Some(GuestExit::from_json(&f.payload)),
            Kind::Error => guest_error = Some(String::from_utf8_lossy(&f.payload).to_string()),
            _ => {}
        }
    }
    if let Some(e) = guest_error {
        return Err(launcher.report(format!("in the guest: {e}"), &session));
    }
    let Some(exit) = exit else {
        return Err(launcher.report(
            format!(
                "the guest stopped before the command finished ({})",
                describe_exited(&end, &session)
            ),
            &session,
        ));
    };

    // A captured output goes where the command was told to write it,
    // only when it succeeded.
    if let (Some(out), Some(text)) = (&output, &session.stdout) {
        if exit == GuestExit::Code(0) {
            numalab_record::store::write_file_atomic(out, text)
                .map_err(|e| failed(format!("writing {}: {e}", out.display())))?;
        } else if !text.is_empty() {
            use std::io::Write;
            let mut o = std::io::stdout();
            let _ = o.write_all(text).and_then(|_| o.flush());
        }
    }

    // Store the records, tagged with where they came from.
    let tag = Tag {
        accel: launcher.accel,
        spec: opts.spec.typed.clone(),
        sysctls,
        host,
    };
    let mut written = Vec::new();
    let mut bad = Vec::new();
    for (name, data) in records {
        let text = String::from_utf8_lossy(&data);
        match numalab_record::parse(Path::new(&name), &text) {
            Ok(mut rec) => {
                tag.apply(&mut rec);
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
        accel: launcher.accel,
        guest_kernel,
        records: written,
        results_dir,
        console_log: launcher.console_log.clone(),
        init_s: session.init_s,
        first_output_s: session.first_output_s,
        total_s: session.elapsed_s(),
    };
    if debug() {
        launcher.keep_tmp();
    }
    Ok(report)
}

/// Why `calibrate --output FILE` cannot be written by the host.
#[derive(Debug, thiserror::Error)]
pub enum OutputFileError {
    /// Empty, a directory or ending in `..`.
    #[error("--output {}: not a file name", .0.display())]
    NotAFileName(PathBuf),
    /// Its directory is missing or not writable.
    #[error("--output {}: {source}", path.display())]
    Dir {
        path: PathBuf,
        source: numalab_record::RecordError,
    },
}

/// Why records could not be written to the results directory.
#[derive(Debug, thiserror::Error)]
pub enum ResultsDirError {
    /// It exists and is not a writable directory.
    #[error("results directory: {0}")]
    Unwritable(numalab_record::RecordError),
    /// It would be created in an ancestor that is not a writable
    /// directory (`not_dir`: not a directory at all).
    #[error("results directory {}: cannot be created in {} ({})", dir.display(), ancestor.display(), if *not_dir { "not a directory" } else { "not writable" })]
    CannotCreate {
        dir: PathBuf,
        ancestor: PathBuf,
        not_dir: bool,
    },
}

/// A file the host will write for the guest's command: a name in a
/// directory that exists and can be written, checked before the boot.
fn check_output_file(out: &Path) -> Result<(), OutputFileError> {
    if out.as_os_str().is_empty() || out.file_name().is_none() || out.is_dir() {
        return Err(OutputFileError::NotAFileName(out.to_path_buf()));
    }
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    numalab_record::store::ensure_writable_dir(dir).map_err(|source| OutputFileError::Dir {
        path: out.to_path_buf(),
        source,
    })
}

/// The results directory: `numalab vm --results`, or the one given after
/// `--`, or `./numalab-results`; two different ones are an error.
pub fn results_dir(before: Option<&Path>, after: Option<&Path>) -> Result<PathBuf, VmError> {
    match (before, after) {
        (Some(a), Some(b)) if a != b => Err(failed(format!(
            "--results given twice: {} before -- and {} after it",
            a.display(),
            b.display()
        ))),
        (Some(a), _) => Ok(a.to_path_buf()),
        (None, Some(b)) => Ok(b.to_path_buf()),
        (None, None) => Ok(PathBuf::from("numalab-results")),
    }
}

/// The guest kernel named in a hello frame, with its sched_ext state
/// when the guest said it: `7.3.4+deb13-amd64 (sched_ext disabled)`.
pub(crate) fn hello_kernel(payload: &[u8]) -> String {
    let v = serde_json::from_slice::<serde_json::Value>(payload).unwrap_or_default();
    let kernel = v["kernel"].as_str().unwrap_or_default();
    match v["sched_ext"].as_str() {
        Some(s) => format!("{kernel} (sched_ext {s})"),
        None => kernel.to_string(),
    }
}

impl GuestExit {
    fn from_json(payload: &[u8]) -> GuestExit {
        let v: serde_json::Value = serde_json::from_slice(payload).unwrap_or_default();
        match (v["code"].as_i64(), v["signal"].as_i64()) {
            (Some(c), _) => GuestExit::Code(c as i32),
            (None, Some(s)) => GuestExit::Signal(s as i32),
            _ => GuestExit::Code(1),
        }
    }
}

/// How a record made in a guest is tagged on the host: `backend` says
/// guest (accelerator, the spec as typed, the sysctls as read back, the
/// host), the guest's own backend details kept, and a warning about
/// emulated timing added. The guest's own view (its kernel, topology,
/// numa_balancing) stays the record's `machine`. A simulated run
/// (`numalab vm -- sim ...`) stays what it is, untouched: where the
/// simulator ran changes nothing of what it simulated, and a record
/// tagged as the guest's would sit beside the guest's real runs under
/// the guest's scheduler.
pub(crate) struct Tag {
    pub accel: Accel,
    pub spec: String,
    pub sysctls: BTreeMap<String, String>,
    pub host: HostInfo,
}

impl Tag {
    pub fn apply(&self, rec: &mut numalab_record::RunRecord) {
        if matches!(rec.backend, Backend::Sim { .. }) {
            return;
        }
        let details = std::mem::take(rec.backend.details_mut());
        rec.backend = Backend::Guest {
            accel: self.accel.as_str().to_string(),
            spec: self.spec.clone(),
            sysctls: self.sysctls.clone(),
            host: self.host.hostname.clone(),
            host_kernel: self.host.kernel.clone(),
            host_cpu_model: self.host.cpu_model.clone(),
            details,
        };
        let w = match self.accel {
            Accel::Tcg => "run in a TCG-emulated QEMU guest: times measure the emulator, and emulated NUMA nodes have no remote-access cost",
            Accel::Kvm => "run in a KVM guest: emulated NUMA nodes share the host's memory, so they have no remote-access cost",
        };
        if !rec.warnings.iter().any(|x| x == w) {
            rec.warnings.push(w.to_string());
        }
    }
}

impl VmOptions {
    pub(crate) fn launch_options<'a>(&'a self, results: &'a Path) -> LaunchOptions<'a> {
        LaunchOptions {
            spec: &self.spec,
            kernel: self.kernel.as_deref(),
            accel: self.accel,
            timeout: self.timeout,
            quiet: self.quiet,
            verbose: self.verbose,
            append: &self.append,
            exe: self.exe.as_deref(),
            results,
            rootfs: self.rootfs,
            modules: self.modules.as_deref(),
            shares: &self.shares,
            share_passthrough: self.share_passthrough,
            cwd: self.cwd.as_deref(),
            keep_workdir: self.keep_workdir,
            shell: self.shell,
        }
    }
}

/// Arguments quoted for a POSIX shell, for copy and paste.
pub fn shell_words(args: &[String]) -> String {
    numalab_linux::shell::join(args)
}

/// What `Backend::Guest` says about the host that ran QEMU.
pub(crate) struct HostInfo {
    hostname: String,
    kernel: String,
    cpu_model: Option<String>,
}

/// The host's name, kernel and CPU model; read directly when the full
/// machine probe fails (a host whose topology cannot be read).
pub(crate) fn host_info() -> HostInfo {
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
pub(crate) fn check_results_dir(dir: &Path) -> Result<(), ResultsDirError> {
    if dir.exists() {
        return numalab_record::ensure_writable_dir(dir).map_err(ResultsDirError::Unwritable);
    }
    let mut ancestor = dir.parent();
    while let Some(a) = ancestor {
        let a = if a.as_os_str().is_empty() {
            Path::new(".")
        } else {
            a
        };
        if a.exists() {
            let ok = a.is_dir() && numalab_linux::fs::writable(a);
            if !ok {
                return Err(ResultsDirError::CannotCreate {
                    dir: dir.to_path_buf(),
                    ancestor: a.to_path_buf(),
                    not_dir: !a.is_dir(),
                });
            }
            return Ok(());
        }
        ancestor = a.parent();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_quote_for_a_shell() {
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
        let e = check_results_dir(&file.join("results"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a directory"), "{e}");
        check_results_dir(d.path()).unwrap();
    }

    #[test]
    fn the_hello_names_the_kernel_and_its_sched_ext() {
        assert_eq!(
            hello_kernel(br#"{"kernel":"7.3.4+deb13-amd64","sched_ext":"disabled"}"#),
            "7.3.4+deb13-amd64 (sched_ext disabled)"
        );
        // An older numalab's guest says nothing of sched_ext.
        assert_eq!(
            hello_kernel(br#"{"kernel":"6.1.0-56-amd64"}"#),
            "6.1.0-56-amd64"
        );
        assert_eq!(hello_kernel(b"junk"), "");
    }

    /// A guest's real run becomes a guest record; a simulated run made
    /// in a guest (`numalab vm -- sim ...`) stays a sim record.
    #[test]
    fn only_real_runs_are_tagged_as_the_guests() {
        let tag = Tag {
            accel: Accel::Tcg,
            spec: "2x2".into(),
            sysctls: BTreeMap::new(),
            host: HostInfo {
                hostname: "h".into(),
                kernel: "k".into(),
                cpu_model: None,
            },
        };
        let mut real = numalab_record::example_record("numa_test", "a", 1, 1.0);
        tag.apply(&mut real);
        assert_eq!(real.backend.kind(), "guest");
        assert!(real.warnings.iter().any(|w| w.contains("TCG")));
        let mut sim = numalab_record::example_record("numa_test", "a", 1, 1.0);
        sim.backend = Backend::Sim {
            machine: "host".into(),
            scheduler: "node-affine".into(),
            balancer: "none".into(),
            seed: 1,
            details: Default::default(),
        };
        let before = sim.clone();
        tag.apply(&mut sim);
        assert_eq!(sim, before);
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

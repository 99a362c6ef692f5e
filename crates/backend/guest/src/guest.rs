//! PID 1 of the guest (`numalab guest-init`, hidden): mount the kernel
//! filesystems, open the channel, apply sysctls, run the numalab command
//! as a child with its output sent to the host, send the records it wrote,
//! report how it ended, and power off.
//!
//! Whatever goes wrong, the last step is still a power-off; and if PID 1
//! itself dies the kernel panics, which `panic=-1` and QEMU's `-no-reboot`
//! turn into QEMU exiting. The guest therefore always ends.

use crate::job::{sysctl_path, Job, GUEST_EXE, JOB_PATH};
use numalab_protocol::frame::{encode, sanitize_name, Kind};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The second serial port, QEMU's `-serial chardev:channel`.
pub const CHANNEL_TTY: &str = "/dev/ttyS1";
/// The guest's host name, as records made inside it show.
pub const GUEST_HOSTNAME: &str = "numalab-vm";

fn say(msg: &str) {
    // The console is fd 1/2, opened by the kernel from /dev/console.
    numalab_linux::errln!("numalab-vm: {msg}");
}

/// Why PID 1 could not set the guest up or run its job.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("guest-init is the PID 1 of a `numalab vm` guest and runs nowhere else")]
    NotPid1,
    /// A file, directory or device (`what` names it and the step).
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    /// A filesystem did not mount (`what`: its type, or its source).
    #[error("mounting {what} on {target}: {source}")]
    Mount {
        what: String,
        target: String,
        source: std::io::Error,
    },
    /// A mount's arguments were refused before the call.
    #[error("{0}")]
    MountArgs(std::io::Error),
    /// A 9p share did not mount in time (its tag, the last error).
    #[error("9p share {tag}: {last}")]
    Share9p { tag: String, last: Box<InitError> },
    /// A `--share DIR` (its path) could not be set up.
    #[error("--share {path}: {source}")]
    Share {
        path: String,
        source: Box<InitError>,
    },
    #[error("module {path}: {source}")]
    ModuleOpen {
        path: String,
        source: std::io::Error,
    },
    #[error("loading module {path}: {source}")]
    ModuleLoad {
        path: String,
        source: std::io::Error,
    },
    /// The sysctls read back did not serialise.
    #[error("{0}")]
    Json(serde_json::Error),
    #[error("{JOB_PATH}: {0}")]
    Job(serde_json::Error),
    #[error("--shell: neither /bin/bash nor /bin/sh in the guest (is its root the host's?)")]
    NoShell,
    #[error(transparent)]
    Spawn(#[from] numalab_protocol::agent::SpawnError),
    #[error(transparent)]
    Channel(#[from] numalab_protocol::agent::ChannelRead),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> InitError {
    let what = what.into();
    move |source| InitError::Io { what, source }
}

#[derive(Clone)]
struct Channel(Arc<Mutex<File>>);

impl Channel {
    fn open() -> Result<Channel, InitError> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(CHANNEL_TTY)
            .map_err(io(CHANNEL_TTY))?;
        raw_mode(&f).map_err(io(format!("{CHANNEL_TTY}: setting raw mode")))?;
        Ok(Channel(Arc::new(Mutex::new(f))))
    }

    fn send(&self, kind: Kind, name: &str, payload: &[u8]) {
        let frame = encode(kind, name, payload);
        let mut f = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = f.write_all(&frame) {
            say(&format!("writing to {CHANNEL_TTY}: {e}"));
        }
    }

    /// A second handle for reading what the host sends.
    fn reader(&self) -> Result<File, InitError> {
        let f = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f.try_clone()
            .map_err(io(format!("{CHANNEL_TTY}: a second handle")))
    }

    /// Wait until the UART has sent everything.
    fn drain(&self) {
        let f = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = numalab_linux::tty::drain(&*f);
    }
}

impl numalab_protocol::agent::Sender for Channel {
    fn send(&self, kind: Kind, name: &str, payload: &[u8]) {
        Channel::send(self, kind, name, payload)
    }
}

/// No line discipline processing: bytes go out as written (no `\n` to
/// `\r\n`, no echo, 8 bits).
fn raw_mode(f: &File) -> std::io::Result<()> {
    numalab_linux::tty::make_raw(f)
}

fn mount(source: &str, target: &str, fstype: &str) -> Result<(), InitError> {
    mount_with(source, target, fstype, 0, "")
}

fn mount_with(
    source: &str,
    target: &str,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> Result<(), InitError> {
    let _ = fs::create_dir_all(target);
    numalab_linux::fs::mount(source, target, fstype, flags, data).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidInput && e.raw_os_error().is_none() {
            return InitError::MountArgs(e);
        }
        let what = if fstype.is_empty() { source } else { fstype };
        InitError::Mount {
            what: what.to_string(),
            target: target.to_string(),
            source: e,
        }
    })
}

/// Load a kernel module from a file with `finit_module(2)`; one already
/// loaded is fine.
fn load_module(path: &str) -> Result<(), InitError> {
    let f = File::open(path).map_err(|source| InitError::ModuleOpen {
        path: path.to_string(),
        source,
    })?;
    match numalab_linux::system::load_module(&f) {
        Err(source) if source.raw_os_error() != Some(libc::EEXIST) => Err(InitError::ModuleLoad {
            path: path.to_string(),
            source,
        }),
        _ => Ok(()),
    }
}

/// Where the new root is assembled before PID 1 switches into it.
const NEWROOT: &str = "/newroot";
/// The programs a shell expects to find.
pub const GUEST_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Mount a 9p share, retrying briefly: the virtio device can still be
/// binding to its driver just after the modules loaded.
fn mount_9p(tag: &str, target: &str, flags: libc::c_ulong, cache: &str) -> Result<(), InitError> {
    let opts = format!("trans=virtio,version=9p2000.L,msize=512000,cache={cache}");
    let mut tries = 0;
    loop {
        match mount_with(tag, target, "9p", flags, &opts) {
            Ok(()) => return Ok(()),
            Err(e) if tries == 49 => {
                return Err(InitError::Share9p {
                    tag: tag.to_string(),
                    last: Box::new(e),
                })
            }
            Err(_) => tries += 1,
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Switch root into the host's filesystem: the 9p root (read-only) under
/// a tmpfs overlay, the read-write shares over it, `/proc`, `/sys`, `/dev`
/// moved across, `/numalab` bound in and numalab linked into
/// `/usr/local/bin`; then chdir to the command's directory.
fn switch_to_host(h: &crate::job::HostFs) -> Result<(), InitError> {
    let lower = "/hostfs/lower";
    let rw = "/hostfs/rw";
    mount_9p(
        crate::job::HOSTROOT_TAG,
        lower,
        libc::MS_RDONLY,
        // The root is read-only and nobody else writes the files a guest
        // command reads while it runs: cache what can be cached.
        "loose",
    )?;
    mount("tmpfs", rw, "tmpfs")?;
    for d in ["upper", "work"] {
        fs::create_dir_all(format!("{rw}/{d}")).map_err(io(format!("{rw}/{d}")))?;
    }
    mount_with(
        "overlay",
        NEWROOT,
        "overlay",
        0,
        &format!("lowerdir={lower},upperdir={rw}/upper,workdir={rw}/work"),
    )?;
    for (i, path) in h.shares.iter().enumerate() {
        let target = format!("{NEWROOT}{path}");
        fs::create_dir_all(&target).map_err(io(format!("--share {path}")))?;
        // Nothing set-uid runs, and no device node opens, from a share.
        let flags = if h.share_passthrough {
            0
        } else {
            libc::MS_NOSUID | libc::MS_NODEV
        };
        mount_9p(&crate::job::share_tag(i), &target, flags, "mmap").map_err(|e| {
            InitError::Share {
                path: path.clone(),
                source: Box::new(e),
            }
        })?;
    }
    for m in ["/proc", "/sys", "/dev"] {
        mount_with(m, &format!("{NEWROOT}{m}"), "", libc::MS_MOVE, "")?;
    }
    mount_with(
        "/numalab",
        &format!("{NEWROOT}/numalab"),
        "",
        libc::MS_BIND,
        "",
    )?;
    let chroot = |p: &str| -> Result<(), InitError> {
        numalab_linux::fs::chroot(Path::new(p)).map_err(io(format!("chroot {p}")))
    };
    std::env::set_current_dir(NEWROOT).map_err(io(NEWROOT))?;
    mount_with(".", "/", "", libc::MS_MOVE, "")?;
    chroot(".")?;
    std::env::set_current_dir("/").map_err(io("/"))?;
    let _ = mount("tmpfs", "/run", "tmpfs");
    let link = "/usr/local/bin/numalab";
    let _ = fs::create_dir_all("/usr/local/bin");
    let _ = fs::remove_file(link);
    std::os::unix::fs::symlink(GUEST_EXE, link).map_err(io(link))?;
    std::env::set_current_dir(&h.cwd).map_err(io(format!("--cwd {}", h.cwd)))?;
    Ok(())
}

fn power_off() -> ! {
    // As PID 1 in a guest this is the intended end. If reboot fails,
    // exiting PID 1 panics the kernel, which panic=-1 and -no-reboot also
    // turn into QEMU exiting.
    let _ = numalab_linux::system::sync_and_power_off();
    std::process::exit(1)
}

/// Entry point of `numalab guest-init`. Refuses to run anywhere but as
/// PID 1 with a job file: on a host it would power the machine off.
pub fn init_main() -> Result<std::convert::Infallible, InitError> {
    if std::process::id() != 1 || !Path::new(JOB_PATH).exists() {
        return Err(InitError::NotPid1);
    }
    let channel = match setup() {
        Ok(c) => c,
        Err(e) => {
            let e = e.to_string();
            say(&e);
            // Try to tell the host even if something above failed.
            if let Ok(c) = Channel::open() {
                c.send(Kind::Error, "-", e.as_bytes());
                c.drain();
            }
            power_off()
        }
    };
    if let Err(e) = run(&channel) {
        let e = e.to_string();
        say(&e);
        channel.send(Kind::Error, "-", e.as_bytes());
    }
    channel.drain();
    power_off()
}

fn setup() -> Result<Channel, InitError> {
    // The kernel starts init with HOME and TERM only; commands run in the
    // guest expect a PATH.
    std::env::set_var("PATH", GUEST_PATH);
    mount("proc", "/proc", "proc")?;
    mount("sysfs", "/sys", "sysfs")?;
    mount("devtmpfs", "/dev", "devtmpfs")?;
    // Optional: NUMA balancing tunables live in debugfs on newer kernels.
    if let Err(e) = mount("debugfs", "/sys/kernel/debug", "debugfs") {
        say(&format!("{e} (continuing)"));
    }
    let _ = mount("tmpfs", "/tmp", "tmpfs");
    // Records name the machine: make the guest recognisable as one.
    let _ = fs::write("/proc/sys/kernel/hostname", GUEST_HOSTNAME);
    Channel::open()
}

fn run(channel: &Channel) -> Result<(), InitError> {
    let job: Job = serde_json::from_slice(&fs::read(JOB_PATH).map_err(io(JOB_PATH))?)
        .map_err(InitError::Job)?;
    for m in &job.modules {
        load_module(m)?;
    }
    if let Some(h) = &job.hostfs {
        switch_to_host(h)?;
    }
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    let uptime: f64 = fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    let hello = serde_json::json!({
        "kernel": kernel,
        "uptime_s": uptime,
        "sched_ext": numalab_topology::sched_ext(Path::new("/sys")),
    });
    channel.send(Kind::Hello, "-", hello.to_string().as_bytes());

    let mut applied = BTreeMap::new();
    for (k, v) in &job.sysctls {
        let p = sysctl_path(Path::new("/"), k);
        fs::write(&p, v).map_err(io(format!("sysctl {k}={v}: {}", p.display())))?;
        let back = fs::read_to_string(&p)
            .map_err(io(format!("sysctl {k}: reading {} back", p.display())))?
            .trim()
            .to_string();
        applied.insert(k.clone(), back);
    }
    channel.send(
        Kind::Sysctls,
        "-",
        serde_json::to_string(&applied)
            .map_err(InitError::Json)?
            .as_bytes(),
    );

    fs::create_dir_all(&job.results_dir).map_err(io(&job.results_dir))?;
    if job.agent {
        return Ok(numalab_protocol::agent::serve(
            channel,
            channel.reader()?,
            GUEST_EXE,
        )?);
    }
    if let Some(sh) = &job.shell {
        let status = run_shell(sh)?;
        channel.send(Kind::Exit, "-", exit_json(status).to_string().as_bytes());
        return Ok(());
    }
    // A one-shot numalab command runs in `/`, so a relative default
    // `numalab-results` is the guest's results directory; `--cwd` is for
    // the programs that `run` requests start (the agent's children).
    let mut child = numalab_protocol::agent::spawn(GUEST_EXE, &job.args, Some("/"))?;
    let out =
        numalab_protocol::agent::pump(child.stdout.take().expect("piped"), Kind::Stdout, channel);
    let err =
        numalab_protocol::agent::pump(child.stderr.take().expect("piped"), Kind::Stderr, channel);
    let status = child.wait().map_err(io("waiting for the command"))?;
    let _ = out.join();
    let _ = err.join();

    let mut records = Vec::new();
    collect_json(Path::new(&job.results_dir), &mut records);
    records.sort();
    for path in &records {
        match fs::read(path) {
            Ok(data) => {
                let rel = path.strip_prefix(&job.results_dir).unwrap_or(path);
                let name = sanitize_name(&rel.to_string_lossy());
                channel.send(Kind::Record, &name, &data);
            }
            Err(e) => say(&format!("{}: {e}", path.display())),
        }
    }
    channel.send(Kind::Exit, "-", exit_json(status).to_string().as_bytes());
    Ok(())
}

fn exit_json(status: std::process::ExitStatus) -> serde_json::Value {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => serde_json::json!({ "code": c }),
        (None, Some(s)) => serde_json::json!({ "signal": s }),
        _ => serde_json::json!({ "code": 1 }),
    }
}

/// The console, as the interactive shell's controlling terminal.
const CONSOLE_TTY: &str = "/dev/ttyS0";

/// `numalab vm --shell`: bash (else sh) on the console, in a session of
/// its own with the console as its controlling terminal, sized like the
/// host's terminal; its exit status.
fn run_shell(sh: &crate::job::Shell) -> Result<std::process::ExitStatus, InitError> {
    let tty = OpenOptions::new()
        .read(true)
        .write(true)
        .open(CONSOLE_TTY)
        .map_err(io(CONSOLE_TTY))?;
    if sh.rows > 0 && sh.cols > 0 {
        let _ = numalab_linux::tty::set_window_size(&tty, sh.rows, sh.cols);
    }
    let shell = ["/bin/bash", "/bin/sh"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .ok_or(InitError::NoShell)?;
    let dup = |f: &File| f.try_clone().map_err(io(CONSOLE_TTY));
    let mut cmd = std::process::Command::new(shell);
    cmd.arg("-i")
        .env("TERM", &sh.term)
        .env("HOME", "/root")
        .env("NUMALAB_GUEST", "1")
        .stdin(dup(&tty)?)
        .stdout(dup(&tty)?)
        .stderr(dup(&tty)?);
    numalab_linux::tty::own_session_on_stdin(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(io(format!("--shell: starting {shell}")))?;
    child
        .wait()
        .map_err(io(format!("--shell: waiting for {shell}")))
}

fn collect_json(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            collect_json(&p, out);
        } else if name.ends_with(".json") {
            out.push(p);
        }
    }
}

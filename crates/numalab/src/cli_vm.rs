//! `numalab vm ... -- <numalab arguments>`: run numalab in a QEMU guest
//! with a chosen NUMA topology; and the hidden guest side (`guest-init`,
//! `guest-probe`, `__guest-op`). The work is in the numalab-guest crate.
//!
//! `-- run BENCHMARK ...` is the guest *backend*: the runner runs here and
//! each case runs in one guest kept up for the whole invocation. Any other
//! command runs once in the guest as it would on a host.

use anyhow::{anyhow, bail, Result};
use numalab_guest::{
    AccelChoice, GuestBackend, GuestExit, Rootfs, SpecInput, VmError, VmOptions, VmSpec,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
#[command(
    after_help = "Example: numalab vm --nodes 2 --cpus-per-node 2 --mem-per-node 512M -- topology\n\n\
                  Records the command writes come back to --results (or the --results given after --), \
                  tagged with the guest kernel, the emulated topology and the accelerator. \
                  Guest timings are emulation timings: see docs/vm.md."
)]
pub struct VmArgs {
    /// NUMA nodes in the guest
    #[arg(long, default_value_t = SpecInput::NODES)]
    nodes: u32,
    /// CPUs on each node that has CPUs
    #[arg(long, value_name = "N", default_value_t = SpecInput::CPUS_PER_NODE)]
    cpus_per_node: u32,
    /// Memory on each node (512M, 1G, 2048K)
    #[arg(long, value_name = "SIZE", default_value = SpecInput::MEM_PER_NODE)]
    mem_per_node: String,
    /// Node distance matrix, rows separated by ';' (default: 10 local, 20 remote)
    #[arg(long, value_name = "MATRIX")]
    distances: Option<String>,
    /// Node ids with memory and no CPUs, the highest ones (e.g. 2 or 2-3)
    #[arg(long, value_name = "NODES")]
    memory_only_nodes: Option<String>,
    /// Guest kernel: a bzImage's path, or a name numalab fetches once into
    /// its cache (debian-7.3: Debian's 7.3 with sched_ext) [default: the
    /// newest readable /boot/vmlinuz-*]
    #[arg(long, value_name = "PATH|NAME")]
    kernel: Option<PathBuf>,
    /// Extra guest kernel command line arguments (e.g. "numa_balancing=disable")
    #[arg(long, value_name = "ARGS")]
    append: Option<String>,
    /// Sysctl applied in the guest before the command (repeatable)
    #[arg(long = "sysctl", value_name = "KEY=VALUE", value_parser = parse_sysctl)]
    sysctls: Vec<(String, String)>,
    /// Accelerator: KVM when usable, else TCG emulation
    #[arg(long, value_enum, default_value_t = AccelArg::Auto)]
    accel: AccelArg,
    /// Stop the guest after this many seconds [default: 900; none with --shell]
    #[arg(long, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..))]
    timeout: Option<u64>,
    /// Keep the guest console's log under the results directory (a
    /// failure keeps it anyway) and print no status lines
    #[arg(long, conflicts_with = "verbose")]
    quiet: bool,
    /// Print the guest's console (its kernel log) as it runs; without
    /// it, only its last lines and its log's path are printed, when the
    /// guest fails
    #[arg(long)]
    verbose: bool,
    /// Directory the guest's records are written to [default: numalab-results]
    #[arg(long, value_name = "DIR")]
    results: Option<PathBuf>,
    /// The guest's root: the host's filesystem (read-only, writes to a tmpfs
    /// overlay) or numalab's initramfs only [default: host when the guest
    /// kernel's 9p and overlay modules are found, else initramfs]
    #[arg(long, value_enum, value_name = "ROOTFS")]
    rootfs: Option<RootfsArg>,
    /// The guest kernel's module tree (default: /lib/modules/<its release>)
    #[arg(long, value_name = "DIR")]
    modules: Option<PathBuf>,
    /// A host directory the guest can write, at the same path (repeatable)
    #[arg(long = "share", value_name = "DIR")]
    shares: Vec<PathBuf>,
    /// Pass the guest's file modes through to --share directories as they
    /// are, setuid bits and device nodes included (default: files the
    /// guest makes are mode 0644 on the host, their guest modes kept in
    /// user.virtfs.* attributes)
    #[arg(long, requires = "shares")]
    share_passthrough: bool,
    /// Where `-- run` runs its cases in the guest, a host path [default: the current directory]
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Keep numalab's working directory for the guest (initramfs, logs) and say where
    #[arg(long)]
    keep_workdir: bool,
    /// An interactive shell in the guest, on this terminal (the host's
    /// filesystem as its root), to explore the topology by hand; `exit` powers it off
    #[arg(long)]
    shell: bool,
    /// Fetch the kernel --kernel names into the cache (if it is not there)
    /// and stop, booting nothing
    #[arg(long, requires = "kernel", conflicts_with = "shell")]
    fetch_only: bool,
    /// The numalab command to run in the guest, after --
    #[arg(
        last = true,
        required_unless_present_any = ["shell", "fetch_only"],
        value_name = "NUMALAB ARGS"
    )]
    command: Vec<String>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum RootfsArg {
    Host,
    Initramfs,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum AccelArg {
    Auto,
    Kvm,
    Tcg,
}

fn parse_sysctl(s: &str) -> Result<(String, String), String> {
    numalab_guest::job::parse_sysctl(s).map_err(|e| e.to_string())
}

pub fn run(a: VmArgs) -> Result<ExitCode> {
    let spec = VmSpec::parse(&SpecInput {
        nodes: a.nodes,
        cpus_per_node: a.cpus_per_node,
        mem_per_node: a.mem_per_node.clone(),
        distances: a.distances.clone(),
        memory_only_nodes: a.memory_only_nodes.clone(),
    })?;
    let opts = VmOptions {
        spec,
        kernel: a.kernel,
        sysctls: a.sysctls,
        accel: match a.accel {
            AccelArg::Auto => AccelChoice::Auto,
            AccelArg::Kvm => AccelChoice::Kvm,
            AccelArg::Tcg => AccelChoice::Tcg,
        },
        timeout: match (a.timeout, a.shell) {
            (Some(s), _) => Duration::from_secs(s),
            (None, true) => Duration::MAX,
            (None, false) => Duration::from_secs(900),
        },
        quiet: a.quiet,
        verbose: a.verbose,
        results: a.results,
        command: a.command,
        append: a.append.unwrap_or_default(),
        exe: None,
        rootfs: match a.rootfs {
            None => Rootfs::Auto,
            Some(RootfsArg::Host) => Rootfs::Host,
            Some(RootfsArg::Initramfs) => Rootfs::Initramfs,
        },
        modules: a.modules,
        shares: a.shares,
        share_passthrough: a.share_passthrough,
        cwd: a.cwd,
        keep_workdir: a.keep_workdir,
        shell: a.shell,
    };
    if a.fetch_only {
        if !opts.command.is_empty() {
            bail!("--fetch-only boots nothing: give no command after --");
        }
        let kernel = opts
            .kernel
            .as_deref()
            .expect("clap: --fetch-only requires --kernel");
        return match numalab_guest::fetch_kernel(kernel) {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(e) => Err(anyhow!(e)),
        };
    }
    // The guest's command parses here first: a mistyped command is
    // refused in one line before any guest boots.
    if !opts.command.is_empty() && !opts.shell {
        let argv = std::iter::once("numalab".to_string()).chain(opts.command.iter().cloned());
        if let Err(e) = crate::command().try_get_matches_from(argv) {
            use clap::error::ErrorKind;
            if !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                return Ok(crate::clap_error(e));
            }
        }
    }
    if opts.command.first().map(String::as_str) == Some("run") && !opts.shell {
        return run_benchmark(opts);
    }
    match numalab_guest::run(&opts) {
        Ok(r) => {
            let secs = |v: Option<f64>| v.map(|s| format!("{s:.1} s")).unwrap_or("-".into());
            let records = match r.records.len() {
                0 => String::new(),
                n => format!("; {n} record(s) in {}", r.results_dir.display()),
            };
            let status = match r.exit {
                GuestExit::Code(0) => String::new(),
                GuestExit::Code(c) => format!("; the command exited with {c}"),
                GuestExit::Signal(s) => format!("; the command was killed by signal {s}"),
            };
            numalab_linux::statusln!(
                "numalab vm: {} guest, kernel {}: init at {}, first output at {}, done in {:.1} s{records}{status}",
                r.accel.as_str(),
                r.guest_kernel,
                secs(r.init_s),
                secs(r.first_output_s),
                r.total_s
            );
            Ok(ExitCode::from(r.exit_code()))
        }
        Err(VmError::Interrupted(m)) => {
            numalab_linux::statusln!("numalab: {m}");
            Ok(ExitCode::from(130))
        }
        Err(e) => Err(anyhow!(e)),
    }
}

/// `numalab vm ... -- run BENCHMARK ...`: the runner here, the cases in
/// the guest.
fn run_benchmark(opts: VmOptions) -> Result<ExitCode> {
    let argv = std::iter::once("numalab".to_string()).chain(opts.command.iter().cloned());
    let cli = match <crate::Cli as clap::Parser>::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => return Ok(crate::clap_error(e)),
    };
    let crate::Command::Run(run) = cli.command else {
        bail!("`-- run` did not parse as `numalab run`");
    };
    let mut cmd = run.benchmark;
    let (_, after) =
        numalab_guest::job::split_results(&opts.command).map_err(anyhow::Error::msg)?;
    let results = numalab_guest::results_dir(opts.results.as_deref(), after.as_deref())?;
    cmd.set_results(results.clone());
    let mut backend = match GuestBackend::start(&opts, &results) {
        Ok(b) => b,
        Err(VmError::Interrupted(m)) => {
            numalab_linux::statusln!("numalab: {m}");
            return Ok(ExitCode::from(130));
        }
        Err(e) => return Err(anyhow!(e)),
    };
    let code = crate::cli_bench::execute(&cmd, &mut backend);
    numalab_linux::statusln!("numalab vm: {}", backend.summary());
    if let Some(log) = backend.console_log() {
        numalab_linux::statusln!("numalab vm: console log: {}", log.display());
    }
    code
}

/// `numalab __guest-op REQUEST.json`, run by the guest's agent for one
/// request: numalab-protocol's executor.
pub fn guest_op(args: &[String]) -> i32 {
    numalab_protocol::op::main(args)
}

/// PID 1 of the guest. Never returns inside a guest.
pub fn guest_init() -> Result<ExitCode> {
    match numalab_guest::guest::init_main() {
        Ok(never) => match never {},
        Err(e) => Err(anyhow!(e)),
    }
}

#[derive(clap::Args)]
pub struct ProbeArgs {
    #[command(subcommand)]
    probe: Probe,
}

#[derive(clap::Subcommand)]
enum Probe {
    /// First-touch memory on one node, work on it from another, report migration
    Migrate(MigrateArgs),
}

#[derive(clap::Args)]
struct MigrateArgs {
    /// Size of the region in MiB
    #[arg(long, default_value_t = 64)]
    mib: u64,
    /// Longest time to work from the second node
    #[arg(long, default_value_t = 30.0)]
    seconds: f64,
    /// Node that first touches the memory
    #[arg(long, default_value_t = 0)]
    from: u32,
    /// Node that then works on it
    #[arg(long, default_value_t = 1)]
    to: u32,
    /// Stop early once this fraction of the pages is on --to (e.g. 0.9)
    #[arg(long)]
    until: Option<f64>,
    #[arg(long, default_value = "default")]
    label: String,
    #[arg(long, value_name = "DIR", default_value = "numalab-results")]
    results: PathBuf,
}

pub fn guest_probe(a: ProbeArgs) -> Result<ExitCode> {
    let Probe::Migrate(m) = a.probe;
    let p = numalab_guest::probe::MigrateParams {
        mib: m.mib,
        seconds: m.seconds,
        from: m.from,
        to: m.to,
        until: m.until,
        results: m.results,
        label: m.label,
    };
    let r = numalab_guest::probe::migrate(&p).map_err(anyhow::Error::msg)?;
    numalab_linux::outln!(
        "probe-migrate: {} MiB ({} pages) first touched on node {}, then worked on from node {} for {:.1} s ({} passes)",
        p.mib, r.pages, p.from, p.to, r.worked_s, r.passes
    );
    numalab_linux::outln!(
        "pages on node {}: {} at the start, {} at the end; on node {}: {} at the end ({:.1}%)",
        p.from,
        r.on_from_start,
        r.on_from_end,
        p.to,
        r.on_to_end,
        100.0 * r.on_to_end as f64 / r.pages.max(1) as f64
    );
    numalab_linux::outln!(
        "numa_pages_migrated +{}, numa_hint_faults +{}",
        r.migrated,
        r.hint_faults
    );
    numalab_linux::outln!("record: {}", r.record_path.display());
    match r.failure {
        None => Ok(ExitCode::SUCCESS),
        Some(f) => Err(anyhow!("probe-migrate failed: {f}")),
    }
}

//! `numalab validate`: the validation set (numalab-calibrate's
//! `validate`) run as a campaign on this machine and on the simulator
//! with the calibrated machine file, then the error table from the
//! records.

use anyhow::{bail, Context, Result};
use numalab_calibrate::validate::{self, Real, Sizing};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ValidateArgs {
    /// Benchmarks of the set to run (default: all of it: spin, hackbench,
    /// forkexec, numa02, numa01, numa_test, mem, and twohalves on several
    /// nodes)
    #[arg(value_name = "BENCHMARK")]
    benchmarks: Vec<String>,
    /// This machine's file from numalab calibrate (default: calibrate now,
    /// into RESULTS/machine.toml)
    #[arg(long, value_name = "FILE")]
    machine: Option<PathBuf>,
    /// Validate a QEMU guest of this shape instead of this machine:
    /// NODESxCPUS_PER_NODE[:MEM_PER_NODE], e.g. 2x1:512M (without
    /// --machine, the guest is calibrated first, in a guest of its own)
    #[arg(long, value_name = "SHAPE", value_parser = parse_shape)]
    guest: Option<Shape>,
    /// Recorded runs of every case on each side
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Seconds a run should take on this machine (sizes the work); on
    /// several nodes numa01, numa02 and twohalves take at least 3 (three
    /// NUMA scan delays)
    #[arg(long, default_value_t = 1.0, value_parser = parse_seconds)]
    seconds: f64,
    /// Directory of the validation's plan, machine file and records
    #[arg(long, value_name = "DIR", default_value = "numalab-results/validate")]
    results: PathBuf,
    /// Output format of the error table
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Validate (and calibrate) even on a busy machine
    #[arg(long)]
    force: bool,
    /// One line per run: no notes or progress bar
    #[arg(long, short = 'q')]
    quiet: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Text,
    Json,
}

/// A guest's shape, as `numalab vm`'s --nodes, --cpus-per-node and
/// --mem-per-node give it.
#[derive(Debug, Clone, PartialEq)]
struct Shape {
    nodes: u32,
    cpus_per_node: u32,
    mem_per_node: String,
}

fn parse_shape(s: &str) -> Result<Shape, String> {
    let bad = || format!("{s:?}: NODESxCPUS_PER_NODE[:MEM_PER_NODE], e.g. 2x1:512M");
    let (shape, mem) = match s.split_once(':') {
        Some((a, m)) => (a, m.to_string()),
        None => (s, "512M".to_string()),
    };
    let (n, c) = shape.split_once('x').ok_or_else(bad)?;
    let nodes: u32 = n.parse().map_err(|_| bad())?;
    let cpus_per_node: u32 = c.parse().map_err(|_| bad())?;
    if !(1..=64).contains(&nodes) || !(1..=64).contains(&cpus_per_node) {
        return Err(format!("{s:?}: 1 to 64 nodes of 1 to 64 CPUs"));
    }
    numalab_topology::size::parse(&mem, numalab_topology::size::Bare::Bytes)
        .map_err(|e| format!("{s:?}: memory per node: {e}"))?;
    if mem.chars().any(|c| !c.is_ascii_alphanumeric()) {
        return Err(bad());
    }
    Ok(Shape {
        nodes,
        cpus_per_node,
        mem_per_node: mem,
    })
}

impl Shape {
    fn vm_args(&self) -> Vec<String> {
        vec![
            "--nodes".into(),
            self.nodes.to_string(),
            "--cpus-per-node".into(),
            self.cpus_per_node.to_string(),
            "--mem-per-node".into(),
            self.mem_per_node.clone(),
        ]
    }

    fn plan_keys(&self) -> Vec<(String, String)> {
        vec![
            ("nodes".into(), self.nodes.to_string()),
            ("cpus_per_node".into(), self.cpus_per_node.to_string()),
            ("mem_per_node".into(), format!("{:?}", self.mem_per_node)),
        ]
    }
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.01..=3600.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?}: between 0.01 and 3600 seconds")),
    }
}

/// The real side is timed: other work on this machine (or, under a
/// guest, on its host) spoils it as it spoils a calibration. Checked after
/// the arguments, before anything is measured or run.
fn refuse_busy(force: bool) -> Result<()> {
    if force {
        return Ok(());
    }
    let roots = numalab_topology::Roots::host();
    let ncpus = numalab_topology::Topology::from_sysfs(&roots.sys)
        .map(|t| t.cpus.len())
        .unwrap_or(1);
    let busy = numalab_calibrate::busy::busy_cpus(
        &roots.proc,
        std::time::Duration::from_millis(500),
        ncpus,
    )
    .context("/proc/stat")?;
    if busy > numalab_calibrate::BUSY_LIMIT_CPUS {
        bail!(
            "the machine is busy: {busy:.2} CPUs of {ncpus} were in use over 0.5 s, which would spoil the real runs (limit {}); stop what runs, or validate anyway with --force",
            numalab_calibrate::BUSY_LIMIT_CPUS
        );
    }
    Ok(())
}

/// A results directory that holds records of a validation on another
/// machine file or set is refused before anything in it is written (its
/// machine.toml explains its records; it had been overwritten first, and
/// the campaign refused after).
fn refuse_other_validation(dir: &Path, files: &[(&Path, &str)]) -> Result<()> {
    let recorded = !numalab_record::store::load_paths(&[dir.to_path_buf()])
        .records
        .is_empty();
    if !recorded {
        return Ok(());
    }
    for (path, want) in files {
        if let Ok(have) = std::fs::read_to_string(path) {
            if have != *want {
                bail!(
                    "{} holds a validation of another machine file or set ({} differs): give this one its own --results DIR, or remove that directory",
                    dir.display(),
                    path.file_name().unwrap_or_default().to_string_lossy()
                );
            }
        }
    }
    Ok(())
}

pub fn run(a: ValidateArgs) -> Result<ExitCode> {
    let dir = &a.results;
    let machine_path = dir.join("machine.toml");
    let text = match &a.machine {
        Some(m) => given_machine(m, a.force)?,
        // Without --machine, a file an earlier validation calibrated into
        // these results is used again, so running the same command
        // resumes its campaign rather than starting one on new figures.
        None if machine_path.is_file() => earlier_machine(&machine_path, a.quiet, a.force)?,
        None if a.guest.is_some() => {
            refuse_busy(a.force)?;
            let shape = a.guest.as_ref().expect("checked");
            calibrate_guest(shape, dir, a.quiet)?
        }
        None => {
            refuse_busy(a.force)?;
            calibrate_here(dir, a.quiet, a.force)?
        }
    };
    let sizing = Sizing::from_machine_file(&text, a.seconds)
        .map_err(|e| anyhow::anyhow!("--machine: {e}"))?;
    let items = validate::set(&sizing, &a.benchmarks).map_err(anyhow::Error::msg)?;
    let real = match &a.guest {
        Some(shape) => Real::Guest(shape.plan_keys()),
        None => Real::Here,
    };
    let plan = validate::plan(&items, &real, "machine.toml", a.runs, sizing.nodes);
    let plan_path = dir.join("validate.toml");
    refuse_other_validation(dir, &[(&machine_path, &text), (&plan_path, &plan)])?;
    std::fs::create_dir_all(dir).with_context(|| format!("--results {}", dir.display()))?;
    // The machine file and the plan beside the records they explain; a
    // validation of other work or another file there is refused by the
    // campaign (its plan's hash).
    numalab_record::store::write_file_atomic(&machine_path, text.as_bytes())
        .with_context(|| format!("writing {}", machine_path.display()))?;
    numalab_record::store::write_file_atomic(&plan_path, plan.as_bytes())
        .with_context(|| format!("writing {}", plan_path.display()))?;
    // With --format json, standard output is the document alone.
    let code = if a.format == Format::Json {
        numalab_linux::out::stdout_to_stderr(|| {
            crate::cli_campaign::run_plan_here(plan_path, a.quiet)
        })
        .context("redirecting standard output")??
    } else {
        crate::cli_campaign::run_plan_here(plan_path, a.quiet)?
    };
    if code != ExitCode::SUCCESS {
        return Ok(code);
    }
    print_errors(dir, a.format)?;
    Ok(ExitCode::SUCCESS)
}

/// The text of the machine file given with --machine, once it builds a
/// machine (then the busy check).
fn given_machine(m: &Path, force: bool) -> Result<String> {
    let t = std::fs::read_to_string(m).with_context(|| format!("--machine {}", m.display()))?;
    numalab_sim::machine::MachineFile::parse(&m.to_string_lossy(), &t)
        .and_then(|f| f.build(&m.to_string_lossy()))
        .with_context(|| format!("--machine {}", m.display()))?;
    refuse_busy(force)?;
    Ok(t)
}

/// The text of the machine file an earlier validation calibrated into
/// the results, once it builds a machine, said unless quiet (then the
/// busy check).
fn earlier_machine(machine_path: &Path, quiet: bool, force: bool) -> Result<String> {
    let t = std::fs::read_to_string(machine_path)
        .with_context(|| format!("{}", machine_path.display()))?;
    numalab_sim::machine::MachineFile::parse(&machine_path.to_string_lossy(), &t)
        .and_then(|f| f.build(&machine_path.to_string_lossy()))
        .with_context(|| format!("{}", machine_path.display()))?;
    if !quiet {
        numalab_linux::statusln!(
            "numalab validate: using {} from an earlier validation (remove it to calibrate again)",
            machine_path.display()
        );
    }
    refuse_busy(force)?;
    Ok(t)
}

/// Calibrates a guest of `shape` (`numalab vm ... -- calibrate`, in a
/// guest of its own) into DIR/machine.toml; its text.
fn calibrate_guest(shape: &Shape, dir: &Path, quiet: bool) -> Result<String> {
    std::fs::create_dir_all(dir).with_context(|| format!("--results {}", dir.display()))?;
    let exe = std::env::current_exe().context("finding numalab's own binary")?;
    let out = dir.join("machine.toml");
    if !quiet {
        numalab_linux::statusln!(
            "numalab validate: calibrating a {}-node guest first: numalab vm {} -- calibrate",
            shape.nodes,
            shape.vm_args().join(" ")
        );
    }
    let mut cmd = std::process::Command::new(&exe);
    cmd.arg("vm").args(shape.vm_args());
    if quiet {
        cmd.arg("--quiet");
    }
    cmd.args(["--results"])
        .arg(dir)
        .args(["--", "calibrate", "--output"])
        .arg(&out);
    if quiet {
        cmd.arg("--quiet");
    }
    // SIGTERM: numalab vm stops its guest and cleans up before it goes.
    numalab_linux::child::die_with_parent_by(&mut cmd, numalab_linux::child::SIGTERM);
    let st = cmd.status().context("starting numalab vm")?;
    if !st.success() {
        bail!("calibrating the guest failed ({st})");
    }
    std::fs::read_to_string(&out).with_context(|| format!("{}", out.display()))
}

/// Calibrates this machine (with progress lines unless quiet); the
/// machine file's text.
fn calibrate_here(dir: &Path, quiet: bool, force: bool) -> Result<String> {
    numalab_record::store::ensure_writable_dir(dir)
        .with_context(|| format!("--results {}", dir.display()))?;
    let exe = std::env::current_exe().context("finding numalab's own binary")?;
    let mut o = numalab_calibrate::Options::new(exe);
    o.force = force;
    if !quiet {
        o.progress = Box::new(|what, k, n, left| {
            numalab_linux::statusln!(
                "numalab validate: calibrating: [{k}/{n}] {what} (about {:.0} s left)",
                left.max(1.0)
            );
        });
    }
    match numalab_calibrate::calibrate(o) {
        Ok(c) => {
            if let Some(w) = c.unsteady() {
                numalab_linux::statusln!("numalab validate: calibrating: warning: {w}");
            }
            Ok(c.toml)
        }
        Err(e) => bail!("calibrate: {e}"),
    }
}

/// The error table of the records in `dir`, as text or JSON; refused when
/// no case ran on both sides.
fn print_errors(dir: &PathBuf, format: Format) -> Result<()> {
    let loaded = numalab_record::store::load_paths(std::slice::from_ref(dir));
    let records: Vec<_> = loaded.records.into_iter().map(|(_, r)| r).collect();
    let errors = validate::errors(&records);
    if errors.rows.is_empty() {
        bail!(
            "no case ran on both sides: nothing to compare in {}",
            dir.display()
        );
    }
    match format {
        Format::Text => {
            numalab_linux::outln!();
            crate::print_stdout(&validate::render(&errors))?;
        }
        Format::Json => {
            crate::print_stdout(&(serde_json::to_string_pretty(&errors)? + "\n"))?;
        }
    }
    Ok(())
}

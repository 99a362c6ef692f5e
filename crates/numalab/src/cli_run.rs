//! `numalab run BENCHMARK ...`: run a benchmark for real on this machine.

use anyhow::{bail, Context, Result};
use numalab_record::{write_atomic, Repetition, RunRecord};
use numalab_topology::{MachineInfo, Roots};
use numalab_workloads::autonuma::Kind;
use numalab_workloads::numa_test::{self, Disturb};
use numalab_workloads::pace::Interval;
use numalab_workloads::randupdt::BYTES_PER_ELEMENT;
use numalab_workloads::run::RunSpec;
use numalab_workloads::{sizing, Interrupt, Interrupted};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(subcommand)]
    benchmark: Benchmark,
}

/// Options every benchmark takes.
#[derive(clap::Args, Clone)]
pub struct CommonArgs {
    /// Repetitions of each configuration
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Configuration label recorded with every run (compare groups by it)
    #[arg(long, default_value = "default")]
    pub label: String,
    /// Directory the run records are written to
    #[arg(long, value_name = "DIR", default_value = "numalab-results")]
    pub results: PathBuf,
    /// Seconds between observations of tasks and memory: 0 turns them off;
    /// auto is 1 s, stretched to 100x a sample's CPU time (at most 1% of a CPU)
    #[arg(long, value_name = "SECONDS|auto", default_value = "auto", allow_negative_numbers = true, value_parser = Interval::parse)]
    pub interval: Interval,
}

#[derive(clap::Subcommand)]
enum Benchmark {
    /// Focht's numa_test (seed 000): N tasks of random indirect updates, a hackbench load peak 3 s in
    #[command(name = "numa_test")]
    NumaTest(NumaTestArgs),
    /// autonuma-benchmark numa01 (seed 002): 2 processes x ncpus/2 threads zeroing their process's whole buffer
    #[command(name = "numa01")]
    Numa01(crate::cli_autonuma::AutonumaArgs),
    /// autonuma-benchmark numa01_THREAD_ALLOC: as numa01, each thread zeroing its own slice
    #[command(name = "numa01_THREAD_ALLOC")]
    Numa01ThreadAlloc(crate::cli_autonuma::AutonumaArgs),
    /// autonuma-benchmark numa02: 1 process, ncpus threads, each zeroing its own slice
    #[command(name = "numa02")]
    Numa02(crate::cli_autonuma::AutonumaArgs),
    /// autonuma-benchmark numa02_SMT: as numa02 with ncpus/2 threads
    #[command(name = "numa02_SMT")]
    Numa02Smt(crate::cli_autonuma::AutonumaArgs),
    /// The two-halves microbenchmark (seed 004): two sets of threads on two nodes touching their halves of a buffer first touched on one
    #[command(name = "twohalves")]
    Twohalves(crate::cli_autonuma::TwoHalvesArgs),
    /// Placement experiment (seed 003): N spinning tasks on CPU sets derived from the topology
    #[command(name = "spin")]
    Spin(crate::cli_placement::SpinArgs),
    /// Placement experiment (seed 003): a hackbench message storm on CPU sets derived from the topology
    #[command(name = "hackbench")]
    Hackbench(crate::cli_placement::HackbenchArgs),
    /// Any command, e.g. a configure script (seed 003): elapsed, user and sys time of the whole process tree per run
    #[command(name = "command")]
    Command(crate::cli_command::CommandArgs),
}

#[derive(clap::Args)]
struct NumaTestArgs {
    /// Task counts to run, e.g. 4,8,16
    #[arg(long, value_name = "N,...", value_parser = parse_tasks, default_value = "4")]
    tasks: TaskList,
    /// Elements per task (20 bytes each); default: chosen from the LLC size and free memory
    #[arg(long, value_name = "ELEMENTS", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    size: Option<u64>,
    /// The load peak 3 s after the start: a hackbench message storm, or none
    #[arg(long, value_enum, default_value_t = DisturbArg::Messaging)]
    disturb: DisturbArg,
    #[command(flatten)]
    common: CommonArgs,
}

/// `--disturb` of numa_test, real or simulated.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum DisturbArg {
    Messaging,
    None,
}

#[derive(Clone, Debug)]
pub(crate) struct TaskList(pub(crate) Vec<u32>);

pub(crate) fn parse_tasks(s: &str) -> Result<TaskList, String> {
    let mut v = Vec::new();
    for item in s.split(',') {
        let n: u32 = item
            .trim()
            .parse()
            .map_err(|_| format!("{item:?} is not a task count"))?;
        if n == 0 {
            return Err("a run needs at least 1 task".into());
        }
        if n > 4096 {
            return Err(format!(
                "{n} tasks is more than numalab runs at once (4096)"
            ));
        }
        v.push(n);
    }
    Ok(TaskList(v))
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    match args.benchmark {
        Benchmark::NumaTest(a) => run_numa_test(a),
        Benchmark::Numa01(a) => crate::cli_autonuma::run(Kind::Numa01, a),
        Benchmark::Numa01ThreadAlloc(a) => crate::cli_autonuma::run(Kind::Numa01ThreadAlloc, a),
        Benchmark::Numa02(a) => crate::cli_autonuma::run(Kind::Numa02, a),
        Benchmark::Numa02Smt(a) => crate::cli_autonuma::run(Kind::Numa02Smt, a),
        Benchmark::Twohalves(a) => crate::cli_autonuma::run(Kind::TwoHalves, a.into_common()),
        Benchmark::Command(a) => crate::cli_command::run(a),
        Benchmark::Spin(a) => crate::cli_placement::run_spin(a),
        Benchmark::Hackbench(a) => crate::cli_placement::run_hackbench(a),
    }
}

/// One run's result, as every `numalab run` benchmark handles it: the
/// record written atomically (with its path), or, when the user
/// interrupted, exit code 130 after saying how many finished runs were
/// kept (`kept`, already on disk in `results`).
pub(crate) fn keep_run(
    result: Result<RunRecord>,
    kept: usize,
    results: &Path,
    title: &str,
) -> Result<Result<(RunRecord, PathBuf), ExitCode>> {
    match result {
        Ok(rec) => {
            let path = write_atomic(results, &rec)
                .with_context(|| format!("writing the record of {title}"))?;
            Ok(Ok((rec, path)))
        }
        Err(e) if e.is::<Interrupted>() => {
            eprintln!(
                "numalab: interrupted: every task stopped; {kept} finished run(s) kept in {}",
                results.display()
            );
            Ok(Err(ExitCode::from(130)))
        }
        Err(e) => Err(e),
    }
}

/// Exit non-zero, naming the first failure, when any run failed (every
/// run's record is on disk already).
pub(crate) fn fail_if_any<'a>(runs: impl IntoIterator<Item = &'a RunRecord>) -> Result<()> {
    let all: Vec<&RunRecord> = runs.into_iter().collect();
    let failed: Vec<&&RunRecord> = all.iter().filter(|r| !r.outcome.is_ok()).collect();
    if let Some(first) = failed.first() {
        let reason = first.outcome.reason.as_deref().unwrap_or("unknown");
        bail!(
            "{} of {} runs failed (first: {})",
            failed.len(),
            all.len(),
            reason.lines().next().unwrap_or(reason)
        );
    }
    Ok(())
}

/// One line per finished run: status, elapsed, user and sys time; then
/// the failure reason and where the record is.
pub(crate) fn print_run_line(msg: &str, rec: &RunRecord, path: &Path) {
    let m = |k: &str| rec.metric(k).unwrap_or(f64::NAN);
    println!(
        "== {msg}: {}   elapsed {:.2} s   user {:.2} s   sys {:.2} s",
        if rec.outcome.is_ok() { "ok" } else { "FAILED" },
        m("elapsed_s"),
        m("user_s"),
        m("sys_s")
    );
    for w in &rec.warnings {
        println!("warning: {w}");
    }
    if let Some(reason) = &rec.outcome.reason {
        println!("failed: {reason}");
    }
    println!("record: {}", path.display());
}

fn probe() -> Result<MachineInfo> {
    MachineInfo::probe(&Roots::host()).context("reading this machine's topology")
}

fn run_numa_test(a: NumaTestArgs) -> Result<ExitCode> {
    let machine = probe()?;
    let max_tasks = *a.tasks.0.iter().max().expect("at least one task count");
    // Validate everything before touching the disk or printing anything.
    let mut notes = Vec::new();
    let elements = match a.size {
        Some(e) => {
            sizing::check_fits(&machine, max_tasks, e, BYTES_PER_ELEMENT)
                .map_err(anyhow::Error::msg)?;
            notes.push(format!("size: {e} elements per task (--size)"));
            e
        }
        None => {
            let c = sizing::numa_test_elements(&machine, max_tasks, BYTES_PER_ELEMENT)
                .map_err(anyhow::Error::msg)?;
            notes.push(format!("size: {}", c.explanation));
            if let Some(w) = &c.warning {
                notes.push(format!("warning: {w}"));
            }
            c.elements
        }
    };
    numalab_record::ensure_writable_dir(&a.common.results)
        .with_context(|| format!("results directory {}", a.common.results.display()))?;
    for n in notes {
        eprintln!("numalab: {n}");
    }
    let disturb = match a.disturb {
        DisturbArg::Messaging => Disturb::Messaging,
        DisturbArg::None => Disturb::None,
    };
    eprintln!(
        "numalab: numa_test on {} ({}, kernel {}, numa_balancing={})",
        machine.hostname,
        machine.topology.summary(),
        machine.kernel,
        machine.numa_balancing.as_deref().unwrap_or("n/a")
    );
    let exe = std::env::current_exe().context("locating the numalab executable")?;
    let interrupt = Interrupt::install().context("installing the Ctrl-C handler")?;
    let total = a.common.runs as usize * a.tasks.0.len();
    let mut done: Vec<RunRecord> = Vec::new();
    let mut step = 0;
    // Repetitions outermost, so that drift over time affects every task
    // count alike instead of biasing one of them.
    for rep in 1..=a.common.runs {
        for &n in &a.tasks.0 {
            step += 1;
            let params = numa_test::Params::new(n, elements, disturb);
            let msg = format!(
                "run {step}/{total} numa_test N={n} (repetition {rep}/{})",
                a.common.runs
            );
            let spec = RunSpec {
                label: &a.common.label,
                repetition: Repetition {
                    index: rep,
                    of: a.common.runs,
                },
                interval: a.common.interval,
                interrupt: &interrupt,
                title: msg.clone(),
            };
            let result = numa_test::run_once(&exe, &machine, &params, &spec);
            let (rec, path) = match keep_run(result, done.len(), &a.common.results, &msg)? {
                Ok(kept) => kept,
                Err(code) => return Ok(code),
            };
            println!(
                "== {msg}: {}",
                if rec.outcome.is_ok() { "ok" } else { "FAILED" }
            );
            print!("{}", numalab_report::text::numa_test_task_table(&rec));
            for w in &rec.warnings {
                println!("warning: {w}");
            }
            if let Some(reason) = &rec.outcome.reason {
                println!("failed: {reason}");
            }
            println!("record: {}", path.display());
            println!();
            done.push(rec);
        }
    }
    let refs: Vec<&RunRecord> = done.iter().collect();
    println!("numa_test summary, label {:?}:", a.common.label);
    print!("{}", numalab_report::text::numa_test_summary(&refs));
    fail_if_any(&done)?;
    Ok(ExitCode::SUCCESS)
}

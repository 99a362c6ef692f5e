//! The benchmarks as subcommands, shared by `numalab run` and `numalab
//! sim`: each is its numalab-bench argument set plus the runner's options,
//! so the same flag means the same thing on every backend. This file is
//! glue: flags to a plan, the plan to the runner, records to the summary.

use anyhow::{bail, Context, Result};
use numalab_bench::args::Spec;
use numalab_bench::registry::{self, Benchmark};
use numalab_linux::knobs::{Guard, Knob};
use numalab_runner::{Auto, Backend, Configuration, Interval, Output, Plan, Runs};
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of the runner, the same for every benchmark and backend.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Runs")]
pub struct RunnerArgs {
    /// Recorded repetitions of every case, or auto: at least --min-runs,
    /// then as many as fit in --max-time by the first round's time, at
    /// most --max-runs
    #[arg(long, value_name = "N|auto", default_value = "1", allow_negative_numbers = true, value_parser = parse_runs)]
    pub runs: RunsArg,
    /// With --runs auto: the fewest runs of every case [default: 5, the
    /// fewest with which compare's rank test can still tell two
    /// configurations apart when their runs overlap a little]
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub min_runs: Option<u32>,
    /// With --runs auto: the most runs of every case [default: 30]
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub max_runs: Option<u32>,
    /// With --runs auto: seconds all the runs may take, estimated from the
    /// first round's time; more than --min-runs only as they fit
    /// [default: 300]
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_max_time)]
    pub max_time: Option<f64>,
    /// Discarded runs of every case before the recorded ones
    #[arg(long, value_name = "N", default_value_t = 0, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub warmup: u32,
    /// Configuration label recorded with every run (compare groups by it)
    #[arg(long, default_value = "default")]
    pub label: String,
    /// Directory the run records are written to
    #[arg(long, value_name = "DIR", default_value = "numalab-results")]
    pub results: PathBuf,
    /// Choose the sizes afresh instead of reusing those an earlier
    /// invocation of the same benchmark and flags on this machine chose
    /// for --results
    #[arg(long, help_heading = "Output")]
    pub resize: bool,
    /// Seconds between observations of tasks and memory: 0 turns them off;
    /// auto is 1 s, stretched to 100x a sample's CPU time (at most 1% of a CPU)
    #[arg(long, value_name = "SECONDS|auto", default_value = "auto", allow_negative_numbers = true, value_parser = Interval::parse)]
    pub interval: Interval,
    /// Shell command run before every repetition, untimed (e.g. 'sync';
    /// 'make clean'); if it fails, that run is recorded as failed. Hooks
    /// run in `run command`'s --cwd, if given
    #[arg(long, value_name = "CMD")]
    pub prepare: Option<String>,
    /// Shell command run once before the first run
    #[arg(long, value_name = "CMD")]
    pub setup: Option<String>,
    /// Shell command run once after the last run, also when interrupted
    #[arg(long, value_name = "CMD")]
    pub cleanup: Option<String>,
    /// Shell command started after --setup and kept running through the
    /// runs (a load generator, a daemon); stopped after them (SIGTERM,
    /// then SIGKILL), also on Ctrl-C or kill -9 of numalab; if it ends
    /// first, the runs fail. Output in RESULTS/hooks.log
    #[arg(long = "setup-bg", value_name = "CMD")]
    pub setup_bg: Option<String>,
    /// Run under one of numalab's sched_ext schedulers (fifo, node-affine,
    /// nest), loaded for the runs and unloaded after them; needs a kernel with
    /// sched_ext (a guest of --kernel debian-7.3) and a numalab built
    /// with --features scx (docs/sched-ext.md)
    #[arg(long, value_name = "NAME[k=v,...]", value_parser = parse_scx, help_heading = "sched_ext")]
    pub scx: Option<numalab_linux::sched_ext::Scx>,
    /// Run under any other sched_ext scheduler: a shell command that
    /// loads one and unloads it on SIGTERM (scx_simple, scx_rusty, ...);
    /// the runs start once the kernel has enabled it
    #[arg(
        long = "scx-exec",
        value_name = "CMD",
        conflicts_with = "scx",
        help_heading = "sched_ext"
    )]
    pub scx_exec: Option<String>,
    /// Set a sysctl for the runs and restore it after (repeatable; also
    /// the NUMA-balancing scan tunables by their sysctl names, e.g.
    /// kernel.numa_balancing_scan_period_max_ms=2000); needs root
    #[arg(long = "sysctl", value_name = "KEY=VALUE", value_parser = parse_sysctl, help_heading = "Machine settings, restored after the runs")]
    pub sysctl: Vec<Knob>,
    /// Set every CPU's cpufreq governor for the runs (e.g. performance)
    #[arg(long, value_name = "NAME", value_parser = parse_governor, help_heading = "Machine settings, restored after the runs")]
    pub governor: Option<Knob>,
    /// Set transparent_hugepage/enabled for the runs (always, madvise, never)
    #[arg(long, value_name = "MODE", value_parser = parse_thp, help_heading = "Machine settings, restored after the runs")]
    pub thp: Option<Knob>,
    /// Write a file under /sys for the runs and restore it after (repeatable)
    #[arg(long = "sysfs", value_name = "PATH=VALUE", value_parser = parse_sysfs, help_heading = "Machine settings, restored after the runs")]
    pub sysfs: Vec<Knob>,
    /// Wait for another numalab that is changing the same settings,
    /// instead of refusing to run
    #[arg(long, help_heading = "Machine settings, restored after the runs")]
    pub wait: bool,
    /// Print one line per run and the summary: no sizing notes, warnings
    /// or progress bar
    #[arg(long, short = 'q', conflicts_with = "verbose", help_heading = "Output")]
    pub quiet: bool,
    /// Also print each record's path as it is written
    #[arg(long, short = 'v', help_heading = "Output")]
    pub verbose: bool,
    /// Record every scheduling event of the benchmark's tasks (switches,
    /// forks, execs, exits, wakeups) and derive exact per-task facts; the
    /// simulator writes its schedule as a trace (see docs/trace.md)
    #[arg(long)]
    pub trace: bool,
}

/// `--runs`: a count, or `auto`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RunsArg {
    Fixed(u32),
    Auto,
}

fn parse_runs(s: &str) -> Result<RunsArg, String> {
    if s == "auto" {
        return Ok(RunsArg::Auto);
    }
    match s.parse::<i64>() {
        Ok(n) if (1..=10000).contains(&n) => Ok(RunsArg::Fixed(n as u32)),
        _ => Err("give a number of runs from 1 to 10000, or auto".into()),
    }
}

fn parse_max_time(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(v) if v < 0.0 => Err("a time cannot be negative".into()),
        _ => Err("give a number of seconds, 0 or more".into()),
    }
}

fn parse_scx(s: &str) -> Result<numalab_linux::sched_ext::Scx, String> {
    let (scx, _) = numalab_scx::parse(s).map_err(|e| e.to_string())?;
    if !numalab_scx::BUILT {
        return Err(numalab_scx::not_built(&scx.flag()));
    }
    Ok(scx)
}

fn parse_sysctl(s: &str) -> Result<Knob, String> {
    Knob::parse_sysctl(s).map_err(|e| e.to_string())
}
fn parse_sysfs(s: &str) -> Result<Knob, String> {
    Knob::parse_sysfs(s).map_err(|e| e.to_string())
}
fn parse_governor(s: &str) -> Result<Knob, String> {
    Knob::governor(s).map_err(|e| e.to_string())
}
fn parse_thp(s: &str) -> Result<Knob, String> {
    Knob::thp(s).map_err(|e| e.to_string())
}

impl RunnerArgs {
    /// The runs asked for: `--min-runs`, `--max-runs` and `--max-time`
    /// bound `--runs auto` and mean nothing with a count.
    fn runs(&self) -> Result<Runs> {
        match self.runs {
            RunsArg::Fixed(n) => {
                let given = [
                    ("--min-runs", self.min_runs.is_some()),
                    ("--max-runs", self.max_runs.is_some()),
                    ("--max-time", self.max_time.is_some()),
                ];
                if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
                    bail!("{flag} is for --runs auto, not --runs {n}");
                }
                Ok(Runs::Fixed(n))
            }
            RunsArg::Auto => Ok(Runs::Auto(Auto::new(
                self.min_runs,
                self.max_runs,
                self.max_time,
            )?)),
        }
    }

    fn output(&self) -> Output {
        match (self.quiet, self.verbose) {
            (true, _) => Output::Quiet,
            (false, true) => Output::Verbose,
            (false, false) => Output::Normal,
        }
    }

    fn configuration(&self) -> Configuration {
        let mut knobs = self.sysctl.clone();
        knobs.extend(self.governor.clone());
        knobs.extend(self.thp.clone());
        knobs.extend(self.sysfs.iter().cloned());
        Configuration {
            label: self.label.clone(),
            knobs,
            prepare: self.prepare.clone(),
            setup: self.setup.clone(),
            cleanup: self.cleanup.clone(),
            setup_bg: self.setup_bg.clone(),
            hook_dir: None,
            scx: self.scx.clone().or_else(|| {
                self.scx_exec
                    .clone()
                    .map(|cmd| numalab_linux::sched_ext::Scx::Exec { cmd })
            }),
        }
    }
}

/// A benchmark and the runner's options: one subcommand per entry of
/// the benchmark registry (numalab_bench::registry), its flags and then
/// the runner's (or the other way round, as the entry says).
#[derive(Clone, Debug)]
pub struct BenchCmd {
    spec: Spec,
    runner: RunnerArgs,
}

/// Benchmark `b`'s subcommand: its docs line, its flags and the runner's.
fn subcommand(b: &Benchmark) -> clap::Command {
    use clap::Args;
    let cmd = clap::Command::new(b.name);
    let cmd = if b.runner_flags_first {
        (b.args)(RunnerArgs::augment_args(cmd))
    } else {
        RunnerArgs::augment_args((b.args)(cmd))
    };
    // After the flags: an argument type's own doc comment is not the
    // subcommand's.
    cmd.about(b.about).long_about(None)
}

impl clap::FromArgMatches for BenchCmd {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, sub)) = m.subcommand() else {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::MissingSubcommand,
                "A subcommand is required but one was not provided.",
            ));
        };
        let Some(b) = registry::find(name) else {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::InvalidSubcommand,
                format!("The subcommand '{name}' wasn't recognized"),
            ));
        };
        Ok(BenchCmd {
            spec: (b.spec)(sub)?,
            runner: RunnerArgs::from_arg_matches(sub)?,
        })
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = BenchCmd::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Subcommand for BenchCmd {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        registry::ALL
            .iter()
            .fold(cmd, |cmd, b| cmd.subcommand(subcommand(b)))
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        BenchCmd::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        registry::find(name).is_some()
    }
}

impl BenchCmd {
    /// The observation interval asked for.
    pub fn interval(&self) -> Interval {
        self.runner.interval
    }

    /// Write the records to `dir` (`numalab vm` decides where they land).
    pub fn set_results(&mut self, dir: PathBuf) {
        self.runner.results = dir;
    }

    fn runner(&self) -> &RunnerArgs {
        &self.runner
    }

    /// The benchmark and its flags, as numalab-bench defines them.
    fn spec(&self) -> &Spec {
        &self.spec
    }

    fn is_command(&self) -> bool {
        self.spec.is_command()
    }
}

/// A status line on standard error, wrapped within 80 columns.
pub(crate) fn say(text: &str) {
    for l in numalab_report::table::wrap(&format!("numalab: {text}"), 80) {
        numalab_linux::errln!("{l}");
    }
}

/// Resolve `cmd` on `backend`'s machine and run it: the whole of `numalab
/// run` and `numalab sim` once the backend exists.
pub fn execute(cmd: &BenchCmd, backend: &mut dyn Backend) -> Result<ExitCode> {
    let r = cmd.runner();
    let runs = r.runs()?;
    if cmd.is_command() {
        refuse_unsupported_command(backend)?;
    }
    let (sizes, resolved) = Sizes::choose(cmd, backend)?;
    let plan = plan_of(cmd, runs, resolved.cases, &resolved.notes)?;
    numalab_runner::check(&plan, backend)?;
    if plan.output != Output::Quiet {
        say(&format!("on {}", backend.describe()));
        for n in &resolved.notes {
            say(n);
        }
        if let Runs::Auto(a) = runs {
            say(&format!(
                "runs: {} to {} of every case, as many as fit in {} s by the first round's time (--runs auto)",
                a.min, a.max, a.max_time_s
            ));
        }
        for w in &resolved.warnings {
            say(&format!("warning: {w}"));
        }
    }
    let out = numalab_runner::run(&plan, backend)?;
    sizes.keep(&plan, &resolved.notes, &out);
    let refs: Vec<&numalab_record::RunRecord> = out.records.iter().map(|(_, r)| r).collect();
    if !refs.is_empty() {
        print_summary(&refs, &plan)?;
    }
    if out.interrupted {
        return Ok(ExitCode::from(130));
    }
    let failed = out.failed();
    if let Some(first) = failed.first() {
        let reason = first.outcome.reason.as_deref().unwrap_or("unknown");
        bail!(
            "{} of {} runs failed (first: {})",
            failed.len(),
            out.records.len(),
            reason.lines().next().unwrap_or(reason)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses `run command` on a backend that cannot run a command, with
/// the backend's reason.
fn refuse_unsupported_command(backend: &dyn Backend) -> Result<()> {
    if let Some(why) = backend.unsupported(&numalab_bench::Case::Command(
        numalab_bench::command::Params {
            name: String::new(),
            argv: Vec::new(),
            cwd: None,
        },
    )) {
        bail!("{why}");
    }
    Ok(())
}

/// Where a benchmark's sizes came from: sizes an earlier invocation
/// chose for the same benchmark and flags on a machine of the same shape
/// (any backend) in this results directory are reused, so A/B across
/// invocations, and real against simulated, lands in one case
/// (numalab_runner::sizes).
struct Sizes {
    /// The key the sizes are kept under (none for a command).
    memo: Option<String>,
    /// Each node's memory on this machine, kept beside them.
    memory: Vec<u64>,
    /// Whether they were recalled rather than chosen now.
    reused: bool,
    /// The backend and machine that chose them (`real`, `vm`).
    kind: String,
    host: String,
}

impl Sizes {
    /// The sizes recalled for `cmd` on this machine (unless --resize), or
    /// resolved on the backend's machine.
    fn choose(cmd: &BenchCmd, backend: &dyn Backend) -> Result<(Sizes, numalab_bench::Resolved)> {
        let r = cmd.runner();
        let memo = (!cmd.is_command())
            .then(|| numalab_runner::sizes::key(backend.machine(), &format!("{:?}", cmd.spec())));
        let memory = numalab_runner::sizes::memory(backend.machine());
        let recalled = match &memo {
            Some(k) if !r.resize => numalab_runner::sizes::recall(&r.results, k, &memory),
            _ => None,
        };
        let reused = recalled.is_some();
        let resolved = match recalled {
            Some(x) => x,
            None => cmd.spec().resolve(backend)?,
        };
        let sizes = Sizes {
            memo,
            memory,
            reused,
            kind: backend.kind().to_string(),
            host: backend.machine().hostname.clone(),
        };
        Ok((sizes, resolved))
    }

    /// Keeps sizes chosen now for later invocations, once a run was
    /// recorded with them; a failure to write them is a warning.
    fn keep(&self, plan: &Plan, notes: &[String], out: &numalab_runner::Outcome) {
        if let (Some(k), false, false) = (&self.memo, self.reused, out.records.is_empty()) {
            let kept = numalab_bench::Resolved {
                cases: plan.cases.clone(),
                notes: notes.to_vec(),
                warnings: Vec::new(),
            };
            let on = format!("{} on {}", self.kind, self.host);
            if let Err(e) =
                numalab_runner::sizes::remember(&plan.results, k, &kept, &on, &self.memory)
            {
                say(&format!(
                    "warning: keeping the sizes for later invocations: {e}"
                ));
            }
        }
    }
}

/// The plan of one invocation: its one configuration, the resolved
/// cases and the runner's flags.
fn plan_of(
    cmd: &BenchCmd,
    runs: Runs,
    cases: Vec<numalab_bench::Case>,
    notes: &[String],
) -> Result<Plan> {
    let r = cmd.runner();
    // A command's log lands beside its record whatever --cwd says.
    let results = if cmd.is_command() {
        std::path::absolute(&r.results)
            .with_context(|| format!("results directory {}", r.results.display()))?
    } else {
        r.results.clone()
    };
    // The hooks run where the command does (--cwd), else here.
    let mut config = r.configuration();
    if let Spec::Command(bench) = cmd.spec() {
        config.hook_dir = bench.cwd.clone();
    }
    Ok(Plan {
        configs: vec![config],
        cases,
        runs,
        warmup: r.warmup,
        interval: r.interval,
        results,
        notes: notes.to_vec(),
        guard: Some(Guard::this_executable()),
        wait: r.wait,
        output: r.output(),
        trace: r.trace,
    })
}

/// The invocation's summary on standard output, numa_test's per-task
/// table (of the last run, or of every run with --verbose), and where the
/// records are.
fn print_summary(refs: &[&numalab_record::RunRecord], plan: &Plan) -> Result<()> {
    numalab_linux::outln!();
    crate::print_stdout(&numalab_report::summary::invocation(refs))?;
    // numa_test's signature output, seed 000's per-task table: of the
    // last run, or of every run with --verbose.
    let tables: Vec<&&numalab_record::RunRecord> = refs
        .iter()
        .filter(|r| r.benchmark == "numa_test" && !r.tasks.is_empty())
        .collect();
    let shown = match plan.output {
        Output::Quiet => &tables[..0],
        Output::Verbose => &tables[..],
        _ => &tables[tables.len().saturating_sub(1)..],
    };
    for r in shown {
        numalab_linux::outln!();
        numalab_linux::outln!(
            "per task, run {} of {} ({}): % of running time per node",
            r.repetition.index,
            r.repetition.of,
            r.params
                .get("tasks")
                .map(|t| format!("tasks={t}"))
                .unwrap_or_default()
        );
        crate::print_stdout(&numalab_report::show::task_table(r))?;
    }
    numalab_linux::outln!("records: {}", plan.results.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[test]
    fn run_and_sim_have_one_subcommand_per_registered_benchmark() {
        let cli = crate::Cli::command();
        for top in ["run", "sim"] {
            let cmd = cli.find_subcommand(top).unwrap();
            let names: Vec<&str> = cmd
                .get_subcommands()
                .map(|c| c.get_name())
                .filter(|n| *n != "help")
                .collect();
            assert_eq!(names, registry::NAMES, "{top}");
            for b in registry::ALL {
                let sub = cmd.find_subcommand(b.name).unwrap();
                assert_eq!(sub.get_about().unwrap().to_string(), b.about);
                for f in Spec::flags(b.name).unwrap() {
                    assert!(
                        sub.get_arguments()
                            .any(|a| a.get_long() == Some(f.long.as_str())),
                        "{top} {}: --{}",
                        b.name,
                        f.long
                    );
                }
            }
        }
    }

    #[test]
    fn a_subcommand_parses_into_the_benchmarks_spec_and_the_runners_flags() {
        let cli = crate::Cli::try_parse_from([
            "numalab",
            "run",
            "numa02",
            "--threads",
            "2",
            "--label",
            "x",
        ])
        .unwrap();
        let crate::Command::Run(run) = cli.command else {
            panic!("not run");
        };
        assert_eq!(run.benchmark.spec().name(), "numa02");
        assert_eq!(run.benchmark.runner().label, "x");
        let e = crate::Cli::try_parse_from(["numalab", "run", "numa02", "--tasks", "2"]);
        assert!(e.is_err());
    }
}

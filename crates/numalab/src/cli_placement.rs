//! `numalab run spin` and `numalab run hackbench`: seed 003's placement
//! experiments on CPU sets derived from the topology.

use crate::cli_run::{keep_run, CommonArgs};
use anyhow::{bail, Context, Result};
use numalab_record::{Repetition, RunRecord};
use numalab_topology::placement::Placement;
use numalab_topology::{cpulist, MachineInfo, Roots, Topology};
use numalab_workloads::hackbench::Storm;
use numalab_workloads::placement_run::{self, CpuSet, HackbenchParams, SpinParams};
use numalab_workloads::run::RunSpec;
use numalab_workloads::Interrupt;
use std::process::ExitCode;
use std::time::Duration;

/// Where to run: named placements, or one explicit CPU list.
#[derive(clap::Args, Clone)]
pub struct Where {
    /// Placements, in order within each repetition: default, spread (split), spread-smt (mix), packed (same_ccd), packed-smt (same_ccx); default: every one this machine can give
    #[arg(long, value_name = "P,...", value_parser = parse_placements, conflicts_with = "cpus")]
    placement: Option<Placements>,
    /// An explicit CPU list instead, e.g. 0,6,12 or 0-5 (as taskset -c)
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    cpus: Option<CpuList>,
}

/// A `--placement` list, as given (duplicates dropped).
#[derive(Clone, Debug)]
pub(crate) struct Placements(pub(crate) Vec<Placement>);

#[derive(Clone)]
struct CpuList(Vec<u32>);

pub(crate) fn parse_placements(s: &str) -> Result<Placements, String> {
    let mut v = Vec::new();
    for p in s.split(',') {
        let p = Placement::parse(p.trim())?;
        if !v.contains(&p) {
            v.push(p);
        }
    }
    Ok(Placements(v))
}

fn parse_cpus(s: &str) -> Result<CpuList, String> {
    cpulist::parse(s)
        .map(CpuList)
        .map_err(|e| format!("{s:?}: {e}"))
}

#[derive(clap::Args)]
pub struct SpinArgs {
    /// Spinning tasks (processes); default: half the cores
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    tasks: Option<u32>,
    /// Iterations per task; default: as many as take about --seconds on one CPU here
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    iterations: Option<u64>,
    /// Seconds a task should spin alone on a core, for the default iterations
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_seconds)]
    seconds: f64,
    #[command(flatten)]
    place: Where,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(clap::Args)]
pub struct HackbenchArgs {
    /// Groups of senders and receivers (hackbench -g; seed 003: 15)
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..=1000))]
    groups: u32,
    /// Senders and receivers per group (hackbench -f; seed 003: 50)
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=500))]
    fds: u32,
    /// Messages each sender sends to each receiver (hackbench -l; seed 003: 200)
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    loops: u32,
    /// Message size in bytes (hackbench -s; seed 003: 512)
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=1048576))]
    size: u32,
    /// CPUs in each placement's set; default: half the cores (seed 003: 6)
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=4096))]
    ncpus: Option<u32>,
    #[command(flatten)]
    place: Where,
    #[command(flatten)]
    common: CommonArgs,
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86400.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds between 0 and 86400"
        )),
    }
}

/// The CPU sets to run on, each checked against the machine.
fn sets(topo: &Topology, w: &Where, k: usize) -> Result<Vec<CpuSet>> {
    if let Some(CpuList(cpus)) = &w.cpus {
        placement_run::check_cpus(topo, cpus).map_err(anyhow::Error::msg)?;
        return Ok(vec![CpuSet {
            name: "cpus".into(),
            cpus: Some(cpus.clone()),
        }]);
    }
    let asked = w.placement.as_ref().map(|p| p.0.clone());
    let list = asked.clone().unwrap_or_else(|| {
        Placement::ALL
            .into_iter()
            .filter(|p| topo.smt() || !matches!(p, Placement::SpreadSmt | Placement::PackedSmt))
            .collect()
    });
    let mut out = Vec::new();
    for p in list {
        match p.cpus(topo, k) {
            Ok(cpus) => out.push(CpuSet {
                name: p.name().into(),
                cpus,
            }),
            Err(e) => bail!("--placement {}: {e}", p.name()),
        }
    }
    Ok(out)
}

fn default_k(topo: &Topology) -> usize {
    (topo.core_count() / 2).max(1)
}

fn probe() -> Result<MachineInfo> {
    MachineInfo::probe(&Roots::host()).context("reading this machine's topology")
}

fn say_sets(sets: &[CpuSet]) {
    for s in sets {
        eprintln!(
            "numalab: placement {}: CPUs {}",
            s.name,
            s.cpus.as_deref().map_or("all".into(), cpulist::format)
        );
    }
}

pub fn run_spin(a: SpinArgs) -> Result<ExitCode> {
    let machine = probe()?;
    let topo = &machine.topology;
    let tasks = a.tasks.unwrap_or(default_k(topo) as u32);
    let sets = sets(topo, &a.place, tasks as usize)?;
    numalab_record::ensure_writable_dir(&a.common.results)
        .with_context(|| format!("results directory {}", a.common.results.display()))?;
    eprintln!(
        "numalab: spin on {} ({}, kernel {}): {tasks} tasks{}",
        machine.hostname,
        topo.summary(),
        machine.kernel,
        if a.tasks.is_none() {
            " (half the cores)"
        } else {
            ""
        }
    );
    say_sets(&sets);
    let iterations = match a.iterations {
        Some(n) => n,
        None => {
            let rate = placement_run::spin_rate(Duration::from_millis(300));
            let n = (rate * a.seconds).round().max(1.0) as u64;
            eprintln!(
                "numalab: iterations: {n} per task, about {} s alone on a core at the {:.0} M/s measured here; --iterations to set",
                a.seconds,
                rate / 1e6
            );
            n
        }
    };
    let exe = std::env::current_exe().context("locating the numalab executable")?;
    let common = a.common.clone();
    run_all(&common, &sets, "spin", |set, spec| {
        let p = SpinParams {
            tasks,
            iterations,
            set: set.clone(),
        };
        placement_run::run_spin(&exe, &machine, &p, spec)
    })
}

pub fn run_hackbench(a: HackbenchArgs) -> Result<ExitCode> {
    let machine = probe()?;
    let topo = &machine.topology;
    let k = a.ncpus.map_or(default_k(topo), |k| k as usize);
    let sets = sets(topo, &a.place, k)?;
    numalab_record::ensure_writable_dir(&a.common.results)
        .with_context(|| format!("results directory {}", a.common.results.display()))?;
    let procs = 2 * a.groups as u64 * a.fds as u64;
    eprintln!(
        "numalab: hackbench on {} ({}, kernel {}): {} groups x {} fds ({procs} processes), {} loops of {}-byte messages",
        machine.hostname,
        topo.summary(),
        machine.kernel,
        a.groups,
        a.fds,
        a.loops,
        a.size
    );
    say_sets(&sets);
    let exe = std::env::current_exe().context("locating the numalab executable")?;
    let storm = Storm {
        groups: a.groups as usize,
        fds: a.fds as usize,
        loops: a.loops as usize,
        size: a.size as usize,
    };
    let common = a.common.clone();
    run_all(&common, &sets, "hackbench", |set, spec| {
        let p = HackbenchParams {
            storm,
            set: set.clone(),
        };
        placement_run::run_hackbench(&exe, &machine, &p, spec)
    })
}

/// Every set in every repetition (repetitions outermost, so drift affects
/// every placement alike), a line per run, then the summary.
fn run_all(
    common: &CommonArgs,
    sets: &[CpuSet],
    bench: &str,
    mut once: impl FnMut(&CpuSet, &RunSpec) -> Result<RunRecord>,
) -> Result<ExitCode> {
    let interrupt = Interrupt::install().context("installing the Ctrl-C handler")?;
    let total = common.runs as usize * sets.len();
    let mut done: Vec<RunRecord> = Vec::new();
    let mut step = 0;
    for rep in 1..=common.runs {
        for set in sets {
            step += 1;
            let msg = format!(
                "run {step}/{total} {bench} placement={} (repetition {rep}/{})",
                set.name, common.runs
            );
            let spec = RunSpec {
                label: &common.label,
                repetition: Repetition {
                    index: rep,
                    of: common.runs,
                },
                interval: common.interval,
                interrupt: &interrupt,
                title: msg.clone(),
            };
            let result = once(set, &spec);
            let (rec, path) = match keep_run(result, done.len(), &common.results, &msg)? {
                Ok(kept) => kept,
                Err(code) => return Ok(code),
            };
            crate::cli_run::print_run_line(&msg, &rec, &path);
            done.push(rec);
        }
    }
    println!();
    println!("{bench} summary, label {:?}:", common.label);
    print!("{}", summary(sets, &done));
    crate::cli_run::fail_if_any(&done)?;
    Ok(ExitCode::SUCCESS)
}

/// One row per placement: its CPUs, runs, elapsed, user and sys as
/// mean(stddev) over its successful runs.
fn summary(sets: &[CpuSet], done: &[RunRecord]) -> String {
    let mut t = numalab_report::table::Table::new(
        "",
        vec![
            numalab_report::table::Column::key("placement"),
            numalab_report::table::Column::key("cpus"),
            numalab_report::table::Column::right("runs"),
            numalab_report::table::Column::right("elapsed(s)"),
            numalab_report::table::Column::right("user(s)"),
            numalab_report::table::Column::right("sys(s)"),
        ],
    );
    for s in sets {
        let recs: Vec<&RunRecord> = done
            .iter()
            .filter(|r| {
                r.outcome.is_ok()
                    && r.params.get("placement").and_then(|v| v.as_str()) == Some(s.name.as_str())
            })
            .collect();
        let cell = |k: &str| -> String {
            let v: Vec<f64> = recs.iter().filter_map(|r| r.metric(k)).collect();
            match numalab_stats::Summary::of(&v) {
                Ok(x) => numalab_report::num::mean_sd(x.mean, x.stddev),
                Err(_) => "-".into(),
            }
        };
        t.push(vec![
            s.name.clone(),
            s.cpus.as_deref().map_or("all".into(), cpulist::format),
            recs.len().to_string(),
            cell("elapsed_s"),
            cell("user_s"),
            cell("sys_s"),
        ]);
    }
    t.to_text()
}

//! `numalab sim`: run a benchmark in the NUMA machine simulator
//! (numalab-sim) and write the same run records as `numalab run`.

use crate::cli_run::CommonArgs;
use anyhow::{bail, Context, Result};
use numalab_record::{write_atomic, Repetition, RunRecord};
use numalab_sim::{AutoVariant, Bench, BindMode, Disturb, SimConfig};
use numalab_topology::placement::Placement;
use numalab_workloads::pace::{Interval, AUTO_BASE_S};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = false)]
pub struct SimArgs {
    /// List machine presets, schedulers and balancers
    #[arg(long)]
    list: bool,
    /// Machine: a preset (see --list), `host`, or a machine file (TOML)
    #[arg(long, global = true, value_name = "PRESET|FILE")]
    machine: Option<String>,
    /// Scheduler and its parameters, e.g. node-affine[dynamic=true,initial=false]
    #[arg(
        long,
        global = true,
        value_name = "NAME[k=v,...]",
        default_value = "linux"
    )]
    scheduler: String,
    /// NUMA balancer and its parameters, e.g. autonuma[scan_size_mb=512]
    #[arg(
        long,
        global = true,
        value_name = "NAME[k=v,...]",
        default_value = "none"
    )]
    balancer: String,
    /// Seed of the simulator's random numbers (repetition r uses seed + r - 1)
    #[arg(long, global = true, default_value_t = 1)]
    seed: u64,
    /// Write the simulated schedule as a Chrome/Perfetto trace (JSON) to FILE
    /// (with several runs, the run number is added to the name)
    #[arg(long, global = true, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Length of the simulation tick in microseconds
    #[arg(long, global = true, value_name = "US", default_value_t = 1000)]
    tick_us: u64,
    /// Stop a run after this many simulated seconds (it is recorded as failed)
    #[arg(long, global = true, value_name = "SECONDS", default_value_t = 3600.0)]
    max_sim_s: f64,
    #[command(subcommand)]
    benchmark: Option<SimBench>,
}

#[derive(clap::Subcommand)]
enum SimBench {
    /// Focht's numa_test (seed 000): N tasks of random updates, hackbench 3 s in
    #[command(name = "numa_test")]
    NumaTest(NumaTestArgs),
    /// autonuma-benchmark numa01: 2 processes sharing 3 GiB each, started on one node
    #[command(name = "numa01")]
    Numa01(AutoArgs),
    /// numa01_THREAD_ALLOC: each thread zeroes its own slice
    #[command(name = "numa01_THREAD_ALLOC")]
    Numa01ThreadAlloc(AutoArgs),
    /// numa02: 1 process, a thread per CPU, each on its own slice of 1 GiB
    #[command(name = "numa02")]
    Numa02(AutoArgs),
    /// numa02_SMT: numa02 with half as many threads
    #[command(name = "numa02_SMT")]
    Numa02Smt(AutoArgs),
    /// Seed 004's microbenchmark: two thread sets on two nodes, memory first on node 0
    #[command(name = "twohalves")]
    TwoHalves(TwoHalvesArgs),
    /// Spinning tasks (seed 003's placements)
    #[command(name = "spin")]
    Spin(SpinArgs),
    /// hackbench message passing: tasks that block and wake each other
    #[command(name = "hackbench")]
    Hackbench(HackbenchArgs),
}

#[derive(clap::Args)]
struct NumaTestArgs {
    /// Task counts to run, e.g. 4,8,16
    #[arg(long, value_name = "N,...", value_parser = parse_list, default_value = "4")]
    tasks: Vec32,
    /// Elements per task (20 bytes each); seed 000 used 1000000
    #[arg(long, value_name = "ELEMENTS", default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    size: u64,
    /// The load peak 3 s after the start: a hackbench message storm, or none
    #[arg(long, value_enum, default_value_t = crate::cli_run::DisturbArg::Messaging)]
    disturb: crate::cli_run::DisturbArg,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum PlacementArg {
    Default,
    Bind,
    InverseBind,
}

#[derive(clap::Args)]
struct AutoArgs {
    /// Threads per process (default as the benchmark: ncpus/2, or ncpus for numa02)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    threads: Option<u32>,
    /// Bytes per process (default 3 GiB for numa01, 1 GiB for numa02)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    bytes: Option<u64>,
    /// Passes over the memory per thread (default 50, 1000, 800, 800)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    loops: Option<u64>,
    /// default, bind (HARD_BIND: ideal nodes) or inverse-bind (wrong nodes)
    #[arg(long, value_enum, default_value_t = PlacementArg::Default)]
    placement: PlacementArg,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(clap::Args)]
struct TwoHalvesArgs {
    /// Threads in each of the two sets (default: CPUs of a node)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    threads_per_set: Option<u32>,
    /// Total bytes, first allocated on node 0 (seed 004: 16 GiB)
    #[arg(long, default_value_t = 16 << 30, value_parser = clap::value_parser!(u64).range(1..))]
    bytes: u64,
    /// Passes of each thread over its part
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..))]
    iterations: u64,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(clap::Args)]
struct SpinArgs {
    /// Number of spinning tasks
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..))]
    tasks: u32,
    /// Work per task in units of 10^9 cycles
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(1..))]
    gcycles: u64,
    /// CPUs the tasks may use (taskset -c), e.g. 0,6,12,18,24,32
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    cpus: Option<Vec32>,
    /// Placements instead, as `numalab run spin`: default, spread (split), spread-smt (mix), packed (same_ccd), packed-smt (same_ccx); --tasks CPUs each
    #[arg(long, value_name = "P,...", value_parser = crate::cli_placement::parse_placements, conflicts_with = "cpus")]
    placement: Option<crate::cli_placement::Placements>,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(clap::Args)]
struct HackbenchArgs {
    /// Groups of senders and receivers (-g)
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..))]
    groups: u32,
    /// Senders and receivers per group (-f)
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    fds: u32,
    /// Messages each sender sends to each receiver (-l)
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    loops: u32,
    /// Message size in bytes (-s)
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    size: u32,
    /// CPUs the tasks may use (taskset -c)
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    cpus: Option<Vec32>,
    /// Placements instead, as `numalab run hackbench` (--ncpus CPUs each)
    #[arg(long, value_name = "P,...", value_parser = crate::cli_placement::parse_placements, conflicts_with = "cpus")]
    placement: Option<crate::cli_placement::Placements>,
    /// CPUs in each placement's set; default: half the cores
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=4096), requires = "placement")]
    ncpus: Option<u32>,
    #[command(flatten)]
    common: CommonArgs,
}

/// Placements to expand into CPU sets once the machine is known: the
/// placements and the set size (`None`: half the cores).
type Placed = Option<(Vec<Placement>, Option<usize>)>;

#[derive(Clone, Debug)]
struct Vec32(Vec<u32>);

/// Task counts, parsed and checked as `numalab run` does.
fn parse_list(s: &str) -> Result<Vec32, String> {
    crate::cli_run::parse_tasks(s).map(|t| Vec32(t.0))
}

fn parse_cpus(s: &str) -> Result<Vec32, String> {
    numalab_topology::cpulist::parse(s)
        .map(Vec32)
        .map_err(|e| e.to_string())
}

/// Benchmarks of one invocation: (bench, common options, placements).
fn benches(b: SimBench) -> (Vec<Bench>, CommonArgs, Placed) {
    let auto = |variant, a: AutoArgs| {
        let placement = match a.placement {
            PlacementArg::Default => BindMode::Default,
            PlacementArg::Bind => BindMode::Bind,
            PlacementArg::InverseBind => BindMode::InverseBind,
        };
        (
            vec![Bench::Autonuma {
                variant,
                placement,
                threads: a.threads,
                bytes: a.bytes,
                loops: a.loops,
            }],
            a.common,
        )
    };
    let v = match b {
        SimBench::NumaTest(a) => {
            let disturb = match a.disturb {
                crate::cli_run::DisturbArg::Messaging => Disturb::Messaging,
                crate::cli_run::DisturbArg::None => Disturb::None,
            };
            (
                a.tasks
                    .0
                    .iter()
                    .map(|&n| Bench::NumaTest {
                        tasks: n,
                        size: a.size,
                        disturb,
                    })
                    .collect(),
                a.common,
            )
        }
        SimBench::Numa01(a) => auto(AutoVariant::Numa01, a),
        SimBench::Numa01ThreadAlloc(a) => auto(AutoVariant::Numa01ThreadAlloc, a),
        SimBench::Numa02(a) => auto(AutoVariant::Numa02, a),
        SimBench::Numa02Smt(a) => auto(AutoVariant::Numa02Smt, a),
        SimBench::TwoHalves(a) => (
            vec![Bench::TwoHalves {
                threads_per_set: a.threads_per_set,
                bytes: a.bytes,
                iterations: a.iterations,
            }],
            a.common,
        ),
        SimBench::Spin(a) => {
            return (
                vec![Bench::Spin {
                    tasks: a.tasks,
                    gcycles: a.gcycles,
                    cpus: a.cpus.map(|c| c.0),
                }],
                a.common,
                a.placement.map(|p| (p.0, Some(a.tasks as usize))),
            )
        }
        SimBench::Hackbench(a) => {
            return (
                vec![Bench::Hackbench {
                    groups: a.groups,
                    fds: a.fds,
                    loops: a.loops,
                    size: a.size,
                    cpus: a.cpus.map(|c| c.0),
                }],
                a.common,
                a.placement.map(|p| (p.0, a.ncpus.map(|k| k as usize))),
            )
        }
    };
    (v.0, v.1, None)
}

/// One bench per placement, its CPUs computed on `topo`; the placement
/// names, aligned with the benches (empty names without placements).
fn expand(
    benches: Vec<Bench>,
    placed: Placed,
    topo: &numalab_topology::Topology,
) -> Result<(Vec<Bench>, Vec<String>)> {
    let Some((placements, k)) = placed else {
        let n = benches.len();
        return Ok((benches, vec![String::new(); n]));
    };
    let k = k.unwrap_or((topo.core_count() / 2).max(1));
    let mut out = Vec::new();
    let mut names = Vec::new();
    for b in &benches {
        for p in &placements {
            let cpus = p
                .cpus(topo, k)
                .map_err(|e| anyhow::anyhow!("--placement {}: {e}", p.name()))?;
            let mut b = b.clone();
            match &mut b {
                Bench::Spin { cpus: c, .. } | Bench::Hackbench { cpus: c, .. } => *c = cpus,
                _ => {}
            }
            out.push(b);
            names.push(p.name().to_string());
        }
    }
    Ok((out, names))
}

pub fn run(args: SimArgs) -> Result<ExitCode> {
    if args.list {
        print!("{}", numalab_sim::list_text());
        return Ok(ExitCode::SUCCESS);
    }
    let Some(bench) = args.benchmark else {
        bail!("name a benchmark to simulate, e.g. `numalab sim --machine azusa16 --scheduler node-affine numa_test --tasks 16` (see numalab sim --help and --list)");
    };
    let Some(machine) = args.machine.as_deref() else {
        bail!("sim needs --machine PRESET|FILE (presets: numalab sim --list)");
    };
    let (benches, common, placed) = benches(bench);
    // Everything is validated before the results directory is touched.
    let mut base = SimConfig::new(machine, &args.scheduler, &args.balancer, args.seed)
        .map_err(anyhow::Error::msg)?;
    let (benches, placement_names) = expand(benches, placed, &base.machine.topology)?;
    base.tick_us = args.tick_us;
    if !(args.max_sim_s.is_finite() && args.max_sim_s > 0.0) {
        bail!("--max-sim-s must be a positive number of seconds");
    }
    base.max_sim_s = args.max_sim_s;
    // Sampling costs a simulated run nothing: auto is the base interval.
    base.sample_ms = match common.interval {
        Interval::Fixed(s) => (s * 1000.0).round().max(1.0) as u64,
        Interval::Auto => (AUTO_BASE_S * 1000.0) as u64,
        Interval::Off => 3_600_000,
    };
    base.check().map_err(anyhow::Error::msg)?;
    for b in &benches {
        numalab_sim::validate(&base, b).map_err(anyhow::Error::msg)?;
    }
    numalab_record::ensure_writable_dir(&common.results)
        .with_context(|| format!("results directory {}", common.results.display()))?;
    eprintln!(
        "numalab: sim on {} ({}), scheduler {}, balancer {}",
        base.machine.name,
        base.machine.topology.summary(),
        base.scheduler.canonical(),
        base.balancer.canonical()
    );
    let total = common.runs as usize * benches.len();
    let mut done: Vec<RunRecord> = Vec::new();
    let mut step = 0;
    for rep in 1..=common.runs {
        for (bench, placement) in benches.iter().zip(&placement_names) {
            step += 1;
            let mut cfg = base.clone();
            cfg.seed = args.seed.wrapping_add(rep as u64 - 1);
            cfg.trace = args.trace.is_some();
            let what = match bench {
                Bench::NumaTest { tasks, .. } => format!("numa_test N={tasks}"),
                b if !placement.is_empty() => format!("{} placement={placement}", b.name()),
                b => b.name().to_string(),
            };
            let msg = format!(
                "run {step}/{total} {what} (repetition {rep}/{}, seed {})",
                common.runs, cfg.seed
            );
            let t0 = Instant::now();
            let mut bar: Option<indicatif::ProgressBar> = None;
            let mut progress = |sim_s: f64| {
                if bar.is_none() && t0.elapsed() > Duration::from_secs(1) {
                    let pb = indicatif::ProgressBar::with_draw_target(
                        None,
                        indicatif::ProgressDrawTarget::stderr(),
                    );
                    pb.set_style(
                        indicatif::ProgressStyle::with_template(
                            "{spinner} {msg} [{elapsed_precise}]",
                        )
                        .expect("valid template"),
                    );
                    bar = Some(pb);
                }
                if let Some(pb) = &bar {
                    pb.set_message(format!("{msg}: {sim_s:.0} s simulated"));
                    pb.tick();
                }
            };
            let out = numalab_sim::run(
                &cfg,
                bench,
                &common.label,
                Repetition {
                    index: rep,
                    of: common.runs,
                },
                &mut progress,
            )
            .map_err(anyhow::Error::msg)?;
            if let Some(pb) = bar {
                pb.finish_and_clear();
            }
            let mut rec = out.record;
            if !placement.is_empty() {
                // As real runs name it; the CPUs are in `cpus` already.
                rec.params
                    .insert("placement".into(), placement.as_str().into());
            }
            let path = write_atomic(&common.results, &rec)
                .with_context(|| format!("writing the record of {msg}"))?;
            if let (Some(file), Some(json)) = (&args.trace, &out.trace_json) {
                let file = if total > 1 {
                    let stem = file
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let ext = file
                        .extension()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "json".into());
                    file.with_file_name(format!("{stem}-{step}.{ext}"))
                } else {
                    file.clone()
                };
                std::fs::write(&file, json)
                    .with_context(|| format!("writing the trace {}", file.display()))?;
                eprintln!("numalab: trace of {msg}: {}", file.display());
            }
            println!(
                "== {msg}: {} (simulated {:.1} s in {:.2} s)",
                if rec.outcome.is_ok() { "ok" } else { "FAILED" },
                rec.series.samples.last().map(|s| s.t_s).unwrap_or(0.0),
                out.wall_s
            );
            if rec.benchmark == "numa_test" {
                print!("{}", numalab_report::text::numa_test_task_table(&rec));
            } else {
                print!("{}", generic_summary(&rec));
            }
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
    if done.iter().all(|r| r.benchmark == "numa_test") {
        let refs: Vec<&RunRecord> = done.iter().collect();
        println!("numa_test summary, label {:?}:", common.label);
        print!("{}", numalab_report::text::numa_test_summary(&refs));
    }
    let failed = done.iter().filter(|r| !r.outcome.is_ok()).count();
    if failed > 0 {
        bail!("{failed} of {} simulated runs failed", done.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// Totals of a non-numa_test run, within 80 columns.
fn generic_summary(r: &RunRecord) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for (k, name) in [
        ("elapsed_s", "ElapsedTime"),
        ("user_s", "TotalUserTime"),
        ("sys_s", "TotalSysTime"),
        ("hackbench_s", "H (hackbench)"),
        ("convergence_s", "Convergence"),
    ] {
        if let Some(v) = r.metric(k) {
            let _ = writeln!(s, "{name} {v:.2}");
        }
    }
    for (k, name) in [
        ("pages_migrated", "PagesMigrated"),
        ("numa_hint_faults", "HintFaults"),
    ] {
        if let Some(v) = r.metric(k) {
            let _ = writeln!(s, "{name} {v:.0}");
        }
    }
    if let Some(last) = r.series.samples.last() {
        let nodes = r.machine.topology.node_ids();
        let mut total = vec![0u64; nodes.len()];
        for p in &last.memory_bytes {
            for (i, b) in p.iter().enumerate() {
                total[i] += b;
            }
        }
        let cells: Vec<String> = nodes
            .iter()
            .zip(&total)
            .map(|(n, b)| format!("node{n}={}", b >> 20))
            .collect();
        let line = format!("Memory at end (MiB): {}", cells.join(" "));
        if line.len() <= 80 {
            let _ = writeln!(s, "{line}");
        }
    }
    s
}

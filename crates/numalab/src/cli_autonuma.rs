//! `numalab run numa01|numa01_THREAD_ALLOC|numa02|numa02_SMT|twohalves`.

use crate::cli_run::CommonArgs;
use anyhow::{bail, Context, Result};
use numalab_record::{write_atomic, Metric, Repetition, RunRecord};
use numalab_topology::{human_bytes, MachineInfo, Roots};
use numalab_workloads::autonuma::{cpu_nodes, Kind, Placement};
use numalab_workloads::autonuma_run::{self, Params};
use numalab_workloads::run::RunSpec;
use numalab_workloads::{sizing, Interrupt};
use std::process::ExitCode;
use std::time::Duration;

/// Most threads numalab starts for one run.
const MAX_THREADS: u32 = 4096;

#[derive(clap::Args)]
pub struct AutonumaArgs {
    /// Placements to run, in this order within each repetition:
    /// default, bind, inverse-bind (e.g. default,bind,inverse-bind)
    #[arg(long, value_name = "P,...", value_parser = parse_placements, default_value = "default")]
    placement: PlacementList,
    /// Memory per process, e.g. 512M or 3G; default: the original's size
    /// scaled to the free memory
    #[arg(long, value_name = "SIZE", allow_negative_numbers = true, value_parser = parse_bytes)]
    bytes: Option<u64>,
    /// Threads per process; default: from the CPU count
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=MAX_THREADS as i64))]
    threads: Option<u32>,
    /// Loops per thread; default: as many as take about --duration seconds
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    loops: Option<u64>,
    /// Seconds a run should take, for the default loop count
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value_t = 20.0, value_parser = parse_duration)]
    duration: f64,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(clap::Args)]
pub struct TwoHalvesArgs {
    /// Placements to run, in this order within each repetition: default
    /// (all memory first touched on the first node, as in the seed),
    /// bind (each half on its set's node), inverse-bind (each half on the
    /// other set's node)
    #[arg(long, value_name = "P,...", value_parser = parse_placements, default_value = "default")]
    placement: PlacementList,
    /// Memory in all (each set touches half), e.g. 256M; default: the
    /// seed's 16 GiB scaled to the free memory
    #[arg(long, value_name = "SIZE", allow_negative_numbers = true, value_parser = parse_bytes)]
    bytes: Option<u64>,
    /// Threads per set; default: the CPUs of a node
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=(MAX_THREADS / 2) as i64))]
    threads: Option<u32>,
    /// Passes of each thread over its slice; default: as many as take
    /// about --duration seconds
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    iterations: Option<u64>,
    /// Seconds a run should take, for the default iteration count
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value_t = 30.0, value_parser = parse_duration)]
    duration: f64,
    #[command(flatten)]
    common: CommonArgs,
}

impl TwoHalvesArgs {
    pub fn into_common(self) -> AutonumaArgs {
        AutonumaArgs {
            placement: self.placement,
            bytes: self.bytes,
            threads: self.threads,
            loops: self.iterations,
            duration: self.duration,
            common: self.common,
        }
    }
}

#[derive(Clone, Debug)]
pub struct PlacementList(Vec<Placement>);

fn parse_placements(s: &str) -> Result<PlacementList, String> {
    let mut v = Vec::new();
    for item in s.split(',') {
        let p = Placement::from_name(item.trim())
            .ok_or_else(|| format!("{item:?} is not a placement (default, bind, inverse-bind)"))?;
        if v.contains(&p) {
            return Err(format!("placement {item} is given twice"));
        }
        v.push(p);
    }
    Ok(PlacementList(v))
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    match numalab_topology::parse_size(s) {
        Some(0) => Err("the size must be more than 0".into()),
        Some(b) => Ok(b),
        None => Err(format!("{s:?} is not a size (e.g. 512M, 3G, 65536)")),
    }
}

fn parse_duration(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86400.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds between 0 and 86400"
        )),
    }
}

fn say(msg: &str) {
    eprintln!("numalab: {msg}");
}

pub fn run(kind: Kind, a: AutonumaArgs) -> Result<ExitCode> {
    let machine = MachineInfo::probe(&Roots::host()).context("reading this machine's topology")?;
    let topo = &machine.topology;
    let nodes = cpu_nodes(topo);
    say(&format!(
        "{} on {} ({}, kernel {}, numa_balancing={})",
        kind.name(),
        machine.hostname,
        topo.summary(),
        machine.kernel,
        machine.numa_balancing.as_deref().unwrap_or("n/a")
    ));
    if nodes.len() < 2 {
        say("this machine has one NUMA node with CPUs: convergence is trivial here, nothing can migrate, and bind/inverse-bind are only pinned runs");
    }
    let ncpus = topo.cpus.len();
    let threads = match a.threads {
        Some(t) => {
            say(&format!("threads: {t} per {} (--threads)", unit(kind)));
            t
        }
        None => {
            let t = kind.default_threads(topo);
            let why = match kind {
                Kind::Numa02 => format!("one per CPU ({ncpus} CPUs)"),
                Kind::TwoHalves if nodes.len() >= 2 => "the CPUs of a node".to_string(),
                _ => format!("half of the {ncpus} CPUs"),
            };
            say(&format!("threads: {t} per {}: {why}", unit(kind)));
            t
        }
    };
    let total_threads = kind.total_threads(threads);
    if total_threads > MAX_THREADS {
        bail!("{total_threads} threads in all is more than numalab runs at once ({MAX_THREADS})");
    }
    let first_free = numalab_topology::probe::node_free_bytes(&Roots::host().sys, nodes[0].1);
    let bytes = match a.bytes {
        Some(b) => {
            sizing::check_autonuma_fits(&machine, kind, b, total_threads, first_free)
                .map_err(anyhow::Error::msg)?;
            say(&format!(
                "memory: {} {} (--bytes)",
                human_bytes(b),
                per(kind)
            ));
            b
        }
        None => {
            let c =
                sizing::autonuma_bytes(&machine, kind, first_free).map_err(anyhow::Error::msg)?;
            sizing::check_autonuma_fits(&machine, kind, c.elements, total_threads, first_free)
                .map_err(anyhow::Error::msg)?;
            say(&format!("memory: {}", c.explanation));
            if let Some(w) = &c.warning {
                say(&format!("warning: {w}"));
            }
            c.elements
        }
    };
    numalab_record::ensure_writable_dir(&a.common.results)
        .with_context(|| format!("results directory {}", a.common.results.display()))?;
    let word = if kind == Kind::TwoHalves {
        "iterations"
    } else {
        "loops"
    };
    let loops = match a.loops {
        Some(l) => {
            say(&format!("{word}: {l} per thread (--{word})"));
            l
        }
        None => {
            let bw = autonuma_run::measure_zeroing_bandwidth(
                total_threads.min(ncpus as u32),
                kind.total_bytes(bytes),
                topo.max_llc_bytes(),
                Duration::from_millis(300),
            );
            let l = autonuma_run::loops_for(kind, bytes, threads, bw, a.duration);
            let orig = kind
                .original_loops()
                .map(|o| format!("; the original did {o}"))
                .unwrap_or_default();
            say(&format!(
                "{word}: {l} per thread, about {:.0} s at the {:.1} GB/s measured zeroing memory with {} threads (longer where memory is remote){orig}; --{word} to set",
                a.duration,
                bw / 1e9,
                total_threads.min(ncpus as u32)
            ));
            l
        }
    };
    let sizing_notes = vec![
        format!("threads {threads} per {}", unit(kind)),
        format!("memory {} {}", human_bytes(bytes), per(kind)),
        format!("{word} {loops}"),
    ];
    let exe = std::env::current_exe().context("locating the numalab executable")?;
    let interrupt = Interrupt::install().context("installing the Ctrl-C handler")?;
    let placements = &a.placement.0;
    let total = a.common.runs as usize * placements.len();
    let mut done: Vec<(RunRecord, std::path::PathBuf)> = Vec::new();
    let mut step = 0;
    // Repetitions outermost, placements interleaved within each, so that
    // drift over time affects every placement alike.
    for rep in 1..=a.common.runs {
        for &placement in placements {
            step += 1;
            let msg = format!(
                "run {step}/{total} {} placement={} (repetition {rep}/{})",
                kind.name(),
                placement.name(),
                a.common.runs
            );
            let params = Params {
                kind,
                placement,
                threads,
                bytes,
                loops,
                sizing: sizing_notes.clone(),
            };
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
            let result = autonuma_run::run_once(&exe, &machine, &params, &spec);
            let (rec, path) =
                match crate::cli_run::keep_run(result, done.len(), &a.common.results, &msg)? {
                    Ok(kept) => kept,
                    Err(code) => return Ok(code),
                };
            print_run(&msg, &rec, &path);
            done.push((rec, path));
        }
    }
    // The default placement's position between the bounds, when both ran.
    let refs: Vec<&RunRecord> = done.iter().map(|d| &d.0).collect();
    let means = numalab_report::autonuma::mean_elapsed_by_placement(&refs);
    if let (true, Some(b), Some(i)) = (
        nodes.len() >= 2,
        means.get("bind"),
        means.get("inverse-bind"),
    ) {
        for (rec, _) in done.iter_mut() {
            let is_default =
                rec.params.get("placement").and_then(|v| v.as_str()) == Some("default");
            if let (true, Some(e)) = (is_default && rec.outcome.is_ok(), rec.metric("elapsed_s")) {
                if let Some(pos) = numalab_report::autonuma::position(e, *b, *i) {
                    rec.metrics.insert(
                        "position_between_bounds".into(),
                        Metric::new(pos, "fraction", numalab_record::Better::Lower),
                    );
                    write_atomic(&a.common.results, rec)
                        .context("adding the position between the bounds to a record")?;
                }
            }
        }
    }
    let refs: Vec<&RunRecord> = done.iter().map(|d| &d.0).collect();
    println!("{} summary, label {:?}:", kind.name(), a.common.label);
    print!("{}", numalab_report::autonuma::summary_table(&refs));
    if nodes.len() < 2 {
        println!("convergence is trivial on this machine: it has one NUMA node with CPUs");
    }
    crate::cli_run::fail_if_any(refs)?;
    Ok(ExitCode::SUCCESS)
}

fn unit(kind: Kind) -> &'static str {
    if kind == Kind::TwoHalves {
        "set"
    } else {
        "process"
    }
}

fn per(kind: Kind) -> &'static str {
    if kind == Kind::TwoHalves {
        "in all"
    } else {
        "per process"
    }
}

fn print_run(msg: &str, rec: &RunRecord, path: &std::path::Path) {
    use numalab_report::autonuma as rep;
    println!(
        "== {msg}: {}",
        if rec.outcome.is_ok() { "ok" } else { "FAILED" }
    );
    print!("{}", rep::run_summary(rec));
    let charts = numalab_report::show::record_charts(rec);
    if !charts.is_empty() {
        println!();
        print!("{charts}");
    }
    for w in &rec.warnings {
        println!("warning: {w}");
    }
    if let Some(reason) = &rec.outcome.reason {
        println!("failed: {reason}");
    }
    println!("record: {}", path.display());
    println!();
}

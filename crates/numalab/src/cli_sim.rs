//! `numalab sim`: run a benchmark in the NUMA machine simulator
//! (numalab-sim) and write the same run records as `numalab run`.

use crate::cli_bench::{execute, say, BenchCmd};
use anyhow::{anyhow, bail, Result};
use numalab_backends::{SimOptions, SimOptionsError};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = false)]
pub struct SimArgs {
    /// List machine presets, schedulers and balancers
    #[arg(long)]
    list: bool,
    /// Machine: a preset (see --list), `host`, or a machine file (TOML);
    /// NAME[section.key=value,...] overrides keys of a preset or file
    #[arg(
        long,
        global = true,
        help_heading = "Simulator",
        value_name = "PRESET|FILE"
    )]
    machine: Option<String>,
    /// Scheduler and its parameters, e.g. node-affine[dynamic=true,initial=false]
    #[arg(
        long,
        global = true,
        help_heading = "Simulator",
        value_name = "NAME[k=v,...]",
        default_value = SimOptions::SCHEDULER
    )]
    scheduler: String,
    /// NUMA balancer and its parameters, e.g. autonuma[scan_size_mb=512]
    #[arg(
        long,
        global = true,
        help_heading = "Simulator",
        value_name = "NAME[k=v,...]",
        default_value = SimOptions::BALANCER
    )]
    balancer: String,
    /// Seed of the simulator's random numbers (repetition r uses seed + r - 1)
    #[arg(long, global = true,
        help_heading = "Simulator", default_value_t = SimOptions::SEED, allow_negative_numbers = true,
          value_parser = parse_seed)]
    seed: u64,
    /// Length of the simulation tick in microseconds
    #[arg(long, global = true,
        help_heading = "Simulator", value_name = "US", default_value_t = SimOptions::TICK_US,
          allow_negative_numbers = true, value_parser = parse_tick_us)]
    tick_us: u64,
    /// Stop a run after this many simulated seconds (it is recorded as failed)
    #[arg(
        long,
        global = true,
        help_heading = "Simulator",
        value_name = "SECONDS",
        default_value_t = SimOptions::MAX_SIM_S,
        allow_negative_numbers = true
    )]
    max_sim_s: f64,
    /// The format of --trace's files: chrome (`<id>.trace`, trace-event
    /// JSON) or perfetto (`<id>.systrace`, ftrace text for Perfetto's CPU
    /// tracks)
    #[arg(long, global = true, help_heading = "Simulator", value_enum,
          default_value_t = crate::cli_trace::TraceFormat::Chrome)]
    trace_format: crate::cli_trace::TraceFormat,
    #[command(subcommand)]
    benchmark: Option<BenchCmd>,
}

fn parse_seed(s: &str) -> Result<u64, String> {
    s.parse()
        .map_err(|_| format!("{s:?} is not a seed: a whole number from 0 to 2^64-1"))
}

fn parse_tick_us(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(v) if SimOptions::TICK_US_RANGE.contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a tick length: a whole number of microseconds from 1 to 100000"
        )),
    }
}

/// A `--list` line within `width` columns: broken at spaces, or after
/// the commas of a parameter list, continuation lines indented under the
/// text that follows the line's name column.
fn fit(line: &str, width: usize) -> Vec<String> {
    if line.chars().count() <= width {
        return vec![line.to_string()];
    }
    // "  name         text": the text starts after the run of spaces
    // that follows the name.
    let lead = line.len() - line.trim_start().len();
    let name_end = line[lead..].find(' ').map_or(lead, |i| lead + i);
    let text_at = line[name_end..]
        .find(|c| c != ' ')
        .map_or(name_end, |i| name_end + i)
        .min(width / 2);
    let indent = " ".repeat(text_at);
    let mut out = Vec::new();
    let mut cur = line[..text_at].to_string();
    // Words end at a space or just after a comma.
    let mut word = String::new();
    let mut words = Vec::new();
    for c in line[text_at..].chars() {
        word.push(c);
        if c == ' ' || c == ',' {
            words.push(std::mem::take(&mut word));
        }
    }
    words.push(word);
    for w in words {
        if cur.chars().count() + w.trim_end().chars().count() > width && cur.len() > text_at {
            out.push(cur.trim_end().to_string());
            cur = indent.clone();
        }
        cur.push_str(&w);
    }
    out.push(cur.trim_end().to_string());
    out
}

pub fn run(args: SimArgs) -> Result<ExitCode> {
    if args.list {
        for l in numalab_sim::list_text().lines() {
            for w in fit(l, 80) {
                numalab_linux::outln!("{w}");
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(bench) = args.benchmark else {
        bail!("name a benchmark to simulate, e.g. `numalab sim --machine azusa16 --scheduler node-affine numa_test --tasks 16` (see numalab sim --help and --list)");
    };
    let Some(machine) = args.machine.as_deref() else {
        bail!("sim needs --machine PRESET|FILE (presets: numalab sim --list)");
    };
    let opts = SimOptions {
        scheduler: args.scheduler.clone(),
        balancer: args.balancer.clone(),
        seed: args.seed,
        tick_us: args.tick_us,
        max_sim_s: args.max_sim_s,
        trace_format: args.trace_format.into(),
        ..SimOptions::new(machine)
    };
    let mut backend = opts.build(bench.interval()).map_err(|e| match e {
        SimOptionsError::MaxSimS(_) => anyhow!("--max-sim-s must be a positive number of seconds"),
        e => anyhow!(e),
    })?;
    let cfg = backend.config();
    if cfg.balancer.name == "none"
        && cfg.machine.numa_balancing == Some(true)
        && cfg.machine.nnodes >= 2
    {
        say(&format!(
            "{machine} was measured with kernel.numa_balancing on; the simulated kernel balances only as --balancer says (none here; --balancer autonuma for the kernel's)"
        ));
    }
    execute(&bench, &mut backend)
}

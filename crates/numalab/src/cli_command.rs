//! `numalab run command [--name NAME] [--cwd DIR] -- PROGRAM [ARGS...]`.

use crate::cli_run::{keep_run, CommonArgs};
use anyhow::{bail, Context, Result};
use numalab_record::{Repetition, RunRecord};
use numalab_topology::{MachineInfo, Roots};
use numalab_workloads::command::{self, Params};
use numalab_workloads::run::RunSpec;
use numalab_workloads::Interrupt;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct CommandArgs {
    /// Benchmark name in the records and tables; default: the program's file name
    #[arg(long)]
    name: Option<String>,
    /// Directory to run the command in; default: the current one
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    #[command(flatten)]
    common: CommonArgs,
    /// The program and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "PROGRAM [ARGS]")]
    argv: Vec<String>,
}

pub fn run(a: CommandArgs) -> Result<ExitCode> {
    let name = match &a.name {
        Some(n) => n.clone(),
        None => command::default_name(&a.argv[0]),
    };
    command::check_name(&name).map_err(anyhow::Error::msg)?;
    if let Some(c) = &a.cwd {
        if !c.is_dir() {
            bail!("--cwd {}: not a directory", c.display());
        }
    }
    let program = &a.argv[0];
    if !program.contains('/') && which(program).is_none() {
        bail!("{program}: command not found in PATH");
    }
    let machine = MachineInfo::probe(&Roots::host()).context("reading this machine's topology")?;
    numalab_record::ensure_writable_dir(&a.common.results)
        .with_context(|| format!("results directory {}", a.common.results.display()))?;
    // The log files are written beside the records: an absolute results
    // directory keeps them there whatever --cwd says.
    let results = std::path::absolute(&a.common.results)
        .with_context(|| format!("results directory {}", a.common.results.display()))?;
    eprintln!(
        "numalab: command {name:?} on {} ({}, kernel {}, numa_balancing={}): {}",
        machine.hostname,
        machine.topology.summary(),
        machine.kernel,
        machine.numa_balancing.as_deref().unwrap_or("n/a"),
        a.argv.join(" ")
    );
    let params = Params {
        name: name.clone(),
        argv: a.argv.clone(),
        cwd: a.cwd.clone(),
    };
    let interrupt = Interrupt::install().context("installing the Ctrl-C handler")?;
    let runs = a.common.runs;
    let mut done: Vec<RunRecord> = Vec::new();
    for rep in 1..=runs {
        let msg = format!("run {rep}/{runs} {name}");
        let spec = RunSpec {
            label: &a.common.label,
            repetition: Repetition {
                index: rep,
                of: runs,
            },
            interval: a.common.interval,
            interrupt: &interrupt,
            title: msg.clone(),
        };
        let bar = progress(&done, msg.clone());
        let result = command::run_once(&machine, &params, &spec, &results, |t| {
            bar.set_position((t * 1000.0) as u64)
        });
        bar.finish_and_clear();
        let (rec, path) = match keep_run(result, done.len(), &results, &msg)? {
            Ok(kept) => kept,
            Err(code) => return Ok(code),
        };
        crate::cli_run::print_run_line(&msg, &rec, &path);
        println!("output: {}.log", results.join(&rec.id).display());
        done.push(rec);
    }
    println!();
    println!("{name} summary, label {:?}:", a.common.label);
    print!("{}", summary(&done));
    crate::cli_run::fail_if_any(&done)?;
    Ok(ExitCode::SUCCESS)
}

/// A bar in milliseconds with an ETA from the earlier runs' mean elapsed
/// time, or a spinner with the elapsed time for the first run.
fn progress(done: &[RunRecord], msg: String) -> indicatif::ProgressBar {
    let prev: Vec<f64> = done.iter().filter_map(|r| r.metric("elapsed_s")).collect();
    if prev.is_empty() {
        let pb =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        pb.set_style(
            indicatif::ProgressStyle::with_template("{msg} [{elapsed_precise}] {spinner}")
                .expect("valid template"),
        );
        pb.set_message(msg);
        return pb;
    }
    let mean = prev.iter().sum::<f64>() / prev.len() as f64;
    numalab_workloads::run::progress_bar((mean * 1000.0).max(1.0) as u64, msg)
}

/// Elapsed, user and sys as mean(stddev) over the successful runs.
fn summary(done: &[RunRecord]) -> String {
    let ok: Vec<&RunRecord> = done.iter().filter(|r| r.outcome.is_ok()).collect();
    let cell = |k: &str| -> String {
        let v: Vec<f64> = ok.iter().filter_map(|r| r.metric(k)).collect();
        match numalab_stats::Summary::of(&v) {
            Ok(s) => numalab_report::num::mean_sd(s.mean, s.stddev),
            Err(_) => "-".into(),
        }
    };
    format!(
        "{:>6} {:>6} {:>16} {:>16} {:>16}\n{:>6} {:>6} {:>16} {:>16} {:>16}\n",
        "runs",
        "ok",
        "elapsed(s)",
        "user(s)",
        "sys(s)",
        done.len(),
        ok.len(),
        cell("elapsed_s"),
        cell("user_s"),
        cell("sys_s")
    )
}

/// `program` found in PATH (as the command will look it up), if at all.
fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

//! The `numalab` command: argument parsing and glue only. Each subcommand
//! hands its work to the crate that owns it.

#![forbid(unsafe_code)]

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cli_bench;
mod cli_calibrate;
mod cli_campaign;
mod cli_compare;
mod cli_export;
mod cli_install;
mod cli_load;
mod cli_report;
mod cli_reproduce;
mod cli_run;
mod cli_show;
mod cli_sim;
mod cli_topology;
mod cli_trace;
mod cli_validate;
mod cli_vm;

#[derive(Parser)]
#[command(
    name = "numalab",
    version = numalab_record::VERSION,
    about = "Measure, compare and explain NUMA scheduling and memory placement on Linux",
    long_about = None,
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Print the machine's NUMA topology (nodes, CPUs, LLCs, distances)
    Topology(cli_topology::TopologyArgs),
    /// Run a benchmark on this machine and record every run
    Run(cli_run::RunArgs),
    /// Run a benchmark on a simulated NUMA machine under a chosen scheduler and balancer
    Sim(cli_sim::SimArgs),
    /// Run a numalab command in a QEMU guest with a chosen NUMA topology
    Vm(cli_vm::VmArgs),
    /// Measure this machine and write it as a simulator machine file
    Calibrate(cli_calibrate::CalibrateArgs),
    /// Run the same pinned work on this machine and on the simulator with
    /// its calibrated machine file, and print how far apart they land
    Validate(cli_validate::ValidateArgs),
    /// Run a plan of benchmarks x configurations x repetitions: resumable,
    /// here, in guests, in the simulator, or as Slurm job arrays
    Campaign(cli_campaign::CampaignArgs),
    /// The seeds' published findings beside the simulator's, with a verdict each
    Reproduce(cli_reproduce::ReproduceArgs),
    /// Print the JSON Schema of run records
    Schema,
    /// Compare configurations (labels, hosts, backends) from their run records
    Compare(cli_compare::CompareArgs),
    /// Print one run, or a directory of runs, as seed-style text tables and charts
    Show(cli_show::ShowArgs),
    /// Write a self-contained HTML report with tables and SVG charts
    Report(cli_report::ReportArgs),
    /// Every run's metrics as CSV or Go's benchmark format (benchstat)
    Export(cli_export::ExportArgs),
    /// Export a traced run's schedule (Perfetto / Chrome trace JSON)
    Trace(cli_trace::TraceArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell)
    Completions(cli_install::CompletionsArgs),
    /// Print or install the man pages
    Man(cli_install::ManArgs),
    /// PID 1 of a `numalab vm` guest (internal)
    #[command(hide = true, name = "guest-init")]
    GuestInit,
    /// Small workloads for the guest testbed's own tests (internal)
    #[command(hide = true, name = "guest-probe")]
    GuestProbe(cli_vm::ProbeArgs),
}

/// `numalab __scx-load SPEC`: the loader of numalab's sched_ext
/// schedulers (numalab-scx), where this build has them.
fn scx_load(args: &[String]) -> i32 {
    let [spec] = args else {
        numalab_linux::errln!("numalab __scx-load: give one scheduler, NAME[k=v,...]");
        return 2;
    };
    #[cfg(feature = "scx")]
    {
        numalab_scx::loader::main(spec)
    }
    #[cfg(not(feature = "scx"))]
    {
        numalab_linux::errln!(
            "numalab __scx-load: {}",
            numalab_scx::not_built(&format!("--scx {spec}"))
        );
        2
    }
}

fn main() -> ExitCode {
    // numalab re-executes itself for benchmark tasks (`__task ...`).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(numalab_linux::knobs::GUARD_SUBCOMMAND) {
        return ExitCode::from(numalab_linux::knobs::guard_main(&args[1..]) as u8);
    }
    if args.first().map(String::as_str) == Some("__guest-op") {
        return ExitCode::from(cli_vm::guest_op(&args[1..]) as u8);
    }
    if args.first().map(String::as_str) == Some("__scx-load") {
        return ExitCode::from(scx_load(&args[1..]) as u8);
    }
    if args.first().is_some_and(|a| a.starts_with("__")) {
        return ExitCode::from(numalab_host::internal_main(&args) as u8);
    }
    // Programs numalab starts on the user's behalf (hooks) run under its
    // supervisor, which it starts by re-executing itself.
    if let Ok(exe) = std::env::current_exe() {
        numalab_linux::supervise::enable(exe);
    }
    let cli = match command()
        .try_get_matches()
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    let result = match cli.command {
        Command::Topology(args) => cli_topology::run(args),
        Command::Run(args) => cli_run::run(args),
        Command::Sim(args) => cli_sim::run(args),
        Command::Vm(args) => cli_vm::run(args),
        Command::Calibrate(args) => cli_calibrate::run(args),
        Command::Validate(args) => cli_validate::run(args),
        Command::Campaign(args) => cli_campaign::run(args),
        Command::Reproduce(args) => cli_reproduce::run(args),
        Command::Schema => schema(),
        Command::Compare(args) => cli_compare::run(args),
        Command::Show(args) => cli_show::run(args),
        Command::Report(args) => cli_report::run(args),
        Command::Export(args) => cli_export::run(args),
        Command::Trace(args) => cli_trace::run(args),
        Command::Completions(args) => cli_install::completions(args),
        Command::Man(args) => cli_install::man(args),
        Command::GuestInit => cli_vm::guest_init(),
        Command::GuestProbe(args) => cli_vm::guest_probe(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            numalab_linux::errln!("numalab: error: {}", one_line(&e));
            ExitCode::from(1)
        }
    }
}

/// The command line as parsed, documented and completed: the derived
/// [`Cli`], with the machine settings the simulator does not have
/// (`--sysctl`, `--governor`, `--sysfs`; it takes `--thp` only) left out
/// of `numalab sim BENCH --help`. They still parse, to be refused in one
/// line naming what the simulator takes.
pub(crate) fn command() -> clap::Command {
    use clap::CommandFactory;
    // Help fits an 80-column terminal and an email, whatever the width
    // of the terminal it is printed in (clap would use up to 100 columns
    // where it cannot tell).
    Cli::command().term_width(80).mut_subcommand("sim", |sim| {
        let names: Vec<String> = sim
            .get_subcommands()
            .map(|b| b.get_name().to_string())
            .collect();
        names.iter().fold(sim, |sim, name| {
            sim.mut_subcommand(name, |b| {
                ["sysctl", "governor", "sysfs"]
                    .iter()
                    .fold(b, |b, arg| b.mut_arg(*arg, |a| a.hide(true)))
            })
        })
    })
}

/// Help and version go to stdout as clap renders them; usage errors are
/// reduced to one line naming what is wrong.
pub(crate) fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        _ => {
            let text = e.render().to_string();
            let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
            let mut first = lines
                .next()
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ")
                .to_string();
            // "the following required arguments were not provided:" is
            // followed by the arguments, one per indented line.
            if first.ends_with(':') {
                let more: Vec<&str> = lines
                    .take_while(|l| l.starts_with(' ') && !l.trim().is_empty())
                    .map(str::trim)
                    .collect();
                first = format!("{first} {}", more.join(", "));
            }
            numalab_linux::errln!("numalab: error: {first} (see --help)");
            ExitCode::from(2)
        }
    }
}

/// An error chain on one line: `outer: cause: root cause`.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ").replace('\n', " ")
}

/// Write to stdout; a closed pipe (`numalab compare ... | head`) ends
/// quietly instead of panicking.
pub fn print_stdout(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(e).context("writing to standard output"),
    }
}

fn schema() -> Result<ExitCode> {
    let text = serde_json::to_string_pretty(&numalab_record::json_schema())
        .context("serialising the schema")?;
    numalab_linux::outln!("{text}");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    /// Every line of help numalab can print fits 80 columns, whatever the
    /// terminal: `-h` and `--help` of every command in clap's tree
    /// (hidden ones aside), the `help` subcommands included, with the
    /// names of their parents as `numalab run numa01 --help` shows them.
    #[test]
    fn every_help_in_the_command_tree_fits_80_columns() {
        fn walk(cmd: &mut clap::Command, path: &str, seen: &mut Vec<String>) {
            for (what, text) in [
                ("-h", cmd.render_help().to_string()),
                ("--help", cmd.render_long_help().to_string()),
            ] {
                for l in text.lines() {
                    let n = l.chars().count();
                    assert!(n <= 80, "{path} {what}: {n} columns: {l}");
                }
            }
            seen.push(path.to_string());
            for sub in cmd.get_subcommands_mut() {
                if sub.is_hide_set() {
                    continue;
                }
                let p = format!("{path} {}", sub.get_name());
                walk(sub, &p, seen);
            }
        }
        let mut cmd = super::command();
        cmd.build();
        let mut seen = Vec::new();
        walk(&mut cmd, "numalab", &mut seen);
        for want in [
            "numalab help",
            "numalab run numa01",
            "numalab sim numa_test",
            "numalab campaign run",
            "numalab campaign help",
            "numalab trace export",
            "numalab vm",
        ] {
            assert!(
                seen.iter().any(|s| s == want),
                "{want} not walked: {seen:?}"
            );
        }
    }
}

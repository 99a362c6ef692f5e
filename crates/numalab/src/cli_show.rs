//! `numalab show RECORD|DIR`: seed-style text tables and charts.

use anyhow::Result;
use numalab_report::show;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ShowArgs {
    /// A record file, or a directory of records (searched recursively)
    #[arg(value_name = "RECORD|DIR", required = true, num_args = 1..)]
    paths: Vec<PathBuf>,
    /// With several runs, also print every run in full
    #[arg(long)]
    each: bool,
    /// The exact scheduling facts of traced runs (run with --trace): time
    /// per node, migrations, wakeup placements, CPUs chosen for new tasks
    #[arg(long)]
    sched: bool,
    #[command(flatten)]
    select: crate::cli_load::SelectArgs,
}

pub fn run(a: ShowArgs) -> Result<ExitCode> {
    let ds = crate::cli_load::load(&a.paths, &a.select, true)?;
    let mut out = String::new();
    if a.sched {
        for (i, run) in ds.runs.iter().enumerate() {
            if i > 0 {
                out.push_str(&"=".repeat(78));
                out.push('\n');
            }
            out.push_str(&numalab_report::sched::text(&run.record));
        }
        crate::print_stdout(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if ds.runs.len() == 1 {
        let run = &ds.runs[0];
        out.push_str(&show::record(&run.record, Some(&run.path)));
    } else {
        out.push_str(&show::dataset(&ds));
        if a.each {
            for run in &ds.runs {
                out.push_str(&"=".repeat(78));
                out.push('\n');
                out.push_str(&show::record(&run.record, Some(&run.path)));
            }
        }
    }
    crate::print_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

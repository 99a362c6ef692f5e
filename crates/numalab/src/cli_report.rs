//! `numalab report PATH... -o report.html`.

use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Record files or directories of records
    #[arg(value_name = "PATH", required = true, num_args = 1..)]
    paths: Vec<PathBuf>,
    /// The HTML file to write
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
}

pub fn run(a: ReportArgs) -> Result<ExitCode> {
    let _ds = crate::cli_load::load(&a.paths)?;
    let _ = a.output;
    Ok(ExitCode::SUCCESS)
}

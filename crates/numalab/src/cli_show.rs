//! `numalab show RECORD|DIR`.

use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ShowArgs {
    /// A record file, or a directory of records
    #[arg(value_name = "RECORD|DIR", required = true, num_args = 1..)]
    paths: Vec<PathBuf>,
}

pub fn run(a: ShowArgs) -> Result<ExitCode> {
    let _ds = crate::cli_load::load(&a.paths)?;
    Ok(ExitCode::SUCCESS)
}

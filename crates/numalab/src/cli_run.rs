//! `numalab run BENCHMARK ...`: run a benchmark on this machine (the host
//! backend), or inside a `numalab vm` guest, where this same command runs.

use crate::cli_bench::{execute, BenchCmd};
use anyhow::{Context, Result};
use numalab_host::HostBackend;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(subcommand)]
    pub benchmark: BenchCmd,
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("locating the numalab executable")?;
    let mut backend = HostBackend::new(exe).context("reading this machine's topology")?;
    execute(&args.benchmark, &mut backend)
}

//! `numalab export PATH... [--format csv|benchstat] [-o FILE]`: per-run
//! values for other tools (numalab-report's `export`).

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ExportArgs {
    /// Records, or directories of them
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// csv: a row per run and metric; benchstat: Go's benchmark format
    /// (`benchstat -col label FILE` compares the labels)
    #[arg(long, value_enum, default_value_t = Format::Csv)]
    format: Format,
    /// Write here instead of standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Csv,
    Benchstat,
}

pub fn run(a: ExportArgs) -> Result<ExitCode> {
    let loaded = numalab_record::store::load_paths(&a.paths);
    if let Some(e) = loaded.errors.first() {
        bail!(
            "{e}{}",
            match loaded.errors.len() {
                1 => String::new(),
                n => format!(" (and {} more unreadable records)", n - 1),
            }
        );
    }
    if loaded.records.is_empty() {
        bail!(
            "no records in {}",
            a.paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let records: Vec<_> = loaded.records.into_iter().map(|(_, r)| r).collect();
    let text = match a.format {
        Format::Csv => numalab_report::export::to_csv(&records).context("writing CSV")?,
        Format::Benchstat => numalab_report::export::to_benchstat(&records),
    };
    match &a.output {
        Some(out) => numalab_record::store::write_file_atomic(out, text.as_bytes())
            .with_context(|| format!("writing {}", out.display()))?,
        None => crate::print_stdout(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

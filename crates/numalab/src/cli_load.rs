//! Loading records for `compare`, `show` and `report`: a bad file is a
//! one-line warning naming it, and every other record is still used.
//! `--filter` selects records and `--group-by` says what makes a
//! configuration, the same for all three commands.

use anyhow::{bail, Result};
use numalab_report::dataset::{parse_group_key, DatasetOptions, Filter, Key};
use numalab_report::Dataset;
use std::path::PathBuf;

/// `--group-by` and `--filter`, shared by `compare`, `show` and `report`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SelectArgs {
    /// What makes a configuration: keys from label, kernel, host, backend,
    /// numa_balancing, thp, scheduler, or any parameter name (default:
    /// label, host and backend). A parameter grouped by is no longer part
    /// of the case
    /// (--group-by placement compares placements within one case)
    #[arg(
        long = "group-by",
        value_name = "KEY[,KEY...]",
        value_delimiter = ',',
        value_parser = parse_group_key
    )]
    pub group_by: Vec<Key>,
    /// Keep only runs whose KEY (a --group-by key, or benchmark) is VALUE;
    /// repeat it: for one key any of the values, for several keys all
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_filter)]
    pub filter: Vec<Filter>,
}

fn parse_filter(s: &str) -> Result<Filter, numalab_report::dataset::FilterError> {
    s.parse()
}

/// Load the records under `paths`; `samples`: read their time series
/// (`show`, `report`), else skip them (`compare` reads metrics only).
pub fn load(paths: &[PathBuf], select: &SelectArgs, samples: bool) -> Result<Dataset> {
    for p in paths {
        if !p.exists() {
            bail!("{}: no such file or directory", p.display());
        }
    }
    let report = numalab_record::load_paths_with(
        paths,
        numalab_record::LoadOptions {
            skip_samples: !samples,
        },
    );
    for e in &report.errors {
        numalab_linux::errln!(
            "numalab: warning: {}",
            e.to_string().replace(['\n', '\r'], " ")
        );
    }
    if report.records.is_empty() {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        bail!(
            "no run records in {} (records are the *.json files `numalab run` writes)",
            names.join(", ")
        );
    }
    let opts = DatasetOptions {
        group_by: select.group_by.clone(),
        filters: select.filter.clone(),
    };
    let ds = Dataset::with_options(report.records, &opts)?;
    for w in &ds.warnings {
        numalab_linux::errln!("numalab: warning: {w}");
    }
    Ok(ds)
}

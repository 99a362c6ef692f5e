//! Loading records for `compare`, `show` and `report`: a bad file is a
//! one-line warning naming it, and every other record is still used.

use anyhow::{bail, Result};
use numalab_report::Dataset;
use std::path::PathBuf;

pub fn load(paths: &[PathBuf]) -> Result<Dataset> {
    for p in paths {
        if !p.exists() {
            bail!("{}: no such file or directory", p.display());
        }
    }
    let report = numalab_record::load_paths(paths);
    for e in &report.errors {
        eprintln!(
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
    let ds = Dataset::new(report.records);
    for w in &ds.warnings {
        eprintln!("numalab: warning: {w}");
    }
    Ok(ds)
}

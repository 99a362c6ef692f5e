//! `numalab report PATH... -o report.html`: one self-contained HTML file;
//! without `-o`, the text report (`numalab show`'s view of a set of runs)
//! on stdout.

use anyhow::{Context, Result};
use numalab_report::{compare, html, CompareOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Record files or directories of records (searched recursively)
    #[arg(value_name = "PATH", required = true, num_args = 1..)]
    paths: Vec<PathBuf>,
    /// The HTML file to write; without it, the text report on stdout
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Configuration to compare against (as for `numalab compare`)
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    #[command(flatten)]
    select: crate::cli_load::SelectArgs,
    /// Metrics to compare (default: all)
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    metric: Vec<String>,
}

pub fn run(a: ReportArgs) -> Result<ExitCode> {
    let ds = crate::cli_load::load(&a.paths, &a.select, true)?;
    let opts = CompareOptions {
        baseline: a.baseline.clone(),
        metrics: a.metric.clone(),
        ..CompareOptions::default()
    };
    let cmp = compare(&ds, &opts)?;
    let Some(output) = a.output.as_ref() else {
        crate::print_stdout(&numalab_report::show::dataset_with(&ds, Some(&cmp)))?;
        return Ok(ExitCode::SUCCESS);
    };
    let inputs: Vec<String> = a.paths.iter().map(|p| p.display().to_string()).collect();
    // More runs than the report draws: every run's values in a CSV beside
    // it (`r.html` -> `r.runs.csv`), written before the report that links
    // it, atomically.
    let runs_file = if html::summarises(&ds) {
        let name = runs_file_name(output);
        let path = output.with_file_name(&name);
        let records: Vec<&numalab_record::RunRecord> = ds.runs.iter().map(|r| &r.record).collect();
        let csv = numalab_report::export::to_csv_of(&records)
            .with_context(|| format!("writing {}", path.display()))?;
        numalab_record::store::write_file_atomic(&path, csv.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        Some(name)
    } else {
        None
    };
    let text = html::report_with(&ds, &cmp, &inputs, &html::Options { runs_file });
    // Written next to its destination and renamed, so a reader never sees
    // half a report.
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".numalab-report")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .with_context(|| format!("writing {}", output.display()))?;
    tmp.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", output.display()))?;
    // tempfile creates 0600; a report is for sharing.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644));
    }
    tmp.persist(output)
        .map_err(|e| e.error)
        .with_context(|| format!("writing {}", output.display()))?;
    numalab_linux::errln!(
        "numalab: wrote {} ({} runs, {} KiB)",
        output.display(),
        ds.runs.len(),
        text.len().div_ceil(1024)
    );
    Ok(ExitCode::SUCCESS)
}

/// The side file of every run's values beside report `output`: its name
/// without the extension, then `.runs.csv`.
fn runs_file_name(output: &std::path::Path) -> String {
    let stem = output
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".to_string());
    format!("{stem}.runs.csv")
}

//! `numalab compare PATH...`: compare configurations from their records.

use anyhow::Result;
use numalab_report::compare_render::{self, Layout};
use numalab_report::{compare, CompareOptions};
use numalab_stats::TestKind;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status of `--fail-on-regression` when a metric got worse.
pub const EXIT_REGRESSION: u8 = 3;

#[derive(clap::Args)]
pub struct CompareArgs {
    /// Record files or directories of records (searched recursively)
    #[arg(value_name = "PATH", required = true, num_args = 1..)]
    paths: Vec<PathBuf>,
    /// Configuration to compare against: a label, or LABEL@HOST to pin
    /// one host; with --group-by a configuration as tables name it, e.g.
    /// 6.1.0/real (default: the first label, or configuration, in order)
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    #[command(flatten)]
    select: crate::cli_load::SelectArgs,
    /// Metrics to compare (repeat or separate with commas; default: all)
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    metric: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The detailed layout: per metric, n, mean(sd), the median and the
    /// ratio with intervals, change, p, verdict and footnotes (default: one
    /// line per metric)
    #[arg(long, conflicts_with = "normalized")]
    detailed: bool,
    /// Seed 003's layout: each configuration's mean divided by the
    /// baseline's, with a "Better" (L/H) column
    #[arg(long)]
    normalized: bool,
    /// Also compare metrics that are zero in every run (counters that
    /// never moved), which are left out by default
    #[arg(long)]
    all_metrics: bool,
    /// Significance test: Mann-Whitney U (rank test, robust) or Welch's t
    #[arg(long, value_enum, default_value_t = TestArg::Mwu)]
    test: TestArg,
    /// Significance level; intervals are at 1 - alpha
    #[arg(long, default_value_t = 0.05, allow_hyphen_values = true, value_parser = parse_alpha)]
    alpha: f64,
    /// Changes of the means up to this many percent are noise, even when
    /// significant
    #[arg(long, value_name = "PERCENT", default_value_t = 1.0, allow_hyphen_values = true, value_parser = parse_percent)]
    noise: f64,
    /// Exit with status 3 when any metric is significantly worse than the
    /// baseline (beyond the noise threshold), for CI
    #[arg(long)]
    fail_on_regression: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Text,
    Markdown,
    Asciidoc,
    Csv,
    Json,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum TestArg {
    /// Mann-Whitney U
    Mwu,
    /// Welch's t-test
    Welch,
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if !(v > 0.0 && v < 1.0) {
        return Err(format!("{s:?}: alpha must be between 0 and 1, e.g. 0.05"));
    }
    Ok(v)
}

fn parse_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage"))?;
    if !(v.is_finite() && (0.0..100.0).contains(&v)) {
        return Err(format!(
            "{s:?}: the noise threshold is a percentage from 0 to 100"
        ));
    }
    Ok(v / 100.0)
}

pub fn run(a: CompareArgs) -> Result<ExitCode> {
    let ds = crate::cli_load::load(&a.paths, &a.select, false)?;
    let opts = CompareOptions {
        baseline: a.baseline.clone(),
        metrics: a.metric.clone(),
        test: match a.test {
            TestArg::Mwu => TestKind::MannWhitneyU,
            TestArg::Welch => TestKind::WelchT,
        },
        alpha: a.alpha,
        noise_threshold: a.noise,
        hide_zero_metrics: !a.all_metrics,
        ..CompareOptions::default()
    };
    let report = compare(&ds, &opts)?;
    let layout = if a.normalized {
        Layout::Normalized
    } else if a.detailed {
        Layout::Full
    } else {
        Layout::Compact
    };
    let out = match a.format {
        Format::Text => compare_render::to_text(&report, layout),
        Format::Markdown => compare_render::to_markdown(&report, layout),
        Format::Asciidoc => compare_render::to_asciidoc(&report, layout),
        Format::Csv => compare_render::to_csv(&report)?,
        Format::Json => compare_render::to_json(&report),
    };
    crate::print_stdout(&out)?;
    // The records are not needed again and the process is ending: freeing
    // 10,000 of them one by one took a tenth of `compare`'s time.
    std::mem::forget(ds);
    if a.fail_on_regression {
        let regressions = report.regressions();
        for r in &regressions {
            numalab_linux::errln!("numalab: regression: {r}");
        }
        let too_few = report.too_few();
        if too_few > 0 {
            numalab_linux::errln!(
                "numalab: note: {too_few} comparison(s) had too few runs to be tested; they cannot fail this check"
            );
        }
        if !regressions.is_empty() {
            return Ok(ExitCode::from(EXIT_REGRESSION));
        }
    }
    Ok(ExitCode::SUCCESS)
}

//! The comparison: per metric, per case and configuration, the summary of
//! the runs, and for each candidate its ratio to the baseline, the test and
//! the verdict; with footnotes for everything a careful reader would want
//! to know. Pure computation on a [`Dataset`]; rendering is in
//! [`crate::compare_render`].
//!
//! # Pairing rule (and cross-host comparisons)
//!
//! Every group (the runs of one configuration in one case) is compared
//! with a group of the baseline label in the **same case** (same benchmark
//! and parameters):
//!
//! 1. a group of the baseline label on the same host with the same backend,
//! 2. else one on the same host,
//! 3. else, when the baseline label was run on exactly one host (and
//!    backend) in that case, that one: the host *is* the configuration
//!    (e.g. labels named after machines), and a note says the comparison
//!    crosses hosts;
//! 4. else none (the baseline is ambiguous; a note says how to pick one).
//!
//! `--baseline LABEL@HOST` pins the baseline to one host, so that the same
//! label run on two machines can be compared machine against machine.
//!
//! With `--group-by` ([`crate::dataset::DatasetOptions::group_by`]) a
//! configuration is whatever the keys make it, the baseline is one
//! configuration named as tables name it (`6.1.0/real`), and every group
//! is compared with the baseline's group in the same case.
//!
//! # Geometric means
//!
//! The `geomean` row of every configuration is taken over the same cases:
//! those in which every configuration of the table has a value (and every
//! candidate a ratio to its baseline), so that no configuration's geomean
//! is flattered or hurt by cases the others lack. A footnote says which
//! cases were left out and why.

use crate::autonuma::{bounds_positions, is_derived_metric, BoundsPosition};
use crate::dataset::{Dataset, Group, Key};
use numalab_record::{Better, RunRecord};
use numalab_stats::{
    geometric_mean, mann_whitney_u, min_achievable_p, min_samples_for_test, outliers, ratio_ci,
    verdict, welch_t, Comparison, Direction, Summary, TestKind, Verdict,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Version of the JSON written by `numalab compare --format json`.
pub const COMPARE_SCHEMA_VERSION: u32 = 1;

/// Runs needed before any is called an outlier: with fewer, the median
/// and the MAD the rule measures against are too unstable (of 3 runs,
/// the one farther from the middle one is flagged by chance alone).
pub const MIN_RUNS_FOR_OUTLIERS: usize = 5;

/// Coefficient of variation above which a group gets a note.
pub const DEFAULT_HIGH_CV: f64 = 0.10;

#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// `LABEL`, `LABEL@HOST` or a configuration's name; with `--group-by`
    /// a configuration's name. `None`: the first label in sorted order
    /// (with `--group-by`, the first configuration).
    pub baseline: Option<String>,
    /// Metrics to compare, in this order; empty: all, sorted by name.
    pub metrics: Vec<String>,
    pub test: TestKind,
    /// Significance level; intervals are at `1 - alpha`.
    pub alpha: f64,
    /// Relative change that counts as noise (0.01 = 1%).
    pub noise_threshold: f64,
    /// Coefficient of variation above which a group is flagged.
    pub high_cv: f64,
    /// Leave out metrics that are 0 in every successful run (counters that
    /// never moved), unless named in `metrics`; they are listed in
    /// [`CompareReport::hidden_metrics`].
    pub hide_zero_metrics: bool,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            baseline: None,
            metrics: Vec::new(),
            test: TestKind::MannWhitneyU,
            alpha: 0.05,
            noise_threshold: 0.01,
            high_cv: DEFAULT_HIGH_CV,
            hide_zero_metrics: false,
        }
    }
}

#[derive(Debug)]
pub enum CompareError {
    UnknownBaseline {
        given: String,
        labels: Vec<String>,
    },
    /// With `--group-by`: no configuration of that name.
    UnknownConfiguration {
        given: String,
        configurations: Vec<String>,
    },
    UnknownMetric {
        given: String,
        metrics: Vec<String>,
    },
    NoSuccessfulRuns {
        failed: usize,
    },
    InvalidOption(String),
}

impl std::fmt::Display for CompareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompareError::UnknownBaseline { given, labels } => write!(
                f,
                "no runs labelled {given:?} to use as the baseline; the labels present are: {}",
                labels.join(", ")
            ),
            CompareError::UnknownConfiguration {
                given,
                configurations,
            } => write!(
                f,
                "no configuration {given:?} to use as the baseline; the configurations present are: {}",
                configurations.join(", ")
            ),
            CompareError::UnknownMetric { given, metrics } => write!(
                f,
                "no metric {given:?} in these runs; the metrics present are: {}",
                metrics.join(", ")
            ),
            CompareError::NoSuccessfulRuns { failed } => write!(
                f,
                "none of the {failed} run(s) succeeded; nothing to compare (numalab show lists why they failed)"
            ),
            CompareError::InvalidOption(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for CompareError {}

#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    pub test: TestKind,
    pub alpha: f64,
    pub confidence: f64,
    pub noise_threshold: f64,
    pub high_cv: f64,
}

/// The machine facts compared between configurations.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Hash)]
pub struct MachineSummary {
    pub host: String,
    pub kernel: String,
    pub cpu_model: Option<String>,
    pub thp_enabled: Option<String>,
    pub numa_balancing: Option<String>,
    pub nodes: usize,
    /// Compared within a configuration (a note when its runs differ).
    pub kernel_cmdline: Option<String>,
    pub zone_reclaim_mode: Option<String>,
    pub sched_tunables: Option<String>,
    pub governor: Option<String>,
    pub cpufreq: Option<String>,
    pub cpus_allowed: Option<String>,
}

impl MachineSummary {
    pub fn of(r: &RunRecord) -> MachineSummary {
        let m = &r.machine;
        MachineSummary {
            host: m.hostname.clone(),
            kernel: m.kernel.clone(),
            cpu_model: m.cpu_model.clone(),
            thp_enabled: m.thp_enabled.clone(),
            numa_balancing: m.numa_balancing.clone(),
            nodes: m.topology.nodes.len(),
            kernel_cmdline: m.tuning.kernel_cmdline.clone(),
            zone_reclaim_mode: m.tuning.zone_reclaim_mode.clone(),
            sched_tunables: (!m.tuning.sched_tunables.is_empty()).then(|| {
                m.tuning
                    .sched_tunables
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            }),
            governor: m.governor.clone(),
            cpufreq: m
                .tuning
                .cpufreq_driver
                .as_ref()
                .map(|d| format!("{d}, boost {}", m.tuning.boost.as_deref().unwrap_or("n/a"))),
            cpus_allowed: m.tuning.cpus_allowed.clone(),
        }
    }

    /// `(field, value)` pairs, for difference checks and display.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let o = |v: &Option<String>| v.clone().unwrap_or_else(|| "n/a".into());
        vec![
            ("host", self.host.clone()),
            ("kernel", self.kernel.clone()),
            ("CPU model", o(&self.cpu_model)),
            ("THP", o(&self.thp_enabled)),
            ("numa_balancing", o(&self.numa_balancing)),
            ("nodes", self.nodes.to_string()),
            ("kernel command line", o(&self.kernel_cmdline)),
            ("vm.zone_reclaim_mode", o(&self.zone_reclaim_mode)),
            ("scheduler tunables", o(&self.sched_tunables)),
            ("cpufreq governor", o(&self.governor)),
            ("cpufreq driver and boost", o(&self.cpufreq)),
            ("allowed CPUs", o(&self.cpus_allowed)),
        ]
    }

    /// One line: `host tux, kernel 6.1.0, Xeon ..., THP madvise, ...`.
    pub fn describe(&self) -> String {
        let f = self.fields();
        format!(
            "host {}, kernel {}, {}, THP {}, numa_balancing {}, {} node{}",
            f[0].1,
            f[1].1,
            f[2].1,
            f[3].1,
            f[4].1,
            self.nodes,
            if self.nodes == 1 { "" } else { "s" }
        )
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ConfigSummary {
    pub name: String,
    /// The values of the `--group-by` keys (empty for the default).
    pub values: Vec<String>,
    /// Its runs' label (with `--group-by`, their labels comma-separated).
    pub label: String,
    pub host: String,
    pub backend: String,
    pub ok_runs: usize,
    pub failed_runs: usize,
    /// Machine facts of its first run (a note says when its runs differ).
    pub machine: Option<MachineSummary>,
    /// Whether it serves as a baseline in some case.
    pub is_baseline: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Baseline,
    Candidate,
    /// No group of the baseline label to compare with in this case.
    NoBaseline,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupRow {
    /// Index into [`CompareReport::cases`].
    pub case: usize,
    /// Index into [`CompareReport::configurations`].
    pub config: usize,
    pub role: Role,
    /// The configuration this row is compared with.
    pub baseline_config: Option<usize>,
    pub n: usize,
    /// The metric of each successful run, in repetition order.
    pub values: Vec<f64>,
    /// Record ids of those runs.
    pub run_ids: Vec<String>,
    /// Repetition numbers of those runs.
    pub repetitions: Vec<u32>,
    pub summary: Option<Summary>,
    /// Indices into `values` of runs flagged as outliers (kept).
    pub outliers: Vec<usize>,
    pub comparison: Option<Comparison>,
    /// Footnote numbers (see [`CompareReport::notes`]).
    pub notes: Vec<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GeomeanRow {
    pub config: usize,
    /// Geometric mean of the means over the cases of this table.
    pub mean: Option<f64>,
    /// Geometric mean of the ratios to the baseline.
    pub ratio: Option<f64>,
    /// Cases that entered `mean` and `ratio`: those every configuration
    /// of the table has a value in.
    pub cases: usize,
    /// Cases of the table left out of the geometric means.
    pub left_out: usize,
    pub notes: Vec<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricTable {
    pub metric: String,
    pub unit: String,
    pub better: Better,
    pub rows: Vec<GroupRow>,
    pub geomean: Vec<GeomeanRow>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    TooFewRuns,
    HighVariation,
    Outlier,
    MachineDiffers,
    FailedRuns,
    /// The runs' CPU time is an order of magnitude apart
    /// ([`crate::work`]).
    WorkDiffers,
    RunWarnings,
    Baseline,
    Interval,
    Metric,
}

#[derive(Debug, Clone, Serialize)]
pub struct Note {
    pub id: usize,
    pub kind: NoteKind,
    pub text: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    pub schema_version: u32,
    pub numalab_version: String,
    pub settings: Settings,
    /// The baseline as given or chosen (`LABEL`, `LABEL@HOST` or a
    /// configuration's name).
    pub baseline: String,
    /// The `--group-by` keys; empty: label, host and backend.
    pub group_by: Vec<String>,
    /// The `--filter`s the records were selected with (`KEY=VALUE`).
    pub filters: Vec<String>,
    pub configurations: Vec<ConfigSummary>,
    pub cases: Vec<crate::dataset::Case>,
    pub tables: Vec<MetricTable>,
    /// Metrics left out because they are 0 in every successful run
    /// ([`CompareOptions::hide_zero_metrics`]).
    pub hidden_metrics: Vec<String>,
    /// `position_between_bounds`, derived from the runs' elapsed times.
    pub positions: Vec<BoundsPosition>,
    pub notes: Vec<Note>,
    pub ok_runs: usize,
    pub failed_runs: usize,
}

/// A significantly worse metric, for `--fail-on-regression`.
#[derive(Debug, Clone)]
pub struct Regression {
    pub metric: String,
    pub case: String,
    pub config: String,
    pub baseline: String,
    pub relative_change: Option<f64>,
    pub p_value: Option<f64>,
}

impl std::fmt::Display for Regression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} in {} is worse than {}",
            self.metric, self.config, self.case, self.baseline
        )?;
        if let Some(r) = self.relative_change {
            write!(f, " ({}", crate::num::percent_change(r))?;
            if let Some(p) = self.p_value {
                write!(f, ", p={}", crate::num::p_value(p))?;
            }
            write!(f, ")")?;
        }
        Ok(())
    }
}

impl CompareReport {
    /// Every candidate whose verdict is `Worse`.
    pub fn regressions(&self) -> Vec<Regression> {
        let mut out = Vec::new();
        for t in &self.tables {
            for r in &t.rows {
                if let Some(c) = &r.comparison {
                    if c.verdict == Verdict::Worse {
                        out.push(Regression {
                            metric: t.metric.clone(),
                            case: self.cases[r.case].name.clone(),
                            config: self.configurations[r.config].name.clone(),
                            baseline: r
                                .baseline_config
                                .map(|b| self.configurations[b].name.clone())
                                .unwrap_or_default(),
                            relative_change: c.relative_change,
                            p_value: c.p_value,
                        });
                    }
                }
            }
        }
        out
    }

    pub fn note(&self, id: usize) -> Option<&Note> {
        self.notes.get(id.wrapping_sub(1))
    }

    /// Comparisons that could not be tested for want of runs.
    pub fn too_few(&self) -> usize {
        self.tables
            .iter()
            .flat_map(|t| &t.rows)
            .filter(|r| {
                r.comparison
                    .as_ref()
                    .is_some_and(|c| c.verdict == Verdict::TooFewSamples)
            })
            .count()
    }
}

/// Footnotes, numbered in order of first use and deduplicated by text.
#[derive(Default)]
struct NoteBook {
    notes: Vec<Note>,
    index: HashMap<String, usize>,
}

impl NoteBook {
    fn add(&mut self, kind: NoteKind, text: String) -> usize {
        if let Some(&id) = self.index.get(&text) {
            return id;
        }
        let id = self.notes.len() + 1;
        self.index.insert(text.clone(), id);
        self.notes.push(Note { id, kind, text });
        id
    }
}

fn direction(b: Better) -> Direction {
    match b {
        Better::Lower => Direction::LowerIsBetter,
        Better::Higher => Direction::HigherIsBetter,
    }
}

pub fn test_name(t: TestKind) -> &'static str {
    match t {
        TestKind::MannWhitneyU => "Mann-Whitney U",
        TestKind::WelchT => "Welch's t",
    }
}

fn fmt_alpha(a: f64) -> String {
    let s = format!("{a}");
    if s.len() > 6 {
        format!("{a:.4}")
    } else {
        s
    }
}

/// Keywords that, found in a label, mean the label names a difference in
/// this machine field. Values are matched too (see [`labels_name`]).
fn field_keywords(field: &str) -> &'static [&'static str] {
    match field {
        "THP" => &["thp", "huge"],
        "numa_balancing" => &["balanc", "autonuma", "numab", "numa_b"],
        "kernel" => &["kernel", "linux"],
        "CPU model" => &["cpu"],
        "host" => &["host", "machine"],
        "nodes" => &["node"],
        _ => &[],
    }
}

/// Whether the labels name a difference in `field` between `values`: a
/// label contains a keyword of the field (`thp`, `balancing`, `kernel`,
/// ...), or contains one of the differing values (at least 2 characters),
/// or is contained in one (labels of at least 3 characters: label `6.5`
/// names kernel `6.5.0-rc1`). A heuristic, documented as one.
pub fn labels_name(labels: &[&str], field: &str, values: &[&str]) -> bool {
    let labels: Vec<String> = labels.iter().map(|l| l.to_lowercase()).collect();
    let values: Vec<String> = values.iter().map(|v| v.to_lowercase()).collect();
    labels.iter().any(|l| {
        field_keywords(field).iter().any(|k| l.contains(k))
            || values.iter().any(|v| {
                (v.len() >= 2 && l.contains(v.as_str())) || (l.len() >= 3 && v.contains(l.as_str()))
            })
    })
}

/// Build the comparison, in phases: the options checked, the baseline
/// resolved, the metrics chosen, each group paired with its baseline
/// group, the notes that hold whatever the metric (failed runs, work,
/// warnings, machines), then one table per metric.
pub fn compare(ds: &Dataset, opts: &CompareOptions) -> Result<CompareReport, CompareError> {
    check_options(opts)?;
    let ok_runs = ds.groups.iter().map(|g| g.ok.len()).sum::<usize>();
    let failed_runs = ds.groups.iter().map(|g| g.failed.len()).sum::<usize>();
    if ok_runs == 0 {
        return Err(CompareError::NoSuccessfulRuns {
            failed: failed_runs,
        });
    }
    let base = Baseline::resolve(ds, opts)?;
    let metrics = Metrics::present(ds);
    let (metric_names, hidden_metrics) = metrics.choose(ds, opts)?;

    let mut book = NoteBook::default();
    let (pairing, pair_notes) = pair_groups(ds, &base, &mut book);
    let mut group_notes = run_notes(ds, pair_notes, &mut book);
    warning_notes(ds, &mut group_notes, &mut book);
    let (config_machine, config_notes) = machine_notes(ds, &base, &pairing, &mut book);

    let ctx = Ctx {
        ds,
        opts,
        base: &base,
        pairing: &pairing,
        group_notes: &group_notes,
        config_notes: &config_notes,
    };
    let tables = metric_names
        .iter()
        .map(|name| metric_table(&ctx, &metrics, name, &mut book))
        .collect();

    let configurations = ds
        .configs
        .iter()
        .enumerate()
        .map(|(k, c)| ConfigSummary {
            name: c.name.clone(),
            values: c.values.clone(),
            label: c.label.clone(),
            host: c.host.clone(),
            backend: c.backend.clone(),
            ok_runs: ds
                .groups
                .iter()
                .filter(|g| g.config == k)
                .map(|g| g.ok.len())
                .sum(),
            failed_runs: ds
                .groups
                .iter()
                .filter(|g| g.config == k)
                .map(|g| g.failed.len())
                .sum(),
            machine: config_machine[k].clone(),
            is_baseline: base.contains(k),
        })
        .collect();
    Ok(CompareReport {
        schema_version: COMPARE_SCHEMA_VERSION,
        numalab_version: numalab_record::VERSION.to_string(),
        settings: Settings {
            test: opts.test,
            alpha: opts.alpha,
            confidence: 1.0 - opts.alpha,
            noise_threshold: opts.noise_threshold,
            high_cv: opts.high_cv,
        },
        baseline: base.name,
        group_by: ds.group_by.iter().map(|k| k.name().to_string()).collect(),
        filters: ds.filters.iter().map(|f| f.to_string()).collect(),
        configurations,
        cases: ds.cases.clone(),
        tables,
        hidden_metrics,
        positions: bounds_positions(ds),
        notes: book.notes,
        ok_runs,
        failed_runs,
    })
}

fn check_options(opts: &CompareOptions) -> Result<(), CompareError> {
    if !(opts.alpha > 0.0 && opts.alpha < 1.0) {
        return Err(CompareError::InvalidOption(format!(
            "alpha must be between 0 and 1, not {}",
            opts.alpha
        )));
    }
    if !(opts.noise_threshold.is_finite() && opts.noise_threshold >= 0.0) {
        return Err(CompareError::InvalidOption(format!(
            "the noise threshold must be a percentage >= 0, not {}",
            opts.noise_threshold * 100.0
        )));
    }
    Ok(())
}

/// The configurations the baseline names, and how it is named.
struct Baseline {
    name: String,
    configs: BTreeSet<usize>,
    /// Configurations are labels on hosts and backends (no `--group-by`).
    default_grouping: bool,
}

impl Baseline {
    /// By default a label (every host and backend of it), LABEL@HOST, or
    /// one configuration's name; with --group-by, one configuration's
    /// name.
    fn resolve(ds: &Dataset, opts: &CompareOptions) -> Result<Baseline, CompareError> {
        let labels = ds.labels();
        let configs_where = |f: &dyn Fn(&crate::dataset::Config) -> bool| -> BTreeSet<usize> {
            (0..ds.configs.len())
                .filter(|&k| f(&ds.configs[k]))
                .collect()
        };
        let default_grouping = ds.default_grouping();
        let (name, configs): (String, BTreeSet<usize>) = if !default_grouping {
            match &opts.baseline {
                None => (ds.configs[0].name.clone(), BTreeSet::from([0])),
                Some(b) => match ds.config_named(b) {
                    Some(k) => (b.clone(), BTreeSet::from([k])),
                    None => {
                        return Err(CompareError::UnknownConfiguration {
                            given: b.clone(),
                            configurations: ds.configs.iter().map(|c| c.name.clone()).collect(),
                        })
                    }
                },
            }
        } else {
            match &opts.baseline {
                // One label over several hosts or backends (a real run and
                // a simulated one of the same work, both `default`): every
                // configuration would be a baseline and none compared. The
                // baseline is then one of them: a real run over a guest's
                // over a simulated one (the real kernel is what a model
                // answers to), else the first.
                None if ds.configs.len() > 1 && ds.configs.iter().all(|c| c.label == labels[0]) => {
                    let rank = |c: &crate::dataset::Config| match c.backend.as_str() {
                        "real" => 0,
                        "guest" => 1,
                        _ => 2,
                    };
                    let k = (0..ds.configs.len())
                        .min_by_key(|&k| rank(&ds.configs[k]))
                        .expect("configurations");
                    (ds.configs[k].name.clone(), BTreeSet::from([k]))
                }
                None => (labels[0].clone(), configs_where(&|c| c.label == labels[0])),
                Some(b) if labels.contains(b) => (b.clone(), configs_where(&|c| &c.label == b)),
                Some(b) => {
                    let pinned = b
                        .rsplit_once('@')
                        .map(|(l, h)| configs_where(&|c| c.label == l && c.host == h));
                    match (ds.config_named(b), pinned) {
                        (Some(k), _) => (b.clone(), BTreeSet::from([k])),
                        (None, Some(set)) if !set.is_empty() => (b.clone(), set),
                        _ => {
                            if ds.configs.len() > labels.len() {
                                // Labels with several configurations
                                // (hosts, backends, schedulers): the
                                // names a baseline can be given as.
                                return Err(CompareError::UnknownConfiguration {
                                    given: b.clone(),
                                    configurations: ds
                                        .configs
                                        .iter()
                                        .map(|c| c.name.clone())
                                        .collect(),
                                });
                            }
                            let mut shown = labels.clone();
                            if ds.hosts().len() > 1 {
                                shown = ds
                                    .configs
                                    .iter()
                                    .map(|c| format!("{}@{}", c.label, c.host))
                                    .collect::<BTreeSet<_>>()
                                    .into_iter()
                                    .collect();
                            }
                            return Err(CompareError::UnknownBaseline {
                                given: b.clone(),
                                labels: shown,
                            });
                        }
                    }
                }
            }
        };
        Ok(Baseline {
            name,
            configs,
            default_grouping,
        })
    }

    fn contains(&self, k: usize) -> bool {
        self.configs.contains(&k)
    }
}

/// Metrics present in successful runs, with unit and direction, and the
/// ones declared differently by different runs.
struct Metrics {
    present: BTreeMap<String, (String, Better)>,
    conflicts: BTreeMap<String, BTreeSet<String>>,
}

impl Metrics {
    fn present(ds: &Dataset) -> Metrics {
        let mut present: BTreeMap<String, (String, Better)> = BTreeMap::new();
        let mut conflicts: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for run in &ds.runs {
            if !run.record.outcome.is_ok() {
                continue;
            }
            for (name, m) in &run.record.metrics {
                if is_derived_metric(name) {
                    continue;
                }
                let e = present
                    .entry(name.clone())
                    .or_insert_with(|| (m.unit.clone(), m.better));
                if e.0 != m.unit || e.1 != m.better {
                    conflicts
                        .entry(name.clone())
                        .or_default()
                        .insert(format!("{} ({:?})", m.unit, m.better).to_lowercase());
                }
            }
        }
        Metrics { present, conflicts }
    }

    /// The metrics to compare, in order, and those hidden for being zero.
    fn choose(
        &self,
        ds: &Dataset,
        opts: &CompareOptions,
    ) -> Result<(Vec<String>, Vec<String>), CompareError> {
        if !opts.metrics.is_empty() {
            for m in &opts.metrics {
                if is_derived_metric(m) {
                    return Err(CompareError::InvalidOption(format!(
                        "{m} is derived from the runs' elapsed times, not compared as a metric: numalab compare shows it under the cases of the benchmarks with bind and inverse-bind placements"
                    )));
                }
                if !self.present.contains_key(m) {
                    return Err(CompareError::UnknownMetric {
                        given: m.clone(),
                        metrics: self.present.keys().cloned().collect(),
                    });
                }
            }
            let mut seen = BTreeSet::new();
            let names = opts
                .metrics
                .iter()
                .filter(|m| seen.insert(m.to_string()))
                .cloned()
                .collect();
            return Ok((names, Vec::new()));
        }
        let names: Vec<String> = self.present.keys().cloned().collect();
        if !opts.hide_zero_metrics {
            return Ok((names, Vec::new()));
        }
        let all_zero = |name: &str| {
            ds.runs
                .iter()
                .filter(|run| run.record.outcome.is_ok())
                .filter_map(|run| run.record.metrics.get(name))
                .all(|m| m.value == 0.0)
        };
        let (zero, rest): (Vec<String>, Vec<String>) = names.into_iter().partition(|n| all_zero(n));
        // Never hide everything: a table of zeros says more than none.
        Ok(if rest.is_empty() {
            (zero, Vec::new())
        } else {
            (rest, zero)
        })
    }
}

/// Each group (case, configuration) with its role and baseline group.
type Pairing = HashMap<(usize, usize), (Role, Option<usize>)>;
/// Note ids per group.
type GroupNotes = HashMap<(usize, usize), Vec<usize>>;

/// Pair each group with its baseline group (see the module docs), with
/// the notes the pairing needs.
fn pair_groups(ds: &Dataset, base: &Baseline, book: &mut NoteBook) -> (Pairing, GroupNotes) {
    let mut pairing: Pairing = HashMap::new();
    let mut pair_notes: GroupNotes = HashMap::new();
    for g in &ds.groups {
        let cand = &ds.configs[g.config];
        let bases: Vec<&Group> = ds
            .groups
            .iter()
            .filter(|b| b.case == g.case && base.contains(b.config))
            .collect();
        let mut notes = Vec::new();
        let entry = if base.contains(g.config) {
            (Role::Baseline, None)
        } else {
            let same_host_backend = bases.iter().find(|b| {
                let c = &ds.configs[b.config];
                c.host == cand.host && c.backend == cand.backend
            });
            let same_host = bases
                .iter()
                .find(|b| ds.configs[b.config].host == cand.host);
            let pick = same_host_backend
                .or(same_host)
                .copied()
                .or_else(|| (bases.len() == 1).then(|| bases[0]));
            match pick {
                Some(b) => {
                    let bc = &ds.configs[b.config];
                    if base.default_grouping && bc.host != cand.host {
                        notes.push(book.add(
                            NoteKind::Baseline,
                            format!(
                                "{} ran on {} and is compared with {} on {}: across hosts, so the host is part of what differs",
                                cand.name, cand.host, bc.name, bc.host
                            ),
                        ));
                    }
                    (Role::Candidate, Some(b.config))
                }
                None if bases.is_empty() => {
                    notes.push(book.add(
                        NoteKind::Baseline,
                        format!(
                            "{} in {}: the baseline {} has no runs of this case",
                            cand.name, ds.cases[g.case].name, base.name
                        ),
                    ));
                    (Role::NoBaseline, None)
                }
                None => {
                    let hosts: Vec<String> = bases
                        .iter()
                        .map(|b| ds.configs[b.config].host.clone())
                        .collect();
                    notes.push(book.add(
                        NoteKind::Baseline,
                        format!(
                            "{}: {} ran on several hosts ({}) and none is {}'s; pick one with --baseline {}@{}",
                            cand.name,
                            base.name,
                            hosts.join(", "),
                            cand.host,
                            base.name,
                            hosts[0]
                        ),
                    ));
                    (Role::NoBaseline, None)
                }
            }
        };
        pairing.insert((g.case, g.config), entry);
        pair_notes.insert((g.case, g.config), notes);
    }
    (pairing, pair_notes)
}

/// Notes that belong to a group whatever the metric: its pairing's, its
/// failed runs, work that differs between its runs.
fn run_notes(ds: &Dataset, mut pair_notes: GroupNotes, book: &mut NoteBook) -> GroupNotes {
    let mut group_notes: GroupNotes = HashMap::new();
    for g in &ds.groups {
        let mut v = pair_notes.remove(&(g.case, g.config)).unwrap_or_default();
        if !g.failed.is_empty() {
            let first = &ds.runs[g.failed[0]].record;
            v.push(book.add(
                NoteKind::FailedRuns,
                format!(
                    "{} in {}: {} failed run{} left out of the statistics (first: {})",
                    ds.configs[g.config].name,
                    ds.cases[g.case].name,
                    g.failed.len(),
                    if g.failed.len() == 1 { "" } else { "s" },
                    first.outcome.reason.as_deref().unwrap_or("no reason recorded")
                ),
            ));
        }
        let runs: Vec<&RunRecord> = g.ok.iter().map(|&i| &ds.runs[i].record).collect();
        if let Some(w) = crate::work::check(&runs) {
            v.push(book.add(
                NoteKind::WorkDiffers,
                format!(
                    "{} in {}: {}",
                    ds.configs[g.config].name,
                    ds.cases[g.case].name,
                    w.text()
                ),
            ));
        }
        group_notes.insert((g.case, g.config), v);
    }
    group_notes
}

/// Warnings the runs recorded, grouped by their shape (digits ignored),
/// one note each, on every group that recorded one.
fn warning_notes(ds: &Dataset, group_notes: &mut GroupNotes, book: &mut NoteBook) {
    // shape -> (first message, groups that recorded it, count)
    type Shape = (String, Vec<(usize, usize)>, usize);
    let mut shapes: BTreeMap<String, Shape> = BTreeMap::new();
    for run in &ds.runs {
        for w in &run.record.warnings {
            let shape: String = w
                .chars()
                .map(|c| if c.is_ascii_digit() { '#' } else { c })
                .collect();
            let e = shapes
                .entry(shape)
                .or_insert_with(|| (w.clone(), Vec::new(), 0));
            e.2 += 1;
            let key = (run.case, run.config);
            if !e.1.contains(&key) {
                e.1.push(key);
            }
        }
    }
    for (_, (example, keys, count)) in shapes {
        let id = book.add(
            NoteKind::RunWarnings,
            format!(
                "{count} run{} recorded a warning like: {example}",
                if count == 1 { "" } else { "s" }
            ),
        );
        for k in keys {
            group_notes.entry(k).or_default().push(id);
        }
    }
}

/// Machine facts: each configuration's (its first run's), and notes where
/// they differ within a configuration or from its baseline's in a way
/// the labels do not name.
fn machine_notes(
    ds: &Dataset,
    base: &Baseline,
    pairing: &Pairing,
    book: &mut NoteBook,
) -> (Vec<Option<MachineSummary>>, Vec<Vec<usize>>) {
    let mut config_machine: Vec<Option<MachineSummary>> = vec![None; ds.configs.len()];
    let mut config_notes: Vec<Vec<usize>> = vec![Vec::new(); ds.configs.len()];
    // Each configuration's distinct machines (in the order first seen),
    // in one pass over the runs: 10,000 runs are mostly the same few.
    let mut machines: Vec<Vec<MachineSummary>> = vec![Vec::new(); ds.configs.len()];
    let mut seen: Vec<std::collections::HashSet<MachineSummary>> =
        vec![Default::default(); ds.configs.len()];
    for r in &ds.runs {
        let m = MachineSummary::of(&r.record);
        if seen[r.config].insert(m.clone()) {
            machines[r.config].push(m);
        }
    }
    for (k, cfg) in ds.configs.iter().enumerate() {
        let ms = &machines[k];
        config_machine[k] = ms.first().cloned();
        if let Some(first) = ms.first() {
            let f0 = first.fields();
            let fields: Vec<Vec<(&str, String)>> = ms.iter().map(MachineSummary::fields).collect();
            for (i, (field, _)) in f0.iter().enumerate() {
                let vals: BTreeSet<String> = fields.iter().map(|f| f[i].1.clone()).collect();
                if vals.len() > 1 {
                    config_notes[k].push(book.add(
                        NoteKind::MachineDiffers,
                        format!(
                            "the runs of {} differ in {field}: {}; they are pooled as one configuration",
                            cfg.name,
                            vals.into_iter().collect::<Vec<_>>().join(" / ")
                        ),
                    ));
                }
            }
        }
    }
    let pairs: BTreeSet<(usize, usize)> = pairing
        .iter()
        .filter_map(|(&(_, k), &(_, b))| b.map(|b| (k, b)))
        .collect();
    for (k, b) in pairs {
        let (Some(mk), Some(mb)) = (&config_machine[k], &config_machine[b]) else {
            continue;
        };
        if let Some(diffs) = machine_differences(ds, base, k, mk, b, mb) {
            let id = book.add(
                NoteKind::MachineDiffers,
                format!(
                    "{} differs from its baseline {} in {}, which the labels do not name",
                    ds.configs[k].name,
                    ds.configs[b].name,
                    diffs.join(", ")
                ),
            );
            config_notes[k].push(id);
        }
    }
    (config_machine, config_notes)
}

/// Where configuration `k`'s machine differs from its baseline `b`'s in
/// a field neither the labels nor `--group-by` name.
fn machine_differences(
    ds: &Dataset,
    base: &Baseline,
    k: usize,
    mk: &MachineSummary,
    b: usize,
    mb: &MachineSummary,
) -> Option<Vec<String>> {
    let (fk, fb) = (mk.fields(), mb.fields());
    // With --group-by the configurations' names are what names them.
    let labels = if base.default_grouping {
        [ds.configs[k].label.as_str(), ds.configs[b].label.as_str()]
    } else {
        [ds.configs[k].name.as_str(), ds.configs[b].name.as_str()]
    };
    let grouped = |field: &str| {
        ds.group_by.iter().any(|key| {
            matches!(
                (key, field),
                (Key::Host, "host")
                    | (Key::Kernel, "kernel")
                    | (Key::Thp, "THP")
                    | (Key::NumaBalancing, "numa_balancing")
            )
        })
    };
    let mut diffs = Vec::new();
    for i in 0..fk.len() {
        let field = fk[i].0;
        // Beyond the first six, a setting one side does not have (a
        // simulated machine has no kernel command line) is no news.
        let unknown = i >= 6 && (fk[i].1 == "n/a" || fb[i].1 == "n/a");
        if fk[i].1 != fb[i].1
            && !unknown
            && !grouped(field)
            && !labels_name(&labels, field, &[&fk[i].1, &fb[i].1])
        {
            diffs.push(format!("{field} ({} vs {})", fk[i].1, fb[i].1));
        }
    }
    (!diffs.is_empty()).then_some(diffs)
}

/// What every metric's table is built from.
struct Ctx<'a> {
    ds: &'a Dataset,
    opts: &'a CompareOptions,
    base: &'a Baseline,
    pairing: &'a Pairing,
    group_notes: &'a GroupNotes,
    config_notes: &'a [Vec<usize>],
}

/// One group's successful values of a metric: the values, their records'
/// ids and repetitions, and how many successful runs lack the metric.
struct Values {
    values: Vec<f64>,
    run_ids: Vec<String>,
    repetitions: Vec<u32>,
    missing: usize,
}

impl Values {
    fn of(ds: &Dataset, g: &Group, name: &str) -> Values {
        let mut v = Values {
            values: Vec::new(),
            run_ids: Vec::new(),
            repetitions: Vec::new(),
            missing: 0,
        };
        for &i in &g.ok {
            let r = &ds.runs[i].record;
            match r.metric(name) {
                Some(x) => {
                    v.values.push(x);
                    v.run_ids.push(r.id.clone());
                    v.repetitions.push(r.repetition.index);
                }
                None => v.missing += 1,
            }
        }
        v
    }
}

/// One metric's table: a row per group, baselines first in each case,
/// then the geometric-mean rows.
fn metric_table(ctx: &Ctx, metrics: &Metrics, name: &str, book: &mut NoteBook) -> MetricTable {
    let ds = ctx.ds;
    let (unit, better) = metrics.present[name].clone();
    if let Some(c) = metrics.conflicts.get(name) {
        let _ = book.add(
            NoteKind::Metric,
            format!(
                "{name} is declared with different units or directions ({}); shown as {unit}, {} is better",
                c.iter().cloned().collect::<Vec<_>>().join(", "),
                if better == Better::Lower { "lower" } else { "higher" }
            ),
        );
    }
    // Cases in which some run has this metric.
    let cases: Vec<usize> = (0..ds.cases.len())
        .filter(|&c| {
            ds.runs
                .iter()
                .any(|r| r.case == c && r.record.metrics.contains_key(name))
        })
        .collect();
    let mut rows = Vec::new();
    for &c in &cases {
        let mut order: Vec<usize> = ds
            .groups
            .iter()
            .filter(|g| g.case == c)
            .map(|g| g.config)
            .collect();
        // Baselines first, then the others in configuration order.
        order.sort_by_key(|&k| (!ctx.base.contains(k), k));
        for k in order {
            rows.push(group_row(ctx, name, &unit, direction(better), c, k, book));
        }
    }
    let geomean = geomean_rows(ctx, name, &rows, book);
    MetricTable {
        metric: name.to_string(),
        unit,
        better,
        rows,
        geomean,
    }
}

/// The row of configuration `k` in case `c`: its summary, outliers, and
/// the comparison with its baseline group, with their notes.
fn group_row(
    ctx: &Ctx,
    name: &str,
    unit: &str,
    dir: Direction,
    c: usize,
    k: usize,
    book: &mut NoteBook,
) -> GroupRow {
    let (ds, opts) = (ctx.ds, ctx.opts);
    let g = ds.group(c, k).expect("group exists");
    let (role, base) = ctx.pairing[&(c, k)];
    let Values {
        values,
        run_ids,
        repetitions,
        missing,
    } = Values::of(ds, g, name);
    let mut notes: Vec<usize> = ctx.group_notes.get(&(c, k)).cloned().unwrap_or_default();
    notes.extend(ctx.config_notes[k].iter().copied());
    let cname = &ds.configs[k].name;
    let case_name = &ds.cases[c].name;
    if missing > 0 {
        notes.push(book.add(
            NoteKind::Metric,
            format!(
                "{cname} in {case_name}: {missing} successful run{} did not record {name}",
                if missing == 1 { "" } else { "s" }
            ),
        ));
    }
    let summary = Summary::of(&values).ok();
    let mut flagged = Vec::new();
    if let Some(s) = &summary {
        summary_notes(s, opts, book, &mut notes);
        if values.len() >= MIN_RUNS_FOR_OUTLIERS {
            flagged = outliers(&values);
            for &i in &flagged {
                notes.push(book.add(
                    NoteKind::Outlier,
                    format!(
                        "{cname} in {case_name}: {name} of run {} ({} {unit}, record {}) is an outlier (modified z-score beyond 3.5 around the median {}); it is kept in the statistics",
                        repetitions[i],
                        crate::num::value(values[i]),
                        run_ids[i],
                        crate::num::value(s.median)
                    ),
                ));
            }
        }
    }
    let comparison = match (role, base) {
        (Role::Candidate, Some(b)) => {
            let bg = ds.group(c, b).expect("baseline group exists");
            let bv = Values::of(ds, bg, name).values;
            match compare_runs(&bv, &values, dir, opts, book, &mut notes) {
                Ok(cmp) => Some(cmp),
                Err(e) => {
                    notes.push(book.add(
                        NoteKind::Metric,
                        format!("{cname} in {case_name}: {name} could not be compared: {e}"),
                    ));
                    None
                }
            }
        }
        _ => None,
    };
    notes.sort_unstable();
    notes.dedup();
    GroupRow {
        case: c,
        config: k,
        role,
        baseline_config: base,
        n: values.len(),
        values,
        run_ids,
        repetitions,
        summary,
        outliers: flagged,
        comparison,
        notes,
    }
}

/// Notes a group's summary calls for: runs that vary by more than
/// `high_cv`, and too few runs for an interval of the median.
fn summary_notes(s: &Summary, opts: &CompareOptions, book: &mut NoteBook, notes: &mut Vec<usize>) {
    if let Some(cv) = s.cv {
        if cv > opts.high_cv {
            notes.push(book.add(
                NoteKind::HighVariation,
                format!(
                    "the runs vary by more than {:.0}% (stddev/mean): differences smaller than the run-to-run variation are hard to see",
                    opts.high_cv * 100.0
                ),
            ));
        }
    }
    if !s.median_ci.ranks.reaches_nominal && s.n >= 2 {
        notes.push(book.add(
            NoteKind::Interval,
            format!(
                "with {} runs no interval of the median reaches {:.0}%: the range min..max is shown, which covers the median with probability {:.1}%",
                s.n,
                (1.0 - opts.alpha) * 100.0,
                s.median_ci.ranks.achieved_confidence * 100.0
            ),
        ));
    }
}

/// The comparison of a candidate's runs with its baseline's: the verdict,
/// completed, with the notes it calls for.
fn compare_runs(
    bv: &[f64],
    values: &[f64],
    dir: Direction,
    opts: &CompareOptions,
    book: &mut NoteBook,
    notes: &mut Vec<usize>,
) -> Result<Comparison, numalab_stats::StatsError> {
    let mut cmp = verdict(bv, values, dir, opts.alpha, opts.noise_threshold, opts.test)?;
    complete(&mut cmp, bv, values, opts);
    let nonnegative = bv.iter().chain(values.iter()).all(|&v| v >= 0.0);
    comparison_notes(&cmp, opts, nonnegative, book, notes);
    Ok(cmp)
}

/// One geometric-mean row per configuration, over the cases every
/// configuration of the table has a usable value in (a note says which
/// were left out).
fn geomean_rows(ctx: &Ctx, name: &str, rows: &[GroupRow], book: &mut NoteBook) -> Vec<GeomeanRow> {
    let ds = ctx.ds;
    let table_configs: BTreeSet<usize> = rows.iter().map(|r| r.config).collect();
    let mut table_cases: Vec<usize> = Vec::new();
    for r in rows {
        if !table_cases.contains(&r.case) {
            table_cases.push(r.case);
        }
    }
    let mut shared: Vec<usize> = Vec::new();
    let mut left_out: Vec<(usize, Vec<String>)> = Vec::new();
    for &c in &table_cases {
        let mut why = Vec::new();
        for &k in &table_configs {
            let cname = &ds.configs[k].name;
            match rows.iter().find(|r| r.case == c && r.config == k) {
                None => why.push(format!("no runs of {cname}")),
                Some(r) if r.summary.is_none() => why.push(format!("no value for {cname}")),
                Some(r)
                    if r.role == Role::Candidate
                        && r.comparison.as_ref().and_then(|x| x.ratio).is_none() =>
                {
                    why.push(format!("no ratio for {cname}"))
                }
                Some(_) => {}
            }
        }
        if why.is_empty() {
            shared.push(c);
        } else {
            left_out.push((c, why));
        }
    }
    let shared_note = (!left_out.is_empty()).then(|| {
        book.add(
            NoteKind::Metric,
            left_out_text(ds, name, &shared, &left_out),
        )
    });
    let mut geomean = Vec::new();
    let mut order: Vec<usize> = table_configs.iter().copied().collect();
    order.sort_by_key(|&k| (!ctx.base.contains(k), k));
    for k in order {
        let mine: Vec<&GroupRow> = rows
            .iter()
            .filter(|r| r.config == k && shared.contains(&r.case))
            .collect();
        let means: Vec<f64> = mine
            .iter()
            .filter_map(|r| r.summary.as_ref().map(|s| s.mean))
            .collect();
        let ratios: Vec<f64> = mine
            .iter()
            .filter_map(|r| r.comparison.as_ref()?.ratio.map(|q| q.ratio))
            .collect();
        let mut notes = Vec::new();
        let gm = |v: &[f64]| -> Option<f64> {
            if v.is_empty() {
                None
            } else {
                geometric_mean(v).ok()
            }
        };
        let mean = gm(&means);
        let ratio = gm(&ratios);
        if (!means.is_empty() && mean.is_none()) || (!ratios.is_empty() && ratio.is_none()) {
            notes.push(book.add(
                NoteKind::Metric,
                format!("{name}: no geometric mean where a value is zero or negative"),
            ));
        }
        notes.extend(shared_note);
        notes.sort_unstable();
        geomean.push(GeomeanRow {
            config: k,
            mean,
            ratio,
            cases: shared.len(),
            left_out: left_out.len(),
            notes,
        });
    }
    geomean
}

/// The note on the cases a metric's geomean rows leave out, and why.
fn left_out_text(
    ds: &Dataset,
    name: &str,
    shared: &[usize],
    left_out: &[(usize, Vec<String>)],
) -> String {
    const LISTED: usize = 4;
    const REASONS: usize = 3;
    let mut listed: Vec<String> = left_out
        .iter()
        .take(LISTED)
        .map(|(c, why)| {
            let mut w: Vec<String> = why.iter().take(REASONS).cloned().collect();
            if why.len() > REASONS {
                w.push(format!("{} more", why.len() - REASONS));
            }
            format!("{} ({})", ds.cases[*c].name, w.join(", "))
        })
        .collect();
    if left_out.len() > LISTED {
        listed.push(format!("and {} more", left_out.len() - LISTED));
    }
    let n = left_out.len();
    let cases = |n: usize| if n == 1 { "case" } else { "cases" };
    if shared.is_empty() {
        format!(
            "{name}: no geomean: no case has a value for every configuration; left out: {}",
            listed.join("; ")
        )
    } else {
        format!(
            "{name}: the geomean rows are over the {} {} every configuration has a value in; {n} {} left out: {}",
            shared.len(),
            cases(shared.len()),
            cases(n),
            listed.join("; ")
        )
    }
}

/// With too few runs for a verdict the stats crate skips the test and the
/// ratio; they are still worth showing (a ratio interval, and a p-value
/// that says how far from significance the runs are), so fill them in.
fn complete(c: &mut Comparison, base: &[f64], cand: &[f64], opts: &CompareOptions) {
    if c.ratio.is_none() {
        c.ratio = ratio_ci(base, cand, 1.0 - opts.alpha).ok();
    }
    if c.test_result.is_none() && !base.is_empty() && !cand.is_empty() {
        let t = match opts.test {
            TestKind::MannWhitneyU => mann_whitney_u(base, cand),
            TestKind::WelchT => welch_t(base, cand),
        };
        if let Ok(t) = t {
            c.p_value = Some(t.p_value);
            c.test_result = Some(t);
        }
    }
}

/// Notes a comparison calls for: too few runs, an unbounded ratio,
/// conflicting evidence.
fn comparison_notes(
    c: &Comparison,
    opts: &CompareOptions,
    nonnegative: bool,
    book: &mut NoteBook,
    notes: &mut Vec<usize>,
) {
    let (nb, nc) = (c.n_baseline, c.n_candidate);
    if c.verdict == Verdict::TooFewSamples {
        let need = min_samples_for_test(opts.test, opts.alpha).unwrap_or(0);
        let text = if nb < 2 || nc < 2 {
            format!(
                "{nb} vs {nc} runs: a test needs at least 2 runs on each side; no verdict (run at least {need} per configuration)"
            )
        } else {
            format!(
                "{} cannot reach p < {} with {nb} vs {nc} runs (the smallest possible p is {:.3}): no verdict; run at least {need} per configuration",
                test_name(opts.test),
                fmt_alpha(opts.alpha),
                min_achievable_p(opts.test, nb, nc)
            )
        };
        notes.push(book.add(NoteKind::TooFewRuns, text));
    }
    if let Some(r) = &c.ratio {
        if !r.bounded {
            notes.push(book.add(
                NoteKind::Interval,
                "the baseline's mean cannot be told from zero at this confidence, so the ratio's interval is unbounded".into(),
            ));
        } else if nonnegative && r.low < 0.0 {
            notes.push(book.add(
                NoteKind::Interval,
                "the ratio's interval reaches below 0 although every value is at least 0: the baseline's mean is only just told from zero at this confidence (Fieller's interval widens as it nears zero), so the lower bound says nothing; more runs narrow it".into(),
            ));
        }
    }
    if c.significant && c.beyond_noise && !c.directions_agree {
        notes.push(book.add(
            NoteKind::Outlier,
            "the rank test and the means disagree in direction (a few extreme runs pull the mean against most runs): no verdict".into(),
        ));
    }
}

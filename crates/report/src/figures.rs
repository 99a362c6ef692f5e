//! Figures over a whole set of runs, the charts the seeds draw, derived
//! from the comparison's tables alone (no benchmark or study is named):
//!
//! * **Scaling**: when a benchmark's cases differ in exactly one
//!   parameter and that parameter is a number with at least
//!   [`MIN_SCALING_POINTS`] values (numa_test's `tasks`, N = 4..64 in
//!   seeds 000 and 001), each time metric's mean against that parameter,
//!   one line per configuration. When the runs carry both `elapsed_s` and
//!   `hackbench_s` (numa_test's load peak) a line of their difference per
//!   run is added, the `E - H` seed 000 says to compare.
//! * **Bars**: every other case, a group of bars per case with one bar per
//!   configuration: a benchmark with several cases gets a chart of its own
//!   (seed 003's placements), the benchmarks with one case share one
//!   (seed 002's numa01 ... numa02_SMT). One benchmark's cases share a
//!   unit of work, so its bars are the means (a placement's time beside
//!   another's, for every configuration); on the shared chart, with more
//!   than one configuration, each bar is the mean normalised to its
//!   baseline's mean in the same case (the pairing `compare` uses), so the
//!   baseline's bars are 1.
//!
//! Both are drawn for the metrics in seconds the comparison has (all, or
//! those named with `--metric`), less those 0 in every successful run. [`text`] prints
//! them within 80 columns; the HTML report draws them as SVG.

use crate::compare::{CompareReport, GroupRow, MetricTable, Role};
use crate::dataset::{param_value, varying_keys};
use crate::series::Line;
use crate::textplot::Chart;
use numalab_record::Better;
use std::collections::BTreeMap;

/// Fewest distinct values of a numeric parameter drawn as a line; fewer
/// are drawn as bars.
pub const MIN_SCALING_POINTS: usize = 3;

/// A mean over the successful runs of one group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    pub mean: f64,
    pub stddev: Option<f64>,
    pub n: usize,
}

/// A configuration's line: `(configuration index, name, points (x,
/// stat) by x)`.
pub type ScalingLine = (usize, String, Vec<(f64, Stat)>);

/// One metric against a numeric parameter, a line per configuration.
#[derive(Debug, Clone)]
pub struct Scaling {
    pub benchmark: String,
    /// The parameter on the x axis (`tasks`).
    pub param: String,
    /// The metric's name, or `elapsed_s - hackbench_s`.
    pub metric: String,
    pub unit: String,
    pub better: Better,
    pub lines: Vec<ScalingLine>,
}

/// One bar: what is drawn, and the mean it comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    /// The normalised mean, or the mean.
    pub value: f64,
    pub stat: Stat,
}

/// Bars of one metric: a group per case, a bar per configuration.
#[derive(Debug, Clone)]
pub struct Bars {
    /// The benchmarks drawn, comma-separated.
    pub benchmarks: String,
    pub metric: String,
    pub unit: String,
    pub better: Better,
    /// The baseline the bars are normalised to; `None`: means.
    pub normalised_to: Option<String>,
    /// What the category labels are values of (`placement`), when every
    /// case differs from the others in that one parameter only.
    pub category_key: Option<String>,
    /// The cases, as labels.
    pub categories: Vec<String>,
    /// `(configuration index, name)` of the bars in each group.
    pub configs: Vec<(usize, String)>,
    /// `values[category][config]`; `None` where the group has no runs
    /// (or, normalised, no baseline).
    pub values: Vec<Vec<Option<Bar>>>,
}

#[derive(Debug, Clone, Default)]
pub struct Figures {
    pub scaling: Vec<Scaling>,
    pub bars: Vec<Bars>,
}

impl Figures {
    pub fn is_empty(&self) -> bool {
        self.scaling.is_empty() && self.bars.is_empty()
    }
}

/// The name of the derived metric `elapsed_s - hackbench_s`.
pub const ELAPSED_LESS_HACKBENCH: &str = "elapsed_s - hackbench_s";

fn stat(r: &GroupRow) -> Option<Stat> {
    r.summary.as_ref().map(|s| Stat {
        mean: s.mean,
        stddev: s.stddev,
        n: s.n,
    })
}

fn stat_of(values: &[f64]) -> Option<Stat> {
    numalab_stats::Summary::of(values).ok().map(|s| Stat {
        mean: s.mean,
        stddev: s.stddev,
        n: s.n,
    })
}

/// The tables the figures draw: metrics in seconds that are not 0 in
/// every successful run, but `started_s`.
fn time_tables(cmp: &CompareReport) -> Vec<&MetricTable> {
    cmp.tables
        .iter()
        .filter(|t| t.unit == "s")
        // When the threads had started is a fact of the run's set-up (to
        // read convergence from), not a cost worth a chart.
        .filter(|t| t.metric != "started_s")
        .filter(|t| t.rows.iter().any(|r| r.values.iter().any(|v| *v != 0.0)))
        .collect()
}

/// Per (case, config) the mean of `elapsed_s - hackbench_s` over the runs
/// that have both, paired by record id.
fn elapsed_less_hackbench(cmp: &CompareReport) -> BTreeMap<(usize, usize), Stat> {
    let table = |m: &str| cmp.tables.iter().find(|t| t.metric == m);
    let (Some(e), Some(h)) = (table("elapsed_s"), table("hackbench_s")) else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for re in &e.rows {
        let Some(rh) = h
            .rows
            .iter()
            .find(|r| r.case == re.case && r.config == re.config)
        else {
            continue;
        };
        let diffs: Vec<f64> = re
            .run_ids
            .iter()
            .zip(&re.values)
            .filter_map(|(id, ev)| {
                rh.run_ids
                    .iter()
                    .position(|x| x == id)
                    .map(|j| ev - rh.values[j])
            })
            .collect();
        if let Some(s) = stat_of(&diffs) {
            out.insert((re.case, re.config), s);
        }
    }
    out
}

/// The figures of a comparison.
pub fn figures(cmp: &CompareReport) -> Figures {
    let mut figs = Figures::default();
    let mut benches: Vec<&str> = cmp.cases.iter().map(|c| c.benchmark.as_str()).collect();
    benches.dedup();
    let tables = time_tables(cmp);
    let e_less_h = elapsed_less_hackbench(cmp);
    // Benchmarks with one case, drawn together.
    let mut singles: Vec<usize> = Vec::new();
    for b in benches {
        let cases: Vec<usize> = (0..cmp.cases.len())
            .filter(|&i| cmp.cases[i].benchmark == b)
            .collect();
        if cases.len() == 1 {
            singles.push(cases[0]);
            continue;
        }
        match numeric_param(cmp, &cases) {
            Some((param, xs)) => {
                let sweep = Sweep {
                    cmp,
                    benchmark: b,
                    cases: &cases,
                    param,
                    xs,
                };
                figs.scaling.extend(sweep.scalings(&tables, &e_less_h));
            }
            None => {
                for t in &tables {
                    if let Some(f) = bars(cmp, t, &cases, b, false) {
                        figs.bars.push(f);
                    }
                }
            }
        }
    }
    if !singles.is_empty() {
        let mut names: Vec<&str> = singles
            .iter()
            .map(|&c| cmp.cases[c].benchmark.as_str())
            .collect();
        names.dedup();
        for t in &tables {
            if let Some(f) = bars(cmp, t, &singles, &names.join(", "), true) {
                figs.bars.push(f);
            }
        }
    }
    figs
}

/// The one parameter the cases differ in and its value in each case,
/// when it is a number with at least [`MIN_SCALING_POINTS`] distinct
/// values.
fn numeric_param(cmp: &CompareReport, cases: &[usize]) -> Option<(String, Vec<f64>)> {
    let params: Vec<_> = cases.iter().map(|&i| &cmp.cases[i].params).collect();
    let keys = varying_keys(&params);
    (keys.len() == 1)
        .then(|| keys.iter().next().unwrap().clone())
        .and_then(|k| {
            let xs: Option<Vec<f64>> = cases
                .iter()
                .map(|&i| cmp.cases[i].params.get(&k).and_then(|v| v.as_f64()))
                .collect();
            xs.map(|xs| (k, xs))
        })
        .filter(|(_, xs)| {
            let mut d = xs.clone();
            d.sort_by(f64::total_cmp);
            d.dedup();
            d.len() >= MIN_SCALING_POINTS
        })
}

/// A benchmark's cases along one numeric parameter, drawn as scaling
/// lines.
struct Sweep<'a> {
    cmp: &'a CompareReport,
    benchmark: &'a str,
    cases: &'a [usize],
    param: String,
    /// The parameter's value in each of `cases`.
    xs: Vec<f64>,
}

impl Sweep<'_> {
    /// A scaling per time table, then one of elapsed less hackbench;
    /// those with no line left out.
    fn scalings(
        &self,
        tables: &[&MetricTable],
        e_less_h: &BTreeMap<(usize, usize), Stat>,
    ) -> Vec<Scaling> {
        let mut out = Vec::new();
        for t in tables {
            let pts = t
                .rows
                .iter()
                .filter(|r| self.cases.contains(&r.case))
                .filter_map(|r| stat(r).map(|s| (r.case, r.config, s)))
                .collect();
            out.extend(self.scaling(&t.metric, &t.unit, t.better, pts));
        }
        let pts = e_less_h
            .iter()
            .filter(|((case, _), _)| self.cases.contains(case))
            .map(|(&(case, config), s)| (case, config, *s))
            .collect();
        out.extend(self.scaling(ELAPSED_LESS_HACKBENCH, "s", Better::Lower, pts));
        out
    }

    /// One metric's points `(case, configuration, stat)` as a line per
    /// configuration (by index), each by x; `None` when there are none.
    fn scaling(
        &self,
        metric: &str,
        unit: &str,
        better: Better,
        pts: Vec<(usize, usize, Stat)>,
    ) -> Option<Scaling> {
        let mut lines: Vec<ScalingLine> = Vec::new();
        for (case, config, s) in pts {
            let i = match lines.iter().position(|l| l.0 == config) {
                Some(i) => i,
                None => {
                    lines.push((
                        config,
                        self.cmp.configurations[config].name.clone(),
                        Vec::new(),
                    ));
                    lines.len() - 1
                }
            };
            lines[i].2.push((self.x_of(case), s));
        }
        lines.sort_by_key(|l| l.0);
        for l in &mut lines {
            l.2.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        (!lines.is_empty()).then(|| Scaling {
            benchmark: self.benchmark.to_string(),
            param: self.param.clone(),
            metric: metric.to_string(),
            unit: unit.to_string(),
            better,
            lines,
        })
    }

    /// The parameter's value in `case`.
    fn x_of(&self, case: usize) -> f64 {
        self.xs[self.cases.iter().position(|&c| c == case).unwrap()]
    }
}

/// Bars of table `t` over `cases`, normalised to the baseline when asked
/// and there is more than one configuration; `None` when no group has a
/// value.
fn bars(
    cmp: &CompareReport,
    t: &MetricTable,
    cases: &[usize],
    benchmarks: &str,
    normalise: bool,
) -> Option<Bars> {
    let rows: Vec<&GroupRow> = t.rows.iter().filter(|r| cases.contains(&r.case)).collect();
    let mut configs: Vec<usize> = rows.iter().map(|r| r.config).collect();
    configs.sort_unstable();
    configs.dedup();
    let normalise = normalise && configs.len() > 1;
    let row =
        |case: usize, config: usize| rows.iter().find(|r| r.case == case && r.config == config);
    let values: Vec<Vec<Option<Bar>>> = cases
        .iter()
        .map(|&case| {
            configs
                .iter()
                .map(|&config| {
                    let r = row(case, config)?;
                    let s = stat(r)?;
                    let value = if !normalise {
                        s.mean
                    } else if r.role == Role::Baseline {
                        1.0
                    } else {
                        let base = stat(row(case, r.baseline_config?)?)?;
                        if base.mean == 0.0 {
                            return None;
                        }
                        s.mean / base.mean
                    };
                    Some(Bar { value, stat: s })
                })
                .collect()
        })
        .collect();
    if values.iter().flatten().all(Option::is_none) {
        return None;
    }
    // Label the cases by the one parameter telling them apart, if there is
    // one; by their names otherwise.
    let params: Vec<_> = cases.iter().map(|&i| &cmp.cases[i].params).collect();
    let keys = varying_keys(&params);
    let one_benchmark = cases
        .iter()
        .all(|&c| cmp.cases[c].benchmark == cmp.cases[cases[0]].benchmark);
    let (category_key, categories) = if one_benchmark && keys.len() == 1 {
        let k = keys.iter().next().unwrap().clone();
        let labels = cases
            .iter()
            .map(|&c| {
                cmp.cases[c]
                    .params
                    .get(&k)
                    .map(param_value)
                    .unwrap_or_else(|| "n/a".into())
            })
            .collect();
        (Some(k), labels)
    } else if one_benchmark {
        (
            None,
            cases
                .iter()
                .map(|&c| {
                    let v = &cmp.cases[c].variant;
                    if v.is_empty() {
                        cmp.cases[c].name.clone()
                    } else {
                        v.clone()
                    }
                })
                .collect(),
        )
    } else {
        (
            None,
            cases.iter().map(|&c| cmp.cases[c].name.clone()).collect(),
        )
    };
    Some(Bars {
        benchmarks: benchmarks.to_string(),
        metric: t.metric.clone(),
        unit: t.unit.clone(),
        better: t.better,
        normalised_to: normalise.then(|| cmp.baseline.clone()),
        category_key,
        categories,
        configs: configs
            .iter()
            .map(|&c| (c, cmp.configurations[c].name.clone()))
            .collect(),
        values,
    })
}

fn better_word(b: Better) -> &'static str {
    match b {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
    }
}

impl Scaling {
    pub fn title(&self) -> String {
        format!("{}: {} vs {}", self.benchmark, self.metric, self.param)
    }
    pub fn y_label(&self) -> String {
        format!(
            "mean {} ({}, {})",
            self.metric,
            self.unit,
            better_word(self.better)
        )
    }
    /// Whether the parameter's values read best on a base-2 axis (task
    /// counts 4, 8, ..., 64).
    pub fn x_log2(&self) -> bool {
        let xs: Vec<f64> = self
            .lines
            .iter()
            .flat_map(|(_, _, pts)| pts.iter().map(|(x, _)| *x))
            .collect();
        crate::axis::powers_of_two(&xs)
    }

    /// The lines of means, for [`Chart`] and the SVG line chart.
    pub fn mean_lines(&self) -> Vec<Line> {
        self.lines
            .iter()
            .map(|(_, name, pts)| {
                Line::new(
                    name.clone(),
                    pts.iter().map(|(x, s)| (*x, s.mean)).collect(),
                )
            })
            .collect()
    }
}

impl Bars {
    pub fn title(&self) -> String {
        match &self.normalised_to {
            Some(b) => format!("{}: {} normalised to {b}", self.benchmarks, self.metric),
            None => format!("{}: {}", self.benchmarks, self.metric),
        }
    }
    pub fn y_label(&self) -> String {
        match &self.normalised_to {
            Some(b) => format!(
                "mean {} / {b}'s ({})",
                self.metric,
                better_word(self.better)
            ),
            None => format!(
                "mean {} ({}, {})",
                self.metric,
                self.unit,
                better_word(self.better)
            ),
        }
    }
    /// A bar's words: the value, and the mean it comes from.
    pub fn bar_text(&self, b: &Bar) -> String {
        // mean(sd) as in the tables (both with the mean's decimals).
        let value = match b.stat.stddev {
            Some(_) => crate::num::mean_sd(b.stat.mean, b.stat.stddev),
            None => crate::num::value(b.stat.mean),
        };
        let mean = format!("{value} {}", self.unit);
        if self.normalised_to.is_some() {
            format!("{:.2} ({mean})", b.value)
        } else {
            mean
        }
    }
}

/// The figures as text: line charts within 80 columns, and bars as rows
/// of `#`.
pub fn text(figs: &Figures) -> String {
    let mut out = String::new();
    for s in &figs.scaling {
        let mut c = Chart::new(
            format!("{}, mean of the runs", s.title()),
            &s.param,
            &s.unit,
            s.mean_lines(),
        );
        c.x_log2 = s.x_log2();
        let r = c.render();
        if !r.is_empty() {
            out.push_str(&r);
            out.push('\n');
        }
    }
    for b in &figs.bars {
        out.push_str(&bars_text(b));
        out.push('\n');
    }
    out
}

/// One bar chart as text: a block per case, a row per configuration.
pub fn bars_text(b: &Bars) -> String {
    let width = crate::table::TEXT_WIDTH;
    let mut out = String::new();
    let head = format!("{} ({})", b.title(), better_word(b.better));
    for l in crate::table::wrap(&head, width) {
        out.push_str(&l);
        out.push('\n');
    }
    if let Some(k) = &b.category_key {
        out.push_str(&format!("  by {k}\n"));
    }
    // One configuration: a row per case, named by the case; else a block
    // per case with a row per configuration.
    let single = b.configs.len() == 1;
    let row_names: Vec<&str> = if single {
        b.categories.iter().map(String::as_str).collect()
    } else {
        b.configs.iter().map(|(_, n)| n.as_str()).collect()
    };
    let name_w = row_names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .min(24);
    let indent = if single { "  " } else { "    " };
    let texts: Vec<Vec<Option<String>>> = b
        .values
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| v.as_ref().map(|v| b.bar_text(v)))
                .collect()
        })
        .collect();
    let text_w = texts
        .iter()
        .flatten()
        .flatten()
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(1);
    let max = b
        .values
        .iter()
        .flatten()
        .flatten()
        .map(|v| v.value)
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    // "INDENT NAME |####...  TEXT"
    let bar_w = width
        .saturating_sub(indent.len() + name_w + 2 + 1 + text_w)
        .max(10);
    for (ci, cat) in b.categories.iter().enumerate() {
        if !single {
            for l in crate::table::wrap(&format!("  {cat}"), width) {
                out.push_str(&l);
                out.push('\n');
            }
        }
        for k in 0..b.configs.len() {
            let name = if single { cat.as_str() } else { row_names[k] };
            let name: String = if name.chars().count() > name_w {
                let mut s: String = name.chars().take(name_w - 1).collect();
                s.push('~');
                s
            } else {
                name.to_string()
            };
            match (&b.values[ci][k], &texts[ci][k]) {
                (Some(v), Some(t)) => {
                    let n = if max > 0.0 && v.value.is_finite() && v.value > 0.0 {
                        ((v.value / max) * bar_w as f64).round().max(1.0) as usize
                    } else {
                        0
                    };
                    let line = format!(
                        "{indent}{name:<name_w$} |{}{} {t}",
                        "#".repeat(n),
                        " ".repeat(bar_w - n.min(bar_w))
                    );
                    out.push_str(line.trim_end());
                }
                _ => out.push_str(&format!("{indent}{name:<name_w$} |  no value")),
            }
            out.push('\n');
        }
    }
    if b.normalised_to.is_some() {
        out.push_str(
            "  each bar: the mean / the baseline's mean in the same case (the mean(sd))\n",
        );
    } else {
        out.push_str("  each bar: the mean over successful runs (the mean(sd))\n");
    }
    out
}

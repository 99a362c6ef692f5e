//! Rendering a [`CompareReport`]: text (80 columns), Markdown (GFM), CSV
//! (RFC 4180, one row per metric, case and configuration) and JSON.

use crate::compare::{test_name, CompareReport, GroupRow, MetricTable, Role};
use crate::num;
use crate::table::{md_inline, wrap, Column, RowKind, Table, TEXT_WIDTH};
use numalab_record::Better;
use numalab_stats::Verdict;
use std::fmt::Write as _;

/// Which tabular layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// n, mean(stddev), median with CI, ratio with CI, change, p, verdict.
    Full,
    /// Seed 003: each configuration's mean divided by the baseline's, with
    /// a "Better" column.
    Normalized,
}

fn better_word(b: Better) -> &'static str {
    match b {
        Better::Lower => "lower",
        Better::Higher => "higher",
    }
}

fn better_letter(b: Better) -> &'static str {
    match b {
        Better::Lower => "L",
        Better::Higher => "H",
    }
}

pub fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::WithinNoise => "within noise",
        Verdict::TooFewSamples => "too few runs",
    }
}

fn notes_cell(ids: &[usize]) -> String {
    ids.iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn conf_pct(r: &CompareReport) -> String {
    let p = r.settings.confidence * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{p}%")
    }
}

fn noise_pct(r: &CompareReport) -> String {
    let p = r.settings.noise_threshold * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{p}%")
    }
}

fn table_title(t: &MetricTable) -> String {
    if t.unit.is_empty() {
        format!("{} ({} is better)", t.metric, better_word(t.better))
    } else {
        format!(
            "{} ({}, {} is better)",
            t.metric,
            t.unit,
            better_word(t.better)
        )
    }
}

/// The full layout of one metric.
/// The benchmark shared by every row of a table, if there is one: the case
/// column then shows only the varying parameters, under its name.
fn single_benchmark<'a>(r: &'a CompareReport, t: &MetricTable) -> Option<&'a str> {
    let first = &r.cases[t.rows.first()?.case].benchmark;
    t.rows
        .iter()
        .all(|x| &r.cases[x.case].benchmark == first)
        .then_some(first.as_str())
}

fn case_cell(r: &CompareReport, t: &MetricTable, case: usize) -> String {
    let c = &r.cases[case];
    if single_benchmark(r, t).is_some() && !c.variant.is_empty() {
        c.variant.clone()
    } else {
        c.name.clone()
    }
}

fn case_header(r: &CompareReport, t: &MetricTable) -> String {
    single_benchmark(r, t).unwrap_or("case").to_string()
}

pub fn metric_table(r: &CompareReport, t: &MetricTable) -> Table {
    let conf = conf_pct(r);
    let mut tab = Table::new(
        table_title(t),
        vec![
            Column::key(&case_header(r, t)),
            Column::key("config"),
            Column::right("n"),
            Column::right("mean(sd)"),
            Column::right(&format!("median [{conf} CI]")),
            Column::right(&format!("vs base [{conf} CI]")),
            Column::right("change"),
            Column::right("p"),
            Column::left("verdict"),
            Column::left("notes"),
        ],
    );
    for row in &t.rows {
        let mut cells = row_cells(r, row);
        cells[0] = case_cell(r, t, row.case);
        tab.push(cells);
    }
    for g in &t.geomean {
        let cfg = &r.configurations[g.config];
        let is_candidate = t
            .rows
            .iter()
            .any(|x| x.config == g.config && x.role == Role::Candidate);
        tab.push_kind(
            vec![
                "geomean".into(),
                cfg.name.clone(),
                String::new(),
                g.mean.map(num::value).unwrap_or_else(|| "-".into()),
                String::new(),
                if is_candidate {
                    g.ratio.map(num::ratio).unwrap_or_else(|| "-".into())
                } else {
                    String::new()
                },
                match (is_candidate, g.ratio) {
                    (true, Some(q)) => num::percent_change(q - 1.0),
                    _ => String::new(),
                },
                String::new(),
                String::new(),
                notes_cell(&g.notes),
            ],
            RowKind::Summary,
        );
    }
    tab
}

fn row_cells(r: &CompareReport, row: &GroupRow) -> Vec<String> {
    let cfg = &r.configurations[row.config];
    let case = &r.cases[row.case];
    let (mean_sd, median) = match &row.summary {
        Some(s) => (
            num::mean_sd(s.mean, s.stddev),
            if s.n >= 2 {
                num::with_interval(s.median, s.median_ci.low, s.median_ci.high)
            } else {
                num::value(s.median)
            },
        ),
        None => ("-".into(), "-".into()),
    };
    let (vs, change, p, verdict) = match (row.role, &row.comparison) {
        (Role::Baseline, _) => ("base".into(), String::new(), String::new(), String::new()),
        (Role::NoBaseline, _) => (
            "no baseline".into(),
            String::new(),
            String::new(),
            String::new(),
        ),
        (Role::Candidate, None) => ("-".into(), String::new(), String::new(), String::new()),
        (Role::Candidate, Some(c)) => {
            let vs = match &c.ratio {
                Some(q) => num::ratio_interval(q.ratio, q.low, q.high, q.bounded),
                None => match (c.baseline_mean, c.candidate_mean) {
                    (Some(b), Some(m)) if b != 0.0 => num::ratio(m / b),
                    _ => "-".into(),
                },
            };
            let change = match c.relative_change {
                Some(rel) if c.significant => num::percent_change(rel),
                Some(_) | None if c.p_value.is_some() || c.verdict == Verdict::TooFewSamples => {
                    "~".into()
                }
                _ => "-".into(),
            };
            let p = c.p_value.map(num::p_value).unwrap_or_else(|| "-".into());
            (vs, change, p, verdict_word(c.verdict).to_string())
        }
    };
    vec![
        case.name.clone(),
        cfg.name.clone(),
        row.n.to_string(),
        mean_sd,
        median,
        vs,
        change,
        p,
        verdict,
        notes_cell(&row.notes),
    ]
}

/// Seed 003's layout of one metric: rows are cases; the baseline column
/// holds its mean, every other column its mean divided by the baseline's.
pub fn normalized_table(r: &CompareReport, t: &MetricTable) -> Table {
    let mut configs: Vec<usize> = Vec::new();
    for row in &t.rows {
        if !configs.contains(&row.config) {
            configs.push(row.config);
        }
    }
    // Baselines first.
    configs.sort_by_key(|&k| (!r.configurations[k].is_baseline, k));
    let mut cols = vec![Column::key(&case_header(r, t)), Column::left("Better")];
    for &k in &configs {
        let c = &r.configurations[k];
        if c.is_baseline && !t.unit.is_empty() {
            cols.push(Column::right(&format!("{} ({})", c.name, t.unit)));
        } else {
            cols.push(Column::right(&c.name));
        }
    }
    cols.push(Column::left("notes"));
    let mut tab = Table::new(
        format!("{}, normalised to {}", table_title(t), r.baseline),
        cols,
    );
    let mut cases: Vec<usize> = Vec::new();
    for row in &t.rows {
        if !cases.contains(&row.case) {
            cases.push(row.case);
        }
    }
    for &c in &cases {
        let mut cells = vec![case_cell(r, t, c), better_letter(t.better).into()];
        let mut notes: Vec<usize> = Vec::new();
        for &k in &configs {
            let row = t.rows.iter().find(|x| x.case == c && x.config == k);
            let cell = match row {
                None => "-".into(),
                Some(row) => {
                    notes.extend(row.notes.iter().copied());
                    match (row.role, &row.comparison, &row.summary) {
                        (Role::Baseline, _, Some(s)) => num::value(s.mean),
                        (Role::Candidate, Some(cmp), _) => {
                            let q = cmp.ratio.map(|q| q.ratio).or_else(|| {
                                match (cmp.baseline_mean, cmp.candidate_mean) {
                                    (Some(b), Some(m)) if b != 0.0 => Some(m / b),
                                    _ => None,
                                }
                            });
                            match q {
                                Some(q) => format!("{}{}", num::ratio(q), marker(cmp.verdict)),
                                None => "-".into(),
                            }
                        }
                        (Role::NoBaseline, _, Some(s)) => format!("({})", num::value(s.mean)),
                        _ => "-".into(),
                    }
                }
            };
            cells.push(cell);
        }
        notes.sort_unstable();
        notes.dedup();
        cells.push(notes_cell(&notes));
        tab.push(cells);
    }
    let mut cells = vec!["geomean".into(), better_letter(t.better).into()];
    let mut notes = Vec::new();
    for &k in &configs {
        let g = t.geomean.iter().find(|g| g.config == k);
        let is_base = r.configurations[k].is_baseline;
        cells.push(match g {
            Some(g) => {
                notes.extend(g.notes.iter().copied());
                if is_base {
                    g.mean.map(num::value).unwrap_or_else(|| "-".into())
                } else {
                    g.ratio.map(num::ratio).unwrap_or_else(|| "-".into())
                }
            }
            None => "-".into(),
        });
    }
    notes.sort_unstable();
    notes.dedup();
    cells.push(notes_cell(&notes));
    tab.push_kind(cells, RowKind::Summary);
    tab
}

fn marker(v: Verdict) -> &'static str {
    match v {
        Verdict::Better | Verdict::Worse => "*",
        Verdict::WithinNoise => "~",
        Verdict::TooFewSamples => "?",
    }
}

fn header_lines(r: &CompareReport, layout: Layout) -> Vec<String> {
    let mut v = Vec::new();
    v.push(format!(
        "numalab compare: {} run{} ({} failed) of {} configuration{} in {} case{}; baseline {}",
        r.ok_runs + r.failed_runs,
        if r.ok_runs + r.failed_runs == 1 {
            ""
        } else {
            "s"
        },
        r.failed_runs,
        r.configurations.len(),
        if r.configurations.len() == 1 { "" } else { "s" },
        r.cases.len(),
        if r.cases.len() == 1 { "" } else { "s" },
        r.baseline
    ));
    if !r.group_by.is_empty() || !r.filters.is_empty() {
        let mut s = String::new();
        if !r.group_by.is_empty() {
            s += &format!("Configurations by {} (--group-by)", r.group_by.join("/"));
        }
        if !r.filters.is_empty() {
            if !s.is_empty() {
                s += "; ";
            }
            s += &format!("only runs with {} (--filter)", r.filters.join(", "));
        }
        v.push(s + ".");
    }
    v.push(explanation(r, layout));
    v
}

/// The line under the header that says how to read the tables: the test,
/// the intervals, what `change` and the verdict mean.
pub fn explanation(r: &CompareReport, layout: Layout) -> String {
    let alpha = r.settings.alpha;
    match layout {
        Layout::Full => format!(
            "{} test, {} intervals. change: of the means, or \"~\" when not significant (p >= {alpha}). verdict: better or worse needs p < {alpha} and a change beyond the {} noise threshold.",
            test_name(r.settings.test),
            conf_pct(r),
            noise_pct(r)
        ),
        Layout::Normalized => format!(
            "Each configuration's mean divided by its baseline's in the same case. * significant ({} test, p < {alpha}) and beyond the {} noise threshold; ~ not significant or within noise; ? too few runs to test. Better: L lower is better, H higher is better.",
            test_name(r.settings.test),
            noise_pct(r)
        ),
    }
}

fn config_lines(r: &CompareReport) -> Vec<String> {
    let w = r
        .configurations
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(0);
    r.configurations
        .iter()
        .map(|c| {
            let runs = if c.failed_runs > 0 {
                format!(
                    "{} runs ({} failed)",
                    c.ok_runs + c.failed_runs,
                    c.failed_runs
                )
            } else {
                format!("{} runs", c.ok_runs)
            };
            let machine = c.machine.as_ref().map(|m| m.describe()).unwrap_or_default();
            let labels = if r.group_by.is_empty() || r.group_by.iter().any(|k| k == "label") {
                String::new()
            } else {
                format!("label {}, ", c.label)
            };
            format!(
                "  {:<w$}  {runs}, {labels}{}{}; {machine}",
                c.name,
                c.backend,
                if c.is_baseline { ", baseline" } else { "" },
            )
        })
        .collect()
}

fn case_lines(r: &CompareReport, ds_common: &dyn Fn(&str) -> Vec<String>) -> Vec<String> {
    let families = crate::autonuma::positions_by_cases(&r.positions);
    let mut v: Vec<String> = Vec::new();
    for (i, c) in r.cases.iter().enumerate() {
        v.push(format!("  {}", c.name));
        // position_between_bounds under the last case of its set.
        for ps in families.iter().filter(|ps| ps[0].cases.last() == Some(&i)) {
            let p = ps[0];
            let text = crate::autonuma::position_text(ps);
            v.push(if p.cases.len() > 1 && !p.variant.is_empty() {
                format!("    {} {}: {text}", p.benchmark, p.variant)
            } else if p.cases.len() > 1 {
                format!("    {}: {text}", p.benchmark)
            } else {
                format!("    {text}")
            });
        }
    }
    let mut benches: Vec<&str> = r.cases.iter().map(|c| c.benchmark.as_str()).collect();
    benches.dedup();
    for b in benches {
        let common = ds_common(b);
        if !common.is_empty() {
            v.push(format!("  {b}, in every case: {}", common.join(" ")));
        }
    }
    v
}

/// Parameters shared by every case of a benchmark in the report.
pub fn common_params(r: &CompareReport, benchmark: &str) -> Vec<String> {
    let cases: Vec<_> = r
        .cases
        .iter()
        .filter(|c| c.benchmark == benchmark)
        .collect();
    let Some(first) = cases.first() else {
        return Vec::new();
    };
    first
        .params
        .iter()
        .filter(|(k, v)| cases.iter().all(|c| c.params.get(*k) == Some(v)))
        .map(|(k, v)| format!("{k}={}", crate::dataset::param_value(v)))
        .collect()
}

/// Plain text, at most 80 columns.
pub fn to_text(r: &CompareReport, layout: Layout) -> String {
    let mut out = String::new();
    let push = |out: &mut String, line: &str| {
        for l in wrap(line, TEXT_WIDTH) {
            let _ = writeln!(out, "{l}");
        }
    };
    for l in header_lines(r, layout) {
        push(&mut out, &l);
    }
    out.push('\n');
    push(&mut out, "Configurations");
    for l in config_lines(r) {
        push(&mut out, &l);
    }
    push(&mut out, "Cases");
    for l in case_lines(r, &|b| common_params(r, b)) {
        push(&mut out, &l);
    }
    for t in &r.tables {
        out.push('\n');
        let tab = match layout {
            Layout::Full => metric_table(r, t),
            Layout::Normalized => normalized_table(r, t),
        };
        out.push_str(&tab.to_text());
    }
    if !r.notes.is_empty() {
        out.push('\n');
        push(&mut out, "Notes");
        for n in &r.notes {
            push(&mut out, &format!("[{}] {}", n.id, n.text));
        }
    }
    out
}

/// GitHub-flavoured Markdown.
pub fn to_markdown(r: &CompareReport, layout: Layout) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## numalab compare\n");
    for l in header_lines(r, layout) {
        let _ = writeln!(out, "{}\n", md_inline(&l));
    }
    let mut cfg = Table::new(
        "",
        vec![
            Column::key("configuration"),
            Column::left("baseline"),
            Column::left("backend"),
            Column::right("runs"),
            Column::right("failed"),
            Column::left("machine"),
        ],
    );
    for c in &r.configurations {
        cfg.push(vec![
            c.name.clone(),
            if c.is_baseline {
                "yes".into()
            } else {
                String::new()
            },
            c.backend.clone(),
            (c.ok_runs + c.failed_runs).to_string(),
            c.failed_runs.to_string(),
            c.machine.as_ref().map(|m| m.describe()).unwrap_or_default(),
        ]);
    }
    out.push_str(&cfg.to_markdown(3));
    out.push('\n');
    let _ = writeln!(out, "Cases:\n");
    for l in case_lines(r, &|b| common_params(r, b)) {
        let _ = writeln!(out, "- {}", md_inline(l.trim()));
    }
    for t in &r.tables {
        out.push('\n');
        let tab = match layout {
            Layout::Full => metric_table(r, t),
            Layout::Normalized => normalized_table(r, t),
        };
        out.push_str(&tab.to_markdown(3));
    }
    if !r.notes.is_empty() {
        let _ = writeln!(out, "\n### Notes\n");
        for n in &r.notes {
            let _ = writeln!(out, "{}. {}", n.id, md_inline(&n.text));
        }
    }
    out
}

/// JSON with `schema_version`; carries every number whatever the layout.
pub fn to_json(r: &CompareReport) -> String {
    serde_json::to_string_pretty(r).expect("the report serialises") + "\n"
}

/// CSV (RFC 4180): one row per metric, case and configuration, plus one
/// `geomean` row per metric and configuration. Notes are given in full.
pub fn to_csv(r: &CompareReport) -> Result<String, csv::Error> {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    w.write_record([
        "kind",
        "metric",
        "unit",
        "better",
        "benchmark",
        "case",
        "params",
        "config",
        "label",
        "host",
        "backend",
        "role",
        "baseline",
        "n",
        "mean",
        "stddev",
        "cv",
        "min",
        "max",
        "median",
        "median_low",
        "median_high",
        "median_confidence",
        "ratio",
        "ratio_low",
        "ratio_high",
        "relative_change",
        "test",
        "p_value",
        "significant",
        "verdict",
        "outlier_runs",
        "notes",
    ])?;
    let f = |x: Option<f64>| x.map(|v| format!("{v}")).unwrap_or_default();
    let notes_text = |ids: &[usize]| {
        ids.iter()
            .filter_map(|&i| r.note(i))
            .map(|n| format!("[{}] {}", n.id, n.text))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for t in &r.tables {
        for row in &t.rows {
            let c = &r.configurations[row.config];
            let case = &r.cases[row.case];
            let s = row.summary.as_ref();
            let cmp = row.comparison.as_ref();
            let q = cmp.and_then(|c| c.ratio);
            w.write_record([
                "group".to_string(),
                t.metric.clone(),
                t.unit.clone(),
                better_word(t.better).into(),
                case.benchmark.clone(),
                case.name.clone(),
                crate::dataset::params_text(&case.params),
                c.name.clone(),
                c.label.clone(),
                c.host.clone(),
                c.backend.clone(),
                match row.role {
                    Role::Baseline => "baseline",
                    Role::Candidate => "candidate",
                    Role::NoBaseline => "no_baseline",
                }
                .into(),
                row.baseline_config
                    .map(|b| r.configurations[b].name.clone())
                    .unwrap_or_default(),
                row.n.to_string(),
                f(s.map(|s| s.mean)),
                f(s.and_then(|s| s.stddev)),
                f(s.and_then(|s| s.cv)),
                f(s.map(|s| s.min)),
                f(s.map(|s| s.max)),
                f(s.map(|s| s.median)),
                f(s.map(|s| s.median_ci.low)),
                f(s.map(|s| s.median_ci.high)),
                f(s.map(|s| s.median_ci.ranks.achieved_confidence)),
                f(q.map(|q| q.ratio)),
                f(q.filter(|q| q.bounded).map(|q| q.low)),
                f(q.filter(|q| q.bounded).map(|q| q.high)),
                f(cmp.and_then(|c| c.relative_change)),
                cmp.map(|_| test_name(r.settings.test).to_string())
                    .unwrap_or_default(),
                f(cmp.and_then(|c| c.p_value)),
                cmp.map(|c| c.significant.to_string()).unwrap_or_default(),
                cmp.map(|c| verdict_word(c.verdict).to_string())
                    .unwrap_or_default(),
                row.outliers
                    .iter()
                    .map(|&i| row.repetitions[i].to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
                notes_text(&row.notes),
            ])?;
        }
        for g in &t.geomean {
            let c = &r.configurations[g.config];
            let mut rec = vec![String::new(); 33];
            rec[0] = "geomean".into();
            rec[1] = t.metric.clone();
            rec[2] = t.unit.clone();
            rec[3] = better_word(t.better).into();
            rec[5] = "geomean".into();
            rec[7] = c.name.clone();
            rec[8] = c.label.clone();
            rec[9] = c.host.clone();
            rec[10] = c.backend.clone();
            rec[13] = g.cases.to_string();
            rec[14] = f(g.mean);
            rec[23] = f(g.ratio);
            rec[26] = f(g.ratio.map(|q| q - 1.0));
            rec[32] = notes_text(&g.notes);
            w.write_record(&rec)?;
        }
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8(bytes).expect("CSV of UTF-8 strings is UTF-8"))
}

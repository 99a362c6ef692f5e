//! Rendering a [`CompareReport`]: text (80 columns), Markdown (GFM),
//! AsciiDoc, CSV
//! (RFC 4180, one row per metric, case and configuration) and JSON.

use crate::compare::{test_name, CompareReport, GeomeanRow, GroupRow, MetricTable, Role};
use crate::num;
use crate::table::{adoc_inline, md_inline, wrap, Column, RowKind, Table, TEXT_WIDTH};
use numalab_record::Better;
use numalab_stats::Verdict;
use std::fmt::Write as _;

/// Which tabular layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One line per metric, benchstat-like: each side's mean and its
    /// variation, the change, p and the verdict; the default text view.
    Compact,
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

/// The change column: the relative change of the means when the test is
/// significant; `from 0` when it is but the baseline's mean is zero (a
/// counter the baseline never moved: no ratio exists); `~` when it is not.
fn change_cell(c: &numalab_stats::Comparison) -> String {
    match c.relative_change {
        Some(rel) if c.significant => num::percent_change(rel),
        None if c.significant && c.baseline_mean == Some(0.0) => "from 0".into(),
        Some(_) | None if c.p_value.is_some() || c.verdict == Verdict::TooFewSamples => "~".into(),
        _ => "-".into(),
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
            let change = change_cell(c);
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
        Layout::Compact => format!(
            "Each row: mean +-CV (stddev/mean) of each side's runs; change of the means (\"from 0\" when the baseline's is zero), or \"~\" when not significant ({} test, p >= {alpha}); verdict: better or worse needs p < {alpha} and a change beyond the {} noise threshold, ~ is within noise, ? too few runs to test. --detailed shows medians and intervals.",
            test_name(r.settings.test),
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
    crate::dataset::common_params(&r.cases, benchmark)
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
    for tab in layout_tables(r, layout, "+-") {
        out.push('\n');
        out.push_str(&tab.to_text());
    }
    let after = after_lines(r, layout);
    if !after.is_empty() {
        out.push('\n');
        for l in &after {
            push(&mut out, l);
        }
    }
    let notes = shown_notes(r, layout);
    if !notes.is_empty() {
        out.push('\n');
        push(&mut out, "Notes");
        for n in notes {
            push(&mut out, &n);
        }
    }
    out
}

/// The tables of a layout.
fn layout_tables(r: &CompareReport, layout: Layout, pm: &str) -> Vec<Table> {
    match layout {
        Layout::Compact => compact_tables(r, pm),
        Layout::Full => r.tables.iter().map(|t| metric_table(r, t)).collect(),
        Layout::Normalized => r.tables.iter().map(|t| normalized_table(r, t)).collect(),
    }
}

/// Lines under the tables: the compact layout's verdicts on too few runs,
/// and the metrics left out.
fn after_lines(r: &CompareReport, layout: Layout) -> Vec<String> {
    let mut v = Vec::new();
    if layout == Layout::Compact {
        v.extend(too_few_lines(r));
    }
    v.extend(hidden_line(r));
    v
}

/// The footnotes as printed: `[n] text`, or in the compact layout (which
/// refers to none by number) `- text` for those it has use for.
fn shown_notes(r: &CompareReport, layout: Layout) -> Vec<String> {
    r.notes
        .iter()
        .filter(|n| layout != Layout::Compact || compact_note(r, n))
        .map(|n| {
            if layout == Layout::Compact {
                format!("- {}", n.text)
            } else {
                format!("[{}] {}", n.id, n.text)
            }
        })
        .collect()
}

/// The configurations as a table, for Markdown and AsciiDoc.
fn config_table(r: &CompareReport) -> Table {
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
    cfg
}

/// A lightweight markup a comparison is written in: Markdown or AsciiDoc.
struct Markup {
    /// The document title and the notes heading.
    title: &'static str,
    notes: &'static str,
    /// Item markers of bulleted lists.
    bullet: &'static str,
    /// Numbered notes (the detailed layout shows every note, so the
    /// numbers are their ids): `1. text` or `. text`.
    numbered: fn(usize, &str) -> String,
    inline: fn(&str) -> String,
    table: fn(&Table) -> String,
}

const MARKDOWN: Markup = Markup {
    title: "## numalab compare",
    notes: "### Notes",
    bullet: "-",
    numbered: |id, t| format!("{id}. {t}"),
    inline: md_inline,
    table: |t| t.to_markdown(3),
};

const ASCIIDOC: Markup = Markup {
    title: "== numalab compare",
    notes: "=== Notes",
    bullet: "*",
    numbered: |_, t| format!(". {t}"),
    inline: adoc_inline,
    table: |t| t.to_asciidoc(2),
};

/// AsciiDoc (Asciidoctor): the same sections and tables as Markdown.
pub fn to_asciidoc(r: &CompareReport, layout: Layout) -> String {
    to_markup(r, layout, &ASCIIDOC)
}

/// GitHub-flavoured Markdown.
pub fn to_markdown(r: &CompareReport, layout: Layout) -> String {
    to_markup(r, layout, &MARKDOWN)
}

fn to_markup(r: &CompareReport, layout: Layout, m: &Markup) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", m.title);
    for l in header_lines(r, layout) {
        let _ = writeln!(out, "{}\n", (m.inline)(&l));
    }
    out.push_str(&(m.table)(&config_table(r)));
    out.push('\n');
    let _ = writeln!(out, "Cases:\n");
    for l in case_lines(r, &|b| common_params(r, b)) {
        let _ = writeln!(out, "{} {}", m.bullet, (m.inline)(l.trim()));
    }
    for tab in layout_tables(r, layout, "+-") {
        out.push('\n');
        out.push_str(&(m.table)(&tab));
    }
    let after = after_lines(r, layout);
    if !after.is_empty() {
        out.push('\n');
        for l in &after {
            let _ = writeln!(out, "{}\n", (m.inline)(l));
        }
    }
    let notes: Vec<_> = r
        .notes
        .iter()
        .filter(|n| layout != Layout::Compact || compact_note(r, n))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "\n{}\n", m.notes);
        for n in notes {
            let text = (m.inline)(&n.text);
            if layout == Layout::Compact {
                let _ = writeln!(out, "{} {text}", m.bullet);
            } else {
                let _ = writeln!(out, "{}", (m.numbered)(n.id, &text));
            }
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
    for t in &r.tables {
        for row in &t.rows {
            w.write_record(csv_group_record(r, t, row))?;
        }
        for g in &t.geomean {
            w.write_record(csv_geomean_record(r, t, g))?;
        }
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8(bytes).expect("CSV of UTF-8 strings is UTF-8"))
}

/// A number of a CSV cell: empty when there is none.
fn csv_num(x: Option<f64>) -> String {
    x.map(|v| format!("{v}")).unwrap_or_default()
}

/// The CSV `notes` cell: the notes given in full, `[id] text`, space-separated.
fn csv_notes_text(r: &CompareReport, ids: &[usize]) -> String {
    ids.iter()
        .filter_map(|&i| r.note(i))
        .map(|n| format!("[{}] {}", n.id, n.text))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The CSV `group` row of one metric, case and configuration.
fn csv_group_record(r: &CompareReport, t: &MetricTable, row: &GroupRow) -> [String; 33] {
    let f = csv_num;
    let c = &r.configurations[row.config];
    let case = &r.cases[row.case];
    let s = row.summary.as_ref();
    let cmp = row.comparison.as_ref();
    let q = cmp.and_then(|c| c.ratio);
    [
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
        csv_notes_text(r, &row.notes),
    ]
}

/// The CSV `geomean` row of one metric and configuration.
fn csv_geomean_record(r: &CompareReport, t: &MetricTable, g: &GeomeanRow) -> Vec<String> {
    let f = csv_num;
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
    rec[32] = csv_notes_text(r, &g.notes);
    rec
}

/// `19.13 +-10%` (`±` outside plain text): a mean and its coefficient of variation, the compact
/// layout's cell; `0` for a metric that was zero in every run.
fn mean_cv(s: &numalab_stats::Summary, pm: &str) -> String {
    if s.mean == 0.0 && s.stddev.is_none_or(|sd| sd == 0.0) {
        return "0".into();
    }
    match (s.cv, s.stddev) {
        (Some(cv), _) => format!("{} {pm}{:.0}%", num::short(s.mean), cv * 100.0),
        (None, Some(sd)) => num::mean_sd(s.mean, Some(sd)),
        (None, None) => num::short(s.mean),
    }
}

fn compact_verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::WithinNoise => "~",
        Verdict::TooFewSamples => "?",
    }
}

/// The blocks of the compact layout: for each case, each configuration
/// that is not its own baseline there, with the baseline it is compared
/// with (`None`: no baseline in that case).
fn compact_blocks(r: &CompareReport) -> Vec<(usize, usize, Option<usize>)> {
    let mut blocks: Vec<(usize, usize, Option<usize>)> = Vec::new();
    for t in &r.tables {
        for row in &t.rows {
            if row.role == Role::Baseline {
                continue;
            }
            let key = (row.case, row.config, row.baseline_config);
            if !blocks.contains(&key) {
                blocks.push(key);
            }
        }
    }
    blocks.sort();
    blocks
}

/// One compact table: a row per metric of `config` in `case` against its
/// baseline. Its title names the case and the two configurations.
pub fn compact_table(
    r: &CompareReport,
    case: usize,
    config: usize,
    base: Option<usize>,
    pm: &str,
) -> Table {
    let cand = &r.configurations[config];
    let base_name = base.map(|b| r.configurations[b].name.clone());
    let title = match &base_name {
        Some(b) => format!("{}: {} vs {b}", r.cases[case].name, cand.name),
        None => format!("{}: {} (no baseline)", r.cases[case].name, cand.name),
    };
    let mut tab = Table::new(
        title,
        vec![
            Column::key("metric"),
            Column::left("unit"),
            Column::right(base_name.as_deref().unwrap_or("baseline")),
            Column::right(&cand.name),
            Column::right("change"),
            Column::right("p"),
            Column::left("verdict"),
        ],
    );
    for t in &r.tables {
        let Some(row) = t
            .rows
            .iter()
            .find(|x| x.case == case && x.config == config && x.baseline_config == base)
        else {
            continue;
        };
        let base_row = base.and_then(|b| t.rows.iter().find(|x| x.case == case && x.config == b));
        let cell = |row: Option<&GroupRow>| {
            row.and_then(|x| x.summary.as_ref())
                .map(|s| mean_cv(s, pm))
                .unwrap_or_else(|| "-".into())
        };
        let (change, p, verdict) = match (row.role, &row.comparison) {
            (Role::Candidate, Some(c)) => (
                change_cell(c),
                c.p_value.map(num::p_value).unwrap_or_else(|| "-".into()),
                compact_verdict(c.verdict).to_string(),
            ),
            _ => ("-".into(), "-".into(), "-".into()),
        };
        tab.push(vec![
            t.metric.clone(),
            t.unit.clone(),
            cell(base_row),
            cell(Some(row)),
            change,
            p,
            verdict,
        ]);
    }
    tab
}

/// Geometric means over the cases, one table per candidate configuration
/// (only when there is more than one case).
fn compact_geomean_tables(r: &CompareReport) -> Vec<Table> {
    if r.cases.len() < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, cfg) in r.configurations.iter().enumerate() {
        let rows: Vec<(&MetricTable, &crate::compare::GeomeanRow)> = r
            .tables
            .iter()
            .filter(|t| {
                t.rows
                    .iter()
                    .any(|x| x.config == k && x.role == Role::Candidate)
            })
            .filter_map(|t| t.geomean.iter().find(|g| g.config == k).map(|g| (t, g)))
            .collect();
        if rows.is_empty() {
            continue;
        }
        let mut tab = Table::new(
            format!("geomean over the cases: {} vs {}", cfg.name, r.baseline),
            vec![
                Column::key("metric"),
                Column::left("unit"),
                Column::right(&cfg.name),
                Column::right("ratio"),
                Column::right("change"),
                Column::right("cases"),
            ],
        );
        for (t, g) in rows {
            tab.push(vec![
                t.metric.clone(),
                t.unit.clone(),
                g.mean.map(num::short).unwrap_or_else(|| "-".into()),
                g.ratio.map(num::ratio).unwrap_or_else(|| "-".into()),
                g.ratio
                    .map(|q| num::percent_change(q - 1.0))
                    .unwrap_or_else(|| "-".into()),
                g.cases.to_string(),
            ]);
        }
        out.push(tab);
    }
    out
}

/// Plain sentences for comparisons the test could not decide for want of
/// runs: how many runs were there, why no test can be significant with
/// them, and how many runs per side could be.
pub fn too_few_lines(r: &CompareReport) -> Vec<String> {
    let mut sizes: Vec<(usize, usize)> = r
        .tables
        .iter()
        .flat_map(|t| &t.rows)
        .filter_map(|x| x.comparison.as_ref())
        .filter(|c| c.verdict == Verdict::TooFewSamples)
        .map(|c| (c.n_baseline, c.n_candidate))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let test = r.settings.test;
    let alpha = r.settings.alpha;
    let need = numalab_stats::min_samples_for_test(test, alpha).unwrap_or(0);
    sizes
        .into_iter()
        .map(|(nb, nc)| {
            let runs = if nb == nc {
                format!("{nb} runs per side")
            } else {
                format!("{nb} vs {nc} runs")
            };
            if nb < 2 || nc < 2 {
                format!(
                    "Verdict: none with {runs}: a test needs at least 2 runs on each side, and {} needs {need} per side to reach p < {alpha}.",
                    test_name(test)
                )
            } else {
                // --runs auto runs at least AUTO_MIN_RUNS by default.
                let auto = if need <= numalab_stats::AUTO_MIN_RUNS {
                    "--runs auto".to_string()
                } else {
                    format!("--runs auto --min-runs {need}")
                };
                format!(
                    "Verdict: none with {runs}. {} cannot reach significance with so few: the smallest p-value it can give is {}, not below {alpha}. {need} runs per side can (--runs {need}, or {auto}).",
                    test_name(test),
                    num::p_value(numalab_stats::min_achievable_p(test, nb, nc))
                )
            }
        })
        .collect()
}

/// The line naming the metrics left out for being zero in every run.
pub fn hidden_line(r: &CompareReport) -> Option<String> {
    if r.hidden_metrics.is_empty() {
        return None;
    }
    Some(format!(
        "Not shown, zero in every run: {} (--all-metrics shows them).",
        r.hidden_metrics.join(", ")
    ))
}

/// Whether the compact layout prints a note: it shows no intervals, says
/// in its verdict lines why a comparison could not be tested, and shows
/// geometric means only over more than one case.
fn compact_note(r: &CompareReport, n: &crate::compare::Note) -> bool {
    use crate::compare::NoteKind;
    if matches!(n.kind, NoteKind::Interval | NoteKind::TooFewRuns) {
        return false;
    }
    if r.cases.len() < 2 {
        let in_rows = r
            .tables
            .iter()
            .flat_map(|t| &t.rows)
            .any(|x| x.notes.contains(&n.id));
        let in_geomean = r
            .tables
            .iter()
            .flat_map(|t| &t.geomean)
            .any(|g| g.notes.contains(&n.id));
        return in_rows || !in_geomean;
    }
    true
}

/// The compact layout's tables, in order.
fn compact_tables(r: &CompareReport, pm: &str) -> Vec<Table> {
    let mut v: Vec<Table> = compact_blocks(r)
        .into_iter()
        .map(|(c, k, b)| compact_table(r, c, k, b, pm))
        .collect();
    v.extend(compact_geomean_tables(r));
    v
}

//! The self-contained HTML report: one file with inline CSS, inline SVG
//! and a small inline script; nothing is loaded from anywhere, so it can be
//! mailed, archived, or opened offline.
//!
//! The script checks, once the page has loaded, that every chart has drawn
//! marks with a size, and records the result on `<body>`: `data-ok="true"`
//! and `data-charts="N"`, or `data-error="..."`. The browser test reads
//! those attributes from the DOM headless Chromium dumps.

use crate::compare::{CompareReport, MetricTable, Role};
use crate::compare_render::{self, Layout};
use crate::dataset::{Case, Dataset};
use crate::series::{self, PAGES_MIGRATED};
use crate::svg::{self, StripPoint, SvgLine};
use crate::table::html_escape as esc;
use numalab_record::{Better, RunRecord};
use std::fmt::Write as _;

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1400px;padding:0 1.5em 3em;color:#222;background:#fff}
h1{font-size:1.6em;margin:.8em 0 .2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
h3{margin:1.4em 0 .4em}h4{margin:1em 0 .3em}
p.meta,p.legend{color:#555;font-size:.9em;margin:.3em 0}
nav a{margin-right:1em}
table.cmp{border-collapse:collapse;font-size:.88em;margin:.4em 0 .8em;font-variant-numeric:tabular-nums}
div.table-scroll{max-width:100%;overflow-x:auto}
table.cmp th,table.cmp td{border:1px solid #ddd;padding:.2em .55em;word-break:normal;overflow-wrap:normal}
table.cmp td.r,table.cmp th.r{white-space:nowrap}
table.cmp th{background:#f3f3f3}table.cmp td.r,table.cmp th.r{text-align:right}
table.cmp tr.summary td{font-weight:600;background:#fafafa}
td.better{color:#07602f;font-weight:600}td.worse{color:#b00020;font-weight:600}
table.cmp caption{text-align:left;font-weight:600;padding:.2em 0}
.charts{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}
figure{margin:0;border:1px solid #eee;padding:.3em;background:#fff}
figcaption{font-size:.82em;color:#555;max-width:640px}
svg.chart{max-width:100%;height:auto;font-size:12px}
svg.chart text.title{font-weight:600;font-size:13px}
svg.chart text.tick{fill:#444;font-size:11px}svg.chart text.label{fill:#333}
ol.notes{list-style:none;padding-left:1em}ol.notes li{margin:.2em 0;font-size:.92em}
details{margin:.5em 0}summary{cursor:pointer;font-weight:600}
code{font-size:.92em}
"#;

const SCRIPT: &str = r#"
(function(){
  function check(){
    var charts=document.querySelectorAll('svg.chart');
    var bad=[];
    for(var i=0;i<charts.length;i++){
      var c=charts[i];
      var marks=c.querySelectorAll('.marks path,.marks circle,.marks rect,.marks line');
      var drawn=0;
      for(var j=0;j<marks.length;j++){
        var b=marks[j].getBBox();
        if(b.width>0||b.height>0){drawn++;}
      }
      if(drawn===0){bad.push(c.getAttribute('aria-label'));}
    }
    var expected=parseInt(document.body.getAttribute('data-expected-charts'),10);
    document.body.setAttribute('data-charts',String(charts.length));
    if(bad.length>0){
      document.body.setAttribute('data-error','charts with nothing drawn: '+bad.join('; '));
    }else if(charts.length!==expected){
      document.body.setAttribute('data-error','expected '+expected+' charts, found '+charts.length);
    }else{
      document.body.setAttribute('data-ok','true');
    }
  }
  if(document.readyState==='loading'){document.addEventListener('DOMContentLoaded',check);}else{check();}
})();
"#;

struct Page {
    body: String,
    charts: usize,
}

impl Page {
    fn figure(&mut self, svg: Option<String>, caption: &str, missing: &str) {
        match svg {
            Some(s) => {
                self.charts += 1;
                let _ = write!(
                    self.body,
                    "<figure>{s}<figcaption>{}</figcaption></figure>",
                    esc(caption)
                );
            }
            None => {
                if !missing.is_empty() {
                    let _ = write!(self.body, "<p class=\"meta\">{}</p>", esc(missing));
                }
            }
        }
    }
}

fn metric_axis_label(t: &crate::compare::MetricTable) -> String {
    let better = match t.better {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
    };
    if t.unit.is_empty() {
        format!("{} ({better})", t.metric)
    } else {
        format!("{} ({}, {better})", t.metric, t.unit)
    }
}

/// The header's account of the inputs: one path as is, else how many and
/// the directory they have in common.
fn inputs_text(inputs: &[String]) -> String {
    match inputs {
        [] => "no input".into(),
        [one] => one.clone(),
        _ => {
            let paths: Vec<&std::path::Path> = inputs.iter().map(std::path::Path::new).collect();
            let mut common: Vec<std::path::Component> = paths[0].components().collect();
            for p in &paths[1..] {
                let n = common
                    .iter()
                    .zip(p.components())
                    .take_while(|(a, b)| **a == *b)
                    .count();
                common.truncate(n);
            }
            let dir: std::path::PathBuf = common.iter().collect();
            if dir.as_os_str().is_empty() {
                format!("{} inputs", inputs.len())
            } else {
                format!("{} inputs under {}", inputs.len(), dir.display())
            }
        }
    }
}

/// The whole report. `inputs` names what was read (the header gives their
/// number and common directory).
/// Runs of one configuration in one case drawn one by one (in Runs and
/// Scheduling, and as lines in Over time): the first successful runs by
/// repetition, and the first failed ones. Beyond it a group's runs are
/// summarised: counted in the tables and the strip charts, not drawn, so
/// that the report grows with the cases and configurations, not with the
/// runs (10,000 runs in 28 groups: 4 MiB, where drawing every run took
/// 184 MiB).
pub const RUNS_DRAWN: usize = 10;

/// Points drawn per configuration in a strip chart of the Comparison:
/// beyond it, the runs at evenly spaced ranks (the smallest and the
/// largest among them) and the flagged outliers; the mean and the
/// whisker are of every run.
pub const STRIP_POINTS: usize = 40;

/// A file name as a relative URL: every byte but unreserved ones
/// (`A-Z a-z 0-9 - . _ ~`) percent-encoded, so `#`, `?`, `%` and spaces
/// in the name still lead to the file.
fn href(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// How [`report_with`] writes the report.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The file beside the report that holds every run's values (the
    /// `numalab export` CSV), linked where runs are not drawn: a name
    /// relative to the report's directory.
    pub runs_file: Option<String>,
}

/// Whether some group has more runs than the report draws one by one
/// ([`RUNS_DRAWN`]).
pub fn summarises(ds: &Dataset) -> bool {
    ds.groups
        .iter()
        .any(|g| g.ok.len() > RUNS_DRAWN || g.failed.len() > RUNS_DRAWN)
}

/// The indices of `values` a strip chart draws: all of them up to
/// [`STRIP_POINTS`], else that many at evenly spaced ranks and the
/// outliers.
fn strip_drawn(values: &[f64], outliers: &[usize]) -> Vec<bool> {
    let n = values.len();
    if n <= STRIP_POINTS {
        return vec![true; n];
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut drawn = vec![false; n];
    for k in 0..STRIP_POINTS {
        drawn[order[(k * (n - 1) + (STRIP_POINTS - 1) / 2) / (STRIP_POINTS - 1)]] = true;
    }
    for &i in outliers {
        if i < n {
            drawn[i] = true;
        }
    }
    drawn
}

pub fn report(ds: &Dataset, cmp: &CompareReport, inputs: &[String]) -> String {
    report_with(ds, cmp, inputs, &Options::default())
}

/// [`report`], with a side file of every run's values to link when runs
/// are summarised.
pub fn report_with(ds: &Dataset, cmp: &CompareReport, inputs: &[String], opts: &Options) -> String {
    let mut p = Page {
        body: String::new(),
        charts: 0,
    };
    header(&mut p, cmp, inputs);
    let drawn = drawn_runs(ds);
    let traced = drawn
        .runs
        .iter()
        .any(|&(_, _, i)| ds.runs[i].record.sched.is_some());
    nav(&mut p, traced);

    // Configurations and cases.
    configurations_section(&mut p, cmp);

    figures_section(&mut p, cmp);

    // Comparison: per metric, the table and the runs per configuration.
    comparison_section(&mut p, cmp);

    // Notes.
    notes_section(&mut p, cmp);

    // Over time: one colour per configuration, every run drawn.
    over_time_section(&mut p, ds, drawn.ok_not_drawn);

    // Scheduling facts of traced runs, the tables of `show --sched`.
    if traced {
        scheduling_section(&mut p, ds, &drawn);
    }

    // Runs.
    runs_section(&mut p, ds, &drawn, &elsewhere(opts));

    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>numalab report: baseline {}</title><style>{CSS}</style></head>\n<body data-expected-charts=\"{}\">\n{}\n<script>{SCRIPT}</script>\n</body></html>\n",
        esc(&cmp.baseline),
        p.charts,
        p.body
    );
    html
}

/// The header: the title, what was read and the baseline, and the
/// grouping and the filters when not the default.
fn header(p: &mut Page, cmp: &CompareReport, inputs: &[String]) {
    let _ = write!(p.body, "<header><h1>numalab report</h1>");
    let _ = write!(
        p.body,
        "<p class=\"meta\">numalab {} &middot; {} run{} ({} failed) from {} &middot; baseline <b>{}</b></p>",
        esc(&cmp.numalab_version),
        cmp.ok_runs + cmp.failed_runs,
        if cmp.ok_runs + cmp.failed_runs == 1 { "" } else { "s" },
        cmp.failed_runs,
        esc(&inputs_text(inputs)),
        esc(&cmp.baseline)
    );
    if !cmp.group_by.is_empty() || !cmp.filters.is_empty() {
        let mut s = String::new();
        if !cmp.group_by.is_empty() {
            s += &format!("configurations by {}", cmp.group_by.join("/"));
        }
        if !cmp.filters.is_empty() {
            if !s.is_empty() {
                s += " · ";
            }
            s += &format!("only runs with {}", cmp.filters.join(", "));
        }
        let _ = write!(p.body, "<p class=\"meta\">{}</p>", esc(&s));
    }
}

/// The runs drawn one by one, and how many are not.
struct Drawn<'a> {
    /// Every run drawn, in the order of the Runs section: by case,
    /// configuration, successful runs first; at most RUNS_DRAWN successful
    /// and RUNS_DRAWN failed runs of a group. Each as (case, configuration,
    /// index into the dataset's runs).
    runs: Vec<(&'a str, &'a str, usize)>,
    /// Runs not drawn, successful or failed.
    not_drawn: usize,
    /// Successful runs not drawn.
    ok_not_drawn: usize,
}

/// Which runs are drawn one by one (the first [`RUNS_DRAWN`] successful
/// and failed runs of each group), and how many are not.
fn drawn_runs(ds: &Dataset) -> Drawn<'_> {
    let mut runs: Vec<(&str, &str, usize)> = Vec::new();
    for (ci, case) in ds.cases.iter().enumerate() {
        for g in ds.groups.iter().filter(|g| g.case == ci) {
            let cfg = ds.configs[g.config].name.as_str();
            for &i in
                g.ok.iter()
                    .take(RUNS_DRAWN)
                    .chain(g.failed.iter().take(RUNS_DRAWN))
            {
                runs.push((case.name.as_str(), cfg, i));
            }
        }
    }
    let not_drawn = ds
        .groups
        .iter()
        .map(|g| g.ok.len() + g.failed.len())
        .sum::<usize>()
        .saturating_sub(runs.len());
    let ok_not_drawn: usize = ds
        .groups
        .iter()
        .map(|g| g.ok.len().saturating_sub(RUNS_DRAWN))
        .sum();
    Drawn {
        runs,
        not_drawn,
        ok_not_drawn,
    }
}

/// Where the runs not drawn are: a sentence, in HTML.
fn elsewhere(opts: &Options) -> String {
    let show = "<code>numalab show RECORD</code> draws any run";
    match &opts.runs_file {
        Some(f) => format!(
            "Every run's values are in <a href=\"{}\">{}</a> beside this file (one row per run and metric, as <code>numalab export</code> writes them), and {show}",
            href(f),
            esc(f)
        ),
        None => format!("{show}, and <code>numalab export</code> lists every run's values"),
    }
}

/// The header's links to the sections, Scheduling only when `traced`.
fn nav(p: &mut Page, traced: bool) {
    p.body.push_str("<nav><a href=\"#configurations\">Configurations</a><a href=\"#figures\">Figures</a><a href=\"#comparison\">Comparison</a><a href=\"#notes\">Notes</a><a href=\"#over-time\">Over time</a>");
    if traced {
        p.body
            .push_str("<a href=\"#sched\">Scheduling (traced)</a>");
    }
    p.body.push_str("<a href=\"#runs\">Runs</a></nav></header>");
}

/// Configurations and cases: a table of the configurations, then the
/// cases with their position_between_bounds and common parameters.
fn configurations_section(p: &mut Page, cmp: &CompareReport) {
    p.body
        .push_str("<section id=\"configurations\"><h2>Configurations</h2>");
    let mut t = crate::table::Table::new(
        "",
        vec![
            crate::table::Column::key("configuration"),
            crate::table::Column::left("role"),
            crate::table::Column::left("backend"),
            crate::table::Column::right("runs"),
            crate::table::Column::right("failed"),
            crate::table::Column::left("host"),
            crate::table::Column::left("kernel"),
            crate::table::Column::left("CPU"),
            crate::table::Column::left("THP"),
            crate::table::Column::left("numa_balancing"),
            crate::table::Column::right("nodes"),
        ],
    );
    for c in &cmp.configurations {
        let m = c.machine.clone();
        let o = |v: Option<String>| v.unwrap_or_else(|| "n/a".into());
        t.push(vec![
            c.name.clone(),
            if c.is_baseline {
                "baseline".into()
            } else {
                String::new()
            },
            c.backend.clone(),
            (c.ok_runs + c.failed_runs).to_string(),
            c.failed_runs.to_string(),
            c.host.clone(),
            m.as_ref().map(|m| m.kernel.clone()).unwrap_or_default(),
            o(m.as_ref().and_then(|m| m.cpu_model.clone())),
            o(m.as_ref().and_then(|m| m.thp_enabled.clone())),
            o(m.as_ref().and_then(|m| m.numa_balancing.clone())),
            m.as_ref().map(|m| m.nodes.to_string()).unwrap_or_default(),
        ]);
    }
    p.body.push_str(&t.to_html());
    p.body.push_str("<h3>Cases</h3><ul>");
    let families = crate::autonuma::positions_by_cases(&cmp.positions);
    for (i, c) in cmp.cases.iter().enumerate() {
        let _ = write!(p.body, "<li><code>{}</code></li>", esc(&c.name));
        // position_between_bounds under the last case of its set.
        for ps in families.iter().filter(|ps| ps[0].cases.last() == Some(&i)) {
            let first = ps[0];
            let name = if first.variant.is_empty() {
                first.benchmark.clone()
            } else {
                format!("{} {}", first.benchmark, first.variant)
            };
            let _ = write!(
                p.body,
                "<li>{}: {}</li>",
                esc(&name),
                esc(&crate::autonuma::position_text(ps))
            );
        }
    }
    let mut benches: Vec<&str> = cmp.cases.iter().map(|c| c.benchmark.as_str()).collect();
    benches.dedup();
    for bn in benches {
        let common = compare_render::common_params(cmp, bn);
        if !common.is_empty() {
            let _ = write!(
                p.body,
                "<li>{} in every case: <code>{}</code></li>",
                esc(bn),
                esc(&common.join(" "))
            );
        }
    }
    p.body.push_str("</ul></section>");
}

/// The Comparison: per metric, the table and the runs per configuration.
fn comparison_section(p: &mut Page, cmp: &CompareReport) {
    let _ = write!(p.body, "<section id=\"comparison\"><h2>Comparison</h2>");
    let _ = write!(
        p.body,
        "<p class=\"meta\">{}</p>",
        esc(&compare_render::explanation(cmp, Layout::Full))
    );
    for t in &cmp.tables {
        metric_comparison(p, cmp, t);
    }
    p.body.push_str("</section>");
}

/// One metric's comparison: its table, the table normalised to the
/// baseline, and a strip chart of each case.
fn metric_comparison(p: &mut Page, cmp: &CompareReport, t: &MetricTable) {
    let _ = write!(
        p.body,
        "<h3 id=\"metric-{}\">{}</h3>",
        esc(&t.metric),
        esc(&metric_axis_label(t))
    );
    let mut tab = compare_render::metric_table(cmp, t);
    tab.title.clear();
    p.body.push_str(&tab.to_html());
    let mut norm = compare_render::normalized_table(cmp, t);
    norm.title = format!("Normalised to {}", cmp.baseline);
    p.body.push_str(&format!(
        "<details><summary>Normalised to the baseline</summary>{}</details>",
        norm.to_html()
    ));
    p.body.push_str("<div class=\"charts\">");
    let mut cases: Vec<usize> = t.rows.iter().map(|r| r.case).collect();
    cases.dedup();
    for c in cases {
        strip_figure(p, cmp, t, c);
    }
    p.body.push_str("</div>");
}

/// The strip chart of one metric in case `c`: each configuration's runs as
/// points, the mean as a bar, and the verdicts in its caption.
fn strip_figure(p: &mut Page, cmp: &CompareReport, t: &MetricTable, c: usize) {
    let groups: Vec<svg::StripGroup> = t
        .rows
        .iter()
        .filter(|r| r.case == c)
        .map(|r| {
            let name = cmp.configurations[r.config].name.clone();
            let pts = r
                .values
                .iter()
                .enumerate()
                .zip(strip_drawn(&r.values, &r.outliers))
                .map(|((i, v), drawn)| StripPoint {
                    hidden: !drawn,
                    value: *v,
                    outlier: r.outliers.contains(&i),
                    tooltip: format!(
                        "{name} run {}: {} {}{}",
                        r.repetitions[i],
                        crate::num::value(*v),
                        t.unit,
                        if r.outliers.contains(&i) {
                            " (outlier, kept)"
                        } else {
                            ""
                        }
                    ),
                })
                .collect();
            (name, r.config, pts)
        })
        .collect();
    let verdicts: Vec<String> = t
        .rows
        .iter()
        .filter(|r| r.case == c && r.role == Role::Candidate)
        .filter_map(|r| {
            r.comparison.as_ref().map(|k| {
                format!(
                    "{}: {}",
                    cmp.configurations[r.config].name,
                    compare_render::verdict_word(k.verdict)
                )
            })
        })
        .collect();
    let title = format!("{}: {}", cmp.cases[c].name, t.metric);
    let many = t
        .rows
        .iter()
        .any(|r| r.case == c && r.values.len() > STRIP_POINTS);
    let caption = format!(
        "{} (red ring: flagged outlier, kept), the mean as a bar, ±1 stddev as a whisker{}.{}",
        if many {
            format!("Each run as a point, or, for a configuration of more than {STRIP_POINTS} runs, {STRIP_POINTS} runs at evenly spaced ranks (its smallest and largest among them) and the outliers")
        } else {
            "Each run as a point".to_string()
        },
        if many { ", both of all runs" } else { "" },
        if verdicts.is_empty() {
            String::new()
        } else {
            format!(" Verdict vs {}: {}.", cmp.baseline, verdicts.join(", "))
        }
    );
    p.figure(
        svg::strip_chart(&title, &metric_axis_label(t), &groups),
        &caption,
        &format!("{title}: no successful run has this metric."),
    );
}

/// The Notes, a note that differs between metrics only by the metric it
/// begins with written once.
fn notes_section(p: &mut Page, cmp: &CompareReport) {
    p.body.push_str("<section id=\"notes\"><h2>Notes</h2>");
    if cmp.notes.is_empty() {
        p.body.push_str("<p class=\"meta\">None.</p>");
    } else {
        // A note that differs between metrics only by the metric it
        // begins with ("ElapsedTime: no geomean: ...", once per metric)
        // is written once, with the metrics it applies to; every note's
        // id stays an anchor, so the tables' references still land.
        let metrics: std::collections::HashSet<&str> =
            cmp.tables.iter().map(|t| t.metric.as_str()).collect();
        let mut grouped: Vec<(Vec<usize>, Vec<&str>, &str)> = Vec::new();
        for n in &cmp.notes {
            let split = n.text.split_once(": ").filter(|(m, _)| metrics.contains(m));
            match split {
                Some((m, rest)) => {
                    if let Some(g) = grouped.iter_mut().find(|g| !g.1.is_empty() && g.2 == rest) {
                        g.0.push(n.id);
                        g.1.push(m);
                    } else {
                        grouped.push((vec![n.id], vec![m], rest));
                    }
                }
                None => grouped.push((vec![n.id], Vec::new(), n.text.as_str())),
            }
        }
        p.body.push_str("<ol class=\"notes\">");
        for (ids, ms, text) in &grouped {
            let nums: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
            let _ = write!(
                p.body,
                "<li id=\"note-{}\"><b>{}.</b> ",
                ids[0],
                nums.join(", ")
            );
            for id in &ids[1..] {
                let _ = write!(p.body, "<span id=\"note-{id}\"></span>");
            }
            if ms.is_empty() {
                p.body.push_str(&esc(text));
            } else {
                let _ = write!(p.body, "{}: {}", esc(&ms.join(", ")), esc(text));
            }
            p.body.push_str("</li>");
        }
        p.body.push_str("</ol>");
    }
    p.body.push_str("</section>");
}

/// Over time: pages migrated and progress vs time of each case, one
/// colour per configuration.
fn over_time_section(p: &mut Page, ds: &Dataset, ok_not_drawn: usize) {
    if ok_not_drawn == 0 {
        p.body.push_str("<section id=\"over-time\"><h2>Over time</h2><p class=\"meta\">One colour per configuration; every successful run is a line (hover for which).</p>");
    } else {
        let _ = write!(
            p.body,
            "<section id=\"over-time\"><h2>Over time</h2><p class=\"meta\">One colour per configuration; the first {RUNS_DRAWN} successful runs of each configuration in a case are lines (hover for which), {ok_not_drawn} more are not drawn.</p>"
        );
    }
    for (ci, case) in ds.cases.iter().enumerate() {
        over_time_case(p, ds, ci, case);
    }
    p.body.push_str("</section>");
}

/// One case's charts over time: pages migrated (or a sentence when none
/// was) and progress, the first [`RUNS_DRAWN`] successful runs of each
/// configuration as lines.
fn over_time_case(p: &mut Page, ds: &Dataset, ci: usize, case: &Case) {
    let _ = write!(p.body, "<h3>{}</h3><div class=\"charts\">", esc(&case.name));
    let groups: Vec<_> = ds.groups.iter().filter(|g| g.case == ci).collect();
    // Colour by configuration, the same in every chart of the report.
    let names: Vec<String> = ds.configs.iter().map(|c| c.name.clone()).collect();
    let mut migrated = Vec::new();
    let mut progress = Vec::new();
    let mut pct = true;
    let simulated = groups.iter().all(|g| ds.configs[g.config].backend == "sim");
    for g in &groups {
        let si = g.config;
        for r in ds.ok_records(g).into_iter().take(RUNS_DRAWN) {
            let tip = format!("{} run {}", ds.configs[g.config].name, r.repetition.index);
            if let Some(pts) = series::vmstat(r, PAGES_MIGRATED) {
                migrated.push(SvgLine {
                    series: si,
                    points: pts,
                    tooltip: tip.clone(),
                });
            }
            if let Some((pts, is_pct)) = series::progress_total(r) {
                pct &= is_pct;
                progress.push(SvgLine {
                    series: si,
                    points: pts,
                    tooltip: tip,
                });
            }
        }
    }
    let none_migrated = !migrated.is_empty()
        && migrated
            .iter()
            .all(|l| l.points.iter().all(|&(_, y)| y == 0.0));
    if none_migrated {
        let _ = write!(
            p.body,
            "<p class=\"meta\">{}</p>",
            esc(&format!(
                "{}: no page was migrated in any run ({PAGES_MIGRATED} stayed 0), so no chart.",
                case.name
            ))
        );
    } else {
        p.figure(
            svg::line_chart(
                &format!("{}: pages migrated vs time", case.name),
                "Time (s)",
                "pages migrated",
                &names,
                &migrated,
            ),
            &if simulated {
                format!("{PAGES_MIGRATED} as the simulator counts it, as a delta from each run's start.")
            } else {
                format!("{PAGES_MIGRATED} from /proc/vmstat, as a delta from each run's start.")
            },
            "No run of this case recorded pages migrated.",
        );
    }
    p.figure(
        svg::line_chart(
            &format!("{}: progress vs time", case.name),
            "Time (s)",
            if pct {
                "% of the work done"
            } else {
                "work units done"
            },
            &names,
            &progress,
        ),
        "Work done by all tasks together.",
        "No run of this case recorded progress.",
    );
    p.body.push_str("</div>");
}

/// Scheduling (traced): the `show --sched` tables of each run drawn.
fn scheduling_section(p: &mut Page, ds: &Dataset, drawn: &Drawn) {
    let (runs, not_drawn) = (&drawn.runs, drawn.not_drawn);
    let _ = write!(
        p.body,
        "<section id=\"sched\"><h2>Scheduling (traced)</h2><p class=\"meta\">The exact scheduling facts of each run recorded with --trace (docs/trace.md), as <code>numalab show --sched</code> prints them{}.</p>",
        if not_drawn > 0 {
            " (of the runs drawn in Runs)"
        } else {
            ""
        }
    );
    for &(case, cfg, i) in runs {
        let run = &ds.runs[i];
        sched_section(p, case, cfg, &run.record, &run.path.display().to_string());
    }
    p.body.push_str("</section>");
}

/// Runs: each run drawn, and where the others are when some are not.
fn runs_section(p: &mut Page, ds: &Dataset, drawn: &Drawn, elsewhere: &str) {
    let (runs, not_drawn) = (&drawn.runs, drawn.not_drawn);
    p.body.push_str("<section id=\"runs\"><h2>Runs</h2><p class=\"meta\">Per run: memory per node over time (the convergence chart: memory starts on one node and moves), and each task's node residency.</p>");
    if not_drawn > 0 {
        let _ = write!(
            p.body,
            "<p class=\"meta summarised\">{} of {} runs are drawn here: the first {RUNS_DRAWN} successful and {RUNS_DRAWN} failed runs of each configuration in each case; the other {not_drawn} are in the tables and the strip charts above. {}.</p>",
            runs.len(),
            ds.runs.len(),
            elsewhere
        );
    }
    for &(case, cfg, i) in runs {
        let run = &ds.runs[i];
        run_section(p, case, cfg, &run.record, &run.path.display().to_string());
    }
    p.body.push_str("</section>");
}

/// The unit of a memory axis whose largest value is `max_mib` MiB, and
/// what to divide MiB by for it: MiB below 10 000 MiB (ticks without a
/// decimal suffix), GiB below 10 000 GiB, else TiB.
pub fn memory_axis_unit(max_mib: f64) -> (f64, &'static str) {
    if max_mib < 10_000.0 {
        (1.0, "MiB")
    } else if max_mib < 10_000.0 * 1024.0 {
        (1024.0, "GiB")
    } else {
        (1024.0 * 1024.0, "TiB")
    }
}

/// Beyond this many tasks the residency chart shows groups, not tasks.
pub const MAX_RESIDENCY_BARS: usize = 12;

/// Tasks grouped by the node they spent most time on: per group the mean
/// share on each node, named `N tasks on nodeK`.
fn residency_by_main_node(
    tasks: &[(String, Vec<f64>)],
    nodes: &[String],
) -> Vec<(String, Vec<f64>)> {
    let mut groups: Vec<(usize, usize, Vec<f64>)> = Vec::new();
    for (_, pct) in tasks {
        let main = pct
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i)
            .unwrap_or(0);
        match groups.iter_mut().find(|g| g.0 == main) {
            Some(g) => {
                g.1 += 1;
                for (s, v) in g.2.iter_mut().zip(pct) {
                    *s += v;
                }
            }
            None => groups.push((main, 1, pct.clone())),
        }
    }
    groups.sort_by_key(|g| g.0);
    groups
        .into_iter()
        .map(|(main, n, sum)| {
            let node = nodes
                .get(main)
                .cloned()
                .unwrap_or_else(|| format!("node{main}"));
            (
                format!("{n} task{} on {node}", if n == 1 { "" } else { "s" }),
                sum.into_iter().map(|v| v / n as f64).collect(),
            )
        })
        .collect()
}

/// One traced run's scheduling figures (nothing for a run not traced):
/// its heading, what was traced, and the tables of `show --sched`.
fn sched_section(p: &mut Page, case: &str, cfg: &str, r: &RunRecord, path: &str) {
    let Some(f) = crate::sched::figures(r) else {
        return;
    };
    let _ = write!(
        p.body,
        "<h3>{} &middot; {} &middot; run {} of {}</h3><p class=\"meta\">record <code>{}</code></p>",
        esc(case),
        esc(cfg),
        r.repetition.index,
        r.repetition.of,
        esc(path)
    );
    for l in &f.head {
        let _ = write!(p.body, "<p class=\"meta\">{}</p>", esc(l));
    }
    for t in f.tables() {
        // The title as a heading, as the comparison's tables have.
        let mut t = t.clone();
        let _ = write!(p.body, "<h4>{}</h4>", esc(&std::mem::take(&mut t.title)));
        p.body.push_str(&t.to_html());
    }
    if let Some(n) = &f.new_tasks {
        // A word joiner keeps each arrow whole where the line breaks.
        let _ = write!(
            p.body,
            "<p>{}</p>",
            esc(&n.order).replace("-&gt;", "-\u{2060}&gt;")
        );
        if !n.spread.is_empty() {
            p.body.push_str("<ul>");
            for l in &n.spread {
                let _ = write!(p.body, "<li>{}</li>", esc(l));
            }
            p.body.push_str("</ul>");
        }
    }
}

/// The seed-style figures over all runs ([`crate::figures`]): each time
/// metric against a numeric parameter, and bars per case.
fn figures_section(p: &mut Page, cmp: &CompareReport) {
    let figs = crate::figures::figures(cmp);
    p.body.push_str("<section id=\"figures\"><h2>Figures</h2>");
    if figs.is_empty() {
        p.body
            .push_str("<p class=\"meta\">No metric in seconds to draw.</p></section>");
        return;
    }
    p.body.push_str("<p class=\"meta\">Means over the successful runs, one colour per configuration. A metric against a parameter when a benchmark's cases differ in one numeric parameter; otherwise bars per case, normalised to the baseline in the same case when there is more than one configuration.</p><div class=\"charts\">");
    let names: Vec<String> = cmp.configurations.iter().map(|c| c.name.clone()).collect();
    for s in &figs.scaling {
        let lines: Vec<SvgLine> = s
            .lines
            .iter()
            .map(|(ci, name, pts)| SvgLine {
                series: *ci,
                points: pts.iter().map(|(x, st)| (*x, st.mean)).collect(),
                tooltip: format!(
                    "{name}: {}",
                    pts.iter()
                        .map(|(x, st)| format!(
                            "{}={} {}{}",
                            s.param,
                            crate::num::value(*x),
                            crate::num::value(st.mean),
                            st.stddev
                                .map(|sd| format!("({})", crate::num::value(sd)))
                                .unwrap_or_default()
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
            .collect();
        let caption = if s.metric == crate::figures::ELAPSED_LESS_HACKBENCH {
            "Elapsed time less the load peak's (hackbench) time, per run, then the mean: the E - H that seed 000 compares.".to_string()
        } else {
            format!(
                "Mean {} of the runs of each case, one line per configuration.",
                s.metric
            )
        };
        p.figure(
            svg::line_chart_x(
                &s.title(),
                &s.param,
                &s.y_label(),
                &names,
                &lines,
                s.x_log2(),
            ),
            &caption,
            "",
        );
    }
    for b in &figs.bars {
        let values: Vec<Vec<svg::BarValue>> = b
            .values
            .iter()
            .zip(&b.categories)
            .map(|(row, cat)| {
                row.iter()
                    .zip(&b.configs)
                    .map(|(v, (_, name))| {
                        v.map(|v| (v.value, format!("{cat}, {name}: {}", b.bar_text(&v))))
                    })
                    .collect()
            })
            .collect();
        let caption = match &b.normalised_to {
            Some(base) => format!(
                "Each bar: a configuration's mean {} over its mean in the same case's baseline ({base}), the dashed line at 1; hover for the mean(sd).",
                b.metric
            ),
            None => format!("Each bar: the mean {} over the successful runs; hover for the mean(sd).", b.metric),
        };
        p.figure(
            svg::bar_chart(
                &b.title(),
                b.category_key.as_deref().unwrap_or(""),
                &b.y_label(),
                &b.categories,
                &b.configs,
                &values,
                b.normalised_to.as_ref().map(|_| 1.0),
            ),
            &caption,
            "",
        );
    }
    p.body.push_str("</div></section>");
}

/// The convergence chart of a run, or of one of its processes.
fn memory_figure(p: &mut Page, r: &RunRecord, view: Option<usize>, title: &str, who: Option<&str>) {
    let mem = series::memory_per_node_of(r, view);
    let names: Vec<String> = mem.iter().map(|l| l.name.clone()).collect();
    // Ticks are written in the axis's unit: from 10 000 MiB on, the axis
    // is in GiB, so that no tick reads "20k" on a MiB axis.
    let max_mib = mem
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0_f64, f64::max);
    let (scale, unit) = memory_axis_unit(max_mib);
    let lines: Vec<SvgLine> = mem
        .iter()
        .enumerate()
        .map(|(i, l)| SvgLine {
            series: i,
            points: l.points.iter().map(|&(t, v)| (t, v / scale)).collect(),
            tooltip: l.name.clone(),
        })
        .collect();
    p.figure(
        svg::line_chart(
            &format!("{title}: memory per node"),
            "Time (s)",
            &format!("resident memory ({unit})"),
            &names,
            &lines,
        ),
        &match who {
            Some(w) => format!("Resident memory of {w} on each node (one line per node)."),
            None => "Resident memory of the run's processes on each node (one line per node)."
                .to_string(),
        },
        "This run recorded no memory samples.",
    );
}

/// One run's section: its header, the memory and threads charts of each
/// process (or of the whole run) and its residency chart.
fn run_section(p: &mut Page, case: &str, cfg: &str, r: &RunRecord, path: &str) {
    run_header(p, case, cfg, r, path);
    p.body.push_str("<div class=\"charts\">");
    let title = format!("{case}, {cfg}, run {}", r.repetition.index);
    for view in series::process_views(r) {
        let who = series::process_name(r, view);
        let t = match &who {
            Some(w) => format!("{title}, {w}"),
            None => title.clone(),
        };
        memory_figure(p, r, view, &t, who.as_deref());
        if series::has_threads(r) && r.machine.topology.nodes.len() > 1 {
            threads_figure(p, r, view, &t, who.as_deref());
        }
    }
    residency_figure(p, r, &title);
    p.body.push_str("</div></details>");
}

/// Opens a run's section: its summary line (case, configuration,
/// repetition, status), the record's path and start, its measured
/// metrics and its warnings.
fn run_header(p: &mut Page, case: &str, cfg: &str, r: &RunRecord, path: &str) {
    let status = if r.outcome.is_ok() { "ok" } else { "failed" };
    let _ = write!(
        p.body,
        "<details open><summary>{} &middot; {} &middot; run {} of {} &middot; {status}</summary><p class=\"meta\">record <code>{}</code> &middot; started {}{}</p>",
        esc(case),
        esc(cfg),
        r.repetition.index,
        r.repetition.of,
        esc(path),
        esc(&r.started_at),
        r.outcome
            .reason
            .as_ref()
            .map(|x| format!(" &middot; {}", esc(x)))
            .unwrap_or_default()
    );
    let metrics: Vec<String> = r
        .metrics
        .iter()
        .filter(|(k, _)| !crate::autonuma::is_derived_metric(k))
        .map(|(k, m)| format!("{k} = {} {}", crate::num::value(m.value), m.unit))
        .collect();
    if !metrics.is_empty() {
        let _ = write!(
            p.body,
            "<p class=\"meta\">{}</p>",
            esc(&metrics.join(" · "))
        );
    }
    for w in &r.warnings {
        let _ = write!(p.body, "<p class=\"meta\">warning: {}</p>", esc(w));
    }
}

/// The chart of how many threads of one process view (or the whole run)
/// were on each node at each sample.
fn threads_figure(p: &mut Page, r: &RunRecord, view: Option<usize>, t: &str, who: Option<&str>) {
    let lines = series::tasks_per_node_of(r, view);
    let names: Vec<String> = lines.iter().map(|l| l.name.clone()).collect();
    let svg_lines: Vec<SvgLine> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| SvgLine {
            series: i,
            points: l.points.clone(),
            tooltip: l.name.clone(),
        })
        .collect();
    p.figure(
        svg::line_chart(
            &format!("{t}: threads per node"),
            "Time (s)",
            "threads on the node",
            &names,
            &svg_lines,
        ),
        &format!(
            "How many threads of {} were on each node at each sample (one line per node).",
            who.unwrap_or("the run")
        ),
        "",
    );
}

/// The chart of each task's share of running time per node, or, past
/// `MAX_RESIDENCY_BARS` tasks, one bar per main node with their mean.
fn residency_figure(p: &mut Page, r: &RunRecord, title: &str) {
    let nodes: Vec<String> = r
        .machine
        .topology
        .node_ids()
        .iter()
        .map(|n| format!("node{n}"))
        .collect();
    let tasks: Vec<(String, Vec<f64>)> = r
        .tasks
        .iter()
        .filter(|t| t.residency_observed())
        .map(|t| {
            let moved = if t.initial_node != t.main_node {
                " *"
            } else {
                ""
            };
            (format!("task {}{moved}", t.id), t.node_percent())
        })
        .collect();
    let (tasks, caption) = if tasks.len() > MAX_RESIDENCY_BARS {
        (
            residency_by_main_node(&tasks, &nodes),
            format!(
                "{} tasks, one bar per node they spent most of their time on: the mean share of their running time on each node.",
                tasks.len()
            ),
        )
    } else {
        (
            tasks,
            "Share of each task's running time on each node; * marks a task whose main node is not the node it started on.".to_string(),
        )
    };
    p.figure(
        svg::residency_chart(&format!("{title}: node residency per task"), &nodes, &tasks),
        &caption,
        "This run recorded no per-task residency.",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` runs of one case and one configuration, each with a time
    /// series, reported with a side file to link.
    fn many_runs(n: u32) -> String {
        let records = (1..=n)
            .map(|i| {
                let mut r =
                    numalab_record::example_record("numa02", "A", i, 1.0 + f64::from(i % 7) * 0.01);
                r.repetition.of = n;
                let s0 = r.series.samples[0].clone();
                r.series.samples = (0..20u32)
                    .map(|k| {
                        let mut s = s0.clone();
                        s.t_s = f64::from(k) * 0.05;
                        let k64 = u64::from(k);
                        s.memory_bytes = vec![vec![(20 - k64) << 20, k64 << 20]];
                        s.progress = vec![5 * k64, 5 * k64];
                        s.vmstat
                            .insert("numa_pages_migrated".into(), i64::from(k) * 10);
                        s
                    })
                    .collect();
                (format!("{}.json", r.id).into(), r)
            })
            .collect();
        let ds = Dataset::new(records);
        let cmp = crate::compare(&ds, &Default::default()).unwrap();
        let opts = Options {
            runs_file: Some("r #1.runs.csv".into()),
        };
        report_with(&ds, &cmp, &["r".into()], &opts)
    }

    #[test]
    fn runs_beyond_the_limit_are_summarised_and_the_size_stays_bounded() {
        let k = RUNS_DRAWN as u32;
        let sections = |html: &str| html.matches("<details open><summary>numa02").count();
        // Up to the limit every run is drawn, and nothing says otherwise.
        let at = many_runs(k);
        assert_eq!(sections(&at), RUNS_DRAWN);
        assert!(!at.contains("summarised"), "{at}");
        assert!(!at.contains("runs.csv"));
        assert!(at.contains("every successful run is a line"));
        let one = many_runs(1);
        let per_drawn_run = (at.len() - one.len()) / (RUNS_DRAWN - 1);

        // Beyond it: the first RUNS_DRAWN are drawn, a note says so and
        // links the side file (its name percent-encoded).
        let four = many_runs(4 * k);
        let sixteen = many_runs(16 * k);
        for (html, n) in [(&four, 4 * k), (&sixteen, 16 * k)] {
            assert_eq!(sections(html), RUNS_DRAWN);
            assert!(
                html.contains(&format!("{k} of {n} runs are drawn here")),
                "{html}"
            );
            assert!(html.contains(&format!("the other {} are in the tables", n - k)));
            assert!(html.contains("<a href=\"r%20%231.runs.csv\">r #1.runs.csv</a>"));
            assert!(html.contains(&format!(
                "the first {k} successful runs of each configuration in a case are lines (hover for which), {} more are not drawn",
                n - k
            )));
            // Over time: RUNS_DRAWN lines per chart.
            let over = &html[html.find("<section id=\"over-time\">").unwrap()..];
            let over = &over[..over.find("</section>").unwrap()];
            assert_eq!(over.matches("<path").count() / 2, RUNS_DRAWN, "{over}");
        }
        // Strip charts: at most STRIP_POINTS points per configuration
        // (and the outliers), the mean of every run.
        let comparison = &sixteen[sixteen.find("<section id=\"comparison\">").unwrap()..];
        let comparison = &comparison[..comparison.find("</section>").unwrap()];
        let charts = comparison.matches("<svg").count();
        assert_eq!(charts, 2, "elapsed_s and user_s");
        let points = comparison.matches("<circle").count();
        assert!(
            (charts * STRIP_POINTS..=charts * (STRIP_POINTS + 5)).contains(&points),
            "{points} points"
        );
        assert!(comparison.contains(&format!(
            "for a configuration of more than {STRIP_POINTS} runs"
        )));
        let values: Vec<f64> = (1..=16 * k)
            .map(|i| 1.0 + f64::from(i % 7) * 0.01)
            .collect();
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        assert!(
            comparison.contains(&format!("<title>mean {}</title>", crate::num::value(mean))),
            "{comparison}"
        );
        // Bounded: a run beyond the limit adds a tiny fraction of a drawn
        // run's bytes (its values in the tables' counts, nothing drawn).
        let per_run_beyond = (sixteen.len() - four.len()) / (12 * RUNS_DRAWN);
        assert!(
            per_run_beyond * 50 < per_drawn_run,
            "{per_run_beyond} bytes per run beyond the limit, {per_drawn_run} per drawn run"
        );
    }

    #[test]
    fn strip_points_beyond_the_limit_are_ranks_and_outliers() {
        let values: Vec<f64> = (0..1000).map(|i| f64::from((i * 7919) % 1000)).collect();
        let drawn = strip_drawn(&values, &[3]);
        assert_eq!(drawn.iter().filter(|d| **d).count(), STRIP_POINTS + 1);
        let lo = values.iter().position(|v| *v == 0.0).unwrap();
        let hi = values.iter().position(|v| *v == 999.0).unwrap();
        assert!(drawn[lo] && drawn[hi] && drawn[3]);
        assert!(strip_drawn(&values[..STRIP_POINTS], &[]).iter().all(|d| *d));
    }

    #[test]
    fn many_tasks_residency_is_one_bar_per_main_node() {
        let nodes = vec!["node0".to_string(), "node1".to_string()];
        let tasks: Vec<(String, Vec<f64>)> = (0..20)
            .map(|i| {
                let v = if i % 4 == 0 {
                    vec![20.0, 80.0]
                } else {
                    vec![90.0, 10.0]
                };
                (format!("task {i}"), v)
            })
            .collect();
        let g = residency_by_main_node(&tasks, &nodes);
        assert_eq!(
            g,
            vec![
                ("15 tasks on node0".to_string(), vec![90.0, 10.0]),
                ("5 tasks on node1".to_string(), vec![20.0, 80.0]),
            ]
        );
    }

    #[test]
    fn traced_runs_get_the_sched_tables_and_untraced_reports_no_section() {
        let mut traced = crate::sched::tests::traced(20);
        traced.label = "B".into();
        traced.id.push_str("-traced");
        let plain = numalab_record::example_record("hackbench", "A", 1, 1.0);
        let ds = Dataset::new(vec![
            ("a.json".into(), plain.clone()),
            ("b.json".into(), traced),
        ]);
        let cmp = crate::compare(&ds, &Default::default()).unwrap();
        let html = report(&ds, &cmp, &["r".into()]);
        assert_eq!(html.matches("<h2>Scheduling (traced)</h2>").count(), 1);
        assert!(html.contains("<a href=\"#sched\">"));
        // One traced run: its heading and its three tables, each titled.
        let sched = &html[html.find("<section id=\"sched\">").unwrap()..];
        let sched = &sched[..sched.find("</section>").unwrap()];
        assert_eq!(sched.matches("<h3>").count(), 1, "{sched}");
        assert!(
            sched.contains("<h3>hackbench &middot; B &middot; run 1 of 3</h3>"),
            "{sched}"
        );
        for h in [
            "Time per node (s), migrations and wakeups",
            "Migrations and wakeups by distance",
            "Migrations, node to node",
        ] {
            assert!(
                sched.contains(&format!(
                    "<h4>{h}</h4><div class=\"table-scroll\"><table class=\"cmp\">"
                )),
                "{h}: {sched}"
            );
        }
        assert!(sched.contains("<th class=\"r\">vs waker</th>"), "{sched}");
        assert!(
            sched.contains("Wakeups on an idle CPU: 40 of 80 (50.0%)"),
            "{sched}"
        );
        assert!(sched.contains("20 tasks, grouped by role"), "{sched}");
        assert!(
            sched.contains(
                "<p>CPUs chosen for new tasks, in order: 0 -\u{2060}&gt; 1 -\u{2060}&gt; 2"
            ),
            "{sched}"
        );
        assert!(sched.contains("<li>over LLCs: "), "{sched}");

        let ds = Dataset::new(vec![("a.json".into(), plain)]);
        let cmp = crate::compare(&ds, &Default::default()).unwrap();
        let html = report(&ds, &cmp, &["r".into()]);
        assert!(!html.contains("Scheduling (traced)"));
        assert!(!html.contains("id=\"sched\""));
    }

    #[test]
    fn memory_axes_change_unit_before_ticks_would_need_a_suffix() {
        assert_eq!(memory_axis_unit(9_999.0), (1.0, "MiB"));
        assert_eq!(memory_axis_unit(20_000.0), (1024.0, "GiB"));
        assert_eq!(memory_axis_unit(2e7).1, "TiB");
        // 9 999 MiB is the largest MiB tick: num::axis writes it plain.
        assert_eq!(crate::num::axis(9_000.0, 1_000.0), "9000");
    }

    #[test]
    fn inputs_are_counted_under_their_common_directory() {
        assert_eq!(inputs_text(&["res".into()]), "res");
        assert_eq!(
            inputs_text(&[
                "res/a/x.json".into(),
                "res/a/y.json".into(),
                "res/b.json".into()
            ]),
            "3 inputs under res"
        );
        assert_eq!(inputs_text(&["a.json".into(), "b.json".into()]), "2 inputs");
    }
}

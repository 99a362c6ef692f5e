//! Inline SVG charts for the HTML report, written by hand (see
//! docs/dependencies.md for why not `plotters`): line charts over time,
//! strip charts of runs per configuration, stacked bars of per-task node
//! residency. Every chart is an `<svg class="chart">` whose data marks
//! live in `<g class="marks">`, which is what the report's self-check
//! script and the browser test look for. Text uses the viewer's own
//! sans-serif font; nothing is fetched.

use crate::axis::Axis;
use crate::table::html_escape as esc;
use std::fmt::Write as _;

/// Okabe–Ito colours, distinguishable with the common colour-vision
/// deficiencies, yellow last.
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

const W: f64 = 640.0;
const PLOT_H: f64 = 240.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 30.0;
const AXIS_BOTTOM: f64 = 44.0;
const LEGEND_ROW: f64 = 18.0;

/// One line of a line chart. Lines sharing a `series` index share a
/// colour and one legend entry (e.g. every run of one configuration).
#[derive(Debug, Clone)]
pub struct SvgLine {
    pub series: usize,
    pub points: Vec<(f64, f64)>,
    /// Hover text.
    pub tooltip: String,
}

fn f(v: f64) -> String {
    format!("{v:.1}")
}

struct Frame {
    x: Axis,
    y: Axis,
    px0: f64,
    px1: f64,
    py0: f64,
    py1: f64,
}

impl Frame {
    fn sx(&self, v: f64) -> f64 {
        self.px0 + self.x.frac(v) * (self.px1 - self.px0)
    }
    fn sy(&self, v: f64) -> f64 {
        self.py1 - self.y.frac(v) * (self.py1 - self.py0)
    }
}

fn legend_layout(names: &[String]) -> Vec<(f64, f64)> {
    let mut pos = Vec::new();
    let (mut x, mut row) = (LEFT, 0.0);
    for n in names {
        let w = 22.0 + 7.0 * n.chars().count() as f64 + 14.0;
        if x > LEFT && x + w > W - RIGHT {
            x = LEFT;
            row += 1.0;
        }
        pos.push((x, row));
        x += w;
    }
    pos
}

fn legend_rows(names: &[String]) -> f64 {
    legend_layout(names)
        .last()
        .map(|(_, r)| r + 1.0)
        .unwrap_or(0.0)
}

/// Estimated width in pixels of a 13px bold title: a wide sans-serif
/// glyph on average, so the estimate errs on the long side.
const TITLE_CHAR_W: f64 = 8.6;

fn open_svg(out: &mut String, kind: &str, title: &str, height: f64) {
    // A title that would run past the right edge starts at the left edge
    // instead of the plot's, and one still too long is squeezed to the
    // chart's width (textLength) rather than cut.
    let est = TITLE_CHAR_W * title.chars().count() as f64;
    let (x, fit) = if LEFT + est <= W - 4.0 {
        (LEFT, String::new())
    } else if 4.0 + est <= W - 4.0 {
        (4.0, String::new())
    } else {
        (
            4.0,
            format!(
                " textLength=\"{}\" lengthAdjust=\"spacingAndGlyphs\"",
                f(W - 8.0)
            ),
        )
    };
    let _ = write!(
        out,
        "<svg class=\"chart\" data-kind=\"{kind}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {h}\" width=\"{W}\" height=\"{h}\" role=\"img\" aria-label=\"{t}\"><title>{t}</title><text class=\"title\" x=\"{x}\" y=\"18\"{fit}>{t}</text>",
        h = f(height),
        t = esc(title),
        x = f(x),
    );
}

/// The plot area's outline.
fn frame_rect(out: &mut String, fr: &Frame) {
    let _ = write!(
        out,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>",
        f(fr.px0),
        f(fr.py0),
        f(fr.px1 - fr.px0),
        f(fr.py1 - fr.py0)
    );
}

/// The plot's frame and the y axis's ticks and grid lines.
fn frame_and_y_ticks(out: &mut String, fr: &Frame) {
    frame_rect(out, fr);
    for v in fr.y.ticks() {
        let y = fr.sy(v);
        let _ = write!(
            out,
            "<line x1=\"{}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#ddd\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            f(fr.px0),
            f(fr.px1),
            f(fr.px0 - 6.0),
            f(y + 4.0),
            esc(&fr.y.label(v)),
            y = f(y)
        );
    }
}

/// The axes' labels; the x label `below` further down (under slanted
/// category names).
fn axis_labels(out: &mut String, fr: &Frame, x_label: &str, y_label: &str, below: f64) {
    let _ = write!(
        out,
        "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        f((fr.px0 + fr.px1) / 2.0),
        f(fr.py1 + 36.0 + below),
        esc(x_label)
    );
    // A y label longer than the plot is tall (about 6.5 px a character)
    // is squeezed to the plot's height, not cut at the chart's edges.
    let room = fr.py1 - fr.py0;
    let fit = if 6.5 * y_label.chars().count() as f64 > room {
        format!(
            " textLength=\"{}\" lengthAdjust=\"spacingAndGlyphs\"",
            f(room)
        )
    } else {
        String::new()
    };
    let _ = write!(
        out,
        "<text class=\"label\" transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\"{fit}>{}</text>",
        f((fr.py0 + fr.py1) / 2.0),
        esc(y_label)
    );
}

fn axes(out: &mut String, fr: &Frame, x_label: &str, y_label: &str, x_ticks: bool) {
    out.push_str("<g class=\"axes\">");
    frame_and_y_ticks(out, fr);
    if x_ticks {
        for v in fr.x.ticks() {
            let x = fr.sx(v);
            let _ = write!(
                out,
                "<line x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\" stroke=\"#888\"/><text class=\"tick\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                f(fr.py1),
                f(fr.py1 + 5.0),
                f(fr.py1 + 18.0),
                esc(&fr.x.label(v)),
                x = f(x)
            );
        }
    }
    axis_labels(out, fr, x_label, y_label, 0.0);
    out.push_str("</g>");
}

/// Legend entries `(colour index, name)`.
fn legend(out: &mut String, entries: &[(usize, String)], top: f64) {
    let names: Vec<String> = entries.iter().map(|(_, n)| n.clone()).collect();
    out.push_str("<g class=\"legend\">");
    for ((i, n), (x, row)) in entries.iter().zip(legend_layout(&names)) {
        let y = top + row * LEGEND_ROW;
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>",
            f(x),
            f(y - 9.0),
            color(*i),
            f(x + 22.0),
            f(y),
            esc(n)
        );
    }
    out.push_str("</g>");
}

/// A line chart; `names[i]` names series `i`. `None` when no line has a
/// finite point (the caller then says so in words instead of drawing an
/// empty frame).
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    names: &[String],
    lines: &[SvgLine],
) -> Option<String> {
    line_chart_x(title, x_label, y_label, names, lines, false)
}

/// [`line_chart`], its x axis base-2 logarithmic when `x_log2`.
pub fn line_chart_x(
    title: &str,
    x_label: &str,
    y_label: &str,
    names: &[String],
    lines: &[SvgLine],
    x_log2: bool,
) -> Option<String> {
    let all: Vec<(f64, f64)> = lines.iter().flat_map(finite_points).collect();
    if all.is_empty() {
        return None;
    }
    let (xmin, xmax) = all.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |a, p| {
        (a.0.min(p.0), a.1.max(p.0))
    });
    let (ymin, ymax) = all.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |a, p| {
        (a.0.min(p.1), a.1.max(p.1))
    });
    let fr = Frame {
        x: if x_log2 && xmin > 0.0 {
            Axis::log2(xmin, xmax)
        } else {
            Axis::covering(xmin, xmax, 8, true)
        },
        y: Axis::covering(ymin, ymax, 5, true),
        px0: LEFT,
        px1: W - RIGHT,
        py0: TOP,
        py1: TOP + PLOT_H,
    };
    let entries = line_legend_entries(names, lines);
    let entry_names: Vec<String> = entries.iter().map(|(_, n)| n.clone()).collect();
    let legend_top = TOP + PLOT_H + AXIS_BOTTOM + 14.0;
    let height = legend_top + legend_rows(&entry_names) * LEGEND_ROW + 4.0;
    let mut out = String::new();
    open_svg(&mut out, "line", title, height);
    axes(&mut out, &fr, x_label, y_label, true);
    out.push_str("<g class=\"marks\">");
    for l in lines {
        let p = finite_points(l);
        if p.is_empty() {
            continue;
        }
        line_marks(&mut out, &fr, l, &p);
    }
    out.push_str("</g>");
    legend(&mut out, &entries, legend_top);
    out.push_str("</svg>");
    Some(out)
}

/// A line's points with finite coordinates.
fn finite_points(l: &SvgLine) -> Vec<(f64, f64)> {
    l.points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect()
}

/// A line chart's legend: the series that have a line, in index order.
fn line_legend_entries(names: &[String], lines: &[SvgLine]) -> Vec<(usize, String)> {
    let mut used: Vec<usize> = lines
        .iter()
        .filter(|l| !finite_points(l).is_empty())
        .map(|l| l.series)
        .collect();
    used.sort_unstable();
    used.dedup();
    used.iter()
        .map(|&i| {
            (
                i,
                names
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("series {i}")),
            )
        })
        .collect()
}

/// One series' marks in a line chart: a path through its finite points
/// and, up to 60 points, a dot at each.
fn line_marks(out: &mut String, fr: &Frame, l: &SvgLine, p: &[(f64, f64)]) {
    let c = color(l.series);
    let _ = write!(out, "<g class=\"series\" data-series=\"{}\">", l.series);
    let _ = write!(out, "<title>{}</title>", esc(&l.tooltip));
    if p.len() > 1 {
        let mut d = String::new();
        for (i, (x, y)) in p.iter().enumerate() {
            let _ = write!(
                d,
                "{}{} {} ",
                if i == 0 { "M" } else { "L" },
                f(fr.sx(*x)),
                f(fr.sy(*y))
            );
        }
        let _ = write!(
            out,
            "<path d=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"1.8\" stroke-opacity=\"0.85\"/>",
            d.trim_end()
        );
    }
    if p.len() <= 60 {
        for (x, y) in p {
            let _ = write!(
                out,
                "<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{c}\"/>",
                f(fr.sx(*x)),
                f(fr.sy(*y))
            );
        }
    }
    out.push_str("</g>");
}

/// One run's value in a strip chart.
#[derive(Debug, Clone)]
pub struct StripPoint {
    pub value: f64,
    pub outlier: bool,
    pub tooltip: String,
    /// Counted in the mean and the whisker but not drawn (a group of
    /// more runs than a chart shows, `html`'s `STRIP_POINTS`).
    pub hidden: bool,
}

/// Runs per configuration as points, with the mean (a bar) and ±1
/// standard deviation (a whisker); outliers ringed in red. `None` when
/// there is no finite value.
/// A group of a strip chart: its name, its colour index, its runs.
pub type StripGroup = (String, usize, Vec<StripPoint>);

pub fn strip_chart(title: &str, y_label: &str, groups: &[StripGroup]) -> Option<String> {
    let vals: Vec<f64> = groups
        .iter()
        .flat_map(|(_, _, p)| p.iter().map(|p| p.value))
        .filter(|v| v.is_finite())
        .collect();
    if vals.is_empty() {
        return None;
    }
    let (lo, hi) = vals
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |a, v| {
            (a.0.min(*v), a.1.max(*v))
        });
    let pad = (hi - lo).abs() * 0.1;
    let y = Axis::covering(lo - pad, hi + pad, 5, false);
    let y = if lo >= 0.0 && y.lo < 0.0 {
        Axis::covering(0.0, hi + pad, 5, false)
    } else {
        y
    };
    let fr = Frame {
        x: Axis {
            lo: 0.0,
            hi: groups.len() as f64,
            step: 1.0,
            log2: false,
        },
        y,
        px0: LEFT,
        px1: W - RIGHT,
        py0: TOP,
        py1: TOP + PLOT_H,
    };
    let height = TOP + PLOT_H + AXIS_BOTTOM;
    let mut out = String::new();
    open_svg(&mut out, "strip", title, height);
    axes(&mut out, &fr, "", y_label, false);
    // Category labels.
    out.push_str("<g class=\"axes\">");
    for (i, (name, _, _)) in groups.iter().enumerate() {
        let _ = write!(
            out,
            "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            f(fr.sx(i as f64 + 0.5)),
            f(fr.py1 + 18.0),
            esc(name)
        );
    }
    out.push_str("</g><g class=\"marks\">");
    for (i, (name, ci, pts)) in groups.iter().enumerate() {
        let c = color(*ci);
        let cx = fr.sx(i as f64 + 0.5);
        let band = (fr.px1 - fr.px0) / groups.len() as f64;
        let finite: Vec<f64> = pts
            .iter()
            .map(|p| p.value)
            .filter(|v| v.is_finite())
            .collect();
        let _ = write!(out, "<g class=\"series\" data-name=\"{}\">", esc(name));
        if let Ok(s) = numalab_stats::Summary::of(&finite) {
            strip_mean(&mut out, &fr, c, cx, band, &s);
        }
        strip_points(&mut out, &fr, c, cx, band, pts);
        out.push_str("</g>");
    }
    out.push_str("</g></svg>");
    Some(out)
}

/// A strip chart group's mean (a bar) and ±1 standard deviation (a
/// whisker), centred at `cx` in a band `band` wide.
fn strip_mean(
    out: &mut String,
    fr: &Frame,
    c: &str,
    cx: f64,
    band: f64,
    s: &numalab_stats::Summary,
) {
    let w = (band * 0.25).min(40.0);
    if let Some(sd) = s.stddev {
        let _ = write!(
            out,
            "<line x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\" stroke=\"{c}\" stroke-width=\"1.5\"><title>mean ± 1 stddev: {} ± {}</title></line>",
            f(fr.sy((s.mean - sd).max(fr.y.lo))),
            f(fr.sy((s.mean + sd).min(fr.y.hi))),
            crate::num::value(s.mean),
            crate::num::value(sd),
            x = f(cx + w + 6.0)
        );
    }
    let _ = write!(
        out,
        "<line x1=\"{}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"{c}\" stroke-width=\"3\"><title>mean {}</title></line>",
        f(cx - w),
        f(cx + w),
        crate::num::value(s.mean),
        y = f(fr.sy(s.mean))
    );
}

/// A strip chart group's drawn runs as points, spread sideways in order;
/// outliers ringed in red.
fn strip_points(out: &mut String, fr: &Frame, c: &str, cx: f64, band: f64, pts: &[StripPoint]) {
    let drawn: Vec<&StripPoint> = pts.iter().filter(|p| !p.hidden).collect();
    let n = drawn.len().max(1) as f64;
    for (j, p) in drawn.iter().enumerate() {
        if !p.value.is_finite() {
            continue;
        }
        // Spread the runs sideways in order, so that equal values stay visible.
        let dx = if drawn.len() > 1 {
            (j as f64 / (n - 1.0) - 0.5) * (band * 0.3).min(50.0)
        } else {
            0.0
        };
        let (stroke, sw) = if p.outlier {
            ("#d00", "2")
        } else {
            ("none", "0")
        };
        let _ = write!(
            out,
            "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{c}\" fill-opacity=\"0.75\" stroke=\"{stroke}\" stroke-width=\"{sw}\"><title>{}</title></circle>",
            f(cx + dx),
            f(fr.sy(p.value)),
            esc(&p.tooltip)
        );
    }
}

/// A bar of a bar chart: its height and its hover text.
pub type BarValue = Option<(f64, String)>;

/// Grouped bars: a group per category, in each a bar per series
/// (`series[k] = (colour index, name)`), `values[category][k]`; a dashed
/// line at `reference` (1 for bars normalised to a baseline). Category
/// labels too long for their group are slanted. `None` when no bar has a
/// finite value.
pub fn bar_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    categories: &[String],
    series: &[(usize, String)],
    values: &[Vec<BarValue>],
    reference: Option<f64>,
) -> Option<String> {
    let finite: Vec<f64> = values
        .iter()
        .flatten()
        .flatten()
        .map(|(v, _)| *v)
        .filter(|v| v.is_finite())
        .collect();
    if finite.is_empty() || categories.is_empty() || series.is_empty() {
        return None;
    }
    let lo = finite.iter().copied().fold(0.0_f64, f64::min);
    let hi = finite
        .iter()
        .copied()
        .chain(reference)
        .fold(0.0_f64, f64::max);
    let band = (W - RIGHT - LEFT) / categories.len() as f64;
    let longest = categories
        .iter()
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0) as f64;
    // About 6.5 px a character at the tick size.
    let slant = longest * 6.5 > band - 4.0;
    let label_h = if slant {
        (longest * 6.5 * 0.5).min(120.0) + 10.0
    } else {
        0.0
    };
    let fr = Frame {
        x: Axis {
            lo: 0.0,
            hi: categories.len() as f64,
            step: 1.0,
            log2: false,
        },
        y: Axis::covering(lo, hi, 5, true),
        px0: LEFT,
        px1: W - RIGHT,
        py0: TOP,
        py1: TOP + PLOT_H,
    };
    let names: Vec<String> = series.iter().map(|(_, n)| n.clone()).collect();
    let legend_top = TOP + PLOT_H + AXIS_BOTTOM + label_h + 14.0;
    let height = legend_top + legend_rows(&names) * LEGEND_ROW + 4.0;
    let mut out = String::new();
    open_svg(&mut out, "bars", title, height);
    out.push_str("<g class=\"axes\">");
    frame_and_y_ticks(&mut out, &fr);
    category_labels(&mut out, &fr, categories, slant);
    axis_labels(&mut out, &fr, x_label, y_label, label_h);
    if let Some(r) = reference {
        let y = fr.sy(r);
        let _ = write!(
            out,
            "<line x1=\"{}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#444\" stroke-dasharray=\"4 3\"/>",
            f(fr.px0),
            f(fr.px1),
            y = f(y)
        );
    }
    out.push_str("</g><g class=\"marks\">");
    bars(&mut out, &fr, band, series, values);
    out.push_str("</g>");
    let entries: Vec<(usize, String)> = series.to_vec();
    legend(&mut out, &entries, legend_top);
    out.push_str("</svg>");
    Some(out)
}

/// A bar chart's category names under their groups, slanted (shortened
/// to what fits, the whole name in a tooltip) when `slant`.
fn category_labels(out: &mut String, fr: &Frame, categories: &[String], slant: bool) {
    for (i, c) in categories.iter().enumerate() {
        let x = fr.sx(i as f64 + 0.5);
        let y = fr.py1 + 16.0;
        if slant {
            // A slanted label ends at its bar and runs left and down: the
            // first ones would run past the chart's left edge, so a label
            // is shortened to what fits (about 6 px a character at 11 px,
            // times cos 30°), the whole name in its tooltip.
            let room = ((x - 4.0) / (6.0 * 0.87)).floor().max(4.0) as usize;
            let shown: String = if c.chars().count() > room {
                let mut s: String = c.chars().take(room - 1).collect();
                s.push('…');
                s
            } else {
                c.clone()
            };
            let _ = write!(
                out,
                "<text class=\"tick\" x=\"{x}\" y=\"{y}\" text-anchor=\"end\" transform=\"rotate(-30 {x} {y})\"><title>{}</title>{}</text>",
                esc(c),
                esc(&shown),
                x = f(x),
                y = f(y)
            );
        } else {
            let _ = write!(
                out,
                "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                f(x),
                f(y),
                esc(c)
            );
        }
    }
}

/// A bar chart's bars: in each category's band, a bar per series with a
/// finite value, from 0 to the value.
fn bars(
    out: &mut String,
    fr: &Frame,
    band: f64,
    series: &[(usize, String)],
    values: &[Vec<BarValue>],
) {
    let inner = band * 0.8;
    let bw = inner / series.len() as f64;
    for (i, row) in values.iter().enumerate() {
        let x0 = fr.sx(i as f64) + band * 0.1;
        for (k, v) in row.iter().enumerate() {
            let Some((v, tip)) = v else { continue };
            if !v.is_finite() {
                continue;
            }
            let Some((ci, name)) = series.get(k) else {
                continue;
            };
            let (ya, yb) = (fr.sy(v.max(0.0)), fr.sy(v.min(0.0)));
            let _ = write!(
                out,
                "<rect data-series=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>",
                esc(name),
                f(x0 + k as f64 * bw + 1.0),
                f(ya),
                f((bw - 2.0).max(1.0)),
                f((yb - ya).max(1.0)),
                color(*ci),
                esc(tip)
            );
        }
    }
}

/// Per-task node residency: one horizontal bar per task, split into the
/// % of its running time on each node. `None` without tasks.
pub fn residency_chart(
    title: &str,
    nodes: &[String],
    tasks: &[(String, Vec<f64>)],
) -> Option<String> {
    if tasks.is_empty() || nodes.is_empty() {
        return None;
    }
    let bar = 14.0;
    let gap = 4.0;
    let plot_h = tasks.len() as f64 * (bar + gap) + gap;
    // The row labels ("16 tasks on node0") end at the plot's left edge:
    // the plot starts far enough right for the longest (about 6.5 px a
    // character at 11 px), or the label would be cut at the chart's edge.
    let longest = tasks
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0);
    let px0 = LEFT.max(14.0 + 6.5 * longest as f64);
    let fr = Frame {
        x: Axis {
            lo: 0.0,
            hi: 100.0,
            step: 20.0,
            log2: false,
        },
        y: Axis {
            lo: 0.0,
            hi: 1.0,
            step: 1.0,
            log2: false,
        },
        px0,
        px1: W - RIGHT,
        py0: TOP,
        py1: TOP + plot_h,
    };
    let legend_top = TOP + plot_h + AXIS_BOTTOM + 14.0;
    let height = legend_top + legend_rows(nodes) * LEGEND_ROW + 4.0;
    let mut out = String::new();
    open_svg(&mut out, "residency", title, height);
    residency_axes(&mut out, &fr, tasks, bar, gap);
    residency_bars(&mut out, &fr, nodes, tasks, bar, gap);
    out.push_str("</g>");
    let entries: Vec<(usize, String)> = nodes.iter().cloned().enumerate().collect();
    legend(&mut out, &entries, legend_top);
    out.push_str("</svg>");
    Some(out)
}

/// A residency chart's axes: the frame, the x ticks in %, the x label and
/// a row label per task.
fn residency_axes(out: &mut String, fr: &Frame, tasks: &[(String, Vec<f64>)], bar: f64, gap: f64) {
    out.push_str("<g class=\"axes\">");
    frame_rect(out, fr);
    for v in fr.x.ticks() {
        let x = fr.sx(v);
        let _ = write!(
            out,
            "<line x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\" stroke=\"#888\"/><text class=\"tick\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}%</text>",
            f(fr.py1),
            f(fr.py1 + 5.0),
            f(fr.py1 + 18.0),
            v,
            x = f(x)
        );
    }
    let _ = write!(
        out,
        "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">% of the task's running time on each node</text>",
        f((fr.px0 + fr.px1) / 2.0),
        f(fr.py1 + 36.0)
    );
    for (i, (name, _)) in tasks.iter().enumerate() {
        let y = TOP + gap + i as f64 * (bar + gap) + bar * 0.75;
        let _ = write!(
            out,
            "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            f(fr.px0 - 6.0),
            f(y),
            esc(name)
        );
    }
}

/// A residency chart's bars: per task, a bar per node stacked left to
/// right, each its % of the task's running time on that node.
fn residency_bars(
    out: &mut String,
    fr: &Frame,
    nodes: &[String],
    tasks: &[(String, Vec<f64>)],
    bar: f64,
    gap: f64,
) {
    out.push_str("</g><g class=\"marks\">");
    for (i, (name, pct)) in tasks.iter().enumerate() {
        let y = TOP + gap + i as f64 * (bar + gap);
        let mut acc = 0.0;
        for (k, p) in pct.iter().enumerate() {
            if !(p.is_finite() && *p > 0.0) {
                continue;
            }
            let x0 = fr.sx(acc);
            let x1 = fr.sx((acc + p).min(100.0));
            acc += p;
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{bar}\" fill=\"{}\"><title>{}: {:.1}% on {}</title></rect>",
                f(x0),
                f(y),
                f((x1 - x0).max(0.5)),
                color(k),
                esc(name),
                p,
                esc(nodes.get(k).map(String::as_str).unwrap_or("?"))
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn well_formed(svg: &str) {
        assert!(svg.starts_with("<svg class=\"chart\""));
        assert!(svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<svg").count(), svg.matches("</svg>").count());
        assert_eq!(
            svg.matches("<g").count(),
            svg.matches("</g>").count(),
            "{svg}"
        );
        assert!(
            !svg.contains("http://") || svg.matches("http://").count() == 1,
            "only the xmlns"
        );
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }

    #[test]
    fn line_chart_has_marks_axes_and_legend() {
        let lines = vec![
            SvgLine {
                series: 0,
                points: vec![(0.0, 0.0), (1.0, 10.0), (2.0, 20.0)],
                tooltip: "A run 1".into(),
            },
            SvgLine {
                series: 1,
                points: vec![(0.0, 5.0)],
                tooltip: "B <run> 1".into(),
            },
        ];
        let s = line_chart(
            "pages & time",
            "Time (s)",
            "pages",
            &["A".into(), "B".into()],
            &lines,
        )
        .unwrap();
        well_formed(&s);
        assert!(s.contains("aria-label=\"pages &amp; time\""));
        assert!(s.contains("<path d=\"M70.0 270.0 L"), "{s}");
        assert_eq!(s.matches("<circle").count(), 4);
        assert!(s.contains("B &lt;run&gt; 1"));
        assert!(s.contains(">Time (s)</text>"));
        assert!(
            s.contains("fill=\"#D55E00\"/><text"),
            "legend swatch of B: {s}"
        );
        assert!(line_chart("t", "x", "y", &[], &[]).is_none());
    }

    #[test]
    fn strip_chart_marks_outliers() {
        let g = vec![
            (
                "A".to_string(),
                0,
                vec![
                    StripPoint {
                        value: 1.0,
                        outlier: false,
                        tooltip: "r1".into(),
                        hidden: false,
                    },
                    StripPoint {
                        value: 1.1,
                        outlier: false,
                        tooltip: "r2".into(),
                        hidden: false,
                    },
                    StripPoint {
                        value: 3.0,
                        outlier: true,
                        tooltip: "r3".into(),
                        hidden: false,
                    },
                ],
            ),
            (
                "B".to_string(),
                1,
                vec![StripPoint {
                    value: 2.0,
                    outlier: false,
                    tooltip: "r1".into(),
                    hidden: false,
                }],
            ),
        ];
        let s = strip_chart("elapsed_s", "s", &g).unwrap();
        well_formed(&s);
        assert_eq!(s.matches("<circle").count(), 4);
        assert_eq!(s.matches("stroke=\"#d00\"").count(), 1);
        assert!(s.contains("mean ± 1 stddev"));
        assert!(strip_chart("t", "y", &[("A".into(), 0, vec![])]).is_none());
    }

    #[test]
    fn residency_bars() {
        let s = residency_chart(
            "residency",
            &["node0".into(), "node1".into()],
            &[
                ("task 1".into(), vec![25.0, 75.0]),
                ("task 2".into(), vec![100.0, 0.0]),
            ],
        )
        .unwrap();
        well_formed(&s);
        assert_eq!(s.matches("<rect").count(), 1 + 3 + 2); // frame, 3 segments, 2 swatches
        assert!(s.contains("task 1: 75.0% on node1"));
    }
}

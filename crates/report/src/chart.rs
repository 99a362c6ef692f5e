//! Line charts in plain ASCII, at most 80 columns wide, in the style of
//! gnuplot's `dumb` terminal that kernel developers paste into mail (seed
//! 004's "Pages migrated vs Time"): one symbol per line, a box with tick
//! marks, the y axis labelled on the left, x tick values below, and a
//! legend.

use std::fmt::Write as _;

/// One line of a chart: `(x, y)` points in increasing x.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub label: String,
    pub symbol: char,
    pub points: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// First line of the output, e.g. `Memory per node (MiB) vs time (s)`.
    pub title: String,
    pub lines: Vec<Line>,
    /// Total width in columns, at most 80 (clamped).
    pub width: usize,
    /// Rows of the plotting area.
    pub height: usize,
}

impl Chart {
    pub fn new(title: impl Into<String>, lines: Vec<Line>) -> Chart {
        Chart {
            title: title.into(),
            lines,
            width: 78,
            height: 13,
        }
    }
}

/// The smallest of 1, 2, 2.5, 5 times a power of ten that is >= `v`.
pub fn nice_ceil(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= v * (1.0 - 1e-12) {
            return m * p;
        }
    }
    10.0 * p
}

/// A tick value without needless decimals.
pub fn fmt_value(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if a >= 10.0 || (v.fract() == 0.0) {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn interpolate(points: &[(f64, f64)], x: f64) -> Option<f64> {
    let (first, last) = (points.first()?, points.last()?);
    if x < first.0 || x > last.0 {
        return None;
    }
    let i = points.partition_point(|p| p.0 < x);
    if i == 0 {
        return Some(first.1);
    }
    let (a, b) = (points[i - 1], points[i.min(points.len() - 1)]);
    if b.0 <= a.0 {
        return Some(b.1);
    }
    Some(a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0))
}

/// Render `chart`. Lines drawn later cover earlier ones where they cross.
pub fn render(chart: &Chart) -> String {
    let width = chart.width.clamp(30, 80);
    let height = chart.height.clamp(3, 60);
    let pts = chart.lines.iter().flat_map(|l| l.points.iter());
    let (mut xmin, mut xmax, mut ymax) = (f64::INFINITY, f64::NEG_INFINITY, 0f64);
    for &(x, y) in pts {
        if x.is_finite() && y.is_finite() {
            xmin = xmin.min(x);
            xmax = xmax.max(x);
            ymax = ymax.max(y);
        }
    }
    if !xmin.is_finite() {
        xmin = 0.0;
        xmax = 1.0;
    }
    if xmin > 0.0 && xmin < (xmax - xmin) {
        xmin = 0.0; // start the time axis at 0 when that costs little
    }
    if xmax <= xmin {
        xmax = xmin + 1.0;
    }
    // y ticks: bottom, middle and top, and quarters when tall enough,
    // each a round number
    let nticks = if height >= 12 { 4 } else { 2 };
    let ytop = nice_ceil(ymax / nticks as f64) * nticks as f64;
    let tick_rows: Vec<(usize, String)> = (0..=nticks)
        .map(|k| {
            let row = ((k * (height - 1)) as f64 / nticks as f64).round() as usize;
            (row, fmt_value(ytop * k as f64 / nticks as f64))
        })
        .collect();
    let lw = tick_rows.iter().map(|t| t.1.len()).max().unwrap_or(1);
    let plot_w = width - lw - 3; // "<labels> |<plot>|"
    let mut grid = vec![vec![' '; plot_w]; height];
    for line in &chart.lines {
        let mut prev: Option<usize> = None;
        for (c, _) in (0..plot_w).enumerate() {
            let x = xmin + (xmax - xmin) * c as f64 / (plot_w - 1) as f64;
            let Some(y) = interpolate(&line.points, x) else {
                prev = None;
                continue;
            };
            let r = ((y.max(0.0) / ytop) * (height - 1) as f64).round() as usize;
            let r = r.min(height - 1);
            match prev {
                Some(p) if p.abs_diff(r) > 1 => {
                    let (lo, hi) = if p < r { (p + 1, r) } else { (r, p - 1) };
                    for row in grid.iter_mut().take(hi + 1).skip(lo) {
                        row[c] = line.symbol;
                    }
                }
                _ => grid[r][c] = line.symbol,
            }
            prev = Some(r);
        }
    }
    let mut s = String::new();
    let _ = writeln!(s, "{}", chart.title);
    let _ = writeln!(s, "{:>lw$} +{}+", "", "-".repeat(plot_w));
    for row in (0..height).rev() {
        let label = tick_rows
            .iter()
            .find(|t| t.0 == row)
            .map(|t| t.1.clone())
            .unwrap_or_default();
        let mut body: String = grid[row].iter().collect();
        if !label.is_empty() {
            // tick marks on both borders, as gnuplot draws them
            if body.starts_with(' ') {
                body.replace_range(0..1, "-");
            }
            if body.ends_with(' ') {
                let n = body.len();
                body.replace_range(n - 1..n, "-");
            }
        }
        let _ = writeln!(s, "{label:>lw$} |{body}|");
    }
    let _ = writeln!(s, "{:>lw$} +{}+", "", "-".repeat(plot_w));
    // x tick values: about every 12 columns, none overlapping
    let mut axis = vec![' '; plot_w + 2];
    let nx = (plot_w / 12).max(1);
    for k in 0..=nx {
        let c = k * (plot_w - 1) / nx;
        let v = fmt_value(xmin + (xmax - xmin) * k as f64 / nx as f64);
        let start = (c + 1)
            .saturating_sub(v.len() / 2)
            .min(plot_w + 2 - v.len().min(plot_w + 2));
        if axis[start..(start + v.len()).min(axis.len())]
            .iter()
            .all(|&ch| ch == ' ')
            && (start == 0 || axis[start - 1] == ' ')
        {
            for (i, ch) in v.chars().enumerate() {
                if start + i < axis.len() {
                    axis[start + i] = ch;
                }
            }
        }
    }
    let axis: String = axis.into_iter().collect();
    let _ = writeln!(s, "{:>lw$}{}", "", axis.trim_end());
    let legend: Vec<String> = chart
        .lines
        .iter()
        .map(|l| format!("{} {}", l.symbol, l.label))
        .collect();
    let _ = writeln!(s, "{:>lw$}  {}", "", legend.join("   "));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(s: &str) -> Vec<&str> {
        s.lines().collect()
    }

    #[test]
    fn nice_numbers() {
        assert_eq!(nice_ceil(0.0), 1.0);
        assert_eq!(nice_ceil(3.0), 5.0);
        assert_eq!(nice_ceil(2.0), 2.0);
        assert_eq!(nice_ceil(210.0), 250.0);
        assert_eq!(nice_ceil(2_100_000.0), 2_500_000.0);
        assert_eq!(fmt_value(2.5), "2.5");
        assert_eq!(fmt_value(250.0), "250");
        assert_eq!(fmt_value(0.25), "0.25");
    }

    #[test]
    fn a_migration_fits_80_columns_and_reads_right() {
        // 100 MiB moving from node 0 to node 1 between 10 s and 20 s.
        let n0: Vec<(f64, f64)> = (0..=30)
            .map(|t| {
                let t = t as f64;
                (t, 100.0 - 100.0 * ((t - 10.0) / 10.0).clamp(0.0, 1.0))
            })
            .collect();
        let n1: Vec<(f64, f64)> = n0.iter().map(|&(t, y)| (t, 100.0 - y)).collect();
        let c = Chart::new(
            "Memory per node (MiB) vs time (s)",
            vec![
                Line {
                    label: "node0".into(),
                    symbol: '0',
                    points: n0,
                },
                Line {
                    label: "node1".into(),
                    symbol: '1',
                    points: n1,
                },
            ],
        );
        let out = render(&c);
        let r = rows(&out);
        assert!(r.iter().all(|l| l.len() <= 80), "{out}");
        assert_eq!(r[0], "Memory per node (MiB) vs time (s)");
        assert!(r[1].starts_with("    +--"), "{out}");
        assert!(r[2].starts_with("100 |"), "{out}");
        assert!(r[2 + 3].starts_with(" 75 |-"), "{out}");
        assert!(r[2 + c.height - 1].starts_with("  0 |"), "{out}");
        // top row: node0 at the left, node1 at the right
        let top = r[2];
        assert_eq!(top.chars().nth(5), Some('0'), "{out}");
        assert_eq!(top.trim_end().chars().rev().nth(1), Some('1'), "{out}");
        // bottom row: the other way round
        let bottom = r[2 + c.height - 1];
        assert_eq!(bottom.chars().nth(5), Some('1'), "{out}");
        assert!(r[r.len() - 2].trim_start().starts_with('0'), "{out}");
        assert!(r[r.len() - 2].trim_end().ends_with("30"), "{out}");
        assert!(r[r.len() - 1].contains("0 node0   1 node1"), "{out}");
        // the steep part is drawn as a connected line: every row of the
        // plot area holds both symbols
        for row in &r[2..2 + c.height] {
            assert!(row.contains('0') || row.contains('1'), "{out}");
        }
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        for lines in [
            vec![],
            vec![Line {
                label: "x".into(),
                symbol: '*',
                points: vec![],
            }],
            vec![Line {
                label: "x".into(),
                symbol: '*',
                points: vec![(5.0, 0.0)],
            }],
            vec![Line {
                label: "x".into(),
                symbol: '*',
                points: vec![(0.0, f64::NAN), (1.0, 1e12)],
            }],
        ] {
            let mut c = Chart::new("t", lines);
            c.width = 200;
            c.height = 1;
            let out = render(&c);
            assert!(out.lines().all(|l| l.len() <= 80), "{out}");
        }
    }
}

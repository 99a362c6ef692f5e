//! ASCII line charts like seed 004's (gnuplot's "dumb" terminal): a frame
//! with ticks, labelled axes, one symbol per series and a legend, within
//! 80 columns and about 20 lines, plain ASCII so it survives any mail
//! client.
//!
//! Written here rather than taken from a crate: `textplots` draws with
//! Unicode braille characters, which are not ASCII, collapse in many
//! mail clients and fonts, and cannot give each series its own symbol.

use crate::axis::Axis;
use crate::series::Line;
use std::fmt::Write as _;

/// Symbols given to the series in order, as in seed 004 (`*` then `#`).
pub const SYMBOLS: [char; 8] = ['*', '#', '+', 'o', 'x', '%', '@', '='];

#[derive(Debug, Clone)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    /// Shown after the title: `... (MiB)`.
    pub y_unit: String,
    pub series: Vec<Line>,
    /// Total width in columns.
    pub width: usize,
    /// Rows inside the frame.
    pub height: usize,
    /// A base-2 logarithmic x axis (task counts 4, 8, ..., 64).
    pub x_log2: bool,
}

impl Chart {
    pub fn new(title: impl Into<String>, x_label: &str, y_unit: &str, series: Vec<Line>) -> Chart {
        Chart {
            title: title.into(),
            x_label: x_label.into(),
            y_unit: y_unit.into(),
            series,
            width: crate::table::TEXT_WIDTH,
            height: 14,
            x_log2: false,
        }
    }

    /// Render; an empty string when no series has a finite point.
    pub fn render(&self) -> String {
        let Some(plot) = self.layout() else {
            return String::new();
        };
        let grid = self.grid(&plot);
        let mut out = String::new();
        self.write_title(&mut out);
        plot.write_frame(&mut out, &grid);
        plot.write_x_labels(&mut out, &self.x_label);
        self.write_legend(&mut out, plot.ylw);
        out
    }

    /// The axes and the sizes of the frame for the series' finite points;
    /// None when there are none.
    fn layout(&self) -> Option<Plot> {
        let all: Vec<(f64, f64)> = self.series.iter().flat_map(finite_points).collect();
        if all.is_empty() {
            return None;
        }
        let (xmin, xmax) = all
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                (a.min(p.0), b.max(p.0))
            });
        let (ymin, ymax) = all
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                (a.min(p.1), b.max(p.1))
            });
        let ih = self.height.max(4);
        let yaxis = Axis::covering(ymin, ymax, (ih / 3).clamp(2, 6) + 1, true);
        let ylabels: Vec<(f64, String)> = yaxis
            .ticks()
            .into_iter()
            .map(|v| (v, yaxis.label(v)))
            .collect();
        let ylw = ylabels.iter().map(|(_, s)| s.len()).max().unwrap_or(1);
        // Columns: label, space, frame, interior, frame.
        let iw = self.width.saturating_sub(ylw + 3).max(10);
        let xaxis = if self.x_log2 && xmin > 0.0 {
            Axis::log2(xmin, xmax)
        } else {
            Axis::covering(xmin, xmax, (iw / 10).clamp(2, 10), true)
        };
        let mut plot = Plot {
            xaxis,
            yaxis,
            iw,
            ih,
            ylw,
            ytick_rows: Vec::new(),
            xticks: Vec::new(),
        };
        plot.ytick_rows = ylabels
            .into_iter()
            .map(|(v, s)| (plot.row(v) as usize, s))
            .collect();
        plot.xticks = plot
            .xaxis
            .ticks()
            .into_iter()
            .map(|v| (plot.col(v) as usize, plot.xaxis.label(v)))
            .collect();
        Some(plot)
    }

    /// The frame's interior with every series drawn in its symbol:
    /// `grid[r][c]`, r = 0 the bottom interior row.
    fn grid(&self, plot: &Plot) -> Vec<Vec<char>> {
        let (col, row) = (|x| plot.col(x), |y| plot.row(y));
        let mut grid = vec![vec![' '; plot.iw]; plot.ih];
        for (si, l) in self.series.iter().enumerate() {
            let sym = SYMBOLS[si % SYMBOLS.len()];
            let p = finite_points(l);
            if p.len() == 1 {
                grid[row(p[0].1) as usize][col(p[0].0) as usize] = sym;
            }
            for w in p.windows(2) {
                let (c0, r0) = (col(w[0].0), row(w[0].1));
                let (c1, r1) = (col(w[1].0), row(w[1].1));
                let steps = (c1 - c0).abs().max((r1 - r0).abs()).max(1);
                for i in 0..=steps {
                    let c = c0 as f64 + (c1 - c0) as f64 * i as f64 / steps as f64;
                    let r = r0 as f64 + (r1 - r0) as f64 * i as f64 / steps as f64;
                    grid[r.round() as usize][c.round() as usize] = sym;
                }
            }
        }
        grid
    }

    /// The title, with the y unit, wrapped to the chart's width.
    fn write_title(&self, out: &mut String) {
        let title = if self.y_unit.is_empty() {
            self.title.clone()
        } else {
            format!("{} ({})", self.title, self.y_unit)
        };
        for l in crate::table::wrap(&title, self.width) {
            let _ = writeln!(out, "{l}");
        }
    }

    /// The legend: each series' symbol and name, as many to a line as fit.
    fn write_legend(&self, out: &mut String, ylw: usize) {
        let items: Vec<String> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{} {}", SYMBOLS[i % SYMBOLS.len()], l.name))
            .collect();
        let mut line = " ".repeat(ylw + 2);
        for it in items {
            if !line.trim().is_empty() && line.len() + 3 + it.len() > self.width {
                let _ = writeln!(out, "{}", line.trim_end());
                line = " ".repeat(ylw + 2);
            }
            if !line.trim().is_empty() {
                line.push_str("   ");
            }
            line.push_str(&it);
        }
        if !line.trim().is_empty() {
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
}

/// A series' points with both coordinates finite.
fn finite_points(l: &Line) -> Vec<(f64, f64)> {
    l.points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect()
}

/// Where a chart's frame, ticks and points go: the axes, the interior's
/// width and height, the y labels' width, and the ticks' rows and columns.
struct Plot {
    xaxis: Axis,
    yaxis: Axis,
    /// Interior width in columns.
    iw: usize,
    /// Interior height in rows.
    ih: usize,
    /// Width of the widest y tick label.
    ylw: usize,
    /// Interior row and label of each y tick.
    ytick_rows: Vec<(usize, String)>,
    /// Interior column and label of each x tick.
    xticks: Vec<(usize, String)>,
}

impl Plot {
    /// The interior column of `x`.
    fn col(&self, x: f64) -> i64 {
        let iw = self.iw;
        ((self.xaxis.frac(x) * (iw - 1) as f64).round() as i64).clamp(0, iw as i64 - 1)
    }

    /// The interior row of `y`, 0 the bottom one.
    fn row(&self, y: f64) -> i64 {
        let ih = self.ih;
        ((self.yaxis.frac(y) * (ih - 1) as f64).round() as i64).clamp(0, ih as i64 - 1)
    }

    /// A horizontal edge of the frame, `+` at the x ticks.
    fn write_edge(&self, out: &mut String, label: &str) {
        let ylw = self.ylw;
        let mut line: Vec<char> = vec!['-'; self.iw];
        for (c, _) in &self.xticks {
            line[*c] = '+';
        }
        let _ = writeln!(
            out,
            "{label:>ylw$} +{}+",
            line.into_iter().collect::<String>()
        );
    }

    /// The frame with `grid` inside it and the y tick labels on its left.
    fn write_frame(&self, out: &mut String, grid: &[Vec<char>]) {
        let ylw = self.ylw;
        self.write_edge(out, "");
        for r in (0..self.ih).rev() {
            let tick = self.ytick_rows.iter().find(|(tr, _)| *tr == r);
            let (label, edge) = match tick {
                Some((_, s)) => (s.as_str(), '+'),
                None => ("", '|'),
            };
            let line: String = grid[r].iter().collect();
            let _ = writeln!(out, "{label:>ylw$} {edge}{line}{edge}");
        }
        self.write_edge(out, "");
    }

    /// The x tick labels centred under their tick, never overlapping, and
    /// the x axis's label centred under the frame.
    fn write_x_labels(&self, out: &mut String, x_label: &str) {
        let (ylw, iw) = (self.ylw, self.iw);
        let mut xl = vec![' '; ylw + 2 + iw + 1];
        let mut last_end = 0usize;
        for (c, s) in &self.xticks {
            let centre = ylw + 2 + c;
            let start = centre.saturating_sub(s.len() / 2);
            let start = start.min(xl.len().saturating_sub(s.len()));
            if start < last_end + 1 && last_end > 0 {
                continue;
            }
            for (i, ch) in s.chars().enumerate() {
                xl[start + i] = ch;
            }
            last_end = start + s.len();
        }
        let _ = writeln!(out, "{}", xl.iter().collect::<String>().trim_end());
        if !x_label.is_empty() {
            let pad = (ylw + 2 + iw / 2).saturating_sub(x_label.len() / 2);
            let _ = writeln!(out, "{}{}", " ".repeat(pad), x_label);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rising(name: &str, k: f64) -> Line {
        Line::new(
            name,
            (0..=20)
                .map(|i| (i as f64 * 10.0, k * i as f64 * i as f64))
                .collect(),
        )
    }

    #[test]
    fn fits_and_has_axes_ticks_and_legend() {
        let c = Chart::new(
            "Pages migrated vs time",
            "Time (s)",
            "pages",
            vec![rising("Default", 5000.0), rising("IBS", 6000.0)],
        );
        let s = c.render();
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines.iter().all(|l| l.len() <= 80 && l.is_ascii()), "{s}");
        assert!(lines.len() <= 21, "{} lines\n{s}", lines.len());
        assert_eq!(lines[0], "Pages migrated vs time (pages)");
        // Frame top and bottom.
        assert!(lines[1].trim_start().starts_with("++--"), "{s}");
        assert!(lines[16].trim_start().starts_with("++--"), "{s}");
        // Y ticks: the bottom interior row is 0, the top the maximum.
        assert!(lines[15].trim_start().starts_with("0 +"), "{s}");
        assert!(lines[2].starts_with("2.5M +"), "{s}");
        // X tick labels and the axis label.
        assert!(lines[17].contains("0") && lines[17].contains("200"), "{s}");
        assert!(lines[18].trim() == "Time (s)", "{s}");
        assert!(
            lines[19].contains("* Default") && lines[19].contains("# IBS"),
            "{s}"
        );
        // Both series are drawn, rising from the bottom left.
        assert!(s.contains('*') && s.contains('#'));
        let bottom = lines[15];
        let top = lines[3];
        let first_sym = |l: &str| l.find(['*', '#']);
        assert!(first_sym(bottom).unwrap() < first_sym(top).unwrap(), "{s}");
    }

    /// Task counts 4 to 64 on a base-2 axis: equal steps between the
    /// tick labels, each under its point.
    #[test]
    fn a_base_2_x_axis_spaces_doublings_evenly() {
        let mut c = Chart::new(
            "t",
            "tasks",
            "s",
            vec![Line::new(
                "A",
                [4.0, 8.0, 16.0, 32.0, 64.0]
                    .iter()
                    .map(|&x| (x, x))
                    .collect(),
            )],
        );
        c.x_log2 = true;
        let s = c.render();
        let labels = s
            .lines()
            .find(|l| l.trim_start().starts_with("4 "))
            .unwrap_or_else(|| panic!("{s}"));
        let at: Vec<usize> = ["4", "8", "16", "32", "64"]
            .iter()
            .map(|t| {
                labels
                    .find(&format!(" {t}"))
                    .unwrap_or_else(|| panic!("{t}: {s}"))
            })
            .collect();
        let gaps: Vec<usize> = at.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.iter().max().unwrap() - gaps.iter().min().unwrap() <= 2,
            "{gaps:?}\n{s}"
        );
    }

    #[test]
    fn a_vertical_rise_is_continuous() {
        let l = Line::new(
            "step",
            vec![(0.0, 0.0), (1.0, 0.0), (1.0, 100.0), (2.0, 100.0)],
        );
        let s = Chart::new("step", "t", "", vec![l]).render();
        let lines: Vec<&str> = s.lines().collect();
        // Every interior row has the symbol.
        for l in &lines[2..16] {
            assert!(l.contains('*'), "{s}");
        }
    }

    #[test]
    fn single_points_flat_and_empty_series() {
        let s = Chart::new("one", "t", "", vec![Line::new("p", vec![(5.0, 3.0)])]).render();
        assert!(s.contains('*'));
        let s = Chart::new(
            "flat",
            "t",
            "",
            vec![Line::new("z", vec![(0.0, 0.0), (9.0, 0.0)])],
        )
        .render();
        assert!(s.lines().all(|l| l.len() <= 80));
        assert!(s.contains("**********"), "{s}");
        assert_eq!(Chart::new("none", "t", "", vec![]).render(), "");
        let nan = Line::new("n", vec![(f64::NAN, 1.0)]);
        assert_eq!(Chart::new("nan", "t", "", vec![nan]).render(), "");
    }

    #[test]
    fn many_series_wrap_the_legend() {
        let series: Vec<Line> = (0..8)
            .map(|i| rising(&format!("configuration-{i}"), 1.0 + i as f64))
            .collect();
        let s = Chart::new("many", "t", "", series).render();
        assert!(s.lines().all(|l| l.len() <= 80), "{s}");
        assert!(s.contains("= configuration-7"));
    }
}

//! A measured figure: the median of repeated time-boxed measurements, with
//! their spread and a sentence saying how it was measured.

use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Median of the repetitions.
    pub value: f64,
    /// (max - min) / median of the repetitions, as a fraction.
    pub spread: f64,
    pub runs: usize,
    /// How it was measured, for the machine file's comments and sources.
    pub how: String,
}

impl Figure {
    /// The median and spread of `samples` (at least one, all finite).
    pub fn of(samples: &[f64], how: impl Into<String>) -> Figure {
        let mut s: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let value = match n {
            0 => f64::NAN,
            _ if n % 2 == 1 => s[n / 2],
            _ => (s[n / 2 - 1] + s[n / 2]) / 2.0,
        };
        let spread = if n > 1 && value > 0.0 {
            (s[n - 1] - s[0]) / value
        } else {
            0.0
        };
        Figure {
            value,
            spread,
            runs: n,
            how: how.into(),
        }
    }

    /// `12.3 (5 runs, spread 1.2%)`.
    pub fn describe(&self, unit: &str) -> String {
        format!(
            "{} {unit} (median of {} runs, spread {:.1}%)",
            round3(self.value),
            self.runs,
            100.0 * self.spread
        )
    }
}

/// A figure whose runs lie further apart than this (spread, a fraction
/// of the median) was measured while the machine's speed moved: another
/// tenant's load, or where a virtual machine's CPUs ran. Its median is
/// one of two modes as often as a mean of them, so calibrate names it.
pub const UNSTEADY: f64 = 0.25;

/// The figures of `figs` (machine-file key or phrase, unit, figure) whose
/// runs spread beyond [`UNSTEADY`], as `what (spread%)`, in their order.
/// The user shares of CPU time (`costs.*_user_share`) are left out: they
/// split a time between user and system, they are not a speed, and a
/// small share spreads wide with the clock's ticks.
pub fn unsteady(figs: &[(String, String, Figure)]) -> Vec<String> {
    figs.iter()
        .filter(|(what, _, f)| f.runs > 1 && f.spread > UNSTEADY && !what.ends_with("_user_share"))
        .map(|(what, _, f)| format!("{what} ({:.0}%)", 100.0 * f.spread))
        .collect()
}

/// Three significant figures, as written to the machine file.
pub fn round3(v: f64) -> f64 {
    if !v.is_finite() || v == 0.0 {
        return v;
    }
    let mag = 10f64.powi(2 - v.abs().log10().floor() as i32);
    (v * mag).round() / mag
}

/// Run `once` (which returns how many operations it did) repeatedly for
/// about `budget`, and return nanoseconds per operation.
pub fn ns_per_op(budget: Duration, mut once: impl FnMut() -> u64) -> f64 {
    let t0 = Instant::now();
    let mut ops = 0u64;
    loop {
        ops += once();
        if t0.elapsed() >= budget {
            break;
        }
    }
    t0.elapsed().as_nanos() as f64 / ops.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figures whose runs lie more than 25% apart are named, with their
    /// spread; a single run, or a steadier one, is not.
    #[test]
    fn figures_whose_runs_lie_far_apart_are_named() {
        let f = |v: &[f64]| Figure::of(v, "how");
        let figs = vec![
            ("a".to_string(), "ns".to_string(), f(&[10.0, 11.0, 12.0])),
            (
                "node 0: all CPUs memset".into(),
                "GB/s".into(),
                f(&[40.0, 80.0, 50.0]),
            ),
            ("alone".into(), "us".into(), f(&[1.0])),
            ("costs.msg_user_share".into(), "".into(), f(&[0.05, 0.08])),
        ];
        assert_eq!(unsteady(&figs), vec!["node 0: all CPUs memset (80%)"]);
        assert!(unsteady(&figs[..1]).is_empty());
    }

    #[test]
    fn median_and_spread() {
        let f = Figure::of(&[10.0, 12.0, 11.0], "x");
        assert_eq!(f.value, 11.0);
        assert!((f.spread - 2.0 / 11.0).abs() < 1e-12);
        assert_eq!(Figure::of(&[4.0, 2.0], "x").value, 3.0);
        assert_eq!(Figure::of(&[5.0], "x").spread, 0.0);
    }

    #[test]
    fn three_significant_figures() {
        assert_eq!(round3(123.456), 123.0);
        assert_eq!(round3(0.0012345), 0.00123);
        assert_eq!(round3(98765.0), 98800.0);
    }

    #[test]
    fn time_per_operation_counts_every_operation() {
        let ns = ns_per_op(Duration::from_millis(20), || {
            std::thread::sleep(Duration::from_millis(1));
            2
        });
        assert!((400_000.0..5_000_000.0).contains(&ns), "{ns}");
    }
}

//! Ratio of means, candidate / baseline, with Fieller's confidence interval.

use serde::Serialize;

use crate::basic::{check_open_unit, check_sample, mean_var};
use crate::summary::t_quantile;
use crate::welch::satterthwaite_df;
use crate::StatsError;

/// Ratio of means `mean(candidate) / mean(baseline)` and its confidence
/// interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RatioEstimate {
    /// Point estimate `mean(candidate) / mean(baseline)`.
    pub ratio: f64,
    /// Lower bound; `-inf` when the interval is unbounded (serialised as
    /// `null` by serde_json).
    pub low: f64,
    /// Upper bound; `+inf` when the interval is unbounded.
    pub high: f64,
    /// Nominal confidence level.
    pub confidence: f64,
    /// `false` when the baseline mean is not significantly different from
    /// zero at this level, so Fieller's confidence set is unbounded (the
    /// whole line, or the line minus an interval); `low`/`high` are then
    /// `-inf`/`+inf`, a conservative enclosure.
    pub bounded: bool,
    /// Degrees of freedom of the t quantile used; `None` when both samples
    /// have zero variance (the interval is then the point `[ratio, ratio]`).
    pub df: Option<f64>,
}

/// Ratio of means `candidate / baseline` with Fieller's confidence interval.
///
/// # Method
///
/// Fieller's theorem for two independent samples: with `a = mean(baseline)`,
/// `b = mean(candidate)`, `va = s_a²/n_a`, `vb = s_b²/n_b`, the set of
/// ratios `ρ` not rejected at level `1 - confidence` is
/// `{ ρ : (b - ρ·a)² <= t² (vb + ρ²·va) }`, i.e. the solutions of the
/// quadratic `(a² - t²va) ρ² - 2ab ρ + (b² - t²vb) <= 0`. Because the two
/// variances are not assumed equal, `t` is the Student quantile at the
/// Welch–Satterthwaite degrees of freedom of `b - ρ·a`, evaluated at the
/// point estimate `ρ = b/a` (Tamhane & Logan, 2004).
///
/// Why Fieller rather than the delta method on the log scale: Fieller is
/// exact under normality of the two means instead of a first-order
/// linearisation, gives the asymmetric interval a ratio should have, works
/// for any sign of the means (counters that are zero or negative in the
/// candidate, signed deltas), and when the baseline is too noisy to tell
/// its mean from zero it says so (`bounded: false`) instead of printing a
/// finite but meaningless interval. When the baseline is precise
/// (`g = t²va/a²` small, the usual benchmark case) the two methods agree.
///
/// # Degenerate cases
///
/// * `n < 2` in either sample: [`StatsError::TooFewSamples`] (no variance).
/// * baseline mean exactly zero: [`StatsError::ZeroBaselineMean`].
/// * both variances zero: the point interval `[ratio, ratio]`, `df: None`.
/// * one variance zero: the formula holds; `df` is the other sample's `n-1`.
/// * `g >= 1`: unbounded, `(-inf, +inf)`, `bounded: false`.
pub fn ratio_ci(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
) -> Result<RatioEstimate, StatsError> {
    check_sample(baseline, "baseline")?;
    check_sample(candidate, "candidate")?;
    check_open_unit("confidence", confidence)?;
    for (x, sample) in [(baseline, "baseline"), (candidate, "candidate")] {
        if x.len() < 2 {
            return Err(StatsError::TooFewSamples {
                sample,
                needed: 2,
                got: x.len(),
            });
        }
    }
    let (a, var_a) = mean_var(baseline);
    let (b, var_b) = mean_var(candidate);
    if a == 0.0 {
        return Err(StatsError::ZeroBaselineMean);
    }
    let (na, nb) = (baseline.len(), candidate.len());
    let ratio = b / a;
    let point = RatioEstimate {
        ratio,
        low: ratio,
        high: ratio,
        confidence,
        bounded: true,
        df: None,
    };

    // Work in units where both means have magnitude 1 (the candidate's scale
    // falls back to its standard error when its mean is 0), so that squares
    // cannot overflow or underflow; rescale the roots at the end.
    let se_a = (var_a / na as f64).sqrt();
    let se_b = (var_b / nb as f64).sqrt();
    let scale_a = a.abs();
    let scale_b = if b != 0.0 {
        b.abs()
    } else if se_b > 0.0 {
        se_b
    } else {
        1.0
    };
    let a1 = a / scale_a; // ±1
    let b1 = b / scale_b;
    let va1 = (se_a / scale_a).powi(2);
    let vb1 = (se_b / scale_b).powi(2);
    let r1 = b1 / a1;
    if va1 == 0.0 && vb1 == 0.0 {
        return Ok(point);
    }
    let wa = r1 * r1 * va1;
    let df = if wa == 0.0 && vb1 == 0.0 {
        // Zero-variance candidate with mean 0: the only noise is the
        // baseline's (the limit of the Satterthwaite formula as ρ -> 0).
        (na - 1) as f64
    } else {
        satterthwaite_df(wa, na, vb1, nb).unwrap_or((na + nb - 2) as f64)
    };
    let t = t_quantile(0.5 + confidence / 2.0, df);
    let t2 = t * t;

    // Quadratic A ρ² - 2B ρ + C <= 0 in the scaled unit.
    let qa = a1 * a1 - t2 * va1; // = 1 - g
    if qa <= 0.0 || qa.is_nan() {
        return Ok(RatioEstimate {
            ratio,
            low: f64::NEG_INFINITY,
            high: f64::INFINITY,
            confidence,
            bounded: false,
            df: Some(df),
        });
    }
    let qb = a1 * b1;
    let qc = b1 * b1 - t2 * vb1;
    // B² - AC rewritten without cancellation: t²(vb·A + b²·va) >= 0.
    let disc = t2 * (vb1 * qa + b1 * b1 * va1);
    let sq = disc.sqrt();
    let (r_lo, r_hi) = if qb == 0.0 {
        (-sq / qa, sq / qa)
    } else {
        // Stable quadratic roots: q/A and C/q.
        let q = qb + qb.signum() * sq;
        let (x1, x2) = (q / qa, qc / q);
        (x1.min(x2), x1.max(x2))
    };
    let unit = scale_b / scale_a;
    Ok(RatioEstimate {
        ratio,
        low: r_lo * unit,
        high: r_hi * unit,
        confidence,
        bounded: true,
        df: Some(df),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Fieller pivot (b - ρa)/sqrt(vb + ρ²va) must equal ±t at the bounds.
    fn pivot(baseline: &[f64], candidate: &[f64], rho: f64) -> f64 {
        let (a, va) = mean_var(baseline);
        let (b, vb) = mean_var(candidate);
        let va = va / baseline.len() as f64;
        let vb = vb / candidate.len() as f64;
        (b - rho * a) / (vb + rho * rho * va).sqrt()
    }

    #[test]
    fn bounds_solve_the_fieller_equation() {
        let base = [10.2, 10.5, 9.9, 10.1, 10.4, 10.0];
        let cand = [10.9, 11.3, 10.8, 11.1, 11.0];
        let r = ratio_ci(&base, &cand, 0.95).unwrap();
        let t = t_quantile(0.975, r.df.unwrap());
        assert!((pivot(&base, &cand, r.low) - t).abs() < 1e-9);
        assert!((pivot(&base, &cand, r.high) + t).abs() < 1e-9);
        assert!(r.low < r.ratio && r.ratio < r.high);
    }

    #[test]
    fn negative_baseline_and_zero_candidate_mean() {
        let base = [-10.2, -10.5, -9.9, -10.1];
        let cand = [1.0, -1.0, 0.5, -0.5];
        let r = ratio_ci(&base, &cand, 0.95).unwrap();
        assert_eq!(r.ratio, 0.0);
        assert!(r.bounded);
        assert!(r.low < 0.0 && r.high > 0.0);
        let t = t_quantile(0.975, r.df.unwrap());
        // Bounds are where the pivot is ±t (order depends on sign of a).
        assert!((pivot(&base, &cand, r.low).abs() - t).abs() < 1e-9);
        assert!((pivot(&base, &cand, r.high).abs() - t).abs() < 1e-9);
    }

    #[test]
    fn degenerate_cases() {
        assert!(matches!(
            ratio_ci(&[1.0], &[1.0, 2.0], 0.95),
            Err(StatsError::TooFewSamples {
                sample: "baseline",
                ..
            })
        ));
        assert!(matches!(
            ratio_ci(&[1.0, 2.0], &[3.0], 0.95),
            Err(StatsError::TooFewSamples {
                sample: "candidate",
                ..
            })
        ));
        assert_eq!(
            ratio_ci(&[-1.0, 1.0], &[3.0, 4.0], 0.95),
            Err(StatsError::ZeroBaselineMean)
        );
        assert!(matches!(
            ratio_ci(&[1.0, 2.0], &[3.0, 4.0], 0.0),
            Err(StatsError::InvalidParameter { .. })
        ));
        // Both constant: exact point.
        let r = ratio_ci(&[4.0; 3], &[5.0; 4], 0.95).unwrap();
        assert_eq!(
            (r.ratio, r.low, r.high, r.bounded, r.df),
            (1.25, 1.25, 1.25, true, None)
        );
        // Both constant and candidate zero.
        let r = ratio_ci(&[4.0; 3], &[0.0; 4], 0.95).unwrap();
        assert_eq!((r.ratio, r.low, r.high), (0.0, 0.0, 0.0));
        // Constant baseline: only candidate noise; df = n_c - 1 and the
        // interval is the candidate mean's t interval divided by a.
        let cand = [5.0, 6.0, 7.0];
        let r = ratio_ci(&[2.0; 5], &cand, 0.95).unwrap();
        assert_eq!(r.df, Some(2.0));
        let half = t_quantile(0.975, 2.0) * (1.0_f64 / 3.0).sqrt() / 2.0;
        assert!((r.low - (3.0 - half)).abs() < 1e-12);
        assert!((r.high - (3.0 + half)).abs() < 1e-12);
        // Constant candidate at zero, noisy baseline: the set is {0}.
        let r = ratio_ci(&[9.0, 10.0, 11.0], &[0.0; 3], 0.95).unwrap();
        assert_eq!((r.low, r.high, r.df), (0.0, 0.0, Some(2.0)));
    }

    #[test]
    fn noisy_baseline_is_unbounded() {
        // Baseline mean 1 with a huge spread: cannot tell it from zero.
        let r = ratio_ci(&[-20.0, 22.0, 1.0], &[10.0, 11.0, 12.0], 0.95).unwrap();
        assert!(!r.bounded);
        assert_eq!((r.low, r.high), (f64::NEG_INFINITY, f64::INFINITY));
        assert_eq!(r.ratio, 11.0);
    }

    #[test]
    fn extreme_scales_do_not_overflow() {
        let base = [1e-300, 1.1e-300, 0.9e-300];
        let cand = [1e300, 1.1e300, 0.9e300];
        let r = ratio_ci(&base, &cand, 0.95).unwrap_or_else(|e| panic!("{e}"));
        // The ratio itself overflows f64 here; that is the honest answer.
        assert!(r.ratio.is_infinite());
        let base = [1e150, 1.1e150, 0.9e150];
        let cand = [2e150, 2.2e150, 1.8e150];
        let r = ratio_ci(&base, &cand, 0.95).unwrap();
        assert!((r.ratio - 2.0).abs() < 1e-12);
        assert!(r.bounded && r.low < 2.0 && r.high > 2.0 && r.high.is_finite());
    }
}

//! One-sample descriptive statistics and their confidence intervals.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};
use statrs::function::gamma::ln_gamma;

use crate::basic::{check_open_unit, check_sample, mean, median_of_sorted, sorted, variance};
use crate::StatsError;

/// Confidence level used by [`Summary::of`].
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// A closed interval `[low, high]` at a stated confidence level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Nominal confidence level, e.g. 0.95.
    pub confidence: f64,
}

/// Which order statistics bound a distribution-free median interval, and the
/// coverage they actually give. Depends on `n` only, not on the data.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MedianCiRanks {
    /// 1-based rank `l` of the lower bound `x(l)` in the sorted sample.
    pub low_rank: usize,
    /// 1-based rank `u = n + 1 - l` of the upper bound `x(u)`.
    pub high_rank: usize,
    /// Exact coverage `P(l <= B <= u - 1)`, `B ~ Binomial(n, 1/2)`, for a
    /// continuous distribution.
    pub achieved_confidence: f64,
    /// `false` when `n` is too small for any order-statistic interval to
    /// reach the nominal level; the ranks are then `1..n` (the full range)
    /// and `achieved_confidence` is below nominal.
    pub reaches_nominal: bool,
}

/// Distribution-free confidence interval of the median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MedianCi {
    /// `x(low_rank)`.
    pub low: f64,
    /// `x(high_rank)`.
    pub high: f64,
    /// Requested confidence level.
    pub nominal_confidence: f64,
    /// The ranks and the coverage they give.
    #[serde(flatten)]
    pub ranks: MedianCiRanks,
}

/// Descriptive statistics of one sample.
///
/// Fields that need two or more observations are `None` for `n == 1`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Number of observations.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (divisor `n - 1`); `None` for `n == 1`.
    pub stddev: Option<f64>,
    /// Coefficient of variation `stddev / |mean|`; `None` for `n == 1` or a
    /// zero mean.
    pub cv: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Median (mean of the two middle values for even `n`).
    pub median: f64,
    /// 95% distribution-free interval of the median (see [`median_ci`]).
    pub median_ci: MedianCi,
    /// 95% Student-t interval of the mean; `None` for `n == 1`.
    pub mean_ci: Option<Interval>,
}

impl Summary {
    /// Summarise a sample: needs at least one value, all finite.
    pub fn of(sample: &[f64]) -> Result<Summary, StatsError> {
        check_sample(sample, "sample")?;
        let xs = sorted(sample);
        let n = xs.len();
        let m = mean(&xs);
        let (stddev, cv, mean_ci) = if n >= 2 {
            let sd = variance(&xs, m).sqrt();
            let cv = if m != 0.0 { Some(sd / m.abs()) } else { None };
            (Some(sd), cv, Some(t_interval(m, sd, n, DEFAULT_CONFIDENCE)))
        } else {
            (None, None, None)
        };
        Ok(Summary {
            n,
            mean: m,
            stddev,
            cv,
            min: xs[0],
            max: xs[n - 1],
            median: median_of_sorted(&xs),
            median_ci: median_ci_sorted(&xs, DEFAULT_CONFIDENCE)?,
            mean_ci,
        })
    }
}

/// Median of a sample.
pub fn median(sample: &[f64]) -> Result<f64, StatsError> {
    check_sample(sample, "sample")?;
    Ok(median_of_sorted(&sorted(sample)))
}

/// Student-t confidence interval of the mean, `mean ± t(1-(1-c)/2, n-1) · s/√n`.
///
/// Needs `n >= 2`. For a sample with zero spread the interval is the point
/// `[mean, mean]`.
pub fn mean_ci(sample: &[f64], confidence: f64) -> Result<Interval, StatsError> {
    check_sample(sample, "sample")?;
    check_open_unit("confidence", confidence)?;
    if sample.len() < 2 {
        return Err(StatsError::TooFewSamples {
            sample: "sample",
            needed: 2,
            got: sample.len(),
        });
    }
    let m = mean(sample);
    let sd = variance(sample, m).sqrt();
    Ok(t_interval(m, sd, sample.len(), confidence))
}

fn t_interval(mean: f64, sd: f64, n: usize, confidence: f64) -> Interval {
    let half = if sd == 0.0 {
        0.0
    } else {
        t_quantile(0.5 + confidence / 2.0, (n - 1) as f64) * sd / (n as f64).sqrt()
    };
    Interval {
        low: mean - half,
        high: mean + half,
        confidence,
    }
}

/// Quantile of the standard Student t distribution with `df > 0` degrees of
/// freedom, for `p` in (0, 1).
pub(crate) fn t_quantile(p: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(p),
        // Only reachable with df <= 0 or NaN, which callers rule out.
        Err(_) => f64::NAN,
    }
}

/// Order-statistic ranks of the distribution-free median interval for a
/// sample of size `n` (see [`median_ci`] for the method).
pub fn median_ci_ranks(n: usize, confidence: f64) -> Result<MedianCiRanks, StatsError> {
    check_open_unit("confidence", confidence)?;
    if n == 0 {
        return Err(StatsError::Empty { sample: "sample" });
    }
    let half_alpha = (1.0 - confidence) / 2.0;
    // Largest k with P(B <= k) <= alpha/2; then l = k + 1.
    let mut best: Option<(usize, f64)> = None;
    let nf = n as f64;
    // Below n/2 - 10·sqrt(n) (20 standard deviations of B) the binomial
    // mass is < 1e-80: start there to keep this O(sqrt(n)). Safe for every
    // confidence < 1 representable in f64: alpha/2 >= 5e-17, reached
    // within ~8.3 standard deviations.
    let start = (nf / 2.0 - 10.0 * nf.sqrt()).floor().max(0.0) as usize;
    let ln_n_fact = ln_gamma(nf + 1.0);
    let ln_half_pow = -nf * std::f64::consts::LN_2;
    let mut cdf = 0.0_f64;
    for k in start..n {
        let kf = k as f64;
        let ln_pmf = ln_n_fact - ln_gamma(kf + 1.0) - ln_gamma(nf - kf + 1.0) + ln_half_pow;
        cdf += ln_pmf.exp();
        if cdf <= half_alpha {
            best = Some((k, cdf));
        } else {
            break;
        }
    }
    let (low_rank, tail, reaches_nominal) = match best {
        Some((k, cdf_k)) => (k + 1, cdf_k, true),
        None => (1, 0.0, false),
    };
    // Coverage P(l <= B <= n - l) = 1 - 2 P(B <= l - 1) by symmetry.
    let achieved_confidence = if reaches_nominal {
        1.0 - 2.0 * tail
    } else {
        // Full range x(1)..x(n): misses only when all n fall on one side.
        1.0 - 2.0 * (ln_half_pow.exp())
    };
    Ok(MedianCiRanks {
        low_rank,
        high_rank: n + 1 - low_rank,
        achieved_confidence: achieved_confidence.max(0.0),
        reaches_nominal,
    })
}

/// Distribution-free confidence interval of the median by the binomial
/// order-statistic method.
///
/// For `x(1) <= ... <= x(n)` and a continuous distribution with median `M`,
/// the number `B` of observations below `M` is Binomial(n, 1/2), so
/// `P(x(l) <= M <= x(n+1-l)) = P(l <= B <= n-l) = 1 - 2·P(B <= l-1)`.
/// The interval uses the largest `l` (narrowest interval) whose coverage is
/// still at least `confidence`; it is the same interval as SciPy's
/// `quantile_test(x, q, p=0.5).confidence_interval()`. The achieved coverage
/// is reported (it is always >= nominal, often well above for small n).
///
/// When `n` is too small for any `l` to reach the level (for 95%: n <= 5),
/// the interval is the full range `[min, max]`, `reaches_nominal` is
/// `false` and `achieved_confidence` is `1 - 2^(1-n)` (0 for n = 1).
pub fn median_ci(sample: &[f64], confidence: f64) -> Result<MedianCi, StatsError> {
    check_sample(sample, "sample")?;
    check_open_unit("confidence", confidence)?;
    median_ci_sorted(&sorted(sample), confidence)
}

fn median_ci_sorted(xs: &[f64], confidence: f64) -> Result<MedianCi, StatsError> {
    let ranks = median_ci_ranks(xs.len(), confidence)?;
    Ok(MedianCi {
        low: xs[ranks.low_rank - 1],
        high: xs[ranks.high_rank - 1],
        nominal_confidence: confidence,
        ranks,
    })
}

/// Geometric mean `exp(mean(ln x))` of strictly positive finite values: the
/// right average for ratios (e.g. speed-ups across benchmarks).
pub fn geometric_mean(sample: &[f64]) -> Result<f64, StatsError> {
    check_sample(sample, "sample")?;
    if let Some(index) = sample.iter().position(|v| *v <= 0.0) {
        return Err(StatsError::NonPositive {
            sample: "sample",
            index,
            value: sample[index],
        });
    }
    let logs: Vec<f64> = sample.iter().map(|v| v.ln()).collect();
    Ok(mean(&logs).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_instead_of_panics() {
        assert_eq!(
            Summary::of(&[]),
            Err(StatsError::Empty { sample: "sample" })
        );
        match Summary::of(&[1.0, f64::NAN]) {
            Err(StatsError::NonFinite {
                index: 1, value, ..
            }) => assert!(value.is_nan()),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            Summary::of(&[f64::NEG_INFINITY]),
            Err(StatsError::NonFinite { index: 0, .. })
        ));
        assert!(matches!(
            mean_ci(&[1.0], 0.95),
            Err(StatsError::TooFewSamples {
                needed: 2,
                got: 1,
                ..
            })
        ));
        assert!(matches!(
            mean_ci(&[1.0, 2.0], 1.0),
            Err(StatsError::InvalidParameter { .. })
        ));
        assert!(matches!(
            median_ci(&[1.0, 2.0], f64::NAN),
            Err(StatsError::InvalidParameter { .. })
        ));
        assert!(matches!(median(&[]), Err(StatsError::Empty { .. })));
        assert!(matches!(
            median_ci_ranks(0, 0.95),
            Err(StatsError::Empty { .. })
        ));
    }

    #[test]
    fn single_observation() {
        let s = Summary::of(&[42.0]).unwrap();
        assert_eq!(s.n, 1);
        assert_eq!(s.mean, 42.0);
        assert_eq!((s.min, s.median, s.max), (42.0, 42.0, 42.0));
        assert_eq!(s.stddev, None);
        assert_eq!(s.cv, None);
        assert_eq!(s.mean_ci, None);
        assert!(!s.median_ci.ranks.reaches_nominal);
        assert_eq!(s.median_ci.ranks.achieved_confidence, 0.0);
        assert_eq!((s.median_ci.low, s.median_ci.high), (42.0, 42.0));
    }

    #[test]
    fn constant_sample_has_point_mean_ci_and_zero_cv() {
        let s = Summary::of(&[3.0; 7]).unwrap();
        assert_eq!(s.stddev, Some(0.0));
        assert_eq!(s.cv, Some(0.0));
        let ci = s.mean_ci.unwrap();
        assert_eq!((ci.low, ci.high), (3.0, 3.0));
    }

    #[test]
    fn zero_mean_has_no_cv() {
        let s = Summary::of(&[-1.0, 1.0]).unwrap();
        assert_eq!(s.cv, None);
        assert_eq!(s.stddev, Some(2.0_f64.sqrt()));
    }

    #[test]
    fn small_n_median_ci_falls_back_to_full_range() {
        // 95% needs n >= 6: 1 - 2/2^5 = 0.9375 < 0.95 <= 1 - 2/2^6.
        let r5 = median_ci_ranks(5, 0.95).unwrap();
        assert_eq!(
            (r5.low_rank, r5.high_rank, r5.reaches_nominal),
            (1, 5, false)
        );
        assert_eq!(r5.achieved_confidence, 0.9375);
        let r6 = median_ci_ranks(6, 0.95).unwrap();
        assert_eq!(
            (r6.low_rank, r6.high_rank, r6.reaches_nominal),
            (1, 6, true)
        );
        assert_eq!(r6.achieved_confidence, 0.96875);
        let ci = median_ci(&[5.0, 1.0, 4.0, 2.0, 3.0], 0.95).unwrap();
        assert_eq!((ci.low, ci.high), (1.0, 5.0));
    }

    #[test]
    fn median_ci_ranks_scale_to_large_n() {
        // Normal approximation: l ≈ n/2 - 1.96·sqrt(n)/2.
        let r = median_ci_ranks(1_000_000, 0.95).unwrap();
        assert!(r.reaches_nominal);
        let approx = 500_000.0 - 1.959964 * 500.0;
        assert!((r.low_rank as f64 - approx).abs() < 3.0, "{r:?}");
        assert!(r.achieved_confidence >= 0.95 && r.achieved_confidence < 0.951);
    }

    #[test]
    fn geometric_mean_errors_and_value() {
        assert!(matches!(
            geometric_mean(&[1.0, 0.0]),
            Err(StatsError::NonPositive { index: 1, .. })
        ));
        assert!(matches!(
            geometric_mean(&[-2.0]),
            Err(StatsError::NonPositive { index: 0, .. })
        ));
        assert!(matches!(geometric_mean(&[]), Err(StatsError::Empty { .. })));
        let g = geometric_mean(&[1.0, 4.0, 16.0]).unwrap();
        assert!((g - 4.0).abs() < 1e-15);
        // No overflow of the product.
        let g = geometric_mean(&[1e300, 1e300, 1e300]).unwrap();
        assert!((g / 1e300 - 1.0).abs() < 1e-12);
    }
}

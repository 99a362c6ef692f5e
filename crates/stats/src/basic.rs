//! Shared numerics: validation, ordering, compensated sums, moments.

use std::cmp::Ordering;

use crate::StatsError;

/// Reject empty samples and non-finite values.
pub(crate) fn check_sample(x: &[f64], sample: &'static str) -> Result<(), StatsError> {
    if x.is_empty() {
        return Err(StatsError::Empty { sample });
    }
    check_finite(x, sample)
}

/// Reject non-finite values (an empty sample passes).
pub(crate) fn check_finite(x: &[f64], sample: &'static str) -> Result<(), StatsError> {
    match x.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(StatsError::NonFinite {
            sample,
            index,
            value: x[index],
        }),
        None => Ok(()),
    }
}

/// Validate a probability-like parameter in the open interval (0, 1).
pub(crate) fn check_open_unit(name: &'static str, value: f64) -> Result<(), StatsError> {
    if value.is_finite() && value > 0.0 && value < 1.0 {
        Ok(())
    } else {
        Err(StatsError::InvalidParameter {
            name,
            value,
            expected: "a number strictly between 0 and 1",
        })
    }
}

/// Numeric order for finite floats; -0.0 and 0.0 compare equal, as they do
/// with `==` and in NumPy, so they count as a tie.
pub(crate) fn cmp_f64(a: &f64, b: &f64) -> Ordering {
    a.partial_cmp(b).unwrap_or(Ordering::Equal)
}

pub(crate) fn sorted(x: &[f64]) -> Vec<f64> {
    let mut v = x.to_vec();
    v.sort_by(cmp_f64);
    v
}

/// Median of an already sorted, non-empty slice (mean of the two middle
/// values for even n, as NumPy does).
pub(crate) fn median_of_sorted(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        midpoint(xs[n / 2 - 1], xs[n / 2])
    }
}

/// (a + b) / 2 without overflow for large finite values.
fn midpoint(a: f64, b: f64) -> f64 {
    let m = (a + b) / 2.0;
    if m.is_finite() {
        m
    } else {
        a / 2.0 + b / 2.0
    }
}

/// Neumaier-compensated sum.
fn sum(values: impl Iterator<Item = f64>) -> f64 {
    let mut s = 0.0_f64;
    let mut c = 0.0_f64;
    for v in values {
        let t = s + v;
        if s.abs() >= v.abs() {
            c += (s - t) + v;
        } else {
            c += (v - t) + s;
        }
        s = t;
    }
    s + c
}

/// Arithmetic mean of a non-empty slice of finite values; never overflows to
/// infinity when the true mean is finite.
pub(crate) fn mean(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let m = sum(x.iter().copied()) / n;
    if m.is_finite() {
        m
    } else {
        sum(x.iter().map(|v| v / n))
    }
}

/// Sample variance (divisor n-1) by the two-pass algorithm, for n >= 2.
/// Rescales when squaring the deviations would overflow.
pub(crate) fn variance(x: &[f64], mean: f64) -> f64 {
    let dof = (x.len() - 1) as f64;
    let v = sum(x.iter().map(|v| (v - mean) * (v - mean))) / dof;
    if v.is_finite() {
        return v;
    }
    let scale = x.iter().fold(0.0_f64, |acc, v| acc.max((v - mean).abs()));
    let ss = sum(x.iter().map(|v| {
        let d = (v - mean) / scale;
        d * d
    }));
    // May still be +inf when the variance itself exceeds f64::MAX.
    ss / dof * scale * scale
}

/// Sample mean and variance, for callers that need both.
pub(crate) fn mean_var(x: &[f64]) -> (f64, f64) {
    let m = mean(x);
    (m, variance(x, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even() {
        assert_eq!(median_of_sorted(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median_of_sorted(&[1.0, 2.0, 4.0, 9.0]), 3.0);
        assert_eq!(median_of_sorted(&[f64::MAX, f64::MAX]), f64::MAX);
    }

    #[test]
    fn compensated_mean_is_exact_on_cancellation() {
        // Naive summation loses the 1.0 entirely.
        let x = [1e16, 1.0, -1e16, 1.0];
        assert_eq!(mean(&x), 0.5);
    }

    #[test]
    fn mean_and_variance_do_not_overflow() {
        let x = [f64::MAX, f64::MAX / 2.0];
        let m = mean(&x);
        assert!(m.is_finite());
        assert_eq!(m, f64::MAX * 0.75);
        let x = [1e200, -1e200, 1e200, -1e200];
        let v = variance(&x, mean(&x));
        assert!(v.is_infinite(), "true variance ~1.3e400 exceeds f64");
        // One deviation squares past f64::MAX, but the variance is finite.
        let mut x = vec![0.0; 1000];
        x[0] = 2e154;
        let (m, v) = mean_var(&x);
        assert_eq!(m, 2e151);
        let expected =
            (2e154_f64 - 2e151) / 999.0 * (2e154 - 2e151) + 999.0 * 2e151 * 2e151 / 999.0;
        assert!(v.is_finite());
        assert!(
            (v - expected).abs() <= 1e-12 * expected,
            "{v} vs {expected}"
        );
    }

    #[test]
    fn negative_zero_ties_with_zero() {
        assert_eq!(cmp_f64(&-0.0, &0.0), Ordering::Equal);
    }
}

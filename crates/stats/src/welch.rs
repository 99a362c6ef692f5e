//! Welch's unequal-variance t-test, two-sided.

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::basic::{check_sample, mean_var};
use crate::{StatsError, TestMethod, TestResult};

/// Welch–Satterthwaite degrees of freedom for two independent variance
/// terms `wa = s_a²/n_a` and `wb = s_b²/n_b`, written in a form that
/// neither overflows nor divides 0 by 0 when one term vanishes (the limit
/// is then the other sample's `n - 1`). Both terms zero gives `None`.
pub(crate) fn satterthwaite_df(wa: f64, na: usize, wb: f64, nb: usize) -> Option<f64> {
    let total = wa + wb;
    if total <= 0.0 {
        return None;
    }
    let fa = wa / total;
    let fb = wb / total;
    Some(1.0 / (fa * fa / (na - 1) as f64 + fb * fb / (nb - 1) as f64))
}

/// Two-sided Welch t-test of equal means, without assuming equal variances.
///
/// `t = (mean(a) - mean(b)) / sqrt(s_a²/n_a + s_b²/n_b)` (SciPy's sign
/// convention: positive when `a` has the larger mean), Welch–Satterthwaite
/// degrees of freedom, `p = 2·P(T_df > |t|)` with the Student t survival
/// function of `statrs`. Matches `scipy.stats.ttest_ind(a, b, equal_var=False)`.
///
/// Needs at least two values per sample. When both samples have zero
/// variance the test degenerates; this returns the limit instead of SciPy's
/// NaN: equal means give `t = 0, p = 1`, different means give
/// `t = ±inf, p = 0`, with `df = None` in both cases.
pub fn welch_t(a: &[f64], b: &[f64]) -> Result<TestResult, StatsError> {
    check_sample(a, "a")?;
    check_sample(b, "b")?;
    for (x, sample) in [(a, "a"), (b, "b")] {
        if x.len() < 2 {
            return Err(StatsError::TooFewSamples {
                sample,
                needed: 2,
                got: x.len(),
            });
        }
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    Ok(welch_t_from((ma, va, a.len()), (mb, vb, b.len())))
}

/// [`welch_t`] from each sample's mean, variance (over n - 1) and size,
/// each size at least two: for samples known only by their summaries.
pub fn welch_t_from(a: (f64, f64, usize), b: (f64, f64, usize)) -> TestResult {
    let ((ma, va, na), (mb, vb, nb)) = (a, b);
    let (na, nb) = (na.max(2), nb.max(2));
    let wa = va / na as f64;
    let wb = vb / nb as f64;
    let diff = ma - mb;
    let Some(df) = satterthwaite_df(wa, na, wb, nb) else {
        let (statistic, p_value) = if diff == 0.0 {
            (0.0, 1.0)
        } else {
            (diff.signum() * f64::INFINITY, 0.0)
        };
        return TestResult {
            statistic,
            p_value,
            method: TestMethod::WelchT,
            df: None,
        };
    };
    let t = diff / (wa + wb).sqrt();
    let p = match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => 2.0 * dist.sf(t.abs()),
        Err(_) => f64::NAN, // unreachable: df >= 1 here
    };
    TestResult {
        statistic: t,
        p_value: p.clamp(0.0, 1.0),
        method: TestMethod::WelchT,
        df: Some(df),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors() {
        assert!(matches!(
            welch_t(&[1.0], &[1.0, 2.0]),
            Err(StatsError::TooFewSamples {
                sample: "a",
                needed: 2,
                got: 1
            })
        ));
        assert!(matches!(
            welch_t(&[1.0, 2.0], &[]),
            Err(StatsError::Empty { sample: "b" })
        ));
        assert!(matches!(
            welch_t(&[1.0, f64::INFINITY], &[1.0, 2.0]),
            Err(StatsError::NonFinite {
                sample: "a",
                index: 1,
                ..
            })
        ));
    }

    #[test]
    fn zero_variance_limits() {
        let r = welch_t(&[5.0; 4], &[5.0; 3]).unwrap();
        assert_eq!((r.statistic, r.p_value, r.df), (0.0, 1.0, None));
        let r = welch_t(&[5.0; 4], &[6.0; 3]).unwrap();
        assert_eq!(
            (r.statistic, r.p_value, r.df),
            (f64::NEG_INFINITY, 0.0, None)
        );
        // One constant sample: df is the other sample's n - 1.
        let r = welch_t(&[5.0; 4], &[6.0, 7.0, 8.0]).unwrap();
        assert_eq!(r.df, Some(2.0));
        // t = -2 / sqrt(1/3); p from the t distribution with 2 df:
        // 2·P(T_2 > |t|) = 1 - |t|/sqrt(2 + t²) for 2 degrees of freedom.
        let t = -2.0 / (1.0_f64 / 3.0).sqrt();
        assert!((r.statistic - t).abs() < 1e-12);
        let p = 1.0 - t.abs() / (2.0 + t * t).sqrt();
        assert!((r.p_value - p).abs() < 1e-12, "{} vs {p}", r.p_value);
    }

    #[test]
    fn satterthwaite_limits() {
        assert_eq!(satterthwaite_df(0.0, 5, 0.0, 7), None);
        assert_eq!(satterthwaite_df(0.0, 5, 2.0, 7), Some(6.0));
        assert_eq!(satterthwaite_df(3.0, 5, 0.0, 7), Some(4.0));
        // Equal terms and sizes: 2(n-1).
        assert!((satterthwaite_df(1.0, 10, 1.0, 10).unwrap() - 18.0).abs() < 1e-12);
        // No overflow for huge variance terms.
        assert!(satterthwaite_df(1e300, 10, 1e300, 10).unwrap().is_finite());
    }
}

//! Better / worse / within noise: the decision a comparison table prints.

use serde::Serialize;

use crate::basic::{check_finite, check_open_unit, mean};
use crate::mwu::{mann_whitney_u, mwu_min_p_value};
use crate::ratio::{ratio_ci, RatioEstimate};
use crate::welch::welch_t;
use crate::{StatsError, TestResult};

/// Which way is good for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Times, latencies, remote-access ratios, migrations.
    LowerIsBetter,
    /// Throughput, bandwidth, local-access ratios.
    HigherIsBetter,
}

/// Which two-sample test decides significance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// [`mann_whitney_u`](crate::mann_whitney_u): distribution-free, robust
    /// to outliers and skew; the default for timings.
    MannWhitneyU,
    /// [`welch_t`](crate::welch_t): compares means; more power for
    /// near-normal data, sensitive to outliers.
    WelchT,
}

/// Outcome of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significant (p < alpha) and the means moved in the good direction
    /// by more than the noise threshold.
    Better,
    /// Significant and moved in the bad direction beyond the threshold.
    Worse,
    /// Not significant, or a change no larger than the noise threshold.
    WithinNoise,
    /// The samples are too small for the test to ever reach p < alpha
    /// (see [`min_achievable_p`]); nothing can be concluded.
    TooFewSamples,
}

/// A verdict and the numbers behind it, ready for a table or JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The outcome.
    pub verdict: Verdict,
    /// Direction used.
    pub direction: Direction,
    /// Test used.
    pub test: TestKind,
    /// Significance level used.
    pub alpha: f64,
    /// Relative noise threshold used (0.01 = 1%).
    pub noise_threshold: f64,
    /// Baseline sample size.
    pub n_baseline: usize,
    /// Candidate sample size.
    pub n_candidate: usize,
    /// Baseline mean (`None` if the baseline is empty).
    pub baseline_mean: Option<f64>,
    /// Candidate mean (`None` if the candidate is empty).
    pub candidate_mean: Option<f64>,
    /// Full test result; `None` for [`Verdict::TooFewSamples`].
    pub test_result: Option<TestResult>,
    /// `test_result.p_value`, repeated for convenience.
    pub p_value: Option<f64>,
    /// `(mean(candidate) - mean(baseline)) / |mean(baseline)|`; see
    /// [`relative_change`].
    pub relative_change: Option<f64>,
    /// Ratio of means with a `1 - alpha` Fieller interval; `None` when it
    /// cannot be computed (n < 2, zero baseline mean).
    pub ratio: Option<RatioEstimate>,
    /// `p_value < alpha`.
    pub significant: bool,
    /// `|relative_change| > noise_threshold` (a change away from a zero
    /// baseline mean counts as beyond any threshold).
    pub beyond_noise: bool,
    /// Whether the test's direction of effect agrees with the sign of the
    /// change of the means. Always true for Welch (its statistic is the
    /// mean difference). For Mann-Whitney it can be false when a few
    /// extreme runs pull the mean one way while most runs moved the other
    /// way; the verdict is then `WithinNoise`, since the evidence conflicts.
    pub directions_agree: bool,
}

/// Relative change of the means, `(candidate - baseline) / |baseline|`.
///
/// Dividing by `|baseline|` keeps the sign meaning "candidate is larger"
/// even for a negative baseline. `None` when the baseline mean is 0 and the
/// candidate's is not (the change is unbounded); `Some(0.0)` when both are 0.
pub fn relative_change(baseline_mean: f64, candidate_mean: f64) -> Option<f64> {
    if baseline_mean == 0.0 {
        return (candidate_mean == 0.0).then_some(0.0);
    }
    Some((candidate_mean - baseline_mean) / baseline_mean.abs())
}

/// Smallest two-sided p-value the test can produce for samples of sizes
/// `n1` and `n2`.
///
/// * Mann-Whitney U: `2 / C(n1+n2, n1)`, the exact test's p-value under
///   complete separation. With ties or the normal approximation the
///   achievable p can differ slightly; this is the design-level bound.
/// * Welch t: 0 when both samples have at least 2 values (the statistic is
///   unbounded), 1 otherwise (the test is undefined).
pub fn min_achievable_p(test: TestKind, n1: usize, n2: usize) -> f64 {
    match test {
        TestKind::MannWhitneyU => mwu_min_p_value(n1, n2),
        TestKind::WelchT => {
            if n1 >= 2 && n2 >= 2 {
                0.0
            } else {
                1.0
            }
        }
    }
}

/// Smallest `n` such that `n` runs of baseline and `n` runs of candidate
/// can give `p < alpha` with this test: e.g. 4 per side for Mann-Whitney at
/// alpha = 0.05 (3 vs 3 can never do better than p = 0.1), 5 at 0.01, and
/// 2 for Welch. Use it to plan how many repetitions to run.
pub fn min_samples_for_test(test: TestKind, alpha: f64) -> Result<usize, StatsError> {
    check_open_unit("alpha", alpha)?;
    // Terminates: the Mann-Whitney bound decreases to 0 (C(2n,n) overflows
    // to +inf near n = 515, giving 2/inf = 0).
    Ok((2..)
        .find(|&n| min_achievable_p(test, n, n) < alpha)
        .unwrap_or(usize::MAX))
}

/// The fewest runs of every case that `--runs auto` does by default
/// (`--min-runs`), chosen for the default test, Mann-Whitney U at 5%:
/// 4 runs per side ([`min_samples_for_test`]) can reach significance only
/// when the two samples do not overlap at all (p = 0.029; one inverted
/// pair gives 0.057), while 5 per side still reach it with two of the 25
/// pairs inverted (p = 0.032) and reach 1% when they do not overlap.
pub const AUTO_MIN_RUNS: usize = 5;

/// Compare a candidate with a baseline.
///
/// The verdict is `Better` or `Worse` only when both
/// * the test is significant, `p < alpha`, and
/// * the means differ by more than the noise threshold,
///   `|relative_change| > noise_threshold`,
///
/// with the sign of the change and `direction` choosing between the two
/// (and, for Mann-Whitney, the rank test's direction of effect agreeing with
/// that sign; see [`Comparison::directions_agree`]).
/// Otherwise it is `WithinNoise`, or `TooFewSamples` when either sample
/// has fewer than 2 values or the sizes make `p < alpha` impossible
/// ([`min_achievable_p`]). Requiring both guards against the two classic
/// mistakes of benchmark comparison: calling a real but negligible 0.1%
/// shift a regression, and calling a large but noisy difference one.
///
/// Errors on non-finite values and on `alpha` outside (0, 1) or a negative
/// or non-finite `noise_threshold`. Empty samples are not an error: they
/// give `TooFewSamples`.
pub fn verdict(
    baseline: &[f64],
    candidate: &[f64],
    direction: Direction,
    alpha: f64,
    noise_threshold: f64,
    test: TestKind,
) -> Result<Comparison, StatsError> {
    check_finite(baseline, "baseline")?;
    check_finite(candidate, "candidate")?;
    check_open_unit("alpha", alpha)?;
    if !(noise_threshold.is_finite() && noise_threshold >= 0.0) {
        return Err(StatsError::InvalidParameter {
            name: "noise_threshold",
            value: noise_threshold,
            expected: "a finite number >= 0",
        });
    }
    let (nb, nc) = (baseline.len(), candidate.len());
    let baseline_mean = (nb > 0).then(|| mean(baseline));
    let candidate_mean = (nc > 0).then(|| mean(candidate));
    let rel = match (baseline_mean, candidate_mean) {
        (Some(b), Some(c)) => relative_change(b, c),
        _ => None,
    };
    let mut out = Comparison {
        verdict: Verdict::TooFewSamples,
        direction,
        test,
        alpha,
        noise_threshold,
        n_baseline: nb,
        n_candidate: nc,
        baseline_mean,
        candidate_mean,
        test_result: None,
        p_value: None,
        relative_change: rel,
        ratio: None,
        significant: false,
        beyond_noise: false,
        directions_agree: true,
    };
    if nb < 2 || nc < 2 || min_achievable_p(test, nb, nc) >= alpha {
        return Ok(out);
    }
    let result = match test {
        TestKind::MannWhitneyU => mann_whitney_u(baseline, candidate)?,
        TestKind::WelchT => welch_t(baseline, candidate)?,
    };
    out.ratio = ratio_ci(baseline, candidate, 1.0 - alpha).ok();
    out.significant = result.p_value < alpha;
    out.p_value = Some(result.p_value);
    out.test_result = Some(result);
    let (b, c) = (baseline_mean.unwrap_or(0.0), candidate_mean.unwrap_or(0.0));
    out.beyond_noise = match rel {
        Some(r) => r.abs() > noise_threshold,
        None => true, // zero baseline mean, non-zero candidate mean
    };
    let candidate_larger = c > b;
    out.directions_agree = match (test, out.test_result) {
        (TestKind::MannWhitneyU, Some(r)) if c != b => {
            // U1 is the baseline's statistic: below n1·n2/2 means the
            // baseline tends to be smaller, i.e. the candidate larger.
            let mid = nb as f64 * nc as f64 / 2.0;
            r.statistic == mid || (r.statistic < mid) == candidate_larger
        }
        _ => true,
    };
    out.verdict = if out.significant && out.beyond_noise && out.directions_agree {
        match (direction, candidate_larger) {
            (Direction::LowerIsBetter, false) | (Direction::HigherIsBetter, true) => {
                Verdict::Better
            }
            _ => Verdict::Worse,
        }
    } else {
        Verdict::WithinNoise
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: [f64; 10] = [
        100.2, 99.8, 100.5, 100.1, 99.6, 100.3, 99.9, 100.0, 100.4, 99.7,
    ];

    fn scaled(f: f64) -> Vec<f64> {
        BASE.iter().map(|v| v * f).collect()
    }

    #[test]
    fn regression_and_improvement_respect_direction() {
        let slower = scaled(1.05);
        for test in [TestKind::MannWhitneyU, TestKind::WelchT] {
            let c = verdict(&BASE, &slower, Direction::LowerIsBetter, 0.05, 0.01, test).unwrap();
            assert_eq!(c.verdict, Verdict::Worse, "{c:?}");
            assert!(c.significant && c.beyond_noise);
            assert!((c.relative_change.unwrap() - 0.05).abs() < 1e-12);
            let r = c.ratio.unwrap();
            assert!(r.low < 1.05 && 1.05 < r.high && r.low > 1.0);
            assert_eq!(r.confidence, 0.95);
            let c = verdict(&BASE, &slower, Direction::HigherIsBetter, 0.05, 0.01, test).unwrap();
            assert_eq!(c.verdict, Verdict::Better);
            let c = verdict(&slower, &BASE, Direction::LowerIsBetter, 0.05, 0.01, test).unwrap();
            assert_eq!(c.verdict, Verdict::Better);
        }
    }

    #[test]
    fn significant_but_small_is_within_noise() {
        // A 0.5% shift on a very quiet metric: significant, below 1%.
        let base: Vec<f64> = (0..20).map(|i| 100.0 + 0.01 * f64::from(i)).collect();
        let cand: Vec<f64> = base.iter().map(|v| v * 1.005).collect();
        let c = verdict(
            &base,
            &cand,
            Direction::LowerIsBetter,
            0.05,
            0.01,
            TestKind::WelchT,
        )
        .unwrap();
        assert!(c.significant);
        assert!(!c.beyond_noise);
        assert_eq!(c.verdict, Verdict::WithinNoise);
        // Same data, threshold 0.1%: now a regression.
        let c = verdict(
            &base,
            &cand,
            Direction::LowerIsBetter,
            0.05,
            0.001,
            TestKind::WelchT,
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::Worse);
    }

    #[test]
    fn large_but_noisy_is_within_noise() {
        let base = [80.0, 120.0, 95.0, 130.0, 70.0];
        let cand = [90.0, 140.0, 100.0, 135.0, 85.0];
        let c = verdict(
            &base,
            &cand,
            Direction::LowerIsBetter,
            0.05,
            0.01,
            TestKind::MannWhitneyU,
        )
        .unwrap();
        assert!(c.beyond_noise && !c.significant);
        assert_eq!(c.verdict, Verdict::WithinNoise);
    }

    #[test]
    fn too_few_samples() {
        let c = verdict(
            &[1.0, 2.0, 3.0],
            &[7.0, 8.0, 9.0],
            Direction::LowerIsBetter,
            0.05,
            0.01,
            TestKind::MannWhitneyU,
        )
        .unwrap();
        // 3 vs 3 cannot reach p < 0.05 with Mann-Whitney (min p = 0.1).
        assert_eq!(c.verdict, Verdict::TooFewSamples);
        assert_eq!(c.p_value, None);
        assert_eq!(c.relative_change, Some(3.0));
        // Welch can (n >= 2 each).
        let c = verdict(
            &[1.0, 2.0, 3.0],
            &[7.0, 8.0, 9.0],
            Direction::LowerIsBetter,
            0.05,
            0.01,
            TestKind::WelchT,
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::Worse);
        let c = verdict(
            &[],
            &[1.0, 2.0],
            Direction::LowerIsBetter,
            0.05,
            0.01,
            TestKind::WelchT,
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::TooFewSamples);
        assert_eq!(c.baseline_mean, None);
        let c = verdict(
            &[1.0],
            &[1.0, 2.0],
            Direction::LowerIsBetter,
            0.05,
            0.01,
            TestKind::WelchT,
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::TooFewSamples);
    }

    #[test]
    fn zero_baseline_mean() {
        // Counters: none in the baseline, some in the candidate.
        let base = [0.0; 6];
        let cand = [3.0, 4.0, 2.0, 5.0, 3.0, 4.0];
        let c = verdict(
            &base,
            &cand,
            Direction::LowerIsBetter,
            0.05,
            0.01,
            TestKind::MannWhitneyU,
        )
        .unwrap();
        assert_eq!(c.relative_change, None);
        assert_eq!(c.ratio, None);
        assert!(c.beyond_noise);
        assert_eq!(c.verdict, Verdict::Worse);
        // Zero in both: no change.
        let c = verdict(
            &base,
            &base,
            Direction::LowerIsBetter,
            0.05,
            0.01,
            TestKind::WelchT,
        )
        .unwrap();
        assert_eq!(c.relative_change, Some(0.0));
        assert_eq!(c.p_value, Some(1.0));
        assert_eq!(c.verdict, Verdict::WithinNoise);
    }

    #[test]
    fn parameter_and_value_errors() {
        let a = [1.0, 2.0, 3.0];
        for alpha in [0.0, 1.0, f64::NAN, -0.1] {
            assert!(matches!(
                verdict(
                    &a,
                    &a,
                    Direction::LowerIsBetter,
                    alpha,
                    0.01,
                    TestKind::WelchT
                ),
                Err(StatsError::InvalidParameter { name: "alpha", .. })
            ));
        }
        for thr in [-0.01, f64::INFINITY, f64::NAN] {
            assert!(matches!(
                verdict(
                    &a,
                    &a,
                    Direction::LowerIsBetter,
                    0.05,
                    thr,
                    TestKind::WelchT
                ),
                Err(StatsError::InvalidParameter {
                    name: "noise_threshold",
                    ..
                })
            ));
        }
        assert!(matches!(
            verdict(
                &a,
                &[1.0, f64::NAN],
                Direction::LowerIsBetter,
                0.05,
                0.01,
                TestKind::WelchT
            ),
            Err(StatsError::NonFinite {
                sample: "candidate",
                index: 1,
                ..
            })
        ));
    }

    #[test]
    fn conflicting_rank_and_mean_evidence_is_not_a_verdict() {
        // Nine of ten candidate runs are faster than every baseline run, but
        // one 100 s run drags the candidate mean 77% up.
        let base: Vec<f64> = (0..10).map(|i| 10.0 + 0.1 * f64::from(i)).collect();
        let mut cand: Vec<f64> = (0..9).map(|i| 9.0 + 0.1 * f64::from(i)).collect();
        cand.push(100.0);
        let c = verdict(
            &base,
            &cand,
            Direction::LowerIsBetter,
            0.05,
            0.01,
            TestKind::MannWhitneyU,
        )
        .unwrap();
        assert!(c.significant && c.beyond_noise);
        assert!(c.relative_change.unwrap() > 0.7);
        assert!(!c.directions_agree);
        assert_eq!(c.verdict, Verdict::WithinNoise);
        assert_eq!(c.test_result.unwrap().statistic, 90.0);
    }

    #[test]
    fn serialises_for_the_report_layer() {
        let c = verdict(
            &BASE,
            &scaled(1.05),
            Direction::LowerIsBetter,
            0.05,
            0.01,
            TestKind::MannWhitneyU,
        )
        .unwrap();
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["verdict"], "worse");
        assert_eq!(v["direction"], "lower_is_better");
        assert_eq!(v["test"], "mann_whitney_u");
        assert_eq!(v["test_result"]["method"], "mann_whitney_u_asymptotic");
        assert!(v["ratio"]["low"].as_f64().unwrap() > 1.0);
        assert!(v["p_value"].as_f64().unwrap() < 0.001);
        // Unbounded interval bounds serialise as null, not as invalid JSON.
        let r = crate::ratio_ci(&[-20.0, 22.0, 1.0], &[10.0, 11.0, 12.0], 0.95).unwrap();
        let v = serde_json::to_value(r).unwrap();
        assert!(v["low"].is_null() && v["high"].is_null());
        assert_eq!(v["bounded"], false);
        let s = serde_json::to_value(crate::Summary::of(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap())
            .unwrap();
        assert_eq!(s["median_ci"]["low_rank"], 1);
        assert_eq!(s["median_ci"]["reaches_nominal"], true);
    }

    #[test]
    fn relative_change_signs() {
        assert_eq!(relative_change(10.0, 11.0), Some(0.1));
        assert_eq!(relative_change(-10.0, -9.0), Some(0.1));
        assert_eq!(relative_change(0.0, 1.0), None);
        assert_eq!(relative_change(0.0, 0.0), Some(0.0));
    }

    #[test]
    fn sample_size_planning() {
        assert_eq!(min_samples_for_test(TestKind::MannWhitneyU, 0.05), Ok(4));
        assert_eq!(min_samples_for_test(TestKind::MannWhitneyU, 0.01), Ok(5));
        assert_eq!(min_samples_for_test(TestKind::MannWhitneyU, 0.1), Ok(4));
        assert_eq!(min_samples_for_test(TestKind::WelchT, 0.05), Ok(2));
        assert!(min_samples_for_test(TestKind::MannWhitneyU, 1e-300).is_ok());
        assert!(min_samples_for_test(TestKind::WelchT, 0.0).is_err());
        assert_eq!(min_achievable_p(TestKind::MannWhitneyU, 3, 3), 0.1);
        assert_eq!(min_achievable_p(TestKind::WelchT, 1, 30), 1.0);
    }

    #[test]
    fn auto_min_runs_can_give_a_verdict_despite_an_outlier() {
        use crate::mann_whitney_u;
        let n = AUTO_MIN_RUNS;
        assert!(n >= min_samples_for_test(TestKind::MannWhitneyU, 0.05).unwrap());
        assert!(n >= min_samples_for_test(TestKind::MannWhitneyU, 0.01).unwrap());
        // Two of the n x n pairs inverted: still p < 0.05 with n per side.
        let a: Vec<f64> = (0..n).map(|i| 10.0 + i as f64).collect();
        let mut b: Vec<f64> = (0..n).map(|i| 10.5 + n as f64 + i as f64).collect();
        b[0] = a[n - 2] - 0.25; // below the two largest baselines
        let p = mann_whitney_u(&a, &b).unwrap().p_value;
        assert!(p < 0.05, "p = {p}");
        // One run fewer per side, with one pair inverted: no longer.
        let p = mann_whitney_u(&a[..n - 1], &{
            let mut c = b[1..].to_vec();
            c[0] = a[n - 2] - 0.25;
            c
        })
        .unwrap()
        .p_value;
        assert!(p >= 0.05, "p = {p}");
    }
}

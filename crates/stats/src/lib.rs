//! # numalab-stats: deciding whether a NUMA change made a difference
//!
//! numalab runs a workload several times under a baseline configuration
//! (kernel, policy, tunable) and several times under a candidate, and has to
//! say *better*, *worse*, or *cannot tell*. This crate is the part that
//! says it. It is pure arithmetic on `&[f64]`: no I/O, no global state, no
//! randomness, and no panics: bad input is a [`StatsError`].
//!
//! ## What the samples look like, and what follows
//!
//! Benchmark repetitions are few (3–30), right-skewed (a run can be slowed
//! by an unlucky page placement or a migration storm, never sped up past the
//! hardware), sometimes quantised (counters, integer percentages) and so
//! full of ties, and occasionally polluted by one wild run. So:
//!
//! * **Describe with robust and classical numbers side by side.**
//!   [`Summary`] gives mean, standard deviation and coefficient of
//!   variation, *and* median with min/max. The median's 95% interval is
//!   distribution-free (binomial order statistics): it needs no normality,
//!   and for small `n` it says honestly how much confidence it reaches
//!   instead of pretending (see [`median_ci`]). The mean's interval is the
//!   Student t one, exact for normal data and the expected companion.
//! * **Test with Mann-Whitney U by default.** The rank-sum test
//!   ([`mann_whitney_u`]) assumes no distribution, is barely moved by one
//!   outlier, and has nearly the power of the t-test on normal data. It
//!   follows SciPy's `mannwhitneyu(method="auto")` exactly: the exact
//!   null distribution for small samples without ties (counted exactly with
//!   the q-binomial generating function), the tie-corrected normal
//!   approximation with continuity correction otherwise. This is also what
//!   benchstat uses. [`welch_t`] is offered for metrics whose runs are close
//!   to normal and whose *mean* is what matters (e.g. total bandwidth); it
//!   does not assume equal variances, because a NUMA change often changes
//!   the variance too.
//! * **Size the effect as a ratio with an interval.** Performance people
//!   think in "3% slower", so [`ratio_ci`] gives `mean(candidate) /
//!   mean(baseline)` with a Fieller confidence interval, exact under
//!   normality of the means, asymmetric as a ratio's interval should be,
//!   and explicitly unbounded when the baseline is too noisy to divide by.
//!   [`geometric_mean`] averages such ratios across benchmarks.
//! * **Decide with significance *and* magnitude.** [`verdict`] says
//!   Better/Worse only when `p < alpha` *and* the means moved by more than a
//!   noise threshold (say 1%): a tiny but consistent shift is not a
//!   regression worth a kernel developer's afternoon, and a big but noisy
//!   one is not proven. (With Mann-Whitney the rank test's direction must
//!   also agree with the sign of the mean change: one wild run can drag the
//!   mean up while most runs got faster, and that is conflicting evidence,
//!   not a verdict.) If the sample sizes make `p < alpha` impossible
//!   (3 vs 3 runs with Mann-Whitney can never get below p = 0.1) the
//!   verdict is `TooFewSamples`, not a misleading "no difference";
//!   [`min_samples_for_test`] tells how many runs to plan.
//! * **Flag, never drop.** [`outliers`] marks suspicious runs with the
//!   Iglewicz–Hoaglin modified z-score (median/MAD based, so the outlier
//!   cannot hide by inflating the spread). Silently discarding runs is how
//!   benchmark results get massaged; the report shows the flag and the
//!   reader decides.
//!
//! ## Numerics
//!
//! Special functions (Student t CDF and quantile, normal tail via `erfc`,
//! log-gamma) come from `statrs`, a maintained, tested implementation,
//! rather than being rewritten here. Means use compensated summation and
//! rescale to avoid overflow; the variance is two-pass. The exact
//! Mann-Whitney counts are exact integers, not floating-point recurrences.
//!
//! ## Agreement with SciPy
//!
//! `tests/vectors/reference.json` holds values computed by SciPy (script
//! `tests/vectors/make_vectors.py`, version recorded in the file) for a
//! dozen benchmark-like samples; `tests/reference.rs` checks this crate
//! against them. Known, deliberate differences, all in degenerate corners:
//! Welch's test with two zero-variance samples returns its limit (p = 1 or
//! 0) where SciPy returns NaN; the t interval of a constant sample is the
//! point `[mean, mean]` where SciPy returns NaN; and the automatic
//! Mann-Whitney method falls back to the normal approximation when the
//! exact counts would exceed 128-bit integers (a sample of <= 8 against
//! one of ~10^5 or more), where SciPy would still count exactly.
//!
//! `docs/statistics.md` at the repository root explains each method, its
//! reference and why it was chosen.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod basic;
mod error;
mod mwu;
mod outliers;
mod ratio;
mod summary;
mod verdict;
mod welch;

use serde::Serialize;

pub use error::StatsError;
pub use mwu::{
    mann_whitney_u, mann_whitney_u_with, mwu_min_p_value, MwuMethod, MWU_AUTO_EXACT_MAX_N,
};
pub use outliers::{outliers, OUTLIER_Z_THRESHOLD};
pub use ratio::{ratio_ci, RatioEstimate};
pub use summary::{
    geometric_mean, mean_ci, median, median_ci, median_ci_ranks, Interval, MedianCi, MedianCiRanks,
    Summary, DEFAULT_CONFIDENCE,
};
pub use verdict::{
    min_achievable_p, min_samples_for_test, relative_change, verdict, Comparison, Direction,
    TestKind, Verdict, AUTO_MIN_RUNS,
};
pub use welch::{welch_t, welch_t_from};

/// How a [`TestResult`]'s p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TestMethod {
    /// Mann-Whitney U, exact null distribution (no ties).
    MannWhitneyUExact,
    /// Mann-Whitney U, normal approximation with tie and continuity
    /// corrections.
    MannWhitneyUAsymptotic,
    /// Welch's unequal-variance t-test.
    WelchT,
}

/// Result of a two-sided two-sample test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TestResult {
    /// Mann-Whitney: `U1`, the U statistic of the first sample. Welch: `t`,
    /// positive when the first sample has the larger mean. Same conventions
    /// as SciPy.
    pub statistic: f64,
    /// Two-sided p-value in [0, 1].
    pub p_value: f64,
    /// Method actually used.
    pub method: TestMethod,
    /// Degrees of freedom (Welch only; `None` for Mann-Whitney and for the
    /// degenerate zero-variance Welch case).
    pub df: Option<f64>,
}

#!/usr/bin/env python3
"""Reference vectors for numalab-stats, computed independently with SciPy.

Run from the repository root:

    python3 crates/stats/tests/vectors/make_vectors.py > crates/stats/tests/vectors/reference.json

The Rust tests in crates/stats/tests/reference.rs read the JSON this prints.
Every number below comes from SciPy/NumPy, or from plain Python written
directly from the textbook definition, never from the Rust code under test:

* mean, sample std (ddof=1), median, min, max: NumPy.
* geometric mean: scipy.stats.gmean.
* 95% CI of the mean: scipy.stats.t.interval.
* 95% CI of the median: order-statistic indices from scipy.stats.binom.cdf,
  and, as a second path, the interval values from scipy.stats.quantile_test
  (SciPy returns NaN bounds when 95% cannot be reached; we store null then).
* Mann-Whitney U: scipy.stats.mannwhitneyu, two-sided, with method 'auto',
  'asymptotic' and, when the pooled sample has no ties, 'exact'.
* Welch's t: scipy.stats.ttest_ind(equal_var=False).
* Fieller interval of the ratio of means: solved here by *numerical root
  finding* (scipy.optimize.brentq) on the Fieller pivot, with the t quantile
  from scipy.stats.t.ppf and Welch-Satterthwaite degrees of freedom evaluated
  at the point estimate (Tamhane & Logan 2004). The Rust code uses the
  closed-form quadratic, so agreement checks the algebra, not a copy of it.
* Modified z-score outliers (Iglewicz & Hoaglin): written here from the
  definition with scipy.stats.median_abs_deviation.

The samples are written out literally (some were drawn once from a seeded
NumPy generator and rounded, to look like benchmark timings), so the JSON
is the single source of truth for the Rust tests.
"""

import json
import math
import platform
import sys
import warnings

import numpy as np
import scipy
from scipy import optimize, stats

CONFIDENCE = 0.95

# name -> (a, b); `a` plays the role of baseline, `b` of candidate.
PAIRS = {
    # Fully separated tiny samples: exact distribution, smallest p.
    "tiny_separated": ([1.1, 2.2, 3.3], [4.4, 5.5, 6.6, 7.7]),
    # Small, interleaved, no ties: exact.
    "small_no_ties": (
        [10.21, 10.35, 10.02, 10.48, 10.30],
        [10.40, 10.62, 10.27, 10.55, 10.71, 10.44],
    ),
    # Small with ties (within and across samples): auto -> asymptotic.
    "small_with_ties": (
        [3.0, 3.1, 3.1, 3.2, 3.4, 3.0],
        [3.1, 3.3, 3.4, 3.4, 3.5, 3.2, 3.6],
    ),
    # Identical samples: every value is tied with its twin, p = 1.
    "identical": (
        [5.12, 5.31, 5.08, 5.22, 5.40, 5.17, 5.26, 5.35],
        [5.12, 5.31, 5.08, 5.22, 5.40, 5.17, 5.26, 5.35],
    ),
    # Very unequal sizes, no ties: exact because n1 <= 8.
    "unequal_sizes": (
        [101.3, 99.8, 102.4, 100.9],
        [98.1, 97.5, 99.2, 98.8, 100.2, 97.9, 98.4, 99.5, 98.0, 96.9,
         99.9, 98.6, 97.2, 98.3, 101.1],
    ),
    # 8 vs 12, no ties: exact (boundary of scipy's auto rule).
    "n8_vs_n12": (
        [0.842, 0.913, 0.877, 0.901, 0.865, 0.889, 0.931, 0.858],
        [0.871, 0.944, 0.925, 0.962, 0.908, 0.951, 0.936, 0.897, 0.973,
         0.919, 0.882, 0.957],
    ),
    # 10 vs 12, no ties: auto -> asymptotic; 'exact' also stored.
    "n10_vs_n12": (
        [12.71, 12.55, 12.93, 12.62, 12.80, 12.48, 12.87, 12.66, 12.74, 12.59],
        [12.68, 12.97, 12.85, 13.02, 12.78, 12.91, 13.10, 12.83, 12.95,
         12.76, 13.05, 12.89],
    ),
    # Heavily tied integer counters (e.g. pages migrated per run).
    "integer_counters": (
        [0, 0, 1, 0, 2, 0, 1, 0, 0, 1, 0, 3],
        [1, 2, 1, 3, 2, 1, 4, 2, 1, 2],
    ),
    # All values equal in both samples.
    "constant": ([7.0, 7.0, 7.0, 7.0, 7.0], [7.0, 7.0, 7.0, 7.0, 7.0]),
    # One wild outlier in the candidate.
    "with_outlier": (
        [20.14, 20.31, 19.98, 20.22, 20.07, 20.18, 20.26, 20.11, 20.03, 20.19,
         20.24, 20.09, 20.16, 20.28, 20.05, 20.21, 20.13, 20.35, 20.01, 20.20],
        [20.17, 20.29, 20.02, 20.25, 20.10, 20.23, 28.90, 20.12, 20.06, 20.20,
         20.27, 20.08, 20.15, 20.33, 20.04, 20.19, 20.14, 20.30, 19.99, 20.22],
    ),
    # Signed deltas around zero (geometric mean not defined; the baseline mean
    # is so close to 0 that the Fieller interval is unbounded).
    "signed_deltas": (
        [-0.8, 0.3, -0.1, 0.6, -0.4, 0.2, -0.5, 0.9, 0.05, -0.2],
        [0.4, 1.1, 0.7, -0.3, 0.8, 1.3, 0.5, 0.2, 0.95],
    ),
}


def seeded_timings(rng, n, median_ms, sigma, decimals):
    return [round(float(v), decimals) for v in rng.lognormal(math.log(median_ms), sigma, n)]


_rng = np.random.default_rng(20240917)
# Large, benchmark-like samples (log-normal timings rounded to 10 us): ties likely.
PAIRS["large_timings_2pct"] = (
    seeded_timings(_rng, 40, 48.0, 0.03, 2),
    seeded_timings(_rng, 45, 48.0 * 1.02, 0.03, 2),
)
# Large, same distribution.
PAIRS["large_null"] = (
    seeded_timings(_rng, 30, 310.0, 0.05, 1),
    seeded_timings(_rng, 30, 310.0, 0.05, 1),
)
# 20 vs 20 without ties (distinct by construction), exact also stored.
_a = sorted(set(seeded_timings(_rng, 40, 7.5, 0.04, 4)))[:40]
_rng.shuffle(_a)
PAIRS["n20_vs_n20_no_ties"] = (list(map(float, _a[:20])), list(map(float, [v * 1.01 for v in _a[20:40]])))


def fnum(x):
    """JSON has no NaN/inf: store them as null."""
    x = float(x)
    return x if math.isfinite(x) else None


def median_ci_indices(n, confidence):
    """Largest l (1-based) with P(B <= l-1) <= (1-confidence)/2, B ~ Bin(n, 1/2).

    Interval [x_(l), x_(n+1-l)]. Returns (l, u, achieved, reached)."""
    half_alpha = (1.0 - confidence) / 2.0
    best = None
    for k in range(0, n):
        if stats.binom.cdf(k, n, 0.5) <= half_alpha:
            best = k
        else:
            break
    if best is None:
        l = 1
        reached = False
    else:
        l = best + 1
        reached = True
    u = n + 1 - l
    if n == 0:
        return None
    # coverage P(l <= B <= u - 1)
    achieved = float(stats.binom.cdf(u - 1, n, 0.5) - stats.binom.cdf(l - 1, n, 0.5))
    return l, u, achieved, reached


def modified_z_outliers(x):
    x = np.asarray(x, dtype=float)
    med = np.median(x)
    mad = stats.median_abs_deviation(x, scale=1.0)
    if mad > 0:
        z = 0.6745 * (x - med) / mad
    else:
        meanad = np.mean(np.abs(x - med))
        if meanad == 0:
            return []
        z = (x - med) / (1.253314 * meanad)
    return [int(i) for i in np.nonzero(np.abs(z) > 3.5)[0]]


def summary(x):
    x = np.asarray(x, dtype=float)
    n = len(x)
    out = {
        "n": n,
        "mean": fnum(np.mean(x)),
        "min": fnum(np.min(x)),
        "max": fnum(np.max(x)),
        "median": fnum(np.median(x)),
    }
    if n >= 2:
        sd = np.std(x, ddof=1)
        m = np.mean(x)
        out["stddev"] = fnum(sd)
        out["cv"] = fnum(sd / abs(m)) if m != 0 else None
        if sd > 0:
            lo, hi = stats.t.interval(CONFIDENCE, n - 1, loc=m, scale=sd / math.sqrt(n))
            out["mean_ci"] = [fnum(lo), fnum(hi)]
        else:
            out["mean_ci"] = None  # SciPy gives NaN for a zero scale
    else:
        out["stddev"] = None
        out["cv"] = None
        out["mean_ci"] = None
    out["gmean"] = fnum(stats.gmean(x)) if np.all(x > 0) else None
    l, u, achieved, reached = median_ci_indices(n, CONFIDENCE)
    xs = np.sort(x)
    out["median_ci"] = {
        "low_rank": l,
        "high_rank": u,
        "low": fnum(xs[l - 1]),
        "high": fnum(xs[u - 1]),
        "achieved_confidence": achieved,
        "reaches_nominal": reached,
    }
    ci = stats.quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(CONFIDENCE)
    out["median_ci_quantile_test"] = [fnum(ci.low), fnum(ci.high)]
    out["outliers"] = modified_z_outliers(x)
    return out


def fieller(a, b, confidence):
    """Fieller CI for mean(b)/mean(a), independent samples, found by root finding."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ma, mb = np.mean(a), np.mean(b)
    va = np.var(a, ddof=1) / len(a)
    vb = np.var(b, ddof=1) / len(b)
    r = mb / ma
    df = (vb + r * r * va) ** 2 / (vb**2 / (len(b) - 1) + (r * r * va) ** 2 / (len(a) - 1))
    t = stats.t.ppf(0.5 + confidence / 2.0, df)
    if ma * ma <= t * t * va:
        return {"ratio": r, "low": None, "high": None, "bounded": False, "df": df}

    def pivot(rho):
        return (mb - rho * ma) / math.sqrt(vb + rho * rho * va) - t

    def pivot_neg(rho):
        return (mb - rho * ma) / math.sqrt(vb + rho * rho * va) + t

    # The pivot is monotone between its two crossings; bracket outward from r.
    step = max(abs(r), 1e-12)
    lo_bracket, hi_bracket = r - step, r + step
    f = pivot if ma > 0 else pivot_neg  # which crossing lies below r depends on the sign of ma
    g = pivot_neg if ma > 0 else pivot
    while f(lo_bracket) * f(r) > 0:
        lo_bracket -= step
        step *= 2
    step = max(abs(r), 1e-12)
    while g(hi_bracket) * g(r) > 0:
        hi_bracket += step
        step *= 2
    low = optimize.brentq(f, lo_bracket, r, xtol=1e-15, rtol=1e-15, maxiter=500)
    high = optimize.brentq(g, r, hi_bracket, xtol=1e-15, rtol=1e-15, maxiter=500)
    return {"ratio": r, "low": low, "high": high, "bounded": True, "df": df}


def has_ties(a, b):
    pooled = np.concatenate([np.asarray(a, float), np.asarray(b, float)])
    return len(np.unique(pooled)) < len(pooled)


def pair_vectors(a, b):
    out = {}
    ties = has_ties(a, b)
    out["pooled_has_ties"] = bool(ties)
    auto_method = "asymptotic" if (len(a) > 8 and len(b) > 8) or ties else "exact"
    r = stats.mannwhitneyu(a, b, alternative="two-sided", method="auto")
    out["mwu_auto"] = {"statistic": fnum(r.statistic), "p_value": fnum(r.pvalue), "method": auto_method}
    r = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic")
    out["mwu_asymptotic"] = {"statistic": fnum(r.statistic), "p_value": fnum(r.pvalue)}
    if not ties:
        r = stats.mannwhitneyu(a, b, alternative="two-sided", method="exact")
        out["mwu_exact"] = {"statistic": fnum(r.statistic), "p_value": fnum(r.pvalue)}
    else:
        out["mwu_exact"] = None
    with warnings.catch_warnings():
        # The constant pair makes SciPy warn and return NaN (stored as null).
        warnings.simplefilter("ignore", RuntimeWarning)
        r = stats.ttest_ind(a, b, equal_var=False)
    # scipy's statistic is mean(a) - mean(b) over the standard error.
    out["welch"] = {"statistic": fnum(r.statistic), "p_value": fnum(r.pvalue), "df": fnum(r.df)}
    if np.var(a, ddof=1) > 0 and np.var(b, ddof=1) > 0 and np.mean(a) != 0:
        out["fieller_95"] = fieller(a, b, CONFIDENCE)
        out["fieller_90"] = fieller(a, b, 0.90)
    else:
        out["fieller_95"] = None
        out["fieller_90"] = None
    return out


def main():
    pairs = {}
    for name, (a, b) in PAIRS.items():
        a = [float(v) for v in a]
        b = [float(v) for v in b]
        pairs[name] = {
            "a": a,
            "b": b,
            "summary_a": summary(a),
            "summary_b": summary(b),
            **pair_vectors(a, b),
        }
    median_ci_table = []
    for n in range(1, 101):
        l, u, achieved, reached = median_ci_indices(n, CONFIDENCE)
        median_ci_table.append(
            {"n": n, "low_rank": l, "high_rank": u, "achieved_confidence": achieved, "reaches_nominal": reached}
        )
    # Student t quantiles, to check the statrs inverse CDF we rely on.
    t_quantiles = [
        {"df": df, "p": p, "quantile": float(stats.t.ppf(p, df))}
        for df in [1, 2, 3, 4.5, 7, 10, 19, 29, 58.3, 100, 1000]
        for p in [0.95, 0.975, 0.995]
    ]
    doc = {
        "generated_by": "python3 crates/stats/tests/vectors/make_vectors.py > crates/stats/tests/vectors/reference.json",
        "scipy_version": scipy.__version__,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "confidence": CONFIDENCE,
        "notes": __doc__.strip(),
        "pairs": pairs,
        "median_ci_table": median_ci_table,
        "t_quantiles": t_quantiles,
    }
    json.dump(doc, sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

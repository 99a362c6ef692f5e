//! Mann-Whitney U (Wilcoxon rank-sum) test, two-sided.

use serde::Serialize;
use statrs::function::erf::erfc;

use crate::basic::{check_sample, cmp_f64};
use crate::{StatsError, TestMethod, TestResult};

/// How to compute the Mann-Whitney p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MwuMethod {
    /// SciPy's `method='auto'`: exact when either sample has at most
    /// [`MWU_AUTO_EXACT_MAX_N`] values and the pooled sample has no ties,
    /// asymptotic otherwise. (If the exact counts would not fit the integer
    /// arithmetic, which needs the other sample to have ~10^5 values or
    /// more, it falls back to asymptotic; SciPy would still go exact.)
    Auto,
    /// Exact null distribution of U; an error if there are ties.
    Exact,
    /// Normal approximation with tie correction and continuity correction.
    Asymptotic,
}

/// Under [`MwuMethod::Auto`] the exact distribution is used when the smaller
/// sample has at most this many values (and there are no ties): SciPy's rule.
pub const MWU_AUTO_EXACT_MAX_N: usize = 8;

/// Two-sided Mann-Whitney U test with SciPy's `method='auto'` choice.
///
/// See [`mann_whitney_u_with`].
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Result<TestResult, StatsError> {
    mann_whitney_u_with(a, b, MwuMethod::Auto)
}

/// Two-sided Mann-Whitney U test.
///
/// The statistic is `U1 = R1 - n1(n1+1)/2` for sample `a` (`R1` = sum of
/// the mid-ranks of `a` in the pooled sample), as in
/// `scipy.stats.mannwhitneyu(a, b)`; `U2 = n1·n2 - U1`.
///
/// * Exact: `p = min(1, 2·P(U >= max(U1, U2)))` under the null
///   distribution of U without ties, counted exactly (see the module notes).
/// * Asymptotic: `z = (max(U1,U2) - n1·n2/2 - 1/2) / σ` with the tie-corrected
///   `σ² = n1·n2/12 · ((n+1) - Σ(t³-t)/(n(n-1)))`, `p = min(1, 2·Φ(-z))`.
///   When every value is tied (`σ = 0`), `p = 1`.
///
/// Needs at least one value in each sample.
pub fn mann_whitney_u_with(
    a: &[f64],
    b: &[f64],
    method: MwuMethod,
) -> Result<TestResult, StatsError> {
    check_sample(a, "a")?;
    check_sample(b, "b")?;
    let (n1, n2) = (a.len(), b.len());
    let ranked = rank_pooled(a, b);
    let u1 = ranked.rank_sum_a - (n1 * (n1 + 1)) as f64 / 2.0;
    let n1n2 = (n1 as f64) * (n2 as f64);
    let u = u1.max(n1n2 - u1);

    let exact = match method {
        MwuMethod::Asymptotic => false,
        MwuMethod::Exact => {
            if ranked.has_ties {
                return Err(StatsError::ExactWithTies);
            }
            if !exact_is_feasible(n1, n2) {
                return Err(StatsError::ExactTooLarge { n1, n2 });
            }
            true
        }
        MwuMethod::Auto => {
            n1.min(n2) <= MWU_AUTO_EXACT_MAX_N && !ranked.has_ties && exact_is_feasible(n1, n2)
        }
    };

    let (p, method) = if exact {
        // Without ties U is an integer; `u` is exactly representable.
        let p = 2.0 * exact_sf(n1, n2, u as u64).unwrap_or(f64::NAN);
        (p, TestMethod::MannWhitneyUExact)
    } else {
        let n = (n1 + n2) as f64;
        let var = n1n2 / 12.0 * ((n + 1.0) - ranked.tie_term / (n * (n - 1.0)));
        let p = if var <= 0.0 {
            1.0
        } else {
            let z = (u - n1n2 / 2.0 - 0.5) / var.sqrt();
            // 2·Φ(-z) = erfc(z/√2)
            erfc(z / std::f64::consts::SQRT_2)
        };
        (p, TestMethod::MannWhitneyUAsymptotic)
    };
    Ok(TestResult {
        statistic: u1,
        p_value: p.clamp(0.0, 1.0),
        method,
        df: None,
    })
}

/// Smallest two-sided p-value the exact test can produce for these sizes:
/// `2 / C(n1+n2, n1)` (complete separation), capped at 1.
pub fn mwu_min_p_value(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let (m, n) = (n1.min(n2), n1.max(n2));
    // C(n+m, m) in floating point; becomes +inf (p -> 0) for huge sizes.
    let mut c = 1.0_f64;
    for i in 1..=m {
        c = c * (n + i) as f64 / i as f64;
    }
    (2.0 / c).min(1.0)
}

struct Ranked {
    rank_sum_a: f64,
    /// Σ (t³ - t) over groups of tied values.
    tie_term: f64,
    has_ties: bool,
}

fn rank_pooled(a: &[f64], b: &[f64]) -> Ranked {
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    pooled.sort_by(|x, y| cmp_f64(&x.0, &y.0));
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut has_ties = false;
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i + 1;
        while j < pooled.len() && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        // Positions i..j (0-based) share the mid-rank of ranks i+1..=j.
        let t = (j - i) as f64;
        let mid_rank = (i + 1 + j) as f64 / 2.0;
        let in_a = pooled[i..j].iter().filter(|p| p.1).count() as f64;
        rank_sum_a += mid_rank * in_a;
        if j - i > 1 {
            has_ties = true;
            tie_term += t * t * t - t;
        }
        i = j;
    }
    Ranked {
        rank_sum_a,
        tie_term,
        has_ties,
    }
}

/// `C(n1+n2, n1)` as an exact integer, or `None` if it exceeds `u128`.
fn binomial_u128(n1: usize, n2: usize) -> Option<u128> {
    let (m, n) = (n1.min(n2) as u128, n1.max(n2) as u128);
    let mut c: u128 = 1;
    for i in 1..=m {
        // c = C(n+i-1, i-1); C(n+i, i) = c·(n+i)/i, kept exact by dividing
        // out gcd(c, i) first: i/g then divides (n+i).
        let g = gcd(c, i);
        c = (c / g).checked_mul((n + i) / (i / g))?;
    }
    Some(c)
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The exact method counts arrangements in `u128`: feasible while
/// `C(n1+n2, n1) < 2^128` (e.g. up to 64 vs 64, or 8 vs ~2·10^5).
fn exact_is_feasible(n1: usize, n2: usize) -> bool {
    binomial_u128(n1, n2).is_some()
}

/// `P(U >= u)` under the null hypothesis without ties, for `u` in
/// `[0, n1·n2]`.
///
/// The number of arrangements with `U = k` is the coefficient of `q^k` in the
/// Gaussian binomial coefficient
/// `[n1+n2 choose m]_q = Π_{i=1..m} (1 - q^(n+i)) / (1 - q^i)`,
/// `m = min(n1, n2)`, `n = max(n1, n2)`. By the symmetry of U about
/// `n1·n2/2`, `P(U >= u) = P(U <= n1·n2 - u)`, so only the polynomial up to
/// degree `kc = min(u, n1·n2 - u)` is built (truncated power series; the sum
/// from the left tail keeps precision). Each factor is one pass over the
/// coefficients: the products are done in wrapping `u128` arithmetic,
/// which is exact modulo 2^128; because every true coefficient and their
/// total `C(n1+n2, m)` are below 2^128 the results are the exact counts even
/// though intermediate values may wrap. Cost O(m · kc).
fn exact_sf(n1: usize, n2: usize, u: u64) -> Option<f64> {
    let total = binomial_u128(n1, n2)?;
    let (m, n) = (n1.min(n2), n1.max(n2));
    let mn = (m as u64) * (n as u64);
    let u = u.min(mn);
    // P(U >= u) = P(U <= mn - u) (symmetry); for u < mn/2 this is
    // 1 - P(U <= u - 1).
    let (kc, complement) = if u >= mn - u {
        (mn - u, false)
    } else {
        (u.saturating_sub(1), true)
    };
    if complement && u == 0 {
        return Some(1.0);
    }
    let kc = kc as usize;
    let mut c = vec![0u128; kc + 1];
    c[0] = 1;
    for i in 1..=m {
        // Multiply by (1 - q^(n+i)), truncated: descending so each term uses
        // the old coefficient.
        let s = n + i;
        if s <= kc {
            for k in (s..=kc).rev() {
                c[k] = c[k].wrapping_sub(c[k - s]);
            }
        }
        // Divide by (1 - q^i) = multiply by 1 + q^i + q^2i + ...: ascending
        // running sum with stride i.
        for k in i..=kc {
            c[k] = c[k].wrapping_add(c[k - i]);
        }
    }
    let count = c.iter().fold(0u128, |acc, v| acc.wrapping_add(*v));
    let cdf = count as f64 / total as f64;
    Some(if complement { 1.0 - cdf } else { cdf })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force: enumerate all C(n1+n2, n1) subsets of ranks 1..=n.
    fn brute_force_pmf(n1: usize, n2: usize) -> Vec<f64> {
        let n = n1 + n2;
        let mut counts = vec![0u64; n1 * n2 + 1];
        let mut total = 0u64;
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != n1 {
                continue;
            }
            let r1: usize = (0..n).filter(|i| mask & (1 << i) != 0).map(|i| i + 1).sum();
            counts[r1 - n1 * (n1 + 1) / 2] += 1;
            total += 1;
        }
        counts.iter().map(|c| *c as f64 / total as f64).collect()
    }

    #[test]
    fn exact_sf_matches_enumeration() {
        for (n1, n2) in [
            (1, 1),
            (1, 5),
            (2, 3),
            (3, 3),
            (4, 6),
            (5, 5),
            (7, 3),
            (6, 8),
        ] {
            let pmf = brute_force_pmf(n1, n2);
            for u in 0..=(n1 * n2) {
                let want: f64 = pmf[u..].iter().sum();
                let got = exact_sf(n1, n2, u as u64).unwrap();
                assert!(
                    (got - want).abs() < 1e-14,
                    "n1={n1} n2={n2} u={u}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn exact_counts_survive_wrapping_intermediates() {
        // 60 vs 60: C(120, 60) ≈ 9.7e34 fits u128, intermediates wrap.
        // The distribution must sum to one and be symmetric.
        let (n1, n2) = (60usize, 60usize);
        let mn = (n1 * n2) as u64;
        let p_mid = exact_sf(n1, n2, mn / 2).unwrap();
        let p_mid_next = exact_sf(n1, n2, mn / 2 + 1).unwrap();
        // P(U >= mn/2) = 1/2 + pmf(mn/2)/2 by symmetry.
        let pmf_mid = p_mid - p_mid_next;
        assert!((p_mid - (0.5 + pmf_mid / 2.0)).abs() < 1e-12);
        assert_eq!(exact_sf(n1, n2, 0).unwrap(), 1.0);
        let total = binomial_u128(n1, n2).unwrap() as f64;
        assert!((exact_sf(n1, n2, mn).unwrap() - 1.0 / total).abs() < 1e-40);
    }

    #[test]
    fn binomial_exact_and_overflow() {
        assert_eq!(binomial_u128(3, 4), Some(35));
        assert_eq!(binomial_u128(10, 10), Some(184_756));
        assert_eq!(
            binomial_u128(64, 64),
            Some(23_951_146_041_928_082_866_135_587_776_380_551_750)
        );
        assert_eq!(binomial_u128(70, 70), None);
        assert!(exact_is_feasible(8, 200_000));
        assert!(!exact_is_feasible(8, 400_000));
    }

    #[test]
    fn min_p_value() {
        assert_eq!(mwu_min_p_value(3, 3), 0.1);
        assert!((mwu_min_p_value(4, 4) - 2.0 / 70.0).abs() < 1e-16);
        assert_eq!(mwu_min_p_value(1, 1), 1.0);
        assert_eq!(mwu_min_p_value(0, 5), 1.0);
    }

    #[test]
    fn errors() {
        assert!(matches!(
            mann_whitney_u(&[], &[1.0]),
            Err(StatsError::Empty { sample: "a" })
        ));
        assert!(matches!(
            mann_whitney_u(&[1.0], &[f64::NAN]),
            Err(StatsError::NonFinite { sample: "b", .. })
        ));
        assert_eq!(
            mann_whitney_u_with(&[1.0, 2.0], &[2.0, 3.0], MwuMethod::Exact),
            Err(StatsError::ExactWithTies)
        );
        let big: Vec<f64> = (0..100).map(f64::from).collect();
        let big2: Vec<f64> = (0..100).map(|i| f64::from(i) + 0.5).collect();
        assert_eq!(
            mann_whitney_u_with(&big, &big2, MwuMethod::Exact),
            Err(StatsError::ExactTooLarge { n1: 100, n2: 100 })
        );
    }

    #[test]
    fn single_values_and_all_tied() {
        let r = mann_whitney_u(&[1.0], &[2.0]).unwrap();
        assert_eq!((r.statistic, r.p_value), (0.0, 1.0));
        assert_eq!(r.method, TestMethod::MannWhitneyUExact);
        let r = mann_whitney_u(&[4.0; 3], &[4.0; 5]).unwrap();
        assert_eq!((r.statistic, r.p_value), (7.5, 1.0));
        assert_eq!(r.method, TestMethod::MannWhitneyUAsymptotic);
        // -0.0 and 0.0 are a tie.
        let r = mann_whitney_u(&[-0.0, 1.0], &[0.0, 2.0]).unwrap();
        assert_eq!(r.method, TestMethod::MannWhitneyUAsymptotic);
        assert_eq!(r.statistic, 1.5);
    }

    #[test]
    fn auto_exact_for_very_unequal_samples() {
        let a = [0.5, 1.5, 2.5];
        let b: Vec<f64> = (0..1_000_000).map(f64::from).collect();
        // C(1_000_003, 3) fits u128: exact, and cheap (O(3 · kc), kc = 6).
        let r = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(r.method, TestMethod::MannWhitneyUExact);
        assert_eq!(r.statistic, 6.0);
        assert!(r.p_value < 1e-15 && r.p_value > 0.0, "{}", r.p_value);
    }

    #[test]
    fn auto_falls_back_when_exact_counts_overflow() {
        let a: Vec<f64> = (0..8).map(|i| f64::from(i) + 0.5).collect();
        let b: Vec<f64> = (0..400_000).map(f64::from).collect();
        let r = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(r.method, TestMethod::MannWhitneyUAsymptotic);
    }
}

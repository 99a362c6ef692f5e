//! numalab-stats against reference values computed independently by SciPy.
//!
//! The vectors are in `tests/vectors/reference.json`, made by
//! `tests/vectors/make_vectors.py` (see the notes inside the JSON for what
//! each number is and how it was computed). Each test collects every
//! mismatch before failing, and checks that it compared at least as many
//! values as the file should provide, so a renamed key cannot turn a test
//! into a silent no-op.

use numalab_stats::{
    geometric_mean, mann_whitney_u, mann_whitney_u_with, median_ci_ranks, outliers, ratio_ci,
    welch_t, MwuMethod, Summary, TestMethod,
};
use serde_json::Value;

/// Relative tolerance for moments and other direct arithmetic.
const REL_MOMENT: f64 = 1e-9;
/// Relative tolerance for p-values and quantile-based values where the
/// method is the same as SciPy's. Measured agreement: ~1e-13 for the exact
/// Mann-Whitney, Welch and t-quantile values; ~1e-10 for the asymptotic
/// Mann-Whitney p-values, limited by `statrs` 0.19's `erfc` (its interval
/// constants are truncated to 10 digits, ~1e-10 relative error).
const REL_P: f64 = 1e-9;
/// Fieller bounds: SciPy's brentq root vs our closed form.
const REL_FIELLER: f64 = 1e-9;

fn load() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/reference.json");
    let text = std::fs::read_to_string(path).expect("read reference.json");
    serde_json::from_str(&text).expect("parse reference.json")
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// Collects comparison failures and counts comparisons.
#[derive(Default)]
struct Checker {
    failures: Vec<String>,
    compared: usize,
}

impl Checker {
    fn close(&mut self, what: &str, got: f64, want: f64, rel: f64) {
        self.compared += 1;
        let tol = rel * want.abs().max(1e-300);
        let ok = (got - want).abs() <= tol || got == want;
        if !ok {
            let err = if want != 0.0 {
                ((got - want) / want).abs()
            } else {
                (got - want).abs()
            };
            self.failures.push(format!(
                "{what}: got {got:e}, want {want:e} (rel err {err:.2e}, tol {rel:.0e})"
            ));
        }
    }

    /// Compare with an absolute floor: p-values of exactly 0/1 or values
    /// near 0 where a relative tolerance is meaningless.
    fn close_abs(&mut self, what: &str, got: f64, want: f64, rel: f64, abs: f64) {
        self.compared += 1;
        if (got - want).abs() > abs.max(rel * want.abs()) {
            self.failures.push(format!(
                "{what}: got {got:e}, want {want:e} (tol rel {rel:.0e} / abs {abs:.0e})"
            ));
        }
    }

    fn equal<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, got: T, want: T) {
        self.compared += 1;
        if got != want {
            self.failures
                .push(format!("{what}: got {got:?}, want {want:?}"));
        }
    }

    fn finish(self, min_compared: usize) {
        assert!(
            self.failures.is_empty(),
            "{} mismatch(es) out of {} comparisons:\n{}",
            self.failures.len(),
            self.compared,
            self.failures.join("\n")
        );
        assert!(
            self.compared >= min_compared,
            "only {} comparisons made, expected at least {min_compared}: vectors missing?",
            self.compared
        );
    }
}

fn pairs(doc: &Value) -> Vec<(String, Value)> {
    let pairs: Vec<(String, Value)> = doc["pairs"]
        .as_object()
        .expect("pairs")
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert!(
        pairs.len() >= 12,
        "expected a dozen sample pairs, found {}",
        pairs.len()
    );
    pairs
}

#[test]
fn file_records_provenance() {
    let doc = load();
    assert!(doc["scipy_version"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(doc["generated_by"]
        .as_str()
        .is_some_and(|s| s.contains("make_vectors.py")));
}

#[test]
fn summaries_match_numpy_and_scipy() {
    let doc = load();
    let mut c = Checker::default();
    for (name, pair) in pairs(&doc) {
        for side in ["a", "b"] {
            let x = floats(&pair[side]);
            let want = &pair[format!("summary_{side}")];
            let tag = format!("{name}.{side}");
            let s = Summary::of(&x).expect("summary");
            c.equal(&format!("{tag}.n"), s.n as u64, want["n"].as_u64().unwrap());
            for (field, got) in [
                ("mean", s.mean),
                ("min", s.min),
                ("max", s.max),
                ("median", s.median),
            ] {
                c.close(
                    &format!("{tag}.{field}"),
                    got,
                    want[field].as_f64().unwrap(),
                    REL_MOMENT,
                );
            }
            match (s.stddev, want["stddev"].as_f64()) {
                (Some(g), Some(w)) => c.close(&format!("{tag}.stddev"), g, w, REL_MOMENT),
                (g, w) => c.equal(&format!("{tag}.stddev"), g, w),
            }
            match (s.cv, want["cv"].as_f64()) {
                (Some(g), Some(w)) => c.close(&format!("{tag}.cv"), g, w, REL_MOMENT),
                (g, w) => c.equal(&format!("{tag}.cv"), g, w),
            }
            match (&s.mean_ci, want["mean_ci"].as_array()) {
                (Some(ci), Some(w)) => {
                    c.close(
                        &format!("{tag}.mean_ci.low"),
                        ci.low,
                        w[0].as_f64().unwrap(),
                        REL_P,
                    );
                    c.close(
                        &format!("{tag}.mean_ci.high"),
                        ci.high,
                        w[1].as_f64().unwrap(),
                        REL_P,
                    );
                }
                // SciPy has no interval (NaN) for a constant sample; ours is
                // the point [mean, mean].
                (Some(ci), None) => {
                    c.equal(&format!("{tag}.stddev==0"), s.stddev, Some(0.0));
                    c.equal(
                        &format!("{tag}.mean_ci point"),
                        (ci.low, ci.high),
                        (s.mean, s.mean),
                    );
                }
                (None, w) => c.equal(&format!("{tag}.mean_ci"), None, w.map(|_| ())),
            }
            match want["gmean"].as_f64() {
                Some(w) => c.close(
                    &format!("{tag}.gmean"),
                    geometric_mean(&x).expect("gmean"),
                    w,
                    REL_MOMENT,
                ),
                None => c.equal(
                    &format!("{tag}.gmean is error"),
                    geometric_mean(&x).is_err(),
                    true,
                ),
            }

            let mci = &want["median_ci"];
            let r = s.median_ci.ranks;
            c.equal(
                &format!("{tag}.median_ci.low_rank"),
                r.low_rank as u64,
                mci["low_rank"].as_u64().unwrap(),
            );
            c.equal(
                &format!("{tag}.median_ci.high_rank"),
                r.high_rank as u64,
                mci["high_rank"].as_u64().unwrap(),
            );
            c.equal(
                &format!("{tag}.median_ci.low"),
                s.median_ci.low,
                mci["low"].as_f64().unwrap(),
            );
            c.equal(
                &format!("{tag}.median_ci.high"),
                s.median_ci.high,
                mci["high"].as_f64().unwrap(),
            );
            c.equal(
                &format!("{tag}.median_ci.reaches_nominal"),
                r.reaches_nominal,
                mci["reaches_nominal"].as_bool().unwrap(),
            );
            c.close(
                &format!("{tag}.median_ci.achieved"),
                r.achieved_confidence,
                mci["achieved_confidence"].as_f64().unwrap(),
                1e-12,
            );
            // Second, independent path: scipy.stats.quantile_test.
            let qt = &want["median_ci_quantile_test"];
            match (qt[0].as_f64(), qt[1].as_f64()) {
                (Some(lo), Some(hi)) => {
                    c.equal(
                        &format!("{tag}.median_ci vs quantile_test"),
                        (s.median_ci.low, s.median_ci.high),
                        (lo, hi),
                    );
                    c.equal(
                        &format!("{tag}.reaches (quantile_test finite)"),
                        r.reaches_nominal,
                        true,
                    );
                }
                _ => c.equal(
                    &format!("{tag}.reaches (quantile_test NaN)"),
                    r.reaches_nominal,
                    false,
                ),
            }

            let want_out: Vec<usize> = want["outliers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as usize)
                .collect();
            c.equal(&format!("{tag}.outliers"), outliers(&x), want_out);
        }
    }
    // 14 pairs x 2 sides x ~17 checks.
    c.finish(14 * 2 * 15);
}

#[test]
fn median_ci_ranks_match_binomial_table() {
    let doc = load();
    let mut c = Checker::default();
    let table = doc["median_ci_table"].as_array().expect("table");
    assert_eq!(table.len(), 100);
    for row in table {
        let n = row["n"].as_u64().unwrap() as usize;
        let r = median_ci_ranks(n, 0.95).expect("ranks");
        c.equal(
            &format!("n={n} low_rank"),
            r.low_rank as u64,
            row["low_rank"].as_u64().unwrap(),
        );
        c.equal(
            &format!("n={n} high_rank"),
            r.high_rank as u64,
            row["high_rank"].as_u64().unwrap(),
        );
        c.equal(
            &format!("n={n} reaches"),
            r.reaches_nominal,
            row["reaches_nominal"].as_bool().unwrap(),
        );
        c.close_abs(
            &format!("n={n} achieved"),
            r.achieved_confidence,
            row["achieved_confidence"].as_f64().unwrap(),
            1e-12,
            1e-15,
        );
    }
    c.finish(400);
}

#[test]
fn mann_whitney_matches_scipy() {
    let doc = load();
    let mut c = Checker::default();
    let mut exact_seen = 0;
    for (name, pair) in pairs(&doc) {
        let a = floats(&pair["a"]);
        let b = floats(&pair["b"]);

        let auto = mann_whitney_u(&a, &b).expect("mwu auto");
        let want = &pair["mwu_auto"];
        let want_method = match want["method"].as_str().unwrap() {
            "exact" => TestMethod::MannWhitneyUExact,
            "asymptotic" => TestMethod::MannWhitneyUAsymptotic,
            other => panic!("unknown method {other}"),
        };
        c.equal(&format!("{name}.auto.method"), auto.method, want_method);
        c.close_abs(
            &format!("{name}.auto.U"),
            auto.statistic,
            want["statistic"].as_f64().unwrap(),
            1e-12,
            1e-12,
        );
        c.close_abs(
            &format!("{name}.auto.p"),
            auto.p_value,
            want["p_value"].as_f64().unwrap(),
            REL_P,
            1e-15,
        );

        let asym = mann_whitney_u_with(&a, &b, MwuMethod::Asymptotic).expect("mwu asymptotic");
        let want = &pair["mwu_asymptotic"];
        c.close_abs(
            &format!("{name}.asym.U"),
            asym.statistic,
            want["statistic"].as_f64().unwrap(),
            1e-12,
            1e-12,
        );
        c.close_abs(
            &format!("{name}.asym.p"),
            asym.p_value,
            want["p_value"].as_f64().unwrap(),
            REL_P,
            1e-15,
        );

        let exact = mann_whitney_u_with(&a, &b, MwuMethod::Exact);
        match pair["mwu_exact"].as_object() {
            Some(want) => {
                exact_seen += 1;
                let exact = exact.expect("mwu exact");
                c.equal(
                    &format!("{name}.exact.method"),
                    exact.method,
                    TestMethod::MannWhitneyUExact,
                );
                c.close_abs(
                    &format!("{name}.exact.U"),
                    exact.statistic,
                    want["statistic"].as_f64().unwrap(),
                    1e-12,
                    1e-12,
                );
                c.close_abs(
                    &format!("{name}.exact.p"),
                    exact.p_value,
                    want["p_value"].as_f64().unwrap(),
                    REL_P,
                    1e-15,
                );
            }
            None => c.equal(
                &format!("{name}.exact refuses ties"),
                exact,
                Err(numalab_stats::StatsError::ExactWithTies),
            ),
        }
        c.equal(
            &format!("{name}.ties flag"),
            pair["pooled_has_ties"].as_bool().unwrap(),
            pair["mwu_exact"].is_null(),
        );
    }
    assert!(
        exact_seen >= 5,
        "want exact references for several pairs, got {exact_seen}"
    );
    c.finish(14 * 7);
}

#[test]
fn welch_matches_scipy() {
    let doc = load();
    let mut c = Checker::default();
    for (name, pair) in pairs(&doc) {
        let a = floats(&pair["a"]);
        let b = floats(&pair["b"]);
        let got = welch_t(&a, &b).expect("welch");
        let want = &pair["welch"];
        match (
            want["statistic"].as_f64(),
            want["p_value"].as_f64(),
            want["df"].as_f64(),
        ) {
            (Some(t), Some(p), Some(df)) => {
                c.close_abs(&format!("{name}.t"), got.statistic, t, 1e-10, 1e-14);
                c.close(&format!("{name}.df"), got.df.unwrap_or(f64::NAN), df, 1e-10);
                c.close_abs(&format!("{name}.p"), got.p_value, p, REL_P, 1e-15);
            }
            // SciPy: NaN for two constant samples. Ours: the limit.
            _ => {
                c.equal(&format!("{name}.df"), got.df, None);
                c.equal(
                    &format!("{name}.p limit"),
                    got.p_value,
                    if got.statistic == 0.0 { 1.0 } else { 0.0 },
                );
            }
        }
    }
    c.finish(13 * 3);
}

#[test]
fn fieller_matches_root_finding() {
    let doc = load();
    let mut c = Checker::default();
    let mut bounded = 0;
    for (name, pair) in pairs(&doc) {
        let a = floats(&pair["a"]);
        let b = floats(&pair["b"]);
        for (key, conf) in [("fieller_95", 0.95), ("fieller_90", 0.90)] {
            let want = &pair[key];
            if want.is_null() {
                // The script skips a zero baseline mean and constant samples.
                let got = ratio_ci(&a, &b, conf);
                let base_mean = a.iter().sum::<f64>() / a.len() as f64;
                if base_mean.abs() < 1e-12 {
                    c.equal(
                        &format!("{name}.{key} zero baseline"),
                        got,
                        Err(numalab_stats::StatsError::ZeroBaselineMean),
                    );
                } else {
                    let got = got.expect("ratio_ci");
                    c.equal(
                        &format!("{name}.{key} point"),
                        (got.low, got.high, got.df),
                        (got.ratio, got.ratio, None),
                    );
                }
                continue;
            }
            let got = ratio_ci(&a, &b, conf).expect("ratio_ci");
            c.close(
                &format!("{name}.{key}.ratio"),
                got.ratio,
                want["ratio"].as_f64().unwrap(),
                REL_MOMENT,
            );
            c.close(
                &format!("{name}.{key}.df"),
                got.df.unwrap_or(f64::NAN),
                want["df"].as_f64().unwrap(),
                1e-10,
            );
            c.equal(
                &format!("{name}.{key}.bounded"),
                got.bounded,
                want["bounded"].as_bool().unwrap(),
            );
            if got.bounded {
                bounded += 1;
                c.close(
                    &format!("{name}.{key}.low"),
                    got.low,
                    want["low"].as_f64().unwrap(),
                    REL_FIELLER,
                );
                c.close(
                    &format!("{name}.{key}.high"),
                    got.high,
                    want["high"].as_f64().unwrap(),
                    REL_FIELLER,
                );
            }
        }
    }
    assert!(
        bounded >= 20,
        "too few bounded Fieller references: {bounded}"
    );
    c.finish(20 * 5);
}

#[test]
fn summary_mean_ci_uses_accurate_t_quantiles() {
    // The t quantile (statrs inverse CDF) is what the mean CI and Fieller
    // rely on; check it directly against scipy.stats.t.ppf through a
    // constructed sample whose CI half-width is exactly the quantile:
    // for x = {-1, +1} repeated k times, mean 0, s = sqrt(n/(n-1)),
    // half-width = t * s / sqrt(n) = t / sqrt(n-1).
    let doc = load();
    let mut c = Checker::default();
    for row in doc["t_quantiles"].as_array().expect("t_quantiles") {
        let df = row["df"].as_f64().unwrap();
        let p = row["p"].as_f64().unwrap();
        let want = row["quantile"].as_f64().unwrap();
        if df.fract() == 0.0 && (df as usize + 1).is_multiple_of(2) {
            let n = df as usize + 1;
            let x: Vec<f64> = (0..n)
                .map(|i| if i % 2 == 0 { -1.0 } else { 1.0 })
                .collect();
            let ci = numalab_stats::mean_ci(&x, 2.0 * p - 1.0).expect("mean_ci");
            c.close(
                &format!("t({df}, {p}) via mean_ci"),
                ci.high * (n as f64 - 1.0).sqrt(),
                want,
                REL_P,
            );
        }
    }
    c.finish(8);
}

//! Number formatting shared by every table and chart, so the same value
//! reads the same in text, Markdown, HTML and on a chart axis.

/// Decimals for a value of this magnitude: about four significant digits
/// for small values, two decimals for seconds-sized ones (the seeds'
/// style), none for large counts.
pub fn decimals_for(x: f64) -> usize {
    let a = x.abs();
    if a == 0.0 || !a.is_finite() {
        2
    } else if a >= 10_000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 1.0 {
        2
    } else if a >= 0.1 {
        3
    } else if a >= 0.001 {
        4
    } else {
        6
    }
}

/// A value with [`decimals_for`] decimals; scientific notation below 1e-6
/// and above 1e15.
pub fn value(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "-".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let a = x.abs();
    if a != 0.0 && !(1e-6..1e15).contains(&a) {
        return format!("{x:.2e}");
    }
    format!("{x:.*}", decimals_for(x))
}

/// A value in at most about 7 characters, as benchstat writes them:
/// [`value`] below 10 000, else four significant digits and a decimal
/// suffix (`15.73k`, `1.573M`, `2.000G`).
pub fn short(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() || a < 10_000.0 {
        return value(x);
    }
    let (div, suffix) = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(d, _)| a >= *d)
        .unwrap_or((1.0, ""));
    let v = x / div;
    let d = if v.abs() >= 100.0 {
        1
    } else if v.abs() >= 10.0 {
        2
    } else {
        3
    };
    format!("{v:.d$}{suffix}")
}

/// Seed 001's `mean(stddev)`, both with the mean's decimals; `mean(-)`
/// when there is no standard deviation (a single run); `0(0)` when every
/// run gave exactly zero (a counter that never moved, as under `none`).
pub fn mean_sd(mean: f64, sd: Option<f64>) -> String {
    if mean == 0.0 && sd.is_none_or(|s| s == 0.0) {
        return if sd.is_some() { "0(0)" } else { "0(-)" }.into();
    }
    let d = if mean == 0.0 {
        sd.map(decimals_for).unwrap_or(2)
    } else {
        decimals_for(mean)
    };
    match sd {
        Some(sd) => format!("{mean:.d$}({sd:.d$})"),
        None => format!("{mean:.d$}(-)"),
    }
}

/// `median [low, high]` with the median's decimals.
pub fn with_interval(x: f64, low: f64, high: f64) -> String {
    let d = decimals_for(x);
    let b = |v: f64| {
        if v.is_finite() {
            format!("{v:.d$}")
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    };
    format!("{x:.d$} [{}, {}]", b(low), b(high))
}

/// A ratio with three decimals, as seed 003 (which shows two).
pub fn ratio(r: f64) -> String {
    if r.is_finite() {
        format!("{r:.3}")
    } else {
        value(r)
    }
}

/// A ratio and its interval: `1.052 [0.981, 1.121]`; `[unbounded]` when
/// the baseline was too noisy for Fieller's interval to close.
pub fn ratio_interval(r: f64, low: f64, high: f64, bounded: bool) -> String {
    if !bounded {
        return format!("{} [unbounded]", ratio(r));
    }
    format!("{} [{}, {}]", ratio(r), ratio(low), ratio(high))
}

/// A relative change as a signed percentage: `+5.2%`, `-0.8%`.
pub fn percent_change(rel: f64) -> String {
    let p = rel * 100.0;
    if p.abs() >= 100.0 {
        format!("{p:+.0}%")
    } else {
        format!("{p:+.1}%")
    }
}

/// A p-value: three decimals, `<0.001` below that.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// A compact axis label: `2.5M`, `500k`, `0.25`, `12`.
pub fn axis(x: f64, step: f64) -> String {
    let a = x.abs();
    if x == 0.0 {
        return "0".into();
    }
    let (v, suffix, st) = if a >= 1e9 {
        (x / 1e9, "G", step / 1e9)
    } else if a >= 1e6 {
        (x / 1e6, "M", step / 1e6)
    } else if a >= 1e4 {
        (x / 1e3, "k", step / 1e3)
    } else {
        (x, "", step)
    };
    // Enough decimals to write the step exactly (0.025 needs 3).
    let d = (0..=6)
        .find(|&d| {
            let scaled = st * 10f64.powi(d as i32);
            (scaled - scaled.round()).abs() < 1e-6 * scaled.abs().max(1.0)
        })
        .unwrap_or(6);
    format!("{v:.d$}{suffix}")
}

/// Mebibytes from bytes, for memory charts.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_take_a_decimal_suffix_from_10k() {
        assert_eq!(short(9999.0), "9999.0");
        assert_eq!(short(15_728.64), "15.73k");
        assert_eq!(short(1_572_864.0), "1.573M");
        assert_eq!(short(-250_000_000.0), "-250.0M");
        assert_eq!(short(19.133), "19.13");
    }

    #[test]
    fn magnitudes() {
        assert_eq!(value(52.6666), "52.67");
        assert_eq!(value(1661.66), "1661.7");
        assert_eq!(value(2_500_000.0), "2500000");
        assert_eq!(value(0.63), "0.630");
        assert_eq!(value(0.0163), "0.0163");
        assert_eq!(value(0.0), "0.00");
        assert_eq!(value(f64::NAN), "-");
        assert_eq!(value(1e-9), "1.00e-9");
    }

    #[test]
    fn seed_notation() {
        assert_eq!(mean_sd(52.67, Some(3.51)), "52.67(3.51)");
        assert_eq!(mean_sd(0.16, Some(0.02)), "0.160(0.020)");
        assert_eq!(mean_sd(5.0, None), "5.00(-)");
        assert_eq!(mean_sd(0.0, Some(0.0)), "0(0)");
        assert_eq!(mean_sd(0.0, None), "0(-)");
        assert_eq!(mean_sd(0.0, Some(0.5)), "0.000(0.500)");
    }

    #[test]
    fn ratios_and_changes() {
        assert_eq!(
            ratio_interval(1.05, 0.98, 1.12, true),
            "1.050 [0.980, 1.120]"
        );
        assert_eq!(
            ratio_interval(1.05, f64::NEG_INFINITY, f64::INFINITY, false),
            "1.050 [unbounded]"
        );
        assert_eq!(percent_change(0.052), "+5.2%");
        assert_eq!(percent_change(-0.008), "-0.8%");
        assert_eq!(percent_change(1.5), "+150%");
        assert_eq!(p_value(0.0001), "<0.001");
        assert_eq!(p_value(0.4), "0.400");
        assert_eq!(with_interval(0.55, 0.41, 0.93), "0.550 [0.410, 0.930]");
    }

    #[test]
    fn axis_labels() {
        assert_eq!(axis(2_500_000.0, 500_000.0), "2.5M");
        assert_eq!(axis(500_000.0, 500_000.0), "500k");
        assert_eq!(axis(20.0, 20.0), "20");
        assert_eq!(axis(0.25, 0.05), "0.25");
        assert_eq!(axis(0.0, 1.0), "0");
        assert_eq!(axis(0.075, 0.025), "0.075");
        assert_eq!(axis(2_000_000.0, 250_000.0), "2.00M");
    }
}

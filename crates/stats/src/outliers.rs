//! Robust outlier flags (Iglewicz–Hoaglin modified z-score).

use crate::basic::{median_of_sorted, sorted};

/// `|M_i| > OUTLIER_Z_THRESHOLD` flags observation `i`
/// (Iglewicz & Hoaglin, 1993).
pub const OUTLIER_Z_THRESHOLD: f64 = 3.5;

/// `Φ⁻¹(3/4)` rounded as in Iglewicz & Hoaglin: makes MAD/0.6745 a
/// consistent estimator of σ for normal data.
const MAD_CONSTANT: f64 = 0.6745;

/// `sqrt(π/2)`: makes the mean absolute deviation a consistent estimator of
/// σ for normal data (used when the MAD is zero).
const MEANAD_CONSTANT: f64 = 1.253314;

/// Indices of observations flagged as outliers; nothing is removed.
///
/// Rule (Iglewicz & Hoaglin, 1993): the modified z-score
/// `M_i = 0.6745 · (x_i - median) / MAD`, with
/// `MAD = median(|x_i - median|)`, flags `|M_i| > 3.5`. It uses the median
/// and MAD rather than mean and standard deviation, so the outliers being
/// looked for cannot mask themselves by inflating the spread.
///
/// When more than half the values are identical the MAD is 0 and the score
/// is undefined. The fallback replaces `MAD/0.6745` with
/// `1.253314 · MeanAD`, `MeanAD = mean(|x_i - median|)`: for normal data
/// `E|X - μ| = σ·sqrt(2/π)`, so this also estimates σ, and it is non-zero
/// as soon as any value differs from the median (the convention documented
/// for the modified z-score in IBM Cognos Analytics). If it is 0 too, all
/// values are equal and nothing is flagged.
///
/// Never fails: non-finite values (NaN, ±inf) are always flagged and are
/// left out when computing the median and MAD of the rest; an empty slice
/// gives no flags. Indices are ascending.
pub fn outliers(sample: &[f64]) -> Vec<usize> {
    let finite: Vec<f64> = sample.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() {
        return (0..sample.len()).collect();
    }
    let xs = sorted(&finite);
    let med = median_of_sorted(&xs);
    let abs_dev = sorted(&xs.iter().map(|v| (v - med).abs()).collect::<Vec<_>>());
    let mad = median_of_sorted(&abs_dev);
    let sigma = if mad > 0.0 {
        mad / MAD_CONSTANT
    } else {
        let mean_ad = abs_dev.iter().sum::<f64>() / abs_dev.len() as f64;
        MEANAD_CONSTANT * mean_ad
    };
    sample
        .iter()
        .enumerate()
        .filter(|(_, v)| {
            if !v.is_finite() {
                return true;
            }
            sigma > 0.0 && ((*v - med) / sigma).abs() > OUTLIER_Z_THRESHOLD
        })
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_a_single_spike() {
        let x = [10.0, 10.1, 9.9, 10.2, 9.8, 10.0, 25.0, 10.1];
        assert_eq!(outliers(&x), vec![6]);
    }

    #[test]
    fn threshold_is_strict_and_symmetric() {
        // median 0, MAD 1: M = 0.6745·x; 3.5/0.6745 = 5.189.
        let x = [-1.0, 1.0, 0.0, -1.0, 1.0, 5.18, -5.2];
        assert_eq!(outliers(&x), vec![6]);
    }

    #[test]
    fn zero_mad_falls_back_to_mean_absolute_deviation() {
        // median 5, MAD 0; MeanAD = 1/7, sigma = 0.179: 6 has M = 5.6.
        assert_eq!(outliers(&[5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 6.0]), vec![6]);
        // MeanAD fallback still ignores a small wobble among many values.
        let mut x = vec![5.0; 10];
        x.extend([6.0, 4.0, 6.0, 4.0]);
        assert!(outliers(&x).is_empty());
        // All equal: nothing.
        assert!(outliers(&[3.0; 6]).is_empty());
    }

    #[test]
    fn total_on_bad_input() {
        assert!(outliers(&[]).is_empty());
        assert_eq!(outliers(&[1.0]), Vec::<usize>::new());
        assert_eq!(outliers(&[1.0, f64::NAN, 1.1, f64::INFINITY]), vec![1, 3]);
        assert_eq!(outliers(&[f64::NAN, f64::NAN]), vec![0, 1]);
    }
}

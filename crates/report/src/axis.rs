//! Axis ranges and "nice" tick steps (1, 2, 2.5, 5 × 10^k), shared by the
//! ASCII and the SVG charts so both show the same scales.

/// An axis from `lo` to `hi` with ticks every `step`, or on a base-2
/// logarithmic scale (`log2`: ticks at the powers of two from `lo` to
/// `hi`).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub step: f64,
    pub log2: bool,
}

/// Whether `xs` read best on a base-2 scale: three or more distinct
/// powers of two spanning at least 8x (task counts 4, 8, ..., 64 squeeze
/// into a corner of a linear axis).
pub fn powers_of_two(xs: &[f64]) -> bool {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    let pow2 = |x: f64| x >= 1.0 && x.fract() == 0.0 && (x as u64).is_power_of_two();
    v.len() >= 3 && v.iter().all(|&x| pow2(x)) && v[v.len() - 1] / v[0] >= 8.0
}

impl Axis {
    /// A base-2 axis from the power of two at or below `min` to the one at
    /// or above `max` (both positive).
    pub fn log2(min: f64, max: f64) -> Axis {
        let lo = 2f64.powf(min.max(f64::MIN_POSITIVE).log2().floor());
        let hi = 2f64.powf(max.max(min).log2().ceil()).max(lo * 2.0);
        Axis {
            lo,
            hi,
            step: 1.0,
            log2: true,
        }
    }

    /// An axis covering `[min, max]` with about `target` ticks. `from_zero`
    /// extends it down to 0 for non-negative data (memory, counts).
    pub fn covering(min: f64, max: f64, target: usize, from_zero: bool) -> Axis {
        let (mut min, mut max) = if min.is_finite() && max.is_finite() {
            (min.min(max), max.max(min))
        } else {
            (0.0, 1.0)
        };
        if from_zero && min >= 0.0 {
            min = 0.0;
        }
        if from_zero && max <= 0.0 && min < 0.0 {
            max = 0.0;
        }
        if max - min <= f64::EPSILON * max.abs().max(1.0) {
            // A flat series: give it a unit of room.
            let pad = if max == 0.0 { 1.0 } else { max.abs() * 0.5 };
            if from_zero && min >= 0.0 {
                max += pad;
            } else {
                min -= pad;
                max += pad;
            }
        }
        let step = nice_step((max - min) / target.max(1) as f64);
        let lo = (min / step).floor() * step;
        let hi = (max / step).ceil() * step;
        Axis {
            lo,
            hi,
            step,
            log2: false,
        }
    }

    /// Tick values from `lo` to `hi`.
    pub fn ticks(&self) -> Vec<f64> {
        if self.log2 {
            let mut t = Vec::new();
            let mut v = self.lo;
            while v <= self.hi * (1.0 + 1e-12) {
                t.push(v);
                v *= 2.0;
            }
            return t;
        }
        let n = ((self.hi - self.lo) / self.step).round() as i64;
        (0..=n.max(0))
            .map(|i| {
                let v = self.lo + i as f64 * self.step;
                // Avoid printing -0 and 0.30000000000000004.
                let r = (v / self.step).round() * self.step;
                if r.abs() < self.step * 1e-9 {
                    0.0
                } else {
                    r
                }
            })
            .collect()
    }

    /// Position of `v` in [0, 1] along the axis.
    pub fn frac(&self, v: f64) -> f64 {
        if self.log2 {
            let (a, b) = (self.lo.log2(), self.hi.log2());
            return if b > a {
                (v.max(f64::MIN_POSITIVE).log2() - a) / (b - a)
            } else {
                0.0
            };
        }
        if self.hi == self.lo {
            0.0
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    pub fn label(&self, v: f64) -> String {
        crate::num::axis(v, self.step)
    }
}

/// The smallest of 1, 2, 2.5, 5, 10 × 10^k that is at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * mag >= raw * (1.0 - 1e-12) {
            return m * mag;
        }
    }
    10.0 * mag
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_2_axis_spaces_powers_of_two_evenly() {
        let a = Axis::log2(4.0, 64.0);
        assert_eq!((a.lo, a.hi), (4.0, 64.0));
        assert_eq!(a.ticks(), vec![4.0, 8.0, 16.0, 32.0, 64.0]);
        for (i, t) in a.ticks().into_iter().enumerate() {
            assert!((a.frac(t) - i as f64 / 4.0).abs() < 1e-12);
        }
        assert_eq!(a.label(16.0), "16");
        let b = Axis::log2(3.0, 40.0);
        assert_eq!((b.lo, b.hi), (2.0, 64.0));
        assert!(powers_of_two(&[4.0, 8.0, 16.0, 32.0, 64.0, 8.0]));
        assert!(!powers_of_two(&[4.0, 8.0, 12.0, 32.0]));
        assert!(!powers_of_two(&[4.0, 8.0, 16.0]), "only 4x");
        assert!(!powers_of_two(&[1.0, 8.0]), "two points");
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(17.0), 20.0);
        assert_eq!(nice_step(2.2), 2.5);
        assert_eq!(nice_step(450_000.0), 500_000.0);
        assert_eq!(nice_step(0.0), 1.0);
    }

    #[test]
    fn axes_cover_the_data() {
        let a = Axis::covering(3.0, 174.5, 8, true);
        assert_eq!((a.lo, a.step), (0.0, 25.0));
        assert_eq!(a.hi, 175.0);
        assert_eq!(a.ticks().len(), 8);
        let a = Axis::covering(0.1, 0.7, 5, false);
        assert!(a.lo <= 0.1 && a.hi >= 0.7);
        assert_eq!(a.ticks()[1], 0.2);
        // Flat data still gets an axis.
        let a = Axis::covering(0.0, 0.0, 5, true);
        assert_eq!((a.lo, a.hi), (0.0, 1.0));
        let a = Axis::covering(5.0, 5.0, 5, false);
        assert!(a.lo < 5.0 && a.hi > 5.0);
        assert_eq!(a.frac(a.lo), 0.0);
        assert_eq!(a.frac(a.hi), 1.0);
    }
}

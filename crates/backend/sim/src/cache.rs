//! The share of a task's random accesses that hit its part of the LLC
//! when streamed lines pass through the same cache.
//!
//! numa_test's update `a[ix[i]] += b[i]` reads one random line of `a`
//! and streams `ix` and `b` (12 bytes an update, each line used once per
//! pass). Under LRU replacement a line of `a` hits when fewer distinct
//! lines than the cache holds were touched since its last use. With `L`
//! lines of `a` accessed uniformly at random, `k` updates touch about
//! `L (1 - e^(-k/L))` distinct lines of `a`, and `s k` streamed lines
//! that are all new (`s` streamed lines per update). The gap `k` between
//! two uses of one line is geometric with mean `L`, so with `x = k / L`
//! a use hits when
//!
//! ```text
//! (1 - e^(-x)) + s x < c,   c = cache / (the bytes of a)
//! ```
//!
//! and the hit share is `h = 1 - e^(-x*)` at the root `x*`: equivalently
//! `h - s ln(1 - h) = c`. Without streams (`s = 0`) this is the known
//! result for independent uniform references under LRU, `h = c` (capped at
//! one), which is what the model charged before the streams were counted;
//! with them a streamed line takes a place a line of `a` would have kept.
//! On a Merced (64-byte lines) numa_test streams 12/64 = 0.19 lines an
//! update, so half its 8 MB `a` in a 4 MB L3 hits 40% of the time, not
//! 50%.
//!
//! A cache with an insertion policy that protects reused lines from
//! streams (adaptive insertion in many recent L3s) keeps more of `a`; on
//! such a machine `numalab calibrate` measures the cache the random
//! accesses get through [`cache_for_hit_share`], the inverse of the same
//! equation, so the model and the calibrated file agree.

/// The share of random accesses that hit, `h` in `[0, 1]`, for a cache
/// share `c` (the task's LLC bytes over the bytes it accesses at random)
/// and `s` streamed lines per random access: the root of
/// `h - s ln(1 - h) = c` (`min(c, 1)` without streams).
pub fn random_hit_share(c: f64, s: f64) -> f64 {
    if c <= 0.0 || c.is_nan() {
        return 0.0;
    }
    if s <= 0.0 || s.is_nan() {
        return c.min(1.0);
    }
    // g(x) = 1 - e^(-x) + s x - c is concave and increasing with g(0) < 0:
    // Newton's steps from 0 stay left of the root and converge to it.
    let mut x = 0.0f64;
    for _ in 0..64 {
        let e = (-x).exp();
        let g = 1.0 - e + s * x - c;
        let step = g / (e + s);
        x -= step;
        if step.abs() <= 1e-12 * x.max(1.0) {
            break;
        }
    }
    (1.0 - (-x).exp()).clamp(0.0, 1.0)
}

/// The cache share `c` at which [`random_hit_share`] is `h` with `s`
/// streamed lines per random access: `h - s ln(1 - h)` (`h` below one).
pub fn cache_for_hit_share(h: f64, s: f64) -> f64 {
    let h = h.clamp(0.0, 1.0 - 1e-12);
    h - s.max(0.0) * (1.0 - h).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without streams the hit share is the cache share (LRU under
    /// independent uniform references), capped at one.
    #[test]
    fn without_streams_the_hit_share_is_the_cache_share() {
        for c in [0.0, 0.1, 0.5, 0.99, 1.0] {
            assert_eq!(random_hit_share(c, 0.0), c);
        }
        assert_eq!(random_hit_share(3.0, 0.0), 1.0);
    }

    /// numa_test on a Merced: 12 streamed bytes an update in 64-byte
    /// lines take their share: half of `a` cached hits 40%, not 50%; and
    /// the inverse gives the cache back.
    #[test]
    fn streamed_lines_take_cache_from_random_accesses() {
        let s = 12.0 / 64.0;
        let h = random_hit_share(0.5, s);
        assert!((h - 0.4036).abs() < 1e-3, "{h}");
        assert!((cache_for_hit_share(h, s) - 0.5).abs() < 1e-9);
        // Halfway, the cache holds 0.5 + s ln 2 of `a`.
        let c = cache_for_hit_share(0.5, s);
        assert!((c - (0.5 + s * 2f64.ln())).abs() < 1e-12);
        assert!((random_hit_share(c, s) - 0.5).abs() < 1e-9);
        // More cache, more hits; never all of them with streams.
        let mut last = 0.0;
        for c in [0.1, 0.5, 1.0, 2.0] {
            let h = random_hit_share(c, s);
            assert!(h > last && h < 1.0, "{c}: {h}");
            last = h;
        }
        assert_eq!(random_hit_share(0.0, s), 0.0);
    }
}

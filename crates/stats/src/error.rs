//! The one error type of the crate.

use thiserror::Error;

/// Why a statistic could not be computed.
///
/// Every public function that can fail returns this instead of panicking or
/// returning a silent NaN. `sample` names the offending input ("sample",
/// "a", "b", "baseline" or "candidate") so that a report can point at it.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    /// The sample has no values.
    #[error("{sample} is empty")]
    Empty {
        /// Which input.
        sample: &'static str,
    },
    /// A value is NaN or infinite.
    #[error("{sample} has a non-finite value {value} at index {index}")]
    NonFinite {
        /// Which input.
        sample: &'static str,
        /// Position of the first offending value.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// The method needs more observations than the sample has.
    #[error("{sample} has {got} value(s); this needs at least {needed}")]
    TooFewSamples {
        /// Which input.
        sample: &'static str,
        /// Minimum number of observations.
        needed: usize,
        /// Number of observations given.
        got: usize,
    },
    /// A value is zero or negative where only positive values make sense
    /// (geometric mean).
    #[error("{sample} has a non-positive value {value} at index {index}")]
    NonPositive {
        /// Which input.
        sample: &'static str,
        /// Position of the first offending value.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// The baseline mean is exactly zero, so a ratio to it is undefined.
    #[error("baseline mean is zero: the ratio candidate/baseline is undefined")]
    ZeroBaselineMean,
    /// The exact Mann-Whitney distribution was requested for data with ties;
    /// it is only valid without ties.
    #[error("exact Mann-Whitney p-value requested but the pooled sample has ties")]
    ExactWithTies,
    /// The exact Mann-Whitney distribution was requested for samples so large
    /// that C(n1+n2, n1) does not fit the exact integer arithmetic used.
    #[error(
        "exact Mann-Whitney p-value requested for n1={n1}, n2={n2}: too large for exact counting"
    )]
    ExactTooLarge {
        /// Size of the first sample.
        n1: usize,
        /// Size of the second sample.
        n2: usize,
    },
    /// A parameter (confidence level, alpha, threshold) is out of range.
    #[error("parameter {name} = {value} is out of range: expected {expected}")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// Value given.
        value: f64,
        /// Human-readable valid range.
        expected: &'static str,
    },
}

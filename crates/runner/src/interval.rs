//! How often a run is observed: `--interval SECONDS|auto|0`. The host
//! backend paces its samples by it (see numalab-host's `pace`); the
//! simulator samples at the same period in simulated time.

/// The interval the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Interval {
    /// Nothing is observed.
    Off,
    /// Every this many seconds.
    Fixed(f64),
    /// One second, stretched to keep sampling under 1% of one CPU.
    Auto,
}

/// The base interval of [`Interval::Auto`], in seconds.
pub const AUTO_BASE_S: f64 = 1.0;
/// `auto` keeps the interval at least this many times a sample's CPU time.
pub const AUTO_BUDGET_FACTOR: f64 = 100.0;

/// Why an interval was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntervalError {
    /// Neither a number nor `auto`.
    #[error("{0:?} is not a number of seconds or \"auto\"")]
    NotANumber(String),
    /// A negative or infinite number.
    #[error("the interval must be auto, 0 (off) or a positive number of seconds")]
    OutOfRange,
    /// More than 0 and less than 0.01 s.
    #[error("the interval must be at least 0.01 s")]
    TooShort,
}

impl Interval {
    /// `auto`, `0` (off) or a number of seconds of at least 0.01.
    pub fn parse(s: &str) -> Result<Interval, IntervalError> {
        if s == "auto" {
            return Ok(Interval::Auto);
        }
        let v: f64 = s
            .parse()
            .map_err(|_| IntervalError::NotANumber(s.to_string()))?;
        if !v.is_finite() || v < 0.0 {
            return Err(IntervalError::OutOfRange);
        }
        if v == 0.0 {
            return Ok(Interval::Off);
        }
        if v < 0.01 {
            return Err(IntervalError::TooShort);
        }
        Ok(Interval::Fixed(v))
    }

    /// As recorded in a run's parameters.
    pub fn describe(&self) -> String {
        match self {
            Interval::Off => "0".into(),
            Interval::Fixed(v) => format!("{v}"),
            Interval::Auto => "auto".into(),
        }
    }
}

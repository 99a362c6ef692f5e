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

impl Interval {
    /// `auto`, `0` (off) or a number of seconds of at least 0.01.
    pub fn parse(s: &str) -> Result<Interval, String> {
        if s == "auto" {
            return Ok(Interval::Auto);
        }
        let v: f64 = s
            .parse()
            .map_err(|_| format!("{s:?} is not a number of seconds or \"auto\""))?;
        if !v.is_finite() || v < 0.0 {
            return Err(
                "the interval must be auto, 0 (off) or a positive number of seconds".into(),
            );
        }
        if v == 0.0 {
            return Ok(Interval::Off);
        }
        if v < 0.01 {
            return Err("the interval must be at least 0.01 s".into());
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

//! The value parsers of the benchmarks' flags, and their argument sets
//! re-exported. Each benchmark's argument set (one clap type, defined in
//! its module beside its registry entry) is flattened into both `numalab
//! run` and `numalab sim`, and parses a campaign plan's keys: the same flag
//! has the same name, meaning and default on every backend. Values are
//! checked here, so a bad one is a one-line error naming the flag before
//! anything runs.

use crate::autonuma::{self, Placement as BindPlacement};
use crate::mem;
use crate::numa_test::MAX_TASKS;
use numalab_topology::placement::Placement;

/// A comma-separated list flag's values (a scan: one case per value).
#[derive(Clone, Debug, PartialEq)]
pub struct List<T>(pub Vec<T>);

impl<T> std::ops::Deref for List<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

/// Why a flag's value was refused (clap prints it after the flag).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// A count that is a negative number.
    #[error("{item:?} is not a {what} count: a count cannot be negative (e.g. 4 or 2,4,8)")]
    NegativeCount { item: String, what: &'static str },
    /// A count that is not a number.
    #[error("{item:?} is not a {what} count (e.g. 4 or 2,4,8)")]
    NotACount { item: String, what: &'static str },
    /// A count of 0.
    #[error("a run needs at least 1 {0}")]
    ZeroCount(&'static str),
    /// A count over what numalab runs at once.
    #[error("{n} {what}s is more than numalab runs at once ({max})")]
    TooMany {
        n: u32,
        what: &'static str,
        max: u32,
    },
    /// Not one of the autonuma placements.
    #[error("{0:?} is not a placement (default, bind, inverse-bind)")]
    NotABindPlacement(String),
    /// An autonuma placement given twice.
    #[error("placement {0} is given twice")]
    PlacementTwice(String),
    /// Not one of the placement experiments.
    #[error(transparent)]
    Placement(#[from] numalab_topology::placement::PlacementError),
    /// An empty CPU list.
    #[error("the CPU list is empty (e.g. 0-3 or 0,2,4)")]
    EmptyCpuList,
    /// A CPU list that does not parse.
    #[error("{text:?}: {source}")]
    CpuList {
        text: String,
        source: numalab_topology::cpulist::CpuListError,
    },
    /// A size that does not parse (numalab's size parser's words).
    #[error("{0}")]
    Size(numalab_topology::size::SizeError),
    /// A size of 0 bytes.
    #[error("the size must be more than 0")]
    ZeroSize,
    /// Seconds of 0 or less.
    #[error("must be more than 0 s")]
    SecondsNotPositive,
    /// Seconds over a day.
    #[error("must be at most 86400 s (a day)")]
    SecondsOverADay,
    /// Not a number of seconds.
    #[error("{0:?} is not a number of seconds")]
    NotSeconds(String),
    /// Not a number of microseconds from 0 to a second.
    #[error("{0:?} is not a number of microseconds between 0 and 1000000")]
    NotMicroseconds(String),
    /// Not one of the memory operations.
    #[error("{0:?} is not an operation (read, write, memset)")]
    NotAnOp(String),
    /// Not a node number.
    #[error("{0:?} is not a node number (e.g. 0 or 0,1)")]
    NotANode(String),
}

pub use crate::autonuma::{AutonumaArgs, TwoHalvesArgs};
pub use crate::command::CommandArgs;
pub use crate::forkexec::ForkExecArgs;
pub use crate::mem::MemArgs;
pub use crate::numa_test::NumaTestArgs;
pub use crate::placement::{HackbenchArgs, SpinArgs, Where};
pub use crate::registry::{Flag, Spec, SpecError, NAMES};

/// `4,8,16`: task or thread counts, each from 1 to `max`.
fn counts(s: &str, what: &'static str, max: u32) -> Result<Vec<u32>, ValueError> {
    let mut v = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        let n: u32 = item.parse().map_err(|_| {
            let item = item.to_string();
            if item.starts_with('-') && item[1..].parse::<u64>().is_ok() {
                ValueError::NegativeCount { item, what }
            } else {
                ValueError::NotACount { item, what }
            }
        })?;
        if n == 0 {
            return Err(ValueError::ZeroCount(what));
        }
        if n > max {
            return Err(ValueError::TooMany { n, what, max });
        }
        if !v.contains(&n) {
            v.push(n);
        }
    }
    Ok(v)
}

pub fn parse_tasks(s: &str) -> Result<List<u32>, ValueError> {
    counts(s, "task", MAX_TASKS).map(List)
}

pub fn parse_threads(s: &str) -> Result<List<u32>, ValueError> {
    counts(s, "thread", autonuma::MAX_THREADS).map(List)
}

/// `default,bind,inverse-bind`.
pub fn parse_bind_placements(s: &str) -> Result<List<BindPlacement>, ValueError> {
    let mut v = Vec::new();
    for item in s.split(',') {
        let p = BindPlacement::from_name(item.trim())
            .ok_or_else(|| ValueError::NotABindPlacement(item.to_string()))?;
        if v.contains(&p) {
            return Err(ValueError::PlacementTwice(item.to_string()));
        }
        v.push(p);
    }
    Ok(List(v))
}

/// `default,spread,packed,...` (the placement experiments).
pub fn parse_placements(s: &str) -> Result<List<Placement>, ValueError> {
    let mut v = Vec::new();
    for p in s.split(',') {
        let p = Placement::parse(p.trim())?;
        if !v.contains(&p) {
            v.push(p);
        }
    }
    Ok(List(v))
}

pub fn parse_cpus(s: &str) -> Result<List<u32>, ValueError> {
    if s.trim().is_empty() {
        return Err(ValueError::EmptyCpuList);
    }
    numalab_topology::cpulist::parse(s)
        .map(List)
        .map_err(|source| ValueError::CpuList {
            text: s.to_string(),
            source,
        })
}

/// A size in bytes: `512M`, `3G`, `65536`, by numalab's one size parser
/// ([`numalab_topology::size`]), so `vm --mem-per-node` refuses a size in
/// the same words.
pub fn parse_bytes(s: &str) -> Result<u64, ValueError> {
    match numalab_topology::size::parse(s, numalab_topology::size::Bare::Bytes)
        .map_err(ValueError::Size)?
    {
        0 => Err(ValueError::ZeroSize),
        b => Ok(b),
    }
}

/// Seconds, more than 0 and at most a day.
pub fn parse_seconds(s: &str) -> Result<f64, ValueError> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86400.0 => Ok(v),
        Ok(v) if v.is_finite() && v <= 0.0 => Err(ValueError::SecondsNotPositive),
        Ok(v) if v.is_finite() => Err(ValueError::SecondsOverADay),
        _ => Err(ValueError::NotSeconds(s.to_string())),
    }
}

/// Microseconds, at least 0 and at most a second.
pub fn parse_us(s: &str) -> Result<f64, ValueError> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1e6).contains(&v) => Ok(v),
        _ => Err(ValueError::NotMicroseconds(s.to_string())),
    }
}

/// `read,memset`: memory sweeps (the mem benchmark).
pub fn parse_ops(s: &str) -> Result<List<mem::Op>, ValueError> {
    let mut v = Vec::new();
    for item in s.split(',') {
        let op =
            mem::Op::from_name(item.trim()).ok_or_else(|| ValueError::NotAnOp(item.to_string()))?;
        if !v.contains(&op) {
            v.push(op);
        }
    }
    Ok(List(v))
}

/// `0,1`: node ids.
pub fn parse_nodes(s: &str) -> Result<List<u32>, ValueError> {
    let mut v = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        let n: u32 = item
            .parse()
            .map_err(|_| ValueError::NotANode(item.to_string()))?;
        if !v.contains(&n) {
            v.push(n);
        }
    }
    Ok(List(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autonuma::Kind;

    #[test]
    fn lists_and_values() {
        assert_eq!(parse_tasks("4, 8,16").unwrap().0, vec![4, 8, 16]);
        assert!(parse_tasks("0").is_err());
        assert!(parse_tasks("-1")
            .unwrap_err()
            .to_string()
            .contains("not a task count: a count cannot be negative"));
        assert!(parse_tasks("x")
            .unwrap_err()
            .to_string()
            .contains("not a task count (e.g."));
        assert!(parse_threads("5000").is_err());
        assert_eq!(
            parse_bind_placements("default,bind,inverse-bind")
                .unwrap()
                .len(),
            3
        );
        assert!(parse_bind_placements("bind,bind").is_err());
        assert!(parse_cpus("").is_err());
        assert!(parse_bytes("-1G")
            .unwrap_err()
            .to_string()
            .contains("cannot be negative"));
        assert!(parse_bytes("99999999999G")
            .unwrap_err()
            .to_string()
            .contains("is too large"));
        assert_eq!(parse_bytes("2M").unwrap(), 2 << 20);
        assert!(parse_seconds("0").is_err());
    }

    #[test]
    fn specs_by_name() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let s = Spec::parse("numa02", &a(&["--threads", "2", "--bytes", "64M"])).unwrap();
        assert_eq!(s.name(), "numa02");
        match s {
            Spec::Autonuma(Kind::Numa02, args) => {
                assert_eq!(args.bytes, Some(64 << 20));
                assert_eq!(args.threads.unwrap().0, vec![2]);
            }
            other => panic!("{other:?}"),
        }
        let e = Spec::parse("numa02", &a(&["--thread", "2"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--thread"), "{e}");
        assert!(!e.contains('\n'));
        let e = Spec::parse("numa02", &a(&["--bytes", "-1G"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot be negative"), "{e}");
        assert!(Spec::parse("numa03", &[])
            .unwrap_err()
            .to_string()
            .contains("not a benchmark"));
        let c = Spec::parse("command", &a(&["--name", "t", "--", "true", "-x"])).unwrap();
        assert!(c.is_command());
        let flags = Spec::flags("twohalves").unwrap();
        assert!(flags
            .iter()
            .any(|f| f.long == "iterations" && f.takes_value));
        assert!(!flags.iter().any(|f| f.long == "loops"));
        for n in NAMES {
            assert!(Spec::flags(n).is_ok(), "{n}");
        }
    }
}

//! One argument set per benchmark, flattened into both `numalab run` and
//! `numalab sim`: the same flag has the same name, meaning and default on
//! every backend. Values are checked here, so a bad one is a one-line
//! error naming the flag before anything runs.

use crate::autonuma::{self, Kind, Placement as BindPlacement};
use crate::numa_test::{Disturb, MAX_TASKS};
use crate::{command, numa_test, placement, BenchError, Calibration, Resolved};
use numalab_topology::placement::Placement;
use std::path::PathBuf;

/// A comma-separated list flag's values (a scan: one case per value).
#[derive(Clone, Debug, PartialEq)]
pub struct List<T>(pub Vec<T>);

impl<T> std::ops::Deref for List<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

/// `4,8,16`: task or thread counts, each from 1 to `max`.
fn counts(s: &str, what: &str, max: u32) -> Result<Vec<u32>, String> {
    let mut v = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        let n: u32 = item.parse().map_err(|_| {
            if item.starts_with('-') && item[1..].parse::<u64>().is_ok() {
                format!(
                    "{item:?} is not a {what} count: a count cannot be negative (e.g. 4 or 2,4,8)"
                )
            } else {
                format!("{item:?} is not a {what} count (e.g. 4 or 2,4,8)")
            }
        })?;
        if n == 0 {
            return Err(format!("a run needs at least 1 {what}"));
        }
        if n > max {
            return Err(format!(
                "{n} {what}s is more than numalab runs at once ({max})"
            ));
        }
        if !v.contains(&n) {
            v.push(n);
        }
    }
    Ok(v)
}

pub fn parse_tasks(s: &str) -> Result<List<u32>, String> {
    counts(s, "task", MAX_TASKS).map(List)
}

pub fn parse_threads(s: &str) -> Result<List<u32>, String> {
    counts(s, "thread", autonuma::MAX_THREADS).map(List)
}

/// `default,bind,inverse-bind`.
pub fn parse_bind_placements(s: &str) -> Result<List<BindPlacement>, String> {
    let mut v = Vec::new();
    for item in s.split(',') {
        let p = BindPlacement::from_name(item.trim())
            .ok_or_else(|| format!("{item:?} is not a placement (default, bind, inverse-bind)"))?;
        if v.contains(&p) {
            return Err(format!("placement {item} is given twice"));
        }
        v.push(p);
    }
    Ok(List(v))
}

/// `default,spread,packed,...` (the placement experiments).
pub fn parse_placements(s: &str) -> Result<List<Placement>, String> {
    let mut v = Vec::new();
    for p in s.split(',') {
        let p = Placement::parse(p.trim())?;
        if !v.contains(&p) {
            v.push(p);
        }
    }
    Ok(List(v))
}

pub fn parse_cpus(s: &str) -> Result<List<u32>, String> {
    if s.trim().is_empty() {
        return Err("the CPU list is empty (e.g. 0-3 or 0,2,4)".into());
    }
    numalab_topology::cpulist::parse(s)
        .map(List)
        .map_err(|e| format!("{s:?}: {e}"))
}

/// A size in bytes: `512M`, `3G`, `65536`, by numalab's one size parser
/// ([`numalab_topology::size`]), so `vm --mem-per-node` refuses a size in
/// the same words.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    match numalab_topology::size::parse(s, numalab_topology::size::Bare::Bytes)? {
        0 => Err("the size must be more than 0".into()),
        b => Ok(b),
    }
}

/// Seconds, more than 0 and at most a day.
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86400.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds between 0 and 86400"
        )),
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct NumaTestArgs {
    /// Task counts to run, e.g. 4,8,16 (one case each)
    #[arg(long, value_name = "N,...", allow_hyphen_values = true, value_parser = parse_tasks, default_value = "4")]
    pub tasks: List<u32>,
    /// Elements per task (20 bytes each; the original used 1000000);
    /// default: 8x the largest LLC, within half the free memory
    #[arg(long, value_name = "ELEMENTS", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub size: Option<u64>,
    /// The load peak 3 s after the start
    #[arg(long, value_enum, default_value_t = Disturb::Messaging)]
    pub disturb: Disturb,
}

impl NumaTestArgs {
    pub fn resolve(&self, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
        numa_test::resolve(self, cal)
    }
}

/// numa01, numa01_THREAD_ALLOC, numa02 and numa02_SMT.
#[derive(clap::Args, Clone, Debug)]
pub struct AutonumaArgs {
    /// Placements, one case each: default (memory first touched on the
    /// first node, then the kernel decides), bind (threads and memory on
    /// their ideal nodes), inverse-bind (memory there, threads elsewhere)
    #[arg(long, value_name = "P,...", value_parser = parse_bind_placements, default_value = "default")]
    pub placement: List<BindPlacement>,
    /// Memory per process, e.g. 512M or 3G; default: the original's size
    /// within half the free memory
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true, value_parser = parse_bytes)]
    pub bytes: Option<u64>,
    /// Threads per process, e.g. 2 or 2,4,8 (one case each); default: the
    /// original's, from the CPU count
    #[arg(long, value_name = "N,...", allow_hyphen_values = true, value_parser = parse_threads)]
    pub threads: Option<List<u32>>,
    /// Loops per thread; default: as many as take about --duration seconds
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub loops: Option<u64>,
    /// Seconds a run should take, for the default loop count
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value_t = 20.0, value_parser = parse_seconds)]
    pub duration: f64,
}

impl AutonumaArgs {
    pub fn resolve(&self, kind: Kind, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
        let r = autonuma::Request {
            placement: &self.placement,
            bytes: self.bytes,
            threads: self.threads.as_ref().map_or(&[][..], |t| &t.0),
            loops: self.loops,
            duration: self.duration,
        };
        autonuma::resolve(kind, &r, cal)
    }
}

/// The two-halves microbenchmark.
#[derive(clap::Args, Clone, Debug)]
pub struct TwoHalvesArgs {
    /// Placements, one case each: default (all memory first touched on
    /// the first node), bind (each half on its set's node), inverse-bind
    /// (each half on the other set's node)
    #[arg(long, value_name = "P,...", value_parser = parse_bind_placements, default_value = "default")]
    pub placement: List<BindPlacement>,
    /// Memory in all (each set works on half), e.g. 256M; default: the
    /// original's 16 GiB within half the free memory
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true, value_parser = parse_bytes)]
    pub bytes: Option<u64>,
    /// Threads per set, e.g. 2 or 1,2 (one case each); default: the CPUs
    /// of a node
    #[arg(long, value_name = "N,...", allow_hyphen_values = true, value_parser = parse_threads)]
    pub threads: Option<List<u32>>,
    /// Passes of each thread over its slice; default: as many as take
    /// about --duration seconds
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
    /// Seconds a run should take, for the default iteration count
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value_t = 30.0, value_parser = parse_seconds)]
    pub duration: f64,
}

impl TwoHalvesArgs {
    pub fn resolve(&self, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
        let r = autonuma::Request {
            placement: &self.placement,
            bytes: self.bytes,
            threads: self.threads.as_ref().map_or(&[][..], |t| &t.0),
            loops: self.iterations,
            duration: self.duration,
        };
        autonuma::resolve(Kind::TwoHalves, &r, cal)
    }
}

/// Where the placement experiments run: named placements, or a list.
#[derive(clap::Args, Clone, Debug)]
pub struct Where {
    /// Placements, one case each: default, spread (split), spread-smt
    /// (mix), packed (same_ccd), packed-smt (same_ccx); default: every one
    /// this machine can give
    #[arg(long, value_name = "P,...", value_parser = parse_placements, conflicts_with = "cpus")]
    pub placement: Option<List<Placement>>,
    /// An explicit CPU list instead, e.g. 0,6,12 or 0-5 (as taskset -c)
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub cpus: Option<List<u32>>,
}

#[derive(clap::Args, Clone, Debug)]
pub struct SpinArgs {
    /// Spinning tasks (processes); default: half the cores
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub tasks: Option<u32>,
    /// Iterations per task; default: as many as take about --seconds
    /// alone on a core
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
    /// Seconds a task should spin alone on a core, for the default iterations
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value_t = 10.0, value_parser = parse_seconds)]
    pub seconds: f64,
    #[command(flatten)]
    pub place: Where,
}

impl SpinArgs {
    pub fn resolve(&self, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
        placement::resolve_spin(self, cal)
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct HackbenchArgs {
    /// Groups of senders and receivers (hackbench -g)
    #[arg(long, default_value_t = 15, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub groups: u32,
    /// Senders and receivers per group (hackbench -f)
    #[arg(long, default_value_t = 50, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=500))]
    pub fds: u32,
    /// Messages each sender sends to each receiver (hackbench -l)
    #[arg(long, default_value_t = 200, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..))]
    pub loops: u32,
    /// Message size in bytes (hackbench -s)
    #[arg(long, default_value_t = 512, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1048576))]
    pub size: u32,
    /// CPUs in each placement's set; default: half the cores
    #[arg(long, value_name = "K", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub ncpus: Option<u32>,
    #[command(flatten)]
    pub place: Where,
}

impl HackbenchArgs {
    pub fn resolve(&self, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
        placement::resolve_hackbench(self, cal)
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct CommandArgs {
    /// Benchmark name in the records and tables; default: the program's file name
    #[arg(long)]
    pub name: Option<String>,
    /// Directory to run the command in; default: the current one
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// The program and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "PROGRAM [ARGS]")]
    pub argv: Vec<String>,
}

impl CommandArgs {
    pub fn resolve(&self, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
        command::resolve(self, cal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_values() {
        assert_eq!(parse_tasks("4, 8,16").unwrap().0, vec![4, 8, 16]);
        assert!(parse_tasks("0").is_err());
        assert!(parse_tasks("-1")
            .unwrap_err()
            .contains("not a task count: a count cannot be negative"));
        assert!(parse_tasks("x")
            .unwrap_err()
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
            .contains("cannot be negative"));
        assert!(parse_bytes("99999999999G")
            .unwrap_err()
            .contains("is too large"));
        assert_eq!(parse_bytes("2M").unwrap(), 2 << 20);
        assert!(parse_seconds("0").is_err());
    }
}

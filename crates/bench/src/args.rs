//! One argument set per benchmark, flattened into both `numalab run` and
//! `numalab sim`: the same flag has the same name, meaning and default on
//! every backend. Values are checked here, so a bad one is a one-line
//! error naming the flag before anything runs.

use crate::autonuma::{self, Kind, Placement as BindPlacement};
use crate::numa_test::{Disturb, MAX_TASKS};
use crate::{command, forkexec, mem, numa_test, placement, BenchError, Calibration, Resolved};
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

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
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

/// numa01, numa01_THREAD_ALLOC, numa02 and numa02_SMT; twohalves retells
/// them ([`TwoHalvesArgs`]).
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
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

/// The two-halves microbenchmark: [`AutonumaArgs`], told as its own
/// (threads per set, memory in all, `--iterations` for `--loops`, 30 s by
/// default), and printed as its own for the sizes an invocation keeps.
#[derive(Clone)]
pub struct TwoHalvesArgs(pub AutonumaArgs);

impl TwoHalvesArgs {
    /// Autonuma's flags with two-halves' names, words and default.
    fn retell(cmd: clap::Command) -> clap::Command {
        cmd.mut_arg("placement", |a| {
            a.help(
                "Placements, one case each: default (all memory first touched on the first \
                 node), bind (each half on its set's node), inverse-bind (each half on the \
                 other set's node)",
            )
        })
        .mut_arg("bytes", |a| {
            a.help(
                "Memory in all (each set works on half), e.g. 256M; default: the original's \
                 16 GiB within half the free memory",
            )
        })
        .mut_arg("threads", |a| {
            a.help("Threads per set, e.g. 2 or 1,2 (one case each); default: the CPUs of a node")
        })
        .mut_arg("loops", |a| {
            a.long("iterations").help(
                "Passes of each thread over its slice; default: as many as take about \
                 --duration seconds",
            )
        })
        .mut_arg("duration", |a| {
            a.default_value("30")
                .help("Seconds a run should take, for the default iteration count")
        })
    }

    pub fn resolve(&self, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
        self.0.resolve(Kind::TwoHalves, cal)
    }
}

impl clap::Args for TwoHalvesArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        TwoHalvesArgs::retell(AutonumaArgs::augment_args(cmd))
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        TwoHalvesArgs::retell(AutonumaArgs::augment_args_for_update(cmd))
    }
}

impl clap::FromArgMatches for TwoHalvesArgs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        AutonumaArgs::from_arg_matches(m).map(TwoHalvesArgs)
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(m)
    }
}

impl std::fmt::Debug for TwoHalvesArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = &self.0;
        f.debug_struct("TwoHalvesArgs")
            .field("placement", &a.placement)
            .field("bytes", &a.bytes)
            .field("threads", &a.threads)
            .field("iterations", &a.loops)
            .field("duration", &a.duration)
            .finish()
    }
}

/// Where the placement experiments run: named placements, or a list.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
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
#[command(next_help_heading = "Benchmark")]
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
#[command(next_help_heading = "Benchmark")]
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

/// Microseconds, at least 0 and at most a second.
pub fn parse_us(s: &str) -> Result<f64, ValueError> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1e6).contains(&v) => Ok(v),
        _ => Err(ValueError::NotMicroseconds(s.to_string())),
    }
}

/// A shell-like parent forking short programs (configure, make -jJ).
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
pub struct ForkExecArgs {
    /// Children the parent forks in all (each execs a new program)
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=forkexec::MAX_CHILDREN as i64))]
    pub children: u32,
    /// Children running at once: 1 is configure's shape, J is make -jJ's
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=forkexec::MAX_JOBS as i64))]
    pub jobs: u32,
    /// Microseconds of work each child does alone on a core, for the
    /// default --child-iterations
    #[arg(long, value_name = "US", default_value_t = 1000.0, allow_negative_numbers = true, value_parser = parse_us)]
    pub child_us: f64,
    /// Spin iterations each child does after its exec; default: from --child-us
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub child_iterations: Option<u64>,
    /// Microseconds of the parent's own work before each fork, for the
    /// default --parent-iterations
    #[arg(long, value_name = "US", default_value_t = 100.0, allow_negative_numbers = true, value_parser = parse_us)]
    pub parent_us: f64,
    /// Spin iterations the parent does before each fork; default: from --parent-us
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(0..))]
    pub parent_iterations: Option<u64>,
}

impl ForkExecArgs {
    pub fn resolve(&self, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
        forkexec::resolve(self, cal)
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

/// Memory bandwidth (as perf bench numa mem).
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
pub struct MemArgs {
    /// Sweeps, one case each: read (loads), write (read-modify-write),
    /// memset (stores)
    #[arg(long, value_name = "OP,...", value_parser = parse_ops, default_value = "read")]
    pub op: List<mem::Op>,
    /// Threads, e.g. 1 or 1,2,4 (one case each); default: the CPUs of the
    /// CPU node
    #[arg(long, value_name = "N,...", allow_hyphen_values = true, value_parser = parse_threads)]
    pub threads: Option<List<u32>>,
    /// Nodes whose CPUs run the threads, one case each; default: the
    /// first node with CPUs
    #[arg(long, value_name = "NODE,...", allow_hyphen_values = true, value_parser = parse_nodes)]
    pub cpu_node: Option<List<u32>>,
    /// Nodes the memory is bound to, one case each; default: the CPU node
    #[arg(long, value_name = "NODE,...", allow_hyphen_values = true, value_parser = parse_nodes)]
    pub mem_node: Option<List<u32>>,
    /// Bytes each thread sweeps, e.g. 256M; default: 4x the largest LLC,
    /// at least 64 MiB, within half the memory node's free memory
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true, value_parser = parse_bytes)]
    pub bytes: Option<u64>,
    /// Sweeps of each thread over its buffer; default: as many as take
    /// about --duration seconds
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub loops: Option<u64>,
    /// Seconds a run should take, for the default loop count
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value_t = mem::DEFAULT_SECONDS, value_parser = parse_seconds)]
    pub duration: f64,
}

impl MemArgs {
    pub fn resolve(&self, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
        mem::resolve(self, cal)
    }
}

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
pub struct CommandArgs {
    /// Benchmark name in the records and tables; default: the program's file name
    #[arg(long)]
    pub name: Option<String>,
    /// Directory to run the command in; default: the current one
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// The program and its arguments, after `--`; `--vs [--name N] [--cwd
    /// DIR] -- PROGRAM [ARGS]` adds a command to compare with the first
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

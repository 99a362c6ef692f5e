//! The benchmark registry: every benchmark numalab knows, once. Each
//! benchmark's module defines one [`Benchmark`] (its name, docs line,
//! argument type, how the parsed flags become a [`Spec`], the metrics its
//! records carry), and [`ALL`] lists them in `numalab run`'s order. Every
//! list of benchmarks derives from it: `numalab run`'s and `numalab sim`'s
//! subcommands, [`NAMES`] (plan checks, error messages), the names a
//! `command` may not take ([`crate::command::RESERVED`]), the simulator's
//! `--list` line ([`sim_list_text`]) and the placement family the report
//! summarises ([`placement_family`]).
//!
//! [`Spec`], a benchmark named with its flags, and [`Case`], one resolved
//! for a run, live here too, as do the benchmarks' module declarations:
//! adding a benchmark touches this file and its own module, and nothing
//! else in this crate.

#[path = "autonuma.rs"]
pub mod autonuma;
#[path = "forkexec.rs"]
pub mod forkexec;
#[path = "mem.rs"]
pub mod mem;
#[path = "numa_test.rs"]
pub mod numa_test;
#[path = "placement.rs"]
pub mod placement;

use crate::args::{
    AutonumaArgs, CommandArgs, ForkExecArgs, HackbenchArgs, MemArgs, NumaTestArgs, SpinArgs,
    TwoHalvesArgs,
};
use crate::autonuma::Kind;
use crate::command;
use crate::metrics::MetricDef;
use crate::{value_text, BenchError, Calibration, Resolved};
use numalab_record::convergence::Rule;
use serde_json::Value;
use std::collections::BTreeMap;

/// One benchmark: everything the command line, a campaign plan and the
/// reports need to know of it before it runs.
#[derive(Clone, Copy)]
pub struct Benchmark {
    /// Its name: the subcommand, a plan's `name`, the record's `benchmark`.
    pub name: &'static str,
    /// Its docs line: the subcommand's help and `numalab run`'s list.
    pub about: &'static str,
    /// Adds its flags (one `clap::Args` type's `augment_args`) to a
    /// command.
    pub args: fn(clap::Command) -> clap::Command,
    /// The flags parsed by [`Benchmark::args`] as a [`Spec`].
    pub spec: fn(&clap::ArgMatches) -> Result<Spec, clap::Error>,
    /// The metrics its records carry (the vmstat deltas and any a backend
    /// adds, such as the simulator's `kernel_migrations`, besides).
    pub metrics: &'static [MetricDef],
    /// Whether the simulator runs it (not a command: it cannot run a
    /// program).
    pub simulated: bool,
    /// Whether it runs in placements `default`, `bind` and `inverse-bind`
    /// and has the report's bounds summary (the autonuma benchmarks).
    pub placement_family: bool,
    /// Whether the runner's flags come before its own in `--help` (a
    /// command: its program is the last thing on the line).
    pub runner_flags_first: bool,
}

impl Benchmark {
    /// Benchmark `name` with flags of type `A`, parsed into a [`Spec`] by
    /// `spec`: simulated, not of the placement family, its flags before
    /// the runner's (the builders below say otherwise).
    pub const fn new<A: clap::Args>(
        name: &'static str,
        about: &'static str,
        spec: fn(&clap::ArgMatches) -> Result<Spec, clap::Error>,
        metrics: &'static [MetricDef],
    ) -> Benchmark {
        Benchmark {
            name,
            about,
            args: A::augment_args,
            spec,
            metrics,
            simulated: true,
            placement_family: false,
            runner_flags_first: false,
        }
    }

    /// Of the placement family (see [`Benchmark::placement_family`]).
    pub const fn in_placement_family(self) -> Benchmark {
        Benchmark {
            placement_family: true,
            ..self
        }
    }

    /// Not run by the simulator, its flags after the runner's (a command).
    pub const fn host_only_program(self) -> Benchmark {
        Benchmark {
            simulated: false,
            runner_flags_first: true,
            ..self
        }
    }

    /// A clap command named after the benchmark with its flags, parsing
    /// arguments without a program name (as a plan's keys come).
    pub fn command(&self) -> clap::Command {
        (self.args)(clap::Command::new(self.name).no_binary_name(true))
    }
}

impl std::fmt::Debug for Benchmark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Benchmark")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Flags parsed as argument type `A`, made a [`Spec`] by `wrap` (a
/// [`Benchmark::spec`]: `|m| parse_as(m, Spec::Mem)`).
pub fn parse_as<A: clap::FromArgMatches>(
    m: &clap::ArgMatches,
    wrap: fn(A) -> Spec,
) -> Result<Spec, clap::Error> {
    A::from_arg_matches(m).map(wrap)
}

/// Every benchmark, in the order `numalab run` lists them.
pub const ALL: &[Benchmark] = &[
    crate::numa_test::BENCHMARK,
    crate::autonuma::NUMA01,
    crate::autonuma::NUMA01_THREAD_ALLOC,
    crate::autonuma::NUMA02,
    crate::autonuma::NUMA02_SMT,
    crate::autonuma::TWOHALVES,
    crate::placement::SPIN,
    crate::placement::HACKBENCH,
    crate::forkexec::BENCHMARK,
    crate::mem::BENCHMARK,
    crate::command::BENCHMARK,
];

const fn names() -> [&'static str; ALL.len()] {
    let mut names = [""; ALL.len()];
    let mut i = 0;
    while i < ALL.len() {
        names[i] = ALL[i].name;
        i += 1;
    }
    names
}

/// Every benchmark's name, in [`ALL`]'s order.
pub const NAMES: [&str; ALL.len()] = names();

/// The benchmark called `name`.
pub fn find(name: &str) -> Option<&'static Benchmark> {
    ALL.iter().find(|b| b.name == name)
}

/// The names of the benchmarks the report summarises by placement
/// (elapsed time between the `bind` and `inverse-bind` bounds).
pub fn placement_family() -> impl Iterator<Item = &'static str> {
    ALL.iter().filter(|b| b.placement_family).map(|b| b.name)
}

/// The simulator's `--list` paragraph of benchmarks: the ones it runs,
/// wrapped within 80 columns.
pub fn sim_list_text() -> String {
    let names: Vec<&str> = ALL.iter().filter(|b| b.simulated).map(|b| b.name).collect();
    let text = format!(
        "benchmarks: {} (their flags are numalab run's)",
        names.join(", ")
    );
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.len() + 1 + word.len() > 80 {
            out.push_str(&line);
            out.push('\n');
            line = " ".to_string();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out
}

/// Why a benchmark's name or flags were refused.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// A name that is none of the benchmarks.
    #[error("{name:?} is not a benchmark (one of {})", NAMES.join(", "))]
    UnknownBenchmark { name: String },
    /// Flags clap refused (an unknown flag, a bad value), as one line.
    #[error("{}", clap_line(.0))]
    Flags(clap::Error),
}

/// A benchmark named with its arguments, as `numalab run NAME FLAGS...`
/// and a campaign plan's `[[benchmark]]` both give it: one parser, one
/// meaning for every flag.
#[derive(Clone, Debug)]
pub enum Spec {
    NumaTest(NumaTestArgs),
    /// numa01, numa01_THREAD_ALLOC, numa02, numa02_SMT.
    Autonuma(Kind, AutonumaArgs),
    TwoHalves(TwoHalvesArgs),
    Spin(SpinArgs),
    Hackbench(HackbenchArgs),
    ForkExec(ForkExecArgs),
    Mem(MemArgs),
    Command(CommandArgs),
}

/// One flag of a benchmark: its long name and whether it takes a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flag {
    pub long: String,
    pub takes_value: bool,
}

fn command_for(name: &str) -> Result<clap::Command, SpecError> {
    crate::registry::find(name)
        .map(|b| b.command())
        .ok_or_else(|| SpecError::UnknownBenchmark {
            name: name.to_string(),
        })
}

/// A clap error as one line: what is wrong, without usage or tips.
fn clap_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid arguments");
    first.trim_start_matches("error: ").to_string()
}

impl Spec {
    /// Parse `args` (flags as on the command line, program and its
    /// arguments after `--` for `command`) as benchmark `name`'s.
    pub fn parse(name: &str, args: &[String]) -> Result<Spec, SpecError> {
        let m = command_for(name)?
            .try_get_matches_from(args)
            .map_err(SpecError::Flags)?;
        let b = crate::registry::find(name).expect("found by command_for");
        (b.spec)(&m).map_err(SpecError::Flags)
    }

    /// Benchmark `name`'s flags (for checking a plan's keys).
    pub fn flags(name: &str) -> Result<Vec<Flag>, SpecError> {
        let cmd = command_for(name)?;
        Ok(cmd
            .get_arguments()
            .filter_map(|a| {
                Some(Flag {
                    long: a.get_long()?.to_string(),
                    takes_value: a.get_action().takes_values(),
                })
            })
            .collect())
    }

    /// The benchmark's name.
    pub fn name(&self) -> &'static str {
        match self {
            Spec::NumaTest(_) => "numa_test",
            Spec::Autonuma(k, _) => k.name(),
            Spec::TwoHalves(_) => "twohalves",
            Spec::Spin(_) => "spin",
            Spec::Hackbench(_) => "hackbench",
            Spec::ForkExec(_) => "forkexec",
            Spec::Mem(_) => "mem",
            Spec::Command(_) => "command",
        }
    }

    /// The cases, every default resolved on `cal`'s machine.
    pub fn resolve(&self, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
        match self {
            Spec::NumaTest(a) => crate::numa_test::resolve(a, cal),
            Spec::Autonuma(k, a) => a.resolve(*k, cal),
            Spec::TwoHalves(a) => a.resolve(cal),
            Spec::Spin(a) => crate::placement::resolve_spin(a, cal),
            Spec::Hackbench(a) => crate::placement::resolve_hackbench(a, cal),
            Spec::ForkExec(a) => crate::forkexec::resolve(a, cal),
            Spec::Mem(a) => crate::mem::resolve(a, cal),
            Spec::Command(a) => crate::command::resolve(a, cal),
        }
    }

    pub fn is_command(&self) -> bool {
        matches!(self, Spec::Command(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics;
    use numalab_topology::MachineInfo;

    /// A two-node machine of 8 CPUs that answers every calibration.
    struct Machine(MachineInfo);

    impl crate::Calibration for Machine {
        fn machine(&self) -> &MachineInfo {
            &self.0
        }
        fn node_free_bytes(&self, _: u32) -> Option<u64> {
            Some(8 << 30)
        }
        fn zeroing_bandwidth(&self, threads: u32, _: u64) -> f64 {
            threads as f64 * 5e9
        }
        fn spin_rate(&self) -> f64 {
            1e9
        }
        fn first_touch_rate(&self) -> f64 {
            2e9
        }
    }

    /// The flags each benchmark needs at the least (a command's program).
    fn minimal(name: &str) -> Vec<String> {
        match name {
            "command" => vec!["--".into(), "true".into()],
            _ => Vec::new(),
        }
    }

    #[test]
    fn every_benchmark_parses_resolves_and_has_metrics() {
        let mut info = numalab_record::example_record("x", "y", 1, 1.0).machine;
        info.topology =
            numalab_topology::Topology::regular(2, 4, 1, 1, 32 << 20, 8 << 30, None).unwrap();
        info.memory_available_bytes = Some(12 << 30);
        let m = Machine(info);
        for b in ALL {
            let spec = Spec::parse(b.name, &minimal(b.name)).unwrap();
            assert_eq!(spec.name(), b.name);
            let resolved = spec
                .resolve(&m)
                .unwrap_or_else(|e| panic!("{}: {e}", b.name));
            assert!(!resolved.cases.is_empty(), "{}", b.name);
            for case in &resolved.cases {
                if !spec.is_command() {
                    assert_eq!(case.benchmark(), b.name);
                }
                assert!(!case.params().is_empty(), "{}", b.name);
            }
            assert!(!b.about.is_empty() && !b.about.contains('\n'), "{}", b.name);
            assert!(b.metrics.contains(&metrics::ELAPSED_S), "{}", b.name);
            for d in b.metrics {
                assert_eq!(metrics::find(d.name), Some(d), "{}: {}", b.name, d.name);
            }
            assert!(Spec::flags(b.name).is_ok(), "{}", b.name);
        }
    }

    #[test]
    fn names_are_unique_and_derived_lists_agree() {
        let mut names = NAMES.to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert_eq!(crate::command::RESERVED, &NAMES[..]);
        assert_eq!(
            placement_family().collect::<Vec<_>>(),
            crate::autonuma::Kind::ALL.map(|k| k.name())
        );
        let list = sim_list_text();
        assert!(list.lines().all(|l| l.len() <= 80), "{list}");
        assert!(list.contains("forkexec") && !list.contains("command"));
    }
}

/// A benchmark with every parameter resolved: what one run does. It
/// serialises, so a guest can be told what to run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Case {
    NumaTest(numa_test::Params),
    /// numa01, numa01_THREAD_ALLOC, numa02, numa02_SMT and twohalves.
    Autonuma(autonuma::Params),
    Spin(placement::SpinParams),
    Hackbench(placement::HackbenchParams),
    /// A shell-like parent forking short programs (configure's shape).
    ForkExec(forkexec::Params),
    /// Memory bandwidth of pinned threads on bound memory.
    Mem(mem::Params),
    Command(command::Params),
}

impl Case {
    /// The record's `benchmark`.
    pub fn benchmark(&self) -> String {
        match self {
            Case::NumaTest(_) => "numa_test".into(),
            Case::Autonuma(p) => p.kind.name().into(),
            Case::Spin(_) => "spin".into(),
            Case::Hackbench(_) => "hackbench".into(),
            Case::ForkExec(_) => "forkexec".into(),
            Case::Mem(_) => "mem".into(),
            Case::Command(p) => p.name.clone(),
        }
    }

    /// The case key: the parameters that define the work, flat scalars
    /// with the same names in every backend's records.
    pub fn params(&self) -> BTreeMap<String, Value> {
        match self {
            Case::NumaTest(p) => p.key(),
            Case::Autonuma(p) => p.key(),
            Case::Spin(p) => p.key(),
            Case::Hackbench(p) => p.key(),
            Case::ForkExec(p) => p.key(),
            Case::Mem(p) => p.key(),
            Case::Command(p) => p.key(),
        }
    }

    /// Facts about how this case is realised on the machine it was
    /// resolved for (CPU lists, ideal nodes), for the record's `backend`.
    pub fn details(&self) -> BTreeMap<String, Value> {
        match self {
            Case::Spin(p) => p.set.details(),
            Case::Hackbench(p) => p.set.details(),
            Case::Command(p) => p.details(),
            _ => BTreeMap::new(),
        }
    }

    /// The criterion by which a run of this case converged, if it has one.
    pub fn convergence(&self) -> Option<Rule> {
        match self {
            Case::Autonuma(p) => Some(p.kind.convergence_rule()),
            _ => None,
        }
    }

    /// Work units one run does in all (for progress), when known.
    pub fn work_units(&self) -> Option<u64> {
        match self {
            Case::NumaTest(p) => Some(p.tasks as u64 * p.passes as u64),
            Case::Autonuma(p) => Some(p.kind.total_threads(p.threads) as u64 * p.loops),
            Case::Spin(p) => Some(p.tasks as u64 * p.iterations),
            Case::ForkExec(p) => Some(p.children as u64),
            Case::Mem(p) => Some(p.threads as u64 * p.loops),
            _ => None,
        }
    }

    /// `benchmark k=v ...` over the keys given (the parameters that vary
    /// within an invocation), as per-run lines and tables name a case.
    pub fn title(&self, keys: &[String]) -> String {
        let params = self.params();
        let mut s = self.benchmark();
        for k in keys {
            if let Some(v) = params.get(k) {
                s.push(' ');
                s.push_str(k);
                s.push('=');
                s.push_str(&value_text(v));
            }
        }
        s
    }
}

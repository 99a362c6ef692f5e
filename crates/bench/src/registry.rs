//! The benchmark registry: every benchmark numalab knows, once. Each
//! benchmark's module defines one [`Benchmark`] (its name, docs line,
//! argument type, how the parsed flags become a [`Spec`], the metrics its
//! records carry), and [`ALL`] lists them in `numalab run`'s order. Every
//! list of benchmarks derives from it: `numalab run`'s and `numalab sim`'s
//! subcommands, [`NAMES`] (plan checks, error messages), the names a
//! `command` may not take ([`crate::command::RESERVED`]), the simulator's
//! `--list` line ([`sim_list_text`]) and the placement family the report
//! summarises ([`placement_family`]).

use crate::args::Spec;
use crate::metrics::MetricDef;

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

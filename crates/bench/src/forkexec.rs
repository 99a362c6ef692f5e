//! `forkexec`: a shell-like parent that forks short-lived programs one
//! after the other, the shape of a `configure` script (seed 003's
//! configure benchmarks, where NEST's published gains are), or `jobs` at a
//! time, the shape of `make -jJ`.
//!
//! The parent does `parent_iterations` of its own work (a shell reading
//! and expanding the next line), then forks a child that execs a new
//! program, which spins through `child_iterations` and exits; the parent
//! waits for it (with `jobs` > 1: forks until `jobs` children are running,
//! then waits for any one) and goes on until `children` have run. Work is
//! counted in iterations of the spin loop ([`crate::placement`]'s
//! dependent xorshift chain, [`SPIN_CYCLES_PER_ITERATION`] cycles each),
//! so the same case is the same work on every backend.
//!
//! Each child is a new process placed by the scheduler's fork and exec
//! paths (`select_task_rq` with `WF_FORK`, then `sched_exec`), then woken
//! nowhere: it runs once and exits, and its exit wakes the parent. That is
//! the path where NEST differs from CFS: CFS sends each new process to the
//! idlest group of the machine, NEST to a warm core of its nest.
//!
//! Metrics: `elapsed_s` (first fork to last child reaped), `user_s` and
//! `sys_s` of the whole tree (the parent's and its reaped children's, as
//! `wait4` reports them), `children_per_s` and `child_latency_ms` (mean
//! time from a child's fork to its reaping).
//!
//! [`SPIN_CYCLES_PER_ITERATION`]: crate::placement::SPIN_CYCLES_PER_ITERATION

use crate::args::*;
use crate::metrics;
use crate::registry::Benchmark;
use crate::{BenchError, Calibration, Case, Resolved};
use serde_json::Value;
use std::collections::BTreeMap;

/// Most children one run forks.
pub const MAX_CHILDREN: u32 = 1_000_000;
/// Most children running at once.
pub const MAX_JOBS: u32 = 4096;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Params {
    /// Children forked in all.
    pub children: u32,
    /// Children running at once (1: configure; J: make -jJ).
    pub jobs: u32,
    /// Spin iterations each child does after its exec.
    pub child_iterations: u64,
    /// Spin iterations the parent does before each fork.
    pub parent_iterations: u64,
}

impl Params {
    pub(crate) fn key(&self) -> BTreeMap<String, Value> {
        BTreeMap::from([
            ("children".to_string(), self.children.into()),
            ("jobs".to_string(), self.jobs.into()),
            ("child_iterations".to_string(), self.child_iterations.into()),
            (
                "parent_iterations".to_string(),
                self.parent_iterations.into(),
            ),
        ])
    }

    /// Check the parameters (a deserialised case is not checked by clap).
    pub fn check(&self) -> Result<(), BenchError> {
        if self.children == 0 || self.children > MAX_CHILDREN {
            return Err(BenchError(format!(
                "--children: between 1 and {MAX_CHILDREN}, not {}",
                self.children
            )));
        }
        if self.jobs == 0 || self.jobs > MAX_JOBS {
            return Err(BenchError(format!(
                "--jobs: between 1 and {MAX_JOBS}, not {}",
                self.jobs
            )));
        }
        Ok(())
    }
}

/// Iterations that take `us` microseconds alone on a core at `rate`
/// iterations per second (0 for 0 us).
fn iterations_for(us: f64, rate: f64) -> u64 {
    (rate * us / 1e6).round() as u64
}

pub fn resolve(a: &ForkExecArgs, cal: &dyn Calibration) -> Result<Resolved, BenchError> {
    let mut out = Resolved::default();
    let need_rate = a.child_iterations.is_none() || a.parent_iterations.is_none();
    let rate = if need_rate { cal.spin_rate() } else { 0.0 };
    let child_iterations = match a.child_iterations {
        Some(n) => n,
        None => {
            let n = iterations_for(a.child_us, rate).max(1);
            out.notes.push(format!(
                "child_iterations: {n}, about {} us alone on a core at {:.0} M/s; --child-iterations to set",
                a.child_us,
                rate / 1e6
            ));
            n
        }
    };
    let parent_iterations = match a.parent_iterations {
        Some(n) => n,
        None => {
            let n = iterations_for(a.parent_us, rate);
            out.notes.push(format!(
                "parent_iterations: {n}, about {} us before each fork; --parent-iterations to set",
                a.parent_us
            ));
            n
        }
    };
    out.notes.push(format!(
        "forkexec: {} children, {} at a time",
        a.children, a.jobs
    ));
    let p = Params {
        children: a.children,
        jobs: a.jobs,
        child_iterations,
        parent_iterations,
    };
    p.check()?;
    out.cases = vec![Case::ForkExec(p)];
    Ok(out)
}

/// A shell-like parent forking short programs (configure, make -jJ).
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
pub struct ForkExecArgs {
    /// Children the parent forks in all (each execs a new program)
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=crate::forkexec::MAX_CHILDREN as i64))]
    pub children: u32,
    /// Children running at once: 1 is configure's shape, J is make -jJ's
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=crate::forkexec::MAX_JOBS as i64))]
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

/// The registry's entry ([`crate::registry`]).
pub const BENCHMARK: Benchmark = Benchmark::new::<ForkExecArgs>(
    "forkexec",
    "A shell-like parent forking short-lived programs one at a time (configure's shape) or --jobs at a time (make -jJ's): where NEST's published gains are (NEST evaluation, 2022)",
    |m| crate::registry::parse_as(m, crate::args::Spec::ForkExec),
    &[metrics::ELAPSED_S, metrics::USER_S, metrics::SYS_S, metrics::CHILDREN_PER_S, metrics::CHILD_LATENCY_MS],
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_the_work() {
        let p = Params {
            children: 10,
            jobs: 2,
            child_iterations: 100,
            parent_iterations: 5,
        };
        let k = p.key();
        assert_eq!(k["children"], 10);
        assert_eq!(k["jobs"], 2);
        assert_eq!(k["child_iterations"], 100);
        assert_eq!(k["parent_iterations"], 5);
        assert!(p.check().is_ok());
        assert!(Params {
            jobs: 0,
            ..p.clone()
        }
        .check()
        .is_err());
        assert!(Params { children: 0, ..p }.check().is_err());
        assert_eq!(iterations_for(1000.0, 5e8), 500_000);
    }
}

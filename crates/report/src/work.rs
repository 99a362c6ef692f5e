//! Did every run of a case do the same work? A repeated `run command --
//! make -j2` that built everything once and then nothing (0.23 s of CPU
//! time, then 0.00 and 0.00) passes every other check: each run exited 0.
//! Its runs are not repetitions of one measurement, and their times mean
//! nothing together.
//!
//! Work is judged by CPU time (`user_s` + `sys_s`, which every backend
//! records): the successful runs of one case in one configuration whose
//! CPU time is more than [`FACTOR`] times apart get a warning naming the
//! two extremes. Times under [`FLOOR_S`] count as that much: the kernel
//! accounts CPU time by ticks of the scheduler, and two runs that each did
//! next to nothing did the same nothing. Which run is the odd one is not
//! guessed; the warning says which runs to look at.
//!
//! Records are written once, by the runner, before the next run starts,
//! so a run cannot carry a warning about runs after it: the check is made
//! here, from the records, by the end-of-invocation summary
//! ([`crate::summary::invocation`], on standard error) and by `compare`
//! and `report` (a footnote on the case's rows).

use numalab_record::RunRecord;

/// Runs whose CPU time is more than this many times apart did different
/// work.
pub const FACTOR: f64 = 10.0;

/// CPU times below this many seconds count as this much.
pub const FLOOR_S: f64 = 0.01;

/// A run's CPU time: `user_s` + `sys_s`, if it recorded either.
pub fn cpu_s(r: &RunRecord) -> Option<f64> {
    match (r.metric("user_s"), r.metric("sys_s")) {
        (None, None) => None,
        (u, s) => Some(u.unwrap_or(0.0) + s.unwrap_or(0.0)),
    }
}

/// The runs of one case and configuration that did the least and the
/// most work, when that differs by more than [`FACTOR`].
#[derive(Debug, Clone, PartialEq)]
pub struct WorkDiffers {
    /// Repetition index and CPU seconds of the run with the least.
    pub least: (u32, f64),
    /// Repetition index and CPU seconds of the run with the most.
    pub most: (u32, f64),
}

impl WorkDiffers {
    /// `CPU time differs more than 10x between runs (run 2: 0.00 s, run
    /// 1: 0.23 s): did every run do the same work?`
    pub fn text(&self) -> String {
        format!(
            "CPU time differs more than {FACTOR:.0}x between runs (run {}: {:.2} s, run {}: {:.2} s): did every run do the same work?",
            self.least.0, self.least.1, self.most.0, self.most.1
        )
    }
}

/// Check the successful runs among `runs` (one case, one configuration).
pub fn check(runs: &[&RunRecord]) -> Option<WorkDiffers> {
    let times: Vec<(u32, f64)> = runs
        .iter()
        .filter(|r| r.outcome.is_ok())
        .filter_map(|r| Some((r.repetition.index, cpu_s(r)?)))
        .filter(|(_, t)| t.is_finite())
        .collect();
    let least = times.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let most = times.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    if most.1.max(FLOOR_S) > FACTOR * least.1.max(FLOOR_S) {
        Some(WorkDiffers { least, most })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_record::{example_record, Metric, Outcome};

    fn run(rep: u32, user: f64, sys: f64) -> RunRecord {
        let mut r = example_record("make", "A", rep, 1.0);
        r.metrics.insert("user_s".into(), Metric::seconds(user));
        r.metrics.insert("sys_s".into(), Metric::seconds(sys));
        r
    }

    #[test]
    fn a_build_that_did_nothing_the_second_time() {
        let rs = [run(1, 0.2, 0.03), run(2, 0.0, 0.0), run(3, 0.001, 0.0)];
        let refs: Vec<&RunRecord> = rs.iter().collect();
        let w = check(&refs).expect("an order of magnitude apart");
        assert_eq!(w.least, (2, 0.0));
        assert_eq!(w.most.0, 1);
        assert_eq!(
            w.text(),
            "CPU time differs more than 10x between runs (run 2: 0.00 s, run 1: 0.23 s): did every run do the same work?"
        );
    }

    #[test]
    fn alike_runs_and_next_to_nothing_pass() {
        for rs in [
            vec![run(1, 10.0, 1.0), run(2, 9.0, 0.5), run(3, 12.0, 1.0)],
            // Both under the floor: the same nothing.
            vec![run(1, 0.0, 0.0), run(2, 0.009, 0.0)],
            // Exactly 10x is not more than 10x.
            vec![run(1, 0.1, 0.0), run(2, 1.0, 0.0)],
            vec![run(1, 5.0, 0.0)],
            vec![],
        ] {
            let refs: Vec<&RunRecord> = rs.iter().collect();
            assert_eq!(
                check(&refs),
                None,
                "{:?}",
                refs.iter().map(|r| cpu_s(r)).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn failed_runs_and_runs_without_cpu_time_are_left_out() {
        let mut failed = run(2, 0.0, 0.0);
        failed.outcome = Outcome::failed("exit 2");
        let mut unknown = run(3, 0.0, 0.0);
        unknown.metrics.clear();
        let rs = [run(1, 5.0, 0.0), failed, unknown, run(4, 4.0, 0.0)];
        let refs: Vec<&RunRecord> = rs.iter().collect();
        assert_eq!(check(&refs), None);
        assert_eq!(cpu_s(&rs[2]), None);
    }
}

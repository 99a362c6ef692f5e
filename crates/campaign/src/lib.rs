//! # numalab-campaign: a matrix declared once, run unattended, resumed
//!
//! Nobody runs a benchmark once. A kernel A/B is two kernels x a few
//! benchmarks x several repetitions; a simulator study is a parameter
//! sweep over machines and seeds. A campaign is that matrix written once,
//! in a plan file ([`plan`]), and run by the same runner as `numalab run`
//! (numalab-runner): a campaign is a list of the runner's configurations
//! and an order of its steps, nothing more.
//!
//! - **Cells.** A cell is one repetition of one case under one
//!   configuration. Its key is a hash of what it means (the
//!   configuration, the resolved case, the repetition), so the same cell
//!   has the same key in every run of the plan, on every machine.
//! - **Sizes pinned once.** A benchmark's machine-scaled defaults (loops,
//!   bytes, threads) are resolved once, on the first configuration of each
//!   machine (this machine, a guest shape, a simulated machine), and
//!   written beside the results ([`state::Lock`]). Every configuration of
//!   that machine runs the pinned case: two guest kernels, or two sysctls,
//!   are always compared on identical work, and a resumed campaign does
//!   not re-measure its way to other sizes.
//! - **Resumable.** Records are the only state of progress: a cell is
//!   done when a successful record with its key and the plan's hash is in
//!   the results directory. Running the plan again runs only cells that
//!   are missing or failed, and says so. The plan's hash covers everything
//!   that gives a cell its meaning (benchmarks, configurations, warm-ups,
//!   interval, what is traced; not `runs`, so a campaign can be
//!   extended); a results
//!   directory holding records of another hash is refused, never mixed.
//! - **Order.** Interleaved randomised blocks by default: repetition r of
//!   every cell before repetition r + 1 of any, configurations and cases
//!   shuffled within a block by a seeded generator (the seed is recorded).
//!   Slow drift then spreads over every configuration instead of biasing
//!   the last one. The order of the full plan is fixed by the seed; a
//!   resumed run keeps it, skipping what is done.
//! - **Backends.** Each configuration runs on this machine, in a guest or
//!   in the simulator; [`local::Pool`] starts the backend a configuration
//!   needs and stops the previous one, so one guest is up at a time and
//!   two labels of one guest shape and kernel share a boot.
//! - **Beyond one machine: Slurm.** numalab does not schedule. `--executor
//!   slurm` submits a job array per placement ([`slurm`]); each array task
//!   runs `numalab campaign run-cell PLAN --cell KEY` and writes its record
//!   into the shared results directory. Status reads the records and
//!   Slurm's own view (squeue, sacct or scontrol); a resubmission runs only
//!   what is neither done nor queued.

#![forbid(unsafe_code)]

pub mod local;
pub mod plan;
pub mod slurm;
pub mod state;

pub use plan::{Order, Plan};
pub use state::{Campaign, Cell, CellState, Lock};

use std::path::PathBuf;

/// Why a campaign cannot go on: one line naming what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// The plan file: `path:line: what`.
    #[error("{0}")]
    Plan(String),
    /// The results directory or its state.
    #[error("{0}")]
    Results(String),
    /// A file or directory (the plan, the results directory, its state)
    /// that could not be read, written or made absolute: `path: why`.
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Runner(#[from] numalab_runner::RunnerError),
    #[error("slurm: {0}")]
    Slurm(String),
    /// `sbatch` of configuration `label` could not be started or failed.
    #[error("slurm: sbatch of {label:?}: {source}")]
    Sbatch {
        label: String,
        source: slurm::CommandError,
    },
    /// `what` (the results directory or one of its cells) is held by
    /// another numalab, `pid` when it wrote one.
    #[error(
        "{what} is in use by {} (a second numalab would run its cells twice); wait for it, or stop it",
        holder(*.pid)
    )]
    Busy { what: String, pid: Option<u32> },
    #[error("{0}")]
    Other(String),
}

impl CampaignError {
    /// An io error about `path`.
    pub fn io(path: &std::path::Path) -> impl Fn(std::io::Error) -> CampaignError + '_ {
        move |source| CampaignError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Who holds a lock, as [`CampaignError::Busy`] says it.
fn holder(pid: Option<u32>) -> String {
    pid.map_or("another numalab".to_string(), |p| {
        format!("numalab (PID {p})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_and_busy_errors_say_what_they_said_as_text() {
        let e = CampaignError::io(std::path::Path::new("r/x.json"))(std::io::Error::from(
            std::io::ErrorKind::NotFound,
        ));
        assert_eq!(e.to_string(), "r/x.json: entity not found");
        assert!(std::error::Error::source(&e).is_some());
        let busy = |pid| CampaignError::Busy {
            what: "results directory r".into(),
            pid,
        };
        assert_eq!(
            busy(Some(42)).to_string(),
            "results directory r is in use by numalab (PID 42) (a second numalab would run its cells twice); wait for it, or stop it"
        );
        assert!(busy(None)
            .to_string()
            .starts_with("results directory r is in use by another numalab ("));
    }
}

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

/// Why a campaign cannot go on: one line naming what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// The plan file: `path:line: what`.
    #[error("{0}")]
    Plan(String),
    /// The results directory or its state.
    #[error("{0}")]
    Results(String),
    #[error(transparent)]
    Runner(#[from] numalab_runner::RunnerError),
    #[error("slurm: {0}")]
    Slurm(String),
    /// The results directory or a cell is held by another numalab.
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    Other(String),
}

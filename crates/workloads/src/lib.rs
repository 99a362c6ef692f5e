//! # numalab-workloads: the seeds' benchmarks, run for real
//!
//! Each benchmark runs its tasks as child processes of numalab (the
//! numalab binary re-executed with a hidden `__task` subcommand), so the
//! kernel schedules them exactly as it would the original programs, and
//! numalab can account every task's CPU time with `wait4`, watch where it
//! runs and where its pages are, and kill it if the user interrupts.
//! [`command`] is the exception: it runs the user's program as it is (a
//! configure script, say), in its own process group, and times the tree.
//!
//! A run is only a result if the work was done: every task must exit 0 and
//! report that it completed all its passes or iterations. Anything else
//! makes the run's record `failed` with the reason, and the command exits
//! non-zero (mmtests once ran a benchmark that did no work for four years
//! because nothing checked).
//!
//! Sizes scale with the machine ([`sizing`]): big enough to be memory
//! bound given the LLC, small enough for the memory that is free, and an
//! explicit size that cannot fit is refused before anything is allocated.

pub mod autonuma;
pub mod autonuma_run;
pub mod autonuma_task;
pub mod command;
pub mod hackbench;
pub mod interrupt;
pub mod numa_test;
pub mod observe;
pub mod pace;
pub mod placement_run;
pub mod randupdt;
pub mod run;
pub mod sizing;

pub use interrupt::{Interrupt, Interrupted};

/// Dispatch the hidden subcommands numalab re-executes itself with.
/// Returns the process exit code.
pub fn internal_main(args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        Some("__task") => match args.get(1).map(String::as_str) {
            Some("randupdt") => randupdt::task_main(&args[2..]),
            Some("autonuma") => autonuma_task::task_main(&args[2..]),
            Some("hold") => autonuma_task::hold_main(&args[2..]),
            Some("spin") => placement_run::spin_main(&args[2..]),
            other => {
                eprintln!("numalab: internal: unknown task {other:?}");
                2
            }
        },
        Some("__hackbench") => hackbench::hackbench_main(&args[1..]),
        other => {
            eprintln!("numalab: internal: unknown entry {other:?}");
            2
        }
    }
}

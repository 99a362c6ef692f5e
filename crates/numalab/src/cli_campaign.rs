//! `numalab campaign run|status|run-cell PLAN`: glue between the command
//! line and numalab-campaign.

use anyhow::{bail, Context, Result};
use numalab_campaign::local::{self, Counts, Pool};
use numalab_campaign::slurm::{self, SubmitOptions, TaskState};
use numalab_campaign::{plan, Campaign, CellState};
use numalab_runner::{Interrupt, Output};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    after_help = "A plan (TOML) lists benchmarks, configurations and repetitions; see \
                  examples/campaigns/ and docs/campaigns.md. Running a plan again runs only \
                  the cells that are missing or failed."
)]
pub struct CampaignArgs {
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Run every cell of a plan not done yet, here or as a Slurm job array
    Run(RunArgs),
    /// Done, failed, pending and missing cells of a plan
    Status(StatusArgs),
    /// Run one cell (what a Slurm array task runs)
    #[command(name = "run-cell")]
    RunCell(CellArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// The plan file
    plan: PathBuf,
    /// Where the cells run: here, one after another, or as Slurm job
    /// arrays (sbatch; one per configuration)
    #[arg(long, value_enum, default_value_t = Executor::Local)]
    executor: Executor,
    /// Slurm partition for every array (default: the plan's, else Slurm's default)
    #[arg(long, value_name = "P", requires_if("slurm", "executor"))]
    partition: Option<String>,
    /// At most N cells of a configuration at once on Slurm (the array's
    /// %N throttle: N nodes with exclusive cells)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    nodes_per_config: Option<u32>,
    /// The numalab Slurm's tasks run, on a path every node sees (default: this one)
    #[arg(long, value_name = "PATH")]
    numalab: Option<PathBuf>,
    /// One line per run and the summary: no notes or progress bar
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    quiet: bool,
    /// Also print each record's path as it is written
    #[arg(long, short = 'v')]
    verbose: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Executor {
    Local,
    Slurm,
}

#[derive(clap::Args)]
struct StatusArgs {
    /// The plan file
    plan: PathBuf,
    /// List every cell, not only those not done
    #[arg(long)]
    cells: bool,
}

#[derive(clap::Args)]
struct CellArgs {
    /// The plan file
    plan: PathBuf,
    /// The cell's key (as `campaign status --cells` lists them)
    #[arg(long, value_name = "KEY")]
    cell: String,
    /// One line per run: no notes or progress bar
    #[arg(long, short = 'q')]
    quiet: bool,
}

pub fn run(a: CampaignArgs) -> Result<ExitCode> {
    match a.cmd {
        Sub::Run(r) => run_plan(r),
        Sub::Status(s) => status(s),
        Sub::RunCell(c) => run_cell(c),
    }
}

fn output(quiet: bool, verbose: bool) -> Output {
    match (quiet, verbose) {
        (true, _) => Output::Quiet,
        (false, true) => Output::Verbose,
        _ => Output::Normal,
    }
}

fn say(text: &str) {
    for l in numalab_report::table::wrap(&format!("numalab: {text}"), 80) {
        numalab_linux::errln!("{l}");
    }
}

/// `numalab campaign run PLAN` here, as `numalab validate` runs its plan
/// (which prints a table of its own instead of the campaign's summary).
pub(crate) fn run_plan_here(plan: PathBuf, quiet: bool) -> Result<ExitCode> {
    run_plan_with(
        RunArgs {
            plan,
            executor: Executor::Local,
            partition: None,
            nodes_per_config: None,
            numalab: None,
            quiet,
            verbose: false,
        },
        false,
    )
}

fn run_plan(a: RunArgs) -> Result<ExitCode> {
    run_plan_with(a, true)
}

/// `campaign run`: checks the plan and its results directory, holds it,
/// pins the sizes, then submits the cells not done to Slurm or runs them
/// here; with `summarise`, the campaign's tables after.
fn run_plan_with(a: RunArgs, summarise: bool) -> Result<ExitCode> {
    let out = output(a.quiet, a.verbose);
    let plan = plan::load(&a.plan)?;
    if a.executor == Executor::Slurm {
        slurm::require("sbatch")?;
        slurm::require("squeue")?;
    }
    local::preflight(&plan, a.executor == Executor::Local)?;
    // Records of anything else in the results directory: refused before
    // anything runs or is written (the lock is checked by pin).
    numalab_campaign::Lock::read(&plan)?;
    numalab_campaign::state::scan(&plan, |_| true)?;
    // One `campaign run` on a results directory at a time; Slurm's
    // run-cells share it with the submission that made them.
    let mode = match a.executor {
        Executor::Local => numalab_linux::lock::Mode::Exclusive,
        Executor::Slurm => numalab_linux::lock::Mode::Shared,
    };
    let _held = numalab_campaign::state::hold(&plan.results, mode, None, &mut |l| say(l))?;
    let interrupt = Interrupt::install().context("installing the Ctrl-C handler")?;
    // The backend pinning started (a guest, for a guest configuration)
    // stays up for the runs when the first cell to run needs the same one:
    // one boot fewer per guest campaign.
    let mut pool = Pool::new(&plan, out);
    let lock = local::pin(&plan, &mut pool, out)?;
    let c = Campaign::new(plan.clone(), lock)?;
    if out != Output::Quiet {
        for w in c.same_work() {
            say(&w);
        }
    }
    let scan = c.scan()?;
    let todo = local::not_done(&c, &scan);
    if a.executor == Executor::Slurm {
        drop(pool);
        return submit_to_slurm(&c, &scan, todo, a);
    }
    let (scan, interrupted) = run_here(&c, scan, &todo, out, &interrupt, pool)?;
    finish_here(&c, &scan, interrupted, summarise, &a.plan)
}

/// Submits the cells `todo` not already queued in Slurm as job arrays,
/// saying how many cells are in which state first.
fn submit_to_slurm(
    c: &Campaign,
    scan: &numalab_campaign::state::Scan,
    todo: BTreeSet<usize>,
    a: RunArgs,
) -> Result<ExitCode> {
    let n = Counts::of(c, scan);
    let total = c.cells.len();
    let view = slurm::view(&c.plan.results)?;
    let queued: BTreeSet<usize> = todo
        .iter()
        .copied()
        .filter(|&i| {
            view.cells
                .get(&c.cells[i].key)
                .is_some_and(|(_, s)| s.is_queued())
        })
        .collect();
    let todo: BTreeSet<usize> = todo.difference(&queued).copied().collect();
    say(&format!(
        "campaign {}: {total} cells: {} done, {} failed, {} queued in Slurm, {} to submit",
        c.plan.name,
        n.done,
        n.failed,
        queued.len(),
        todo.len()
    ));
    if todo.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let exe = match a.numalab {
        Some(p) => p,
        None => std::env::current_exe().context("locating the numalab executable")?,
    };
    let opts = SubmitOptions {
        partition: a.partition,
        nodes_per_config: a.nodes_per_config,
        numalab: std::path::absolute(&exe).context("the numalab path")?,
    };
    for s in slurm::submit(c, &todo, &opts)? {
        numalab_linux::outln!(
            "submitted job array {} ({:?}): {} cell(s), tasks 0-{}",
            s.job_id,
            s.config,
            s.cells.len(),
            s.cells.len() - 1
        );
    }
    numalab_linux::outln!(
        "progress: numalab campaign status {}",
        numalab_linux::shell::quote(&a.plan.to_string_lossy())
    );
    Ok(ExitCode::SUCCESS)
}

/// After the cells ran here: the campaign's tables (with `summarise`),
/// its counts, and the status: 130 when interrupted, an error when cells
/// failed.
fn finish_here(
    c: &Campaign,
    scan: &numalab_campaign::state::Scan,
    interrupted: bool,
    summarise: bool,
    plan_path: &std::path::Path,
) -> Result<ExitCode> {
    let total = c.cells.len();
    let after = Counts::of(c, scan);
    let records: Vec<&numalab_record::RunRecord> = scan.records.iter().map(|(_, r)| r).collect();
    if !records.is_empty() && summarise {
        numalab_linux::outln!();
        crate::print_stdout(&summary(c, scan)?)?;
        numalab_linux::outln!("records: {}", c.plan.results.display());
    }
    numalab_linux::outln!(
        "campaign {}: {} of {total} cells done, {} failed, {} missing",
        c.plan.name,
        after.done,
        after.failed,
        after.missing
    );
    if interrupted {
        numalab_linux::errln!(
            "numalab: run the plan again to finish the {} cell(s) not done",
            after.failed + after.missing
        );
        return Ok(ExitCode::from(130));
    }
    if after.failed > 0 {
        bail!(
            "{} cell(s) failed (numalab campaign status {} names them); running the plan again retries them",
            after.failed,
            plan_path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Run the cells `todo` of `c` here on `pool`'s backends (one already up
/// is used when the first cell needs it, and stopped in any case at the
/// end), saying what runs and what was done before; `scan` gains their
/// records. The bool: interrupted.
pub fn run_here(
    c: &Campaign,
    scan: numalab_campaign::state::Scan,
    todo: &BTreeSet<usize>,
    out: Output,
    interrupt: &Interrupt,
    mut pool: Pool,
) -> Result<(numalab_campaign::state::Scan, bool)> {
    let total = c.cells.len();
    let n = Counts::of(c, &scan);
    if todo.is_empty() {
        say(&format!(
            "campaign {}: all {total} cells done; nothing to run",
            c.plan.name
        ));
    } else {
        let resumed = if n.done + n.failed > 0 {
            format!(
                " ({} done before{})",
                n.done,
                if n.failed > 0 {
                    format!("; {} failed before, run again", n.failed)
                } else {
                    String::new()
                }
            )
        } else {
            String::new()
        };
        say(&format!(
            "campaign {}: running {} of {total} cells{resumed}; order {}, seed {}; records in {}",
            c.plan.name,
            todo.len(),
            match c.plan.order {
                numalab_campaign::Order::Interleaved => "interleaved",
                numalab_campaign::Order::Sequential => "sequential",
            },
            c.plan.seed,
            c.plan.results.display()
        ));
    }
    let mut ran = None;
    let mut scan = scan;
    if todo.is_empty() {
        pool.stop();
    } else {
        let r = local::run_cells(c, todo, &mut pool, out, interrupt)?;
        for (path, rec) in &r.outcome.records {
            scan.add(path.clone(), rec.clone());
        }
        ran = Some(r);
    }
    Ok((scan, ran.as_ref().is_some_and(|r| r.outcome.interrupted)))
}

/// The campaign's tables: per machine, `compare` of its configurations
/// against its first, or the summary of a lone configuration.
fn summary(c: &Campaign, scan: &numalab_campaign::state::Scan) -> Result<String> {
    let mut out = String::new();
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for x in &c.plan.configs {
        let g = x.machine_group();
        match groups.iter_mut().find(|(m, _)| *m == g) {
            Some((_, labels)) => labels.push(x.label.clone()),
            None => groups.push((g, vec![x.label.clone()])),
        }
    }
    for (machine, labels) in &groups {
        let records: Vec<(PathBuf, numalab_record::RunRecord)> = scan
            .records
            .iter()
            .filter(|(_, r)| labels.contains(&r.label))
            .cloned()
            .collect();
        let present: BTreeSet<String> = records.iter().map(|(_, r)| r.label.clone()).collect();
        if records.is_empty() {
            continue;
        }
        if groups.len() > 1 {
            out.push_str(&format!("=== {machine}\n\n"));
        }
        if present.len() < 2 {
            let refs: Vec<&numalab_record::RunRecord> = records.iter().map(|(_, r)| r).collect();
            out.push_str(&numalab_report::summary::invocation(&refs));
        } else {
            let ds = numalab_report::Dataset::new(records);
            let opts = numalab_report::CompareOptions {
                baseline: labels.iter().find(|l| present.contains(*l)).cloned(),
                hide_zero_metrics: true,
                ..Default::default()
            };
            let report = numalab_report::compare(&ds, &opts)?;
            out.push_str(&numalab_report::compare_render::to_text(
                &report,
                numalab_report::compare_render::Layout::Compact,
            ));
        }
        out.push('\n');
    }
    Ok(out)
}

fn load_pinned(path: &std::path::Path) -> Result<Option<Campaign>> {
    let plan = plan::load(path)?;
    match numalab_campaign::Lock::read(&plan)? {
        Some(lock) => Ok(Some(Campaign::new(plan, lock)?)),
        None => Ok(None),
    }
}

fn status(a: StatusArgs) -> Result<ExitCode> {
    let Some(c) = load_pinned(&a.plan)? else {
        return not_started(&a.plan);
    };
    let scan = c.scan()?;
    let view = slurm_view(&c)?;
    for u in &scan.unreadable {
        numalab_linux::errln!("numalab: warning: {u}");
    }
    let mut text = String::new();
    let mut n = Tally::default();
    for i in c.order() {
        let cell = &c.cells[i];
        let slurm_state = view.as_ref().and_then(|v| v.cells.get(&cell.key));
        let (word, more) = n.cell(scan.state(&cell.key), slurm_state);
        if a.cells || word != "done" {
            let line = format!("{:<8} {}  {}", word, cell.key, c.cell_title(cell));
            let line = if more.is_empty() {
                line
            } else {
                format!("{line}: {more}")
            };
            for l in numalab_report::table::wrap(&line, 80) {
                text.push_str(&l);
                text.push('\n');
            }
        }
    }
    let total = c.cells.len();
    text.push_str(&format!(
        "campaign {}: {} of {total} done, {} failed, {} queued, {} missing\n",
        c.plan.name, n.done, n.failed, n.queued, n.missing
    ));
    if let Some(v) = &view {
        text.push_str(&format!("slurm: ended tasks from {}\n", v.accounting));
    }
    crate::print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The status of a plan nothing has run of yet (no pinned sizes): what it
/// would run.
fn not_started(path: &std::path::Path) -> Result<ExitCode> {
    let plan = plan::load(path)?;
    let line = format!(
        "campaign {}: nothing has run yet (no pinned sizes in {}); {} benchmark(s) under {} configuration(s), {} pair(s), x {} run(s)",
        plan.name,
        plan.results.display(),
        plan.benchmarks.len(),
        plan.configs.len(),
        plan.benchmarks
            .iter()
            .map(|b| plan.configs.iter().filter(|c| b.runs_under(&c.label)).count())
            .sum::<usize>(),
        plan.runs
    );
    crate::print_stdout(&(numalab_report::table::wrap(&line, 80).join("\n") + "\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// Slurm's view of the campaign's cells when it was ever submitted there;
/// a view that cannot be had is a warning and no view.
fn slurm_view(c: &Campaign) -> Result<Option<slurm::View>> {
    Ok(if slurm::submissions(&c.plan.results)?.is_empty() {
        None
    } else {
        match slurm::view(&c.plan.results) {
            Ok(v) => Some(v),
            Err(e) => {
                numalab_linux::errln!("numalab: warning: {e}");
                None
            }
        }
    })
}

/// The cells of a status by what became of them.
#[derive(Default)]
struct Tally {
    done: usize,
    failed: usize,
    queued: usize,
    missing: usize,
}

impl Tally {
    /// A cell's word (done, failed, pending, running, missing) and what
    /// more there is to say, from its records and Slurm's state of its
    /// task; counted.
    fn cell(
        &mut self,
        state: CellState,
        slurm_state: Option<&(String, TaskState)>,
    ) -> (&'static str, String) {
        match state {
            CellState::Done(_) => {
                self.done += 1;
                ("done", String::new())
            }
            CellState::Failed(why) => {
                self.failed += 1;
                ("failed", why)
            }
            CellState::Missing => match slurm_state {
                Some((task, TaskState::Queued { state, reason })) => {
                    self.queued += 1;
                    let r = if reason.is_empty() || reason == "None" {
                        String::new()
                    } else {
                        format!(" ({reason})")
                    };
                    (
                        if state == "RUNNING" {
                            "running"
                        } else {
                            "pending"
                        },
                        format!("slurm {task} {state}{r}"),
                    )
                }
                Some((task, TaskState::Ended(state))) => {
                    self.failed += 1;
                    ("failed", format!("slurm {task} {state}, no record"))
                }
                Some((task, TaskState::Unknown)) => {
                    self.missing += 1;
                    ("missing", format!("slurm {task}: no longer known"))
                }
                None => {
                    self.missing += 1;
                    ("missing", String::new())
                }
            },
        }
    }
}

fn run_cell(a: CellArgs) -> Result<ExitCode> {
    let out = if a.quiet {
        Output::Quiet
    } else {
        Output::Normal
    };
    let Some(c) = load_pinned(&a.plan)? else {
        bail!(
            "{}: no pinned sizes yet: `numalab campaign run` pins them before it runs or submits cells",
            a.plan.display()
        );
    };
    let Some(i) = c.cells.iter().position(|x| x.key == a.cell) else {
        bail!(
            "{}: no cell {:?} (numalab campaign status --cells lists them)",
            a.plan.display(),
            a.cell
        );
    };
    let _held = numalab_campaign::state::hold(
        &c.plan.results,
        numalab_linux::lock::Mode::Shared,
        Some(&a.cell),
        &mut |l| say(l),
    )?;
    let scan = c.scan()?;
    if let CellState::Done(p) = scan.state(&a.cell) {
        numalab_linux::outln!(
            "cell {} ({}) is done already: {}",
            a.cell,
            c.cell_title(&c.cells[i]),
            p.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let interrupt = Interrupt::install().context("installing the Ctrl-C handler")?;
    let mut pool = Pool::new(&c.plan, out);
    let ran = local::run_cells(&c, &BTreeSet::from([i]), &mut pool, out, &interrupt)?;
    if ran.outcome.interrupted {
        return Ok(ExitCode::from(130));
    }
    if let Some(f) = ran.outcome.failed().first() {
        bail!(
            "cell {} failed: {}",
            a.cell,
            f.outcome.reason.as_deref().unwrap_or("unknown")
        );
    }
    if ran.outcome.records.is_empty() {
        bail!("cell {} wrote no record", a.cell);
    }
    Ok(ExitCode::SUCCESS)
}

//! Running a campaign's cells here: the backends of its configurations
//! ([`Pool`], each built by numalab-backends from the configuration's
//! options, as the CLI builds its own), pinning the sizes, and handing
//! the steps to the runner.

use crate::plan::{ConfigSpec, GuestSpec, Plan, SimSpec, Target};
use crate::state::{Campaign, CellState, Lock, LockGroup, LockInstance, Scan};
use crate::CampaignError;
use numalab_backends::{BackendOptions, SimOptions, StartError};
use numalab_runner::{Backend, Backends, Interrupt, Output, RunnerError};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A status line on standard error, within 80 columns.
fn say(text: &str) {
    for l in numalab_report::table::wrap(&format!("numalab: {text}"), 80) {
        numalab_linux::errln!("{l}");
    }
}

/// The backend each configuration needs, started when first asked for;
/// asking for another identity stops the one before (one guest up at a
/// time).
pub struct Pool<'a> {
    configs: &'a [ConfigSpec],
    results: PathBuf,
    interval: numalab_runner::Interval,
    output: Output,
    current: Option<(String, Box<dyn Backend>)>,
    /// Backends already described (each once).
    described: std::collections::BTreeSet<String>,
}

impl<'a> Pool<'a> {
    pub fn new(plan: &'a Plan, output: Output) -> Pool<'a> {
        Pool {
            configs: &plan.configs,
            results: plan.results.clone(),
            interval: plan.interval,
            output,
            current: None,
            described: Default::default(),
        }
    }

    fn start(&mut self, c: &ConfigSpec) -> Result<Box<dyn Backend>, StartError> {
        let opts = match &c.target {
            Target::Host => BackendOptions::Host,
            Target::Sim(s) => BackendOptions::Sim(sim_options(s)),
            Target::Guest(g) => BackendOptions::Guest(Box::new(vm_options(g, &self.results))),
        };
        let b = numalab_backends::start(&opts, &self.results, self.interval)?;
        // `Progress` (numalab reproduce) shows progress and failures only.
        if !matches!(self.output, Output::Quiet | Output::Progress)
            && self.described.insert(c.backend_identity())
        {
            say(&format!("{}: on {}", c.label, b.describe()));
        }
        Ok(b)
    }

    /// Stop the current backend (a guest powers off).
    pub fn stop(&mut self) {
        self.current = None;
    }
}

impl Backends for Pool<'_> {
    fn get(&mut self, config: usize) -> Result<&mut dyn Backend, RunnerError> {
        let c = &self.configs[config];
        let id = c.backend_identity();
        if self.current.as_ref().map(|(i, _)| i) != Some(&id) {
            self.current = None;
            let b = self.start(c).map_err(|err| RunnerError::Backend {
                what: format!("starting the backend of {:?}", c.label),
                err: err.to_string(),
            })?;
            self.current = Some((id, b));
        }
        Ok(self.current.as_mut().expect("just set").1.as_mut())
    }
}

/// `numalab sim`'s options for a simulated configuration.
pub fn sim_options(s: &SimSpec) -> SimOptions {
    SimOptions {
        machine: s.machine.clone(),
        scheduler: s.scheduler.clone(),
        balancer: s.balancer.clone(),
        seed: s.seed,
        tick_us: s.tick_us,
        max_sim_s: s.max_sim_s,
        ..SimOptions::new(&s.machine)
    }
}

/// `numalab vm`'s options for a guest configuration (its console to a
/// log under the results directory).
pub fn vm_options(g: &GuestSpec, results: &Path) -> numalab_guest::VmOptions {
    use numalab_guest::{AccelChoice, Rootfs};
    numalab_guest::VmOptions {
        spec: numalab_guest::VmSpec::parse(&crate::plan::guest_spec_input(g))
            .expect("checked when the plan was read"),
        kernel: g.kernel.clone(),
        sysctls: Vec::new(),
        // The names were checked when the plan was read.
        accel: (g.accel.as_deref())
            .and_then(AccelChoice::from_name)
            .unwrap_or(AccelChoice::Auto),
        timeout: Duration::from_secs(g.timeout_s.unwrap_or(24 * 3600)),
        quiet: true,
        verbose: false,
        results: Some(results.to_path_buf()),
        command: Vec::new(),
        append: g.append.clone().unwrap_or_default(),
        exe: None,
        rootfs: (g.rootfs.as_deref())
            .and_then(Rootfs::from_name)
            .unwrap_or(Rootfs::Auto),
        modules: g.modules.clone(),
        shares: g.shares.clone(),
        share_passthrough: false,
        cwd: g.cwd.clone(),
        keep_workdir: false,
        shell: false,
    }
}

/// What this machine must have for the plan's configurations, checked
/// before anything runs: QEMU and the kernel images for guests; with
/// `here`, the settings of configurations that run on this machine.
pub fn preflight(plan: &Plan, here: bool) -> Result<(), CampaignError> {
    for c in &plan.configs {
        if here && matches!(c.target, Target::Host) {
            let conf = c
                .configuration()
                .map_err(|e| CampaignError::Other(e.to_string()))?;
            numalab_runner::check_config(&conf, &numalab_runner::SettingsSite::ThisMachine)
                .map_err(|e| {
                    CampaignError::Plan(format!(
                        "{}:{}: configuration {:?}: {e}",
                        plan.path.display(),
                        c.line,
                        c.label
                    ))
                })?;
        }
        if let Target::Guest(g) = &c.target {
            numalab_guest::qemu::find_qemu().map_err(|e| {
                CampaignError::Plan(format!(
                    "{}:{}: configuration {:?} needs a guest: {e}",
                    plan.path.display(),
                    c.line,
                    c.label
                ))
            })?;
            let named = g
                .kernel
                .as_deref()
                .and_then(|k| k.to_str())
                .and_then(numalab_guest::named::lookup);
            if let (Some(k), None) = (&g.kernel, named) {
                std::fs::File::open(k).map_err(|e| {
                    CampaignError::Plan(format!(
                        "{}:{}: configuration {:?}: kernel {}: {e}",
                        plan.path.display(),
                        c.line,
                        c.label,
                        k.display()
                    ))
                })?;
            }
        }
    }
    Ok(())
}

/// The plan's lock: read back, or resolved now (every benchmark on the
/// first configuration of each machine) and written. A machine of the
/// same shape (topology) as one already sized, a simulated machine of
/// this machine's calibrated file say, runs the cases sized there: the
/// same work lands in one table whatever the backend.
pub fn pin(plan: &Plan, pool: &mut Pool, output: Output) -> Result<Lock, CampaignError> {
    if let Some(lock) = Lock::read(plan)? {
        return Ok(lock);
    }
    numalab_record::ensure_writable_dir(&plan.results).map_err(|e| {
        CampaignError::Results(format!("results directory {}: {e}", plan.results.display()))
    })?;
    let mut groups: Vec<LockGroup> = Vec::new();
    // Each group's machine, whose shape a later one may share
    // (numalab_runner::sizes::same_shape).
    let mut shapes: Vec<numalab_topology::MachineInfo> = Vec::new();
    let mut said = BTreeSet::new();
    for (ci, c) in plan.configs.iter().enumerate() {
        let machine = c.machine_group();
        if groups.iter().any(|g| g.machine == machine) {
            continue;
        }
        let backend = pool.get(ci)?;
        let shape = backend.machine().clone();
        let twin = shapes
            .iter()
            .position(|s| numalab_runner::sizes::same_shape(s, &shape))
            .map(|g| &groups[g]);
        let twin_note = twin.map(same_shape).unwrap_or_default();
        if let (Some(t), false) = (twin, output == Output::Quiet) {
            say(&format!("{machine}: {}", same_shape(t)));
        }
        let mut instances = Vec::new();
        for (bi, b) in plan.benchmarks.iter().enumerate() {
            // Not run under any configuration of this machine (`configs`):
            // nothing to size here.
            if !plan
                .configs
                .iter()
                .any(|x| x.machine_group() == machine && b.runs_under(&x.label))
            {
                instances.push(LockInstance {
                    instance: b.title.clone(),
                    cases: Vec::new(),
                    notes: vec![format!("not run on {machine}")],
                    warnings: Vec::new(),
                });
                continue;
            }
            let sized = twin
                .map(|t| (t, &t.instances[bi]))
                .filter(|(_, i)| !i.cases.is_empty())
                .map(|(t, i)| {
                    let mut i = i.clone();
                    i.notes.push(same_shape(t));
                    i
                });
            let here = Here {
                plan,
                backend,
                machine: &machine,
                label: &c.label,
            };
            let i = here.instance(b, sized)?;
            if output != Output::Quiet {
                for n in i
                    .notes
                    .iter()
                    .filter(|n| twin.is_none() || **n != twin_note)
                {
                    if said.insert(format!("{}: {n}", b.name)) {
                        say(&format!("{machine}: {}: {n}", b.name));
                    }
                }
                for w in &i.warnings {
                    if said.insert(format!("{}: warning: {w}", b.name)) {
                        say(&format!("{machine}: {}: warning: {w}", b.name));
                    }
                }
            }
            instances.push(i);
        }
        let nodes = Some(backend.machine().topology.nodes.len());
        shapes.push(shape);
        groups.push(LockGroup {
            machine,
            resolved_on: c.label.clone(),
            nodes,
            instances,
        });
    }
    let lock = Lock {
        format: 1,
        name: plan.name.clone(),
        plan_hash: plan.hash.clone(),
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        numalab_version: numalab_record::VERSION.to_string(),
        groups,
    };
    lock.write(&plan.results)?;
    Ok(lock)
}

/// The note of cases taken from `twin`, a machine of the same shape
/// sized before (said once per machine, kept with every instance).
fn same_shape(twin: &LockGroup) -> String {
    format!(
        "sizes as resolved on {} ({}), a machine of the same shape",
        twin.machine, twin.resolved_on
    )
}

/// Where a benchmark is being sized: the plan, the backend of the
/// machine group's first configuration, the group and that label.
struct Here<'a> {
    plan: &'a Plan,
    backend: &'a dyn Backend,
    machine: &'a str,
    label: &'a str,
}

impl Here<'_> {
    /// Benchmark `b`'s cases here: `sized` (a same-shape machine's) or
    /// resolved on this backend; refused when this backend cannot run
    /// one of them.
    fn instance(
        &self,
        b: &crate::plan::Instance,
        sized: Option<LockInstance>,
    ) -> Result<LockInstance, CampaignError> {
        let i = match sized {
            Some(i) => i,
            None => {
                let r = b.spec.resolve(self.backend).map_err(|e| {
                    CampaignError::Plan(format!(
                        "{}:{}: {} on {}: {e}",
                        self.plan.path.display(),
                        b.line,
                        b.title,
                        self.machine
                    ))
                })?;
                LockInstance {
                    instance: b.title.clone(),
                    cases: r.cases,
                    notes: r.notes,
                    warnings: r.warnings,
                }
            }
        };
        if let Some(why) = i
            .cases
            .iter()
            .find_map(|case| self.backend.unsupported(case))
        {
            return Err(CampaignError::Plan(format!(
                "{}:{}: {} on {:?}: {why}",
                self.plan.path.display(),
                b.line,
                b.title,
                self.label
            )));
        }
        Ok(i)
    }
}

/// The runner's plan for a campaign: every configuration and case.
pub fn runner_plan(c: &Campaign, output: Output) -> Result<numalab_runner::Plan, CampaignError> {
    let configs = c
        .plan
        .configs
        .iter()
        .map(|x| {
            x.configuration().map_err(|e| {
                CampaignError::Plan(format!(
                    "{}:{}: configuration {:?}: {e}",
                    c.plan.path.display(),
                    x.line,
                    x.label
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Settings of this machine are checked where they are applied.
    for (x, conf) in c.plan.configs.iter().zip(&configs) {
        if matches!(x.target, Target::Host) {
            numalab_runner::check_config(conf, &numalab_runner::SettingsSite::ThisMachine)?;
        }
    }
    Ok(numalab_runner::Plan {
        configs,
        cases: c.cases.clone(),
        runs: numalab_runner::Runs::Fixed(c.plan.runs),
        warmup: c.plan.warmup,
        interval: c.plan.interval,
        results: c.plan.results.clone(),
        notes: Vec::new(),
        guard: Some(numalab_linux::knobs::Guard::this_executable()),
        wait: false,
        output,
        trace: false,
    })
}

/// How a local run of cells ended.
pub struct Ran {
    pub outcome: numalab_runner::Outcome,
    /// Cells asked for.
    pub asked: usize,
}

/// Run the cells `todo` (indices into `c.cells`) here, in the campaign's
/// order, through the runner.
pub fn run_cells(
    c: &Campaign,
    todo: &BTreeSet<usize>,
    pool: &mut Pool,
    output: Output,
    interrupt: &Interrupt,
) -> Result<Ran, CampaignError> {
    let plan = runner_plan(c, output)?;
    let steps = c.steps(todo, crate::state::slurm_from_env());
    let outcome = numalab_runner::run_steps(&plan, &steps, pool, interrupt)?;
    pool.stop();
    Ok(Ran {
        outcome,
        asked: todo.len(),
    })
}

/// Counts of a scan over the cells.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub done: usize,
    pub failed: usize,
    pub missing: usize,
}

impl Counts {
    pub fn of(c: &Campaign, scan: &Scan) -> Counts {
        let mut n = Counts::default();
        for cell in &c.cells {
            match scan.state(&cell.key) {
                CellState::Done(_) => n.done += 1,
                CellState::Failed(_) => n.failed += 1,
                CellState::Missing => n.missing += 1,
            }
        }
        n
    }
}

/// The cells that are not done (missing or failed).
pub fn not_done(c: &Campaign, scan: &Scan) -> BTreeSet<usize> {
    c.cells
        .iter()
        .enumerate()
        .filter(|(_, cell)| !matches!(scan.state(&cell.key), CellState::Done(_)))
        .map(|(i, _)| i)
        .collect()
}

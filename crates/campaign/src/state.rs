//! A campaign's state: the pinned sizes ([`Lock`]), its cells and their
//! keys, what the results directory says of each, and the order of the
//! steps still to run.

use crate::plan::{canonical, hash_hex, Order, Plan};
use crate::CampaignError;
use numalab_bench::Case;
use numalab_record::{CampaignTag, RunRecord, SlurmTag};
use numalab_runner::Step;
use rand_core::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The directory under the results directory that holds a campaign's
/// own files (hidden: `compare` reads every `*.json` record elsewhere).
pub const STATE_DIR: &str = ".campaign";
const LOCK_FILE: &str = "plan.lock.json";
const LOCK_FORMAT: u32 = 1;

/// The sizes a plan's benchmarks were resolved to, per machine, pinned
/// for every later run of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    pub format: u32,
    pub name: String,
    pub plan_hash: String,
    pub created_at: String,
    pub numalab_version: String,
    pub groups: Vec<LockGroup>,
}

/// One machine's resolved benchmarks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockGroup {
    /// [`crate::plan::ConfigSpec::machine_group`].
    pub machine: String,
    /// The configuration whose backend resolved them.
    pub resolved_on: String,
    /// Its NUMA nodes, as that backend saw them (absent in locks written
    /// before numalab recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<usize>,
    /// As the plan's benchmarks, in order.
    pub instances: Vec<LockInstance>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockInstance {
    /// The benchmark as the plan gives it.
    pub instance: String,
    pub cases: Vec<Case>,
    /// How the defaults were chosen.
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub warnings: Vec<String>,
}

impl Lock {
    pub fn path(results: &Path) -> PathBuf {
        results.join(STATE_DIR).join(LOCK_FILE)
    }

    /// The lock of `plan` in its results directory, if it was pinned;
    /// an error if it belongs to another plan.
    pub fn read(plan: &Plan) -> Result<Option<Lock>, CampaignError> {
        let path = Lock::path(&plan.results);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(CampaignError::io(&path)(e)),
        };
        let lock: Lock = serde_json::from_str(&text).map_err(|e| {
            CampaignError::Results(format!("{}: not a campaign lock: {e}", path.display()))
        })?;
        if lock.format != LOCK_FORMAT {
            return Err(CampaignError::Results(format!(
                "{}: lock format {} (this numalab reads {LOCK_FORMAT})",
                path.display(),
                lock.format
            )));
        }
        if lock.plan_hash != plan.hash {
            // Pinned for an earlier version of the plan that recorded
            // nothing (it was refused or stopped before a run): nothing to
            // protect, pin again.
            let report = numalab_record::load_paths(std::slice::from_ref(&plan.results));
            if report.records.is_empty() && report.errors.is_empty() {
                return Ok(None);
            }
            return Err(CampaignError::Results(format!(
                "{} holds records of another plan, or of this plan before a change that gives its cells another meaning (plan {:?} hash {}, now {}): use a new results directory",
                plan.results.display(),
                lock.name,
                lock.plan_hash,
                plan.hash
            )));
        }
        Ok(Some(lock))
    }

    /// Write it atomically.
    pub fn write(&self, results: &Path) -> Result<(), CampaignError> {
        let path = Lock::path(results);
        write_json_atomic(&path, self)
    }
}

/// Write `value` as pretty JSON to `path` atomically.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), CampaignError> {
    use std::io::Write;
    let err = CampaignError::io(path);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(&err)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp")
        .tempfile_in(dir)
        .map_err(&err)?;
    let text = serde_json::to_vec_pretty(value)
        .map_err(|e| CampaignError::Results(format!("{}: {e}", path.display())))?;
    tmp.write_all(&text).map_err(&err)?;
    tmp.write_all(b"\n").map_err(&err)?;
    tmp.as_file().sync_all().map_err(&err)?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = tmp
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644));
    }
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// One cell: a repetition of a case under a configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub key: String,
    /// Index into the plan's configurations.
    pub config: usize,
    /// Index into [`Campaign::cases`].
    pub case: usize,
    /// Repetition, from 1.
    pub rep: u32,
    /// Its runs are traced (`trace = true` on its benchmark or its
    /// configuration); not part of its key.
    pub trace: bool,
}

/// A plan with its sizes pinned: every cell known.
pub struct Campaign {
    pub plan: Plan,
    pub lock: Lock,
    /// Every distinct case, in first-use order.
    pub cases: Vec<Case>,
    /// Every cell, in the plan's order (configuration, benchmark, case,
    /// repetition).
    pub cells: Vec<Cell>,
}

impl Campaign {
    /// The cells of `plan` under `lock`.
    pub fn new(plan: Plan, lock: Lock) -> Result<Campaign, CampaignError> {
        let mut cases: Vec<Case> = Vec::new();
        let mut cells = Vec::new();
        // Two benchmarks of the plan resolved to one case on a machine
        // (`bytes = ["1G", "1024M"]`) give one cell, run once
        // ([`Campaign::same_work`] says so).
        let mut keys: BTreeSet<String> = BTreeSet::new();
        for (ci, c) in plan.configs.iter().enumerate() {
            let group = c.machine_group();
            let g = lock
                .groups
                .iter()
                .find(|g| g.machine == group)
                .ok_or_else(|| {
                    CampaignError::Results(format!(
                        "{}: no pinned sizes for {group}",
                        Lock::path(&plan.results).display()
                    ))
                })?;
            if g.instances.len() != plan.benchmarks.len() {
                return Err(CampaignError::Results(format!(
                    "{}: {} benchmarks pinned for {group}, the plan has {}",
                    Lock::path(&plan.results).display(),
                    g.instances.len(),
                    plan.benchmarks.len()
                )));
            }
            let config_hash = canonical(c);
            for (inst, bench) in g.instances.iter().zip(&plan.benchmarks) {
                if !bench.runs_under(&c.label) {
                    continue;
                }
                let trace = c.trace || bench.trace;
                for case in &inst.cases {
                    let k = match cases.iter().position(|x| x == case) {
                        Some(k) => k,
                        None => {
                            cases.push(case.clone());
                            cases.len() - 1
                        }
                    };
                    let case_json = serde_json::to_string(case).expect("a case serialises");
                    for rep in 1..=plan.runs {
                        let key = hash_hex(&format!("{config_hash}\n{case_json}\n{rep}"), 12);
                        if !keys.insert(key.clone()) {
                            continue;
                        }
                        cells.push(Cell {
                            key,
                            config: ci,
                            case: k,
                            rep,
                            trace,
                        });
                    }
                }
            }
        }
        Ok(Campaign {
            plan,
            lock,
            cases,
            cells,
        })
    }

    /// What the plan asks for twice on one machine, one line each, said
    /// before anything runs: configurations that are the same there
    /// (they differ only in their labels, or only in NUMA settings on a
    /// machine of one node: NUMA balancing, `vm.zone_reclaim_mode`, a
    /// simulated balancer), and benchmarks that resolve to the same case
    /// (run once). A warning, not a refusal: two labels of one
    /// configuration are an A/A comparison, whose spread is the noise, and
    /// a plan written for many machines still runs on the others.
    pub fn same_work(&self) -> Vec<String> {
        let mut out = Vec::new();
        let quoted = |v: &[&str]| {
            v.iter()
                .map(|l| format!("{l:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for g in &self.lock.groups {
            let one_node = g.nodes == Some(1);
            let configs: Vec<(usize, &crate::plan::ConfigSpec)> = self
                .plan
                .configs
                .iter()
                .enumerate()
                .filter(|(_, c)| c.machine_group() == g.machine)
                .collect();
            // What it means there, and which benchmarks it runs.
            let meaning = |c: &crate::plan::ConfigSpec, one: bool| {
                let runs: Vec<usize> = (0..self.plan.benchmarks.len())
                    .filter(|&b| self.plan.benchmarks[b].runs_under(&c.label))
                    .collect();
                format!("{} {runs:?}", c.meaning(one))
            };
            let mut same: Vec<(String, Vec<usize>)> = Vec::new();
            for &(i, c) in &configs {
                let m = meaning(c, one_node);
                match same.iter_mut().find(|(x, _)| *x == m) {
                    Some((_, v)) => v.push(i),
                    None => same.push((m, vec![i])),
                }
            }
            for (_, idx) in same.iter().filter(|(_, v)| v.len() > 1) {
                let labels: Vec<&str> = idx
                    .iter()
                    .map(|&i| self.plan.configs[i].label.as_str())
                    .collect();
                let first = meaning(&self.plan.configs[idx[0]], false);
                let label_only = idx
                    .iter()
                    .all(|&i| meaning(&self.plan.configs[i], false) == first);
                let why = if label_only {
                    "they differ only in their labels (an A/A comparison: their spread is noise)"
                } else {
                    "they differ only in NUMA settings, which do nothing on a machine of one node"
                };
                out.push(format!(
                    "campaign {}: warning: on {}, configurations {} are the same: {why}",
                    self.plan.name,
                    g.machine,
                    quoted(&labels)
                ));
            }
            let mut cases: Vec<(&Case, Vec<&str>)> = Vec::new();
            for (inst, bench) in g.instances.iter().zip(&self.plan.benchmarks) {
                for case in &inst.cases {
                    match cases.iter_mut().find(|(x, _)| *x == case) {
                        Some((_, v)) => v.push(&bench.title),
                        None => cases.push((case, vec![&bench.title])),
                    }
                }
            }
            for (case, titles) in cases.iter().filter(|(_, v)| v.len() > 1) {
                let params: Vec<String> = case
                    .params()
                    .iter()
                    .map(|(k, v)| format!("{k}={}", numalab_bench::value_text(v)))
                    .collect();
                out.push(format!(
                    "campaign {}: warning: on {}, {} are the same case ({} {}): it runs once",
                    self.plan.name,
                    g.machine,
                    titles.join(" and "),
                    case.benchmark(),
                    params.join(" ")
                ));
            }
        }
        out
    }

    /// `label: numa02 threads=2 #3`: a cell as a person reads it.
    pub fn cell_title(&self, cell: &Cell) -> String {
        let keys = numalab_bench::varying_keys(&self.cases);
        format!(
            "{}: {} #{}",
            self.plan.configs[cell.config].label,
            self.cases[cell.case].title(&keys),
            cell.rep
        )
    }

    pub fn cell(&self, key: &str) -> Option<&Cell> {
        self.cells.iter().find(|c| c.key == key)
    }

    /// The order of every cell (indices into `cells`), fixed by the plan
    /// and its seed.
    pub fn order(&self) -> Vec<usize> {
        let index: BTreeMap<(usize, usize, u32), usize> = self
            .cells
            .iter()
            .enumerate()
            .map(|(i, c)| ((c.config, c.case, c.rep), i))
            .collect();
        let by = |config: usize, case: usize, rep: u32| index.get(&(config, case, rep)).copied();
        // Each configuration's cases, in plan order.
        let nconf = self.plan.configs.len();
        let mut cases_of: Vec<Vec<usize>> = vec![Vec::new(); nconf];
        for c in &self.cells {
            if !cases_of[c.config].contains(&c.case) {
                cases_of[c.config].push(c.case);
            }
        }
        let mut out = Vec::with_capacity(self.cells.len());
        match self.plan.order {
            Order::Sequential => {
                for (ci, cases) in cases_of.iter().enumerate() {
                    for &k in cases {
                        for rep in 1..=self.plan.runs {
                            out.extend(by(ci, k, rep));
                        }
                    }
                }
            }
            Order::Interleaved => {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.plan.seed);
                for rep in 1..=self.plan.runs {
                    let mut configs: Vec<usize> = (0..nconf).collect();
                    shuffle(&mut configs, &mut rng);
                    for ci in configs {
                        let mut cases = cases_of[ci].clone();
                        shuffle(&mut cases, &mut rng);
                        for k in cases {
                            out.extend(by(ci, k, rep));
                        }
                    }
                }
            }
        }
        out
    }

    /// The runner's steps for the cells `todo` (indices into `cells`), in
    /// the campaign's order: each (configuration, case)'s warm-ups just
    /// before its first cell here.
    pub fn steps(&self, todo: &BTreeSet<usize>, slurm: Option<SlurmTag>) -> Vec<Step> {
        let mut warmed = BTreeSet::new();
        let mut steps = Vec::new();
        for i in self.order() {
            if !todo.contains(&i) {
                continue;
            }
            let cell = &self.cells[i];
            if warmed.insert((cell.config, cell.case)) {
                for w in 1..=self.plan.warmup {
                    steps.push(Step {
                        config: cell.config,
                        case: cell.case,
                        index: w,
                        warmup: true,
                        campaign: None,
                        // Warm-ups run as the cell does.
                        trace: cell.trace,
                    });
                }
            }
            steps.push(Step {
                config: cell.config,
                case: cell.case,
                index: cell.rep,
                warmup: false,
                campaign: Some(CampaignTag {
                    name: self.plan.name.clone(),
                    plan_hash: self.plan.hash.clone(),
                    cell: cell.key.clone(),
                    order_seed: self.plan.seed,
                    slurm: slurm.clone(),
                }),
                trace: cell.trace,
            });
        }
        steps
    }

    /// What the results directory says of every cell.
    pub fn scan(&self) -> Result<Scan, CampaignError> {
        scan(&self.plan, |key| self.cell(key).is_some())
    }
}

fn shuffle<T>(v: &mut [T], rng: &mut rand_chacha::ChaCha8Rng) {
    // Fisher-Yates, from the end.
    for i in (1..v.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

/// A cell's state from the records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellState {
    /// A successful record (its path).
    Done(PathBuf),
    /// Only failed records; the last one's reason.
    Failed(String),
    /// No record.
    Missing,
}

/// The records of a results directory, by cell.
#[derive(Debug, Default)]
pub struct Scan {
    pub states: BTreeMap<String, CellState>,
    /// Every record of this plan, for the summary.
    pub records: Vec<(PathBuf, RunRecord)>,
    /// Files that are not records, one line each.
    pub unreadable: Vec<String>,
}

impl Scan {
    /// Count a record just written (instead of reading the directory
    /// again).
    pub fn add(&mut self, path: PathBuf, rec: RunRecord) {
        if let Some(tag) = &rec.campaign {
            let state = if rec.outcome.is_ok() {
                CellState::Done(path.clone())
            } else {
                CellState::Failed(first_line(rec.outcome.reason.as_deref()))
            };
            let entry = self
                .states
                .entry(tag.cell.clone())
                .or_insert(CellState::Missing);
            if !matches!(entry, CellState::Done(_)) {
                *entry = state;
            }
        }
        self.records.push((path, rec));
    }

    pub fn state(&self, key: &str) -> CellState {
        self.states.get(key).cloned().unwrap_or(CellState::Missing)
    }
}

/// Read the results directory of `plan`: the records of its cells; an
/// error if it holds records of anything else (another plan, a plain
/// `numalab run`), which would mix into its tables.
pub fn scan(plan: &Plan, known: impl Fn(&str) -> bool) -> Result<Scan, CampaignError> {
    let mut out = Scan::default();
    if !plan.results.exists() {
        return Ok(out);
    }
    let report = numalab_record::load_paths(std::slice::from_ref(&plan.results));
    for e in report.errors {
        out.unreadable.push(e.to_string().replace('\n', " "));
    }
    for (path, rec) in report.records {
        let Some(tag) = &rec.campaign else {
            return Err(CampaignError::Results(format!(
                "{} holds records that no campaign wrote ({}): give the plan its own results directory",
                plan.results.display(),
                path.display()
            )));
        };
        if tag.plan_hash != plan.hash {
            return Err(CampaignError::Results(format!(
                "{} holds records of another plan, or of this plan before a change that gives its cells another meaning (plan {:?} hash {}, now {}; {}): use a new results directory",
                plan.results.display(),
                tag.name,
                tag.plan_hash,
                plan.hash,
                path.display()
            )));
        }
        if !known(&tag.cell) {
            // A cell of this plan hash that no longer exists: a larger
            // `runs` before. Kept, not counted.
            out.records.push((path, rec));
            continue;
        }
        out.add(path, rec);
    }
    Ok(out)
}

fn first_line(reason: Option<&str>) -> String {
    reason
        .unwrap_or("failed")
        .lines()
        .next()
        .unwrap_or("failed")
        .to_string()
}

/// The Slurm job this process runs in, from its environment.
pub fn slurm_from_env() -> Option<SlurmTag> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    Some(SlurmTag {
        job_id: var("SLURM_JOB_ID")?,
        array_job_id: var("SLURM_ARRAY_JOB_ID"),
        array_task_id: var("SLURM_ARRAY_TASK_ID").and_then(|v| v.parse().ok()),
        node: var("SLURMD_NODENAME"),
    })
}

/// The file whose `flock` says a numalab is using a results directory.
const BUSY_FILE: &str = "busy.lock";

/// What holds a campaign's results directory: `campaign run` alone
/// (exclusive), or any number of `run-cell`s and Slurm submissions
/// (shared), each `run-cell` also holding its cell alone.
#[derive(Debug)]
pub struct Held {
    _dir: numalab_linux::lock::Lock,
    _cell: Option<numalab_linux::lock::Lock>,
}

/// Take the results directory of `results` for this invocation: `mode`
/// exclusive for `campaign run` here, shared for Slurm submissions and
/// `run-cell`, which with `cell` also takes that cell alone. A directory
/// or cell held by another numalab is an error naming its PID; a lock
/// whose holder was killed is taken over, and `say` is told so.
pub fn hold(
    results: &Path,
    mode: numalab_linux::lock::Mode,
    cell: Option<&str>,
    say: &mut dyn FnMut(&str),
) -> Result<Held, CampaignError> {
    use numalab_linux::lock::{acquire, LockError};
    let dir = results.join(STATE_DIR);
    std::fs::create_dir_all(&dir).map_err(CampaignError::io(&dir))?;
    let err = |e: LockError, what: &str| match e {
        LockError::Held { pid, .. } => CampaignError::Busy {
            what: what.to_string(),
            pid,
        },
        LockError::Io { path, source } => CampaignError::Io { path, source },
    };
    let what = format!("results directory {}", results.display());
    let d = acquire(&dir.join(BUSY_FILE), mode, false).map_err(|e| err(e, &what))?;
    if let Some(pid) = d.took_over {
        say(&format!(
            "{what}: taking over from numalab (PID {pid}), which ended without letting go"
        ));
    }
    let cell = match cell {
        None => None,
        Some(key) => {
            let name = numalab_record::id::plain_file_name("cell", key)
                .map_err(|e| CampaignError::Other(e.to_string()))?;
            let path = dir.join(format!("cell-{name}.lock"));
            let l = acquire(&path, numalab_linux::lock::Mode::Exclusive, false)
                .map_err(|e| err(e, &format!("cell {key} of {what}")))?;
            Some(l)
        }
    };
    Ok(Held {
        _dir: d,
        _cell: cell,
    })
}

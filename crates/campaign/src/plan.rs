//! The plan file (TOML): what a campaign runs.
//!
//! ```toml
//! name = "numa-balancing-ab"        # default: the file's stem
//! results = "results/nb-ab"         # relative to the plan's directory
//! runs = 3                          # recorded repetitions of every cell
//! warmup = 0                        # discarded runs before a case's first
//! order = "interleaved"             # or "sequential"
//! seed = 1                          # of the interleaved order
//! interval = "auto"                 # observation interval, as --interval
//!
//! [[benchmark]]
//! name = "numa02"
//! threads = 2
//! bytes = "128M"
//! loops = [200, 400]                # a list: one benchmark per value
//! trace = true                      # its runs traced, as --trace
//!
//! [[config]]
//! label = "balancing {nb}"
//! matrix = { nb = [0, 1] }          # one configuration per value
//! sysctl = { "kernel.numa_balancing" = "{nb}" }
//! guest = { nodes = 2, cpus_per_node = 1, mem_per_node = "1G" }
//! ```
//!
//! Every key is checked; an error names the file and line. A benchmark's
//! keys are its `numalab run` flags without the dashes (`argv` is a
//! command's program and arguments, `record_name` its `--name`), parsed by the benchmark's own
//! argument set (numalab-bench), so a plan means exactly what the
//! command line would. A list value expands into one benchmark per value
//! (a matrix over all the lists). `trace = true`, on a benchmark or a
//! configuration, traces its cells' runs (`--trace`); it is in the plan's
//! hash, not in the cells' keys (docs/campaigns.md). A configuration runs on this machine,
//! in a guest (`guest = {...}`, `numalab vm`'s flags) or on a simulated
//! machine (`sim = {...}`, `numalab sim`'s); `matrix` expands it over
//! variables substituted as `{name}` in its strings. `slurm = {...}` says
//! where Slurm runs it (partition, constraint, nodelist).

use crate::CampaignError;
use numalab_backends::SimOptions;
use numalab_bench::args::Spec;
use numalab_guest::{AccelChoice, Rootfs};
use numalab_runner::Interval;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::{Spanned, Table, Value};

/// A parsed, checked and expanded plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The plan file.
    pub path: PathBuf,
    pub name: String,
    /// The results directory (absolute, or relative to the current
    /// directory when the plan's path was).
    pub results: PathBuf,
    pub runs: u32,
    pub warmup: u32,
    pub order: Order,
    pub seed: u64,
    pub interval: Interval,
    pub benchmarks: Vec<Instance>,
    pub configs: Vec<ConfigSpec>,
    /// Hash of everything that gives a cell its meaning.
    pub hash: String,
}

/// How cells are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Randomised blocks: repetition r of every cell before repetition
    /// r + 1 of any; within a block the configurations, and within each
    /// the cases, in a seeded random order.
    Interleaved,
    /// Configuration by configuration, case by case, repetitions
    /// innermost (what a shell loop does; drift biases it).
    Sequential,
}

/// One benchmark with one value for every list: what `numalab run NAME
/// ARGS...` would run.
#[derive(Debug, Clone)]
pub struct Instance {
    pub name: String,
    /// Its flags, as on the command line.
    pub args: Vec<String>,
    /// `numa02 threads=2 loops=200`: the keys as written.
    pub title: String,
    pub spec: Spec,
    pub line: usize,
    /// `trace = true`: its runs record their scheduling events (`--trace`).
    pub trace: bool,
    /// `configs = ["a", "b"]`: the labels of the configurations it runs
    /// under; empty: every configuration.
    pub configs: Vec<String>,
}

impl Instance {
    /// Whether it runs under the configuration labelled `label`.
    pub fn runs_under(&self, label: &str) -> bool {
        self.configs.is_empty() || self.configs.iter().any(|c| c == label)
    }
}

/// One configuration, expanded.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigSpec {
    pub label: String,
    pub sysctl: BTreeMap<String, String>,
    pub governor: Option<String>,
    pub thp: Option<String>,
    pub sysfs: BTreeMap<String, String>,
    pub prepare: Option<String>,
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    /// `setup_bg`: a service kept running through the configuration's
    /// runs (`--setup-bg`). Left out of the serialized form when absent,
    /// so that the cells of plans without it keep their keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_bg: Option<String>,
    /// `scx`: one of numalab's sched_ext schedulers, canonical
    /// (`fifo[slice_ms=5]`), as `--scx`. Left out when absent, as
    /// `setup_bg` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scx: Option<String>,
    /// `scx_exec`: any other sched_ext scheduler's command, as
    /// `--scx-exec`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scx_exec: Option<String>,
    pub target: Target,
    /// `trace = true`: its runs record their scheduling events
    /// (`--trace`). How a run is observed, not what it runs: not part of
    /// a cell's key (the plan's hash covers it).
    #[serde(skip)]
    pub trace: bool,
    /// Where Slurm runs it: not part of its meaning.
    #[serde(skip)]
    pub slurm: SlurmPlace,
    #[serde(skip)]
    pub line: usize,
}

/// Where a configuration's cases run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// The machine numalab runs on.
    Host,
    Guest(GuestSpec),
    Sim(SimSpec),
}

/// A guest, as `numalab vm`'s flags give it: a key left out is the
/// flag's default ([`numalab_guest::SpecInput`]'s shape, the rest unset).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GuestSpec {
    pub nodes: u32,
    pub cpus_per_node: u32,
    pub mem_per_node: String,
    pub distances: Option<String>,
    pub memory_only_nodes: Option<String>,
    /// Kernel image (default: the newest readable /boot/vmlinuz-*).
    pub kernel: Option<PathBuf>,
    /// Extra kernel command line.
    pub append: Option<String>,
    /// One of [`AccelChoice::NAMES`] (default: auto).
    pub accel: Option<String>,
    /// One of [`Rootfs::NAMES`] (default: auto, which is leaving it out).
    pub rootfs: Option<String>,
    pub modules: Option<PathBuf>,
    pub shares: Vec<PathBuf>,
    pub cwd: Option<PathBuf>,
    /// Longest a guest may stay up (it runs one configuration's block).
    pub timeout_s: Option<u64>,
}

impl Default for GuestSpec {
    fn default() -> GuestSpec {
        use numalab_guest::SpecInput;
        GuestSpec {
            nodes: SpecInput::NODES,
            cpus_per_node: SpecInput::CPUS_PER_NODE,
            mem_per_node: SpecInput::MEM_PER_NODE.into(),
            distances: None,
            memory_only_nodes: None,
            kernel: None,
            append: None,
            accel: None,
            rootfs: None,
            modules: None,
            shares: Vec::new(),
            cwd: None,
            timeout_s: None,
        }
    }
}

/// A simulated machine, as `numalab sim`'s flags give it: a key left out
/// is the flag's default ([`SimOptions`]'s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimSpec {
    /// A preset or a machine file.
    pub machine: String,
    #[serde(default = "sim_default::scheduler")]
    pub scheduler: String,
    #[serde(default = "sim_default::balancer")]
    pub balancer: String,
    /// Seed of repetition 1 (repetition r uses seed + r - 1).
    #[serde(default = "sim_default::seed")]
    pub seed: u64,
    #[serde(default = "sim_default::tick_us")]
    pub tick_us: u64,
    #[serde(default = "sim_default::max_sim_s")]
    pub max_sim_s: f64,
}

/// [`SimSpec`]'s defaults, as serde takes them: [`SimOptions`]'s.
mod sim_default {
    use numalab_backends::SimOptions;
    pub fn scheduler() -> String {
        SimOptions::SCHEDULER.into()
    }
    pub fn balancer() -> String {
        SimOptions::BALANCER.into()
    }
    pub fn seed() -> u64 {
        SimOptions::SEED
    }
    pub fn tick_us() -> u64 {
        SimOptions::TICK_US
    }
    pub fn max_sim_s() -> f64 {
        SimOptions::MAX_SIM_S
    }
}

/// Where Slurm may run a configuration's cells.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmPlace {
    #[serde(default)]
    pub partition: Option<String>,
    /// Node features (sbatch --constraint).
    #[serde(default)]
    pub constraint: Option<String>,
    /// Nodes (sbatch --nodelist).
    #[serde(default)]
    pub nodelist: Option<String>,
    /// A node to itself for each cell [default: yes on this machine and
    /// in guests, no for the simulator].
    #[serde(default)]
    pub exclusive: Option<bool>,
    /// Time limit of one cell (sbatch --time).
    #[serde(default)]
    pub time: Option<String>,
    /// CPUs of one cell (sbatch --cpus-per-task) [default: 1 for the
    /// simulator, else the whole node].
    #[serde(default)]
    pub cpus_per_task: Option<u32>,
}

/// Why a configuration's settings could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A machine setting (sysctl, governor, thp, sysfs).
    #[error(transparent)]
    Knob(#[from] numalab_linux::knobs::KnobError),
    /// The sched_ext scheduler's spec (numalab_scx's words).
    #[error("{0}")]
    Scx(String),
}

/// Why a guest's or a simulated machine's keys were refused.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The guest's shape (numalab_guest's words, which name `numalab
    /// vm`'s flags).
    #[error(transparent)]
    GuestShape(#[from] numalab_guest::SpecError),
    /// Not one of [`AccelChoice::NAMES`].
    #[error("accel = {0:?}: {names}", names = one_of(&AccelChoice::NAMES))]
    Accel(String),
    /// Not one of [`Rootfs::NAMES`].
    #[error("rootfs = {0:?}: {names}", names = one_of(&Rootfs::NAMES))]
    Rootfs(String),
    #[error("timeout_s = 0: at least 1 second")]
    NoTimeout,
    /// The simulator's machine, policies or limits (numalab-backends'
    /// words, which name the plan's keys).
    #[error(transparent)]
    Sim(#[from] numalab_backends::SimOptionsError),
}

/// `a, b or c`.
fn one_of(names: &[&str]) -> String {
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl ConfigSpec {
    /// The configuration as the runner takes it.
    pub fn configuration(&self) -> Result<numalab_runner::Configuration, ConfigError> {
        use numalab_linux::knobs::Knob;
        let mut knobs = Vec::new();
        for (k, v) in &self.sysctl {
            knobs.push(Knob::parse_sysctl(&format!("{k}={v}"))?);
        }
        if let Some(g) = &self.governor {
            knobs.push(Knob::governor(g)?);
        }
        if let Some(t) = &self.thp {
            knobs.push(Knob::thp(t)?);
        }
        for (k, v) in &self.sysfs {
            knobs.push(Knob::parse_sysfs(&format!("{k}={v}"))?);
        }
        Ok(numalab_runner::Configuration {
            label: self.label.clone(),
            knobs,
            prepare: self.prepare.clone(),
            setup: self.setup.clone(),
            cleanup: self.cleanup.clone(),
            setup_bg: self.setup_bg.clone(),
            hook_dir: None,
            scx: match (&self.scx, &self.scx_exec) {
                (Some(spec), _) => Some(
                    numalab_scx::parse(spec)
                        .map_err(|e| ConfigError::Scx(e.to_string()))?
                        .0,
                ),
                (None, Some(cmd)) => Some(numalab_linux::sched_ext::Scx::Exec { cmd: cmd.clone() }),
                (None, None) => None,
            },
        })
    }

    /// Configurations with the same machine share pinned sizes: this
    /// machine, a guest shape (not its kernel or command line: two kernels
    /// are compared on identical work), a simulated machine (not its
    /// policies).
    pub fn machine_group(&self) -> String {
        match &self.target {
            Target::Host => "this machine".into(),
            Target::Guest(g) => {
                let mut s = format!(
                    "guest {} nodes x {} CPUs, {} per node",
                    g.nodes, g.cpus_per_node, g.mem_per_node
                );
                if let Some(d) = &g.distances {
                    s.push_str(&format!(", distances {d}"));
                }
                if let Some(m) = &g.memory_only_nodes {
                    s.push_str(&format!(", memory-only nodes {m}"));
                }
                s
            }
            Target::Sim(s) => format!("simulated {}", s.machine),
        }
    }

    /// What it does, its label aside, as canonical text: two
    /// configurations of one machine with the same meaning run the same
    /// thing. On a machine of one node (`one_node`), the settings that
    /// act between nodes are left out: NUMA balancing and zone reclaim
    /// sysctls, and a simulated machine's balancer.
    pub fn meaning(&self, one_node: bool) -> String {
        let mut c = self.clone();
        c.label.clear();
        if one_node {
            c.sysctl
                .retain(|k, _| !(k.contains("numa_balancing") || k.contains("zone_reclaim")));
            if let Target::Sim(s) = &mut c.target {
                s.balancer = SimOptions::BALANCER.into();
            }
        }
        format!("{} trace={}", canonical(&c), c.trace)
    }

    /// Configurations with the same identity share one backend: one
    /// guest boot serves both labels of a sysctl A/B.
    pub fn backend_identity(&self) -> String {
        match &self.target {
            Target::Host => "host".into(),
            Target::Guest(g) => format!("guest {}", canonical(g)),
            Target::Sim(s) => format!("sim {}", canonical(s)),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self.target {
            Target::Host => "real",
            Target::Guest(_) => "guest",
            Target::Sim(_) => "sim",
        }
    }
}

/// Canonical JSON of a value (maps sorted), for hashing.
pub fn canonical<T: Serialize>(v: &T) -> String {
    // serde_json::Value's maps are sorted (no preserve_order feature).
    serde_json::to_value(v)
        .expect("plan types serialise")
        .to_string()
}

/// SHA-256 of `text`, hex, first `n` digits.
pub fn hash_hex(text: &str, n: usize) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(text.as_bytes());
    let mut s = String::with_capacity(64);
    for b in d {
        s.push_str(&format!("{b:02x}"));
    }
    s.truncate(n);
    s
}

/// The top level of a plan file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: Option<String>,
    results: Option<String>,
    runs: Option<Spanned<i64>>,
    warmup: Option<Spanned<i64>>,
    order: Option<Spanned<String>>,
    seed: Option<u64>,
    interval: Option<Spanned<Value>>,
    #[serde(default)]
    benchmark: Vec<BTreeMap<Spanned<String>, Spanned<Value>>>,
    #[serde(default)]
    config: Vec<Spanned<Table>>,
}

/// Where in the file: `path:line: what`.
struct Loc<'a> {
    path: &'a Path,
    src: &'a str,
}

impl Loc<'_> {
    fn line(&self, offset: usize) -> usize {
        self.src[..offset.min(self.src.len())]
            .bytes()
            .filter(|&b| b == b'\n')
            .count()
            + 1
    }

    fn err(&self, line: usize, msg: impl std::fmt::Display) -> CampaignError {
        CampaignError::Plan(format!("{}:{line}: {msg}", self.path.display()))
    }

    /// The line of `key = ...` in the table that starts at `span` (up
    /// to the next table header), else the table's first line.
    fn key_line(&self, span: std::ops::Range<usize>, key: &str) -> usize {
        let start = span.start.min(self.src.len());
        let mut off = start;
        for (i, l) in self.src[start..].split_inclusive('\n').enumerate() {
            let t = l.trim_start();
            if i > 0 && t.starts_with('[') {
                break;
            }
            let t = t.trim_start_matches('"');
            if let Some(rest) = t.strip_prefix(key) {
                let rest = rest.trim_start_matches('"').trim_start();
                if rest.starts_with('=') || rest.starts_with('.') {
                    return self.line(off);
                }
            }
            off += l.len();
        }
        self.line(span.start)
    }
}

/// Refuse a plan any string of which holds a control character: plan
/// strings reach Slurm batch scripts, hooks, guests' command lines and
/// file names, where a newline ends a line early and runs what follows.
fn control_chars(loc: &Loc, src: &str) -> Result<(), CampaignError> {
    fn walk(key: &str, v: &toml::Value) -> Option<(String, String)> {
        match v {
            toml::Value::String(s) if s.chars().any(char::is_control) => {
                Some((key.to_string(), s.clone()))
            }
            toml::Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, v)| walk(&format!("{key}[{i}]"), v)),
            toml::Value::Table(t) => t.iter().find_map(|(k, v)| {
                let key = if key.is_empty() {
                    k.clone()
                } else {
                    format!("{key}.{k}")
                };
                walk(&key, v)
            }),
            _ => None,
        }
    }
    // Not TOML at all: the typed parse says where.
    let Ok(doc) = src.parse::<toml::Table>() else {
        return Ok(());
    };
    match walk("", &toml::Value::Table(doc)) {
        None => Ok(()),
        Some((key, text)) => {
            let last = key.rsplit(['.', '[']).next().unwrap_or(&key);
            let line = src
                .lines()
                .position(|l| l.trim_start().starts_with(last))
                .map_or(1, |i| i + 1);
            let e = numalab_linux::shell::check(&key, &text).unwrap_err();
            Err(loc.err(line, e.to_string()))
        }
    }
}

/// Read and check a plan file.
pub fn load(path: &Path) -> Result<Plan, CampaignError> {
    let src = std::fs::read_to_string(path).map_err(CampaignError::io(path))?;
    parse(path, &src)
}

/// Check and expand a plan's text (`path` names it in errors and anchors
/// its relative results directory).
pub fn parse(path: &Path, src: &str) -> Result<Plan, CampaignError> {
    let loc = Loc { path, src };
    let file: File = toml::from_str(src).map_err(|e| {
        let line = e.span().map(|s| loc.line(s.start)).unwrap_or(1);
        loc.err(line, e.message().replace('\n', " ").trim_end())
    })?;
    control_chars(&loc, src)?;
    let runs = parse_count(&loc, &file.runs, "runs", 1, 10_000, 1)?;
    let warmup = parse_count(&loc, &file.warmup, "warmup", 0, 1000, 0)?;
    let order = parse_order(&loc, &file.order)?;
    let interval = parse_interval(&loc, &file.interval)?;
    let name = plan_name(&loc, file.name)?;
    let results = results_dir(&loc, &file.results, &name)?;

    if file.benchmark.is_empty() {
        return Err(loc.err(1, "no [[benchmark]]: a plan runs at least one"));
    }
    let mut benchmarks = Vec::new();
    for table in &file.benchmark {
        benchmarks.extend(expand_benchmark(&loc, table)?);
    }
    let mut configs = Vec::new();
    if file.config.is_empty() {
        configs.push(default_config());
    }
    for table in &file.config {
        configs.extend(expand_config(&loc, table)?);
    }
    check_cells(&loc, &benchmarks, &configs)?;
    let hash = plan_hash(&benchmarks, &configs, warmup, interval);
    Ok(Plan {
        path: path.to_path_buf(),
        name,
        results,
        runs,
        warmup,
        order,
        seed: file.seed.unwrap_or(1),
        interval,
        benchmarks,
        configs,
        hash,
    })
}

/// A count (`runs`, `warmup`) from `min` to `max`, or its default.
fn parse_count(
    loc: &Loc,
    v: &Option<Spanned<i64>>,
    what: &str,
    min: i64,
    max: i64,
    default: u32,
) -> Result<u32, CampaignError> {
    match v {
        None => Ok(default),
        Some(s) if (min..=max).contains(s.get_ref()) => Ok(*s.get_ref() as u32),
        Some(s) => Err(loc.err(
            loc.line(s.span().start),
            format!("{what} = {}: use {min} to {max}", s.get_ref()),
        )),
    }
}

/// How cells are ordered: `order`, interleaved by default.
fn parse_order(loc: &Loc, order: &Option<Spanned<String>>) -> Result<Order, CampaignError> {
    match order {
        None => Ok(Order::Interleaved),
        Some(o) => match o.get_ref().as_str() {
            "interleaved" => Ok(Order::Interleaved),
            "sequential" => Ok(Order::Sequential),
            other => Err(loc.err(
                loc.line(o.span().start),
                format!("order = {other:?}: use \"interleaved\" or \"sequential\""),
            )),
        },
    }
}

/// The observation interval, as --interval reads it: auto by default.
fn parse_interval(loc: &Loc, interval: &Option<Spanned<Value>>) -> Result<Interval, CampaignError> {
    match interval {
        None => Ok(Interval::Auto),
        Some(v) => {
            let text = match v.get_ref() {
                Value::String(s) => s.clone(),
                Value::Integer(i) => i.to_string(),
                Value::Float(f) => f.to_string(),
                other => show(other),
            };
            Interval::parse(&text)
                .map_err(|e| loc.err(loc.line(v.span().start), format!("interval: {e}")))
        }
    }
}

/// The plan's name: `name`, else the file's stem; 1 to 64 printable
/// characters.
fn plan_name(loc: &Loc, name: Option<String>) -> Result<String, CampaignError> {
    let name = match name {
        Some(n) => n,
        None => loc
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "campaign".into()),
    };
    if name.trim().is_empty() || name.chars().any(char::is_control) || name.len() > 64 {
        return Err(loc.err(1, format!("name = {name:?}: 1 to 64 printable characters")));
    }
    Ok(name)
}

/// The results directory, relative to the plan's directory: `results`,
/// else `NAME-results`.
fn results_dir(loc: &Loc, results: &Option<String>, name: &str) -> Result<PathBuf, CampaignError> {
    let dir = loc.path.parent().unwrap_or(Path::new(""));
    match results {
        Some(r) if r.trim().is_empty() => Err(loc.err(1, "results = \"\": name a directory")),
        Some(r) => Ok(dir.join(r)),
        None => Ok(dir.join(format!("{name}-results"))),
    }
}

/// The configuration of a plan without [[config]]: this machine as it
/// is, labelled `default`.
fn default_config() -> ConfigSpec {
    ConfigSpec {
        label: "default".into(),
        sysctl: BTreeMap::new(),
        governor: None,
        thp: None,
        sysfs: BTreeMap::new(),
        prepare: None,
        setup: None,
        cleanup: None,
        setup_bg: None,
        scx: None,
        scx_exec: None,
        target: Target::Host,
        trace: false,
        slurm: SlurmPlace::default(),
        line: 1,
    }
}

/// Check the benchmarks and configurations together: labels and
/// benchmarks unique, `configs = [...]` naming configurations that
/// exist, every configuration running something, no program in the
/// simulator.
fn check_cells(
    loc: &Loc,
    benchmarks: &[Instance],
    configs: &[ConfigSpec],
) -> Result<(), CampaignError> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for c in configs {
        if let Some(first) = seen.insert(&c.label, c.line) {
            return Err(loc.err(
                c.line,
                format!(
                    "label {:?} is also the label of the configuration on line {first}: labels name the configurations compared",
                    c.label
                ),
            ));
        }
    }
    let mut titles: BTreeMap<String, usize> = BTreeMap::new();
    for b in benchmarks {
        if let Some(first) = titles.insert(format!("{} {:?}", b.name, b.args), b.line) {
            return Err(loc.err(
                b.line,
                format!("{} is also the benchmark on line {first}", b.title),
            ));
        }
    }
    // `configs = [...]` names configurations that exist, and every
    // configuration runs something.
    for b in benchmarks {
        if let Some(l) = b.configs.iter().find(|l| !seen.contains_key(l.as_str())) {
            return Err(loc.err(
                b.line,
                format!(
                    "{}: configs names {l:?}, but no configuration has that label (labels: {})",
                    b.title,
                    configs
                        .iter()
                        .map(|c| c.label.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    if let Some(c) = configs
        .iter()
        .find(|c| !benchmarks.iter().any(|b| b.runs_under(&c.label)))
    {
        return Err(loc.err(
            c.line,
            format!(
                "configuration {:?} runs no benchmark: every [[benchmark]]'s configs leaves it out",
                c.label
            ),
        ));
    }
    for c in configs {
        if matches!(c.target, Target::Sim(_)) {
            if let Some(b) = benchmarks
                .iter()
                .find(|b| b.spec.is_command() && b.runs_under(&c.label))
            {
                return Err(loc.err(
                    b.line,
                    format!(
                        "{}: the simulator cannot run a program (configuration {:?}, line {})",
                        b.title, c.label, c.line
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Hash of everything that gives a cell its meaning.
fn plan_hash(
    benchmarks: &[Instance],
    configs: &[ConfigSpec],
    warmup: u32,
    interval: Interval,
) -> String {
    let mut meaning = serde_json::json!({
        "benchmarks": benchmarks.iter().map(|b| (&b.name, &b.args)).collect::<Vec<_>>(),
        "configs": configs,
        "warmup": warmup,
        "interval": interval,
    });
    // What is traced: traced and untraced runs of a cell never mix in one
    // results directory. Only when something is, so that the hash of a
    // plan without `trace` stays what it was.
    let traced_benchmarks: Vec<usize> = (0..benchmarks.len())
        .filter(|&i| benchmarks[i].trace)
        .collect();
    let traced_configs: Vec<&str> = configs
        .iter()
        .filter(|c| c.trace)
        .map(|c| c.label.as_str())
        .collect();
    if !traced_benchmarks.is_empty() || !traced_configs.is_empty() {
        meaning["trace"] = serde_json::json!({
            "benchmarks": traced_benchmarks,
            "configs": traced_configs,
        });
    }
    // Which benchmark runs under which configurations, when not all of
    // them do (likewise only then, so older plans keep their hash).
    let only: BTreeMap<usize, &Vec<String>> = benchmarks
        .iter()
        .enumerate()
        .filter(|(_, b)| !b.configs.is_empty())
        .map(|(i, b)| (i, &b.configs))
        .collect();
    if !only.is_empty() {
        meaning["only"] = serde_json::json!(only);
    }
    hash_hex(&meaning.to_string(), 16)
}

/// A value as the plan wrote it, roughly (for messages).
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Boolean(b) => b.to_string(),
        Value::Array(a) => format!("[{}]", a.iter().map(show).collect::<Vec<_>>().join(", ")),
        Value::Table(_) => "{...}".into(),
        other => scalar_text(other).unwrap_or_else(|| format!("{other:?}")),
    }
}

/// A non-empty array of strings (`configs`, `argv`), or None.
fn string_list(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::Array(a) if !a.is_empty() => {
            a.iter().map(|x| x.as_str().map(str::to_string)).collect()
        }
        _ => None,
    }
}

/// A scalar as a flag's value.
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Integer(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

/// Expand one [[benchmark]]: one instance per combination of its lists'
/// values.
fn expand_benchmark(
    loc: &Loc,
    table: &BTreeMap<Spanned<String>, Spanned<Value>>,
) -> Result<Vec<Instance>, CampaignError> {
    let (name_s, line) = benchmark_name(loc, table)?;
    let flags = numalab_bench::args::Spec::flags(name_s).map_err(|e| loc.err(line, e))?;
    let mut keys = BenchmarkKeys {
        name: name_s,
        line,
        axes: Vec::new(),
        argv: None,
        trace: false,
        only: Vec::new(),
    };
    for (k, v) in table {
        let kline = loc.line(k.span().start);
        match k.get_ref().as_str() {
            "name" => {}
            "configs" => keys.only = benchmark_configs(loc, kline, v)?,
            "trace" => keys.trace = benchmark_trace(loc, kline, v)?,
            "argv" => keys.argv = Some(benchmark_argv(loc, kline, name_s, v)?),
            _ => keys.axes.push(benchmark_axis(loc, name_s, &flags, k, v)?),
        }
    }
    if name_s == "command" && keys.argv.is_none() {
        return Err(loc.err(line, "command needs argv = [\"program\", \"arg\", ...]"));
    }
    benchmark_instances(loc, &keys)
}

/// A [[benchmark]]'s keys, checked: its flags' values and the keys that
/// are not flags.
struct BenchmarkKeys<'a> {
    name: &'a String,
    /// The line of its `name`.
    line: usize,
    /// Each key: its flag, and its values (a list is a matrix axis), and
    /// their line.
    axes: Vec<(String, Vec<Option<String>>, usize)>,
    argv: Option<Vec<String>>,
    trace: bool,
    only: Vec<String>,
}

/// A [[benchmark]]'s `name` (one of the benchmarks) and its line.
fn benchmark_name<'a>(
    loc: &Loc,
    table: &'a BTreeMap<Spanned<String>, Spanned<Value>>,
) -> Result<(&'a String, usize), CampaignError> {
    let name_entry = table.iter().find(|(k, _)| k.get_ref() == "name");
    let first_line = table
        .keys()
        .map(|k| loc.line(k.span().start))
        .min()
        .unwrap_or(1);
    let Some((_, name)) = name_entry else {
        return Err(loc.err(
            first_line,
            format!(
                "[[benchmark]] without a name (one of {})",
                numalab_bench::args::NAMES.join(", ")
            ),
        ));
    };
    let line = loc.line(name.span().start);
    let Value::String(name_s) = name.get_ref() else {
        return Err(loc.err(line, "name: a benchmark's name is a string"));
    };
    Ok((name_s, line))
}

/// A benchmark's `configs`: the labels of the configurations it runs
/// under.
fn benchmark_configs(
    loc: &Loc,
    kline: usize,
    v: &Spanned<Value>,
) -> Result<Vec<String>, CampaignError> {
    string_list(v.get_ref()).ok_or_else(|| {
        loc.err(
            kline,
            format!(
                "configs = {}: the labels of the configurations it runs under, a list of strings, e.g. [\"linux\"]",
                show(v.get_ref())
            ),
        )
    })
}

/// A benchmark's `trace`: whether its runs record their scheduling
/// events.
fn benchmark_trace(loc: &Loc, kline: usize, v: &Spanned<Value>) -> Result<bool, CampaignError> {
    match v.get_ref() {
        Value::Boolean(b) => Ok(*b),
        other => Err(loc.err(
            kline,
            format!(
                "trace = {}: true or false (whether its runs record their scheduling events, as --trace)",
                show(other)
            ),
        )),
    }
}

/// A command's `argv`: the program and its arguments.
fn benchmark_argv(
    loc: &Loc,
    kline: usize,
    name_s: &str,
    v: &Spanned<Value>,
) -> Result<Vec<String>, CampaignError> {
    if name_s != "command" {
        return Err(loc.err(kline, format!("{name_s} takes no argv (only command does)")));
    }
    string_list(v.get_ref()).ok_or_else(|| {
        loc.err(
            kline,
            "argv: the program and its arguments, a list of strings, e.g. [\"make\", \"-j4\"]",
        )
    })
}

/// A key that is a flag of benchmark `name_s`: the flag, its values (a
/// list is a matrix axis), and their line.
fn benchmark_axis(
    loc: &Loc,
    name_s: &str,
    flags: &[numalab_bench::args::Flag],
    k: &Spanned<String>,
    v: &Spanned<Value>,
) -> Result<(String, Vec<Option<String>>, usize), CampaignError> {
    let key = k.get_ref();
    let kline = loc.line(k.span().start);
    // `name` names the benchmark; a command's own --name (its name in
    // records and tables) is `record_name`.
    let flag_name = if name_s == "command" && key == "record_name" {
        "name".to_string()
    } else if key == "name" {
        String::new()
    } else {
        key.replace('_', "-")
    };
    let Some(flag) = flags.iter().find(|f| f.long == flag_name) else {
        return Err(unknown_parameter(loc, kline, name_s, key, flags));
    };
    let vline = loc.line(v.span().start);
    let values: Vec<&Value> = match v.get_ref() {
        Value::Array(a) if a.is_empty() => {
            return Err(loc.err(vline, format!("{key} = []: an empty list runs nothing")))
        }
        Value::Array(a) => a.iter().collect(),
        one => vec![one],
    };
    let mut out = Vec::new();
    for val in values {
        let text = if flag.takes_value {
            Some(scalar_text(val).ok_or_else(|| {
                loc.err(
                    vline,
                    format!("{key}: {} is not a value of --{flag_name}", show(val)),
                )
            })?)
        } else {
            match val {
                Value::Boolean(true) => Some(String::new()),
                Value::Boolean(false) => None,
                _ => {
                    return Err(loc.err(
                        vline,
                        format!("{key}: --{flag_name} is a switch: true or false"),
                    ))
                }
            }
        };
        out.push(text);
    }
    Ok((flag_name, out, vline))
}

/// The error of a key that is no parameter of benchmark `name_s`,
/// naming those it has.
fn unknown_parameter(
    loc: &Loc,
    kline: usize,
    name_s: &str,
    key: &str,
    flags: &[numalab_bench::args::Flag],
) -> CampaignError {
    let known: Vec<String> = flags
        .iter()
        .filter(|f| f.long != "help")
        .map(|f| match (name_s, f.long.as_str()) {
            ("command", "name") => "record_name".to_string(),
            (_, l) => l.replace('-', "_"),
        })
        .collect();
    let mut known = known;
    if name_s == "command" {
        known.push("argv".into());
    }
    known.push("trace".into());
    loc.err(
        kline,
        format!(
            "{name_s} has no parameter {key:?} (it has: {})",
            known.join(", ")
        ),
    )
}

/// The matrix: one instance for every combination of the axes' values,
/// the last key varying fastest.
fn benchmark_instances(loc: &Loc, keys: &BenchmarkKeys) -> Result<Vec<Instance>, CampaignError> {
    let (name_s, line, axes) = (keys.name, keys.line, &keys.axes);
    let mut combos: Vec<Vec<(usize, usize)>> = vec![Vec::new()];
    for (ai, (_, values, _)) in axes.iter().enumerate() {
        let mut next = Vec::new();
        for c in &combos {
            for vi in 0..values.len() {
                let mut c = c.clone();
                c.push((ai, vi));
                next.push(c);
            }
        }
        combos = next;
    }
    let mut out = Vec::new();
    for combo in combos {
        let mut args = Vec::new();
        let mut title = name_s.clone();
        let mut at = line;
        for &(ai, vi) in &combo {
            let (flag, values, vline) = &axes[ai];
            if let Some(v) = &values[vi] {
                args.push(format!("--{flag}"));
                title.push_str(&format!(" {}", flag.replace('-', "_")));
                if !v.is_empty() {
                    args.push(v.clone());
                    title.push_str(&format!("={v}"));
                }
            }
            if values.len() > 1 {
                at = *vline;
            }
        }
        if let Some(a) = &keys.argv {
            args.push("--".into());
            args.extend(a.iter().cloned());
            title.push_str(&format!(" -- {}", a.join(" ")));
        }
        let spec = Spec::parse(name_s, &args).map_err(|e| loc.err(at, format!("{name_s}: {e}")))?;
        out.push(Instance {
            name: name_s.clone(),
            args,
            title,
            spec,
            line,
            trace: keys.trace,
            configs: keys.only.clone(),
        });
    }
    Ok(out)
}

/// Replace `{var}` in every string of `v`; a string that is exactly
/// `{var}` takes the variable's value with its type.
fn substitute(v: &Value, vars: &[(String, Value)]) -> Value {
    match v {
        Value::String(s) => {
            for (k, val) in vars {
                if s == &format!("{{{k}}}") {
                    return val.clone();
                }
            }
            let mut s = s.clone();
            for (k, val) in vars {
                let text = scalar_text(val).unwrap_or_else(|| show(val));
                s = s.replace(&format!("{{{k}}}"), &text);
            }
            Value::String(s)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, vars)).collect()),
        Value::Table(t) => Value::Table(
            t.iter()
                .map(|(k, x)| (substitute_key(k, vars), substitute(x, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn substitute_key(k: &str, vars: &[(String, Value)]) -> String {
    let mut s = k.to_string();
    for (name, val) in vars {
        let text = scalar_text(val).unwrap_or_else(|| show(val));
        s = s.replace(&format!("{{{name}}}"), &text);
    }
    s
}

const CONFIG_KEYS: [&str; 16] = [
    "label", "matrix", "sysctl", "governor", "thp", "sysfs", "prepare", "setup", "cleanup",
    "setup_bg", "scx", "scx_exec", "guest", "sim", "slurm", "trace",
];

/// Expand one [[config]]: one configuration per combination of its
/// matrix's values.
fn expand_config(loc: &Loc, table: &Spanned<Table>) -> Result<Vec<ConfigSpec>, CampaignError> {
    let span = table.span();
    let t = table.get_ref();
    let line = loc.line(span.start);
    for k in t.keys() {
        if !CONFIG_KEYS.contains(&k.as_str()) {
            return Err(loc.err(
                loc.key_line(span.clone(), k),
                format!(
                    "[[config]] has no key {k:?} (it has: {})",
                    CONFIG_KEYS.join(", ")
                ),
            ));
        }
    }
    let combos = matrix_combos(loc, span.clone(), t)?;
    let mut out = Vec::new();
    for vars in combos {
        let mut t = t.clone();
        t.remove("matrix");
        let Value::Table(t) = substitute(&Value::Table(t), &vars) else {
            unreachable!("a table stays a table")
        };
        let config = ConfigTable {
            loc,
            span: span.clone(),
            line,
            t,
        };
        out.push(config.config()?);
    }
    Ok(out)
}

/// The matrix's variables, every combination (in the keys' order); one
/// empty combination without a matrix.
fn matrix_combos(
    loc: &Loc,
    span: std::ops::Range<usize>,
    t: &Table,
) -> Result<Vec<Vec<(String, Value)>>, CampaignError> {
    let at = |key: &str| loc.key_line(span.clone(), key);
    let mut combos: Vec<Vec<(String, Value)>> = vec![Vec::new()];
    if let Some(m) = t.get("matrix") {
        let Value::Table(m) = m else {
            return Err(loc.err(
                at("matrix"),
                "matrix: a table of lists, e.g. { nb = [0, 1] }",
            ));
        };
        if m.is_empty() {
            return Err(loc.err(at("matrix"), "matrix = {}: an empty matrix runs nothing"));
        }
        for (var, values) in m {
            let values = match values {
                Value::Array(a) if a.is_empty() => {
                    return Err(loc.err(
                        at("matrix"),
                        format!("matrix: {var} = []: an empty list runs nothing"),
                    ))
                }
                Value::Array(a) => a.clone(),
                one => vec![one.clone()],
            };
            let mut next = Vec::new();
            for c in &combos {
                for v in &values {
                    let mut c = c.clone();
                    c.push((var.clone(), v.clone()));
                    next.push(c);
                }
            }
            combos = next;
        }
    }
    Ok(combos)
}

/// One [[config]] with one combination of its matrix's values
/// substituted: where it is in the file, and its keys.
struct ConfigTable<'a> {
    loc: &'a Loc<'a>,
    /// The [[config]] table's span in the file.
    span: std::ops::Range<usize>,
    /// Its first line.
    line: usize,
    t: Table,
}

impl ConfigTable<'_> {
    /// The line of `key`.
    fn at(&self, key: &str) -> usize {
        self.loc.key_line(self.span.clone(), key)
    }

    /// A string key, if given.
    fn text(&self, key: &str) -> Result<Option<String>, CampaignError> {
        match self.t.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.loc.err(
                self.at(key),
                format!("{key} = {}: a string, e.g. {key} = \"...\"", show(other)),
            )),
        }
    }

    /// A table of names and values (`sysctl`, `sysfs`), empty if not
    /// given.
    fn map(&self, key: &str) -> Result<BTreeMap<String, String>, CampaignError> {
        let loc = self.loc;
        match self.t.get(key) {
            None => Ok(BTreeMap::new()),
            Some(Value::Table(m)) => m
                .iter()
                .map(|(k, v)| {
                    scalar_text(v).map(|s| (k.clone(), s)).ok_or_else(|| {
                        loc.err(
                            self.at(key),
                            format!("{key}: {k} = {} is not a value", show(v)),
                        )
                    })
                })
                .collect(),
            Some(_) => Err(loc.err(
                self.at(key),
                format!("{key}: a table, e.g. {key} = {{ \"name\" = \"value\" }}"),
            )),
        }
    }

    /// A table read as a type (`guest`, `sim`, `slurm`), if given.
    fn typed<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>, CampaignError> {
        self.t
            .get(key)
            .cloned()
            .map(|v| v.try_into())
            .transpose()
            .map_err(|e: toml::de::Error| {
                self.loc
                    .err(self.at(key), format!("{key}: {}", e.message().trim_end()))
            })
    }

    /// `trace`: whether its runs record their scheduling events.
    fn trace(&self) -> Result<bool, CampaignError> {
        match self.t.get("trace") {
            None => Ok(false),
            Some(Value::Boolean(b)) => Ok(*b),
            Some(other) => Err(self.loc.err(
                self.at("trace"),
                format!(
                    "trace = {}: true or false (whether its runs record their scheduling events, as --trace)",
                    show(other)
                ),
            )),
        }
    }

    /// `label`, which every configuration has, checked as --label is.
    fn label(&self) -> Result<String, CampaignError> {
        let label = self.text("label")?.ok_or_else(|| {
            self.loc.err(
                self.line,
                "[[config]] without a label (it names the configuration in tables)",
            )
        })?;
        numalab_runner::check_label(&label).map_err(|e| {
            self.loc
                .err(self.at("label"), e.to_string().replace("--label", "label"))
        })?;
        Ok(label)
    }

    /// The configuration, every key checked.
    fn config(&self) -> Result<ConfigSpec, CampaignError> {
        let (loc, line) = (self.loc, self.line);
        let trace = self.trace()?;
        let label = self.label()?;
        let guest: Option<GuestSpec> = self.typed("guest")?;
        let sim: Option<SimSpec> = self.typed("sim")?;
        let slurm: SlurmPlace = self.typed("slurm")?.unwrap_or_default();
        let target = self.target(&label, guest, sim)?;
        let (scx, scx_exec) = self.scx(&label, &target)?;
        let c = ConfigSpec {
            label: label.clone(),
            sysctl: self.map("sysctl")?,
            governor: self.text("governor")?,
            thp: self.text("thp")?,
            sysfs: self.map("sysfs")?,
            prepare: self.text("prepare")?,
            setup: self.text("setup")?,
            cleanup: self.text("cleanup")?,
            setup_bg: self.text("setup_bg")?,
            scx,
            scx_exec,
            target,
            trace,
            slurm,
            line,
        };
        let runner = c
            .configuration()
            .map_err(|e| loc.err(line, format!("configuration {label:?}: {e}")))?;
        let site = match c.target {
            Target::Host => numalab_runner::SettingsSite::ThisMachine,
            Target::Guest(_) => numalab_runner::SettingsSite::Backend,
            // The simulator models `thp` only, checked here.
            Target::Sim(_) => {
                numalab_sim::check_settings(&runner.knobs)
                    .map_err(|e| loc.err(line, format!("configuration {label:?}: {e}")))?;
                numalab_runner::SettingsSite::Backend
            }
        };
        // This machine's settings are checked where they are applied (a
        // Slurm node, not the machine that reads the plan).
        if !matches!(c.target, Target::Host) {
            numalab_runner::check_config(&runner, &site)
                .map_err(|e| loc.err(line, format!("configuration {label:?}: {e}")))?;
        }
        Ok(c)
    }

    /// Where configuration `label` runs: this machine, its guest or its
    /// simulated machine, files named relative to the plan found from
    /// anywhere.
    fn target(
        &self,
        label: &str,
        guest: Option<GuestSpec>,
        sim: Option<SimSpec>,
    ) -> Result<Target, CampaignError> {
        let loc = self.loc;
        // Files named relative to the plan are found from anywhere.
        let base = loc.path.parent().unwrap_or(Path::new(""));
        let guest = guest.map(|mut g| {
            // A kernel by name (`debian-7.3`) stays a name.
            if let Some(k) = &g.kernel {
                if k.to_str().and_then(numalab_guest::named::lookup).is_none() {
                    g.kernel = Some(base.join(k));
                }
            }
            if let Some(m) = &g.modules {
                g.modules = Some(base.join(m));
            }
            g
        });
        let sim = sim.map(|mut s| {
            if s.machine.contains('/') || s.machine.ends_with(".toml") {
                s.machine = base.join(&s.machine).to_string_lossy().to_string();
            }
            s
        });
        match (guest, sim) {
            (Some(_), Some(_)) => Err(loc.err(
                self.line,
                format!("configuration {label:?}: a guest or a simulated machine, not both"),
            )),
            (Some(g), None) => {
                check_guest(&g).map_err(|e| loc.err(self.at("guest"), format!("guest: {e}")))?;
                Ok(Target::Guest(g))
            }
            (None, Some(s)) => {
                check_sim(&s).map_err(|e| loc.err(self.at("sim"), format!("sim: {e}")))?;
                Ok(Target::Sim(s))
            }
            (None, None) => Ok(Target::Host),
        }
    }

    /// Configuration `label`'s sched_ext scheduler: `scx` (canonical) or
    /// `scx_exec`, on a real kernel only.
    fn scx(
        &self,
        label: &str,
        target: &Target,
    ) -> Result<(Option<String>, Option<String>), CampaignError> {
        let loc = self.loc;
        let (scx, scx_exec) = (self.text("scx")?, self.text("scx_exec")?);
        if scx.is_some() && scx_exec.is_some() {
            return Err(loc.err(
                self.line,
                format!("configuration {label:?}: scx or scx_exec, not both"),
            ));
        }
        let scx = scx
            .map(|spec| -> Result<String, CampaignError> {
                let (scx, _) = numalab_scx::parse(&spec)
                    .map_err(|e| loc.err(self.at("scx"), format!("scx: {e}")))?;
                if !numalab_scx::BUILT {
                    return Err(loc.err(
                        self.at("scx"),
                        numalab_scx::not_built(&format!("scx = {spec:?}")),
                    ));
                }
                Ok(scx.name().to_string())
            })
            .transpose()?;
        if (scx.is_some() || scx_exec.is_some()) && matches!(target, Target::Sim(_)) {
            return Err(loc.err(
                self.line,
                format!(
                    "configuration {label:?}: sched_ext schedulers (scx, scx_exec) run on real kernels; the simulator's scheduler is sim.scheduler"
                ),
            ));
        }
        Ok((scx, scx_exec))
    }
}

/// A guest's keys, checked as `numalab vm` checks its flags.
fn check_guest(g: &GuestSpec) -> Result<(), TargetError> {
    numalab_guest::VmSpec::parse(&guest_spec_input(g))?;
    if let Some(a) = &g.accel {
        AccelChoice::from_name(a).ok_or_else(|| TargetError::Accel(a.clone()))?;
    }
    if let Some(r) = &g.rootfs {
        Rootfs::from_name(r).ok_or_else(|| TargetError::Rootfs(r.clone()))?;
    }
    if g.timeout_s == Some(0) {
        return Err(TargetError::NoTimeout);
    }
    Ok(())
}

/// A guest spec as `numalab vm`'s shape flags.
pub fn guest_spec_input(g: &GuestSpec) -> numalab_guest::SpecInput {
    numalab_guest::SpecInput {
        nodes: g.nodes,
        cpus_per_node: g.cpus_per_node,
        mem_per_node: g.mem_per_node.clone(),
        distances: g.distances.clone(),
        memory_only_nodes: g.memory_only_nodes.clone(),
    }
}

/// A simulated machine's keys, checked as `numalab sim` checks its
/// flags: by building the simulator's configuration from them.
fn check_sim(s: &SimSpec) -> Result<(), TargetError> {
    crate::local::sim_options(s).config(Interval::Auto)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(src: &str) -> Result<Plan, String> {
        parse(Path::new("p.toml"), src).map_err(|e| e.to_string())
    }

    const BENCH: &str = "[[benchmark]]\nname = \"numa02\"\nthreads = 2\n";

    #[test]
    fn trace_on_a_benchmark_or_a_configuration_traces_its_cells_and_changes_the_hash() {
        let plain = plan(BENCH).unwrap();
        assert!(!plain.benchmarks[0].trace && !plain.configs[0].trace);
        // `trace = false` is the default: the same plan, the same hash
        // (a plan written before the key kept its results directory).
        let off = plan(&format!("{BENCH}trace = false\n")).unwrap();
        assert_eq!(off.hash, plain.hash);
        let on = plan(&format!("{BENCH}trace = true\n")).unwrap();
        assert!(on.benchmarks[0].trace);
        assert_eq!(on.benchmarks[0].args, plain.benchmarks[0].args);
        assert_ne!(on.hash, plain.hash);
        let config = |trace: &str| {
            plan(&format!(
                "{BENCH}[[config]]\nlabel = \"a\"\n{trace}[[config]]\nlabel = \"b\"\n"
            ))
            .unwrap()
        };
        let (c_plain, c_on) = (config(""), config("trace = true\n"));
        assert_eq!(
            c_on.configs.iter().map(|c| c.trace).collect::<Vec<_>>(),
            [true, false]
        );
        assert_ne!(c_on.hash, c_plain.hash);
        // A cell's key hashes its configuration: tracing is not part of it.
        assert_eq!(canonical(&c_on.configs[0]), canonical(&c_plain.configs[0]));
        // A matrix can compare traced and untraced runs.
        let m = plan(&format!(
            "{BENCH}[[config]]\nlabel = \"trace {{t}}\"\nmatrix = {{ t = [false, true] }}\ntrace = \"{{t}}\"\n"
        ))
        .unwrap();
        assert_eq!(
            m.configs
                .iter()
                .map(|c| (c.label.as_str(), c.trace))
                .collect::<Vec<_>>(),
            [("trace false", false), ("trace true", true)]
        );
    }

    #[test]
    fn setup_bg_reaches_the_runner_and_leaves_other_keys_alone() {
        let cfg = |extra: &str| {
            plan(&format!(
                "{BENCH}[[config]]\nlabel = \"a\"\nsetup = \"true\"\n{extra}"
            ))
        };
        let plain = cfg("").unwrap();
        let bg = cfg("setup_bg = \"sleep 1000\"\n").unwrap();
        let r = bg.configs[0].configuration().unwrap();
        assert_eq!(r.setup_bg.as_deref(), Some("sleep 1000"));
        assert_eq!(plain.configs[0].configuration().unwrap().setup_bg, None);
        // A plan without it keeps its cells' keys; with it, they differ.
        assert!(!canonical(&plain.configs[0]).contains("setup_bg"));
        assert_ne!(canonical(&bg.configs[0]), canonical(&plain.configs[0]));
        let e = cfg("setup_bg = \"sleep 1\\nrm x\"\n").unwrap_err();
        assert!(e.contains("control character"), "{e}");
    }

    #[test]
    fn scx_keys_reach_the_runner_and_leave_other_keys_alone() {
        use numalab_linux::sched_ext::Scx;
        let cfg = |extra: &str| plan(&format!("{BENCH}[[config]]\nlabel = \"a\"\n{extra}"));
        let plain = cfg("").unwrap();
        assert!(!canonical(&plain.configs[0]).contains("scx"));
        let exec = cfg("scx_exec = \"scx_simple\"\n").unwrap();
        assert_eq!(
            exec.configs[0].configuration().unwrap().scx,
            Some(Scx::Exec {
                cmd: "scx_simple".into()
            })
        );
        assert_ne!(canonical(&exec.configs[0]), canonical(&plain.configs[0]));
        // numalab's own, canonical; refused in one line by a build
        // without them.
        match cfg("scx = \"fifo:slice_ms=5\"\n") {
            Ok(own) => {
                assert!(std::hint::black_box(numalab_scx::BUILT));
                assert_eq!(own.configs[0].scx.as_deref(), Some("fifo[slice_ms=5]"));
                let r = own.configs[0].configuration().unwrap();
                assert_eq!(
                    r.scx,
                    Some(Scx::Own {
                        spec: "fifo[slice_ms=5]".into(),
                        ops: "numalab_fifo".into()
                    })
                );
            }
            Err(e) => {
                assert!(!std::hint::black_box(numalab_scx::BUILT), "{e}");
                assert!(e.contains("built without its sched_ext schedulers"), "{e}");
            }
        }
        for (extra, want) in [
            (
                "scx = \"cfs\"\n",
                "not one of numalab's sched_ext schedulers",
            ),
            (
                "scx = \"fifo\"\nscx_exec = \"x\"\n",
                "scx or scx_exec, not both",
            ),
            (
                "scx_exec = \"x\"\nsim = { machine = \"ht2\" }\n",
                "run on real kernels",
            ),
            ("scx_exec = \"x\\ny\"\n", "control character"),
        ] {
            let e = cfg(extra).unwrap_err();
            assert!(e.contains(want), "{extra}: {e}");
        }
    }

    #[test]
    fn a_guest_kernel_by_name_stays_a_name_and_a_path_is_the_plans() {
        let p = parse(
            Path::new("/plans/p.toml"),
            &format!(
                "{BENCH}[[config]]\nlabel = \"scx\"\nguest = {{ nodes = 2, kernel = \"debian-7.3\" }}\n\
                 [[config]]\nlabel = \"own\"\nguest = {{ nodes = 2, kernel = \"bzImage\" }}\n"
            ),
        )
        .unwrap();
        let kernels: Vec<Option<PathBuf>> = p
            .configs
            .iter()
            .map(|c| match &c.target {
                Target::Guest(g) => g.kernel.clone(),
                _ => None,
            })
            .collect();
        assert_eq!(
            kernels,
            [
                Some(PathBuf::from("debian-7.3")),
                Some(PathBuf::from("/plans/bzImage"))
            ]
        );
    }

    #[test]
    fn trace_takes_true_or_false_and_errors_name_the_line() {
        let e = plan(&format!("{BENCH}trace = \"yes\"\n")).unwrap_err();
        assert!(
            e.starts_with("p.toml:4: trace = \"yes\": true or false"),
            "{e}"
        );
        let e = plan(&format!("{BENCH}trace = [false, true]\n")).unwrap_err();
        assert!(
            e.starts_with("p.toml:4: trace = [false, true]: true or false"),
            "{e}"
        );
        let e = plan(&format!("{BENCH}[[config]]\nlabel = \"a\"\n\ntrace = 1\n")).unwrap_err();
        assert!(e.starts_with("p.toml:7: trace = 1: true or false"), "{e}");
        // Tracing makes no other case: the same benchmark traced and not
        // is one benchmark twice.
        let e = plan(&format!("{BENCH}{BENCH}trace = true\n")).unwrap_err();
        assert!(
            e.starts_with("p.toml:5: numa02 threads=2 is also the benchmark on line 2"),
            "{e}"
        );
        // The key is listed among a benchmark's.
        let e = plan(&format!("{BENCH}tracee = true\n")).unwrap_err();
        assert!(e.contains(", trace)"), "{e}");
    }

    #[test]
    fn guest_and_sim_keys_left_out_are_the_flags_defaults() {
        let p = plan(&format!(
            "{BENCH}[[config]]\nlabel = \"g\"\nguest = {{}}\n\
             [[config]]\nlabel = \"s\"\nsim = {{ machine = \"ht2\" }}\n"
        ))
        .unwrap();
        let Target::Guest(g) = &p.configs[0].target else {
            panic!("{:?}", p.configs[0].target)
        };
        assert_eq!(*g, GuestSpec::default());
        assert_eq!(
            (g.nodes, g.cpus_per_node, g.mem_per_node.as_str()),
            (2, 1, "512M")
        );
        assert_eq!((&g.accel, &g.rootfs, g.timeout_s), (&None, &None, None));
        let Target::Sim(s) = &p.configs[1].target else {
            panic!("{:?}", p.configs[1].target)
        };
        let o = crate::local::sim_options(s);
        assert_eq!(o, SimOptions::new("ht2"));
        assert_eq!(
            (s.scheduler.as_str(), s.balancer.as_str(), s.seed),
            ("linux", "none", 1)
        );
        assert_eq!((s.tick_us, s.max_sim_s), (1000, 3600.0));
    }

    #[test]
    fn bad_guest_and_sim_values_are_refused_naming_their_key() {
        let cfg = |t: &str| plan(&format!("{BENCH}[[config]]\nlabel = \"c\"\n{t}\n"));
        for (t, want) in [
            (
                "sim = { machine = \"ht2\", tick_us = 0 }",
                "sim: tick_us = 0: 1 to 100000",
            ),
            (
                "sim = { machine = \"ht2\", tick_us = 100001 }",
                "sim: tick_us = 100001: 1 to 100000",
            ),
            (
                "sim = { machine = \"ht2\", max_sim_s = -1.0 }",
                "sim: max_sim_s = -1: a positive number of seconds",
            ),
            (
                "sim = { machine = \"ht2\", max_sim_s = nan }",
                "sim: max_sim_s = NaN: a positive number of seconds",
            ),
            // The machine and its policies before the limits.
            (
                "sim = { machine = \"ht2\", scheduler = \"x\", tick_us = 0 }",
                "sim: unknown scheduler \"x\"",
            ),
            (
                "guest = { accel = \"xen\" }",
                "guest: accel = \"xen\": auto, kvm or tcg",
            ),
            (
                "guest = { accel = \"KVM\" }",
                "guest: accel = \"KVM\": auto, kvm or tcg",
            ),
            (
                "guest = { rootfs = \"auto\" }",
                "guest: rootfs = \"auto\": host or initramfs",
            ),
            (
                "guest = { timeout_s = 0 }",
                "guest: timeout_s = 0: at least 1 second",
            ),
            (
                "guest = { nodes = 0 }",
                "guest: --nodes: must be at least 1",
            ),
        ] {
            let e = cfg(t).unwrap_err();
            assert!(e.starts_with(&format!("p.toml:6: {want}")), "{t}: {e}");
        }
        for (t, kind) in [
            ("sim = { machine = \"ht2\", tick_us = 1 }", "sim"),
            (
                "sim = { machine = \"ht2\", tick_us = 100000, max_sim_s = 1e-9 }",
                "sim",
            ),
            (
                "guest = { accel = \"tcg\", rootfs = \"initramfs\", timeout_s = 1 }",
                "guest",
            ),
        ] {
            assert_eq!(cfg(t).unwrap().configs[0].kind(), kind, "{t}");
        }
        assert_eq!(one_of(&["a"]), "a");
    }

    #[test]
    fn a_simulated_configuration_takes_thp_and_nothing_else_of_the_machine() {
        let sim = "sim = { machine = \"ht2\", balancer = \"autonuma\" }\n";
        let p = plan(&format!(
            "{BENCH}[[config]]\nlabel = \"base pages\"\nthp = \"never\"\n{sim}"
        ))
        .unwrap();
        assert_eq!(p.configs[0].thp.as_deref(), Some("never"));
        let e = plan(&format!(
            "{BENCH}[[config]]\nlabel = \"a\"\ngovernor = \"performance\"\n{sim}"
        ))
        .unwrap_err();
        assert!(
            e.starts_with(
                "p.toml:4: configuration \"a\": governor: the simulator models no such setting"
            ),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }
}

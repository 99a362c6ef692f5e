//! Records grouped the way `compare`, `show` and `report` need them.
//!
//! A **case** is one benchmark with one set of resolved parameters (e.g.
//! `numa_test tasks=4`); a **configuration** is what is being compared. By
//! default that is the label, the host, the backend kind (real, guest,
//! sim) and the scheduler (a sched_ext program or the simulator's policy:
//! runs of one label under two schedulers are never pooled);
//! [`DatasetOptions::group_by`] makes it any list of [`Key`]s
//! instead (the kernel, a sysctl, a parameter, ...). A parameter that
//! makes the configuration is no longer part of the case. A **group** is
//! the runs of one configuration in one case. The host is part of the
//! default configuration so that directories copied from several machines
//! can be merged without their runs being pooled.
//!
//! Names are for people: parameter values print as they read (strings
//! unquoted, arrays comma-joined, objects as `key:value` pairs), never as
//! JSON, and two different cases never get the same name.

use numalab_record::RunRecord;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::PathBuf;

/// One loaded record and where it came from.
#[derive(Debug, Clone)]
pub struct Run {
    pub path: PathBuf,
    pub record: RunRecord,
    pub case: usize,
    pub config: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Config {
    /// The label of its runs; with `--group-by` keys that leave the label
    /// out, the labels of its runs, comma-separated.
    pub label: String,
    /// The host of its runs (comma-separated when they differ, as above).
    pub host: String,
    /// `real`, `guest` or `sim` (comma-separated when they differ).
    pub backend: String,
    /// How tables name it. By default the label, with `@host` when the
    /// records come from more than one host and `/backend` when they mix
    /// backends; with `--group-by` the values of the keys joined by `/`.
    pub name: String,
    /// The values of the `--group-by` keys, in their order; empty for the
    /// default grouping.
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Case {
    pub benchmark: String,
    /// The parameters that make the case: the record's `params` less those
    /// the configurations are grouped by.
    pub params: BTreeMap<String, serde_json::Value>,
    /// Canonical JSON of `params` (keys sorted at every level): an
    /// identity, never shown.
    #[serde(skip)]
    pub params_key: String,
    /// `benchmark` and the parameters that vary between this benchmark's
    /// cases, e.g. `numa_test tasks=4`; unique among the cases.
    pub name: String,
    /// Only the varying parameters, e.g. `tasks=4` (empty when the
    /// benchmark has a single case).
    pub variant: String,
}

#[derive(Debug, Clone)]
pub struct Group {
    pub case: usize,
    pub config: usize,
    /// Indices into [`Dataset::runs`] of successful runs, by repetition.
    pub ok: Vec<usize>,
    /// Indices of failed runs.
    pub failed: Vec<usize>,
}

#[derive(Debug, Clone, Default)]
pub struct Dataset {
    pub runs: Vec<Run>,
    pub configs: Vec<Config>,
    pub cases: Vec<Case>,
    pub groups: Vec<Group>,
    /// Problems with the input that did not stop it being used, one line
    /// each (duplicate records).
    pub warnings: Vec<String>,
    /// What makes a configuration; empty: label, host and backend.
    pub group_by: Vec<Key>,
    /// The filters the runs were selected with.
    pub filters: Vec<Filter>,
}

/// A property of a run record: what configurations are made of
/// (`--group-by`) and what records are selected by (`--filter`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// `label`: the record's label.
    Label,
    /// `kernel`: `machine.kernel`.
    Kernel,
    /// `host`: `machine.hostname`.
    Host,
    /// `backend`: real, guest or sim.
    Backend,
    /// `numa_balancing`: `machine.numa_balancing`.
    NumaBalancing,
    /// `thp`: `machine.thp_enabled`.
    Thp,
    /// `scheduler`: the simulator's `--scheduler`, a real kernel's
    /// sched_ext scheduler (`applied.scx`), or `linux` for a real
    /// kernel's own (which the simulator's `linux` models), so that the
    /// same policy lines up across backends.
    Scheduler,
    /// `benchmark`: for `--filter` only (the benchmark is part of every
    /// case).
    Benchmark,
    /// Any other name: that parameter of the record's `params`.
    Param(String),
}

/// The keys `--group-by` takes besides any parameter name.
pub const GROUP_KEYS: [&str; 7] = [
    "label",
    "kernel",
    "host",
    "backend",
    "numa_balancing",
    "thp",
    "scheduler",
];

impl Key {
    /// A named key, or else a parameter name.
    pub fn parse(name: &str) -> Key {
        match name {
            "label" => Key::Label,
            "kernel" => Key::Kernel,
            "host" => Key::Host,
            "backend" => Key::Backend,
            "numa_balancing" => Key::NumaBalancing,
            "thp" => Key::Thp,
            "scheduler" => Key::Scheduler,
            "benchmark" => Key::Benchmark,
            other => Key::Param(other.to_string()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Key::Label => "label",
            Key::Kernel => "kernel",
            Key::Host => "host",
            Key::Backend => "backend",
            Key::NumaBalancing => "numa_balancing",
            Key::Thp => "thp",
            Key::Scheduler => "scheduler",
            Key::Benchmark => "benchmark",
            Key::Param(p) => p,
        }
    }

    /// The record's value as tables show it (`n/a` for machine facts not
    /// recorded); `None` for a parameter the record does not have.
    pub fn value(&self, r: &RunRecord) -> Option<String> {
        let m = &r.machine;
        let na = |v: &Option<String>| v.clone().unwrap_or_else(|| "n/a".into());
        Some(match self {
            Key::Label => r.label.clone(),
            Key::Kernel => m.kernel.clone(),
            Key::Host => m.hostname.clone(),
            Key::Backend => r.backend.kind().to_string(),
            Key::NumaBalancing => na(&m.numa_balancing),
            Key::Thp => na(&m.thp_enabled),
            Key::Scheduler => match (&r.backend, &r.applied.scx) {
                (numalab_record::Backend::Sim { scheduler, .. }, _) => scheduler.clone(),
                // Another program (`--scx-exec`): the name the kernel
                // enabled it under, not its command line.
                (_, Some(scx)) if scx.exec => scx.ops.clone(),
                (_, Some(scx)) => scx.scheduler.clone(),
                (_, None) => "linux".into(),
            },
            Key::Benchmark => r.benchmark.clone(),
            Key::Param(p) => return r.params.get(p).map(param_value),
        })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One `--group-by` key (the option's values are comma-separated).
/// Whether a parameter name exists is checked against the records, by
/// [`Dataset::with_options`].
pub fn parse_group_key(s: &str) -> Result<Key, GroupKeyError> {
    let s = s.trim();
    let valid = format!("{}, or a parameter name", GROUP_KEYS.join(", "));
    if s.is_empty() {
        return Err(GroupKeyError::Empty { valid });
    }
    match Key::parse(s) {
        Key::Benchmark => Err(GroupKeyError::Benchmark { valid }),
        k => Ok(k),
    }
}

/// Why a `--group-by` key is refused; `valid` lists the valid keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupKeyError {
    /// An empty key (`--group-by label,`).
    #[error("an empty key; valid keys: {valid}")]
    Empty { valid: String },
    /// `benchmark`, which is part of every case.
    #[error("the benchmark is part of every case, not of a configuration (--filter benchmark=NAME picks one); valid keys: {valid}")]
    Benchmark { valid: String },
}

/// A `--filter` that is not `KEY=VALUE` (the text given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not KEY=VALUE (e.g. placement=bind, kernel=6.1.0, benchmark=numa01)")]
pub struct FilterError(pub String);

/// `--filter KEY=VALUE`: keep the records whose `KEY` is `VALUE`. Numbers
/// compare by value (`bytes=1e9` matches 1000000000).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub key: Key,
    pub value: String,
}

impl Filter {
    pub fn matches(&self, r: &RunRecord) -> bool {
        match self.key.value(r) {
            Some(v) => {
                v == self.value
                    || matches!(
                        (v.parse::<f64>(), self.value.trim().parse::<f64>()),
                        (Ok(a), Ok(b)) if a == b
                    )
            }
            None => false,
        }
    }
}

impl std::str::FromStr for Filter {
    type Err = FilterError;
    fn from_str(s: &str) -> Result<Filter, FilterError> {
        match s.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok(Filter {
                key: Key::parse(k.trim()),
                value: v.to_string(),
            }),
            _ => Err(FilterError(s.to_string())),
        }
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// How to select and group records; the default is what `compare` has
/// always done: every record, configurations by label, host and backend.
#[derive(Debug, Clone, Default)]
pub struct DatasetOptions {
    /// What makes a configuration; empty: label + host + backend.
    pub group_by: Vec<Key>,
    /// Keep only matching records. Filters on the same key are
    /// alternatives (`placement=bind` or `placement=default`); filters on
    /// different keys must all hold.
    pub filters: Vec<Filter>,
}

/// A `--group-by` or `--filter` that cannot be applied to these records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatasetError {
    /// A key that is neither a named key nor a parameter of any record.
    UnknownKey {
        option: &'static str,
        given: String,
        keys: Vec<String>,
        params: Vec<String>,
    },
    /// A filter that matches no record.
    FilterMatchesNothing { filter: String, values: Vec<String> },
    /// Filters that each match some record but together none.
    FiltersKeepNothing { filters: Vec<String> },
}

impl fmt::Display for DatasetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatasetError::UnknownKey {
                option,
                given,
                keys,
                params,
            } => {
                write!(
                    f,
                    "{option} {given:?}: no such key; valid keys: {}",
                    keys.join(", ")
                )?;
                if params.is_empty() {
                    write!(f, " (the records have no parameters)")
                } else {
                    write!(f, ", or a parameter: {}", params.join(", "))
                }
            }
            DatasetError::FilterMatchesNothing { filter, values } => {
                write!(f, "--filter {filter} keeps no record")?;
                if let Some((key, _)) = filter.split_once('=') {
                    const SHOWN: usize = 12;
                    let mut v: Vec<String> = values.iter().take(SHOWN).cloned().collect();
                    if values.len() > SHOWN {
                        v.push(format!("... ({} values)", values.len()));
                    }
                    write!(f, "; the records have {key} = {}", v.join(", "))?;
                }
                Ok(())
            }
            DatasetError::FiltersKeepNothing { filters } => write!(
                f,
                "--filter {}: each keeps some records, together they keep none",
                filters.join(" --filter ")
            ),
        }
    }
}

impl std::error::Error for DatasetError {}

/// JSON with object keys sorted at every level, whatever map type
/// serde_json was built with. An identity for parameters, never shown.
pub fn canonical_json(v: &serde_json::Value) -> String {
    fn canon(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let sorted: BTreeMap<&String, serde_json::Value> =
                    m.iter().map(|(k, v)| (k, canon(v))).collect();
                let mut out = serde_json::Map::new();
                for (k, v) in sorted {
                    out.insert(k.clone(), v);
                }
                serde_json::Value::Object(out)
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(canon).collect()),
            other => other.clone(),
        }
    }
    let c = canon(v);
    // Keys are inserted in sorted order; with serde_json's default BTreeMap
    // or its preserve_order IndexMap both print them sorted.
    serde_json::to_string(&c).unwrap_or_default()
}

/// Parameters shared by every case of `benchmark` among `cases`, as
/// `key=value` in key order.
pub fn common_params(cases: &[Case], benchmark: &str) -> Vec<String> {
    let cases: Vec<&Case> = cases.iter().filter(|c| c.benchmark == benchmark).collect();
    let Some(first) = cases.first() else {
        return Vec::new();
    };
    first
        .params
        .iter()
        .filter(|(k, v)| cases.iter().all(|c| c.params.get(*k) == Some(v)))
        .map(|(k, v)| format!("{k}={}", param_value(v)))
        .collect()
}

/// A parameter value as a person reads it, never JSON: scalars as they
/// are (strings unquoted), an array as its values joined by commas, an
/// object as `key:value` pairs joined by commas; values nested deeper
/// join with `+`. Brackets and braces inside strings print as
/// parentheses, so that no name looks like JSON; an empty array or object
/// and null print as `none`.
pub fn param_value(v: &serde_json::Value) -> String {
    readable(v, ",")
}

fn readable(v: &serde_json::Value, sep: &str) -> String {
    use serde_json::Value;
    match v {
        Value::String(s) => plain(s),
        Value::Null => "none".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(a) if a.is_empty() => "none".into(),
        Value::Array(a) => a
            .iter()
            .map(|x| readable(x, "+"))
            .collect::<Vec<_>>()
            .join(sep),
        Value::Object(m) if m.is_empty() => "none".into(),
        Value::Object(m) => {
            let sorted: BTreeMap<&String, &Value> = m.iter().collect();
            sorted
                .into_iter()
                .map(|(k, x)| format!("{}:{}", plain(k), readable(x, "+")))
                .collect::<Vec<_>>()
                .join(sep)
        }
    }
}

/// A string for a name: no brackets or braces, no line breaks.
fn plain(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '{' | '[' => '(',
            '}' | ']' => ')',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// `k=v` pairs of a parameter map, readable, joined by spaces.
pub fn params_text(params: &BTreeMap<String, serde_json::Value>) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={}", param_value(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The parameters that tell these parameter sets apart: those whose value
/// differs between two sets, or that only some sets have.
pub fn varying_keys(sets: &[&BTreeMap<String, serde_json::Value>]) -> BTreeSet<String> {
    let mut values: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut present: BTreeMap<&str, usize> = BTreeMap::new();
    for p in sets {
        for (k, v) in p.iter() {
            values.entry(k).or_default().insert(canonical_json(v));
            *present.entry(k).or_default() += 1;
        }
    }
    values
        .into_iter()
        .filter(|(k, vs)| vs.len() > 1 || present[k] < sets.len())
        .map(|(k, _)| k.to_string())
        .collect()
}

/// The `keys` of `params` as `k=v` pairs joined by spaces, the task count
/// first (the seeds' tables order rows by it), then by name.
pub fn variant_text(
    params: &BTreeMap<String, serde_json::Value>,
    keys: &BTreeSet<String>,
) -> String {
    let mut keys: Vec<&String> = keys.iter().collect();
    keys.sort_by_key(|k| (k.as_str() != "tasks", k.to_string()));
    keys.into_iter()
        .filter_map(|k| params.get(k).map(|v| format!("{k}={}", param_value(v))))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Dataset {
    /// Group records, by label, host and backend. Records with an id
    /// already seen (the same file copied twice) are used once, with a
    /// warning.
    pub fn new(records: Vec<(PathBuf, RunRecord)>) -> Dataset {
        Dataset::build(records, Vec::new(), Vec::new())
    }

    /// Select records with `opts.filters` and group them by
    /// `opts.group_by`. An unknown key, or a filter that keeps nothing, is
    /// an error naming it.
    pub fn with_options(
        records: Vec<(PathBuf, RunRecord)>,
        opts: &DatasetOptions,
    ) -> Result<Dataset, DatasetError> {
        let params: BTreeSet<&str> = records
            .iter()
            .flat_map(|(_, r)| r.params.keys().map(String::as_str))
            .collect();
        let check = |k: &Key, option: &'static str| -> Result<(), DatasetError> {
            let filter = option == "--filter";
            let known = match k {
                Key::Param(p) => params.contains(p.as_str()),
                Key::Benchmark => filter,
                _ => true,
            };
            if known {
                return Ok(());
            }
            let mut keys: Vec<String> = GROUP_KEYS.iter().map(|s| s.to_string()).collect();
            if filter {
                keys.push("benchmark".into());
            }
            Err(DatasetError::UnknownKey {
                option,
                given: k.name().to_string(),
                keys,
                params: params.iter().map(|s| s.to_string()).collect(),
            })
        };
        for k in &opts.group_by {
            check(k, "--group-by")?;
        }
        for f in &opts.filters {
            check(&f.key, "--filter")?;
        }
        for f in &opts.filters {
            if !records.iter().any(|(_, r)| f.matches(r)) {
                let mut values: Vec<String> = records
                    .iter()
                    .filter_map(|(_, r)| f.key.value(r))
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                values.sort_by(|a, b| natural_cmp(a, b));
                return Err(DatasetError::FilterMatchesNothing {
                    filter: f.to_string(),
                    values,
                });
            }
        }
        let mut by_key: Vec<(&Key, Vec<&Filter>)> = Vec::new();
        for f in &opts.filters {
            match by_key.iter_mut().find(|(k, _)| *k == &f.key) {
                Some((_, v)) => v.push(f),
                None => by_key.push((&f.key, vec![f])),
            }
        }
        let total = records.len();
        let kept: Vec<(PathBuf, RunRecord)> = records
            .into_iter()
            .filter(|(_, r)| by_key.iter().all(|(_, fs)| fs.iter().any(|f| f.matches(r))))
            .collect();
        if kept.is_empty() && total > 0 {
            return Err(DatasetError::FiltersKeepNothing {
                filters: opts.filters.iter().map(|f| f.to_string()).collect(),
            });
        }
        let mut group_by: Vec<Key> = Vec::new();
        for k in &opts.group_by {
            if !group_by.contains(k) {
                group_by.push(k.clone());
            }
        }
        Ok(Dataset::build(kept, group_by, opts.filters.clone()))
    }

    fn build(
        records: Vec<(PathBuf, RunRecord)>,
        group_by: Vec<Key>,
        filters: Vec<Filter>,
    ) -> Dataset {
        let mut ds = Dataset {
            group_by,
            filters,
            ..Dataset::default()
        };
        let kept = first_of_each_id(records, &mut ds.warnings);
        let Configurations {
            configs,
            identities,
            index: config_index,
        } = configurations(&kept, &ds.group_by);
        ds.configs = configs;
        let (cases, case_keys) = cases(&kept, &ds.group_by);
        ds.cases = cases;
        let case_index: HashMap<(String, String), usize> = ds
            .cases
            .iter()
            .enumerate()
            .map(|(i, c)| ((c.benchmark.clone(), c.params_key.clone()), i))
            .collect();
        let places: Vec<(usize, usize)> = case_keys
            .iter()
            .zip(&identities)
            .map(|(k, id)| (case_index[k], config_index[id]))
            .collect();
        ds.place_runs(kept, places);
        ds.groups.sort_by_key(|g| (g.case, g.config));
        ds
    }

    /// Add the records to [`Dataset::runs`] by repetition, start and path,
    /// each in the group of its place `(case, configuration)`.
    fn place_runs(&mut self, mut kept: Vec<(PathBuf, RunRecord)>, mut places: Vec<(usize, usize)>) {
        let mut group_index: HashMap<(usize, usize), usize> = HashMap::new();
        // Sorted by index: a record is a large value to move about.
        let mut order: Vec<usize> = (0..kept.len()).collect();
        order.sort_by(|&i, &j| {
            let ((pa, a), (pb, b)) = (&kept[i], &kept[j]);
            (a.repetition.index, &a.started_at, pa).cmp(&(b.repetition.index, &b.started_at, pb))
        });
        // Put the records in that order in place (a swap per record,
        // following the permutation's cycles), with their places.
        let mut done = vec![false; order.len()];
        for start in 0..order.len() {
            let mut k = start;
            while !done[k] {
                done[k] = true;
                let from = order[k];
                if done[from] {
                    break;
                }
                kept.swap(k, from);
                places.swap(k, from);
                k = from;
            }
        }
        self.runs.reserve(kept.len());
        for ((path, r), (case, config)) in kept.into_iter().zip(places) {
            let idx = self.runs.len();
            let ok = r.outcome.is_ok();
            self.runs.push(Run {
                path,
                record: r,
                case,
                config,
            });
            let g = *group_index.entry((case, config)).or_insert_with(|| {
                self.groups.push(Group {
                    case,
                    config,
                    ok: Vec::new(),
                    failed: Vec::new(),
                });
                self.groups.len() - 1
            });
            if ok {
                self.groups[g].ok.push(idx);
            } else {
                self.groups[g].failed.push(idx);
            }
        }
    }

    pub fn group(&self, case: usize, config: usize) -> Option<&Group> {
        self.groups
            .iter()
            .find(|g| g.case == case && g.config == config)
    }

    /// Whether configurations are the default label + host + backend.
    pub fn default_grouping(&self) -> bool {
        self.group_by.is_empty()
    }

    /// What makes a configuration, in words: `label, host, backend` or
    /// the `--group-by` keys joined by `/`.
    pub fn grouping(&self) -> String {
        if self.group_by.is_empty() {
            "label, host, backend".into()
        } else {
            self.group_by
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join("/")
        }
    }

    /// The configuration with this name.
    pub fn config_named(&self, name: &str) -> Option<usize> {
        self.configs.iter().position(|c| c.name == name)
    }

    /// Distinct labels of the runs, sorted with numbers by value.
    pub fn labels(&self) -> Vec<String> {
        let s: BTreeSet<&str> = self.runs.iter().map(|r| r.record.label.as_str()).collect();
        let mut v: Vec<String> = s.into_iter().map(String::from).collect();
        // In the configurations' order: numbers by value (`nb8` < `nb16`).
        v.sort_by(|a, b| natural_cmp(a, b).then_with(|| a.cmp(b)));
        v
    }

    /// Distinct hosts of the runs, sorted.
    pub fn hosts(&self) -> Vec<String> {
        let s: BTreeSet<&str> = self
            .runs
            .iter()
            .map(|r| r.record.machine.hostname.as_str())
            .collect();
        s.into_iter().map(String::from).collect()
    }

    /// Parameters common to every case of `benchmark`, as `k=v` pairs.
    pub fn common_params(&self, benchmark: &str) -> Vec<String> {
        common_params(&self.cases, benchmark)
    }

    /// Successful runs of a group, as records.
    pub fn ok_records(&self, g: &Group) -> Vec<&RunRecord> {
        g.ok.iter().map(|&i| &self.runs[i].record).collect()
    }
}

/// The records with an id not seen before, in order; each one left out
/// (the same file copied twice) is a warning.
fn first_of_each_id(
    records: Vec<(PathBuf, RunRecord)>,
    warnings: &mut Vec<String>,
) -> Vec<(PathBuf, RunRecord)> {
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    let mut kept = Vec::with_capacity(records.len());
    for (path, r) in records {
        if let Some(first) = seen.get(&r.id) {
            warnings.push(format!(
                "{}: same record id as {} ({}); used once",
                path.display(),
                first.display(),
                r.id
            ));
            continue;
        }
        seen.insert(r.id.clone(), path.clone());
        kept.push((path, r));
    }
    kept
}

/// The configurations of a set of records, and which one each record is
/// in.
struct Configurations {
    /// In order.
    configs: Vec<Config>,
    /// Each record's identity: the values it is grouped by.
    identities: Vec<Vec<String>>,
    /// Each identity's index into `configs`.
    index: HashMap<Vec<String>, usize>,
}

/// Whether runs of one label, host and backend ran under different
/// schedulers (a sched_ext program, the simulator's policy): they are
/// different configurations, never pooled, and their names say the
/// scheduler, which label, host and backend alone would not.
fn schedulers_differ(kept: &[(PathBuf, RunRecord)]) -> bool {
    let mut schedulers: BTreeMap<(&str, &str, &str), BTreeSet<String>> = BTreeMap::new();
    for (_, r) in kept {
        schedulers
            .entry((&r.label, &r.machine.hostname, r.backend.kind()))
            .or_default()
            .insert(Key::Scheduler.value(r).unwrap_or_default());
    }
    schedulers.values().any(|s| s.len() > 1)
}

/// The configurations of the records, in order, with each record's
/// identity (the values it is grouped by) and each identity's index.
fn configurations(kept: &[(PathBuf, RunRecord)], group_by: &[Key]) -> Configurations {
    let hosts: BTreeSet<&str> = kept
        .iter()
        .map(|(_, r)| r.machine.hostname.as_str())
        .collect();
    let backends: BTreeSet<&str> = kept.iter().map(|(_, r)| r.backend.kind()).collect();
    let multi_host = hosts.len() > 1;
    let multi_backend = backends.len() > 1;
    let multi_scheduler = schedulers_differ(kept);

    // A configuration's identity: the values of the keys.
    let custom = !group_by.is_empty();
    let identity = |r: &RunRecord| -> Vec<String> {
        if custom {
            group_by
                .iter()
                .map(|k| k.value(r).unwrap_or_else(|| "n/a".into()))
                .collect()
        } else {
            vec![
                r.label.clone(),
                r.machine.hostname.clone(),
                r.backend.kind().to_string(),
                Key::Scheduler.value(r).unwrap_or_default(),
            ]
        }
    };
    type Seen = (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>);
    let mut config_runs: BTreeMap<Vec<String>, Seen> = BTreeMap::new();
    let identities: Vec<Vec<String>> = kept.iter().map(|(_, r)| identity(r)).collect();
    for ((_, r), id) in kept.iter().zip(&identities) {
        let e = config_runs.entry(id.clone()).or_default();
        e.0.insert(r.label.clone());
        e.1.insert(r.machine.hostname.clone());
        e.2.insert(r.backend.kind().to_string());
    }
    // Numbers in order, whatever groups: `scan 2000` before `scan
    // 16000`, by label as by `--group-by` values.
    let mut ids: Vec<&Vec<String>> = config_runs.keys().collect();
    ids.sort_by(|a, b| {
        a.iter()
            .zip(b.iter())
            .map(|(x, y)| natural_cmp(x, y).then_with(|| x.cmp(y)))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let join = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(",");
    let configs: Vec<Config> = ids
        .iter()
        .map(|id| {
            let (labels, hosts, backends) = &config_runs[*id];
            if custom {
                Config {
                    label: join(labels),
                    host: join(hosts),
                    backend: join(backends),
                    name: id.join("/"),
                    values: id.to_vec(),
                }
            } else {
                let mut name = id[0].clone();
                if multi_host {
                    name = format!("{name}@{}", id[1]);
                }
                if multi_backend {
                    name = format!("{name}/{}", id[2]);
                }
                if multi_scheduler {
                    name = format!("{name}/{}", id[3]);
                }
                Config {
                    label: id[0].clone(),
                    host: id[1].clone(),
                    backend: id[2].clone(),
                    name,
                    values: Vec::new(),
                }
            }
        })
        .collect();
    let config_index: HashMap<Vec<String>, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.to_vec(), i))
        .collect();
    Configurations {
        configs,
        identities,
        index: config_index,
    }
}

/// The cases of the records, in order (by benchmark, then numerically by
/// their varying parameters), with each record's case key.
fn cases(kept: &[(PathBuf, RunRecord)], group_by: &[Key]) -> (Vec<Case>, Vec<(String, String)>) {
    // Cases: a parameter that makes the configuration is not part of
    // the case.
    let grouped: BTreeSet<String> = group_by
        .iter()
        .filter_map(|k| match k {
            Key::Param(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    let case_params = |r: &RunRecord| -> BTreeMap<String, serde_json::Value> {
        r.params
            .iter()
            .filter(|(k, _)| !grouped.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let case_key = |r: &RunRecord| {
        let params = serde_json::to_value(case_params(r)).unwrap_or_default();
        (r.benchmark.clone(), canonical_json(&params))
    };
    let mut case_map: BTreeMap<(String, String), BTreeMap<String, serde_json::Value>> =
        BTreeMap::new();
    let case_keys: Vec<(String, String)> = kept.iter().map(|(_, r)| case_key(r)).collect();
    for ((_, r), key) in kept.iter().zip(&case_keys) {
        if !case_map.contains_key(key) {
            case_map.insert(key.clone(), case_params(r));
        }
    }
    // Parameters that vary between the cases of each benchmark.
    let mut sets: BTreeMap<&str, Vec<&BTreeMap<String, serde_json::Value>>> = BTreeMap::new();
    for ((b, _), params) in &case_map {
        sets.entry(b.as_str()).or_default().push(params);
    }
    let varying: BTreeMap<&str, BTreeSet<String>> =
        sets.iter().map(|(b, s)| (*b, varying_keys(s))).collect();
    let mut cases: Vec<Case> = case_map
        .iter()
        .map(|((b, key), params)| {
            let variant = variant_text(params, &varying[b.as_str()]);
            let name = if variant.is_empty() {
                b.clone()
            } else {
                format!("{b} {variant}")
            };
            Case {
                benchmark: b.clone(),
                params: params.clone(),
                params_key: key.clone(),
                name,
                variant,
            }
        })
        .collect();
    // Order cases by benchmark, then numerically by their varying
    // parameters (tasks=4 before tasks=16), then by key.
    let mut order: Vec<usize> = (0..cases.len()).collect();
    order.sort_by(|&a, &b| {
        let (ca, cb) = (&cases[a], &cases[b]);
        ca.benchmark
            .cmp(&cb.benchmark)
            .then_with(|| natural_cmp(&ca.name, &cb.name))
            .then_with(|| ca.params_key.cmp(&cb.params_key))
    });
    cases = order.iter().map(|&i| cases[i].clone()).collect();
    number_same_names(&mut cases);
    (cases, case_keys)
}

/// Values that read the same (the string "2" and the number 2) would give
/// two cases one name: number them.
fn number_same_names(cases: &mut [Case]) {
    let mut by_name: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, c) in cases.iter().enumerate() {
        by_name.entry(c.name.clone()).or_default().push(i);
    }
    for same in by_name.values().filter(|v| v.len() > 1) {
        for (n, &i) in same.iter().enumerate() {
            let c = &mut cases[i];
            c.variant = format!("{} #{}", c.variant, n + 1).trim().to_string();
            c.name = format!("{} #{}", c.name, n + 1);
        }
    }
}

/// Compare strings with embedded numbers by value (`tasks=4` < `tasks=16`).
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn chunks(s: &str) -> Vec<(bool, String)> {
        let mut out: Vec<(bool, String)> = Vec::new();
        for c in s.chars() {
            let d = c.is_ascii_digit();
            match out.last_mut() {
                Some((ld, cur)) if *ld == d => cur.push(c),
                _ => out.push((d, c.to_string())),
            }
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for (x, y) in ca.iter().zip(cb.iter()) {
        let o = match (x, y) {
            ((true, nx), (true, ny)) => {
                let (tx, ty) = (nx.trim_start_matches('0'), ny.trim_start_matches('0'));
                tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty))
            }
            ((_, sx), (_, sy)) => sx.cmp(sy),
        };
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    ca.len().cmp(&cb.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_record::{example_record, Backend, Outcome};

    fn rec(label: &str, tasks: u64, rep: u32, host: &str) -> (PathBuf, RunRecord) {
        let mut r = example_record("numa_test", label, rep, 10.0 + rep as f64);
        r.params.insert("tasks".into(), tasks.into());
        r.params.insert("size".into(), 1000.into());
        r.machine.hostname = host.into();
        r.id = format!("{label}-{tasks}-{rep}-{host}");
        (PathBuf::from(format!("{}.json", r.id)), r)
    }

    #[test]
    fn groups_by_case_and_configuration() {
        let mut v = Vec::new();
        for label in ["B", "A"] {
            for tasks in [16, 4] {
                for rep in 1..=3 {
                    v.push(rec(label, tasks, rep, "h"));
                }
            }
        }
        let mut failed = rec("A", 4, 4, "h");
        failed.1.outcome = Outcome::failed("boom");
        v.push(failed);
        let ds = Dataset::new(v);
        assert_eq!(ds.labels(), vec!["A", "B"]);
        let names: Vec<&str> = ds.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["A", "B"]);
        let cases: Vec<&str> = ds.cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(cases, vec!["numa_test tasks=4", "numa_test tasks=16"]);
        assert_eq!(ds.groups.len(), 4);
        let g = ds.group(0, 0).unwrap();
        assert_eq!((g.ok.len(), g.failed.len()), (3, 1));
        // Ordered by repetition.
        let reps: Vec<u32> = ds
            .ok_records(g)
            .iter()
            .map(|r| r.repetition.index)
            .collect();
        assert_eq!(reps, vec![1, 2, 3]);
        assert_eq!(ds.common_params("numa_test"), vec!["size=1000"]);
    }

    #[test]
    fn host_and_backend_are_part_of_the_configuration() {
        let mut v = vec![rec("A", 4, 1, "h1"), rec("A", 4, 1, "h2")];
        let mut sim = rec("A", 4, 2, "h1");
        sim.1.backend = Backend::Sim {
            machine: "m".into(),
            scheduler: "s".into(),
            balancer: "b".into(),
            seed: 1,
            details: Default::default(),
        };
        v.push(sim);
        let ds = Dataset::new(v);
        let names: Vec<&str> = ds.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["A@h1/real", "A@h1/sim", "A@h2/real"]);
        assert_eq!(ds.groups.len(), 3);
        assert_eq!(ds.hosts(), vec!["h1", "h2"]);
    }

    /// `--group-by backend,scheduler`: the simulator's policy and the
    /// same policy loaded into a real kernel (sched_ext) line up, and a
    /// real kernel's own scheduler is the simulator's `linux`.
    #[test]
    fn the_scheduler_lines_up_across_backends() {
        let sim = |rep, sched: &str| {
            let mut r = rec("default", 4, rep, "h");
            r.1.backend = Backend::Sim {
                machine: "guest.toml".into(),
                scheduler: sched.into(),
                balancer: "none".into(),
                seed: 1,
                details: Default::default(),
            };
            r.1.id = format!("sim-{sched}-{rep}");
            r
        };
        let real = |rep, scx: Option<&str>| {
            let mut r = rec("default", 4, rep, "h");
            r.1.applied.scx = scx.map(|s| numalab_record::ScxApplied {
                scheduler: s.into(),
                exec: false,
                ops: "numalab_node_affine".into(),
                enable_seq: 1,
            });
            r.1.id = format!("real-{scx:?}-{rep}");
            r
        };
        let v = vec![
            sim(1, "node-affine"),
            sim(2, "linux"),
            real(3, Some("node-affine")),
            real(4, None),
        ];
        let opts = DatasetOptions {
            group_by: vec![Key::Backend, Key::Scheduler],
            filters: vec![],
        };
        let ds = Dataset::with_options(v, &opts).unwrap();
        let configs: Vec<&str> = ds.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            configs,
            vec![
                "real/linux",
                "real/node-affine",
                "sim/linux",
                "sim/node-affine"
            ]
        );
        assert_eq!(ds.groups.len(), 4);
        assert!(GROUP_KEYS.contains(&"scheduler"));
    }

    /// Without `--group-by`, runs of one label in one guest under the
    /// kernel's scheduler, numalab's node-affine and another program
    /// (`--scx-exec`, named by the ops the kernel enabled) are three
    /// configurations, not one of nine runs; one scheduler alone keeps
    /// the plain label.
    #[test]
    fn runs_of_one_label_under_two_schedulers_are_not_pooled() {
        let run = |rep, scx: Option<(&str, bool, &str)>| {
            let mut r = rec("default", 4, rep, "h");
            r.1.applied.scx = scx.map(|(s, exec, ops)| numalab_record::ScxApplied {
                scheduler: s.into(),
                exec,
                ops: ops.into(),
                enable_seq: 1,
            });
            r.1.id = format!("{scx:?}-{rep}");
            r
        };
        let affine = Some(("node-affine", false, "numalab_node_affine"));
        let simple = Some(("/x/build/bin/scx_simple", true, "simple"));
        let v = vec![
            run(1, None),
            run(2, None),
            run(3, affine),
            run(4, affine),
            run(5, simple),
            run(6, simple),
        ];
        let ds = Dataset::new(v.clone());
        let names: Vec<&str> = ds.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            vec!["default/linux", "default/node-affine", "default/simple"]
        );
        assert_eq!(ds.groups.len(), 3);
        assert!(ds.groups.iter().all(|g| g.ok.len() == 2));
        let one = Dataset::new(v[..2].to_vec());
        assert_eq!(one.configs.len(), 1);
        assert_eq!(one.configs[0].name, "default");
    }

    #[test]
    fn duplicates_are_used_once() {
        let a = rec("A", 4, 1, "h");
        let mut b = a.clone();
        b.0 = PathBuf::from("copy/of.json");
        let ds = Dataset::new(vec![a, b]);
        assert_eq!(ds.runs.len(), 1);
        assert_eq!(ds.warnings.len(), 1);
        assert!(ds.warnings[0].starts_with("copy/of.json: same record id"));
    }

    #[test]
    fn parameter_values_read_as_text_never_as_json() {
        use serde_json::json;
        assert_eq!(param_value(&json!("bind")), "bind");
        assert_eq!(param_value(&json!(4)), "4");
        assert_eq!(param_value(&json!(true)), "true");
        assert_eq!(param_value(&json!(null)), "none");
        assert_eq!(param_value(&json!([0, 1, 2])), "0,1,2");
        assert_eq!(param_value(&json!(["sh", "-c", "true"])), "sh,-c,true");
        assert_eq!(param_value(&json!({"b": 2, "a": "x"})), "a:x,b:2");
        assert_eq!(param_value(&json!([[0, 1], [2, 3]])), "0+1,2+3");
        assert_eq!(
            param_value(&json!({"node0": [0, 1], "node1": {"cpus": 2}})),
            "node0:0+1,node1:cpus:2"
        );
        assert_eq!(param_value(&json!([])), "none");
        assert_eq!(param_value(&json!("a[1]{x}")), "a(1)(x)");
    }

    #[test]
    fn cases_from_old_records_with_arrays_and_objects_have_plain_unique_names() {
        let mut v = Vec::new();
        let params = [
            serde_json::json!([0, 1]),
            serde_json::json!({"node0": [0, 1]}),
            serde_json::json!([2, 3]),
            serde_json::json!("2,3"),
        ];
        for (i, p) in params.iter().enumerate() {
            let (_, mut r) = rec("A", 4, 1, "h");
            r.params.insert("cpus".into(), p.clone());
            r.id = format!("r{i}");
            v.push((PathBuf::from(format!("r{i}.json")), r));
        }
        let ds = Dataset::new(v);
        let names: Vec<&str> = ds.cases.iter().map(|c| c.name.as_str()).collect();
        for n in &names {
            assert!(
                !n.contains('{') && !n.contains('[') && !n.contains('"'),
                "{n}"
            );
        }
        assert!(names.contains(&"numa_test cpus=0,1"), "{names:?}");
        assert!(names.contains(&"numa_test cpus=node0:0+1"), "{names:?}");
        // [2, 3] and "2,3" read the same: numbered, never alike.
        assert!(names.contains(&"numa_test cpus=2,3 #1"), "{names:?}");
        assert!(names.contains(&"numa_test cpus=2,3 #2"), "{names:?}");
        let set: BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(set.len(), names.len());
        let variants: BTreeSet<&str> = ds.cases.iter().map(|c| c.variant.as_str()).collect();
        assert_eq!(variants.len(), names.len());
    }

    fn placed(label: &str, placement: &str, kernel: &str, rep: u32) -> (PathBuf, RunRecord) {
        let mut r = example_record("numa01", label, rep, 10.0);
        r.params.insert("placement".into(), placement.into());
        r.params.insert("threads".into(), 4.into());
        r.machine.kernel = kernel.into();
        r.id = format!("{label}-{placement}-{kernel}-{rep}");
        (PathBuf::from(format!("{}.json", r.id)), r)
    }

    fn numa01_set() -> Vec<(PathBuf, RunRecord)> {
        let mut v = Vec::new();
        for kernel in ["6.10.0", "6.1.0"] {
            for p in ["default", "bind", "inverse-bind"] {
                for rep in 1..=2 {
                    v.push(placed("A", p, kernel, rep));
                }
            }
        }
        v
    }

    #[test]
    fn group_by_a_parameter_takes_it_out_of_the_case() {
        let opts = DatasetOptions {
            group_by: vec![Key::parse("placement")],
            filters: vec![],
        };
        let ds = Dataset::with_options(numa01_set(), &opts).unwrap();
        let configs: Vec<&str> = ds.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(configs, vec!["bind", "default", "inverse-bind"]);
        let cases: Vec<&str> = ds.cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(cases, vec!["numa01"]);
        assert!(!ds.cases[0].params.contains_key("placement"));
        assert_eq!(ds.groups.len(), 3);
        assert!(ds.groups.iter().all(|g| g.ok.len() == 4));
        assert_eq!(ds.configs[0].label, "A");
        assert_eq!(ds.configs[0].values, vec!["bind"]);
        assert_eq!(ds.grouping(), "placement");

        // Several keys: the values joined by "/", kernels in natural order.
        let opts = DatasetOptions {
            group_by: vec![Key::Kernel, Key::Backend],
            filters: vec![],
        };
        let ds = Dataset::with_options(numa01_set(), &opts).unwrap();
        let configs: Vec<&str> = ds.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(configs, vec!["6.1.0/real", "6.10.0/real"]);
        let cases: Vec<&str> = ds.cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            cases,
            vec![
                "numa01 placement=bind",
                "numa01 placement=default",
                "numa01 placement=inverse-bind"
            ]
        );
    }

    #[test]
    fn filters_select_and_name_what_keeps_nothing() {
        let f = |s: &str| -> Filter { s.parse().unwrap() };
        let opts = DatasetOptions {
            group_by: vec![],
            filters: vec![
                f("kernel=6.1.0"),
                f("placement=bind"),
                f("placement=default"),
            ],
        };
        let ds = Dataset::with_options(numa01_set(), &opts).unwrap();
        assert_eq!(ds.runs.len(), 4);
        assert!(ds.runs.iter().all(|r| r.record.machine.kernel == "6.1.0"));
        // Numbers compare by value.
        let opts = DatasetOptions {
            group_by: vec![],
            filters: vec![f("threads=4.0"), f("benchmark=numa01")],
        };
        assert_eq!(
            Dataset::with_options(numa01_set(), &opts)
                .unwrap()
                .runs
                .len(),
            12
        );

        let err = |filters: Vec<Filter>, group_by: Vec<Key>| {
            Dataset::with_options(numa01_set(), &DatasetOptions { group_by, filters })
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(vec![f("placement=bnd")], vec![]),
            "--filter placement=bnd keeps no record; the records have placement = bind, default, inverse-bind"
        );
        assert_eq!(
            err(vec![f("kernel=6.1.0"), f("label=B")], vec![]),
            "--filter label=B keeps no record; the records have label = A"
        );
        let mut v = numa01_set();
        v[0].1.label = "B".into();
        let e = Dataset::with_options(
            v,
            &DatasetOptions {
                group_by: vec![],
                filters: vec![f("label=B"), f("kernel=6.1.0")],
            },
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "--filter label=B --filter kernel=6.1.0: each keeps some records, together they keep none"
        );
        assert_eq!(
            err(vec![f("nope=1")], vec![]),
            "--filter \"nope\": no such key; valid keys: label, kernel, host, backend, numa_balancing, thp, scheduler, benchmark, or a parameter: placement, tasks, threads"
        );
        assert_eq!(
            err(vec![], vec![Key::parse("nope")]),
            "--group-by \"nope\": no such key; valid keys: label, kernel, host, backend, numa_balancing, thp, scheduler, or a parameter: placement, tasks, threads"
        );
        assert!(parse_group_key("benchmark").is_err());
        assert!(parse_group_key("").is_err());
        assert!("novalue".parse::<Filter>().is_err());
        assert_eq!(f("a=b=c").value, "b=c");
    }

    #[test]
    fn canonical_params() {
        let v: serde_json::Value = serde_json::from_str(r#"{"b":{"y":1,"x":2},"a":[3]}"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"a":[3],"b":{"x":2,"y":1}}"#);
        assert!(natural_cmp("t=4", "t=16").is_lt());
        assert!(natural_cmp("a", "b").is_lt());
        assert!(natural_cmp("x2y", "x10").is_lt());
    }
}

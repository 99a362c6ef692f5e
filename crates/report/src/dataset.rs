//! Records grouped the way `compare`, `show` and `report` need them.
//!
//! A **case** is one benchmark with one set of resolved parameters (e.g.
//! `numa_test tasks=4`); a **configuration** is what is being compared: the
//! label, the host and the backend kind (real, guest, sim). A **group** is
//! the runs of one configuration in one case. The host is part of the
//! configuration so that directories copied from several machines can be
//! merged without their runs being pooled.

use numalab_record::RunRecord;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
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
    pub label: String,
    pub host: String,
    /// `real`, `guest` or `sim`.
    pub backend: String,
    /// How tables name it: the label, with `@host` when the records come
    /// from more than one host and `/backend` when they mix backends.
    pub name: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Case {
    pub benchmark: String,
    pub params: BTreeMap<String, serde_json::Value>,
    /// Canonical JSON of `params` (keys sorted at every level).
    pub params_key: String,
    /// `benchmark` and the parameters that vary between this benchmark's
    /// cases, e.g. `numa_test tasks=4`.
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
}

/// JSON with object keys sorted at every level, whatever map type
/// serde_json was built with.
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

/// A parameter value as a person reads it: strings unquoted.
pub fn param_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => canonical_json(other),
    }
}

impl Dataset {
    /// Group records. Records with an id already seen (the same file
    /// copied twice) are used once, with a warning.
    pub fn new(records: Vec<(PathBuf, RunRecord)>) -> Dataset {
        let mut ds = Dataset::default();
        let mut seen: HashMap<String, PathBuf> = HashMap::new();
        let mut kept = Vec::new();
        for (path, r) in records {
            if let Some(first) = seen.get(&r.id) {
                ds.warnings.push(format!(
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
        let hosts: BTreeSet<&str> = kept
            .iter()
            .map(|(_, r)| r.machine.hostname.as_str())
            .collect();
        let backends: BTreeSet<&str> = kept.iter().map(|(_, r)| r.backend.kind()).collect();
        let multi_host = hosts.len() > 1;
        let multi_backend = backends.len() > 1;

        let config_of = |r: &RunRecord| {
            let mut name = r.label.clone();
            if multi_host {
                name = format!("{name}@{}", r.machine.hostname);
            }
            if multi_backend {
                name = format!("{name}/{}", r.backend.kind());
            }
            Config {
                label: r.label.clone(),
                host: r.machine.hostname.clone(),
                backend: r.backend.kind().to_string(),
                name,
            }
        };
        let configs: BTreeSet<Config> = kept.iter().map(|(_, r)| config_of(r)).collect();
        ds.configs = configs.into_iter().collect();

        let case_key = |r: &RunRecord| {
            let params = serde_json::to_value(&r.params).unwrap_or_default();
            (r.benchmark.clone(), canonical_json(&params))
        };
        let mut case_map: BTreeMap<(String, String), BTreeMap<String, serde_json::Value>> =
            BTreeMap::new();
        for (_, r) in &kept {
            case_map
                .entry(case_key(r))
                .or_insert_with(|| r.params.clone());
        }
        // Parameters that vary between the cases of each benchmark.
        let mut varying: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        {
            let mut values: BTreeMap<(&str, &str), BTreeSet<String>> = BTreeMap::new();
            let mut count: BTreeMap<&str, usize> = BTreeMap::new();
            for ((b, _), params) in &case_map {
                *count.entry(b.as_str()).or_default() += 1;
                for (k, v) in params {
                    values
                        .entry((b.as_str(), k.as_str()))
                        .or_default()
                        .insert(canonical_json(v));
                }
            }
            for ((b, _), params) in &case_map {
                let entry = varying.entry(b.as_str()).or_default();
                for k in params.keys() {
                    let n = values
                        .get(&(b.as_str(), k.as_str()))
                        .map(|s| s.len())
                        .unwrap_or(0);
                    // Varies in value, or present in only some cases.
                    let present = case_map
                        .iter()
                        .filter(|((b2, _), p)| b2 == b && p.contains_key(k))
                        .count();
                    if n > 1 || present < count[b.as_str()] {
                        entry.insert(k.clone());
                    }
                }
            }
        }
        ds.cases = case_map
            .iter()
            .map(|((b, key), params)| {
                let mut variant: Vec<String> = Vec::new();
                // The task count first, as the seeds' tables order rows by it.
                let mut keys: Vec<&String> = varying
                    .get(b.as_str())
                    .map(|s| s.iter().collect())
                    .unwrap_or_default();
                keys.sort_by_key(|k| (k.as_str() != "tasks", k.to_string()));
                for k in keys {
                    if let Some(v) = params.get(k) {
                        variant.push(format!("{k}={}", param_value(v)));
                    }
                }
                let variant = variant.join(" ");
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
        let mut order: Vec<usize> = (0..ds.cases.len()).collect();
        order.sort_by(|&a, &b| {
            let (ca, cb) = (&ds.cases[a], &ds.cases[b]);
            ca.benchmark
                .cmp(&cb.benchmark)
                .then_with(|| natural_cmp(&ca.name, &cb.name))
                .then_with(|| ca.params_key.cmp(&cb.params_key))
        });
        ds.cases = order.iter().map(|&i| ds.cases[i].clone()).collect();
        let case_index: HashMap<(String, String), usize> = ds
            .cases
            .iter()
            .enumerate()
            .map(|(i, c)| ((c.benchmark.clone(), c.params_key.clone()), i))
            .collect();

        let mut group_index: HashMap<(usize, usize), usize> = HashMap::new();
        kept.sort_by(|(pa, a), (pb, b)| {
            (a.repetition.index, &a.started_at, pa).cmp(&(b.repetition.index, &b.started_at, pb))
        });
        for (path, r) in kept {
            let case = case_index[&case_key(&r)];
            let cfg = config_of(&r);
            let config = ds
                .configs
                .binary_search(&cfg)
                .expect("every record's configuration was collected");
            let idx = ds.runs.len();
            let ok = r.outcome.is_ok();
            ds.runs.push(Run {
                path,
                record: r,
                case,
                config,
            });
            let g = *group_index.entry((case, config)).or_insert_with(|| {
                ds.groups.push(Group {
                    case,
                    config,
                    ok: Vec::new(),
                    failed: Vec::new(),
                });
                ds.groups.len() - 1
            });
            if ok {
                ds.groups[g].ok.push(idx);
            } else {
                ds.groups[g].failed.push(idx);
            }
        }
        ds.groups.sort_by_key(|g| (g.case, g.config));
        ds
    }

    pub fn group(&self, case: usize, config: usize) -> Option<&Group> {
        self.groups
            .iter()
            .find(|g| g.case == case && g.config == config)
    }

    /// Distinct labels, sorted.
    pub fn labels(&self) -> Vec<String> {
        let s: BTreeSet<&str> = self.configs.iter().map(|c| c.label.as_str()).collect();
        s.into_iter().map(String::from).collect()
    }

    /// Distinct hosts, sorted.
    pub fn hosts(&self) -> Vec<String> {
        let s: BTreeSet<&str> = self.configs.iter().map(|c| c.host.as_str()).collect();
        s.into_iter().map(String::from).collect()
    }

    /// Parameters common to every case of `benchmark`, as `k=v` pairs.
    pub fn common_params(&self, benchmark: &str) -> Vec<String> {
        let cases: Vec<&Case> = self
            .cases
            .iter()
            .filter(|c| c.benchmark == benchmark)
            .collect();
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

    /// Successful runs of a group, as records.
    pub fn ok_records(&self, g: &Group) -> Vec<&RunRecord> {
        g.ok.iter().map(|&i| &self.runs[i].record).collect()
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
    fn canonical_params() {
        let v: serde_json::Value = serde_json::from_str(r#"{"b":{"y":1,"x":2},"a":[3]}"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"a":[3],"b":{"x":2,"y":1}}"#);
        assert!(natural_cmp("t=4", "t=16").is_lt());
        assert!(natural_cmp("a", "b").is_lt());
        assert!(natural_cmp("x2y", "x10").is_lt());
    }
}

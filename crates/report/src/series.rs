//! Time series taken out of records, ready to plot: memory per node,
//! vmstat counters such as pages migrated, and progress.

use numalab_record::RunRecord;

/// One named line of `(x, y)` points.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

impl Line {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Line {
        Line {
            name: name.into(),
            points,
        }
    }
    pub fn max_y(&self) -> f64 {
        self.points
            .iter()
            .map(|p| p.1)
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

/// The vmstat counter of pages migrated by NUMA balancing.
pub const PAGES_MIGRATED: &str = "numa_pages_migrated";

/// Resident memory per node over time in MiB, summed over the run's
/// processes: one line per node (seed 002's convergence chart). Empty when
/// the run recorded no memory samples.
pub fn memory_per_node(r: &RunRecord) -> Vec<Line> {
    memory_per_node_of(r, None)
}

/// Most processes drawn one chart each; a run with more (numa_test's
/// one process per task) is drawn summed over its processes.
pub const MAX_PROCESS_CHARTS: usize = 4;

/// The views a run's convergence charts take: one per process (`Some(i)`,
/// an index into `processes` and the memory samples) when it has 2 to
/// [`MAX_PROCESS_CHARTS`] processes with memory, as seed 002 charts "the
/// test process's memory"; else one of the whole run (`None`).
pub fn process_views(r: &RunRecord) -> Vec<Option<usize>> {
    let n = r
        .series
        .samples
        .iter()
        .map(|s| s.memory_bytes.len())
        .max()
        .unwrap_or(0);
    if (2..=MAX_PROCESS_CHARTS).contains(&n) {
        (0..n).map(Some).collect()
    } else {
        vec![None]
    }
}

/// How a view is named: the process's name (`numa01 process 0`), else
/// `process N`; `None` for the whole run.
pub fn process_name(r: &RunRecord, view: Option<usize>) -> Option<String> {
    let i = view?;
    Some(match r.processes.get(i) {
        Some(p) if !p.name.is_empty() => p.name.clone(),
        _ => format!("process {}", i + 1),
    })
}

/// Resident memory per node over time in MiB of one process (`Some(i)`)
/// or of all (`None`): one line per node. Empty without memory samples.
pub fn memory_per_node_of(r: &RunRecord, view: Option<usize>) -> Vec<Line> {
    let nodes = r.machine.topology.node_ids();
    let samples: Vec<_> = r
        .series
        .samples
        .iter()
        .filter(|s| !s.memory_bytes.is_empty())
        .collect();
    if samples.is_empty() {
        return Vec::new();
    }
    // Bytes on node `i` of one process, or summed over all of them.
    let bytes = |procs: &[Vec<u64>], i: usize| -> u64 {
        let on = |m: &Vec<u64>| m.get(i).copied().unwrap_or(0);
        match view {
            Some(p) => procs.get(p).map_or(0, on),
            None => procs.iter().map(on).sum(),
        }
    };
    nodes
        .iter()
        .enumerate()
        .map(|(i, id)| {
            Line::new(
                format!("node{id}"),
                samples
                    .iter()
                    .map(|s| (s.t_s, crate::num::mib(bytes(&s.memory_bytes, i))))
                    .collect(),
            )
        })
        .collect()
}

/// Whether the run's tasks are threads of multi-threaded processes (some
/// process has two tasks or more): then where its threads ran over time
/// is worth a chart.
pub fn has_threads(r: &RunRecord) -> bool {
    let mut per: std::collections::BTreeMap<u32, usize> = std::collections::BTreeMap::new();
    for t in &r.tasks {
        if let Some(p) = t.process {
            *per.entry(p).or_default() += 1;
        }
    }
    per.values().any(|&n| n >= 2)
}

/// How many of the tasks (of process `view`, or all) were on each node at
/// each sample, from `task_node`: one line per node. Empty when no sample
/// places a task.
pub fn tasks_per_node_of(r: &RunRecord, view: Option<usize>) -> Vec<Line> {
    let nodes = r.machine.topology.node_ids();
    let mine: Vec<usize> = r
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| view.is_none() || t.process.map(|p| p as usize) == view)
        .map(|(i, _)| i)
        .collect();
    let samples: Vec<_> = r
        .series
        .samples
        .iter()
        .filter(|s| {
            mine.iter()
                .any(|&i| s.task_node.get(i).copied().flatten().is_some())
        })
        .collect();
    if samples.is_empty() || mine.is_empty() {
        return Vec::new();
    }
    nodes
        .iter()
        .map(|id| {
            Line::new(
                format!("node{id}"),
                samples
                    .iter()
                    .map(|s| {
                        let n = mine
                            .iter()
                            .filter(|&&i| s.task_node.get(i).copied().flatten() == Some(*id))
                            .count();
                        (s.t_s, n as f64)
                    })
                    .collect(),
            )
        })
        .collect()
}

/// A vmstat counter (delta from the run's start) over time; `None` when no
/// sample has it.
pub fn vmstat(r: &RunRecord, key: &str) -> Option<Vec<(f64, f64)>> {
    let pts: Vec<(f64, f64)> = r
        .series
        .samples
        .iter()
        .filter_map(|s| s.vmstat.get(key).map(|v| (s.t_s, *v as f64)))
        .collect();
    (!pts.is_empty()).then_some(pts)
}

/// Work done by all tasks together, in % of the work expected (or in work
/// units when the expected work is unknown), over time.
pub fn progress_total(r: &RunRecord) -> Option<(Vec<(f64, f64)>, bool)> {
    let expected: u64 = r.tasks.iter().map(|t| t.work_expected).sum();
    let pts: Vec<(f64, f64)> = r
        .series
        .samples
        .iter()
        .filter(|s| !s.progress.is_empty())
        .map(|s| {
            let done: u64 = s.progress.iter().sum();
            let y = if expected > 0 {
                100.0 * done as f64 / expected as f64
            } else {
                done as f64
            };
            (s.t_s, y)
        })
        .collect();
    (!pts.is_empty()).then_some((pts, expected > 0))
}

/// Work units done per task over time: one line per task, or, for more
/// than `max_lines` tasks, the minimum, median and maximum over tasks.
pub fn progress_per_task(r: &RunRecord, max_lines: usize) -> Vec<Line> {
    let samples: Vec<_> = r
        .series
        .samples
        .iter()
        .filter(|s| !s.progress.is_empty())
        .collect();
    if samples.is_empty() {
        return Vec::new();
    }
    let ntasks = samples.iter().map(|s| s.progress.len()).max().unwrap_or(0);
    if ntasks <= max_lines {
        return (0..ntasks)
            .map(|i| {
                let name = r
                    .tasks
                    .get(i)
                    .map(|t| format!("task {}", t.id))
                    .unwrap_or_else(|| format!("task {}", i + 1));
                Line::new(
                    name,
                    samples
                        .iter()
                        .filter_map(|s| s.progress.get(i).map(|p| (s.t_s, *p as f64)))
                        .collect(),
                )
            })
            .collect();
    }
    let stat = |pick: fn(&[f64]) -> f64| -> Vec<(f64, f64)> {
        samples
            .iter()
            .map(|s| {
                let mut v: Vec<f64> = s.progress.iter().map(|p| *p as f64).collect();
                v.sort_by(|a, b| a.total_cmp(b));
                (s.t_s, pick(&v))
            })
            .collect()
    };
    vec![
        Line::new("slowest task", stat(|v| v[0])),
        Line::new("median task", stat(|v| v[v.len() / 2])),
        Line::new("fastest task", stat(|v| v[v.len() - 1])),
    ]
}

/// The metric used to pick a typical run: `elapsed_s` when present, else
/// the first metric.
pub fn primary_metric(records: &[&RunRecord]) -> Option<String> {
    if records.iter().any(|r| r.metrics.contains_key("elapsed_s")) {
        return Some("elapsed_s".into());
    }
    records
        .iter()
        .find_map(|r| r.metrics.keys().next().cloned())
}

/// The run whose primary metric is the median of the group (the lower
/// middle one for an even count): the "typical run" a text chart shows.
pub fn typical_run<'a>(records: &[&'a RunRecord]) -> Option<(&'a RunRecord, String)> {
    let metric = primary_metric(records);
    let mut v: Vec<(&RunRecord, f64)> = records
        .iter()
        .map(|r| {
            let x = metric
                .as_deref()
                .and_then(|m| r.metric(m))
                .unwrap_or(f64::NAN);
            (*r, x)
        })
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (r, _) = v[(v.len() - 1) / 2];
    let why = match metric {
        Some(m) if records.len() > 1 => format!(
            "run {} of {}, the median {m}",
            r.repetition.index,
            records.len()
        ),
        _ => format!("run {}", r.repetition.index),
    };
    Some((r, why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_record::{example_record, Sample};
    use std::collections::BTreeMap;

    pub fn with_series(mut r: RunRecord) -> RunRecord {
        r.series.samples = (0..=10)
            .map(|i| {
                let t = i as f64;
                let moved = i << 18;
                Sample {
                    t_s: t,
                    memory_bytes: vec![vec![(10u64 << 20) - moved / 4, moved / 4]],
                    task_node: vec![Some(0), Some(1)],
                    progress: vec![i * 10, i * 5],
                    vmstat: BTreeMap::from([(PAGES_MIGRATED.to_string(), (i * 640) as i64)]),
                    ..Default::default()
                }
            })
            .collect();
        r
    }

    #[test]
    fn extracts_series() {
        let r = with_series(example_record("b", "A", 1, 10.0));
        let m = memory_per_node(&r);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].name, "node0");
        assert_eq!(m[0].points[0], (0.0, 10.0));
        assert!((m[1].points[10].1 - 0.625).abs() < 1e-9);
        let p = vmstat(&r, PAGES_MIGRATED).unwrap();
        assert_eq!(p[10], (10.0, 6400.0));
        assert!(vmstat(&r, "nope").is_none());
        let (t, pct) = progress_total(&r).unwrap();
        assert!(pct);
        assert_eq!(t[10], (10.0, 75.0)); // 150 of 200
        let lines = progress_per_task(&r, 8);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].points[2], (2.0, 10.0));
        let lines = progress_per_task(&r, 1);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[2].points[10].1, 100.0);
    }

    #[test]
    fn typical_run_is_the_median() {
        let rs: Vec<RunRecord> = [3.0, 1.0, 2.0]
            .iter()
            .enumerate()
            .map(|(i, e)| example_record("b", "A", i as u32 + 1, *e))
            .collect();
        let refs: Vec<&RunRecord> = rs.iter().collect();
        let (r, why) = typical_run(&refs).unwrap();
        assert_eq!(r.repetition.index, 3);
        assert_eq!(why, "run 3 of 3, the median elapsed_s");
    }
}

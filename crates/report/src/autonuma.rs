//! Text output for the autonuma benchmarks and twohalves: a summary per
//! run and a table over runs with each default-placement result's
//! position between the bind and inverse-bind bounds. The charts of a run
//! (memory per node, pages migrated, progress over time) are
//! [`crate::show::record_charts`], the same as `numalab show` draws.

use crate::dataset::{canonical_json, param_value, variant_text, varying_keys, Dataset, Key};
use crate::text::mean_paren_sd;
use numalab_record::{ConvergenceState, RunRecord};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// `text` as lines of at most 78 columns, each after the first indented
/// by 2 more than the text.
fn push_wrapped(s: &mut String, text: &str) {
    for l in crate::table::wrap(text, 78) {
        let _ = writeln!(s, "{l}");
    }
}

/// One line on the run's convergence.
pub fn convergence_line(r: &RunRecord) -> String {
    match r.convergence.as_ref().map(|c| &c.state) {
        Some(ConvergenceState::Converged { at_s }) => format!("converged at {at_s:.1} s"),
        Some(ConvergenceState::NotConverged { within_s }) => {
            format!("did not converge within {within_s:.1} s")
        }
        Some(ConvergenceState::Trivial { reason }) => format!("trivial here: {reason}"),
        None => "not observed (observation was off: --interval 0)".into(),
    }
}

/// The per-run summary: times, NUMA counters, convergence.
pub fn run_summary(r: &RunRecord) -> String {
    let m = |k: &str| r.metric(k);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "elapsed {:.2} s   user {:.2} s   sys {:.2} s",
        m("elapsed_s").unwrap_or(f64::NAN),
        m("user_s").unwrap_or(f64::NAN),
        m("sys_s").unwrap_or(f64::NAN)
    );
    let count = |k: &str| m(k).map_or("n/a".to_string(), |v| format!("{v:.0}"));
    let local = match (m("numa_hint_faults"), m("numa_hint_faults_local")) {
        (Some(f), Some(l)) if f > 0.0 => format!(" ({:.1}% local)", 100.0 * l / f),
        _ => String::new(),
    };
    let _ = writeln!(
        s,
        "pages migrated {}   hint faults {}{local}   pte updates {}",
        count("numa_pages_migrated"),
        count("numa_hint_faults"),
        count("numa_pte_updates")
    );
    push_wrapped(&mut s, &format!("convergence: {}", convergence_line(r)));
    if let Some(c) = &r.convergence {
        push_wrapped(&mut s, &format!("  criterion: {}", c.definition));
    }
    s
}

/// Where `default` lies between the `bind` (0) and `inverse` (1) bounds;
/// `None` when the bounds are too close to tell apart (less than 1% of
/// the bound's value).
pub fn position(default: f64, bind: f64, inverse: f64) -> Option<f64> {
    let span = inverse - bind;
    if span.abs() <= 0.01 * bind.abs() || span.is_nan() || !default.is_finite() {
        return None;
    }
    Some((default - bind) / span)
}

/// Mean elapsed time of the successful runs of each placement.
pub fn mean_elapsed_by_placement(records: &[&RunRecord]) -> BTreeMap<String, f64> {
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.outcome.is_ok()) {
        if let (Some(p), Some(e)) = (
            r.params.get("placement").and_then(|v| v.as_str()),
            r.metric("elapsed_s"),
        ) {
            by.entry(p.to_string()).or_default().push(e);
        }
    }
    by.into_iter()
        .map(|(k, v)| (k, v.iter().sum::<f64>() / v.len() as f64))
        .collect()
}

/// Whether [`summary_table`] is made for `benchmark`: placements
/// `default`, `bind` and `inverse-bind`, elapsed time, pages migrated,
/// convergence (the benchmark registry's placement family).
pub fn summarises(benchmark: &str) -> bool {
    numalab_bench::registry::placement_family().any(|b| b == benchmark)
}

/// Metrics the report layer derives from several records. Older numalab
/// wrote `position_between_bounds` into the default placement's records;
/// that value is never read: it is computed here from the records'
/// elapsed times ([`bounds_positions`], [`summary_table`]).
pub const DERIVED_METRICS: [&str; 1] = ["position_between_bounds"];

pub fn is_derived_metric(name: &str) -> bool {
    DERIVED_METRICS.contains(&name)
}

const ONE_NODE: &str =
    "bind and inverse-bind are the same placement on a machine with one NUMA node with CPUs";
const SAME_TIME: &str =
    "bind and inverse-bind take the same time here (no remote penalty to measure)";

/// The default placement's position between the bounds over runs that
/// differ only in placement: `None` when bind or inverse-bind (or, on a
/// machine with two nodes or more, default) was not run; `Err` with the
/// reason when it cannot be computed.
fn family_position(records: &[&RunRecord]) -> Option<Result<f64, &'static str>> {
    let means = mean_elapsed_by_placement(records);
    let (b, i) = (means.get("bind")?, means.get("inverse-bind")?);
    let one_node = records.iter().any(|r| {
        r.machine
            .topology
            .nodes
            .iter()
            .filter(|n| !n.cpus.is_empty())
            .count()
            < 2
    });
    if one_node {
        return Some(Err(ONE_NODE));
    }
    let d = means.get("default")?;
    Some(position(*d, *b, *i).ok_or(SAME_TIME))
}

/// Records that differ only in placement, in first-seen order, each set
/// with the parameters that tell it from the others (`threads=4`; empty
/// when there is one set).
fn families<'a>(records: &[&'a RunRecord]) -> Vec<(String, Vec<&'a RunRecord>)> {
    let others = |r: &RunRecord| -> BTreeMap<String, serde_json::Value> {
        r.params
            .iter()
            .filter(|(k, _)| k.as_str() != "placement")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let mut keys: Vec<(String, BTreeMap<String, serde_json::Value>)> = Vec::new();
    let mut sets: Vec<Vec<&RunRecord>> = Vec::new();
    for r in records {
        let p = others(r);
        let key = canonical_json(&serde_json::to_value(&p).unwrap_or_default());
        match keys.iter().position(|(k, _)| *k == key) {
            Some(i) => sets[i].push(r),
            None => {
                keys.push((key, p));
                sets.push(vec![r]);
            }
        }
    }
    let maps: Vec<&BTreeMap<String, serde_json::Value>> = keys.iter().map(|(_, p)| p).collect();
    let vary = varying_keys(&maps);
    keys.iter()
        .map(|(_, p)| variant_text(p, &vary))
        .zip(sets)
        .collect()
}

/// A table over runs of one benchmark, one row per placement: elapsed
/// mean(stddev), pages migrated, how many runs converged and when; then
/// the default placement's position between the bounds, when both were
/// run. Runs that differ in other parameters (`--threads 2,4`) get a
/// block of rows each, under a line naming them.
pub fn summary_table(records: &[&RunRecord]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<13} {:>4} {:>16} {:>14} {:>12} {:>13}",
        "placement", "runs", "elapsed(s)", "pages migr.", "converged", "at (s)"
    );
    let fams = families(records);
    let several = fams.len() > 1;
    for (variant, recs) in &fams {
        if several {
            push_wrapped(&mut s, &format!("{variant}:"));
        }
        s += &placement_rows(recs);
        s += &position_lines(recs);
    }
    if let Some(line) = resolution_line(records) {
        push_wrapped(&mut s, &line);
    }
    s
}

/// The resolution of the convergence times in a table: a run converges
/// at a sample, so its time is known to within its sampling interval
/// (which `--interval auto` stretches on a slow machine). `None` when no
/// run converged.
fn resolution_line(records: &[&RunRecord]) -> Option<String> {
    let every: Vec<f64> = records
        .iter()
        .filter(|r| {
            matches!(
                r.convergence.as_ref().map(|c| &c.state),
                Some(ConvergenceState::Converged { .. })
            )
        })
        .map(|r| r.series.interval_s)
        .filter(|&i| i > 0.0)
        .collect();
    let lo = every.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = every.iter().copied().fold(0.0, f64::max);
    if every.is_empty() {
        return None;
    }
    let span = match hi - lo < 0.0005 {
        true => format!("{lo:.3} s"),
        false => format!("{lo:.3}-{hi:.3} s"),
    };
    Some(format!("at (s): known to the sampling interval, {span}"))
}

fn placement_rows(records: &[&RunRecord]) -> String {
    let mut by: BTreeMap<(u8, String), Vec<&RunRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.outcome.is_ok()) {
        let p = r
            .params
            .get("placement")
            .map(param_value)
            .unwrap_or_else(|| "?".into());
        let order = match p.as_str() {
            "bind" => 0,
            "default" => 1,
            "inverse-bind" => 2,
            _ => 3,
        };
        by.entry((order, p)).or_default().push(r);
    }
    let mut s = String::new();
    for ((_, p), rs) in &by {
        let el: Vec<f64> = rs.iter().filter_map(|r| r.metric("elapsed_s")).collect();
        let mig: Vec<f64> = rs
            .iter()
            .filter_map(|r| r.metric("numa_pages_migrated"))
            .collect();
        let mut conv = 0;
        let mut trivial = 0;
        let mut at = Vec::new();
        for r in rs {
            match r.convergence.as_ref().map(|c| &c.state) {
                Some(ConvergenceState::Converged { at_s }) => {
                    conv += 1;
                    at.push(*at_s);
                }
                Some(ConvergenceState::Trivial { .. }) => trivial += 1,
                _ => {}
            }
        }
        let conv_cell = if trivial == rs.len() {
            "trivial".to_string()
        } else {
            format!("{conv}/{}", rs.len())
        };
        let at_cell = if at.is_empty() {
            "-".into()
        } else {
            mean_paren_sd(&at)
        };
        let mig_cell = if mig.is_empty() {
            "n/a".into()
        } else {
            format!("{:.0}", mig.iter().sum::<f64>() / mig.len() as f64)
        };
        let p = if p.len() > 13 {
            // A long placement name gets a line of its own.
            s += &format!("{p}\n");
            String::new()
        } else {
            p.clone()
        };
        let _ = writeln!(
            s,
            "{p:<13} {:>4} {:>16} {:>14} {:>12} {:>13}",
            rs.len(),
            mean_paren_sd(&el),
            mig_cell,
            conv_cell,
            at_cell
        );
    }
    s
}

fn position_lines(records: &[&RunRecord]) -> String {
    let mut s = String::new();
    match family_position(records) {
        None => {}
        Some(Err(why)) if why == ONE_NODE => {
            let _ = writeln!(
                s,
                "position between the bounds: not computed, bind and inverse-bind are the\n  same placement on a machine with one NUMA node with CPUs"
            );
        }
        Some(Err(_)) => {
            let _ = writeln!(
                s,
                "position between the bounds: not computed, bind and inverse-bind\n  take the same time here (no remote penalty to measure)"
            );
        }
        Some(Ok(pos)) => {
            let _ = writeln!(
                s,
                "default lies at {pos:.2} between bind (0) and inverse-bind (1):\n  (default - bind) / (inverse-bind - bind) of mean elapsed times"
            );
            if !(-0.1..=1.1).contains(&pos) {
                let _ = writeln!(
                    s,
                    "  (outside the bounds: they do not bracket the default here, e.g. in\n  an emulated guest where remote memory costs no more than local)"
                );
            }
        }
    }
    s
}

/// `position_between_bounds` of one configuration in one set of cases
/// that differ only in placement, derived from the records' elapsed
/// times (never read from a record).
#[derive(Debug, Clone, Serialize)]
pub struct BoundsPosition {
    pub benchmark: String,
    /// The parameters that tell this set of cases from the benchmark's
    /// other sets (`threads=4`); empty when there is one.
    pub variant: String,
    /// The cases (indices into [`Dataset::cases`]) whose runs it is
    /// computed from.
    pub cases: Vec<usize>,
    /// The configuration; when configurations are grouped by placement,
    /// the values of the other `--group-by` keys (empty when there are
    /// none).
    pub config: String,
    /// Mean elapsed time of the successful runs of each bound.
    pub bind_s: Option<f64>,
    pub default_s: Option<f64>,
    pub inverse_bind_s: Option<f64>,
    /// `(default - bind) / (inverse-bind - bind)` of the means.
    pub value: Option<f64>,
    /// Why `value` is missing.
    pub why_not: Option<String>,
}

/// `position_between_bounds` for every set of cases of a dataset that
/// differ only in placement and every configuration that ran `bind` and
/// `inverse-bind` (and `default`) there. Ordered by the sets' last case,
/// then by configuration.
pub fn bounds_positions(ds: &Dataset) -> Vec<BoundsPosition> {
    let fams = placement_families(ds);
    let variants = family_variants(&fams);
    let mut out: Vec<(usize, usize, BoundsPosition)> = Vec::new();
    for f in fams {
        let Some(result) = family_position(&f.records) else {
            continue;
        };
        let means = mean_elapsed_by_placement(&f.records);
        let last_case = f.cases.iter().next_back().copied().unwrap_or(0);
        out.push((
            last_case,
            f.first_config,
            BoundsPosition {
                variant: variants
                    .get(&(f.benchmark.clone(), f.key.clone()))
                    .cloned()
                    .unwrap_or_default(),
                benchmark: f.benchmark,
                cases: f.cases.into_iter().collect(),
                config: f.config,
                bind_s: means.get("bind").copied(),
                default_s: means.get("default").copied(),
                inverse_bind_s: means.get("inverse-bind").copied(),
                value: result.ok(),
                why_not: result.err().map(str::to_string),
            },
        ));
    }
    out.sort_by_key(|(c, k, _)| (*c, *k));
    out.into_iter().map(|(_, _, p)| p).collect()
}

/// The runs of one benchmark under one configuration whose cases differ
/// only in placement (`bind`, `default`, `inverse-bind`).
struct Family<'a> {
    benchmark: String,
    /// The cases' parameters other than placement.
    others: BTreeMap<String, serde_json::Value>,
    /// `others` as canonical JSON.
    key: String,
    config: String,
    first_config: usize,
    cases: BTreeSet<usize>,
    records: Vec<&'a RunRecord>,
}

/// A configuration's name in a position: when configurations are grouped
/// by placement (`by_placement`, the index of that key), the values of the
/// other `--group-by` keys joined by `/`; otherwise its name.
fn bounds_config_name(ds: &Dataset, by_placement: Option<usize>, k: usize) -> String {
    match by_placement {
        Some(i) => {
            let c = &ds.configs[k];
            c.values
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                .join("/")
        }
        None => ds.configs[k].name.clone(),
    }
}

/// The dataset's runs with a bound placement, grouped into families by
/// benchmark, other parameters and configuration, in first-seen order.
fn placement_families(ds: &Dataset) -> Vec<Family<'_>> {
    let placement = Key::Param("placement".into());
    let by_placement = ds.group_by.iter().position(|k| *k == placement);
    let mut fams: Vec<Family> = Vec::new();
    for run in &ds.runs {
        let r = &run.record;
        let Some(p) = r.params.get("placement").and_then(|v| v.as_str()) else {
            continue;
        };
        if !matches!(p, "bind" | "default" | "inverse-bind") {
            continue;
        }
        let others: BTreeMap<String, serde_json::Value> = ds.cases[run.case]
            .params
            .iter()
            .filter(|(k, _)| k.as_str() != "placement")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let key = canonical_json(&serde_json::to_value(&others).unwrap_or_default());
        let config = bounds_config_name(ds, by_placement, run.config);
        let i = match fams
            .iter()
            .position(|f| f.benchmark == r.benchmark && f.key == key && f.config == config)
        {
            Some(i) => i,
            None => {
                fams.push(Family {
                    benchmark: r.benchmark.clone(),
                    others,
                    key,
                    config,
                    first_config: run.config,
                    cases: BTreeSet::new(),
                    records: Vec::new(),
                });
                fams.len() - 1
            }
        };
        let f = &mut fams[i];
        f.cases.insert(run.case);
        f.records.push(r);
        f.first_config = f.first_config.min(run.config);
    }
    fams
}

/// Per benchmark and family key, the parameters that tell the
/// benchmark's families apart (`threads=4`).
fn family_variants(fams: &[Family]) -> BTreeMap<(String, String), String> {
    let mut variants: BTreeMap<(String, String), String> = BTreeMap::new();
    let benches: BTreeSet<&str> = fams.iter().map(|f| f.benchmark.as_str()).collect();
    for b in benches {
        let mut seen: BTreeMap<&str, &BTreeMap<String, serde_json::Value>> = BTreeMap::new();
        for f in fams.iter().filter(|f| f.benchmark == b) {
            seen.insert(f.key.as_str(), &f.others);
        }
        let maps: Vec<&BTreeMap<String, serde_json::Value>> = seen.values().copied().collect();
        let vary = varying_keys(&maps);
        for (k, p) in seen {
            variants.insert((b.to_string(), k.to_string()), variant_text(p, &vary));
        }
    }
    variants
}

/// One line (to be wrapped) for the positions of one set of cases:
/// `position_between_bounds (default between bind = 0 and inverse-bind =
/// 1, of mean elapsed_s): A 0.42, B 0.55`.
pub fn position_text(ps: &[&BoundsPosition]) -> String {
    let head = "position_between_bounds (default between bind = 0 and inverse-bind = 1, of mean elapsed_s):";
    let reasons: BTreeSet<&str> = ps.iter().filter_map(|p| p.why_not.as_deref()).collect();
    if ps.iter().all(|p| p.value.is_none()) && reasons.len() <= 1 {
        let why = reasons.into_iter().next().unwrap_or("no value");
        return format!("{head} not computed, {why}");
    }
    let entries: Vec<String> = ps
        .iter()
        .map(|p| {
            let v = match (p.value, &p.why_not) {
                (Some(x), _) => format!("{x:.2}"),
                (None, Some(why)) => format!("not computed ({why})"),
                (None, None) => "not computed".into(),
            };
            if p.config.is_empty() {
                v
            } else {
                format!("{} {v}", p.config)
            }
        })
        .collect();
    format!("{head} {}", entries.join(", "))
}

/// The positions of a dataset grouped by the set of cases they belong to,
/// in the order of [`bounds_positions`].
pub fn positions_by_cases(ps: &[BoundsPosition]) -> Vec<Vec<&BoundsPosition>> {
    let mut out: Vec<Vec<&BoundsPosition>> = Vec::new();
    for p in ps {
        match out.iter_mut().find(|v| {
            v[0].cases == p.cases && v[0].benchmark == p.benchmark && v[0].variant == p.variant
        }) {
            Some(v) => v.push(p),
            None => out.push(vec![p]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_record::{example_record, Convergence, Metric};

    fn rec(placement: &str, elapsed: f64) -> RunRecord {
        let mut r = example_record("numa01", "A", 1, elapsed);
        r.params.insert("placement".into(), placement.into());
        r.metrics.insert(
            "numa_pages_migrated".into(),
            Metric::new(10.0, "pages", numalab_record::Better::Lower),
        );
        r
    }

    #[test]
    fn position_between_bounds() {
        assert_eq!(position(15.0, 10.0, 20.0), Some(0.5));
        assert_eq!(position(10.0, 10.0, 20.0), Some(0.0));
        assert_eq!(position(10.0, 10.0, 10.05), None);
        let rs = [
            rec("default", 15.0),
            rec("bind", 10.0),
            rec("inverse-bind", 20.0),
        ];
        let refs: Vec<&RunRecord> = rs.iter().collect();
        let t = summary_table(&refs);
        assert!(t.contains("default lies at 0.50"), "{t}");
        assert!(!t.contains("outside"), "{t}");
        let rs = [
            rec("default", 25.0),
            rec("bind", 10.0),
            rec("inverse-bind", 12.0),
        ];
        let refs: Vec<&RunRecord> = rs.iter().collect();
        assert!(summary_table(&refs).contains("outside the bounds"));
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].starts_with("bind "), "{t}");
        assert!(lines[2].starts_with("default "), "{t}");
        assert!(t.lines().all(|l| l.len() <= 80), "{t}");
    }

    /// A convergence time is known to its sampling interval: the table
    /// says which (issue 27 item 7), and says nothing when none converged.
    #[test]
    fn convergence_times_print_their_resolution() {
        let conv = |r: &mut RunRecord, at_s: f64, every: f64| {
            r.convergence = Some(Convergence {
                definition: "test".into(),
                state: ConvergenceState::Converged { at_s },
            });
            r.series.interval_s = every;
        };
        let mut rs = [rec("default", 15.0), rec("bind", 10.0)];
        for r in rs.iter_mut() {
            r.convergence = None;
        }
        let refs: Vec<&RunRecord> = rs.iter().collect();
        assert!(!summary_table(&refs).contains("sampling interval"));
        conv(&mut rs[0], 3.0, 1.0);
        conv(&mut rs[1], 1.0, 1.0);
        let refs: Vec<&RunRecord> = rs.iter().collect();
        let t = summary_table(&refs);
        assert!(
            t.contains("at (s): known to the sampling interval, 1.000 s"),
            "{t}"
        );
        rs[1].series.interval_s = 2.5;
        let refs: Vec<&RunRecord> = rs.iter().collect();
        let t = summary_table(&refs);
        assert!(t.contains("interval, 1.000-2.500 s"), "{t}");
        assert!(t.lines().all(|l| l.len() <= 80), "{t}");
    }

    #[test]
    fn runs_that_differ_in_other_parameters_get_a_block_each() {
        let mut rs = Vec::new();
        for (threads, times) in [(2u64, [10.0, 15.0, 20.0]), (4, [10.0, 11.0, 20.0])] {
            for (p, e) in ["bind", "default", "inverse-bind"].iter().zip(times) {
                let mut r = rec(p, e);
                r.params.insert("threads".into(), threads.into());
                rs.push(r);
            }
        }
        // An older record's own position_between_bounds is never read.
        rs[1].metrics.insert(
            "position_between_bounds".into(),
            numalab_record::Metric::new(0.99, "fraction", numalab_record::Better::Lower),
        );
        let refs: Vec<&RunRecord> = rs.iter().collect();
        let t = summary_table(&refs);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[1], "threads=2:", "{t}");
        assert!(lines[2].starts_with("bind "), "{t}");
        assert!(t.contains("default lies at 0.50"), "{t}");
        assert!(t.contains("\nthreads=4:\nbind "), "{t}");
        assert!(t.contains("default lies at 0.10"), "{t}");
        assert!(!t.contains("0.99"), "{t}");
        assert!(t.lines().all(|l| l.len() <= 80), "{t}");
    }

    #[test]
    fn positions_are_derived_per_configuration_and_say_why_not() {
        use std::path::PathBuf;
        let mut v = Vec::new();
        for (label, d, one_node) in [("A", 15.0, false), ("B", 12.0, false), ("C", 12.0, true)] {
            for (p, e) in [("bind", 10.0), ("default", d), ("inverse-bind", 20.0)] {
                let mut r = rec(p, e);
                r.label = label.into();
                r.id = format!("{label}-{p}");
                if one_node {
                    r.machine.topology =
                        numalab_topology::Topology::regular(1, 2, 1, 1, 32 << 20, 1 << 30, None)
                            .unwrap();
                    for t in &mut r.tasks {
                        t.node_time_s = vec![1.0];
                    }
                    r.series.samples.clear();
                }
                v.push((PathBuf::from(format!("{}.json", r.id)), r));
            }
        }
        let ds = Dataset::new(v);
        let ps = bounds_positions(&ds);
        let got: Vec<(&str, Option<f64>)> =
            ps.iter().map(|p| (p.config.as_str(), p.value)).collect();
        assert_eq!(got, vec![("A", Some(0.5)), ("B", Some(0.2)), ("C", None)]);
        assert_eq!(ps[0].cases, vec![0, 1, 2]);
        assert_eq!(ps[0].bind_s, Some(10.0));
        let refs: Vec<&BoundsPosition> = ps.iter().collect();
        assert_eq!(
            position_text(&refs),
            format!("position_between_bounds (default between bind = 0 and inverse-bind = 1, of mean elapsed_s): A 0.50, B 0.20, C not computed ({ONE_NODE})")
        );
        assert_eq!(
            position_text(&refs[2..]),
            format!("position_between_bounds (default between bind = 0 and inverse-bind = 1, of mean elapsed_s): not computed, {ONE_NODE}")
        );
        assert_eq!(positions_by_cases(&ps).len(), 1);
    }

    #[test]
    fn summary_says_what_happened() {
        let mut r = rec("default", 12.0);
        r.convergence = Some(Convergence {
            definition: "every thread has >= 90% of its own slice on the node it was last seen running on, and a long tail of words to wrap".into(),
            state: ConvergenceState::NotConverged { within_s: 11.5 },
        });
        let s = run_summary(&r);
        assert!(s.contains("elapsed 12.00 s"), "{s}");
        assert!(s.contains("pages migrated 10"), "{s}");
        assert!(s.contains("did not converge within 11.5 s"), "{s}");
        assert!(s.lines().all(|l| l.len() <= 80), "{s}");
        r.convergence = None;
        assert!(run_summary(&r).contains("not observed"));
    }
}

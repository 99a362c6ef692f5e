//! Text output for the autonuma benchmarks and twohalves: a summary per
//! run and a table over runs with each default-placement result's
//! position between the bind and inverse-bind bounds. The charts of a run
//! (memory per node, pages migrated, progress over time) are
//! [`crate::show::record_charts`], the same as `numalab show` draws.

use crate::text::mean_paren_sd;
use numalab_record::{ConvergenceState, RunRecord};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// `text` wrapped at `width` columns, each line after the first indented.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let lead = &text[..text.len() - text.trim_start().len()];
    let mut line = lead.to_string();
    for w in text.split_whitespace() {
        if !line.trim().is_empty() && line.len() + 1 + w.len() > width {
            out.push_str(&line);
            out.push('\n');
            line = indent.to_string();
        } else if !line.trim().is_empty() && line != indent {
            line.push(' ');
        }
        line.push_str(w);
    }
    out.push_str(&line);
    out.push('\n');
    out
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
    s += &wrap(&format!("convergence: {}", convergence_line(r)), 78, "  ");
    if let Some(c) = &r.convergence {
        s += &wrap(&format!("  criterion: {}", c.definition), 78, "    ");
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

/// A table over runs of one benchmark, one row per placement: elapsed
/// mean(stddev), pages migrated, how many runs converged and when; then
/// the default placement's position between the bounds, when both were run.
pub fn summary_table(records: &[&RunRecord]) -> String {
    let mut by: BTreeMap<(u8, String), Vec<&RunRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.outcome.is_ok()) {
        let p = r
            .params
            .get("placement")
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .to_string();
        let order = match p.as_str() {
            "bind" => 0,
            "default" => 1,
            "inverse-bind" => 2,
            _ => 3,
        };
        by.entry((order, p)).or_default().push(r);
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<13} {:>4} {:>16} {:>14} {:>12} {:>13}",
        "placement", "runs", "elapsed(s)", "pages migr.", "converged", "at (s)"
    );
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
    let means = mean_elapsed_by_placement(records);
    let one_node = records.iter().any(|r| {
        r.machine
            .topology
            .nodes
            .iter()
            .filter(|n| !n.cpus.is_empty())
            .count()
            < 2
    });
    if one_node && means.contains_key("bind") && means.contains_key("inverse-bind") {
        let _ = writeln!(
            s,
            "position between the bounds: not computed, bind and inverse-bind are the\n  same placement on a machine with one NUMA node with CPUs"
        );
    } else if let (Some(d), Some(b), Some(i)) = (
        means.get("default"),
        means.get("bind"),
        means.get("inverse-bind"),
    ) {
        match position(*d, *b, *i) {
            Some(pos) => {
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
            None => {
                let _ = writeln!(
                    s,
                    "position between the bounds: not computed, bind and inverse-bind\n  take the same time here (no remote penalty to measure)"
                );
            }
        }
    }
    s
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

    #[test]
    fn wraps_at_width() {
        let w = wrap("aaa bbb ccc ddd", 8, "  ");
        assert_eq!(w, "aaa bbb\n  ccc\n  ddd\n");
        assert_eq!(wrap("  aaa bbb", 8, "    "), "  aaa\n    bbb\n");
    }
}

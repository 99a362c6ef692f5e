//! # numalab-reproduce: the seeds' findings, claim by claim
//!
//! Five public documents are why numalab exists (`../shared/seeds`): a
//! 2002 comparison of NUMA schedulers, the 2003 node-affine scheduler,
//! the 2012 autonuma-benchmark slides, a 2022 NEST evaluation and the
//! 2023 IBS-driven balancing patch. Each published a handful of findings
//! with figures. `numalab reproduce` puts each finding beside what the
//! simulator makes of the same experiment, and says plainly whether it
//! reproduces.
//!
//! A [`Study`] is one document: a campaign plan (the experiment, from
//! the document's own parameters: machine, benchmark sizes, schedulers,
//! balancers) and a function from the campaign's records to its tables
//! and [`Claim`]s. The plan runs through the campaign machinery like any
//! user's plan (resumable, records written as they finish), so a study's
//! records are ordinary records that `compare`, `show` and `report`
//! read. Nothing here runs anything: the caller runs the plan and hands
//! the records back.
//!
//! A claim's verdict is computed from the records by a rule written down
//! with the claim (what "E beats A" means: lower mean total user time at
//! each N), never adjusted to make a figure pass. A claim that does not
//! reproduce says why, from the figures, and names the model gap known to
//! cause it when there is one (docs/simulator.md).

#![forbid(unsafe_code)]

mod fit;
mod studies;

pub use fit::{fit, machine_spec, Fit, FitError, Fitted};

use numalab_record::{ConvergenceState, RunRecord};
use numalab_report::table::{wrap, Table};
use std::path::Path;

pub use studies::studies;

/// One seed document's experiment and findings.
pub struct Study {
    /// `focht-2002`: how the command line names it.
    pub name: &'static str,
    /// Who, what, when: "Focht, NUMA schedulers benchmark, LKML 2002 (seed 000)".
    pub origin: &'static str,
    /// Repetitions when `--runs` does not say (the document's, where it
    /// is small enough to keep `reproduce all` within two minutes).
    pub default_runs: u32,
    /// The campaign plan's benchmarks and configurations (TOML); every
    /// configuration runs on `machine` (`machine = "NAME"`).
    pub body: &'static str,
    /// The preset the plans run on.
    pub machine: &'static str,
    /// Parameters of `machine` fitted to a published figure each (at
    /// most two; [`fit`]).
    pub fits: &'static [Fit],
    /// The plan of the fits' designated cells alone (empty without fits).
    pub fit_body: &'static str,
    /// Tables and claims from the study's records.
    pub evaluate: fn(&Records) -> Findings,
}

impl Study {
    /// The whole plan: a name, the results directory, the repetitions,
    /// then the study's benchmarks and configurations, on machine `spec`
    /// (the preset with its fitted values, [`machine_spec`]).
    pub fn plan_text(&self, runs: u32, results: &Path, spec: &str) -> String {
        self.plan_of(self.body, "", runs, results, spec)
    }

    /// The fit plan (the designated cells alone) on machine `spec`.
    pub fn fit_plan_text(&self, runs: u32, results: &Path, spec: &str) -> String {
        self.plan_of(self.fit_body, "-fit", runs, results, spec)
    }

    fn plan_of(&self, body: &str, suffix: &str, runs: u32, results: &Path, spec: &str) -> String {
        let on = format!("machine = \"{}\"", self.machine);
        format!(
            "name = \"reproduce-{}{suffix}\"\nresults = {}\nruns = {runs}\n\n{}",
            self.name,
            toml_string(&results.to_string_lossy()),
            body.replace(&on, &format!("machine = {}", toml_string(spec)))
        )
    }
}

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What a study found: its side-by-side tables, its claims, and every
/// published figure beside the simulated one.
pub struct Findings {
    pub tables: Vec<Table>,
    pub claims: Vec<Claim>,
    pub cells: Vec<Cell>,
}

/// One published figure and the simulator's for the same cell.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Cell {
    /// What it is: `TotalUserTime N=16 E`.
    pub what: String,
    pub seed: f64,
    /// `None`: no successful simulated run of that cell.
    pub sim: Option<f64>,
    /// A machine parameter was fitted to it: not a prediction.
    pub fitted: bool,
    /// The plan's work was chosen so that this figure comes out near the
    /// seed's (the seed does not publish its work): not a prediction
    /// either, and left out of the numbers as a fitted cell is.
    pub sized: bool,
}

impl Cell {
    pub fn new(what: impl Into<String>, seed: f64, sim: Option<f64>) -> Cell {
        Cell {
            what: what.into(),
            seed,
            sim,
            fitted: false,
            sized: false,
        }
    }

    /// A cell whose simulated figure the plan's choice of work sets
    /// ([`Cell::sized`]): shown beside the seed's, never counted.
    pub fn sized(what: impl Into<String>, seed: f64, sim: Option<f64>) -> Cell {
        Cell {
            sized: true,
            ..Cell::new(what, seed, sim)
        }
    }

    /// Neither fitted nor set by the plan's sizing: a prediction.
    pub fn predicted(&self) -> bool {
        !self.fitted && !self.sized
    }

    /// simulated / seed.
    pub fn ratio(&self) -> Option<f64> {
        self.sim.filter(|_| self.seed != 0.0).map(|s| s / self.seed)
    }

    /// |simulated / seed - 1|.
    pub fn error(&self) -> Option<f64> {
        self.ratio().map(|r| (r - 1.0).abs())
    }
}

/// Within this error a simulated figure counts as the seed's.
pub const CELL_TOLERANCE: f64 = 0.15;

/// How close a study's numbers are: over the predicted cells (not
/// fitted) with a simulated figure, the median and the worst error, and
/// how many are within [`CELL_TOLERANCE`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Numbers {
    pub cells: usize,
    pub compared: usize,
    pub within: usize,
    pub median_error: f64,
    pub worst_error: f64,
    pub worst: String,
}

impl Numbers {
    /// `2 of 8 predicted figures within 15% of the seed's; |simulated /
    /// seed - 1| median 42%, worst 156% (hackbench same_ccx)`.
    pub fn summary(&self) -> String {
        format!(
            "{} of {} predicted figures within {:.0}% of the seed's; |simulated / seed - 1| median {:.0}%, worst {:.0}% ({})",
            self.within,
            self.compared,
            100.0 * CELL_TOLERANCE,
            100.0 * self.median_error,
            100.0 * self.worst_error,
            self.worst
        )
    }
}

impl Findings {
    pub fn numbers(&self) -> Option<Numbers> {
        let mut e: Vec<(f64, &str)> = self
            .cells
            .iter()
            .filter(|c| c.predicted())
            .filter_map(|c| c.error().map(|e| (e, c.what.as_str())))
            .collect();
        if e.is_empty() {
            return None;
        }
        e.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n = e.len();
        let median = if n % 2 == 1 {
            e[n / 2].0
        } else {
            (e[n / 2 - 1].0 + e[n / 2].0) / 2.0
        };
        Some(Numbers {
            cells: self.cells.iter().filter(|c| c.predicted()).count(),
            compared: n,
            within: e.iter().filter(|x| x.0 <= CELL_TOLERANCE).count(),
            median_error: median,
            worst_error: e[n - 1].0,
            worst: e[n - 1].1.to_string(),
        })
    }
}

/// Share of a study's predicted figures that must be within
/// [`CELL_TOLERANCE`] for its numbers claim (issue 24's acceptance).
pub const CELLS_WITHIN_SHARE: f64 = 0.8;

impl Findings {
    /// Mark the cells parameters were fitted to (left out of the numbers)
    /// and add the study's numbers claim: its predicted figures within
    /// [`CELL_TOLERANCE`] of the seed's, at least [`CELLS_WITHIN_SHARE`]
    /// of them.
    pub fn with_fits(mut self, fitted: &[Fitted]) -> Findings {
        for c in &mut self.cells {
            c.fitted = fitted
                .iter()
                .any(|f| f.cell == c.what || f.twins.contains(&c.what));
        }
        if let Some(n) = self.numbers() {
            let need = (CELLS_WITHIN_SHARE * n.compared as f64).ceil() as usize;
            let fits = if fitted.is_empty() {
                "no parameter fitted".to_string()
            } else {
                let keys: Vec<String> = fitted
                    .iter()
                    .map(|f| format!("{} fitted on {}", f.key, f.cell))
                    .collect();
                keys.join("; ")
            };
            self.claims.push(Claim {
                text: format!(
                    "The model predicts the seed's published figures: at least {:.0}% of the {} predicted within {:.0}% ({fits})",
                    100.0 * CELLS_WITHIN_SHARE,
                    n.compared,
                    100.0 * CELL_TOLERANCE
                ),
                seed: format!("{} published figures", n.cells),
                sim: n.summary(),
                verdict: if n.within >= need {
                    Verdict::Reproduced
                } else {
                    Verdict::NotReproduced(format!(
                        "{} of {} within {:.0}%, {need} needed",
                        n.within,
                        n.compared,
                        100.0 * CELL_TOLERANCE
                    ))
                },
                quantitative: true,
            });
        }
        self
    }
}

/// One published finding and what the simulator made of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The finding, as the document states it.
    pub text: String,
    /// The document's figure or ratio.
    pub seed: String,
    /// The simulator's.
    pub sim: String,
    pub verdict: Verdict,
    /// A claim on the numbers (the figures within a tolerance), not on an
    /// ordering or a ratio.
    pub quantitative: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Reproduced,
    /// Why not, in one line.
    NotReproduced(String),
}

impl Verdict {
    pub fn reproduced(&self) -> bool {
        matches!(self, Verdict::Reproduced)
    }
}

/// A study's records, with the lookups its claims need.
pub struct Records {
    pub records: Vec<RunRecord>,
}

impl Records {
    pub fn new(records: Vec<RunRecord>) -> Records {
        Records { records }
    }

    /// The successful runs of `benchmark` under configuration `label`
    /// whose parameters include every `key = value` of `params`.
    pub fn runs<'a>(
        &'a self,
        benchmark: &'a str,
        label: &'a str,
        params: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a RunRecord> + 'a {
        self.records.iter().filter(move |r| {
            r.benchmark == benchmark
                && r.label == label
                && r.outcome.is_ok()
                && params.iter().all(|(k, v)| {
                    r.params.get(*k).is_some_and(|p| match p {
                        serde_json::Value::String(s) => s == v,
                        other => v.parse::<serde_json::Value>().is_ok_and(|x| x == *other),
                    })
                })
        })
    }

    /// The mean of `metric` over those runs; `None` without any.
    pub fn mean(
        &self,
        benchmark: &str,
        label: &str,
        params: &[(&str, &str)],
        metric: &str,
    ) -> Option<f64> {
        let v: Vec<f64> = self
            .runs(benchmark, label, params)
            .filter_map(|r| r.metrics.get(metric).map(|m| m.value))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }

    /// How many of those runs converged, of how many, and the mean time
    /// of those that did.
    pub fn converged(
        &self,
        benchmark: &str,
        label: &str,
        params: &[(&str, &str)],
    ) -> (usize, usize, Option<f64>) {
        let mut at = Vec::new();
        let mut n = 0;
        for r in self.runs(benchmark, label, params) {
            n += 1;
            if let Some(ConvergenceState::Converged { at_s }) =
                r.convergence.as_ref().map(|c| &c.state)
            {
                at.push(*at_s);
            }
        }
        let mean = (!at.is_empty()).then(|| at.iter().sum::<f64>() / at.len() as f64);
        (at.len(), n, mean)
    }

    /// The mean time of the first sample at which the run had migrated
    /// any page (the record's `numa_pages_migrated` series).
    pub fn first_migration_s(
        &self,
        benchmark: &str,
        label: &str,
        params: &[(&str, &str)],
    ) -> Option<f64> {
        let v: Vec<f64> = self
            .runs(benchmark, label, params)
            .filter_map(|r| {
                r.series
                    .samples
                    .iter()
                    .find(|s| s.vmstat.get("numa_pages_migrated").is_some_and(|&p| p > 0))
                    .map(|s| s.t_s)
            })
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }
}

/// A figure for a table cell: `-` when there is none.
pub fn fig(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// One study's findings as 80-column text: its tables, then each claim
/// with both figures and the verdict.
pub fn render(study: &Study, runs: u32, f: &Findings, fitted: &[Fitted]) -> String {
    let mut out = String::new();
    // Continuation lines hang by two columns (wrap's indent).
    let say = |out: &mut String, text: &str| {
        for l in wrap(text, 80) {
            out.push_str(&l);
            out.push('\n');
        }
    };
    say(
        &mut out,
        &format!(
            "== {}: {} ({runs} run(s) per cell, simulated)",
            study.name, study.origin
        ),
    );
    out.push('\n');
    for t in &f.tables {
        out.push_str(&t.to_text());
        out.push('\n');
    }
    for x in fitted {
        say(
            &mut out,
            &format!(
                "Fitted: {} = {} on {} (seed {}, simulated {}){}{}; its cited range [{}, {}]: {}",
                x.key,
                x.value,
                x.cell,
                fig(Some(x.seed)),
                fig(Some(x.simulated)),
                if x.twins.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; the same runs give {}, left out of the predictions with it",
                        x.twins.join(", ")
                    )
                },
                if x.at_bound {
                    ", at the bound: the range does not reach the seed's figure"
                } else {
                    ""
                },
                x.lowest,
                x.highest,
                x.source
            ),
        );
    }
    let sized: Vec<&str> = f
        .cells
        .iter()
        .filter(|c| c.sized)
        .map(|c| c.what.as_str())
        .collect();
    if !sized.is_empty() {
        say(
            &mut out,
            &format!(
                "Not predicted: {}, whose figures the plan's work was sized to (the seed does not publish its work)",
                sized.join(", ")
            ),
        );
    }
    if let Some(n) = f.numbers() {
        say(&mut out, &format!("Numbers: {}", n.summary()));
        out.push('\n');
    }
    for c in &f.claims {
        let mark = if c.verdict.reproduced() {
            "reproduced"
        } else {
            "NOT reproduced"
        };
        say(&mut out, &format!("[{mark}] {}", c.text));
        say(&mut out, &format!("  seed: {}", c.seed));
        say(&mut out, &format!("  simulated: {}", c.sim));
        if let Verdict::NotReproduced(why) = &c.verdict {
            say(&mut out, &format!("  why: {why}"));
        }
    }
    out
}

/// One study's findings as JSON: its claims (text, both figures,
/// verdict, reason) and every cell with both values and their ratio.
pub fn to_json(study: &Study, runs: u32, f: &Findings, fitted: &[Fitted]) -> serde_json::Value {
    serde_json::json!({
        "study": study.name,
        "origin": study.origin,
        "runs": runs,
        "claims": f.claims.iter().map(|c| serde_json::json!({
            "text": c.text,
            "seed": c.seed,
            "simulated": c.sim,
            "reproduced": c.verdict.reproduced(),
            "quantitative": c.quantitative,
            "reason": match &c.verdict {
                Verdict::Reproduced => None,
                Verdict::NotReproduced(why) => Some(why.clone()),
            },
        })).collect::<Vec<_>>(),
        "cells": f.cells.iter().map(|c| serde_json::json!({
            "what": c.what,
            "seed": c.seed,
            "simulated": c.sim,
            "ratio": c.ratio(),
            "fitted": c.fitted,
            "sized": c.sized,
        })).collect::<Vec<_>>(),
        "fitted": fitted,
        "numbers": f.numbers(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_the_median_and_worst_error_of_the_cells() {
        let f = Findings {
            tables: Vec::new(),
            claims: Vec::new(),
            cells: vec![
                Cell::new("a", 100.0, Some(110.0)),
                Cell::new("b", 100.0, Some(50.0)),
                Cell::new("c", 10.0, Some(10.0)),
                Cell::new("d", 10.0, None),
            ],
        };
        let n = f.numbers().unwrap();
        assert_eq!((n.cells, n.compared, n.within), (4, 3, 2));
        assert!((n.median_error - 0.1).abs() < 1e-12);
        assert_eq!((n.worst_error, n.worst.as_str()), (0.5, "b"));
        assert_eq!(Cell::new("z", 0.0, Some(1.0)).ratio(), None);
        let none = Findings {
            tables: Vec::new(),
            claims: Vec::new(),
            cells: vec![Cell::new("d", 10.0, None)],
        };
        assert!(none.numbers().is_none());
    }

    /// A cell the plan's work was sized to is shown but not counted: a
    /// study whose only close figure is one it was sized to has no
    /// prediction within the tolerance.
    #[test]
    fn a_cell_the_plan_was_sized_to_is_not_a_prediction() {
        let f = Findings {
            tables: Vec::new(),
            claims: Vec::new(),
            cells: vec![
                Cell::sized("split", 13.0, Some(13.0)),
                Cell::new("mix", 26.0, Some(19.0)),
            ],
        };
        let n = f.numbers().unwrap();
        assert_eq!((n.cells, n.compared, n.within), (1, 1, 0));
        let f = f.with_fits(&[]);
        assert!(!f.claims.last().unwrap().verdict.reproduced());
        assert!(f.cells[0].sized && !f.cells[0].predicted());
    }

    /// The designated cell and its twins (figures of the same simulated
    /// runs) are fitted, not predicted: left out of the numbers.
    #[test]
    fn a_fitted_cell_and_its_twins_are_not_predictions() {
        let f = Findings {
            tables: Vec::new(),
            claims: Vec::new(),
            cells: vec![
                Cell::new("mof", 100.0, Some(100.0)),
                Cell::new("twin", 98.0, Some(100.0)),
                Cell::new("other", 10.0, Some(20.0)),
            ],
        };
        let fitted = Fitted {
            key: "memory.bandwidth_gbs".into(),
            cell: "mof".into(),
            twins: vec!["twin".into()],
            value: 9.6,
            lowest: 6.0,
            highest: 30.0,
            source: "a source".into(),
            seed: 100.0,
            simulated: 100.0,
            at_bound: false,
            points: 3,
        };
        let f = f.with_fits(&[fitted]);
        let marked: Vec<bool> = f.cells.iter().map(|c| c.fitted).collect();
        assert_eq!(marked, [true, true, false]);
        let n = f.numbers().unwrap();
        assert_eq!((n.compared, n.within), (1, 0), "only `other` is predicted");
        let claim = f.claims.last().unwrap();
        assert!(!claim.verdict.reproduced(), "{claim:?}");
    }
}

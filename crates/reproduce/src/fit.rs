//! Fitting at most two physical parameters of a study's machine, each to
//! one published figure (issue 24): the seeds' machines are known only
//! in part, and a figure a document gives (a latency nobody published,
//! say) is better measured from the document itself than guessed. The
//! rules that keep this honest:
//!
//! - the parameter is one of the machine file's numbers with a `[ranges]`
//!   entry, a range cited from a public source; the fitted value stays in
//!   it (at a bound, said so, when the seed's figure lies beyond);
//! - it is fitted on one designated cell, a figure no claim uses; that
//!   cell is left out of the study's numbers, and every other cell is a
//!   prediction;
//! - the fit is a bisection over the range on the designated cell alone
//!   (the study's `fit_body` plan), each point a campaign of its own whose
//!   records stay on disk, so running again re-fits without simulating.
//!
//! Nothing here runs anything: the caller gives a function that runs the
//! fit plan on a machine spec and hands back its records.

use crate::{Findings, Records, Study};

/// A machine parameter a study fits, and the figure it is fitted to.
#[derive(Debug, Clone, Copy)]
pub struct Fit {
    /// The machine file's key (`memory.local_latency_ns`), which has a
    /// cited range in the file's `[ranges]`.
    pub key: &'static str,
    /// The designated cell (a [`crate::Cell`]'s `what`).
    pub cell: &'static str,
    /// Cells the model computes from the very runs of the designated one
    /// (another published figure of the same simulated configuration):
    /// fitted too, so left out of the predictions.
    pub twins: &'static [&'static str],
}

/// A fitted parameter, with what it was fitted to.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Fitted {
    pub key: String,
    pub cell: String,
    /// [`Fit::twins`].
    pub twins: Vec<String>,
    pub value: f64,
    pub lowest: f64,
    pub highest: f64,
    /// Where the range comes from (the machine file's `ranges.KEY`).
    pub source: String,
    pub seed: f64,
    /// The designated cell's simulated figure at `value`.
    pub simulated: f64,
    /// The seed's figure lies beyond what the range reaches: `value` is
    /// the bound nearest it.
    pub at_bound: bool,
    /// Points simulated.
    pub points: usize,
}

/// Bisection stops within this of the seed's figure.
const CLOSE: f64 = 0.005;
/// ... or after this many points inside the range.
const MAX_STEPS: usize = 10;

/// `machine[key=value,...]`, or `machine` with nothing set.
pub fn machine_spec(machine: &str, sets: &[(String, f64)]) -> String {
    if sets.is_empty() {
        return machine.to_string();
    }
    let kv: Vec<String> = sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{machine}[{}]", kv.join(","))
}

/// `x` to four significant digits, so fitted values read well and the
/// points (and their records' directories) are the same on every run.
fn round4(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(3 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

/// Why a fit could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// The study's machine file.
    #[error(transparent)]
    Machine(#[from] numalab_sim::machine::MachineError),
    /// A fitted key without a cited range in the machine file.
    #[error("{study}: machine {machine} has no cited range for {key} ([ranges] in its file)")]
    NoRange {
        study: &'static str,
        machine: &'static str,
        key: &'static str,
    },
    /// A designated cell the study's findings do not have; those they have.
    #[error("{study}: no cell {cell:?} to fit {key} on (the study's cells: {})", .cells.join(", "))]
    NoCell {
        study: &'static str,
        cell: &'static str,
        key: &'static str,
        cells: Vec<String>,
    },
    /// A point whose runs gave no figure for the designated cell.
    #[error("{study}: {key} = {value}: the fit plan's runs gave no figure for {cell}")]
    NoFigure {
        study: &'static str,
        key: &'static str,
        value: f64,
        cell: &'static str,
    },
    /// Running the fit plan at a point failed (the caller's words).
    #[error("{0}")]
    Run(String),
}

/// Fit each of `study.fits` in turn (a later one with the earlier ones
/// set). `eval(spec)` runs the study's fit plan on machine `spec` and
/// returns its records (`None`: interrupted, and so is this); its error
/// becomes [`FitError::Run`].
pub fn fit<E: std::fmt::Display>(
    study: &Study,
    eval: &mut dyn FnMut(&str) -> Result<Option<Records>, E>,
) -> Result<Option<Vec<Fitted>>, FitError> {
    let machine = numalab_sim::Machine::load(study.machine)?;
    let mut done: Vec<Fitted> = Vec::new();
    for f in study.fits {
        let (lowest, highest) = *machine.ranges.get(f.key).ok_or(FitError::NoRange {
            study: study.name,
            machine: study.machine,
            key: f.key,
        })?;
        let source = machine
            .sources
            .get(&format!("ranges.{}", f.key))
            .cloned()
            .unwrap_or_default();
        let sets: Vec<(String, f64)> = done.iter().map(|d| (d.key.clone(), d.value)).collect();
        let mut point = |v: f64| -> Result<Option<(f64, f64)>, FitError> {
            let mut s = sets.clone();
            s.push((f.key.to_string(), v));
            let spec = machine_spec(study.machine, &s);
            let Some(records) = eval(&spec).map_err(|e| FitError::Run(e.to_string()))? else {
                return Ok(None);
            };
            let found = (study.evaluate)(&records);
            let cell = designated(&found, f.cell).ok_or_else(|| FitError::NoCell {
                study: study.name,
                cell: f.cell,
                key: f.key,
                cells: found.cells.iter().map(|c| c.what.clone()).collect(),
            })?;
            let sim = cell.1.ok_or(FitError::NoFigure {
                study: study.name,
                key: f.key,
                value: v,
                cell: f.cell,
            })?;
            Ok(Some((cell.0, sim)))
        };
        match bisect(lowest, highest, &mut point)? {
            None => return Ok(None),
            Some(b) => done.push(Fitted {
                key: f.key.to_string(),
                cell: f.cell.to_string(),
                twins: f.twins.iter().map(|t| t.to_string()).collect(),
                value: b.value,
                lowest,
                highest,
                source,
                seed: b.seed,
                simulated: b.simulated,
                at_bound: b.at_bound,
                points: b.points,
            }),
        }
    }
    Ok(Some(done))
}

/// The designated cell's seed figure and simulated one.
fn designated(f: &Findings, what: &str) -> Option<(f64, Option<f64>)> {
    f.cells
        .iter()
        .find(|c| c.what == what)
        .map(|c| (c.seed, c.sim))
}

#[derive(Debug, PartialEq)]
struct Bisected {
    value: f64,
    seed: f64,
    simulated: f64,
    at_bound: bool,
    points: usize,
}

/// The value in [lo, hi] whose simulated figure is nearest the seed's,
/// by bisection (the figure is taken as monotonic in the parameter);
/// `point(v)` is (seed, simulated) at `v`.
fn bisect(
    lo: f64,
    hi: f64,
    point: &mut dyn FnMut(f64) -> Result<Option<(f64, f64)>, FitError>,
) -> Result<Option<Bisected>, FitError> {
    let mut points = 0;
    let mut at = |v: f64, points: &mut usize| -> Result<Option<(f64, f64)>, FitError> {
        *points += 1;
        point(v)
    };
    let (Some((seed, f_lo)), Some((_, f_hi))) = (at(lo, &mut points)?, at(hi, &mut points)?) else {
        return Ok(None);
    };
    let miss = |f: f64| (f / seed - 1.0).abs();
    let mut best = if miss(f_lo) <= miss(f_hi) {
        (lo, f_lo)
    } else {
        (hi, f_hi)
    };
    if (f_lo - seed) * (f_hi - seed) > 0.0 {
        return Ok(Some(Bisected {
            value: best.0,
            seed,
            simulated: best.1,
            at_bound: true,
            points,
        }));
    }
    let (mut a, mut fa, mut b) = (lo, f_lo, hi);
    for _ in 0..MAX_STEPS {
        if miss(best.1) < CLOSE {
            break;
        }
        let mid = round4((a + b) / 2.0);
        if mid <= a.min(b) || mid >= a.max(b) {
            break;
        }
        let Some((_, fm)) = at(mid, &mut points)? else {
            return Ok(None);
        };
        if miss(fm) < miss(best.1) {
            best = (mid, fm);
        }
        if (fa - seed) * (fm - seed) <= 0.0 {
            b = mid;
        } else {
            (a, fa) = (mid, fm);
        }
    }
    Ok(Some(Bisected {
        value: best.0,
        seed,
        simulated: best.1,
        at_bound: false,
        points,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A figure that falls as the parameter grows (a rate), and one that
    /// grows (a time): both found within 0.5%, in few points.
    #[test]
    fn bisection_finds_the_value_either_way() {
        for (f, want) in [
            (
                Box::new(|v: f64| 1000.0 / v) as Box<dyn Fn(f64) -> f64>,
                12.5,
            ),
            (Box::new(|v: f64| 3.0 * v + 7.0), 31.0),
        ] {
            let seed = f(want);
            let mut calls = 0;
            let mut p = |v: f64| {
                calls += 1;
                Ok(Some((seed, f(v))))
            };
            let b = bisect(1.0, 100.0, &mut p).unwrap().unwrap();
            assert!(!b.at_bound);
            assert!((b.simulated / seed - 1.0).abs() < CLOSE, "{b:?}");
            assert!(b.points <= 2 + MAX_STEPS && b.points == calls, "{b:?}");
        }
    }

    /// A seed figure the range cannot reach: the nearest bound, said so.
    #[test]
    fn a_figure_beyond_the_range_stops_at_its_bound() {
        let mut p = |v: f64| Ok(Some((500.0, 2.0 * v)));
        let b = bisect(1.0, 100.0, &mut p).unwrap().unwrap();
        assert_eq!((b.value, b.simulated, b.at_bound), (100.0, 200.0, true));
        let mut interrupted = |_: f64| Ok(None);
        assert_eq!(bisect(1.0, 100.0, &mut interrupted).unwrap(), None);
    }

    #[test]
    fn specs_name_every_value_set() {
        assert_eq!(machine_spec("tx7", &[]), "tx7");
        assert_eq!(
            machine_spec(
                "tx7",
                &[("memory.mlp".into(), 2.5), ("cpu.max_ghz".into(), 1.0)]
            ),
            "tx7[memory.mlp=2.5,cpu.max_ghz=1]"
        );
        assert_eq!(round4(312.4567), 312.5);
        assert_eq!(round4(0.0123456), 0.01235);
    }
}

//! Seed 000: Focht's numa_test on the AzusA, schedulers A, B, E and F.

use super::pct;
use crate::{fig, Cell, Claim, Findings, Fit, Records, Study, Verdict};
use numalab_report::table::{Column, Table};

pub(super) fn study() -> Study {
    Study {
        name: "focht-2002",
        origin: "Focht, NUMA schedulers benchmark results, LKML, Oct 2002 (seed 000): numa_test on a 16-CPU 4-node AzusA",
        default_runs: 5,
        body: include_str!("../../plans/focht-2002.toml"),
        machine: "azusa16",
        fits: &[Fit {
            key: "memory.local_latency_ns",
            cell: "TotalUserTime N=4 E",
            twins: &[],
        }],
        fit_body: include_str!("../../plans/focht-2002-fit.toml"),
        evaluate: focht_2002,
    }
}

/// Seed 000's TotalUserTime (s), schedulers A, B, E, F at N = 4..64
/// (E at 64 is in parentheses in the seed: without disturbance). No
/// claim uses N = 4; E's there (four tasks, one alone on each node's
/// board) is the cell the AzusA's unpublished memory latency is fitted on.
const FOCHT_2002_TU: [(u32, [f64; 4]); 5] = [
    (4, [112.55, 123.13, 108.88, 121.25]),
    (8, [243.86, 251.27, 229.51, 240.75]),
    (16, [582.91, 538.49, 504.17, 525.59]),
    (32, [1238.4, 1114.9, 1084.9, 1091.9]),
    (64, [2543.4, 2223.4, 2133.0, 2239.5]),
];

pub(super) fn focht_2002(r: &Records) -> Findings {
    let labels = ["A", "B", "E", "F"];
    let mut t = Table::new(
        "TotalUserTime (s), simulated [seed]",
        vec![
            Column::key("N"),
            Column::right("A node-blind"),
            Column::right("B max_pull=1"),
            Column::right("E node-affine"),
            Column::right("F dynamic"),
        ],
    );
    let tu = |n: u32, l: &str| r.mean("numa_test", l, &[("tasks", &n.to_string())], "user_s");
    let mut numbers = Vec::new();
    for (n, seed) in FOCHT_2002_TU {
        let mut cells = vec![n.to_string()];
        for (i, l) in labels.iter().enumerate() {
            cells.push(format!("{} [{}]", fig(tu(n, l)), fig(Some(seed[i]))));
            numbers.push(Cell::new(
                format!("TotalUserTime N={n} {l}"),
                seed[i],
                tu(n, l),
            ));
        }
        t.push(cells);
    }
    t.legend
        .push("A node-blind, B stealing one task at a time, E node-affine, F node-affine with a dynamic homenode and no initial balancing".into());
    // E beats A on total user time at N = 8, 16, 32.
    let ns = [8u32, 16, 32];
    let gains: Vec<(u32, Option<f64>)> = ns
        .iter()
        .map(|&n| (n, tu(n, "A").zip(tu(n, "E")).map(|(a, e)| (a - e) / a)))
        .collect();
    let seed_gains: Vec<String> = ns
        .iter()
        .map(|&n| {
            let s = FOCHT_2002_TU.iter().find(|x| x.0 == n).expect("listed").1;
            format!("N={n} {}", pct((s[0] - s[2]) / s[0]))
        })
        .collect();
    let sim: Vec<String> = gains
        .iter()
        .map(|(n, g)| format!("N={n} {}", g.map_or("-".into(), pct)))
        .collect();
    let losing: Vec<String> = gains
        .iter()
        .filter(|(_, g)| !g.is_some_and(|g| g > 0.0))
        .map(|(n, _)| format!("N={n}"))
        .collect();
    let verdict = if losing.is_empty() {
        Verdict::Reproduced
    } else {
        Verdict::NotReproduced(format!(
            "E does not use less user time than A at {}",
            losing.join(", ")
        ))
    };
    Findings {
        tables: vec![t],
        cells: numbers,
        claims: vec![Claim {
            quantitative: false,
text: "The node-affine scheduler (E) uses less total user time than the node-blind one (A) at N = 8, 16 and 32 (E's gain over A)".into(),
            seed: seed_gains.join(", "),
            sim: sim.join(", "),
            verdict,
        }],
    }
}

//! Seed 002: Arcangeli's AutoNUMA25 slides, autonuma-benchmark on a 2-node machine with HT.

use crate::fit::Fit;
use crate::{fig, Cell, Claim, Findings, Records, Study, Verdict};
use numalab_report::table::{Column, Table};

pub(super) fn study() -> Study {
    Study {
        name: "autonuma-2012",
        origin: "Arcangeli, AutoNUMA25 slides, Sep 2012 (seed 002): autonuma-benchmark on a 2-node machine with HT",
        default_runs: 4,
        body: include_str!("../../plans/autonuma-2012.toml"),
        machine: "ht2",
        fits: &[Fit {
            key: "memory.bandwidth_gbs",
            cell: MOF_CELL,
            // The model runs one configuration for AutoNUMA25 and its MoF
            // variant: the same runs give both numa01_THREAD_ALLOC figures.
            twins: &["numa01_THREAD_ALLOC elapsed, autonuma"],
        }],
        fit_body: include_str!("../../plans/autonuma-2012-fit.toml"),
        evaluate: autonuma_2012,
    }
}

/// Seed 002's elapsed times (s), AutoNUMA25, mean of 4.
const AUTONUMA_2012: [(&str, f64); 4] = [
    ("numa01", 212.7),
    ("numa01_THREAD_ALLOC", 336.7),
    ("numa02", 48.1),
    ("numa02_SMT", 42.8),
];

/// The designated cell: numa01_THREAD_ALLOC under AutoNUMA25 MoF (the
/// seed's migrate-on-fault variant, mean of 4), the configuration the
/// model runs (its NUMA balancing migrates a page on its hinting fault).
/// No claim uses it; ht2's memory bandwidth is fitted on it.
const MOF_CELL: &str = "numa01_THREAD_ALLOC elapsed, AutoNUMA25 MoF";
const MOF_THREAD_ALLOC: f64 = 343.65;

/// A benchmark's claim that it converges under automatic NUMA balancing and not without it.
fn autonuma_convergence_claim(r: &Records, b: &str) -> Claim {
    let (ca, na, _) = r.converged(b, "autonuma", &[]);
    let (cn, nn, _) = r.converged(b, "none", &[]);
    let verdict = if na == 0 || nn == 0 {
        Verdict::NotReproduced("runs missing".into())
    } else if ca < na {
        Verdict::NotReproduced(format!(
            "under autonuma {} of {na} runs did not converge within the run",
            na - ca
        ))
    } else if cn > 0 {
        Verdict::NotReproduced(format!("{cn} of {nn} runs converged without a balancer"))
    } else {
        Verdict::Reproduced
    };
    Claim {
        quantitative: false,
        text: format!("{b} converges under automatic NUMA balancing and not without it"),
        seed: "memory follows the threads in the convergence charts".into(),
        sim: format!("autonuma {ca}/{na}, none {cn}/{nn} runs converged"),
        verdict,
    }
}

/// The claim that under autonuma elapsed time orders numa01_THREAD_ALLOC > numa01 > numa02 > numa02_SMT.
fn autonuma_order_claim(r: &Records) -> Claim {
    // Elapsed order under autonuma.
    let order = ["numa01_THREAD_ALLOC", "numa01", "numa02", "numa02_SMT"];
    let el: Vec<Option<f64>> = order
        .iter()
        .map(|b| r.mean(b, "autonuma", &[], "elapsed_s"))
        .collect();
    let broken: Vec<String> = order
        .windows(2)
        .zip(el.windows(2))
        .filter(|(_, e)| !matches!((e[0], e[1]), (Some(a), Some(b)) if a > b))
        .map(|(b, e)| format!("{} {} <= {} {}", b[0], fig(e[0]), b[1], fig(e[1])))
        .collect();
    Claim {
        quantitative: false,
        text: "Elapsed time orders numa01_THREAD_ALLOC > numa01 > numa02 > numa02_SMT".into(),
        seed: "336.7 > 212.7 > 48.1 > 42.8 s".into(),
        sim: el.iter().map(|e| fig(*e)).collect::<Vec<_>>().join(", ") + " s" + &smt_gap(&el),
        verdict: if broken.is_empty() {
            Verdict::Reproduced
        } else {
            Verdict::NotReproduced(format!(
                "{}{}",
                broken.join("; "),
                match (
                    r.mean("numa02", "autonuma", &[], "bandwidth_gbs"),
                    r.mean("numa02_SMT", "autonuma", &[], "bandwidth_gbs"),
                ) {
                    (Some(a), Some(b)) => format!(
                        " (numa02 and numa02_SMT zero memory at {a:.0} and {b:.0} GB/s, near the two nodes' bandwidth: once their memory is local both are bound by the memory controllers, not by threads per core, so they nearly tie here; the seed's 12% gap was measured under AutoNUMA25, Arcangeli's own balancer (the knuma_scand scanner and knuma_migrated threads), whose scanner and migration threads the model does not simulate (it moves memory by the kernel's NUMA hinting faults, tasks by AutoNUMA25's exchange), with numa02 at 100% CPU occupancy, a thread on every hardware thread of the HT machine, against numa02_SMT's one per core; AutoNUMA27 measured a tie on an 8-node machine, numa02 58.88 vs numa02_SMT 58.63 s on average: Dronamraju, linux-mm, 14 Oct 2012)"
                    ),
                    _ => String::new(),
                }
            ))
        },
    }
}

/// How far numa02 is above numa02_SMT, beside the seed's 12%, and why
/// the two nearly tie here: both are bound by the two memory controllers
/// once their memory is local; the seed's gap was measured under
/// AutoNUMA25, whose knuma_scand and knuma_migrated threads the model
/// does not simulate.
fn smt_gap(el: &[Option<f64>]) -> String {
    match (el.get(2).copied().flatten(), el.get(3).copied().flatten()) {
        (Some(a), Some(b)) if b > 0.0 => format!(
            " (numa02 {:+.1}% over numa02_SMT, the seed's {:+.1}%: once their memory is local both are bound by the two nodes' memory controllers, not by threads per core; the seed's gap was measured under AutoNUMA25, Arcangeli's own balancer (knuma_scand, knuma_migrated), with numa02 at 100% CPU occupancy, a thread on every hardware thread, against numa02_SMT's one per core; the model moves memory by the kernel's NUMA hinting faults (should_numa_migrate_memory) and tasks by AutoNUMA25's exchange, and does not simulate AutoNUMA25's scanner and migration threads, which share the CPUs with numa02's threads but not with numa02_SMT's)",
            100.0 * (a / b - 1.0),
            100.0 * (48.1 / 42.8 - 1.0)
        ),
        _ => String::new(),
    }
}

fn autonuma_2012(r: &Records) -> Findings {
    let mut t = Table::new(
        "Elapsed (s) and convergence, simulated [seed, AutoNUMA25]",
        vec![
            Column::key("benchmark"),
            Column::right("none"),
            Column::right("autonuma"),
            Column::right("converged (none)"),
            Column::right("converged (autonuma)"),
        ],
    );
    let conv = |b: &str, l: &str| {
        let (c, n, at) = r.converged(b, l, &[]);
        match at {
            Some(at) => format!("{c}/{n} at {at:.0} s"),
            None => format!("{c}/{n}"),
        }
    };
    let mut numbers = vec![Cell::new(
        MOF_CELL.to_string(),
        MOF_THREAD_ALLOC,
        r.mean("numa01_THREAD_ALLOC", "autonuma", &[], "elapsed_s"),
    )];
    for (b, seed) in AUTONUMA_2012 {
        numbers.push(Cell::new(
            format!("{b} elapsed, autonuma"),
            seed,
            r.mean(b, "autonuma", &[], "elapsed_s"),
        ));
        t.push(vec![
            b.into(),
            fig(r.mean(b, "none", &[], "elapsed_s")),
            format!(
                "{} [{}]",
                fig(r.mean(b, "autonuma", &[], "elapsed_s")),
                fig(Some(seed))
            ),
            conv(b, "none"),
            conv(b, "autonuma"),
        ]);
    }
    t.legend.push(
        "autonuma: the kernel's NUMA balancing (PTE scans, hinting faults, should_numa_migrate_memory) with tasks moved by AutoNUMA25's exchange, __sched_autonuma_balance (the seed's kernel), not fair.c's task_numa_migrate"
            .into(),
    );
    let mut claims: Vec<Claim> = ["numa01", "numa01_THREAD_ALLOC", "numa02"]
        .into_iter()
        .map(|b| autonuma_convergence_claim(r, b))
        .collect();
    claims.push(autonuma_order_claim(r));
    Findings {
        tables: vec![t],
        cells: numbers,
        claims,
    }
}

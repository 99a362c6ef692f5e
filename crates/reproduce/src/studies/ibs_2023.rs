//! Seed 004: Rao's IBS-driven NUMA balancing, the two-halves microbenchmark on a 2-node Zen 4.

use crate::{fig, Cell, Claim, Findings, Records, Study, Verdict};
use numalab_report::table::{Column, Table};

pub(super) fn study() -> Study {
    Study {
        name: "ibs-2023",
        origin: "Rao, IBS-driven NUMA balancing, LKML, Feb 2023 (seed 004): the two-halves microbenchmark on a 2-node Zen 4",
        default_runs: 2,
        body: include_str!("../../plans/ibs-2023.toml"),
        machine: "genoa2n",
        fits: &[],
        fit_body: "",
        evaluate: ibs_2023,
    }
}

/// Why autonuma is not 2x slower than sampling on twohalves: the kernel
/// path traced (docs/simulator.md, `autonuma`; docs/reproduce.md).
fn ibs_2023_why(x: f64, autonuma_first: &str, sampling: Option<f64>, none: Option<f64>) -> String {
    let bound = sampling
        .zip(none)
        .map_or("-".into(), |(s, n)| format!("{:.2}x", n / s));
    format!(
        "sampling is {x:.2}x faster, not 2x. autonuma's first migration: {autonuma_first}. The kernel's path: init_numa_balancing gives each worker (CLONE_VM) numa_scan_period = scan_delay 1000 ms and a non-zero staggered node_stamp, so task_tick_numa never swaps in task_scan_start; task_numa_work lets one thread per mm->numa_next_scan (now + that 1000 ms) mark 256 MB from numa_scan_offset 0, set 0's local half first (32 scans); update_task_scan_period runs only from task_numa_placement when mm->numa_scan_seq changes, after the 64-scan pass; so set 1's first hinting fault (should_numa_migrate_memory: cpupid unset, numa_scan_seq <= 4, it migrates at once) comes after 33 s, as in the seed's chart (its default's first migrated pages between its 20 s and 40 s ticks). Within the run autonuma costs only set 0's local hinting faults, so it cannot be slower than no balancing: none takes {} s, {bound} sampling's {} s, the most a balancer that moves nothing within the run can show here (a longer run lowers the ratio: autonuma migrates from 33 s on). The seed's 3.19x needs its default run 3.19x its IBS run, more than the remote penalty of the stand-in genoa2n (its SKU, xGMI links and access loop are unpublished); and the seed's own progress chart does not show a remote penalty: in every row from 150 to 350 iterations the default run's remote thread ('*') is plotted left of IBS's ('#'), ahead while its memory was remote, then it stays at about 370 while IBS passes it, a stall of the default run that none of the rules traced above produces; and in that timed run's pages-migrated chart IBS's line ends near 550,000 pages, a quarter of set 1's 2,097,152, the default's at all of them: the run that left three quarters of set 1's memory remote finished 3.19x sooner, so remote access is not what the default run lost its time to",
        fig(none),
        fig(sampling),
    )
}

fn ibs_2023(r: &Records) -> Findings {
    let mut t = Table::new(
        "twohalves, simulated [seed]",
        vec![
            Column::key("balancer"),
            Column::right("elapsed (s)"),
            Column::right("first migration (s)"),
            Column::right("pages migrated"),
        ],
    );
    let el = |l: &str| r.mean("twohalves", l, &[], "elapsed_s");
    let first = |l: &str| r.first_migration_s("twohalves", l, &[]);
    let pages = |l: &str| r.mean("twohalves", l, &[], "numa_pages_migrated");
    let mut numbers = Vec::new();
    for (l, seed) in [("autonuma", 174.5), ("sampling", 54.7)] {
        numbers.push(Cell::new(format!("twohalves elapsed, {l}"), seed, el(l)));
        t.push(vec![
            l.into(),
            format!("{} [{}]", fig(el(l)), fig(Some(seed))),
            fig(first(l)),
            pages(l).map_or("-".into(), |p| format!("{p:.0}")),
        ]);
    }
    t.push(vec![
        "none".into(),
        fig(el("none")),
        fig(first("none")),
        pages("none").map_or("-".into(), |p| format!("{p:.0}")),
    ]);
    t.legend
        .push("seed: default NUMA balancing 174.5 s, IBS-driven 54.7 s".into());
    t.legend.push(
        "autonuma: the worker threads are threads (CLONE_VM), so each one's scan period starts at the 1 s scan delay and stays there until its first full pass (init_numa_balancing, task_tick_numa): the process scans 256 MB a second, the local half first; none: no balancing, the bound of any balancer that moves no page within the run"
            .into(),
    );
    let autonuma_first = match (first("autonuma"), el("autonuma")) {
        (Some(a), _) => format!("{} s", fig(Some(a))),
        (None, Some(end)) => format!("none within its {} s", fig(Some(end))),
        (None, None) => "-".into(),
    };
    let ratio = el("autonuma").zip(el("sampling")).map(|(a, s)| a / s);
    let faster = match ratio {
        Some(x) if x >= 2.0 => Verdict::Reproduced,
        Some(x) => {
            Verdict::NotReproduced(ibs_2023_why(x, &autonuma_first, el("sampling"), el("none")))
        }
        None => Verdict::NotReproduced("runs missing".into()),
    };
    // A run that migrated nothing has its first migration after its end:
    // autonuma migrating nothing within its run still migrated later than
    // a sampling run that did within that time (a censored observation).
    let earlier = match (first("autonuma"), first("sampling"), el("autonuma")) {
        (Some(a), Some(s), _) if s < a => Verdict::Reproduced,
        (None, Some(s), Some(end)) if s < end => Verdict::Reproduced,
        (Some(a), Some(s), _) => Verdict::NotReproduced(format!(
            "sampling's first migration at {s:.1} s is not before autonuma's at {a:.1} s"
        )),
        (_, None, _) => Verdict::NotReproduced("sampling migrated nothing".into()),
        _ => Verdict::NotReproduced("the autonuma runs are missing".into()),
    };
    Findings {
        tables: vec![t],
        cells: numbers,
        claims: vec![
            Claim {
                quantitative: false,
text: "Access sampling finishes twohalves at least 2x sooner than default NUMA balancing".into(),
                seed: "174.5 / 54.7 = 3.19x".into(),
                sim: ratio.map_or("-".into(), |x| format!("{x:.2}x")),
                verdict: faster,
            },
            Claim {
                quantitative: false,
text: "Access sampling migrates the misplaced pages earlier".into(),
                seed: "pages migrated over time, IBS first".into(),
                sim: format!(
                    "first migration: sampling {} s, autonuma {autonuma_first}",
                    fig(first("sampling")),
                ),
                verdict: earlier,
            },
        ],
    }
}

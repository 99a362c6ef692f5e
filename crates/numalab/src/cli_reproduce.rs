//! `numalab reproduce [NAME...|all]`: each seed study's plan through the
//! campaign machinery (here, in the simulator), then its findings beside
//! the seed's (numalab-reproduce).

use anyhow::{bail, Context, Result};
use numalab_campaign::local::{self, Pool};
use numalab_campaign::{plan, Campaign};
use numalab_report::table::{Column, Table};
use numalab_reproduce::{studies, Records, Study};
use numalab_runner::{Interrupt, Output};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    after_help = "Studies: focht-2002 (numa_test on AzusA, schedulers A, B, E, F), focht-2003 \
                  (node-affine on TX7), autonuma-2012 (autonuma-benchmark), nest-placement-2022 \
                  (spin and hackbench placements on an AMD EPYC), ibs-2023 (two-halves, sampling \
                  vs NUMA balancing). Records go to RESULTS/NAME-rRUNS as campaign records (a study \
                  with a fitted machine parameter: each fit point in NAME-rRUNS-fit/SPEC, the \
                  study in NAME-rRUNS/SPEC); running again runs only what is missing. docs/reproduce.md \
                  lists every claim and its rule, and how parameters are fitted."
)]
pub struct ReproduceArgs {
    /// Studies to reproduce (or `all`)
    #[arg(value_name = "NAME", default_value = "all")]
    names: Vec<String>,
    /// Repetitions per cell (default: each study's own, e.g. 10 for focht-2003)
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..))]
    runs: Option<u32>,
    /// Where the records go, one directory per study and repetition count
    #[arg(long, value_name = "DIR", default_value = "numalab-reproduce")]
    results: PathBuf,
    /// Exit with status 1 when a claim does not reproduce
    #[arg(long)]
    strict: bool,
    /// Output: text (tables, claims, verdicts) or json (every claim with
    /// its verdict and reason, every published figure with the simulated
    /// one; alone on standard output, progress on standard error)
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Text,
    Json,
}

pub fn run(a: ReproduceArgs) -> Result<ExitCode> {
    let all = studies();
    let chosen = chosen_studies(&all, &a.names)?;
    std::fs::create_dir_all(&a.results)
        .with_context(|| format!("creating {}", a.results.display()))?;
    let root = std::path::absolute(&a.results).context("the results directory")?;
    let interrupt = Interrupt::install().context("installing the Ctrl-C handler")?;
    let mut verdicts: Vec<Verdict> = Vec::new();
    let mut json: Vec<serde_json::Value> = Vec::new();
    let json_out = a.format == Format::Json;
    for s in &chosen {
        let runs = a.runs.unwrap_or(s.default_runs);
        let Some((f, fitted, main)) = run_study(s, runs, &root, json_out, &interrupt)? else {
            return Ok(interrupted());
        };
        if json_out {
            let mut j = numalab_reproduce::to_json(s, runs, &f, &fitted);
            j["records"] = main.display().to_string().into();
            json.push(j);
        } else {
            numalab_linux::outln!();
            crate::print_stdout(&numalab_reproduce::render(s, runs, &f, &fitted))?;
            numalab_linux::outln!("records: {}", main.display());
        }
        for cl in f.claims {
            verdicts.push((s.name, cl.text, cl.verdict.reproduced(), cl.quantitative));
        }
    }
    if a.format == Format::Json {
        print_json(&verdicts, json, a.strict)
    } else {
        print_verdicts(&verdicts, a.strict)
    }
}

/// A claim's verdict: (study, claim, reproduced, quantitative: on the
/// seed's numbers rather than a qualitative finding).
type Verdict<'a> = (&'a str, String, bool, bool);

/// The studies named (each once, in the order given), or all of them;
/// an unknown name is refused with the list.
fn chosen_studies<'a>(all: &'a [Study], names: &[String]) -> Result<Vec<&'a Study>> {
    if names.iter().any(|n| n == "all") {
        return Ok(all.iter().collect());
    }
    let mut v = Vec::new();
    for n in names {
        match all.iter().find(|s| s.name == n) {
            Some(s) if !v.iter().any(|x: &&Study| x.name == s.name) => v.push(s),
            Some(_) => {}
            None => bail!(
                "no study {n:?}: the studies are {}, or all",
                all.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
            ),
        }
    }
    Ok(v)
}

/// One study with `runs` repetitions under `root`: its fitted parameters
/// first (each point a campaign of its own under DIR-fit/SPEC, apart from
/// the study's records, which a report over DIR draws alone), then the
/// study on the fitted machine. Its findings, the fits and the directory
/// of its records; `None` when interrupted.
fn run_study(
    s: &Study,
    runs: u32,
    root: &Path,
    json_out: bool,
    interrupt: &Interrupt,
) -> Result<
    Option<(
        numalab_reproduce::Findings,
        Vec<numalab_reproduce::Fitted>,
        PathBuf,
    )>,
> {
    let dir = root.join(format!("{}-r{runs}", s.name));
    let fit_dir = root.join(format!("{}-r{runs}-fit", s.name));
    let Some(fitted) = fit_study(s, runs, &fit_dir, json_out, interrupt)? else {
        return Ok(None);
    };
    let sets: Vec<(String, f64)> = fitted.iter().map(|f| (f.key.clone(), f.value)).collect();
    let spec = numalab_reproduce::machine_spec(s.machine, &sets);
    let main = if fitted.is_empty() {
        dir.clone()
    } else {
        dir.join(dir_name(&spec))
    };
    let Some(records) = run_plan(
        s,
        &s.plan_text(runs, &main, &spec),
        Output::Progress,
        json_out,
        interrupt,
    )?
    else {
        return Ok(None);
    };
    let f = (s.evaluate)(&records).with_fits(&fitted);
    Ok(Some((f, fitted, main)))
}

/// The claims reproduced of all: (reproduced, claims) of the qualitative
/// findings, then of the studies' numbers.
fn tally(verdicts: &[Verdict]) -> ((usize, usize), (usize, usize)) {
    let count = |numbers: bool| {
        let of: Vec<_> = verdicts.iter().filter(|v| v.3 == numbers).collect();
        (of.iter().filter(|v| v.2).count(), of.len())
    };
    (count(false), count(true))
}

/// The JSON document: the counts of claims and reproduced ones, and every
/// study's; with `strict`, status 1 when a claim does not reproduce.
fn print_json(
    verdicts: &[Verdict],
    json: Vec<serde_json::Value>,
    strict: bool,
) -> Result<ExitCode> {
    let ok = verdicts.iter().filter(|v| v.2).count();
    let ((q_ok, q_all), (n_ok, n_all)) = tally(verdicts);
    let out = serde_json::json!({
        "claims": verdicts.len(),
        "reproduced": ok,
        "qualitative": { "claims": q_all, "reproduced": q_ok },
        "numbers": { "claims": n_all, "reproduced": n_ok },
        "studies": json,
    });
    crate::print_stdout(&(serde_json::to_string_pretty(&out)? + "\n"))?;
    Ok(if strict && ok < verdicts.len() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The table of verdicts, a claim a line; with `strict`, status 1 (and a
/// line saying why) when a claim does not reproduce.
fn print_verdicts(verdicts: &[Verdict], strict: bool) -> Result<ExitCode> {
    let ok = verdicts.iter().filter(|v| v.2).count();
    let ((q_ok, q_all), (n_ok, n_all)) = tally(verdicts);
    let mut t = Table::new(
        format!(
            "Verdicts: {q_ok} of {q_all} findings reproduced, and the numbers of {n_ok} of {n_all} studies"
        ),
        vec![
            Column::key("study"),
            Column::left("claim"),
            Column::left("verdict"),
        ],
    );
    for (study, text, good, _) in verdicts {
        let short: String = if text.chars().count() > 36 {
            text.chars().take(35).collect::<String>() + "~"
        } else {
            text.clone()
        };
        t.push(vec![
            study.to_string(),
            short,
            if *good {
                "reproduced"
            } else {
                "NOT reproduced"
            }
            .into(),
        ]);
    }
    numalab_linux::outln!();
    crate::print_stdout(&t.to_text())?;
    if strict && ok < verdicts.len() {
        numalab_linux::errln!(
            "numalab: {} claim(s) not reproduced (--strict)",
            verdicts.len() - ok
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// A study's fitted parameters (none without fits): each fit point a
/// campaign of its own under DIR/SPEC, one line each on standard
/// error; `None` when interrupted.
fn fit_study(
    s: &Study,
    runs: u32,
    dir: &Path,
    json_out: bool,
    interrupt: &Interrupt,
) -> Result<Option<Vec<numalab_reproduce::Fitted>>> {
    if s.fits.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let mut eval = |spec: &str| -> std::result::Result<Option<Records>, String> {
        let d = dir.join(dir_name(spec));
        let r = run_plan(
            s,
            &s.fit_plan_text(runs, &d, spec),
            Output::Progress,
            json_out,
            interrupt,
        )
        .map_err(|e| format!("{e:#}"))?;
        if let Some(r) = &r {
            let found = (s.evaluate)(r);
            let got: Vec<String> = s
                .fits
                .iter()
                .filter_map(|f| {
                    let c = found.cells.iter().find(|c| c.what == f.cell)?;
                    Some(format!("{} {}", f.cell, numalab_reproduce::fig(c.sim)))
                })
                .collect();
            numalab_linux::errln!("numalab: {}: fitting on {spec}: {}", s.name, got.join(", "));
        }
        Ok(r)
    };
    numalab_reproduce::fit(s, &mut eval).map_err(anyhow::Error::msg)
}

fn interrupted() -> ExitCode {
    numalab_linux::errln!(
        "numalab: interrupted; `numalab reproduce` again runs only what is missing"
    );
    ExitCode::from(130)
}

/// A machine spec as a directory name: `tx7[memory.mlp=2.5]` ->
/// `tx7_memory.mlp=2.5_`.
fn dir_name(spec: &str) -> String {
    spec.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._=-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Run one plan of a study through the campaign machinery (only what is
/// missing); its records, or `None` when interrupted.
fn run_plan(
    s: &Study,
    src: &str,
    output: Output,
    json_out: bool,
    interrupt: &Interrupt,
) -> Result<Option<Records>> {
    let p = plan::parse(&PathBuf::from(format!("reproduce/{}.toml", s.name)), src)?;
    local::preflight(&p, true)?;
    numalab_campaign::Lock::read(&p)?;
    numalab_campaign::state::scan(&p, |_| true)?;
    let mut pool = Pool::new(&p, output);
    let lock = local::pin(&p, &mut pool, output)?;
    drop(pool);
    let c = Campaign::new(p, lock)?;
    let scan = c.scan()?;
    let todo = local::not_done(&c, &scan);
    let run = || {
        let pool = Pool::new(&c.plan, output);
        crate::cli_campaign::run_here(&c, scan, &todo, output, interrupt, pool)
    };
    let (scan, interrupted) = if json_out {
        numalab_linux::out::stdout_to_stderr(run).context("redirecting standard output")??
    } else {
        run()?
    };
    if interrupted {
        return Ok(None);
    }
    Ok(Some(Records::new(
        scan.records.into_iter().map(|(_, r)| r).collect(),
    )))
}

//! `numalab reproduce [NAME...|all]`: each seed study's plan through the
//! campaign machinery (here, in the simulator), then its findings beside
//! the seed's (numalab-reproduce).

use anyhow::{bail, Context, Result};
use numalab_campaign::local::{self, Pool};
use numalab_campaign::{plan, Campaign};
use numalab_report::table::{Column, Table};
use numalab_reproduce::{studies, Records, Study};
use numalab_runner::{Interrupt, Output};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    after_help = "Studies: focht-2002 (numa_test on AzusA, schedulers A, B, E, F), focht-2003 \
                  (node-affine on TX7), autonuma-2012 (autonuma-benchmark), nest-placement-2022 \
                  (spin and hackbench placements on an AMD EPYC), ibs-2023 (two-halves, sampling \
                  vs NUMA balancing). Records go to RESULTS/NAME-rRUNS as campaign records; running \
                  again runs only what is missing. docs/reproduce.md lists every claim and its rule."
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
    let chosen: Vec<&Study> = if a.names.iter().any(|n| n == "all") {
        all.iter().collect()
    } else {
        let mut v = Vec::new();
        for n in &a.names {
            match all.iter().find(|s| s.name == n) {
                Some(s) if !v.iter().any(|x: &&Study| x.name == s.name) => v.push(s),
                Some(_) => {}
                None => bail!(
                    "no study {n:?}: the studies are {}, or all",
                    all.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                ),
            }
        }
        v
    };
    std::fs::create_dir_all(&a.results)
        .with_context(|| format!("creating {}", a.results.display()))?;
    let root = std::path::absolute(&a.results).context("the results directory")?;
    let interrupt = Interrupt::install().context("installing the Ctrl-C handler")?;
    let mut verdicts: Vec<(&str, String, bool)> = Vec::new();
    let mut json: Vec<serde_json::Value> = Vec::new();
    for s in &chosen {
        let runs = a.runs.unwrap_or(s.default_runs);
        let dir = root.join(format!("{}-r{runs}", s.name));
        let src = s.plan_text(runs, &dir);
        let p = plan::parse(&PathBuf::from(format!("reproduce/{}.toml", s.name)), &src)?;
        local::preflight(&p, true)?;
        numalab_campaign::Lock::read(&p)?;
        numalab_campaign::state::scan(&p, |_| true)?;
        let mut pool = Pool::new(&p, Output::Progress);
        let lock = local::pin(&p, &mut pool, Output::Progress)?;
        drop(pool);
        let c = Campaign::new(p, lock)?;
        let scan = c.scan()?;
        let todo = local::not_done(&c, &scan);
        let (scan, interrupted) = if a.format == Format::Json {
            numalab_linux::out::stdout_to_stderr(|| {
                crate::cli_campaign::run_here(&c, scan, &todo, Output::Progress, &interrupt)
            })
            .context("redirecting standard output")??
        } else {
            crate::cli_campaign::run_here(&c, scan, &todo, Output::Progress, &interrupt)?
        };
        if interrupted {
            numalab_linux::errln!(
                "numalab: interrupted; `numalab reproduce` again runs only what is missing"
            );
            return Ok(ExitCode::from(130));
        }
        let records = Records::new(scan.records.into_iter().map(|(_, r)| r).collect());
        let f = (s.evaluate)(&records);
        if a.format == Format::Json {
            let mut j = numalab_reproduce::to_json(s, runs, &f);
            j["records"] = dir.display().to_string().into();
            json.push(j);
        } else {
            numalab_linux::outln!();
            crate::print_stdout(&numalab_reproduce::render(s, runs, &f))?;
            numalab_linux::outln!("records: {}", dir.display());
        }
        for cl in f.claims {
            verdicts.push((s.name, cl.text, cl.verdict.reproduced()));
        }
    }
    let ok = verdicts.iter().filter(|v| v.2).count();
    if a.format == Format::Json {
        let out = serde_json::json!({
            "claims": verdicts.len(),
            "reproduced": ok,
            "studies": json,
        });
        crate::print_stdout(&(serde_json::to_string_pretty(&out)? + "\n"))?;
        return Ok(if a.strict && ok < verdicts.len() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        });
    }
    let mut t = Table::new(
        format!("Verdicts: {ok} of {} claims reproduced", verdicts.len()),
        vec![
            Column::key("study"),
            Column::left("claim"),
            Column::left("verdict"),
        ],
    );
    for (study, text, good) in &verdicts {
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
    if a.strict && ok < verdicts.len() {
        numalab_linux::errln!(
            "numalab: {} claim(s) not reproduced (--strict)",
            verdicts.len() - ok
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

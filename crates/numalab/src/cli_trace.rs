//! `numalab trace export RECORD -o FILE`: a traced run's schedule as a
//! Perfetto / Chrome trace (numalab-trace's exporter, the one the
//! simulator's `--trace` uses).

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Write a traced run (run with --trace) as Perfetto / Chrome trace
    /// JSON: a track per CPU grouped by node, task slices, wakeup flows,
    /// migration instants, memory per node and pages migrated as counters
    Export(ExportArgs),
}

#[derive(clap::Args)]
struct ExportArgs {
    /// The record of a traced run
    record: PathBuf,
    /// The trace file to write (open it in ui.perfetto.dev)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
}

pub fn run(a: TraceArgs) -> Result<ExitCode> {
    let Sub::Export(e) = a.cmd;
    let rec = numalab_record::load(&e.record)?;
    let Some(s) = &rec.sched else {
        bail!(
            "{}: the run was not traced (run it with --trace)",
            e.record.display()
        );
    };
    let Some(name) = &s.events_file else {
        bail!("{}: the record names no events file", e.record.display());
    };
    // The record was checked on loading: `name` is a plain file name,
    // found beside the record, never a path it stores.
    let events_path = e.record.parent().unwrap_or(std::path::Path::new(".")).join(
        numalab_record::id::plain_file_name("sched.events_file", name)?,
    );
    let text = std::fs::read_to_string(&events_path)
        .with_context(|| format!("the run's events {}", events_path.display()))?;
    let events = numalab_trace::export::read_events(&text)
        .map_err(|err| anyhow::anyhow!("{}: {err}", events_path.display()))?;
    let mut schedule = numalab_trace::export::from_events(&events, 0, 0);
    schedule.counters = numalab_trace::export::counters(&rec);
    let json = numalab_trace::export::chrome_json(&rec.machine.topology, &rec.id, &schedule);
    // A temporary file renamed into place: a full disk or an interrupt
    // leaves no partial trace under the name.
    numalab_record::write_file_atomic(&e.output, json.as_bytes())
        .with_context(|| format!("writing {}", e.output.display()))?;
    numalab_linux::errln!(
        "numalab: {}: {} slices, {} wakeups, {} migrations on {} CPUs; open it in ui.perfetto.dev",
        e.output.display(),
        schedule.slices.len(),
        schedule.wakeups.len(),
        schedule.migrations.len(),
        rec.machine.topology.cpus.len()
    );
    Ok(ExitCode::SUCCESS)
}

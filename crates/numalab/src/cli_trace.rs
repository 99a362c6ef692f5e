//! `numalab trace export RECORD -o FILE [--format chrome|perfetto]`: a
//! traced run's schedule as Chrome trace-event JSON or as ftrace text for
//! Perfetto's scheduler views (numalab-trace's exporter, the one the
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
    /// Write a traced run (run with --trace) as a trace for ui.perfetto.dev:
    /// Chrome JSON (a track per CPU grouped by node, task slices, wakeup
    /// flows, migrations, memory counters) or ftrace text (Perfetto's CPU
    /// scheduling tracks, thread states and wakeups)
    Export(ExportArgs),
}

#[derive(clap::Args)]
struct ExportArgs {
    /// The record of a traced run
    record: PathBuf,
    /// The trace file to write (open it in ui.perfetto.dev)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// chrome: trace-event JSON; perfetto: ftrace text (sched_switch,
    /// sched_waking, sched_migrate_task) for Perfetto's scheduler views
    #[arg(long, value_enum, default_value_t = TraceFormat::Chrome)]
    format: TraceFormat,
}

/// A trace file's format, for `trace export --format` and `sim
/// --trace-format`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    Chrome,
    Perfetto,
}

impl From<TraceFormat> for numalab_trace::export::Format {
    fn from(f: TraceFormat) -> Self {
        match f {
            TraceFormat::Chrome => numalab_trace::export::Format::Chrome,
            TraceFormat::Perfetto => numalab_trace::export::Format::Perfetto,
        }
    }
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
    let format = numalab_trace::export::Format::from(e.format);
    let text = format.render(&rec.machine.topology, &rec.id, &schedule);
    // A temporary file renamed into place: a full disk or an interrupt
    // leaves no partial trace under the name.
    numalab_record::write_file_atomic(&e.output, text.as_bytes())
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

//! `numalab calibrate`: measure this machine (numalab-calibrate) and write
//! the machine file, to a file or standard output.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct CalibrateArgs {
    /// Write the machine file here (default: standard output)
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Measure even when other work is running (the file says so)
    #[arg(long)]
    force: bool,
    /// Repetitions of each figure
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=50))]
    runs: u16,
    /// No progress lines on standard error
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: CalibrateArgs) -> Result<ExitCode> {
    // A file that cannot be written is found out before a minute of
    // measuring, not after.
    if let Some(out) = &args.output {
        if out.as_os_str().is_empty() || out.is_dir() || out.file_name().is_none() {
            bail!("--output {}: not a file name", out.display());
        }
        let dir = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        numalab_record::store::ensure_writable_dir(dir)
            .with_context(|| format!("--output {}", out.display()))?;
    }
    let exe = std::env::current_exe().context("finding numalab's own binary")?;
    let mut o = numalab_calibrate::Options::new(exe);
    o.force = args.force;
    o.runs = args.runs as usize;
    if !args.quiet {
        o.progress = Box::new(|what, k, n, left| {
            numalab_linux::statusln!(
                "numalab calibrate: [{k}/{n}] {what} (about {:.0} s left)",
                left.max(1.0)
            );
        });
    }
    let c = match numalab_calibrate::calibrate(o) {
        Ok(c) => c,
        Err(e) => bail!("calibrate: {e}"),
    };
    // Said even with --quiet: it is about the figures, not the progress.
    if let Some(w) = c.unsteady() {
        numalab_linux::statusln!("numalab calibrate: warning: {w}");
    }
    match &args.output {
        Some(out) => {
            numalab_record::store::write_file_atomic(out, c.toml.as_bytes())
                .with_context(|| format!("writing {}", out.display()))?;
            if !args.quiet {
                numalab_linux::statusln!(
                    "numalab calibrate: wrote {} in {:.0} s; simulate this machine with: numalab sim BENCHMARK --machine {}",
                    out.display(),
                    c.seconds,
                    out.display()
                );
            }
        }
        None => numalab_linux::out!("{}", c.toml),
    }
    Ok(ExitCode::SUCCESS)
}

//! `numalab completions SHELL` and `numalab man`: shell completions and
//! man pages generated from the CLI definition itself, so they never
//! drift from the flags.

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    after_help = "Install for bash (other shells: see docs/install.md):\n  \
    numalab completions bash > ~/.local/share/bash-completion/completions/numalab"
)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(clap::Args)]
#[command(after_help = "Install, then read with `man numalab`:\n  \
    numalab man --dir ~/.local/share/man/man1")]
pub struct ManArgs {
    /// Write numalab.1 and a page per subcommand (numalab-run.1, ...) into
    /// this directory, created if missing; without it, numalab.1 goes to
    /// standard output
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub fn completions(a: CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = crate::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "numalab", &mut out);
    crate::print_stdout(&String::from_utf8_lossy(&out))?;
    Ok(ExitCode::SUCCESS)
}

pub fn man(a: ManArgs) -> Result<ExitCode> {
    let cmd = crate::command();
    match a.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
            // Written in a private directory inside DIR, then each page
            // renamed into place: a link planted at a page's name is
            // replaced, never written through.
            let tmp = tempfile::Builder::new()
                .prefix(".numalab-man")
                .tempdir_in(&dir)
                .with_context(|| format!("{}", dir.display()))?;
            clap_mangen::generate_to(cmd, tmp.path())
                .with_context(|| format!("writing man pages to {}", dir.display()))?;
            for e in std::fs::read_dir(tmp.path())? {
                let e = e?;
                let to = dir.join(e.file_name());
                std::fs::rename(e.path(), &to)
                    .with_context(|| format!("writing {}", to.display()))?;
            }
            numalab_linux::errln!("numalab: man pages written to {}", dir.display());
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut out)
                .context("rendering the man page")?;
            crate::print_stdout(&String::from_utf8_lossy(&out))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

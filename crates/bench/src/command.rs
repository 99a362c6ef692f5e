//! Any command as a benchmark (`numalab run command -- ./configure`):
//! the NEST evaluation's configure timings, a build, a user's program.
//! Its benchmark name is `--name` or the program's file name; its case key
//! is the command line; the directory it ran in is a backend fact. The
//! simulator cannot run a program, so this benchmark exists on the host
//! and in guests only.

use crate::metrics;
use crate::registry::Benchmark;
use crate::{BenchError, Calibration, Case, Resolved};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Names a command may not take: they are numalab's own benchmarks
/// (every name `numalab run` knows, `command` included).
pub const RESERVED: &[&str] = &crate::registry::NAMES;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Params {
    /// The record's `benchmark`: what the comparison tables call it.
    pub name: String,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Working directory (numalab's own when `None`).
    pub cwd: Option<PathBuf>,
}

impl Params {
    pub(crate) fn key(&self) -> BTreeMap<String, Value> {
        BTreeMap::from([("command".to_string(), shell_words(&self.argv).into())])
    }

    pub(crate) fn details(&self) -> BTreeMap<String, Value> {
        let mut m = BTreeMap::new();
        if let Some(c) = &self.cwd {
            m.insert("cwd".into(), c.display().to_string().into());
        }
        m
    }
}

/// The command line as a shell would take it back.
pub fn shell_words(argv: &[String]) -> String {
    numalab_linux::shell::join(argv)
}

/// Check a command name: a non-empty word of letters, digits, `_ - . +`,
/// not one of numalab's benchmarks.
pub fn check_name(name: &str) -> Result<(), BenchError> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.+".contains(c))
    {
        return Err(BenchError(format!(
            "--name {name:?} is not a benchmark name: use letters, digits, _ - . +"
        )));
    }
    if RESERVED.contains(&name) {
        return Err(BenchError(format!(
            "--name {name:?} is one of numalab's own benchmarks: choose another"
        )));
    }
    Ok(())
}

/// The default name: the program's file name (`./configure` → `configure`).
pub fn default_name(program: &str) -> String {
    let base = Path::new(program)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-.+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() || RESERVED.contains(&clean.as_str()) {
        format!("cmd-{clean}")
    } else {
        clean
    }
}

/// `program` found in PATH (as the command will look it up), if at all.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

/// Whether `p` is a file with an execute bit.
fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The word that separates commands compared in one invocation
/// (`-- CMD1 --vs --name b -- CMD2`).
pub const VS: &str = "--vs";

/// One command of an invocation: its `--name`, `--cwd` and argv.
#[derive(Debug, Clone, PartialEq)]
pub struct One {
    pub name: Option<String>,
    pub cwd: Option<PathBuf>,
    pub argv: Vec<String>,
}

/// The commands of `-- CMD1 --vs [--name N] [--cwd DIR] -- CMD2 ...`:
/// the first takes the flags given before the first `--`, each later one
/// its own after its `--vs`. A literal `--vs` argument cannot be passed
/// (wrap the command in `sh -c`).
pub fn split(a: &CommandArgs) -> Result<Vec<One>, BenchError> {
    let mut parts = a.argv.split(|w| w == VS);
    let first = parts.next().unwrap_or_default();
    let mut out = vec![One {
        name: a.name.clone(),
        cwd: a.cwd.clone(),
        argv: first.to_vec(),
    }];
    for (i, part) in parts.enumerate() {
        let n = i + 2;
        let mut one = One {
            name: None,
            cwd: None,
            argv: Vec::new(),
        };
        let mut words = part.iter();
        loop {
            match words.next().map(String::as_str) {
                Some("--") => break,
                Some(flag @ ("--name" | "--cwd")) => {
                    let Some(v) = words.next() else {
                        return Err(BenchError(format!("command {n}: {flag} needs a value")));
                    };
                    match flag {
                        "--name" => one.name = Some(v.clone()),
                        _ => one.cwd = Some(PathBuf::from(v)),
                    }
                }
                Some(w) => {
                    return Err(BenchError(format!(
                        "command {n}: {w:?} after --vs: give [--name N] [--cwd DIR] -- PROGRAM [ARGS]"
                    )))
                }
                None => {
                    return Err(BenchError(format!(
                        "command {n}: no `--` after --vs: give [--name N] [--cwd DIR] -- PROGRAM [ARGS]"
                    )))
                }
            }
        }
        one.argv = words.cloned().collect();
        out.push(one);
    }
    Ok(out)
}

/// One case per command, in the order given (the first is the baseline
/// of the comparison printed after the runs), each checked before
/// anything runs; two commands may not share a name.
pub fn resolve(a: &CommandArgs, _cal: &dyn Calibration) -> Result<Resolved, BenchError> {
    resolve_commands(a)
}

fn resolve_commands(a: &CommandArgs) -> Result<Resolved, BenchError> {
    let commands = split(a)?;
    let several = commands.len() > 1;
    let mut cases = Vec::new();
    for (i, c) in commands.into_iter().enumerate() {
        let p = resolve_one(c).map_err(|e| match several {
            true => BenchError(format!("command {}: {}", i + 1, e.0)),
            false => e,
        })?;
        if let Some(Case::Command(q)) = cases.iter().find(|x| match x {
            Case::Command(q) => q.name == p.name,
            _ => false,
        }) {
            return Err(BenchError(format!(
                "commands {} and {} are both named {:?}: give each its own --name",
                shell_words(&q.argv),
                shell_words(&p.argv),
                p.name
            )));
        }
        cases.push(Case::Command(p));
    }
    let notes = match several {
        true => vec![format!(
            "commands: {}, run in turn in every round; the first is the baseline",
            cases
                .iter()
                .filter_map(|c| match c {
                    Case::Command(p) => Some(p.name.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(", ")
        )],
        false => vec![],
    };
    Ok(Resolved {
        cases,
        notes,
        warnings: vec![],
    })
}

fn resolve_one(a: One) -> Result<Params, BenchError> {
    let Some(program) = a.argv.first() else {
        return Err(BenchError::new("command: name the program to run after --"));
    };
    let name = match &a.name {
        Some(n) => n.clone(),
        None => default_name(program),
    };
    check_name(&name)?;
    if let Some(c) = &a.cwd {
        if !c.is_dir() {
            return Err(BenchError(format!(
                "--cwd {}: not a directory",
                c.display()
            )));
        }
    }
    if !program.contains('/') && which(program).is_none() {
        return Err(BenchError(format!("{program}: command not found in PATH")));
    }
    if program.contains('/') {
        // As the command will see it: relative to its --cwd.
        let p = match &a.cwd {
            Some(c) if !program.starts_with('/') => c.join(program),
            _ => PathBuf::from(program),
        };
        let why = match p.metadata() {
            Err(_) => Some("no such file"),
            Ok(m) if !m.is_file() => Some("not a file"),
            Ok(_) if !executable(&p) => Some("not executable"),
            Ok(_) => None,
        };
        if let Some(why) = why {
            return Err(BenchError(format!("{program}: {why}")));
        }
    }
    Ok(Params {
        name,
        argv: a.argv,
        cwd: a.cwd,
    })
}

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Benchmark")]
pub struct CommandArgs {
    /// Benchmark name in the records and tables; default: the program's file name
    #[arg(long)]
    pub name: Option<String>,
    /// Directory to run the command in; default: the current one
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// The program and its arguments, after `--`; `--vs [--name N] [--cwd
    /// DIR] -- PROGRAM [ARGS]` adds a command to compare with the first
    #[arg(last = true, required = true, value_name = "PROGRAM [ARGS]")]
    pub argv: Vec<String>,
}

/// The registry's entry ([`crate::registry`]).
pub const BENCHMARK: Benchmark = Benchmark::new::<CommandArgs>(
    "command",
    "Any command, e.g. a configure script: elapsed, user and sys time of its whole process tree per run (this machine and guests only)",
    |m| crate::registry::parse_as(m, crate::args::Spec::Command),
    &[metrics::ELAPSED_S, metrics::USER_S, metrics::SYS_S],
)
.host_only_program();

#[cfg(test)]
mod tests {
    use super::*;

    fn args(name: Option<&str>, argv: &[&str]) -> CommandArgs {
        CommandArgs {
            name: name.map(String::from),
            cwd: None,
            argv: argv.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn commands_split_on_vs_with_their_own_flags() {
        let a = args(
            Some("a"),
            &[
                "true", "1", "--vs", "--name", "b", "--cwd", "/", "--", "false", "--vs", "--", "sh",
            ],
        );
        let c = split(&a).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(
            (c[0].name.as_deref(), &c[0].argv[..]),
            (Some("a"), &["true".to_string(), "1".into()][..])
        );
        assert_eq!(c[1].name.as_deref(), Some("b"));
        assert_eq!(c[1].cwd.as_deref(), Some(Path::new("/")));
        assert_eq!(c[1].argv, ["false"]);
        assert_eq!(
            (c[2].name.as_deref(), &c[2].argv[..]),
            (None, &["sh".to_string()][..])
        );
        for (bad, why) in [
            (&["true", "--vs", "false"][..], "\"false\" after --vs"),
            (&["true", "--vs", "--name"][..], "--name needs a value"),
            (&["true", "--vs", "--name", "b"][..], "no `--` after --vs"),
        ] {
            let e = split(&args(None, bad)).unwrap_err().0;
            assert!(e.contains(why) && e.starts_with("command 2:"), "{e}");
        }
    }

    #[test]
    fn compared_commands_need_names_of_their_own() {
        let r = resolve_commands(&args(None, &["true", "--vs", "--", "true", "x"]));
        let e = r.unwrap_err().0;
        assert!(e.contains("both named \"true\""), "{e}");
        let r = resolve_commands(&args(
            None,
            &["true", "--vs", "--name", "t2", "--", "true", "x"],
        ))
        .unwrap();
        assert_eq!(r.cases.len(), 2);
        assert!(r.notes[0].contains("true, t2"), "{:?}", r.notes);
        let e = resolve_commands(&args(
            None,
            &["true", "--vs", "--name", "b", "--", "/nonexistent"],
        ))
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("command 2: /nonexistent: no such file"),
            "{e}"
        );
    }

    #[test]
    fn names() {
        assert_eq!(default_name("./configure"), "configure");
        assert_eq!(default_name("/usr/bin/spin"), "cmd-spin");
        assert!(check_name("make-j2").is_ok());
        assert!(check_name("numa01").is_err());
        assert!(check_name("a b").is_err());
        assert!(check_name("").is_err());
    }

    #[test]
    fn command_lines_read_back() {
        let argv: Vec<String> = ["sh", "-c", "echo it's"].map(String::from).to_vec();
        assert_eq!(shell_words(&argv), r"sh -c 'echo it'\''s'");
        assert_eq!(shell_words(&["make".into(), "-j2".into()]), "make -j2");
    }
}

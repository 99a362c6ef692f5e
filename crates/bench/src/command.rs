//! Any command as a benchmark (`numalab run command -- ./configure`):
//! the NEST evaluation's configure timings, a build, a user's program.
//! Its benchmark name is `--name` or the program's file name; its case key
//! is the command line; the directory it ran in is a backend fact. The
//! simulator cannot run a program, so this benchmark exists on the host
//! and in guests only.

use crate::args::CommandArgs;
use crate::{BenchError, Calibration, Case, Resolved};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Names a command may not take: they are numalab's own benchmarks
/// (every name `numalab run` knows, `command` included).
pub const RESERVED: &[&str] = &crate::args::NAMES;

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

pub fn resolve(a: &CommandArgs, _cal: &dyn Calibration) -> Result<Resolved, BenchError> {
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
    Ok(Resolved {
        cases: vec![Case::Command(Params {
            name,
            argv: a.argv.clone(),
            cwd: a.cwd.clone(),
        })],
        notes: vec![],
        warnings: vec![],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

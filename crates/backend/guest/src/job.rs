//! What the host asks the guest to do, written into the initramfs as
//! `/numalab/job.json`, and the rules that turn the user's command line
//! into it.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where the guest's numalab writes its records. Inside the guest only;
/// the host decides where they land (see [`split_results`]).
pub const GUEST_RESULTS: &str = numalab_protocol::agent::RESULTS;
/// The job file inside the initramfs.
pub const JOB_PATH: &str = "/numalab/job.json";
/// The numalab executable inside the initramfs (also `rdinit=`).
pub const GUEST_EXE: &str = "/numalab/numalab";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// numalab arguments, without the program name.
    pub args: Vec<String>,
    /// `(key, value)` sysctls to apply first, in order.
    pub sysctls: Vec<(String, String)>,
    /// Directory the command writes records to (cwd-relative default
    /// `./numalab-results` resolves here too: the command runs in `/`).
    pub results_dir: String,
    /// Serve requests ([`numalab_protocol::agent`]) instead of running `args`.
    #[serde(default)]
    pub agent: bool,
    /// Kernel modules to load first, guest paths in load order.
    #[serde(default)]
    pub modules: Vec<String>,
    /// Switch root into the host's filesystem ([`HostFs`]); `None`: stay
    /// in the initramfs.
    #[serde(default)]
    pub hostfs: Option<HostFs>,
    /// `numalab vm --shell`: an interactive shell on the console instead
    /// of `args`.
    #[serde(default)]
    pub shell: Option<Shell>,
}

/// The terminal the host's user has, for the guest's interactive shell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shell {
    /// `TERM` on the host.
    pub term: String,
    /// The host terminal's size, when it has one.
    pub rows: u16,
    pub cols: u16,
}

/// The host's filesystem as the guest's root: the 9p share
/// [`HOSTROOT_TAG`] (read-only) under a tmpfs overlay, and read-write
/// shares mounted over it at their host paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostFs {
    /// Read-write host directories: the i-th has 9p tag `share<i>` and is
    /// mounted at its host path.
    pub shares: Vec<String>,
    /// Mounted without `nosuid,nodev` (`vm --share-passthrough`).
    #[serde(default)]
    pub share_passthrough: bool,
    /// Where the command (and the agent's requests) run.
    pub cwd: String,
}

/// The 9p mount tag of the host's root.
pub const HOSTROOT_TAG: &str = "hostroot";

/// The 9p mount tag of the `i`-th read-write share.
pub fn share_tag(i: usize) -> String {
    format!("share{i}")
}

/// Subcommands that make no sense inside a guest.
const NOT_IN_GUEST: [&str; 3] = ["vm", "guest-init", "help"];

/// Why the guest's command line's `--results` or `calibrate --output`
/// was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    #[error("--results after -- needs a directory")]
    ResultsWithoutDir,
    /// Two different directories.
    #[error("--results given twice after -- ({} and {second})", first.display())]
    ResultsTwice { first: PathBuf, second: String },
    #[error("calibrate --output after -- needs a file")]
    OutputWithoutFile,
    /// The second file given.
    #[error("calibrate --output given twice after -- ({0})")]
    OutputTwice(String),
}

/// Why the command after `--` cannot run in the guest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("no numalab command after -- (e.g. `-- topology`)")]
    Missing,
    /// It begins with `numalab`.
    #[error("give the numalab arguments after --, without the program name (e.g. `-- topology`)")]
    ProgramName,
    /// A subcommand that only makes sense on the host.
    #[error("`{0}` cannot run inside the guest")]
    NotInGuest(String),
}

/// Why a `--sysctl key=value` was refused.
#[derive(Debug, thiserror::Error)]
pub enum SysctlError {
    /// Not `key=value` or a key or value numalab refuses.
    #[error(transparent)]
    Invalid(#[from] numalab_linux::knobs::KnobError),
    /// A setting that is not a sysctl (as written).
    #[error("{0} is not a sysctl")]
    NotASysctl(String),
}

/// Take `--results DIR` / `--results=DIR` out of the guest command line.
///
/// The rule: the guest always writes to its own [`GUEST_RESULTS`]; the
/// host writes what comes back to the directory given to `numalab vm
/// --results`, or else to the one given after `--`, or else to
/// `./numalab-results` — relative to the host's working directory. A
/// `--results` after `--` is rewritten to point into the guest, so the
/// command still sees the flag where the user put it. Giving two different
/// directories is an error.
pub fn split_results(args: &[String]) -> Result<(Vec<String>, Option<PathBuf>), ArgsError> {
    let mut out = Vec::with_capacity(args.len());
    let mut found: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            // Arguments after a second `--` belong to something else.
            out.push(a.clone());
            out.extend(it.by_ref().cloned());
            break;
        }
        let value = if a == "--results" {
            Some(it.next().ok_or(ArgsError::ResultsWithoutDir)?.clone())
        } else {
            a.strip_prefix("--results=").map(str::to_string)
        };
        match value {
            Some(v) => {
                if let Some(prev) = &found {
                    if prev != &PathBuf::from(&v) {
                        return Err(ArgsError::ResultsTwice {
                            first: prev.clone(),
                            second: v,
                        });
                    }
                }
                found = Some(PathBuf::from(v));
                out.push("--results".into());
                out.push(GUEST_RESULTS.into());
            }
            None => out.push(a.clone()),
        }
    }
    Ok((out, found))
}

/// `calibrate --output FILE` (or `-o FILE`, `--output=FILE`) in a guest:
/// the file is the host's, so the flag is taken out of the guest's
/// command (which then prints the machine file) and its path returned,
/// for the host to write the command's standard output there.
pub fn split_output(args: &[String]) -> Result<(Vec<String>, Option<PathBuf>), ArgsError> {
    if args.first().map(String::as_str) != Some("calibrate") {
        return Ok((args.to_vec(), None));
    }
    let mut out = Vec::with_capacity(args.len());
    let mut found = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = if a == "--output" || a == "-o" {
            Some(it.next().ok_or(ArgsError::OutputWithoutFile)?.clone())
        } else {
            a.strip_prefix("--output=").map(str::to_string)
        };
        match value {
            Some(v) if found.is_some() => return Err(ArgsError::OutputTwice(v)),
            Some(v) => found = Some(PathBuf::from(v)),
            None => out.push(a.clone()),
        }
    }
    Ok((out, found))
}

/// Check the command to run in the guest.
pub fn check_command(args: &[String]) -> Result<(), CommandError> {
    let Some(first) = args.first() else {
        return Err(CommandError::Missing);
    };
    if first == "numalab" {
        return Err(CommandError::ProgramName);
    }
    if NOT_IN_GUEST.contains(&first.as_str()) {
        return Err(CommandError::NotInGuest(first.clone()));
    }
    Ok(())
}

/// Parse `--sysctl key=value`: the rules of `numalab run --sysctl`
/// (`numalab_linux::knobs`), as (key, value).
pub fn parse_sysctl(text: &str) -> Result<(String, String), SysctlError> {
    match numalab_linux::knobs::Knob::parse_sysctl(text)? {
        numalab_linux::knobs::Knob::Sysctl { key, value } => Ok((key, value)),
        other => Err(SysctlError::NotASysctl(other.to_string())),
    }
}

/// Where a dotted sysctl name is written under `root` (`/` in the
/// guest): `numalab_linux::knobs::sysctl_path`, which maps the NUMA
/// balancing scan tunables to debugfs on kernels that moved them.
pub use numalab_linux::knobs::sysctl_path;

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn results_are_rewritten_into_the_guest() {
        let (a, r) = split_results(&s(&["topology", "--json"])).unwrap();
        assert_eq!(a, s(&["topology", "--json"]));
        assert_eq!(r, None);

        let (a, r) =
            split_results(&s(&["run", "numa_test", "--results", "out", "-n", "2"])).unwrap();
        assert_eq!(
            a,
            s(&["run", "numa_test", "--results", GUEST_RESULTS, "-n", "2"])
        );
        assert_eq!(r, Some(PathBuf::from("out")));

        let (a, r) = split_results(&s(&["run", "--results=x/y"])).unwrap();
        assert_eq!(a, s(&["run", "--results", GUEST_RESULTS]));
        assert_eq!(r, Some(PathBuf::from("x/y")));

        let (a, _) = split_results(&s(&["run", "--", "--results", "z"])).unwrap();
        assert_eq!(a, s(&["run", "--", "--results", "z"]));

        assert!(split_results(&s(&["run", "--results"])).is_err());
        assert!(split_results(&s(&["run", "--results", "a", "--results=b"])).is_err());
    }

    #[test]
    fn commands() {
        assert!(check_command(&s(&["topology"])).is_ok());
        assert!(check_command(&[]).is_err());
        assert_eq!(
            check_command(&s(&["vm", "--nodes", "2"])),
            Err(CommandError::NotInGuest("vm".into()))
        );
        assert_eq!(
            check_command(&s(&["vm"])).unwrap_err().to_string(),
            "`vm` cannot run inside the guest"
        );
        assert!(check_command(&s(&["numalab", "topology"])).is_err());
    }

    #[test]
    fn sysctls() {
        assert_eq!(
            parse_sysctl("kernel.numa_balancing=0").unwrap(),
            ("kernel.numa_balancing".into(), "0".into())
        );
        assert_eq!(parse_sysctl("vm.swappiness = 10").unwrap().1, "10");
        assert!(parse_sysctl("kernel.numa_balancing").is_err());
        assert!(parse_sysctl("../../etc=1").is_err());
        assert!(parse_sysctl("kernel/x=1").is_err());
        assert!(parse_sysctl("kernel.x=").is_err());
        // sysctl_path is numalab_linux::knobs' (re-exported), tested there.
    }
}

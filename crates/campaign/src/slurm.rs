//! Slurm as the campaign's executor beyond one machine. numalab decides
//! nothing about where or when a cell runs: it writes one job array per
//! configuration (its placement: partition, node features, node list,
//! exclusive or not) whose task i runs `numalab campaign run-cell PLAN
//! --cell KEY` for the i-th cell of a list, and submits it with `sbatch`.
//! Each task writes its record into the shared results directory, tagged
//! with its job and array ids. What Slurm knows of the tasks (queued,
//! running, cancelled, failed) comes from `squeue`, then `sacct` where
//! accounting is kept, else `scontrol show job` (which knows finished jobs
//! for MinJobAge seconds); the submissions are listed in
//! `.campaign/slurm/submissions.json` so status can ask about them.

use crate::plan::Target;
use crate::state::{write_json_atomic, Campaign, STATE_DIR};
use crate::CampaignError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One `sbatch` of a job array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Submission {
    pub job_id: String,
    /// Task i runs `cells[i]`.
    pub cells: Vec<String>,
    pub config: String,
    pub submitted_at: String,
}

/// How to submit.
#[derive(Debug, Clone, Default)]
pub struct SubmitOptions {
    /// Overrides the plan's partitions.
    pub partition: Option<String>,
    /// At most this many cells of a configuration at once (the array's
    /// `%N` throttle: with exclusive cells, N nodes).
    pub nodes_per_config: Option<u32>,
    /// The numalab the tasks run (on a path every node sees).
    pub numalab: PathBuf,
}

fn dir(results: &Path) -> PathBuf {
    results.join(STATE_DIR).join("slurm")
}

fn submissions_path(results: &Path) -> PathBuf {
    dir(results).join("submissions.json")
}

/// Every array submitted for this results directory, oldest first.
pub fn submissions(results: &Path) -> Result<Vec<Submission>, CampaignError> {
    let path = submissions_path(results);
    match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t)
            .map_err(|e| CampaignError::Results(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(CampaignError::io(&path)(e)),
    }
}

/// `prog` on `PATH`, or a one-line error.
pub fn require(prog: &str) -> Result<PathBuf, CampaignError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
        .ok_or_else(|| {
            CampaignError::Slurm(format!(
                "{prog} is not on PATH: --executor slurm needs Slurm's client commands (Debian: apt-get install slurm-client; and SLURM_CONF naming the cluster)"
            ))
        })
}

/// The batch script of one array: task i runs the cell on line i+1 of
/// `cells`. Every text in it is checked for control characters (a newline
/// would end the comment line and run what follows) and quoted.
fn batch_script(
    name: &str,
    label: &str,
    cells: &Path,
    numalab: &Path,
    plan: &Path,
) -> Result<String, CampaignError> {
    use numalab_linux::shell::checked_quote;
    let q = |what: &str, text: &str| {
        checked_quote(what, text).map_err(|e| CampaignError::Plan(e.to_string()))
    };
    Ok(format!(
        "#!/bin/sh\n# numalab campaign {name}: configuration {label}; array task i runs the cell on line i+1 of {cells}\nkey=$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" {cells})\nexec {exe} campaign run-cell {plan} --cell \"$key\" --quiet\n",
        name = q("the plan's name", name)?,
        label = q("the label", label)?,
        cells = q("the cells file", &cells.to_string_lossy())?,
        exe = q("numalab's path", &numalab.to_string_lossy())?,
        plan = q("the plan's path", &plan.to_string_lossy())?,
    ))
}

/// Why a Slurm command gave no output.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// It could not be started.
    #[error("{0}")]
    Spawn(#[from] std::io::Error),
    /// It failed: the first line of its standard error.
    #[error("{0}")]
    Failed(String),
}

fn run(cmd: &mut Command) -> Result<String, CommandError> {
    let out = cmd.output()?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).to_string())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(CommandError::Failed(
            err.lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("failed")
                .to_string(),
        ))
    }
}

/// Submit the cells `todo` (indices into `c.cells`): one job array per
/// configuration, in the campaign's order.
pub fn submit(
    c: &Campaign,
    todo: &BTreeSet<usize>,
    opts: &SubmitOptions,
) -> Result<Vec<Submission>, CampaignError> {
    require("sbatch")?;
    let plan_path = std::path::absolute(&c.plan.path).map_err(CampaignError::io(&c.plan.path))?;
    let results =
        std::path::absolute(&c.plan.results).map_err(CampaignError::io(&c.plan.results))?;
    let d = dir(&results);
    std::fs::create_dir_all(&d).map_err(CampaignError::io(&d))?;
    let mut per_config: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for i in c.order() {
        if todo.contains(&i) {
            let cell = &c.cells[i];
            per_config
                .entry(cell.config)
                .or_default()
                .push(cell.key.clone());
        }
    }
    let mut all = submissions(&results)?;
    let mut made = Vec::new();
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3f").to_string();
    for (ci, keys) in per_config {
        let config = &c.plan.configs[ci];
        let tag = format!("{stamp}-{ci}");
        let cells_file = d.join(format!("{tag}.cells"));
        numalab_record::write_file_atomic(&cells_file, (keys.join("\n") + "\n").as_bytes())
            .map_err(CampaignError::io(&cells_file))?;
        let script = d.join(format!("{tag}.sh"));
        let text = batch_script(
            &c.plan.name,
            &config.label,
            &cells_file,
            &opts.numalab,
            &plan_path,
        )?;
        numalab_record::write_file_atomic(&script, text.as_bytes())
            .map_err(CampaignError::io(&script))?;
        let mut cmd = Command::new("sbatch");
        let throttle = opts
            .nodes_per_config
            .map(|n| format!("%{n}"))
            .unwrap_or_default();
        cmd.arg("--parsable")
            .arg(format!("--array=0-{}{throttle}", keys.len() - 1))
            .arg(format!("--job-name=numalab-{}", job_name(&c.plan.name)))
            .arg(format!("--output={}/%A_%a.out", d.display()))
            .arg(format!("--chdir={}", results.display()))
            .arg("--nodes=1");
        let place = &config.slurm;
        if let Some(p) = opts.partition.as_ref().or(place.partition.as_ref()) {
            cmd.arg(format!("--partition={p}"));
        }
        if let Some(f) = &place.constraint {
            cmd.arg(format!("--constraint={f}"));
        }
        if let Some(n) = &place.nodelist {
            cmd.arg(format!("--nodelist={n}"));
        }
        if let Some(t) = &place.time {
            cmd.arg(format!("--time={t}"));
        }
        let sim = matches!(config.target, Target::Sim(_));
        if place.exclusive.unwrap_or(!sim) {
            cmd.arg("--exclusive");
        } else {
            cmd.arg(format!(
                "--cpus-per-task={}",
                place.cpus_per_task.unwrap_or(1)
            ));
        }
        cmd.arg(&script);
        let out = run(&mut cmd).map_err(|source| CampaignError::Sbatch {
            label: config.label.clone(),
            source,
        })?;
        let job_id = out
            .trim()
            .split(';')
            .next()
            .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
            .ok_or_else(|| {
                CampaignError::Slurm(format!("sbatch printed {:?}, not a job id", out.trim()))
            })?
            .to_string();
        let s = Submission {
            job_id,
            cells: keys,
            config: config.label.clone(),
            submitted_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        };
        all.push(s.clone());
        // Written after each sbatch: a failure of the next loses none.
        write_json_atomic(&submissions_path(&results), &all)?;
        made.push(s);
    }
    Ok(made)
}

fn job_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What Slurm says of a cell's latest array task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskState {
    /// In the queue: PENDING, RUNNING, ... (and squeue's reason).
    Queued { state: String, reason: String },
    /// Left the queue: COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    Ended(String),
    /// Slurm no longer knows it.
    Unknown,
}

impl TaskState {
    pub fn is_queued(&self) -> bool {
        matches!(self, TaskState::Queued { .. })
    }
}

/// Slurm's view of the submitted tasks, by cell key (latest submission).
#[derive(Debug, Default)]
pub struct View {
    pub cells: BTreeMap<String, (String, TaskState)>,
    /// Where ended tasks' states came from, or why they are unknown.
    pub accounting: String,
}

/// Ask Slurm about every submission of this results directory.
pub fn view(results: &Path) -> Result<View, CampaignError> {
    let subs = submissions(results)?;
    let mut v = View::default();
    if subs.is_empty() {
        return Ok(v);
    }
    require("squeue")?;
    let mut queued: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut ended: BTreeMap<String, String> = BTreeMap::new();
    let mut sources = BTreeSet::new();
    for s in &subs {
        // squeue says nothing (or errs) of a job that left the queue.
        if let Ok(out) =
            run(Command::new("squeue").args(["-h", "-r", "-j", &s.job_id, "-o", "%i|%T|%r"]))
        {
            queued.extend(parse_squeue(&out));
        }
        let done = match run(Command::new("sacct").args([
            "-n",
            "-P",
            "-X",
            "-j",
            &s.job_id,
            "-o",
            "JobID,State",
        ])) {
            Ok(out) if !out.trim().is_empty() => {
                sources.insert("sacct");
                parse_sacct(&out)
            }
            _ => match run(Command::new("scontrol").args(["-o", "show", "job", &s.job_id])) {
                Ok(out) => {
                    sources.insert("scontrol");
                    parse_scontrol(&out)
                }
                Err(_) => BTreeMap::new(),
            },
        };
        ended.extend(done);
    }
    v.accounting = if sources.is_empty() {
        "Slurm no longer knows the finished tasks (no accounting, past MinJobAge)".into()
    } else {
        sources.into_iter().collect::<Vec<_>>().join(", ")
    };
    for s in &subs {
        for (i, key) in s.cells.iter().enumerate() {
            let task = format!("{}_{i}", s.job_id);
            let state = if let Some((st, why)) = queued.get(&task) {
                TaskState::Queued {
                    state: st.clone(),
                    reason: why.clone(),
                }
            } else if let Some(st) = ended.get(&task) {
                if is_queued_state(st) {
                    TaskState::Queued {
                        state: st.clone(),
                        reason: String::new(),
                    }
                } else {
                    TaskState::Ended(st.clone())
                }
            } else {
                TaskState::Unknown
            };
            // Later submissions replace earlier ones.
            v.cells.insert(key.clone(), (task, state));
        }
    }
    Ok(v)
}

fn is_queued_state(s: &str) -> bool {
    matches!(
        s,
        "PENDING"
            | "RUNNING"
            | "CONFIGURING"
            | "COMPLETING"
            | "SUSPENDED"
            | "REQUEUED"
            | "RESIZING"
    )
}

/// `123_4|PENDING|Resources` lines; a pending range `123_[5-9]` expands.
pub fn parse_squeue(out: &str) -> BTreeMap<String, (String, String)> {
    let mut m = BTreeMap::new();
    for l in out.lines() {
        let f: Vec<&str> = l.trim().split('|').collect();
        if f.len() < 2 {
            continue;
        }
        let reason = f.get(2).copied().unwrap_or("").to_string();
        for id in expand_ids(f[0]) {
            m.insert(id, (f[1].to_string(), reason.clone()));
        }
    }
    m
}

/// `123_4|COMPLETED` or `123_5|CANCELLED by 0` lines.
pub fn parse_sacct(out: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for l in out.lines() {
        let f: Vec<&str> = l.trim().split('|').collect();
        if f.len() < 2 {
            continue;
        }
        let state = f[1].split_whitespace().next().unwrap_or("").to_string();
        for id in expand_ids(f[0]) {
            m.insert(id, state.clone());
        }
    }
    m
}

/// `scontrol -o show job`: one line per job, `ArrayJobId=123
/// ArrayTaskId=4 ... JobState=COMPLETED`.
pub fn parse_scontrol(out: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for l in out.lines() {
        let field = |k: &str| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix(k).and_then(|r| r.strip_prefix('=')))
        };
        let (Some(job), Some(task), Some(state)) =
            (field("ArrayJobId"), field("ArrayTaskId"), field("JobState"))
        else {
            continue;
        };
        for id in expand_ids(&format!("{job}_{task}")) {
            m.insert(id, state.to_string());
        }
    }
    m
}

/// `123_4` -> [123_4]; `123_[5-7,9%2]` -> [123_5, 123_6, 123_7, 123_9].
fn expand_ids(id: &str) -> Vec<String> {
    let Some((job, tasks)) = id.split_once('_') else {
        return vec![id.to_string()];
    };
    let tasks = tasks.trim_start_matches('[').trim_end_matches(']');
    let tasks = tasks.split('%').next().unwrap_or("");
    let mut out = Vec::new();
    for part in tasks.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u64>(), b.parse::<u64>()) {
                    if b >= a && b - a < 1_000_000 {
                        out.extend((a..=b).map(|t| format!("{job}_{t}")));
                    }
                }
            }
            None if !part.is_empty() => out.push(format!("{job}_{part}")),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squeue_sacct_scontrol() {
        let q = parse_squeue("12_[3-5%2]|PENDING|JobArrayTaskLimit\n12_1|RUNNING|None\n");
        assert_eq!(q.len(), 4);
        assert_eq!(q["12_4"].0, "PENDING");
        assert_eq!(q["12_1"], ("RUNNING".into(), "None".into()));
        let a = parse_sacct("12_0|COMPLETED\n12_2|CANCELLED by 0\n");
        assert_eq!(a["12_2"], "CANCELLED");
        assert_eq!(a["12_0"], "COMPLETED");
        let s = parse_scontrol(
            "JobId=14 ArrayJobId=12 ArrayTaskId=2 JobName=x JobState=CANCELLED Reason=None\nJobId=12 ArrayJobId=12 ArrayTaskId=6-9 JobState=PENDING Reason=Resources\n",
        );
        assert_eq!(s["12_2"], "CANCELLED");
        assert_eq!(s["12_8"], "PENDING");
        assert_eq!(expand_ids("7"), vec!["7"]);
        assert_eq!(numalab_linux::shell::quote("a'b"), r"'a'\''b'");
        assert_eq!(job_name("a b/c"), "a_b_c");
    }
}

//! `numalab campaign --executor slurm` on a real Slurm: a throwaway
//! one-machine cluster (scripts/slurm-cluster.sh: slurmctld, slurmd and
//! munge from Debian's packages, installed when missing) started for the
//! test and stopped after it. Needs root; skipped with the reason printed
//! otherwise.

mod common;

use common::{show, text};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

struct Cluster {
    dir: PathBuf,
    script: PathBuf,
    env: Vec<(String, String)>,
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-cluster.sh");
        let o = Command::new("bash")
            .arg(&script)
            .arg("start")
            .arg(dir)
            .output()
            .unwrap();
        let mut c = Cluster {
            dir: dir.to_path_buf(),
            script,
            env: Vec::new(),
        };
        assert!(
            o.status.success(),
            "the test cluster did not start: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        for l in text(&o.stdout).lines() {
            if let Some((k, v)) = l
                .trim()
                .strip_prefix("export ")
                .and_then(|r| r.split_once('='))
            {
                c.env.push((
                    k.to_string(),
                    v.trim_matches('\'').trim_matches('"').to_string(),
                ));
            }
        }
        assert!(
            c.env.iter().any(|(k, _)| k == "SLURM_CONF"),
            "{}",
            text(&o.stdout)
        );
        c
    }

    fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    fn numalab(&self, cwd: &Path, args: &[&str]) -> Output {
        let mut c = self.cmd(common::EXE);
        c.args(args).current_dir(cwd).output().unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(&self.script)
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

fn records(dir: &Path) -> Vec<Value> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok())
        .collect()
}

/// Poll `campaign status` until `done` reads in it, or panic after `limit`.
fn wait_status(c: &Cluster, cwd: &Path, plan: &str, done: &str, limit: Duration) -> String {
    let t0 = Instant::now();
    loop {
        let o = c.numalab(cwd, &["campaign", "status", plan]);
        let out = text(&o.stdout);
        if out.contains(done) {
            return out;
        }
        assert!(
            t0.elapsed() < limit,
            "no {done:?} after {limit:?}: {}",
            show(&o)
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Standard error with wrapped lines joined again.
fn unwrapped(o: &Output) -> String {
    text(&o.stderr).replace("\n  ", " ")
}

fn submitted_jobs(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.strip_prefix("submitted job array "))
        .map(|r| r.split_whitespace().next().unwrap().to_string())
        .collect()
}

#[test]
fn a_campaign_runs_as_slurm_job_arrays_survives_scancel_and_resubmits_what_is_missing() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("slurm test SKIPPED: starting a test cluster needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(&tmp.path().join("cluster"));
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();

    // 1. The issue's sweep: 5 scan periods x 3 machines x 5 seeds.
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/campaigns");
    std::fs::copy(examples.join("sim-sweep.toml"), work.join("sweep.toml")).unwrap();
    let o = cluster.numalab(
        &work,
        &["campaign", "run", "sweep.toml", "--executor", "slurm"],
    );
    assert!(o.status.success(), "{}", show(&o));
    let jobs = submitted_jobs(&text(&o.stdout));
    assert_eq!(jobs.len(), 15, "one array per configuration: {}", show(&o));
    let out = wait_status(
        &cluster,
        &work,
        "sweep.toml",
        "75 of 75 done, 0 failed",
        Duration::from_secs(900),
    );
    assert!(out.contains("campaign sim-sweep:"), "{out}");
    let recs = records(&work.join("sim-sweep-results"));
    assert_eq!(recs.len(), 75);
    let mut cells = BTreeSet::new();
    for r in &recs {
        let s = &r["campaign"]["slurm"];
        assert!(
            jobs.contains(&s["array_job_id"].as_str().unwrap().to_string()),
            "{s}"
        );
        assert!(
            s["job_id"].as_str().is_some() && s["array_task_id"].as_u64().is_some(),
            "{s}"
        );
        cells.insert(r["campaign"]["cell"].as_str().unwrap().to_string());
    }
    assert_eq!(cells.len(), 75);
    // Everything done: nothing to submit.
    let o = cluster.numalab(
        &work,
        &["campaign", "run", "sweep.toml", "--executor", "slurm"],
    );
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        unwrapped(&o).contains("0 queued in Slurm, 0 to submit"),
        "{}",
        show(&o)
    );

    // 2. Cancelled mid-way, then resubmitted: real cells on this machine,
    // each with the node to itself, so they run one after another.
    std::fs::write(
        work.join("sleep.toml"),
        "runs = 6\ninterval = 0\n[[benchmark]]\nname = \"command\"\nargv = [\"sleep\", \"2\"]\n",
    )
    .unwrap();
    let o = cluster.numalab(
        &work,
        &["campaign", "run", "sleep.toml", "--executor", "slurm"],
    );
    assert!(o.status.success(), "{}", show(&o));
    let first = submitted_jobs(&text(&o.stdout));
    assert_eq!(first.len(), 1, "{}", show(&o));
    let results = work.join("sleep-results");
    let t0 = Instant::now();
    while records(&results).len() < 2 {
        assert!(t0.elapsed() < Duration::from_secs(300), "no 2 records");
        std::thread::sleep(Duration::from_millis(200));
    }
    let st = cluster.cmd("scancel").arg(&first[0]).status().unwrap();
    assert!(st.success());
    // Wait until Slurm has let go of every task.
    let t0 = Instant::now();
    loop {
        let q = cluster
            .cmd("squeue")
            .args(["-h", "-r", "-j", &first[0], "-o", "%i"])
            .output()
            .unwrap();
        if text(&q.stdout).trim().is_empty() {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "{}",
            text(&q.stdout)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let kept = records(&results);
    assert!((2..6).contains(&kept.len()), "{}", kept.len());
    for r in &kept {
        assert_eq!(
            r["outcome"]["status"], "ok",
            "a finished record survives scancel"
        );
    }
    let st = cluster.numalab(&work, &["campaign", "status", "sleep.toml"]);
    let out = text(&st.stdout);
    eprintln!("status after scancel:\n{out}");
    let not_done = 6 - kept.len();
    assert!(out.contains(&format!("{} of 6 done", kept.len())), "{out}");
    // The cancelled tasks are named as such, or as no longer known.
    assert!(
        out.contains("CANCELLED") || out.contains("no longer known") || out.contains("missing"),
        "{out}"
    );
    let o = cluster.numalab(
        &work,
        &["campaign", "run", "sleep.toml", "--executor", "slurm"],
    );
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        unwrapped(&o).contains(&format!("0 queued in Slurm, {not_done} to submit")),
        "{}",
        show(&o)
    );
    let second = submitted_jobs(&text(&o.stdout));
    assert_eq!(second.len(), 1);
    wait_status(
        &cluster,
        &work,
        "sleep.toml",
        "6 of 6 done, 0 failed",
        Duration::from_secs(300),
    );
    let all = records(&results);
    assert_eq!(all.len(), 6, "nothing ran twice");
    let mut by_job: BTreeMap<String, usize> = BTreeMap::new();
    for r in &all {
        *by_job
            .entry(
                r["campaign"]["slurm"]["array_job_id"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
            .or_default() += 1;
    }
    assert_eq!(by_job.get(&first[0]), Some(&kept.len()), "{by_job:?}");
    assert_eq!(by_job.get(&second[0]), Some(&not_done), "{by_job:?}");
}

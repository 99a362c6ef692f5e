//! `numalab run forkexec`: a parent forking short-lived programs on this
//! machine; every child runs, exits 0 and is counted.

mod common;

use common::{json_records, numalab_in, show};

#[test]
fn every_child_runs_and_is_reaped() {
    let dir = tempfile::tempdir().unwrap();
    let o = numalab_in(
        &[
            "run",
            "forkexec",
            "--children",
            "30",
            "--jobs",
            "3",
            "--child-iterations",
            "10000",
            "--parent-iterations",
            "100",
            "--results",
            dir.path().to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let recs = json_records(dir.path());
    assert_eq!(recs.len(), 1);
    let r = &recs[0].1;
    assert_eq!(r["benchmark"], "forkexec");
    assert_eq!(r["outcome"]["status"], "ok");
    assert_eq!(r["params"]["children"], 30);
    assert_eq!(r["params"]["jobs"], 3);
    assert_eq!(r["tasks"][0]["work_done"], 30);
    let el = r["metrics"]["elapsed_s"]["value"].as_f64().unwrap();
    let rate = r["metrics"]["children_per_s"]["value"].as_f64().unwrap();
    assert!((rate * el - 30.0).abs() < 1e-6, "{rate} x {el}");
    assert!(r["metrics"]["child_latency_ms"]["value"].as_f64().unwrap() > 0.0);
}

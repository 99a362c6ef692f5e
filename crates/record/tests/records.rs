use numalab_record::*;
use std::path::PathBuf;

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/record-schema.json")
}

#[test]
fn round_trip_through_atomic_write() {
    let dir = tempfile::tempdir().unwrap();
    let r = example_record("numa_test", "A", 1, 10.0);
    let path = write_atomic(dir.path(), &r).unwrap();
    assert_eq!(
        path.file_name().unwrap().to_string_lossy(),
        format!("{}.json", r.id)
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "records are readable by everyone");
    let back = load(&path).unwrap();
    assert_eq!(back, r);
    // no temporary files are left behind
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn corrupt_files_are_reported_and_the_rest_used() {
    let dir = tempfile::tempdir().unwrap();
    let good = example_record("numa_test", "A", 1, 10.0);
    write_atomic(dir.path(), &good).unwrap();
    let full = serde_json::to_string(&good).unwrap();
    std::fs::write(dir.path().join("truncated.json"), &full[..full.len() / 2]).unwrap();
    std::fs::write(dir.path().join("other.json"), "{\"hello\": 1}").unwrap();
    let mut newer: serde_json::Value = serde_json::from_str(&full).unwrap();
    newer["schema_version"] = serde_json::json!(SCHEMA_VERSION + 1);
    std::fs::write(dir.path().join("newer.json"), newer.to_string()).unwrap();
    let mut unknown: serde_json::Value = serde_json::from_str(&full).unwrap();
    unknown["surprise"] = serde_json::json!(true);
    std::fs::write(dir.path().join("unknown.json"), unknown.to_string()).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();

    let rep = load_paths(&[dir.path().to_path_buf()]);
    assert_eq!(rep.records.len(), 1);
    assert_eq!(rep.errors.len(), 4, "{:?}", rep.errors);
    let msgs: Vec<String> = rep.errors.iter().map(|e| e.to_string()).collect();
    assert!(msgs
        .iter()
        .any(|m| m.contains("truncated.json") && m.contains("not a numalab run record")));
    assert!(msgs
        .iter()
        .any(|m| m.contains("other.json") && m.contains("no schema_version")));
    assert!(msgs
        .iter()
        .any(|m| m.contains("newer.json") && m.contains("upgrade numalab")));
    assert!(msgs
        .iter()
        .any(|m| m.contains("unknown.json") && m.contains("surprise")));
}

#[test]
fn inconsistent_records_are_rejected() {
    let mut r = example_record("numa_test", "A", 1, 10.0);
    r.tasks[0].node_time_s.push(1.0);
    let e = parse(
        &PathBuf::from("x.json"),
        &serde_json::to_string(&r).unwrap(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("per-node times for 2 nodes"), "{e}");
    for label in ["", " ", "a\nb", "tab\there"] {
        let r = example_record("numa_test", label, 1, 10.0);
        let e = parse(
            &PathBuf::from("x.json"),
            &serde_json::to_string(&r).unwrap(),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("is empty or has control characters"),
            "{e}"
        );
    }
}

#[test]
fn documented_schema_is_current() {
    let want = serde_json::to_string_pretty(&json_schema()).unwrap() + "\n";
    let have = std::fs::read_to_string(schema_path()).unwrap_or_default();
    if have != want {
        if std::env::var_os("NUMALAB_BLESS").is_some() {
            std::fs::write(schema_path(), &want).unwrap();
        } else {
            panic!("docs/record-schema.json is out of date: run NUMALAB_BLESS=1 cargo test -p numalab-record");
        }
    }
}

#[test]
fn records_validate_against_documented_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path()).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let good = serde_json::to_value(example_record("numa01", "B", 2, 3.5)).unwrap();
    assert!(validator.is_valid(&good));
    let mut bad = good.clone();
    bad["outcome"]["status"] = serde_json::json!("maybe");
    assert!(
        !validator.is_valid(&bad),
        "the schema must reject an unknown status"
    );
}

#[test]
fn unobserved_residency_is_null_not_zeros() {
    let mut r = example_record("configure", "A", 1, 10.0);
    r.tasks[0].node_time_s = Vec::new();
    r.tasks[0].residency_samples = 0;
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["tasks"][0]["node_time_s"].is_null(), "{json}");
    assert!(json["tasks"][1]["node_time_s"].is_array(), "{json}");
    let back = parse(&PathBuf::from("x.json"), &json.to_string()).unwrap();
    assert_eq!(back, r);
    assert!(!back.tasks[0].residency_observed());
    assert!(back.tasks[1].residency_observed());
    // A record from before null was written: zeros, no samples.
    let mut old = r.clone();
    old.tasks[0].node_time_s = vec![0.0, 0.0];
    assert!(!old.tasks[0].residency_observed());
    // The documented schema takes both.
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path()).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&json));
    assert!(validator.is_valid(&serde_json::to_value(&old).unwrap()));
}

/// `backend` is read by hand: each kind round-trips, and a field of
/// another kind, a missing field or an unknown kind is refused as the
/// derived reader refused them.
#[test]
fn backends_round_trip_and_bad_ones_are_refused() {
    let mut r = example_record("numa_test", "A", 1, 10.0);
    let kinds = [
        serde_json::json!({"kind": "real", "details": {"cpus": [0, 1]}}),
        serde_json::json!({"kind": "guest", "accel": "tcg", "spec": "2x2", "sysctls": {},
            "host": "h", "host_kernel": "6.1", "host_cpu_model": null}),
        serde_json::json!({"kind": "sim", "machine": "tx7", "scheduler": "linux",
            "balancer": "none", "seed": 3}),
    ];
    for b in kinds {
        r.backend = serde_json::from_value(b.clone()).unwrap();
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(parse(&PathBuf::from("x.json"), &text).unwrap(), r, "{b}");
    }
    let full = serde_json::to_value(&r).unwrap();
    for (backend, why) in [
        (
            serde_json::json!({"kind": "real", "seed": 1}),
            "unknown field `seed`",
        ),
        (
            serde_json::json!({"kind": "sim", "machine": "tx7", "scheduler": "linux",
            "balancer": "none", "seed": 3, "accel": "kvm"}),
            "unknown field `accel`",
        ),
        (
            serde_json::json!({"kind": "sim", "machine": "tx7"}),
            "missing field `scheduler`",
        ),
        (
            serde_json::json!({"kind": "cloud"}),
            "unknown variant `cloud`",
        ),
        (
            serde_json::json!({"kind": "real", "colour": 1}),
            "unknown field `colour`",
        ),
    ] {
        let mut v = full.clone();
        v["backend"] = backend;
        let e = parse(&PathBuf::from("x.json"), &v.to_string())
            .unwrap_err()
            .to_string();
        assert!(e.contains(why), "{e}");
    }
}

/// skip_samples reads the time series as empty, and everything else as
/// a full read does.
#[test]
fn skipping_samples_reads_the_rest() {
    let r = example_record("numa_test", "A", 1, 10.0);
    assert!(!r.series.samples.is_empty());
    let text = serde_json::to_string(&r).unwrap();
    let opts = numalab_record::LoadOptions { skip_samples: true };
    let lite = numalab_record::store::parse_with(&PathBuf::from("x.json"), &text, opts).unwrap();
    assert!(lite.series.samples.is_empty());
    let mut full = parse(&PathBuf::from("x.json"), &text).unwrap();
    assert_eq!(full, r);
    full.series.samples.clear();
    assert_eq!(lite, full);
}

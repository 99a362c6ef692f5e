//! `numalab reproduce`: the five studies through the campaign machinery,
//! tables and verdicts in 80 columns, ordinary records, resumable.

mod common;

use common::{assert_one_line_error, numalab_in, show, text};

#[test]
fn every_study_prints_its_tables_and_a_verdict_per_claim_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let o = numalab_in(
        &["reproduce", "all", "--runs", "1", "--results", "r"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let out = text(&o.stdout);
    for name in [
        "focht-2002",
        "focht-2003",
        "autonuma-2012",
        "nest-placement-2022",
        "ibs-2023",
    ] {
        assert!(out.contains(&format!("== {name}: ")), "{name}: {out}");
        // A study with a fitted parameter runs on the fitted machine, in a
        // directory named after it (its fit's points beside it).
        let mut d = dir.path().join("r").join(format!("{name}-r1"));
        if name != "nest-placement-2022" && name != "ibs-2023" {
            // azusa16's and tx7's memory latency and ht2's memory
            // bandwidth, fitted where the bisection ends.
            let fitted = [
                "azusa16_memory.local_latency_ns=",
                "tx7_memory.local_latency_ns=",
                "ht2_memory.bandwidth_gbs=",
            ];
            d = std::fs::read_dir(&d)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| fitted.iter().any(|f| p.to_string_lossy().contains(f)))
                .unwrap_or(d);
        }
        let n = std::fs::read_dir(&d)
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .count();
        assert!(n >= 2, "{name}: {n} records in {}", d.display());
    }
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    // Every claim has a verdict, and the count adds up.
    let marks = out
        .lines()
        .filter(|l| l.starts_with("[reproduced] "))
        .count();
    let nots = out
        .lines()
        .filter(|l| l.starts_with("[NOT reproduced] "))
        .count();
    // 11 findings, and one claim on the numbers per study.
    assert_eq!(marks + nots, 16, "{out}");
    assert!(
        out.contains("Verdicts: ")
            && out.contains(" of 11 findings reproduced, and the numbers of "),
        "{out}"
    );
    assert_eq!(
        out.matches("[reproduced] The model predicts the seed's")
            .count()
            + out
                .matches("[NOT reproduced] The model predicts the seed's")
                .count(),
        5,
        "{out}"
    );
    // The TX7's latency, unpublished, fitted within its cited range on a
    // cell no claim uses; the range does not reach the seed's figure. The
    // AzusA's, on E's lone tasks at N = 4, inside its range.
    assert!(
        out.contains("Fitted: memory.local_latency_ns = 243 on ElapsedTime N=32")
            && out.contains("at the bound"),
        "{out}"
    );
    assert!(
        out.contains("Fitted: memory.local_latency_ns = 3")
            && out.contains(" on TotalUserTime N=4 E (seed 108.9,"),
        "{out}"
    );
    // Tables carry both figures: the simulator's and the seed's.
    assert!(out.contains("[2543.4]") && out.contains("[54.70]"), "{out}");
    // The records are ordinary records: compare reads them.
    let o2 = numalab_in(&["compare", "r/nest-placement-2022-r1"], dir.path());
    assert!(o2.status.success(), "{}", show(&o2));
    // Again: nothing runs, the same verdicts.
    let again = numalab_in(
        &["reproduce", "all", "--runs", "1", "--results", "r"],
        dir.path(),
    );
    assert!(again.status.success(), "{}", show(&again));
    // Five studies and the fit points of focht-2003 (two), focht-2002
    // and autonuma-2012 (one directory each).
    let fit_points = |study: &str| {
        std::fs::read_dir(dir.path().join(format!("r/{study}-r1-fit")))
            .unwrap()
            .count()
    };
    let (azusa, ht2) = (fit_points("focht-2002"), fit_points("autonuma-2012"));
    assert!(azusa >= 2 && ht2 >= 2, "{azusa} and {ht2} fit points");
    let points = azusa + ht2;
    assert_eq!(
        text(&again.stderr).matches("cells done; nothing").count(),
        7 + points,
        "{}",
        show(&again)
    );
    assert_eq!(text(&again.stdout), out);
    // Every study prints how close its numbers are.
    assert_eq!(out.matches("\nNumbers: ").count(), 5, "{out}");
    // JSON: the same verdicts, every published figure beside the
    // simulated one; JSON alone on standard output.
    let js = numalab_in(
        &[
            "reproduce",
            "all",
            "--runs",
            "1",
            "--results",
            "r",
            "--format",
            "json",
        ],
        dir.path(),
    );
    assert!(js.status.success(), "{}", show(&js));
    let j: serde_json::Value = serde_json::from_slice(&js.stdout).unwrap();
    assert_eq!(j["claims"], 16);
    assert_eq!(j["qualitative"]["claims"], 11);
    assert_eq!(j["numbers"]["claims"], 5);
    assert_eq!(j["reproduced"], marks);
    let studies = j["studies"].as_array().unwrap();
    assert_eq!(studies.len(), 5);
    let cells: usize = studies
        .iter()
        .map(|s| s["cells"].as_array().unwrap().len())
        .sum();
    // 20 + 16 + 5 + 8 + 2 published figures (autonuma-2012's fifth, a
    // MoF figure, the designated cell of its fit).
    assert_eq!(cells, 51, "{j}");
    let fitted = &studies[1]["fitted"][0];
    assert_eq!(fitted["key"], "memory.local_latency_ns");
    assert_eq!(fitted["at_bound"], true);
    let designated: Vec<&serde_json::Value> = studies[1]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["fitted"] == true)
        .collect();
    assert_eq!(designated.len(), 1);
    assert_eq!(designated[0]["what"], "ElapsedTime N=32 node-aware");
    assert_eq!(studies[1]["numbers"]["compared"], 15, "{j}");
    // ht2's memory bandwidth, fitted inside its cited range on the MoF
    // figure; its AutoNUMA25 twin (the same simulated runs) is fitted with
    // it, and the other three AutoNUMA25 figures are predicted.
    let an = &studies[2];
    assert_eq!(an["fitted"][0]["key"], "memory.bandwidth_gbs", "{an}");
    assert_eq!(an["fitted"][0]["at_bound"], false, "{an}");
    assert_eq!(
        an["fitted"][0]["twins"][0], "numa01_THREAD_ALLOC elapsed, autonuma",
        "{an}"
    );
    let left_out: Vec<&serde_json::Value> = an["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["fitted"] == true)
        .map(|c| &c["what"])
        .collect();
    assert_eq!(
        left_out,
        [
            "numa01_THREAD_ALLOC elapsed, AutoNUMA25 MoF",
            "numa01_THREAD_ALLOC elapsed, autonuma"
        ],
        "{an}"
    );
    assert_eq!(an["numbers"]["compared"], 3, "{an}");
    let tu64a = &studies[0]["cells"].as_array().unwrap()[16];
    assert_eq!(tu64a["what"], "TotalUserTime N=64 A");
    assert_eq!(tu64a["seed"], 2543.4);
    let (seed, sim) = (
        tu64a["seed"].as_f64().unwrap(),
        tu64a["simulated"].as_f64().unwrap(),
    );
    assert!((tu64a["ratio"].as_f64().unwrap() - sim / seed).abs() < 1e-9);
    for st in studies {
        for c in st["claims"].as_array().unwrap() {
            assert_eq!(
                c["reproduced"].as_bool().unwrap(),
                c["reason"].is_null(),
                "{c}"
            );
        }
    }
    // --strict: status 1 exactly when a claim did not reproduce.
    let strict = numalab_in(
        &[
            "reproduce",
            "all",
            "--runs",
            "1",
            "--results",
            "r",
            "--strict",
        ],
        dir.path(),
    );
    assert_eq!(strict.status.success(), nots == 0, "{}", show(&strict));
    if nots > 0 {
        assert_eq!(strict.status.code(), Some(1));
        assert!(text(&strict.stderr).contains("not reproduced (--strict)"));
    }
}

#[test]
fn an_unknown_study_is_named_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let o = numalab_in(&["reproduce", "focht-1999"], dir.path());
    assert_one_line_error(&o, "no study \"focht-1999\": the studies are focht-2002");
    let o = numalab_in(&["reproduce", "ibs-2023", "--runs", "0"], dir.path());
    assert_one_line_error(&o, "--runs");
}

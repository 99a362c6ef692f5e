//! The five studies: each document's experiment (plans/*.toml) and the
//! rules that judge its findings. Seed figures are quoted from the
//! documents (`../shared/seeds`); every rule is stated in the claim's
//! text or beside it.

mod autonuma_2012;
mod focht_2002;
mod focht_2003;
mod ibs_2023;
mod nest_2022;

use crate::Study;

pub fn studies() -> Vec<Study> {
    vec![
        focht_2002::study(),
        focht_2003::study(),
        autonuma_2012::study(),
        nest_2022::study(),
        ibs_2023::study(),
    ]
}

pub(super) fn pct(gain: f64) -> String {
    format!("{:.1}%", 100.0 * gain)
}

#[cfg(test)]
mod tests {
    use super::focht_2002::focht_2002;
    use super::*;
    use crate::{Records, Verdict};
    use numalab_record::{example_record, Metric};

    fn numa_test(label: &str, tasks: u32, user_s: f64) -> numalab_record::RunRecord {
        let mut r = example_record("numa_test", label, 1, 10.0);
        r.params.insert("tasks".into(), serde_json::json!(tasks));
        r.metrics.insert("user_s".into(), Metric::seconds(user_s));
        r
    }

    #[test]
    fn e_beating_a_at_8_16_32_reproduces_and_a_loss_is_named() {
        let mut recs = Vec::new();
        for n in [4, 8, 16, 32, 64] {
            recs.push(numa_test("A", n, 100.0 * n as f64));
            recs.push(numa_test("E", n, 90.0 * n as f64));
        }
        let f = focht_2002(&Records::new(recs.clone()));
        assert_eq!(f.claims[0].verdict, Verdict::Reproduced);
        assert!(
            f.claims[0].sim.contains("N=16 10.0%"),
            "{}",
            f.claims[0].sim
        );
        // E loses at N = 16.
        for r in recs.iter_mut() {
            if r.label == "E" && r.params["tasks"] == 16 {
                r.metrics.insert("user_s".into(), Metric::seconds(1700.0));
            }
        }
        let f = focht_2002(&Records::new(recs));
        assert_eq!(
            f.claims[0].verdict,
            Verdict::NotReproduced("E does not use less user time than A at N=16".into())
        );
        // Without records, no verdict of success.
        let f = focht_2002(&Records::new(Vec::new()));
        assert!(!f.claims[0].verdict.reproduced());
    }

    #[test]
    fn a_failed_run_does_not_count() {
        let mut a = numa_test("A", 8, 100.0);
        a.outcome = numalab_record::Outcome::failed("it broke");
        let r = Records::new(vec![a, numa_test("A", 8, 300.0)]);
        assert_eq!(
            r.mean("numa_test", "A", &[("tasks", "8")], "user_s"),
            Some(300.0)
        );
    }

    #[test]
    fn every_plan_names_its_own_results_and_runs() {
        for s in studies() {
            let text = s.plan_text(3, std::path::Path::new("/tmp/a \"b\""), s.machine);
            assert!(text.starts_with(&format!("name = \"reproduce-{}\"", s.name)));
            assert!(text.contains("results = \"/tmp/a \\\"b\\\"\""), "{text}");
            assert!(text.contains("runs = 3"));
        }
    }

    /// Every configuration of a study runs on its machine, so a fitted
    /// value reaches all of them; a fit plan holds each designated cell,
    /// the machine has a cited range for each fitted key, and at most two
    /// are fitted.
    #[test]
    fn fitted_values_reach_every_configuration() {
        for s in studies() {
            let spec = format!("{}[memory.mlp=3]", s.machine);
            let text = s.plan_text(1, std::path::Path::new("/r"), &spec);
            let plain = format!("machine = \"{}\"", s.machine);
            assert!(s.body.contains(&plain), "{}", s.name);
            assert!(!text.contains(&plain), "{}: {text}", s.name);
            assert_eq!(
                text.matches(&spec).count(),
                s.body.matches(&plain).count(),
                "{}",
                s.name
            );
            assert!(s.fits.len() <= 2, "{}", s.name);
            let m = numalab_sim::Machine::load(s.machine).unwrap();
            for f in s.fits {
                assert!(m.ranges.contains_key(f.key), "{}: {}", s.name, f.key);
                let fit = s.fit_plan_text(1, std::path::Path::new("/r"), &spec);
                assert!(fit.contains(&spec), "{}: {fit}", s.name);
            }
        }
    }
}

//! The command line as a user meets it: --version names the commit, help
//! fits 80 columns, completions and man pages come from the CLI itself,
//! and --quiet / --verbose do what they say.

mod common;

use common::{numalab_in as numalab, text};
use std::process::Command;

#[test]
fn version_names_the_commit() {
    let o = numalab(&["--version"], std::path::Path::new("."));
    assert!(o.status.success());
    let v = text(&o.stdout);
    let v = v.trim();
    let (head, commit) = v
        .strip_prefix("numalab ")
        .and_then(|r| r.split_once(" ("))
        .unwrap_or_else(|| panic!("{v}"));
    assert!(
        head.split('.').count() == 3 && head.split('.').all(|p| p.parse::<u32>().is_ok()),
        "{v}"
    );
    let commit = commit.strip_suffix(')').unwrap_or_else(|| panic!("{v}"));
    let hash = commit.strip_suffix("-dirty").unwrap_or(commit);
    assert!(
        hash == "unknown" || (hash.len() == 12 && hash.chars().all(|c| c.is_ascii_hexdigit())),
        "{v}"
    );
}

#[test]
fn help_fits_80_columns_and_names_origins_not_seed_numbers() {
    let cases: [&[&str]; 9] = [
        &[],
        &["run"],
        &["run", "numa01"],
        &["run", "numa_test"],
        &["run", "spin"],
        &["sim"],
        &["vm"],
        &["compare"],
        &["report"],
    ];
    for args in cases {
        let o = Command::new(common::EXE)
            .args(args)
            .arg("--help")
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}");
        let help = text(&o.stdout);
        for l in help.lines() {
            assert!(l.chars().count() <= 80, "{args:?}: {l:?}");
        }
        assert!(!help.contains("seed 0"), "{args:?}: {help}");
    }
    // A benchmark's help groups its flags by what they set: the
    // benchmark, the runs, the machine's settings, the output, and under
    // `sim` the simulated machine.
    let help = text(&numalab(&["sim", "numa02", "--help"], std::path::Path::new(".")).stdout);
    let at = |h: &str| {
        help.find(&format!("\n{h}:\n"))
            .unwrap_or_else(|| panic!("no {h:?} heading: {help}"))
    };
    let (bench, runs, settings, sim) = (
        at("Benchmark"),
        at("Runs"),
        at("Machine settings, restored after the runs"),
        at("Simulator"),
    );
    let flag = |f: &str| help.find(f).unwrap_or_else(|| panic!("no {f}: {help}"));
    assert!(bench < flag("--bytes") && flag("--bytes") < runs, "{help}");
    assert!(
        runs < flag("--warmup") && flag("--warmup") < settings,
        "{help}"
    );
    assert!(settings < flag("--thp") && flag("--thp") < sim, "{help}");
    assert!(sim < flag("--balancer <"), "{help}");
    // The simulator takes --thp only: the other settings are not offered
    // there, but are on this machine.
    for f in ["--sysctl", "--governor", "--sysfs"] {
        assert!(!help.contains(f), "{f}: {help}");
    }
    let run = text(&numalab(&["run", "numa02", "--help"], std::path::Path::new(".")).stdout);
    for f in ["--sysctl", "--governor", "--sysfs", "--thp"] {
        assert!(run.contains(f), "{f}: {run}");
    }
    let list = text(&numalab(&["sim", "--list"], std::path::Path::new(".")).stdout);
    assert!(list.contains("Focht") && !list.contains("seed 0"), "{list}");
}

#[test]
fn completions_and_man_pages_come_from_the_cli() {
    let here = std::path::Path::new(".");
    let bash = text(&numalab(&["completions", "bash"], here).stdout);
    assert!(bash.contains("complete -F _numalab"), "{bash}");
    for word in ["numa01", "twohalves", "--sysctl", "--group-by"] {
        assert!(bash.contains(word), "no {word} in the bash completions");
    }
    let zsh = numalab(&["completions", "zsh"], here);
    assert!(zsh.status.success() && text(&zsh.stdout).contains("#compdef numalab"));
    let bad = numalab(&["completions", "tcsh"], here);
    assert_eq!(bad.status.code(), Some(2));

    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("man1");
    // A link planted at a page's name is replaced, not written through.
    std::fs::create_dir(&dir).unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("numalab-vm.1")).unwrap();
    let o = numalab(&["man", "--dir", dir.to_str().unwrap()], here);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(left.is_empty(), "a temporary directory was left: {left:?}");
    assert!(o.status.success(), "{}", text(&o.stderr));
    for page in [
        "numalab.1",
        "numalab-run.1",
        "numalab-run-numa01.1",
        "numalab-vm.1",
    ] {
        let t = std::fs::read_to_string(dir.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(t.contains(".TH"), "{page} is not a man page");
    }
    // Internal commands get no page.
    assert!(!dir.join("numalab-guest-init.1").exists());
    let stdout = text(&numalab(&["man"], here).stdout);
    assert!(stdout.contains(".TH numalab 1"), "{stdout}");
}

#[test]
fn quiet_prints_one_line_per_run_and_the_summary_verbose_adds_record_paths() {
    let d = tempfile::tempdir().unwrap();
    let bench = [
        "run",
        "spin",
        "--tasks",
        "1",
        "--iterations",
        "200000",
        "--placement",
        "default",
        "--runs",
        "3",
    ];
    let mut quiet = bench.to_vec();
    quiet.push("--quiet");
    let o = numalab(&quiet, d.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stderr), "", "--quiet printed on stderr");
    let out = text(&o.stdout);
    let runs: Vec<&str> = out.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(runs.len(), 3, "{out}");
    assert!(out.contains("summary"), "{out}");
    assert!(!out.contains("warning"), "{out}");

    let mut verbose = bench.to_vec();
    verbose.push("--verbose");
    let o = numalab(&verbose, d.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let paths: Vec<&str> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("record: "))
        .collect();
    assert_eq!(paths.len(), 3, "{out}");
    for p in paths {
        assert!(d.path().join(p).is_file(), "{p}");
    }
    let both = numalab(&["run", "spin", "--quiet", "--verbose"], d.path());
    assert_eq!(both.status.code(), Some(2));
}

/// Every `--help` and `help ...` (every subcommand, every benchmark under
/// run and sim) and `sim --list` fits 80 columns: they paste into an
/// email.
#[test]
fn every_help_and_list_fits_80_columns() {
    fn commands(help: &str) -> Vec<String> {
        help.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter(|l| !l[2..].starts_with(' '))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .filter(|c| c != "help")
            .collect()
    }
    let d = tempfile::tempdir().unwrap();
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    let mut seen = 0;
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let o = common::numalab_in(&args, d.path());
        assert!(o.status.success(), "{args:?}");
        let out = common::text(&o.stdout);
        for l in out.lines() {
            assert!(
                l.chars().count() <= 80,
                "{args:?}: {} columns: {l}",
                l.chars().count()
            );
        }
        // `numalab help PATH...` prints the same help, within 80 too.
        let mut help = vec!["help"];
        help.extend(path.iter().map(String::as_str));
        let o = common::numalab_in(&help, d.path());
        assert!(o.status.success(), "{help:?}");
        for l in common::text(&o.stdout).lines() {
            assert!(l.chars().count() <= 80, "{help:?}: {l}");
        }
        seen += 1;
        for c in commands(&out) {
            let mut p = path.clone();
            p.push(c);
            todo.push(p);
        }
    }
    assert!(seen > 25, "every benchmark under run and sim: {seen}");
    let o = common::numalab_in(&["sim", "--list"], d.path());
    let out = common::text(&o.stdout);
    assert!(out.contains("azusa16"));
    for l in out.lines() {
        assert!(l.chars().count() <= 80, "sim --list: {l}");
    }
}

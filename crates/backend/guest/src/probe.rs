//! `numalab guest-probe migrate` (hidden): the smallest workload that
//! shows automatic NUMA balancing at work, for the testbed's own tests.
//!
//! A thread first-touches a region on node `from` (pinned there, memory
//! policy bound there), drops the policy, moves itself to node `to` and
//! keeps writing the region. With `kernel.numa_balancing=1` the kernel's
//! hinting faults notice that the pages are used from `to` and migrate
//! them; with `=0` nothing moves. Placement is read with `move_pages`
//! (query mode) and the kernel's own counters from `/proc/vmstat`.
//!
//! It is honest by construction: it fails when the region did not land on
//! `from` to begin with, when it could not run on `to`, or when it did no
//! passes over the memory, and it records what it saw either way.

use numalab_linux::mmap::Mapping;
use numalab_linux::{numa, procfs};
use numalab_record::{
    Better, Metric, Outcome, ProcessInfo, Repetition, RunRecord, Sample, Series, TaskRecord,
    SCHEMA_VERSION,
};
use numalab_topology::{MachineInfo, Roots};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub const BENCHMARK: &str = "probe-migrate";

#[derive(Debug, Clone)]
pub struct MigrateParams {
    pub mib: u64,
    /// Longest time to work from `to`.
    pub seconds: f64,
    pub from: u32,
    pub to: u32,
    /// Stop early once this fraction of the pages is on `to`.
    pub until: Option<f64>,
    pub results: PathBuf,
    pub label: String,
}

/// What the probe saw.
#[derive(Debug, Clone)]
pub struct MigrateResult {
    pub pages: u64,
    pub on_from_start: u64,
    pub on_to_end: u64,
    pub on_from_end: u64,
    pub migrated: i64,
    pub hint_faults: i64,
    pub passes: u64,
    pub worked_s: f64,
    pub record_path: PathBuf,
    pub failure: Option<String>,
}

/// Why the migration probe did not run to its record.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("reading the topology: {0}")]
    Topology(numalab_topology::TopologyError),
    /// `--from` or `--to` names no node (the machine's summary).
    #[error("node {node} does not exist here ({summary})")]
    NoSuchNode { node: u32, summary: String },
    #[error("node {0} has no CPUs")]
    NoCpus(u32),
    #[error("--from and --to must be different nodes")]
    SameNode,
    #[error("--mib must be at least 1")]
    NoMemory,
    /// The results directory, or writing the record into it.
    #[error("{0}")]
    Record(numalab_record::RecordError),
    #[error("mmap of {bytes} bytes: {source}")]
    Mmap {
        bytes: usize,
        source: std::io::Error,
    },
    /// Where the region's pages are.
    #[error("move_pages (query): {0}")]
    Query(std::io::Error),
    #[error("pinning to node {node}: {source}")]
    Pin { node: u32, source: std::io::Error },
    #[error("getcpu: {0}")]
    GetCpu(std::io::Error),
    #[error("binding memory to node {node}: {source}")]
    Bind { node: u32, source: std::io::Error },
    #[error("resetting the memory policy: {0}")]
    ResetPolicy(std::io::Error),
}

/// An anonymous mapping of `len` bytes in base pages only, so page
/// counts mean what they say (best effort: a kernel without THP has
/// nothing to turn off).
fn region(len: usize) -> Result<Mapping, ProbeError> {
    let m = Mapping::new(len).map_err(|source| ProbeError::Mmap { bytes: len, source })?;
    let _ = m.no_huge_pages();
    Ok(m)
}

/// Write one word in every 512 bytes: every page is touched several
/// times per pass, which is what hinting faults need to see.
fn pass(region: &mut Mapping, value: u64) {
    region.write_words(512 / 8, |i| value ^ i as u64);
}

/// Pages on each node id.
fn placement(pages: &[*const u8]) -> Result<BTreeMap<i32, u64>, ProbeError> {
    let status = numa::page_nodes(0, pages).map_err(ProbeError::Query)?;
    let mut m = BTreeMap::new();
    for s in status {
        *m.entry(s).or_insert(0) += 1;
    }
    Ok(m)
}

fn vmstat() -> BTreeMap<String, u64> {
    procfs::vmstat(std::path::Path::new("/proc")).unwrap_or_default()
}

fn delta(now: &BTreeMap<String, u64>, base: &BTreeMap<String, u64>, k: &str) -> i64 {
    now.get(k).copied().unwrap_or(0) as i64 - base.get(k).copied().unwrap_or(0) as i64
}

/// Run the probe and write its record to `p.results`.
pub fn migrate(p: &MigrateParams) -> Result<MigrateResult, ProbeError> {
    let machine = MachineInfo::probe(&Roots::host()).map_err(ProbeError::Topology)?;
    let topo = &machine.topology;
    let cpus_of = |n: u32| -> Result<Vec<u32>, ProbeError> {
        let node = topo
            .nodes
            .iter()
            .find(|x| x.id == n)
            .ok_or_else(|| ProbeError::NoSuchNode {
                node: n,
                summary: topo.summary(),
            })?;
        if node.cpus.is_empty() {
            return Err(ProbeError::NoCpus(n));
        }
        Ok(node.cpus.clone())
    };
    if p.from == p.to {
        return Err(ProbeError::SameNode);
    }
    let (from_cpus, to_cpus) = (cpus_of(p.from)?, cpus_of(p.to)?);
    if p.mib == 0 {
        return Err(ProbeError::NoMemory);
    }
    numalab_record::ensure_writable_dir(&p.results).map_err(ProbeError::Record)?;

    let started = chrono::Utc::now();
    let t0 = Instant::now();
    let mut failure: Option<String> = None;

    let (mut region, pages, touch_s) = first_touch(p, &from_cpus, t0)?;
    let start_place = placement(&pages)?;
    let n_pages = pages.len() as u64;
    let on_from_start = start_place.get(&(p.from as i32)).copied().unwrap_or(0);
    if on_from_start * 100 < n_pages * 95 {
        failure = Some(format!(
            "first touch put only {on_from_start} of {n_pages} pages on node {}",
            p.from
        ));
    }

    // 2. Work from `to`.
    let base = vmstat();
    numa::set_affinity(0, &to_cpus).map_err(|source| ProbeError::Pin { node: p.to, source })?;
    let cpu = numa::current_cpu().map_err(ProbeError::GetCpu)?;
    if !to_cpus.contains(&cpu) && failure.is_none() {
        failure = Some(format!("pinned to node {} but running on CPU {cpu}", p.to));
    }
    let (passes, samples, worked_s) =
        work_from(p, &machine, &mut region, &pages, n_pages, touch_s, &base)?;
    let end_place = placement(&pages)?;
    let now = vmstat();
    let m = Measured {
        n_pages,
        on_from_start,
        on_to_end: end_place.get(&(p.to as i32)).copied().unwrap_or(0),
        on_from_end: end_place.get(&(p.from as i32)).copied().unwrap_or(0),
        migrated: delta(&now, &base, "numa_pages_migrated"),
        hint_faults: delta(&now, &base, "numa_hint_faults"),
        passes,
        touch_s,
        worked_s,
        elapsed_s: t0.elapsed().as_secs_f64(),
    };
    if passes == 0 && failure.is_none() {
        failure = Some("did no passes over the memory".into());
    }
    let record = probe_record(p, &machine, &started, &m, samples, &failure);
    let record_path =
        numalab_record::write_atomic(&p.results, &record).map_err(ProbeError::Record)?;
    Ok(MigrateResult {
        pages: m.n_pages,
        on_from_start: m.on_from_start,
        on_to_end: m.on_to_end,
        on_from_end: m.on_from_end,
        migrated: m.migrated,
        hint_faults: m.hint_faults,
        passes: m.passes,
        worked_s: m.worked_s,
        record_path,
        failure,
    })
}

/// What one probe measured.
struct Measured {
    n_pages: u64,
    on_from_start: u64,
    on_to_end: u64,
    on_from_end: u64,
    migrated: i64,
    hint_faults: i64,
    passes: u64,
    touch_s: f64,
    worked_s: f64,
    elapsed_s: f64,
}

/// The region first touched from node `from`'s CPUs with memory bound
/// there, every page written: the region, its pages and the seconds
/// since `t0`.
fn first_touch(
    p: &MigrateParams,
    from_cpus: &[u32],
    t0: Instant,
) -> Result<(Mapping, Vec<*const u8>, f64), ProbeError> {
    numa::set_affinity(0, from_cpus).map_err(|source| ProbeError::Pin {
        node: p.from,
        source,
    })?;
    numa::set_mempolicy(numa::MPOL_BIND, &[p.from]).map_err(|source| ProbeError::Bind {
        node: p.from,
        source,
    })?;
    let mut region = region((p.mib as usize) << 20)?;
    pass(&mut region, 1);
    // Touch every page even if a page is larger than the pass stride.
    let pages = region.page_addrs(numa::page_size());
    region.touch(numa::page_size(), 1);
    numa::set_mempolicy(numa::MPOL_DEFAULT, &[]).map_err(ProbeError::ResetPolicy)?;
    let touch_s = t0.elapsed().as_secs_f64();
    Ok((region, pages, touch_s))
}

/// Passes over the region from node `to`'s CPUs until `p.seconds` (or
/// `p.until` of its pages on `to`), sampling where its pages are twice
/// a second: the passes, the samples and the seconds worked.
fn work_from(
    p: &MigrateParams,
    machine: &MachineInfo,
    region: &mut Mapping,
    pages: &[*const u8],
    n_pages: u64,
    touch_s: f64,
    base: &BTreeMap<String, u64>,
) -> Result<(u64, Vec<Sample>, f64), ProbeError> {
    let topo = &machine.topology;
    let work_start = Instant::now();
    let limit = Duration::from_secs_f64(p.seconds.max(0.0));
    let mut passes = 0u64;
    let mut samples = Vec::new();
    let mut next_sample = Duration::ZERO;
    let node_ids = topo.node_ids();
    let sample = |t: f64, place: &BTreeMap<i32, u64>, now: &BTreeMap<String, u64>| Sample {
        t_s: t,
        memory_bytes: vec![node_ids
            .iter()
            .map(|&n| place.get(&(n as i32)).copied().unwrap_or(0) * numa::page_size() as u64)
            .collect()],
        task_node: vec![topo.node_of_cpu(numa::current_cpu().unwrap_or(u32::MAX))],
        progress: vec![0],
        vmstat: now
            .keys()
            .map(|k| (k.clone(), delta(now, base, k)))
            .collect(),
        ..Default::default()
    };
    loop {
        pass(region, passes + 2);
        passes += 1;
        let el = work_start.elapsed();
        if el >= next_sample || el >= limit {
            let place = placement(pages)?;
            let mut s = sample(touch_s + el.as_secs_f64(), &place, &vmstat());
            s.progress = vec![passes];
            samples.push(s);
            next_sample = el + Duration::from_millis(500);
            let on_to = place.get(&(p.to as i32)).copied().unwrap_or(0);
            if let Some(u) = p.until {
                if on_to as f64 >= u * n_pages as f64 {
                    break;
                }
            }
        }
        if el >= limit {
            break;
        }
    }
    Ok((passes, samples, work_start.elapsed().as_secs_f64()))
}

/// The probe's metrics: time, pages where they started and ended, the
/// kernel's migrations and hinting faults, passes.
fn probe_metrics(me: &Measured) -> BTreeMap<String, Metric> {
    let Measured {
        n_pages,
        on_from_start,
        on_to_end,
        on_from_end,
        migrated,
        hint_faults,
        passes,
        worked_s,
        elapsed_s,
        ..
    } = *me;
    let mut metrics = BTreeMap::new();
    let m = |v: f64, unit: &str, b: Better| Metric::new(v, unit, b);
    metrics.insert("elapsed_s".into(), Metric::seconds(elapsed_s));
    metrics.insert("worked_s".into(), Metric::seconds(worked_s));
    metrics.insert("pages".into(), m(n_pages as f64, "pages", Better::Higher));
    metrics.insert(
        "pages_on_from_start".into(),
        m(on_from_start as f64, "pages", Better::Higher),
    );
    metrics.insert(
        "pages_on_to_end".into(),
        m(on_to_end as f64, "pages", Better::Higher),
    );
    metrics.insert(
        "pages_on_from_end".into(),
        m(on_from_end as f64, "pages", Better::Lower),
    );
    metrics.insert(
        "local_end_pct".into(),
        m(
            100.0 * on_to_end as f64 / n_pages.max(1) as f64,
            "%",
            Better::Higher,
        ),
    );
    metrics.insert(
        "numa_pages_migrated".into(),
        m(migrated as f64, "pages", Better::Higher),
    );
    metrics.insert(
        "numa_hint_faults".into(),
        m(hint_faults as f64, "faults", Better::Lower),
    );
    metrics.insert("passes".into(), m(passes as f64, "passes", Better::Higher));

    metrics
}

/// The probe's record.
fn probe_record(
    p: &MigrateParams,
    machine: &MachineInfo,
    started: &chrono::DateTime<chrono::Utc>,
    me: &Measured,
    samples: Vec<Sample>,
    failure: &Option<String>,
) -> RunRecord {
    let topo = &machine.topology;
    let node_ids = topo.node_ids();
    let metrics = probe_metrics(me);
    let Measured {
        touch_s,
        worked_s,
        passes,
        ..
    } = *me;
    let mut node_time = vec![0.0; node_ids.len()];
    if let Some(i) = topo.node_index(p.from) {
        node_time[i] = touch_s;
    }
    if let Some(i) = topo.node_index(p.to) {
        node_time[i] = worked_s;
    }
    let params = BTreeMap::from([
        ("mib".to_string(), serde_json::json!(p.mib)),
        ("seconds".to_string(), serde_json::json!(p.seconds)),
        ("from".to_string(), serde_json::json!(p.from)),
        ("to".to_string(), serde_json::json!(p.to)),
        ("until".to_string(), serde_json::json!(p.until)),
        (
            "page_size".to_string(),
            serde_json::json!(numa::page_size()),
        ),
    ]);
    let record = RunRecord {
        schema_version: SCHEMA_VERSION,
        id: RunRecord::make_id(BENCHMARK, &p.label, started, 1),
        numalab_version: numalab_record::VERSION.to_string(),
        started_at: started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        benchmark: BENCHMARK.into(),
        params,
        label: p.label.clone(),
        repetition: Repetition { index: 1, of: 1 },
        backend: numalab_record::Backend::real(),
        machine: machine.clone(),
        outcome: match &failure {
            None => Outcome::ok(),
            Some(f) => Outcome::failed(f.clone()),
        },
        metrics,
        processes: vec![ProcessInfo {
            index: 0,
            name: "probe".into(),
            pid: Some(std::process::id() as i32),
        }],
        tasks: vec![TaskRecord {
            id: 1,
            name: format!("touch on node {}, work from node {}", p.from, p.to),
            pid: Some(std::process::id() as i32),
            process: Some(0),
            initial_node: Some(p.from),
            main_node: Some(p.to),
            node_time_s: node_time,
            residency_method: "pinned with sched_setaffinity, checked with getcpu".into(),
            residency_samples: samples.len() as u64,
            user_s: 0.0,
            sys_s: 0.0,
            work_done: passes,
            work_expected: passes.max(1),
            exit: "ok".into(),
            kernel: None,
        }],
        series: Series {
            interval_s: 0.5,
            samples,
        },
        convergence: None,
        warnings: vec![],
        applied: Default::default(),
        campaign: None,
        sched: None,
    };
    record
}

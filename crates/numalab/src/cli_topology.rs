//! `numalab topology`: the machine's NUMA topology, and with `--machine`
//! the metadata every record carries.

use anyhow::{Context, Result};
use numalab_topology::{MachineInfo, Roots, Topology};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct TopologyArgs {
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
    /// Read this sysfs tree instead of /sys (e.g. a saved copy of another machine's)
    #[arg(long, value_name = "DIR")]
    sysfs: Option<PathBuf>,
    /// Include machine metadata (kernel, CPU model, NUMA balancing, THP,
    /// scheduler tunables, cpufreq, kernel command line, ...)
    #[arg(long)]
    machine: bool,
}

pub fn run(args: TopologyArgs) -> Result<ExitCode> {
    let sys = args.sysfs.clone().unwrap_or_else(|| PathBuf::from("/sys"));
    let out = if args.machine {
        let roots = Roots {
            sys,
            ..Roots::host()
        };
        let info = MachineInfo::probe(&roots).context("reading the machine")?;
        if args.json {
            serde_json::to_string_pretty(&info)? + "\n"
        } else {
            machine_text(&info)
        }
    } else {
        let topo = Topology::from_sysfs(&sys)
            .with_context(|| format!("reading the topology under {}", sys.display()))?;
        if args.json {
            serde_json::to_string_pretty(&topo)? + "\n"
        } else {
            topo.render_text()
        }
    };
    crate::print_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The metadata as text, within 80 columns.
fn machine_text(info: &MachineInfo) -> String {
    let mut o = String::new();
    let or = |v: &Option<String>, d: &str| v.clone().unwrap_or_else(|| d.to_string());
    let mut line = |k: &str, v: String| {
        for l in numalab_report::table::wrap(&format!("{k:<16} {v}"), 80) {
            let _ = writeln!(o, "{l}");
        }
    };
    line("host:", info.hostname.clone());
    line("kernel:", info.kernel.clone());
    line("cpu:", or(&info.cpu_model, "unknown"));
    line("numa_balancing:", or(&info.numa_balancing, "not available"));
    for (k, v) in &info.numa_balancing_tunables {
        line(&format!("  {k}"), v.clone());
    }
    line("THP:", or(&info.thp_enabled, "unknown"));
    line("governor:", or(&info.governor, "none"));
    let t = &info.tuning;
    line(
        "cpufreq:",
        format!(
            "driver {}, boost {}",
            or(&t.cpufreq_driver, "none"),
            or(&t.boost, "n/a")
        ),
    );
    line("zone_reclaim:", or(&t.zone_reclaim_mode, "n/a"));
    line("sched_ext:", or(&t.sched_ext, "n/a"));
    line(
        "allowed:",
        format!(
            "cpus {}, mems {}, cpuset {}",
            or(&t.cpus_allowed, "?"),
            or(&t.mems_allowed, "?"),
            or(&t.cpuset, "?")
        ),
    );
    for (k, v) in &t.sched_tunables {
        line(&format!("  sched {k}"), v.clone());
    }
    for u in &t.unreadable {
        line("not read:", u.clone());
    }
    if let Some(c) = &t.kernel_cmdline {
        line("cmdline:", c.clone());
    }
    o.push('\n');
    o.push_str(&info.topology.render_text());
    o
}

use anyhow::{Context, Result};
use numalab_topology::{MachineInfo, Roots, Topology};
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
    /// Include machine metadata (kernel, CPU model, NUMA balancing, THP, ...)
    #[arg(long)]
    machine: bool,
}

pub fn run(args: TopologyArgs) -> Result<ExitCode> {
    let sys = args.sysfs.clone().unwrap_or_else(|| PathBuf::from("/sys"));
    if args.machine {
        let roots = Roots {
            sys,
            ..Roots::host()
        };
        let info = MachineInfo::probe(&roots).context("reading the machine")?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&info)?);
        } else {
            println!("host:            {}", info.hostname);
            println!("kernel:          {}", info.kernel);
            println!(
                "cpu:             {}",
                info.cpu_model.as_deref().unwrap_or("unknown")
            );
            println!(
                "numa_balancing:  {}",
                info.numa_balancing.as_deref().unwrap_or("not available")
            );
            for (k, v) in &info.numa_balancing_tunables {
                println!("  {k:<14} {v}");
            }
            println!(
                "THP:             {}",
                info.thp_enabled.as_deref().unwrap_or("unknown")
            );
            println!(
                "governor:        {}",
                info.governor.as_deref().unwrap_or("none")
            );
            println!();
            print!("{}", info.topology.render_text());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let topo = Topology::from_sysfs(&sys)
        .with_context(|| format!("reading the topology under {}", sys.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&topo)?);
    } else {
        print!("{}", topo.render_text());
    }
    Ok(ExitCode::SUCCESS)
}

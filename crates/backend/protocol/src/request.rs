//! What the host asks and what it is answered: the JSON payloads of
//! [`Kind::Request`](crate::frame::Kind::Request) and
//! [`Kind::Reply`](crate::frame::Kind::Reply) frames. Serialised as
//! internally tagged JSON (`{"op":"spin_rate"}`), so an unknown request
//! is refused by name rather than misread.

use numalab_bench::Case;
use numalab_linux::knobs::Knob;
use numalab_record::Repetition;
use numalab_runner::Interval;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the host asks of the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// The guest as a machine: [`MachineReply`].
    Machine,
    /// [`numalab_bench::Calibration::zeroing_bandwidth`] in the guest.
    ZeroingBandwidth { threads: u32, working_set: u64 },
    /// [`numalab_bench::Calibration::sweep_bandwidth`] in the guest.
    SweepBandwidth {
        sweep: numalab_bench::mem::Op,
        threads: u32,
        working_set: u64,
    },
    /// [`numalab_bench::Calibration::spin_rate`] in the guest.
    SpinRate,
    /// [`numalab_bench::Calibration::first_touch_rate`] in the guest.
    FirstTouchRate,
    /// Apply these settings, undoing the previous ones (none: undo only).
    Settings { knobs: Vec<Knob> },
    /// Load this sched_ext scheduler and wait until the kernel has
    /// enabled it, unloading the previous one (none: unload only). The
    /// reply: its [`numalab_linux::sched_ext::Status`] once enabled, or
    /// (none) how the previous one ended, an
    /// `Option<numalab_linux::sched_ext::ExitInfo>`.
    Scx {
        scx: Option<numalab_linux::sched_ext::Scx>,
    },
    /// Whether the scheduler [`Request::Scx`] loaded still runs: `null`,
    /// or why not.
    ScxStatus,
    /// Run a case once; the record comes back as a `record` frame.
    Run {
        case: Case,
        label: String,
        repetition: Repetition,
        interval: Interval,
        /// Trace the run's scheduling events.
        #[serde(default)]
        trace: bool,
    },
    /// Power off.
    Quit,
}

/// The answer to a request: a value, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Ok(serde_json::Value),
    Error(String),
}

/// The answer to [`Request::Machine`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MachineReply {
    pub machine: numalab_topology::MachineInfo,
    /// Free bytes per node, by node id.
    pub node_free: BTreeMap<u32, u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_as_tagged_json() {
        let r = Request::ZeroingBandwidth {
            threads: 2,
            working_set: 1 << 20,
        };
        let j = serde_json::to_string(&r).unwrap();
        assert_eq!(
            j,
            r#"{"op":"zeroing_bandwidth","threads":2,"working_set":1048576}"#
        );
        assert_eq!(serde_json::from_str::<Request>(&j).unwrap(), r);
        let r = Request::SweepBandwidth {
            sweep: numalab_bench::mem::Op::Read,
            threads: 1,
            working_set: 64,
        };
        let j = serde_json::to_string(&r).unwrap();
        assert_eq!(
            j,
            r#"{"op":"sweep_bandwidth","sweep":"read","threads":1,"working_set":64}"#
        );
        assert_eq!(serde_json::from_str::<Request>(&j).unwrap(), r);
        let q: Request = serde_json::from_str(r#"{"op":"quit"}"#).unwrap();
        assert_eq!(q, Request::Quit);
        assert!(serde_json::from_str::<Request>(r#"{"op":"reboot"}"#).is_err());
    }

    #[test]
    fn replies_are_externally_tagged() {
        let ok = serde_json::to_string(&Reply::Ok(serde_json::json!(1.5))).unwrap();
        assert_eq!(ok, r#"{"ok":1.5}"#);
        let e = serde_json::to_string(&Reply::Error("no".into())).unwrap();
        assert_eq!(e, r#"{"error":"no"}"#);
    }
}
